/*
 * discovery.c - logdir scan into refcounted run-list snapshots (see
 * discovery.h).
 */
#include "discovery.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"
#include "legacy.h"
#include "util.h"

#define MAX_DEPTH 32            /* directory levels below the logdir */
#define MAX_DIR_ENTRIES 200000  /* entries read from one directory */
#define MAX_RUNS 100000
#define MAX_HOSTS 100000        /* host files in one run */

struct xpv_logdir {
    char *root;                 /* realpath of the logdir (or session run dir) */
    int session;                /* 1: root itself is the only run */
    int min_interval_ms;
    pthread_mutex_t mu;
    xpv_runlist *cur;           /* latest snapshot (one reference held) */
    int64_t last_ms;            /* when `cur` was scanned */
    int scanning;               /* a thread is scanning right now */
    /* Background rescans (xpv_logdir_start_background): requests then
     * only read `cur`, never walk the logdir themselves. */
    int background, stop;
    pthread_t scanner;
    pthread_cond_t cv;
};

/* ==== Small helpers ==================================================== */

static char *path_join(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    char *r = xpv_xmalloc(la + lb + 2);
    memcpy(r, a, la);
    r[la] = '/';
    memcpy(r + la + 1, b, lb + 1);
    return r;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of `dir`'s entries, hidden ones ('.'-prefixed) excluded.
 * Returns NULL (and *n = 0) when the directory cannot be read. */
static char **list_dir(const char *dir, size_t *n) {
    DIR *d = opendir(dir);
    *n = 0;
    if (!d) return NULL;
    size_t cap = 16;
    char **names = xpv_xmalloc(cap * sizeof *names);
    struct dirent *de;
    while ((de = readdir(d)) && *n < MAX_DIR_ENTRIES) {
        if (de->d_name[0] == '.') continue;
        if (*n == cap) {
            cap *= 2;
            names = xpv_xrealloc(names, cap * sizeof *names);
        }
        names[(*n)++] = xpv_xstrdup(de->d_name);
    }
    closedir(d);
    qsort(names, *n, sizeof *names, cmp_name);
    return names;
}

static void free_names(char **names, size_t n) {
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* stat() `path` if it is `root` or below it once symlinks are resolved.
 * Returns 0 with *st filled, or -1 (missing, or escaping the logdir).
 * Every component counts, not only the last: "run/plugins" may be a
 * symlink out of the logdir while "run/plugins/profile" is, at its end, a
 * plain directory; so the whole path is resolved unless the caller's
 * parent was already checked (see stat_child). */
static int stat_inside(const char *root, const char *path, struct stat *st) {
    char *real = realpath(path, NULL);
    if (!real) return -1;
    size_t rl = strlen(root);
    int inside = !strncmp(real, root, rl) &&
                 (real[rl] == '/' || real[rl] == '\0' || !strcmp(root, "/"));
    free(real);
    if (!inside) return -1;
    return stat(path, st);
}

/* stat_inside() for `name` directly in a directory already known to be
 * inside: only a symlink at the end can lead out (one lstat otherwise). */
static int stat_child(const char *root, const char *path, struct stat *st) {
    struct stat lst;
    if (lstat(path, &lst) != 0) return -1;
    if (S_ISLNK(lst.st_mode)) return stat_inside(root, path, st);
    *st = lst;
    return 0;
}

/* Host name of a profile file name, or 0 when it is not one. */
static size_t host_name_len(const char *fname, int *gz) {
    static const char sfx[] = ".xplane.pb", sfx_gz[] = ".xplane.pb.gz";
    size_t n = strlen(fname);
    if (n > sizeof sfx_gz - 1 && !strcmp(fname + n - (sizeof sfx_gz - 1), sfx_gz)) {
        *gz = 1;
        return n - (sizeof sfx_gz - 1);
    }
    if (n > sizeof sfx - 1 && !strcmp(fname + n - (sizeof sfx - 1), sfx)) {
        *gz = 0;
        return n - (sizeof sfx - 1);
    }
    return 0;
}

static int cmp_host(const void *a, const void *b) {
    const xpv_host *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    if (x->kind != y->kind) return x->kind - y->kind;   /* xplane first */
    return x->gz - y->gz;   /* .xplane.pb before .xplane.pb.gz */
}

static void host_release(xpv_host *h) {
    free(h->name);
    free(h->path);
    free(h->rel);
}

/* ==== Scanning ========================================================= */

struct scan {
    const char *root;
    /* Real directories visited so far (dev, ino), to break symlink loops. */
    struct { dev_t dev; ino_t ino; } *seen;
    size_t nseen, capseen;
    xpv_run *runs;
    size_t nruns, capruns;
};

static int seen_before(struct scan *s, const struct stat *st) {
    for (size_t i = 0; i < s->nseen; i++)
        if (s->seen[i].dev == st->st_dev && s->seen[i].ino == st->st_ino) return 1;
    if (s->nseen == s->capseen) {
        s->capseen = s->capseen ? s->capseen * 2 : 64;
        s->seen = xpv_xrealloc(s->seen, s->capseen * sizeof *s->seen);
    }
    s->seen[s->nseen].dev = st->st_dev;
    s->seen[s->nseen].ino = st->st_ino;
    s->nseen++;
    return 0;
}

/* Collect the host files of run directory `dir` (`rel` relative to the
 * logdir) into a new run named `name` (consumed).  Runs without hosts are
 * dropped.  `traces`: 1 = also PyTorch "*.pt.trace.json[.gz]" files,
 * 2 = any "*.json[.gz]" trace (see discovery.h). */
static void add_run(struct scan *s, const char *dir, const char *rel, char *name,
                    int traces) {
    size_t n;
    char **names = list_dir(dir, &n);
    xpv_host *hosts = NULL, *legacy = NULL;
    size_t nh = 0, caph = 0, nl = 0, capl = 0;
    for (size_t i = 0; i < n && nh < MAX_HOSTS && nl < MAX_HOSTS; i++) {
        int gz = 0, kind = 0;
        size_t hl = host_name_len(names[i], &gz);
        /* Older formats (ingest/legacy.h). */
        if (!hl) {
            const xpv_legacy_suffix *ls = xpv_legacy_match(names[i], &hl);
            if (ls) kind = ls->kind;
            else if (traces && xpv_legacy_is_trace_file(names[i], traces == 2, &hl))
                kind = XPV_LEGACY_PYTORCH_TRACE;
            else hl = 0;
        }
        if (!hl) continue;
        char *path = path_join(dir, names[i]);
        struct stat st;
        if (stat_child(s->root, path, &st) != 0 || !S_ISREG(st.st_mode)) {
            free(path);
            continue;
        }
        int is_legacy_file = kind && kind != XPV_LEGACY_TRACE_JSON_GZ &&
                             kind != XPV_LEGACY_PYTORCH_TRACE;
        xpv_host **arr = is_legacy_file ? &legacy : &hosts;
        size_t *cnt = is_legacy_file ? &nl : &nh, *cap = is_legacy_file ? &capl : &caph;
        if (*cnt == *cap) {
            *cap = *cap ? *cap * 2 : 8;
            *arr = xpv_xrealloc(*arr, *cap * sizeof **arr);
        }
        xpv_host *h = &(*arr)[(*cnt)++];
        h->name = xpv_xmalloc(hl + 1);
        memcpy(h->name, names[i], hl);
        h->name[hl] = '\0';
        h->path = path;
        h->rel = rel[0] ? path_join(rel, names[i]) : xpv_xstrdup(names[i]);
        h->size = (uint64_t)st.st_size;
        h->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        h->ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
        h->ino = (uint64_t)st.st_ino;
        h->gz = gz;
        h->kind = kind;
    }
    free_names(names, n);
    if (nh) qsort(hosts, nh, sizeof *hosts, cmp_host);
    if (nl) qsort(legacy, nl, sizeof *legacy, cmp_host);
    /* Drop the .gz twin of a host that also has a plain file (and the
     * trace of a host that has an xplane). */
    size_t k = 0;
    for (size_t i = 0; i < nh; i++) {
        if (k && !strcmp(hosts[k - 1].name, hosts[i].name)) {
            host_release(&hosts[i]);
            continue;
        }
        hosts[k++] = hosts[i];
    }
    nh = k;
    if ((!nh && !nl) || s->nruns >= MAX_RUNS) {
        for (size_t i = 0; i < nh; i++) host_release(&hosts[i]);
        for (size_t i = 0; i < nl; i++) host_release(&legacy[i]);
        free(hosts);
        free(legacy);
        free(name);
        return;
    }
    if (s->nruns == s->capruns) {
        s->capruns = s->capruns ? s->capruns * 2 : 16;
        s->runs = xpv_xrealloc(s->runs, s->capruns * sizeof *s->runs);
    }
    xpv_run *r = &s->runs[s->nruns++];
    r->name = name;
    r->dir = xpv_xstrdup(dir);
    r->hosts = hosts;
    r->nhosts = nh;
    r->legacy = legacy;
    r->nlegacy = nl;
}

/* Whether directory `dir` (base name `base`, parent base name `parent`)
 * holds PyTorch traces: 1 for *.pt.trace.json[.gz], 2 when any *.json[.gz]
 * counts (parent named "pytorch"), 0 when it is no trace run. */
static int trace_dir_kind(const char *dir, const char *parent) {
    int any_json = parent && !strcmp(parent, "pytorch");
    size_t n;
    char **names = list_dir(dir, &n);
    int found = 0;
    for (size_t i = 0; i < n && !found; i++)
        if (xpv_legacy_is_trace_file(names[i], any_json, NULL)) found = 1;
    free_names(names, n);
    return found ? (any_json ? 2 : 1) : 0;
}

/* The profile runs of TB run directory `dir` (`rel` from the logdir, ""
 * for the logdir itself). */
static void scan_profile_dir(struct scan *s, const char *dir, const char *rel) {
    char *pp = path_join(dir, "plugins/profile");
    struct stat st;
    if (stat_inside(s->root, pp, &st) != 0 || !S_ISDIR(st.st_mode)) {
        free(pp);
        return;
    }
    size_t n;
    char **names = list_dir(pp, &n);
    for (size_t i = 0; i < n; i++) {
        char *rd = path_join(pp, names[i]);
        if (stat_child(s->root, rd, &st) == 0 && S_ISDIR(st.st_mode)) {
            char *runrel = rel[0] ? path_join(rel, "plugins/profile")
                                  : xpv_xstrdup("plugins/profile");
            char *hostrel = path_join(runrel, names[i]);
            char *name = rel[0] ? path_join(rel, names[i]) : xpv_xstrdup(names[i]);
            add_run(s, rd, hostrel, name, 0);
            free(runrel);
            free(hostrel);
        }
        free(rd);
    }
    free_names(names, n);
    free(pp);
}

static void walk(struct scan *s, const char *dir, const char *rel, int depth) {
    scan_profile_dir(s, dir, rel);
    /* PyTorch trace folders (not the plugins/profile/<run> dirs, which
     * scan_profile_dir covers). */
    if (rel[0] && !strstr(rel, "plugins/profile")) {
        const char *slash = strrchr(rel, '/');
        char parent[256] = "";
        if (slash) {
            const char *ps = slash;
            while (ps > rel && ps[-1] != '/') ps--;
            snprintf(parent, sizeof parent, "%.*s", (int)(slash - ps), ps);
        } else {
            const char *rb = strrchr(s->root, '/');
            snprintf(parent, sizeof parent, "%s", rb ? rb + 1 : s->root);
        }
        int tk = trace_dir_kind(dir, parent);
        if (tk) add_run(s, dir, rel, xpv_xstrdup(rel), tk);
    }
    if (depth >= MAX_DEPTH) return;
    size_t n;
    char **names = list_dir(dir, &n);
    for (size_t i = 0; i < n; i++) {
        char *sub = path_join(dir, names[i]);
        struct stat st;
        if (stat_child(s->root, sub, &st) == 0 && S_ISDIR(st.st_mode) &&
            !seen_before(s, &st)) {
            char *subrel = rel[0] ? path_join(rel, names[i]) : xpv_xstrdup(names[i]);
            walk(s, sub, subrel, depth + 1);
            free(subrel);
        }
        free(sub);
    }
    free_names(names, n);
}

static int cmp_run_desc(const void *a, const void *b) {
    return strcmp(((const xpv_run *)b)->name, ((const xpv_run *)a)->name);
}

static xpv_runlist *scan_now(const xpv_logdir *ld) {
    struct scan s;
    memset(&s, 0, sizeof s);
    s.root = ld->root;
    if (ld->session) {
        const char *base = strrchr(ld->root, '/');
        base = base && base[1] ? base + 1 : ld->root;
        add_run(&s, ld->root, base, xpv_xstrdup(base), trace_dir_kind(ld->root, NULL));
    } else {
        struct stat st;
        if (stat(ld->root, &st) == 0) {
            seen_before(&s, &st);
            walk(&s, ld->root, "", 0);
        }
    }
    free(s.seen);
    if (s.nruns) qsort(s.runs, s.nruns, sizeof *s.runs, cmp_run_desc);
    xpv_runlist *rl = xpv_xcalloc(1, sizeof *rl);
    rl->runs = s.runs;
    rl->nruns = s.nruns;
    rl->refs = 1;
    return rl;
}

/* ==== Public API ======================================================= */

static xpv_logdir *logdir_new(const char *root, int session, int min_interval_ms,
                              char *err, size_t errlen) {
    char *real = realpath(root, NULL);
    struct stat st;
    if (!real || stat(real, &st) != 0 || !S_ISDIR(st.st_mode) ||
        access(real, R_OK | X_OK) != 0) {
        snprintf(err, errlen, "%s: not a readable directory", root);
        free(real);
        return NULL;
    }
    xpv_logdir *ld = xpv_xcalloc(1, sizeof *ld);
    ld->root = real;
    ld->session = session;
    ld->min_interval_ms = min_interval_ms < 0 ? 0 : min_interval_ms;
    pthread_mutex_init(&ld->mu, NULL);
    pthread_cond_init(&ld->cv, NULL);
    return ld;
}

xpv_logdir *xpv_logdir_new(const char *root, int min_interval_ms,
                           char *err, size_t errlen) {
    return logdir_new(root, 0, min_interval_ms, err, errlen);
}

xpv_logdir *xpv_logdir_new_session(const char *run_dir, char *err, size_t errlen) {
    /* A session is scanned once: its files are what the user pointed at. */
    return logdir_new(run_dir, 1, 1000, err, errlen);
}

/* Whether `name` is a profile file (an xplane or a trace). */
static int is_profile_file(const char *name) {
    int gz;
    return host_name_len(name, &gz) || xpv_legacy_is_trace_file(name, 0, NULL) ||
           (strlen(name) > 14 && !strcmp(name + strlen(name) - 14, ".trace.json.gz"));
}

/* Whether directory `dir` directly holds a profile file. */
static int holds_profiles(const char *dir) {
    size_t n;
    char **names = list_dir(dir, &n);
    int found = 0;
    for (size_t i = 0; i < n && !found; i++) found = is_profile_file(names[i]);
    free_names(names, n);
    return found;
}

/* `path` with its last `up` components removed, into out. */
static int strip_components(const char *path, int up, char *out, size_t cap) {
    size_t n = strlen(path);
    while (up-- > 0) {
        while (n > 1 && path[n - 1] == '/') n--;
        while (n > 0 && path[n - 1] != '/') n--;
    }
    while (n > 1 && path[n - 1] == '/') n--;
    if (!n || n >= cap) return -1;
    memcpy(out, path, n);
    out[n] = 0;
    return 0;
}

static int ends_with_dir(const char *path, const char *tail) {
    size_t n = strlen(path), t = strlen(tail);
    while (n > 1 && path[n - 1] == '/') n--;
    return n > t && path[n - t - 1] == '/' && !strncmp(path + n - t, tail, t);
}

int xpv_logdir_resolve(const char *path, char *dir, size_t cap, int *session, char *err,
                       size_t errlen) {
    if (errlen) err[0] = 0;
    char *real = realpath(path, NULL);
    struct stat st;
    if (!real || stat(real, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, real ? strerror(errno) : "no such file or directory");
        free(real);
        return -1;
    }
    int rc = 0;
    *session = 0;
    if (S_ISREG(st.st_mode)) {
        const char *base = strrchr(real, '/');
        if (!is_profile_file(base ? base + 1 : real)) {
            snprintf(err, errlen, "%s: not a directory or a profile file (.xplane.pb, "
                     ".xplane.pb.gz, .pt.trace.json[.gz])", path);
            rc = -1;
        } else {
            *session = 1;
            rc = strip_components(real, 1, dir, cap);
        }
    } else if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: not a directory or a profile file", path);
        rc = -1;
    } else if (ends_with_dir(real, "plugins/profile")) {
        rc = strip_components(real, 2, dir, cap);      /* the TensorBoard run */
    } else if (ends_with_dir(real, "plugins")) {
        rc = strip_components(real, 1, dir, cap);
    } else if (holds_profiles(real)) {
        /* One profile run (plugins/profile/<run>, a PyTorch trace folder)
         * unless the logdir walk finds runs there (trace folders of a
         * logdir hold their own traces). */
        char *pp = path_join(real, "plugins/profile");
        struct stat pst;
        *session = stat(pp, &pst) != 0;
        free(pp);
        rc = snprintf(dir, cap, "%s", real) < (int)cap ? 0 : -1;
    } else {
        rc = snprintf(dir, cap, "%s", real) < (int)cap ? 0 : -1;
    }
    if (rc && !err[0]) snprintf(err, errlen, "%s: path too long", path);
    free(real);
    return rc;
}

void xpv_logdir_free(xpv_logdir *ld) {
    if (!ld) return;
    if (ld->background) {
        pthread_mutex_lock(&ld->mu);
        ld->stop = 1;
        pthread_cond_broadcast(&ld->cv);
        pthread_mutex_unlock(&ld->mu);
        pthread_join(ld->scanner, NULL);
    }
    pthread_cond_destroy(&ld->cv);
    if (ld->cur) xpv_runlist_release(ld->cur);
    pthread_mutex_destroy(&ld->mu);
    free(ld->root);
    free(ld);
}

const char *xpv_logdir_root(const xpv_logdir *ld) { return ld->root; }

/* Rescan, ld->mu held on entry and on return (released during the scan
 * and while the replaced list is released): the new list becomes ld->cur.
 * Returns it, with a reference for the caller when `ref`. */
static xpv_runlist *rescan_locked(xpv_logdir *ld, int ref) {
    ld->scanning++;
    pthread_mutex_unlock(&ld->mu);
    xpv_runlist *fresh = scan_now(ld);
    pthread_mutex_lock(&ld->mu);
    ld->scanning--;
    xpv_runlist *old = ld->cur;
    ld->cur = fresh;
    ld->last_ms = xpv_now_ms();
    if (ref) __atomic_add_fetch(&fresh->refs, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&ld->mu);
    if (old) xpv_runlist_release(old);
    pthread_mutex_lock(&ld->mu);
    return fresh;
}

xpv_runlist *xpv_logdir_scan(xpv_logdir *ld, int force) {
    pthread_mutex_lock(&ld->mu);
    int64_t now = xpv_now_ms();
    if (ld->cur && !force && (ld->background || now - ld->last_ms < ld->min_interval_ms ||
                              ld->scanning)) {
        /* Fresh enough, or another thread is refreshing it right now. */
        xpv_runlist *rl = ld->cur;
        __atomic_add_fetch(&rl->refs, 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&ld->mu);
        return rl;
    }
    xpv_runlist *fresh = rescan_locked(ld, 1);
    pthread_mutex_unlock(&ld->mu);
    return fresh;
}

/* The scanner thread: one rescan per interval until stopped.  A rescan of
 * a huge logdir costs what it costs, but on this thread, not a request's. */
static void *scanner_main(void *arg) {
    xpv_logdir *ld = arg;
    pthread_mutex_lock(&ld->mu);
    while (!ld->stop) {
        struct timespec ts = xpv_deadline_in_ms(ld->min_interval_ms);
        pthread_cond_timedwait(&ld->cv, &ld->mu, &ts);
        if (ld->stop) break;
        (void)rescan_locked(ld, 0);
    }
    pthread_mutex_unlock(&ld->mu);
    return NULL;
}

int xpv_logdir_start_background(xpv_logdir *ld) {
    if (ld->min_interval_ms <= 0 || ld->background) return 0;
    xpv_runlist_release(xpv_logdir_scan(ld, 1));     /* the first snapshot */
    pthread_mutex_lock(&ld->mu);
    ld->background = pthread_create(&ld->scanner, NULL, scanner_main, ld) == 0;
    int ok = ld->background;
    pthread_mutex_unlock(&ld->mu);
    return ok ? 0 : -1;
}

void xpv_runlist_release(xpv_runlist *rl) {
    if (!rl || __atomic_sub_fetch(&rl->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
    for (size_t i = 0; i < rl->nruns; i++) {
        xpv_run *r = &rl->runs[i];
        for (size_t j = 0; j < r->nhosts; j++) host_release(&r->hosts[j]);
        free(r->hosts);
        for (size_t j = 0; j < r->nlegacy; j++) host_release(&r->legacy[j]);
        free(r->legacy);
        free(r->name);
        free(r->dir);
    }
    free(rl->runs);
    free(rl);
}

const xpv_run *xpv_runlist_find(const xpv_runlist *rl, const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; i < rl->nruns; i++)
        if (!strcmp(rl->runs[i].name, name)) return &rl->runs[i];
    return NULL;
}

const xpv_host *xpv_run_find_host(const xpv_run *run, const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; i < run->nhosts; i++)
        if (!strcmp(run->hosts[i].name, name)) return &run->hosts[i];
    return NULL;
}
