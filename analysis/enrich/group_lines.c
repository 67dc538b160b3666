/*
 * group_lines.c - the grouping's per-event ids after its groups are made
 * (see group_events.h): a TPU core's other lines from its grouping line
 * (XProf's GroupQueue), the ungrouped events of GPU planes (XProf's
 * ProcessUngroupedEvents), and the group table's accessors.
 */
#include <stdlib.h>
#include <string.h>

#include "group_events.h"
#include "group_events_int.h"

int xpv_ge_tpu_grouping_line(const xpv_plane *pl) {
    int steps = -1, modules = -1;
    for (uint32_t l = 0; l < pl->nlines; l++) {
        xpv_str nm = pl->lines[l].name;
        if (xpv_str_eq(nm, "Steps") || xpv_str_eq(nm, "Sparse Core Steps")) steps = (int)l;
        else if (xpv_str_eq(nm, "XLA Modules") || xpv_str_eq(nm, "Sparse Core Modules"))
            modules = (int)l;
    }
    if (steps >= 0 && pl->lines[steps].nevents) return steps;
    if (modules >= 0 && pl->lines[modules].nevents) return modules;
    return -1;
}

/* Timespans overlap (XProf's Timespan::Overlaps). */
static int overlaps(const xpv_event *c, int64_t b0, int64_t e0) {
    return c->start_ps < e0 && b0 < c->start_ps + c->dur_ps;
}

/* TPU lines other than the grouping line take the group of the
 * overlapping grouping event (XProf's GroupQueue: keep the current
 * grouping event while it overlaps, else look forward for one that does). */
void xpv_ge_tpu_line_ids(xpv_groups *g, const xpv_plane *pl, uint32_t k) {
    int gl = xpv_ge_tpu_grouping_line(pl);
    for (uint32_t l = 0; l < pl->nlines; l++) {
        if ((int)l == gl) continue;
        const xpv_line *ln = &pl->lines[l];
        int32_t *dst = g->gid + g->line_off[g->plane_line0[k] + l];
        if (gl < 0) {
            memset(dst, 0xff, ln->nevents * sizeof *dst);
            continue;
        }
        const xpv_line *gln = &pl->lines[gl];
        const int32_t *ggid = g->gid + g->line_off[g->plane_line0[k] + (uint32_t)gl];
        int64_t cur = -1;
        /* the current grouping event's span and id (none: an empty span) */
        int64_t gs = INT64_MAX, ge = INT64_MIN;
        int32_t gv = -1;
        for (uint32_t i = 0; i < ln->nevents; i++) {
            const xpv_event *ev = &ln->events[i];
            __builtin_prefetch(ev + 32);
            int64_t b0 = ev->start_ps, e0 = ev->start_ps + ev->dur_ps;
            int32_t v = -1;
            if (gs < e0 && b0 < ge) { /* overlaps(current) */
                v = gv;
            } else {
                for (uint32_t c = (uint32_t)(cur + 1); c < gln->nevents; c++) {
                    const xpv_event *ce = &gln->events[c];
                    if (ce->start_ps > e0) break;
                    if (ce->start_ps + ce->dur_ps < b0) continue;
                    cur = c;
                    gs = ce->start_ps;
                    ge = ce->start_ps + ce->dur_ps;
                    gv = ggid[c];
                    if (overlaps(ce, b0, e0)) v = gv;
                    break;
                }
            }
            dst[i] = v;
        }
    }
}

/* ==== Ungrouped GPU events (XProf's ProcessUngroupedEvents) ============= */

void xpv_groups_fill_gpu(xpv_groups *g, const xpv_profile *p) {
    if (!g || !g->gid) return;
    for (uint32_t k = 0; k < p->nplanes; k++) {
        const xpv_plane *pl = &p->planes[k];
        if (!xpv_str_has_prefix(pl->name, "/device:GPU:")) continue;
        int any = 0;
        for (uint32_t l = 0; l < pl->nlines && !any; l++) {
            const int32_t *gl = xpv_groups_line(g, k, l);
            for (uint32_t i = 0; gl && i < pl->lines[l].nevents; i++)
                if (gl[i] >= 0) {
                    any = 1;
                    break;
                }
        }
        if (!any) continue; /* XProf: no group_id on the plane, nothing to do */
        xpv_plane_walk walk;
        xpv_plane_walk_init(&walk, pl);
        for (uint32_t l = 0; l < pl->nlines; l++) xpv_plane_walk_add(&walk, l);
        int32_t last = -1;
        uint32_t li, ei;
        while (xpv_plane_walk_next(&walk, &li, &ei)) {
            int32_t *gl = g->gid + g->line_off[g->plane_line0[k] + li];
            if (gl[ei] >= 0) last = gl[ei];
            else if (last >= 0) gl[ei] = last;
        }
        xpv_plane_walk_free(&walk);
    }
}

void xpv_groups_free(xpv_groups *g) {
    if (!g) return;
    free(g->plane_line0);
    free(g->line_off);
    free(g->gid);
    free(g->groups);
    xpv_arena_free(&g->arena);
    free(g);
}

size_t xpv_groups_size(const xpv_groups *g) {
    if (!g) return 0;
    size_t n = sizeof *g + g->ngroups * sizeof *g->groups + (g->nplanes + 1) * sizeof(uint32_t);
    if (g->gid) n += g->nevents * sizeof *g->gid;
    if (g->plane_line0) n += g->plane_line0[g->nplanes] * sizeof *g->line_off;
    for (uint32_t i = 0; i < g->ngroups; i++)
        if (g->groups[i].name) n += strlen(g->groups[i].name) + 1;
    return n;
}

const char *xpv_groups_step_name(const xpv_groups *g, uint32_t plane, uint32_t line,
                                 uint32_t ev) {
    int32_t id = xpv_group_of(g, plane, line, ev);
    if (id < 0 || (uint32_t)id >= g->ngroups) return NULL;
    const xpv_group_info *gi = &g->groups[id];
    if (!gi->step_name || gi->plane != plane || gi->line != line || gi->event != ev) return NULL;
    return gi->name;
}
