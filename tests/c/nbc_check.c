/*
 * nbc_check.c: MPI_Ialltoall and MPI_Alltoall_init of the generated library, byte for byte
 * against PMPI_Alltoall, completed every way an application completes requests: MPI_Wait,
 * one MPI_Waitall with the application's own point-to-point requests, MPI_Testsome and
 * MPI_Testany loops, MPI_Waitany, two calls in flight on one communicator with a blocking
 * MPI_Alltoall between, MPI_IN_PLACE; persistent requests restarted many times (MPI_Start and
 * MPI_Startall mixed with persistent point-to-point requests), queried with
 * MPI_Request_get_status, freed while inactive; the standard's errors (MPI_Cancel of ours,
 * MPI_Request_free and MPI_Start of an active one) returned under MPI_ERRORS_RETURN; and the
 * empty status of a completed collective request. On MPI_COMM_WORLD, a dup, halves, parity and
 * reversed splits. MPI_Ialltoallv and MPI_Alltoallv_init likewise against PMPI_Alltoallv
 * (unequal and zero counts, gaps between the blocks, in place, a type with gaps, restarts), and
 * MPI_Ialltoallv on an inter-communicator of unequal groups.
 * Prints "nbc_check: N checks F failed" and "nbc_ways: rank R library L ours O linear V
 * phases W" (Ialltoall calls begun per way; Alltoallv calls decided per way, in this rank).
 * Usage: nbc_check [--max-bytes N] [--restarts N]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_nbc.h"

static int checks, failed, me;

static void check(int ok, const char *what, const char *comm, int bytes)
{
    checks++;
    if (!ok) {
        failed++;
        fprintf(stderr, "nbc_check: rank %d: %s on %s, %d bytes: FAILED\n", me, what, comm, bytes);
    }
}

static void fill(unsigned char *b, int p, int bytes, int rank, int salt)
{
    for (int j = 0; j < p; j++)
        for (int k = 0; k < bytes; k++)
            b[(size_t)j * bytes + k] = (unsigned char)(rank * 31 + j * 7 + k * 13 + salt);
}

/* The expected receive buffer, from the library itself. */
static void reference(const unsigned char *s, unsigned char *ref, int bytes, MPI_Comm comm)
{
    PMPI_Alltoall(s, bytes, MPI_BYTE, ref, bytes, MPI_BYTE, comm);
}

static int empty_status(const MPI_Status *st)
{
    int n = -1;
    MPI_Get_count(st, MPI_BYTE, &n);
    return st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && n == 0;
}

/* The point-to-point ring the application runs beside the collective. */
static void ring(MPI_Comm comm, int *out, int *in, MPI_Request r[2])
{
    int p, rank;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &rank);
    *out = rank * 1000 + 7;
    MPI_Irecv(in, 1, MPI_INT, (rank + p - 1) % p, 99, comm, &r[0]);
    MPI_Isend(out, 1, MPI_INT, (rank + 1) % p, 99, comm, &r[1]);
}

static int ring_ok(MPI_Comm comm, int in)
{
    int p, rank;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &rank);
    return in == ((rank + p - 1) % p) * 1000 + 7;
}

