/*
 * aapc_nbc_caller.c: whether a non-blocking entry was called by an MPI library's Fortran
 * bindings whose completion calls do not reach our interposers.
 *
 * Why: MPICH 4's `use mpi_f08` bindings call the C MPI_Ialltoall (ours) but PMPI_Wait,
 * PMPI_Test, PMPI_Start and PMPI_Request_free directly (checked in Debian's libmpichfort
 * 4.0.2: mpi_wait_f08_ calls PMPI_Wait); a request of ours completed there would not move its
 * data (the library sees our never-started placeholder and returns at once). The library
 * defines those Fortran completion entries itself (runtime_c/fortran/aapc_fortran_wait.c), so
 * a call from a Fortran binding is served wherever they are the ones the process uses (the
 * library preloaded, or linked before the MPI's Fortran libraries:
 * aapc_fortran_completions_ours), and goes to the library's own routine otherwise (linked
 * after them, a build without -DAAPC_INTERCEPT or for the MPI ABI, no dladdr).
 * Algorithm: dladdr of the entry's return address names the object that called it; an object
 * whose file name contains "fort" (MPICH's libmpichfort, libmpifort), "mpifh" or "usempi" (Open
 * MPI's libmpi_mpifh, libmpi_usempi*) is a Fortran binding. The last answer is kept per
 * address (one call site calls again and again). Without dladdr (not glibc, macOS or the BSDs)
 * no caller is recognised.
 * Cost: one dladdr (a walk of the loaded objects) per new call site, and once per process the
 * check of the Fortran entries; then a compare.
 */
#define _GNU_SOURCE
#include "aapc_fortran.h"
#include "aapc_nbc.h"

#include <string.h>

#if defined(__GLIBC__) || defined(__APPLE__) || defined(__FreeBSD__)
#include <dlfcn.h>
#define HAVE_DLADDR 1
#endif

int aapc_nbc_from_fortran(const void *ret)
{
#ifdef HAVE_DLADDR
    static __thread const void *last;
    static __thread int last_answer;
    if (ret == NULL)
        return 0;
    if (ret == last)
        return last_answer;
    Dl_info info;
    int answer = 0;
    if (dladdr(ret, &info) != 0 && info.dli_fname != NULL) {
        const char *base = strrchr(info.dli_fname, '/');
        base = base != NULL ? base + 1 : info.dli_fname;
        answer = (strstr(base, "fort") != NULL || strstr(base, "mpifh") != NULL ||
                  strstr(base, "usempi") != NULL) &&
                 !aapc_fortran_completions_ours();
    }
    last = ret;
    last_answer = answer;
    return answer;
#else
    (void)ret;
    return 0;
#endif
}
