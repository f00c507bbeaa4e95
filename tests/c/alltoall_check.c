/*
 * alltoall_check.c: correctness harness for generated MPI_Alltoall routines.
 *
 * Links against one generated directory (the runtime_c .c files, the generated tables and registry) and
 * compares every entry of aapc_variants[] with PMPI_Alltoall, byte for byte over whole receive
 * buffers (holes of derived datatypes included: both receive buffers start with the same
 * pattern). Cases: MPI_BYTE blocks of 0, 1, 7, 1000, 65536, 300000 bytes; strided derived
 * datatypes on either side; MPI_IN_PLACE (contiguous and with a negative lower bound); three
 * repeated calls with different data; a duplicate of MPI_COMM_WORLD; a sub-communicator from
 * MPI_Comm_split (falls back to the library); the rows and columns of a grid and thirds split
 * as recorded siblings (aapc_comm_split_siblings: the run-time routines run the union of their
 * schedules). A test (case x variant) fails when any rank sees
 * a difference or an error code. Rank 0 prints the first failures and finally
 *     alltoall_check: N passed, M failed
 * Exit status 0 only if M == 0. Before it, the calls of the aggregated ways (sums over ranks):
 *     alltoall_check: aggregated calls: shared segment S, several leaders L, MPI_Gather/MPI_Scatter G
 *
 * Served or handed over: library_calls.h counts the calls a variant hands to the library's
 * PMPI_Alltoall on the caller's communicator; after each variant rank 0 prints
 *     alltoall_check: VARIANT: library calls on whole communicators W, on parts P
 * (sums over ranks; whole: as many ranks as MPI_COMM_WORLD; communicators of one rank are not
 * counted: there is nothing to schedule). A precomputed variant must serve
 * every whole communicator (W = 0) and hands the parts to the library (P > 0).
 *
 * Options: --max-bytes N (skip cases whose block is larger than N bytes), --variant NAME (run
 * only that variant), -v (one line per test on rank 0). See tests/c/README.md.
 * --huge BYTES: instead of the cases, one in-place MPI_BYTE call with blocks of BYTES bytes
 * (the P blocks of a rank may exceed INT_MAX bytes together), checked against the bytes every
 * rank computes for every (source, destination, offset) instead of a reference call, so a
 * rank holds one buffer of P x BYTES bytes.
 */
#include "library_calls.h" /* first: it sets _GNU_SOURCE */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "aapc_alltoall_cluster.h" /* aapc_comm_split_siblings */
#include "aapc_hier.h"              /* aapc_hier_alltoall_paths */
#include "aapc_registry.h"

#define DESC_LEN 200
#define MAX_SHOWN 10

static long max_bytes = -1; /* -1: no limit */
static long long huge_bytes = 0; /* --huge */
static const char *only_variant = NULL;
static int verbose = 0;
static long handed_whole = 0, handed_part = 0; /* this rank's library calls, current variant */

/* fn on comm, counting what it hands to the library (whole: a communicator of every rank). */
static int counted(aapc_alltoall_fn fn, const void *sb, int sc, MPI_Datatype st, void *rb,
                   int rc, MPI_Datatype rt, MPI_Comm comm)
{
    int size, world;
    MPI_Comm_size(comm, &size);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    library_watch(comm);
    int err = fn(sb, sc, st, rb, rc, rt, comm);
    long handed = library_unwatch();
    if (size > 1) /* a rank alone has nothing to schedule: the library's copy is the answer */
        *(size == world ? &handed_whole : &handed_part) += handed;
    return err;
}

/* A buffer for `count` elements of `type`, addressed like an MPI buffer (base may be offset
   from the allocation when the type has a negative lower bound). */
struct buf {
    unsigned char *raw;
    size_t len;
    unsigned char *base;
};

