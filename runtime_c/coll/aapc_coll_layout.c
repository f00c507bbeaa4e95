/*
 * aapc_coll_layout.c: the machines of a communicator, for the leader-based collectives.
 *
 * From the machine of every rank (common/aapc_cluster_comm.c, gathered once per communicator
 * and shared with the all-to-all), number the machines in the order of their lowest rank, list
 * each machine's ranks in rank order, and split the communicator's private duplicate: node
 * (the ranks of my machine), leaders (the lowest rank of every machine, in machine order) and,
 * where every machine runs the same number R > 1 of ranks, lanes (local rank i of every
 * machine, in machine order). Any placement: blocks, round robin, unequal counts, subsets.
 * Cost: O(P) local work and memory per rank on the first use of a communicator; two or three
 * MPI_Comm_split and the shared-memory probe of the node communicator on its first call that
 * runs a leader-based algorithm; later calls, one attribute lookup.
 * Also the helpers the algorithms share: a rank's place on its machine, typed buffers.
 */
#include <stdlib.h>

#include "aapc_args.h"
#include "aapc_cluster_comm.h"
#include "aapc_coll.h"
#include "aapc_exec.h" /* aapc_local_copy */
#include "aapc_hier.h" /* aapc_hier_segment_shared: the node's segment, released at finalize */
#include "aapc_shm.h"  /* aapc_shm_channels_open */

static const char layout_key;

static void layout_free(void *p)
{
    aapc_coll_layout_t *l = p;
    if (l == NULL)
        return;
    if (l->node != MPI_COMM_NULL)
        PMPI_Comm_free(&l->node);
    if (l->leaders != MPI_COMM_NULL)
        PMPI_Comm_free(&l->leaders);
    if (l->lanes != MPI_COMM_NULL)
        PMPI_Comm_free(&l->lanes);
    free(l->count);
    free(l->first);
    free(l->order);
    free(l->machine);
    free(l->ring_at);
    free(l);
}

struct keyed {
    int32_t key; /* the machine's index in the cluster */
    int k;       /* its number in the layout */
};

