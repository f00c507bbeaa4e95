! ialltoall_check.F90: MPI_IALLTOALL, MPI_IALLTOALLV, MPI_IALLTOALLW (and, with -DAAPC_HAVE_INIT, the
! persistent MPI_ALLTOALL_INIT and MPI_ALLTOALLV_INIT) called from Fortran, completed together
! with the program's own point-to-point requests by every completion call, checked element by
! element. One source for the three bindings (-DAAPC_MPIF_H, -DAAPC_USE_MPI,
! -DAAPC_USE_MPI_F08), on MPI_COMM_WORLD. Per round:
!   A  both collectives + ISEND/IRECV in one MPI_WAITALL (the receive's status checked)
!   B  the same four, an MPI_TESTSOME loop until MPI_UNDEFINED (1-based indices, each once)
!   C  the same four, MPI_WAITANY four times, then MPI_UNDEFINED
!   D  MPI_IALLTOALL alone, an MPI_TEST loop
!   E  MPI_IALLTOALLV alone, an MPI_REQUEST_GET_STATUS loop (the request stays), MPI_WAIT
!   F  the same four, an MPI_TESTALL loop
!   G  the same four, MPI_TESTANY and MPI_WAITSOME loops
!   H  MPI_IALLTOALLW alone (MPI_IALLTOALLV's blocks: byte displacements, a datatype array)
! then MPI_CANCEL of an active MPI_IALLTOALL request (an error, returned) and, with the
! persistent calls, both started 100 times with persistent point-to-point (MPI_STARTALL or
! MPI_START; MPI_WAITALL, MPI_TESTALL or MPI_WAITSOME; MPI_START and MPI_REQUEST_FREE of an
! active one are errors, returned), tested while inactive and freed.
! A blocking MPI_ALLTOALL comes first (the library's duplicate of the communicator).
! Every rank prints the numbers of its first failed checks; rank 0 prints exactly
!   ialltoall_check: N passed, M failed
!   calls: MPI_Ialltoall MPI_Ialltoallv MPI_Alltoall_init MPI_Alltoallv_init MPI_Ialltoallw A B C D E
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
#define STATUS_T type(MPI_Status)
#define STATUSES_T(n) type(MPI_Status) :: sts(n)
#define SOURCE_OF(s) s%MPI_SOURCE
#define TAG_OF(s) s%MPI_TAG
#define SOURCE_K(k) sts(k)%MPI_SOURCE
#define TAG_K(k) sts(k)%MPI_TAG
#define INFO_NULL MPI_INFO_NULL
#else
#define REQ_T integer
#define STATUS_T integer, dimension(MPI_STATUS_SIZE)
#define STATUSES_T(n) integer :: sts(MPI_STATUS_SIZE, n)
#define SOURCE_OF(s) s(MPI_SOURCE)
#define TAG_OF(s) s(MPI_TAG)
#define SOURCE_K(k) sts(MPI_SOURCE, k)
#define TAG_K(k) sts(MPI_TAG, k)
#define INFO_NULL MPI_INFO_NULL
#endif

program ialltoall_check
  use binding
  implicit none
  integer, parameter :: N = 300, ROUNDS = 4, RESTARTS = 100, TAG = 77
  integer :: rank, nprocs, ierr, left, right, round, i, k, npass, bad, fails
  integer :: nia, niav, ninit, ninitv, niaw, outcount, idx, total, isize
  integer, allocatable :: sbuf(:), rbuf(:), svb(:), rvb(:), sc(:), sd(:), rc(:), rd(:)
  integer, allocatable :: sdw(:), rdw(:)
#if defined(AAPC_USE_MPI_F08)
  type(MPI_Datatype), allocatable :: wt(:)
#else
  integer, allocatable :: wt(:)
#endif
  integer :: pin(4), pout(4), seen(4), idxs(4)
  logical :: flag
  REQ_T :: req(4), preq(4)
  STATUS_T :: st
  STATUSES_T(4)

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  left = mod(rank + nprocs - 1, nprocs)
  right = mod(rank + 1, nprocs)
  allocate(sbuf(N * nprocs), rbuf(N * nprocs), sc(nprocs), sd(nprocs), rc(nprocs), rd(nprocs))
  ! Alltoallv: counts vary with both ranks, blocks in reverse order with gaps of 3
  do i = 1, nprocs
    sc(i) = vcount(rank, i - 1)
    rc(i) = vcount(i - 1, rank)
  end do
  sd(nprocs) = 0
  rd(nprocs) = 0
  do i = nprocs - 1, 1, -1
    sd(i) = sd(i + 1) + sc(i + 1) + 3
    rd(i) = rd(i + 1) + rc(i + 1) + 3
  end do
  allocate(svb(sd(1) + sc(1)), rvb(rd(1) + rc(1)))
  ! Alltoallw: the same blocks, displacements in bytes, one datatype per peer
  call MPI_TYPE_SIZE(MPI_INTEGER, isize, ierr)
  allocate(sdw(nprocs), rdw(nprocs), wt(nprocs))
  sdw = sd * isize
  rdw = rd * isize
  wt = MPI_INTEGER
  npass = 0
  bad = 0
  nia = 0
  niav = 0
  ninit = 0
  ninitv = 0
  niaw = 0
  ! one blocking MPI_ALLTOALL first: the library gathers the communicator's machines and makes
  ! its duplicate there (under Open MPI the non-blocking calls cannot: docs/nonblocking.md)
  sbuf = rank
  call MPI_ALLTOALL(sbuf, N, MPI_INTEGER, rbuf, N, MPI_INTEGER, MPI_COMM_WORLD, ierr)

  do round = 1, ROUNDS
    ! A: one MPI_WAITALL
    call post(round)
    call MPI_WAITALL(4, req, sts, ierr)
    call expect(ierr == MPI_SUCCESS .and. all_null())
    call expect(SOURCE_K(3) == left .and. TAG_K(3) == TAG + round)
    call check_all(round)

    ! B: MPI_TESTSOME until no request is active
    call post(round + 100)
    seen = 0
    do
      call MPI_TESTSOME(4, req, outcount, idxs, sts, ierr)
      if (ierr /= MPI_SUCCESS .or. outcount == MPI_UNDEFINED) exit
      do k = 1, outcount
        if (idxs(k) >= 1 .and. idxs(k) <= 4) seen(idxs(k)) = seen(idxs(k)) + 1
        if (idxs(k) == 3) call expect(SOURCE_K(k) == left .and. TAG_K(k) == TAG + round + 100)
      end do
    end do
    call expect(ierr == MPI_SUCCESS .and. all(seen == 1) .and. all_null())
    call check_all(round + 100)

    ! C: MPI_WAITANY four times, then nothing active
    call post(round + 200)
    seen = 0
    do k = 1, 4
      call MPI_WAITANY(4, req, idx, st, ierr)
      if (idx >= 1 .and. idx <= 4) seen(idx) = seen(idx) + 1
      if (idx == 3) call expect(SOURCE_OF(st) == left .and. TAG_OF(st) == TAG + round + 200)
    end do
    call MPI_WAITANY(4, req, idx, st, ierr)
#if defined(AAPC_MPICH_WAITANY_PLUS_ONE)
    ! MPICH 4.0.2's mpif.h / `use mpi` MPI_WAITANY adds 1 to MPI_UNDEFINED (with or without
    ! the library: its own wrapper)
    if (idx == MPI_UNDEFINED + 1) idx = MPI_UNDEFINED
#endif
    call expect(all(seen == 1) .and. idx == MPI_UNDEFINED .and. all_null())
    call check_all(round + 200)

    ! D: MPI_IALLTOALL alone, an MPI_TEST loop
    call fill(round + 300)
    call MPI_IALLTOALL(sbuf, N, MPI_INTEGER, rbuf, N, MPI_INTEGER, MPI_COMM_WORLD, req(1), ierr)
    nia = nia + 1
    flag = .false.
    do while (.not. flag)
      call MPI_TEST(req(1), flag, st, ierr)
      if (ierr /= MPI_SUCCESS) exit
    end do
    call expect(flag .and. req(1) == MPI_REQUEST_NULL)
    call check_a(round + 300)

    ! E: MPI_IALLTOALLV alone, MPI_REQUEST_GET_STATUS until complete, then MPI_WAIT
    call fill(round + 400)
    call MPI_IALLTOALLV(svb, sc, sd, MPI_INTEGER, rvb, rc, rd, MPI_INTEGER, MPI_COMM_WORLD, &
                        req(2), ierr)
    niav = niav + 1
    flag = .false.
    do while (.not. flag)
      call MPI_REQUEST_GET_STATUS(req(2), flag, st, ierr)
      if (ierr /= MPI_SUCCESS) exit
    end do
    call expect(flag .and. req(2) /= MPI_REQUEST_NULL)
    call MPI_WAIT(req(2), MPI_STATUS_IGNORE, ierr)
    call expect(ierr == MPI_SUCCESS .and. req(2) == MPI_REQUEST_NULL)
    call check_v(round + 400)

    ! F: an MPI_TESTALL loop
    call post(round + 500)
    flag = .false.
    do while (.not. flag)
      call MPI_TESTALL(4, req, flag, MPI_STATUSES_IGNORE, ierr)
      if (ierr /= MPI_SUCCESS) exit
    end do
    call expect(flag .and. all_null())
    call check_all(round + 500)

    ! G: MPI_TESTANY until one completes, then MPI_WAITSOME until none is active
    call post(round + 600)
    seen = 0
    flag = .false.
    do while (.not. flag)
      call MPI_TESTANY(4, req, idx, flag, st, ierr)
      if (ierr /= MPI_SUCCESS) exit
    end do
    if (idx >= 1 .and. idx <= 4) seen(idx) = 1
    do
      call MPI_WAITSOME(4, req, outcount, idxs, MPI_STATUSES_IGNORE, ierr)
      if (ierr /= MPI_SUCCESS .or. outcount == MPI_UNDEFINED) exit
      do k = 1, outcount
        if (idxs(k) >= 1 .and. idxs(k) <= 4) seen(idxs(k)) = seen(idxs(k)) + 1
      end do
    end do
    call expect(all(seen == 1) .and. all_null())
    call check_all(round + 600)

    ! H: MPI_IALLTOALLW alone, MPI_WAIT (its datatype arrays are read until completion)
    call fill(round + 800)
    call MPI_IALLTOALLW(svb, sc, sdw, wt, rvb, rc, rdw, wt, MPI_COMM_WORLD, req(2), ierr)
    niaw = niaw + 1
    call MPI_WAIT(req(2), MPI_STATUS_IGNORE, ierr)
    call expect(ierr == MPI_SUCCESS .and. req(2) == MPI_REQUEST_NULL)
    call check_v(round + 800)
  end do

  ! MPI_CANCEL of a collective request is an error (returned: MPI_ERRORS_RETURN)
  call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  call fill(700)
  call MPI_IALLTOALL(sbuf, N, MPI_INTEGER, rbuf, N, MPI_INTEGER, MPI_COMM_WORLD, req(1), ierr)
  nia = nia + 1
  call MPI_CANCEL(req(1), ierr)
  call expect(ierr /= MPI_SUCCESS)
  call MPI_WAIT(req(1), st, ierr)
  call expect(ierr == MPI_SUCCESS .and. req(1) == MPI_REQUEST_NULL)
  call check_a(700)
  call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL, ierr)

#if defined(AAPC_HAVE_INIT)
  ! persistent: restarted RESTARTS times with persistent point-to-point, then freed
  call MPI_ALLTOALL_INIT(sbuf, N, MPI_INTEGER, rbuf, N, MPI_INTEGER, MPI_COMM_WORLD, &
                         INFO_NULL, preq(1), ierr)
  call MPI_ALLTOALLV_INIT(svb, sc, sd, MPI_INTEGER, rvb, rc, rd, MPI_INTEGER, MPI_COMM_WORLD, &
                          INFO_NULL, preq(2), ierr)
  ninit = ninit + 1
  ninitv = ninitv + 1
  call MPI_RECV_INIT(pin, 4, MPI_INTEGER, left, TAG, MPI_COMM_WORLD, preq(3), ierr)
  call MPI_SEND_INIT(pout, 4, MPI_INTEGER, right, TAG, MPI_COMM_WORLD, preq(4), ierr)
  do round = 1, RESTARTS
    call fill(round + 1000)
    if (mod(round, 2) == 0) then
      call MPI_STARTALL(4, preq, ierr)
    else
      do k = 1, 4
        call MPI_START(preq(k), ierr)
      end do
    end if
    if (round == 1) then ! an active request: MPI_START and MPI_REQUEST_FREE are errors
      call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
      call MPI_START(preq(1), ierr)
      call expect(ierr /= MPI_SUCCESS)
      call MPI_REQUEST_FREE(preq(2), ierr)
      call expect(ierr /= MPI_SUCCESS .and. preq(2) /= MPI_REQUEST_NULL)
      call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL, ierr)
    end if
    select case (mod(round, 3))
    case (0)
      call MPI_WAITALL(4, preq, sts, ierr)
      call expect(SOURCE_K(3) == left .and. TAG_K(3) == TAG)
    case (1)
      flag = .false.
      do while (.not. flag)
        call MPI_TESTALL(4, preq, flag, MPI_STATUSES_IGNORE, ierr)
        if (ierr /= MPI_SUCCESS) exit
      end do
    case default
      total = 0
      do
        call MPI_WAITSOME(4, preq, outcount, idxs, MPI_STATUSES_IGNORE, ierr)
        if (ierr /= MPI_SUCCESS .or. outcount == MPI_UNDEFINED) exit
        total = total + outcount
      end do
      call expect(total == 4)
    end select
    call expect(ierr == MPI_SUCCESS .and. nulls(preq) == 0)
    call check_all(round + 1000)
  end do
  ! inactive: a test completes at once; then freed
  call MPI_TEST(preq(1), flag, st, ierr)
  call expect(flag .and. ierr == MPI_SUCCESS .and. preq(1) /= MPI_REQUEST_NULL)
  do k = 1, 4
    call MPI_REQUEST_FREE(preq(k), ierr)
  end do
  call expect(ierr == MPI_SUCCESS .and. nulls(preq) == 4)
