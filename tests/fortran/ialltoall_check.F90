! ialltoall_check.F90: MPI_IALLTOALL and MPI_IALLTOALLV called from Fortran and completed with
! MPI_WAIT / MPI_WAITALL, checked element by element. One source for the three bindings
! (-DAAPC_MPIF_H, -DAAPC_USE_MPI, -DAAPC_USE_MPI_F08), on MPI_COMM_WORLD, 50 rounds each.
! MPICH's mpi_f08 completion calls go to PMPI_Wait directly: the library must hand these calls
! to the MPI library's routine, or the data would never move. Rank 0 prints exactly one line
!   ialltoall_check: N passed, M failed
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
#define REQ_T type(MPI_Request)
#else
#define REQ_T integer
#endif

program ialltoall_check
  use binding
  implicit none
  integer, parameter :: N = 4096
  integer :: rank, size, ierr, round, j, k, bad, fails, npass
  integer, allocatable :: sbuf(:), rbuf(:), counts(:), displs(:)
  REQ_T :: req(2)
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
  allocate(sbuf(N * size), rbuf(N * size), counts(size), displs(size))
  counts = N
  displs = [(j * N, j = 0, size - 1)]
  npass = 0
  bad = 0
  do round = 1, 50
    do j = 0, size - 1
      do k = 1, N
        sbuf(j * N + k) = rank * 1000003 + j * 1009 + k + round
      end do
    end do
    rbuf = -7
    call MPI_IALLTOALL(sbuf, N, MPI_INTEGER, rbuf, N, MPI_INTEGER, MPI_COMM_WORLD, req(1), ierr)
    call MPI_WAIT(req(1), MPI_STATUS_IGNORE, ierr)
    call check()
    rbuf = -7
    call MPI_IALLTOALLV(sbuf, counts, displs, MPI_INTEGER, rbuf, counts, displs, MPI_INTEGER, &
                        MPI_COMM_WORLD, req(2), ierr)
    call MPI_WAITALL(1, req(2:2), MPI_STATUSES_IGNORE, ierr)
    call check()
  end do
  call MPI_REDUCE(bad, fails, 1, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,i0,a,i0,a)', 'ialltoall_check: ', npass, ' passed, ', fails, ' failed'
  call MPI_FINALIZE(ierr)
contains
  subroutine check()
    integer :: src, kk, wrong
    wrong = 0
    do src = 0, size - 1
      do kk = 1, N
        if (rbuf(src * N + kk) /= src * 1000003 + rank * 1009 + kk + round) wrong = wrong + 1
      end do
    end do
    if (wrong == 0) then
      npass = npass + 1
    else
      bad = bad + 1
    end if
  end subroutine check
end program ialltoall_check
