/*
 * loader.h - read one host file and decode it into a profile.
 *
 * open + fstat, size caps, read into one malloc'ed buffer, gunzip when the
 * bytes start with the gzip magic (inflated size capped too, so a gzip
 * bomb cannot exhaust memory), then xpv_decode().  Every failure becomes
 * an xpv_err naming the file and, for decoding failures, the byte offset.
 * A file that changes size or mtime while it is read, or whose bytes stop
 * in the middle of a record (both: still being written) yields a 422
 * "incomplete ... still being written?" error, never a crash.
 */
#ifndef XPV_LOADER_H
#define XPV_LOADER_H

#include <stdint.h>

#include "model.h"
#include "util.h"

typedef struct xpv_load_limits {
    uint64_t max_file;       /* bytes on disk (default 4 GiB) */
    uint64_t max_inflated;   /* bytes after gunzip (default 4 GiB) */
} xpv_load_limits;

#define XPV_DEFAULT_MAX_FILE (4ULL << 30)

/* Load and decode `path`.  `display` names the file in messages (e.g. the
 * path relative to the logdir; NULL means `path`).  `lim` NULL means the
 * defaults.  Returns a new profile (free with xpv_profile_free), or NULL
 * with `err` filled: 404 missing, 413 over a cap, 422 empty / incomplete /
 * undecodable (err->offset set when decoding failed), 500 I/O error. */
xpv_profile *xpv_load_profile(const char *path, const char *display,
                              const xpv_load_limits *lim, xpv_err *err);

/* Gunzip `len` bytes into a new malloc'ed buffer of at most `cap` bytes.
 * Returns the buffer (length in *out_len) or NULL with `err` filled
 * (413 over the cap, 422 corrupt or truncated stream, offset = compressed
 * bytes consumed). */
void *xpv_gunzip(const void *data, size_t len, uint64_t cap, size_t *out_len,
                 xpv_err *err);

#endif
