/*
 * aapc_mcast_group.c: multicast group management (seed 001 section III, seed 000 section 4.1).
 *
 * Algorithm:
 *   static  - one group per communicator, made by the first multicast collective on it (or
 *             aapc_mcast_comm_attach): the communicator is duplicated for internal MPI traffic,
 *             every rank's unicast endpoint (interface address, UDP port) is allgathered, rank 0
 *             picks the group address (scheme below) and broadcasts it, every rank joins and an
 *             allreduce confirms that all joins succeeded before any data is sent. Cached as an
 *             attribute, destroyed by the attribute's delete callback with the communicator.
 *             Cost once: an allgather, a broadcast and an allreduce (about 3 lg(P) alpha).
 *   per-call (dynamic Scatterv, compiler-assisted open_group) - the root picks an address and
 *             multicasts (address, port, session, every rank's byte count) reliably on the static
 *             group; ranks with a non-zero count join and confirm with an MPI message to the
 *             root; the others move on. Cost: one reliable multicast of 16 + 8P bytes plus
 *             m join confirmations (m members) at the root.
 * Address scheme: 239.0.0.0/8 (administratively scoped, IP_MULTICAST_TTL 1). The leader (rank
 * 0, or the root of a per-call group) uses 239.W.W'.S with the 14 low bits of its MPI_COMM_WORLD
 * rank in the middle bits and a 10-bit slot (at most 1024 groups led by one process at a time,
 * a slot is reused only after its group is closed), so two live groups of one job never share
 * an address. The UDP port is random in [20000, 60000) and every datagram carries the group's
 * random 64-bit session id, so another job that happens to pick the same address and port is
 * filtered out. Every group has its own socket (bound to the group address, IP_MULTICAST_ALL 0),
 * so the 20-memberships-per-socket limit (igmp_max_memberships) never applies.
 */
#include "aapc_mcast_internal.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MC_SLOTS 1024

static int mc_keyval = MPI_KEYVAL_INVALID;
static unsigned char mc_slot_used[MC_SLOTS];

typedef struct {
    uint64_t session;
    uint32_t addr; /* network order */
    uint16_t port; /* network order */
    uint16_t ok;
} mc_desc_t;

int mc_group_alloc_address(struct aapc_mcast_group_s *g)
{
    int s = 0;
    while (s < MC_SLOTS && mc_slot_used[s])
        s++;
    if (s == MC_SLOTS) {
        fprintf(stderr, "aapc_mcast: rank %d leads %d open groups already\n", mc_proc.world_rank,
                MC_SLOTS);
        return -1;
    }
    mc_slot_used[s] = 1;
    g->slot = s;
    uint32_t a = (239u << 24) | ((uint32_t)(mc_proc.world_rank & 0x3fff) << 10) | (uint32_t)s;
    g->maddr.sin_family = AF_INET;
    g->maddr.sin_addr.s_addr = htonl(a);
    g->maddr.sin_port = htons((uint16_t)(20000 + mc_random64() % 40000));
    g->session = mc_random64();
    return 0;
}

void mc_group_free(struct aapc_mcast_group_s *g)
{
    if (g == NULL)
        return;
    mc_pending_settle(g, 0); /* before the internal communicator goes */
    mc_registry_remove(g);
    mc_close_group_socket(g);
    if (g->slot >= 0)
        mc_slot_used[g->slot] = 0;
    mc_stash_free(g);
    free(g->memb);
    free(g->uaddr);
    free(g->bytes);
    free(g);
}

