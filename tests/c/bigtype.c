/*
 * bigtype.c: MPI_Alltoallv and MPI_Alltoall with a derived datatype larger than INT_MAX bytes
 * (the usual way to move more than 2 GiB per pair with int counts). MPI_Type_size gives
 * MPI_UNDEFINED for it; a routine must count bytes in 64 bits.
 *
 *   bigtype [MIB [va]]   (default 2049: a type of 2049 MiB, 1 MiB more than INT_MAX bytes;
 *                         v: the MPI_Alltoallv test, a: the MPI_Alltoall test, default both)
 *
 * The send type repeats one MiB of the sender MIB times (an hvector of stride 0: a send
 * buffer may be read several times; its extent is 1 MiB), so a rank sends MIB MiB per block
 * from p MiB of memory; the receive type is MIB contiguous MiB. With p ranks:
 *   1. MPI_Alltoallv: one element to every other rank, none to itself (receive buffer (p - 1) x
 *      MIB MiB); every received byte is checked;
 *   2. MPI_Alltoall: one element per block (receive buffer p x MIB MiB); every byte checked.
 * Memory: about p x (p - 1) + p x p MiB x MIB in all, one test after the other (2 ranks and
 * 2049: 4 GiB, then 8 GiB).
 * Output: "bigtype: N passed, M failed" from rank 0; exit status 0 only if M is 0.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MIB = 1 << 20 };

static int rank, p, passes, failures;

static unsigned char byte_of(int from, size_t k)
{
    return (unsigned char)((from * 7 + k * 13 + (k >> 20)) & 0xff);
}

static void check(const char *what, int ok)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok)
        fprintf(stderr, "bigtype: %s wrong on rank %d\n", what, rank);
    if (rank == 0) {
        all ? passes++ : failures++;
        printf("%s %s\n", all ? "ok" : "FAIL", what);
        fflush(stdout);
    }
}

/* Every MiB of an element (mib MiB at `at`) equals the sender's one MiB. */
static int element_ok(const unsigned char *at, int mib, int from)
{
    static unsigned char one[MIB];
    for (size_t k = 0; k < MIB; k++)
        one[k] = byte_of(from, k);
    for (int m = 0; m < mib; m++)
        if (memcmp(at + (size_t)m * MIB, one, MIB) != 0) {
            fprintf(stderr, "bigtype: rank %d: MiB %d of the element from rank %d differs\n",
                    rank, m, from);
            return 0;
        }
    return 1;
}

int main(int argc, char **argv)
{
    int mib = argc > 1 ? atoi(argv[1]) : 2049;
    const char *which = argc > 2 ? argv[2] : "va";
    char what[128];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Datatype one_mib, stype, rtype;
    MPI_Type_contiguous(MIB, MPI_BYTE, &one_mib);
    MPI_Type_create_hvector(mib, 1, 0, one_mib, &stype);
    MPI_Type_contiguous(mib, one_mib, &rtype);
    MPI_Type_commit(&stype);
    MPI_Type_commit(&rtype);
    int small = 0;
    MPI_Count big = 0;
    MPI_Type_size(rtype, &small);
    MPI_Type_size_x(rtype, &big);
    if (rank == 0)
        printf("bigtype: a type of %lld bytes (MPI_Type_size: %d)\n", (long long)big, small);
    unsigned char *s = malloc((size_t)MIB * (size_t)p); /* block j: the j-th MiB */
    for (size_t k = 0; k < (size_t)MIB * (size_t)p; k++)
        s[k] = byte_of(rank, k % MIB);
    size_t elem = (size_t)mib * MIB;

    /* 1. MPI_Alltoallv: one element to every other rank */
    int *sc = calloc((size_t)p, sizeof(int)), *sd = calloc((size_t)p, sizeof(int));
    int *rc = calloc((size_t)p, sizeof(int)), *rd = calloc((size_t)p, sizeof(int));
    for (int j = 0, at = 0; j < p; j++) {
        sc[j] = rc[j] = j != rank;
        sd[j] = j; /* in extents of the send type: the j-th MiB */
        rd[j] = at;
        at += rc[j];
    }
    unsigned char *r = strchr(which, 'v') ? malloc(elem * (size_t)(p - 1)) : NULL;
    int ok = r != NULL;
    if (ok) {
        memset(r, 0xee, elem * (size_t)(p - 1));
        ok = MPI_Alltoallv(s, sc, sd, stype, r, rc, rd, rtype, MPI_COMM_WORLD) == MPI_SUCCESS;
        for (int j = 0; j < p && ok; j++)
            if (j != rank)
                ok = element_ok(r + (size_t)rd[j] * elem, mib, j);
    }
    snprintf(what, sizeof what, "alltoallv of one %d MiB element per pair", mib);
    if (strchr(which, 'v'))
        check(what, ok);
    free(r);

    /* 2. MPI_Alltoall: one element per block */
    r = strchr(which, 'a') ? malloc(elem * (size_t)p) : NULL;
    ok = r != NULL;
    if (ok) {
        memset(r, 0xee, elem * (size_t)p);
        ok = MPI_Alltoall(s, 1, stype, r, 1, rtype, MPI_COMM_WORLD) == MPI_SUCCESS;
        for (int j = 0; j < p && ok; j++)
            ok = element_ok(r + (size_t)j * elem, mib, j);
    }
    snprintf(what, sizeof what, "alltoall of one %d MiB element per block", mib);
    if (strchr(which, 'a'))
        check(what, ok);
    free(r);
    free(s);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    MPI_Type_free(&stype);
    MPI_Type_free(&rtype);
    MPI_Type_free(&one_mib);
    if (rank == 0)
        printf("bigtype: %d passed, %d failed\n", passes, failures);
    MPI_Finalize();
    return failures ? 1 : 0;
}