static void buf_alloc(struct buf *b, MPI_Datatype type, long count)
{
    MPI_Aint lb, ext, tlb, text;
    MPI_Type_get_extent(type, &lb, &ext);
    MPI_Type_get_true_extent(type, &tlb, &text);
    MPI_Aint lo = 0, hi = 0;
    if (count > 0) {
        MPI_Aint last = (MPI_Aint)(count - 1) * ext;
        lo = tlb + (last < 0 ? last : 0);
        hi = tlb + text + (last > 0 ? last : 0);
    }
    if (lo > 0)
        lo = 0;
    if (hi < 0)
        hi = 0;
    const size_t pad = 16;
    b->len = (size_t)(hi - lo) + 2 * pad;
    b->raw = malloc(b->len);
    if (b->raw == NULL) {
        fprintf(stderr, "alltoall_check: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    b->base = b->raw + pad - lo;
}

static unsigned char pattern(int rank, size_t i, int seed)
{
    return (unsigned char)((rank * 131u + i * 7u + (i >> 8) * 13u + (unsigned)seed * 29u + 1u) & 0xffu);
}

static void fill(struct buf *b, int rank, int seed)
{
    for (size_t i = 0; i < b->len; i++)
        b->raw[i] = pattern(rank, i, seed);
}

/* One comparison: the variant against PMPI_Alltoall on comm. Writes a description of the first
   local difference into desc (empty when equal). */
static void compare_once(aapc_alltoall_fn fn, MPI_Comm comm, MPI_Datatype stype, int scount,
                         MPI_Datatype rtype, int rcount, int in_place, int seed, char *desc)
{
    int rank, size, rc_ref, rc_test;
    struct buf sb, ref, test;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    desc[0] = '\0';

    buf_alloc(&ref, rtype, (long)size * rcount);
    buf_alloc(&test, rtype, (long)size * rcount);
    if (in_place) {
        sb.raw = NULL;
        fill(&ref, rank, seed); /* the data to send, and holes that must survive */
        fill(&test, rank, seed);
        rc_ref = PMPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ref.base, rcount, rtype, comm);
        rc_test = counted(fn, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, test.base, rcount, rtype, comm);
    } else {
        buf_alloc(&sb, stype, (long)size * scount);
        fill(&sb, rank, seed);
        memset(ref.raw, 0xA5, ref.len);
        memset(test.raw, 0xA5, test.len);
        for (size_t i = 0; i < ref.len; i += 3)
            ref.raw[i] = test.raw[i] = (unsigned char)(i * 5u);
        rc_ref = PMPI_Alltoall(sb.base, scount, stype, ref.base, rcount, rtype, comm);
        rc_test = counted(fn, sb.base, scount, stype, test.base, rcount, rtype, comm);
    }
    if (rc_ref != MPI_SUCCESS) {
        snprintf(desc, DESC_LEN, "rank %d: PMPI_Alltoall itself returned %d", rank, rc_ref);
    } else if (rc_test != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc_test, msg, &len);
        snprintf(desc, DESC_LEN, "rank %d: returned error %d (%.80s)", rank, rc_test, msg);
    } else {
        for (size_t i = 0; i < ref.len; i++) {
            if (ref.raw[i] != test.raw[i]) {
                snprintf(desc, DESC_LEN,
                         "rank %d: byte %ld of the receive buffer is 0x%02x, library 0x%02x",
                         rank, (long)((ref.raw + i) - ref.base), test.raw[i], ref.raw[i]);
                break;
            }
        }
    }
    free(sb.raw);
    free(ref.raw);
    free(test.raw);
}

/* ---- cases ------------------------------------------------------------------------------ */

struct ctx {
    MPI_Datatype vec_int;     /* 4 ints with a hole after each of the first three */
    MPI_Datatype vec_resized; /* 3 ints with holes, extent 6 ints (trailing hole) */
    MPI_Datatype neg_lb;      /* ints at byte -8 and 0, lb -8, extent 16 */
    MPI_Datatype swapped;     /* 2 ints, the second first: no gap, no offset, not in order */
};

typedef void (*case_fn)(const struct ctx *, aapc_alltoall_fn, long arg, char *desc);

static void case_bytes(const struct ctx *c, aapc_alltoall_fn fn, long n, char *desc)
{
    (void)c;
    compare_once(fn, MPI_COMM_WORLD, MPI_BYTE, (int)n, MPI_BYTE, (int)n, 0, 1, desc);
}

static void case_vector_to_int(const struct ctx *c, aapc_alltoall_fn fn, long n, char *desc)
{
    (void)n;
    compare_once(fn, MPI_COMM_WORLD, c->vec_int, 2, MPI_INT, 8, 0, 2, desc);
}

