/*
 * xplane.h - the XPlane importer: serialized XSpace bytes -> profile model.
 */
#ifndef XPV_XPLANE_H
#define XPV_XPLANE_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* Decoding errors carry the byte offset at which decoding failed. */
typedef struct xpv_decode_error {
    uint64_t offset;
    int status;      /* 0: malformed (422); 413: over the memory budget;
                      * 503: out of memory */
    char msg[160];
} xpv_decode_error;

/* Decode `len` bytes of a serialized XSpace into a new profile.  The profile
 * takes ownership of `buf`: it is released with `buf_free(buf, len)` when
 * the profile is freed (also on failure).  `buf_free` may be NULL when the
 * caller keeps the bytes alive longer than the profile.
 * Returns NULL on malformed input and fills `err` (offset + reason). */
xpv_profile *xpv_decode(void *buf, size_t len,
                        void (*buf_free)(void *buf, size_t len),
                        xpv_decode_error *err);

/* xpv_decode() within a memory budget: the file's bytes plus everything
 * the model allocates stay under `budget` bytes (0 = no limit), checked
 * before each allocation sized by the file's counts.  Over it: NULL with
 * err->status 413; an allocation failing anyway: err->status 503. */
xpv_profile *xpv_decode_limited(void *buf, size_t len,
                                void (*buf_free)(void *buf, size_t len),
                                uint64_t budget, xpv_decode_error *err);

#endif
