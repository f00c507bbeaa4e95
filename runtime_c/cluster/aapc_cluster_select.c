/*
 * aapc_cluster_select.c: which way an all-to-all of b bytes per block takes on a job of a given
 * shape (aapc_cluster_shape.c): the MPI library's own routine, the per-rank contention-free
 * phases, the leader-based (aggregated) phases, or the log-round exchange among the machines.
 * Selection only: the ways themselves live in runtime_c/alltoall/ and runtime_c/hier/.
 *
 * Cost model (seconds for one call, alpha-beta with the job's bound; S = bound_s_per_byte,
 * the time per byte of block the busiest link needs, P ranks, N machines, R ranks per machine,
 * lg x = ceil(log2 x)):
 *   library   T = lib_alpha lg P + lib_beta S b + lib_fwd_beta S b lg P P / (2 (P - 1))
 *                                                              b <= 256 B and P >= 8,
 *             T = lib_alpha lg P + lib_beta S b + lib_msg_alpha (P - 1)   otherwise
 *             (MPICH's algorithms, and SimGrid's MPICH selector's: Bruck's rounds for small
 *             blocks, each block forwarded lg P / 2 times on average; above, the scattered and
 *             pairwise exchanges of P - 1 messages per rank; lib_fwd_beta and lib_msg_alpha
 *             are 0 in the built-in constants, fitted by aapcgen tune)
 *   ours      each way below + agree_alpha lg P (the argument agreement, common/aapc_args.c),
 *             except the per-rank phases that fit one window (aapc_phases_in_one_window):
 *             their messages carry it
 *             (alltoall/aapc_alltoall_carried.c; 0 in the built-in constants)
 *   phases    T = phase_alpha ceil(rank_phases / w) + msg_alpha rank_phases + phase_beta S b,
 *             w = aapc_inflight_window(b, rank_phases, I): the phases of b-byte blocks a
 *             rank keeps in flight within I = the shape's inflight bytes (the topology's,
 *             64 KiB by default: 1 above 32 KiB then); a window of w phases pays one sync and
 *             latency (phase_alpha) but w messages
 *   leaders   T = phase_alpha ceil(machine_phases / w) + msg_alpha machine_phases
 *                 + phase_beta S b + copy_beta 2 R P b,
 *             w = aapc_inflight_window(R^2 b, machine_phases, I): the same for a leader's
 *             R^2 b-byte messages
 *   loground  T = round_alpha lg P           + phase_beta S b lg P P / (2 (P - 1))
 *                                             + copy_beta (2 + lg P) P b
 *             with R > 1 ranks on every machine (aggregated: the leaders' rounds among N
 *             machines, each rank's blocks through the machine's shared segment):
 *             T = round_alpha lg N           + phase_beta S b lg N N / (2 (N - 1))
 *                                             + copy_beta ((2 + lg N) R + 2) P b
 *             and where the members' machines hang from a uniform tree (s->digits: one
 *             digit per level, radix f_l; the exchange among the leaders, or among the ranks
 *             with one per machine), over its n members (N, or P) of B-byte blocks (R^2 b, or b):
 *             T = round_alpha sum_l ceil((f_l - 1) / w_l) + msg_alpha sum_l (f_l - 1 -
 *                 ceil((f_l - 1) / w_l)) + phase_beta S b sum_l ((f_l - 1) / f_l) n / (n - 1)
 *                 + copies as above with L levels for lg n,
 *             w_l = aapc_inflight_window(n B / f_l, f_l - 1, I): a level's messages in
 *             flight at once (a round per window, the window's other messages msg_alpha each)
 * The library's routine is a black box: its small-block cost grows with lg P rounds (Bruck,
 * which MPICH and Open MPI pick for small blocks) and its large-block cost is a multiple of the
 * bound (lib_beta: contention, measured); ours run at phase_beta times the bound in
 * rank_phases or machine_phases steps of phase_alpha each (a sync and a message latency), and
 * the aggregated way pays the copies through the leaders; the log-round exchange (Bruck among
 * the ranks in the tree's order) forwards a block lg P / 2 times on average instead of once,
 * in lg P steps, and copies every rank's P blocks in each. The constants are measured by
 * `aapcgen tune` on the cluster and compiled into the library (aapc_cluster_t.model); an
 * untuned library uses aapc_cost_model_default, measured on the emulated trees of
 * docs/measurements/selection.md. The choice is the cheapest allowed way, the library's cost
 * counted at (1 - guard) times its model (a tuned model's guard is its fit's median relative
 * error: ours only where the model says it wins by more than it errs); ties go to the earlier
 * way in the enum (the library first). Every rank computes the same choice from the same shape, model
 * and block size.
 * Measured points: a tuned model also keeps, for each job shape and block size where the
 * library's routine and a way of ours were timed, the way that ran fastest there
 * (aapc_way_point_t; as MPICH's tuning files and Open MPI's dynamic rules keep an algorithm per
 * communicator and message size). On a job of that shape a call of a measured size takes that
 * way, and a call between two measured sizes at most AAPC_POINTS_SPAN (2) apart the model's
 * choice between the two sizes' fastest ways (the guard included; a sweep by powers of two
 * covers every size): a measurement outranks the model, whose error could send a measured
 * call to a way measured slower, or to one not measured at all. Farther apart the model
 * alone: on SimGrid's 4+4 and chain-4x4 our ways won at 512 B and at 32 KB, the library at 4 KB
 * (docs/measurements/selection.md, "Measured points"). Other sizes and shapes: the model.
 * Cost: O(1) per call, plus O(points) when the model holds measured points.
 */
