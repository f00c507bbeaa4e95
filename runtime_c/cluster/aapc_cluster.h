/*
 * aapc_cluster.h: the cluster's whole switch tree inside the library, and seed 002's optimal
 * contention-free phases computed at run time for the ranks of any communicator.
 *
 * One library per cluster: `aapcgen generate` embeds the cluster (switches, switch links in
 * file order, machines with their switch, speed and host name) as an aapc_cluster_t. At the
 * first MPI_Alltoall on a communicator every rank knows the machine of every rank (one
 * gather), and aapc_job_phases() computes the same schedule on every rank.
 *
 * The job tree (aapcgen/alltoall/job.py builds the same tree in Python, node for node):
 *   - its leaves are the communicator's ranks, leaf r = rank r;
 *   - a machine that runs one rank of the communicator is that leaf, attached to the machine's
 *     switch by the machine link;
 *   - a machine that runs R > 1 ranks becomes an inner node attached to its switch by the
 *     machine link, with its R ranks as leaves below it (memory links): the contention-free
 *     phases of this tree put at most one message on every machine link and every switch
 *     link per phase, and their number is the largest link load, which is optimal;
 *   - every switch of the cluster stays (a switch without ranks carries no message).
 * Node ids: leaves 0..P-1, then the cluster's switches (their order), then the machines with
 * several ranks in the order of their lowest rank. Edges, in the order the root search scans
 * them (seed 002 section 4.1, aapcgen/alltoall/tree.py find_root): switch links in file order,
 * then the links of the machines with several ranks, then one link per leaf in rank order.
 *
 * Pure C11, no MPI, no global state: deterministic and re-entrant.
 */
#ifndef AAPC_CLUSTER_H
#define AAPC_CLUSTER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A point `aapcgen tune` measured: on a job of `machines` machines with `per_machine` ranks on
   each, the bound s_per_byte and windows of `inflight` bytes (aapc_job_shape_t's
   bound_s_per_byte and inflight), blocks of `bytes` bytes; `best`: the way that ran fastest
   there among those measured (a bit per AAPC_WAY_*; several on a tie). */
typedef struct aapc_way_point {
    int32_t machines, per_machine;
    double s_per_byte, inflight, bytes;
    uint32_t best;
} aapc_way_point_t;

/* The cost model of the per-call selection (aapc_cluster_select.c): seconds per round, phase
   and byte of the ways an all-to-all can take, measured by `aapcgen tune` on the cluster. */
typedef struct aapc_cost_model {
    double lib_alpha;   /* the MPI library's routine: seconds per lg P round (small blocks) */
    double lib_beta;    /* ... and its time over the bound for large blocks (contention) */
    double phase_alpha; /* our phases: seconds per phase (a sync and a message latency) */
    double phase_beta;  /* ... and their time over the bound for large blocks */
    double copy_beta;   /* seconds per byte copied through a leader (aggregated ways) */
    double round_alpha; /* the log-round exchange: seconds per round */
    double msg_alpha;   /* our phases: seconds per message a rank sends and receives (its CPU
                           and the library's per-message cost; phase_alpha is then the rest of
                           a phase: a sync and a latency, shared by the phases of a window) */
    double lib_msg_alpha; /* the library's routine above AAPC_LIB_SHORT_BYTES (its direct
                             exchanges, P - 1 messages per rank): seconds per message */
    double lib_fwd_beta;  /* ... up to it (Bruck's rounds): time over the bound per byte
                             forwarded, lg P / 2 forwards per block on average */
    double agree_alpha;   /* ours: seconds per lg P round of the argument agreement
                             (common/aapc_args.c), which the per-rank phases of a call that fit
                             one window carry in their messages instead (not paid there) */
    double guard;         /* a way of ours is taken only where its cost is below (1 - guard)
                             times the library's: the fit's typical relative error, in [0, 1) */
    int tuned;          /* 1: measured on this cluster by aapcgen tune; 0: the defaults */
    int32_t n_points;   /* the measured points (aapc_way_choose), by (machines, per_machine,
                           s_per_byte, inflight, bytes) ascending; 0: the model alone */
    const aapc_way_point_t *points;
} aapc_cost_model_t;

