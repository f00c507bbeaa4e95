/*
 * aapc_vlarge.h: one side of a large-count all-to-all-v (MPI_Count counts, MPI_Aint
 * displacements in extents of one datatype) restated with int counts and displacements, the
 * same type map at the same addresses (aapc_vlarge.c). Used by MPI_Alltoallv_c
 * (alltoallv/aapc_alltoallv_large.c) and MPI_Ialltoallv_c / MPI_Alltoallv_init_c
 * (nbc/aapc_nbc_large.c).
 */
#ifndef AAPC_VLARGE_H
#define AAPC_VLARGE_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Why a side cannot be restated (a larger value is the more telling). */
enum {
    AAPC_VLARGE_OK = 0,
    AAPC_VLARGE_NO_DIVISOR = 1, /* no common divisor brings the counts and displacements in int */
    AAPC_VLARGE_TYPE = 2        /* the datatype: a negative extent, or no contiguous type made */
};

/* The restated side: c and d (the caller's arrays of P ints), buf, type (the caller's, or one
   made: MPI_Type_contiguous_c(g, type), in `made`, which the caller frees with
   MPI_Type_free once nothing uses it; MPI_DATATYPE_NULL: none). */
typedef struct aapc_vlarge {
    int *c, *d;
    const void *buf;
    MPI_Datatype type, made;
    long long g;
} aapc_vlarge_t;

/* Restate counts[P] and displs[P] of `type` at buf into *out (whose c and d point to P ints).
   The counts are >= 0 and the datatype valid and committed (the caller checked them).
   shift = 0: buf stays (sendbuf == recvbuf must stay visible to the checks). Returns an
   AAPC_VLARGE_* cause. */
int aapc_vlarge_side(const void *buf, const MPI_Count counts[], const MPI_Aint displs[],
                     MPI_Datatype type, int size, int shift, aapc_vlarge_t *out);

/* The words of a cause, after "rank R's sendcounts and sdispls ": */
const char *aapc_vlarge_words(int cause);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_VLARGE_H */