static void case_int_to_vector(const struct ctx *c, aapc_alltoall_fn fn, long n, char *desc)
{
    (void)n;
    compare_once(fn, MPI_COMM_WORLD, MPI_INT, 6, c->vec_resized, 2, 0, 3, desc);
}

static void case_vector_to_vector(const struct ctx *c, aapc_alltoall_fn fn, long n, char *desc)
{
    (void)n; /* 12 ints per block both ways, different layouts */
    compare_once(fn, MPI_COMM_WORLD, c->vec_int, 3, c->vec_resized, 4, 0, 4, desc);
}

static void case_swapped_to_int(const struct ctx *c, aapc_alltoall_fn fn, long n, char *desc)
{
    (void)n; /* 6 ints per block, sent as 3 swapped pairs: a memcpy would be wrong */
    compare_once(fn, MPI_COMM_WORLD, c->swapped, 3, MPI_INT, 6, 0, 7, desc);
}

static void case_int_to_swapped(const struct ctx *c, aapc_alltoall_fn fn, long n, char *desc)
{
    (void)n;
    compare_once(fn, MPI_COMM_WORLD, MPI_INT, 6, c->swapped, 3, 0, 8, desc);
}

static void case_in_place(const struct ctx *c, aapc_alltoall_fn fn, long n, char *desc)
{
    (void)c;
    compare_once(fn, MPI_COMM_WORLD, MPI_DATATYPE_NULL, 0, MPI_INT, (int)(n / 4), 1, 5, desc);
}

static void case_in_place_neg_lb(const struct ctx *c, aapc_alltoall_fn fn, long n, char *desc)
{
    (void)n;
    compare_once(fn, MPI_COMM_WORLD, MPI_DATATYPE_NULL, 0, c->neg_lb, 3, 1, 6, desc);
}

static void case_repeat(const struct ctx *c, aapc_alltoall_fn fn, long n, char *desc)
{
    (void)c;
    for (int it = 0; it < 3 && desc[0] == '\0'; it++) {
        compare_once(fn, MPI_COMM_WORLD, MPI_BYTE, (int)n, MPI_BYTE, (int)n, 0, 10 + it, desc);
        if (desc[0] != '\0') {
            char tmp[DESC_LEN];
            snprintf(tmp, sizeof tmp, "call %d: %s", it + 1, desc);
            memcpy(desc, tmp, DESC_LEN);
        }
    }
}

static void case_dup(const struct ctx *c, aapc_alltoall_fn fn, long n, char *desc)
{
    MPI_Comm dup;
    (void)c;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    compare_once(fn, dup, MPI_BYTE, (int)n, MPI_BYTE, (int)n, 0, 20, desc);
    if (desc[0] == '\0') /* second call: the cached state of this communicator */
        compare_once(fn, dup, MPI_INT, (int)(n / 4), MPI_INT, (int)(n / 4), 0, 21, desc);
    MPI_Comm_free(&dup);
}

static void case_split(const struct ctx *c, aapc_alltoall_fn fn, long n, char *desc)
{
    MPI_Comm sub;
    int rank;
    (void)c;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &sub);
    MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
    for (int it = 0; it < 2 && desc[0] == '\0'; it++) /* second call: the cached mismatch */
        compare_once(fn, sub, MPI_BYTE, (int)n, MPI_BYTE, (int)n, 0, 30 + it, desc);
    MPI_Comm_free(&sub);
}

/* A sub-communicator of MPI_COMM_WORLD from `split` (MPI_Comm_split or
   aapc_comm_split_siblings): color = (rank / div) % mod (or rank % mod when div is 0), key =
   rank (reversed: -rank); errors returned. */
static MPI_Comm split_world(int (*split)(MPI_Comm, int, int, MPI_Comm *), int div, int mod,
                            int reversed)
{
    MPI_Comm sub;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int color = div > 0 ? (rank / div) % mod : rank % mod;
    split(MPI_COMM_WORLD, color, reversed ? -rank : rank, &sub);
    MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
    return sub;
}

/* Sub-communicators of MPI_COMM_WORLD (split_world) called at once. */
static void split_and_call(aapc_alltoall_fn fn, long n, int div, int mod, int reversed, int tag,
                           char *desc)
{
    MPI_Comm sub = split_world(MPI_Comm_split, div, mod, reversed);
    for (int it = 0; it < 2 && desc[0] == '\0'; it++) /* second call: the cached schedule */
        compare_once(fn, sub, MPI_BYTE, (int)n, MPI_BYTE, (int)n, 0, tag + it, desc);
    MPI_Comm_free(&sub);
}

