/*
 * coll_check.c: the library's MPI_Bcast, MPI_Allgather, MPI_Allreduce, MPI_Reduce, MPI_Barrier,
 * MPI_Scatter and MPI_Scatterv (runtime_c/coll/, compiled in with -DAAPC_INTERCEPT and a
 * generated directory) against the MPI library's own (PMPI_*) or the closed-form result, on
 * MPI_COMM_WORLD, a dup, the ranks split by parity (round robin over the machines), halves, a
 * reversed split, a subset without rank 0, and on 4 or more ranks the rows and the columns of a
 * 2-D process grid (MPI_Cart_create, MPI_Cart_sub; a prime number of ranks leaves the last
 * out): every root, zero counts, MPI_IN_PLACE, strided datatypes, Scatterv's blocks in reverse
 * rank order with gaps and empty blocks, predefined operations on int, double and double-int
 * pairs, a non-commutative user operation (2x2 matrix products), and the barrier's ordering (no
 * rank leaves before every rank entered).
 * Where the ranks run is set by AAPC_MACHINE per rank; AAPC_BCAST=hier ... force ours;
 * COLL_CHECK_ONLY=bcast,allgather,reductions,barrier,scatter,scatterv runs only those cases,
 * COLL_CHECK_COMMS=world,dup,parity,half,reversed,subset,rows,columns only on those
 * communicators (the others are still made and freed).
 * Output: "coll_check: N passed, M failed" on rank 0 of MPI_COMM_WORLD; exit status 1 on any
 * failure.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int passed, failed, wrank;

static void check(MPI_Comm comm, int ok, const char *what, int a, int b)
{
    int all = 0;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, comm);
    int crank = 0;
    PMPI_Comm_rank(comm, &crank);
    if (crank == 0) { /* counted once per communicator */
        if (all)
            passed++;
        else
            failed++;
    }
    if (!ok)
        fprintf(stderr, "coll_check: world rank %d: %s (%d, %d) wrong\n", wrank, what, a, b);
}

static int value(int who, int i, int salt)
{
    return (who + 1) * 1000003 + i * 7 + salt;
}

static void test_bcast(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int counts[] = {0, 1, 5, 257, 20000, 100000};
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
        int n = counts[c];
        int *buf = malloc(sizeof *buf * (size_t)(n + 1));
        for (int root = 0; root < size; root++) {
            if (n > 300 && root != size - 1 && root != 0)
                continue; /* larger messages: two roots */
            for (int i = 0; i < n; i++)
                buf[i] = rank == root ? value(root, i, n) : -1;
            buf[n] = -7; /* past the message: untouched */
            MPI_Bcast(buf, n, MPI_INT, root, comm);
            int ok = buf[n] == -7;
            for (int i = 0; i < n && ok; i++)
                ok = buf[i] == value(root, i, n);
            check(comm, ok, "bcast count, root", n, root);
        }
        free(buf);
    }
    /* a strided datatype: every other int (extent 79 ints), the gaps untouched */
    MPI_Datatype every_other;
    MPI_Type_vector(40, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    int strided[3 * 79], data[3 * 79] = {0};
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < 40; j++)
            data[79 * k + 2 * j] = 1;
    for (int root = 0; root < size; root++) {
        for (int i = 0; i < 3 * 79; i++)
            strided[i] = !data[i] ? -5 : rank == root ? value(root, i, 3) : -1;
        MPI_Bcast(strided, 3, every_other, root, comm);
        int ok = 1;
        for (int i = 0; i < 3 * 79 && ok; i++)
            ok = strided[i] == (data[i] ? value(root, i, 3) : -5);
        check(comm, ok, "bcast strided, root", 3, root);
    }
    MPI_Type_free(&every_other);
}

