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

#ifdef __cplusplus
}
#endif
#endif /* AAPC_HIER_H */
