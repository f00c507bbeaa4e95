/*
 * aapc_mpi.h: portable MPI-3 helpers of the runtime (private to runtime_c/): 64-bit type sizes,
 * addresses relative to MPI_BOTTOM, whether the world model is initialised, and a datatype of
 * any number of bytes.
 */
#ifndef AAPC_MPI_H
#define AAPC_MPI_H

#include <limits.h>
#include <stdint.h>

#include <mpi.h>

/* MPI_STATUSES_IGNORE for the runtime's own calls on arrays of requests. MPICH 4.0's mpi.h makes
   it (MPI_Status *)1 and gives the prototypes access attributes, so GCC 11 and later warn
   (-Wstringop-overflow) that every such call writes statuses through it; read through a
   volatile pointer the value is the MPI's own and the false alarm ends. */
static inline MPI_Status *aapc_statuses_ignore(void)
{
    MPI_Status *volatile ignore = MPI_STATUSES_IGNORE;
    return ignore;
}

/* The size in bytes of one element of t, 64-bit: a derived type may be larger than INT_MAX
   bytes (MPI_Type_size then gives MPI_UNDEFINED). MPI_Type_size_x is MPI-3; SimGrid SMPI's
   sizes are those of its simulation, where MPI_Type_size is enough. */
static inline int aapc_type_size(MPI_Datatype t, int64_t *size)
{
#ifdef SMPI_SHARED_MALLOC
    int s = 0;
    int rc = PMPI_Type_size(t, &s);
    *size = s;
    return rc;
#else
    MPI_Count s = 0;
    int rc = PMPI_Type_size_x(t, &s);
    *size = rc == MPI_SUCCESS && s != MPI_UNDEFINED ? (int64_t)s : 0;
    if (rc == MPI_SUCCESS && s == MPI_UNDEFINED)
        rc = MPI_ERR_TYPE; /* larger than MPI_Count: cannot happen with a 64-bit MPI_Count */
    return rc;
#endif
}

/* The bytes of count elements of t (saturated at INT64_MAX), or -1 when that is not a count of
   a datatype: a negative count, MPI_DATATYPE_NULL, a datatype MPI refuses. */
static inline int64_t aapc_block_bytes(int64_t count, MPI_Datatype t)
{
    int64_t size = 0;
    if (count < 0 || t == MPI_DATATYPE_NULL || aapc_type_size(t, &size) != MPI_SUCCESS)
        return -1;
    return size > 0 && count > INT64_MAX / size ? INT64_MAX : count * size;
}

/* The ranks a collective on comm exchanges blocks with, the length of its count arrays: comm's
   size, the remote group's on an inter-communicator. */
static inline int aapc_peers(MPI_Comm comm, int *peers)
{
    int inter = 0, rc = PMPI_Comm_test_inter(comm, &inter);
    if (rc != MPI_SUCCESS)
        return rc;
    return inter ? PMPI_Comm_remote_size(comm, peers) : PMPI_Comm_size(comm, peers);
}

/* The bytes of the blocks a rank sends, summed in double (counts of 64 bits, as the report's
   byte column takes them): saturated at INT64_MAX. */
static inline long long aapc_bytes_total(double sum)
{
    return sum >= 9.2e18 ? (long long)INT64_MAX : (long long)sum;
}

/* base + off bytes, where base may be MPI_BOTTOM (the data then lives at absolute addresses
   given by the datatype): integer arithmetic, since offsetting a null pointer is undefined. */
static inline void *aapc_at(const void *base, MPI_Aint off)
{
    return (void *)((uintptr_t)base + (uintptr_t)off);
}

/* 1 when MPI_Init / MPI_Init_thread has been called and MPI_Finalize has not: the world model,
   where MPI_COMM_WORLD and MPI_COMM_SELF exist. 0 before MPI_Init, after MPI_Finalize, and in
   an MPI-4 sessions program (communicators from MPI_Comm_create_from_group, no MPI_Init),
   where the runtime must not touch either. */
static inline int aapc_world_model(void)
{
    int init = 0, fin = 0;
    PMPI_Initialized(&init);
    if (init)
        PMPI_Finalized(&fin);
    return init && !fin;
}

/* 1 when a call on comm cannot be ours to look at: after MPI_Finalize, or on MPI_COMM_WORLD or
   MPI_COMM_SELF before MPI_Init (the library reports it as such); a sessions program's
   communicators exist without MPI_Init. */
static inline int aapc_outside_mpi(MPI_Comm comm)
{
    int init = 0, fin = 0;
    PMPI_Initialized(&init);
    if (init)
        PMPI_Finalized(&fin);
    return fin || (!init && (comm == MPI_COMM_WORLD || comm == MPI_COMM_SELF));
}

/* A datatype for `bytes` bytes in one element (count 1): MPI_BYTE with an int count when it
   fits (*t = MPI_BYTE, *count = bytes), else a committed struct of whole MiB plus the rest,
   which the caller frees. */
static inline int aapc_bytes_type(int64_t bytes, MPI_Datatype *t, int *count)
{
    if (bytes <= INT_MAX) {
        *t = MPI_BYTE;
        *count = (int)bytes;
        return MPI_SUCCESS;
    }
    enum { MIB = 1 << 20 };
    MPI_Datatype mib = MPI_DATATYPE_NULL, parts[2];
    int64_t whole = bytes / MIB;
    int rc, len[2] = {(int)whole, (int)(bytes % MIB)};
    MPI_Aint disp[2] = {0, (MPI_Aint)(whole * MIB)};
    if (whole > INT_MAX)
        return MPI_ERR_COUNT;
    if ((rc = PMPI_Type_contiguous(MIB, MPI_BYTE, &mib)) != MPI_SUCCESS)
        return rc;
    parts[0] = mib;
    parts[1] = MPI_BYTE;
    rc = PMPI_Type_create_struct(len[1] > 0 ? 2 : 1, len, disp, parts, t);
    PMPI_Type_free(&mib);
    if (rc == MPI_SUCCESS && (rc = PMPI_Type_commit(t)) != MPI_SUCCESS)
        PMPI_Type_free(t);
    *count = 1;
    return rc;
}

#endif /* AAPC_MPI_H */
