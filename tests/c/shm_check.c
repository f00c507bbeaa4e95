/*
 * shm_check.c: the shared-memory collectives of runtime_c/shm against the MPI library.
 *
 * Every case runs the same call twice on identical inputs, once through aapc_shm_* (or, when
 * built with -DAAPC_INTERCEPT_SHM, through the intercepted MPI_* entry points) and once through
 * PMPI_*, and compares the whole receive buffers byte for byte, holes of derived datatypes
 * included (both start from the same fill pattern). Cases cover Bcast, Allgather, Alltoall,
 * Reduce and Allreduce with predefined types and ops, a non-commutative user op (2x2 matrix
 * product), derived datatypes (strided vectors, negative lower bound, holey user type; a commutative
 * user op on a strided type), the
 * MPI_IN_PLACE forms, roots changing from call to call, sizes 0 B to 4 MB, and three
 * communicators (a duplicate of MPI_COMM_WORLD, halves of MPI_Comm_split with reversed rank
 * order, thirds). Barrier is checked by its semantics: a shared counter every rank increments
 * before the barrier must read between k*p and (k+1)*p-1 after barrier k.
 *
 * Usage: mpiexec -n P shm_check [--max-bytes N] [--expect-fallback] [--expect-cma 0|1] [-v]
 * (--expect-fallback: run with AAPC_SHM=0; the communicators must then be reported unusable and
 * every call must still match the library, through its PMPI fallback. --expect-cma: after the
 * sized cases of each communicator of more than one rank, aapc_shm_single_copy must report this:
 * 1 when the large Alltoall/Allgather cases took the single-copy path, 0 when it was disabled or
 * failed, e.g. with the test hooks AAPC_SHM_CMA_FAIL_PROBE / AAPC_SHM_CMA_FAIL_READ.)
 * Prints failures ("FAIL case: ...") and finally "shm_check: N passed, M failed"; exit status 0
 * only when M is 0.
 */
#define _POSIX_C_SOURCE 199309L
#include "aapc_shm.h"

#include <mpi.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef AAPC_INTERCEPT_SHM
#define T_BCAST MPI_Bcast
#define T_ALLGATHER MPI_Allgather
#define T_ALLTOALL MPI_Alltoall
#define T_REDUCE MPI_Reduce
#define T_ALLREDUCE MPI_Allreduce
#define T_BARRIER MPI_Barrier
#else
#define T_BCAST aapc_shm_bcast
#define T_ALLGATHER aapc_shm_allgather
#define T_ALLTOALL aapc_shm_alltoall
#define T_REDUCE aapc_shm_reduce
#define T_ALLREDUCE aapc_shm_allreduce
#define T_BARRIER aapc_shm_barrier
#endif

static long max_bytes = 4L << 20;
static int verbose = 0;
static int expect_fallback = 0; /* --expect-fallback: AAPC_SHM=0, every call goes to PMPI */
static int expect_cma = -1;     /* --expect-cma: state of the single-copy path after the cases */
static int n_pass = 0, n_fail = 0, world_rank = 0;

/* ---------- buffers ---------- */

typedef struct {
    char *mem;     /* allocation */
    char *buf;     /* what MPI gets: mem - lb */
    size_t bytes;  /* allocation size */
} tbuf;

static void tb_alloc(tbuf *b, MPI_Datatype t, long count)
{
    MPI_Aint lb = 0, extent = 0;
    MPI_Type_get_extent(t, &lb, &extent);
    MPI_Aint tlb = 0, text = 0;
    MPI_Type_get_true_extent(t, &tlb, &text);
    MPI_Aint lo = tlb < lb ? tlb : lb;
    MPI_Aint hi = count > 0 ? (count - 1) * extent + tlb + text : 0;
    if (hi < lb + count * extent) {
        hi = lb + count * extent;
    }
    b->bytes = (size_t)(hi - lo) + 64;
    b->mem = malloc(b->bytes);
    b->buf = b->mem - lo;
}

static void tb_free(tbuf *b)
{
    free(b->mem);
}

