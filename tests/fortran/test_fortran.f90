! The Fortran bindings: write a step of particles from Fortran arrays, then check errors.
program test_fortran
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64, real32, real64
  use motes
  implicit none
  integer, parameter :: n = 3000
  real(real64), target :: x(n), y(n), z(n)
  real(real32), target :: energy(n)
  real(real32), target :: rho(6, 5, 4), bx(6, 5, 4), by(6, 5, 4)
  type(c_ptr) :: w
  integer :: i, failures
  integer(int64) :: last
  logical :: written
  character(len=256) :: path

  failures = 0
  write(path, '(a,i0,a)') '/tmp/motes-fortran-', getpid_portable(), '.motes'
  do i = 1, n
    x(i) = mod(i, 97) / 97.0d0
    y(i) = mod(i, 89) / 89.0d0
    z(i) = sin(i * 0.01d0)
    energy(i) = real(mod(i, 13), real32)
  end do

  call expect(motes_writer_open(trim(path), w), MOTES_OK, 'open')
  call expect(motes_writer_set_options(w, 64, 4, 0, .false.), MOTES_OK, 'options')
  ! a derived quantity: computed and indexed by the writer, its values not stored
  call expect(motes_writer_add_derived(w, 'r2', 'x*x + y*y'), MOTES_OK, 'derived')
  call expect(motes_writer_add_derived(w, 'bad', 'x +'), MOTES_ERROR_USAGE, 'bad derived refused')
  ! a declared species this process has no particles of: written empty, no set_column needed
  call expect(motes_writer_define_column(w, 'neutrals', 'x', MOTES_F64, 'm'), MOTES_OK, 'define x')
  call expect(motes_writer_define_column(w, 'neutrals', 'y', MOTES_F64, ''), MOTES_OK, 'define y')
  call expect(motes_writer_define_column(w, 'neutrals', 'z', MOTES_F64, ''), MOTES_OK, 'define z')
  call expect(motes_writer_define_column(w, 'neutrals', 'z', MOTES_F32, ''), MOTES_ERROR_USAGE, 'redefine refused')
  call expect(motes_writer_begin_step(w, 3_int64, 1.5d0), MOTES_OK, 'begin step')
  call expect(motes_writer_set_step_attributes(w, '{"code": "fortran"}'), MOTES_OK, 'attributes')
  call expect(motes_writer_set_column(w, 'ions', 'x', MOTES_F64, c_loc(x), int(n, int64), 0_int64), MOTES_OK, 'x')
  call expect(motes_writer_set_column(w, 'ions', 'y', MOTES_F64, c_loc(y), int(n, int64), 0_int64), MOTES_OK, 'y')
  call expect(motes_writer_set_column(w, 'ions', 'z', MOTES_F64, c_loc(z), int(n, int64), 0_int64), MOTES_OK, 'z')
  call expect(motes_writer_set_column(w, 'ions', 'energy', MOTES_F32, c_loc(energy), int(n, int64), 0_int64), MOTES_OK, &
              'energy')
  call expect(motes_writer_set_unit(w, 'ions', 'x', 'm'), MOTES_OK, 'unit')
  ! grid fields: Fortran arrays (nx, ny, nz), x fastest as motes stores them
  rho = 1.0
  bx = 2.0
  by = -2.0
  call expect(motes_writer_set_field(w, 'rho', MOTES_F32, 3, [6_int64, 5_int64, 4_int64], [c_loc(rho)], &
                                     [0d0, 0d0, 0d0], [0.5d0, 0.5d0, 1d0], .false., 'kg/m^3'), MOTES_OK, 'field rho')
  call expect(motes_writer_set_field(w, 'B', MOTES_F32, 3, [6_int64, 5_int64, 4_int64], [c_loc(bx), c_loc(by)], &
                                     [0d0, 0d0, 0d0], [0.5d0, 0.5d0, 1d0], .true., ''), MOTES_OK, 'field B')
  call expect(motes_writer_set_field(w, 'rho', MOTES_F32, 3, [6_int64, 5_int64, 4_int64], [c_loc(rho)], &
                                     [0d0, 0d0, 0d0], [0.5d0, 0.5d0, 1d0], .false., ''), MOTES_ERROR_USAGE, &
              'a field set twice')
  call expect(motes_writer_write_step(w), MOTES_OK, 'write step')
  ! the same step index again is refused with a message that names it
  call expect(motes_writer_begin_step(w, 3_int64, 2.0d0), MOTES_OK, 'begin again')
  call expect(motes_writer_set_column(w, 'ions', 'x', MOTES_F64, c_loc(x), int(n, int64), 0_int64), MOTES_OK, 'x again')
  call expect(motes_writer_set_column(w, 'ions', 'y', MOTES_F64, c_loc(y), int(n, int64), 0_int64), MOTES_OK, 'y again')
  call expect(motes_writer_set_column(w, 'ions', 'z', MOTES_F64, c_loc(z), int(n, int64), 0_int64), MOTES_OK, 'z again')
  call expect(motes_writer_write_step(w), MOTES_ERROR_USAGE, 'duplicate step refused')
  if (index(motes_last_error(), 'step 3 already exists') == 0) then
    print *, 'FAILED: message was: ', motes_last_error()
    failures = failures + 1
  end if
  ! background writes: write_step copies and returns; flush waits; a failed step's error
  ! comes back from the next call
  call expect(motes_writer_set_background(w, 2, .false.), MOTES_OK, 'background')
  do i = 4, 6
    call expect(motes_writer_begin_step(w, int(i, int64), 0.5d0 * i), MOTES_OK, 'begin background step')
    call expect(motes_writer_set_column(w, 'ions', 'x', MOTES_F64, c_loc(x), int(n, int64), 0_int64), MOTES_OK, 'bx')
    call expect(motes_writer_set_column(w, 'ions', 'y', MOTES_F64, c_loc(y), int(n, int64), 0_int64), MOTES_OK, 'by')
    call expect(motes_writer_set_column(w, 'ions', 'z', MOTES_F64, c_loc(z), int(n, int64), 0_int64), MOTES_OK, 'bz')
    call expect(motes_writer_write_step(w), MOTES_OK, 'background step queued')
    x = x + 1.0d0  ! the caller's arrays are its own again
  end do
  call expect(motes_writer_flush(w), MOTES_OK, 'flush')
  call expect(motes_writer_last_written(w, last, written), MOTES_OK, 'last written')
  if (.not. written .or. last /= 6) then
    print *, 'FAILED: last written step ', last, written
    failures = failures + 1
  end if
  call expect(motes_writer_begin_step(w, 6_int64, 9.0d0), MOTES_OK, 'begin step 6 again')
  call expect(motes_writer_set_column(w, 'ions', 'x', MOTES_F64, c_loc(x), int(n, int64), 0_int64), MOTES_OK, 'x')
  call expect(motes_writer_set_column(w, 'ions', 'y', MOTES_F64, c_loc(y), int(n, int64), 0_int64), MOTES_OK, 'y')
  call expect(motes_writer_set_column(w, 'ions', 'z', MOTES_F64, c_loc(z), int(n, int64), 0_int64), MOTES_OK, 'z')
  call expect(motes_writer_write_step(w), MOTES_OK, 'queued, refused later')
  call expect(motes_writer_flush(w), MOTES_ERROR_USAGE, 'the queued step 6 fails on flush')
  call expect(motes_writer_close(w), MOTES_OK, 'close')
  call execute_command_line('rm -rf ' // trim(path))
  if (failures > 0) error stop 1
  print '(a)', 'Fortran bindings: all checks passed'

contains

  subroutine expect(got, want, what)
    integer, intent(in) :: got, want
    character(len=*), intent(in) :: what
    if (got /= want) then
      print '(3a,i0,a,i0,2a)', 'FAILED ', what, ': status ', got, ' (wanted ', want, '): ', motes_last_error()
      failures = failures + 1
    end if
  end subroutine

  integer function getpid_portable()
    interface
      function c_getpid() bind(c, name="getpid") result(p)
        import :: c_int
        integer(c_int) :: p
      end function
    end interface
    getpid_portable = int(c_getpid())
  end function

end program test_fortran
