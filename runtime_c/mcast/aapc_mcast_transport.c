/*
 * aapc_mcast_transport.c: reliable one-to-many transfer over UDP/IP multicast.
 *
 * Algorithm (seed 000 section 4.1 "ACK-based reliable multicast", seed 004 chapter 5 sliding
 * window and co-roots; details are ours, see docs/multicast.md):
 *   root:     splits the message into nfrag = ceil(n / F) sequence-numbered fragments (F =
 *             AAPC_MCAST_FRAG; default 16 KB if that fits the MTU, else MTU - 28 - header)
 *             and multicasts them, keeping at most W fragments beyond the slowest receiver's
 *             cumulative ACK in flight (sliding window). Each receiver's ACK carries its
 *             cumulative count plus a 64-fragment selective bitmap. An ACK that shows a hole
 *             triggers one fast unicast retransmission of the hole; a timeout without progress
 *             (srtt + 4 rttvar of the ACKs, at least 10 ms, doubling up to 0.5 s) retransmits
 *             every fragment still missing somewhere, by multicast when more than U receivers
 *             (AAPC_MCAST_UNICAST_MAX, default 2) lack it and by unicast otherwise. After R
 *             (default 12) timeouts in a row without progress the call fails with an MPI error.
 *   receiver: copies fragments into place, drops duplicates (re-ACKing them, the earlier ACK
 *             may have been lost), answers packets of finished operations with a "complete" ACK,
 *             stashes packets of later operations (the next root may start before this one
 *             ends), ACKs every min(W/4, 16) fragments, on a hole and at the end, then confirms
 *             the end of the operation (its MPI error code) with a one-int MPI message on an
 *             internal communicator. A receiver gives up after AAPC_MCAST_RECV_TIMEOUT seconds
 *             without progress.
 *   co-roots (seed 004 5.1.3): the R receivers, in rank order, form sub-groups of S
 *             (AAPC_MCAST_COROOT_SPAN; default 1 up to MC_COROOT_FROM receivers, else
 *             ceil(sqrt(R))). The first of each sub-group, its co-root, is the root's only
 *             correspondent for the sub-group: the others (leaves) ACK and confirm to it, and it
 *             answers their holes and timeouts with unicast (or multicast) retransmissions of the
 *             prefix of the message it holds, as the root does. Its ACKs to the root carry the
 *             lowest count of its sub-group, which moves the root's window, and it confirms to
 *             the root once every leaf has. S = 1 is the seeds' flat scheme.
 *   root return (seed 004 5.1.2): the root returns as soon as every co-root (every receiver
 *             when S = 1) holds the whole message, whether or not the leaves do and before any
 *             confirmation; the confirmations are collected by its later operations on the
 *             group (at most MC_PENDING operations outstanding, the oldest waited for) and when
 *             the group ends, and an error a receiver reported ends the call that collects it.
 *             While any of its groups holds pending confirmations a rank tests them every
 *             200 us of a wait on sockets: a confirmation is a blocking MPI_Send, which may
 *             need its root's MPI progress (MPICH ch3:sock connects only while both ends make
 *             progress), and the confirming rank may be the root of the multicast awaited, on
 *             this group or another.
 *             A lost final ACK costs a retransmission; the root never lingers on a receiver that
 *             has gone on, and no receiver needs the root once its co-root holds the message.
 * Cost (P receivers on one switch, n bytes, no loss): alpha_udp + n beta on the root's link
 * (once, whatever P), plus the ACKs of P / S co-roots per ACK interval at the root (S - 1 leaves'
 * at each co-root) and, later, P / S MPI confirmations: about (n/F + P/S) alpha + n beta at the
 * root, versus ceil(lg P)(alpha + n beta) for a binomial tree.
 */
#include "aapc_mcast_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* MPI_STATUSES_IGNORE read through a volatile pointer: MPICH 4.0's header makes it
   (MPI_Status *)1 with access attributes on the prototypes, and GCC 11+ then warns
   (-Wstringop-overflow) at each call (as common/aapc_mpi.h, which this drop-in does not use). */
static MPI_Status *statuses_ignore(void)
{
    MPI_Status *volatile ignore = MPI_STATUSES_IGNORE;
    return ignore;
}

#ifndef IP_MULTICAST_ALL
#define IP_MULTICAST_ALL 49
#endif

#define MC_STASH_MAX (64u << 20) /* bytes of early packets kept per group */
#define MC_SOCKBUF (4 << 20)

mc_proc_t mc_proc;

static unsigned char mc_pkt[MC_MAX_DATAGRAM + 64];

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double env_num(const char *name, double def, double lo, double hi)
{
    const char *s = getenv(name);
    if (s == NULL || *s == '\0')
        return def;
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !(v >= lo && v <= hi)) {
        fprintf(stderr, "aapc_mcast: %s=%s is not a number in [%g, %g]; using %g\n", name, s, lo,
                hi, def);
        return def;
    }
    return v;
}

uint64_t mc_random64(void)
{
    uint64_t v = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &v, sizeof v) != (ssize_t)sizeof v)
            v = 0;
        close(fd);
    }
    if (v == 0) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        v = ((uint64_t)t.tv_nsec << 20) ^ (uint64_t)t.tv_sec ^ ((uint64_t)getpid() << 40);
    }
    return v ? v : 1;
}

static uint64_t xorshift(void)
{
    uint64_t x = mc_proc.rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return mc_proc.rng = x;
}

static int inject_drop(double p)
{
    return p > 0 && (double)(xorshift() >> 11) * (1.0 / 9007199254740992.0) < p;
}

static void set_bufs(int s)
{
    int size = MC_SOCKBUF;
#ifdef SO_RCVBUFFORCE
    if (setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) == 0)
        return;
