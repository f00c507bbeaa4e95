/*
 * aapc_cluster_phases.c: seed 002's optimal contention-free AAPC phases (sections 4.2, 4.3)
 * for the job tree of a communicator; message for message the schedule of
 * aapcgen/alltoall/phases.py build_phases.
 *
 * Algorithm (notation of the paper; subtrees T0..Tk-1 of the root, |M0| >= |M1| >= ...,
 * L = |M0| (P - |M0|) phases; the messages Ti -> Tj take consecutive phases from
 * |Mi| (|M_{i+1}| + ... + |M_{j-1}|) when j > i, from L - |Mj| (|M_{j+1}| + ... + |M_i|) when
 * i > j):
 *   1. T0 -> Tj: receiver m[j][(p - L) mod |Mj|], sender m[0][(q + q / lcm(|M0|,|Mj|)) mod |M0|];
 *   2. Ti -> T0: sender m[i][q / |M0|], receiver (sender of phase p in step 1 + shift) mod |M0|
 *      with shift 1 + (p / |M0|) mod (|M0| - 1) (Table 3 as Table 4 uses it);
 *   3. local messages of T0 in phases p < |M0|(|M0|-1): the receiver of p sends to the sender;
 *   4, 6. Ti -> Tj, i, j >= 1: broadcast pattern m[i][q / |Mj|] -> m[j][q mod |Mj|];
 *   5. local messages of Ti (i >= 1) in the window of Ti -> T(i-1).
 * Then a counting sort by source and a stable counting sort by phase give (phase, src) order.
 * Cost: O(P^2) time and 12 P^2 bytes for the P(P-1) messages plus 16 P^2 bytes of sort
 * buffers (about 28 MiB at P = 1024); no communication.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_cluster_impl.h"

void aapc_job_phases_free(aapc_job_phases_t *p)
{
    free(p->phase);
    free(p->src);
    free(p->dst);
    p->phase = p->src = p->dst = NULL;
    p->n_messages = 0;
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b != 0) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static int64_t pmod(int64_t a, int64_t m)
{
    int64_t r = a % m;
    return r < 0 ? r + m : r;
}

struct emit {
    int32_t *phase, *src, *dst;
    int64_t n;
};

static void put(struct emit *o, int64_t phase, int32_t src, int32_t dst)
{
    o->phase[o->n] = (int32_t)phase;
    o->src[o->n] = src;
    o->dst[o->n] = dst;
    o->n++;
}

/* First phase of Ti -> Tj (offs[x] = |M0| + ... + |M(x-1)|). */
static int64_t block_start(const int64_t *sizes, const int64_t *offs, int64_t load, int i, int j)
{
    if (j > i)
        return sizes[i] * (offs[j] - offs[i + 1]);
    return load - sizes[j] * (offs[i + 1] - offs[j + 1]);
}

static void schedule(const job_analysis *a, int64_t *sizes, int64_t *offs, int32_t *send0,
                     int32_t *recv0, struct emit *o)
{
    int k = a->n_subtrees;
    const int32_t *mem = a->members;
    for (int i = 0; i < k; i++) {
        sizes[i] = a->sub_size[i];
        offs[i + 1] = offs[i] + sizes[i];
    }
    int64_t n = offs[k], m0 = sizes[0], load = m0 * (n - m0);
    for (int j = 1; j < k; j++) { /* 1: T0 -> Tj */
        int64_t mj = sizes[j], lcm = m0 / gcd64(m0, mj) * mj;
        int64_t start = block_start(sizes, offs, load, 0, j);
        for (int64_t q = 0; q < m0 * mj; q++) {
            int64_t p = start + q, x = (q + q / lcm) % m0, y = pmod(p - load, mj);
            send0[p] = (int32_t)x;
            put(o, p, mem[x], mem[offs[j] + y]);
        }
    }
    for (int i = 1; i < k; i++) { /* 2: Ti -> T0 */
        int64_t start = block_start(sizes, offs, load, i, 0);
        for (int64_t q = 0; q < sizes[i] * m0; q++) {
            int64_t p = start + q, shift = m0 == 1 ? 0 : 1 + (p / m0) % (m0 - 1);
            int64_t y = (send0[p] + shift) % m0;
            recv0[p] = (int32_t)y;
            put(o, p, mem[offs[i] + q / m0], mem[y]);
        }
    }
    for (int64_t p = 0; p < m0 * (m0 - 1); p++) /* 3: local messages of T0 */
        put(o, p, mem[recv0[p]], mem[send0[p]]);
    for (int i = 1; i < k; i++) /* 4, 6: Ti -> Tj, i, j >= 1 */
        for (int j = 1; j < k; j++) {
            if (i == j)
                continue;
            int64_t mj = sizes[j], start = block_start(sizes, offs, load, i, j);
            for (int64_t q = 0; q < sizes[i] * mj; q++)
                put(o, start + q, mem[offs[i] + q / mj], mem[offs[j] + q % mj]);
        }
    for (int i = 1; i < k; i++) { /* 5: local messages of Ti */
        int64_t mi = sizes[i], mprev = sizes[i - 1];
        if (mi < 2)
            continue;
        for (int64_t e = 0; e < mi * mi; e++) {
            int64_t sender = e / mi, w = e % mi, receiver = (sender * mprev + w) % mi;
            if (receiver != sender)
                put(o, load - mprev * mi + sender * mprev + w, mem[offs[i] + receiver],
                    mem[offs[i] + sender]);
        }
    }
}

