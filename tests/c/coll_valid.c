/*
 * coll_valid.c: valid MPI_Alltoall and MPI_Alltoallv calls a third-party program makes, in the
 * spirit of MPICH's test/mpi/coll alltoall tests (written anew), self-checking against the
 * values every rank computes for itself (no reference library call).
 *
 * Cases, on MPI_COMM_WORLD, a dup of it, and the halves of a split (which a generated routine
 * hands to the library):
 *   - plain MPI_INT blocks of 0, 1, 7, 1000 and 16384 ints;
 *   - MPI_IN_PLACE (sendcount/sendtype then ignored: passed as -1 and MPI_DATATYPE_NULL);
 *   - MPI_IN_PLACE with a strided vector type whose holes must survive;
 *   - zero-size: count 0 with NULL buffers; a datatype of size 0 (contiguous of 0 ints) with
 *     count 5; MPI_Alltoallv with every count 0;
 *   - derived datatypes: send a vector of ints with gaps and receive contiguous ints; send
 *     contiguous ints and receive a resized struct with a negative lower bound; different send
 *     and receive types with the same signature (2 x MPI_INT vs contiguous(2, MPI_INT));
 *   - MPI_Alltoallv with counts that differ per pair (some 0), displacements in reverse order,
 *     MPI_IN_PLACE, and a vector type;
 *   - the same call repeated with new data (cached state reused).
 * Cost: about 40 calls of at most 16384 ints per block on p ranks.
 * Output: "coll_valid: N passed, M failed" from rank 0; exit status 0 only if M is 0.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int wrank, passes, failures;

static int value(int from, int to, int i)
{
    return from * 1000003 + to * 1009 + i;
}

static void check(MPI_Comm comm, const char *what, int ok)
{
    int all = 0, rank;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    MPI_Comm_rank(comm, &rank);
    if (rank == 0 && !all)
        printf("FAIL %s (communicator of rank %d)\n", what, wrank);
    if (!ok)
        fprintf(stderr, "coll_valid: rank %d: %s wrong\n", wrank, what);
    /* every rank of WORLD counts the same tests: count per communicator's rank 0 */
    if (rank == 0) {
        if (all)
            passes++;
        else
            failures++;
    }
}

