/*
 * sessions.c: an MPI-4 sessions program in the form of OSU micro-benchmarks' `osu_alltoall -c
 * -I` (sessions mode with validation): no MPI_Init, so no MPI_COMM_WORLD or MPI_COMM_SELF; the
 * communicator comes from MPI_Session_init, MPI_Group_from_session_pset("mpi://WORLD") and
 * MPI_Comm_create_from_group. A routine that touches either predefined communicator aborts it.
 *
 * Cases (each validated on every rank against the values it computes itself):
 *   - MPI_Alltoall of MPI_CHAR blocks of 1 B to 64 KiB, doubling, 3 iterations each, as OSU's
 *     loop with -c does;
 *   - MPI_Alltoall with MPI_IN_PLACE, and with a strided vector type;
 *   - MPI_Alltoallv with counts that differ per pair;
 *   - the same on a communicator of the first half of the ranks (MPI_Group_range_incl, then
 *     MPI_Comm_create_from_group), which the routine may schedule or hand to the library;
 *   - an erroneous call (a negative count) under MPI_ERRORS_RETURN: it must return
 *     MPI_ERR_COUNT (the argument checks need a probe communicator there too).
 * The communicators are freed before MPI_Session_finalize, as MPI requires.
 * Output: "sessions: N passed, M failed" from rank 0; exit status 0 only if M is 0.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passes, failures;

static void check(MPI_Comm comm, const char *what, int ok)
{
    int all = 0, rank;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    MPI_Comm_rank(comm, &rank);
    if (!ok)
        fprintf(stderr, "sessions: %s wrong on rank %d\n", what, rank);
    if (rank == 0) {
        if (all)
            passes++;
        else
            failures++;
        if (!all)
            printf("FAIL %s\n", what);
    }
}

static char byte_of(int from, int to, long i)
{
    return (char)((from * 131 + to * 31 + i) & 0x7f);
}

static void run_cases(MPI_Comm comm, const char *label)
{
    int rank, p;
    char what[128];
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    long max = 1L << 16;
    char *s = malloc((size_t)(max * p)), *r = malloc((size_t)(max * p));
    for (long n = 1; n <= max; n *= 2) {
        int ok = 1;
        for (int it = 0; it < 3; it++) {
            for (int j = 0; j < p; j++)
                for (long i = 0; i < n; i++)
                    s[j * n + i] = byte_of(rank, j, i + it);
            memset(r, 0xff, (size_t)(n * p));
            int rc = MPI_Alltoall(s, (int)n, MPI_CHAR, r, (int)n, MPI_CHAR, comm);
            ok &= rc == MPI_SUCCESS;
            for (int j = 0; j < p; j++)
                for (long i = 0; i < n; i++)
                    ok &= r[j * n + i] == byte_of(j, rank, i + it);
        }
        snprintf(what, sizeof what, "%s alltoall %ld B", label, n);
        check(comm, what, ok);
    }
    /* in place, 4 KiB blocks */
    long n = 4096;
    for (int j = 0; j < p; j++)
        for (long i = 0; i < n; i++)
            r[j * n + i] = byte_of(rank, j, i);
    int ok = MPI_Alltoall(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, r, (int)n, MPI_CHAR, comm) ==
             MPI_SUCCESS;
    for (int j = 0; j < p; j++)
        for (long i = 0; i < n; i++)
            ok &= r[j * n + i] == byte_of(j, rank, i);
    snprintf(what, sizeof what, "%s alltoall in place", label);
    check(comm, what, ok);
    /* a strided vector: every other byte of 2 x 100 */
    MPI_Datatype vec;
    MPI_Type_vector(100, 1, 2, MPI_CHAR, &vec);
    MPI_Type_commit(&vec);
    for (int j = 0; j < p; j++)
        for (long i = 0; i < 200; i++)
            s[j * 200 + i] = byte_of(rank, j, i);
    memset(r, 0, (size_t)(100 * p));
    MPI_Aint lb, ext;
    MPI_Type_get_extent(vec, &lb, &ext);
    MPI_Datatype vec1;
    MPI_Type_create_resized(vec, 0, 200, &vec1);
    MPI_Type_commit(&vec1);
    ok = MPI_Alltoall(s, 1, vec1, r, 100, MPI_CHAR, comm) == MPI_SUCCESS;
    for (int j = 0; j < p; j++)
        for (long i = 0; i < 100; i++)
            ok &= r[j * 100 + i] == byte_of(j, rank, 2 * i);
    snprintf(what, sizeof what, "%s alltoall vector", label);
    check(comm, what, ok);
    MPI_Type_free(&vec);
    MPI_Type_free(&vec1);
    /* Alltoallv: rank i sends (i + j) % 5 * 100 bytes to j */
    int *sc = malloc(sizeof(int) * (size_t)p), *sd = malloc(sizeof(int) * (size_t)p);
    int *rcn = malloc(sizeof(int) * (size_t)p), *rd = malloc(sizeof(int) * (size_t)p);
    int so = 0, ro = 0;
    for (int j = 0; j < p; j++) {
        sc[j] = (rank + j) % 5 * 100;
        rcn[j] = (j + rank) % 5 * 100;
        sd[j] = so;
        rd[j] = ro;
        so += sc[j];
        ro += rcn[j];
        for (int i = 0; i < sc[j]; i++)
            s[sd[j] + i] = byte_of(rank, j, i);
    }
    memset(r, 0, (size_t)ro);
    ok = MPI_Alltoallv(s, sc, sd, MPI_CHAR, r, rcn, rd, MPI_CHAR, comm) == MPI_SUCCESS;
    for (int j = 0; j < p; j++)
        for (int i = 0; i < rcn[j]; i++)
            ok &= r[rd[j] + i] == byte_of(j, rank, i);
    snprintf(what, sizeof what, "%s alltoallv", label);
    check(comm, what, ok);
    /* a misuse must come back as an error, not abort on a missing MPI_COMM_SELF */
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int rc = MPI_Alltoall(s, -1, MPI_CHAR, r, 1, MPI_CHAR, comm), cls = -1;
    MPI_Error_class(rc, &cls);
    snprintf(what, sizeof what, "%s negative count returns MPI_ERR_COUNT", label);
    check(comm, what, cls == MPI_ERR_COUNT);
    free(sc);
    free(sd);
    free(rcn);
    free(rd);
    free(s);
    free(r);
}