static void nonblocking(MPI_Comm comm, const char *name, int bytes)
{
    int p, rank;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &rank);
    size_t n = (size_t)p * (size_t)bytes;
    unsigned char *s = malloc(n + 1), *r = malloc(n + 1), *ref = malloc(n + 1);
    unsigned char *s2 = malloc(n + 1), *r2 = malloc(n + 1), *ref2 = malloc(n + 1);
    MPI_Request req[4];
    MPI_Status st[4];
    int out = 0, in = -1;

    /* MPI_Wait, and the empty status */
    fill(s, p, bytes, rank, 1);
    reference(s, ref, bytes, comm);
    memset(r, 0, n);
    MPI_Ialltoall(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE, comm, &req[0]);
    int ours = aapc_nbc_live() > 0; /* a request of ours (the library's status is its own) */
    MPI_Wait(&req[0], &st[0]);
    check(memcmp(r, ref, n) == 0 && req[0] == MPI_REQUEST_NULL, "Ialltoall + Wait", name, bytes);
    check(!ours || empty_status(&st[0]), "empty status", name, bytes);

    /* a derived datatype freed as soon as the call has returned (MPI_Type_free: a call using
       it completes normally) */
    MPI_Datatype block;
    MPI_Type_contiguous(bytes, MPI_BYTE, &block);
    MPI_Type_commit(&block);
    memset(r, 0, n);
    MPI_Ialltoall(s, 1, block, r, 1, block, comm, &req[0]);
    MPI_Type_free(&block);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    check(memcmp(r, ref, n) == 0, "Ialltoall, its datatype freed", name, bytes);

    /* one MPI_Waitall with the application's own requests */
    memset(r, 0, n);
    MPI_Ialltoall(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE, comm, &req[0]);
    ring(comm, &out, &in, &req[1]);
    req[3] = MPI_REQUEST_NULL;
    MPI_Waitall(4, req, st);
    check(memcmp(r, ref, n) == 0 && ring_ok(comm, in), "Waitall mixed", name, bytes);
    check(req[0] == MPI_REQUEST_NULL && req[1] == MPI_REQUEST_NULL, "Waitall nulls", name, bytes);

    /* a MPI_Testsome loop over ours and the application's */
    memset(r, 0, n);
    in = -1;
    MPI_Ialltoall(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE, comm, &req[0]);
    ring(comm, &out, &in, &req[1]);
    int left = 3, idx[4], outc = 0, seen = 0;
    while (left > 0) {
        MPI_Testsome(3, req, &outc, idx, st);
        if (outc == MPI_UNDEFINED)
            break;
        for (int k = 0; k < outc; k++)
            seen |= 1 << idx[k];
        left -= outc;
    }
    check(seen == 7 && memcmp(r, ref, n) == 0 && ring_ok(comm, in), "Testsome loop", name, bytes);

    /* MPI_Waitany until none is active, then MPI_Testany finds none */
    memset(r, 0, n);
    in = -1;
    MPI_Ialltoall(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE, comm, &req[0]);
    ring(comm, &out, &in, &req[1]);
    int got = 0, index = 0, flag = 0;
    for (;;) {
        MPI_Waitany(3, req, &index, &st[0]);
        if (index == MPI_UNDEFINED)
            break;
        got |= 1 << index;
    }
    MPI_Testany(3, req, &index, &flag, &st[0]);
    check(got == 7 && flag && index == MPI_UNDEFINED && memcmp(r, ref, n) == 0,
          "Waitany / Testany", name, bytes);

    /* two in flight on one communicator, a blocking call between, MPI_Test loop */
    fill(s2, p, bytes, rank, 2);
    reference(s2, ref2, bytes, comm);
    memset(r, 0, n);
    memset(r2, 0, n);
    MPI_Ialltoall(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE, comm, &req[0]);
    MPI_Ialltoall(s2, bytes, MPI_BYTE, r2, bytes, MPI_BYTE, comm, &req[1]);
    unsigned char *r3 = malloc(n + 1);
    MPI_Alltoall(s2, bytes, MPI_BYTE, r3, bytes, MPI_BYTE, comm);
    int f0 = 0, f1 = 0;
    while (!f0 || !f1) {
        if (!f1)
            MPI_Test(&req[1], &f1, MPI_STATUS_IGNORE);
        if (!f0)
            MPI_Test(&req[0], &f0, MPI_STATUS_IGNORE);
    }
    check(memcmp(r, ref, n) == 0 && memcmp(r2, ref2, n) == 0 && memcmp(r3, ref2, n) == 0,
          "two in flight + blocking", name, bytes);
    free(r3);

    /* MPI_IN_PLACE */
    memcpy(r, s, n);
    MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, bytes, MPI_BYTE, comm, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    check(memcmp(r, ref, n) == 0, "Ialltoall in place", name, bytes);

    free(s);
    free(r);
    free(ref);
    free(s2);
    free(r2);
    free(ref2);
}

