/*
 * timer_common.h: what the benchmark timers share (alltoall_timer.c, alltoallv_timer.c):
 * the --only filter and the CPU busy sampling of /proc/stat.
 */
#ifndef AAPC_TIMER_COMMON_H
#define AAPC_TIMER_COMMON_H

#include <stdio.h>
#include <string.h>

static inline int selected(const char *only, const char *name)
{
    if (only == NULL) {
        return 1;
    }
    size_t len = strlen(name);
    for (const char *p = only; (p = strstr(p, name)) != NULL; p += len) {
        if ((p == only || p[-1] == ',') && (p[len] == ',' || p[len] == '\0')) {
            return 1;
        }
    }
    return 0;
}

/* Busy and total jiffies of all CPUs (first line of /proc/stat); 0 when unavailable. */
static inline int cpu_jiffies(double *busy, double *total)
{
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long v[8] = {0};
    int ok = f != NULL && fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                                 &v[3], &v[4], &v[5], &v[6], &v[7]) == 8;
    if (f != NULL) {
        fclose(f);
    }
    if (!ok) {
        return 0;
    }
    *total = (double)(v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]);
    *busy = *total - (double)(v[3] + v[4]); /* minus idle and iowait */
    return 1;
}

#endif /* AAPC_TIMER_COMMON_H */
