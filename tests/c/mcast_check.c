/*
 * mcast_check.c: the multicast collectives of runtime_c/mcast against the MPI library's own
 * (PMPI_*), byte for byte over the whole receive buffers.
 *
 * Cases: Bcast of 0, 1, 1472, 16384, 16385 and 1 MiB bytes with the root changing every call
 * (back to back), Bcast of a strided vector type; Scatter of blocks of 0 .. 16385 bytes (and in
 * place); Scatterv with zero and non-zero counts (all counts zero too) under the static, dynamic
 * and compiler-assisted schemes, two compiler-assisted groups open at once, 24 groups open at once (more than the 20
 * memberships one socket allows); Allgather of
 * 0 .. 16385-byte blocks (and in place); Bcast on the two halves of a split communicator at the
 * same time. Options: --max-bytes N caps every message (default 1 MiB), --reps N repeats the
 * whole set (default 1). Prints one line per failure and a summary; exit status 1 on failure.
 */
#include "aapc_mcast.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, failures, cases;
static long long max_bytes = 1 << 20;

static void fill(unsigned char *p, long long n, unsigned seed)
{
    for (long long i = 0; i < n; i++)
        p[i] = (unsigned char)((i * 131u + seed * 7919u + (unsigned)(i >> 8)) & 0xff);
}

static void check(const char *what, long long arg, int rc, const void *a, const void *b,
                  size_t n)
{
    cases++;
    if (rc != MPI_SUCCESS) {
        failures++;
        printf("FAIL rank %d %s %lld: rc %d\n", rank, what, arg, rc);
    } else if (n && memcmp(a, b, n) != 0) {
        size_t i = 0;
        while (((const unsigned char *)a)[i] == ((const unsigned char *)b)[i])
            i++;
        failures++;
        printf("FAIL rank %d %s %lld: byte %zu differs (%d vs %d)\n", rank, what, arg, i,
               ((const unsigned char *)a)[i], ((const unsigned char *)b)[i]);
    }
}

static void test_bcast(MPI_Comm comm, const char *label, unsigned salt)
{
    static const long long sizes[] = {0, 1, 1472, 16384, 16385, 1 << 20};
    int me, p;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    for (int k = 0; k < 6; k++) {
        long long n = sizes[k];
        if (n > max_bytes)
            continue;
        int root = (k + (int)salt) % p;
        unsigned char *a = malloc((size_t)n + 1), *b = malloc((size_t)n + 1);
        memset(a, 0xee, (size_t)n + 1);
        memset(b, 0xee, (size_t)n + 1);
        if (me == root) {
            fill(a, n, (unsigned)k + salt);
            fill(b, n, (unsigned)k + salt);
        }
        int rc = aapc_mcast_bcast(a, (int)n, MPI_BYTE, root, comm);
        PMPI_Bcast(b, (int)n, MPI_BYTE, root, comm);
        check(label, n, rc, a, b, (size_t)n + 1);
        free(a);
        free(b);
    }
}

/* Broadcasts on two communicators (two groups) in turn, with different roots and no other MPI
 * call in between: the root of one returns while its receivers' confirmations are pending and
 * then waits, as a receiver on the other group, for one of those receivers (with
 * AAPC_TEST_MCAST_SSEND=1 that receiver's confirmation needs this rank's MPI progress). */
static void test_interleaved_groups(void)
{
    enum { N = 1472, ROUNDS = 6 };
    if (size < 2)
        return;
    MPI_Comm other;
    MPI_Comm_dup(MPI_COMM_WORLD, &other);
    unsigned char *a = malloc((size_t)ROUNDS * 2 * N), *want = malloc(N);
    int rc[2 * ROUNDS];
    memset(a, 0xee, (size_t)ROUNDS * 2 * N);
    for (int k = 0; k < 2 * ROUNDS; k++) {
        int root = k % 2;
        unsigned char *buf = a + (size_t)k * N;
        if (rank == root)
            fill(buf, N, (unsigned)k + 900);
        rc[k] = aapc_mcast_bcast(buf, N, MPI_BYTE, root, k % 2 ? other : MPI_COMM_WORLD);
    }
    for (int k = 0; k < 2 * ROUNDS; k++) {
        fill(want, N, (unsigned)k + 900);
        check("interleaved-groups", k, rc[k], a + (size_t)k * N, want, N);
    }
    MPI_Comm_free(&other);
    free(a);
    free(want);
}