#include <math.h> /* INFINITY */
#include <stddef.h>
#include <stdlib.h> /* getenv */
#include <string.h>

#include "aapc_cluster.h"

/* Fitted to the medians of the crossover run on the emulated 4+4 tree at 100 Mbit/s, 1 and 2
   ranks per machine on 2 cores (docs/measurements/selection.md, "The crossovers": MPICH's default 0.67 ms
   at 8 B over lg 8 = 3 rounds; its 4 KB-256 KB times 1.07-2.9x the bound, 1.5 where the
   choice against the phases falls; the phases 4.49 ms at 8 B over 16 phases, 1.06x the bound at
   256 KB; the log-round 1.61 ms at 8 B over 3 rounds; the leaders' gather and scatter 40 ms more
   than the phases at 32 KB, 2 ranks per machine). 2026-12-02, with windows by block size: a
   phase's 300 us split into phase_alpha 100 us and msg_alpha 200 us, and copy_beta 2e-8 (fits
   of that day's CPU-bound runs: 5-6e-8), so that the windows' credit leaves every point
   measured on the library there (the leaders' 16 phases at 64 B, 2 ranks per machine: all in
   one window 5.87 ms, one per phase 12.0; 4 ranks per machine at 512 B: MPICH 25.0 ms, the
   windowed leaders 44.5). 2026-12-03: msg_alpha 200 -> 120 us, the mean time per phase of the
   per-rank phases forced at 8 and 64 B against an MPICH whose ranks sleep (ch3:sock; 91-170 us
   on 4+4 with 1, 2, 4 and chain-4x4 with 1 rank per machine), where 200 came from runs against
   a busy-polling MPICH in which every rank waited 87-94% for a CPU, and phase_alpha 100 ->
   180 us, so that a phase run alone (one window, one message: MPI_Alltoallv, MPI_Ialltoall, a
   job of 2 ranks) still costs the 300 us measured for it. Of the 36 points measured with
   MPICH's best not starved, the old split left one below 0.95x (chain-4x4, 1 rank per machine,
   4 KB: the library, 0.82x), this none (docs/measurements/selection.md, "The per-message
   constant from CPU-fair runs"; tuning/replay_runs.py). aapcgen tune replaces them with the
   cluster's own. */
const aapc_cost_model_t aapc_cost_model_default = {
    .lib_alpha = 250e-6,
    .lib_beta = 1.5,
    .phase_alpha = 180e-6,
    .phase_beta = 1.08,
    .copy_beta = 2.0e-8,
    .round_alpha = 500e-6,
    .msg_alpha = 120e-6,
    .lib_msg_alpha = 0,
    .lib_fwd_beta = 0,
    .agree_alpha = 0,
    .guard = 0,
    .tuned = 0,
};