/* Stable counting sort by key[] (0..nkeys-1) of the messages in[0..n) (NULL: 0..n-1, in
   order): out gets them in key order. */
static void counting_order(const int32_t *key, int64_t n, int32_t nkeys, const int32_t *in,
                           int32_t *out, int64_t *count)
{
    memset(count, 0, ((size_t)nkeys + 1) * sizeof *count);
    for (int64_t e = 0; e < n; e++)
        count[key[in ? in[e] : e] + 1]++;
    for (int32_t v = 0; v < nkeys; v++)
        count[v + 1] += count[v];
    for (int64_t e = 0; e < n; e++) {
        int32_t m = in ? in[e] : (int32_t)e;
        out[count[key[m]]++] = m;
    }
}

/* Seed 002's phases on an analysed tree (a is freed). */
static int seed_phases(job_analysis *a_, aapc_job_phases_t *out)
{
    job_analysis a = *a_;
    int32_t P = a.tree.n_leaves;
    int rc;
    int64_t nm = (int64_t)P * (P - 1);
    int64_t *sizes = calloc((size_t)a.n_subtrees, sizeof *sizes);
    int64_t *offs = calloc((size_t)a.n_subtrees + 1, sizeof *offs);
    int32_t *send0 = malloc((size_t)a.load * sizeof *send0);
    int32_t *recv0 = malloc((size_t)a.load * sizeof *recv0);
    struct emit raw = {malloc((size_t)nm * sizeof(int32_t)), malloc((size_t)nm * sizeof(int32_t)),
                       malloc((size_t)nm * sizeof(int32_t)), 0};
    int32_t *idx = malloc((size_t)nm * sizeof *idx), *tmp = malloc((size_t)nm * sizeof *tmp);
    int64_t *count = malloc(((size_t)(a.load > P ? a.load : P) + 1) * sizeof *count);
    out->phase = malloc((size_t)nm * sizeof *out->phase);
    out->src = malloc((size_t)nm * sizeof *out->src);
    out->dst = malloc((size_t)nm * sizeof *out->dst);
    rc = AAPC_JOB_ENOMEM;
    if (!sizes || !offs || !send0 || !recv0 || !raw.phase || !raw.src || !raw.dst || !idx ||
        !tmp || !count || !out->phase || !out->src || !out->dst) {
        snprintf(out->error, sizeof out->error, "out of memory for %lld messages",
                 (long long)nm);
        goto done;
    }
    schedule(&a, sizes, offs, send0, recv0, &raw);
    if (raw.n != nm) { /* the construction always yields every ordered pair once */
        snprintf(out->error, sizeof out->error, "internal: %lld messages, expected %lld",
                 (long long)raw.n, (long long)nm);
        rc = AAPC_JOB_EINVAL;
        goto done;
    }
    counting_order(raw.src, nm, P, NULL, tmp, count);                   /* by source */
    counting_order(raw.phase, nm, (int32_t)a.load, tmp, idx, count); /* stable: by phase */
    for (int64_t e = 0; e < nm; e++) {
        out->phase[e] = raw.phase[idx[e]];
        out->src[e] = raw.src[idx[e]];
        out->dst[e] = raw.dst[idx[e]];
    }
    out->n_ranks = P;
    out->n_phases = (int32_t)a.load;
    out->n_messages = nm;
    rc = AAPC_JOB_OK;
done:
    free(sizes);
    free(offs);
    free(send0);
    free(recv0);
    free(raw.phase);
    free(raw.src);
    free(raw.dst);
    free(idx);
    free(tmp);
    free(count);
    return rc;
}

/* unit: seed 002 whatever the capacities; else capacity-aware where that needs fewer phases */
static int job_phases(const aapc_cluster_t *c, const int32_t *rank_machine, int32_t P,
                      aapc_job_phases_t *out, int unit)
{
    job_analysis a;
    memset(out, 0, sizeof *out);
    int rc = job_analyse(c, rank_machine, P, &a, out->error, (int)sizeof out->error);
    if (rc != AAPC_JOB_OK)
        return rc;
    if (unit || a.lower_bound >= a.load)
        rc = seed_phases(&a, out);
    else
        rc = job_phases_capacity(&a, out, (int64_t)1 << 23);
    if (rc == AAPC_JOB_OK) {
        out->lower_bound = (int32_t)(unit ? a.load : a.lower_bound);
        out->root = a.root;
        out->bottleneck_a = a.bottleneck_a;
        out->bottleneck_b = a.bottleneck_b;
    }
    job_analysis_free(&a);
    if (rc != AAPC_JOB_OK)
        aapc_job_phases_free(out);
    return rc;
}

int aapc_job_phases(const aapc_cluster_t *c, const int32_t *rank_machine, int32_t P,
                    aapc_job_phases_t *out)
{
    return job_phases(c, rank_machine, P, out, 0);
}

int aapc_job_phases_unit(const aapc_cluster_t *c, const int32_t *rank_machine, int32_t P,
                         aapc_job_phases_t *out)
{
    return job_phases(c, rank_machine, P, out, 1);
}