static void test_allgather(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int counts[] = {0, 1, 3, 300, 5000};
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
        int n = counts[c];
        for (int inplace = 0; inplace < 2; inplace++) {
            int *mine = malloc(sizeof *mine * (size_t)(n + 1));
            int *all = malloc(sizeof *all * (size_t)(n * size + 1));
            for (int i = 0; i < n; i++)
                mine[i] = value(rank, i, n);
            for (int i = 0; i < n * size; i++)
                all[i] = inplace && i / n == rank ? value(rank, i % n, n) : -1;
            all[n * size] = -7;
            if (inplace)
                MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, n, MPI_INT, comm);
            else
                MPI_Allgather(mine, n, MPI_INT, all, n, MPI_INT, comm);
            int ok = all[n * size] == -7;
            for (int i = 0; i < n * size && ok; i++)
                ok = all[i] == value(i / n, i % n, n);
            check(comm, ok, "allgather count, in place", n, inplace);
            free(mine);
            free(all);
        }
    }
    /* received as one contiguous type of 7 ints per rank, sent as 7 ints */
    MPI_Datatype seven;
    MPI_Type_contiguous(7, MPI_INT, &seven);
    MPI_Type_commit(&seven);
    int mine[7], *all = malloc(sizeof *all * (size_t)(7 * size));
    for (int i = 0; i < 7; i++)
        mine[i] = value(rank, i, 77);
    MPI_Allgather(mine, 7, MPI_INT, all, 1, seven, comm);
    int ok = 1;
    for (int i = 0; i < 7 * size && ok; i++)
        ok = all[i] == value(i / 7, i % 7, 77);
    check(comm, ok, "allgather contiguous type", 7, 0);
    free(all);
    MPI_Type_free(&seven);
}

/* 2x2 matrices of unsigned ints, multiplied (wrapping): not commutative. */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    unsigned *a = in, *b = inout;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        unsigned c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                         a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
        memcpy(b, c, sizeof c);
    }
}

/* One reduction on comm against PMPI_Allreduce / PMPI_Reduce: kind 0 int SUM, 1 double MAX,
   2 double-int MAXLOC, 3 matrices (non-commutative). root < 0: Allreduce. */
static void one_reduction(MPI_Comm comm, int kind, int n, int root, int inplace, MPI_Op matop,
                          MPI_Datatype mat)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    struct di {
        double d;
        int i;
    };
    size_t elem = kind == 0 ? sizeof(int) : kind == 1 ? sizeof(double)
                                          : kind == 2 ? sizeof(struct di)
                                                      : 4 * sizeof(unsigned);
    MPI_Datatype t = kind == 0   ? MPI_INT
                     : kind == 1 ? MPI_DOUBLE
                     : kind == 2 ? MPI_DOUBLE_INT
                                 : mat;
    MPI_Op op = kind == 0 ? MPI_SUM : kind == 1 ? MPI_MAX : kind == 2 ? MPI_MAXLOC : matop;
    unsigned char *s = malloc(elem * (size_t)n), *r = malloc(elem * (size_t)n);
    unsigned char *ref = malloc(elem * (size_t)n);
    for (int i = 0; i < n; i++) {
        int v = value(rank, i, kind) % 1000;
        if (kind == 0)
            ((int *)s)[i] = v;
        else if (kind == 1)
            ((double *)s)[i] = v * 0.5;
        else if (kind == 2)
            ((struct di *)s)[i] = (struct di){(double)((v * 31) % 17), rank};
        else
            for (int j = 0; j < 4; j++)
                ((unsigned *)s)[4 * i + j] = (unsigned)(v + j * 3 + (j == 3));
    }
    memset(r, 0xab, elem * (size_t)n);
    if (root < 0) {
        PMPI_Allreduce(s, ref, n, t, op, comm);
        if (inplace) {
            memcpy(r, s, elem * (size_t)n);
            MPI_Allreduce(MPI_IN_PLACE, r, n, t, op, comm);
        } else {
            MPI_Allreduce(s, r, n, t, op, comm);
        }
    } else {
        PMPI_Reduce(s, ref, n, t, op, root, comm);
        if (inplace && rank == root) {
            memcpy(r, s, elem * (size_t)n);
            MPI_Reduce(MPI_IN_PLACE, r, n, t, op, root, comm);
        } else {
            MPI_Reduce(s, r, n, t, op, root, comm);
        }
    }
    int ok = 1;
    if (root < 0 || rank == root)
        for (int i = 0; i < n && ok; i++) {
            if (kind == 2) { /* the pair's padding is not the result */
                struct di *a = (struct di *)r + i, *b = (struct di *)ref + i;
                ok = a->d == b->d && a->i == b->i;
            } else {
                ok = memcmp(r + elem * (size_t)i, ref + elem * (size_t)i, elem) == 0;
            }
        }
    check(comm, ok, root < 0 ? "allreduce kind, count" : "reduce kind, count", kind, n);
    free(s);
    free(r);
    free(ref);
}