static struct aapc_mcast_group_s *group_new(MPI_Comm comm, MPI_Comm icomm,
                                            const struct sockaddr_in *uaddr)
{
    struct aapc_mcast_group_s *g = calloc(1, sizeof *g);
    if (g == NULL)
        return NULL;
    g->sock = -1;
    g->slot = -1;
    g->root = -1;
    g->comm = comm;
    g->icomm = icomm;
    PMPI_Comm_rank(comm, &g->rank);
    PMPI_Comm_size(comm, &g->size);
    g->uaddr = malloc(sizeof *g->uaddr * (size_t)g->size);
    g->memb = malloc(sizeof(int) * (size_t)g->size);
    if (g->uaddr == NULL || g->memb == NULL) {
        mc_group_free(g);
        return NULL;
    }
    if (uaddr != NULL)
        memcpy(g->uaddr, uaddr, sizeof *g->uaddr * (size_t)g->size);
    return g;
}

static void comm_state_free(mc_comm_t *st)
{
    mc_group_free(st->group);
    if (st->icomm != MPI_COMM_NULL)
        PMPI_Comm_free(&st->icomm);
    free(st);
}

static int delete_fn(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    comm_state_free(value);
    return MPI_SUCCESS;
}

/* Build the static group of a new state; returns 1 when multicast works on every rank. */
static int static_setup(mc_comm_t *st, MPI_Comm comm)
{
    int rank, size;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    struct {
        uint32_t addr;
        uint16_t port;
        uint16_t ok;
        uint32_t frag;
    } mine = {0, 0, 0, 0}, *all = malloc(sizeof mine * (size_t)size);
    if (mc_proc_init() == 0) {
        struct sockaddr_in a;
        socklen_t len = sizeof a;
        if (getsockname(mc_proc.usock, (struct sockaddr *)&a, &len) == 0) {
            mine.addr = a.sin_addr.s_addr;
            mine.port = a.sin_port;
            mine.ok = all != NULL;
            mine.frag = (uint32_t)mc_proc.frag;
        }
    }
    PMPI_Allgather(&mine, sizeof mine, MPI_BYTE, all, sizeof mine, MPI_BYTE, st->icomm);
    int ok = 1;
    for (int r = 0; r < size; r++)
        ok = ok && all[r].ok;
    for (int r = 0; r < size && ok; r++)
        if (all[r].frag != all[0].frag) { /* e.g. different MTUs: one datagram size is needed */
            if (rank == 0)
                fprintf(stderr, "aapc_mcast: fragment sizes differ (rank %d: %u, rank 0: %u): "
                                "set AAPC_MCAST_FRAG; using the MPI library\n",
                        r, all[r].frag, all[0].frag);
            ok = 0;
        }
    if (!ok) {
        free(all);
        return 0;
    }
    st->one_host = 1;
    for (int r = 1; r < size; r++)
        st->one_host = st->one_host && all[r].addr == all[0].addr;
    struct aapc_mcast_group_s *g = group_new(comm, st->icomm, NULL);
    mc_desc_t d = {0, 0, 0, 0};
    if (g != NULL) {
        for (int r = 0; r < size; r++) {
            g->uaddr[r] = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = all[r].port};
            g->uaddr[r].sin_addr.s_addr = all[r].addr;
            g->memb[r] = r;
        }
        g->nmemb = size;
        if (rank == 0 && mc_group_alloc_address(g) == 0)
            d = (mc_desc_t){g->session, g->maddr.sin_addr.s_addr, g->maddr.sin_port, 1};
    }
    free(all);
    PMPI_Bcast(&d, sizeof d, MPI_BYTE, 0, st->icomm);
    int joined = 0;
    if (g != NULL && d.ok) {
        g->session = d.session;
        g->maddr = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = d.port};
        g->maddr.sin_addr.s_addr = d.addr;
        joined = mc_open_group_socket(g) == 0;
    }
    PMPI_Allreduce(MPI_IN_PLACE, &joined, 1, MPI_INT, MPI_MIN, st->icomm);
    if (!joined) {
        mc_group_free(g);
        return 0;
    }
    mc_registry_add(g);
    st->group = g;
    return 1;
}

