/*
 * tpu_count.h - an independent count of XProf's TPU device op database
 * straight from the decoded planes, for tests (header-only).
 */
#ifndef XPV_TPU_COUNT_H
#define XPV_TPU_COUNT_H

#include <stdint.h>
#include <stdlib.h>

#include "model.h"

static inline int tc_meta_int(const xpv_plane *pl, const xpv_event_meta *m, const char *name, int64_t *v) {
    for (uint32_t i = 0; i < m->nstats; i++) {
        const xpv_stat *st = &m->stats[i];
        if (st->meta < 0 || (uint32_t)st->meta >= pl->nstat_meta) continue;
        if (xpv_str_eq(pl->stat_meta[st->meta].name, name)) return xpv_stat_as_int(st, v);
    }
    return 0;
}

/* Independent count on TPU: events of the XLA Ops / Framework Ops /
 * Sparse Core Ops lines whose metadata has program_id and a non-zero
 * symbol_id; self time = duration minus the direct children on the line
 * (an event's time span is its device_offset_ps / device_duration_ps
 * stats when it has both, as XProf reads it, else its own). */
static inline void tc_count_tpu(const xpv_profile *p, int64_t *occ, int64_t *self_ps) {
    *occ = *self_ps = 0;
    for (uint32_t k = 0; k < p->nplanes; k++) {
        const xpv_plane *pl = &p->planes[k];
        if (!xpv_str_has_prefix(pl->name, "/device:TPU:")) continue;
        for (uint32_t l = 0; l < pl->nlines; l++) {
            const xpv_line *ln = &pl->lines[l];
            if (!xpv_str_eq(ln->name, "XLA Ops") && !xpv_str_eq(ln->name, "Framework Ops") &&
                !xpv_str_eq(ln->name, "Sparse Core Ops"))
                continue;
            uint32_t n = ln->nevents;
            int64_t *kids = calloc(n + 1, sizeof *kids);
            int64_t *b = calloc(n + 1, sizeof *b), *d = calloc(n + 1, sizeof *d);
            uint32_t *stack = calloc(n + 1, sizeof *stack);
            uint32_t depth = 0;
            int32_t s_off = xpv_stat_id(pl, "device_offset_ps");
            int32_t s_dur = xpv_stat_id(pl, "device_duration_ps");
            for (uint32_t i = 0; i < n; i++) {
                const xpv_event *e = &ln->events[i];
                xpv_stat so, sd;
                b[i] = e->start_ps;
                d[i] = e->dur_ps;
                if (xpv_event_stat(pl, ln, e, s_off, &so) &&
                    xpv_event_stat(pl, ln, e, s_dur, &sd)) {
                    xpv_stat_as_int(&so, &b[i]);
                    xpv_stat_as_int(&sd, &d[i]);
                }
                while (depth) {
                    uint32_t t = stack[depth - 1];
                    if (b[t] <= b[i] && b[i] + d[i] <= b[t] + d[t]) break;
                    depth--;
                }
                if (depth) kids[stack[depth - 1]] += d[i];
                stack[depth++] = i;
            }
            for (uint32_t i = 0; i < n; i++) {
                const xpv_event *e = &ln->events[i];
                int64_t pid, sym;
                const xpv_event_meta *m = &pl->event_meta[e->meta];
                if (!tc_meta_int(pl, m, "program_id", &pid) || !tc_meta_int(pl, m, "symbol_id", &sym) ||
                    sym == 0)
                    continue;
                (*occ)++;
                *self_ps += d[i] - kids[i];
            }
            free(b);
            free(d);
            free(kids);
            free(stack);
        }
    }
}

#endif
