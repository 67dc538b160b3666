/*
 * fuzz_xplane.c - libFuzzer target: XSpace decoder + model accessors.
 *
 * Decodes arbitrary bytes; when decoding succeeds, touches every plane,
 * line, event, metadata entry and every lazily decoded stat, so ASan/UBSan
 * see all reads the converters can make.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "xplane.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* The decoder keeps slices into its buffer: give it an exact copy so
     * ASan catches any read past the end. */
    uint8_t *buf = malloc(size ? size : 1);
    if (size) memcpy(buf, data, size);
    xpv_decode_error err;
    xpv_profile *p = xpv_decode(buf, size, NULL, &err);
    volatile uint64_t sink = 0;
    if (p) {
        for (uint32_t i = 0; i < p->nplanes; i++) {
            const xpv_plane *pl = &p->planes[i];
            for (uint32_t m = 0; m < pl->nevent_meta; m++) {
                xpv_str n = pl->event_meta[m].name;
                if (n.len) sink += (uint8_t)n.ptr[n.len - 1];
            }
            sink += (uint64_t)xpv_stat_id(pl, "correlation_id");
            for (uint32_t l = 0; l < pl->nlines; l++) {
                const xpv_line *ln = &pl->lines[l];
                for (uint32_t e = 0; e < ln->nevents; e++) {
                    const xpv_event *ev = &ln->events[e];
                    sink += (uint64_t)(ev->start_ps + ev->dur_ps);
                    xpv_str dn = xpv_event_display_name(pl, ev);
                    if (dn.len) sink += (uint8_t)dn.ptr[0];
                    xpv_stat_iter it;
                    xpv_stat st;
                    xpv_stat_iter_init(&it, pl, ln, ev);
                    while (xpv_stat_next(&it, &st)) {
                        int64_t iv;
                        double dv;
                        if (xpv_stat_as_int(&st, &iv)) sink += (uint64_t)iv;
                        if (xpv_stat_as_double(&st, &dv)) sink += (uint64_t)(dv == dv);
                        if (st.kind == XPV_STAT_STR && st.v.s.len) sink += (uint8_t)st.v.s.ptr[0];
                        if (st.kind == XPV_STAT_GZSTR) {
                            char tmp[256];
                            sink += (uint64_t)xpv_stat_gzstr(&st, tmp, sizeof tmp);
                        }
                    }
                }
            }
        }
        xpv_profile_free(p);
    } else {
        if (err.offset > size) abort();
    }
    free(buf);
    (void)sink;
    return 0;
}