/* ceil(log2 x) for x >= 1 (0 below 2) */
static double lg(double x)
{
    double n = 0;
    for (double p = 1; p < x; p *= 2)
        n++;
    return n;
}

/* ceil(phases / w): the windows of w phases a schedule of `phases` runs in */
static double windows(double phases, int32_t w)
{
    double whole = (double)(long long)(phases / w);
    return whole * w < phases ? whole + 1 : whole;
}

int32_t aapc_inflight_window(double message_bytes, double phases, double budget)
{
    int32_t w = 1;
    if (!(budget > 0))
        budget = AAPC_INFLIGHT_BYTES;
    while (w < AAPC_INFLIGHT_MAX_WINDOW && w < phases && 2.0 * w * message_bytes <= budget)
        w *= 2;
    return w;
}

int aapc_phases_in_one_window(const aapc_job_shape_t *s, double b, double budget)
{
    if (!(budget > 0))
        budget = AAPC_INFLIGHT_BYTES;
    return s->rank_phases >= 1 && b * (s->ranks - 1) <= budget &&
           aapc_inflight_window(b, s->rank_phases, budget) >= s->rank_phases;
}

/* The aggregated ways (alltoall/aapc_alltoall_cluster.c): the leader-based phases, and the
   log rounds among the machines' leaders. */
int aapc_leaders_fit(const aapc_job_shape_t *s)
{
    int streamed = s->machine_streamed;
    return s->equal_per_machine && s->max_per_machine > 1 && s->machines >= 2 &&
           s->machines <= (streamed ? AAPC_LEADERS_MAX_MACHINES_STREAMED
                                    : AAPC_LEADERS_MAX_MACHINES);
}

/* The log-round exchange in the tree's digits among n members, blocks of B bytes: digit l
   sends radix - 1 messages of n / radix blocks, aapc_inflight_window of them at once (a round
   each window; the other messages of a window cost msg_alpha each); a block moves once per
   digit in which its distance is not 0: (radix - 1) / radix of the blocks per digit. */
static void rounds_of_digits(const aapc_digits_t *d, double n, double B, double budget,
                             double *rounds, double *extra, double *hops, double *levels)
{
    *rounds = *extra = *hops = 0;
    *levels = d->levels;
    for (int32_t l = 0; l < d->levels; l++) {
        double f = d->radix[l], k = f - 1, w = aapc_inflight_window(n / f * B, k, budget);
        double r = windows(k, w);
        *rounds += r;
        *extra += k - r;
        *hops += k / f;
    }
}

/* The MPI library's routine in MPICH's two regimes. */
static double library_cost(const aapc_cost_model_t *m, const aapc_job_shape_t *s, double b)
{
    double P = s->ranks, S = s->bound_s_per_byte;
    if (b <= AAPC_LIB_SHORT_BYTES && P >= 8) /* Bruck's rounds */
        return m->lib_alpha * lg(P) + m->lib_beta * S * b +
               m->lib_fwd_beta * S * b * lg(P) * P / (2 * (P - 1));
    return m->lib_alpha * lg(P) + m->lib_beta * S * b + m->lib_msg_alpha * (P - 1);
}

static double ours_cost(const aapc_cost_model_t *m, const aapc_job_shape_t *s, int way, double b,
                        unsigned flags);

/* The cost of `way`; flags: AAPC_WAYS_NO_WINDOWS (the phases run one at a time),
   AAPC_WAYS_ALLTOALLV (the phases of a unit-capacity schedule; the log rounds among the ranks
   in the tree's digits, or not at all). */
static double way_cost(const aapc_cost_model_t *m, const aapc_job_shape_t *s, int way, double b,
                       unsigned flags)
{
    if (way == AAPC_WAY_LIBRARY)
        return library_cost(m, s, b);
    int carried = way == AAPC_WAY_PHASES && /* alltoall/aapc_alltoall_carried.c */
                  !(flags & (AAPC_WAYS_NO_WINDOWS | AAPC_WAYS_ALLTOALLV)) &&
                  aapc_phases_in_one_window(s, b, s->inflight);
    /* the argument agreement before our exchange, unless its messages carry it */
    return (carried ? 0 : m->agree_alpha * lg(s->ranks)) + ours_cost(m, s, way, b, flags);
}