#endif
    (void)setsockopt(s, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
}

/* First up, multicast-capable, non-loopback IPv4 interface (or the AAPC_MCAST_IF one), else lo. */
static int choose_interface(void)
{
    const char *want = getenv("AAPC_MCAST_IF");
    struct ifaddrs *ifs = NULL, *lo = NULL, *pick = NULL;
    if (getifaddrs(&ifs) != 0)
        return -1;
    for (struct ifaddrs *a = ifs; a != NULL; a = a->ifa_next) {
        if (a->ifa_addr == NULL || a->ifa_addr->sa_family != AF_INET)
            continue;
        struct in_addr ad = ((struct sockaddr_in *)a->ifa_addr)->sin_addr;
        char text[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &ad, text, sizeof text);
        if (want != NULL && *want != '\0') {
            if (strcmp(want, a->ifa_name) == 0 || strcmp(want, text) == 0) {
                pick = a;
                break;
            }
            continue;
        }
        if (!(a->ifa_flags & IFF_UP))
            continue;
        if (a->ifa_flags & IFF_LOOPBACK) {
            if (lo == NULL)
                lo = a;
        } else if ((a->ifa_flags & IFF_MULTICAST) && pick == NULL) {
            pick = a;
        }
    }
    if (pick == NULL)
        pick = (want != NULL && *want != '\0') ? NULL : lo;
    int rc = -1;
    if (pick != NULL) {
        struct ifreq ifr;
        memset(&ifr, 0, sizeof ifr);
        snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", pick->ifa_name);
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        mc_proc.mtu = fd >= 0 && ioctl(fd, SIOCGIFMTU, &ifr) == 0 ? ifr.ifr_mtu : 1500;
        if (fd >= 0)
            close(fd);
        mc_proc.ifaddr = ((struct sockaddr_in *)pick->ifa_addr)->sin_addr;
        mc_proc.ifindex = (int)if_nametoindex(pick->ifa_name);
        mc_proc.loopback = (pick->ifa_flags & IFF_LOOPBACK) != 0;
        rc = mc_proc.ifindex > 0 ? 0 : -1;
    } else if (want != NULL && *want != '\0') {
        fprintf(stderr, "aapc_mcast: AAPC_MCAST_IF=%s: no such IPv4 interface\n", want);
    }
    freeifaddrs(ifs);
    return rc;
}

int mc_proc_init(void)
{
    if (mc_proc.initialized)
        return mc_proc.ok ? 0 : -1;
    mc_proc.initialized = 1;
    mc_proc.usock = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &mc_proc.world_rank);
    if (choose_interface() != 0)
        return -1;
    /* 16 KB payloads (the seeds') when the datagram fits the interface MTU (lo: 64 KB), else
     * one frame: IP-fragmented datagrams lose all of a datagram for one lost frame, and under
     * congestion the incomplete reassemblies fill ipfrag_high_thresh, after which the receiver
     * drops every fragment for ipfrag_time (30 s) -- measured, docs/multicast.md */
    long room = (long)mc_proc.mtu - 28 - (long)sizeof(mc_hdr_t);
    double fdef = room >= 16384 ? 16384 : (room >= 512 ? (double)room : 16384);
    mc_proc.frag = (size_t)env_num("AAPC_MCAST_FRAG", fdef, 64,
                                   (double)(MC_MAX_DATAGRAM - sizeof(mc_hdr_t)));
    double wdef = (double)(524288 / mc_proc.frag);
    mc_proc.window = (int)env_num("AAPC_MCAST_WINDOW", wdef < 4 ? 4 : wdef, 1, 4096);
    mc_proc.rto_us = (long)env_num("AAPC_MCAST_RTO_US", 10000, 100, 10e6);
    mc_proc.rto_max_us = (long)env_num("AAPC_MCAST_RTO_MAX_US", 500000, 100, 60e6);
    if (mc_proc.rto_max_us < mc_proc.rto_us)
        mc_proc.rto_max_us = mc_proc.rto_us;
    mc_proc.retries = (int)env_num("AAPC_MCAST_RETRIES", 12, 1, 1000);
    mc_proc.recv_timeout = env_num("AAPC_MCAST_RECV_TIMEOUT", 60, 0.01, 1e6);
    mc_proc.unicast_max = (int)env_num("AAPC_MCAST_UNICAST_MAX", 2, 0, 1e6);
    mc_proc.span = (int)env_num("AAPC_MCAST_COROOT_SPAN", 0, 0, 65535);
    mc_proc.drop_data = env_num("AAPC_MCAST_DROP_DATA", 0, 0, 1);
    mc_proc.drop_ack = env_num("AAPC_MCAST_DROP_ACK", 0, 0, 1);
    double seed = env_num("AAPC_MCAST_SEED", 0, 0, 1e15);
    mc_proc.rng = seed > 0 ? (uint64_t)seed * 0x9E3779B97F4A7C15ull +
                                 (uint64_t)mc_proc.world_rank + 1
                           : mc_random64();
    if (mc_proc.rng == 0)
        mc_proc.rng = 1;
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr = mc_proc.ifaddr, .sin_port = 0};
    struct ip_mreqn mif = {.imr_ifindex = mc_proc.ifindex};
    unsigned char ttl = 1, loop = 1;
    if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 ||
        setsockopt(s, IPPROTO_IP, IP_MULTICAST_IF, &mif, sizeof mif) != 0 ||
        setsockopt(s, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl) != 0 ||
        setsockopt(s, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop) != 0) {
        close(s);
        return -1;
    }
    set_bufs(s);
    mc_proc.usock = s;
    mc_proc.ok = 1;
    return 0;
}