/* The same through aapc_comm_split_siblings (the siblings run the union of their schedules,
   every one calling at once): a call of MPI_BYTE blocks, then one in place with MPI_INT. */
static void siblings_call(aapc_alltoall_fn fn, long n, int div, int mod, int reversed, int tag,
                          char *desc)
{
    MPI_Comm sub = split_world(aapc_comm_split_siblings, div, mod, reversed);
    compare_once(fn, sub, MPI_BYTE, (int)n, MPI_BYTE, (int)n, 0, tag, desc);
    if (desc[0] == '\0')
        compare_once(fn, sub, MPI_INT, (int)(n / 4), MPI_INT, (int)(n / 4), 1, tag + 1, desc);
    MPI_Comm_free(&sub);
}

/* Rows, then columns, of the grid of case_grid as recorded siblings. */
static void case_siblings_grid(const struct ctx *c, aapc_alltoall_fn fn, long n, char *desc)
{
    int size, k = 1;
    (void)c;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int d = 2; d * d <= size; d++)
        if (size % d == 0)
            k = d;
    siblings_call(fn, n, size / k, k, 0, 70, desc);
    if (desc[0] == '\0')
        siblings_call(fn, n, 0, size / k, 0, 72, desc);
}

/* Thirds with reversed keys as recorded siblings (unequal sizes when 3 does not divide p). */
static void case_siblings_thirds(const struct ctx *c, aapc_alltoall_fn fn, long n, char *desc)
{
    (void)c;
    siblings_call(fn, n, 0, 3, 1, 80, desc);
}

/* A split whose keys reverse the rank order: one communicator of every rank. */
static void case_split_reversed(const struct ctx *c, aapc_alltoall_fn fn, long n, char *desc)
{
    (void)c;
    split_and_call(fn, n, 0, 1, 1, 40, desc);
}

/* The rows and the columns of a k x (p/k) grid (k the largest divisor of p up to sqrt(p)),
   every row (then every column) calling at once, as a 2-D FFT does. */
static void case_grid(const struct ctx *c, aapc_alltoall_fn fn, long n, char *desc)
{
    int size, k = 1;
    (void)c;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int d = 2; d * d <= size; d++)
        if (size % d == 0)
            k = d;
    split_and_call(fn, n, size / k, k, 0, 50, desc); /* rows: ranks r / (p/k) */
    if (desc[0] == '\0')
        split_and_call(fn, n, 0, size / k, 0, 52, desc); /* columns: ranks r mod (p/k) */
}

/* Thirds by rank mod 3: round-robin members, unequal sizes when 3 does not divide p. */
static void case_thirds(const struct ctx *c, aapc_alltoall_fn fn, long n, char *desc)
{
    (void)c;
    split_and_call(fn, n, 0, 3, 0, 60, desc);
}

/* Without --variant: every precomputed variant. The run-time routines (runtime-*, and auto,
   which is one of them or the default precomputed variant) need each rank's machine
   (AAPC_MACHINE): tests/test_cluster_mpi.py selects them by name. */
static int by_default(const char *name)
{
    return strncmp(name, "runtime-", 8) != 0 && strcmp(name, "auto") != 0;
}

/* --variant NAME, or NAME* for every variant starting with NAME (e.g. runtime-*). */
static int variant_selected(const char *name)
{
    size_t n = strlen(only_variant);
    if (n > 0 && only_variant[n - 1] == '*')
        return strncmp(only_variant, name, n - 1) == 0;
    return strcmp(only_variant, name) == 0;
}

struct test_case {
    const char *name;
    case_fn fn;
    long arg;
    long bytes; /* block size, for --max-bytes */
};

