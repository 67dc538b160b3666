/*
 * fuzz_chrome_trace.c - libFuzzer target: Chrome trace JSON (PyTorch /
 * Kineto / TF 2.2 trace.json) -> XSpace bytes -> decoder.
 *
 * The converter's output must always decode: it is fed to xpv_decode()
 * like any xplane file, and a failure there is a bug (abort).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "chrome_trace.h"
#include "model.h"
#include "xplane.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    xpv_buf out;
    xpv_ct_summary sum;
    xpv_ct_error err;
    xpv_ct_options opt = {"fuzzhost", 8u << 20};
    xpv_buf_init(&out);
    memset(&err, 0, sizeof err);
    if (xpv_ct_convert_mem(data, size, &opt, &out, &sum, &err) == 0) {
        xpv_decode_error derr;
        xpv_profile *p = xpv_decode(out.data, out.len, NULL, &derr);
        if (!p) abort();
        xpv_profile_free(p);
    } else if (err.status == 0) {
        abort();
    }
    xpv_buf_free(&out);
    return 0;
}
