/*
 * misuse.c: MPI_Alltoall and MPI_Alltoallv misused, case by case, through the routine under
 * test and through the MPI library's own (PMPI_*), for comparison (tests/test_misuse.py).
 *
 * The routine under test is whatever MPI_Alltoall/MPI_Alltoallv resolve to: a generated
 * routine when the program is linked with a generated directory under -DAAPC_INTERCEPT or runs
 * with a built libaapc.so in LD_PRELOAD (AAPC_VARIANT / AAPC_ALLTOALLV choose which), the
 * library's own otherwise. Each case runs on a fresh duplicate of MPI_COMM_WORLD, first with
 * PMPI (unless the library is known to hang or crash on it, then "-"), then with the routine.
 * Algorithm: one short collective call per case and rank; cost O(cases x ranks) small messages.
 *
 *   misuse                 every case under MPI_ERRORS_RETURN (set on MPI_COMM_WORLD and
 *                          MPI_COMM_SELF, so MPI_COMM_NULL errors return too). Rank 0 prints
 *                          per case: "case NAME lib=C0,C1,.. ours=C0,C1,.." (per rank "ok",
 *                          the error class name, "DATA" for a wrong result of a valid call, or
 *                          "-" not run), then "misuse: N cases".
 *   misuse --fatal NAME    that case once, through the routine, under MPI_ERRORS_ARE_FATAL;
 *                          with --lib through PMPI. A rank whose call returns prints
 *                          "misuse: NAME returned CLASS on rank R" and the job ends with
 *                          MPI_Abort(3); a valid case prints "misuse: NAME ok".
 *   misuse --only A,B      only those cases (and those run only when named: a block size
 *                          that straddles the default routine's ways);  misuse --list: the
 *                          case names;
 *   misuse --lib-always    run the library's routine on the cases where it hangs or crashes too
 *                          (to see what it does: run it under `timeout`, one case at a time).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 10 /* ints per block */

/* A case's `lib`: the libraries whose own routine hangs or crashes on it (not run), and
   NAMED_ONLY: run only when named by --only (the routine's ranks may part ways there). */
enum { LIB_RUN = 0, LIB_FAILS_MPICH = 1, LIB_FAILS_OMPI = 2, LIB_FAILS = 3, NAMED_ONLY = 4 };

static int rank, size, is_ompi;
static int *sbuf, *rbuf, *rbuf2;
static size_t cap; /* ints in each buffer */

/* The routine under test (lib = 0) or the library's own (lib = 1). */
static int a2a(int lib, const void *sb, int sc, MPI_Datatype st, void *rb, int rc,
               MPI_Datatype rt, MPI_Comm comm)
{
    return lib ? PMPI_Alltoall(sb, sc, st, rb, rc, rt, comm)
               : MPI_Alltoall(sb, sc, st, rb, rc, rt, comm);
}

static int a2av(int lib, const void *sb, const int *sc, const int *sd, MPI_Datatype st, void *rb,
                const int *rc, const int *rd, MPI_Datatype rt, MPI_Comm comm)
{
    return lib ? PMPI_Alltoallv(sb, sc, sd, st, rb, rc, rd, rt, comm)
               : MPI_Alltoallv(sb, sc, sd, st, rb, rc, rd, rt, comm);
}

static void fill(void)
{
    for (size_t i = 0; i < cap; i++) {
        sbuf[i] = rank * 100000 + (int)i;
        rbuf[i] = -1;
    }
}

/* Uniform Alltoallv arguments: c ints to and from every rank, contiguous. */
static int vc[64], vd[64], vc2[64];
static void vuniform(int c)
{
    for (int i = 0; i < size; i++) {
        vc[i] = vc2[i] = c;
        vd[i] = i * c;
    }
}

/* ---- the cases: each returns this rank's result ------------------------------------------ */