/* The world rank of every rank of comm. */
static int *world_of(MPI_Comm comm, int p)
{
    int *idx = malloc(sizeof(int) * (size_t)p), *w = malloc(sizeof(int) * (size_t)p);
    MPI_Group g, wg;
    for (int i = 0; i < p; i++)
        idx[i] = i;
    MPI_Comm_group(comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_translate_ranks(g, p, idx, wg, w);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    free(idx);
    return w;
}

static void plain(MPI_Comm comm, int p, const int *w, int n, int repeat, const char *label)
{
    int me;
    MPI_Comm_rank(comm, &me);
    int *s = malloc(sizeof(int) * (size_t)(p * n + 1)), *r = malloc(sizeof(int) * (size_t)(p * n + 1));
    for (int k = 0; k < repeat; k++) {
        int ok = 1;
        for (int j = 0; j < p; j++)
            for (int i = 0; i < n; i++) {
                s[j * n + i] = value(wrank, w[j], i) + k;
                r[j * n + i] = -1;
            }
        ok &= MPI_Alltoall(s, n, MPI_INT, r, n, MPI_INT, comm) == MPI_SUCCESS;
        for (int j = 0; j < p; j++)
            for (int i = 0; i < n; i++)
                ok &= r[j * n + i] == value(w[j], wrank, i) + k;
        char what[128];
        snprintf(what, sizeof what, "%s int x %d (call %d)", label, n, k + 1);
        check(comm, what, ok);
    }
    free(s);
    free(r);
}

static void in_place(MPI_Comm comm, int p, const int *w, int n, const char *label)
{
    int *r = malloc(sizeof(int) * (size_t)(p * n + 1)), ok = 1;
    for (int j = 0; j < p; j++)
        for (int i = 0; i < n; i++)
            r[j * n + i] = value(wrank, w[j], i);
    ok &= MPI_Alltoall(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, r, n, MPI_INT, comm) == MPI_SUCCESS;
    for (int j = 0; j < p; j++)
        for (int i = 0; i < n; i++)
            ok &= r[j * n + i] == value(w[j], wrank, i);
    char what[128];
    snprintf(what, sizeof what, "%s in-place int x %d", label, n);
    check(comm, what, ok);
    free(r);
}

/* In place with a vector of 3 ints out of every 5 (holes hold -7 and must keep it). */
static void in_place_vector(MPI_Comm comm, int p, const int *w, const char *label)
{
    MPI_Datatype v;
    MPI_Type_vector(1, 3, 5, MPI_INT, &v);
    MPI_Datatype vr;
    MPI_Type_create_resized(v, 0, 5 * sizeof(int), &vr);
    MPI_Type_commit(&vr);
    MPI_Type_free(&v);
    int *r = malloc(sizeof(int) * (size_t)(5 * p)), ok = 1;
    for (int j = 0; j < p; j++)
        for (int i = 0; i < 5; i++)
            r[j * 5 + i] = i < 3 ? value(wrank, w[j], i) : -7;
    ok &= MPI_Alltoall(MPI_IN_PLACE, 0, MPI_INT, r, 1, vr, comm) == MPI_SUCCESS;
    for (int j = 0; j < p; j++)
        for (int i = 0; i < 5; i++)
            ok &= r[j * 5 + i] == (i < 3 ? value(w[j], wrank, i) : -7);
    char what[128];
    snprintf(what, sizeof what, "%s in-place strided vector", label);
    check(comm, what, ok);
    MPI_Type_free(&vr);
    free(r);
}

static void zero_size(MPI_Comm comm, int p, const char *label)
{
    char what[128];
    int ok = MPI_Alltoall(NULL, 0, MPI_INT, NULL, 0, MPI_INT, comm) == MPI_SUCCESS;
    snprintf(what, sizeof what, "%s count 0, NULL buffers", label);
    check(comm, what, ok);

    MPI_Datatype empty;
    MPI_Type_contiguous(0, MPI_INT, &empty);
    MPI_Type_commit(&empty);
    int dummy[4] = {1, 2, 3, 4};
    ok = MPI_Alltoall(dummy, 5, empty, dummy + 2, 5, empty, comm) == MPI_SUCCESS;
    ok &= dummy[0] == 1 && dummy[1] == 2 && dummy[2] == 3 && dummy[3] == 4;
    snprintf(what, sizeof what, "%s zero-size datatype, count 5", label);
    check(comm, what, ok);
    MPI_Type_free(&empty);

    int *c = calloc((size_t)p, sizeof(int)), *d = calloc((size_t)p, sizeof(int));
    ok = MPI_Alltoallv(dummy, c, d, MPI_INT, dummy + 2, c, d, MPI_INT, comm) == MPI_SUCCESS;
    ok &= dummy[2] == 3;
    snprintf(what, sizeof what, "%s alltoallv all counts 0", label);
    check(comm, what, ok);
    free(c);
    free(d);
}

static void derived(MPI_Comm comm, int p, const int *w, const char *label)
{
    char what[128];
    /* send: 4 ints taken one in every 2 (vector), receive 4 contiguous ints */
    MPI_Datatype sv, svr;
    MPI_Type_vector(4, 1, 2, MPI_INT, &sv);
    MPI_Type_create_resized(sv, 0, 8 * sizeof(int), &svr);
    MPI_Type_commit(&svr);
    MPI_Type_free(&sv);
    int *s = malloc(sizeof(int) * (size_t)(8 * p)), *r = malloc(sizeof(int) * (size_t)(4 * p)), ok = 1;
    for (int j = 0; j < p; j++)
        for (int i = 0; i < 8; i++)
            s[j * 8 + i] = i % 2 == 0 ? value(wrank, w[j], i / 2) : -9;
    for (int i = 0; i < 4 * p; i++)
        r[i] = -1;
    ok &= MPI_Alltoall(s, 1, svr, r, 4, MPI_INT, comm) == MPI_SUCCESS;
    for (int j = 0; j < p; j++)
        for (int i = 0; i < 4; i++)
            ok &= r[j * 4 + i] == value(w[j], wrank, i);
    snprintf(what, sizeof what, "%s vector to contiguous", label);
    check(comm, what, ok);
    MPI_Type_free(&svr);
    free(s);
    free(r);

    /* receive: a struct {int at -4 bytes, int at +4 bytes} resized to 12 bytes from -4:
       negative lower bound, a 4-byte hole in every element */
    MPI_Datatype st, str;
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {-4, 4};
    MPI_Datatype types[2] = {MPI_INT, MPI_INT};
    MPI_Type_create_struct(2, bl, disp, types, &st);
    MPI_Type_create_resized(st, -4, 12, &str);
    MPI_Type_commit(&str);
    MPI_Type_free(&st);
    int *sc = malloc(sizeof(int) * (size_t)(2 * p)), *rr = malloc(sizeof(int) * (size_t)(3 * p + 2));
    ok = 1;
    for (int j = 0; j < p; j++)
        for (int i = 0; i < 2; i++)
            sc[j * 2 + i] = value(wrank, w[j], i);
    for (int i = 0; i < 3 * p + 2; i++)
        rr[i] = -5;
    /* element j starts at byte 12 j - 4 of the buffer: base + 1 int */
    ok &= MPI_Alltoall(sc, 2, MPI_INT, rr + 1, 1, str, comm) == MPI_SUCCESS;
    for (int j = 0; j < p; j++) {
        ok &= rr[3 * j] == value(w[j], wrank, 0);     /* at -4 bytes */
        ok &= rr[3 * j + 1] == -5;                    /* the hole */
        ok &= rr[3 * j + 2] == value(w[j], wrank, 1); /* at +4 bytes */
    }
    snprintf(what, sizeof what, "%s contiguous to struct with negative lower bound", label);
    check(comm, what, ok);
    MPI_Type_free(&str);
    free(sc);
    free(rr);

    /* the same signature in different types */
    MPI_Datatype two;
    MPI_Type_contiguous(2, MPI_INT, &two);
    MPI_Type_commit(&two);
    int *a = malloc(sizeof(int) * (size_t)(2 * p)), *b = malloc(sizeof(int) * (size_t)(2 * p));
    ok = 1;
    for (int j = 0; j < p; j++)
        for (int i = 0; i < 2; i++) {
            a[j * 2 + i] = value(wrank, w[j], i);
            b[j * 2 + i] = -1;
        }
    ok &= MPI_Alltoall(a, 2, MPI_INT, b, 1, two, comm) == MPI_SUCCESS;
    for (int j = 0; j < p; j++)
        for (int i = 0; i < 2; i++)
            ok &= b[j * 2 + i] == value(w[j], wrank, i);
    snprintf(what, sizeof what, "%s 2 x MPI_INT to contiguous(2, MPI_INT)", label);
    check(comm, what, ok);
    MPI_Type_free(&two);
    free(a);
    free(b);
}

/* Pair (from, to) exchanges this many ints: differs per pair, 0 for some. */
static int vcount(int from, int to, int base)
{
    return (from + 2 * to) % 5 == 4 ? 0 : base + (from * 7 + to * 3) % 11;
}

static void alltoallv(MPI_Comm comm, int p, const int *w, int base, const char *label)
{
    int me, ok = 1;
    MPI_Comm_rank(comm, &me);
    int *sc = malloc(sizeof(int) * (size_t)p), *sd = malloc(sizeof(int) * (size_t)p);
    int *rc = malloc(sizeof(int) * (size_t)p), *rd = malloc(sizeof(int) * (size_t)p);
    int st = 0, rt = 0;
    for (int j = p - 1; j >= 0; j--) { /* displacements in reverse rank order */
        sc[j] = vcount(me, j, base);
        rc[j] = vcount(j, me, base);
        sd[j] = st;
        rd[j] = rt;
        st += sc[j];
        rt += rc[j];
    }
    int *s = malloc(sizeof(int) * (size_t)(st + 1)), *r = malloc(sizeof(int) * (size_t)(rt + 1));
    for (int j = 0; j < p; j++)
        for (int i = 0; i < sc[j]; i++)
            s[sd[j] + i] = value(wrank, w[j], i);
    for (int i = 0; i < rt; i++)
        r[i] = -1;
    ok &= MPI_Alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, comm) == MPI_SUCCESS;
    for (int j = 0; j < p; j++)
        for (int i = 0; i < rc[j]; i++)
            ok &= r[rd[j] + i] == value(w[j], wrank, i);
    char what[128];
    snprintf(what, sizeof what, "%s alltoallv per-pair counts base %d", label, base);
    check(comm, what, ok);

    /* in place: the receive layout holds the data to send (counts must then be symmetric) */
    int *ic = malloc(sizeof(int) * (size_t)p), *id = malloc(sizeof(int) * (size_t)p), it = 0;
    for (int j = 0; j < p; j++) {
        ic[j] = vcount(me, j, base) + vcount(j, me, base); /* symmetric in (me, j) */
        id[j] = it;
        it += ic[j];
    }
    int *x = malloc(sizeof(int) * (size_t)(it + 1));
    for (int j = 0; j < p; j++)
        for (int i = 0; i < ic[j]; i++)
            x[id[j] + i] = value(wrank, w[j], i);
    ok = MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, x, ic, id, MPI_INT, comm) ==
         MPI_SUCCESS;
    for (int j = 0; j < p; j++)
        for (int i = 0; i < ic[j]; i++)
            ok &= x[id[j] + i] == value(w[j], wrank, i);
    snprintf(what, sizeof what, "%s alltoallv in place base %d", label, base);
    check(comm, what, ok);

    /* a vector type on both sides: every element is 1 int out of 2 */
    MPI_Datatype v, vr;
    MPI_Type_vector(1, 1, 2, MPI_INT, &v);
    MPI_Type_create_resized(v, 0, 2 * sizeof(int), &vr);
    MPI_Type_commit(&vr);
    MPI_Type_free(&v);
    int *s2 = malloc(sizeof(int) * (size_t)(2 * st + 2)), *r2 = malloc(sizeof(int) * (size_t)(2 * rt + 2));
    for (int j = 0; j < p; j++)
        for (int i = 0; i < sc[j]; i++) {
            s2[2 * (sd[j] + i)] = value(wrank, w[j], i);
            s2[2 * (sd[j] + i) + 1] = -3;
        }
    for (int i = 0; i < 2 * rt; i++)
        r2[i] = -4;
    ok = MPI_Alltoallv(s2, sc, sd, vr, r2, rc, rd, vr, comm) == MPI_SUCCESS;
    for (int j = 0; j < p; j++)
        for (int i = 0; i < rc[j]; i++)
            ok &= r2[2 * (rd[j] + i)] == value(w[j], wrank, i) && r2[2 * (rd[j] + i) + 1] == -4;
    snprintf(what, sizeof what, "%s alltoallv strided vector base %d", label, base);
    check(comm, what, ok);
    MPI_Type_free(&vr);
    free(s2);
    free(r2);
    free(x);
    free(ic);
    free(id);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(s);
    free(r);
}

static void suite(MPI_Comm comm, const char *label)
{
    static const int sizes[] = {0, 1, 7, 1000, 16384};
    int p;
    MPI_Comm_size(comm, &p);
    int *w = world_of(comm, p);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        plain(comm, p, w, sizes[k], sizes[k] == 7 ? 3 : 1, label);
    in_place(comm, p, w, 1, label);
    in_place(comm, p, w, 1000, label);
    in_place_vector(comm, p, w, label);
    zero_size(comm, p, label);
    derived(comm, p, w, label);
    alltoallv(comm, p, w, 1, label);
    alltoallv(comm, p, w, 500, label);
    free(w);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    suite(MPI_COMM_WORLD, "world");
    MPI_Comm dup, half;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    suite(dup, "dup");
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, -wrank, &half);
    suite(half, "half");
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    int totals[2] = {passes, failures}, sum[2];
    PMPI_Reduce(totals, sum, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (wrank == 0)
        printf("coll_valid: %d passed, %d failed\n", sum[0], sum[1]);
    MPI_Finalize();
    return wrank == 0 ? sum[1] != 0 : 0;
}
