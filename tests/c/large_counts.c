/*
 * large_counts.c: MPI_Alltoall_c, MPI_Alltoallv_c, MPI_Alltoallw_c and their non-blocking and
 * persistent forms (compiled where mpi.h is MPI 4 or later), MPI_Alltoallw, MPI_Ialltoallw and
 * MPI_Alltoallw_init, byte for byte against the library's own (PMPI_*: both receive buffers
 * start with the same pattern, holes of derived datatypes included), on MPI_COMM_WORLD and on
 * a sub-communicator (the even world ranks), under MPI_ERRORS_RETURN.
 *
 *   large_counts         the cases below
 *   large_counts --valid the valid cases only (the library alone hangs on an error on one rank)
 *   large_counts --big   blocks of 2049 MiB (counts beyond INT_MAX), 2 ranks: about 4 GiB per
 *                        rank (--big-all: one way more)
 *
 * Cases (per communicator; "served": the _c entries reach the routine's MPI_Alltoall /
 * MPI_Alltoallv / MPI_Alltoallw, the non-blocking and persistent ones its MPI_Ialltoall[v] /
 * MPI_Alltoall[v]_init; "fallback": the library's, with a reason). The prefixes nb- and init-
 * name the same case through MPI_Ialltoall*_c (completed in one MPI_Waitall with a ring of
 * point-to-point messages) and MPI_Alltoall*_init_c (started 3 times, each completed so):
 *   a-int (+ nb-, init-), a-vector, MPI_Alltoall_c, int-sized counts (served)
 *   a-inplace
 *   a-zero                          counts 0 (nothing to move)
 *   a-neg, a-below-int-min,         errors on every rank: MPI_ERR_COUNT (the error cases:
 *   a-beyond-2^63                   a-*, v-* and w-neg*, a-beyond-2^63)
 *   v-int, v-inplace (+ nb-, init-) MPI_Alltoallv_c, int-sized counts (served)
 *   v-vector
 *   v-resized-bottom (+ nb-, init-) an int every 12 bytes (lower bound -4) from MPI_BOTTOM, in a
 *                                   static array and a mapping far apart: displacements beyond
 *                                   INT_MAX spread over more, restated as counts / g of a
 *                                   contiguous type of g elements (served)
 *   v-displ-beyond-int (+ nb-,      WORLD only: rank 0 receives 100 bytes at 0 and at 2^31 +
 *   init-)                          128 j (a 2 GiB buffer, only its ends touched): restated as
 *                                   50 elements of 2 bytes (served)
 *   v-displ-no-divisor (+ nb-,      the same at 2^31 + 1 + 128 j: no common divisor (blocking:
 *   init-)                          the library; nb-, init-: every rank the linear exchange)
 *   v-neg-one-rank                  one rank's negative count: MPI_ERR_COUNT on every rank
 *   wc-int, wc-bottom               MPI_Alltoallw_c, from sendbuf, and from MPI_BOTTOM at
 *                                   addresses beyond INT_MAX in one mapping (served)
 *   wc-spread                       blocks in a static array and a mapping: fallback
 *   w-int, w-vector, w-dense-mixed, MPI_Alltoallw whose types reduce (one datatype; dense
 *   w-inplace, w-zero               types of different sizes) (served)
 *   w-mixed-types                   a vector type per peer, each of another stride: fallback
 *   w-displ-not-multiple            one vector type, displacements not multiples of its
 *                                   extent: fallback
 *   w-neg-one-rank                  MPI_ERR_COUNT on every rank
 *   nb-w-int, init-w-int            MPI_Ialltoallw, MPI_Alltoallw_init of MPI_INT (served)
 *   nb-w-mixed, init-w-mixed        the same with a vector type per peer (served; every rank
 *                                   the linear exchange)
 *   init-wc-mixed                   MPI_Alltoallw_init_c: the library's (fallback)
 * --big (2 ranks): big-recv-beyond-int MPI_Alltoall_c, 2049 MiB per block (served);
 *   big-v-beyond-int MPI_Alltoallv_c: the block received from the other rank sent back to it
 *   as MPI_BYTE, counts beyond INT_MAX on both sides (served, restated);
 *   --big-all adds big-nb-beyond-int MPI_Ialltoall_c of the same (blocks beyond INT_MAX bytes:
 *   fallback; about 20 s more, not in the tests).
 * Rank 0 prints "ok NAME" or "FAIL NAME" per case and communicator, then exactly one line
 * "large_counts: N passed, M failed"; the exit status is 0 only if M is 0.
 */
#define _DEFAULT_SOURCE /* mmap's MAP_ANONYMOUS */
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define LARGE (MPI_VERSION >= 4) /* MPI_Alltoall_c and MPI_Alltoallv_c exist */

static int wrank, passes, failures, errors = 1; /* errors: run the error cases */
static const char *where = "world";
static MPI_Comm checking; /* the case's communicator, whose rank 0 is world rank 0 */

static void check(const char *name, int ok)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, checking);
    if (!ok)
        fprintf(stderr, "large_counts: %s/%s wrong on world rank %d\n", where, name, wrank);
    if (wrank == 0) {
        all ? passes++ : failures++;
        printf("%s %s/%s\n", all ? "ok" : "FAIL", where, name);
        fflush(stdout);
    }
}

static void fill(void *buf, size_t len, int seed)
{
    unsigned char *b = buf;
    for (size_t k = 0; k < len; k++)
        b[k] = (unsigned char)((seed * 131 + k * 7 + (k >> 8)) & 0xff);
}

