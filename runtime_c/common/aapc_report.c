/*
 * aapc_report.c: the report of what ran (AAPC_REPORT), see aapc_report.h.
 *
 * Per process: a record per communicator (found through an attribute on it, kept after the
 * communicator is freed), identified across ranks by the MPI_COMM_WORLD ranks of its members
 * (a 64-bit hash of the translated group); under it a row per (collective, routine, cause) with
 * calls, bytes sent and seconds. A call is counted once, at the outermost entry point
 * (a thread-local depth); inside it the runtime's marks say how it was served.
 * At MPI_Finalize (aapc_report_finalize): every rank writes its rows as text lines, world rank 0
 * gathers them, merges the rows of one communicator (calls: the most any rank counted; bytes:
 * the sum; seconds: the slowest rank), groups communicators of the same shape that ran the same
 * routines (the rows of a grid: one table) and prints one table per group.
 * Cost: see aapc_report.h; rank 0's merge is O(total lines x communicators) with linear
 * searches, for the few communicators programs use.
 */
#include "aapc_report.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_comm.h" /* aapc_warn_set_listener */

enum { HOW_LEN = 64, ROUTINE_LEN = 192, REASON_LEN = 256, COLL_LEN = 24 };

struct row {
    char collective[COLL_LEN];
    char routine[ROUTINE_LEN];
    char reason[REASON_LEN];
    long long calls, bytes;
    double seconds;
    struct row *next;
};

struct comm_rec {
    uint64_t key;  /* hash of the members' world ranks */
    int size, rank;
    int *members;  /* world rank of every rank (kept by rank 0 of the communicator only) */
    struct row *rows;
    struct comm_rec *next;
};

static struct comm_rec *recs = NULL;
static atomic_flag lock = ATOMIC_FLAG_INIT;
static int keyval = MPI_KEYVAL_INVALID;

/* The current call of this thread. Under SimGrid SMPI (its mpi.h defines SMPI_SHARED_MALLOC)
   the simulated ranks share OS threads, and only their global data is privatized per rank. */
#ifdef SMPI_SHARED_MALLOC
#define AAPC_PER_THREAD
#else
#define AAPC_PER_THREAD _Thread_local
#endif
static AAPC_PER_THREAD struct {
    int depth;
    int marked, fallback;
    char how[HOW_LEN];
    char reason[REASON_LEN];
    char inner[ROUTINE_LEN]; /* the first nested entry point's routine (aapc_report_entry) */
} cur;

static void take(void)
{
    while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire))
        ;
}

static void give(void)
{
    atomic_flag_clear_explicit(&lock, memory_order_release);
}

int aapc_report_on(void)
{
    static int on = -1;
    if (on < 0) {
        const char *v = getenv("AAPC_REPORT");
        on = v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
    }
    return on;
}

/* A copy without tabs or line breaks (the text format of the gather). */
static void clean_copy(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src ? src : "");
    for (char *p = dst; *p; p++)
        if (*p == '\t' || *p == '\n' || *p == '\r')
            *p = ' ';
}

static void note_warning(const char *why)
{
    aapc_report_fallback(why);
}

double aapc_report_begin(void)
{
    if (!aapc_report_on())
        return 0.0;
    if (cur.depth++ == 0) {
        static int listening = 0;
        if (!listening) {
            listening = 1;
            aapc_warn_set_listener(note_warning);
        }
        cur.marked = cur.fallback = 0;
        cur.how[0] = cur.reason[0] = cur.inner[0] = '\0';
    }
    return PMPI_Wtime();
}

void aapc_report_served(const char *how)
{
    if (cur.depth == 0)
        return;
    cur.marked = 1;
    cur.fallback = 0;
    clean_copy(cur.how, sizeof cur.how, how);
    cur.reason[0] = '\0';
}

void aapc_report_fallback(const char *reason)
{
    if (cur.depth == 0)
        return;
    cur.marked = cur.fallback = 1;
    snprintf(cur.how, sizeof cur.how, "MPI library");
    clean_copy(cur.reason, sizeof cur.reason, reason && reason[0] ? reason : "(no cause given)");
}

