/*
 * coll_intercomm.c: MPI_Alltoall and MPI_Alltoallv on inter-communicators, a valid program in
 * the spirit of MPICH's test/mpi/coll/icalltoall.c (written anew), self-checking.
 *
 * Algorithm: MPI_COMM_WORLD's first k = (size - 1) / 2 ranks form the left group, the rest the
 * right group (unequal whenever size is odd or >= 6; 5 ranks: 2 and 3). On the
 * inter-communicator between them, for counts 0, 1, 7, 1000 and 16384 ints:
 *   - left-to-right: the left group sends, the right group receives (its sendcount is 0 and
 *     sendbuf NULL, the left group's recvcount 0 and recvbuf NULL): the case MPICH's icalltoall
 *     tests, where a routine that returns early on a zero local send size loses the data;
 *   - right-to-left: the same the other way;
 *   - both ways at once;
 *   - MPI_Alltoallv both ways with counts that differ per pair (count + 3 * remote + local,
 *     some zero), and one direction only;
 * then the same on the inter-communicator built the other way round (right group as the
 * local leader side), and a dup of it. Every received int is checked.
 * Cost: 5 sizes x 6 calls on p ranks, at most 16384 x p ints per buffer.
 * Output: "coll_intercomm: N passed, M failed" from rank 0; exit status 0 only if M is 0.
 * Run the program unchanged, with a generated routine relinked (-DAAPC_INTERCEPT) or
 * preloaded (LD_PRELOAD=libaapc.so): every call must reach the library's inter-communicator
 * algorithm and give its results.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int wrank, failures, passes;

static int value(int from, int to, int i)
{
    return from * 1000003 + to * 1009 + i;
}

static void check(const char *what, int ok)
{
    int all = 0;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all)
        passes++;
    else
        failures++;
    if (!all && wrank == 0)
        printf("FAIL %s\n", what);
    if (!ok)
        fprintf(stderr, "coll_intercomm: rank %d: %s wrong\n", wrank, what);
}

/* The MPI_COMM_WORLD rank of every rank of the remote group. */
static int *remote_world_ranks(MPI_Comm inter, int rsize)
{
    int *world = malloc(sizeof(int) * (size_t)rsize), *idx = malloc(sizeof(int) * (size_t)rsize);
    MPI_Group rg, wg;
    for (int j = 0; j < rsize; j++)
        idx[j] = j;
    MPI_Comm_remote_group(inter, &rg);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_translate_ranks(rg, rsize, idx, wg, world);
    MPI_Group_free(&rg);
    MPI_Group_free(&wg);
    free(idx);
    return world;
}

/* One Alltoall on inter: sends from `sending` groups, receives on the others' side. */
static int alltoall_case(MPI_Comm inter, int count, int left_sends, int right_sends, int left)
{
    int rsize, lrank, rc, ok = 1;
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Comm_rank(inter, &lrank);
    int sends = left ? left_sends : right_sends, receives = left ? right_sends : left_sends;
    int *sbuf = malloc(sizeof(int) * (size_t)(rsize * count + 1));
    int *rbuf = malloc(sizeof(int) * (size_t)(rsize * count + 1));
    for (int j = 0; j < rsize; j++)
        for (int i = 0; i < count; i++) {
            sbuf[j * count + i] = value(wrank, j, i); /* j: remote rank */
            rbuf[j * count + i] = -1;
        }
    /* the group that sends nothing passes NULL and 0, as icalltoall does */
    rc = MPI_Alltoall(sends ? sbuf : NULL, sends ? count : 0, MPI_INT, receives ? rbuf : NULL,
                      receives ? count : 0, MPI_INT, inter);
    if (rc != MPI_SUCCESS)
        ok = 0;
    int *remote_world = remote_world_ranks(inter, rsize);
    for (int j = 0; receives && j < rsize; j++)
        for (int i = 0; i < count; i++)
            if (rbuf[j * count + i] != value(remote_world[j], lrank, i))
                ok = 0;
    free(remote_world);
    free(sbuf);
    free(rbuf);
    return ok;
}