int mc_open_group_socket(struct aapc_mcast_group_s *g)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    int one = 1, zero = 0;
    struct ip_mreqn m = {.imr_multiaddr = g->maddr.sin_addr, .imr_address = mc_proc.ifaddr,
                         .imr_ifindex = mc_proc.ifindex};
    /* bound to the group address and IP_MULTICAST_ALL 0: only this group's datagrams arrive */
    if (setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(s, (const struct sockaddr *)&g->maddr, sizeof g->maddr) != 0 ||
        setsockopt(s, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m) != 0) {
        int e = errno;
        fprintf(stderr, "aapc_mcast: rank %d: cannot join %s:%d: %s\n", mc_proc.world_rank,
                inet_ntoa(g->maddr.sin_addr), ntohs(g->maddr.sin_port), strerror(e));
        close(s);
        return -1;
    }
    (void)setsockopt(s, IPPROTO_IP, IP_MULTICAST_ALL, &zero, sizeof zero);
    set_bufs(s);
    g->sock = s;
    return 0;
}

void mc_close_group_socket(struct aapc_mcast_group_s *g)
{
    if (g->sock >= 0)
        close(g->sock); /* closing drops the membership */
    g->sock = -1;
}

void mc_registry_add(struct aapc_mcast_group_s *g)
{
    g->next = mc_proc.groups;
    mc_proc.groups = g;
}

void mc_registry_remove(struct aapc_mcast_group_s *g)
{
    for (struct aapc_mcast_group_s **p = &mc_proc.groups; *p != NULL; p = &(*p)->next)
        if (*p == g) {
            *p = g->next;
            return;
        }
}

static struct aapc_mcast_group_s *registry_find(uint64_t session)
{
    for (struct aapc_mcast_group_s *g = mc_proc.groups; g != NULL; g = g->next)
        if (g->session == session)
            return g;
    return NULL;
}

void mc_stash_free(struct aapc_mcast_group_s *g)
{
    while (g->stash != NULL) {
        mc_stash_t *s = g->stash;
        g->stash = s->next;
        free(s);
    }
    g->stash_bytes = 0;
}

static void stash_add(struct aapc_mcast_group_s *g, const unsigned char *pkt, size_t n)
{
    if (g->stash_bytes + n > MC_STASH_MAX)
        return; /* dropped: the root will retransmit */
    mc_stash_t *s = malloc(sizeof *s + n);
    if (s == NULL)
        return;
    memcpy(s->pkt, pkt, n);
    s->len = n;
    s->next = g->stash;
    g->stash = s;
    g->stash_bytes += n;
}

static void send_pkt(const struct sockaddr_in *to, const mc_hdr_t *h, const void *payload,
                     size_t n)
{
    struct iovec iov[2] = {{.iov_base = (void *)h, .iov_len = sizeof *h},
                           {.iov_base = (void *)payload, .iov_len = n}};
    struct msghdr msg = {.msg_name = (void *)to, .msg_namelen = sizeof *to, .msg_iov = iov,
                         .msg_iovlen = n ? 2 : 1};
    while (sendmsg(mc_proc.usock, &msg, 0) < 0 && errno == EINTR)
        ;
    /* other errors (ENOBUFS ...) are losses: the protocol retransmits */
}

static void send_ack(const struct aapc_mcast_group_s *g, int to, uint32_t seq, uint32_t cum,
                     uint32_t nfrag, uint64_t sack, uint32_t low)
{
    if (inject_drop(mc_proc.drop_ack))
        return;
    mc_hdr_t h = {.magic = MC_MAGIC, .type = MC_TYPE_ACK, .src = (uint32_t)g->rank, .seq = seq,
                  .idx = cum, .nfrag = nfrag, .session = g->session, .total = low, .sack = sack};
    send_pkt(&g->uaddr[to], &h, NULL, 0);
}

/* ------------------------------------------------------------------ sub-groups (co-roots) */

/* The receivers of an operation rooted at `root`: the group's members but the root, ascending.
 * Returns their number; *me is this rank's index among them (-1 at the root). */
static int receivers_of(const struct aapc_mcast_group_s *g, int root, int *out, int *me)
{
    int n = 0;
    *me = -1;
    for (int k = 0; k < g->nmemb; k++)
        if (g->memb[k] != root) {
            if (g->memb[k] == g->rank)
                *me = n;
            if (out != NULL)
                out[n] = g->memb[k];
            n++;
        }
    return n;
}

/* Receivers per ACK collector (seed 004 5.1.3, the co-root scheme): receiver i reports to
 * receiver i - i mod S, its sub-group's co-root, which reports to the root and answers its
 * leaves' ACKs and retransmissions itself. S = 1: every receiver reports to the root. */
static int span_of(int nr)
{
    int s = mc_proc.span;
    if (s == 0) { /* automatic: sqrt(nr) sub-groups of sqrt(nr) above MC_COROOT_FROM receivers */
        s = 1;
        while (nr > MC_COROOT_FROM && s * s < nr)
            s++;
    }
    if (s > nr)
        s = nr > 0 ? nr : 1;
    return s > 65535 ? 65535 : s;
}

/* ------------------------------------------------------------------ receive side */

typedef struct {
    struct aapc_mcast_group_s *g;
    int root;
    int up; /* where ACKs and the confirmation go: the root, or the sub-group's co-root */
    uint32_t span;
    unsigned char *buf;
    uint64_t len;
    uint32_t nfrag, cum, gap_cum;
    unsigned char *got;
    int need_ack, err;
} rctx_t;

/* sender side of one operation: the root towards its direct receivers, or a co-root towards its
 * leaves (then `sent` is the prefix of the message the co-root holds) */