static int c_count_neg_send(int lib, MPI_Comm comm)
{
    return a2a(lib, sbuf, -1, MPI_INT, rbuf, N, MPI_INT, comm);
}
static int c_count_neg_recv(int lib, MPI_Comm comm)
{
    return a2a(lib, sbuf, N, MPI_INT, rbuf, -1, MPI_INT, comm);
}
static int c_count_neg_one_rank(int lib, MPI_Comm comm)
{
    return a2a(lib, sbuf, rank == 1 ? -1 : N, MPI_INT, rbuf, N, MPI_INT, comm);
}
static int c_type_null(int lib, MPI_Comm comm)
{
    return a2a(lib, sbuf, N, MPI_DATATYPE_NULL, rbuf, N, MPI_INT, comm);
}
static int c_type_uncommitted(int lib, MPI_Comm comm)
{
    MPI_Datatype t;
    MPI_Type_contiguous(2, MPI_INT, &t);
    int rc = a2a(lib, sbuf, N / 2, t, rbuf, N, MPI_INT, comm);
    MPI_Type_free(&t);
    return rc;
}
static int c_sendbuf_null(int lib, MPI_Comm comm)
{
    return a2a(lib, NULL, 1, MPI_INT, rbuf, 1, MPI_INT, comm);
}
static int c_recvbuf_null(int lib, MPI_Comm comm)
{
    return a2a(lib, sbuf, 1, MPI_INT, NULL, 1, MPI_INT, comm);
}
static int c_recvbuf_in_place(int lib, MPI_Comm comm)
{
    return a2a(lib, sbuf, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, comm);
}
static int c_alias(int lib, MPI_Comm comm)
{
    return a2a(lib, sbuf, 2, MPI_INT, sbuf, 2, MPI_INT, comm); /* MPICH's noalias2 */
}
static int c_alias_types_differ(int lib, MPI_Comm comm)
{
    return a2a(lib, sbuf, 2, MPI_INT, sbuf, 8, MPI_BYTE, comm);
}
static int c_comm_null(int lib, MPI_Comm comm)
{
    (void)comm;
    return a2a(lib, sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, MPI_COMM_NULL);
}
static int c_comm_null_count_0(int lib, MPI_Comm comm)
{
    (void)comm;
    return a2a(lib, sbuf, 0, MPI_INT, rbuf, 0, MPI_INT, MPI_COMM_NULL);
}
static int c_length_long_send(int lib, MPI_Comm comm) /* MPICH's alltoalllength */
{
    return a2a(lib, sbuf, rank == 0 ? 2 * N : N, MPI_INT, rbuf, N, MPI_INT, comm);
}
static int c_length_short_recv(int lib, MPI_Comm comm)
{
    return a2a(lib, sbuf, N, MPI_INT, rbuf, rank == 0 ? N / 2 : N, MPI_INT, comm);
}
static int c_length_short_send(int lib, MPI_Comm comm)
{
    return a2a(lib, sbuf, rank == 0 ? N / 2 : N, MPI_INT, rbuf, N, MPI_INT, comm);
}
static int c_zero_on_one_rank(int lib, MPI_Comm comm)
{
    int n = rank == 0 ? 0 : N;
    return a2a(lib, sbuf, n, MPI_INT, rbuf, n, MPI_INT, comm);
}
/* Rank 0's blocks 2 KiB, the others' 40 bytes: on either side of the default routine's
   threshold between the library's routine and the phases on paper-fig1 (744 B), so without
   the agreement first rank 0 runs the phases and the others the library's routine, and the
   ranks part ways (a hang, as with a library whose algorithms change at a size). Run only when
   named: tests/test_misuse.py runs it under AAPC_AGREE=always. */
static int c_size_straddles_ways(int lib, MPI_Comm comm)
{
    int n = rank == 0 ? 512 : N;
    int *s = malloc((size_t)size * (size_t)n * sizeof *s);
    int *r = malloc((size_t)size * (size_t)n * sizeof *r);
    if (s == NULL || r == NULL) {
        free(s);
        free(r);
        return MPI_ERR_NO_MEM;
    }
    for (int i = 0; i < size * n; i++)
        s[i] = rank * 100000 + i;
    int rc = a2a(lib, s, n, MPI_INT, r, n, MPI_INT, comm);
    free(s);
    free(r);
    return rc;
}
static int c_type_signature_bytes_equal(int lib, MPI_Comm comm)
{
    /* 2 ints sent, 8 bytes received: the same bytes; MPI calls the signatures different, no
       library checks it */
    return a2a(lib, sbuf, 2, MPI_INT, rbuf, 8, MPI_BYTE, comm);
}

/* Valid calls: the result must equal the library's (compared by the driver). */
static int c_valid_alias_count_0(int lib, MPI_Comm comm)
{
    return a2a(lib, sbuf, 0, MPI_INT, sbuf, 0, MPI_INT, comm);
}
static int c_valid_in_place_send_args_ignored(int lib, MPI_Comm comm)
{
    for (size_t i = 0; i < cap; i++)
        rbuf[i] = rank * 1000 + (int)i;
    return a2a(lib, MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, rbuf, N, MPI_INT, comm);
}
static int c_valid_zero(int lib, MPI_Comm comm)
{
    return a2a(lib, NULL, 0, MPI_INT, NULL, 0, MPI_INT, comm);
}
static int c_valid_after_errors(int lib, MPI_Comm comm)
{
    return a2a(lib, sbuf, N, MPI_INT, rbuf, N, MPI_INT, comm);
}