static int rec_delete(MPI_Comm comm, int kv, void *attr, void *extra)
{
    (void)comm;
    (void)kv;
    (void)attr;
    (void)extra;
    return MPI_SUCCESS; /* the record outlives the communicator: the report shows it */
}

/* The record of comm (created on its first call: its members' world ranks); NULL when out of
   memory or comm is not a usable intra-communicator. Called with the lock held. */
static struct comm_rec *rec_of(MPI_Comm comm)
{
    void *attr = NULL;
    int flag = 0, inter = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return NULL;
    if (keyval == MPI_KEYVAL_INVALID &&
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, rec_delete, &keyval, NULL) != MPI_SUCCESS)
        return NULL;
    if (PMPI_Comm_get_attr(comm, keyval, &attr, &flag) == MPI_SUCCESS && flag)
        return attr;
    struct comm_rec *r = calloc(1, sizeof *r);
    if (r == NULL || PMPI_Comm_size(comm, &r->size) != MPI_SUCCESS ||
        PMPI_Comm_rank(comm, &r->rank) != MPI_SUCCESS) {
        free(r);
        return NULL;
    }
    int *ranks = malloc(sizeof *ranks * (size_t)r->size);
    int *world = malloc(sizeof *world * (size_t)r->size);
    MPI_Group g = MPI_GROUP_NULL, wg = MPI_GROUP_NULL;
    int ok = ranks != NULL && world != NULL;
    for (int i = 0; ok && i < r->size; i++)
        ranks[i] = i;
    ok = ok && PMPI_Comm_group(comm, &g) == MPI_SUCCESS &&
         PMPI_Comm_group(MPI_COMM_WORLD, &wg) == MPI_SUCCESS &&
         PMPI_Group_translate_ranks(g, r->size, ranks, wg, world) == MPI_SUCCESS;
    if (g != MPI_GROUP_NULL)
        PMPI_Group_free(&g);
    if (wg != MPI_GROUP_NULL)
        PMPI_Group_free(&wg);
    free(ranks);
    if (!ok) {
        free(world);
        free(r);
        return NULL;
    }
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < r->size; i++)
        h = (h ^ (uint64_t)(uint32_t)world[i]) * 1099511628211ull;
    r->key = h ^ (uint64_t)r->size;
    struct comm_rec *same = recs; /* a dup, or a communicator made again: one record */
    while (same != NULL && (same->key != r->key || same->size != r->size))
        same = same->next;
    if (same != NULL) {
        free(world);
        free(r);
        return PMPI_Comm_set_attr(comm, keyval, same) == MPI_SUCCESS ? same : NULL;
    }
    if (r->rank == 0) {
        r->members = world;
    } else {
        free(world);
    }
    if (PMPI_Comm_set_attr(comm, keyval, r) != MPI_SUCCESS) {
        free(r->members);
        free(r);
        return NULL;
    }
    r->next = recs;
    recs = r;
    return r;
}

static void count(MPI_Comm comm, const char *collective, const char *routine, long long bytes,
                  double seconds, int rc)
{
    char label[ROUTINE_LEN];
    const char *reason = "";
    if (cur.marked) {
        snprintf(label, sizeof label, "%s (%s)", routine, cur.how);
        reason = cur.fallback ? cur.reason : "";
    } else if (rc != MPI_SUCCESS) {
        snprintf(label, sizeof label, "%s (an error, returned or raised)", routine);
    } else if (bytes == 0) {
        snprintf(label, sizeof label, "%s (no data: nothing to move)", routine);
    } else {
        snprintf(label, sizeof label, "%s", routine);
    }
    take();
    struct comm_rec *r = rec_of(comm);
    struct row *w = r ? r->rows : NULL;
    while (w != NULL && (strcmp(w->collective, collective) != 0 ||
                         strcmp(w->routine, label) != 0 || strcmp(w->reason, reason) != 0))
        w = w->next;
    if (r != NULL && w == NULL && (w = calloc(1, sizeof *w)) != NULL) {
        clean_copy(w->collective, sizeof w->collective, collective);
        clean_copy(w->routine, sizeof w->routine, label);
        clean_copy(w->reason, sizeof w->reason, reason);
        struct row **tail = &r->rows; /* in the order the program met them */
        while (*tail != NULL)
            tail = &(*tail)->next;
        *tail = w;
    }
    if (w != NULL) {
        w->calls++;
        w->bytes += bytes;
        w->seconds += seconds;
    }
    give();
}