typedef struct {
    struct aapc_mcast_group_s *g;
    const char *role;
    const unsigned char *buf;
    uint64_t len;
    uint32_t nfrag, sent;
    uint32_t span;    /* of the operation (in its data packets) */
    int nr;
    int *recv_rank;   /* receiver i -> comm rank */
    int *pos;         /* comm rank -> receiver index or -1 */
    uint32_t *cum;
    uint32_t *low;    /* lowest cumulative count of receiver i's sub-group (its ACKs) */
    uint64_t *sack;
    uint32_t *fast;   /* cum for which a fast retransmission was sent */
    int *done;        /* 0 running, 1 ACKed complete, 2 confirmed over MPI */
    double *t_sent;   /* first transmission (co-root: arrival) time of every fragment */
    unsigned char *retx; /* fragment was retransmitted: no RTT sample from it (Karn) */
    MPI_Request *req; /* confirmations */
    int *code;
    int *idx;
    int progress, confirmed, tries, err;
    long rto;
    double deadline;
} sctx_t;

static void send_data(const struct aapc_mcast_group_s *g, const struct sockaddr_in *to,
                      const unsigned char *buf, uint64_t len, uint32_t nfrag, uint32_t span,
                      uint32_t idx)
{
    uint64_t off = (uint64_t)idx * mc_proc.frag;
    size_t n = len > off ? (size_t)(len - off < mc_proc.frag ? len - off : mc_proc.frag) : 0;
    mc_hdr_t h = {.magic = MC_MAGIC, .type = MC_TYPE_DATA, .span = (uint16_t)span,
                  .src = (uint32_t)g->rank, .seq = g->seq, .idx = idx, .nfrag = nfrag,
                  .session = g->session, .total = len};
    send_pkt(to, &h, buf + off, n);
}

static int receiver_has(const sctx_t *c, int i, uint32_t f)
{
    if (f < c->cum[i])
        return 1;
    if (f == c->cum[i] || f - c->cum[i] - 1 >= 64)
        return 0;
    return (int)((c->sack[i] >> (f - c->cum[i] - 1)) & 1u);
}

static void deliver(rctx_t *c, const unsigned char *pkt, size_t n)
{
    const mc_hdr_t *h = (const mc_hdr_t *)pkt;
    if ((int)h->src != c->root && (int)h->src != c->up)
        return;
    if (h->total != c->len || h->nfrag != c->nfrag || h->idx >= c->nfrag) {
        if (!c->err)
            fprintf(stderr,
                    "aapc_mcast: rank %d: root %d sends %llu bytes, this rank expects %llu\n",
                    c->g->rank, c->root, (unsigned long long)h->total,
                    (unsigned long long)c->len);
        c->err = MPI_ERR_TRUNCATE;
        return;
    }
    uint64_t off = (uint64_t)h->idx * mc_proc.frag;
    size_t want = c->len > off ? (size_t)(c->len - off < mc_proc.frag ? c->len - off : mc_proc.frag)
                               : 0;
    if (n - sizeof *h != want || h->span != c->span) {
        if (!c->err)
            fprintf(stderr, "aapc_mcast: rank %d: %s differs from the root's (it must be equal "
                            "on every rank)\n", c->g->rank,
                    h->span != c->span ? "AAPC_MCAST_COROOT_SPAN" : "AAPC_MCAST_FRAG");
        c->err = MPI_ERR_OTHER;
        return;
    }
    if (c->got[h->idx]) {
        c->need_ack = 1; /* duplicate: our ACK may have been lost */
        return;
    }
    memcpy(c->buf + off, pkt + sizeof *h, want);
    c->got[h->idx] = 1;
    while (c->cum < c->nfrag && c->got[c->cum])
        c->cum++;
    if (h->idx > c->cum && c->gap_cum != c->cum) { /* a hole: tell the root at once */
        c->gap_cum = c->cum;
        c->need_ack = 1;
    }
}

static void root_ack(sctx_t *c, const mc_hdr_t *h);

/* One datagram from either socket, in the context of the current receive, the current send
 * (root or co-root), both, or none. */
static void dispatch(const unsigned char *pkt, size_t n, rctx_t *rc, sctx_t *sc)
{
    const mc_hdr_t *h = (const mc_hdr_t *)pkt;
    if (n < sizeof *h || h->magic != MC_MAGIC)
        return;
    struct aapc_mcast_group_s *g = registry_find(h->session);
    if (g == NULL)
        return; /* another job's or a closed group */
    if (h->type == MC_TYPE_ACK) {
        if (sc != NULL && g == sc->g && h->seq == g->seq)
            root_ack(sc, h);
        return;
    }
    if (h->type != MC_TYPE_DATA || (int)h->src == g->rank || (int)h->src >= g->size)
        return; /* own multicast looped back */
    if (inject_drop(mc_proc.drop_data))
        return;
    if (rc != NULL && g == rc->g && h->seq == g->seq) {
        deliver(rc, pkt, n);
        return;
    }
    if (sc != NULL && g == sc->g && h->seq == g->seq)
        return; /* a co-root's multicast retransmission of the root's own operation */
    int32_t d = (int32_t)(h->seq - g->seq);
    if (d < 0) /* finished operation: its sender still misses our ACK */
        send_ack(g, (int)h->src, h->seq, h->nfrag, h->nfrag, 0, h->nfrag);
    else
        stash_add(g, pkt, n);
}

