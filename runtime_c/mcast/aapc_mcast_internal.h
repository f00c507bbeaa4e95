/*
 * aapc_mcast_internal.h: structures shared by the multicast transport, group management and the
 * collectives (not part of the public API).
 */
#ifndef AAPC_MCAST_INTERNAL_H
#define AAPC_MCAST_INTERNAL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* ppoll, struct ip_mreqn, SO_RCVBUFFORCE: include this header first */
#endif

#include "aapc_mcast.h"

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#define MC_MAGIC 0x4d435032u /* "MCP2" */
#define MC_TYPE_DATA 1
#define MC_TYPE_ACK 2
#define MC_TAG_CONFIRM 7301 /* receiver -> root or co-root: operation ended, with its MPI error
                              code (one int, MPI, internal comm) */
#define MC_TAG_JOIN 7302    /* member -> root: joined a per-call group */
#define MC_MAX_DATAGRAM 65507
#define MC_PENDING 4      /* operations whose confirmations a root may still collect */
#define MC_COROOT_FROM 64 /* co-roots by default above this many receivers (seed 004 5.1.3) */

/* Wire header; homogeneous jobs only (host byte order, like MPI_BYTE data). */
typedef struct {
    uint32_t magic;
    uint16_t type;
    uint16_t span;  /* receivers per ACK collector (co-root sub-group) of the operation */
    uint32_t src;   /* communicator rank of the sender */
    uint32_t seq;   /* operation number on the group */
    uint32_t idx;   /* DATA: fragment index; ACK: cumulative, first fragment not yet received */
    uint32_t nfrag; /* fragments of the operation */
    uint64_t session; /* random id of the group: filters foreign and closed groups */
    uint64_t total;   /* DATA: bytes of the operation; ACK: the lowest cumulative count in the
                         sender's sub-group (itself and, at a co-root, its unfinished leaves) */
    uint64_t sack;    /* ACK: bit k set = fragment idx + 1 + k received */
} mc_hdr_t;

/* Confirmations of an operation a root returned from before they all arrived (its direct
 * receivers held the whole message): collected by later operations and when the group ends. */
typedef struct {
    int n;
    uint32_t seq;
    MPI_Request *req;
    int *code; /* each receiver's MPI error code */
    int *rank;
} mc_pending_t;

typedef struct mc_stash {
    struct mc_stash *next;
    size_t len; /* header + payload */
    unsigned char pkt[];
} mc_stash_t;

/* One multicast group (static, dynamic or compiler-assisted). */
struct aapc_mcast_group_s {
    uint64_t session;
    struct sockaddr_in maddr;  /* group address and port */
    int sock;                  /* joined socket, -1 on ranks that are not members */
    MPI_Comm icomm;            /* internal duplicate of the communicator (owned by its state) */
    MPI_Comm comm;             /* the user's communicator */
    int rank, size;            /* in comm */
    int root;                  /* per-call groups: the root; -1 for the static group */
    int nmemb;                 /* receivers: members (root excluded for per-call groups) */
    int *memb;                 /* their communicator ranks, ascending */
    struct sockaddr_in *uaddr; /* unicast endpoint of every communicator rank (copy) */
    uint32_t seq;              /* next operation number */
    double srtt, rttvar;       /* root: smoothed ACK round trip (seconds), 0 = no sample */
    mc_stash_t *stash;         /* early packets of later operations */
    size_t stash_bytes;
    long long *bytes;          /* compiler-assisted: bytes of every rank; NULL otherwise */
    int mode;                  /* compiler-assisted handle: 0 in the group (or root), 1 outside,
                                  2 multicast disabled (PMPI_Scatterv) */
    int slot;                  /* leader's address slot, -1 when this rank does not own it */
    mc_pending_t pend[MC_PENDING]; /* oldest first */
    int npend;
    struct aapc_mcast_group_s *next; /* process registry */
};

/* Static state of one communicator (cached as an attribute). */
typedef struct {
    int enabled;
    int one_host; /* every rank has the same interface address: shared memory wins */
    MPI_Comm icomm;
    struct aapc_mcast_group_s *group;
} mc_comm_t;

/* Per-process transport state and configuration (aapc_mcast_transport.c). */
typedef struct {
    int initialized, ok;
    int usock; /* unicast socket: ACKs, unicast retransmissions */
    struct in_addr ifaddr;
    int ifindex;
    int loopback;
    int mtu;
    size_t frag;
    int window;
    long rto_us, rto_max_us;
    int retries;
    double recv_timeout;
    int unicast_max;
    int span; /* AAPC_MCAST_COROOT_SPAN: 0 automatic, 1 no co-roots */
    double drop_data, drop_ack;
    uint64_t rng;
    int world_rank;
    struct aapc_mcast_group_s *groups; /* registry of open groups */
} mc_proc_t;

extern mc_proc_t mc_proc;

/* transport */
int mc_proc_init(void); /* local; 0 on success */
int mc_open_group_socket(struct aapc_mcast_group_s *g); /* join g->maddr; 0 on success */
void mc_close_group_socket(struct aapc_mcast_group_s *g);
int mc_reliable_send(struct aapc_mcast_group_s *g, const void *buf, uint64_t len);
int mc_reliable_recv(struct aapc_mcast_group_s *g, int root, void *buf, uint64_t len);
uint64_t mc_random64(void);
void mc_registry_add(struct aapc_mcast_group_s *g);
void mc_registry_remove(struct aapc_mcast_group_s *g);
void mc_stash_free(struct aapc_mcast_group_s *g);
/* Collects the confirmations of earlier operations rooted here, waiting for the oldest until at
 * most `keep` operations are outstanding; MPI_SUCCESS or the first error a receiver reported. */
int mc_pending_settle(struct aapc_mcast_group_s *g, int keep);

/* groups */
int mc_comm_get(MPI_Comm comm, mc_comm_t **state); /* collective on first use */
int mc_group_alloc_address(struct aapc_mcast_group_s *g); /* leader: address, port, session */
void mc_group_free(struct aapc_mcast_group_s *g);
/* Per-call group of the ranks with bytes[r] > 0 (r != root), described by the root over the
 * static group; `bytes` is significant at the root and filled everywhere. Collective. */
int mc_group_open_subset(mc_comm_t *st, int root, long long *bytes,
                         struct aapc_mcast_group_s **out);

/* datatypes: contiguous test and (un)packing to/from a byte image */
int mc_is_contig(int count, MPI_Datatype dt, long long *bytes, MPI_Aint *lb);
int mc_pack(const void *buf, int count, MPI_Datatype dt, void *out, long long bytes);
int mc_unpack(const void *in, long long bytes, void *buf, int count, MPI_Datatype dt);
/* A copy within this process from (src, scount, stype) to (dst, rcount, rtype): memcpy of the
   images when both are their own, else MPI_Pack/MPI_Unpack (through a stage of at most
   MC_LOCAL_STAGE_MAX bytes when neither is), else (sizes differ, a packed form that is not the
   image) a message to self: under MPICH that costs 10-30x MPI_Pack + MPI_Unpack from 128 KB on
   for a non-contiguous type (docs/measurements/typed-blocks.md). */
#define MC_LOCAL_STAGE_MAX (1LL << 26)
int mc_local_copy(const void *src, int scount, MPI_Datatype stype, void *dst, int rcount,
                  MPI_Datatype rtype);
int mc_error(MPI_Comm comm, int code); /* calls the error handler, returns code */

#endif /* AAPC_MCAST_INTERNAL_H */