static int finish(double t0, MPI_Comm comm, const char *collective, const char *routine,
                  long long bytes, int rc)
{
    if (cur.depth == 0)
        return rc;
    if (--cur.depth > 0) {
        if (cur.inner[0] == '\0')
            clean_copy(cur.inner, sizeof cur.inner, routine);
        return rc;
    }
    count(comm, collective, routine, bytes, PMPI_Wtime() - t0, rc);
    return rc;
}

int aapc_report_alltoall(double t0, const char *routine, const void *sendbuf, int sendcount,
                         MPI_Datatype sendtype, int recvcount, MPI_Datatype recvtype,
                         MPI_Comm comm, int rc)
{
    if (!aapc_report_on())
        return rc;
    int tsize = 0, size = 0, inplace = sendbuf == MPI_IN_PLACE;
    long long bytes = 0;
    if (comm != MPI_COMM_NULL && PMPI_Comm_size(comm, &size) == MPI_SUCCESS &&
        PMPI_Type_size(inplace ? recvtype : sendtype, &tsize) == MPI_SUCCESS)
        bytes = (long long)(inplace ? recvcount : sendcount) * tsize * size;
    return finish(t0, comm, "MPI_Alltoall", routine, bytes < 0 ? 0 : bytes, rc);
}

int aapc_report_alltoallv(double t0, const char *routine, const void *sendbuf,
                          const int sendcounts[], MPI_Datatype sendtype, const int recvcounts[],
                          MPI_Datatype recvtype, MPI_Comm comm, int rc)
{
    if (!aapc_report_on())
        return rc;
    int tsize = 0, size = 0, inplace = sendbuf == MPI_IN_PLACE, inter = 0;
    const int *counts = inplace ? recvcounts : sendcounts;
    long long bytes = 0;
    if (comm != MPI_COMM_NULL && counts != NULL &&
        PMPI_Comm_test_inter(comm, &inter) == MPI_SUCCESS && !inter &&
        PMPI_Comm_size(comm, &size) == MPI_SUCCESS &&
        PMPI_Type_size(inplace ? recvtype : sendtype, &tsize) == MPI_SUCCESS)
        for (int j = 0; j < size; j++)
            bytes += counts[j] > 0 ? (long long)counts[j] * tsize : 0;
    return finish(t0, comm, "MPI_Alltoallv", routine, bytes, rc);
}

int aapc_report_entry(double t0, const char *collective, const char *routine, long long bytes,
                      MPI_Comm comm, int rc)
{
    if (!aapc_report_on())
        return rc;
    char inner[ROUTINE_LEN];
    snprintf(inner, sizeof inner, "%s", cur.inner[0] ? cur.inner : routine);
    /* an erroneous call moved nothing to count (its counts may be anything) */
    return finish(t0, comm, collective, inner, bytes < 0 || rc != MPI_SUCCESS ? 0 : bytes, rc);
}

int aapc_report_own(double t0, const char *collective, const char *routine, long long bytes,
                    MPI_Comm comm, int rc)
{
    if (!aapc_report_on())
        return rc;
    return finish(t0, comm, collective, routine, bytes < 0 || rc != MPI_SUCCESS ? 0 : bytes, rc);
}

/* ---- at MPI_Finalize: this rank's lines, gathered to world rank 0 ------------------------- */

struct text {
    char *s;
    size_t len, cap;
    int failed;
};

static void add(struct text *t, const char *fmt, ...)
{
    va_list ap;
    for (int attempt = 0; attempt < 2 && !t->failed; attempt++) {
        va_start(ap, fmt);
        int n = vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = 1;
            return;
        }
        if (t->s != NULL && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = (t->cap + (size_t)n + 1) * 2;
        char *s = realloc(t->s, cap);
        if (s == NULL) {
            t->failed = 1;
            return;
        }
        t->s = s;
        t->cap = cap;
    }
}