typedef struct aapc_cluster {
    const char *name;
    int32_t n_machines, n_switches, n_links;
    const char *const *machine_name; /* n_machines */
    const char *const *machine_host; /* n_machines; NULL (table or entry): use the name */
    const int32_t *machine_switch;   /* switch index of each machine */
    const double *machine_bw;        /* bytes/s of each machine's link */
    const char *const *switch_name;  /* n_switches, declaration order (the first is the top) */
    const int32_t *link_a, *link_b;  /* switch indices of each switch link, file order */
    const double *link_bw;           /* bytes/s */
    double reference_bw; /* b_ref of the capacity model; 0: the slowest machine link of the
                            job (a job tree passed as a cluster sets it: aapcgen/alltoall/job.py) */
    const aapc_cost_model_t *model; /* the selection's constants; NULL: the defaults */
    double inflight_bytes; /* the bytes of blocks a rank may keep in flight in the windows of
                              small blocks (aapc_inflight_window): the topology's `inflight`,
                              large on a lossless fabric; 0: AAPC_INFLIGHT_BYTES */
} aapc_cluster_t;

/* Largest communicator the run-time scheduler takes: its n(n-1) messages are indexed with
   int32 and its tables stay under about 64 MiB per rank at 1024 ranks. */
#define AAPC_JOB_MAX_RANKS 8192

enum {
    AAPC_JOB_OK = 0,
    AAPC_JOB_EINVAL = 1, /* fewer than 2 ranks, a machine index out of range, a bad cluster */
    AAPC_JOB_ENOMEM = 2,
    AAPC_JOB_ERANGE = 3,   /* more than AAPC_JOB_MAX_RANKS ranks */
    AAPC_JOB_ECAPACITY = 4 /* aapc_job_phases_each: the phases are the general capacity ones */
};

/* The job tree (see above). */
typedef struct aapc_job_tree {
    int32_t n_leaves; /* P ranks */
    int32_t n_nodes;
    int32_t *parent;  /* hung from node P (the cluster's first switch); -1 there */
    double *up_bw;    /* bytes/s of the link from each node to its parent, 0 at the top */
    int32_t *machine_of_node; /* cluster machine of a leaf or machine node, -1 for switches */
    int32_t *cap;     /* messages the link to the parent carries per phase, each direction
                         (1 for a rank's own link; floor(bw / slowest machine link) above) */
} aapc_job_tree_t;

/* The phases: message e goes from rank src[e] to rank dst[e] in phase phase[e]; sorted by
   (phase, src), as aapcgen/alltoall/phases.py build_phases. */
typedef struct aapc_job_phases {
    int32_t n_ranks, n_phases;
    int64_t n_messages; /* n_ranks (n_ranks - 1) */
    int32_t *phase, *src, *dst;
    int32_t lower_bound;       /* max(P - 1, max over links of ceil(load / cap)) */
    int32_t root;              /* node id of the root switch (or machine node) */
    int32_t bottleneck_a, bottleneck_b; /* node ids of the first link with the largest load */
    char error[160];           /* after a failure: one line naming the offending element */
} aapc_job_phases_t;

/* Build the job tree of P ranks, rank r on cluster machine rank_machine[r]. Returns 0 or an
   AAPC_JOB_* code (message in err). Free with aapc_job_tree_free (safe on a zeroed tree). */
int aapc_job_tree(const aapc_cluster_t *c, const int32_t *rank_machine, int32_t P,
                  aapc_job_tree_t *t, char *err, int errlen);
void aapc_job_tree_free(aapc_job_tree_t *t);

/* The contention-free phases of the job tree: seed 002's L optimal phases when every link
   carries one message per phase in them (L equals the lower bound), else the capacity-aware
   phases of aapc_cluster_capacity.c (faster switch links carry several messages per phase;
   out->n_phases reaches or nears out->lower_bound). Returns 0 or an AAPC_JOB_* code
   (out->error says why; out then holds no memory). */
int aapc_job_phases(const aapc_cluster_t *c, const int32_t *rank_machine, int32_t P,
                    aapc_job_phases_t *out);
void aapc_job_phases_free(aapc_job_phases_t *p);
/* The same phases as aapc_job_phases streamed, none stored: emit(ctx, phase, n, src, dst) once
   per phase that has messages, with its n messages src[i] -> dst[i], in phase order, when they
   are seed 002's (one message per link and phase; in no set order inside a phase) or the
   capacity-aware ones of aapc_cluster_groups.c (by source inside a phase, as stored: a link's
   lanes are the same); AAPC_JOB_ECAPACITY (nothing emitted) when they would be the general
   scheduler's capacity-aware ones. info gets everything of aapc_job_phases_t but the messages
   (n_messages 0, no memory). Returns 0 or an AAPC_JOB_* code (info->error says why). O(P^2)
   time; memory O(subtrees of the root), O(P d + phases) for the groups' construction. */
