/*
 * chrome_trace.h - Chrome trace-event JSON (PyTorch/Kineto traces, TF 2.2
 * "*.trace.json.gz") -> serialized XSpace bytes.
 *
 * The server decodes the result with xpv_decode() like any xplane, so the
 * trace viewer, kernel stats and op stats converters work unchanged.
 *
 * The JSON is read by a streaming tokenizer through a read callback: the
 * whole text never has to be in memory (a gzip'ed trace is inflated chunk
 * by chunk).  What is kept is one compact record per event plus its stats,
 * already in wire form, which is about the size of the resulting XSpace.
 *
 * Mapping (docs/legacy.md has the details):
 *   - ts/dur are microseconds (decimal text parsed exactly to ns; the
 *     top-level displayTimeUnit only affects display and is ignored);
 *   - GPU events (cat kernel / gpu_memcpy / gpu_memset, 2021 Kernel /
 *     Memcpy / Memset, gpu_user_annotation) -> plane "/device:GPU:<pid>",
 *     line "Stream #<tid>";
 *   - a pid whose process_name is "/host:..." or "/device:..." (TF 2.2
 *     traces) -> that plane;
 *   - every other pid/tid -> plane "/host:CPU", one line per (pid, tid),
 *     named by thread_name metadata;
 *   - args -> stats (ints, doubles, strings; arrays/objects as compact
 *     JSON text); `correlation` -> `correlation_id`; kernel launch args ->
 *     `kernel_details` in XProf's format; `cat` -> stat `cat`; GPU events
 *     launched by a cpu_op (same External id) get `tf_op` = that op's name;
 *     runtime/device pairs sharing a correlation id get `flow` stats;
 *   - deviceProperties -> GPU plane stats (gpu_device_name,
 *     compute_cap_major/minor, core_count, memory_size, device_vendor).
 * Instants (ph i/I) become zero-duration events; metadata (M) names
 * processes and threads; flows (s/t/f), counters (C), begin/end (B/E) and
 * other phases are counted and dropped (warning in XSpace.warnings).
 */
#ifndef XPV_CHROME_TRACE_H
#define XPV_CHROME_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Read up to `cap` bytes into `buf`: returns the count, 0 at end of input,
 * or a negative value on a read error. */
typedef long (*xpv_ct_read_fn)(void *ctx, void *buf, size_t cap);

typedef struct xpv_ct_options {
    const char *hostname;        /* XSpace.hostnames[0]; NULL = none */
    uint64_t max_json_bytes;     /* cap on JSON bytes read; 0 = none */
} xpv_ct_options;

typedef struct xpv_ct_summary {
    uint64_t complete;           /* ph X */
    uint64_t instants;           /* ph i / I */
    uint64_t metadata;           /* ph M */
    uint64_t flows;              /* ph s / t / f */
    uint64_t skipped;            /* other phases (B/E, C, b/e, ...) */
    uint64_t events_out;         /* events written (complete + instants) */
    uint64_t host_ops;           /* events of cat cpu_op / Operator */
    uint64_t kernels;            /* events of cat kernel / Kernel */
    uint64_t json_bytes;         /* JSON bytes read */
    uint64_t input_bytes;        /* bytes read from the source (the gzip
                                  * size for gzip input); set by the
                                  * _mem and _fd variants */
    uint64_t clamped;            /* event times / durations clamped to the
                                  * int64 ps range the decoder accepts */
    uint64_t work;               /* steps of plane/line/metadata grouping
                                  * (tests check it grows linearly) */
    uint32_t planes, lines, devices;
    int bare_array;              /* top level was an array of events */
    int truncated;               /* input ended inside traceEvents */
    char display_time_unit[8];
} xpv_ct_summary;

typedef struct xpv_ct_error {
    int status;                  /* 422 malformed, 413 over the cap, 500 read */
    uint64_t offset;             /* JSON byte offset of the problem */
    char msg[160];
} xpv_ct_error;

/* Convert the trace read through `rd` into XSpace bytes appended to `out`.
 * `opt` and `sum` may be NULL.  Returns 0, or -1 with `err` filled (`out`
 * is then left with unspecified contents).  A trace that ends inside
 * traceEvents after complete events keeps them (sum->truncated, and an
 * XSpace warning). */
int xpv_ct_convert(xpv_ct_read_fn rd, void *ctx, const xpv_ct_options *opt,
                   xpv_buf *out, xpv_ct_summary *sum, xpv_ct_error *err);

/* Same over bytes in memory; gzip input (magic 1f 8b) is inflated as a
 * stream, never as a whole. */
int xpv_ct_convert_mem(const void *data, size_t len, const xpv_ct_options *opt,
                       xpv_buf *out, xpv_ct_summary *sum, xpv_ct_error *err);

/* Same over an open file descriptor, read sequentially from its current
 * position in chunks of a few hundred KiB until end of file; gzip input
 * (magic 1f 8b, concatenated members allowed) is inflated as a stream.
 * Neither the file nor the inflated JSON is ever held whole, so memory is
 * that of the result plus a constant.  A gzip stream that stops before
 * its trailer reads as a trace that ends early (sum->truncated); corrupt
 * gzip data or a read error fails with status 500 and a message saying
 * which.  The caller keeps the fd (not closed here). */
int xpv_ct_convert_fd(int fd, const xpv_ct_options *opt, xpv_buf *out,
                      xpv_ct_summary *sum, xpv_ct_error *err);

/* Parse a JSON number given in microseconds ("12", "12.3456", "1.5e3")
 * into integer nanoseconds, exactly for plain decimals (rounded half up at
 * the 4th fractional digit).  Returns 1, or 0 when it is not a number or
 * out of range. */
int xpv_ct_parse_us(const char *s, size_t n, int64_t *ns);

#endif
