/*
 * aapc_shm_channel.c: seed 003's lock-free channels (TMPI, sections 5.1-5.3) between the ranks
 * of one machine, for the point-to-point steps of the collectives above (runtime_c/coll/: a
 * leader handing a Reduce result to the root, Scatterv's blocks to the machine's ranks, a root
 * handing its blocks to its leader).
 *
 * Algorithm. TMPI keeps, per ordered pair (i, j), a send queue owned by i and a receive queue
 * owned by j; only a queue's owner (its single writer) changes its structure, the peer only
 * reads it, and a match is claimed with one CAS (section 5.2-5.3). Here the traffic is a
 * collective's: the source is always named and messages between a pair arrive in order (MPI's
 * non-overtaking rule), so the queue reduces to its simplest lock-free single-writer form, a
 * ring per ordered pair with no matching, no ANY_SOURCE queue, and therefore no conservative
 * reference count or semi-removal (they exist in TMPI for removing matched handles out of
 * order). The channels are the machine's star: its leader (node rank 0) to every other rank
 * and back, 2 (p - 1) rings, not p^2 (no collective here sends between two non-leaders).
 *   - a ring: the sender's count of chunks written (head) and the receiver's count of chunks
 *     read (tail), each an _Atomic uint64_t alone on a 128-byte line, written by one side only,
 *     then CHANNEL_SLOTS slots of CHANNEL_SLOT_BYTES (a chunk's header and payload);
 *   - send: per chunk, wait until tail > head - CHANNEL_SLOTS (a free slot), write the chunk,
 *     publish head + 1 (sequentially consistent store, a futex wake only when the reader
 *     sleeps); receive: wait until head > tail, copy the chunk out, publish tail + 1;
 *   - the window is mapped at a different address in every process: offsets, never pointers;
 *   - waiting is the collectives' own (aapc_shm_wait.c): spin, sched_yield, then a futex.
 * A message of n bytes is ceil(n / payload) chunks (at least one: it carries the length, which
 * the receiver checks). Non-contiguous datatypes are packed (MPI_Pack) on the sender and
 * unpacked on the receiver, as the collectives do.
 * Cost: per chunk two copies (in and out: TMPI_mem's double copy) and one flag store each
 * way, no system call while the peer is running; n beta_m * 2 + ceil(n / 8 KB) alpha_flag.
 * Used when every rank has a core (channels_wanted: measured faster than MPICH's send and
 * receive there, slower in a star of 8 ranks on 2 cores).
 */
#include "aapc_shm_impl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    CHANNEL_SLOTS = 4,
    CHANNEL_SLOT_BYTES = 8192,
    CHANNEL_HEADER = 64, /* total bytes of the message, bytes in this chunk */
    CHANNEL_PAYLOAD = CHANNEL_SLOT_BYTES - CHANNEL_HEADER,
    CHANNEL_BYTES = 2 * AAPC_SHM_LINE + CHANNEL_SLOTS * CHANNEL_SLOT_BYTES,
    TAG_CHANNEL = 0x7c4a
};

struct chunk_header {
    uint64_t total; /* bytes of the whole message */
    uint64_t bytes; /* bytes of payload in this chunk */
};

/* Channel of the ordered pair (from, to), one of them the leader; -1 when neither is. */
static int channel_index(int from, int to)
{
    if (from == to || (from != 0 && to != 0))
        return -1;
    return from == 0 ? 2 * (to - 1) : 2 * (from - 1) + 1;
}

static char *channel_base(const aapc_shm_state *st, int c)
{
    return st->chan_base + (size_t)c * CHANNEL_BYTES;
}

static aapc_shm_word *head_of(const aapc_shm_state *st, int c)
{
    return (aapc_shm_word *)(void *)channel_base(st, c);
}

static aapc_shm_word *tail_of(const aapc_shm_state *st, int c)
{
    return (aapc_shm_word *)(void *)(channel_base(st, c) + AAPC_SHM_LINE);
}

static char *slot_of(const aapc_shm_state *st, int c, uint64_t n)
{
    return channel_base(st, c) + 2 * AAPC_SHM_LINE + (n % CHANNEL_SLOTS) * CHANNEL_SLOT_BYTES;
}

static int channels_wanted(const aapc_shm_state *st);

