/*
 * derived_count.h - an independent count of XProf's derived GPU events
 * (XLA Modules and XLA Ops level 0) straight from the kernels of a
 * profile, for tests: a module event per maximal run of consecutive
 * kernels (file order) with the same `hlo_module(program_id)` and
 * group_id; an XLA Ops level-0 event per maximal run with the same
 * program_id and first `::` part of hlo_op that does not cross a new
 * module event.  Planes holding derived lines count 0.
 */
#ifndef XPV_DERIVED_COUNT_H
#define XPV_DERIVED_COUNT_H

#include <stdio.h>
#include <string.h>

#include "model.h"

static inline void dc_count(const xpv_profile *p, size_t *modules, size_t *ops0) {
    *modules = *ops0 = 0;
    for (uint32_t i = 0; i < p->nplanes; i++) {
        const xpv_plane *pl = &p->planes[i];
        if (!xpv_str_has_prefix(pl->name, "/device:GPU:")) continue;
        int derived = 0;
        for (uint32_t l = 0; l < pl->nlines; l++) {
            int32_t id = (int32_t)(uint32_t)pl->lines[l].id;
            if (id >= (int32_t)0xdeadbeefu && id < (int32_t)0xdeadbeefu + 390) derived = 1;
        }
        if (derived) continue;
        int32_t sk = xpv_stat_id(pl, "kernel_details"), sm = xpv_stat_id(pl, "hlo_module"),
                sp = xpv_stat_id(pl, "program_id"), so = xpv_stat_id(pl, "hlo_op"),
                sg = xpv_stat_id(pl, "group_id");
        for (uint32_t l = 0; l < pl->nlines; l++) {
            const xpv_line *ln = &pl->lines[l];
            char pm[512] = "", po[512] = "";
            for (uint32_t k = 0; k < ln->nevents; k++) {
                const xpv_event *e = &ln->events[k];
                xpv_stat st;
                if (sk < 0 || !xpv_event_stat(pl, ln, e, sk, &st)) continue;
                long long pid = -1, g = -1;
                int64_t v;
                if (sp >= 0 && xpv_event_stat(pl, ln, e, sp, &st) && xpv_stat_as_int(&st, &v)) pid = v;
                if (sg >= 0 && xpv_event_stat(pl, ln, e, sg, &st) && xpv_stat_as_int(&st, &v)) g = v;
                char km[512], ko[512];
                int new_module = 0;
                if (sm >= 0 && xpv_event_stat(pl, ln, e, sm, &st) && st.kind == XPV_STAT_STR &&
                    st.v.s.len) {
                    snprintf(km, sizeof km, "%.*s(%lld)|%lld", (int)st.v.s.len, st.v.s.ptr, pid, g);
                    if (strcmp(km, pm)) {
                        (*modules)++;
                        new_module = 1;
                        strcpy(pm, km);
                    }
                }
                if (so >= 0 && xpv_event_stat(pl, ln, e, so, &st) && st.kind == XPV_STAT_STR &&
                    st.v.s.len) {
                    uint32_t n = st.v.s.len;
                    for (uint32_t c = 0; c + 1 < st.v.s.len; c++)
                        if (st.v.s.ptr[c] == ':' && st.v.s.ptr[c + 1] == ':') {
                            n = c;
                            break;
                        }
                    snprintf(ko, sizeof ko, "%lld/%.*s|%lld", pid, (int)n, st.v.s.ptr, g);
                    if (new_module || strcmp(ko, po)) (*ops0)++;
                    strcpy(po, ko);
                }
            }
        }
    }
}

#endif
