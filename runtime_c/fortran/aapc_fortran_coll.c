/*
 * aapc_fortran_coll.c: MPI_BCAST, MPI_ALLGATHER, MPI_ALLREDUCE, MPI_REDUCE, MPI_BARRIER,
 * MPI_SCATTER and MPI_SCATTERV called from Fortran under Open MPI (mpif.h, `use mpi`,
 * `use mpi_f08`), served by the library's C entry points (runtime_c/coll/,
 * docs/collectives.md).
 *
 * Open MPI's bindings call PMPI_Bcast, ... directly (aapc_fortran.h), so this file defines
 * every name a program's call or the f08 library's call reaches (ompi_x_f, mpi_x, mpi_x_,
 * mpi_x__, MPI_X, MPI_X_f, MPI_X_f08 and, Open MPI 4 and 5, mpi_x_f08_), as
 * aapc_fortran_alltoall.c does for MPI_ALLTOALL. MPICH's bindings call the C MPI_ names: its
 * Fortran calls reach the C entry points without this file.
 *
 * Algorithm: convert the handles (MPI_Comm_f2c, MPI_Type_f2c, MPI_Op_f2c), the Fortran
 * MPI_IN_PLACE (send buffers) and MPI_BOTTOM (any buffer), call the C entry point (the choice,
 * the error handler, the report) and store its result in ierr. Cost over the C call: the
 * handle conversions (table lookups).
 */
#include "aapc_fortran.h" /* mpi.h: which MPI this is */

#if defined(AAPC_INTERCEPT) && defined(OPEN_MPI)

#include <stdlib.h>

#include "aapc_args.h" /* aapc_args_raise_alone */

static void set(MPI_Fint *ierr, int rc)
{
    if (ierr != NULL)
        *ierr = (MPI_Fint)rc;
}

static void fortran_scatterv(void *sbuf, const MPI_Fint *scounts, const MPI_Fint *displs,
                             const MPI_Fint *stype, void *rbuf, const MPI_Fint *rcount,
                             const MPI_Fint *rtype, const MPI_Fint *root, const MPI_Fint *comm,
                             MPI_Fint *ierr)
{
    MPI_Comm c = MPI_Comm_f2c(*comm);
    int n = sizeof(MPI_Fint) == sizeof(int) ? 0 : aapc_fortran_peers(c);
    int *copy[2];
    const int *sc = aapc_fortran_ints(scounts, n, &copy[0]);
    const int *sd = aapc_fortran_ints(displs, n, &copy[1]);
    if ((scounts && !sc) || (displs && !sd))
        set(ierr, aapc_args_raise_alone(c, MPI_ERR_NO_MEM)); /* the others may go on: abort */
    else
        set(ierr, MPI_Scatterv(aapc_fortran_buffer(sbuf, 0), sc, sd, MPI_Type_f2c(*stype),
                               aapc_fortran_buffer(rbuf, 1), (int)*rcount, MPI_Type_f2c(*rtype),
                               (int)*root, c));
    free(copy[0]);
    free(copy[1]);
}

#define AAPC_FORTRAN_BCAST(name)                                                               \
    void name(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *root, MPI_Fint *comm,     \
              MPI_Fint *ierr);                                                                 \
    void name(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *root, MPI_Fint *comm,     \
              MPI_Fint *ierr)                                                                  \
    {                                                                                          \
        set(ierr, MPI_Bcast(aapc_fortran_buffer(buf, 0), (int)*count, MPI_Type_f2c(*type),   \
                            (int)*root, MPI_Comm_f2c(*comm)));                                 \
    }

#define AAPC_FORTRAN_ALLGATHER(name)                                                           \
    void name(void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcount,    \
              MPI_Fint *rtype, MPI_Fint *comm, MPI_Fint *ierr);                                \
    void name(void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcount,    \
              MPI_Fint *rtype, MPI_Fint *comm, MPI_Fint *ierr)                                 \
    {                                                                                          \
        set(ierr, MPI_Allgather(aapc_fortran_buffer(sbuf, 1), (int)*scount,                   \
                                MPI_Type_f2c(*stype), aapc_fortran_buffer(rbuf, 0),            \
                                (int)*rcount, MPI_Type_f2c(*rtype), MPI_Comm_f2c(*comm)));     \
    }

