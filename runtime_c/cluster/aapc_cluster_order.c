/*
 * aapc_cluster_order.c: the machines of the cluster in the switch tree's depth-first order, the
 * order in which the log-round all-to-all (alltoall/aapc_alltoall_loground.c) numbers its
 * members so that its short distances stay inside a switch.
 *
 * Algorithm: a depth-first walk of the switch tree from the first switch (the top), children in
 * the order of the switch links in the file; at each switch, its own machines first (in machine
 * order), then its child switches' subtrees. The machines below any switch are then consecutive.
 * Cost: O(S (S + M)) time and O(S) memory for S switches and M machines (no adjacency is
 * stored); no communication. Run once per communicator.
 */
#include <stdlib.h>

#include "aapc_cluster_impl.h"

int32_t aapc_cluster_hang(const aapc_cluster_t *c, int32_t *order, int32_t *up, int32_t *uplink)
{
    int32_t S = c->n_switches;
    for (int32_t s = 0; s < S; s++)
        up[s] = -2;
    up[0] = -1;
    order[0] = 0;
    int32_t head = 0, tail = 1;
    while (head < tail) {
        int32_t s = order[head++];
        for (int32_t l = 0; l < c->n_links; l++) {
            int32_t o = c->link_a[l] == s ? c->link_b[l] : c->link_b[l] == s ? c->link_a[l] : -1;
            if (o >= 0 && o < S && up[o] == -2) {
                up[o] = s;
                uplink[o] = l;
                order[tail++] = o;
            }
        }
    }
    return tail;
}

int aapc_cluster_machine_order(const aapc_cluster_t *c, int32_t *position)
{
    int32_t S = c->n_switches, M = c->n_machines;
    if (S < 1 || c->n_links != S - 1)
        return AAPC_JOB_EINVAL;
    int32_t *stack = malloc(sizeof *stack * (size_t)S), *seen = calloc((size_t)S, sizeof *seen);
    if (stack == NULL || seen == NULL) {
        free(stack);
        free(seen);
        return AAPC_JOB_ENOMEM;
    }
    int32_t top = 0, next = 0, visited = 0;
    stack[top++] = 0;
    seen[0] = 1;
    for (int32_t m = 0; m < M; m++)
        position[m] = -1;
    while (top > 0) {
        int32_t s = stack[--top];
        visited++;
        for (int32_t m = 0; m < M; m++)
            if (c->machine_switch[m] == s)
                position[m] = next++;
        /* children pushed in reverse link order, so that they are visited in link order */
        for (int32_t l = c->n_links - 1; l >= 0; l--) {
            int32_t o = c->link_a[l] == s ? c->link_b[l] : c->link_b[l] == s ? c->link_a[l] : -1;
            if (o >= 0 && o < S && !seen[o]) {
                seen[o] = 1;
                stack[top++] = o;
            }
        }
    }
    free(stack);
    free(seen);
    return visited == S && next == M ? AAPC_JOB_OK : AAPC_JOB_EINVAL;
}
