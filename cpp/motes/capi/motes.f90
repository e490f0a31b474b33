! motes Fortran 2008 bindings: the C API (motes.h) through iso_c_binding.
!
!   use motes
!   type(c_ptr) :: w
!   call check(motes_writer_open("run.motes", w))
!   call check(motes_writer_begin_step(w, 0_int64, 0.0d0))
!   call check(motes_writer_set_column(w, "electrons", "x", MOTES_F64, c_loc(x), size(x, kind=int64), 0_int64))
!   ...
!   call check(motes_writer_write_step(w))
!   call check(motes_writer_close(w))
!
! Strings are passed as ordinary Fortran character arguments; the wrappers add the
! terminating NUL. Arrays are passed with c_loc (they need the target attribute);
! the stride is in bytes, 0 for contiguous. Status codes are those of motes.h.
module motes
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64
  implicit none
  private

  integer(c_int), parameter, public :: MOTES_OK = 0, MOTES_ERROR_USAGE = 1, MOTES_ERROR_FORMAT = 2, &
                                       MOTES_ERROR_IO = 3, MOTES_ERROR_MEMORY = 4, MOTES_ERROR_INTERNAL = 5, &
                                       MOTES_ERROR_NOT_FOUND = 6, MOTES_ERROR_CANCELLED = 7, &
                                       MOTES_ERROR_REPLACED = 8
  integer(c_int), parameter, public :: MOTES_F32 = 1, MOTES_F64 = 2, MOTES_I8 = 3, MOTES_I16 = 4, MOTES_I32 = 5, &
                                       MOTES_I64 = 6, MOTES_U8 = 7, MOTES_U16 = 8, MOTES_U32 = 9, MOTES_U64 = 10

  public :: motes_c_string
  public :: motes_writer_open, motes_writer_set_options, motes_writer_define_column, motes_writer_begin_step, &
            motes_writer_set_step_attributes, motes_writer_add_derived, &
            motes_writer_set_column, motes_writer_set_unit, motes_writer_set_field, motes_writer_set_field_tolerance, &
            motes_writer_write_step, motes_writer_set_background, motes_writer_flush, motes_writer_last_written, &
            motes_writer_close, motes_last_error

  interface
    function c_open(path, writer) bind(c, name="motes_writer_open") result(s)
      import :: c_char, c_ptr, c_int
      character(kind=c_char), intent(in) :: path(*)
      type(c_ptr), intent(out) :: writer
      integer(c_int) :: s
    end function
    function c_set_options(writer, leaf_size, lod_count, threads, sync) bind(c, name="motes_writer_set_options") result(s)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: writer
      integer(c_int32_t), value :: leaf_size, lod_count, threads
      integer(c_int), value :: sync
      integer(c_int) :: s
    end function
    function c_begin_step(writer, step, time) bind(c, name="motes_writer_begin_step") result(s)
      import :: c_ptr, c_int, c_int64_t, c_double
      type(c_ptr), value :: writer
      integer(c_int64_t), value :: step
      real(c_double), value :: time
      integer(c_int) :: s
    end function
    function c_set_attributes(writer, json) bind(c, name="motes_writer_set_step_attributes") result(s)
      import :: c_ptr, c_int, c_char
      type(c_ptr), value :: writer
      character(kind=c_char), intent(in) :: json(*)
      integer(c_int) :: s
    end function
    function c_set_column(writer, species, name, dtype, data, count, stride) bind(c, name="motes_writer_set_column") result(s)
      import :: c_ptr, c_int, c_char, c_int64_t
      type(c_ptr), value :: writer
      character(kind=c_char), intent(in) :: species(*), name(*)
      integer(c_int), value :: dtype
      type(c_ptr), value :: data
      integer(c_int64_t), value :: count, stride
      integer(c_int) :: s
    end function
    function c_define_column(writer, species, name, dtype, unit) bind(c, name="motes_writer_define_column") result(s)
      import :: c_ptr, c_int, c_char
      type(c_ptr), value :: writer
      character(kind=c_char), intent(in) :: species(*), name(*), unit(*)
      integer(c_int), value :: dtype
      integer(c_int) :: s
    end function
    function c_set_unit(writer, species, name, unit) bind(c, name="motes_writer_set_unit") result(s)
      import :: c_ptr, c_int, c_char
      type(c_ptr), value :: writer
      character(kind=c_char), intent(in) :: species(*), name(*), unit(*)
      integer(c_int) :: s
    end function
    function c_set_field(writer, name, dtype, ndim, dims, components, data, names, origin, spacing, cell_centred, &
                         unit) bind(c, name="motes_writer_set_field") result(s)
      import :: c_ptr, c_int, c_char, c_int64_t, c_double
      type(c_ptr), value :: writer
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int), value :: dtype, ndim, components, cell_centred
      integer(c_int64_t), intent(in) :: dims(*)
      type(c_ptr), intent(in) :: data(*)
      type(c_ptr), value :: names
      real(c_double), intent(in) :: origin(*), spacing(*)
      character(kind=c_char), intent(in) :: unit(*)
      integer(c_int) :: s
    end function
    function c_add_derived(writer, name, expression) bind(c, name="motes_writer_add_derived") result(s)
      import :: c_ptr, c_int, c_char
      type(c_ptr), value :: writer
      character(kind=c_char), intent(in) :: name(*), expression(*)
      integer(c_int) :: s
    end function
    function c_set_field_tolerance(writer, name, tolerance) bind(c, name="motes_writer_set_field_tolerance") result(s)
      import :: c_ptr, c_int, c_char, c_double
      type(c_ptr), value :: writer
      character(kind=c_char), intent(in) :: name(*)
      real(c_double), value :: tolerance
      integer(c_int) :: s
    end function
    function c_write_step(writer) bind(c, name="motes_writer_write_step") result(s)
      import :: c_ptr, c_int
      type(c_ptr), value :: writer
      integer(c_int) :: s
    end function
    function c_set_background(writer, max_pending, borrow) bind(c, name="motes_writer_set_background") result(s)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: writer
      integer(c_int32_t), value :: max_pending
      integer(c_int), value :: borrow
      integer(c_int) :: s
    end function
    function c_flush(writer) bind(c, name="motes_writer_flush") result(s)
      import :: c_ptr, c_int
      type(c_ptr), value :: writer
      integer(c_int) :: s
    end function
    function c_last_written(writer, step, written) bind(c, name="motes_writer_last_written") result(s)
      import :: c_ptr, c_int, c_int64_t
      type(c_ptr), value :: writer
      integer(c_int64_t), intent(out) :: step
      integer(c_int), intent(out) :: written
      integer(c_int) :: s
    end function
    function c_close(writer) bind(c, name="motes_writer_close") result(s)
      import :: c_ptr, c_int
      type(c_ptr), value :: writer
      integer(c_int) :: s
    end function
    function c_last_error() bind(c, name="motes_last_error") result(p)
      import :: c_ptr
      type(c_ptr) :: p
    end function
    function c_strlen(p) bind(c, name="strlen") result(n)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: p
      integer(c_size_t) :: n
    end function
  end interface