/* H host / C key size members / R key collective routine reason calls bytes seconds. */
static void my_lines(struct text *t)
{
    char host[MPI_MAX_PROCESSOR_NAME + 1] = "";
    const char *machine = getenv("AAPC_MACHINE");
    int len = 0;
    if (machine != NULL && machine[0] != '\0')
        clean_copy(host, sizeof host, machine);
    else if (PMPI_Get_processor_name(host, &len) != MPI_SUCCESS)
        snprintf(host, sizeof host, "?");
    add(t, "H\t%s\n", host);
    take();
    for (struct comm_rec *r = recs; r != NULL; r = r->next) {
        if (r->rows == NULL)
            continue;
        add(t, "C\t%llx\t%d\t", (unsigned long long)r->key, r->size);
        for (int i = 0; r->members != NULL && i < r->size; i++)
            add(t, i ? ",%d" : "%d", r->members[i]);
        add(t, "%s\n", r->members ? "" : "-");
        for (struct row *w = r->rows; w != NULL; w = w->next)
            add(t, "R\t%llx\t%s\t%s\t%s\t%lld\t%lld\t%.9g\n", (unsigned long long)r->key,
                w->collective, w->routine, w->reason, w->calls, w->bytes, w->seconds);
    }
    give();
}

/* Rank 0's merged view. */
struct mrow {
    char collective[COLL_LEN], routine[ROUTINE_LEN], reason[REASON_LEN];
    long long calls, bytes;
    double seconds;
};

struct mcomm {
    unsigned long long key;
    int size, *members; /* members: NULL until rank 0 of the communicator's line is read */
    int machines, rpm_min, rpm_max;
    struct mrow *rows;
    int nrows, caprows;
    int printed;
};

struct merged {
    char **host; /* world rank -> host (or AAPC_MACHINE) */
    int nranks;
    struct mcomm *comms;
    int ncomms, capcomms;
};

static struct mcomm *mcomm_of(struct merged *m, unsigned long long key, int size)
{
    for (int i = 0; i < m->ncomms; i++)
        if (m->comms[i].key == key && m->comms[i].size == size)
            return &m->comms[i];
    if (m->ncomms == m->capcomms) {
        int cap = m->capcomms ? 2 * m->capcomms : 16;
        struct mcomm *c = realloc(m->comms, sizeof *c * (size_t)cap);
        if (c == NULL)
            return NULL;
        m->comms = c;
        m->capcomms = cap;
    }
    struct mcomm *c = &m->comms[m->ncomms++];
    memset(c, 0, sizeof *c);
    c->key = key;
    c->size = size;
    return c;
}

static void merge_row(struct mcomm *c, const char *coll, const char *routine, const char *reason,
                      long long calls, long long bytes, double seconds)
{
    for (int i = 0; i < c->nrows; i++) {
        struct mrow *w = &c->rows[i];
        if (strcmp(w->collective, coll) == 0 && strcmp(w->routine, routine) == 0 &&
            strcmp(w->reason, reason) == 0) {
            w->calls = calls > w->calls ? calls : w->calls;
            w->bytes += bytes;
            w->seconds = seconds > w->seconds ? seconds : w->seconds;
            return;
        }
    }
    if (c->nrows == c->caprows) {
        int cap = c->caprows ? 2 * c->caprows : 4;
        struct mrow *rows = realloc(c->rows, sizeof *rows * (size_t)cap);
        if (rows == NULL)
            return;
        c->rows = rows;
        c->caprows = cap;
    }
    struct mrow *w = &c->rows[c->nrows++];
    snprintf(w->collective, sizeof w->collective, "%s", coll);
    snprintf(w->routine, sizeof w->routine, "%s", routine);
    snprintf(w->reason, sizeof w->reason, "%s", reason);
    w->calls = calls;
    w->bytes = bytes;
    w->seconds = seconds;
}

/* Split a line at tabs into at most n fields (in place); returns the number found. */
static int fields(char *line, char **f, int n)
{
    int k = 0;
    f[k++] = line;
    for (char *p = line; *p && k < n; p++)
        if (*p == '\t') {
            *p = '\0';
            f[k++] = p + 1;
        }
    return k;
}

