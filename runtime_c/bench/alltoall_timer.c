/*
 * alltoall_timer.c: time MPI_Alltoall candidates side by side in one job (seed 002 Figure 5).
 *
 * Candidates: "native" (PMPI_Alltoall, whatever algorithm the MPI library's environment selects)
 * and every variant in aapc_variants[] of the generated directory it is compiled with (the
 * run-time scheduled runtime-* routines and "auto" only when --only names them: they need each
 * rank's machine, AAPC_MACHINE or a matching host name). For each
 * repeat, the candidates run in turn (interleaved, so they see the same machine state), in a
 * strided order chosen by --seed K plus the repeat number (timer_common.h: every candidate's
 * successor changes from one repeat to the next, since on TCP a call inherits the connection
 * state the previous candidate left): warm-up
 * calls, a barrier, then `iters` x { alltoall; barrier } timed with MPI_Wtime. Rank 0 prints one
 * line per (repeat, candidate): "time <candidate> <bytes> <repeat> <seconds per call> <iters>
 * <cpu busy> <tcp retrans> <tcp timeouts>" (time: max over ranks; cpu busy: fraction of all
 * CPUs of the machine busy during the timed loop, from /proc/stat on rank 0's machine; TCP
 * segments retransmitted and retransmission timeouts per call, summed over the ranks' network
 * namespaces; -1 where unavailable), then "done".
 * With --target-seconds T the number of timed calls adapts: iters = T / (time of the warm-up
 * calls), clamped to [--min-iters, --iters].
 *
 * --split rows:K | columns:K: every candidate runs on sub-communicators of MPI_COMM_WORLD, all
 * of them at once (as a 2-D FFT's transposes): colour rank / K (rows of K ranks) or rank mod K
 * (K columns), key rank; the time is still the slowest rank's. The run-time routines run twice:
 * under their name on a split of PMPI_Comm_split (each communicator scheduled alone) and as
 * "<name>+union" on the same split recorded by aapc_comm_split_siblings (the union of the
 * siblings' schedules, alltoall/aapc_alltoall_cluster.c).
 *
 * usage: alltoall_timer --bytes B[,B...] [--iters N] [--min-iters N] [--target-seconds T]
 *                       [--warmup N] [--repeats R] [--only a,b] [--seed K] [--split rows:K]
 *                       [--timing loop|osu]
 * --timing osu times each call alone after an untimed barrier, as OSU's osu_alltoall does,
 * instead of { alltoall; barrier } (timer_common.h time_candidate).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* readlink in timer_common.h */
#endif
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_alltoall_cluster.h" /* aapc_comm_split_siblings */
#include "aapc_registry.h"

/* Under SimGrid SMPI (smpicc), all ranks share one process: back the send and receive buffers
   by SMPI's shared malloc so 1024 ranks x 1024 blocks fit in memory (data is not checked). */
#ifdef SMPI_SHARED_MALLOC
#define BUF_MALLOC(size) SMPI_SHARED_MALLOC(size)
#define BUF_FREE(ptr) SMPI_SHARED_FREE(ptr)
#else
#define BUF_MALLOC(size) malloc(size)
#define BUF_FREE(ptr) free(ptr)
#endif

static int native(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm)
{
    return PMPI_Alltoall(sb, sc, st, rb, rc, rt, comm);
}

#include "timer_common.h"

struct call_args {
    aapc_alltoall_fn fn;
    const char *sb;
    char *rb;
    int bytes;
    MPI_Comm comm;
};

static void call_one(void *p)
{
    struct call_args *a = p;
    a->fn(a->sb, a->bytes, MPI_BYTE, a->rb, a->bytes, MPI_BYTE, a->comm);
}

/* The colour of `rank` in the --split spec (rows:K or columns:K); -1: a bad spec. */
static int split_color(const char *spec, int rank)
{
    int k = 0;
    if (sscanf(spec, "rows:%d", &k) == 1 && k > 0)
        return rank / k;
    if (sscanf(spec, "columns:%d", &k) == 1 && k > 0)
        return rank % k;
    return -1;
}