static int c_v_count_neg(int lib, MPI_Comm comm)
{
    vuniform(2);
    vc[size - 1] = -1;
    return a2av(lib, sbuf, vc, vd, MPI_INT, rbuf, vc2, vd, MPI_INT, comm);
}
static int c_v_count_neg_one_rank(int lib, MPI_Comm comm)
{
    vuniform(2);
    if (rank == 2)
        vc[0] = -1;
    return a2av(lib, sbuf, vc, vd, MPI_INT, rbuf, vc2, vd, MPI_INT, comm);
}
static int c_v_counts_null(int lib, MPI_Comm comm)
{
    vuniform(2);
    return a2av(lib, sbuf, NULL, vd, MPI_INT, rbuf, vc2, vd, MPI_INT, comm);
}
static int c_v_type_null(int lib, MPI_Comm comm)
{
    vuniform(2);
    return a2av(lib, sbuf, vc, vd, MPI_INT, rbuf, vc2, vd, MPI_DATATYPE_NULL, comm);
}
static int c_v_sendbuf_null(int lib, MPI_Comm comm)
{
    vuniform(2);
    return a2av(lib, NULL, vc, vd, MPI_INT, rbuf, vc2, vd, MPI_INT, comm);
}
static int c_v_alias(int lib, MPI_Comm comm) /* MPICH's noalias2: the same count array */
{
    vuniform(2);
    return a2av(lib, sbuf, vc, vd, MPI_INT, sbuf, vc, vd, MPI_INT, comm);
}
static int c_v_alias_arrays_differ(int lib, MPI_Comm comm)
{
    vuniform(2);
    return a2av(lib, sbuf, vc, vd, MPI_INT, sbuf, vc2, vd, MPI_INT, comm);
}
static int c_v_comm_null(int lib, MPI_Comm comm)
{
    (void)comm;
    vuniform(0);
    return a2av(lib, sbuf, vc, vd, MPI_INT, rbuf, vc2, vd, MPI_INT, MPI_COMM_NULL);
}
static int c_v_length_long_send(int lib, MPI_Comm comm)
{
    vuniform(2);
    if (rank == 0)
        vc[1] = 4; /* rank 1 expects 2 */
    for (int i = 0; i < size; i++)
        vd[i] = 4 * i;
    return a2av(lib, sbuf, vc, vd, MPI_INT, rbuf, vc2, vd, MPI_INT, comm);
}
static int c_v_length_short_send(int lib, MPI_Comm comm)
{
    vuniform(2);
    if (rank == 0)
        vc[1] = 1;
    return a2av(lib, sbuf, vc, vd, MPI_INT, rbuf, vc2, vd, MPI_INT, comm);
}
static int c_v_valid_in_place(int lib, MPI_Comm comm)
{
    vuniform(2);
    for (size_t i = 0; i < cap; i++)
        rbuf[i] = rank * 1000 + (int)i;
    return a2av(lib, MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, rbuf, vc2, vd, MPI_INT, comm);
}
static int c_v_valid_after_errors(int lib, MPI_Comm comm)
{
    vuniform(2);
    return a2av(lib, sbuf, vc, vd, MPI_INT, rbuf, vc2, vd, MPI_INT, comm);
}