static void parse_rank(struct merged *m, int world_rank, char *text, size_t len)
{
    char *end = text + len, *line = text;
    while (line < end) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        if (nl == NULL)
            break;
        *nl = '\0';
        char *f[8];
        int k = fields(line, f, 8);
        if (k >= 2 && strcmp(f[0], "H") == 0 && world_rank < m->nranks) {
            free(m->host[world_rank]);
            m->host[world_rank] = malloc(strlen(f[1]) + 1);
            if (m->host[world_rank] != NULL)
                strcpy(m->host[world_rank], f[1]);
        } else if (k >= 4 && strcmp(f[0], "C") == 0) {
            struct mcomm *c = mcomm_of(m, strtoull(f[1], NULL, 16), atoi(f[2]));
            if (c != NULL && c->members == NULL && strcmp(f[3], "-") != 0 && c->size > 0 &&
                (c->members = malloc(sizeof *c->members * (size_t)c->size)) != NULL) {
                char *p = f[3];
                for (int i = 0; i < c->size; i++) {
                    c->members[i] = (int)strtol(p, &p, 10);
                    p += *p == ',';
                }
            }
        } else if (k >= 8 && strcmp(f[0], "R") == 0) {
            unsigned long long key = strtoull(f[1], NULL, 16);
            struct mcomm *c = NULL;
            for (int i = 0; i < m->ncomms && c == NULL; i++)
                if (m->comms[i].key == key)
                    c = &m->comms[i];
            if (c != NULL)
                merge_row(c, f[2], f[3], f[4], atoll(f[5]), atoll(f[6]), atof(f[7]));
        }
        line = nl + 1;
    }
}

/* Machines of a communicator and its ranks per machine, from the members' hosts. */
static void shape(struct merged *m, struct mcomm *c)
{
    c->machines = 0;
    c->rpm_min = c->rpm_max = 0;
    if (c->members == NULL)
        return;
    int *count = calloc((size_t)c->size, sizeof *count);
    int *first = malloc(sizeof *first * (size_t)c->size);
    if (count == NULL || first == NULL) {
        free(count);
        free(first);
        return;
    }
    for (int i = 0; i < c->size; i++) { /* first[i]: the first member on i's host */
        int w = c->members[i];
        const char *h = w >= 0 && w < m->nranks && m->host[w] ? m->host[w] : "?";
        first[i] = i;
        for (int j = 0; j < i; j++) {
            int v = c->members[j];
            const char *g = v >= 0 && v < m->nranks && m->host[v] ? m->host[v] : "?";
            if (strcmp(g, h) == 0) {
                first[i] = first[j];
                break;
            }
        }
        count[first[i]]++;
    }
    for (int i = 0; i < c->size; i++)
        if (count[i] > 0) {
            c->machines++;
            c->rpm_min = c->rpm_min == 0 || count[i] < c->rpm_min ? count[i] : c->rpm_min;
            c->rpm_max = count[i] > c->rpm_max ? count[i] : c->rpm_max;
        }
    free(count);
    free(first);
}

/* Two communicators print as one group: same shape and the same rows (collective, routine,
   cause). */
static int same_group(const struct mcomm *a, const struct mcomm *b)
{
    if (a->size != b->size || a->machines != b->machines || a->rpm_min != b->rpm_min ||
        a->rpm_max != b->rpm_max || a->nrows != b->nrows)
        return 0;
    for (int i = 0; i < a->nrows; i++) {
        int found = 0;
        for (int j = 0; j < b->nrows && !found; j++)
            found = strcmp(a->rows[i].collective, b->rows[j].collective) == 0 &&
                    strcmp(a->rows[i].routine, b->rows[j].routine) == 0 &&
                    strcmp(a->rows[i].reason, b->rows[j].reason) == 0;
        if (!found)
            return 0;
    }
    return 1;
}

static void ranks_text(char *out, size_t n, const int *members, int size)
{
    size_t used = 0;
    out[0] = '\0';
    if (members == NULL) {
        snprintf(out, n, "?");
        return;
    }
    for (int i = 0; i < size && used + 24 < n;) {
        int j = i;
        while (j + 1 < size && members[j + 1] == members[j] + 1)
            j++;
        int w = j > i ? snprintf(out + used, n - used, "%s%d-%d", i ? "," : "", members[i],
                                 members[j])
                      : snprintf(out + used, n - used, "%s%d", i ? "," : "", members[i]);
        used += w > 0 ? (size_t)w : 0;
        i = j + 1;
        if (i < size && used + 24 >= n)
            snprintf(out + used, n - used, ",...");
    }
}