/* Both results succeed and the two receive buffers are equal. */
static int same(int rc_ours, int rc_ref, const void *a, const void *b, size_t len)
{
    if (rc_ours != MPI_SUCCESS || rc_ref != MPI_SUCCESS) {
        fprintf(stderr, "large_counts: world rank %d: rc %d (reference %d)\n", wrank, rc_ours,
                rc_ref);
        return 0;
    }
    return memcmp(a, b, len) == 0;
}

static int is_class(int rc, int cls)
{
    int c = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &c);
    return c == cls;
}

/* The buffers of one case: send, two receive buffers (ours, the reference), in bytes. */
struct bufs {
    char *s, *r1, *r2;
    size_t slen, rlen;
};

static struct bufs bufs_of(size_t slen, size_t rlen, int rank)
{
    struct bufs b = {malloc(slen ? slen : 1), malloc(rlen ? rlen : 1), malloc(rlen ? rlen : 1),
                     slen, rlen};
    fill(b.s, slen, rank + 1);
    fill(b.r1, rlen, 1000 + rank);
    memcpy(b.r2, b.r1, rlen);
    return b;
}

static void bufs_free(struct bufs *b)
{
    free(b->s);
    free(b->r1);
    free(b->r2);
}

/* A vector of 4 blocks of 2 ints at a stride of 3 ints (8 ints of data, extent 11 ints). */
static MPI_Datatype vec(int stride)
{
    MPI_Datatype t;
    MPI_Type_vector(4, 2, stride, MPI_INT, &t);
    MPI_Type_commit(&t);
    return t;
}

/* A ring of point-to-point messages on comm (into q[0], q[1]), completed in the same
   MPI_Waitall as the collective's request. */
static int ring_out, ring_in;

static void ring(MPI_Comm comm, int P, int r, MPI_Request *q)
{
    ring_out = 1000 + r;
    ring_in = -1;
    MPI_Irecv(&ring_in, 1, MPI_INT, (r + P - 1) % P, 77, comm, &q[0]);
    MPI_Isend(&ring_out, 1, MPI_INT, (r + 1) % P, 77, comm, &q[1]);
}

/* The case's receive buffers: reset (ours back to its first contents) and verify (ours equal
   to the reference, which the library's call filled first). */
struct verdict {
    void (*reset)(void *ctx);
    int (*verify)(void *ctx);
    void *ctx;
};

/* Ours after the reference, `how`: 0 blocking; 1 non-blocking, completed in one MPI_Waitall
   with a ring of point-to-point messages; 2 persistent, started 3 times, each start completed
   so (each start must move the data again: the buffer is reset before it). */
static int wait_mixed(MPI_Comm comm, int P, int r, MPI_Request req, const struct verdict *v)
{
    MPI_Request q[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, req};
    ring(comm, P, r, q);
    int ok = MPI_Waitall(3, q, MPI_STATUSES_IGNORE) == MPI_SUCCESS;
    return ok && ring_in == 1000 + (r + P - 1) % P && v->verify(v->ctx);
}

static int persistent_runs(MPI_Comm comm, int P, int r, int rc, MPI_Request req,
                           const struct verdict *v)
{
    int ok = rc == MPI_SUCCESS;
    for (int k = 0; k < 3 && ok; k++) {
        v->reset(v->ctx);
        ok = MPI_Start(&req) == MPI_SUCCESS && wait_mixed(comm, P, r, req, v);
    }
    if (rc == MPI_SUCCESS)
        MPI_Request_free(&req);
    return ok;
}

/* Plain buffers: ours (r1) and the reference (r2) from the same first contents (init). */
struct plain {
    char *r1, *r2, *init;
    size_t len;
};

static void plain_reset(void *ctx)
{
    struct plain *p = ctx;
    memcpy(p->r1, p->init, p->len);
}

static int plain_verify(void *ctx)
{
    struct plain *p = ctx;
    return memcmp(p->r1, p->r2, p->len) == 0;
}

/* The plain verdict of b (whose r1 and r2 start equal), with a copy of its first contents. */
static struct verdict plain_of(struct bufs *b, struct plain *p)
{
    *p = (struct plain){b->r1, b->r2, malloc(b->rlen ? b->rlen : 1), b->rlen};
    memcpy(p->init, b->r1, b->rlen);
    return (struct verdict){plain_reset, plain_verify, p};
}

#if LARGE
static const char *const HOW[3] = {"", "nb-", "init-"}; /* the names of the ways */

static void named(const char *how, const char *name, int ok)
{
    char full[64];
    snprintf(full, sizeof full, "%s%s", how, name);
    check(full, ok);
}

static int run_a(int how, const void *s, MPI_Count sc, MPI_Datatype st, void *rb, MPI_Count rc,
                 MPI_Datatype rt, MPI_Comm comm, int P, int r, const struct verdict *v)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int e;
    v->reset(v->ctx);
    if (how == 0)
        return MPI_Alltoall_c(s, sc, st, rb, rc, rt, comm) == MPI_SUCCESS && v->verify(v->ctx);
    if (how == 1)
        return MPI_Ialltoall_c(s, sc, st, rb, rc, rt, comm, &req) == MPI_SUCCESS &&
               wait_mixed(comm, P, r, req, v);
    e = MPI_Alltoall_init_c(s, sc, st, rb, rc, rt, comm, MPI_INFO_NULL, &req);
    return persistent_runs(comm, P, r, e, req, v);
}

