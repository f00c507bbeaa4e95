/*
 * alltoallv_check.c: correctness harness for generated MPI_Alltoallv routines (levels 1-3).
 *
 *     alltoallv_check PATTERN.txt [--variant NAME] [-v]
 *     alltoallv_check --random SEED [--variant NAME] [-v]
 *
 * PATTERN.txt holds the byte-count matrix compiled with `aapcgen generate --alltoallv`: N, then
 * N x N integers (row = source rank; ranks run machines in rank order). Every entry must be a
 * multiple of 8 (the cases use element sizes 1, 4 and 8). --random SEED: a pseudo-random
 * matrix for any N instead (multiples of 8 up to 12000, a quarter zero, rank 1 sends nothing,
 * rank 2 receives nothing), the same on every rank. --variant NAME runs only that routine
 * (NAME* every routine whose name starts with NAME, e.g. level1-*); the level-2 routines are
 * named level2-<sync>. Each case runs every entry of
 * aapc_vvariants[] (levels 3 and 1, native) and of aapc_vlevel2s[] (level 2, given the case's
 * byte matrix) and PMPI_Alltoallv on the same inputs and compares the whole receive
 * buffers byte for byte (gaps and holes of derived datatypes included: both receive buffers
 * start with the same filler). Cases: MPI_BYTE contiguous; MPI_BYTE with gaps between blocks
 * in reverse rank order; MPI_INT; a strided vector type sent, MPI_INT received; MPI_INT sent,
 * a strided vector received (receive holes must survive); MPI_IN_PLACE (with the symmetric
 * matrix max(P, P^T): the compiled pattern when it is symmetric); counts that differ
 * from the compiled pattern (must fall back); all counts zero; three repeated calls with
 * different data; a duplicate communicator; sub-communicators, each with the matrix of its
 * members (entry (i, j) = the WORLD matrix at their WORLD ranks), all called at once: a split
 * with reversed keys, halves, thirds, the rows and the columns of a k x (N/k) grid (k the
 * largest divisor of N up to its square root; skipped when k = 1). Rank 0 prints the failures and finally
 *     alltoallv_check: N passed, M failed
 * Exit status 0 only if M == 0.
 *
 * Served or handed over: library_calls.h counts the calls a routine hands to the library's
 * PMPI_Alltoallv on the caller's communicator; after each routine rank 0 prints the cases in
 * which any rank did (a fallback gives the library's bytes, so the comparison alone cannot tell):
 *     alltoallv_check: ROUTINE: handed to the library: CASE CASE ...
 */
#include "library_calls.h" /* first: it sets _GNU_SOURCE */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "aapc_vregistry.h"

static int verbose = 0;
static int nranks, me;
static long long *pattern; /* nranks x nranks bytes */

enum layout { CONTIGUOUS, GAPS_REVERSED };

struct side {
    MPI_Datatype type;
    int size;
    MPI_Aint ext;
    int *counts, *displs;
    size_t len; /* buffer bytes */
    unsigned char *buf;
};

/* counts[i] = bytes[i] / size; displacements (in extents) by layout; buffer sized to fit. */
static void side_setup(struct side *s, MPI_Datatype type, const long long *bytes, int stride,
                       enum layout layout, int n)
{
    MPI_Aint lb, tlb, text;
    MPI_Type_size(type, &s->size);
    MPI_Type_get_extent(type, &lb, &s->ext);
    MPI_Type_get_true_extent(type, &tlb, &text);
    s->type = type;
    s->counts = malloc(sizeof(int) * (size_t)n);
    s->displs = malloc(sizeof(int) * (size_t)n);
    long long at = 0;
    for (int k = 0; k < n; k++) {
        int i = layout == GAPS_REVERSED ? n - 1 - k : k;
        s->counts[i] = (int)(bytes[(long long)i * stride] / s->size);
        if (layout == GAPS_REVERSED)
            at += 3; /* a gap of 3 elements before every block */
        s->displs[i] = (int)at;
        at += s->counts[i];
    }
    s->len = (size_t)(at * s->ext + text + 64);
    s->buf = malloc(s->len);
}

static void side_free(struct side *s)
{
    free(s->counts);
    free(s->displs);
    free(s->buf);
}

static void fill(unsigned char *b, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        b[i] = (unsigned char)((i * 131u + seed * 7u + 17u) >> 1);
}