/* 1234567 -> "1,234,567" (exact: the report's counts are checked against programs). */
static void bytes_text(char *out, size_t n, long long b)
{
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%lld", b < 0 ? 0 : b), k = 0;
    for (int i = 0; i < len && (size_t)k + 2 < n; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            out[k++] = ',';
        out[k++] = digits[i];
    }
    out[k] = '\0';
}

/* Larger communicators first, then by their first world rank. */
static int by_size(const void *a, const void *b)
{
    const struct mcomm *x = a, *y = b;
    if (x->size != y->size)
        return y->size - x->size;
    int fx = x->members ? x->members[0] : -1, fy = y->members ? y->members[0] : -1;
    return (fx > fy) - (fx < fy);
}

static void print_report(FILE *out, struct merged *m, const char *topology)
{
    int machines = 0;
    for (int w = 0; w < m->nranks; w++) {
        int seen = 0;
        for (int v = 0; v < w && !seen; v++)
            seen = m->host[v] && m->host[w] && strcmp(m->host[v], m->host[w]) == 0;
        machines += !seen;
    }
    fprintf(out, "aapcgen report: %d ranks on %d machine%s%s%s%s\n", m->nranks, machines,
            machines == 1 ? "" : "s", topology ? " (topology " : "", topology ? topology : "",
            topology ? ")" : "");
    if (m->ncomms == 0)
        fprintf(out, "  no all-to-all call went through aapcgen's routines\n");
    for (int i = 0; i < m->ncomms; i++)
        shape(m, &m->comms[i]);
    if (m->ncomms > 1)
        qsort(m->comms, (size_t)m->ncomms, sizeof *m->comms, by_size);
    for (int i = 0; i < m->ncomms; i++) {
        struct mcomm *c = &m->comms[i];
        if (c->printed)
            continue;
        int n = 0;
        struct mrow *sum = malloc(sizeof *sum * (size_t)(c->nrows ? c->nrows : 1));
        if (sum == NULL)
            return;
        memcpy(sum, c->rows, sizeof *sum * (size_t)c->nrows);
        char list[160] = "", one[96];
        for (int j = i; j < m->ncomms; j++) {
            struct mcomm *d = &m->comms[j];
            if (d->printed || !same_group(c, d))
                continue;
            d->printed = 1;
            if (n++ > 0) {
                for (int a = 0; a < c->nrows; a++)
                    for (int b = 0; b < d->nrows; b++)
                        if (strcmp(sum[a].collective, d->rows[b].collective) == 0 &&
                            strcmp(sum[a].routine, d->rows[b].routine) == 0 &&
                            strcmp(sum[a].reason, d->rows[b].reason) == 0) {
                            sum[a].calls += d->rows[b].calls;
                            sum[a].bytes += d->rows[b].bytes;
                            sum[a].seconds =
                                d->rows[b].seconds > sum[a].seconds ? d->rows[b].seconds
                                                                    : sum[a].seconds;
                        }
            }
            if (n <= 3) {
                ranks_text(one, sizeof one, d->members, d->size);
                size_t used = strlen(list);
                snprintf(list + used, sizeof list - used, "%s%s", n > 1 ? "; " : "", one);
            }
        }
        char rpm[32];
        if (c->rpm_min == c->rpm_max)
            snprintf(rpm, sizeof rpm, "%d", c->rpm_min);
        else
            snprintf(rpm, sizeof rpm, "%d to %d", c->rpm_min, c->rpm_max);
        const char *what = c->size == m->nranks ? " (MPI_COMM_WORLD)" : "";
        if (n == 1)
            fprintf(out, "communicator of %d rank%s%s, world ranks %s: %d machine%s, %s rank%s "
                         "per machine\n",
                    c->size, c->size == 1 ? "" : "s", what, list, c->machines,
                    c->machines == 1 ? "" : "s", rpm, strcmp(rpm, "1") == 0 ? "" : "s");
        else
            fprintf(out, "%d communicators of %d rank%s, world ranks %s%s: %d machine%s, %s "
                         "rank%s per machine (calls and bytes summed over them)\n",
                    n, c->size, c->size == 1 ? "" : "s", list, n > 3 ? "; ..." : "", c->machines,
                    c->machines == 1 ? "" : "s", rpm, strcmp(rpm, "1") == 0 ? "" : "s");
        fprintf(out, "  %-20s %8s %17s %10s  %s\n", "collective", "calls", "bytes", "seconds",
                "routine");
        for (int a = 0; a < c->nrows; a++) {
            char b[32];
            bytes_text(b, sizeof b, sum[a].bytes);
            fprintf(out, "  %-20s %8lld %17s %10.4f  %s%s%s\n", sum[a].collective, sum[a].calls,
                    b, sum[a].seconds, sum[a].routine, sum[a].reason[0] ? ": " : "",
                    sum[a].reason);
        }
        free(sum);
    }
    fflush(out);
}

