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

/* Options of xpv_decode_ex.  Zeroed fields take the defaults. */
typedef struct xpv_decode_opts {
    uint64_t budget;         /* as xpv_decode_limited; 0 = no limit */
    int threads;             /* threads parsing lines (the caller's one
                              * included); 0: the online CPUs, at most 8;
                              * 1: serial */
    size_t parallel_min;     /* smaller files are decoded serially
                              * (default XPV_DECODE_PARALLEL_MIN) */
    size_t min_avg_line;     /* so are files whose lines average fewer
                              * bytes (default XPV_DECODE_MIN_AVG_LINE) */
    int file_mapped;         /* `buf` maps a file (page cache, not heap):
                              * its bytes are not charged to the budget */
    int parallel_used;       /* out: 1 when lines were parsed in parallel */
} xpv_decode_opts;

/* Heap bytes decoding `len` bytes of XSpace is expected to take, counted
 * as the decoder's budget counts them: the bytes themselves unless
 * `file_mapped` (page cache), plus the model (arena), at most
 * XPV_MODEL_PER_BYTE_NUM / _DEN of the bytes on the profiles measured
 * (model / file: real TF multi-GPU grown to 38 MB 0.31, JAX/TPU grown to
 * 56 MB 0.81, synthetic 20 MB 0.42), plus the arena's first chunk.  An
 * estimate for admission, not a bound: a file of tiny events can take
 * more, and the decoder's own budget checks refuse it (413); what the
 * analysis layer derives afterwards (enrichment: 0.2 of the file on that
 * JAX profile) is charged when built. */
uint64_t xpv_decode_heap_estimate(uint64_t len, int file_mapped);

#define XPV_MODEL_PER_BYTE_NUM 7
#define XPV_MODEL_PER_BYTE_DEN 8

#define XPV_DECODE_MAX_THREADS 16
#define XPV_DECODE_PARALLEL_MIN (16u << 20)
#define XPV_DECODE_MIN_AVG_LINE 4096u

/* xpv_decode_limited() with options (`opts` may be NULL).  A large file's
 * lines are parsed by several threads and then placed by the serial
 * decoder in file order: the profile is the serial decoder's, byte for
 * byte (mem_size included), whatever the threads' schedule.  Any failure
 * of the parallel attempt redoes the decode serially, so errors are the
 * serial decoder's too. */
xpv_profile *xpv_decode_ex(void *buf, size_t len, void (*buf_free)(void *buf, size_t len),
                           xpv_decode_opts *opts, xpv_decode_error *err);

#endif
