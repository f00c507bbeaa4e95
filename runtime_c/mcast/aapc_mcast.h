/*
 * aapc_mcast.h: MPI collectives over reliable UDP/IP multicast (public C API).
 *
 * Seeds 000 (CC-MPI, section 4.1) and 001 (group management schemes): MPI_Bcast is one reliable
 * multicast; MPI_Scatter multicasts the aggregate of all blocks; MPI_Scatterv is two broadcasts
 * (the per-rank sizes, then the data); MPI_Allgather is N broadcasts. Data moves over UDP
 * (IP_MULTICAST_TTL 1, IP_MULTICAST_ALL 0); endpoints, group addresses and ports are exchanged
 * over MPI when a group is set up, and each receiver's completion is confirmed to the root (or
 * its co-root) by a small MPI message so that a lost final ACK can never leave a root waiting.
 * The root returns once its co-roots hold the message; confirmations are collected later.
 *
 * Groups (docs/multicast.md, "Group address scheme"):
 *   - static: one multicast group per communicator, created by the first multicast collective
 *     on it (or aapc_mcast_comm_attach) and destroyed with the communicator (attribute delete
 *     callback; MPI_COMM_WORLD's at MPI_Finalize);
 *   - dynamic: aapc_mcast_scatterv(..., AAPC_MCAST_DYNAMIC) creates a group of the ranks with a
 *     non-zero count for the call and destroys it afterwards;
 *   - compiler-assisted: aapc_scatterv_open_group / aapc_scatterv_data_movement /
 *     aapc_scatterv_close_group (the seeds' MPI_Scatterv_open_group family; the MPI_ prefix is
 *     reserved), several handles may be open at once.
 *
 * Every function is collective over `comm` (data_movement: every rank calls it, ranks outside
 * the group return at once) and returns MPI_SUCCESS or an MPI error class after invoking the
 * communicator's error handler. A communicator on which multicast cannot be set up (no
 * multicast-capable interface, join failure on any rank) is marked disabled and the collectives
 * fall back to the MPI library (PMPI_*), so results are always correct.
 *
 * Environment (read once per process; all ranks must agree):
 *   AAPC_MCAST_IF        interface name or IPv4 address (default: first up, multicast, non-loopback
 *                        IPv4 interface, else lo)
 *   AAPC_MCAST_FRAG      payload bytes per datagram (default 16384 when a datagram that size fits
 *                        the interface MTU, as on lo; else MTU - 28 - 48 (header): 1424 at MTU
 *                        1500, so datagrams are never IP-fragmented). Equal on every rank.
 *   AAPC_MCAST_WINDOW    fragments in flight at the root (default max(4, 512 KiB / FRAG))
 *   AAPC_MCAST_RTO_US    smallest retransmission timeout, microseconds (default 10000); the
 *                        timeout is srtt + 4 rttvar of the ACKs, doubled on every timeout
 *                        without progress up to AAPC_MCAST_RTO_MAX_US (500000)
 *   AAPC_MCAST_RETRIES   timeouts without progress before the root gives up (default 12)
 *   AAPC_MCAST_RECV_TIMEOUT  seconds a receiver waits without progress (default 60)
 *   AAPC_MCAST_UNICAST_MAX   a fragment missed by at most this many receivers is retransmitted by
 *                        unicast, by multicast otherwise (default 2)
 *   AAPC_MCAST_COROOT_SPAN   receivers per ACK collector (seed 004's co-roots): 1 = every receiver
 *                        ACKs to the root; S > 1 = sub-groups of S consecutive receivers whose
 *                        first collects the others' ACKs and retransmits to them; 0 (default) =
 *                        1 up to 64 receivers, else ceil(sqrt(receivers)). Equal on every rank.
 *   AAPC_MCAST_DROP_DATA, AAPC_MCAST_DROP_ACK  drop probability in [0,1] for received data
 *                        packets / sent ACKs (fault injection), AAPC_MCAST_SEED its RNG seed
 */
#ifndef AAPC_MCAST_H
#define AAPC_MCAST_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    AAPC_MCAST_STATIC = 0,  /* one group per communicator */
    AAPC_MCAST_DYNAMIC = 1, /* a group per call (Scatterv only) */
} aapc_mcast_scheme_t;

/* Opaque handle of a compiler-assisted Scatterv group. */
typedef struct aapc_mcast_group_s *aapc_mcast_group_t;
#define AAPC_MCAST_GROUP_NULL ((aapc_mcast_group_t)0)

/* Create the static group of `comm` now (collective). Sets *enabled to 1 when multicast works on
 * every rank, 0 when the collectives will fall back to the MPI library. */
int aapc_mcast_comm_attach(MPI_Comm comm, int *enabled);

int aapc_mcast_bcast(void *buf, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
int aapc_mcast_scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
int aapc_mcast_scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                        MPI_Datatype sendtype, void *recvbuf, int recvcount,
                        MPI_Datatype recvtype, int root, MPI_Comm comm,
                        aapc_mcast_scheme_t scheme);
int aapc_mcast_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                         void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);

/* Compiler-assisted Scatterv. open_group takes exactly MPI_Scatterv's arguments (buffers are not
 * touched) and creates a group of the ranks with a non-zero count; data_movement moves one
 * Scatterv with the same counts, root and communicator (one broadcast instead of two, only the
 * group's ranks and the root take part); close_group destroys it (local, sets *group to
 * AAPC_MCAST_GROUP_NULL). */
int aapc_scatterv_open_group(const void *sendbuf, const int sendcounts[], const int displs[],
                             MPI_Datatype sendtype, void *recvbuf, int recvcount,
                             MPI_Datatype recvtype, int root, MPI_Comm comm,
                             aapc_mcast_group_t *group);
int aapc_scatterv_data_movement(const void *sendbuf, const int sendcounts[], const int displs[],
                                MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                MPI_Datatype recvtype, int root, MPI_Comm comm,
                                aapc_mcast_group_t group);
int aapc_scatterv_close_group(aapc_mcast_group_t *group);

/* Selection (aapc_mcast_select.c): 1 when the drop-in should use multicast for this call. Same
 * answer on every rank for matching calls. `op` is one of the AAPC_MCAST_OP_* values. */
enum {
    AAPC_MCAST_OP_BCAST,
    AAPC_MCAST_OP_SCATTER,
    AAPC_MCAST_OP_SCATTERV,
    AAPC_MCAST_OP_ALLGATHER
};
int aapc_mcast_choose(int op, MPI_Comm comm, long long bytes_per_rank);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_MCAST_H */