static void persistent(MPI_Comm comm, const char *name, int bytes, int restarts)
{
#ifdef AAPC_HAVE_PERSISTENT_COLL
    int p, rank;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &rank);
    size_t n = (size_t)p * (size_t)bytes;
    unsigned char *s = malloc(n + 1), *r = malloc(n + 1), *ref = malloc(n + 1);
    MPI_Request req[3];
    int out = 0, in = -1, ok = 1, flag = 0;
    MPI_Status st;
    MPI_Alltoall_init(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE, comm, MPI_INFO_NULL, &req[0]);
    MPI_Request_get_status(req[0], &flag, &st);
    check(flag && req[0] != MPI_REQUEST_NULL, "inactive: get_status", name, bytes);
    MPI_Wait(&req[0], &st); /* an inactive request: at once, empty */
    check(req[0] != MPI_REQUEST_NULL && empty_status(&st), "inactive: Wait", name, bytes);
    for (int it = 0; it < restarts; it++) {
        fill(s, p, bytes, rank, 10 + it);
        reference(s, ref, bytes, comm);
        memset(r, 0, n);
        if (it % 2 == 0) {
            MPI_Start(&req[0]);
            MPI_Wait(&req[0], MPI_STATUS_IGNORE);
        } else { /* with the application's persistent point-to-point requests */
            int p2, rk;
            MPI_Comm_size(comm, &p2);
            MPI_Comm_rank(comm, &rk);
            out = rk * 1000 + 7;
            MPI_Recv_init(&in, 1, MPI_INT, (rk + p2 - 1) % p2, 98, comm, &req[1]);
            MPI_Send_init(&out, 1, MPI_INT, (rk + 1) % p2, 98, comm, &req[2]);
            MPI_Startall(3, req);
            MPI_Waitall(3, req, MPI_STATUSES_IGNORE);
            ok &= ring_ok(comm, in);
            MPI_Request_free(&req[1]);
            MPI_Request_free(&req[2]);
        }
        ok &= memcmp(r, ref, n) == 0 && req[0] != MPI_REQUEST_NULL;
    }
    check(ok, "persistent restarts", name, bytes);

    /* errors the standard names, returned to the caller under MPI_ERRORS_RETURN (checked on
       requests of ours: the library's own say what they say) */
    if (aapc_nbc_live() == 0) {
        MPI_Request_free(&req[0]);
        free(s);
        free(r);
        free(ref);
        return;
    }
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    fill(s, p, bytes, rank, 3);
    reference(s, ref, bytes, comm);
    MPI_Start(&req[0]);
    int e1 = MPI_Start(&req[0]), e2 = MPI_Request_free(&req[0]), e3 = MPI_Cancel(&req[0]), c1 = 0,
        c2 = 0, c3 = 0;
    MPI_Error_class(e1, &c1);
    MPI_Error_class(e2, &c2);
    MPI_Error_class(e3, &c3);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    check(c1 == MPI_ERR_REQUEST && c2 == MPI_ERR_REQUEST && c3 == MPI_ERR_REQUEST,
          "errors on an active request", name, bytes);
    check(memcmp(r, ref, n) == 0, "the run despite the errors", name, bytes);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
    MPI_Request_free(&req[0]); /* inactive: freed */
    check(req[0] == MPI_REQUEST_NULL, "freed while inactive", name, bytes);
    free(s);
    free(r);
    free(ref);
#else
    (void)comm;
    (void)name;
    (void)bytes;
    (void)restarts;
#endif
}


/* The bytes rank a sends to rank b (zero for some pairs, unequal for the others). */
static int vcount(int a, int b, int base)
{
    return ((a + 2 * b) % 3) * base + (a == b ? base : 0);
}

/* MPI_Ialltoallv and MPI_Alltoallv_init: byte for byte against PMPI_Alltoallv, with gaps
   between the blocks, mixed with the application's requests, in place, a type with gaps. */