static int run_v(int how, const void *s, const MPI_Count *sc, const MPI_Aint *sd,
                 MPI_Datatype st, void *rb, const MPI_Count *rc, const MPI_Aint *rd,
                 MPI_Datatype rt, MPI_Comm comm, int P, int r, const struct verdict *v)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int e;
    v->reset(v->ctx);
    if (how == 0)
        return MPI_Alltoallv_c(s, sc, sd, st, rb, rc, rd, rt, comm) == MPI_SUCCESS &&
               v->verify(v->ctx);
    if (how == 1)
        return MPI_Ialltoallv_c(s, sc, sd, st, rb, rc, rd, rt, comm, &req) == MPI_SUCCESS &&
               wait_mixed(comm, P, r, req, v);
    e = MPI_Alltoallv_init_c(s, sc, sd, st, rb, rc, rd, rt, comm, MPI_INFO_NULL, &req);
    return persistent_runs(comm, P, r, e, req, v);
}

static void alltoall_c_cases(MPI_Comm comm, int P, int r)
{
    struct bufs b;
    int rc1, rc2;
    /* a-int, nb-a-int, init-a-int */
    b = bufs_of((size_t)P * 300 * 4, (size_t)P * 300 * 4, r);
    struct plain pl;
    struct verdict ver = plain_of(&b, &pl);
    rc2 = PMPI_Alltoall_c(b.s, 300, MPI_INT, b.r2, 300, MPI_INT, comm);
    for (int how = 0; how < 3; how++)
        named(HOW[how], "a-int",
              rc2 == MPI_SUCCESS &&
                  run_a(how, b.s, 300, MPI_INT, b.r1, 300, MPI_INT, comm, P, r, &ver));
    free(pl.init);
    bufs_free(&b);
    /* a-vector: 5 vectors (40 ints) per block, received as 40 ints */
    MPI_Datatype v = vec(3);
    b = bufs_of((size_t)P * 5 * 11 * 4, (size_t)P * 40 * 4, r);
    rc1 = MPI_Alltoall_c(b.s, 5, v, b.r1, 40, MPI_INT, comm);
    rc2 = PMPI_Alltoall_c(b.s, 5, v, b.r2, 40, MPI_INT, comm);
    check("a-vector", same(rc1, rc2, b.r1, b.r2, b.rlen));
    bufs_free(&b);
    /* a-inplace: the send count (beyond int) and type are not looked at */
    b = bufs_of(0, (size_t)P * 64 * 4, r);
    rc1 = MPI_Alltoall_c(MPI_IN_PLACE, (MPI_Count)1 << 40, MPI_DATATYPE_NULL, b.r1, 64, MPI_INT,
                         comm);
    rc2 = PMPI_Alltoall_c(MPI_IN_PLACE, (MPI_Count)1 << 40, MPI_DATATYPE_NULL, b.r2, 64, MPI_INT,
                          comm);
    check("a-inplace", same(rc1, rc2, b.r1, b.r2, b.rlen));
    bufs_free(&b);
    /* a-zero */
    b = bufs_of(16, 16, r);
    rc1 = MPI_Alltoall_c(b.s, 0, MPI_INT, b.r1, 0, MPI_INT, comm);
    check("a-zero", same(rc1, MPI_SUCCESS, b.r1, b.r2, b.rlen));
    if (errors) { /* on every rank */
        rc1 = MPI_Alltoall_c(b.s, -7, MPI_INT, b.r1, 1, MPI_INT, comm);
        check("a-neg", is_class(rc1, MPI_ERR_COUNT));
        rc1 = MPI_Alltoall_c(b.s, -((MPI_Count)1 << 40), MPI_INT, b.r1, 1, MPI_INT, comm);
        check("a-below-int-min", is_class(rc1, MPI_ERR_COUNT));
        rc1 = MPI_Alltoall_c(b.s, (MPI_Count)1 << 62, MPI_INT, b.r1, 1, MPI_INT, comm);
        check("a-beyond-2^63", is_class(rc1, MPI_ERR_COUNT));
    }
    bufs_free(&b);
    MPI_Type_free(&v);
}

/* Blocks in two regions far apart (a static array and a mapping), addressed from MPI_BOTTOM
   with an int at every 12 bytes (lower bound -4): displacements beyond INT_MAX spread over
   more than INT_MAX elements, restated as elements of a contiguous type (served). */
enum { K = 16384 };                /* elements per unit: every displacement a multiple */
static char bss[3][3 * K * 12 * 4]; /* 4 ranks x up to 2 K elements, aligned in it */

struct region {
    char *heap[3], *at[3][2]; /* [send, recv ours, recv reference][static, heap] */
};