static const struct test_case cases[] = {
    {"bytes-0", case_bytes, 0, 0},
    {"bytes-1", case_bytes, 1, 1},
    {"bytes-7", case_bytes, 7, 7},
    {"bytes-1000", case_bytes, 1000, 1000},
    {"bytes-1500", case_bytes, 1500, 1500}, /* with the next two: the leaders' windows of */
    {"bytes-2500", case_bytes, 2500, 2500}, /* 8, 4 and 2 phases at 2 ranks per machine */
    {"bytes-5000", case_bytes, 5000, 5000},
    {"bytes-65536", case_bytes, 65536, 65536},
    {"bytes-300000", case_bytes, 300000, 300000},
    {"vector-to-int", case_vector_to_int, 0, 32},
    {"int-to-vector", case_int_to_vector, 0, 24},
    {"vector-to-vector", case_vector_to_vector, 0, 48},
    {"swapped-to-int", case_swapped_to_int, 0, 24},
    {"int-to-swapped", case_int_to_swapped, 0, 24},
    {"in-place-int", case_in_place, 1000, 1000},
    {"in-place-neg-lb", case_in_place_neg_lb, 0, 24},
    {"repeat-3", case_repeat, 1000, 1000},
    {"dup-comm", case_dup, 1000, 1000},
    {"split-comm-fallback", case_split, 1000, 1000},
    {"siblings-grid", case_siblings_grid, 1000, 1000},
    {"siblings-thirds", case_siblings_thirds, 1000, 1000},
    {"split-reversed", case_split_reversed, 1000, 1000},
    {"grid-rows-columns", case_grid, 1000, 1000},
    {"split-thirds", case_thirds, 1000, 1000},
};

static void make_types(struct ctx *c)
{
    MPI_Datatype t;
    MPI_Type_vector(4, 1, 2, MPI_INT, &c->vec_int);
    MPI_Type_commit(&c->vec_int);

    MPI_Type_vector(3, 1, 2, MPI_INT, &t);
    MPI_Type_create_resized(t, 0, 6 * (MPI_Aint)sizeof(int), &c->vec_resized);
    MPI_Type_free(&t);
    MPI_Type_commit(&c->vec_resized);

    int blocklens[2] = {1, 1};
    MPI_Aint disps[2] = {-2 * (MPI_Aint)sizeof(int), 0};
    MPI_Datatype types[2] = {MPI_INT, MPI_INT};
    MPI_Type_create_struct(2, blocklens, disps, types, &t);
    MPI_Type_create_resized(t, -2 * (MPI_Aint)sizeof(int), 4 * (MPI_Aint)sizeof(int),
                            &c->neg_lb);
    MPI_Type_free(&t);
    MPI_Type_commit(&c->neg_lb);

    int second_first[2] = {1, 0};
    MPI_Type_create_indexed_block(2, 1, second_first, MPI_INT, &c->swapped);
    MPI_Type_commit(&c->swapped);
}

static void free_types(struct ctx *c)
{
    MPI_Type_free(&c->vec_int);
    MPI_Type_free(&c->vec_resized);
    MPI_Type_free(&c->neg_lb);
    MPI_Type_free(&c->swapped);
}

static int parse_args(int argc, char **argv, int rank)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--max-bytes") == 0 && i + 1 < argc) {
            char *end;
            max_bytes = strtol(argv[++i], &end, 10);
            if (*end != '\0' || max_bytes < 0)
                goto usage;
        } else if (strcmp(argv[i], "--variant") == 0 && i + 1 < argc) {
            only_variant = argv[++i];
        } else if (strcmp(argv[i], "--huge") == 0 && i + 1 < argc) {
            huge_bytes = atoll(argv[++i]);
            if (huge_bytes <= 0 || huge_bytes > 0x7fffffff)
                goto usage;
        } else if (strcmp(argv[i], "-v") == 0) {
            verbose = 1;
        } else {
            goto usage;
        }
    }
    return 1;
usage:
    if (rank == 0)
        fprintf(stderr, "usage: alltoall_check [--max-bytes N] [--huge BYTES] [--variant NAME] "
                        "[-v]\n");
    return 0;
}

/* The byte at `offset` of the block from rank `src` to rank `dst` (--huge). */
static unsigned char huge_byte(int src, int dst, size_t offset)
{
    return (unsigned char)(src * 37 + dst * 11 + offset * 7 + (offset >> 13));
}