typedef void (*aapc_job_emit_fn)(void *ctx, int32_t phase, int32_t n, const int32_t *src,
                                 const int32_t *dst);
int aapc_job_phases_each(const aapc_cluster_t *c, const int32_t *rank_machine, int32_t P,
                         aapc_job_emit_fn emit, void *ctx, aapc_job_phases_t *info);
/* Seed 002's phases whatever the link speeds (one message per link and phase). */
int aapc_job_phases_unit(const aapc_cluster_t *c, const int32_t *rank_machine, int32_t P,
                         aapc_job_phases_t *out);

/* ---- the per-call selection (aapc_cluster_shape.c, aapc_cluster_select.c) ---------------- */

/* The digits of the log-round exchange that follows the switch tree (aapc_cluster_digits.c):
   where the job's machines hang from a uniform tree (every switch at one height has the same
   number of non-empty children, every machine at the bottom, chains of one child folded), one
   digit per level, bottom-up, its radix the level's fan-out. In the tree's depth-first order
   (aapc_cluster_machine_order) the machine at place x has digit l = (x / unit[l]) % radix[l],
   unit[l] = radix[0] x ... x radix[l-1]. */
#define AAPC_MAX_DIGITS 16
typedef struct aapc_digits {
    int32_t levels;                  /* 0: no digits (not uniform, or fewer than 2 machines) */
    int32_t radix[AAPC_MAX_DIGITS];  /* fan-out of each level, the machines' switches first */
    int32_t cap[AAPC_MAX_DIGITS];    /* messages the slowest link of the level carries per
                                        phase, each way: floor(bw / bref), at least 1 */
    int32_t groups[AAPC_MAX_DIGITS]; /* contention-free sub-phases of each phase of the level:
                                        max over j <= l of ceil(unit[j] / cap[j]) */
} aapc_digits_t;
/* The digits of the tree restricted to machines[0..n-1] (any order, repeats allowed). Returns
   AAPC_JOB_OK (out->levels 0 when the tree is not uniform), AAPC_JOB_EINVAL (a machine out of
   range, not a tree) or AAPC_JOB_ENOMEM. */
int aapc_cluster_digits(const aapc_cluster_t *c, const int32_t *machines, int32_t n,
                        aapc_digits_t *out);
/* groups[] from levels, radix[] and cap[]. */
void aapc_digits_groups(aapc_digits_t *d);
/* The digits of P ranks placed R per machine on machines whose digits are `machines`: those
   digits when R = 1, a digit of radix R below them when every machine runs R > 1 ranks (its
   links: the machine's memory, AAPC_DIGITS_MEMORY_CAP), none (levels 0) otherwise. */
#define AAPC_DIGITS_MEMORY_CAP 65535
/* The place x (+) s (sign 1) or x (-) s (sign -1), digit by digit, each modulo its radix. */
int32_t aapc_digits_add(const aapc_digits_t *d, int32_t x, int32_t s, int sign);
void aapc_digits_of_ranks(const aapc_digits_t *machines, int32_t per_machine, int equal,
                          aapc_digits_t *out);

/* What the selection knows of a job: from its ranks' machines, the same on every rank. */
typedef struct aapc_job_shape {
    int32_t ranks, machines;   /* P, N */
    int32_t max_per_machine;   /* R: the most ranks of the job on one machine */
    int32_t equal_per_machine; /* 1: every machine of the job runs R ranks */
    double rank_phases;        /* phases of the per-rank schedule (max(P-1, link loads/cap)) */
    double machine_phases;     /* phases of the per-machine schedule (aggregated blocks) */
    double bound_s_per_byte;   /* the bound: seconds per byte of block on the busiest link */
    double machine_load;       /* the most machine pairs a link carries each way: seed 002's
                                  phases, which machine_phases reaches when no link is fast
                                  enough to carry two in a phase (the leaders stream them) */
    double rank_load;          /* the most rank pairs a link carries each way (at least P - 1):
                                  the phases of a per-rank schedule that puts one message on
                                  a link per phase, as MPI_Alltoallv's job-tree schedulers do
                                  (runtime_c/vsched/: faster links carry no more) */
    double unit_s_per_byte;    /* that schedule's seconds per byte of block: rank_load over
                                  the slowest machine link's bandwidth */
    int32_t machine_streamed;  /* 1: the leaders stream their machine-level phases (seed 002's,
                                  or the exact ones of aapc_cluster_groups.c where faster root
                                  links set the bound); 0: they compute them whole */
    double inflight;           /* the windows' budget the model prices: the cluster's
                                  inflight_bytes, AAPC_INFLIGHT_BYTES where it gives none */
    aapc_digits_t digits;      /* the job's machines' digits (levels 0: none), the log-round
                                  exchange's over machines */
    aapc_digits_t rank_digits; /* the same over the ranks (aapc_digits_of_ranks): the machines'
                                  with one rank per machine; with R > 1 on every machine a
                                  digit of R below them (a machine's ranks: no link) */
} aapc_job_shape_t;