static uint32_t mix(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

static void fill_bytes(tbuf *b, uint32_t seed)
{
    for (size_t i = 0; i < b->bytes; i++) {
        b->mem[i] = (char)(mix(seed * 2654435761U + (uint32_t)i) & 0xff);
    }
}

/* Fill the elements of a buffer of `count` base values with small integers (exact in float
   arithmetic, no overflow with 16 ranks), the rest stays a byte pattern. base is the basic type
   every element of the datatype is made of; positions come from packing. */
static void fill_values(tbuf *b, MPI_Datatype dt, int count, MPI_Datatype base, uint32_t seed)
{
    int size = 0, bsize = 0;
    MPI_Type_size(dt, &size);
    MPI_Type_size(base, &bsize);
    long nvals = (long)count * size / bsize;
    char *packed = malloc((size_t)count * size + 1);
    for (long i = 0; i < nvals; i++) {
        uint32_t r = mix(seed + (uint32_t)i * 7919U);
        int v = (int)(r % 5) - 2; /* -2..2 */
        if (v == 0) {
            v = 1;
        }
        char *p = packed + i * bsize;
        if (base == MPI_INT) {
            int x = v;
            memcpy(p, &x, sizeof x);
        } else if (base == MPI_UNSIGNED) {
            unsigned x = r;
            memcpy(p, &x, sizeof x);
        } else if (base == MPI_DOUBLE) {
            double x = v;
            memcpy(p, &x, sizeof x);
        } else if (base == MPI_FLOAT) {
            float x = (float)v;
            memcpy(p, &x, sizeof x);
        } else if (base == MPI_LONG_LONG) {
            long long x = (long long)r - 2000000000LL;
            memcpy(p, &x, sizeof x);
        } else if (base == MPI_UNSIGNED_CHAR) {
            unsigned char x = (unsigned char)r;
            memcpy(p, &x, sizeof x);
        } else if (base == MPI_SHORT) {
            short x = (short)v;
            memcpy(p, &x, sizeof x);
        }
    }
    int pos = 0;
    MPI_Unpack(packed, count * size, &pos, b->buf, count, dt, MPI_COMM_SELF);
    free(packed);
}

/* ---------- reporting ---------- */

static void report(MPI_Comm comm, const char *desc, int rc_test, int rc_ref, const tbuf *t,
                   const tbuf *r)
{
    int bad = rc_test != rc_ref;
    long where = -1;
    if (!bad && t != NULL) {
        for (size_t i = 0; i < t->bytes; i++) {
            if (t->mem[i] != r->mem[i]) {
                where = (long)i;
                bad = 1;
                break;
            }
        }
    }
    int me, any = 0;
    MPI_Comm_rank(comm, &me);
    if (bad) {
        fprintf(stderr, "FAIL %s: comm rank %d: rc %d vs %d, first differing byte %ld\n", desc, me,
                rc_test, rc_ref, where);
    }
    PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (any) {
        n_fail++;
    } else {
        n_pass++;
    }
    if (verbose && world_rank == 0) {
        printf("%s %s\n", any ? "FAIL" : "ok  ", desc);
    }
}

/* ---------- datatypes and ops ---------- */

typedef struct {
    MPI_Datatype vec_int;   /* 2 ints, stride 3: holes */
    MPI_Datatype neg_lb;    /* ints at byte -8 and 4, lb -12, extent 24 */
    MPI_Datatype vec_u;     /* 2 unsigned, stride 3: holes (user op vadd) */
    MPI_Datatype mat;       /* 4 unsigned: a 2x2 matrix */
    MPI_Datatype mat_holey; /* mat resized to 24 bytes */
    MPI_Op matmul;          /* non-commutative */
    MPI_Op vadd;            /* commutative, on vec_u */
} types_t;

static void matmul_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    MPI_Aint lb, extent;
    MPI_Type_get_extent(*dt, &lb, &extent);
    for (int e = 0; e < *len; e++) {
        unsigned a[4], b[4], c[4];
        memcpy(a, (char *)in + e * extent, sizeof a);
        memcpy(b, (char *)inout + e * extent, sizeof b);
        c[0] = a[0] * b[0] + a[1] * b[2];
        c[1] = a[0] * b[1] + a[1] * b[3];
        c[2] = a[2] * b[0] + a[3] * b[2];
        c[3] = a[2] * b[1] + a[3] * b[3];
        memcpy((char *)inout + e * extent, c, sizeof c);
    }
}