static int by_key(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

/* The leaders' ring: the machines sorted by their index in the cluster. */
static int ring_order(aapc_coll_layout_t *l, const int32_t *rank_machine)
{
    struct keyed *keys = malloc(sizeof *keys * (size_t)l->n);
    l->ring_at = malloc(sizeof *l->ring_at * (size_t)l->n);
    if (keys == NULL || l->ring_at == NULL) {
        free(keys);
        return MPI_ERR_NO_MEM;
    }
    for (int k = 0; k < l->n; k++)
        keys[k] = (struct keyed){rank_machine != NULL ? rank_machine[l->order[l->first[k]]] : 0, k};
    qsort(keys, (size_t)l->n, sizeof *keys, by_key);
    for (int j = 0; j < l->n; j++) {
        l->ring_at[j] = keys[j].k;
        if (keys[j].k == l->mine)
            l->ring_pos = j;
    }
    free(keys);
    return MPI_SUCCESS;
}

/* Number the machines and order the ranks (local work): from rank_machine (NULL: one machine). */
static int number_machines(aapc_coll_layout_t *l, const int32_t *rank_machine, int32_t n_cluster)
{
    int P = l->size;
    int *index = malloc(sizeof *index * (size_t)(rank_machine != NULL ? n_cluster : 1));
    l->count = calloc((size_t)P, sizeof *l->count);
    l->first = malloc(sizeof *l->first * (size_t)P);
    l->order = malloc(sizeof *l->order * (size_t)P);
    l->machine = malloc(sizeof *l->machine * (size_t)P);
    if (index == NULL || l->count == NULL || l->first == NULL || l->order == NULL ||
        l->machine == NULL) {
        free(index);
        return MPI_ERR_NO_MEM;
    }
    for (int32_t m = 0; m < (rank_machine != NULL ? n_cluster : 1); m++)
        index[m] = -1;
    l->n = 0;
    for (int q = 0; q < P; q++) {
        int32_t m = rank_machine != NULL ? rank_machine[q] : 0;
        if (index[m] < 0)
            index[m] = l->n++;
        l->machine[q] = index[m];
        l->count[index[m]]++;
    }
    free(index);
    int at = 0;
    l->r_max = 0;
    for (int k = 0; k < l->n; k++) {
        l->first[k] = at;
        at += l->count[k];
        l->r_max = l->count[k] > l->r_max ? l->count[k] : l->r_max;
    }
    int *fill = calloc((size_t)l->n, sizeof *fill);
    if (fill == NULL)
        return MPI_ERR_NO_MEM;
    l->blocks = 1;
    for (int q = 0; q < P; q++) {
        int k = l->machine[q], i = fill[k]++;
        l->order[l->first[k] + i] = q;
        l->blocks &= l->first[k] + i == q;
        if (q == l->rank) {
            l->mine = k;
            l->local = i;
        }
    }
    free(fill);
    return ring_order(l, rank_machine);
}

int aapc_coll_layout_connect(aapc_coll_layout_t *l)
{
    int rc;
    if (l->connected)
        return MPI_SUCCESS;
    if ((rc = PMPI_Comm_split(l->dup, l->mine, l->local, &l->node)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_split(l->dup, l->local == 0 ? 0 : MPI_UNDEFINED, l->mine,
                              &l->leaders)) != MPI_SUCCESS)
        return rc;
    int equal = l->r_max > 1;
    for (int k = 0; k < l->n && equal; k++)
        equal = l->count[k] == l->r_max;
    if (equal && (rc = PMPI_Comm_split(l->dup, l->local, l->mine, &l->lanes)) != MPI_SUCCESS)
        return rc;
    aapc_args_private_returns(l->node);
    if (l->leaders != MPI_COMM_NULL)
        aapc_args_private_returns(l->leaders);
    if (l->lanes != MPI_COMM_NULL)
        aapc_args_private_returns(l->lanes);
    if ((rc = aapc_hier_segment_shared(l->node, &l->shared)) == MPI_SUCCESS && l->shared)
        rc = aapc_shm_channels_open(l->node); /* the point-to-point steps on the machine */
    if (rc == MPI_SUCCESS)
        l->connected = 1;
    return rc;
}

int aapc_coll_layout(const aapc_cluster_t *cluster, MPI_Comm comm, const char *name,
                     const char *routine, aapc_coll_layout_t **out)
{
    aapc_cluster_comm_t *cc = NULL;
    int rc = aapc_cluster_comm(cluster, comm, name, routine, 0, &cc);
    *out = NULL;
    if (rc != MPI_SUCCESS || cc == NULL || cc->size < 2 || (!cc->all_known && !cc->one_host))
        return rc; /* the unknown machine was said by aapc_cluster_comm, once */
    aapc_cluster_slot_t *slot = aapc_cluster_comm_slot(cc, &layout_key, layout_free);
    if (slot == NULL)
        return MPI_ERR_NO_MEM;
    if (slot->data == NULL) {
        aapc_coll_layout_t *l = calloc(1, sizeof *l);
        if (l == NULL)
            return MPI_ERR_NO_MEM;
        l->size = cc->size;
        l->rank = cc->rank;
        l->dup = cc->dup;
        l->agreed = cc->rank_machine == NULL ? -1 : cc->settings_agreed;
        l->node = l->leaders = l->lanes = MPI_COMM_NULL;
        if ((rc = number_machines(l, cc->all_known ? cc->rank_machine : NULL,
                                  cc->cluster->n_machines)) != MPI_SUCCESS) {
            layout_free(l);
            return rc;
        }
        slot->data = l;
    }
    *out = slot->data;
    return MPI_SUCCESS;
}

int aapc_coll_local_of(const aapc_coll_layout_t *l, int q)
{
    int k = l->first[l->machine[q]];
    while (l->order[k] != q)
        k++;
    return k - l->first[l->machine[q]];
}

char *aapc_coll_vector(MPI_Aint count, MPI_Datatype type, char **base)
{
    MPI_Aint lb, extent, true_lb, true_extent;
    *base = NULL;
    if (PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(type, &true_lb, &true_extent) != MPI_SUCCESS)
        return NULL;
    char *p = malloc((size_t)((count - 1) * extent + true_extent));
    *base = p != NULL ? p - true_lb : NULL;
    return p;
}

char *aapc_coll_own_part(const aapc_coll_layout_t *l, const void *buf, int count,
                         MPI_Datatype type, char **from, int *rc)
{
    MPI_Aint lb, extent;
    char *copy = aapc_coll_vector(count, type, from);
    if (copy == NULL || (*rc = PMPI_Type_get_extent(type, &lb, &extent)) != MPI_SUCCESS) {
        *rc = copy == NULL ? MPI_ERR_NO_MEM : *rc;
        free(copy);
        return NULL;
    }
    const char *mine = (const char *)buf + (MPI_Aint)l->mine * count * extent;
    *rc = aapc_local_copy(mine, count, type, *from, count, type, l->leaders, l->mine, 2);
    if (*rc != MPI_SUCCESS) {
        free(copy);
        return NULL;
    }
    return copy;
}