/* A mapping of its own: far from the static arrays whatever malloc's thresholds (NULL: none). */
static char *far_map(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static char *aligned(char *p)
{
    MPI_Aint a;
    MPI_Get_address(p, &a);
    return p + ((MPI_Aint)12 * K - a % ((MPI_Aint)12 * K)) % ((MPI_Aint)12 * K);
}

static size_t bottom_len;

static void bottom_reset(void *ctx)
{
    struct region *g = ctx;
    for (int h = 0; h < 2; h++)
        fill(g->at[1][h], bottom_len, 40 + h);
}

static int bottom_verify(void *ctx)
{
    struct region *g = ctx;
    return memcmp(g->at[1][0], g->at[2][0], bottom_len) == 0 &&
           memcmp(g->at[1][1], g->at[2][1], bottom_len) == 0;
}

static void v_resized_bottom(MPI_Comm comm, int P, int r, int how)
{
    size_t len = sizeof bss[0] - 12 * K;
    struct region g;
    MPI_Datatype t, t0;
    MPI_Type_create_resized(MPI_INT, -4, 12, &t0);
    MPI_Type_dup(t0, &t);
    MPI_Type_commit(&t);
    MPI_Count *sc = calloc((size_t)P, sizeof *sc), *rc = calloc((size_t)P, sizeof *rc);
    MPI_Aint *sd = calloc((size_t)P, sizeof *sd), *rd = calloc((size_t)P, sizeof *rd);
    int ok = sc != NULL && rc != NULL && sd != NULL && rd != NULL;
    for (int k = 0; k < 3; k++) {
        g.heap[k] = far_map(len + 12 * K);
        ok &= g.heap[k] != NULL;
        g.at[k][0] = aligned(bss[k]);
        g.at[k][1] = ok ? aligned(g.heap[k]) : NULL;
    }
    if (ok) {
        for (int k = 0; k < 3; k++)
            for (int h = 0; h < 2; h++)
                fill(g.at[k][h], len, k == 0 ? 10 * r + h : 40 + h);
        size_t used[2][2] = {{0, 0}, {0, 0}}; /* elements used per side and region */
        for (int j = 0; j < P; j++) {
            MPI_Aint a;
            sc[j] = rc[j] = (MPI_Count)K * ((r + j) % 2 + 1);
            MPI_Get_address(g.at[0][j % 2] + 12 * used[0][j % 2], &a);
            sd[j] = a / 12;
            used[0][j % 2] += (size_t)sc[j] + K;
            MPI_Get_address(g.at[1][(j + 1) % 2] + 12 * used[1][(j + 1) % 2], &a);
            rd[j] = a / 12;
            used[1][(j + 1) % 2] += (size_t)rc[j] + K;
        }
        MPI_Aint *rd2 = calloc((size_t)P, sizeof *rd2);
        for (int j = 0; rd2 != NULL && j < P; j++) { /* the reference's receive regions */
            MPI_Aint ours, ref;
            MPI_Get_address(g.at[1][(j + 1) % 2], &ours);
            MPI_Get_address(g.at[2][(j + 1) % 2], &ref);
            rd2[j] = rd[j] + (ref - ours) / 12;
        }
        struct verdict ver = {bottom_reset, bottom_verify, &g};
        bottom_len = len;
        ok = rd2 != NULL &&
             PMPI_Alltoallv_c(MPI_BOTTOM, sc, sd, t, MPI_BOTTOM, rc, rd2, t, comm) == MPI_SUCCESS &&
             run_v(how, MPI_BOTTOM, sc, sd, t, MPI_BOTTOM, rc, rd, t, comm, P, r, &ver);
        free(rd2);
    }
    named(HOW[how], "v-resized-bottom", ok);
    for (int k = 0; k < 3; k++)
        if (g.heap[k] != NULL)
            munmap(g.heap[k], len + 12 * K);
    free(sc);
    free(rc);
    free(sd);
    free(rd);
    MPI_Type_free(&t);
    MPI_Type_free(&t0);
}

/* The two ends of a 2 GiB buffer (v-displ-*): t at the far end, h at the start. */
struct ends {
    char *t1, *t2, *h1, *h2;
    size_t span;
};

static void ends_reset(void *ctx)
{
    struct ends *e = ctx;
    fill(e->t1, e->span, 99); /* only the two ends are touched */
    fill(e->h1, 128, 98);
}

static int ends_verify(void *ctx)
{
    struct ends *e = ctx;
    return memcmp(e->t1, e->t2, e->span) == 0 && memcmp(e->h1, e->h2, 128) == 0;
}

static void alltoallv_c_cases(MPI_Comm comm, int P, int r, int world)
{
    MPI_Count *sc = calloc((size_t)P, sizeof *sc), *rc = calloc((size_t)P, sizeof *rc);
    MPI_Aint *sd = calloc((size_t)P, sizeof *sd), *rd = calloc((size_t)P, sizeof *rd);
    MPI_Aint sat = 0, rat = 0;
    for (int j = 0; j < P; j++) { /* r sends 16 x ((r + j) % 3 + 1) ints to j, 2 ints apart */
        sc[j] = 16 * ((r + j) % 3 + 1);
        rc[j] = 16 * ((j + r) % 3 + 1);
        sd[j] = sat;
        rd[j] = rat;
        sat += sc[j] + 2;
        rat += rc[j] + 2;
    }
    int rc1, rc2;
    struct bufs b = bufs_of((size_t)sat * 4, (size_t)rat * 4, r);
    struct plain pl;
    struct verdict ver = plain_of(&b, &pl);
    rc2 = PMPI_Alltoallv_c(b.s, sc, sd, MPI_INT, b.r2, rc, rd, MPI_INT, comm);
    for (int how = 0; how < 3; how++) /* v-int, nb-v-int, init-v-int */
        named(HOW[how], "v-int",
              rc2 == MPI_SUCCESS &&
                  run_v(how, b.s, sc, sd, MPI_INT, b.r1, rc, rd, MPI_INT, comm, P, r, &ver));
    free(pl.init);
    memcpy(b.r1, b.r2, b.rlen);
    /* v-inplace, nb-v-inplace, init-v-inplace: the receive side for both */
    ver = plain_of(&b, &pl);
    rc2 = PMPI_Alltoallv_c(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, b.r2, rc, rd, MPI_INT,
                           comm);
    for (int how = 0; how < 3; how++)
        named(HOW[how], "v-inplace",
              rc2 == MPI_SUCCESS && run_v(how, MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, b.r1,
                                          rc, rd, MPI_INT, comm, P, r, &ver));
    free(pl.init);
    bufs_free(&b);
    /* v-vector: (r + j) % 2 + 1 vectors to j, received as 8 ints each */
    MPI_Datatype v = vec(3);
    for (int j = 0, s = 0, t = 0; j < P; j++) {
        sc[j] = (r + j) % 2 + 1;
        rc[j] = 8 * ((j + r) % 2 + 1);
        sd[j] = s;
        rd[j] = t;
        s += (int)sc[j];
        t += (int)rc[j];
        sat = s;
        rat = t;
    }
    b = bufs_of((size_t)sat * 11 * 4, (size_t)rat * 4, r);
    rc1 = MPI_Alltoallv_c(b.s, sc, sd, v, b.r1, rc, rd, MPI_INT, comm);
    rc2 = PMPI_Alltoallv_c(b.s, sc, sd, v, b.r2, rc, rd, MPI_INT, comm);
    check("v-vector", same(rc1, rc2, b.r1, b.r2, b.rlen));
    bufs_free(&b);
    MPI_Type_free(&v);
    if (world) { /* v-displ-beyond-int: rank 0 receives 100 bytes from 0 at 0 and from j > 0
                    at 2^31 + 128 j (a 2 GiB buffer, only its ends touched): restated as 50
                    elements of 2 bytes (served); v-displ-no-divisor: at 2^31 + 1 + 128 j (no
                    common divisor with 100: the library) */
        MPI_Aint base = (MPI_Aint)1 << 31;
        size_t span = (size_t)P * 128 + 1, rlen = r == 0 ? (size_t)base + span : span;
        char *s = malloc((size_t)P * 100), *r1 = malloc(rlen), *r2 = malloc(rlen);
        for (int odd = 0; odd < 2; odd++)
            for (int how = 0; how < 3; how++) {
                int ok = s != NULL && r1 != NULL && r2 != NULL;
                if (ok) {
                    struct ends e = {r == 0 ? r1 + base : r1, r == 0 ? r2 + base : r2, r1, r2,
                                     span};
                    struct verdict ver = {ends_reset, ends_verify, &e};
                    fill(s, (size_t)P * 100, r + 7 + odd + 2 * how);
                    ends_reset(&e);
                    memcpy(e.t2, e.t1, span);
                    memcpy(r2, r1, 128);
                    for (int j = 0; j < P; j++) {
                        sc[j] = rc[j] = 100;
                        sd[j] = 100 * j;
                        rd[j] = (r == 0 && j > 0 ? base + odd : 0) + 128 * j;
                    }
                    rc2 = PMPI_Alltoallv_c(s, sc, sd, MPI_BYTE, r2, rc, rd, MPI_BYTE, comm);
                    ok = rc2 == MPI_SUCCESS && run_v(how, s, sc, sd, MPI_BYTE, r1, rc, rd,
                                                     MPI_BYTE, comm, P, r, &ver);
                }
                named(HOW[how], odd ? "v-displ-no-divisor" : "v-displ-beyond-int", ok);
            }
        free(s);
        free(r1);
        free(r2);
    }
    for (int how = 0; how < 3; how++)
        v_resized_bottom(comm, P, r, how);
    /* v-neg-one-rank */
    for (int j = 0; j < P; j++) {
        sc[j] = rc[j] = 1;
        sd[j] = rd[j] = j;
    }
    if (r == P - 1)
        sc[0] = -1;
    b = bufs_of((size_t)P * 4, (size_t)P * 4, r);
    if (errors) {
        rc1 = MPI_Alltoallv_c(b.s, sc, sd, MPI_INT, b.r1, rc, rd, MPI_INT, comm);
        check("v-neg-one-rank", is_class(rc1, MPI_ERR_COUNT));
    }
    bufs_free(&b);
    free(sc);
    free(rc);
    free(sd);
    free(rd);
}
/* MPI_Alltoallw_c: (r + j) % 3 + 1 ints to j from sendbuf (mode 0: wc-int, served), from
   MPI_BOTTOM at their addresses in one mapped buffer (1: wc-bottom, beyond INT_MAX, served from
   the least one), or alternately in a static and a mapped one (2: wc-spread, blocks over
   more than 2 GiB apart: the library); received at byte displacements 8 bytes apart. */
static void alltoallw_c_case(const char *name, MPI_Comm comm, int P, int r, int mode)
{
    size_t n = (size_t)P;
    MPI_Count *sc = calloc(n, sizeof *sc), *rc = calloc(n, sizeof *rc);
    MPI_Aint *sd = calloc(n, sizeof *sd), *rd = calloc(n, sizeof *rd);
    MPI_Datatype *st = calloc(n, sizeof *st), *rt = calloc(n, sizeof *rt);
    char *heap = far_map(1 << 20), *in[2] = {mode == 2 ? bss[0] : heap, heap};
    MPI_Aint s = 0, t = 0;
    for (int j = 0; j < P; j++) {
        sc[j] = (r + j) % 3 + 1;
        rc[j] = (j + r) % 3 + 1;
        st[j] = rt[j] = MPI_INT;
        sd[j] = s;
        rd[j] = t;
        s += 4 * sc[j] + 8;
        t += 4 * rc[j] + 8;
    }
    struct bufs b = bufs_of((size_t)s, (size_t)t, r);
    if (heap == NULL) {
        check(name, 0);
        heap = malloc(1 << 20); /* the calls still run on every rank */
    }
    memcpy(heap, b.s, (size_t)s);
    memcpy(bss[0], b.s, (size_t)s);
    for (int j = 0; mode > 0 && j < P; j++)
        MPI_Get_address(in[j % 2] + sd[j], &sd[j]);
    const void *sbuf = mode > 0 ? MPI_BOTTOM : b.s;
    int rc1 = MPI_Alltoallw_c(sbuf, sc, sd, st, b.r1, rc, rd, rt, comm);
    int rc2 = PMPI_Alltoallw_c(sbuf, sc, sd, st, b.r2, rc, rd, rt, comm);
    check(name, same(rc1, rc2, b.r1, b.r2, b.rlen));
    bufs_free(&b);
    munmap(heap, 1 << 20);
    free(sc);
    free(rc);
    free(sd);
    free(rd);
    free(st);
    free(rt);
}
#endif

/* One MPI_Alltoallw against PMPI_Alltoallw (rc: the expected class of both, MPI_SUCCESS). */
static int w_same(const void *s, const int *sc, const int *sd, const MPI_Datatype *st,
                  struct bufs *b, const int *rc, const int *rd, const MPI_Datatype *rt,
                  MPI_Comm comm)
{
    int rc1 = MPI_Alltoallw(s, sc, sd, st, b->r1, rc, rd, rt, comm);
    int rc2 = PMPI_Alltoallw(s, sc, sd, st, b->r2, rc, rd, rt, comm);
    return same(rc1, rc2, b->r1, b->r2, b->rlen);
}

static void alltoallw_cases(MPI_Comm comm, int P, int r)
{
    size_t n = (size_t)P;
    int *sc = calloc(n, sizeof(int)), *sd = calloc(n, sizeof(int));
    int *rc = calloc(n, sizeof(int)), *rd = calloc(n, sizeof(int));
    MPI_Datatype *st = calloc(n, sizeof(MPI_Datatype)), *rt = calloc(n, sizeof(MPI_Datatype));
    MPI_Datatype pair, v = vec(3), vv[3] = {vec(2), vec(3), vec(5)};
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    struct bufs b;
    /* w-int: (r + j) % 3 + 1 ints to j, byte displacements 8 bytes apart */
    int s = 0, t = 0;
    for (int j = 0; j < P; j++) {
        sc[j] = (r + j) % 3 + 1;
        rc[j] = (j + r) % 3 + 1;
        sd[j] = s;
        rd[j] = t;
        s += 4 * sc[j] + 8;
        t += 4 * rc[j] + 8;
        st[j] = rt[j] = MPI_INT;
    }
    b = bufs_of((size_t)s, (size_t)t, r);
    check("w-int", w_same(b.s, sc, sd, st, &b, rc, rd, rt, comm));
    /* w-inplace */
    int rc1 = MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, b.r1, rc, rd, rt, comm);
    int rc2 = PMPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, b.r2, rc, rd, rt, comm);
    check("w-inplace", same(rc1, rc2, b.r1, b.r2, b.rlen));
    bufs_free(&b);
    /* w-vector: one vector type per side, displacements in whole extents (44 bytes) */
    s = t = 0;
    for (int j = 0; j < P; j++) {
        sc[j] = (r + j) % 2 + 1;
        rc[j] = (j + r) % 2 + 1;
        sd[j] = s * 44;
        rd[j] = t * 44;
        s += sc[j] + 1;
        t += rc[j] + 1;
        st[j] = rt[j] = v;
    }
    b = bufs_of((size_t)s * 44, (size_t)t * 44, r);
    check("w-vector", w_same(b.s, sc, sd, st, &b, rc, rd, rt, comm));
    bufs_free(&b);
    /* w-dense-mixed: pair (i, j) moves 2k ints as MPI_INT or k pairs, by parity of i + j;
       displacements 4 bytes apart (no multiple of 8) */
    s = t = 0;
    for (int j = 0; j < P; j++) {
        int k = 3 + (r + j) % 2, odd = (r + j) % 2;
        st[j] = rt[j] = odd ? MPI_INT : pair;
        sc[j] = rc[j] = odd ? 2 * k : k;
        sd[j] = s;
        rd[j] = t;
        s += 8 * k + 4;
        t += 8 * k + 4;
    }
    b = bufs_of((size_t)s, (size_t)t, r);
    check("w-dense-mixed", w_same(b.s, sc, sd, st, &b, rc, rd, rt, comm));
    bufs_free(&b);
    /* w-zero */
    for (int j = 0; j < P; j++) {
        sc[j] = rc[j] = sd[j] = rd[j] = 0;
        st[j] = rt[j] = MPI_INT;
    }
    b = bufs_of(16, 16, r);
    check("w-zero", w_same(b.s, sc, sd, st, &b, rc, rd, rt, comm));
    bufs_free(&b);
    /* w-mixed-types: to j a vector of stride 2, 3 or 5 (by j % 3), received as 8 ints */
    s = t = 0;
    for (int j = 0; j < P; j++) {
        st[j] = vv[j % 3];
        rt[j] = MPI_INT;
        sc[j] = 1;
        rc[j] = 8;
        sd[j] = s;
        rd[j] = t;
        s += 4 * 20;
        t += 4 * 8;
    }
    b = bufs_of((size_t)s, (size_t)t, r);
    check("w-mixed-types", w_same(b.s, sc, sd, st, &b, rc, rd, rt, comm));
    bufs_free(&b);
    /* w-displ-not-multiple: one vector type (extent 44) at displacements 48 bytes apart */
    for (int j = 0; j < P; j++) {
        st[j] = v;
        sd[j] = 48 * j;
    }
    b = bufs_of((size_t)P * 48, (size_t)t, r);
    check("w-displ-not-multiple", w_same(b.s, sc, sd, st, &b, rc, rd, rt, comm));
    /* w-neg-one-rank */
    for (int j = 0; j < P; j++) {
        st[j] = rt[j] = MPI_INT;
        sc[j] = rc[j] = 1;
        sd[j] = rd[j] = 4 * j;
    }
    if (r == P - 1)
        rc[0] = -1;
    if (errors) {
        rc1 = MPI_Alltoallw(b.s, sc, sd, st, b.r1, rc, rd, rt, comm);
        check("w-neg-one-rank", is_class(rc1, MPI_ERR_COUNT));
    }
    bufs_free(&b);
    for (int k = 0; k < 3; k++)
        MPI_Type_free(&vv[k]);
    MPI_Type_free(&v);
    MPI_Type_free(&pair);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(st);
    free(rt);
}

