/*
 * derived_launch.c - XProf's Launch Stats lines of GPU planes
 * (derived_timeline.cc DeriveEventsFromHostTrace; derived_lines_int.h),
 * built after the device planes' derived lines (derived_lines.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "derived_lines.h"
#include "derived_lines_int.h"
#include "group_events.h"

/* Launches of one group on one device. */
typedef struct launch_acc {
    uint32_t dev;
    int64_t g;
    int64_t start, end;        /* union of the launch events' spans */
    uint64_t n;
    int64_t max_ps, sum_ps;
} launch_acc;

static int cmp_launch(const void *a, const void *b) {
    const launch_acc *x = a, *y = b;
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->g < y->g ? -1 : x->g > y->g;
}

static dstats launch_stat(const void *arg, uint32_t i) {
    const launch_acc *a = (const launch_acc *)arg + i;
    dstats s;
    memset(&s, 0, sizeof s);
    s.g = (opt64){1, a->g};
    s.launch = 1;
    s.num_launches = a->n;
    s.max_us = (double)a->max_ps / 1e6;
    s.avg_us = (double)a->sum_ps / (double)a->n / 1e6;
    return s;
}

static int64_t plane_start_ns(const xpv_plane *pl) {
    int64_t t = INT64_MAX;
    for (uint32_t li = 0; li < pl->nlines; li++)
        if (pl->lines[li].timestamp_ns < t) t = pl->lines[li].timestamp_ns;
    return t == INT64_MAX ? 0 : t;
}

/* Every launch on `/host:CPU` (a non-derived line's event whose name does
 * not start with "cu", with `device_id` and `correlation_id` stats and a
 * group), accumulated per (device_id, group) into *out (sorted by device,
 * then start).  Device ids index the GPU planes in profile order. */
static size_t collect_launches(const xpv_profile *p, const xpv_groups *gr, uint32_t ndev,
                               launch_acc **out) {
    *out = NULL;
    const xpv_plane *host = xpv_find_plane(p, "/host:CPU");
    if (!host || !ndev || !(gr && gr->gid)) return 0;
    uint32_t hi = (uint32_t)(host - p->planes);
    int32_t ids[2] = {xpv_stat_id(host, "device_id"), xpv_stat_id(host, "correlation_id")};
    if (ids[0] < 0 || ids[1] < 0) return 0;
    xpv_stat_set set;
    xpv_stat_set_init(&set, host, ids, 2);
    launch_acc *acc = NULL;
    size_t n = 0, cap = 0, last = 0;
    /* (device, group) -> accumulator index + 1, when the table is small */
    uint64_t nslot = (uint64_t)ndev * gr->ngroups;
    uint32_t *slot = nslot && nslot <= (1u << 22) ? xpv_xcalloc(nslot, sizeof *slot) : NULL;
    for (uint32_t li = 0; li < host->nlines; li++) {
        const xpv_line *ln = &host->lines[li];
        if (xpv_dl_is_derived_id(ln->id) || !xpv_line_may_have(ln, &set)) continue;
        for (uint32_t ei = 0; ei < ln->nevents; ei++) {
            const xpv_event *e = &ln->events[ei];
            if (xpv_str_has_prefix(host->event_meta[e->meta].name, "cu")) continue;
            xpv_stat st[2];
            int64_t dev;
            if (xpv_event_stats_in(host, ln, e, &set, st, NULL) != 3 ||
                !xpv_stat_as_int(&st[0], &dev) || dev < 0 || dev >= (int64_t)ndev)
                continue;
            int32_t g = xpv_group_of(gr, hi, li, ei);
            if (g < 0 || (uint32_t)g >= gr->ngroups || !gr->groups[g].name) continue;
            int64_t du = e->dur_ps > 0 ? e->dur_ps : 0;
            size_t k = n;
            uint64_t sk = (uint64_t)dev * gr->ngroups + (uint32_t)g;
            if (slot) {
                if (slot[sk]) k = slot[sk] - 1;
            } else if (last < n && acc[last].dev == (uint32_t)dev && acc[last].g == g) {
                k = last;
            } else {
                for (k = 0; k < n && !(acc[k].dev == (uint32_t)dev && acc[k].g == g); k++) {}
            }
            if (k == n) {
                if (slot) slot[sk] = (uint32_t)n + 1;
                if (n == cap) {
                    cap = cap ? cap * 2 : 16;
                    acc = xpv_xrealloc(acc, cap * sizeof *acc);
                }
                acc[n++] = (launch_acc){(uint32_t)dev, g, e->start_ps, e->start_ps + du, 0, 0, 0};
            }
            last = k;
            launch_acc *a = &acc[k];
            if (e->start_ps < a->start) a->start = e->start_ps;
            if (e->start_ps + du > a->end) a->end = e->start_ps + du;
            a->n++;
            a->sum_ps += du;
            if (du > a->max_ps) a->max_ps = du;
        }
    }
    free(slot);
    if (n) qsort(acc, n, sizeof *acc, cmp_launch);
    *out = acc;
    return n;
}

