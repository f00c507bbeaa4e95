/* cluster_driver: runs the run-time scheduler (runtime_c/cluster) on a cluster and rank
 * placement read from stdin, prints the phases; tests/test_cluster_c.py compares them with
 * Python's and runs it under ASan/UBSan.
 *
 * stdin: S M L P, then M machine switches, then L pairs (link_a link_b), then P rank machines.
 * stdout: "phases L n_messages" then one "phase src dst" line per message; or "error CODE MSG".
 */
#include <stdio.h>
#include <stdlib.h>

#include "aapc_cluster.h"

static int read_ints(int32_t *a, int n)
{
    for (int i = 0; i < n; i++)
        if (scanf("%d", &a[i]) != 1)
            return -1;
    return 0;
}

int main(void)
{
    int S, M, L, P;
    if (scanf("%d %d %d %d", &S, &M, &L, &P) != 4 || S < 1 || M < 1 || L < 0 || P < 0)
        return 2;
    int32_t *msw = calloc((size_t)M, sizeof *msw), *la = calloc((size_t)L + 1, sizeof *la);
    int32_t *lb = calloc((size_t)L + 1, sizeof *lb), *rm = calloc((size_t)P + 1, sizeof *rm);
    double *mbw = calloc((size_t)M, sizeof *mbw), *lbw = calloc((size_t)L + 1, sizeof *lbw);
    if (!msw || !la || !lb || !rm || !mbw || !lbw || read_ints(msw, M))
        return 2;
    for (int i = 0; i < L; i++)
        if (scanf("%d %d", &la[i], &lb[i]) != 2)
            return 2;
    if (read_ints(rm, P))
        return 2;
    for (int i = 0; i < M; i++)
        mbw[i] = 12.5e6;
    for (int i = 0; i < L; i++)
        lbw[i] = 12.5e6;
    aapc_cluster_t c = {"driver", M, S, L, NULL, NULL, msw, mbw, NULL, la, lb, lbw};
    aapc_job_phases_t ph;
    int rc = aapc_job_phases(&c, rm, P, &ph);
    if (rc != 0) {
        printf("error %d %s\n", rc, ph.error);
    } else {
        printf("phases %d %lld\n", (int)ph.n_phases, (long long)ph.n_messages);
        for (long long e = 0; e < ph.n_messages; e++)
            printf("%d %d %d\n", (int)ph.phase[e], (int)ph.src[e], (int)ph.dst[e]);
        aapc_job_phases_free(&ph);
    }
    free(msw);
    free(la);
    free(lb);
    free(rm);
    free(mbw);
    free(lbw);
    return 0;
}
