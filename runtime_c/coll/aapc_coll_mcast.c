/*
 * aapc_coll_mcast.c: the leaders' step of Bcast, Allgather and Scatter over reliable IP multicast
 * (seed 004 section 6.3 on seed 000's multicast collectives, runtime_c/mcast/).
 *
 * Algorithm: only the leaders join the multicast group of the leaders' communicator, so one
 * receiver per machine takes each datagram off the wire and ACKs it; the machine's other ranks
 * read the message from the shared segment afterwards (the shared-memory Bcast of
 * aapc_coll_bcast.c / aapc_coll_allgather.c). Bcast: one reliable multicast from the root's
 * leader. Allgather: every leader multicasts its machine's part in turn (N multicasts), the
 * part copied once out of the receive buffer (send and receive buffers must not overlap).
 * Cost: Bcast n beta on every link once (the switches copy), plus the ACK round; N leaders'
 * ACKs instead of P ranks'. Allgather: N multicasts of parts of R b bytes: (P - R) b in per
 * machine link, each byte sent once. Scatter: seed 000's aggregate, one multicast of the other
 * machines' parts from the root's leader, each leader keeping its own (aapc_coll_scatter.c).
 * Multicast keeps per-process state (one socket, the group registry): calls from one thread
 * at a time, which aapc_coll_select.c ensures by not choosing it under MPI_THREAD_MULTIPLE.
 */
#include <stdlib.h>

#include "aapc_coll.h"
#include "aapc_mcast.h"

int aapc_coll_leaders_mcast_bcast(const aapc_coll_layout_t *l, void *buf, int count,
                                  MPI_Datatype type, int root_machine)
{
    return aapc_mcast_bcast(buf, count, type, root_machine, l->leaders);
}

int aapc_coll_leaders_mcast_allgather(const aapc_coll_layout_t *l, void *buf, int count,
                                      MPI_Datatype type)
{
    int rc;
    char *from, *copy = aapc_coll_own_part(l, buf, count, type, &from, &rc);
    if (copy != NULL)
        rc = aapc_mcast_allgather(from, count, type, buf, count, type, l->leaders);
    free(copy);
    return rc;
}

/* Scatter: every machine's part is count[k] * block bytes; equal machines take one multicast
   (aapc_mcast_scatter), unequal ones seed 000's static Scatterv (the parts' sizes, then the
   aggregate). The root machine's leader passes the aggregate (part k at first[k] * block),
   the others receive their part into `part`. */
int aapc_coll_leaders_mcast_scatter(const aapc_coll_layout_t *l, const char *agg, char *part,
                                    long long block, int root_machine)
{
    int sender = l->mine == root_machine, mine = (int)(l->count[l->mine] * block);
    void *into = sender ? MPI_IN_PLACE : (void *)part;
    if ((long long)l->n * l->r_max == l->size)
        return aapc_mcast_scatter(agg, (int)(l->r_max * block), MPI_BYTE, into, mine, MPI_BYTE,
                                  root_machine, l->leaders);
    int *counts = malloc(sizeof *counts * (size_t)l->n * 2);
    if (counts == NULL)
        return MPI_ERR_NO_MEM;
    int *displs = counts + l->n;
    for (int k = 0; k < l->n; k++) {
        counts[k] = k == root_machine ? 0 : (int)(l->count[k] * block);
        displs[k] = (int)(l->first[k] * block);
    }
    int rc = aapc_mcast_scatterv(agg, counts, displs, MPI_BYTE, into, mine, MPI_BYTE,
                                 root_machine, l->leaders, AAPC_MCAST_STATIC);
    free(counts);
    return rc;
}
