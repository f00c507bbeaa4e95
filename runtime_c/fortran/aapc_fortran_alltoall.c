/*
 * aapc_fortran_alltoall.c: MPI_ALLTOALL and MPI_ALLTOALLV called from Fortran under Open MPI
 * (mpif.h, `use mpi`, `use mpi_f08`), served by the library's C entry points (aapc_fortran.h).
 *
 * Open MPI's bindings call PMPI_Alltoall / PMPI_Alltoallv directly: mpif.h and `use mpi`
 * programs call mpi_alltoall_ (or another mangling, all aliases of ompi_alltoall_f in
 * libmpi_mpifh), and `use mpi_f08` calls mpi_alltoall_f08_, which calls ompi_alltoall_f. This
 * file defines every one of those names (mpi_alltoall_f08_ for Open MPI 4 and 5, whose
 * signature it is), so the dynamic linker binds the program's calls (and
 * the f08 library's calls of ompi_alltoall_f) to them when the library is preloaded or linked
 * before the MPI library. pmpi_alltoall* stay the MPI library's (the profiling interface).
 *
 * Algorithm: convert the handles (MPI_Comm_f2c, MPI_Type_f2c), the Fortran MPI_IN_PLACE (send
 * buffer) and MPI_BOTTOM (either buffer) as Open MPI's own wrappers do, the count and
 * displacement arrays where MPI_Fint is not an int, then call MPI_Alltoall / MPI_Alltoallv (the
 * generated interposer: the argument checks, the error handler, the schedule or the library's
 * routine, the report) and store its result in ierr. Cost over the C call: the three or four
 * handle conversions (table lookups) and a few pointer comparisons.
 */
#include "aapc_fortran.h" /* mpi.h: which MPI this is */

#if defined(AAPC_INTERCEPT) && defined(OPEN_MPI)
#include <stdlib.h>

#include "aapc_args.h"

static void fortran_alltoall(void *sendbuf, const MPI_Fint *sendcount, const MPI_Fint *sendtype,
                             void *recvbuf, const MPI_Fint *recvcount, const MPI_Fint *recvtype,
                             const MPI_Fint *comm, MPI_Fint *ierr)
{
    int rc = MPI_Alltoall(aapc_fortran_buffer(sendbuf, 1), (int)*sendcount,
                          MPI_Type_f2c(*sendtype), aapc_fortran_buffer(recvbuf, 0),
                          (int)*recvcount, MPI_Type_f2c(*recvtype), MPI_Comm_f2c(*comm));
    if (ierr != NULL)
        *ierr = (MPI_Fint)rc;
}

static void fortran_alltoallv(void *sendbuf, const MPI_Fint *sendcounts, const MPI_Fint *sdispls,
                              const MPI_Fint *sendtype, void *recvbuf, const MPI_Fint *recvcounts,
                              const MPI_Fint *rdispls, const MPI_Fint *recvtype,
                              const MPI_Fint *comm, MPI_Fint *ierr)
{
    MPI_Comm c = MPI_Comm_f2c(*comm);
    int n = sizeof(MPI_Fint) == sizeof(int) ? 0 : aapc_fortran_peers(c);
    int *copy[4];
    const int *sc = aapc_fortran_ints(sendcounts, n, &copy[0]);
    const int *sd = aapc_fortran_ints(sdispls, n, &copy[1]);
    const int *rcn = aapc_fortran_ints(recvcounts, n, &copy[2]);
    const int *rd = aapc_fortran_ints(rdispls, n, &copy[3]);
    int rc;
    if ((sendcounts && !sc) || (sdispls && !sd) || (recvcounts && !rcn) || (rdispls && !rd))
        rc = aapc_args_raise_alone(c, MPI_ERR_NO_MEM); /* the other ranks may go on: abort */
    else
        rc = MPI_Alltoallv(aapc_fortran_buffer(sendbuf, 1), sc, sd, MPI_Type_f2c(*sendtype),
                           aapc_fortran_buffer(recvbuf, 0), rcn, rd, MPI_Type_f2c(*recvtype), c);
    for (int i = 0; i < 4; i++)
        free(copy[i]);
    if (ierr != NULL)
        *ierr = (MPI_Fint)rc;
}

#define AAPC_FORTRAN_ALLTOALL(name)                                                            \
    void name(void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, void *recvbuf,          \
              MPI_Fint *recvcount, MPI_Fint *recvtype, MPI_Fint *comm, MPI_Fint *ierr);       \
    void name(void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, void *recvbuf,          \
              MPI_Fint *recvcount, MPI_Fint *recvtype, MPI_Fint *comm, MPI_Fint *ierr)        \
    {                                                                                          \
        fortran_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,     \
                         ierr);                                                                \
    }

#define AAPC_FORTRAN_ALLTOALLV(name)                                                           \
    void name(void *sendbuf, MPI_Fint *sendcounts, MPI_Fint *sdispls, MPI_Fint *sendtype,     \
              void *recvbuf, MPI_Fint *recvcounts, MPI_Fint *rdispls, MPI_Fint *recvtype,     \
              MPI_Fint *comm, MPI_Fint *ierr);                                                 \
    void name(void *sendbuf, MPI_Fint *sendcounts, MPI_Fint *sdispls, MPI_Fint *sendtype,     \
              void *recvbuf, MPI_Fint *recvcounts, MPI_Fint *rdispls, MPI_Fint *recvtype,     \
              MPI_Fint *comm, MPI_Fint *ierr)                                                  \
    {                                                                                          \
        fortran_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, \
                          recvtype, comm, ierr);                                               \
    }

AAPC_FORTRAN_ALLTOALL(ompi_alltoall_f)
AAPC_FORTRAN_ALLTOALL(mpi_alltoall)
AAPC_FORTRAN_ALLTOALL(mpi_alltoall_)
AAPC_FORTRAN_ALLTOALL(mpi_alltoall__)
AAPC_FORTRAN_ALLTOALL(MPI_ALLTOALL)
AAPC_FORTRAN_ALLTOALL(MPI_Alltoall_f)
AAPC_FORTRAN_ALLTOALL(MPI_Alltoall_f08)

AAPC_FORTRAN_ALLTOALLV(ompi_alltoallv_f)
AAPC_FORTRAN_ALLTOALLV(mpi_alltoallv)
AAPC_FORTRAN_ALLTOALLV(mpi_alltoallv_)
AAPC_FORTRAN_ALLTOALLV(mpi_alltoallv__)
AAPC_FORTRAN_ALLTOALLV(MPI_ALLTOALLV)
AAPC_FORTRAN_ALLTOALLV(MPI_Alltoallv_f)
AAPC_FORTRAN_ALLTOALLV(MPI_Alltoallv_f08)

/* `use mpi_f08`'s own entries, pass-throughs to ompi_*_f with the same arguments (ierror
   optional: NULL when left out) in Open MPI 4 and 5: defining them too keeps a linked
   libaapc.so needed under the linker's --as-needed (the program calls nothing else of it) */
#if OMPI_MAJOR_VERSION < 6
AAPC_FORTRAN_ALLTOALL(mpi_alltoall_f08_)
AAPC_FORTRAN_ALLTOALLV(mpi_alltoallv_f08_)
#endif
#endif