int main(void)
{
    MPI_Session session;
    MPI_Group world, half;
    MPI_Comm comm, sub = MPI_COMM_NULL;
    int init = 1, rank, p;
    if (MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &session) != MPI_SUCCESS)
        return 2;
    MPI_Initialized(&init);
    MPI_Group_from_session_pset(session, "mpi://WORLD", &world);
    MPI_Comm_create_from_group(world, "aapcgen.tests.sessions", MPI_INFO_NULL,
                               MPI_ERRORS_ARE_FATAL, &comm);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    run_cases(comm, "session");
    int range[1][3] = {{0, p / 2 - 1, 1}};
    if (p >= 4) {
        MPI_Group_range_incl(world, 1, range, &half);
        if (rank < p / 2) {
            MPI_Comm_create_from_group(half, "aapcgen.tests.sessions.half", MPI_INFO_NULL,
                                       MPI_ERRORS_ARE_FATAL, &sub);
            run_cases(sub, "half");
            MPI_Comm_free(&sub);
        }
        MPI_Group_free(&half);
    }
    check(comm, "MPI_Initialized is false in a sessions program", !init);
    MPI_Barrier(comm);
    if (rank == 0) {
        printf("sessions: %d passed, %d failed\n", passes, failures);
        fflush(stdout);
    }
    int bad = failures;
    MPI_Bcast(&bad, 1, MPI_INT, 0, comm);
    MPI_Comm_free(&comm);
    MPI_Group_free(&world);
    MPI_Session_finalize(&session);
    return bad ? 1 : 0;
}
