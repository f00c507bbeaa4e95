/*
 * aapc_fortran_comm.c: MPI_COMM_SPLIT and MPI_FINALIZE called from Fortran reach the library's
 * C entry points (aapc_fortran.h): MPI_Comm_split records the siblings (AAPC_SIBLINGS=union)
 * and MPI_Finalize prints the report (AAPC_REPORT) before the MPI library finalizes.
 *
 * Where the bindings miss them: Open MPI's call PMPI_Comm_split and PMPI_Finalize (mpif.h and
 * `use mpi` through mpi_comm_split_ and its other manglings, `use mpi_f08` through
 * ompi_comm_split_f; the same for MPI_FINALIZE); MPICH's mpif.h and `use mpi` call the C names,
 * but its `use mpi_f08` mpi_comm_split_f08_ and mpi_finalize_f08_ call PMPI_. This file defines
 * those names (Open MPI: every one; MPICH: the two f08 ones), converts the handles and returns
 * the C result in ierr (absent, NULL, where `use mpi_f08` lets the caller leave it out).
 * Cost: one handle conversion each way.
 */
#include "aapc_fortran.h" /* mpi.h: which MPI this is */

#if defined(AAPC_INTERCEPT) &&                                                                 \
    (defined(OPEN_MPI) || (defined(MPICH) && !defined(MPI_ABI_VERSION)))
#include <stddef.h>


static void fortran_comm_split(const MPI_Fint *comm, const MPI_Fint *color, const MPI_Fint *key,
                               MPI_Fint *newcomm, MPI_Fint *ierr)
{
    MPI_Comm c_newcomm = MPI_COMM_NULL;
    int rc = MPI_Comm_split(MPI_Comm_f2c(*comm), (int)*color, (int)*key, &c_newcomm);
    if (rc == MPI_SUCCESS)
        *newcomm = MPI_Comm_c2f(c_newcomm);
    if (ierr != NULL)
        *ierr = (MPI_Fint)rc;
}

static void fortran_finalize(MPI_Fint *ierr)
{
    int rc = MPI_Finalize();
    if (ierr != NULL)
        *ierr = (MPI_Fint)rc;
}

#define AAPC_FORTRAN_COMM_SPLIT(name)                                                          \
    void name(MPI_Fint *comm, MPI_Fint *color, MPI_Fint *key, MPI_Fint *newcomm,               \
              MPI_Fint *ierr);                                                                 \
    void name(MPI_Fint *comm, MPI_Fint *color, MPI_Fint *key, MPI_Fint *newcomm,               \
              MPI_Fint *ierr)                                                                  \
    {                                                                                          \
        fortran_comm_split(comm, color, key, newcomm, ierr);                                   \
    }

#define AAPC_FORTRAN_FINALIZE(name)                                                            \
    void name(MPI_Fint *ierr);                                                                 \
    void name(MPI_Fint *ierr)                                                                  \
    {                                                                                          \
        fortran_finalize(ierr);                                                                \
    }

#ifdef OPEN_MPI
AAPC_FORTRAN_COMM_SPLIT(ompi_comm_split_f)
AAPC_FORTRAN_COMM_SPLIT(mpi_comm_split)
AAPC_FORTRAN_COMM_SPLIT(mpi_comm_split_)
AAPC_FORTRAN_COMM_SPLIT(mpi_comm_split__)
AAPC_FORTRAN_COMM_SPLIT(MPI_COMM_SPLIT)
AAPC_FORTRAN_COMM_SPLIT(MPI_Comm_split_f)
AAPC_FORTRAN_COMM_SPLIT(MPI_Comm_split_f08)

AAPC_FORTRAN_FINALIZE(ompi_finalize_f)
AAPC_FORTRAN_FINALIZE(mpi_finalize)
AAPC_FORTRAN_FINALIZE(mpi_finalize_)
AAPC_FORTRAN_FINALIZE(mpi_finalize__)
AAPC_FORTRAN_FINALIZE(MPI_FINALIZE)
AAPC_FORTRAN_FINALIZE(MPI_Finalize_f)
AAPC_FORTRAN_FINALIZE(MPI_Finalize_f08)
#if OMPI_MAJOR_VERSION < 6 /* as in aapc_fortran_alltoall.c */
AAPC_FORTRAN_COMM_SPLIT(mpi_comm_split_f08_)
AAPC_FORTRAN_FINALIZE(mpi_finalize_f08_)
#endif
#else
AAPC_FORTRAN_COMM_SPLIT(mpi_comm_split_f08_)
AAPC_FORTRAN_FINALIZE(mpi_finalize_f08_)
#endif
#endif
