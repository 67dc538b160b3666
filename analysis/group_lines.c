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

int xpv_ge_cmp_ord(const void *a, const void *b) {
    const xpv_ge_ord *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->neg_dur != y->neg_dur) return x->neg_dur < y->neg_dur ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
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

/* The time order (start, longer first) of a line's events, or NULL when
 * they are stored in it. */
static uint32_t *time_order(const xpv_line *ln) {
    if (xpv_line_in_time_order(ln)) return NULL;
    uint32_t ne = ln->nevents;
    xpv_ge_ord *o = xpv_xmalloc(ne * sizeof *o);
    for (uint32_t i = 0; i < ne; i++)
        o[i] = (xpv_ge_ord){ln->events[i].start_ps, -ln->events[i].dur_ps, i};
    qsort(o, ne, sizeof *o, xpv_ge_cmp_ord);
    uint32_t *r = xpv_xmalloc(ne * sizeof *r);
    for (uint32_t i = 0; i < ne; i++) r[i] = o[i].idx;
    free(o);
    return r;
}

/* ==== Ungrouped GPU events (XProf's ProcessUngroupedEvents) ============= */

typedef struct gcur {
    const xpv_line *ln;
    uint32_t li, pos;
    uint32_t *ord;             /* time order of an unsorted line, or NULL */
} gcur;

static uint32_t gcur_ev(const gcur *c) { return c->ord ? c->ord[c->pos] : c->pos; }

static int gcur_before(const gcur *a, const gcur *b) {
    const xpv_event *x = &a->ln->events[gcur_ev(a)], *y = &b->ln->events[gcur_ev(b)];
    if (x->start_ps != y->start_ps) return x->start_ps < y->start_ps;
    if (x->dur_ps != y->dur_ps) return x->dur_ps > y->dur_ps;
    return a->li < b->li;
}

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
        gcur *cur = xpv_xcalloc(pl->nlines, sizeof *cur);
        uint32_t n = 0;
        for (uint32_t l = 0; l < pl->nlines; l++)
            if (pl->lines[l].nevents)
                cur[n++] = (gcur){&pl->lines[l], l, 0, time_order(&pl->lines[l])};
        int32_t last = -1;
        while (n) {
            uint32_t b = 0;
            for (uint32_t i = 1; i < n; i++)
                if (gcur_before(&cur[i], &cur[b])) b = i;
            gcur *c = &cur[b];
            int32_t *gl = g->gid + g->line_off[g->plane_line0[k] + c->li];
            uint32_t ei = gcur_ev(c);
            if (gl[ei] >= 0) last = gl[ei];
            else if (last >= 0) gl[ei] = last;
            if (++c->pos == c->ln->nevents) {
                free(c->ord);
                cur[b] = cur[--n];
            }
        }
        free(cur);
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