int aapc_shm_channels_open(MPI_Comm comm)
{
    int err;
    aapc_shm_state *st = aapc_shm_state_get(comm, &err);
    if (st == NULL || !st->usable || st->chan_win != MPI_WIN_NULL)
        return err;
    size_t total = (size_t)(st->size > 1 ? 2 * (st->size - 1) : 1) * CHANNEL_BYTES;
    char *mine = NULL;
    int rc = PMPI_Win_allocate_shared(st->rank == 0 ? (MPI_Aint)total : 0, 1, MPI_INFO_NULL,
                                      st->node, &mine, &st->chan_win);
    MPI_Aint got = 0;
    int disp = 0;
    if (rc == MPI_SUCCESS)
        rc = PMPI_Win_shared_query(st->chan_win, 0, &got, &disp, &st->chan_base);
    if (rc == MPI_SUCCESS && (size_t)got < total)
        rc = MPI_ERR_NO_MEM;
    if (rc != MPI_SUCCESS) { /* collective: every rank saw the same failure */
        if (st->chan_win != MPI_WIN_NULL)
            PMPI_Win_free(&st->chan_win);
        st->chan_win = MPI_WIN_NULL;
        return rc;
    }
    PMPI_Win_lock_all(MPI_MODE_NOCHECK, st->chan_win);
    if (st->rank == 0)
        for (int c = 0; c < 2 * (st->size - 1); c++) {
            atomic_init(head_of(st, c), 0);
            atomic_init(tail_of(st, c), 0);
        }
    PMPI_Win_sync(st->chan_win);
    /* as a barrier (the rings set before any rank uses them), and the ranks agree: the channels
       carry messages only if every rank of the machine wants them (a rank with AAPC_SHM_CHANNELS
       of its own would otherwise wait on a channel its peer never writes) */
    int want = channels_wanted(st), all = 0;
    rc = PMPI_Allreduce(&want, &all, 1, MPI_INT, MPI_MIN, st->node);
    st->chan_on = rc == MPI_SUCCESS && all;
    PMPI_Win_sync(st->chan_win);
    return rc;
}

void aapc_shm_channels_free(aapc_shm_state *st)
{
    if (st->chan_win != MPI_WIN_NULL) {
        PMPI_Win_unlock_all(st->chan_win);
        PMPI_Win_free(&st->chan_win);
    }
}

/* Whether the channels carry the messages (AAPC_SHM_CHANNELS=1 always, 0 never, auto or unset:
   when every rank of the machine's communicator has a core). Measured with chan_bench (star
   rounds, docs/multicore.md "Channels"): with a core per rank the channels' round trips are
   1.7-3x faster than MPICH's send and receive (8 B: 1.0 vs 1.9 us; 256 KB: 38 vs 65 us); with
   8 ranks on 2 cores MPICH's were faster at 8 B and from 64 KB (52-58 against 150-250 us; 0.8-1.6
   against 1.2-2.9 ms): the scheduler, not the waiting, sets those, and MPICH's receive takes
   the replies in the order they come. The ranks of a machine agree when the channels' window
   opens (aapc_shm_channels_open: on only if every one wants them). */
static int channels_wanted(const aapc_shm_state *st)
{
    static int setting = -2; /* -1 auto */
    if (setting == -2) {
        const char *v = getenv("AAPC_SHM_CHANNELS");
        int known = v == NULL || v[0] == '\0' || strcmp(v, "auto") == 0 ||
                    strcmp(v, "0") == 0 || strcmp(v, "1") == 0;
        if (!known)
            fprintf(stderr, "aapcgen: AAPC_SHM_CHANNELS=%s is not one of 0, 1, auto; using auto\n",
                    v);
        setting = !known || v == NULL || v[0] == '\0' || strcmp(v, "auto") == 0 ? -1
                                                                              : v[0] == '1';
    }
    return setting < 0 ? !st->oversubscribed : setting;
}

/* The channel of (from, to) on comm, or -1 (then the MPI library's point-to-point). */
static int channel_for(MPI_Comm comm, int from, int to, aapc_shm_state **st)
{
    int err;
    *st = aapc_shm_state_get(comm, &err);
    if (*st == NULL || !(*st)->usable || (*st)->chan_win == MPI_WIN_NULL || !(*st)->chan_on)
        return -1;
    return channel_index(from, to);
}

int aapc_shm_channels_on(MPI_Comm comm)
{
    aapc_shm_state *st;
    return channel_for(comm, 0, 1, &st) >= 0;
}

