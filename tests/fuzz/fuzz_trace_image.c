/*
 * fuzz_trace_image.c - libFuzzer target: xpv_trace_index_load on hostile
 * images (what a --cache_dir file may hold).
 *
 * A fixed synthetic two-host profile set is decoded and indexed once; its
 * image is the base.  Input: first byte even -> the rest is the image as
 * is (header and length checks, hash); odd -> the rest is a list of
 * 5-byte edits (offset u32, xor u8) applied to a copy of the valid image,
 * which is then re-hashed (xpv_trace_index_seal), so only the bounds
 * checks stand between the edit and the queries.  Whatever loads is then
 * queried (viewports at several resolutions, search, uid decode, the
 * trace viewer's streaming render): nothing may read out of bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "xplane.h"
#include "synth.h"
#include "tool.h"
#include "trace_index.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static xpv_profile *profiles[2];
static const char *names[2] = {"worker0", "worker1"};
static xpv_hostset hs;
static xpv_buf base;

static void buf_free(void *b, size_t n) {
    (void)n;
    free(b);
}

static void init(void) {
    xpv_synth_opts o;
    memset(&o, 0, sizeof o);
    o.size_bytes = 60000;
    o.hosts = 2;
    o.steps = 2;
    o.gpus = 2;
    xpv_synth_defaults(&o);
    for (int h = 0; h < 2; h++) {
        xpv_buf b;
        xpv_buf_init(&b);
        if (xpv_synth_host(&o, h, &b) != 0) abort();
        size_t len;
        void *bytes = xpv_buf_steal(&b, &len);
        xpv_decode_error err;
        profiles[h] = xpv_decode(bytes, len, buf_free, &err);
        if (!profiles[h]) abort();
    }
    hs = (xpv_hostset){2, (const xpv_profile *const *)profiles, names};
    xpv_trace_index *ix = xpv_trace_index_build(&hs);
    xpv_buf_init(&base);
    xpv_trace_index_save(ix, &hs, &base);
    xpv_trace_index_free(ix);
}

static void exercise(const xpv_trace_index *ix) {
    int64_t span = (int64_t)((uint64_t)ix->max_ps - (uint64_t)ix->min_ps);
    if (span < 0) span = INT64_MAX - 1;
    const int64_t res[] = {0, 1, span / 100 + 1, span + 1};
    for (size_t i = 0; i < sizeof res / sizeof res[0]; i++) {
        xpv_trace_hit *hits;
        int64_t end = ix->max_ps < INT64_MAX ? ix->max_ps + 1 : INT64_MAX;
        size_t n = xpv_trace_query(&hs, ix, ix->min_ps, end, res[i], &hits);
        for (size_t k = 0; k < n; k++) {
            const xpv_trace_row *r = &ix->rows[hits[k].row];
            (void)xpv_trace_event(&hs, r, hits[k].ev)->start_ps;
        }
        free(hits);
    }
    xpv_trace_hit *found;
    uint64_t total;
    (void)xpv_trace_search(&hs, ix, "a", INT64_MIN, 5, &found, &total);
    free(found);
    xpv_trace_hit h;
    (void)xpv_trace_uid_decode(&hs, ix, 0x100000003ULL, &h);
    const char *k[2] = {"tag", "resolution"}, *v[2] = {"trace_viewer@", "100"};
    xpv_params q = {2, k, v, "trace_viewer@"};
    xpv_err err;
    xpv_buf out;
    xpv_buf_init(&out);
    memset(&err, 0, sizeof err);
    if (xpv_tool_find("trace_viewer")->render(&hs, ix, &q, &out, &err) != 0 && !err.status) abort();
    xpv_buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!base.len) init();
    if (!size) return 0;
    xpv_trace_index *ix;
    if (!(data[0] & 1)) {
        ix = xpv_trace_index_load(&hs, data + 1, size - 1);
    } else {
        char *img = malloc(base.len);
        memcpy(img, base.data, base.len);
        for (size_t i = 1; i + 5 <= size; i += 5) {
            uint32_t off;
            memcpy(&off, data + i, 4);
            img[off % base.len] ^= (char)data[i + 4];
        }
        xpv_trace_index_seal(img, base.len);
        ix = xpv_trace_index_load(&hs, img, base.len);
        free(img);
    }
    if (ix) {
        exercise(ix);
        xpv_trace_index_free(ix);
    }
    return 0;
}
