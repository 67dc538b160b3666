/*
 * fuzz_decode.h - the input of the fuzz targets that analyse a decoded
 * profile (fuzz_group_events.c, fuzz_derived_lines.c), decoded as the
 * server decodes a file.  Header-only.
 */
#ifndef XPV_FUZZ_DECODE_H
#define XPV_FUZZ_DECODE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "xplane.h"

static inline void fuzz_free_copy(void *buf, size_t len) {
    (void)len;
    free(buf);
}

/* The profile in `data`, decoded from an exact copy of the bytes (so ASan
 * catches any read past the end; the profile owns the copy) under a
 * memory budget, as the server has: inputs declaring millions of entries
 * are refused instead of exhausting the fuzzer's memory.  NULL when the
 * bytes do not decode. */
static inline xpv_profile *fuzz_decode(const uint8_t *data, size_t size) {
    uint8_t *buf = malloc(size ? size : 1);
    if (size) memcpy(buf, data, size);
    xpv_decode_error err;
    return xpv_decode_limited(buf, size, fuzz_free_copy, 256u << 20, &err);
}

#endif