void aapc_report_finalize(const char *topology)
{
    static int done = 0;
    int init = 0, fin = 0, rank = 0, size = 0;
    if (done || PMPI_Initialized(&init) != MPI_SUCCESS || !init ||
        PMPI_Finalized(&fin) != MPI_SUCCESS || fin)
        return;
    done = 1;
    int any = aapc_report_on();
    if (PMPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS ||
        !any)
        return;
    MPI_Comm world = MPI_COMM_NULL;
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &world) != MPI_SUCCESS)
        return;
    PMPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
    PMPI_Comm_rank(world, &rank);
    PMPI_Comm_size(world, &size);
    struct text t = {NULL, 0, 0, 0};
    my_lines(&t);
    long long limit = (long long)(0x7fffffff / (size > 0 ? size : 1));
    int len = t.failed || t.s == NULL ? 0 : (int)((long long)t.len > limit ? limit : (long long)t.len);
    while (len > 0 && t.s[len - 1] != '\n') /* cut at a line */
        len--;
    int *lens = NULL, *displs = NULL;
    char *all = NULL;
    long long total = 0;
    if (rank == 0) {
        lens = malloc(sizeof *lens * (size_t)size);
        displs = malloc(sizeof *displs * (size_t)size);
    }
    int rc = PMPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, world);
    if (rank == 0 && rc == MPI_SUCCESS && lens != NULL && displs != NULL) {
        for (int r = 0; r < size; r++) {
            displs[r] = (int)total;
            total += lens[r];
        }
        all = malloc((size_t)total + 1);
    }
    /* rank 0 short of memory receives nothing: its gather counts are then all 0 */
    if (rank == 0 && all == NULL && lens != NULL && displs != NULL)
        for (int r = 0; r < size; r++)
            lens[r] = displs[r] = 0;
    if (rc == MPI_SUCCESS)
        rc = PMPI_Gatherv(t.s, len, MPI_CHAR, all, lens, displs, MPI_CHAR, 0, world);
    if (rank == 0 && rc == MPI_SUCCESS && all != NULL) {
        struct merged m;
        memset(&m, 0, sizeof m);
        m.nranks = size;
        m.host = calloc((size_t)size, sizeof *m.host);
        if (m.host != NULL) {
            for (int r = 0; r < size; r++)
                parse_rank(&m, r, all + displs[r], (size_t)lens[r]);
            const char *where = getenv("AAPC_REPORT");
            int to_file = where != NULL && strcmp(where, "1") != 0 && strcmp(where, "0") != 0 &&
                          strcmp(where, "stderr") != 0 && where[0] != '\0';
            FILE *out = to_file ? fopen(where, "w") : stderr;
            if (out == NULL) {
                fprintf(stderr, "aapcgen: AAPC_REPORT=%s: cannot write it; the report follows\n",
                        where);
                out = stderr;
            }
            print_report(out, &m, topology);
            if (out != stderr)
                fclose(out);
            for (int r = 0; r < size; r++)
                free(m.host[r]);
            free(m.host);
        }
        for (int i = 0; i < m.ncomms; i++) {
            free(m.comms[i].members);
            free(m.comms[i].rows);
        }
        free(m.comms);
    } else if (rank == 0) {
        fprintf(stderr, "aapcgen: AAPC_REPORT: could not gather the report (out of memory or "
                        "an MPI error)\n");
    }
    free(all);
    free(lens);
    free(displs);
    free(t.s);
    PMPI_Comm_free(&world);
}