struct result {
    int passed, failed;
};

static long handed = 0;     /* this rank's library calls in the current case */
static char handed_cases[2048]; /* rank 0: the current routine's cases handed over */

static void report(struct result *res, const char *variant, const char *name, int bad)
{
    int any = 0;
    long calls = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&handed, &calls, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    handed = 0;
    if (calls > 0 && strlen(handed_cases) + strlen(name) + 2 < sizeof handed_cases) {
        strcat(handed_cases, " ");
        strcat(handed_cases, name);
    }
    if (any) {
        res->failed++;
    } else {
        res->passed++;
    }
    if (me == 0 && (any || verbose))
        printf("%s %s %s\n", any ? "FAIL" : "ok", variant, name);
}

/* Level 2 through the aapc_alltoallv_fn signature: the matrix of the current case. */
static const long long *g_bytes;
static aapc_alltoallv_level2_fn g_level2;

static int level2(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                  const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    return g_level2(g_bytes, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                    rdispls, recvtype, comm);
}

/* One case: counts from `bytes` (this call's matrix: size of comm squared), send and receive
   types and layouts. */
static int run_case(aapc_alltoallv_fn fn, const long long *bytes, MPI_Datatype stype,
                    MPI_Datatype rtype, enum layout layout, int inplace, int repeats,
                    MPI_Comm comm)
{
    struct side s, r;
    int bad = 0, n, i;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &i);
    g_bytes = bytes;
    side_setup(&s, stype, bytes + (long long)i * n, 1, layout, n);
    side_setup(&r, rtype, bytes + i, n, layout, n);
    unsigned char *ref = malloc(r.len);
    for (int rep = 0; rep < repeats && !bad; rep++) {
        fill(s.buf, s.len, (unsigned)(me * 1000 + rep));
        fill(r.buf, r.len, (unsigned)(me + 99 + rep));
        g_bytes = bytes; /* (a sub-communicator case calls run_case again in between) */
        memcpy(ref, r.buf, r.len);
        library_watch(comm);
        int rc = fn(inplace ? MPI_IN_PLACE : s.buf, s.counts, s.displs, stype, r.buf, r.counts,
                    r.displs, rtype, comm);
        handed += library_unwatch();
        int rc2 = PMPI_Alltoallv(inplace ? MPI_IN_PLACE : s.buf, s.counts, s.displs, stype, ref,
                                 r.counts, r.displs, rtype, comm);
        if (rc != MPI_SUCCESS || rc2 != MPI_SUCCESS) {
            fprintf(stderr, "rank %d: error code %d (reference %d)\n", me, rc, rc2);
            bad = 1;
        } else if (memcmp(ref, r.buf, r.len) != 0) {
            size_t i = 0;
            while (ref[i] == r.buf[i])
                i++;
            fprintf(stderr, "rank %d: byte %zu differs (got %u, want %u)\n", me, i, r.buf[i],
                    ref[i]);
            bad = 1;
        }
    }
    free(ref);
    side_free(&s);
    side_free(&r);
    return bad;
}

static long long *read_pattern(const char *path, int *n)
{
    FILE *f = fopen(path, "r");
    if (f == NULL || fscanf(f, "%d", n) != 1 || *n <= 0) {
        fprintf(stderr, "alltoallv_check: cannot read %s\n", path);
        return NULL;
    }
    long long *p = malloc(sizeof *p * (size_t)(*n) * (size_t)(*n));
    for (long long i = 0; i < (long long)(*n) * (*n); i++) {
        if (fscanf(f, "%lld", &p[i]) != 1 || p[i] % 8 != 0) {
            fprintf(stderr, "alltoallv_check: %s: entry %lld missing or not a multiple of 8\n",
                    path, i);
            fclose(f);
            free(p);
            return NULL;
        }
    }
    fclose(f);
    return p;
}

/* --random SEED: the same matrix on every rank (a 64-bit LCG). */
static long long *random_pattern(unsigned long long seed, int n)
{
    long long *p = malloc(sizeof *p * (size_t)n * (size_t)n);
    unsigned long long x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (long long k = 0; k < (long long)n * n; k++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        unsigned v = (unsigned)(x >> 33);
        int i = (int)(k / n), j = (int)(k % n);
        p[k] = v % 4 == 0 || i == 1 || j == 2 ? 0 : v % 10 == 1 ? 8 : (long long)(v / 16 % 1500) * 8;
    }
    return p;
}

