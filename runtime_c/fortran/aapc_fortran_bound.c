/*
 * aapc_fortran_bound.c: whether the Fortran completion entries of this library
 * (aapc_fortran_wait.c) are the ones the dynamic linker binds in this process.
 *
 * Why: a request of ours made from Fortran (MPICH's bindings call the C MPI_Ialltoall; the
 * library's Open MPI entries do) moves its data only inside completion calls that reach this
 * library. Where the library is preloaded or linked before the MPI's Fortran libraries, the
 * program's MPI_WAIT, MPI_TEST, ... (and the bindings' internal calls of ompi_wait_f) are ours;
 * linked after them, they are the MPI library's, which call PMPI_Wait directly, and a request
 * of ours would never complete: such calls must go to the MPI library (aapc_nbc_caller.c).
 *
 * Algorithm: the address of each entry, taken here through the global offset table (they are
 * defined in another file, so the compiler cannot bind them locally), is the definition the
 * dynamic linker chose for the whole process; dladdr names the object holding it, compared
 * with the object holding this file. Open MPI: ompi_x_f (called by the mpif.h aliases' users
 * and by `use mpi_f08`), mpi_x_ (gfortran's mpif.h / `use mpi` name) and, in Open MPI 4 and 5,
 * mpi_x_f08_; MPICH: mpi_x_f08_ (its mpif.h / `use mpi` entries call the C names). Asked once
 * per process. Without dladdr (not glibc, macOS or the BSDs) the answer is no.
 * Cost: 13 to 39 dladdr calls, once.
 */
#define _GNU_SOURCE
#include "aapc_fortran.h" /* mpi.h: which MPI this is */

#include <stddef.h>
#include <string.h> /* the C library's macros (__GLIBC__) */

#if defined(AAPC_INTERCEPT) &&                                                                 \
    (defined(OPEN_MPI) || (defined(MPICH) && !defined(MPI_ABI_VERSION))) &&                    \
    (defined(__GLIBC__) || defined(__APPLE__) || defined(__FreeBSD__))
#include <dlfcn.h>

/* the completion calls (aapc_fortran_wait.c) */
#define AAPC_F_COMPLETIONS(M)                                                                  \
    M(wait) M(waitall) M(waitany) M(waitsome) M(test) M(testall) M(testany) M(testsome)        \
        M(request_get_status) M(start) M(startall) M(request_free) M(cancel)

#ifdef OPEN_MPI
#define DECLARE_OMPI(x) extern void ompi_##x##_f(void); extern void mpi_##x##_(void);
#define ADDR_OMPI(x) (const void *)ompi_##x##_f, (const void *)mpi_##x##_,
AAPC_F_COMPLETIONS(DECLARE_OMPI)
#else
#define ADDR_OMPI(x)
#endif
#if !defined(OPEN_MPI) || OMPI_MAJOR_VERSION < 6
#define DECLARE_F08(x) extern void mpi_##x##_f08_(void);
#define ADDR_F08(x) (const void *)mpi_##x##_f08_,
AAPC_F_COMPLETIONS(DECLARE_F08)
#else
#define ADDR_F08(x)
#endif
#define ADDR(x) ADDR_OMPI(x) ADDR_F08(x)

static void *object_of(const void *p)
{
    Dl_info info;
    return dladdr(p, &info) != 0 ? info.dli_fbase : NULL;
}

static int ask(void)
{
    const void *entries[] = {AAPC_F_COMPLETIONS(ADDR) NULL};
    void *self = object_of((const void *)&object_of);
    if (self == NULL)
        return 0;
    for (size_t i = 0; entries[i] != NULL; i++)
        if (object_of(entries[i]) != self)
            return 0;
    return 1;
}

int aapc_fortran_completions_ours(void)
{
    static int known; /* 0: not asked yet; 1: ours; 2: not */
    int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (k == 0) {
        k = ask() ? 1 : 2;
        __atomic_store_n(&known, k, __ATOMIC_RELAXED);
    }
    return k == 1;
}
#else
int aapc_fortran_completions_ours(void)
{
    return 0;
}
#endif