typedef int (*case_fn)(int lib, MPI_Comm comm);
static const struct {
    const char *name;
    case_fn fn;
    int lib;   /* LIB_* (above) */
    int valid; /* a valid call: its result is compared with the library's */
} cases[] = {
    {"count-neg-send", c_count_neg_send, LIB_RUN, 0},
    {"count-neg-recv", c_count_neg_recv, LIB_RUN, 0},
    {"count-neg-one-rank", c_count_neg_one_rank, LIB_FAILS, 0},
    {"type-null", c_type_null, LIB_RUN, 0},
    {"type-uncommitted", c_type_uncommitted, LIB_RUN, 0},
    {"sendbuf-null", c_sendbuf_null, LIB_FAILS_OMPI, 0},
    {"recvbuf-null", c_recvbuf_null, LIB_FAILS_OMPI, 0},
    {"recvbuf-in-place", c_recvbuf_in_place, LIB_RUN, 0},
    {"alias", c_alias, LIB_RUN, 0},
    {"alias-types-differ", c_alias_types_differ, LIB_RUN, 0},
    {"comm-null", c_comm_null, LIB_RUN, 0},
    {"comm-null-count-0", c_comm_null_count_0, LIB_RUN, 0},
    {"length-long-send", c_length_long_send, LIB_FAILS_OMPI, 0},
    {"length-short-recv", c_length_short_recv, LIB_FAILS_OMPI, 0},
    {"length-short-send", c_length_short_send, LIB_FAILS_OMPI, 0},
    {"zero-on-one-rank", c_zero_on_one_rank, LIB_FAILS, 0},
    {"size-straddles-ways", c_size_straddles_ways, LIB_FAILS | NAMED_ONLY, 0},
    {"signature-bytes-equal", c_type_signature_bytes_equal, LIB_RUN, 0},
    {"valid-alias-count-0", c_valid_alias_count_0, LIB_RUN, 1},
    {"valid-in-place-send-args-ignored", c_valid_in_place_send_args_ignored, LIB_RUN, 1},
    {"valid-zero", c_valid_zero, LIB_RUN, 1},
    {"valid-after-errors", c_valid_after_errors, LIB_RUN, 1},
    {"v-count-neg", c_v_count_neg, LIB_RUN, 0},
    {"v-count-neg-one-rank", c_v_count_neg_one_rank, LIB_FAILS, 0},
    {"v-counts-null", c_v_counts_null, LIB_FAILS_MPICH, 0},
    {"v-type-null", c_v_type_null, LIB_RUN, 0},
    {"v-sendbuf-null", c_v_sendbuf_null, LIB_FAILS_OMPI, 0},
    {"v-alias", c_v_alias, LIB_RUN, 0},
    {"v-alias-arrays-differ", c_v_alias_arrays_differ, LIB_RUN, 0},
    {"v-comm-null", c_v_comm_null, LIB_RUN, 0},
    {"v-length-long-send", c_v_length_long_send, LIB_RUN, 0},
    {"v-length-short-send", c_v_length_short_send, LIB_RUN, 0},
    {"v-valid-in-place", c_v_valid_in_place, LIB_RUN, 1},
    {"v-valid-after-errors", c_v_valid_after_errors, LIB_RUN, 1},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

static const char *class_name(int rc)
{
    static char other[32];
    int cls = rc;
    if (rc == MPI_SUCCESS)
        return "ok";
    MPI_Error_class(rc, &cls);
    switch (cls) {
    case MPI_ERR_BUFFER: return "MPI_ERR_BUFFER";
    case MPI_ERR_COUNT: return "MPI_ERR_COUNT";
    case MPI_ERR_TYPE: return "MPI_ERR_TYPE";
    case MPI_ERR_COMM: return "MPI_ERR_COMM";
    case MPI_ERR_TRUNCATE: return "MPI_ERR_TRUNCATE";
    case MPI_ERR_IN_STATUS: return "MPI_ERR_IN_STATUS";
    case MPI_ERR_ARG: return "MPI_ERR_ARG";
    case MPI_ERR_OTHER: return "MPI_ERR_OTHER";
    case MPI_ERR_INTERN: return "MPI_ERR_INTERN";
    default:
        snprintf(other, sizeof other, "class%d", cls);
        return other;
    }
}

/* Codes for the gathered results: -1 not run, -2 wrong data, else the error class. */
static void report(const char *name, const int *lib, const int *ours)
{
    if (rank != 0)
        return;
    printf("case %s lib=", name);
    for (int side = 0; side < 2; side++) {
        const int *v = side ? ours : lib;
        for (int r = 0; r < size; r++) {
            const char *s = v[r] == -1 ? "-" : v[r] == -2 ? "DATA" : NULL;
            if (s == NULL)
                s = v[r] == 0 ? "ok" : class_name(v[r]);
            printf("%s%s", r ? "," : "", s);
        }
        printf(side ? "\n" : " ours=");
    }
    fflush(stdout);
}

static int result_code(int rc)
{
    int cls = rc;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    return cls;
}

/* Whether name is an item of the comma-separated list. */
static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p != NULL; p = strchr(p, ',')) {
        p += *p == ',';
        if (strncmp(p, name, n) == 0 && (p[n] == '\0' || p[n] == ','))
            return 1;
    }
    return 0;
}