contains

  ! A Fortran string as a NUL-terminated C string (for the C API's char* arguments).
  function motes_c_string(s) result(out)
    character(len=*), intent(in) :: s
    character(kind=c_char, len=len(s) + 1) :: out
    out = s // c_null_char
  end function

  integer function motes_writer_open(path, writer) result(s)
    character(len=*), intent(in) :: path
    type(c_ptr), intent(out) :: writer
    s = c_open(motes_c_string(path), writer)
  end function

  integer function motes_writer_set_options(writer, leaf_size, lod_count, threads, sync) result(s)
    type(c_ptr), intent(in) :: writer
    integer, intent(in) :: leaf_size, lod_count, threads
    logical, intent(in) :: sync
    s = c_set_options(writer, int(leaf_size, c_int32_t), int(lod_count, c_int32_t), int(threads, c_int32_t), &
                      merge(1_c_int, 0_c_int, sync))
  end function

  integer function motes_writer_begin_step(writer, step, time) result(s)
    type(c_ptr), intent(in) :: writer
    integer(int64), intent(in) :: step
    real(c_double), intent(in) :: time
    s = c_begin_step(writer, int(step, c_int64_t), time)
  end function

  integer function motes_writer_set_step_attributes(writer, json) result(s)
    type(c_ptr), intent(in) :: writer
    character(len=*), intent(in) :: json
    s = c_set_attributes(writer, motes_c_string(json))
  end function

  integer function motes_writer_set_column(writer, species, name, dtype, data, count, stride_bytes) result(s)
    type(c_ptr), intent(in) :: writer
    character(len=*), intent(in) :: species, name
    integer(c_int), intent(in) :: dtype
    type(c_ptr), intent(in) :: data
    integer(int64), intent(in) :: count, stride_bytes
    s = c_set_column(writer, motes_c_string(species), motes_c_string(name), dtype, data, int(count, c_int64_t), &
                     int(stride_bytes, c_int64_t))
  end function

  ! Declares a column once for all later steps; unit may be '' (none). See motes.h.
  integer function motes_writer_define_column(writer, species, name, dtype, unit) result(s)
    type(c_ptr), intent(in) :: writer
    character(len=*), intent(in) :: species, name, unit
    integer(c_int), intent(in) :: dtype
    s = c_define_column(writer, motes_c_string(species), motes_c_string(name), dtype, motes_c_string(unit))
  end function

  integer function motes_writer_set_unit(writer, species, name, unit) result(s)
    type(c_ptr), intent(in) :: writer
    character(len=*), intent(in) :: species, name, unit
    s = c_set_unit(writer, motes_c_string(species), motes_c_string(name), motes_c_string(unit))
  end function

  ! A grid field of the step: a Fortran array a(nx, ny, nz) (x fastest, as motes stores it)
  ! per component, given with c_loc in data(1:components) (components named "0", "1", ...
  ! when several); dims(1:ndim) its sizes; origin and spacing per axis; unit may be ''.
  ! The arrays must stay valid until motes_writer_write_step. See motes.h.
  integer function motes_writer_set_field(writer, name, dtype, ndim, dims, data, origin, spacing, cell_centred, &
                                          unit) result(s)
    type(c_ptr), intent(in) :: writer
    character(len=*), intent(in) :: name, unit
    integer(c_int), intent(in) :: dtype, ndim
    integer(int64), intent(in) :: dims(:)
    type(c_ptr), intent(in) :: data(:)
    real(c_double), intent(in) :: origin(:), spacing(:)
    logical, intent(in) :: cell_centred
    integer(c_int) :: centred
    centred = 0
    if (cell_centred) centred = 1
    s = c_set_field(writer, motes_c_string(name), dtype, ndim, int(dims, c_int64_t), int(size(data), c_int), data, &
                    c_null_ptr, origin, spacing, centred, motes_c_string(unit))
  end function

  ! Declares a derived quantity of every species of the following steps: the writer computes
  ! `expression` over the columns and indexes it (its values are not stored). See motes.h.
  integer function motes_writer_add_derived(writer, name, expression) result(s)
    type(c_ptr), intent(in) :: writer
    character(len=*), intent(in) :: name, expression
    s = c_add_derived(writer, motes_c_string(name), motes_c_string(expression))
  end function

  ! Stores field `name` (set before in this step) within an absolute error `tolerance` (ZFP
  ! fixed accuracy, real32/real64 only); 0 stores it exactly. See motes.h.
  integer function motes_writer_set_field_tolerance(writer, name, tolerance) result(s)
    type(c_ptr), intent(in) :: writer
    character(len=*), intent(in) :: name
    real(c_double), intent(in) :: tolerance
    s = c_set_field_tolerance(writer, motes_c_string(name), tolerance)
  end function

  integer function motes_writer_write_step(writer) result(s)
    type(c_ptr), intent(in) :: writer
    s = c_write_step(writer)
  end function

  ! Background writes: motes_writer_write_step copies the step's arrays (borrow .false.; with
  ! .true. they must not change until the step is acknowledged), queues it and returns; at
  ! most max_pending steps are in flight. See motes.h.
  integer function motes_writer_set_background(writer, max_pending, borrow) result(s)
    type(c_ptr), intent(in) :: writer
    integer, intent(in) :: max_pending
    logical, intent(in) :: borrow
    integer(c_int) :: b
    b = 0
    if (borrow) b = 1
    s = c_set_background(writer, int(max_pending, c_int32_t), b)
  end function

  ! Waits until every step given is written; the first error not returned yet.
  integer function motes_writer_flush(writer) result(s)
    type(c_ptr), intent(in) :: writer
    s = c_flush(writer)
  end function

  ! The last step acknowledged (written and published); written is .false. when none yet.
  integer function motes_writer_last_written(writer, step, written) result(s)
    type(c_ptr), intent(in) :: writer
    integer(int64), intent(out) :: step
    logical, intent(out) :: written
    integer(c_int64_t) :: st
    integer(c_int) :: w
    st = 0
    s = c_last_written(writer, st, w)
    step = st
    written = w /= 0
  end function

  integer function motes_writer_close(writer) result(s)
    type(c_ptr), intent(inout) :: writer
    s = c_close(writer)
    writer = c_null_ptr
  end function

  ! The message of the last failure on this thread, as a Fortran string.
  function motes_last_error() result(msg)
    character(len=:), allocatable :: msg
    type(c_ptr) :: p
    character(kind=c_char), pointer :: chars(:)
    integer :: n, i
    p = c_last_error()
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: msg)
    do i = 1, n
      msg(i:i) = chars(i)
    end do
  end function

end module motes
