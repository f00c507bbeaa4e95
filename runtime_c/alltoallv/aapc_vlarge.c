/*
 * aapc_vlarge.c: one side of a large-count all-to-all-v restated in int counts and
 * displacements (aapc_vlarge.h), so that MPI-4's MPI_Alltoallv_c and its non-blocking and
 * persistent forms run the int routines' schedules.
 *
 * Algorithm (one side of one rank: counts[j] elements of T at buf + displs[j] x extent(T)):
 *   1. blocks with no data are left out (count 0, displacement 0): they carry nothing;
 *   2. every count and displacement fits in int: the side as it is;
 *   3. else the base: B = the least displacement of a block with data, buf' = buf + B x
 *      extent(T), displacements d_j - B >= 0 (when shifting is allowed): the same addresses;
 *   4. G = gcd of the counts and shifted displacements of blocks with data; g = the least
 *      divisor of G (among the first 65536 candidates from the lower bound, then G itself)
 *      with every count / g and displacement / g at most INT_MAX. The side is then counts / g
 *      elements of T' = MPI_Type_contiguous_c(g, T) at displacements / g in extents of T': T''s
 *      type map is g copies of T's at successive extents, its extent g x extent(T) (checked
 *      after it is made, with its lower bound equal to T's), so element k of T' covers elements
 *      k g .. k g + g - 1 of T: the same type map at the same addresses, whatever T (derived,
 *      resized, with holes). The type signature is g times T's, so a peer that restates its
 *      side with another g, or not at all, still matches it byte for byte; the routines
 *      compare bytes across ranks in 64 bits, never counts or datatype handles;
 *   5. the least g keeps T' small: a non-dense T' whose message is cut into pieces travels
 *      packed, one element at a time of at most INT_MAX bytes (common/aapc_exec.c), so a
 *      non-dense T' of more is refused.
 *   No g (G has no divisor in range, e.g. counts 2^31 + 1 and 3), a negative extent, or a type
 *   that cannot be made: the cause (the caller hands the call to the MPI library).
 * Cost: O(P) plus the divisor search (at most 65536 remainders, only when something exceeds
 * int) and one MPI_Type_contiguous_c, commit and free.
 * Compiled where mpi.h is MPI 4 or later (MPI_Type_contiguous_c).
 */
#include "aapc_vlarge.h"

#include <limits.h>
#include <stdint.h>

#include "aapc_exec.h" /* aapc_dense */
#include "aapc_mpi.h"

#if MPI_VERSION >= 4

const char *aapc_vlarge_words(int cause)
{
    return cause == AAPC_VLARGE_TYPE
               ? "are beyond an int, and no contiguous type of their datatype restates them "
                 "(negative extent, or elements of more than INT_MAX bytes with holes)"
               : "are beyond an int with no common divisor that brings them within one";
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b != 0) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The least divisor g of G with m / g <= INT_MAX (0: none found). */
static int64_t least_divisor(int64_t G, int64_t m)
{
    int64_t lo = m / INT_MAX + (m % INT_MAX != 0);
    if (lo < 1)
        lo = 1;
    for (int64_t g = lo; g <= G && g < lo + 65536; g++)
        if (G % g == 0)
            return g;
    return G >= lo ? G : 0;
}

int aapc_vlarge_side(const void *buf, const MPI_Count counts[], const MPI_Aint displs[],
                     MPI_Datatype type, int size, int shift, aapc_vlarge_t *out)
{
    int fits = 1, any = 0;
    MPI_Aint base = 0;
    out->buf = buf;
    out->type = type;
    out->made = MPI_DATATYPE_NULL;
    out->g = 1;
    for (int j = 0; j < size; j++) {
        out->c[j] = out->d[j] = 0;
        if (counts[j] == 0)
            continue;
        if (counts[j] > INT_MAX || displs[j] > INT_MAX || displs[j] < INT_MIN)
            fits = 0;
        else {
            out->c[j] = (int)counts[j];
            out->d[j] = (int)displs[j];
        }
        base = any && base < displs[j] ? base : displs[j];
        any = 1;
    }
    if (fits)
        return AAPC_VLARGE_OK;
    if (!shift)
        base = 0;
    MPI_Aint lb = 0, ext = 0;
    if (PMPI_Type_get_extent(type, &lb, &ext) != MPI_SUCCESS || ext < 0)
        return AAPC_VLARGE_TYPE;
    int64_t G = 0, m = 0;
    for (int j = 0; j < size; j++) {
        if (counts[j] == 0)
            continue;
        int64_t d = (int64_t)displs[j];
        if (base < 0 && d > INT64_MAX + (int64_t)base)
            return AAPC_VLARGE_NO_DIVISOR;
        d -= base;
        int64_t ad = d < 0 ? -d : d; /* negative only when not shifted */
        G = gcd64(gcd64(G, (int64_t)counts[j]), ad);
        m = m > counts[j] ? m : counts[j];
        m = m > ad ? m : ad;
    }
    int64_t g = least_divisor(G, m);
    if (g == 0)
        return AAPC_VLARGE_NO_DIVISOR;
    MPI_Datatype t = MPI_DATATYPE_NULL;
    MPI_Aint tlb = 0, text = 0;
    int64_t tsize = 0;
    if (PMPI_Type_contiguous_c((MPI_Count)g, type, &t) != MPI_SUCCESS)
        return AAPC_VLARGE_TYPE;
    if (PMPI_Type_commit(&t) != MPI_SUCCESS || PMPI_Type_get_extent(t, &tlb, &text) != MPI_SUCCESS ||
        text != (MPI_Aint)g * ext || (ext > 0 && tlb != lb) ||
        aapc_type_size(t, &tsize) != MPI_SUCCESS || (tsize > INT_MAX && !aapc_dense(t))) {
        PMPI_Type_free(&t);
        return AAPC_VLARGE_TYPE; /* not g copies of T at successive extents, or unpackable */
    }
    for (int j = 0; j < size; j++)
        if (counts[j] != 0) {
            out->c[j] = (int)(counts[j] / g);
            out->d[j] = (int)(((int64_t)displs[j] - base) / g);
        }
    out->buf = aapc_at(buf, base * ext);
    out->type = out->made = t;
    out->g = g;
    return AAPC_VLARGE_OK;
}

#endif /* MPI_VERSION >= 4 */
