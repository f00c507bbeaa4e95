/*
 * aapc_fortran_alltoall.c: MPI_ALLTOALL, MPI_ALLTOALLV and MPI_ALLTOALLW called from Fortran
 * under Open MPI (mpif.h, `use mpi`, `use mpi_f08`), served by the library's C entry points
 * (aapc_fortran.h).
 *
 * Open MPI's bindings call PMPI_Alltoall / PMPI_Alltoallv directly: mpif.h and `use mpi`
 * programs call mpi_alltoall_ (or another mangling, all aliases of ompi_alltoall_f in
 * libmpi_mpifh), and `use mpi_f08` calls mpi_alltoall_f08_, which calls ompi_alltoall_f. This
 * file defines every one of those names (mpi_alltoall_f08_ for Open MPI 4 and 5, whose
 * signature it is), so the dynamic linker binds the program's calls (and
 * the f08 library's calls of ompi_alltoall_f) to them when the library is preloaded or linked
 * before the MPI library. pmpi_alltoall* stay the MPI library's (the profiling interface).
 *
 * Algorithm: convert the handles (MPI_Comm_f2c, MPI_Type_f2c; MPI_ALLTOALLW's datatype arrays
 * into one allocated C array), the Fortran MPI_IN_PLACE (send buffer) and MPI_BOTTOM (either
 * buffer) as Open MPI's own wrappers do, the count and displacement arrays where MPI_Fint is not
 * an int, then call MPI_Alltoall / MPI_Alltoallv / MPI_Alltoallw (the generated interposer and
 * alltoallv/aapc_alltoallw.c: the argument checks, the error handler, the schedule or the
 * library's routine, the report) and store its result in ierr. Cost over the C call: the three
 * or four handle conversions (table lookups) and a few pointer comparisons; MPI_ALLTOALLW adds
 * 2 P conversions and one allocation of 16 P bytes.
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

/* The count and displacement arrays of an MPI_ALLTOALLV or MPI_ALLTOALLW (send counts, send
   displacements, receive counts, receive displacements) as C ints, n entries each where they
   must be copied (aapc_fortran_ints). 0 when a copy could not be allocated; free_ints after. */
struct ints {
    const int *a[4];
    int *copy[4];
};

static int to_ints(const MPI_Fint *const in[4], int n, struct ints *out)
{
    int ok = 1;
    for (int i = 0; i < 4; i++) {
        out->a[i] = aapc_fortran_ints(in[i], n, &out->copy[i]);
        ok = ok && (in[i] == NULL || out->a[i] != NULL);
    }
    return ok;
}

static void free_ints(struct ints *x)
{
    for (int i = 0; i < 4; i++)
        free(x->copy[i]);
}

static void fortran_alltoallv(void *sendbuf, const MPI_Fint *sendcounts, const MPI_Fint *sdispls,
                              const MPI_Fint *sendtype, void *recvbuf, const MPI_Fint *recvcounts,
                              const MPI_Fint *rdispls, const MPI_Fint *recvtype,
                              const MPI_Fint *comm, MPI_Fint *ierr)
{
    MPI_Comm c = MPI_Comm_f2c(*comm);
    int n = sizeof(MPI_Fint) == sizeof(int) ? 0 : aapc_fortran_peers(c);
    const MPI_Fint *in[4] = {sendcounts, sdispls, recvcounts, rdispls};
    struct ints x;
    int rc;
    if (!to_ints(in, n, &x))
        rc = aapc_args_raise_alone(c, MPI_ERR_NO_MEM); /* the other ranks may go on: abort */
    else
        rc = MPI_Alltoallv(aapc_fortran_buffer(sendbuf, 1), x.a[0], x.a[1],
                           MPI_Type_f2c(*sendtype), aapc_fortran_buffer(recvbuf, 0), x.a[2],
                           x.a[3], MPI_Type_f2c(*recvtype), c);
    free_ints(&x);
    if (ierr != NULL)
        *ierr = (MPI_Fint)rc;
}

