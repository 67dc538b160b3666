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
#include <sys/socket.h>

#define XPV_CAPTURE_MAX_TARGETS 64
/* The longest capture of one target, everything included (delay,
 * duration, the answer, retries): 10 minutes.  A longer --timeout_ms /
 * timeout_ms is refused; the default deadline is clamped to it. */
#define XPV_CAPTURE_MAX_MS 600000ULL
/* The largest profile a capture writes when opts.max_bytes is 0 (the
 * server's --max_file_size default). */
#define XPV_CAPTURE_DEFAULT_MAX_BYTES (4ULL << 30)
/* Addresses kept per target (xpv_capture_resolve). */
#define XPV_CAPTURE_MAX_ADDRS 8

typedef struct xpv_capture_opts {
    uint64_t duration_ms;       /* profiling time (default 1000) */
    int num_retry;              /* extra attempts after an empty trace or an
                                 * unreachable server (default 3) */
    int host_tracer_level;      /* default 2 */
    int device_tracer_level;    /* default 1 */
    int python_tracer_level;    /* default 0 */
    uint64_t delay_ms;          /* start this much later (default 0) */
    uint64_t timeout_ms;        /* whole capture of one target; 0 = 30 s +
                                 * delay + duration; at most
                                 * XPV_CAPTURE_MAX_MS either way */
    uint64_t max_bytes;         /* largest profile file written (the file
                                 * budget, --max_file_size); 0 =
                                 * XPV_CAPTURE_DEFAULT_MAX_BYTES.  A bigger
                                 * XSpace aborts that capture and its
                                 * partial file is deleted */
} xpv_capture_opts;

void xpv_capture_defaults(xpv_capture_opts *o);

/* The deadline of each target of a capture with `o`, in ms from its start:
 * timeout_ms or 30 s + delay + duration, clamped to XPV_CAPTURE_MAX_MS. */
uint64_t xpv_capture_timeout(const xpv_capture_opts *o);

typedef struct xpv_capture_target {
    char addr[300];             /* as given (for messages) */
    char host[256];
    char port[16];
    char stem[300];             /* file name without .xplane.pb */
    /* xpv_capture_resolve: where to connect (the capture connects only
     * there, never resolving the name again), each address's canonical
     * key ("IP:PORT"; every loopback address, 0.0.0.0 and :: are one
     * machine: "local:PORT"), and whether all of them are this machine */
    size_t naddrs;
    struct sockaddr_storage addrs[XPV_CAPTURE_MAX_ADDRS];
    char keys[XPV_CAPTURE_MAX_ADDRS][80];
    int local;
    /* results */
    int ok;
    char path[4400];            /* written file */
    uint64_t bytes;
    const char *how;            /* "response" or "repository_root" */
    int attempts;
    char err[1200];             /* "ADDR: why", when !ok */
    char pub_err[1200];         /* the same for network clients: until the
                                 * peer has answered as a gRPC server only
                                 * "could not reach a profiler server" (no
                                 * peer byte; refused, unreachable, silent
                                 * and non-gRPC ports look alike) */
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

/* Resolve t->host:t->port (getaddrinfo) into t->addrs, t->keys and
 * t->local.  `numeric_only`: only an IP address in any form inet_aton or
 * inet_pton takes (127.1, 0x7f000001, ::1) or the name "localhost" (from
 * /etc/hosts): nothing is sent to DNS.  Returns 0, or -1 with `err`. */
int xpv_capture_resolve(xpv_capture_target *t, int numeric_only, char *err, size_t errlen);

/* Whether two resolved targets share an address (a canonical key): the
 * same profiler server under two names. */
int xpv_capture_same_target(const xpv_capture_target *a, const xpv_capture_target *b);

/* Whether `sa` (AF_INET / AF_INET6) is this machine: 127.0.0.0/8, ::1,
 * their IPv4-mapped forms, 0.0.0.0 or :: (connecting to which reaches
 * loopback). */
int xpv_capture_addr_is_local(const struct sockaddr *sa);

#endif
