/*
 * bench_group_events.c - cost of the enrichment pass (analysis/enrich/enrich.c:
 * XLA's event grouping, then XProf's derived lines) against decoding, on
 * one host file.
 *
 *   bench_group_events FILE.xplane.pb [reps]
 *
 * Best of `reps` (default 3) wall and process CPU times of xpv_decode and
 * of the enrichment of the decoded profile (grouping and derived lines
 * also apart), all measured in this run, and their ratio (the issue's
 * target: at most 25% of decode).  Prints the group count and a checksum
 * of everything the pass produced (group ids, group names, derived lines
 * and their events), so two builds can be checked to agree byte for byte.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "derived_lines.h"
#include "enrich.h"
#include "group_events.h"
#include "model.h"

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

/* Checksum of the grouping and the derived lines. */
static uint64_t checksum(const xpv_profile *p, const xpv_enrichment *e) {
    uint64_t h = 1469598103934665603ull;
    const xpv_groups *g = e->groups;
    h = fnv(h, &g->source, sizeof g->source);
    h = fnv(h, &g->ngroups, sizeof g->ngroups);
    /* (no ids computed reads as -1 for every event, as xpv_group_of does) */
    if (g->gid) {
        /* line by line, as xpv_group_of reads them (a line may store none: -1 each) */
        for (uint32_t k = 0; k < p->nplanes; k++)
            for (uint32_t l = 0; l < p->planes[k].nlines; l++) {
                const int32_t *ids = xpv_groups_line(g, k, l), none = -1;
                if (ids) h = fnv(h, ids, p->planes[k].lines[l].nevents * sizeof *g->gid);
                else
                    for (uint32_t i = 0; i < p->planes[k].lines[l].nevents; i++)
                        h = fnv(h, &none, sizeof none);
            }
    } else if (g->source != XPV_GROUPS_FILE && g->source != XPV_GROUPS_LOOP_OPS) {
        const int32_t none = -1;
        for (uint64_t i = 0; i < g->nevents; i++) h = fnv(h, &none, sizeof none);
    }
    for (uint32_t i = 0; i < g->ngroups; i++) {
        const xpv_group_info *gi = &g->groups[i];
        if (gi->name) h = fnv(h, gi->name, strlen(gi->name) + 1);
        uint32_t w[4] = {gi->plane, gi->line, gi->event, gi->step_name};
        h = fnv(h, w, sizeof w);
    }
    const xpv_derived_lines *d = e->derived;
    for (uint32_t i = 0; i < d->nplanes; i++) {
        const xpv_plane *sp = &d->planes[i].synth;
        h = fnv(h, &d->planes[i].plane, sizeof d->planes[i].plane);
        for (uint32_t k = 0; k < sp->nevent_meta; k++) {
            h = fnv(h, sp->event_meta[k].name.ptr, sp->event_meta[k].name.len);
            h = fnv(h, sp->event_meta[k].display_name.ptr, sp->event_meta[k].display_name.len);
        }
        for (uint32_t l = 0; l < sp->nlines; l++) {
            const xpv_line *ln = &sp->lines[l];
            h = fnv(h, &ln->id, sizeof ln->id);
            h = fnv(h, &ln->display_id, sizeof ln->display_id);
            h = fnv(h, ln->name.ptr, ln->name.len);
            for (uint32_t k = 0; k < ln->nevents; k++) {
                const xpv_event *ev = &ln->events[k];
                int64_t w[3] = {ev->start_ps, ev->dur_ps, ev->meta};
                h = fnv(h, w, sizeof w);
            }
        }
    }
    return h;
}

int main(int argc, char **argv) {
    int reps = bench_reps(argc, argv, 3);
    size_t len;
    void *buf = bench_read_all(argv[1], &len);
    double dec_wall = 1e30, dec_cpu = 1e30, en_wall = 1e30, en_cpu = 1e30;
    double grp_wall = 1e30, dl_wall = 1e30, grp_cpu = 1e30, dl_cpu = 1e30;
    uint32_t ngroups = 0, ndl = 0;
    uint64_t nevents = 0, sum = 0;
    int source = 0;
    for (int r = 0; r < reps; r++) {
        double c0 = bench_cpu_now(), secs;
        xpv_profile *p = bench_decode(buf, len, NULL, &secs);
        double c1 = bench_cpu_now();
        if (secs < dec_wall) dec_wall = secs;
        if (c1 - c0 < dec_cpu) dec_cpu = c1 - c0;
        /* The pass as the server runs it (once, kept with the profile):
         * the grouping, then the derived lines (the trace viewer's). */
        double t0 = bench_now();
        const xpv_enrichment *e = xpv_enrich(p);
        xpv_profile_derived_lines(p);
        double t1 = bench_now(), c2 = bench_cpu_now();
        if (t1 - t0 < en_wall) en_wall = t1 - t0;
        if (c2 - c1 < en_cpu) en_cpu = c2 - c1;
        /* Its two halves apart (wall), for the record. */
        double t2 = bench_now(), u2 = bench_cpu_now();
        xpv_groups *g = xpv_group_events(p);
        xpv_groups_fill_gpu(g, p);
        double t3 = bench_now(), u3 = bench_cpu_now();
        xpv_derived_lines *d = xpv_derived_lines_build(p, g);
        double t4 = bench_now(), u4 = bench_cpu_now();
        if (t3 - t2 < grp_wall) grp_wall = t3 - t2;
        if (t4 - t3 < dl_wall) dl_wall = t4 - t3;
        if (u3 - u2 < grp_cpu) grp_cpu = u3 - u2;
        if (u4 - u3 < dl_cpu) dl_cpu = u4 - u3;
        xpv_groups_free(g);
        xpv_derived_lines_free(d);
        ngroups = e->groups->ngroups;
        source = e->groups->source;
        ndl = e->derived->nplanes;
        nevents = p->nevents;
        sum = checksum(p, e);
        xpv_profile_free(p);
    }
    free(buf);
    printf("file        %.1f MB, %llu events\n", (double)len / 1e6, (unsigned long long)nevents);
    printf("decode      %.3f s  (CPU %.3f s)\n", dec_wall, dec_cpu);
    printf("enrich      %.3f s  (CPU %.3f s): grouping %.3f s (CPU %.3f s), derived lines %.3f s "
           "(CPU %.3f s)\n",
           en_wall, en_cpu, grp_wall, grp_cpu, dl_wall, dl_cpu);
    printf("result      %u groups (source %d), derived lines on %u planes, checksum %016llx\n",
           ngroups, source, ndl, (unsigned long long)sum);
    printf("ratio       %.1f%% of decode (wall), %.1f%% (CPU)\n", 100.0 * en_wall / dec_wall,
           100.0 * en_cpu / dec_cpu);
    return 0;
}
