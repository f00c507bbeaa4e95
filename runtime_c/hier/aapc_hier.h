/*
 * aapc_hier.h: collectives for machines that run several MPI ranks each (multicore machines).
 */
#ifndef AAPC_HIER_H
#define AAPC_HIER_H

#include <mpi.h>

#include "aapc_phased.h"

#ifdef __cplusplus
extern "C" {
#endif

/* MPI_Alltoall semantics on a communicator of s->nmachines x ranks_per_machine ranks placed in
   blocks (ranks k*R .. k*R+R-1 on machine k, as mpiexec -ppn R / srun -m block): one leader
   per machine gathers its machine's blocks, the leaders run schedule s on aggregated
   machine-to-machine blocks, and scatter the result. ranks_per_machine == 1 is
   aapc_alltoall_run; another communicator size falls back to PMPI_Alltoall. */
int aapc_hier_alltoall_run(const aapc_schedule_t *s, int ranks_per_machine, const void *sendbuf,
                           int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, MPI_Comm comm);

/* The communicators of the hierarchical collectives, created on first use (collective over
   comm) and cached on comm: node = the ranks of this rank's machine (rank / R), in rank order;
   leaders = local rank 0 of every machine, in machine order (MPI_COMM_NULL on other ranks). */
int aapc_hier_comms(MPI_Comm comm, int ranks_per_machine, MPI_Comm *node, MPI_Comm *leaders);

/* Leader-based collectives with MPI semantics for a communicator of nmachines x R ranks placed
   in blocks (runtime_c/hier/aapc_hier_coll.c): intra-machine steps on the node communicator, one
   inter-machine step among the leaders. Another communicator size, or R == 1, calls PMPI_*. */
int aapc_hier_bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
                    int nmachines, int ranks_per_machine);
int aapc_hier_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        int recvcount, MPI_Datatype recvtype, MPI_Comm comm, int nmachines,
                        int ranks_per_machine);
int aapc_hier_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type,
                        MPI_Op op, MPI_Comm comm, int nmachines, int ranks_per_machine);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_HIER_H */