/* The cost of one of our ways without the agreement. */
static double ours_cost(const aapc_cost_model_t *m, const aapc_job_shape_t *s, int way, double b,
                        unsigned flags)
{
    int windowed = !(flags & AAPC_WAYS_NO_WINDOWS);
    double P = s->ranks, R = s->max_per_machine, S = s->bound_s_per_byte;
    switch (way) {
    case AAPC_WAY_PHASES: {
        /* MPI_Alltoallv's job-tree schedules put one message on a link per phase: a link
           faster than the machines' carries no more, so their phases and time per byte are
           the unit-capacity schedule's (rank_load, unit_s_per_byte), not the bound's */
        int unit = (flags & AAPC_WAYS_ALLTOALLV) != 0;
        double ph = unit ? s->rank_load : s->rank_phases, Sp = unit ? s->unit_s_per_byte : S;
        int32_t w = windowed ? aapc_inflight_window(b, ph, s->inflight) : 1;
        return m->phase_alpha * windows(ph, w) + m->msg_alpha * ph + m->phase_beta * Sp * b;
    }
    case AAPC_WAY_LEADERS:
        return m->phase_alpha *
                   windows(s->machine_phases,
                           windowed ? aapc_inflight_window(R * R * b, s->machine_phases,
                                                            s->inflight)
                                    : 1) +
               m->msg_alpha * s->machine_phases + m->phase_beta * S * b +
               m->copy_beta * 2 * R * P * b;
    case AAPC_WAY_LOGROUND: {
        /* among the machines' leaders (aggregated: R^2 b per machine pair), or the ranks */
        int agg = !(flags & AAPC_WAYS_ALLTOALLV) && aapc_leaders_fit(s);
        double n = agg ? s->machines : P, B = agg ? R * R * b : b;
        double rounds = lg(n), extra = 0, hops = lg(n) / 2, levels = lg(n);
        const aapc_digits_t *dg = agg ? &s->digits : &s->rank_digits;
        if (dg->levels > 0) /* the tree's digits */
            rounds_of_digits(dg, n, B, s->inflight, &rounds, &extra, &hops, &levels);
        else if (flags & AAPC_WAYS_ALLTOALLV)
            return INFINITY;
        return m->round_alpha * rounds + m->msg_alpha * extra +
               m->phase_beta * S * b * hops * n / (n - 1) +
               m->copy_beta * (agg ? (2 + levels) * R + 2 : 2 + levels) * P * b;
    }
    default:
        return INFINITY;
    }
}

double aapc_way_cost(const aapc_cost_model_t *m, const aapc_job_shape_t *s, int way, double b)
{
    return way_cost(m, s, way, b, 0);
}

unsigned aapc_ways_possible(const aapc_job_shape_t *s)
{
    unsigned ways = 1u << AAPC_WAY_LIBRARY;
    if (s->ranks < 2 || s->machines < 1)
        return ways;
    if (s->ranks <= AAPC_JOB_MAX_RANKS)
        ways |= 1u << AAPC_WAY_PHASES;
    if (aapc_leaders_fit(s))
        ways |= 1u << AAPC_WAY_LEADERS;
    ways |= 1u << AAPC_WAY_LOGROUND;
    return ways;
}

/* 1 when the measured point p was measured on a job of s's shape. */
static int same_shape(const aapc_way_point_t *p, const aapc_job_shape_t *s)
{
    double d = p->s_per_byte - s->bound_s_per_byte;
    return p->machines == s->machines && s->equal_per_machine &&
           p->per_machine == s->max_per_machine && p->inflight == s->inflight &&
           (d < 0 ? -d : d) <= 0.01 * p->s_per_byte;
}

/* Among `ways`, the fastest at the measured size b of s's shape, or between the measured sizes
   nearest b on both sides, at most a factor AAPC_POINTS_SPAN apart, the fastest at either
   (`ways` itself when no measured size lies on one side or the two are farther apart, or
   none of those ways is among `ways`). */