static void drain(int sock, rctx_t *rc, sctx_t *sc)
{
    if (sock < 0)
        return;
    for (;;) {
        ssize_t n = recv(sock, mc_pkt, sizeof mc_pkt, MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        dispatch(mc_pkt, (size_t)n, rc, sc);
    }
}

static uint64_t sack_bits(const rctx_t *c)
{
    uint64_t s = 0;
    for (uint32_t k = 0; k < 64 && c->cum + 1 + k < c->nfrag; k++)
        if (c->got[c->cum + 1 + k])
            s |= (uint64_t)1 << k;
    return s;
}

static int wait_sockets(int a, int b, double seconds)
{
    struct pollfd p[2] = {{.fd = a, .events = POLLIN}, {.fd = b, .events = POLLIN}};
    if (seconds < 0)
        seconds = 0;
    struct timespec ts = {.tv_sec = (time_t)seconds,
                          .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9)};
    return ppoll(p, b >= 0 ? 2 : 1, &ts, NULL);
}

/* ------------------------------------------------------------------ send side */

static long rto_of(const struct aapc_mcast_group_s *g);

static void sctx_free(sctx_t *c)
{
    free(c->recv_rank);
    free(c->pos);
    free(c->cum);
    free(c->low);
    free(c->sack);
    free(c->fast);
    free(c->done);
    free(c->t_sent);
    free(c->retx);
    free(c->req);
    free(c->code);
    free(c->idx);
}

/* The sender side towards receivers `ranks[0..n)`; posts their confirmations. */
static int sctx_init(sctx_t *c, struct aapc_mcast_group_s *g, const char *role,
                     const unsigned char *buf, uint64_t len, uint32_t nfrag, int span,
                     const int *ranks, int n)
{
    *c = (sctx_t){.g = g, .role = role, .buf = buf, .len = len, .nfrag = nfrag,
                  .span = (uint32_t)span, .nr = n};
    size_t nr = (size_t)n;
    c->recv_rank = malloc(sizeof(int) * nr);
    c->pos = malloc(sizeof(int) * (size_t)g->size);
    c->cum = calloc(nr, sizeof(uint32_t));
    c->low = calloc(nr, sizeof(uint32_t));
    c->sack = calloc(nr, sizeof(uint64_t));
    c->fast = malloc(sizeof(uint32_t) * nr);
    c->done = calloc(nr, sizeof(int));
    c->t_sent = calloc(nfrag, sizeof(double));
    c->retx = calloc(nfrag, 1);
    c->req = malloc(sizeof(MPI_Request) * nr);
    c->code = malloc(sizeof(int) * nr);
    c->idx = malloc(sizeof(int) * nr);
    if (!c->recv_rank || !c->pos || !c->cum || !c->low || !c->sack || !c->fast || !c->done ||
        !c->t_sent || !c->retx || !c->req || !c->code || !c->idx) {
        sctx_free(c);
        *c = (sctx_t){.nr = 0};
        return MPI_ERR_NO_MEM;
    }
    for (int r = 0; r < g->size; r++)
        c->pos[r] = -1;
    for (int i = 0; i < n; i++) {
        c->recv_rank[i] = ranks[i];
        c->pos[ranks[i]] = i;
        c->fast[i] = UINT32_MAX;
        c->code[i] = MPI_SUCCESS;
        PMPI_Irecv(&c->code[i], 1, MPI_INT, ranks[i], MC_TAG_CONFIRM, g->icomm, &c->req[i]);
    }
    c->rto = rto_of(g);
    c->deadline = now_s() + 1e-6 * (double)c->rto;
    return MPI_SUCCESS;
}

static void cancel_confirmations(sctx_t *c)
{
    for (int i = 0; i < c->nr; i++)
        if (c->req[i] != MPI_REQUEST_NULL) {
            PMPI_Cancel(&c->req[i]);
            PMPI_Request_free(&c->req[i]);
        }
}

/* lowest cumulative count (field cum or low) over the receivers not yet done; nfrag if none */
static uint32_t lowest(const sctx_t *c, const uint32_t *of)
{
    uint32_t lo = c->nfrag;
    for (int i = 0; i < c->nr; i++)
        if (!c->done[i] && of[i] < lo)
            lo = of[i];
    return lo;
}

/* Unicast to receiver i the fragments of [lo, hi) that it lacks and this sender holds. */
static void resend(sctx_t *c, int i, uint32_t lo, uint32_t hi)
{
    for (uint32_t f = lo; f < hi && f < c->sent; f++)
        if (!receiver_has(c, i, f) && (c->retx[f] = 1))
            send_data(c->g, &c->g->uaddr[c->recv_rank[i]], c->buf, c->len, c->nfrag, c->span,
                      f);
}

static void retransmit_hole(sctx_t *c, int i)
{
    /* fragments up to the highest one the receiver reports */
    int top = 63;
    while (top >= 0 && !((c->sack[i] >> top) & 1u))
        top--;
    resend(c, i, c->cum[i], c->cum[i] + 1 + (uint32_t)top);
}

static void root_ack(sctx_t *c, const mc_hdr_t *h)
{
    if (h->src >= (uint32_t)c->g->size)
        return;
    int i = c->pos[h->src];
    if (i < 0 || c->done[i] || h->nfrag != c->nfrag)
        return;
    if (h->idx > c->cum[i]) {
        uint32_t f = h->idx - 1;
        if (f < c->sent && !c->retx[f]) { /* RTT sample, as TCP: srtt + 4 rttvar */
            double sample = now_s() - c->t_sent[f], err = sample - c->g->srtt;
            if (c->g->srtt == 0) {
                c->g->srtt = sample;
                c->g->rttvar = sample / 2;
            } else {
                c->g->srtt += err / 8;
                c->g->rttvar += ((err < 0 ? -err : err) - c->g->rttvar) / 4;
            }
        }
        c->cum[i] = h->idx;
        c->sack[i] = h->sack;
        c->progress = 1;
    } else if (h->idx == c->cum[i] && (c->sack[i] | h->sack) != c->sack[i]) {
        c->sack[i] |= h->sack;
        c->progress = 1;
    }
    if (h->total > c->low[i]) {
        c->low[i] = h->total > c->nfrag ? c->nfrag : (uint32_t)h->total;
        c->progress = 1;
    }
    if (c->cum[i] >= c->nfrag) {
        c->done[i] = 1;
        return;
    }
    if (c->sack[i] != 0 && c->fast[i] != c->cum[i]) {
        c->fast[i] = c->cum[i];
        retransmit_hole(c, i);
    }
}