/* MPI_ALLTOALLW: the datatype arrays converted one by one (the send side's not under
   MPI_IN_PLACE, where MPI leaves it unset), then the C MPI_Alltoallw (alltoallv/
   aapc_alltoallw.c: served by the library's MPI_Alltoallv where the datatypes reduce). */
static void fortran_alltoallw(void *sendbuf, const MPI_Fint *sendcounts, const MPI_Fint *sdispls,
                              const MPI_Fint *sendtypes, void *recvbuf,
                              const MPI_Fint *recvcounts, const MPI_Fint *rdispls,
                              const MPI_Fint *recvtypes, const MPI_Fint *comm, MPI_Fint *ierr)
{
    MPI_Comm c = MPI_Comm_f2c(*comm);
    void *sbuf = aapc_fortran_buffer(sendbuf, 1);
    int n = aapc_fortran_peers(c);
    const MPI_Fint *in[4] = {sendcounts, sdispls, recvcounts, rdispls};
    struct ints x;
    int ok = to_ints(in, sizeof(MPI_Fint) == sizeof(int) ? 0 : n, &x);
    MPI_Datatype *types = malloc(sizeof *types * 2 * (size_t)(n > 0 ? n : 1));
    int rc;
    if (!ok || types == NULL) {
        rc = aapc_args_raise_alone(c, MPI_ERR_NO_MEM); /* the other ranks may go on: abort */
    } else {
        for (int i = 0; i < n; i++) {
            types[i] = sbuf == MPI_IN_PLACE || sendtypes == NULL ? MPI_DATATYPE_NULL
                                                                 : MPI_Type_f2c(sendtypes[i]);
            types[n + i] = recvtypes == NULL ? MPI_DATATYPE_NULL : MPI_Type_f2c(recvtypes[i]);
        }
        rc = MPI_Alltoallw(sbuf, x.a[0], x.a[1], types, aapc_fortran_buffer(recvbuf, 0), x.a[2],
                           x.a[3], types + n, c);
    }
    free(types);
    free_ints(&x);
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

#define AAPC_FORTRAN_ALLTOALLW(name)                                                           \
    void name(void *sendbuf, MPI_Fint *sendcounts, MPI_Fint *sdispls, MPI_Fint *sendtypes,    \
              void *recvbuf, MPI_Fint *recvcounts, MPI_Fint *rdispls, MPI_Fint *recvtypes,    \
              MPI_Fint *comm, MPI_Fint *ierr);                                                 \
    void name(void *sendbuf, MPI_Fint *sendcounts, MPI_Fint *sdispls, MPI_Fint *sendtypes,    \
              void *recvbuf, MPI_Fint *recvcounts, MPI_Fint *rdispls, MPI_Fint *recvtypes,    \
              MPI_Fint *comm, MPI_Fint *ierr)                                                  \
    {                                                                                          \
        fortran_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,        \
                          rdispls, recvtypes, comm, ierr);                                     \
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

AAPC_FORTRAN_ALLTOALLW(ompi_alltoallw_f)
AAPC_FORTRAN_ALLTOALLW(mpi_alltoallw)
AAPC_FORTRAN_ALLTOALLW(mpi_alltoallw_)
AAPC_FORTRAN_ALLTOALLW(mpi_alltoallw__)
AAPC_FORTRAN_ALLTOALLW(MPI_ALLTOALLW)
AAPC_FORTRAN_ALLTOALLW(MPI_Alltoallw_f)
AAPC_FORTRAN_ALLTOALLW(MPI_Alltoallw_f08)

/* `use mpi_f08`'s own entries, pass-throughs to ompi_*_f with the same arguments (ierror
   optional: NULL when left out) in Open MPI 4 and 5: defining them too keeps a linked
   libaapc.so needed under the linker's --as-needed (the program calls nothing else of it) */
#if OMPI_MAJOR_VERSION < 6
AAPC_FORTRAN_ALLTOALL(mpi_alltoall_f08_)
AAPC_FORTRAN_ALLTOALLV(mpi_alltoallv_f08_)
AAPC_FORTRAN_ALLTOALLW(mpi_alltoallw_f08_)
#endif
#endif