static void test_bcast_vector(void)
{
    MPI_Datatype vec;
    MPI_Type_vector(100, 3, 5, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int n = 2 * 5 * 100;
    int *a = malloc(sizeof(int) * (size_t)n), *b = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)
        a[i] = b[i] = rank == 1 % size ? i * 3 + 1 : -1;
    int rc = aapc_mcast_bcast(a, 2, vec, 1 % size, MPI_COMM_WORLD);
    PMPI_Bcast(b, 2, vec, 1 % size, MPI_COMM_WORLD);
    check("bcast-vector", 2, rc, a, b, sizeof(int) * (size_t)n);
    MPI_Type_free(&vec);
    free(a);
    free(b);
}

/* A predefined type with a hole (MPI_DOUBLE_INT: 12 bytes of data in 16): not its own image. */
static void test_bcast_pair(void)
{
    enum { N = 300 };
    struct {
        double d;
        int i;
    } *a = malloc(sizeof *a * N), *b = malloc(sizeof *b * N);
    memset(a, 0x5a, sizeof *a * N);
    memset(b, 0x5a, sizeof *b * N);
    for (int k = 0; k < N && rank == 1 % size; k++) {
        a[k].d = b[k].d = k * 0.5;
        a[k].i = b[k].i = -k;
    }
    int rc = aapc_mcast_bcast(a, N, MPI_DOUBLE_INT, 1 % size, MPI_COMM_WORLD);
    PMPI_Bcast(b, N, MPI_DOUBLE_INT, 1 % size, MPI_COMM_WORLD);
    check("bcast-double-int", N, rc, a, b, sizeof *a * N);
    free(a);
    free(b);
}

static void test_scatter(void)
{
    static const long long blocks[] = {0, 1, 100, 1472, 16385};
    for (int k = 0; k < 5; k++) {
        long long m = blocks[k];
        if (m * size > max_bytes)
            continue;
        int root = (k + 1) % size;
        for (int inplace = 0; inplace < 2; inplace++) {
            unsigned char *s = malloc((size_t)(m * size) + 1);
            unsigned char *a = malloc((size_t)m + 1), *b = malloc((size_t)m + 1);
            fill(s, m * size, (unsigned)k + 40);
            memset(a, 0xee, (size_t)m + 1);
            memset(b, 0xee, (size_t)m + 1);
            void *ra = a, *rb = b;
            if (inplace && rank == root)
                ra = rb = MPI_IN_PLACE;
            int rc = aapc_mcast_scatter(s, (int)m, MPI_BYTE, ra, (int)m, MPI_BYTE, root,
                                        MPI_COMM_WORLD);
            PMPI_Scatter(s, (int)m, MPI_BYTE, rb, (int)m, MPI_BYTE, root, MPI_COMM_WORLD);
            check(inplace ? "scatter-in-place" : "scatter", m, rc, a, b, (size_t)m + 1);
            free(s);
            free(a);
            free(b);
        }
    }
}

/* counts pattern p: 0 = every other rank zero, 1 = all zero, 2 = only the last rank, 3 = all */
static int count_of(int pattern, int r, long long unit)
{
    switch (pattern) {
    case 0:
        return r % 2 ? (int)(unit + r) : 0;
    case 1:
        return 0;
    case 2:
        return r == size - 1 ? (int)unit : 0;
    default:
        return (int)(unit + 3 * r);
    }
}

