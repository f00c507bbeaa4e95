/*
 * aapc_shm.h: collectives through one shared-memory window, for communicators whose ranks all
 * run on one machine (node).
 *
 * Every function has the semantics of the MPI collective of the same name (datatypes, derived
 * ones included, counts, roots, MPI_IN_PLACE where MPI allows it) and returns an MPI error code.
 * The first call on a communicator is collective over it and creates its state: a node
 * communicator from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), a window from
 * MPI_Win_allocate_shared, cached as an attribute of the communicator and freed with it
 * (MPI_Comm_free). On a communicator that spans several nodes, or an intercommunicator, or for an
 * argument combination the window cannot carry (one datatype element larger than a window block),
 * the functions call the MPI library (PMPI_*) instead, so they are always correct to call.
 *
 * A leader-based hierarchical layer calls them on its node communicator (the result of
 * MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, ...)): aapc_shm_usable() is then 1.
 *
 * Environment (read once per process):
 *   AAPC_SHM=0            aapc_shm_usable() returns 0 (the intercept then uses PMPI_* only)
 *   AAPC_SHM_SLOT_KB=N    bytes per window slot (default max(512 KB, p*p*8 KB); 4 slots)
 *   AAPC_SHM_SPINS=N      busy polls before yielding (default 2000, 20 when oversubscribed)
 *   AAPC_SHM_FUTEX=0      Linux: sleep-poll instead of blocking on a futex after spinning
 *   AAPC_SHM_CMA=0        Linux: never read other ranks' buffers directly (single-copy
 *                         Alltoall/Allgather with process_vm_readv); see aapc_shm_select.c
 *
 * Building with -DAAPC_INTERCEPT_SHM also defines MPI_Barrier, MPI_Bcast, MPI_Allgather,
 * MPI_Reduce, MPI_Allreduce and MPI_Alltoall (aapc_shm_select.c): those use these functions when
 * the communicator is on one node and fall back to PMPI_* otherwise.
 */
#ifndef AAPC_SHM_H
#define AAPC_SHM_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* *flag = 1 if comm is an intracommunicator whose ranks all share one node (and AAPC_SHM is not
   0), else 0. Collective on the first call for comm (creates the cached state). */
int aapc_shm_usable(MPI_Comm comm, int *flag);

/* *flag = 1 when large Alltoall/Allgather calls on comm currently read the other ranks' buffers
   directly (Linux process_vm_readv, probed once per communicator on the first call large enough
   to use it), 0 otherwise: not probed yet, AAPC_SHM_CMA=0, not permitted here (ptrace
   restrictions), or a read failed once. Collective only if it is the first call for comm. */
int aapc_shm_single_copy(MPI_Comm comm, int *flag);

/* Free comm's state now (window, node communicator), collectively over comm, if it has one; a
   later call on comm creates it again. For a layer that must release its windows before
   MPI_Finalize deletes the communicators (hier/aapc_hier_segment.c). */
int aapc_shm_release(MPI_Comm comm);

/* 1 when this process must not create shared windows from several threads: Open MPI 5.0's
   MPI_Win_allocate_shared, called by two threads at once on different communicators, corrupts
   its heap (a plain MPI program shows it), so under Open MPI with MPI_THREAD_MULTIPLE the
   layers above make none (hier/aapc_hier_segment.c, coll/aapc_coll_select.c). */
int aapc_shm_windows_unsafe(void);
/* Seed 003's lock-free channels between comm's rank 0 and each other rank
   (aapc_shm_channel.c). open: collective over comm, once (later calls return at once); without
   it, or on a communicator that spans machines, or between two ranks neither of which is rank
   0, send and receive are the MPI library's (PMPI_Send/PMPI_Recv on comm), so they are always
   correct to call; so are they when the machine's ranks outnumber its cores (AAPC_SHM_CHANNELS
   unset or auto; 1: channels always, 0: never). A receive takes one message of at most count
   elements (MPI_ERR_TRUNCATE for a longer one, which is taken off the channel all the same). */
int aapc_shm_channels_open(MPI_Comm comm);
/* 1 when comm's rank 0 and its other ranks exchange through the channels (local). */
int aapc_shm_channels_on(MPI_Comm comm);
int aapc_shm_chan_send(const void *buf, int count, MPI_Datatype type, int to, MPI_Comm comm);
int aapc_shm_chan_recv(void *buf, int count, MPI_Datatype type, int from, MPI_Comm comm);
int aapc_shm_barrier(MPI_Comm comm);
int aapc_shm_bcast(void *buf, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
int aapc_shm_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int aapc_shm_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                    MPI_Op op, int root, MPI_Comm comm);
int aapc_shm_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm);
int aapc_shm_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm);

#ifdef __cplusplus
}
#endif

#endif