/* The shape of P ranks, rank r on machine rank_machine[r]: O(P + S + M), any P. Returns
   AAPC_JOB_OK, AAPC_JOB_EINVAL (a machine out of range, a bad cluster) or AAPC_JOB_ENOMEM. */
int aapc_job_shape(const aapc_cluster_t *c, const int32_t *rank_machine, int32_t P,
                   aapc_job_shape_t *out);

/* The ways an all-to-all can take, in the order ties are broken. */
enum { AAPC_WAY_LIBRARY = 0, AAPC_WAY_PHASES, AAPC_WAY_LEADERS, AAPC_WAY_LOGROUND, AAPC_N_WAYS };
#define AAPC_WAYS_ALL ((1u << AAPC_N_WAYS) - 1u)
#define AAPC_WAYS_OURS (AAPC_WAYS_ALL & ~(1u << AAPC_WAY_LIBRARY))
/* With the ways of aapc_way_choose: the phased ways run one phase at a time (MPI_Alltoallv and
   the non-blocking calls, which keep AAPC_WINDOW's rows): their costs count no windows. */
#define AAPC_WAYS_NO_WINDOWS (1u << 16)
/* ... and for MPI_Alltoallv (blocking or not): the phases are those of its job-tree schedulers,
   one message on a link per phase (shape rank_load, unit_s_per_byte); the log-round way runs
   among the ranks (no aggregation) and only in the tree's digits (shape rank_digits; there is
   no radix-2 form of it). */
#define AAPC_WAYS_ALLTOALLV (1u << 17)

extern const aapc_cost_model_t aapc_cost_model_default;
/* The model's time of `way` for blocks of b bytes on a job of shape s (seconds). */
double aapc_way_cost(const aapc_cost_model_t *m, const aapc_job_shape_t *s, int way, double b);
/* The window, in phases, of a phase schedule whose messages are message_bytes each (a block
   for the per-rank phases, a leader's aggregated block to one machine for the leaders'), over
   `phases` phases: the largest power of two w with w x message_bytes <= budget bytes (<= 0:
   AAPC_INFLIGHT_BYTES), at least 1, at most the power of two that covers every phase (and
   AAPC_INFLIGHT_MAX_WINDOW). A window of w phases lets each receiver take w messages at once
   (incast), so the default budget stays under a shallow switch port's buffer (the emulated
   ports hold 100 KB: docs/measurements/windows.md); small blocks then cost a few latencies
   instead of one per phase. A lossless or deep-buffered fabric says so in the topology
   (`inflight`, aapc_cluster_t.inflight_bytes), which both the cost model (shape inflight) and
   the executors use; AAPC_INFLIGHT changes what runs only. The same on every rank (from the
   block size, the shape and a shared setting). */
#define AAPC_INFLIGHT_BYTES 65536.0
/* The block size up to which the MPI library's all-to-all is taken for Bruck's log rounds
   (MPICH's MPIR_CVAR_ALLTOALL_SHORT_MSG_SIZE default, SimGrid's MPICH selector's), above it a
   direct exchange of P - 1 messages per rank (the cost model's library terms). */
#define AAPC_LIB_SHORT_BYTES 256.0
#define AAPC_INFLIGHT_MAX_WINDOW 4096 /* the executor's AAPC_MAX_WINDOW */
int32_t aapc_inflight_window(double message_bytes, double phases, double budget);
/* 1 when the per-rank phases of b-byte blocks on shape s all fit one window: every rank's
   P - 1 blocks within `budget` bytes (0: AAPC_INFLIGHT_BYTES) and aapc_inflight_window covering
   every phase. Such a call needs no syncs and carries the argument agreement in its messages
   (alltoall/aapc_alltoall_carried.c). */
