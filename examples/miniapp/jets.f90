! jets, Fortran version: the idea of jets.cpp, kept simpler.
!
!   mpirun -n 2 ./motes_jets_f OUTDIR [steps=100] [write_every=10] [per_jet=1000] [seed=1]
!
! Two nozzles spray particles into the unit box; the particles fly under weak drag and
! gravity, leave through the walls, and migrate between ranks that own slabs along x.
! Every write_every steps all ranks write their particles as one motes step through
! modules motes and motes_parallel (OUTDIR must not hold those steps already), with a grid
! field beside them: the particles per cell, each rank passing the cells of its slab.
program jets_f
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int8, int64, real32, error_unit
  use mpi_f08
  use motes
  use motes_parallel
  implicit none

  real(real32), parameter :: dt = 0.05, drag = 0.3, gravity = 0.5
  ! The density grid: cells_x cells along x per rank (slabs of cells match the ranks'
  ! slabs of space), ny x nz across; cell-centred over the unit box.
  integer, parameter :: cells_x = 16, ny = 8, nz = 8
  integer, parameter :: njets = 2
  ! Nozzle positions and cone axes, one column per jet: the first crosses every slab,
  ! the second sprays upwards inside one.
  real(real32), parameter :: nozzle_pos(3, njets) = reshape([0.0, 0.5, 0.3, 0.75, 0.5, 0.0], [3, njets])
  real(real32), parameter :: nozzle_dir(3, njets) = reshape([1.0, 0.0, 0.45, 0.0, 0.2, 1.0], [3, njets])

  ! The state: one array per column, room for size(x) particles, the first n in use.
  ! The arrays are never empty, because c_loc may not be applied to a zero-sized array,
  ! and a rank that holds no particles still passes its columns (with count 0).
  real(real32), allocatable, target :: x(:), y(:), z(:), ux(:), uy(:), uz(:), energy(:)
  integer(int64), allocatable, target :: id(:)
  integer(int8), allocatable, target :: jet(:)
  integer :: n = 0

  type(MPI_Comm) :: comm
  type(c_ptr) :: w
  integer :: rank, nranks, step, steps, every, per_jet, seed
  integer(int64) :: next_id = 0
  character(len=1024) :: outdir

  call MPI_Init()
  comm = MPI_COMM_WORLD
  call MPI_Comm_rank(comm, rank)
  call MPI_Comm_size(comm, nranks)
  if (command_argument_count() < 1) then
    if (rank == 0) write(error_unit, '(a)') &
      'usage: mpirun -n N motes_jets_f OUTDIR [steps=100] [write_every=10] [per_jet=1000] [seed=1]'
    call MPI_Finalize()
    stop 2
  end if
  call get_command_argument(1, outdir)
  steps = int_arg(2, 100)
  every = int_arg(3, 10)
  per_jet = int_arg(4, 1000)
  seed = int_arg(5, 1)
  call seed_random(seed * 1000003 + rank)  ! one stream per rank
  call reserve(1024)
  if (rank == 0) print '(a,i0,a,i0,a,i0,2a)', 'jets_f: ', nranks, ' ranks (slabs along x), ', steps, &
    ' steps, writing every ', every, ' to ', trim(outdir)

  ! mpi_f08 communicators carry the Fortran handle motes wants in MPI_VAL
  ! (with `use mpi`, pass the integer communicator itself).
  call check(motes_writer_open_parallel(trim(outdir), comm%MPI_VAL, w), 'motes_writer_open_parallel')
  call check(motes_writer_set_aggregation(w, 0_int64, 'adaptive', .true.), 'motes_writer_set_aggregation')
  do step = 1, steps
    call inject()
    call push()
    call migrate()
    if (mod(step, every) == 0) call write_particles()
  end do
  call check(motes_writer_close(w), 'motes_writer_close')  ! before MPI_Finalize: it frees its communicator
  call MPI_Finalize()

