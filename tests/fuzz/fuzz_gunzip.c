/*
 * fuzz_gunzip.c - libFuzzer target: the loader's gzip path.
 *
 * xpv_gunzip() on arbitrary bytes with a small inflate cap (so a gzip bomb
 * is a 413, never an out-of-memory), then, when it inflates, the decoder
 * on the result - the same steps xpv_load_profile() takes for a
 * .xplane.pb.gz file.  Also checks the error contract: a failure has a
 * 413 or 422 status and an offset inside the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"
#include "model.h"
#include "xplane.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void free_buf(void *p, size_t n) {
    (void)n;
    free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    xpv_err err;
    size_t out_len = 0;
    xpv_err_clear(&err);
    void *out = xpv_gunzip(data, size, 4u << 20, &out_len, &err);
    if (!out) {
        if (err.status != 413 && err.status != 422 && err.status != 500) abort();
        if (err.offset < 0 || (uint64_t)err.offset > size) abort();
        return 0;
    }
    if (out_len > (4u << 20)) abort();
    xpv_decode_error derr;
    xpv_profile *p = xpv_decode(out, out_len, free_buf, &derr);
    if (p) xpv_profile_free(p);
    return 0;
}
