! motes Fortran 2008 bindings, parallel part: the C API's motes_mpi.h through iso_c_binding.
!
!   use motes
!   use motes_parallel
!   type(c_ptr) :: w
!   call check(motes_writer_open_parallel("run.motes", MPI_COMM_WORLD, w))     ! use mpi
!   call check(motes_writer_open_parallel("run.motes", comm%MPI_VAL, w))       ! use mpi_f08
!   call check(motes_writer_set_aggregation(w, 0_int64, "adaptive", .true.))  ! optional
!   call check(motes_writer_begin_step(w, step, time))
!   call check(motes_writer_set_column(w, "electrons", "x", MOTES_F32, c_loc(x), n_local, 0_int64))
!   ...                                   (every rank: the same species and columns; n_local may be 0)
!   call check(motes_writer_write_step(w))                                     ! collective
!   call check(motes_writer_close(w))
!
! Every rank of the communicator calls every function in the same order; write_step
! returns the same status on every rank. The writer returned is an ordinary motes
! writer: begin_step, set_column, write_step and close are those of module motes.
!
! The communicator is the Fortran INTEGER handle, so this module needs neither the
! mpi nor the mpi_f08 module and works with both (mpi_f08: pass comm%MPI_VAL).
module motes_parallel
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64
  use motes, only: MOTES_ERROR_USAGE, motes_c_string
  implicit none
  private

  public :: motes_writer_open_parallel, motes_writer_set_aggregation, motes_writer_set_field_block

  interface
    ! comm is MPI_Fint, the C type MPI defines to match a default Fortran INTEGER; declaring
    ! it as default integer (not c_int) keeps it right under -fdefault-integer-8 builds too.
    function c_open_parallel_f(path, comm, writer) bind(c, name="motes_writer_open_parallel_f") result(s)
      import :: c_char, c_ptr, c_int
      character(kind=c_char), intent(in) :: path(*)
      integer, value :: comm
      type(c_ptr), intent(out) :: writer
      integer(c_int) :: s
    end function
    function c_set_aggregation(writer, target_bytes, method, best_axis) bind(c, name="motes_writer_set_aggregation") &
        result(s)
      import :: c_ptr, c_int, c_char, c_int64_t
      type(c_ptr), value :: writer
      integer(c_int64_t), value :: target_bytes  ! uint64_t in C; only values >= 0 are passed
      character(kind=c_char), intent(in) :: method(*)
      integer(c_int), value :: best_axis
      integer(c_int) :: s
    end function
    function c_set_field_block(writer, name, dtype, ndim, global_dims, offset, count, array_dims, ghost_lo, &
                               components, data, names, origin, spacing, cell_centred, unit) &
        bind(c, name="motes_writer_set_field_block") result(s)
      import :: c_ptr, c_int, c_char, c_int64_t, c_double
      type(c_ptr), value :: writer
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int), value :: dtype, ndim, components, cell_centred
      integer(c_int64_t), intent(in) :: global_dims(*), offset(*), count(*), array_dims(*), ghost_lo(*)
      type(c_ptr), intent(in) :: data(*)
      type(c_ptr), value :: names
      real(c_double), intent(in) :: origin(*), spacing(*)
      character(kind=c_char), intent(in) :: unit(*)
      integer(c_int) :: s
    end function
  end interface

contains

  ! Opens the dataset directory `path` for collective writes over `comm` (any
  ! communicator; motes duplicates it, so the caller may free its own afterwards).
  integer function motes_writer_open_parallel(path, comm, writer) result(s)
    character(len=*), intent(in) :: path
    integer, intent(in) :: comm
    type(c_ptr), intent(out) :: writer
    s = c_open_parallel_f(motes_c_string(path), comm, writer)
  end function

  ! Aggregation of the following steps: target bytes per part file (0 = automatic),
  ! method "adaptive" (default) or "aug", and whether the adaptive tree tries all axes.
  ! Trailing blanks of `method` are ignored, so a padded character variable works.
  ! A negative target_bytes returns MOTES_ERROR_USAGE without reaching the C library
  ! (it would read as a huge unsigned value there); motes_last_error is then not updated.
  integer function motes_writer_set_aggregation(writer, target_bytes, method, best_axis) result(s)
    type(c_ptr), intent(in) :: writer
    integer(int64), intent(in) :: target_bytes
    character(len=*), intent(in) :: method
    logical, intent(in) :: best_axis
    if (target_bytes < 0) then
      s = MOTES_ERROR_USAGE
      return
    end if
    s = c_set_aggregation(writer, int(target_bytes, c_int64_t), motes_c_string(trim(method)), &
                          merge(1_c_int, 0_c_int, best_axis))
  end function

  ! This rank's block of a grid field of the step (see motes_mpi.h): global_dims(1:ndim) the
  ! global grid's sizes; the block's interior is samples offset(a) .. offset(a)+count(a)-1
  ! (0-based) of it; data(1:components) (c_loc of arrays a(nx, ny, nz), x fastest) hold the
  ! block with its ghost zones, array_dims(1:ndim) samples per axis, the interior starting at
  ! 0-based sample ghost_lo(a). Ghosts are dropped on write. Components are named "0", "1", ...
  integer function motes_writer_set_field_block(writer, name, dtype, ndim, global_dims, offset, count, array_dims, &
                                                ghost_lo, data, origin, spacing, cell_centred, unit) result(s)
    type(c_ptr), intent(in) :: writer
    character(len=*), intent(in) :: name, unit
    integer(c_int), intent(in) :: dtype, ndim
    integer(int64), intent(in) :: global_dims(:), offset(:), count(:), array_dims(:), ghost_lo(:)
    type(c_ptr), intent(in) :: data(:)
    real(c_double), intent(in) :: origin(:), spacing(:)
    logical, intent(in) :: cell_centred
    s = c_set_field_block(writer, motes_c_string(name), dtype, ndim, int(global_dims, c_int64_t), &
                          int(offset, c_int64_t), int(count, c_int64_t), int(array_dims, c_int64_t), &
                          int(ghost_lo, c_int64_t), int(size(data), c_int), data, c_null_ptr, origin, spacing, &
                          merge(1_c_int, 0_c_int, cell_centred), motes_c_string(unit))
  end function

end module motes_parallel
