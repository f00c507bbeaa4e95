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
 * reversed splits. Prints "nbc_check: N checks F failed" and "nbc_ways: library L ours O"
 * (calls begun per way in this rank).
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
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
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
        }
    }
    for (int c = 1; c < 5; c++)
        MPI_Comm_free(&comms[c]);
    long long ways[2];
    aapc_nbc_ways_begun(ways);
    printf("nbc_ways: rank %d library %lld ours %lld\n", me, ways[0], ways[1]);
    int total[2] = {checks, failed}, sum[2];
    MPI_Reduce(total, sum, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0)
        printf("nbc_check: %d checks %d failed\n", sum[0], sum[1]);
    MPI_Finalize();
    return failed != 0;
}