static void vcases(MPI_Comm comm, const char *name, int base, int restarts)
{
    int p, rank;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &rank);
    int *sc = malloc(sizeof(int) * (size_t)p), *sd = malloc(sizeof(int) * (size_t)p);
    int *rc = malloc(sizeof(int) * (size_t)p), *rd = malloc(sizeof(int) * (size_t)p);
    int stot = 0, rtot = 0;
    for (int j = 0; j < p; j++) {
        sc[j] = vcount(rank, j, base);
        rc[j] = vcount(j, rank, base);
        sd[j] = stot;
        rd[j] = rtot + 3; /* a gap before every block */
        stot += sc[j];
        rtot += rc[j] + 3;
    }
    unsigned char *s = malloc((size_t)stot + 1), *r = malloc((size_t)rtot + 1);
    unsigned char *ref = malloc((size_t)rtot + 1);
    for (int k = 0; k < stot; k++)
        s[k] = (unsigned char)(rank * 17 + k * 5);
    memset(ref, 0xEE, (size_t)rtot);
    PMPI_Alltoallv(s, sc, sd, MPI_BYTE, ref, rc, rd, MPI_BYTE, comm);
    MPI_Request req[3];
    int out = 0, in = -1;

    memset(r, 0xEE, (size_t)rtot);
    MPI_Ialltoallv(s, sc, sd, MPI_BYTE, r, rc, rd, MPI_BYTE, comm, &req[0]);
    ring(comm, &out, &in, &req[1]);
    MPI_Waitall(3, req, MPI_STATUSES_IGNORE);
    check(memcmp(r, ref, (size_t)rtot) == 0 && ring_ok(comm, in), "Ialltoallv + Waitall mixed",
          name, base);

    /* two in flight, completed in the other order */
    unsigned char *r2 = malloc((size_t)rtot + 1);
    memset(r, 0xEE, (size_t)rtot);
    memset(r2, 0xEE, (size_t)rtot);
    MPI_Ialltoallv(s, sc, sd, MPI_BYTE, r, rc, rd, MPI_BYTE, comm, &req[0]);
    MPI_Ialltoallv(s, sc, sd, MPI_BYTE, r2, rc, rd, MPI_BYTE, comm, &req[1]);
    MPI_Wait(&req[1], MPI_STATUS_IGNORE);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    check(memcmp(r, ref, (size_t)rtot) == 0 && memcmp(r2, ref, (size_t)rtot) == 0,
          "two Ialltoallv in flight", name, base);
    free(r2);

    /* in place: send and receive the receive layout (symmetric counts needed: rc as both) */
    int *ic = malloc(sizeof(int) * (size_t)p);
    for (int j = 0; j < p; j++)
        ic[j] = vcount(j, rank, base) + vcount(rank, j, base); /* the same seen from either end */
    int itot = 0;
    int *id = malloc(sizeof(int) * (size_t)p);
    for (int j = 0; j < p; j++) {
        id[j] = itot;
        itot += ic[j];
    }
    unsigned char *ib = malloc((size_t)itot + 1), *iref = malloc((size_t)itot + 1);
    for (int k = 0; k < itot; k++)
        ib[k] = (unsigned char)(rank * 13 + k * 7);
    memcpy(iref, ib, (size_t)itot);
    PMPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, iref, ic, id, MPI_BYTE, comm);
    MPI_Ialltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, ib, ic, id, MPI_BYTE, comm,
                   &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    check(memcmp(ib, iref, (size_t)itot) == 0, "Ialltoallv in place", name, base);
    free(ib);
    free(iref);
    free(ic);
    free(id);

    /* a type with gaps: every other byte (the linear exchange) */
    MPI_Datatype gappy;
    MPI_Type_vector(1, 1, 2, MPI_BYTE, &gappy);
    MPI_Datatype resized;
    MPI_Type_create_resized(gappy, 0, 2, &resized);
    MPI_Type_commit(&resized);
    unsigned char *gs = malloc(2 * (size_t)stot + 2), *gr = malloc(2 * (size_t)rtot + 2);
    unsigned char *gref = malloc(2 * (size_t)rtot + 2);
    for (int k = 0; k < 2 * stot; k++)
        gs[k] = (unsigned char)(rank * 3 + k);
    memset(gr, 0xEE, 2 * (size_t)rtot);
    memset(gref, 0xEE, 2 * (size_t)rtot);
    PMPI_Alltoallv(gs, sc, sd, resized, gref, rc, rd, resized, comm);
    MPI_Ialltoallv(gs, sc, sd, resized, gr, rc, rd, resized, comm, &req[0]);
    MPI_Type_free(&resized); /* freed before the call completes: it completes normally */
    MPI_Type_free(&gappy);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    check(memcmp(gr, gref, 2 * (size_t)rtot) == 0, "Ialltoallv, a type with gaps", name, base);

    /* the same bytes with the gaps on the even ranks only (the odd ones send and receive
       MPI_BYTE): the ranks' own findings differ, the way must not */
    MPI_Datatype mine = MPI_BYTE;
    if (rank % 2 == 0) {
        MPI_Type_vector(1, 1, 2, MPI_BYTE, &gappy);
        MPI_Type_create_resized(gappy, 0, 2, &mine);
        MPI_Type_commit(&mine);
        MPI_Type_free(&gappy);
    }
    memset(gr, 0xEE, 2 * (size_t)rtot);
    memset(gref, 0xEE, 2 * (size_t)rtot);
    PMPI_Alltoallv(gs, sc, sd, mine, gref, rc, rd, mine, comm);
    MPI_Ialltoallv(gs, sc, sd, mine, gr, rc, rd, mine, comm, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    check(memcmp(gr, gref, 2 * (size_t)rtot) == 0, "Ialltoallv, gaps on some ranks", name, base);
    if (mine != MPI_BYTE)
        MPI_Type_free(&mine);
    free(gs);
    free(gr);
    free(gref);

#ifdef AAPC_HAVE_PERSISTENT_COLL
    int ok = 1;
    MPI_Alltoallv_init(s, sc, sd, MPI_BYTE, r, rc, rd, MPI_BYTE, comm, MPI_INFO_NULL, &req[0]);
    for (int it = 0; it < restarts; it++) {
        for (int k = 0; k < stot; k++)
            s[k] = (unsigned char)(rank * 17 + k * 5 + it);
        memset(ref, 0xEE, (size_t)rtot);
        PMPI_Alltoallv(s, sc, sd, MPI_BYTE, ref, rc, rd, MPI_BYTE, comm);
        memset(r, 0xEE, (size_t)rtot);
        MPI_Start(&req[0]);
        MPI_Wait(&req[0], MPI_STATUS_IGNORE);
        ok &= memcmp(r, ref, (size_t)rtot) == 0;
    }
    MPI_Request_free(&req[0]);
    check(ok && req[0] == MPI_REQUEST_NULL, "Alltoallv_init restarts", name, base);
#else
    (void)restarts;
#endif
    free(s);
    free(r);
    free(ref);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
}