#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define PERSISTENT 1 /* MPI_Alltoallw_init */
#endif

/* MPI_Ialltoallw and MPI_Alltoallw_init, completed in one MPI_Waitall with point-to-point
   messages, persistent ones started 3 times: nb-w-int, init-w-int (MPI_INT: served through
   MPI_Ialltoallv), nb-w-mixed, init-w-mixed (a vector type per peer: served, every rank the
   linear exchange), init-wc-mixed (MPI_Alltoallw_init_c: the library's). */
static void alltoallw_nb_cases(MPI_Comm comm, int P, int r)
{
    size_t n = (size_t)P;
    int *sc = calloc(n, sizeof(int)), *sd = calloc(n, sizeof(int));
    int *rc = calloc(n, sizeof(int)), *rd = calloc(n, sizeof(int));
    MPI_Datatype *st = calloc(n, sizeof(MPI_Datatype)), *rt = calloc(n, sizeof(MPI_Datatype));
    int s = 0, t = 0;
    for (int j = 0; j < P; j++) {
        sc[j] = (r + j) % 3 + 1;
        rc[j] = (j + r) % 3 + 1;
        sd[j] = s;
        rd[j] = t;
        s += 4 * sc[j] + 8;
        t += 4 * rc[j] + 8;
        st[j] = rt[j] = MPI_INT;
    }
    struct bufs b = bufs_of((size_t)s, (size_t)t, r);
    struct plain pl;
    struct verdict ver = plain_of(&b, &pl);
    MPI_Request req = MPI_REQUEST_NULL;
    int ok = PMPI_Alltoallw(b.s, sc, sd, st, b.r2, rc, rd, rt, comm) == MPI_SUCCESS;
    plain_reset(&pl);
    check("nb-w-int", ok && MPI_Ialltoallw(b.s, sc, sd, st, b.r1, rc, rd, rt, comm, &req) ==
                                MPI_SUCCESS &&
                          wait_mixed(comm, P, r, req, &ver));
#ifdef PERSISTENT
    int e = MPI_Alltoallw_init(b.s, sc, sd, st, b.r1, rc, rd, rt, comm, MPI_INFO_NULL, &req);
    check("init-w-int", ok && persistent_runs(comm, P, r, e, req, &ver));
#endif
    free(pl.init);
    bufs_free(&b);
    /* nb-w-mixed, init-w-mixed: to j a vector of stride 2, 3 or 5, received as 8 ints (this
       rank's types do not reduce: every rank the linear exchange) */
    MPI_Datatype vv[3] = {vec(2), vec(3), vec(5)};
    for (int j = 0; j < P; j++) {
        st[j] = vv[j % 3];
        rt[j] = MPI_INT;
        sc[j] = 1;
        rc[j] = 8;
        sd[j] = 80 * j;
        rd[j] = 32 * j;
    }
    b = bufs_of(n * 80, n * 32, r);
    ver = plain_of(&b, &pl);
    ok = PMPI_Alltoallw(b.s, sc, sd, st, b.r2, rc, rd, rt, comm) == MPI_SUCCESS;
    plain_reset(&pl);
    req = MPI_REQUEST_NULL;
    check("nb-w-mixed", ok && MPI_Ialltoallw(b.s, sc, sd, st, b.r1, rc, rd, rt, comm, &req) ==
                                  MPI_SUCCESS &&
                            wait_mixed(comm, P, r, req, &ver));
#ifdef PERSISTENT
    e = MPI_Alltoallw_init(b.s, sc, sd, st, b.r1, rc, rd, rt, comm, MPI_INFO_NULL, &req);
    check("init-w-mixed", ok && persistent_runs(comm, P, r, e, req, &ver));
#endif
#if LARGE
    MPI_Count *csc = calloc(n, sizeof *csc), *crc = calloc(n, sizeof *crc);
    MPI_Aint *csd = calloc(n, sizeof *csd), *crd = calloc(n, sizeof *crd);
    for (int j = 0; j < P; j++) {
        csc[j] = sc[j];
        crc[j] = rc[j];
        csd[j] = sd[j];
        crd[j] = rd[j];
    }
    e = MPI_Alltoallw_init_c(b.s, csc, csd, st, b.r1, crc, crd, rt, comm, MPI_INFO_NULL, &req);
    check("init-wc-mixed", ok && persistent_runs(comm, P, r, e, req, &ver));
    free(csc);
    free(crc);
    free(csd);
    free(crd);
#endif
    for (int k = 0; k < 3; k++)
        MPI_Type_free(&vv[k]);
    free(pl.init);
    bufs_free(&b);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(st);
    free(rt);
}

