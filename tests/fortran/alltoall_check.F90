! alltoall_check.F90: MPI_ALLTOALL and MPI_ALLTOALLV called from Fortran, checked element by
! element (tests/fortran/README.md). One source for the three bindings, chosen by the
! preprocessor: -DAAPC_MPIF_H (include 'mpif.h'), -DAAPC_USE_MPI (use mpi), -DAAPC_USE_MPI_F08
! (use mpi_f08). Cases, on MPI_COMM_WORLD and on the halves of an MPI_COMM_SPLIT (colour: rank
! parity, keys reversed), each one call per rank:
!   alltoall-N        N integers per pair (1, 5, 300, 2000)
!   alltoall-inplace  MPI_IN_PLACE (the send count and type are ignored: 0, MPI_DATATYPE_NULL)
!   alltoall-bottom   MPI_BOTTOM on both sides, a struct type at the buffers' absolute addresses
!   alltoallv-M       counts (r+2j) mod 4 * M (zeros included), blocks in reverse order with
!                     gaps; the gaps of the receive buffer must keep their fill
!   alltoallv-inplace MPI_IN_PLACE with symmetric counts (r+j) mod 3 * M
!   alltoallv-bottom  MPI_BOTTOM on both sides, one struct type per rank's block
!   errors-return     a negative count on a duplicate with MPI_ERRORS_RETURN: ierr is an error
!                     on every rank (and the program goes on)
!   scatter, scatterv MPI_SCATTER and MPI_SCATTERV from the last rank (world only)
! Rank 0 prints the failures, then
!   calls: MPI_Alltoall <world> <split> MPI_Alltoallv <world> <split>
! (the calls each rank made on each communicator, for the test to compare with AAPC_REPORT) and
! exactly one closing line
!   alltoall_check: N passed, M failed
module binding
#if defined(AAPC_USE_MPI_F08)
  use mpi_f08
#elif defined(AAPC_USE_MPI)
  use mpi
#else
  implicit none
  include 'mpif.h'
#endif
end module binding

#if defined(AAPC_USE_MPI_F08)
#define COMM_T type(MPI_Comm)
#define DTYPE_T type(MPI_Datatype)
#else
#define COMM_T integer
#define DTYPE_T integer
#endif

module checks
  use binding
  implicit none
  integer, parameter :: FILL = -7
  integer :: npass = 0, nfail = 0
  integer :: a2a_calls(2) = 0, a2av_calls(2) = 0
  integer :: wrank = 0
