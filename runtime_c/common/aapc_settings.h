/*
 * aapc_settings.h: the environment variables that change what the routines send, agreed by
 * every rank of a communicator (aapc_settings.c).
 *
 * A setting given to some ranks only (an MPMD launch with -env on one group) would make the
 * ranks of one call run different protocols and wait for each other forever. So every rank
 * hashes the values of these variables once, the first use of a communicator gathers the hashes
 * with the ranks' machines (common/aapc_cluster_comm.c, no extra collective), and a
 * communicator whose ranks differ runs every routine with the built-in defaults, with one
 * warning naming the variables that differ.
 */
#ifndef AAPC_SETTINGS_H
#define AAPC_SETTINGS_H

#include <stdint.h>

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The variables: AAPC_VARIANT, AAPC_WAY, AAPC_WINDOW, AAPC_AGREE, AAPC_HIER_ROUND_BYTES,
   AAPC_ALLTOALLV, AAPC_SIBLINGS, AAPC_LEADERS, and those of the other collectives
   (coll/aapc_coll_select.c): AAPC_BCAST, AAPC_ALLGATHER, AAPC_ALLREDUCE, AAPC_REDUCE,
   AAPC_BARRIER, AAPC_DISABLE, AAPC_COLL_MAX_BYTES, AAPC_COLL_RING_MIN, AAPC_COLL_PHASED_MIN,
   AAPC_COLL_MIN_BCAST, AAPC_COLL_MIN_ALLGATHER, AAPC_COLL_MIN_ALLREDUCE, AAPC_COLL_MIN_REDUCE,
   AAPC_COLL_MIN_BARRIER, AAPC_SCATTER, AAPC_SCATTERV, AAPC_COLL_MIN_SCATTER,
   AAPC_COLL_MIN_SCATTERV, AAPC_SHM_CHANNELS, AAPC_COLL_CHAIN_CHUNK, AAPC_COLL_CHAIN_MIN,
   AAPC_INFLIGHT, AAPC_TRACE and AAPC_DUMP_SCHEDULE (a traced or dumped call runs the phase
   executor). (Others only change how
   a rank waits or when it posts its
   receives, AAPC_WAIT, AAPC_PREPOST_WINDOW, or what it prints; they may differ.) */
extern const char *const aapc_settings_names[];
extern const int aapc_settings_count;

/* A 64-bit hash of every variable's value in this process (unset and empty differ), and of
   one variable alone; computed from the environment at each call (cheap; first uses only). */
uint64_t aapc_settings_hash(void);
uint64_t aapc_setting_hash(const char *name);

/* The value of setting `name` for a call on comm: getenv(name) when every rank of comm has
   the same settings or comm was never gathered (a routine called without the generated
   entry points), NULL (the built-in default) when its ranks differ. No communication. */
const char *aapc_setting(MPI_Comm comm, const char *name);

/* After the gather found that the ranks of dup differ: name the variables that differ in one
   warning on its rank 0 (one MPI_Allreduce over dup of two hashes per variable). */
int aapc_settings_warn_differ(MPI_Comm dup, const char *name);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_SETTINGS_H */
