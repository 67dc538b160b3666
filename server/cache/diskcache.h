/*
 * diskcache.h - derived data persisted under --cache_dir, shared by
 * replicas.
 *
 * Sits beside the memory cache (cache.h): when a derived value that can be
 * persisted (today the trace viewer's index) is missing from memory, the
 * server first looks for its image here and only builds it when there is
 * none, then writes the image for the next process.  Layout:
 *
 *   DIR/trace-index/<16 hex digits>.bin      one file per (kind, host set)
 *
 * The name is a hash of the key: kind, image format, xpview version, a
 * hash of the running binary, and per host file its path relative to the
 * logdir, size and mtime (ns).  A file also holds the whole key, compared
 * on read, so a hash collision is a miss, and the image itself is
 * validated by the kind's loader (magic, format, hash, bounds): a corrupt,
 * truncated or foreign file is never trusted, only rebuilt.
 *
 * Entries are authenticated: an HMAC-SHA256 (OpenSSL) of the envelope,
 * key and payload under a secret of the deployment, DIR/secret (32 random
 * bytes, mode 0600, made by the first process; replicas sharing DIR share
 * it).  A co-user who can write DIR but not read the secret cannot forge
 * an entry (the kind's hash alone anyone can recompute: issue 26); one that
 * fails its MAC is a miss, counted as rejected.  Without a readable secret
 * the disk cache is off (logged once).
 *
 * Files are written atomically: a temporary file in the same directory
 * (O_EXCL, named ".tmp.<pid>.<counter>.<random>.<name>"), fsync, rename.
 * Readers only open final names, so replicas sharing the directory never
 * see a half-written file; when two replicas build the same entry, the
 * last rename wins and both images are identical.  Writes run on a background
 * thread so a request never waits for the disk; write errors (read-only
 * directory, disk full) are logged once and otherwise ignored.
 *
 * The cache directory is never inside the logdir: xpv_diskcache_open
 * refuses one that is.
 */
#ifndef XPV_DISKCACHE_H
#define XPV_DISKCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "discovery.h"
#include "tool.h"

typedef struct xpv_diskcache xpv_diskcache;

/* Counters (for /statz and tests). */
typedef struct xpv_diskcache_stats {
    uint64_t hits;              /* images loaded */
    uint64_t misses;            /* no file for the key */
    uint64_t rejected;          /* a file was there but not valid */
    uint64_t writes;            /* images written (renamed into place) */
    uint64_t write_errors;      /* writes that failed */
    uint64_t skipped;           /* writes dropped: 512 MiB already pending */
} xpv_diskcache_stats;

/* Open the cache directory `dir` for a server of `logdir` (a resolved
 * path).  `build_id` identifies the running binary; it is part of every
 * key, so a different build never reads another's images.  Refuses (NULL,
 * message in msg) a directory equal to or inside the logdir, after
 * resolving symlinks of its existing part.  Creates the directory when
 * missing; if that fails the cache still opens (reads find nothing,
 * writes fail and are logged once).  Removes temporary files older than
 * an hour left by killed writers.  Free with xpv_diskcache_free. */
xpv_diskcache *xpv_diskcache_open(const char *dir, const char *logdir, uint64_t build_id,
                                  char *msg, size_t msglen);

/* Wait for pending writes, then free.  NULL is allowed. */
void xpv_diskcache_free(xpv_diskcache *dc);

/* Wait until every write started so far has finished. */
void xpv_diskcache_flush(xpv_diskcache *dc);

/* The directory served (resolved). */
const char *xpv_diskcache_dir(const xpv_diskcache *dc);

/* ---- Raw entries (a key string -> bytes) ---- */

/* The bytes stored under `key` in subdirectory `sub`, as a new malloc'ed
 * buffer of *len bytes (caller frees), or NULL when there is no such file,
 * it is larger than `max_len` or it is not a complete entry for `key`. */
void *xpv_diskcache_get(xpv_diskcache *dc, const char *sub, const char *key, size_t max_len,
                        size_t *len);

/* Write `len` bytes of `data` under `key` in `sub` atomically, on a
 * background thread.  Consumes `data` (malloc'ed; freed when written or
 * dropped: when 512 MiB of other writes are already pending, the entry is
 * not written and counted as skipped).  Never fails for the caller. */
void xpv_diskcache_put(xpv_diskcache *dc, const char *sub, const char *key, void *data,
                       size_t len);

/* The same, synchronously: returns 0, or -1 with errno set (the error is
 * also counted and logged once).  `data` is borrowed. */
int xpv_diskcache_write(xpv_diskcache *dc, const char *sub, const char *key, const void *data,
                        size_t len);

/* Path of the file for `key` in `sub` into `out` (for tests). */
void xpv_diskcache_path(const xpv_diskcache *dc, const char *sub, const char *key, xpv_buf *out);

/* ---- Derived values ---- */

/* 1 when values of `kind` are persisted. */
int xpv_diskcache_persists(const xpv_derived_kind *kind);

/* The value of `kind` for the host files `hosts` (decoded as `hs`) loaded
 * from the cache, or NULL (no entry, or an entry that is not valid for
 * these profiles).  Free the value with kind->free. */
void *xpv_diskcache_load_derived(xpv_diskcache *dc, const xpv_derived_kind *kind,
                                 const xpv_host *const *hosts, const xpv_hostset *hs);

/* Store value `d` of `kind` (built for `hosts` / `hs`): serialized now,
 * written in the background.  `d` is borrowed. */
void xpv_diskcache_save_derived(xpv_diskcache *dc, const xpv_derived_kind *kind,
                                const xpv_host *const *hosts, const xpv_hostset *hs,
                                const void *d);

void xpv_diskcache_get_stats(xpv_diskcache *dc, xpv_diskcache_stats *st);

#endif
