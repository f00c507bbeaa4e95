/*
 * aapc_shm_dtype.c: datatype handling for the shared-memory collectives.
 *
 * Algorithm: a datatype is "contiguous" when count elements are exactly size*count bytes at
 * buf + true_lb in type-map order: a predefined type whose size equals its extent, or a
 * contiguous/dup/resized-free chain of such (checked through MPI_Type_get_envelope). Contiguous
 * data moves with memcpy straight between user buffers and the window; anything else is packed
 * with MPI_Pack into private memory first and unpacked with MPI_Unpack at the end (the packed
 * form is the contiguous byte stream on both MPICH and Open MPI for homogeneous nodes, which the
 * tests check against the library's own collectives). Reductions keep the user layout instead
 * (see aapc_shm_reduce_short.c). Cost: contiguous, 0 extra copies; derived, one extra pass of
 * MPI_Pack/MPI_Unpack over the data.
 */
#include "aapc_shm_impl.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int named_or_contiguous(MPI_Datatype dt, int depth)
{
    int ni, na, nd, combiner;
    if (depth > 16 || PMPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) != MPI_SUCCESS) {
        return 0;
    }
    if (combiner == MPI_COMBINER_NAMED) {
        return 1;
    }
    if (combiner != MPI_COMBINER_CONTIGUOUS && combiner != MPI_COMBINER_DUP) {
        return 0;
    }
    int ints[1];
    MPI_Aint addrs[1];
    MPI_Datatype inner;
    if (ni > 1 || na > 0 || nd != 1 ||
        PMPI_Type_get_contents(dt, ni, na, nd, ints, addrs, &inner) != MPI_SUCCESS) {
        return 0;
    }
    int ok = named_or_contiguous(inner, depth + 1);
    int ni2, na2, nd2, comb2;
    PMPI_Type_get_envelope(inner, &ni2, &na2, &nd2, &comb2);
    if (comb2 != MPI_COMBINER_NAMED) {
        PMPI_Type_free(&inner);
    }
    return ok;
}

int aapc_shm_type_info(MPI_Datatype dt, aapc_shm_type *t)
{
    int rc = PMPI_Type_get_extent(dt, &t->lb, &t->extent);
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Type_get_true_extent(dt, &t->true_lb, &t->true_extent);
    }
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Type_size(dt, &t->size);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    t->contig = t->size == t->extent && t->size == t->true_extent && t->lb == t->true_lb &&
                named_or_contiguous(dt, 0);
    return MPI_SUCCESS;
}

MPI_Aint aapc_shm_span(const aapc_shm_type *t, MPI_Aint count)
{
    return count <= 0 ? 0 : (count - 1) * t->extent + t->true_extent;
}

const char *aapc_shm_pack(const void *buf, int count, MPI_Datatype dt, const aapc_shm_type *t,
                          void **scratch, int *err)
{
    *err = MPI_SUCCESS;
    *scratch = NULL;
    if (t->contig) {
        return (const char *)buf + t->true_lb;
    }
    size_t n = (size_t)count * (size_t)t->size;
    *scratch = malloc(n > 0 ? n : 1);
    if (*scratch == NULL) {
        *err = MPI_ERR_NO_MEM;
        return NULL;
    }
    int pos = 0;
    *err = PMPI_Pack(buf, count, dt, *scratch, (int)n, &pos, MPI_COMM_SELF);
    if (*err != MPI_SUCCESS) {
        free(*scratch);
        *scratch = NULL;
        return NULL;
    }
    return *scratch;
}

char *aapc_shm_unpack_target(void *buf, int count, const aapc_shm_type *t, void **scratch,
                             int *err)
{
    *err = MPI_SUCCESS;
    *scratch = NULL;
    if (t->contig) {
        return (char *)buf + t->true_lb;
    }
    size_t n = (size_t)count * (size_t)t->size;
    *scratch = malloc(n > 0 ? n : 1);
    if (*scratch == NULL) {
        *err = MPI_ERR_NO_MEM;
    }
    return *scratch;
}

int aapc_shm_unpack_finish(void *buf, int count, MPI_Datatype dt, void *scratch)
{
    if (scratch == NULL) {
        return MPI_SUCCESS;
    }
    int size = 0, pos = 0;
    PMPI_Type_size(dt, &size);
    int rc = PMPI_Unpack(scratch, count * size, &pos, buf, count, dt, MPI_COMM_SELF);
    free(scratch);
    return rc;
}

int aapc_shm_typed_copy(void *dst, const void *src, int count, MPI_Datatype dt,
                        const aapc_shm_type *t)
{
    if (count <= 0 || dst == src) {
        return MPI_SUCCESS;
    }
    if (t->contig) {
        memcpy((char *)dst + t->true_lb, (const char *)src + t->true_lb,
               (size_t)count * (size_t)t->size);
        return MPI_SUCCESS;
    }
    /* MPI_Pack + MPI_Unpack through a stage: under MPICH 5 a message to self of a non-contiguous
       type took 10-30x as long from 128 KB on (docs/measurements/typed-blocks.md) */
    void *stage = NULL;
    int rc = MPI_SUCCESS;
    if (src != NULL && dst != NULL && (int64_t)count * t->size <= (int64_t)1 << 26 &&
        aapc_shm_pack(src, count, dt, t, &stage, &rc) != NULL &&
        aapc_shm_unpack_finish(dst, count, dt, stage) == MPI_SUCCESS) /* frees the stage */
        return MPI_SUCCESS;
    return PMPI_Sendrecv(src, count, dt, 0, 0, dst, count, dt, 0, 0, MPI_COMM_SELF,
                         MPI_STATUS_IGNORE);
}