static void scatterv_case(int scheme, int pattern, long long unit, int root, unsigned salt)
{
    int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
    long long total = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = count_of(pattern, r, unit);
        displs[r] = (int)total + 5; /* gaps between blocks */
        total += counts[r] + 5;
    }
    unsigned char *s = malloc((size_t)total + 1);
    fill(s, total, salt);
    int mine = counts[rank];
    unsigned char *a = malloc((size_t)mine + 1), *b = malloc((size_t)mine + 1);
    static const char *names[] = {"scatterv-static", "scatterv-dynamic", "scatterv-compiler"};
    for (int rep = 0; rep < (scheme == 2 ? 3 : 1); rep++) {
        memset(a, 0xee, (size_t)mine + 1);
        memset(b, 0xee, (size_t)mine + 1);
        fill(s, total, salt + (unsigned)rep);
        int rc;
        if (scheme < 2) {
            rc = aapc_mcast_scatterv(s, counts, displs, MPI_BYTE, a, mine, MPI_BYTE, root,
                                     MPI_COMM_WORLD, (aapc_mcast_scheme_t)scheme);
        } else {
            static aapc_mcast_group_t g;
            if (rep == 0)
                aapc_scatterv_open_group(s, counts, displs, MPI_BYTE, a, mine, MPI_BYTE, root,
                                         MPI_COMM_WORLD, &g);
            rc = aapc_scatterv_data_movement(s, counts, displs, MPI_BYTE, a, mine, MPI_BYTE, root,
                                             MPI_COMM_WORLD, g);
            if (rep == 2)
                aapc_scatterv_close_group(&g);
        }
        PMPI_Scatterv(s, counts, displs, MPI_BYTE, b, mine, MPI_BYTE, root, MPI_COMM_WORLD);
        check(names[scheme], pattern * 1000000LL + unit, rc, a, b, (size_t)mine + 1);
    }
    free(counts);
    free(displs);
    free(s);
    free(a);
    free(b);
}

static void test_scatterv(void)
{
    static const long long units[] = {1, 1472, 16385};
    for (int scheme = 0; scheme < 3; scheme++)
        for (int pattern = 0; pattern < 4; pattern++)
            for (int u = 0; u < 3; u++) {
                if ((units[u] + 3 * size) * size > max_bytes)
                    continue;
                scatterv_case(scheme, pattern, units[u], (pattern + u) % size,
                              (unsigned)(scheme * 100 + pattern * 10 + u));
            }
}

/* two compiler-assisted groups with different roots open at once, used alternately */
static void test_two_groups(void)
{
    int *c1 = malloc(sizeof(int) * (size_t)size), *c2 = malloc(sizeof(int) * (size_t)size);
    int *d = malloc(sizeof(int) * (size_t)size);
    for (int r = 0; r < size; r++) {
        c1[r] = r % 2 ? 700 : 0;
        c2[r] = r % 2 ? 0 : 900;
        d[r] = r * 1000;
    }
    unsigned char *s = malloc((size_t)size * 1000), *a = malloc(1000), *b = malloc(1000);
    aapc_mcast_group_t g1, g2;
    int root1 = 0, root2 = size - 1;
    aapc_scatterv_open_group(s, c1, d, MPI_BYTE, a, c1[rank], MPI_BYTE, root1, MPI_COMM_WORLD,
                             &g1);
    aapc_scatterv_open_group(s, c2, d, MPI_BYTE, a, c2[rank], MPI_BYTE, root2, MPI_COMM_WORLD,
                             &g2);
    for (int it = 0; it < 4; it++) {
        int *c = it % 2 ? c2 : c1, root = it % 2 ? root2 : root1;
        fill(s, (long long)size * 1000, (unsigned)it + 77);
        memset(a, 0xee, 1000);
        memset(b, 0xee, 1000);
        int rc = aapc_scatterv_data_movement(s, c, d, MPI_BYTE, a, c[rank], MPI_BYTE, root,
                                             MPI_COMM_WORLD, it % 2 ? g2 : g1);
        PMPI_Scatterv(s, c, d, MPI_BYTE, b, c[rank], MPI_BYTE, root, MPI_COMM_WORLD);
        check("two-groups", it, rc, a, b, 1000);
    }
    aapc_scatterv_close_group(&g1);
    aapc_scatterv_close_group(&g2);
    free(c1);
    free(c2);
    free(d);
    free(s);
    free(a);
    free(b);
}