static void cases(MPI_Comm comm, int world)
{
    int P, r;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &r);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    checking = comm;
#if LARGE
    alltoall_c_cases(comm, P, r);
    alltoallv_c_cases(comm, P, r, world);
    alltoallw_c_case("wc-int", comm, P, r, 0);
    alltoallw_c_case("wc-bottom", comm, P, r, 1);
    alltoallw_c_case("wc-spread", comm, P, r, 2);
#else
    (void)world;
#endif
    alltoallw_cases(comm, P, r);
    alltoallw_nb_cases(comm, P, r);
}

#if LARGE
/* --big: 2049 MiB blocks: the receive side beyond INT_MAX MPI_BYTE, the send side one
   element of a type repeating the sender's j-th MiB 2049 times (an hvector of stride 0). (A
   send side of 2049 Mi elements too was checked once, not in CI: the library packs a type of
   extent 0 element by element, about a minute for 2 GiB.) */
static int big(int ways)
{
    enum { MIB = 1 << 20, N = 2049 };
    int P;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    checking = MPI_COMM_WORLD;
    MPI_Count count = (MPI_Count)N * MIB;
    MPI_Datatype one_mib, rep;
    MPI_Type_contiguous(MIB, MPI_BYTE, &one_mib);
    MPI_Type_create_hvector(N, 1, 0, one_mib, &rep);
    MPI_Type_commit(&rep);
    unsigned char *s = malloc((size_t)P * MIB), *r = malloc((size_t)P * (size_t)count);
    int ok = s != NULL && r != NULL;
    static const char *const names[3] = {"big-recv-beyond-int", "big-v-beyond-int",
                                         "big-nb-beyond-int"};
    /* MPI_Alltoallv_c: the block received from the other rank goes back to it, as count bytes
       (beyond INT_MAX on both sides), into its own block's place */
    int other = 1 - wrank;
    MPI_Count sc[2] = {0, 0}, rc[2] = {0, 0};
    MPI_Aint sd[2] = {0, 0}, rd[2] = {0, 0};
    sc[other] = rc[other] = count;
    for (int way = 0; way < ways && P == 2; way++) {
        int done = ok, seed = 1 + 3 * way; /* every byte differs from the way before's */
        if (done) {
            fill(s, (size_t)P * MIB, wrank + seed);
            if (way != 2) /* way 2 (another seed) finds way 0's data wrong */
                memset(r + (size_t)(way == 1 ? wrank : 0) * (size_t)count, 0xee,
                       (size_t)(way == 1 ? 1 : P) * (size_t)count);
            MPI_Request req = MPI_REQUEST_NULL;
            if (way == 0)
                done = MPI_Alltoall_c(s, 1, rep, r, count, MPI_BYTE, MPI_COMM_WORLD) == MPI_SUCCESS;
            else if (way == 1)
                done = MPI_Alltoallv_c(r + (size_t)other * (size_t)count, sc, sd, MPI_BYTE,
                                       r + (size_t)wrank * (size_t)count, rc, rd, MPI_BYTE,
                                       MPI_COMM_WORLD) == MPI_SUCCESS;
            else
                done = MPI_Ialltoall_c(s, 1, rep, r, count, MPI_BYTE, MPI_COMM_WORLD, &req) ==
                           MPI_SUCCESS &&
                       MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS;
        }
        for (int j = 0; j < P && done; j++) { /* block j: sender j's MiB number wrank, N times */
            int from = seed; /* way 1: block wrank holds what this rank sent in way 0 */
            if (way == 1 && j != wrank)
                continue;
            if (way == 1)
                from = 1;
            static unsigned char want[MIB];
            for (size_t k = 0; k < MIB; k++)
                want[k] = (unsigned char)(((j + from) * 131 + ((size_t)wrank * MIB + k) * 7 +
                                           (((size_t)wrank * MIB + k) >> 8)) & 0xff);
            for (int m = 0; m < N && done; m++)
                done = memcmp(r + (size_t)j * (size_t)count + (size_t)m * MIB, want, MIB) == 0;
        }
        check(names[way], done);
    }
    free(s);
    free(r);
    MPI_Type_free(&rep);
    MPI_Type_free(&one_mib);
    return 0;
}
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    errors = !(argc > 1 && strcmp(argv[1], "--valid") == 0);
    if (argc > 1 && strncmp(argv[1], "--big", 5) == 0) {
#if LARGE
        big(strcmp(argv[1], "--big-all") == 0 ? 3 : 2);
#else
        check("big (no MPI_Alltoall_c in this MPI)", 0);
#endif
    } else {
        cases(MPI_COMM_WORLD, 1);
        MPI_Comm sub;
        MPI_Comm_split(MPI_COMM_WORLD, wrank % 2 ? MPI_UNDEFINED : 0, wrank, &sub);
        where = "even";
        if (sub != MPI_COMM_NULL) {
            cases(sub, 0);
            MPI_Comm_free(&sub);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (wrank == 0)
        printf("large_counts: %d passed, %d failed\n", passes, failures);
    MPI_Bcast(&failures, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return failures ? 1 : 0;
}
