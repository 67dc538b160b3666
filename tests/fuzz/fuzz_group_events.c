/*
 * fuzz_group_events.c - libFuzzer target: event grouping
 * (analysis/enrich/group_events.c, XProf's group_events.cc) on a decoded fuzz
 * input.
 *
 * Decodes arbitrary XSpace bytes; when they decode, groups the events and
 * reads every answer back: each event's group id is -1 or a valid group,
 * each group's root event exists, step names are readable.  Seeds: synthetic
 * TF profiles (step markers, TF ops) and small real files (.ci/fuzz).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_decode.h"
#include "group_events.h"
#include "model.h"
#include "xplane.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_groups(const xpv_profile *p, const xpv_groups *g) {
    volatile size_t sink = xpv_groups_size(g);
    for (uint32_t k = 0; k < g->ngroups; k++) {
        const xpv_group_info *gi = &g->groups[k];
        if (gi->plane >= p->nplanes) abort();
        const xpv_plane *pl = &p->planes[gi->plane];
        if (gi->line >= pl->nlines || gi->event >= pl->lines[gi->line].nevents) abort();
        if (gi->name) sink += strlen(gi->name);
        const char *sn = xpv_groups_step_name(g, gi->plane, gi->line, gi->event);
        if (sn) sink += strlen(sn);
    }
    for (uint32_t i = 0; i < p->nplanes; i++) {
        const xpv_plane *pl = &p->planes[i];
        for (uint32_t l = 0; l < pl->nlines; l++)
            for (uint32_t e = 0; e < pl->lines[l].nevents; e++) {
                int32_t gid = xpv_group_of(g, i, l, e);
                if (gid < -1 || (gid >= 0 && (uint32_t)gid >= g->ngroups)) abort();
                const char *sn = xpv_groups_step_name(g, i, l, e);
                if (sn) sink += strlen(sn);
            }
        /* Rows past the plane's own (derived rows) have no groups. */
        if (xpv_groups_line(g, i, pl->nlines)) abort();
    }
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    xpv_profile *p = fuzz_decode(data, size);
    if (p) {
        xpv_groups *g = xpv_group_events(p);
        if (!g) abort();
        check_groups(p, g);
        xpv_groups_free(g);
        xpv_profile_free(p);
    }
    return 0;
}