/* Alltoallv on inter with per-pair counts; both ways or one way. */
static int alltoallv_case(MPI_Comm inter, int base, int left_sends, int right_sends, int left)
{
    int rsize, lrank, ok = 1;
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Comm_rank(inter, &lrank);
    int sends = left ? left_sends : right_sends, receives = left ? right_sends : left_sends;
    int *sc = calloc((size_t)rsize, sizeof(int)), *sd = calloc((size_t)rsize, sizeof(int));
    int *rcn = calloc((size_t)rsize, sizeof(int)), *rd = calloc((size_t)rsize, sizeof(int));
    int stot = 0, rtot = 0;
    for (int j = 0; j < rsize; j++) {
        /* pair (me -> j) and (j -> me): zero when base is 0 and the formula gives 0 */
        sc[j] = sends ? (base == 0 ? 0 : base + 3 * j + lrank) : 0;
        rcn[j] = receives ? (base == 0 ? 0 : base + 3 * lrank + j) : 0;
        if ((j + lrank) % 4 == 3) /* some pairs exchange nothing */
            sc[j] = rcn[j] = 0;
        sd[j] = stot;
        rd[j] = rtot;
        stot += sc[j];
        rtot += rcn[j];
    }
    int *sbuf = malloc(sizeof(int) * (size_t)(stot + 1));
    int *rbuf = malloc(sizeof(int) * (size_t)(rtot + 1));
    for (int j = 0; j < rsize; j++)
        for (int i = 0; i < sc[j]; i++)
            sbuf[sd[j] + i] = value(wrank, j, i);
    for (int i = 0; i < rtot; i++)
        rbuf[i] = -1;
    if (MPI_Alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rcn, rd, MPI_INT, inter) != MPI_SUCCESS)
        ok = 0;
    int *remote_world = remote_world_ranks(inter, rsize);
    for (int j = 0; j < rsize; j++)
        for (int i = 0; i < rcn[j]; i++)
            if (rbuf[rd[j] + i] != value(remote_world[j], lrank, i))
                ok = 0;
    free(remote_world);
    free(sc);
    free(sd);
    free(rcn);
    free(rd);
    free(sbuf);
    free(rbuf);
    return ok;
}

static void all_cases(MPI_Comm inter, int left, const char *label)
{
    static const int counts[] = {0, 1, 7, 1000, 16384};
    char what[160];
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        int n = counts[c];
        snprintf(what, sizeof what, "%s alltoall left-to-right count %d", label, n);
        check(what, alltoall_case(inter, n, 1, 0, left));
        snprintf(what, sizeof what, "%s alltoall right-to-left count %d", label, n);
        check(what, alltoall_case(inter, n, 0, 1, left));
        snprintf(what, sizeof what, "%s alltoall both ways count %d", label, n);
        check(what, alltoall_case(inter, n, 1, 1, left));
        snprintf(what, sizeof what, "%s alltoallv both ways base %d", label, n);
        check(what, alltoallv_case(inter, n, 1, 1, left));
        snprintf(what, sizeof what, "%s alltoallv left-to-right base %d", label, n);
        check(what, alltoallv_case(inter, n, 1, 0, left));
        snprintf(what, sizeof what, "%s alltoallv right-to-left base %d", label, n);
        check(what, alltoallv_case(inter, n, 0, 1, left));
    }
}

int main(int argc, char **argv)
{
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 3) {
        if (wrank == 0)
            fprintf(stderr, "coll_intercomm: run with at least 3 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int k = (size - 1) / 2, left = wrank < k;
    MPI_Comm half, inter, inter2, dup;
    MPI_Comm_split(MPI_COMM_WORLD, left, wrank, &half);
    /* leaders: world rank 0 (left) and world rank k (right) */
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, left ? k : 0, 17, &inter);
    all_cases(inter, left, "left-created");
    /* the same groups, the inter-communicator merged and split again in the other order */
    MPI_Comm merged, half2;
    MPI_Intercomm_merge(inter, left, &merged); /* right group first */
    MPI_Comm_split(merged, left, 0, &half2);
    MPI_Intercomm_create(half2, 0, merged, left ? 0 : size - k, 18, &inter2);
    all_cases(inter2, left, "right-first");
    MPI_Comm_dup(inter2, &dup);
    all_cases(dup, left, "dup");
    MPI_Comm_free(&dup);
    MPI_Comm_free(&inter2);
    MPI_Comm_free(&half2);
    MPI_Comm_free(&merged);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    if (wrank == 0)
        printf("coll_intercomm: %d passed, %d failed\n", passes, failures);
    MPI_Finalize();
    return failures != 0;
}
