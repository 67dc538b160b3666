/*
 * legacy_serve.c - per-tool files on the normal routes (legacy_serve.h).
 */
#include "legacy_serve.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "legacy.h"

#define ALL_HOSTS_NAME "ALL_HOSTS"

void xpv_legacy_tool_name(const char *tag, char *out, size_t cap) {
    size_t n = tag ? strlen(tag) : 0;
    while (n && (tag[n - 1] == '^' || tag[n - 1] == '@' || tag[n - 1] == '#')) n--;
    if (n == 16 && !strncmp(tag, "tensorflow_stats", 16)) snprintf(out, cap, "framework_op_stats");
    else if (n == 14 && !strncmp(tag, "input_pipeline", 14))
        snprintf(out, cap, "input_pipeline_analyzer");
    else snprintf(out, cap, "%.*s", (int)n, n ? tag : "");
}

static const char *file_tool(const xpv_host *f) {
    for (const xpv_legacy_suffix *s = xpv_legacy_suffixes; s->suffix; s++)
        if ((int)s->kind == f->kind) return s->tool;
    return "";
}

int xpv_legacy_run_has_tool(const xpv_run *run, const char *tool) {
    return xpv_legacy_find(run, tool, NULL) != NULL;
}

const xpv_host *xpv_legacy_find(const xpv_run *run, const char *tool, const char *host) {
    int any = !host || !*host || !strcmp(host, ALL_HOSTS_NAME);
    const xpv_host *best = NULL;
    for (size_t i = 0; i < run->nlegacy; i++) {
        const xpv_host *f = &run->legacy[i];
        if (strcmp(file_tool(f), tool)) continue;
        if (!any && strcmp(f->name, host)) continue;
        /* A host with both .pb and .json: the .pb (lower kind) wins. */
        if (!best || (!strcmp(best->name, f->name) && f->kind < best->kind)) best = f;
    }
    return best;
}

static int list_has(const char *list, const char *name) {
    if (!list) return 0;
    char q[128];
    snprintf(q, sizeof q, "\"%s\"", name);
    return strstr(list, q) != NULL;
}

/* ==== Notes on Chrome-trace hosts ======================================= */

#define NOTE_SLOTS 1024

struct trace_note {
    uint64_t ino, size;
    int64_t mtime_ns;
    unsigned facts;
    int used;
};

static struct trace_note notes[NOTE_SLOTS];
static pthread_mutex_t notes_mu = PTHREAD_MUTEX_INITIALIZER;

static size_t note_slot(uint64_t ino, uint64_t size, int64_t mtime_ns) {
    uint64_t h = ino * 0x9e3779b97f4a7c15ULL ^ size * 0xbf58476d1ce4e5b9ULL ^
                 (uint64_t)mtime_ns * 0x94d049bb133111ebULL;
    return (size_t)((h ^ h >> 29) % NOTE_SLOTS);
}

/* Files whose slots collide share a window of NOTE_PROBE slots from their
 * home slot, so a note is lost only when that many files crowd one window
 * (then run_tools guesses from the kernels, as before the file was read).
 * Direct-mapped, two files in one slot made run_tools answer differently
 * once the second was read (test_chrome_trace_host failed 1 run in ~100). */
#define NOTE_PROBE 16

static int note_is(const struct trace_note *n, uint64_t ino, uint64_t size, int64_t mtime_ns) {
    return n->used && n->ino == ino && n->size == size && n->mtime_ns == mtime_ns;
}

void xpv_legacy_note_trace(uint64_t ino, uint64_t size, int64_t mtime_ns, unsigned facts) {
    size_t home = note_slot(ino, size, mtime_ns), pick = home;
    pthread_mutex_lock(&notes_mu);
    for (size_t k = 0; k < NOTE_PROBE; k++) {
        size_t i = (home + k) % NOTE_SLOTS;
        if (note_is(&notes[i], ino, size, mtime_ns) || !notes[i].used) {
            pick = i;
            break;
        }
    }
    struct trace_note *n = &notes[pick];
    n->ino = ino;
    n->size = size;
    n->mtime_ns = mtime_ns;
    n->facts = facts;
    n->used = 1;
    pthread_mutex_unlock(&notes_mu);
}

/* The noted facts of host file `h` into *facts; 0 when none is noted. */
static int trace_facts(const xpv_host *h, unsigned *facts) {
    size_t home = note_slot(h->ino, h->size, h->mtime_ns);
    int found = 0;
    pthread_mutex_lock(&notes_mu);
    for (size_t k = 0; k < NOTE_PROBE && !found; k++) {
        const struct trace_note *n = &notes[(home + k) % NOTE_SLOTS];
        if (note_is(n, h->ino, h->size, h->mtime_ns)) {
            *facts = n->facts;
            found = 1;
        }
    }
    pthread_mutex_unlock(&notes_mu);
    return found;
}

/* Whether a tool computed from the first host's profile has data for it.
 * A Chrome-trace host has no TF step markers, so only the trace viewer,
 * the kernel table when the trace has kernels, and the op table when it
 * has host ops or kernels (TF traces: TF ops, always). */
