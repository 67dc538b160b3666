/*
 * discovery.h - which profile runs and hosts a logdir holds.
 *
 * XProf's rules (xprof-reference.md §1.3): every directory D under the
 * logdir with D/plugins/profile/<run>/ is a TensorBoard run; the profile
 * run is named "<run>" when D is the logdir itself, else "<D>/<run>" (D
 * relative to the logdir); runs are listed newest first (descending by
 * name); the hosts of a run are its "<host>.xplane.pb" (or
 * ".xplane.pb.gz") files, sorted.  Runs with no host file are not listed.
 *
 * Older formats (docs/legacy.md): a run directory may also hold TF 2.2-era
 * per-tool files (run->legacy) and "<host>.trace.json.gz" Chrome traces
 * (hosts of kind XPV_LEGACY_TRACE_JSON_GZ, unless the host has an xplane);
 * a directory holding PyTorch traces ("*.pt.trace.json[.gz]", or any
 * "*.json[.gz]" when the directory's parent is named "pytorch") is a run
 * named by its path relative to the logdir.
 *
 * A scan reads directory listings and stat()s host files; it never opens a
 * profile.  Symlinks are followed only when they resolve inside the logdir,
 * each real directory is visited once (no loops), depth is bounded.
 *
 * Scans produce immutable, refcounted snapshots, so a request can keep
 * using the run list it looked at while another request triggers a
 * rescan.  Names from requests are only ever looked up in a snapshot, never
 * joined into paths: no path traversal is possible through them.
 */
#ifndef XPV_DISCOVERY_H
#define XPV_DISCOVERY_H

#include <stddef.h>
#include <stdint.h>

typedef struct xpv_host {
    char *name;          /* file name minus ".xplane.pb[.gz]" */
    char *path;          /* absolute path of the file */
    char *rel;           /* path relative to the logdir (for messages) */
    uint64_t size;       /* identity at scan time: size, mtime, inode */
    int64_t mtime_ns;
    int64_t ctime_ns;    /* status change: moves even when a file is
                          * replaced with its mtime set back (Last-Modified) */
    uint64_t ino;
    int gz;              /* 1 for .xplane.pb.gz */
    int kind;            /* 0: XPlane.  Else an enum xpv_legacy_kind
                          * (ingest/legacy.h): in hosts[] a Chrome trace
                          * (TF *.trace.json.gz, PyTorch *.pt.trace.json),
                          * in legacy[] a TF 2.2-era per-tool file */
} xpv_host;

typedef struct xpv_run {
    char *name;          /* "<run>" or "<tb run>/<run>" */
    char *dir;           /* absolute path of the run directory */
    xpv_host *hosts;     /* sorted by name */
    size_t nhosts;
    xpv_host *legacy;    /* per-tool files (<host>.overview_page.pb ...),
                          * sorted by name; see server/routes/legacy_serve.h */
    size_t nlegacy;
} xpv_run;

typedef struct xpv_runlist {
    xpv_run *runs;       /* newest first (descending by name) */
    size_t nruns;
    int refs;            /* private: see xpv_runlist_release */
} xpv_runlist;

typedef struct xpv_logdir xpv_logdir;

/* A logdir to scan.  `min_interval_ms` rate-limits rescans (0 = rescan on
 * every xpv_logdir_scan).  Returns NULL and fills `err` (size errlen) when
 * `root` is not a readable directory.  Free with xpv_logdir_free. */
xpv_logdir *xpv_logdir_new(const char *root, int min_interval_ms,
                           char *err, size_t errlen);

/* XProf's session_path mode: `run_dir` itself (a directory holding
 * *.xplane.pb files) is the only run, named by its basename. */
xpv_logdir *xpv_logdir_new_session(const char *run_dir, char *err, size_t errlen);

/* What a user pointed --logdir at, as XProf users do (tensorboard#6940):
 * a logdir, a directory inside one (a TensorBoard run holding
 * plugins/profile, plugins/profile itself, `plugins`, one profile run), or
 * a single profile file (.xplane.pb[.gz], .pt.trace.json[.gz],
 * .trace.json.gz).  Writes into `dir` (cap bytes) the directory to serve
 * and sets *session: 0 = serve `dir` as a logdir, 1 = `dir` is the only
 * run (a run directory, or the folder of the file given).  Returns 0, or
 * -1 with a message in err when `path` is neither a directory nor a
 * profile file. */
int xpv_logdir_resolve(const char *path, char *dir, size_t cap, int *session, char *err,
                       size_t errlen);

/* Rescan on a background thread once per interval from now on, so that
 * xpv_logdir_scan() without `force` only returns the last snapshot and no
 * request ever walks the logdir (a huge tree costs the scanner, not the
 * users).  Scans once before returning.  No-op with a 0 interval.
 * Returns 0, or -1 when the thread cannot start (scans stay inline). */
int xpv_logdir_start_background(xpv_logdir *ld);

void xpv_logdir_free(xpv_logdir *ld);

/* Absolute, resolved path of the logdir root. */
const char *xpv_logdir_root(const xpv_logdir *ld);

/* The current run list, rescanning first when the last scan is older than
 * the interval (or always when `force`).  Thread-safe.  The caller owns one
 * reference: release it with xpv_runlist_release.  Never NULL (an
 * unreadable logdir yields an empty list). */
xpv_runlist *xpv_logdir_scan(xpv_logdir *ld, int force);

void xpv_runlist_release(xpv_runlist *rl);

/* Lookups in a snapshot; NULL when absent. */
const xpv_run *xpv_runlist_find(const xpv_runlist *rl, const char *name);
const xpv_host *xpv_run_find_host(const xpv_run *run, const char *name);

#endif
