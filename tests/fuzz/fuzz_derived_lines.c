/*
 * fuzz_derived_lines.c - libFuzzer target: the derived timeline lines
 * (analysis/enrich/derived_lines.c, XProf's derived_timeline.cc) on a decoded fuzz
 * input.
 *
 * Decodes arbitrary XSpace bytes; when they decode, derives the lines of
 * every GPU and TPU plane and checks what it built: each derived plane
 * names a plane of the profile, each derived line has a derived id, each
 * event a metadata entry of the derived plane, durations are not negative.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "derived_lines.h"
#include "fuzz_decode.h"
#include "group_events.h"
#include "model.h"
#include "xplane.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_derived(const xpv_profile *p, const xpv_derived_lines *d) {
    volatile uint64_t sink = d->bytes;
    for (uint32_t i = 0; i < d->nplanes; i++) {
        const xpv_dl_plane *dp = &d->planes[i];
        if (dp->plane >= p->nplanes) abort();
        if (xpv_derived_lines_plane(d, dp->plane) == NULL) abort();
        const xpv_plane *src = &p->planes[dp->plane];
        for (uint32_t l = 0; l < src->nlines && dp->line_display_id; l++)
            sink += (uint64_t)dp->line_display_id[l];
        for (uint32_t l = 0; l < dp->synth.nlines; l++) {
            const xpv_line *ln = &dp->synth.lines[l];
            if (!xpv_dl_is_derived_id(ln->id)) abort();   /* Steps, TPU rows, GPU rows */
            for (uint32_t e = 0; e < ln->nevents; e++) {
                const xpv_event *ev = &ln->events[e];
                if (ev->meta >= dp->synth.nevent_meta || ev->dur_ps < 0) abort();
                xpv_str n = dp->synth.event_meta[ev->meta].name;
                if (n.len) sink += (uint8_t)n.ptr[n.len - 1];
            }
        }
    }
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    xpv_profile *p = fuzz_decode(data, size);
    if (p) {
        /* As the enrichment pass does: grouping first, derived lines from it. */
        xpv_groups *g = xpv_group_events(p);
        xpv_derived_lines *d = xpv_derived_lines_build(p, g);
        if (!d) abort();
        check_derived(p, d);
        xpv_derived_lines_free(d);
        xpv_groups_free(g);
        xpv_profile_free(p);
    }
    return 0;
}