/* --huge: one in-place call of the selected variant with blocks of huge_bytes bytes. */
static int huge_case(aapc_alltoall_fn fn, int rank, int size)
{
    size_t b = (size_t)huge_bytes;
    unsigned char *buf = malloc(b * (size_t)size);
    int bad = buf == NULL;
    if (!bad) {
        for (int q = 0; q < size; q++)
            for (size_t i = 0; i < b; i++)
                buf[(size_t)q * b + i] = huge_byte(rank, q, i);
        int rc = counted(fn, MPI_IN_PLACE, 0, MPI_BYTE, buf, (int)b, MPI_BYTE, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "rank %d: error code %d\n", rank, rc);
            bad = 1;
        }
        for (int q = 0; q < size && !bad; q++)
            for (size_t i = 0; i < b && !bad; i++)
                if (buf[(size_t)q * b + i] != huge_byte(q, rank, i)) {
                    fprintf(stderr, "rank %d: block from %d differs at byte %zu\n", rank, q, i);
                    bad = 1;
                }
    }
    free(buf);
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
}

/* Rank 0 prints the variant's library calls, summed over the ranks. */
static void report_handed(const char *variant, int rank)
{
    long mine[2] = {handed_whole, handed_part}, all[2] = {0, 0};
    MPI_Reduce(mine, all, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("alltoall_check: %s: library calls on whole communicators %ld, on parts %ld\n",
               variant, all[0], all[1]);
}

int main(int argc, char **argv)
{
    int rank, size, passed = 0, failed = 0, shown = 0, nrun = 0;
    struct ctx c;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (!parse_args(argc, argv, rank)) {
        MPI_Finalize();
        return 2;
    }
    make_types(&c);
    char desc[DESC_LEN];
    char *all = rank == 0 ? malloc((size_t)size * DESC_LEN) : NULL;
    const int ncases = (int)(sizeof cases / sizeof cases[0]);

    for (int v = 0; v < aapc_nvariants; v++) {
        if (only_variant ? !variant_selected(aapc_variants[v].variant)
                         : !by_default(aapc_variants[v].variant))
            continue;
        nrun++;
        handed_whole = handed_part = 0;
        if (huge_bytes > 0) {
            int bad = huge_case(aapc_variants[v].fn, rank, size);
            passed += !bad;
            failed += bad;
            if (rank == 0 && (bad || verbose))
                printf("%s %s huge-%lld\n", bad ? "FAIL" : "ok  ", aapc_variants[v].variant,
                       huge_bytes);
            shown += bad;
            report_handed(aapc_variants[v].variant, rank);
            continue;
        }
        for (int k = 0; k < ncases; k++) {
            if (max_bytes >= 0 && cases[k].bytes > max_bytes)
                continue;
            memset(desc, 0, sizeof desc);
            cases[k].fn(&c, aapc_variants[v].fn, cases[k].arg, desc);
            MPI_Gather(desc, DESC_LEN, MPI_CHAR, all, DESC_LEN, MPI_CHAR, 0, MPI_COMM_WORLD);
            if (rank != 0)
                continue;
            int bad = 0;
            for (int r = 0; r < size; r++) {
                const char *d = all + (size_t)r * DESC_LEN;
                if (d[0] == '\0')
                    continue;
                if (!bad && shown < MAX_SHOWN) {
                    printf("FAIL %s %s: %.*s\n", aapc_variants[v].variant, cases[k].name,
                           DESC_LEN, d);
                    shown++;
                }
                bad = 1;
            }
            if (bad)
                failed++;
            else
                passed++;
            if (verbose)
                printf("%s %s %s\n", bad ? "fail" : "ok  ", aapc_variants[v].variant,
                       cases[k].name);
            fflush(stdout);
        }
        report_handed(aapc_variants[v].variant, rank);
    }
    if (rank == 0 && only_variant && nrun == 0) {
        printf("alltoall_check: no variant named '%s' in %s\n", only_variant,
               aapc_topology_name);
        failed++;
        shown++;
    }
    long long paths[3], sum[3];
    aapc_hier_alltoall_paths(paths);
    MPI_Reduce(paths, sum, 3, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (shown < failed)
            printf("(%d more failures not shown)\n", failed - shown);
        printf("alltoall_check: aggregated calls: shared segment %lld, several leaders %lld, "
               "MPI_Gather/MPI_Scatter %lld\n", sum[0], sum[1], sum[2]);
        printf("alltoall_check: %d passed, %d failed\n", passed, failed);
        fflush(stdout);
    }
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(all);
    free_types(&c);
    MPI_Finalize();
    return failed == 0 ? 0 : 1;
}