#endif

  call MPI_REDUCE(bad, fails, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    print '(a,i0,a,i0,a)', 'ialltoall_check: ', npass, ' passed, ', fails, ' failed'
    print '(a,5(1x,i0))', 'calls: MPI_Ialltoall MPI_Ialltoallv MPI_Alltoall_init ' // &
      'MPI_Alltoallv_init MPI_Ialltoallw', nia, niav, ninit, ninitv, niaw
  end if
  call MPI_FINALIZE(ierr)

contains

  integer function vcount(from, to)
    integer, intent(in) :: from, to
    vcount = mod(from + 2 * to, 4) * 7 + 1
  end function vcount

  integer function value(from, to, k, r)
    integer, intent(in) :: from, to, k, r
    value = from * 1000003 + to * 1009 + k + r * 7
  end function value

  logical function all_null()
    all_null = nulls(req) == 4
  end function all_null

  integer function nulls(rs)
    REQ_T, intent(in) :: rs(4)
    integer :: kk
    nulls = 0
    do kk = 1, 4
      if (rs(kk) == MPI_REQUEST_NULL) nulls = nulls + 1
    end do
  end function nulls

  subroutine expect(ok)
    logical, intent(in) :: ok
    if (ok) then
      npass = npass + 1
    else
      bad = bad + 1
      if (bad <= 5) print '(a,i0,a,i0)', 'FAIL check ', npass + bad, ' on rank ', rank
    end if
  end subroutine expect

  ! the send buffers of round r; the receive buffers poisoned
  subroutine fill(r)
    integer, intent(in) :: r
    integer :: j, kk
    do j = 0, nprocs - 1
      do kk = 1, N
        sbuf(j * N + kk) = value(rank, j, kk, r)
      end do
      do kk = 1, sc(j + 1)
        svb(sd(j + 1) + kk) = value(rank, j, kk, r)
      end do
    end do
    rbuf = -7
    rvb = -7
    pout = [rank, r, -r, 3 * r]
    pin = -7
  end subroutine fill

  ! both collectives and a ring exchange: req(1..4)
  subroutine post(r)
    integer, intent(in) :: r
    call fill(r)
    call MPI_IALLTOALL(sbuf, N, MPI_INTEGER, rbuf, N, MPI_INTEGER, MPI_COMM_WORLD, req(1), ierr)
    call MPI_IALLTOALLV(svb, sc, sd, MPI_INTEGER, rvb, rc, rd, MPI_INTEGER, MPI_COMM_WORLD, &
                        req(2), ierr)
    call MPI_IRECV(pin, 4, MPI_INTEGER, left, TAG + mod(r, 1000), MPI_COMM_WORLD, req(3), ierr)
    call MPI_ISEND(pout, 4, MPI_INTEGER, right, TAG + mod(r, 1000), MPI_COMM_WORLD, req(4), ierr)
    nia = nia + 1
    niav = niav + 1
  end subroutine post

  subroutine check_a(r)
    integer, intent(in) :: r
    integer :: j, kk, wrong
    wrong = 0
    do j = 0, nprocs - 1
      do kk = 1, N
        if (rbuf(j * N + kk) /= value(j, rank, kk, r)) wrong = wrong + 1
      end do
    end do
    call expect(wrong == 0)
  end subroutine check_a

  subroutine check_v(r)
    integer, intent(in) :: r
    integer :: j, kk, wrong
    wrong = 0
    do j = 0, nprocs - 1
      do kk = 1, rc(j + 1)
        if (rvb(rd(j + 1) + kk) /= value(j, rank, kk, r)) wrong = wrong + 1
      end do
      if (j > 0) then ! the gap after the block untouched
        do kk = rd(j + 1) + rc(j + 1) + 1, rd(j)
          if (rvb(kk) /= -7) wrong = wrong + 1
        end do
      end if
    end do
    call expect(wrong == 0)
  end subroutine check_v

  subroutine check_all(r)
    integer, intent(in) :: r
    call check_a(r)
    call check_v(r)
    call expect(all(pin == [left, r, -r, 3 * r]))
  end subroutine check_all
end program ialltoall_check
