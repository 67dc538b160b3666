/*
 * capture.h - take a profile from running jobs (tensorflow.ProfilerService/
 * Profile), as TensorBoard's "Capture Profile" does, into a new run of a
 * logdir: LOGDIR/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.xplane.pb.
 *
 * Each target gets one ProfileRequest that asks for the XSpace in the
 * response (emit_xspace) and also names repository_root =
 * LOGDIR/plugins/profile and session_id = the run, so a server that
 * ignores emit_xspace but shares our filesystem saves
 * <repository_root>/<session_id>/<host>.xplane.pb, which is the same file.
 * An XSpace in the response is streamed to disk (bounded memory).
 * Targets are captured in parallel, one thread each.
 */
#ifndef XPV_CAPTURE_H
#define XPV_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#define XPV_CAPTURE_MAX_TARGETS 64

typedef struct xpv_capture_opts {
    uint64_t duration_ms;       /* profiling time (default 1000) */
    int num_retry;              /* extra attempts after an empty trace or an
                                 * unreachable server (default 3) */
    int host_tracer_level;      /* default 2 */
    int device_tracer_level;    /* default 1 */
    int python_tracer_level;    /* default 0 */
    uint64_t delay_ms;          /* start this much later (default 0) */
    uint64_t timeout_ms;        /* whole capture of one target; 0 = 30 s +
                                 * delay + duration */
} xpv_capture_opts;

void xpv_capture_defaults(xpv_capture_opts *o);

typedef struct xpv_capture_target {
    char addr[300];             /* as given (for messages) */
    char host[256];
    char port[16];
    char stem[300];             /* file name without .xplane.pb */
    /* results */
    int ok;
    char path[4400];            /* written file */
    uint64_t bytes;
    const char *how;            /* "response" or "repository_root" */
    int attempts;
    char err[1200];             /* "ADDR: why", when !ok */
} xpv_capture_target;

/* Split "grpc://h:p,h2:p2" (spaces allowed) into targets.  Returns the
 * count, or -1 with `err`. */
int xpv_capture_parse_targets(const char *list, xpv_capture_target *t, size_t cap,
                              char *err, size_t errlen);

/* Create LOGDIR/plugins/profile/<now as YYYY_MM_DD_HH_MM_SS> (with _2,
 * _3... when taken) and write its name into `run`.  Returns 0 or -1 with
 * `err`. */
int xpv_capture_make_run(const char *logdir, char *run, size_t runlen, char *err,
                         size_t errlen);

/* Capture every target into run `run` of `logdir` (xpv_capture_make_run),
 * in parallel.  Returns the number of targets that failed (each has its
 * `err`).  When none succeeded the run directory is removed again if it is
 * empty. */
int xpv_capture_run(const char *logdir, const char *run, xpv_capture_target *t, size_t n,
                    const xpv_capture_opts *o);

/* Whether `t` is allowed by `allow`, a "HOST[:PORT],..." list (NULL or ""
 * allows everything).  Hosts compare case-insensitively, literally. */
int xpv_capture_allowed(const char *allow, const xpv_capture_target *t);

#endif
