/*
 * fuzz_legacy.c - libFuzzer target: the TF 2.2-era per-tool file readers
 * (ingest/legacy.h).  The first byte picks the file kind, the rest is the
 * file.  Success must produce output; failure must carry a status.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "legacy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const enum xpv_legacy_kind kinds[] = {
        XPV_LEGACY_OVERVIEW_PB,        XPV_LEGACY_OVERVIEW_JSON,
        XPV_LEGACY_INPUT_PIPELINE_PB,  XPV_LEGACY_INPUT_PIPELINE_JSON,
        XPV_LEGACY_TF_STATS_PB,        XPV_LEGACY_KERNEL_STATS_PB,
        XPV_LEGACY_MEMORY_PROFILE_JSON_GZ, XPV_LEGACY_POD_VIEWER_JSON,
    };
    if (size < 1) return 0;
    enum xpv_legacy_kind k = kinds[data[0] % (sizeof kinds / sizeof kinds[0])];
    size_t n = size - 1;
    uint8_t *copy = malloc(n ? n : 1);   /* exact size: ASan sees overreads */
    if (n) memcpy(copy, data + 1, n);
    xpv_buf out;
    xpv_err err;
    xpv_buf_init(&out);
    memset(&err, 0, sizeof err);
    int rc = xpv_legacy_render(k, copy, n, 4u << 20, &out, &err);
    if (rc == 0 && out.len == 0) abort();
    if (rc != 0 && err.status == 0) abort();
    xpv_buf_free(&out);
    free(copy);
    return 0;
}