#define AAPC_FORTRAN_ALLREDUCE(name)                                                           \
    void name(void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op,          \
              MPI_Fint *comm, MPI_Fint *ierr);                                                 \
    void name(void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op,          \
              MPI_Fint *comm, MPI_Fint *ierr)                                                  \
    {                                                                                          \
        set(ierr, MPI_Allreduce(aapc_fortran_buffer(sbuf, 1), aapc_fortran_buffer(rbuf, 0),   \
                                (int)*count, MPI_Type_f2c(*type), MPI_Op_f2c(*op),             \
                                MPI_Comm_f2c(*comm)));                                         \
    }

#define AAPC_FORTRAN_REDUCE(name)                                                              \
    void name(void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op,          \
              MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr);                                 \
    void name(void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op,          \
              MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)                                  \
    {                                                                                          \
        set(ierr, MPI_Reduce(aapc_fortran_buffer(sbuf, 1), aapc_fortran_buffer(rbuf, 0),      \
                             (int)*count, MPI_Type_f2c(*type), MPI_Op_f2c(*op), (int)*root,    \
                             MPI_Comm_f2c(*comm)));                                            \
    }

#define AAPC_FORTRAN_BARRIER(name)                                                             \
    void name(MPI_Fint *comm, MPI_Fint *ierr);                                                 \
    void name(MPI_Fint *comm, MPI_Fint *ierr)                                                  \
    {                                                                                          \
        set(ierr, MPI_Barrier(MPI_Comm_f2c(*comm)));                                           \
    }

#define AAPC_FORTRAN_SCATTER(name)                                                             \
    void name(void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcount,    \
              MPI_Fint *rtype, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr);                \
    void name(void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcount,    \
              MPI_Fint *rtype, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)                 \
    {                                                                                          \
        set(ierr, MPI_Scatter(aapc_fortran_buffer(sbuf, 0), (int)*scount, MPI_Type_f2c(*stype), \
                              aapc_fortran_buffer(rbuf, 1), (int)*rcount, MPI_Type_f2c(*rtype), \
                              (int)*root, MPI_Comm_f2c(*comm)));                               \
    }

#define AAPC_FORTRAN_SCATTERV(name)                                                            \
    void name(void *sbuf, MPI_Fint *scounts, MPI_Fint *displs, MPI_Fint *stype, void *rbuf,   \
              MPI_Fint *rcount, MPI_Fint *rtype, MPI_Fint *root, MPI_Fint *comm,               \
              MPI_Fint *ierr);                                                                 \
    void name(void *sbuf, MPI_Fint *scounts, MPI_Fint *displs, MPI_Fint *stype, void *rbuf,   \
              MPI_Fint *rcount, MPI_Fint *rtype, MPI_Fint *root, MPI_Fint *comm,               \
              MPI_Fint *ierr)                                                                  \
    {                                                                                          \
        fortran_scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm, ierr); \
    }

/* every name of one collective (the f08 pass-through of Open MPI 4 and 5 included) */
#if OMPI_MAJOR_VERSION < 6
#define AAPC_FORTRAN_F08(macro, lower) macro(mpi_##lower##_f08_)
#else
#define AAPC_FORTRAN_F08(macro, lower)
#endif
#define AAPC_FORTRAN_NAMES(macro, lower, upper, camel)                                         \
    macro(ompi_##lower##_f) macro(mpi_##lower) macro(mpi_##lower##_) macro(mpi_##lower##__)    \
        macro(MPI_##upper) macro(MPI_##camel##_f) macro(MPI_##camel##_f08)                     \
            AAPC_FORTRAN_F08(macro, lower)

AAPC_FORTRAN_NAMES(AAPC_FORTRAN_BCAST, bcast, BCAST, Bcast)
AAPC_FORTRAN_NAMES(AAPC_FORTRAN_ALLGATHER, allgather, ALLGATHER, Allgather)
AAPC_FORTRAN_NAMES(AAPC_FORTRAN_ALLREDUCE, allreduce, ALLREDUCE, Allreduce)
AAPC_FORTRAN_NAMES(AAPC_FORTRAN_REDUCE, reduce, REDUCE, Reduce)
AAPC_FORTRAN_NAMES(AAPC_FORTRAN_BARRIER, barrier, BARRIER, Barrier)
AAPC_FORTRAN_NAMES(AAPC_FORTRAN_SCATTER, scatter, SCATTER, Scatter)
AAPC_FORTRAN_NAMES(AAPC_FORTRAN_SCATTERV, scatterv, SCATTERV, Scatterv)
#endif