static void test_reductions(MPI_Comm comm)
{
    int size;
    MPI_Comm_size(comm, &size);
    MPI_Op matop;
    MPI_Op_create(matmul, 0, &matop);
    MPI_Datatype mat;
    MPI_Type_contiguous(4, MPI_UNSIGNED, &mat);
    MPI_Type_commit(&mat);
    const int counts[] = {1, 100, 6000}; /* 6000 double-int pairs: 72 KB */
    for (int kind = 0; kind < 4; kind++)
        for (size_t c = 0; c < sizeof counts / sizeof *counts; c++)
            for (int inplace = 0; inplace < 2; inplace++) {
                one_reduction(comm, kind, counts[c], -1, inplace, matop, mat);
                for (int root = 0; root < size; root++) /* every root of short vectors */
                    if (counts[c] == 1 || root == size - 1 || (root == 0 && counts[c] < 6000))
                        one_reduction(comm, kind, counts[c], root, inplace, matop, mat);
            }
    MPI_Type_free(&mat);
    MPI_Op_free(&matop);
}

static void test_scatter(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int counts[] = {0, 1, 5, 300, 5000};
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
        int n = counts[c];
        int *all = malloc(sizeof *all * (size_t)(n * size + 1));
        int *mine = malloc(sizeof *mine * (size_t)(n + 1));
        for (int root = 0; root < size; root++) {
            if (n > 5 && root != size - 1 && root != 0)
                continue; /* larger blocks: two roots */
            for (int inplace = 0; inplace < 2; inplace++) {
                for (int i = 0; i < n * size; i++)
                    all[i] = rank == root ? value(i / n, i % n, n + root) : -1;
                for (int i = 0; i <= n; i++)
                    mine[i] = -7;
                if (inplace && rank == root)
                    MPI_Scatter(all, n, MPI_INT, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, root, comm);
                else
                    MPI_Scatter(all, n, MPI_INT, mine, n, MPI_INT, root, comm);
                int ok = mine[n] == -7;
                for (int i = 0; i < n && ok; i++)
                    ok = inplace && rank == root ? mine[i] == -7 && all[rank * n + i] ==
                                                                      value(rank, i, n + root)
                                                 : mine[i] == value(rank, i, n + root);
                check(comm, ok, "scatter count, root", n, root);
            }
        }
        free(all);
        free(mine);
    }
    /* sent as every other int of a strided type (extent 79 ints), received as 40 ints */
    MPI_Datatype every_other;
    MPI_Type_vector(40, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    int *strided = malloc(sizeof *strided * (size_t)(79 * size)), got[41];
    for (int root = 0; root < size; root++) {
        for (int i = 0; i < 79 * size; i++)
            strided[i] = rank == root ? value(i / 79, i % 79, 5) : -1;
        got[40] = -7;
        MPI_Scatter(strided, 1, every_other, got, 40, MPI_INT, root, comm);
        int ok = got[40] == -7;
        for (int j = 0; j < 40 && ok; j++)
            ok = got[j] == value(rank, 2 * j, 5);
        check(comm, ok, "scatter strided, root", 40, root);
    }
    free(strided);
    MPI_Type_free(&every_other);
}

/* Scatterv: rank q gets len(q) ints (zeros among them), its block placed at decreasing
   addresses with a gap of 3 ints, from every root, in place at the root; then large blocks. */
static int vlen(int q, int salt)
{
    return q % 3 == 1 ? 0 : (q * 7 + salt) % 11 + salt / 10 * 1000;
}

static void test_scatterv(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *counts = malloc(sizeof *counts * (size_t)size * 2), *displs = counts + size;
    for (int salt = 1; salt <= 21; salt += 10) { /* 1: short blocks; 21: about 2000 ints */
        int total = 0;
        for (int q = size - 1; q >= 0; q--) { /* the last rank's block first */
            counts[q] = vlen(q, salt);
            displs[q] = total;
            total += counts[q] + 3;
        }
        int *all = malloc(sizeof *all * (size_t)(total + 1));
        int want = vlen(rank, salt), *mine = malloc(sizeof *mine * (size_t)(want + 1));
        for (int root = 0; root < size; root++) {
            if (salt > 1 && root != size - 1 && root != 0)
                continue;
            for (int inplace = 0; inplace < 2; inplace++) {
                for (int q = 0; q < size; q++)
                    for (int i = 0; i < counts[q]; i++)
                        all[displs[q] + i] = rank == root ? value(q, i, salt + root) : -1;
                for (int i = 0; i <= want; i++)
                    mine[i] = -7;
                if (inplace && rank == root)
                    MPI_Scatterv(all, counts, displs, MPI_INT, MPI_IN_PLACE, 0, MPI_INT, root,
                                 comm);
                else
                    MPI_Scatterv(all, counts, displs, MPI_INT, want ? mine : NULL, want, MPI_INT,
                                 root, comm);
                int ok = mine[want] == -7;
                for (int i = 0; i < want && ok; i++)
                    ok = inplace && rank == root ? mine[i] == -7
                                                 : mine[i] == value(rank, i, salt + root);
                check(comm, ok, "scatterv salt, root", salt, root);
            }
        }
        free(all);
        free(mine);
    }
    free(counts);
}

