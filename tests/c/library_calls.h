/*
 * library_calls.h: counts the calls that the routines under test hand to the MPI library's own
 * collectives (test-only), so that a harness can tell a call the routine served from one it
 * passed on (a fallback gives the same bytes: comparing results alone cannot tell them apart).
 *
 * Include it first (it sets _GNU_SOURCE for RTLD_NEXT), in exactly one file of a test program.
 * It defines PMPI_Alltoall, PMPI_Alltoallv, PMPI_Bcast, PMPI_Scatter, PMPI_Scatterv and
 * PMPI_Allgather in the program: the routines compiled into the program call these (the static
 * linker binds a program's own definitions before the shared MPI library's), and each counts the
 * call when it is on the watched communicator, then forwards it to the library's function
 * (dlsym(RTLD_NEXT)). Calls on other communicators (a routine's private duplicates, leaders'
 * communicators) are not counted.
 *
 *     library_watch(comm);
 *     rc = routine(..., comm);
 *     long handed_over = library_unwatch();   calls made on comm meanwhile (this rank)
 *
 * It also defines PMPI_Allreduce and PMPI_Iallreduce, which count every reduction on any
 * communicator (the routines' agreements, on the user's communicator or a private duplicate)
 * in library_reductions, and are not counted as calls handed over.
 */
#ifndef LIBRARY_CALLS_H
#define LIBRARY_CALLS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

static MPI_Comm library_watched = MPI_COMM_NULL;
static long library_count = 0;

static inline void library_watch(MPI_Comm comm)
{
    library_watched = comm;
    library_count = 0;
}

static inline long library_unwatch(void)
{
    library_watched = MPI_COMM_NULL;
    return library_count;
}

static inline void *library_next(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (f == NULL) {
        fprintf(stderr, "library_calls.h: the MPI library has no %s\n", name);
        abort();
    }
    return f;
}

static inline void library_note(MPI_Comm comm)
{
    if (library_watched != MPI_COMM_NULL && comm == library_watched)
        library_count++;
}

/* One forwarding definition that runs COUNT first (the function pointer is looked up once). */
#define LIBRARY_DEFINE(NAME, PARAMS, ARGS, COUNT)                                                  \
    int NAME PARAMS                                                                                \
    {                                                                                              \
        static int(*next) PARAMS = NULL;                                                           \
        if (next == NULL)                                                                          \
            *(void **)(&next) = library_next(#NAME);                                               \
        COUNT;                                                                                     \
        return next ARGS;                                                                          \
    }
/* A call handed over, counted when it is on the watched communicator. */
#define LIBRARY_FORWARD(NAME, PARAMS, ARGS, COMM)                                                  \
    LIBRARY_DEFINE(NAME, PARAMS, ARGS, library_note(COMM))

LIBRARY_FORWARD(PMPI_Alltoall,
                (const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                 MPI_Comm comm),
                (sb, sc, st, rb, rc, rt, comm), comm)
LIBRARY_FORWARD(PMPI_Alltoallv,
                (const void *sb, const int sc[], const int sd[], MPI_Datatype st, void *rb,
                 const int rc[], const int rd[], MPI_Datatype rt, MPI_Comm comm),
                (sb, sc, sd, st, rb, rc, rd, rt, comm), comm)
LIBRARY_FORWARD(PMPI_Bcast, (void *b, int c, MPI_Datatype t, int root, MPI_Comm comm),
                (b, c, t, root, comm), comm)
LIBRARY_FORWARD(PMPI_Scatter,
                (const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                 int root, MPI_Comm comm),
                (sb, sc, st, rb, rc, rt, root, comm), comm)
LIBRARY_FORWARD(PMPI_Scatterv,
                (const void *sb, const int sc[], const int d[], MPI_Datatype st, void *rb, int rc,
                 MPI_Datatype rt, int root, MPI_Comm comm),
                (sb, sc, d, st, rb, rc, rt, root, comm), comm)
LIBRARY_FORWARD(PMPI_Allgather,
                (const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                 MPI_Comm comm),
                (sb, sc, st, rb, rc, rt, comm), comm)

/* The reductions made so far by this rank (PMPI_Allreduce and PMPI_Iallreduce, any
   communicator). */
static long library_reductions = 0;

#define LIBRARY_REDUCTION(NAME, PARAMS, ARGS)                                                      \
    LIBRARY_DEFINE(NAME, PARAMS, ARGS, library_reductions++)

LIBRARY_REDUCTION(PMPI_Allreduce,
                  (const void *sb, void *rb, int c, MPI_Datatype t, MPI_Op op, MPI_Comm comm),
                  (sb, rb, c, t, op, comm))
LIBRARY_REDUCTION(PMPI_Iallreduce,
                  (const void *sb, void *rb, int c, MPI_Datatype t, MPI_Op op, MPI_Comm comm,
                   MPI_Request *req),
                  (sb, rb, c, t, op, comm, req))

#endif