contains

  ! The value rank `src` sends to rank `dst` as element k of their block
  pure integer function val(src, dst, k)
    integer, intent(in) :: src, dst, k
    val = src * 1000003 + dst * 1009 + k
  end function val

  ! Agree on the outcome of a case over `comm` and count it once
  subroutine verdict(name, ok)
    character(len=*), intent(in) :: name
    logical, intent(in) :: ok
    logical :: all_ok
    integer :: ierr
    call MPI_ALLREDUCE(ok, all_ok, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
    if (all_ok) then
      npass = npass + 1
    else
      nfail = nfail + 1
      if (wrank == 0) print '(a,a)', 'FAIL ', name
    end if
  end subroutine verdict

  subroutine alltoall_cases(comm, slot, label)
    COMM_T, intent(in) :: comm
    integer, intent(in) :: slot
    character(len=*), intent(in) :: label
    integer :: sizes(4) = [1, 5, 300, 2000]
    integer, allocatable :: sbuf(:, :), rbuf(:, :)
    integer :: p, r, n, i, j, k, ierr
    logical :: ok
    character(len=40) :: name
    call MPI_COMM_SIZE(comm, p, ierr)
    call MPI_COMM_RANK(comm, r, ierr)
    do i = 1, size(sizes)
      n = sizes(i)
      allocate(sbuf(n, 0:p-1), rbuf(n, 0:p-1))
      do j = 0, p - 1
        do k = 1, n
          sbuf(k, j) = val(r, j, k)
        end do
      end do
      rbuf = FILL
      call MPI_ALLTOALL(sbuf, n, MPI_INTEGER, rbuf, n, MPI_INTEGER, comm, ierr)
      a2a_calls(slot) = a2a_calls(slot) + 1
      ok = ierr == MPI_SUCCESS
      do j = 0, p - 1
        do k = 1, n
          ok = ok .and. rbuf(k, j) == val(j, r, k)
        end do
      end do
      write (name, '(a,a,i0)') label, ' alltoall-', n
      call verdict(trim(name), ok)
      ! in place: the send count and type are ignored
      rbuf = sbuf
      call MPI_ALLTOALL(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, n, MPI_INTEGER, comm, ierr)
      a2a_calls(slot) = a2a_calls(slot) + 1
      ok = ierr == MPI_SUCCESS
      do j = 0, p - 1
        do k = 1, n
          ok = ok .and. rbuf(k, j) == val(j, r, k)
        end do
      end do
      write (name, '(a,a,i0)') label, ' alltoall-inplace-', n
      call verdict(trim(name), ok)
      deallocate(sbuf, rbuf)
    end do
  end subroutine alltoall_cases

  ! A struct type of n integers at the absolute address of buf(1), its extent n integers
  subroutine absolute_type(buf, n, newtype)
    integer, intent(in) :: buf(*)
    integer, intent(in) :: n
    DTYPE_T, intent(out) :: newtype
    DTYPE_T :: t0
    DTYPE_T :: types(1)
    integer(kind=MPI_ADDRESS_KIND) :: addr(1), lb, extent
    integer :: blens(1), ierr
    call MPI_GET_ADDRESS(buf, addr(1), ierr)
    blens(1) = n
    types(1) = MPI_INTEGER
    call MPI_TYPE_CREATE_STRUCT(1, blens, addr, types, t0, ierr)
    call MPI_TYPE_GET_EXTENT(MPI_INTEGER, lb, extent, ierr)
    call MPI_TYPE_CREATE_RESIZED(t0, 0_MPI_ADDRESS_KIND, n * extent, newtype, ierr)
    call MPI_TYPE_COMMIT(newtype, ierr)
    call MPI_TYPE_FREE(t0, ierr)
  end subroutine absolute_type

  subroutine bottom_cases(comm, slot, label)
    COMM_T, intent(in) :: comm
    integer, intent(in) :: slot
    character(len=*), intent(in) :: label
    integer, parameter :: n = 37
    integer, allocatable :: sbuf(:, :), rbuf(:, :), counts(:), displs(:)
    DTYPE_T :: stype, rtype
    integer :: p, r, j, k, ierr
    logical :: ok
    call MPI_COMM_SIZE(comm, p, ierr)
    call MPI_COMM_RANK(comm, r, ierr)
    allocate(sbuf(n, 0:p-1), rbuf(n, 0:p-1), counts(0:p-1), displs(0:p-1))
    do j = 0, p - 1
      do k = 1, n
        sbuf(k, j) = val(r, j, k)
      end do
    end do
    rbuf = FILL
    call absolute_type(sbuf, n, stype)
    call absolute_type(rbuf, n, rtype)
    call MPI_ALLTOALL(MPI_BOTTOM, 1, stype, MPI_BOTTOM, 1, rtype, comm, ierr)
    a2a_calls(slot) = a2a_calls(slot) + 1
    ok = ierr == MPI_SUCCESS
    do j = 0, p - 1
      do k = 1, n
        ok = ok .and. rbuf(k, j) == val(j, r, k)
      end do
    end do
    call verdict(label // ' alltoall-bottom', ok)
    ! Alltoallv at MPI_BOTTOM: the block of rank j at displacement p-1-j (reverse order)
    do j = 0, p - 1
      displs(j) = p - 1 - j
      do k = 1, n
        sbuf(k, p - 1 - j) = val(r, j, k)
      end do
    end do
    rbuf = FILL
    counts = 1
    call MPI_ALLTOALLV(MPI_BOTTOM, counts, displs, stype, MPI_BOTTOM, counts, displs, rtype, &
                       comm, ierr)
    a2av_calls(slot) = a2av_calls(slot) + 1
    ok = ierr == MPI_SUCCESS
    do j = 0, p - 1
      do k = 1, n
        ok = ok .and. rbuf(k, p - 1 - j) == val(j, r, k)
      end do
    end do
    call verdict(label // ' alltoallv-bottom', ok)
    call MPI_TYPE_FREE(stype, ierr)
    call MPI_TYPE_FREE(rtype, ierr)
    deallocate(sbuf, rbuf, counts, displs)
  end subroutine bottom_cases

  subroutine alltoallv_cases(comm, slot, label)
    COMM_T, intent(in) :: comm
    integer, intent(in) :: slot
    character(len=*), intent(in) :: label
    integer :: mults(2) = [1, 500]
    integer, allocatable :: sbuf(:), rbuf(:), scounts(:), rcounts(:), sdispls(:), rdispls(:)
    integer :: p, r, m, i, j, k, at, ierr
    logical :: ok
    character(len=40) :: name
    call MPI_COMM_SIZE(comm, p, ierr)
    call MPI_COMM_RANK(comm, r, ierr)
    allocate(scounts(0:p-1), rcounts(0:p-1), sdispls(0:p-1), rdispls(0:p-1))
    do i = 1, size(mults)
      m = mults(i)
      ! blocks in reverse rank order, one element of gap before each
      at = 1
      do j = p - 1, 0, -1
        scounts(j) = mod(r + 2 * j, 4) * m
        rcounts(j) = mod(j + 2 * r, 4) * m
        sdispls(j) = at
        at = at + 1 + 3 * m
      end do
      rdispls = sdispls
      allocate(sbuf(0:at), rbuf(0:at))
      sbuf = FILL
      do j = 0, p - 1
        do k = 1, scounts(j)
          sbuf(sdispls(j) + k - 1) = val(r, j, k)
        end do
      end do
      rbuf = FILL
      call MPI_ALLTOALLV(sbuf, scounts, sdispls, MPI_INTEGER, rbuf, rcounts, rdispls, &
                         MPI_INTEGER, comm, ierr)
      a2av_calls(slot) = a2av_calls(slot) + 1
      ok = ierr == MPI_SUCCESS
      do j = 0, p - 1
        do k = 1, rcounts(j)
          ok = ok .and. rbuf(rdispls(j) + k - 1) == val(j, r, k)
        end do
      end do
      ok = ok .and. count(rbuf /= FILL) == sum(rcounts)
      write (name, '(a,a,i0)') label, ' alltoallv-', m
      call verdict(trim(name), ok)
      ! in place: symmetric counts, the send arguments are ignored
      do j = 0, p - 1
        rcounts(j) = mod(r + j, 3) * m
      end do
      rbuf = FILL
      do j = 0, p - 1
        do k = 1, rcounts(j)
          rbuf(rdispls(j) + k - 1) = val(r, j, k)
        end do
      end do
      call MPI_ALLTOALLV(MPI_IN_PLACE, scounts, sdispls, MPI_DATATYPE_NULL, rbuf, rcounts, &
                         rdispls, MPI_INTEGER, comm, ierr)
      a2av_calls(slot) = a2av_calls(slot) + 1
      ok = ierr == MPI_SUCCESS
      do j = 0, p - 1
        do k = 1, rcounts(j)
          ok = ok .and. rbuf(rdispls(j) + k - 1) == val(j, r, k)
        end do
      end do
      ok = ok .and. count(rbuf /= FILL) == sum(rcounts)
      write (name, '(a,a,i0)') label, ' alltoallv-inplace-', m
      call verdict(trim(name), ok)
      deallocate(sbuf, rbuf)
    end do
    deallocate(scounts, rcounts, sdispls, rdispls)
  end subroutine alltoallv_cases

  ! A negative count on a duplicate returning errors: an error code on every rank
  ! (its calls count as the world's: the report merges communicators of one group)
  ! MPI_SCATTER of 2000 integers per rank and MPI_SCATTERV of mod(q, 3) * 700 (zeros among
  ! them) from the last rank, on MPI_COMM_WORLD: the other collectives' Fortran names
  subroutine scatter_cases(comm)
    COMM_T, intent(in) :: comm
    integer, parameter :: n = 2000, m = 700
    integer, allocatable :: sbuf(:), rbuf(:), counts(:), displs(:)
    integer :: p, r, root, j, k, ierr
    logical :: ok
    call MPI_COMM_SIZE(comm, p, ierr)
    call MPI_COMM_RANK(comm, r, ierr)
    root = p - 1
    allocate(sbuf(n * p), rbuf(n + 1), counts(0:p-1), displs(0:p-1))
    do j = 0, p - 1
      do k = 1, n
        sbuf(j * n + k) = val(root, j, k)
      end do
    end do
    rbuf = FILL
    call MPI_SCATTER(sbuf, n, MPI_INTEGER, rbuf, n, MPI_INTEGER, root, comm, ierr)
    ok = ierr == MPI_SUCCESS .and. rbuf(n + 1) == FILL
    do k = 1, n
      ok = ok .and. rbuf(k) == val(root, r, k)
    end do
    call verdict('world scatter', ok)
    do j = 0, p - 1 ! rank j's block at j * n, mod(j, 3) * m integers
      counts(j) = mod(j, 3) * m
      displs(j) = j * n
    end do
    rbuf = FILL
    call MPI_SCATTERV(sbuf, counts, displs, MPI_INTEGER, rbuf, counts(r), MPI_INTEGER, root, &
                      comm, ierr)
    ok = ierr == MPI_SUCCESS .and. rbuf(counts(r) + 1) == FILL
    do k = 1, counts(r)
      ok = ok .and. rbuf(k) == val(root, r, k)
    end do
    call verdict('world scatterv', ok)
    deallocate(sbuf, rbuf, counts, displs)
  end subroutine scatter_cases

  subroutine error_cases(comm, label)
    COMM_T, intent(in) :: comm
    character(len=*), intent(in) :: label
    COMM_T :: dup
    integer :: sbuf(4), rbuf(4), p, ierr, rc
    integer, allocatable :: counts(:), displs(:)
    call MPI_COMM_DUP(comm, dup, ierr)
    call MPI_COMM_SET_ERRHANDLER(dup, MPI_ERRORS_RETURN, ierr)
    call MPI_COMM_SIZE(dup, p, ierr)
    sbuf = 1
    rc = MPI_SUCCESS
    call MPI_ALLTOALL(sbuf, -1, MPI_INTEGER, rbuf, -1, MPI_INTEGER, dup, rc)
    a2a_calls(1) = a2a_calls(1) + 1
    call verdict(label // ' errors-return-alltoall', rc /= MPI_SUCCESS)
    allocate(counts(0:p-1), displs(0:p-1))
    counts = -1
    displs = 0
    rc = MPI_SUCCESS
    call MPI_ALLTOALLV(sbuf, counts, displs, MPI_INTEGER, rbuf, counts, displs, MPI_INTEGER, &
                       dup, rc)
    a2av_calls(1) = a2av_calls(1) + 1
    call verdict(label // ' errors-return-alltoallv', rc /= MPI_SUCCESS)
    call MPI_COMM_FREE(dup, ierr)
  end subroutine error_cases
end module checks

program alltoall_check
  use checks
  implicit none
  COMM_T :: half
  integer :: wsize, ierr, fails
  integer :: calls(4), most(4)
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, wrank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, wsize, ierr)
  call MPI_COMM_SPLIT(MPI_COMM_WORLD, mod(wrank, 2), wsize - wrank, half, ierr)
  call alltoall_cases(MPI_COMM_WORLD, 1, 'world')
  call alltoallv_cases(MPI_COMM_WORLD, 1, 'world')
  call bottom_cases(MPI_COMM_WORLD, 1, 'world')
  call alltoall_cases(half, 2, 'split')
  call alltoallv_cases(half, 2, 'split')
  call bottom_cases(half, 2, 'split')
  call error_cases(MPI_COMM_WORLD, 'world')
  call scatter_cases(MPI_COMM_WORLD)
  call MPI_COMM_FREE(half, ierr)
  calls = [a2a_calls(1), a2a_calls(2), a2av_calls(1), a2av_calls(2)]
  call MPI_REDUCE(calls, most, 4, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
  call MPI_REDUCE(nfail, fails, 1, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
  if (wrank == 0) then
    print '(a,4(1x,i0))', 'calls: MPI_Alltoall MPI_Alltoallv', most
    print '(a,i0,a,i0,a)', 'alltoall_check: ', npass, ' passed, ', nfail, ' failed'
  end if
  call MPI_FINALIZE(ierr)
end program alltoall_check