int aapc_phases_in_one_window(const aapc_job_shape_t *s, double b, double budget);

/* The most machines the aggregated ways take (each machine's leader builds its rows of the
   machine-level phases at the first call of the leader-based way): AAPC_LEADERS_MAX_MACHINES
   when the phases are computed whole (the general capacity-aware ones, 12 N^2 bytes:
   tuning/bench_first_call.py 73 ms and 29 MiB at 1024 machines, 2.9 s and 1.2 GiB at 4096),
   AAPC_LEADERS_MAX_MACHINES_STREAMED when they are streamed (machine_streamed: seed 002's, or
   aapc_cluster_groups.c's, each link keeping its last w messages per lane: 0.18 s and 0.27 s,
   both about 5 MiB, at 4096); larger jobs take the log-round exchange among all ranks (O(P) at
   the first call) or the library. */
#define AAPC_LEADERS_MAX_MACHINES 1024
#define AAPC_LEADERS_MAX_MACHINES_STREAMED 4096
/* 1 when the aggregated ways run on shape s: R > 1 ranks on every one of 2 to the limits
   above machines. */
int aapc_leaders_fit(const aapc_job_shape_t *s);

/* The ways that can run on shape s (a bit per way): the library always; the phases from 2 to
   AAPC_JOB_MAX_RANKS ranks; leaders where aapc_leaders_fit; the log-round exchange from 2
   ranks, any number and placement. */
unsigned aapc_ways_possible(const aapc_job_shape_t *s);
/* The cheapest way among `allowed` (a bit per way, and AAPC_WAYS_NO_WINDOWS) that can run on
   s; -1 when none. m NULL: aapc_cost_model_default (an untuned library). Where m holds measured
   points of s's shape (the same machines, ranks on each, windows, and bound within 1%), the
   choice at a measured size b is the way measured fastest there, and between the two measured
   sizes nearest b, when they are at most AAPC_POINTS_SPAN apart, the model's between the two
   sizes' fastest; elsewhere, and for MPI_Alltoallv and the calls without windows, the model
   alone. */
#define AAPC_POINTS_SPAN 2.0
int aapc_way_choose(const aapc_cost_model_t *m, const aapc_job_shape_t *s, double b,
                    unsigned allowed);
/* How many of m's measured points are of s's shape (aapcgen info). */
int32_t aapc_way_points_of(const aapc_cost_model_t *m, const aapc_job_shape_t *s);
/* 1 when aapc_way_choose(m, s, b, allowed) is the library at every block size (b = 0 and
   2^(k/16) bytes from 1 B to 2^60 B, a sixteenth of an octave apart: a way that wins nowhere
   there wins at most between two neighbours): a caller that must agree on b before it
   chooses (MPI_Alltoallv) need not, and hands every call to the library. O(1000) costs. */
int aapc_way_library_only(const aapc_cost_model_t *m, const aapc_job_shape_t *s,
                          unsigned allowed);
/* "library", "phases", "leaders", "loground" (AAPC_WAY=...), and back (-1: no such way). */
const char *aapc_way_name(int way);
int aapc_way_named(const char *name);
/* The way a value of AAPC_WAY forces: -1 none (unset, empty or "auto"), AAPC_WAY_UNKNOWN not
   the name of a way (the caller says so once and chooses by size). */
#define AAPC_WAY_UNKNOWN (-2)
int aapc_way_forced(const char *value);
/* aapc_way_forced(getenv("AAPC_WAY")), read once per process (a call the library serves reads
   no environment); *text (if not NULL): the variable's value. */
int aapc_way_env(const char **text);

/* position[m]: the place of machine m in the switch tree's depth-first order (from the first
   switch, children in link order, a switch's own machines before its child switches), so the
   machines below any switch are consecutive (aapc_cluster_order.c). Returns AAPC_JOB_OK,
   AAPC_JOB_EINVAL (not a tree) or AAPC_JOB_ENOMEM. */
int aapc_cluster_machine_order(const aapc_cluster_t *c, int32_t *position);

/* The machine called `name` (AAPC_MACHINE), or -1. */
int32_t aapc_cluster_machine_named(const aapc_cluster_t *c, const char *name);
/* The machine a host name names: its host (or name) in full, else a unique short-name match
   ("n3" = "n3.cluster.org"); -1 when none or ambiguous. */
int32_t aapc_cluster_machine_of_host(const aapc_cluster_t *c, const char *host);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_CLUSTER_H */