/* sum of the two words of a vec_u element (offsets 0 and 12 bytes) */
static void vadd_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    MPI_Aint lb, extent;
    MPI_Type_get_extent(*dt, &lb, &extent);
    for (int e = 0; e < *len; e++) {
        for (int w = 0; w < 2; w++) {
            unsigned a, b;
            size_t off = (size_t)e * (size_t)extent + (size_t)w * 3 * sizeof(unsigned);
            memcpy(&a, (char *)in + off, sizeof a);
            memcpy(&b, (char *)inout + off, sizeof b);
            b += a;
            memcpy((char *)inout + off, &b, sizeof b);
        }
    }
}

static void make_types(types_t *t)
{
    MPI_Datatype tmp;
    MPI_Type_vector(2, 1, 3, MPI_INT, &t->vec_int);
    MPI_Type_commit(&t->vec_int);
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {-8, 4};
    MPI_Datatype ty[2] = {MPI_INT, MPI_INT};
    MPI_Type_create_struct(2, bl, disp, ty, &tmp);
    MPI_Type_create_resized(tmp, -12, 24, &t->neg_lb);
    MPI_Type_free(&tmp);
    MPI_Type_commit(&t->neg_lb);
    MPI_Type_vector(2, 1, 3, MPI_UNSIGNED, &t->vec_u);
    MPI_Type_commit(&t->vec_u);
    MPI_Type_contiguous(4, MPI_UNSIGNED, &t->mat);
    MPI_Type_commit(&t->mat);
    MPI_Type_create_resized(t->mat, 0, 24, &t->mat_holey);
    MPI_Type_commit(&t->mat_holey);
    MPI_Op_create(matmul_fn, 0, &t->matmul);
    MPI_Op_create(vadd_fn, 1, &t->vadd);
}

/* ---------- cases ---------- */

static void case_bcast(MPI_Comm comm, MPI_Datatype dt, int count, int root, const char *tn,
                       uint32_t seed)
{
    int me;
    MPI_Comm_rank(comm, &me);
    tbuf a, b;
    tb_alloc(&a, dt, count);
    tb_alloc(&b, dt, count);
    fill_bytes(&a, seed + (uint32_t)me);
    fill_bytes(&b, seed + (uint32_t)me);
    int rt = T_BCAST(a.buf, count, dt, root, comm);
    int rr = PMPI_Bcast(b.buf, count, dt, root, comm);
    char desc[160];
    snprintf(desc, sizeof desc, "bcast %s x%d root %d", tn, count, root);
    report(comm, desc, rt, rr, &a, &b);
    tb_free(&a);
    tb_free(&b);
}

static void case_allgather(MPI_Comm comm, MPI_Datatype st, int sc, MPI_Datatype rt, int rc,
                           int in_place, const char *tn, uint32_t seed)
{
    int me, p;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    tbuf s, a, b;
    tb_alloc(&s, st, sc);
    tb_alloc(&a, rt, (long)rc * p);
    tb_alloc(&b, rt, (long)rc * p);
    fill_bytes(&s, seed + (uint32_t)me);
    fill_bytes(&a, seed * 3 + (uint32_t)me);
    fill_bytes(&b, seed * 3 + (uint32_t)me);
    const void *sb = in_place ? MPI_IN_PLACE : s.buf;
    int r1 = T_ALLGATHER(sb, sc, st, a.buf, rc, rt, comm);
    int r2 = PMPI_Allgather(sb, sc, st, b.buf, rc, rt, comm);
    char desc[160];
    snprintf(desc, sizeof desc, "allgather %s x%d%s", tn, rc, in_place ? " in-place" : "");
    report(comm, desc, r1, r2, &a, &b);
    tb_free(&s);
    tb_free(&a);
    tb_free(&b);
}

