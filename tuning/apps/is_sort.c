/*
 * is_sort.c: an integer bucket sort in the form of NAS IS (the exchange of seed 000's IS
 * experiment), an unchanged MPI program for timing the library in an application.
 *
 * Each rank draws its keys (uniform in [0, MAX_KEY), a per-rank linear congruential stream),
 * and each iteration:
 *   1. counts its keys per destination rank (rank d owns the keys k with k P / MAX_KEY = d);
 *   2. MPI_Alltoall of the counts (one int per pair), as IS exchanges its bucket sizes;
 *   3. MPI_Alltoallv of the keys, bucketed by destination;
 *   4. a local counting sort of the received keys over the rank's key range.
 * Then it verifies its own result: every key it holds is in its range and in order, the last
 * key of rank r is <= the first of rank r+1, and no key was lost or duplicated (the number of
 * keys and their sum over all ranks, before and after).
 * IS changes two keys per iteration; here each iteration shifts every key by the iteration
 * number (mod MAX_KEY), so the buckets' sizes change and the counts cannot be cached.
 *
 *   mpiexec -n 8 ./is_sort --keys 1048576 --iters 5 [--max-key 8388608] [--seed 1]
 *
 * Prints on rank 0, the slowest rank's seconds:
 *   is_sort: ranks P keys N iters I max_key K total_s T exchange_s X alltoall_s A verified
 * or "is_sort: FAILED <why>" and exit status 1. total_s is the iterations' time (no key
 * generation or verification); exchange_s the part inside MPI_Alltoall and MPI_Alltoallv.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct opts {
    long long keys, max_key;
    int iters;
    unsigned seed;
};

static int parse(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){1 << 20, 1 << 23, 5, 1};
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        long long v = i + 1 < argc ? strtoll(argv[i + 1], &end, 10) : -1;
        if (end == NULL || *end != '\0' || v < 1)
            return -1;
        if (strcmp(argv[i], "--keys") == 0 && v <= (1LL << 30))
            o->keys = v;
        else if (strcmp(argv[i], "--max-key") == 0 && v <= (1LL << 31) - 1)
            o->max_key = v;
        else if (strcmp(argv[i], "--iters") == 0 && v <= 100000)
            o->iters = (int)v;
        else if (strcmp(argv[i], "--seed") == 0 && v <= 1000000)
            o->seed = (unsigned)v;
        else
            return -1;
        i++;
    }
    return 0;
}

static int owner(int32_t key, long long max_key, int p)
{
    return (int)((long long)key * p / max_key);
}

static int fail(const char *why)
{
    fprintf(stderr, "is_sort: FAILED %s\n", why);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int p, me;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    struct opts o;
    if (parse(argc, argv, &o) != 0 || o.max_key < p) {
        if (me == 0)
            fprintf(stderr, "is_sort: usage: is_sort [--keys N<=2^30] [--iters I] "
                            "[--max-key K (P..2^31-1)] [--seed S]\n");
        MPI_Finalize();
        return 2;
    }
    size_t n = (size_t)o.keys;
    /* my key range: the keys k with owner(k) == me, [ceil(K me / P), ceil(K (me + 1) / P)) */
    long long lo = (o.max_key * me + p - 1) / p, hi = (o.max_key * (me + 1) + p - 1) / p;
    int32_t *keys = malloc(n * sizeof *keys), *sendk = malloc(n * sizeof *sendk);
    int *scount = calloc((size_t)p, sizeof *scount), *rcount = calloc((size_t)p, sizeof *rcount);
    int *sdispl = calloc((size_t)p, sizeof *sdispl), *rdispl = calloc((size_t)p, sizeof *rdispl);
    int *fill = calloc((size_t)p, sizeof *fill);
    long long *hist = calloc((size_t)(hi - lo) + 1, sizeof *hist);
    if (!keys || !sendk || !scount || !rcount || !sdispl || !rdispl || !fill || !hist)
        return fail("out of memory");
    uint64_t x = 0x9E3779B97F4A7C15ULL * (uint64_t)(o.seed * 65537u + (unsigned)me + 1u);
    for (size_t i = 0; i < n; i++) { /* splitmix64: a stream per rank */
        uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        keys[i] = (int32_t)((z ^ (z >> 31)) % (uint64_t)o.max_key);
    }
    int32_t *recvk = NULL;
    size_t rn = 0;
    double total = 0, exch = 0, a2a = 0;
    for (int it = 0; it < o.iters; it++) {
        for (size_t i = 0; i < n; i++) /* the iteration's keys: shifted by one */
            keys[i] = (int32_t)((keys[i] + 1) % o.max_key);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        memset(scount, 0, sizeof *scount * (size_t)p);
        for (size_t i = 0; i < n; i++)
            scount[owner(keys[i], o.max_key, p)]++;
        for (int d = 1; d < p; d++)
            sdispl[d] = sdispl[d - 1] + scount[d - 1];
        memcpy(fill, sdispl, sizeof *fill * (size_t)p);
        for (size_t i = 0; i < n; i++)
            sendk[fill[owner(keys[i], o.max_key, p)]++] = keys[i];
        double t1 = MPI_Wtime();
        MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD);
        double t2 = MPI_Wtime();
        long long total_in = 0;
        for (int s = 0; s < p; s++) {
            rdispl[s] = (int)total_in;
            total_in += rcount[s];
        }
        if (total_in > 0x7fffffffLL)
            return fail("a rank receives more than 2^31-1 keys");
        if (recvk == NULL || (size_t)total_in > rn) {
            free(recvk);
            rn = total_in > 0 ? (size_t)total_in : 1;
            if ((recvk = malloc(rn * sizeof *recvk)) == NULL)
                return fail("out of memory");
        }
        MPI_Alltoallv(sendk, scount, sdispl, MPI_INT, recvk, rcount, rdispl,
                      MPI_INT, MPI_COMM_WORLD);
        double t3 = MPI_Wtime();
        memset(hist, 0, sizeof *hist * (size_t)(hi - lo)); /* counting sort over my range */
        for (long long i = 0; i < total_in; i++) {
            if (recvk[i] < lo || recvk[i] >= hi)
                return fail("a rank received a key outside its range");
            hist[recvk[i] - lo]++;
        }
        long long k = 0;
        for (long long v = 0; v < hi - lo; v++)
            for (long long c = 0; c < hist[v]; c++)
                recvk[k++] = (int32_t)(lo + v);
        double t4 = MPI_Wtime();
        total += t4 - t0;
        exch += (t2 - t1) + (t3 - t2);
        a2a += t2 - t1;
        /* verification (not timed): order, boundaries, count and sum */
        for (long long i = 1; i < total_in; i++)
            if (recvk[i - 1] > recvk[i])
                return fail("keys out of order on a rank");
        long long mine[2] = {total_in, 0}, all[2], before[2] = {(long long)n, 0}, all0[2];
        for (long long i = 0; i < total_in; i++)
            mine[1] += recvk[i];
        for (size_t i = 0; i < n; i++)
            before[1] += keys[i];
        MPI_Allreduce(mine, all, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(before, all0, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (all[0] != all0[0] || all[1] != all0[1])
            return fail("keys lost or duplicated (count or sum differs)");
        int32_t last = total_in ? recvk[total_in - 1] : -1, prev = -1;
        MPI_Sendrecv(&last, 1, MPI_INT32_T, me + 1 < p ? me + 1 : MPI_PROC_NULL, 0, &prev, 1,
                     MPI_INT32_T, me ? me - 1 : MPI_PROC_NULL, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        if (total_in && prev > recvk[0])
            return fail("a rank's first key is below its left neighbour's last");
    }
    double t[3] = {total, exch, a2a}, worst[3];
    MPI_Reduce(t, worst, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (me == 0)
        printf("is_sort: ranks %d keys %lld iters %d max_key %lld total_s %.6f exchange_s %.6f "
               "alltoall_s %.6f verified\n",
               p, o.keys, o.iters, o.max_key, worst[0], worst[1], worst[2]);
    free(keys);
    free(sendk);
    free(recvk);
    free(scount);
    free(rcount);
    free(sdispl);
    free(rdispl);
    free(fill);
    free(hist);
    MPI_Finalize();
    return 0;
}