/* Fragments below `sent` that a receiver lacks, at most a window of them; the number sent. */
static uint32_t retransmit_round(sctx_t *c, uint32_t lo)
{
    uint32_t budget = (uint32_t)mc_proc.window, used = 0;
    for (uint32_t f = lo; f < c->sent && used < budget; f++) {
        int missing = 0;
        for (int i = 0; i < c->nr; i++)
            missing += !c->done[i] && !receiver_has(c, i, f);
        if (missing == 0)
            continue;
        used++;
        c->retx[f] = 1;
        if (missing > mc_proc.unicast_max) {
            send_data(c->g, &c->g->maddr, c->buf, c->len, c->nfrag, c->span, f);
        } else {
            for (int i = 0; i < c->nr; i++)
                if (!c->done[i] && !receiver_has(c, i, f))
                    send_data(c->g, &c->g->uaddr[c->recv_rank[i]], c->buf, c->len, c->nfrag,
                              c->span, f);
        }
    }
    return used;
}

/* Retransmission timeout: srtt + 4 rttvar of the group's ACKs (it includes the queueing of a
 * whole window at the root's own link), at least AAPC_MCAST_RTO_US, at most _RTO_MAX_US. */
static long rto_of(const struct aapc_mcast_group_s *g)
{
    double us = 1e6 * (g->srtt + 4 * g->rttvar);
    if (us < (double)mc_proc.rto_us)
        return mc_proc.rto_us;
    return us > (double)mc_proc.rto_max_us ? mc_proc.rto_max_us : (long)us;
}

/* After the ACKs of a wait were dispatched: collect confirmations, and on a timeout without
 * progress retransmit what receivers lack; gives up (MPI error) after AAPC_MCAST_RETRIES
 * timeouts in a row that had something to retransmit. */
