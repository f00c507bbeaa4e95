/*
 * aapc_vregistry.h: the MPI_Alltoallv routines generated into one directory and the choice
 * among them (selection, kept apart from the algorithms).
 */
#ifndef AAPC_VREGISTRY_H
#define AAPC_VREGISTRY_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int (*aapc_alltoallv_fn)(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                 MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                                 const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm);

typedef struct aapc_vvariant {
    const char *variant;   /* e.g. "level3-receiver-all", "level1-sender-all" */
    aapc_alltoallv_fn fn;
} aapc_vvariant_t;

/* Level 2: MPI_Alltoallv's arguments preceded by the whole N x N byte matrix (row = source). */
typedef int (*aapc_alltoallv_level2_fn)(const long long *bytes, const void *sendbuf,
                                        const int sendcounts[], const int sdispls[],
                                        MPI_Datatype sendtype, void *recvbuf,
                                        const int recvcounts[], const int rdispls[],
                                        MPI_Datatype recvtype, MPI_Comm comm);

typedef struct aapc_vlevel2 {
    const char *variant;   /* "level2-<sync>" */
    aapc_alltoallv_level2_fn fn;
} aapc_vlevel2_t;

/* Defined by the generated aapc_<topology>_intercept.c. */
extern const aapc_vvariant_t aapc_vvariants[];
extern const int aapc_nvvariants;
extern const aapc_vlevel2_t aapc_vlevel2s[];
extern const int aapc_nvlevel2s;

/* The entry of table[0..n-1] named by $AAPC_ALLTOALLV, else the one named default_variant,
   else table[0]. Looked up once per process (the result is kept in *chosen). */
aapc_alltoallv_fn aapc_vvariant_lookup(const aapc_vvariant_t *table, int n,
                                       const char *default_variant, aapc_alltoallv_fn *chosen);
/* The entry named `wanted` (NULL or empty: default_variant; an unknown name says so once). */
aapc_alltoallv_fn aapc_vvariant_resolve(const aapc_vvariant_t *table, int n, const char *wanted,
                                        const char *default_variant);
/* The entry for a call on comm: $AAPC_ALLTOALLV when every rank of comm has the same settings
   (gathered on comm's first use: aapc_cluster_comm_settle), else default_variant. */
aapc_alltoallv_fn aapc_vvariant_for(const aapc_vvariant_t *table, int n, MPI_Comm comm,
                                    const char *default_variant);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_VREGISTRY_H */