/* MPI_Ialltoallv on an inter-communicator whose groups differ in size (one rank against the
   others): the library's call, whose count arrays have the remote group's length; the same
   bytes as PMPI_Alltoallv (its count of the bytes once read past the shorter arrays: ASan). */
static void intercomm(int bytes)
{
    int p, wr;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    if (p < 3)
        return;
    MPI_Comm half, inter;
    int low = wr == 0;
    MPI_Comm_split(MPI_COMM_WORLD, low, wr, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, low ? 1 : 0, 77, &inter);
    int remote = 0;
    MPI_Comm_remote_size(inter, &remote);
    int *c = malloc(sizeof(int) * (size_t)remote), *d = malloc(sizeof(int) * (size_t)remote);
    for (int j = 0; j < remote; j++)
        c[j] = bytes, d[j] = j * bytes;
    unsigned char *s = malloc((size_t)remote * bytes), *r = malloc((size_t)remote * bytes);
    unsigned char *ref = malloc((size_t)remote * bytes);
    for (int k = 0; k < remote * bytes; k++)
        s[k] = (unsigned char)(wr * 29 + k * 3);
    PMPI_Alltoallv(s, c, d, MPI_BYTE, ref, c, d, MPI_BYTE, inter);
    MPI_Request req;
    memset(r, 0, (size_t)remote * bytes);
    MPI_Ialltoallv(s, c, d, MPI_BYTE, r, c, d, MPI_BYTE, inter, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    check(memcmp(r, ref, (size_t)remote * bytes) == 0, "Ialltoallv, inter-communicator",
          low ? "inter (1 rank)" : "inter (the others)", bytes);
    free(s), free(r), free(ref), free(c), free(d);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
}

int main(int argc, char **argv)
{
    int max_bytes = 65536, restarts = 100, p;
    MPI_Init(&argc, &argv);
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--max-bytes") == 0)
            max_bytes = atoi(argv[++i]);
        else if (strcmp(argv[i], "--restarts") == 0)
            restarts = atoi(argv[++i]);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm comms[5];
    const char *names[5] = {"world", "dup", "halves", "parity", "reversed"};
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, me < p / 2, me, &comms[2]);
    MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &comms[3]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, p - me, &comms[4]);
    int sizes[] = {1, 100, 4096, 65536, 200000};
    for (int c = 0; c < 5; c++) {
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            if (sizes[k] > max_bytes)
                continue;
            nonblocking(comms[c], names[c], sizes[k]);
            persistent(comms[c], names[c], sizes[k], k == 3 && c < 2 ? restarts : 3);
            vcases(comms[c], names[c], sizes[k] / 2 + 1, k == 3 && c < 2 ? restarts / 5 + 1 : 2);
        }
    }
    for (int c = 1; c < 5; c++)
        MPI_Comm_free(&comms[c]);
    intercomm(100);
    long long ways[2];
    aapc_nbc_ways_begun(ways);
    long long vways[2];
    aapc_nbc_vways(vways);
    printf("nbc_ways: rank %d library %lld ours %lld linear %lld phases %lld\n", me, ways[0],
           ways[1], vways[0], vways[1]);
    int total[2] = {checks, failed}, sum[2];
    MPI_Reduce(total, sum, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0)
        printf("nbc_check: %d checks %d failed\n", sum[0], sum[1]);
    MPI_Finalize();
    return failed != 0;
}