/* A clock every process of the host shares (Open MPI's MPI_Wtime counts from each process's
   start). */
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void test_barrier(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int round = 0; round < 3; round++) {
        struct timespec nap = {0, 1000000L * ((rank + round) % 3) * 3};
        nanosleep(&nap, NULL);
        double in = now();
        MPI_Barrier(comm);
        double out = now(), latest_in = 0, earliest_out = 0;
        PMPI_Allreduce(&in, &latest_in, 1, MPI_DOUBLE, MPI_MAX, comm);
        PMPI_Allreduce(&out, &earliest_out, 1, MPI_DOUBLE, MPI_MIN, comm);
        check(comm, earliest_out >= latest_in, "barrier round, size", round, size);
    }
}

/* COLL_CHECK_ONLY=bcast,allgather,...: only those groups of cases; COLL_CHECK_COMMS=world,...:
   only on those communicators (every rank the same). */
static int listed(const char *var, const char *name)
{
    const char *only = getenv(var);
    if (only == NULL || only[0] == '\0')
        return 1;
    size_t len = strlen(name);
    for (const char *p = only; (p = strstr(p, name)) != NULL; p += len)
        if ((p == only || p[-1] == ',') && (p[len] == ',' || p[len] == '\0'))
            return 1;
    return 0;
}

static int wanted(const char *name)
{
    return listed("COLL_CHECK_ONLY", name);
}

/* Every wanted group of cases on comm, which COLL_CHECK_COMMS calls name. */
static void test_all(MPI_Comm comm, const char *name)
{
    if (comm == MPI_COMM_NULL || !listed("COLL_CHECK_COMMS", name))
        return;
    if (wanted("bcast"))
        test_bcast(comm);
    if (wanted("allgather"))
        test_allgather(comm);
    if (wanted("reductions"))
        test_reductions(comm);
    if (wanted("barrier"))
        test_barrier(comm);
    if (wanted("scatter"))
        test_scatter(comm);
    if (wanted("scatterv"))
        test_scatterv(comm);
}

/* The rows and then the columns of a 2-D grid (MPI_Dims_create) over MPI_COMM_WORLD's ranks in
   their order, on 4 or more ranks; a prime number of ranks would make a 1-wide grid (rows of one
   rank, columns the whole world), so the grid leaves the last rank out (MPI_COMM_NULL there). */
static void test_grid(int size)
{
    if (size < 4)
        return;
    int dims[2] = {0, 0}, periods[2] = {0, 0};
    MPI_Dims_create(size, 2, dims);
    if (dims[1] == 1) {
        dims[0] = 0;
        dims[1] = 0;
        MPI_Dims_create(size - 1, 2, dims);
    }
    MPI_Comm grid;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
    if (grid == MPI_COMM_NULL)
        return;
    for (int d = 0; d < 2; d++) {
        int remain[2] = {d == 1, d == 0}; /* d 0: a row (the second coordinate varies) */
        MPI_Comm sub;
        MPI_Cart_sub(grid, remain, &sub);
        test_all(sub, d == 0 ? "rows" : "columns");
        MPI_Comm_free(&sub);
    }
    MPI_Comm_free(&grid);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm dup, parity, half, reversed, subset;
    test_all(MPI_COMM_WORLD, "world");
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    test_all(dup, "dup");
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &parity);
    test_all(parity, "parity");
    MPI_Comm_split(MPI_COMM_WORLD, wrank < size / 2, wrank, &half);
    test_all(half, "half");
    MPI_Comm_split(MPI_COMM_WORLD, 0, -wrank, &reversed);
    test_all(reversed, "reversed");
    MPI_Comm_split(MPI_COMM_WORLD, wrank == 0 ? MPI_UNDEFINED : 0, wrank, &subset);
    test_all(subset, "subset");
    test_grid(size);
    int totals[2] = {passed, failed}, sums[2];
    PMPI_Reduce(totals, sums, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (wrank == 0)
        printf("coll_check: %d passed, %d failed\n", sums[0], sums[1]);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&parity);
    MPI_Comm_free(&half);
    MPI_Comm_free(&reversed);
    if (subset != MPI_COMM_NULL)
        MPI_Comm_free(&subset);
    PMPI_Bcast(&sums[1], 1, MPI_INT, 0, MPI_COMM_WORLD);
    int bad = sums[1] != 0;
    MPI_Finalize();
    return bad;
}
