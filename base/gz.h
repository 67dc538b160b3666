/*
 * gz.h - gzip in one place (see gz.c).
 */
#ifndef XPV_GZ_H
#define XPV_GZ_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* gzip-compress `len` bytes at `level` (1..9) into a new malloc'ed buffer
 * whose length is stored in *out_len.  Never fails (OOM aborts). */
unsigned char *xpv_gzip(const void *data, size_t len, int level, size_t *out_len);

/* Gunzip `len` bytes (concatenated members too; input fed in 1 GiB chunks)
 * into a new malloc'ed buffer of at most `cap` bytes, NUL-terminated after
 * the data.  Returns the buffer (the caller frees it; length in *out_len)
 * or NULL with `err` filled: 413 over the cap, 422 corrupt or truncated
 * stream, offset = compressed bytes consumed. */
void *xpv_gunzip(const void *data, size_t len, uint64_t cap, size_t *out_len,
                 xpv_err *err);

/* Past this many inflated bytes, a ratio above XPV_GZ_MAX_RATIO:1 is a
 * gzip bomb (real profiles compress 3-30:1): 413 at once. */
#define XPV_GZ_RATIO_FLOOR (64ULL << 20)
#define XPV_GZ_MAX_RATIO 200u

/* xpv_gunzip() naming its cap in the 413 message (`cap_name`, e.g. "memory
 * budget (--cache_mb)"; NULL = "limit").  Also 413 for a gzip bomb (the
 * ratio above) and 503 when memory for the output cannot be allocated. */
void *xpv_gunzip_limited(const void *data, size_t len, uint64_t cap, const char *cap_name,
                         size_t *out_len, xpv_err *err);

/* Inflate one small gzip/zlib stream into `out` (cap bytes).  Returns the
 * length, or -1 when it is corrupt or does not fit. */
long xpv_gunzip_into(const void *data, size_t len, void *out, size_t cap);

#endif