static int run_case(int k, int lib, int skip_lib, MPI_Errhandler eh, int *data_ok)
{
    MPI_Comm comm;
    PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, eh);
    fill();
    int rc = skip_lib ? -1 : cases[k].fn(lib, comm);
    if (data_ok != NULL)
        *data_ok = 1;
    MPI_Comm_free(&comm);
    return rc;
}

int main(int argc, char **argv)
{
    const char *fatal = NULL, *only = NULL;
    int via_lib = 0, list = 0, lib_always = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--fatal") == 0 && i + 1 < argc)
            fatal = argv[++i];
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--lib") == 0)
            via_lib = 1;
        else if (strcmp(argv[i], "--list") == 0)
            list = 1;
        else if (strcmp(argv[i], "--lib-always") == 0)
            lib_always = 1;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int vlen = 0;
    MPI_Get_library_version(version, &vlen);
    is_ompi = strstr(version, "Open MPI") != NULL;
    if (size < 3 || size > 64) {
        if (rank == 0)
            fprintf(stderr, "misuse: run with 3 to 64 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    cap = (size_t)size * 4 * N;
    sbuf = malloc(cap * sizeof *sbuf);
    rbuf = malloc(cap * sizeof *rbuf);
    rbuf2 = malloc(cap * sizeof *rbuf2);
    int *all_lib = malloc((size_t)size * sizeof *all_lib);
    int *all_ours = malloc((size_t)size * sizeof *all_ours);

    if (list) {
        for (int k = 0; rank == 0 && k < NCASES; k++)
            printf("%s%s\n", cases[k].name, cases[k].valid ? " (valid)" : "");
        MPI_Finalize();
        return 0;
    }

    if (fatal != NULL) { /* one case, MPI_ERRORS_ARE_FATAL: it must abort */
        int k = 0;
        while (k < NCASES && strcmp(cases[k].name, fatal) != 0)
            k++;
        if (k == NCASES) {
            if (rank == 0)
                fprintf(stderr, "misuse: no case %s\n", fatal);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        MPI_Comm comm;
        PMPI_Comm_dup(MPI_COMM_WORLD, &comm); /* inherits MPI_ERRORS_ARE_FATAL */
        fill();
        int rc = cases[k].fn(via_lib, comm);
        if (rc != MPI_SUCCESS || !cases[k].valid) {
            printf("misuse: %s returned %s on rank %d under MPI_ERRORS_ARE_FATAL\n", fatal,
                   class_name(rc), rank);
            fflush(stdout);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        MPI_Comm_free(&comm);
        PMPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0)
            printf("misuse: %s ok\n", fatal);
        MPI_Finalize();
        return 0;
    }

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int ran = 0;
    for (int k = 0; k < NCASES; k++) {
        if (only != NULL ? !listed(only, cases[k].name) : (cases[k].lib & NAMED_ONLY) != 0)
            continue;
        int hazard = !lib_always && (cases[k].lib & (is_ompi ? LIB_FAILS_OMPI : LIB_FAILS_MPICH));
        int lib_rc = run_case(k, 1, hazard, MPI_ERRORS_RETURN, NULL);
        memcpy(rbuf2, rbuf, cap * sizeof *rbuf);
        PMPI_Barrier(MPI_COMM_WORLD);
        int ours_rc = run_case(k, 0, 0, MPI_ERRORS_RETURN, NULL);
        int lib_code = lib_rc == -1 ? -1 : result_code(lib_rc);
        int ours_code = result_code(ours_rc);
        if (cases[k].valid && ours_rc == MPI_SUCCESS && lib_rc == MPI_SUCCESS &&
            memcmp(rbuf, rbuf2, cap * sizeof *rbuf) != 0)
            ours_code = -2;
        PMPI_Gather(&lib_code, 1, MPI_INT, all_lib, 1, MPI_INT, 0, MPI_COMM_WORLD);
        PMPI_Gather(&ours_code, 1, MPI_INT, all_ours, 1, MPI_INT, 0, MPI_COMM_WORLD);
        report(cases[k].name, all_lib, all_ours);
        PMPI_Barrier(MPI_COMM_WORLD);
        ran++;
    }
    if (rank == 0)
        printf("misuse: %d cases\n", ran);
    free(sbuf);
    free(rbuf);
    free(rbuf2);
    free(all_lib);
    free(all_ours);
    MPI_Finalize();
    return 0;
}