static unsigned measured_ways(const aapc_cost_model_t *m, const aapc_job_shape_t *s, double b,
                              unsigned ways)
{
    const aapc_way_point_t *lo = NULL, *hi = NULL;
    for (int32_t k = 0; m->points != NULL && k < m->n_points; k++) {
        const aapc_way_point_t *p = &m->points[k];
        if (!same_shape(p, s))
            continue;
        if (p->bytes <= b && (lo == NULL || p->bytes >= lo->bytes))
            lo = p;
        if (p->bytes >= b && (hi == NULL || p->bytes < hi->bytes))
            hi = p;
    }
    if (lo == NULL || hi == NULL || hi->bytes > AAPC_POINTS_SPAN * lo->bytes)
        return ways;
    unsigned kept = ways & (lo->best | hi->best);
    return kept != 0 ? kept : ways;
}

int32_t aapc_way_points_of(const aapc_cost_model_t *m, const aapc_job_shape_t *s)
{
    int32_t n = 0;
    for (int32_t k = 0; m != NULL && m->points != NULL && k < m->n_points; k++)
        n += same_shape(&m->points[k], s);
    return n;
}

int aapc_way_choose(const aapc_cost_model_t *m, const aapc_job_shape_t *s, double b,
                    unsigned allowed)
{
    if (m == NULL)
        m = &aapc_cost_model_default;
    unsigned ways = allowed & aapc_ways_possible(s);
    if (!(allowed & (AAPC_WAYS_NO_WINDOWS | AAPC_WAYS_ALLTOALLV)))
        ways = measured_ways(m, s, b, ways); /* measured as MPI_Alltoall, windows and all */
    int best = -1;
    double best_t = INFINITY;
    for (int w = 0; w < AAPC_N_WAYS; w++) {
        if (!(ways & (1u << w)))
            continue;
        double t = way_cost(m, s, w, b, allowed & (AAPC_WAYS_NO_WINDOWS | AAPC_WAYS_ALLTOALLV));
        if (t == INFINITY)
            continue;
        if (w == AAPC_WAY_LIBRARY && m->guard > 0 && m->guard < 1)
            t *= 1 - m->guard; /* ours must win by the model's error */
        if (best < 0 || t < best_t) {
            best = w;
            best_t = t;
        }
    }
    return best;
}

int aapc_way_library_only(const aapc_cost_model_t *m, const aapc_job_shape_t *s,
                          unsigned allowed)
{
    if (aapc_way_choose(m, s, 0, allowed) != AAPC_WAY_LIBRARY)
        return 0;
    double b = 1; /* 2^(k/16), by products: no libm (programs link the runtime without -lm) */
    for (int k = 0; k <= 16 * 60; k++, b *= 1.04427378242741384) /* 2^(1/16) */
        if (aapc_way_choose(m, s, b, allowed) != AAPC_WAY_LIBRARY)
            return 0;
    return 1;
}

const char *aapc_way_name(int way)
{
    static const char *const names[AAPC_N_WAYS] = {"library", "phases", "leaders", "loground"};
    return way >= 0 && way < AAPC_N_WAYS ? names[way] : "?";
}

int aapc_way_named(const char *name)
{
    for (int w = 0; name != NULL && w < AAPC_N_WAYS; w++) {
        const char *a = aapc_way_name(w), *b = name;
        while (*a && *a == *b) {
            a++;
            b++;
        }
        if (*a == '\0' && *b == '\0')
            return w;
    }
    return -1;
}

int aapc_way_forced(const char *value)
{
    if (value == NULL || value[0] == '\0' || strcmp(value, "auto") == 0)
        return -1;
    int w = aapc_way_named(value);
    return w >= 0 ? w : AAPC_WAY_UNKNOWN;
}

int aapc_way_env(const char **text)
{
    static int way = -3; /* not read yet; threads that race read and store the same values */
    static const char *value = NULL;
    int w = __atomic_load_n(&way, __ATOMIC_ACQUIRE);
    if (w == -3) {
        const char *v = getenv("AAPC_WAY");
        __atomic_store_n(&value, v, __ATOMIC_RELAXED);
        w = aapc_way_forced(v);
        __atomic_store_n(&way, w, __ATOMIC_RELEASE);
    }
    if (text != NULL)
        *text = __atomic_load_n(&value, __ATOMIC_RELAXED);
    return w;
}