static int runtime_routine(const char *name)
{
    return strncmp(name, "runtime-", 8) == 0 || strcmp(name, "auto") == 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *bytes_list = "65536", *only = NULL, *split = NULL;
    int iters = 20, min_iters = 3, warmup = 2, repeats = 5, seed = 0, timing = 0;
    double target = 0.0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--bytes") == 0) bytes_list = argv[i + 1];
        else if (strcmp(argv[i], "--iters") == 0) iters = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--min-iters") == 0) min_iters = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--target-seconds") == 0) target = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--warmup") == 0) warmup = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--repeats") == 0) repeats = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--only") == 0) only = argv[i + 1];
        else if (strcmp(argv[i], "--seed") == 0) seed = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--timing") == 0) timing = timing_of(argv[i + 1]);
        else if (strcmp(argv[i], "--split") == 0) split = argv[i + 1];
    }
    MPI_Comm comm = MPI_COMM_WORLD, siblings = MPI_COMM_NULL;
    int csize = size;
    if (split != NULL) {
        int color = split_color(split, rank);
        if (color < 0) {
            if (rank == 0) fprintf(stderr, "alltoall_timer: --split %s: use rows:K or columns:K\n", split);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        PMPI_Comm_split(MPI_COMM_WORLD, color, rank, &comm);
        aapc_comm_split_siblings(MPI_COMM_WORLD, color, rank, &siblings);
        MPI_Comm_size(comm, &csize);
    }
    if (timing < 0) {
        if (rank == 0) fprintf(stderr, "%s: --timing takes loop or osu\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const struct timer_opts opts = {iters, min_iters, warmup, target, timing};
    int ncand = aapc_nvariants + 1;
    aapc_alltoall_fn *fns = malloc(sizeof(*fns) * (size_t)ncand);
    const char **names = malloc(sizeof(*names) * (size_t)ncand);
    int *order = malloc(sizeof(int) * (size_t)ncand);
    fns[0] = native;
    names[0] = "native";
    for (int v = 0; v < aapc_nvariants; v++) {
        fns[v + 1] = aapc_variants[v].fn;
        names[v + 1] = aapc_variants[v].variant;
    }
    char *list = malloc(strlen(bytes_list) + 1);
    strcpy(list, bytes_list);
    /* no strtok: its hidden state is shared by all ranks of a SimGrid (SMPI) process */
    for (char *tok = list, *next; tok != NULL; tok = next) {
        next = strchr(tok, ',');
        if (next != NULL) {
            *next++ = '\0';
        }
        long bytes = atol(tok);
        size_t total = (size_t)bytes * (size_t)csize;
        char *sb = BUF_MALLOC(total ? total : 1), *rb = BUF_MALLOC(total ? total : 1);
        for (size_t k = 0; k < total; k++) sb[k] = (char)(k * 7 + (size_t)rank);
        for (int r = 0; r < repeats; r++) {
            strided_order(order, ncand, (unsigned)seed + (unsigned)r);
            for (int k = 0; k < ncand; k++) {
                int c = order[k];
                if (!selected(only, names[c])) continue;
                struct call_args args = {fns[c], sb, rb, (int)bytes, comm};
                time_candidate(call_one, &args, &opts, names[c], bytes, r, rank);
                if (siblings != MPI_COMM_NULL && runtime_routine(names[c])) {
                    char uname[256];
                    snprintf(uname, sizeof uname, "%s+union", names[c]);
                    args.comm = siblings;
                    time_candidate(call_one, &args, &opts, uname, bytes, r, rank);
                }
            }
        }
        BUF_FREE(sb);
        BUF_FREE(rb);
    }
    if (rank == 0) printf("done\n");
    if (split != NULL) {
        MPI_Comm_free(&comm);
        MPI_Comm_free(&siblings);
    }
    free(list);
    free(order);
    free(fns);
    free(names);
    MPI_Finalize();
    return 0;
}
