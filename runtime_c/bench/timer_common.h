/*
 * timer_common.h: what the benchmark timers share (alltoall_timer.c, alltoallv_timer.c):
 * the --only filter, the CPU busy sampling of /proc/stat, the TCP retransmission counters of
 * /proc/net and the timing of one candidate.
 */
#ifndef AAPC_TIMER_COMMON_H
#define AAPC_TIMER_COMMON_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef SMPI_SHARED_MALLOC
#include <unistd.h>
#endif

static inline int selected(const char *only, const char *name)
{
    if (only == NULL) { /* the run-time scheduled routines need a placement, and "auto" is
                           one of them or a precomputed variant: only when named */
        return strncmp(name, "runtime-", 8) != 0 && strcmp(name, "auto") != 0;
    }
    size_t len = strlen(name);
    for (const char *p = only; (p = strstr(p, name)) != NULL; p += len) {
        if ((p == only || p[-1] == ',') && (p[len] == ',' || p[len] == '\0')) {
            return 1;
        }
    }
    return 0;
}

/* Nanoseconds the calling thread has spent runnable but waiting for a CPU (the second field of
   /proc/thread-self/schedstat, Linux's run-queue wait); -1 when unavailable or under SimGrid,
   whose ranks are threads of one process and whose clock is simulated. */
static inline long long runq_wait_ns(void)
{
#ifdef SMPI_SHARED_MALLOC
    return -1;
#else
    unsigned long long on_cpu = 0, waited = 0;
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    int ok = f != NULL && fscanf(f, "%llu %llu", &on_cpu, &waited) == 2;
    if (f != NULL)
        fclose(f);
    return ok ? (long long)waited : -1;
#endif
}

/* Busy and total jiffies of all CPUs (first line of /proc/stat); 0 when unavailable. */
static inline int cpu_jiffies(double *busy, double *total)
{
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long v[8] = {0};
    int ok = f != NULL && fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                                 &v[3], &v[4], &v[5], &v[6], &v[7]) == 8;
    if (f != NULL) {
        fclose(f);
    }
    if (!ok) {
        return 0;
    }
    *total = (double)(v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]);
    *busy = *total - (double)(v[3] + v[4]); /* minus idle and iowait */
    return 1;
}

/* The counter `name` of the `prefix` lines of a /proc/net file (a header line of names, then a
   line of values, e.g. "Tcp: ... RetransSegs ..." in /proc/net/snmp); 0 when unavailable. */
static inline int proc_net_counter(const char *file, const char *prefix, const char *name,
                                   long long *value)
{
    FILE *f = fopen(file, "r");
    if (f == NULL) {
        return 0;
    }
    static char line[16384];
    int found = 0, column = -1;
    size_t plen = strlen(prefix);
    while (!found && fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, prefix, plen) != 0) {
            continue;
        }
        if (column < 0) { /* the header: find the column of `name` */
            int col = 0, used = 0;
            char word[128];
            for (const char *p = line + plen; sscanf(p, "%127s%n", word, &used) == 1; p += used, col++) {
                if (strcmp(word, name) == 0) {
                    column = col;
                    break;
                }
            }
            if (column < 0) {
                break;
            }
            continue;
        }
        const char *p = line + plen;
        int used = 0;
        long long v = 0;
        for (int col = 0; col <= column; col++, p += used) {
            if (sscanf(p, "%lld%n", &v, &used) != 1) {
                break;
            }
            if (col == column) {
                *value = v;
                found = 1;
            }
        }
        break;
    }
    fclose(f);
    return found;
}

/* TCP segments retransmitted and retransmission timeouts so far in this process's network
   namespace (Linux; in the emulation every machine is a namespace); 0 when unavailable or
   under SimGrid, whose ranks share the host's namespace. */
static inline int tcp_counters(long long *retrans, long long *timeouts)
{
#ifdef SMPI_SHARED_MALLOC
    (void)retrans;
    (void)timeouts;
    return 0;
#else
    return proc_net_counter("/proc/net/snmp", "Tcp:", "RetransSegs", retrans) &&
           proc_net_counter("/proc/net/netstat", "TcpExt:", "TCPTimeouts", timeouts);
#endif
}

/* Whether this rank reports its namespace's TCP counters: the lowest rank of each network
   namespace (ranks compare the inode of /proc/self/ns/net once), so namespaces running several
   ranks count once. Collective on the first call, except under SimGrid, where every rank shares
   the host's namespace and counters are not read: there rank 0 alone reports, with no
   Allgather (SMPI 3.32's default Allgather waits with a cubic waitall: about 100 s of wall time
   at 256 ranks, hours at 1024). */