static int host_tool_ok(const xpv_run *run, const char *xplane_list, const char *tool) {
    if (!list_has(xplane_list, tool)) return 0;
    const xpv_host *h = run->nhosts ? &run->hosts[0] : NULL;
    if (!h || h->kind == 0) return 1;
    if (!strcmp(tool, "trace_viewer")) return 1;
    unsigned facts = 0;
    int known = h->kind == XPV_LEGACY_PYTORCH_TRACE && trace_facts(h, &facts);
    if (!strcmp(tool, "kernel_stats")) return known ? (facts & XPV_TRACE_KERNELS) != 0 : 1;
    if (!strcmp(tool, "framework_op_stats")) {
        if (h->kind == XPV_LEGACY_TRACE_JSON_GZ) return 1;
        if (known) return (facts & (XPV_TRACE_HOST_OPS | XPV_TRACE_KERNELS)) != 0;
        return list_has(xplane_list, "kernel_stats");
    }
    return 0;
}

void xpv_legacy_tool_list(const xpv_run *run, const xpv_tool *const *tools,
                          const char *xplane_list, xpv_buf *out) {
    int n = 0;
    xpv_buf_putc(out, '[');
    for (const xpv_tool *const *t = tools; *t; t++) {
        if (!host_tool_ok(run, xplane_list, (*t)->name) &&
            !xpv_legacy_run_has_tool(run, (*t)->name))
            continue;
        if (n++) xpv_buf_putc(out, ',');
        xpv_buf_json_cstr(out, (*t)->name);
    }
    for (const xpv_legacy_suffix *s = xpv_legacy_suffixes; s->suffix; s++) {
        int known = 0;
        for (const xpv_tool *const *t = tools; *t; t++)
            if (!strcmp((*t)->name, s->tool)) known = 1;
        if (known || !xpv_legacy_run_has_tool(run, s->tool)) continue;
        /* Once per tool name. */
        int dup = 0;
        for (const xpv_legacy_suffix *p = xpv_legacy_suffixes; p < s; p++)
            if (!strcmp(p->tool, s->tool)) dup = 1;
        if (dup) continue;
        if (n++) xpv_buf_putc(out, ',');
        xpv_buf_json_cstr(out, s->tool);
    }
    xpv_buf_putc(out, ']');
}

void xpv_legacy_host_list(const xpv_run *run, const char *tool, xpv_buf *out) {
    int n = 0;
    const char *last = NULL;
    xpv_buf_putc(out, '[');
    for (size_t i = 0; i < run->nlegacy; i++) {
        const xpv_host *f = &run->legacy[i];
        if (strcmp(file_tool(f), tool) || (last && !strcmp(last, f->name))) continue;
        last = f->name;
        if (n++) xpv_buf_putc(out, ',');
        xpv_buf_puts(out, "{\"hostname\":");
        xpv_buf_json_cstr(out, f->name);
        xpv_buf_putc(out, '}');
    }
    xpv_buf_putc(out, ']');
}

/* The bytes of `f` (malloc'd, the caller frees them), or NULL with err. */
static char *read_file(const xpv_host *f, const xpv_load_limits *lim, size_t *lenp,
                       xpv_err *err) {
    uint64_t cap = lim && lim->max_file ? lim->max_file : XPV_DEFAULT_MAX_FILE;
    snprintf(err->file, sizeof err->file, "%s", f->rel);
    /* Confined like the xplane loader: no symlink swapped in after the
     * scan is followed out of the logdir. */
    int fd = xpv_open_confined(lim ? lim->root : NULL, f->path, f->rel, err);
    if (fd < 0) return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        xpv_err_set(err, XPV_E_BAD_PROFILE, "%s: not a regular file", f->rel);
        return NULL;
    }
    if ((uint64_t)st.st_size > cap) {
        close(fd);
        xpv_err_set(err, XPV_E_TOO_LARGE, "%s: file is %llu bytes, over the %llu-byte limit", f->rel,
                    (unsigned long long)st.st_size, (unsigned long long)cap);
        return NULL;
    }
    size_t len = (size_t)st.st_size, got = 0;
    char *buf = xpv_xmalloc(len ? len : 1);
    while (got < len) {
        ssize_t r = read(fd, buf + got, len - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (got != len) {
        free(buf);
        xpv_err_set(err, XPV_E_BAD_PROFILE, "%s: incomplete read (file changed?)", f->rel);
        return NULL;
    }
    *lenp = len;
    return buf;
}

int xpv_legacy_serve(const xpv_host *f, const xpv_load_limits *lim, long csv_table,
                     xpv_buf *out, xpv_err *err) {
    size_t len;
    char *buf = read_file(f, lim, &len, err);
    if (!buf) return -1;
    xpv_err te;
    memset(&te, 0, sizeof te);
    size_t max_inflated = lim ? (size_t)lim->max_inflated : 0;
    int rc;
    if (csv_table < 0) {
        rc = xpv_legacy_render((enum xpv_legacy_kind)f->kind, buf, len, max_inflated, out, &te);
    } else {
        xpv_dt_doc doc;
        xpv_dt_doc_init(&doc, 1);
        rc = xpv_legacy_tables((enum xpv_legacy_kind)f->kind, buf, len, max_inflated, &doc, &te);
        if (rc == 0 && xpv_dt_doc_write_csv(&doc, (size_t)csv_table, out, err) != 0) {
            xpv_dt_doc_release(&doc);
            free(buf);
            return -1;   /* no such table: not the file's fault */
        }
        xpv_dt_doc_release(&doc);
    }
    free(buf);
    if (rc) xpv_err_set(err, te.status ? te.status : XPV_E_BAD_PROFILE, "%s: %s", f->rel, te.msg);
    return rc;
}