static int sender_tick(sctx_t *c)
{
    int outcount = 0;
    PMPI_Testsome(c->nr, c->req, &outcount, c->idx, statuses_ignore());
    for (int k = 0; k < outcount && outcount != MPI_UNDEFINED; k++) {
        int i = c->idx[k];
        c->done[i] = 2;
        c->confirmed++;
        c->progress = 1;
        if (c->code[i] != MPI_SUCCESS && c->err == MPI_SUCCESS) {
            fprintf(stderr, "aapc_mcast: rank %d: receiver rank %d ended operation %u with "
                            "error %d\n", c->g->rank, c->recv_rank[i], c->g->seq, c->code[i]);
            c->err = MPI_ERR_OTHER;
        }
    }
    double t = now_s();
    if (c->progress) {
        c->tries = 0;
        c->rto = rto_of(c->g);
        c->deadline = t + 1e-6 * (double)c->rto;
    } else if (t >= c->deadline) {
        if (retransmit_round(c, lowest(c, c->cum)) == 0) {
            c->tries = 0; /* nothing of ours is missing (a co-root waits for the root) */
        } else if (++c->tries > mc_proc.retries) {
            int first = -1, missing = 0;
            for (int i = 0; i < c->nr; i++)
                if (!c->done[i] && (missing++ == 0))
                    first = c->recv_rank[i];
            fprintf(stderr,
                    "aapc_mcast: rank %d (%s): gave up after %d retransmission timeouts: %d "
                    "receivers (first: rank %d) still miss data\n",
                    c->g->rank, c->role, mc_proc.retries, missing, first);
            cancel_confirmations(c);
            return MPI_ERR_OTHER;
        }
        c->rto = c->rto * 2 < mc_proc.rto_max_us ? c->rto * 2 : mc_proc.rto_max_us;
        c->deadline = t + 1e-6 * (double)c->rto;
    }
    c->progress = 0;
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------------ confirmations owed */

static int pending_check(struct aapc_mcast_group_s *g, const mc_pending_t *p)
{
    int err = MPI_SUCCESS;
    for (int i = 0; i < p->n; i++)
        if (p->code[i] != MPI_SUCCESS && err == MPI_SUCCESS) {
            fprintf(stderr, "aapc_mcast: rank %d: receiver rank %d ended operation %u with "
                            "error %d (reported in a later call)\n", g->rank, p->rank[i], p->seq,
                    p->code[i]);
            err = MPI_ERR_OTHER;
        }
    return err;
}

int mc_pending_settle(struct aapc_mcast_group_s *g, int keep)
{
    int err = MPI_SUCCESS;
    while (g->npend > 0) {
        mc_pending_t *p = &g->pend[0];
        if (g->npend > keep) {
            PMPI_Waitall(p->n, p->req, statuses_ignore());
        } else {
            int flag = 0;
            PMPI_Testall(p->n, p->req, &flag, statuses_ignore());
            if (!flag)
                break;
        }
        int e = pending_check(g, p);
        err = err != MPI_SUCCESS ? err : e;
        free(p->req);
        free(p->code);
        free(p->rank);
        g->npend--;
        memmove(&g->pend[0], &g->pend[1], sizeof g->pend[0] * (size_t)g->npend);
    }
    return err;
}

/* Whether any open group of this process holds confirmations owed to it. */
static int any_pending(void)
{
    for (const struct aapc_mcast_group_s *o = mc_proc.groups; o != NULL; o = o->next)
        if (o->npend > 0)
            return 1;
    return 0;
}

/* Tests (without collecting: a later call on their own group does, and reports their errors)
 * the confirmations other groups than g are owed: a receiver of one of those groups may be
 * blocked in its confirmation send until this rank makes MPI progress, and be the root that an
 * operation on g waits for. */
static void poke_other_groups(const struct aapc_mcast_group_s *g)
{
    for (struct aapc_mcast_group_s *o = mc_proc.groups; o != NULL; o = o->next)
        for (int k = 0; o != g && k < o->npend; k++) {
            int flag = 0;
            PMPI_Testall(o->pend[k].n, o->pend[k].req, &flag, statuses_ignore());
        }
}

/* The root's direct receivers hold the message: their confirmations are owed to later calls. */
static void pending_keep(sctx_t *c)
{
    struct aapc_mcast_group_s *g = c->g; /* fewer than MC_PENDING: settled on entry */
    g->pend[g->npend++] = (mc_pending_t){.n = c->nr, .seq = g->seq, .req = c->req,
                                         .code = c->code, .rank = c->recv_rank};
    c->req = NULL;
    c->code = NULL;
    c->recv_rank = NULL;
}

/* ------------------------------------------------------------------ the operations */

static uint32_t nfrag_of(uint64_t len) /* a zero-byte operation is one empty fragment */
{
    return len ? (uint32_t)((len + mc_proc.frag - 1) / mc_proc.frag) : 1;
}

/* A co-root serves its leaves the prefix [0, to) of the message it holds; `from` was served.
 * Fragments of the new part that a leaf already reported as a hole (it holds later ones) go to
 * it at once: the leaf's fast retransmission request may have come before the co-root had them. */
static void serve_prefix(sctx_t *leaves, uint32_t from, uint32_t to, double t)
{
    if (leaves == NULL)
        return;
    for (uint32_t f = from; f < to; f++)
        leaves->t_sent[f] = t;
    leaves->sent = to;
    leaves->progress = 1;
    for (int i = 0; i < leaves->nr; i++)
        if (!leaves->done[i] && leaves->sack[i] != 0)
            resend(leaves, i, from > leaves->cum[i] ? from : leaves->cum[i], to);
}

/* A receiver's confirmation to its root or co-root: a standard send, which may complete only
   with the receiving end's progress (MPICH ch3:sock's first message on a connection).
   AAPC_TEST_MCAST_SSEND=1, a test hook (not for production use), makes it synchronous, so that
   it always does: the tests' stand-in for such an MPI. */
static int send_confirmation(int code, int to, MPI_Comm comm)
{
    static int ssend = -1;
    if (ssend < 0) {
        const char *v = getenv("AAPC_TEST_MCAST_SSEND");
        ssend = v != NULL && strcmp(v, "1") == 0;
    }
    return ssend ? PMPI_Ssend(&code, 1, MPI_INT, to, MC_TAG_CONFIRM, comm)
                 : PMPI_Send(&code, 1, MPI_INT, to, MC_TAG_CONFIRM, comm);
}

int mc_reliable_recv(struct aapc_mcast_group_s *g, int root, void *buf, uint64_t len)
{
    int me, nr = receivers_of(g, root, NULL, &me);
    int *ranks = malloc(sizeof(int) * (size_t)(nr > 0 ? nr : 1));
    uint32_t nfrag = nfrag_of(len);
    if (ranks == NULL)
        return MPI_ERR_NO_MEM;
    receivers_of(g, root, ranks, &me);
    if (me < 0) {
        free(ranks);
        return MPI_ERR_INTERN;
    }
    int span = span_of(nr), head = me - me % span;
    int nleaves = head == me ? (me + span < nr ? span : nr - me) - 1 : 0;
    rctx_t c = {.g = g, .root = root, .up = head == me ? root : ranks[head],
                .span = (uint32_t)span, .buf = buf, .len = len, .nfrag = nfrag,
                .gap_cum = UINT32_MAX};
    sctx_t s = {.nr = 0};
    int err = nleaves > 0 ? sctx_init(&s, g, "co-root", buf, len, nfrag, span, ranks + me + 1,
                                      nleaves)
                          : MPI_SUCCESS;
    free(ranks);
    c.got = calloc(nfrag, 1);
    if (err != MPI_SUCCESS || c.got == NULL) {
        if (nleaves > 0 && err == MPI_SUCCESS)
            cancel_confirmations(&s);
        sctx_free(&s);
        free(c.got);
        return MPI_ERR_NO_MEM;
    }
    int perr = mc_pending_settle(g, MC_PENDING); /* of operations rooted here, if arrived */
    /* packets of this operation that arrived during earlier ones */
    for (mc_stash_t **p = &g->stash; *p != NULL;) {
        mc_stash_t *st = *p;
        const mc_hdr_t *h = (const mc_hdr_t *)st->pkt;
        if (h->seq == g->seq) {
            *p = st->next;
            g->stash_bytes -= st->len;
            deliver(&c, st->pkt, st->len);
            free(st);
        } else {
            p = &st->next;
        }
    }
    uint32_t ack_every = mc_proc.window / 4 > 0 ? (uint32_t)mc_proc.window / 4 : 1;
    if (ack_every > 16)
        ack_every = 16;
    uint32_t acked = 0, acked_low = 0, served = c.cum;
    double last = now_s();
    sctx_t *leaves = nleaves > 0 ? &s : NULL;
    serve_prefix(leaves, 0, c.cum, last);
    while (!c.err && (c.cum < c.nfrag || (leaves != NULL && s.confirmed < nleaves))) {
        double wait = 1.0;
        uint32_t low = c.cum, ll = leaves != NULL ? lowest(&s, s.cum) : c.nfrag;
        low = ll < low ? ll : low;
        /* ACK every few fragments, on a hole or a duplicate, when a co-root's sub-group has
           caught up with it (the root's window follows `low`), and once complete (a co-root
           goes on serving its leaves: the root need not wait for them) */
        if (c.need_ack || c.cum >= acked + ack_every ||
            (low > acked_low && (low >= acked_low + ack_every || low == c.cum)) ||
            (c.cum == c.nfrag && acked < c.nfrag)) {
            send_ack(g, c.up, g->seq, c.cum, c.nfrag, sack_bits(&c), low);
            acked = c.cum;
            acked_low = low;
            c.need_ack = 0;
        }
        if (c.cum < c.nfrag) {
            double left = last + mc_proc.recv_timeout - now_s();
            if (left <= 0) {
                fprintf(stderr, "aapc_mcast: rank %d: no data from root %d for %.1f s "
                                "(%u of %u fragments)\n",
                        g->rank, root, mc_proc.recv_timeout, c.cum, c.nfrag);
                c.err = MPI_ERR_OTHER;
                break;
            }
            wait = left < wait ? left : wait;
        }
        /* confirmations are MPI messages: poll them, the leaves' and, while a root that
           returned early still holds its receivers' (pending, on this group or any other),
           theirs: a receiver's blocking confirmation send may need this rank's MPI progress
           to complete (MPICH ch3:sock sets up a connection only while both ends make
           progress), and that receiver may be the root this rank waits for */
        int owed = any_pending();
        if (leaves != NULL || owed)
            wait = wait < 2e-4 ? wait : 2e-4;
        wait_sockets(g->sock, mc_proc.usock, wait);
        if (g->npend > 0) {
            int e = mc_pending_settle(g, MC_PENDING); /* tests only: settles what arrived */
            perr = perr != MPI_SUCCESS ? perr : e;
        }
        if (owed)
            poke_other_groups(g);
        drain(g->sock, &c, leaves);
        drain(mc_proc.usock, &c, leaves);
        if (c.cum != served) {
            last = now_s();
            serve_prefix(leaves, served, c.cum, last);
            served = c.cum;
        }
        if (leaves != NULL && !c.err)
            c.err = sender_tick(&s);
        if (leaves != NULL && c.err == MPI_SUCCESS && s.err != MPI_SUCCESS &&
            s.confirmed == nleaves)
            c.err = s.err; /* a leaf's error, passed on to the root */
    }
    free(c.got);
    g->seq++;
    if (c.err != MPI_SUCCESS && leaves != NULL)
        cancel_confirmations(&s);
    else if (c.err == MPI_SUCCESS && acked < c.nfrag) /* a co-root ACKed its end in the loop */
        send_ack(g, c.up, g->seq - 1, c.nfrag, c.nfrag, 0, c.nfrag);
    sctx_free(&s);
    int code = c.err;
    int rc = send_confirmation(code, c.up, g->icomm);
    return c.err != MPI_SUCCESS ? c.err : (rc != MPI_SUCCESS ? rc : perr);
}

int mc_reliable_send(struct aapc_mcast_group_s *g, const void *buf, uint64_t len)
{
    int perr = mc_pending_settle(g, MC_PENDING - 1);
    int me, nr = receivers_of(g, g->rank, NULL, &me);
    if (nr == 0) {
        g->seq++;
        return perr;
    }
    int *ranks = malloc(sizeof(int) * (size_t)nr);
    if (ranks == NULL) {
        g->seq++;
        return MPI_ERR_NO_MEM;
    }
    receivers_of(g, g->rank, ranks, &me);
    int span = span_of(nr), ndirect = 0;
    for (int i = 0; i < nr; i += span) /* the co-roots (every receiver when span is 1) */
        ranks[ndirect++] = ranks[i];
    uint32_t nfrag = nfrag_of(len);
    sctx_t c;
    int err = sctx_init(&c, g, "root", buf, len, nfrag, span, ranks, ndirect);
    free(ranks);
    while (err == MPI_SUCCESS) {
        if (lowest(&c, c.cum) == nfrag)
            break; /* every direct receiver holds the message */
        uint32_t wlo = lowest(&c, c.low);
        if (c.sent < nfrag && c.sent < wlo + (uint32_t)mc_proc.window) {
            double t = now_s();
            while (c.sent < nfrag && c.sent < wlo + (uint32_t)mc_proc.window) {
                c.t_sent[c.sent] = t;
                send_data(g, &g->maddr, c.buf, len, nfrag, c.span, c.sent++);
            }
            c.deadline = now_s() + 1e-6 * (double)c.rto;
        }
        double left = c.deadline - now_s();
        wait_sockets(mc_proc.usock, -1, left < 2e-4 ? left : 2e-4);
        poke_other_groups(g);
        drain(mc_proc.usock, NULL, &c);
        err = sender_tick(&c);
        if (err == MPI_SUCCESS && c.err != MPI_SUCCESS && c.confirmed == c.nr)
            err = c.err;
    }
    if (err == MPI_SUCCESS && c.err != MPI_SUCCESS) {
        PMPI_Waitall(c.nr, c.req, statuses_ignore()); /* a receiver failed: end together */
        err = c.err;
    } else if (err == MPI_SUCCESS) {
        pending_keep(&c);
    }
    g->seq++;
    drain(g->sock, NULL, NULL); /* our own looped-back datagrams; others' early ones get stashed */
    sctx_free(&c);
    return err != MPI_SUCCESS ? err : perr;
}

int mc_error(MPI_Comm comm, int code)
{
    PMPI_Comm_call_errhandler(comm, code);
    return code;
}
