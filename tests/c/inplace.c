/*
 * inplace.c: a large MPI_IN_PLACE MPI_Alltoall and MPI_Alltoallv while rank 0 is short of
 * memory (its address space limited as by `ulimit -v`, set with setrlimit(RLIMIT_AS) after
 * MPI_Init so that the limit is relative to what MPI has mapped already).
 *
 *   inplace [--mib N] [--limit-rank0 MIB] [--fatal]
 *
 * Every rank exchanges N MiB in place (default 256: blocks of N/p MiB); with --limit-rank0,
 * rank 0 may map only MIB MiB more than it has once its buffer is filled: enough for the MPI
 * library's in-place algorithm (MPICH: a pairwise exchange with one block of temporary), not
 * for a copy of the whole buffer. Under MPI_ERRORS_RETURN (default; --fatal: the default
 * handler) a rank whose call returns an error prints "inplace: rank R returned CLASS" and the
 * job goes on; the data of successful calls is checked.
 * Output: "inplace: N passed, M failed" from rank 0; exit status 0 only if M is 0.
 */
#define _DEFAULT_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static int rank, p, passes, failures;

static int value(int from, int to, size_t k)
{
    return (int)(from * 1000003 + to * 1009 + (int)(k % 100003));
}

static void check(const char *what, int rc, int ok)
{
    int all = 0;
    if (rc != MPI_SUCCESS) {
        char name[MPI_MAX_ERROR_STRING];
        int len = 0, cls = 0;
        MPI_Error_class(rc, &cls);
        MPI_Error_string(cls, name, &len);
        printf("inplace: rank %d returned %s\n", rank, name);
        ok = 0;
    }
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0) {
        all ? passes++ : failures++;
        printf("%s %s\n", all ? "ok" : "FAIL", what);
    }
}

/* The address space this process has mapped, in bytes (VmSize of /proc/self/status). */
static long long mapped(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long long kb = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "VmSize:", 7) == 0)
            kb = atoll(line + 7);
    if (f != NULL)
        fclose(f);
    return kb * 1024;
}

int main(int argc, char **argv)
{
    long long mib = 256, limit = -1;
    int fatal = 0;
    MPI_Init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--mib") == 0 && i + 1 < argc)
            mib = atoll(argv[++i]);
        else if (strcmp(argv[i], "--limit-rank0") == 0 && i + 1 < argc)
            limit = atoll(argv[++i]);
        else if (strcmp(argv[i], "--fatal") == 0)
            fatal = 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (!fatal)
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    size_t c = (size_t)(mib << 20) / sizeof(int) / (size_t)p; /* ints per block */
    int *r = malloc(sizeof(int) * c * (size_t)p);
    int *counts = malloc(sizeof(int) * (size_t)p), *displs = malloc(sizeof(int) * (size_t)p);
    for (int j = 0; j < p; j++)
        for (size_t k = 0; k < c; k++)
            r[j * c + k] = value(rank, j, k);
    for (int j = 0; j < p; j++) {
        counts[j] = (int)c;
        displs[j] = (int)(j * c);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && limit >= 0) {
        struct rlimit rl;
        rl.rlim_cur = rl.rlim_max = (rlim_t)(mapped() + (limit << 20));
        if (setrlimit(RLIMIT_AS, &rl) != 0)
            perror("inplace: setrlimit");
        printf("inplace: rank 0 limited to %lld MiB more address space\n", limit);
    }
    fflush(stdout);
    int rc = MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, (int)c, MPI_INT, MPI_COMM_WORLD);
    int ok = 1;
    for (int j = 0; j < p && rc == MPI_SUCCESS; j++)
        for (size_t k = 0; k < c; k++)
            ok &= r[j * c + k] == value(j, rank, k);
    check("alltoall in place", rc, ok);
    for (int j = 0; j < p; j++)
        for (size_t k = 0; k < c; k++)
            r[j * c + k] = value(rank, j, k + 1);
    rc = MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, r, counts, displs, MPI_INT,
                       MPI_COMM_WORLD);
    ok = 1;
    for (int j = 0; j < p && rc == MPI_SUCCESS; j++)
        for (size_t k = 0; k < c; k++)
            ok &= r[j * c + k] == value(j, rank, k + 1);
    check("alltoallv in place", rc, ok);
    if (rank == 0)
        printf("inplace: %d passed, %d failed\n", passes, failures);
    free(r);
    free(counts);
    free(displs);
    MPI_Finalize();
    return failures ? 1 : 0;
}