static inline int tcp_reporter(int rank)
{
    static int reporter = -1;
    if (reporter >= 0) {
        return reporter;
    }
#ifdef SMPI_SHARED_MALLOC
    reporter = rank == 0;
    return reporter;
#else
    long long ns = -1;
    char link[64] = {0};
    ssize_t len = readlink("/proc/self/ns/net", link, sizeof link - 1);
    if (len > 0 && sscanf(link, "net:[%lld]", &ns) != 1) {
        ns = -1;
    }
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long long *all = malloc((size_t)size * sizeof *all);
    if (all == NULL) { /* the others are entering the Allgather: do not leave them there */
        fprintf(stderr, "timer: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Allgather(&ns, 1, MPI_LONG_LONG, all, 1, MPI_LONG_LONG, MPI_COMM_WORLD);
    reporter = 1; /* a rank that cannot tell its namespace reports (or reports -1) itself */
    for (int r = 0; r < rank && reporter && ns >= 0; r++) {
        if (all[r] == ns) {
            reporter = 0;
        }
    }
    free(all);
    return reporter;
#endif
}

static inline int gcd_int(int a, int b)
{
    while (b != 0) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* order[k] = (k * m + r) mod n, with m the (r mod phi(n))-th stride in [1, n) coprime to n:
   the candidate that runs after c is c + m (mod n), so successive r give every candidate a
   different successor (for phi(n) values of r) as well as a different start. Depends on r
   alone, so every rank computes the same order. */
static inline void strided_order(int *order, int n, unsigned r)
{
    int strides = 0;
    for (int m = 1; m < n; m++) {
        strides += gcd_int(m, n) == 1;
    }
    int m = 1;
    if (strides > 0) {
        for (int want = (int)(r % (unsigned)strides), c = 1; c < n; c++) {
            if (gcd_int(c, n) == 1 && want-- == 0) {
                m = c;
                break;
            }
        }
    }
    for (int k = 0; k < n; k++) {
        order[k] = (int)(((long long)k * m + r) % (unsigned)n);
    }
}

/* How one candidate is timed (seed 002 Figure 5). */
struct timer_opts {
    int iters, min_iters, warmup;
    double target; /* > 0: adapt the number of timed calls to about this many seconds */
    int osu;       /* 1: time each call alone, after an untimed barrier (--timing osu) */
};

/* --timing loop | osu: 0, 1; -1 for anything else. */
static inline int timing_of(const char *text)
{
    return strcmp(text, "loop") == 0 ? 0 : strcmp(text, "osu") == 0 ? 1 : -1;
}

/* Warm-up calls, then n x { call(arg); barrier } timed with MPI_Wtime (n = target / time of a
   warm-up call, clamped to [min_iters, iters], decided by rank 0), or under o->osu n x
   { barrier; call(arg) } with only the calls timed on each rank, as OSU's osu_alltoall times
   them (the barrier that lines the ranks up is not counted; the figure is still the slowest
   rank's mean); rank 0 prints
   "time <name> <bytes> <repeat> <seconds per call, max over ranks> <n> <cpu busy>
   <TCP retransmitted segments per call> <TCP timeouts per call> <run-queue wait>", the TCP
   counts summed over the network namespaces, the run-queue wait the largest share of the timed
   calls' time any rank spent runnable but waiting for a CPU (CPU starvation; -1 when
   unknown, as the others). */
static inline void time_candidate(void (*call)(void *), void *arg, const struct timer_opts *o,
                                  const char *name, long long bytes, int repeat, int rank)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double wstart = MPI_Wtime();
    for (int w = 0; w < o->warmup; w++) {
        call(arg);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    int n = o->iters;
    if (o->target > 0 && o->warmup > 0) { /* rank 0 decides, everyone follows */
        double per_call = (MPI_Wtime() - wstart) / o->warmup;
        n = per_call > 0 ? (int)(o->target / per_call) : o->iters;
        n = n < o->min_iters ? o->min_iters : (n > o->iters ? o->iters : n);
        MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    double busy0 = 0, total0 = 0, busy1 = 0, total1 = 0;
    int have_cpu = rank == 0 && cpu_jiffies(&busy0, &total0);
    int reporter = tcp_reporter(rank);
    long long tcp0[2] = {0, 0}, tcp1[2] = {0, 0};
    int have_tcp = reporter ? tcp_counters(&tcp0[0], &tcp0[1]) : 1;
    MPI_Barrier(MPI_COMM_WORLD);
    /* the run-queue wait's share of the span between its two readings (a rank preempted
       between the first reading and `start` would otherwise count a wait outside the timed
       calls: above 100% of a few short calls on an oversubscribed host) */
    double q_start = MPI_Wtime();
    long long q0 = runq_wait_ns();
    double start = MPI_Wtime(), in_calls = 0;
    for (int it = 0; it < n; it++) {
        if (o->osu) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            call(arg);
            in_calls += MPI_Wtime() - t0;
            continue;
        }
        call(arg);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    double elapsed = MPI_Wtime() - start, mine = (o->osu ? in_calls : elapsed) / n, worst = 0;
    long long q1 = runq_wait_ns();
    double q_span = MPI_Wtime() - q_start;
    double waited = q0 >= 0 && q1 >= q0 && q_span > 0 ? (double)(q1 - q0) / 1e9 / q_span : -1.0;
    waited = waited > 1.0 ? 1.0 : waited; /* clock granularity */
    double most_waited = -1.0;
    have_cpu = have_cpu && cpu_jiffies(&busy1, &total1) && total1 > total0;
    have_tcp = have_tcp && (!reporter || tcp_counters(&tcp1[0], &tcp1[1]));
    long long delta[3] = {reporter ? tcp1[0] - tcp0[0] : 0, reporter ? tcp1[1] - tcp0[1] : 0, 0};
    long long sums[3] = {0, 0, 0};
    delta[2] = have_tcp ? 0 : 1; /* ranks without counters */
    MPI_Reduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&waited, &most_waited, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(delta, sums, 3, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double cpu = have_cpu ? (busy1 - busy0) / (total1 - total0) : -1.0;
        double retrans = sums[2] == 0 ? (double)sums[0] / n : -1.0;
        double timeouts = sums[2] == 0 ? (double)sums[1] / n : -1.0;
        printf("time %s %lld %d %.9f %d %.3f %.2f %.3f %.3f\n", name, bytes, repeat, worst, n,
               cpu, retrans, timeouts, most_waited);
        fflush(stdout);
    }
}

#endif /* AAPC_TIMER_COMMON_H */