static void case_alltoall(MPI_Comm comm, MPI_Datatype st, int sc, MPI_Datatype rt, int rc,
                          int in_place, const char *tn, uint32_t seed)
{
    int me, p;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    tbuf s, a, b;
    tb_alloc(&s, st, (long)sc * p);
    tb_alloc(&a, rt, (long)rc * p);
    tb_alloc(&b, rt, (long)rc * p);
    fill_bytes(&s, seed + (uint32_t)me);
    fill_bytes(&a, seed * 3 + (uint32_t)me);
    fill_bytes(&b, seed * 3 + (uint32_t)me);
    const void *sb = in_place ? MPI_IN_PLACE : s.buf;
    int r1 = T_ALLTOALL(sb, sc, st, a.buf, rc, rt, comm);
    int r2 = PMPI_Alltoall(sb, sc, st, b.buf, rc, rt, comm);
    char desc[160];
    snprintf(desc, sizeof desc, "alltoall %s x%d%s", tn, rc, in_place ? " in-place" : "");
    report(comm, desc, r1, r2, &a, &b);
    tb_free(&s);
    tb_free(&a);
    tb_free(&b);
}

/* root < 0: Allreduce */
static void case_reduce(MPI_Comm comm, MPI_Datatype dt, MPI_Datatype base, int count, MPI_Op op,
                        int root, int in_place, const char *tn, uint32_t seed)
{
    int me;
    MPI_Comm_rank(comm, &me);
    tbuf s, a, b;
    tb_alloc(&s, dt, count);
    tb_alloc(&a, dt, count);
    tb_alloc(&b, dt, count);
    fill_bytes(&s, seed + (uint32_t)me);
    fill_bytes(&a, seed * 5 + (uint32_t)me);
    memcpy(b.mem, a.mem, a.bytes);
    fill_values(&s, dt, count, base, seed + 101U * (uint32_t)me);
    int here = in_place && (root < 0 || root == me);
    if (here) { /* contribution in recvbuf */
        fill_values(&a, dt, count, base, seed + 101U * (uint32_t)me);
        memcpy(b.mem, a.mem, a.bytes);
    }
    const void *sb = here ? MPI_IN_PLACE : s.buf;
    int r1, r2;
    if (root < 0) {
        r1 = T_ALLREDUCE(sb, a.buf, count, dt, op, comm);
        r2 = PMPI_Allreduce(sb, b.buf, count, dt, op, comm);
    } else {
        r1 = T_REDUCE(sb, a.buf, count, dt, op, root, comm);
        r2 = PMPI_Reduce(sb, b.buf, count, dt, op, root, comm);
    }
    char desc[160];
    snprintf(desc, sizeof desc, "%s %s x%d root %d%s", root < 0 ? "allreduce" : "reduce", tn,
             count, root, in_place ? " in-place" : "");
    /* non-roots' recvbuf is insignificant for Reduce: compare only where defined */
    report(comm, desc, r1, r2, root < 0 || root == me ? &a : NULL, &b);
    tb_free(&s);
    tb_free(&a);
    tb_free(&b);
}

static void case_barrier(MPI_Comm comm, int rounds)
{
    int me, p;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    _Atomic int *ctr = NULL;
    MPI_Win win;
    MPI_Win_allocate_shared(me == 0 ? 64 : 0, 1, MPI_INFO_NULL, comm, &ctr, &win);
    MPI_Aint sz;
    int du;
    MPI_Win_shared_query(win, 0, &sz, &du, &ctr);
    if (me == 0) {
        atomic_store(ctr, 0);
    }
    PMPI_Barrier(comm);
    int bad = 0, rc = MPI_SUCCESS;
    for (int k = 0; k < rounds && rc == MPI_SUCCESS; k++) {
        if (me == k % p) {
            struct timespec ts = {0, 300000};
            nanosleep(&ts, NULL);
        }
        atomic_fetch_add(ctr, 1);
        rc = T_BARRIER(comm);
        int v = atomic_load(ctr);
        if (v < (k + 1) * p || v >= (k + 2) * p) {
            bad = 1;
        }
    }
    PMPI_Barrier(comm);
    MPI_Win_free(&win);
    char desc[80];
    snprintf(desc, sizeof desc, "barrier x%d", rounds);
    report(comm, desc, rc | bad, MPI_SUCCESS, NULL, NULL);
}