int mc_comm_get(MPI_Comm comm, mc_comm_t **state)
{
    int flag = 0;
    void *v = NULL;
    if (mc_keyval == MPI_KEYVAL_INVALID)
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &mc_keyval, NULL);
    PMPI_Comm_get_attr(comm, mc_keyval, &v, &flag);
    if (flag) {
        *state = v;
        return MPI_SUCCESS;
    }
    mc_comm_t *st = calloc(1, sizeof *st);
    if (st == NULL)
        return MPI_ERR_NO_MEM;
    st->icomm = MPI_COMM_NULL;
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (!inter) {
        PMPI_Comm_dup(comm, &st->icomm);
        st->enabled = static_setup(st, comm);
    }
    PMPI_Comm_set_attr(comm, mc_keyval, st);
    *state = st;
    return MPI_SUCCESS;
}

int aapc_mcast_comm_attach(MPI_Comm comm, int *enabled)
{
    mc_comm_t *st = NULL;
    int rc = mc_comm_get(comm, &st);
    if (enabled != NULL)
        *enabled = rc == MPI_SUCCESS && st->enabled;
    return rc;
}

int mc_group_open_subset(mc_comm_t *st, int root, long long *bytes,
                         struct aapc_mcast_group_s **out)
{
    struct aapc_mcast_group_s *sg = st->group;
    int rank = sg->rank, size = sg->size;
    size_t len = sizeof(mc_desc_t) + sizeof(long long) * (size_t)size;
    unsigned char *msg = calloc(1, len);
    struct aapc_mcast_group_s *g = group_new(sg->comm, st->icomm, sg->uaddr);
    mc_desc_t d = {0, 0, 0, 0};
    int rc;
    *out = NULL;
    if (rank == root) {
        if (g != NULL && msg != NULL && mc_group_alloc_address(g) == 0)
            d = (mc_desc_t){g->session, g->maddr.sin_addr.s_addr, g->maddr.sin_port, 1};
        if (msg != NULL) {
            memcpy(msg, &d, sizeof d);
            memcpy(msg + sizeof d, bytes, sizeof(long long) * (size_t)size);
        }
        rc = msg != NULL ? mc_reliable_send(sg, msg, len) : MPI_ERR_NO_MEM;
    } else {
        rc = msg != NULL ? mc_reliable_recv(sg, root, msg, len) : MPI_ERR_NO_MEM;
        if (rc == MPI_SUCCESS) {
            memcpy(&d, msg, sizeof d);
            memcpy(bytes, msg + sizeof d, sizeof(long long) * (size_t)size);
        }
    }
    free(msg);
    if (rc != MPI_SUCCESS || !d.ok || g == NULL) {
        mc_group_free(g);
        return rc != MPI_SUCCESS ? rc : (d.ok ? MPI_ERR_NO_MEM : -1);
    }
    g->session = d.session;
    g->maddr = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = d.port};
    g->maddr.sin_addr.s_addr = d.addr;
    g->root = root;
    for (int r = 0; r < size; r++)
        if (r != root && bytes[r] > 0)
            g->memb[g->nmemb++] = r;
    int member = rank != root && bytes[rank] > 0;
    if (rank != root && !member) {
        mc_group_free(g); /* not in the group: move on */
        return MPI_SUCCESS;
    }
    if (member) {
        int ok = mc_open_group_socket(g) == 0;
        mc_registry_add(g);
        PMPI_Send(&ok, 1, MPI_INT, root, MC_TAG_JOIN, st->icomm);
    } else {
        mc_registry_add(g);
        int all_ok = 1;
        for (int k = 0; k < g->nmemb; k++) {
            int ok = 0;
            PMPI_Recv(&ok, 1, MPI_INT, g->memb[k], MC_TAG_JOIN, st->icomm, MPI_STATUS_IGNORE);
            all_ok = all_ok && ok;
        }
        if (!all_ok) {
            fprintf(stderr, "aapc_mcast: rank %d: a member could not join the per-call group\n",
                    rank);
            mc_group_free(g);
            return MPI_ERR_OTHER;
        }
    }
    *out = g;
    return MPI_SUCCESS;
}
