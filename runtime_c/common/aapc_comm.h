/*
 * aapc_comm.h: the per-communicator state of the phase executor (private to runtime_c/).
 *
 * The first call of a schedule on a communicator duplicates the communicator (all traffic of
 * the executor then uses the private dup), maps ranks to machines and caches both as an
 * attribute on the user's communicator. Later calls only read the attribute.
 */
#ifndef AAPC_COMM_H
#define AAPC_COMM_H

#include <stddef.h>
#include <stdio.h>

#include <mpi.h>

#include "aapc_phased.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Tags on the private dup: one per kind of message, so kinds never match each other. */
enum { AAPC_TAG_DATA = 1, AAPC_TAG_SYNC = 2, AAPC_TAG_DUMMY = 3, AAPC_TAG_SELF = 4,
       AAPC_TAG_ROUND = 5 /* the log-round all-to-all */ };

typedef struct aapc_comm_info {
    int usable;               /* 0: the communicator does not match the schedule (fall back) */
    MPI_Comm dup;             /* private duplicate of the user's communicator */
    int my_machine;           /* the machine this rank runs */
    const int *machine_rank;  /* machine -> rank of dup; NULL means the identity */
    struct aapc_comm_cache *cache;
    /* NULL: the user's buffers hold one block per rank of dup, in its rank order. Otherwise
       they hold nblocks blocks and machine_block[m] is the block of machine m (the siblings of
       one split run their union schedule on the parent's dup: alltoall/aapc_alltoall_cluster.c) */
    const int *machine_block;
    int nblocks;
} aapc_comm_info_t;

/* Look up (collectively on first use of s on comm: dup, allgather of host names) how this
   communicator runs schedule s. On a mismatch, info->usable = 0 and its rank 0 warns
   (aapc_warn_fallback). Returns an MPI error code. */
int aapc_comm_lookup(const aapc_schedule_t *s, MPI_Comm comm, aapc_comm_info_t *info);

/* The same for a communicator whose rank m the caller placed on machine m (the leaders of
   hier/aapc_hier_alltoall.c, one per machine in machine order) when s has no host table; with
   one, the host names place the ranks as in aapc_comm_lookup. */
int aapc_comm_lookup_identity(const aapc_schedule_t *s, MPI_Comm comm, aapc_comm_info_t *info);

/* After aapc_comm_lookup(s, comm, info): when not usable, the cause, as the warning named it;
   when usable, "" or how the ranks were placed without a machine to confirm it (the report's
   words, aapc_report.h). */
const char *aapc_comm_why(const aapc_schedule_t *s, const aapc_comm_info_t *info);

/* The communicator rank that runs machine m. */
static inline int aapc_comm_rank_of(const aapc_comm_info_t *info, int m)
{
    return info->machine_rank ? info->machine_rank[m] : m;
}

/* The fallback warning: called by every rank of `comm` with the same cause (MPI_COMM_NULL: by
   one rank, for a cause only it knows), it prints
   "aapcgen: NAME: WHY; using the MPI library's ROUTINE (set AAPC_QUIET=1 to silence)"
   once per job and cause: rank 0 of `comm` prints it unless this process has printed or noted
   the same WHY before (for any routine), and every rank notes it, so later communicators with
   another rank 0 stay quiet too (disjoint communicators meeting a cause at the same time, the
   halves of a split, print it once each). Nothing for a 1-rank communicator (the library's local copy is all
   there is to do), nor under AAPC_QUIET (set and not "0"). AAPC_WARN=all: every rank prints
   every warning it meets, on every communicator. The cause also goes to the listener (the
   report's, aapc_report.c) on every rank. */
void aapc_warn_fallback(MPI_Comm comm, const char *name, const char *why, const char *routine);

/* AAPC_WARN=all is set (read once). */
int aapc_warn_every(void);

/* The report's listener: called with the cause of every fallback warning (NULL: none). */
void aapc_warn_set_listener(void (*listener)(const char *why));

/* "'a' or 'b'": the (at most two) names of names[0..n) closest to `word` by edit distance, if
   close enough to be a typo; "" when none is. */
void aapc_closest_names(const char *word, const char *const *names, int n, char *out,
                        size_t outlen);

/* AAPC_DUMP_SCHEDULE=DIR: open DIR/aapc-KIND-PID-N.json for writing (N counts the calls that
   pass the same `serial`), or NULL when the variable is unset or empty, or the file cannot be
   made (then one line on stderr says so). */
FILE *aapc_dump_open(const char *kind, int *serial);
/* s as a JSON string (quotes and backslashes escaped), for the dumps. */
void aapc_dump_string(FILE *f, const char *s);
/* AAPC_DUMP_SCHEDULE is set (not empty): aapc_dump_open will try to write. */
int aapc_dump_wanted(void);

/* Scratch memory of at least `bytes` bytes for dummy messages, zero-filled when allocated and
   owned by the communicator's cache (two calls on one communicator never overlap). NULL when
   out of memory. */
void *aapc_comm_scratch(aapc_comm_info_t *info, size_t bytes);

/* A routine's own state on the communicator of `info` (from aapc_comm_lookup), under `key`
   (the routine's static data): the address of its data pointer, NULL on first use, freed with
   free_fn when the communicator is freed. NULL when out of memory. */
void **aapc_comm_slot(aapc_comm_info_t *info, const void *key, void (*free_fn)(void *));

#ifdef __cplusplus
}
#endif
#endif /* AAPC_COMM_H */