/* The derived lines of plane `pi`, created empty (the plane's own lines
 * keep their display ids) when it has none yet. */
static xpv_dl_plane *dl_plane_for(xpv_derived_lines *d, const xpv_profile *p, uint32_t pi) {
    for (uint32_t i = 0; i < d->nplanes; i++)
        if (d->planes[i].plane == pi) return &d->planes[i];
    const xpv_plane *pl = &p->planes[pi];
    d->planes = xpv_xrealloc(d->planes, (d->nplanes + 1) * sizeof *d->planes);
    uint32_t at = d->nplanes;
    while (at > 0 && d->planes[at - 1].plane > pi) at--;
    memmove(&d->planes[at + 1], &d->planes[at], (d->nplanes - at) * sizeof *d->planes);
    d->nplanes++;
    xpv_dl_plane *dp = &d->planes[at];
    memset(dp, 0, sizeof *dp);
    dp->plane = pi;
    dp->synth.id = pl->id;
    dp->synth.name = pl->name;
    dp->synth.event_meta = xpv_arena_calloc(&d->arena, 1, sizeof *dp->synth.event_meta);
    dp->synth.nevent_meta = 1;
    xpv_dl_synth_stat_meta(&d->arena, &dp->synth);
    dp->line_display_id = xpv_arena_calloc(&d->arena, pl->nlines ? pl->nlines : 1, sizeof(int64_t));
    for (uint32_t li = 0; li < pl->nlines; li++) dp->line_display_id[li] = pl->lines[li].display_id;
    return dp;
}

/* XProf's DeriveEventsFromHostTrace: per GPU plane (the device_id-th one)
 * a `Launch Stats` line (kThreadIdKernelLaunch) with one event per group
 * that launched on it, "Launch Stats for <group name>", spanning its
 * launches, with group_id, num_launches, max_launch_time_us and
 * avg_launch_time_us.  Also on planes whose file holds derived lines
 * (TF 2.4 wrote Steps and op lines but no Launch Stats): XProf adds the
 * line to every GPU plane (GetOrCreateLine; a file's own Launch Stats line
 * would get the events too, here a second row of the same id). */
void xpv_dl_launch_stats(xpv_derived_lines *d, const xpv_profile *p, const xpv_groups *gr) {
    uint32_t ndev = 0, *dev_plane = xpv_xcalloc(p->nplanes ? p->nplanes : 1, sizeof *dev_plane);
    for (uint32_t pi = 0; pi < p->nplanes; pi++)
        if (xpv_str_has_prefix(p->planes[pi].name, "/device:GPU:")) dev_plane[ndev++] = pi;
    launch_acc *acc;
    size_t n = collect_launches(p, gr, ndev, &acc);
    const xpv_plane *host = xpv_find_plane(p, "/host:CPU");
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && acc[j].dev == acc[i].dev) j++;
        uint32_t pi = dev_plane[acc[i].dev];
        const xpv_plane *pl = &p->planes[pi];
        xpv_dl_plane *dp = dl_plane_for(d, p, pi);
        xpv_plane *sp = &dp->synth;
        /* event metadata: the plane's, then one per event */
        xpv_event_meta *m = xpv_arena_calloc(&d->arena, sp->nevent_meta + (j - i), sizeof *m);
        memcpy(m, sp->event_meta, sp->nevent_meta * sizeof *m);
        xpv_line *lines = xpv_arena_calloc(&d->arena, sp->nlines + 1, sizeof *lines);
        if (sp->nlines) memcpy(lines, sp->lines, sp->nlines * sizeof *lines);
        xpv_line *ln = &lines[sp->nlines];
        ln->id = ln->display_id = XPV_DL_BASE + 1;   /* shown by its id, as Steps */
        ln->name = ln->display_name = (xpv_str){"Launch Stats", 12};
        int64_t t0 = plane_start_ns(pl), th = host ? plane_start_ns(host) : t0;
        ln->timestamp_ns = th < t0 ? th : t0;
        ln->events = xpv_arena_alloc(&d->arena, (j - i) * sizeof *ln->events);
        ln->nevents = (uint32_t)(j - i);
        for (size_t k = i; k < j; k++) {
            uint32_t mi = sp->nevent_meta++;
            char nm[600];
            int w = snprintf(nm, sizeof nm, "Launch Stats for %s", gr->groups[acc[k].g].name);
            if (w >= (int)sizeof nm) w = (int)sizeof nm - 1;
            m[mi].key = m[mi].id = mi;
            m[mi].name = (xpv_str){xpv_arena_strndup(&d->arena, nm, (size_t)w), (uint32_t)w};
            ln->events[k - i] = (xpv_event){acc[k].start, acc[k].end - acc[k].start, mi,
                                            XPV_NO_STATS};
        }
        xpv_dl_attach_stats(&d->arena, ln, launch_stat, acc + i);
        sp->event_meta = m;
        sp->lines = lines;
        sp->nlines++;
        sp->nevents += ln->nevents;
        i = j;
    }
    free(acc);
    free(dev_plane);
}
