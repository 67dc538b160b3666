/*
 * loader.h - read one host file and decode it into a profile.
 *
 * XPlanes: open + fstat, size caps, map the file read-only (read it into
 * one malloc'ed buffer when it cannot be mapped), gunzip when the bytes
 * start with the gzip magic (inflated size capped too, so a gzip bomb
 * cannot exhaust memory), then xpv_decode().  A mapped profile's bytes are
 * page cache, not heap; a file truncated while mapped reads as zeros
 * instead of killing the process (xpv_profile_damaged).  Chrome-trace JSON
 * (PyTorch, TF 2.2 trace.json.gz) is never held whole: it is converted to
 * an XSpace straight from the fd, inflated chunk by chunk
 * (xpv_ct_convert_fd), and that XSpace is decoded.  Every failure becomes
 * an xpv_err naming the file and, for decoding failures, the byte offset.
 * With lim->max_mem set, gunzip stops at that many bytes (and at any ratio
 * no real profile has, see gz.h), and the decoder checks every allocation
 * sized by the file's counts against it before making it: 413 naming the
 * file, in bounded memory.  A mapped file's own bytes are not charged
 * (page cache, reclaimable); inflated bytes are.
 * A file that changes size or mtime while it is read, or whose bytes stop
 * in the middle of a record (both: still being written) yields a 422
 * "incomplete ... still being written?" error, never a crash.
 *
 * Confinement: with `root` set in the limits (the server sets the logdir),
 * a file is opened only if it still resolves inside `root` when it is
 * opened, and the open walks the resolved path from `root` one component
 * at a time with O_NOFOLLOW, so a file or directory swapped for a symlink
 * after the logdir scan (which checked realpath) is refused (403), never
 * followed outside the logdir.
 */
#ifndef XPV_LOADER_H
#define XPV_LOADER_H

#include <stdint.h>

#include "model.h"
#include "xplane.h"
#include "gz.h"
#include "util.h"

typedef struct xpv_load_limits {
    uint64_t max_file;       /* bytes on disk (default 4 GiB) */
    uint64_t max_inflated;   /* bytes after gunzip (default 4 GiB) */
    const char *root;        /* resolved directory files must stay in
                              * (borrowed); NULL = no confinement */
    uint64_t max_mem;        /* bytes one XPlane decode may hold at once
                              * (inflated bytes + model; the server passes
                              * its memory budget); 0 = no limit */
} xpv_load_limits;

#define XPV_DEFAULT_MAX_FILE (4ULL << 30)

/* Open `path` read-only (O_NONBLOCK, O_NOCTTY, close-on-exec) for loading.
 * `root` NULL: a plain open().  Else `root` must be a resolved absolute
 * directory (realpath): `path` is resolved, must lie below `root`, and is
 * then opened by xpv_open_beneath(), so no symlink swapped in meanwhile is
 * followed.  Returns the fd (the caller closes it) or -1 with `err` filled:
 * 404 missing, 403 outside `root` or a component became a symlink, 500
 * other I/O errors.  `display` names the file in messages. */
int xpv_open_confined(const char *root, const char *path, const char *display,
                      xpv_err *err);

/* Open `rel` (a '/'-separated relative path without "." or ".."
 * components) below the directory `root`, following no symlink: every
 * directory component is opened with O_NOFOLLOW | O_DIRECTORY relative to
 * the previous one, the last with O_NOFOLLOW.  Returns the fd or -1 with
 * `err` filled (403 for a symlink or "..", 404 missing, 500 otherwise). */
int xpv_open_beneath(const char *root, const char *rel, const char *display,
                     xpv_err *err);

/* Load and decode `path`.  `display` names the file in messages (e.g. the
 * path relative to the logdir; NULL means `path`).  `lim` NULL means the
 * defaults (no confinement).  Returns a new profile (free with
 * xpv_profile_free), or NULL with `err` filled: 403 outside lim->root, 404
 * missing, 413 over a cap, 422 empty / incomplete / undecodable
 * (err->offset set when decoding failed), 500 I/O error. */
xpv_profile *xpv_load_profile(const char *path, const char *display,
                              const xpv_load_limits *lim, xpv_err *err);


/* Heap bytes loading `path` (`size` bytes on disk) is expected to take at
 * once, for admission against a memory budget before decoding; counted as
 * the decoder's budget counts them (xpv_decode_heap_estimate).  A plain
 * XPlane is mapped: only its model counts, not the file.  A gzipped one is
 * inflated into the heap: the inflated size its gzip trailer states
 * (ISIZE; at least the file's size, at most the inflate caps in `lim`)
 * plus that buffer's model.  A Chrome trace becomes an XSpace in the heap:
 * the file's size plus its model.  Reads the first 2 and last 4 bytes;
 * a file that cannot be read is estimated as a plain one (loading it
 * fails anyway).  `lim` NULL means the defaults. */
uint64_t xpv_load_heap_estimate(const char *path, uint64_t size, const xpv_load_limits *lim);

/* Whether the file `p` was mapped from has shrunk since it was loaded
 * (the lost bytes now read as zeros: answers from `p` are unreliable; load
 * the file again).  0 for profiles not loaded by mapping a file. */
int xpv_profile_damaged(const xpv_profile *p);

/* Whether the bytes `p` reads may no longer be the ones it was decoded
 * from: its mapped file shrank (xpv_profile_damaged) or was rewritten in
 * place (its size or mtime differ from when it was mapped).  Answers built
 * from `p` meanwhile may mix old and new bytes (never bytes outside the
 * mapping: every read is bounded by it): drop them and load the file
 * again.  0 for profiles whose bytes are their own (read, inflated or
 * converted). */
int xpv_profile_changed(const xpv_profile *p);

#endif