static void put_chunks(aapc_shm_state *st, int c, const char *data, uint64_t n)
{
    uint64_t done = 0, head = atomic_load_explicit(head_of(st, c), memory_order_relaxed);
    do {
        if (head >= CHANNEL_SLOTS) /* the slot is free once the reader took chunk head - K */
            aapc_shm_wait_geq(st, tail_of(st, c), head - CHANNEL_SLOTS + 1);
        char *slot = slot_of(st, c, head);
        uint64_t bytes = n - done < CHANNEL_PAYLOAD ? n - done : CHANNEL_PAYLOAD;
        struct chunk_header h = {n, bytes};
        memcpy(slot, &h, sizeof h);
        if (bytes > 0)
            memcpy(slot + CHANNEL_HEADER, data + done, bytes);
        done += bytes;
        aapc_shm_store_wake(head_of(st, c), ++head);
    } while (done < n);
}

/* Take the chunks of one message into data (room for `room` bytes); the message's length in
   *total. A longer message is drained and dropped (the caller reports the truncation). */
static void take_chunks(aapc_shm_state *st, int c, char *data, uint64_t room, uint64_t *total)
{
    uint64_t done = 0, tail = atomic_load_explicit(tail_of(st, c), memory_order_relaxed);
    *total = 0;
    do {
        aapc_shm_wait_geq(st, head_of(st, c), tail + 1);
        const char *slot = slot_of(st, c, tail);
        struct chunk_header h;
        memcpy(&h, slot, sizeof h);
        *total = h.total;
        if (h.total <= room && h.bytes > 0)
            memcpy(data + done, slot + CHANNEL_HEADER, h.bytes);
        done += h.bytes;
        aapc_shm_store_wake(tail_of(st, c), ++tail);
    } while (done < *total);
}

int aapc_shm_chan_send(const void *buf, int count, MPI_Datatype type, int to, MPI_Comm comm)
{
    aapc_shm_state *st;
    int rank = 0, err = MPI_SUCCESS;
    PMPI_Comm_rank(comm, &rank);
    int c = channel_for(comm, rank, to, &st);
    if (c < 0) /* the same answer on both sides: it reads only the state and the pair */
        return PMPI_Send(buf, count, type, to, TAG_CHANNEL, comm);
    aapc_shm_type t;
    void *scratch = NULL;
    const char *data = (err = aapc_shm_type_info(type, &t)) == MPI_SUCCESS
                           ? aapc_shm_pack(buf, count, type, &t, &scratch, &err)
                           : NULL;
    if (data != NULL)
        put_chunks(st, c, data, (uint64_t)count * (uint64_t)t.size);
    else /* the receiver waits for a message: an empty one says nothing came (the error is
            this rank's, raised by the caller) */
        put_chunks(st, c, NULL, 0);
    free(scratch);
    return err;
}

int aapc_shm_chan_recv(void *buf, int count, MPI_Datatype type, int from, MPI_Comm comm)
{
    aapc_shm_state *st;
    int rank = 0, err = MPI_SUCCESS;
    PMPI_Comm_rank(comm, &rank);
    int c = channel_for(comm, from, rank, &st);
    if (c < 0)
        return PMPI_Recv(buf, count, type, from, TAG_CHANNEL, comm, MPI_STATUS_IGNORE);
    aapc_shm_type t;
    void *scratch = NULL;
    uint64_t room = 0, total = 0;
    char *into = NULL;
    if ((err = aapc_shm_type_info(type, &t)) == MPI_SUCCESS) {
        room = (uint64_t)count * (uint64_t)t.size;
        into = aapc_shm_unpack_target(buf, count, &t, &scratch, &err);
    }
    if (into == NULL) { /* an error, or nothing to receive into: the message is taken off the
                           ring all the same */
        take_chunks(st, c, NULL, 0, &total);
        return err != MPI_SUCCESS ? err : total > room ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
    }
    take_chunks(st, c, into, room, &total);
    if (total > room) { /* longer than the receive: MPI's truncation */
        free(scratch);
        return MPI_ERR_TRUNCATE;
    }
    /* shorter: the elements that came (t.size > 0 here: a count of zero-size elements is
       room 0, and nothing longer can fit) */
    int got = t.size > 0 ? (int)(total / (uint64_t)t.size) : 0;
    return aapc_shm_unpack_finish(buf, got, type, scratch);
}
