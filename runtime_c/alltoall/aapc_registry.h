/*
 * aapc_registry.h: the variants generated into one directory (one topology per directory).
 *
 * `aapcgen generate` writes aapc_<topology>_intercept.c, which defines aapc_variants[] and,
 * under -DAAPC_INTERCEPT, MPI_Alltoall itself: it calls the variant named by the environment
 * variable AAPC_VARIANT, or the default variant chosen at generation time.
 */
#ifndef AAPC_REGISTRY_H
#define AAPC_REGISTRY_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int (*aapc_alltoall_fn)(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                MPI_Comm comm);

typedef struct aapc_variant {
    const char *variant;   /* CLI name, e.g. "sender-all" or "sender-partial-4" */
    aapc_alltoall_fn fn;   /* aapc_alltoall_<topology>_<variant> */
} aapc_variant_t;

extern const aapc_variant_t aapc_variants[];
extern const int aapc_nvariants;
extern const char *const aapc_topology_name;

/* The variant named by $AAPC_VARIANT, else default_variant (looked up once per process). */
aapc_alltoall_fn aapc_variant_lookup(const char *default_variant);
/* The same for a call on comm: $AAPC_VARIANT when every rank of comm has the same settings
   (gathered on comm's first use: aapc_cluster_comm_settle), else default_variant. */
aapc_alltoall_fn aapc_variant_for(MPI_Comm comm, const char *default_variant);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_REGISTRY_H */