/* more groups open at once than one socket may join (igmp_max_memberships = 20) */
static void test_many_groups(void)
{
    enum { NG = 24 };
    int *c = malloc(sizeof(int) * (size_t)size), *d = malloc(sizeof(int) * (size_t)size);
    for (int r = 0; r < size; r++) {
        c[r] = 64;
        d[r] = r * 64;
    }
    unsigned char *s = malloc((size_t)size * 64), a[64], b[64];
    aapc_mcast_group_t g[NG];
    for (int k = 0; k < NG; k++)
        aapc_scatterv_open_group(s, c, d, MPI_BYTE, a, 64, MPI_BYTE, k % size, MPI_COMM_WORLD,
                                 &g[k]);
    for (int k = NG - 1; k >= 0; k--) {
        fill(s, (long long)size * 64, (unsigned)k + 500);
        memset(a, 0xee, 64);
        memset(b, 0xee, 64);
        int rc = aapc_scatterv_data_movement(s, c, d, MPI_BYTE, a, 64, MPI_BYTE, k % size,
                                             MPI_COMM_WORLD, g[k]);
        PMPI_Scatterv(s, c, d, MPI_BYTE, b, 64, MPI_BYTE, k % size, MPI_COMM_WORLD);
        check("many-groups", k, rc, a, b, 64);
    }
    for (int k = 0; k < NG; k++)
        aapc_scatterv_close_group(&g[k]);
    free(c);
    free(d);
    free(s);
}

static void test_allgather(void)
{
    static const long long blocks[] = {0, 1, 1472, 16385};
    for (int k = 0; k < 4; k++) {
        long long m = blocks[k];
        if (m * size > max_bytes)
            continue;
        for (int inplace = 0; inplace < 2; inplace++) {
            unsigned char *s = malloc((size_t)m + 1);
            unsigned char *a = malloc((size_t)(m * size) + 1), *b = malloc((size_t)(m * size) + 1);
            fill(s, m, (unsigned)(rank * 13 + k));
            memset(a, 0xee, (size_t)(m * size) + 1);
            memset(b, 0xee, (size_t)(m * size) + 1);
            const void *sa = s, *sb = s;
            if (inplace) {
                memcpy(a + rank * m, s, (size_t)m);
                memcpy(b + rank * m, s, (size_t)m);
                sa = sb = MPI_IN_PLACE;
            }
            int rc = aapc_mcast_allgather(sa, (int)m, MPI_BYTE, a, (int)m, MPI_BYTE,
                                          MPI_COMM_WORLD);
            PMPI_Allgather(sb, (int)m, MPI_BYTE, b, (int)m, MPI_BYTE, MPI_COMM_WORLD);
            check(inplace ? "allgather-in-place" : "allgather", m, rc, a, b,
                  (size_t)(m * size) + 1);
            free(s);
            free(a);
            free(b);
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int reps = 1;
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--max-bytes") == 0)
            max_bytes = atoll(argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0)
            reps = atoi(argv[++i]);
    }
    int enabled = 0;
    aapc_mcast_comm_attach(MPI_COMM_WORLD, &enabled);
    if (!enabled) {
        if (rank == 0)
            printf("FAIL multicast could not be set up on MPI_COMM_WORLD\n");
        MPI_Finalize();
        return 1;
    }
    double t0 = MPI_Wtime();
    for (int rep = 0; rep < reps; rep++) {
        test_bcast(MPI_COMM_WORLD, "bcast", (unsigned)rep);
        test_bcast_vector();
        test_bcast_pair();
        test_interleaved_groups();
        test_scatter();
        test_scatterv();
        test_two_groups();
        test_many_groups();
        test_allgather();
        if (size >= 4) { /* two halves at once: separate groups, no cross-talk */
            MPI_Comm half;
            MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
            test_bcast(half, "bcast-split", (unsigned)rep + 1);
            MPI_Comm_free(&half);
        }
    }
    double t = MPI_Wtime() - t0, tmax;
    int total_fail;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Allreduce(&failures, &total_fail, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mcast_check: %d ranks, %d cases per rank, %d failures, %.2f s\n", size, cases,
               total_fail, tmax);
    MPI_Finalize();
    return total_fail != 0;
}