/* The matrix of a sub-communicator: the WORLD matrix at its members' WORLD ranks. */
static long long *sub_matrix(const long long *world, MPI_Comm comm)
{
    int n;
    MPI_Group wg, g;
    MPI_Comm_size(comm, &n);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Comm_group(comm, &g);
    int *idx = malloc(sizeof *idx * (size_t)n), *w = malloc(sizeof *w * (size_t)n);
    for (int i = 0; i < n; i++)
        idx[i] = i;
    MPI_Group_translate_ranks(g, n, idx, wg, w);
    long long *m = malloc(sizeof *m * (size_t)n * (size_t)n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            m[(size_t)i * n + j] = world[(size_t)w[i] * nranks + w[j]];
    MPI_Group_free(&wg);
    MPI_Group_free(&g);
    free(idx);
    free(w);
    return m;
}

/* Split WORLD by colour (rank / div when div > 0, else rank mod mod), keys reversed or not,
   and run the routine on every part at once with its own matrix. */
static int split_case(aapc_alltoallv_fn fn, const long long *world, int div, int mod,
                      int reversed, MPI_Datatype type, enum layout layout)
{
    MPI_Comm sub;
    int color = div > 0 ? me / div : me % mod;
    MPI_Comm_split(MPI_COMM_WORLD, color, reversed ? nranks - me : me, &sub);
    long long *m = sub_matrix(world, sub);
    int bad = run_case(fn, m, type, type, layout, 0, 2, sub);
    free(m);
    MPI_Comm_free(&sub);
    return bad;
}

static const char *only_variant = NULL;

/* --variant NAME, or NAME* for every routine starting with NAME. */
static int variant_selected(const char *name)
{
    if (only_variant == NULL)
        return 1;
    size_t n = strlen(only_variant);
    if (n > 0 && only_variant[n - 1] == '*')
        return strncmp(only_variant, name, n - 1) == 0;
    return strcmp(only_variant, name) == 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    const char *path = NULL;
    long long seed = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0)
            verbose = 1;
        else if (strcmp(argv[i], "--random") == 0 && i + 1 < argc)
            seed = atoll(argv[++i]);
        else if (strcmp(argv[i], "--variant") == 0 && i + 1 < argc)
            only_variant = argv[++i];
        else
            path = argv[i];
    }
    int n = nranks;
    pattern = seed >= 0 ? random_pattern((unsigned long long)seed, nranks)
              : path    ? read_pattern(path, &n)
                        : NULL;
    if (pattern == NULL || n != nranks) {
        if (me == 0)
            fprintf(stderr, "usage: alltoallv_check PATTERN.txt (N x N, N = %d ranks) | --random "
                            "SEED [--variant NAME] [-v]\n", nranks);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (aapc_nvvariants == 0 && me == 0)
        fprintf(stderr, "alltoallv_check: no MPI_Alltoallv routine was generated\n");

    size_t nn = (size_t)nranks * (size_t)nranks;
    long long *other = malloc(sizeof *other * nn), *zero = calloc(nn, sizeof *zero);
    memcpy(other, pattern, sizeof *other * nn);
    other[nranks > 1 ? 1 : 0] += 8; /* rank 0 -> rank 1 differs: every rank must fall back */
    long long *sym = malloc(sizeof *sym * nn); /* MPI_IN_PLACE needs symmetric counts */
    for (int i = 0; i < nranks; i++)
        for (int j = 0; j < nranks; j++) {
            long long a = pattern[i * nranks + j], b = pattern[j * nranks + i];
            sym[i * nranks + j] = a > b ? a : b;
        }

    MPI_Datatype vec, ivec; /* 2 ints out of every 3: size 8, extent 12 */
    MPI_Type_vector(2, 1, 1, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, 3 * sizeof(int), &ivec);
    MPI_Type_commit(&ivec);
    MPI_Type_free(&vec);
    MPI_Datatype holey; /* int, hole, int: size 8, extent 12, non-contiguous */
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {0, 2 * sizeof(int)};
    MPI_Datatype types[2] = {MPI_INT, MPI_INT};
    MPI_Type_create_struct(2, bl, disp, types, &holey);
    MPI_Type_commit(&holey);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);

    int k = 1; /* grid: k x (nranks / k), k the largest divisor up to sqrt(nranks) */
    for (int d = 1; d * d <= nranks; d++)
        if (nranks % d == 0)
            k = d;
    struct result res = {0, 0};
    int nrun = 0;
    for (int v = 0; v < aapc_nvvariants + aapc_nvlevel2s; v++) {
        aapc_alltoallv_fn fn = level2;
        const char *name;
        if (v < aapc_nvvariants) {
            fn = aapc_vvariants[v].fn;
            name = aapc_vvariants[v].variant;
        } else {
            g_level2 = aapc_vlevel2s[v - aapc_nvvariants].fn;
            name = aapc_vlevel2s[v - aapc_nvvariants].variant;
        }
        if (!variant_selected(name))
            continue;
        nrun++;
        handed_cases[0] = '\0';
        report(&res, name, "bytes",
               run_case(fn, pattern, MPI_BYTE, MPI_BYTE, CONTIGUOUS, 0, 1, MPI_COMM_WORLD));
        report(&res, name, "bytes-gaps-reversed",
               run_case(fn, pattern, MPI_BYTE, MPI_BYTE, GAPS_REVERSED, 0, 1, MPI_COMM_WORLD));
        report(&res, name, "int",
               run_case(fn, pattern, MPI_INT, MPI_INT, CONTIGUOUS, 0, 1, MPI_COMM_WORLD));
        report(&res, name, "holey-to-int",
               run_case(fn, pattern, holey, MPI_INT, GAPS_REVERSED, 0, 1, MPI_COMM_WORLD));
        report(&res, name, "int-to-holey",
               run_case(fn, pattern, MPI_INT, holey, CONTIGUOUS, 0, 1, MPI_COMM_WORLD));
        report(&res, name, "vector-to-holey",
               run_case(fn, pattern, ivec, holey, GAPS_REVERSED, 0, 1, MPI_COMM_WORLD));
        report(&res, name, "in-place-int",
               run_case(fn, sym, MPI_INT, MPI_INT, GAPS_REVERSED, 1, 1, MPI_COMM_WORLD));
        report(&res, name, "in-place-holey",
               run_case(fn, sym, holey, holey, CONTIGUOUS, 1, 1, MPI_COMM_WORLD));
        report(&res, name, "other-counts-fallback",
               run_case(fn, other, MPI_BYTE, MPI_BYTE, CONTIGUOUS, 0, 1, MPI_COMM_WORLD));
        report(&res, name, "zero-counts",
               run_case(fn, zero, MPI_INT, MPI_INT, CONTIGUOUS, 0, 1, MPI_COMM_WORLD));
        report(&res, name, "repeat-3",
               run_case(fn, pattern, MPI_INT, MPI_INT, CONTIGUOUS, 0, 3, MPI_COMM_WORLD));
        report(&res, name, "dup-comm", run_case(fn, pattern, MPI_BYTE, MPI_BYTE, GAPS_REVERSED, 0, 2, dup));
        report(&res, name, "split-reversed",
               split_case(fn, pattern, 0, 1, 1, MPI_INT, GAPS_REVERSED));
        report(&res, name, "split-halves",
               split_case(fn, pattern, (nranks + 1) / 2, 0, 0, MPI_BYTE, CONTIGUOUS));
        report(&res, name, "split-thirds", split_case(fn, pattern, 0, 3, 0, holey, CONTIGUOUS));
        if (k > 1) {
            report(&res, name, "grid-rows",
                   split_case(fn, pattern, nranks / k, 0, 0, MPI_INT, CONTIGUOUS));
            report(&res, name, "grid-columns",
                   split_case(fn, pattern, 0, nranks / k, 0, MPI_INT, GAPS_REVERSED));
        }
        if (me == 0)
            printf("alltoallv_check: %s: handed to the library:%s\n", name, handed_cases);
    }
    if (me == 0 && only_variant != NULL && nrun == 0)
        printf("alltoallv_check: no routine named '%s'\n", only_variant);
    if (me == 0)
        printf("alltoallv_check: %d passed, %d failed\n", res.passed, res.failed);
    MPI_Comm_free(&dup);
    MPI_Type_free(&ivec);
    MPI_Type_free(&holey);
    free(other);
    free(sym);
    free(zero);
    free(pattern);
    MPI_Finalize();
    return res.failed == 0 && aapc_nvvariants > 0 && nrun > 0 ? 0 : 1;
}