static const long sizes[] = {0, 1, 7, 64, 1000, 4096, 65536, 300000, 1L << 20, 4L << 20};
enum { NSIZES = sizeof sizes / sizeof sizes[0] };

static void run_comm(MPI_Comm comm, const types_t *ty, const char *cname)
{
    int me, p;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    if (verbose && world_rank == 0) {
        printf("-- communicator %s (%d ranks)\n", cname, p);
    }
    int flag = 0;
    aapc_shm_usable(comm, &flag);
    char desc[120];
    snprintf(desc, sizeof desc, "usable %s", cname);
    report(comm, desc, flag != expect_fallback ? MPI_SUCCESS : MPI_ERR_COMM, MPI_SUCCESS, NULL,
           NULL);

    case_barrier(comm, 40);
    uint32_t seed = 1;
    int root = 0;
    for (int si = 0; si < NSIZES; si++) {
        long n = sizes[si];
        if (n > max_bytes) {
            continue;
        }
        seed += 17;
        root = (root + 1) % p;
        /* Bcast: bytes, doubles, a strided derived type; the root changes every call */
        case_bcast(comm, MPI_BYTE, (int)n, root, "byte", seed);
        case_bcast(comm, MPI_DOUBLE, (int)(n / 8), (root + 1) % p, "double", seed + 1);
        case_bcast(comm, ty->vec_int, (int)(n / 8), (root + 2) % p, "vec_int", seed + 2);
        /* Allgather: n bytes received in total */
        int per = (int)(n / p);
        case_allgather(comm, MPI_BYTE, per, MPI_BYTE, per, 0, "byte", seed);
        case_allgather(comm, MPI_INT, per / 4, MPI_INT, per / 4, 1, "int", seed + 1);
        case_allgather(comm, ty->vec_int, per / 8, MPI_INT, 2 * (per / 8), 0, "vec_int->int",
                       seed + 2);
        case_allgather(comm, MPI_INT, 2 * (per / 8), ty->neg_lb, per / 8, 0, "int->neg_lb",
                       seed + 3);
        /* Alltoall: n bytes sent in total per rank */
        int blk = (int)(n / p);
        case_alltoall(comm, MPI_BYTE, blk, MPI_BYTE, blk, 0, "byte", seed);
        case_alltoall(comm, MPI_INT, blk / 4, MPI_INT, blk / 4, 1, "int", seed + 1);
        case_alltoall(comm, ty->vec_int, blk / 8, ty->neg_lb, blk / 8, 0, "vec_int->neg_lb",
                      seed + 2);
        case_alltoall(comm, ty->neg_lb, blk / 8, ty->neg_lb, blk / 8, 1, "neg_lb", seed + 3);
        /* Reductions: n bytes per rank */
        int rr = (root + 3) % p;
        case_reduce(comm, MPI_DOUBLE, MPI_DOUBLE, (int)(n / 8), MPI_SUM, -1, 0, "double-sum",
                    seed);
        case_reduce(comm, MPI_INT, MPI_INT, (int)(n / 4), MPI_SUM, rr, 0, "int-sum", seed + 1);
        case_reduce(comm, MPI_FLOAT, MPI_FLOAT, (int)(n / 4), MPI_MAX, -1, 1, "float-max",
                    seed + 2);
        case_reduce(comm, MPI_LONG_LONG, MPI_LONG_LONG, (int)(n / 8), MPI_MIN, rr, 1,
                    "longlong-min", seed + 3);
        case_reduce(comm, MPI_UNSIGNED_CHAR, MPI_UNSIGNED_CHAR, (int)n, MPI_BXOR, -1, 0,
                    "uchar-bxor", seed + 4);
        case_reduce(comm, MPI_SHORT, MPI_SHORT, (int)(n / 2), MPI_PROD, (rr + 1) % p, 0,
                    "short-prod", seed + 5);
        case_reduce(comm, MPI_INT, MPI_INT, (int)(n / 4), MPI_LAND, -1, 0, "int-land", seed + 6);
        case_reduce(comm, ty->vec_u, MPI_UNSIGNED, (int)(n / 16), ty->vadd, -1, 0, "vec_u-vadd",
                    seed + 7);
        case_reduce(comm, ty->vec_u, MPI_UNSIGNED, (int)(n / 16), ty->vadd, rr, 1, "vec_u-vadd",
                    seed + 8);
        case_reduce(comm, ty->mat, MPI_UNSIGNED, (int)(n / 16), ty->matmul, -1, 0, "mat-matmul",
                    seed + 9);
        case_reduce(comm, ty->mat, MPI_UNSIGNED, (int)(n / 16), ty->matmul, rr, 1,
                    "mat-matmul", seed + 10);
        case_reduce(comm, ty->mat_holey, MPI_UNSIGNED, (int)(n / 24), ty->matmul, -1, 1,
                    "mat_holey-matmul", seed + 11);
    }
    if (expect_cma >= 0) { /* every world rank reports (report() syncs world) */
        int sc = -1;
        aapc_shm_single_copy(comm, &sc);
        snprintf(desc, sizeof desc, "single-copy %s = %d", cname, sc);
        report(comm, desc, p == 1 || sc == expect_cma ? MPI_SUCCESS : MPI_ERR_OTHER, MPI_SUCCESS,
               NULL, NULL);
    }
    /* repeated calls, roots rotating, mixed collectives back to back (slot reuse) */
    for (int k = 0; k < 8; k++) { /* same count on every communicator: report() syncs world */
        int n = k % 2 ? 3000 : 200000;
        if (n > max_bytes) {
            n = (int)max_bytes;
        }
        case_bcast(comm, MPI_BYTE, n, k % p, "byte-repeat", 900U + (uint32_t)k);
        case_reduce(comm, MPI_INT, MPI_INT, n / 4, MPI_SUM, (k + 1) % p, 0, "int-sum-repeat",
                    700U + (uint32_t)k);
        case_allgather(comm, MPI_BYTE, n / p, MPI_BYTE, n / p, 0, "byte-repeat",
                       500U + (uint32_t)k);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--max-bytes") == 0 && i + 1 < argc) {
            max_bytes = atol(argv[++i]);
        } else if (strcmp(argv[i], "--expect-fallback") == 0) {
            expect_fallback = 1;
        } else if (strcmp(argv[i], "--expect-cma") == 0 && i + 1 < argc) {
            expect_cma = atoi(argv[++i]);
        } else if (strcmp(argv[i], "-v") == 0) {
            verbose = 1;
        }
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    int p;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    types_t ty;
    make_types(&ty);

    MPI_Comm dup, half, third;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    run_comm(dup, &ty, "dup(world)");
    MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, p - world_rank, &half);
    run_comm(half, &ty, "split-halves-reversed");
    MPI_Comm_split(MPI_COMM_WORLD, world_rank % 3, world_rank, &third);
    run_comm(third, &ty, "split-thirds");
    MPI_Comm_free(&third);
    MPI_Comm_free(&half);
    /* the state of a freed communicator is gone: a new one works from scratch */
    MPI_Comm_split(MPI_COMM_WORLD, 0, world_rank, &half);
    case_bcast(half, MPI_BYTE, 5000, p - 1, "byte-after-free", 3);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    /* MPI_COMM_WORLD itself, small */
    case_allgather(MPI_COMM_WORLD, MPI_INT, 10, MPI_INT, 10, 0, "world-int", 11);

    MPI_Op_free(&ty.matmul);
    MPI_Type_free(&ty.vec_int);
    MPI_Type_free(&ty.neg_lb);
    MPI_Type_free(&ty.vec_u);
    MPI_Op_free(&ty.vadd);
    MPI_Type_free(&ty.mat);
    MPI_Type_free(&ty.mat_holey);
    if (world_rank == 0) {
        printf("shm_check: %d passed, %d failed\n", n_pass, n_fail);
    }
    MPI_Finalize();
    return n_fail != 0;
}