contains

  integer function owner(px)  ! the rank whose slab holds x = px
    real(real32), intent(in) :: px
    owner = min(nranks - 1, max(0, int(px * nranks)))
  end function

  subroutine inject()
    integer :: j, i
    real(real32) :: u(3), t
    do j = 1, njets
      if (owner(nozzle_pos(1, j)) /= rank) cycle
      call reserve(n + per_jet)
      do i = 1, per_jet
        ! A Gaussian blur of the axis, renormalised: near enough to a cone here.
        u = nozzle_dir(:, j) / norm2(nozzle_dir(:, j)) + 0.15 * [gauss(), gauss(), gauss()]
        u = u / norm2(u) * (1.0 + 0.1 * gauss())
        call random_number(t)  ! emission times spread over the step, not puffs
        n = n + 1
        x(n) = nozzle_pos(1, j) + u(1) * t * dt
        y(n) = nozzle_pos(2, j) + u(2) * t * dt
        z(n) = nozzle_pos(3, j) + u(3) * t * dt
        ux(n) = u(1); uy(n) = u(2); uz(n) = u(3)
        id(n) = ishft(int(rank, int64), 40) + next_id  ! unique with no communication
        next_id = next_id + 1
        jet(n) = int(j, int8)
      end do
    end do
  end subroutine

  subroutine push()  ! one step of motion; particles outside the box are dropped
    logical :: keep(n)
    integer :: k
    ux(1:n) = ux(1:n) - drag * ux(1:n) * dt
    uy(1:n) = uy(1:n) - drag * uy(1:n) * dt
    uz(1:n) = uz(1:n) - (drag * uz(1:n) + gravity) * dt
    x(1:n) = x(1:n) + ux(1:n) * dt
    y(1:n) = y(1:n) + uy(1:n) * dt
    z(1:n) = z(1:n) + uz(1:n) * dt
    keep = x(1:n) >= 0 .and. x(1:n) <= 1 .and. y(1:n) >= 0 .and. y(1:n) <= 1 .and. z(1:n) >= 0 .and. z(1:n) <= 1
    k = count(keep)
    x(1:k) = pack(x(1:n), keep); y(1:k) = pack(y(1:n), keep); z(1:k) = pack(z(1:n), keep)
    ux(1:k) = pack(ux(1:n), keep); uy(1:k) = pack(uy(1:n), keep); uz(1:k) = pack(uz(1:n), keep)
    id(1:k) = pack(id(1:n), keep); jet(1:k) = pack(jet(1:n), keep)
    n = k
  end subroutine

  ! Every particle to the rank owning its slab, through two MPI_Alltoallv (the reals,
  ! then id and jet). An all-to-all, not a neighbour swap: a fast particle may skip a
  ! thin slab. Particles that stay go through it too, which costs only a copy.
  subroutine migrate()
    integer :: scount(0:nranks - 1), rcount(0:nranks - 1), sdispl(0:nranks - 1), rdispl(0:nranks - 1)
    integer :: dest(n), at(0:nranks - 1), i, r, m
    real(real32), allocatable :: rsend(:, :), rrecv(:, :)
    integer(int64), allocatable :: isend(:, :), irecv(:, :)
    scount = 0
    do i = 1, n
      dest(i) = owner(x(i))
      scount(dest(i)) = scount(dest(i)) + 1
    end do
    call MPI_Alltoall(scount, 1, MPI_INTEGER, rcount, 1, MPI_INTEGER, comm)
    sdispl(0) = 0; rdispl(0) = 0
    do r = 1, nranks - 1
      sdispl(r) = sdispl(r - 1) + scount(r - 1)
      rdispl(r) = rdispl(r - 1) + rcount(r - 1)
    end do
    m = sum(rcount)
    allocate(rsend(6, n), isend(2, n), rrecv(6, m), irecv(2, m))
    at = sdispl
    do i = 1, n
      at(dest(i)) = at(dest(i)) + 1
      rsend(:, at(dest(i))) = [x(i), y(i), z(i), ux(i), uy(i), uz(i)]
      isend(:, at(dest(i))) = [id(i), int(jet(i), int64)]
    end do
    call MPI_Alltoallv(rsend, 6 * scount, 6 * sdispl, MPI_REAL, rrecv, 6 * rcount, 6 * rdispl, MPI_REAL, comm)
    call MPI_Alltoallv(isend, 2 * scount, 2 * sdispl, MPI_INTEGER8, irecv, 2 * rcount, 2 * rdispl, MPI_INTEGER8, comm)
    call reserve(m)
    n = m
    x(1:n) = rrecv(1, :); y(1:n) = rrecv(2, :); z(1:n) = rrecv(3, :)
    ux(1:n) = rrecv(4, :); uy(1:n) = rrecv(5, :); uz(1:n) = rrecv(6, :)
    id(1:n) = irecv(1, :); jet(1:n) = int(irecv(2, :), int8)
  end subroutine

  ! Collective: every rank calls it, with whatever particles it holds (maybe none).
  subroutine write_particles()
    integer(int64) :: nl, total
    double precision :: t0, seconds, slowest
    character(len=128) :: attributes
    nl = int(n, int64)
    ! Every rank must pass the same attributes (motes checks), so they hold values all ranks agree on.
    write(attributes, '(a,es10.3,a,i0,a,i0,a)') '{"dt": ', dt, ', "injected": ', njets * per_jet * every, &
      ', "ranks": ', nranks, '}'
    energy(1:n) = 0.5 * (ux(1:n)**2 + uy(1:n)**2 + uz(1:n)**2)
    t0 = MPI_Wtime()
    call check(motes_writer_begin_step(w, int(step, int64), step * dble(dt)), 'motes_writer_begin_step')
    call check(motes_writer_set_step_attributes(w, trim(attributes)), 'motes_writer_set_step_attributes')
    ! motes reads the arrays in place during write_step: they must not move until it returns.
    call check(motes_writer_set_column(w, 'particles', 'x', MOTES_F32, c_loc(x), nl, 0_int64), 'set_column x')
    call check(motes_writer_set_column(w, 'particles', 'y', MOTES_F32, c_loc(y), nl, 0_int64), 'set_column y')
    call check(motes_writer_set_column(w, 'particles', 'z', MOTES_F32, c_loc(z), nl, 0_int64), 'set_column z')
    call check(motes_writer_set_column(w, 'particles', 'ux', MOTES_F32, c_loc(ux), nl, 0_int64), 'set_column ux')
    call check(motes_writer_set_column(w, 'particles', 'uy', MOTES_F32, c_loc(uy), nl, 0_int64), 'set_column uy')
    call check(motes_writer_set_column(w, 'particles', 'uz', MOTES_F32, c_loc(uz), nl, 0_int64), 'set_column uz')
    call check(motes_writer_set_column(w, 'particles', 'energy', MOTES_F32, c_loc(energy), nl, 0_int64), &
               'set_column energy')
    ! Fortran has no unsigned integers; the ids are never negative, so their bits are
    ! the same as uint64's.
    call check(motes_writer_set_column(w, 'particles', 'id', MOTES_U64, c_loc(id), nl, 0_int64), 'set_column id')
    call check(motes_writer_set_column(w, 'particles', 'jet', MOTES_I8, c_loc(jet), nl, 0_int64), 'set_column jet')
    call set_density()
    call check(motes_writer_write_step(w), 'motes_writer_write_step')
    seconds = MPI_Wtime() - t0
    call MPI_Reduce(seconds, slowest, 1, MPI_DOUBLE_PRECISION, MPI_MAX, 0, comm)
    call MPI_Reduce(nl, total, 1, MPI_INTEGER8, MPI_SUM, 0, comm)
    if (rank == 0) print '(a,i5,a,i10,a,f8.4,a)', 'step ', step, '  particles ', total, '  write ', slowest, ' s'
  end subroutine

  ! This rank's block of the density field: its particles counted per cell of its slab (a
  ! particle on the slab's edge is counted in the slab's edge cell), handed to motes as
  ! a block of the global grid; aggregators write the field in parts.
  subroutine set_density()
    real(real32), allocatable, target, save :: rho(:, :, :)
    integer :: i, ci, cj, ck, lo, nx
    nx = cells_x * nranks
    lo = cells_x * rank
    if (.not. allocated(rho)) allocate(rho(cells_x, ny, nz))
    rho = 0
    do i = 1, n
      ci = min(max(int(x(i) * nx), lo), lo + cells_x - 1) - lo + 1
      cj = min(int(y(i) * ny), ny - 1) + 1
      ck = min(int(z(i) * nz), nz - 1) + 1
      rho(ci, cj, ck) = rho(ci, cj, ck) + 1
    end do
    call check(motes_writer_set_field_block(w, 'density', MOTES_F32, 3, int([nx, ny, nz], int64), &
                                            int([lo, 0, 0], int64), int([cells_x, ny, nz], int64), &
                                            int([cells_x, ny, nz], int64), [0_int64, 0_int64, 0_int64], &
                                            [c_loc(rho)], [0d0, 0d0, 0d0], &
                                            [1d0 / nx, 1d0 / ny, 1d0 / nz], .true., 'particles per cell'), &
               'motes_writer_set_field_block')
  end subroutine

  subroutine check(status, what)
    integer, intent(in) :: status
    character(len=*), intent(in) :: what
    if (status == MOTES_OK) return
    write(error_unit, '(a,i0,3a,i0,2a)') 'jets_f: rank ', rank, ': ', what, ' failed (status ', status, '): ', &
      motes_last_error()
    ! set_column's checks are local: a rank that stopped here would leave the others
    ! waiting in the collective write_step for ever. MPI_Abort ends the whole job.
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end subroutine

  subroutine reserve(m)  ! room for at least m particles, keeping the first n
    integer, intent(in) :: m
    integer :: cap
    if (allocated(x)) then
      if (m <= size(x)) return
    end if
    cap = max(1024, 2 * m)
    call grow_real(x, cap); call grow_real(y, cap); call grow_real(z, cap)
    call grow_real(ux, cap); call grow_real(uy, cap); call grow_real(uz, cap); call grow_real(energy, cap)
    call grow_int64(id, cap)
    call grow_int8(jet, cap)
  end subroutine

  subroutine grow_real(a, cap)
    real(real32), allocatable, intent(inout) :: a(:)
    integer, intent(in) :: cap
    real(real32), allocatable :: b(:)
    allocate(b(cap))
    if (allocated(a)) b(1:n) = a(1:n)
    call move_alloc(b, a)
  end subroutine

  subroutine grow_int64(a, cap)
    integer(int64), allocatable, intent(inout) :: a(:)
    integer, intent(in) :: cap
    integer(int64), allocatable :: b(:)
    allocate(b(cap))
    if (allocated(a)) b(1:n) = a(1:n)
    call move_alloc(b, a)
  end subroutine

  subroutine grow_int8(a, cap)
    integer(int8), allocatable, intent(inout) :: a(:)
    integer, intent(in) :: cap
    integer(int8), allocatable :: b(:)
    allocate(b(cap))
    if (allocated(a)) b(1:n) = a(1:n)
    call move_alloc(b, a)
  end subroutine

  real(real32) function gauss()  ! standard normal, Box-Muller
    real(real32) :: u1, u2
    call random_number(u1)
    call random_number(u2)
    gauss = sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * acos(-1.0) * u2)
  end function

  subroutine seed_random(s)
    integer, intent(in) :: s
    integer :: k, i
    integer, allocatable :: state(:)
    call random_seed(size=k)
    allocate(state(k))
    state = [(s + 7919 * i, i = 1, k)]
    call random_seed(put=state)
  end subroutine

  integer function int_arg(i, fallback)  ! positional argument i, a positive integer
    integer, intent(in) :: i, fallback
    character(len=64) :: text
    integer :: ios
    int_arg = fallback
    if (command_argument_count() < i) return
    call get_command_argument(i, text)
    read(text, *, iostat=ios) int_arg
    if (ios /= 0 .or. int_arg <= 0) then
      if (rank == 0) write(error_unit, '(3a)') 'jets_f: not a positive integer: "', trim(text), '"'
      call MPI_Abort(MPI_COMM_WORLD, 2)
    end if
  end function

end program jets_f
