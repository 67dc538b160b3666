/*
 * bench_group_events.c - cost of the grouping pass (analysis/
 * group_events.c) against decoding, on one host file.
 *
 *   bench_group_events FILE.xplane.pb [reps]
 *
 * Best of `reps` (default 3) wall and process CPU times of xpv_decode and
 * of xpv_group_events on the decoded profile, both measured in this run,
 * and their ratio (the target: grouping at most 25% of decode).
 * Prints the group count so two runs can be checked to agree.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "group_events.h"
#include "model.h"

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_group_events FILE.xplane.pb [reps]\n");
        return 2;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 3;
    if (reps < 1) reps = 1;
    size_t len;
    void *buf = bench_read_all(argv[1], &len);
    double dec_wall = 1e30, dec_cpu = 1e30, grp_wall = 1e30, grp_cpu = 1e30;
    uint32_t ngroups = 0;
    uint64_t nevents = 0;
    int source = 0;
    for (int r = 0; r < reps; r++) {
        double c0 = bench_cpu_now(), secs;
        xpv_profile *p = bench_decode(buf, len, NULL, &secs);
        double c1 = bench_cpu_now();
        if (secs < dec_wall) dec_wall = secs;
        if (c1 - c0 < dec_cpu) dec_cpu = c1 - c0;
        double t0 = bench_now();
        xpv_groups *g = xpv_group_events(p);
        double t1 = bench_now(), c2 = bench_cpu_now();
        if (t1 - t0 < grp_wall) grp_wall = t1 - t0;
        if (c2 - c1 < grp_cpu) grp_cpu = c2 - c1;
        ngroups = g->ngroups;
        nevents = p->nevents;
        source = g->source;
        xpv_groups_free(g);
        xpv_profile_free(p);
    }
    free(buf);
    printf("file        %.1f MB, %llu events\n", (double)len / 1e6, (unsigned long long)nevents);
    printf("decode      %.3f s  (CPU %.3f s)\n", dec_wall, dec_cpu);
    printf("group       %.3f s  (CPU %.3f s), %u groups, source %d\n", grp_wall, grp_cpu,
           ngroups, source);
    printf("ratio       %.1f%% of decode (wall), %.1f%% (CPU)\n", 100.0 * grp_wall / dec_wall,
           100.0 * grp_cpu / dec_cpu);
    return 0;
}
