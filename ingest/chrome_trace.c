/*
 * chrome_trace.c - Chrome trace-event JSON -> XSpace bytes (see
 * chrome_trace.h).
 *
 * Two parts, over the pull tokenizer of json_in.h: the event collector (one compact record per event, stats pre-encoded in
 * XStat wire form into one blob), and the XSpace writer that sorts each
 * line's events and emits planes.
 */
#include "chrome_trace.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "checked.h"
#include "json_in.h"
#include "instream.h"
#include "collections.h"
#include "wire_write.h"

#define JIN_CHUNK (256 * 1024)
#define MAX_EVENTS (UINT32_MAX - 1)
#define LINE_ID_BASE 1000000000000LL  /* ids for lines with no numeric tid */
#define FLOW_GPU_LAUNCH 9ULL      /* ContextType kGpuLaunch */
#define MAX_INTERN_LEN 512        /* longer string args stay inline */
#define MAX_INTERN_BYTES (4u << 20) /* interned value text, all planes share */

/* ==== Numbers ============================================================ */

int xpv_ct_parse_us(const char *s, size_t n, int64_t *ns) {
    size_t i = 0;
    int neg = 0;
    if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
    if (i == n) return 0;
    uint64_t ip = 0;
    size_t digits = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
        if (ip > (UINT64_MAX - 9) / 10) return 0;
        ip = ip * 10 + (uint64_t)(s[i++] - '0');
        digits++;
    }
    uint64_t frac = 0;
    int fd = 0, round_up = 0;
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            if (fd < 3) frac = frac * 10 + (uint64_t)(s[i] - '0');
            else if (fd == 3) round_up = s[i] >= '5';
            fd++;
            digits++;
            i++;
        }
    }
    if (!digits) return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        char tmp[MAX_NUM_TEXT];
        if (n >= sizeof tmp) return 0;
        memcpy(tmp, s, n);
        tmp[n] = 0;
        char *end;
        double d = strtod(tmp, &end);
        if (end != tmp + n || !isfinite(d)) return 0;
        d *= 1000.0;
        if (d >= 9.2e18 || d <= -9.2e18) return 0;
        *ns = llround(d);
        return 1;
    }
    if (i != n) return 0;
    for (int k = fd; k < 3; k++) frac *= 10;
    if (ip > (uint64_t)(INT64_MAX / 1000) - 1) return 0;
    int64_t v = (int64_t)(ip * 1000 + frac + (uint64_t)round_up);
    *ns = neg ? -v : v;
    return 1;
}

/* ==== XStat encoding (base/wire_write.h) ================================ */

/* XStat kinds as written to the blob. */
enum { SV_INT, SV_UINT, SV_DBL, SV_STR, SV_REF };

/* One XStat as length-delimited field `field` (XEvent 4, XPlane 6) of `b`.
 * The value is always written (it is a oneof member). */
static void put_stat(xpv_buf *b, unsigned field, uint32_t meta, int kind, int64_t i,
                     double d, const char *s, size_t n) {
    size_t inner = meta ? 1 + wire_varint_size(meta) : 0;
    switch (kind) {
    case SV_INT: case SV_UINT: case SV_REF: inner += 1 + wire_varint_size((uint64_t)i); break;
    case SV_DBL: inner += 9; break;
    default: inner += 1 + wire_varint_size(n) + n; break;
    }
    wire_put_tag(b, field, 2);
    wire_put_varint(b, inner);
    wire_put_int(b, 1, meta);
    switch (kind) {
    case SV_INT: wire_put_tag(b, 4, 0); wire_put_varint(b, (uint64_t)i); break;
    case SV_UINT: wire_put_tag(b, 3, 0); wire_put_varint(b, (uint64_t)i); break;
    case SV_REF: wire_put_tag(b, 7, 0); wire_put_varint(b, (uint64_t)i); break;
    case SV_DBL: wire_put_double(b, 2, d); break;
    default: wire_put_bytes(b, 5, s, n); break;
    }
}

/* ==== Collector ========================================================== */

typedef struct ctev {
    int64_t ts, dur;              /* ns */
    uint64_t st_off;              /* stats (XEvent field-4 records) in blob */
    int64_t ext;                  /* External id (GPU events), 0 = none */
    int64_t corr;                 /* correlation, 0 = none */
    uint32_t st_len;
    uint32_t line;
    uint32_t meta;                /* event metadata id (1-based) */
    uint8_t side;                 /* 1 host launch, 2 device event */
} ctev;

typedef struct ctline {
    const char *pid, *tid;        /* text forms (arena) */
    int64_t device;               /* args.device of a GPU event, -1 = none */
    uint8_t gpu;                  /* holds GPU events */
    uint8_t annot;                /* gpu_user_annotation line */
    uint32_t nev;
    /* Assigned when writing: */
    uint32_t plane;
    int64_t id;
    const char *name;
} ctline;

typedef struct devprop {
    int64_t id, mem, major, minor, sms;
    int amd, has_major;
    const char *name;
} devprop;

typedef struct arg {
    uint32_t key_off, key_len;
    int kind;                     /* SV_*; -1 = skip (null) */
    int64_t i;
    double d;
    uint32_t s_off, s_len;        /* in ev text (strings, raw JSON) */
} arg;

typedef struct ct {
    jin in;
    xpv_arena arena;              /* names */
    xpv_buf blob;                 /* encoded event stats */
    ctev *ev;
    size_t nev, capev;
    ctline *lines;
    size_t nlines, caplines;
    strmap line_ix;                 /* "pid\x01tid[\x01a]" -> line + 1 */
    strmap ev_names;                /* event name -> meta id */
    const char **ev_name_tab;     /* meta id -> name */
    uint32_t *ev_name_len;
    size_t capnames;
    strmap stat_names;              /* stat name -> stat meta id */
    const char **stat_tab;
    uint32_t *stat_len;
    size_t capstats;
    strmap proc_names;              /* pid -> index into pnames + 1 */
    strmap thread_names;            /* pid\x01tid -> index + 1 */
    const char **pnames;          /* names of processes / threads */
    size_t npnames, cappnames;
    i64map ext_op;                  /* External id of cpu_op -> meta id */
    i64map corr_side;               /* correlation -> side bits */
    devprop *dev;
    size_t ndev, capdev;
    xpv_ct_summary sum;
    /* Per-event scratch. */
    xpv_buf text;
    arg *args;
    size_t nargs, capargs;
    /* Well-known stat ids. */
    uint32_t sid_cat, sid_corr, sid_kd, sid_tf_op, sid_flow;
    size_t interned_bytes;        /* text of arg values made ref stats */
} ct;

static uint32_t stat_id(ct *c, const char *k, size_t n) {
    int found;
    strmap_ent *e = strmap_put(&c->stat_names, &c->arena, k, n, &found);
    if (!found) {
        if (c->stat_names.n >= c->capstats) {
            c->capstats = c->capstats ? c->capstats * 2 : 64;
            c->stat_tab = xpv_xrealloc(c->stat_tab, (c->capstats + 1) * sizeof *c->stat_tab);
            c->stat_len = xpv_xrealloc(c->stat_len, (c->capstats + 1) * sizeof *c->stat_len);
        }
        e->val = (uint32_t)c->stat_names.n;
        c->stat_tab[e->val] = e->k;
        c->stat_len[e->val] = e->klen;
    }
    return e->val;
}

/* String arg values are stored once, as stat metadata named by the value,
 * and events refer to them (XStat.ref_value, as XProf's collectors do):
 * Kineto repeats "Input Dims", "Input type", ... on every op, so this
 * shrinks both the collected stats and the XSpace.  Long values and, past
 * a cap on the table, new values stay inline: the table is written into
 * every plane. */
static uint32_t intern(ct *c, const char *v, size_t n) {
    size_t before = c->stat_names.n;
    uint32_t id = stat_id(c, v, n);
    if (c->stat_names.n != before) c->interned_bytes += n + 8;
    return id;
}

static uint32_t name_id(ct *c, const char *k, size_t n) {
    int found;
    strmap_ent *e = strmap_put(&c->ev_names, &c->arena, k, n, &found);
    if (!found) {
        if (c->ev_names.n >= c->capnames) {
            c->capnames = c->capnames ? c->capnames * 2 : 256;
            c->ev_name_tab = xpv_xrealloc(c->ev_name_tab,
                                          (c->capnames + 1) * sizeof *c->ev_name_tab);
            c->ev_name_len = xpv_xrealloc(c->ev_name_len,
                                          (c->capnames + 1) * sizeof *c->ev_name_len);
        }
        e->val = (uint32_t)c->ev_names.n;
        c->ev_name_tab[e->val] = e->k;
        c->ev_name_len[e->val] = e->klen;
    }
    return e->val;
}

static void name_map_set(ct *c, strmap *m, const char *k, size_t n, const char *v, size_t vn) {
    int found;
    strmap_ent *e = strmap_put(m, &c->arena, k, n, &found);
    if (found) return;                       /* first name wins */
    if (c->npnames == c->cappnames) {
        c->cappnames = c->cappnames ? c->cappnames * 2 : 32;
        c->pnames = xpv_xrealloc(c->pnames, c->cappnames * sizeof *c->pnames);
    }
    c->pnames[c->npnames++] = xpv_arena_strndup(&c->arena, v, vn);
    e->val = (uint32_t)c->npnames;
}

static const char *name_map_get(const ct *c, const strmap *m, const char *k, size_t n) {
    const strmap_ent *e = strmap_get(m, k, n);
    return e ? c->pnames[e->val - 1] : NULL;
}

/* Fields of the event being parsed (offsets into c->text). */
typedef struct evf {
    char ph;
    int has_ts, has_dur;
    int64_t ts, dur;
    uint32_t name_off, name_len, cat_off, cat_len;
    uint32_t pid_off, pid_len, tid_off, tid_len;
    int has_name, has_cat, has_pid, has_tid;
    int args_name;                /* index of args.name (M events), -1 */
} evf;

static const char *T(const ct *c, uint32_t off) { return c->text.data + off; }

static int key_is(const char *k, size_t n, const char *lit) {
    return strlen(lit) == n && !memcmp(k, lit, n);
}

/* Parse a numeric or string value into text (pid/tid/id). */
static int read_scalar_text(ct *c, uint32_t *off, uint32_t *len) {
    jin *j = &c->in;
    int ch = jws(j);
    *off = (uint32_t)c->text.len;
    if (ch == '"') {
        if (jstring(j, &c->text, 0)) return -1;
    } else if (ch == '{' || ch == '[') {
        if (jskip(j, &c->text)) return -1;
    } else {
        char tok[MAX_NUM_TEXT];
        int n = jbare(j, tok, sizeof tok);
        if (n < 0) return -1;
        if (!strcmp(tok, "null")) n = 0;
        xpv_buf_add(&c->text, tok, (size_t)n);
    }
    *len = (uint32_t)(c->text.len - *off);
    return 0;
}

/* A ts/dur value: number or numeric string, in µs. */
static int read_time(ct *c, int64_t *ns, int *has) {
    uint32_t off, len;
    if (read_scalar_text(c, &off, &len)) return -1;
    *has = len && xpv_ct_parse_us(T(c, off), len, ns);
    return 0;
}

/* Classify a bare token as an arg value. */
static void bare_value(ct *c, arg *a, const char *tok, size_t n) {
    if (!strcmp(tok, "null")) {
        a->kind = -1;
        return;
    }
    if (!strcmp(tok, "true") || !strcmp(tok, "false")) {
        a->kind = SV_INT;
        a->i = tok[0] == 't';
        return;
    }
    int is_int = n > 0;
    for (size_t i = 0; i < n; i++)
        if (!((tok[i] >= '0' && tok[i] <= '9') || (i == 0 && tok[i] == '-'))) is_int = 0;
    if (is_int && !(n == 1 && tok[0] == '-')) {
        errno = 0;
        long long v = strtoll(tok, NULL, 10);
        if (!errno) {
            a->kind = SV_INT;
            a->i = v;
            return;
        }
        if (tok[0] != '-') {
            errno = 0;
            unsigned long long u = strtoull(tok, NULL, 10);
            if (!errno) {
                a->kind = SV_UINT;
                a->i = (int64_t)u;
                return;
            }
        }
    }
    char *end;
    double d = strtod(tok, &end);
    if (end == tok + n && n) {
        a->kind = SV_DBL;
        a->d = d;
        return;
    }
    /* Lenient: an unquoted word (N/A) is kept as a string. */
    a->kind = SV_STR;
    a->s_off = (uint32_t)c->text.len;
    xpv_buf_add(&c->text, tok, n);
    a->s_len = (uint32_t)n;
}

static int parse_args(ct *c) {
    jin *j = &c->in;
    if (jws(j) != '{') return jskip(j, NULL);
    j->pos++;
    if (jws(j) == '}') {
        j->pos++;
        return 0;
    }
    for (;;) {
        if (c->nargs == c->capargs) {
            c->capargs = c->capargs ? c->capargs * 2 : 32;
            c->args = xpv_xrealloc(c->args, c->capargs * sizeof *c->args);
        }
        arg *a = &c->args[c->nargs];
        memset(a, 0, sizeof *a);
        a->key_off = (uint32_t)c->text.len;
        if (jstring(j, &c->text, 0)) return -1;
        a->key_len = (uint32_t)(c->text.len - a->key_off);
        if (jexpect(j, ':', "expected ':' in args")) return -1;
        int ch = jws(j);
        if (ch == '"') {
            a->kind = SV_STR;
            a->s_off = (uint32_t)c->text.len;
            if (jstring(j, &c->text, 0)) return -1;
            a->s_len = (uint32_t)(c->text.len - a->s_off);
        } else if (ch == '{' || ch == '[') {
            a->kind = SV_STR;
            a->s_off = (uint32_t)c->text.len;
            if (jskip(j, &c->text)) return -1;
            a->s_len = (uint32_t)(c->text.len - a->s_off);
        } else {
            char tok[MAX_NUM_TEXT];
            int n = jbare(j, tok, sizeof tok);
            if (n < 0) return -1;
            bare_value(c, a, tok, (size_t)n);
        }
        c->nargs++;
        int more = jnext(j, '}');
        if (more < 0) return -1;
        if (!more) return 0;
    }
}

static const arg *find_arg(const ct *c, const char *key) {
    for (size_t i = 0; i < c->nargs; i++)
        if (key_is(T(c, c->args[i].key_off), c->args[i].key_len, key)) return &c->args[i];
    return NULL;
}

static int arg_int(const ct *c, const arg *a, int64_t *v) {
    if (!a) return 0;
    if (a->kind == SV_INT || a->kind == SV_UINT) {
        *v = a->i;
        return 1;
    }
    if (a->kind == SV_DBL) {
        if (!(a->d > -9e18 && a->d < 9e18)) return 0;
        *v = (int64_t)llround(a->d);
        return 1;
    }
    if (a->kind == SV_STR && a->s_len && a->s_len < 24) {
        char tmp[24];
        memcpy(tmp, T(c, a->s_off), a->s_len);
        tmp[a->s_len] = 0;
        char *end;
        errno = 0;
        long long x = strtoll(tmp, &end, 10);
        if (!errno && *end == 0) {
            *v = x;
            return 1;
        }
    }
    return 0;
}

/* "[x,y,z]" (or a lone number) -> dims, missing ones 1. */
static void arg_dims(const ct *c, const arg *a, uint32_t d[3]) {
    d[0] = d[1] = d[2] = 1;
    if (!a) return;
    if (a->kind == SV_INT || a->kind == SV_UINT) {
        d[0] = (uint32_t)a->i;
        return;
    }
    if (a->kind != SV_STR) return;
    const char *p = T(c, a->s_off), *e = p + a->s_len;
    int k = 0;
    while (p < e && k < 3) {
        while (p < e && (*p < '0' || *p > '9')) p++;
        if (p == e) break;
        uint64_t v = 0;
        while (p < e && *p >= '0' && *p <= '9') {
            if (v < UINT32_MAX) v = v * 10 + (uint64_t)(*p - '0');
            p++;
        }
        d[k++] = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
    }
}

static int cat_is(const char *s, size_t n, const char *lit) {
    size_t l = strlen(lit);
    if (l != n) return 0;
    for (size_t i = 0; i < n; i++) {
        char a = s[i], b = lit[i];
        if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
        if (a != b) return 0;
    }
    return 1;
}

/* TF traces write integer ids as strings; these keys become ints. */
static int int_string_key(const char *k, size_t n) {
    static const char *const keys[] = {"group_id", "iter_num", "step_num", "id",
                                       "parent_id", "_r", "correlation_id",
                                       "tracing_count", "element_id", "_p", "_c"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (key_is(k, n, keys[i])) return 1;
    return 0;
}

static void add_line_name(ct *c, ctline *ln, const char *pid, size_t pn, const char *tid,
                          size_t tn) {
    ln->pid = xpv_arena_strndup(&c->arena, pid, pn);
    ln->tid = xpv_arena_strndup(&c->arena, tid, tn);
}

/* Appends the key pid \x01 tid [\x01 a] at the end of the scratch text and
 * returns its offset.  pid and tid live in that same buffer, so room is
 * made first: appending could otherwise move the bytes being copied. */
static size_t line_key(ct *c, const evf *f, int annot) {
    xpv_buf *t = &c->text;
    size_t off = t->len;
    xpv_buf_reserve(t, (size_t)f->pid_len + f->tid_len + 3);
    xpv_buf_add(t, T(c, f->pid_off), f->pid_len);
    xpv_buf_putc(t, '\x01');
    xpv_buf_add(t, T(c, f->tid_off), f->tid_len);
    if (annot) xpv_buf_add(t, "\x01" "a", 2);
    return off;
}

static uint32_t line_of(ct *c, const evf *f, int annot) {
    xpv_buf *t = &c->text;
    size_t off = line_key(c, f, annot);
    int found;
    strmap_ent *e = strmap_put(&c->line_ix, &c->arena, t->data + off, t->len - off, &found);
    t->len = off;
    if (found) return e->val - 1;
    if (c->nlines == c->caplines) {
        c->caplines = c->caplines ? c->caplines * 2 : 64;
        c->lines = xpv_xrealloc(c->lines, c->caplines * sizeof *c->lines);
    }
    ctline *ln = &c->lines[c->nlines];
    memset(ln, 0, sizeof *ln);
    ln->device = -1;
    ln->annot = (uint8_t)annot;
    add_line_name(c, ln, T(c, f->pid_off), f->pid_len, T(c, f->tid_off), f->tid_len);
    e->val = (uint32_t)++c->nlines;
    return e->val - 1;
}

static void handle_metadata(ct *c, const evf *f) {
    c->sum.metadata++;
    if (!f->has_name || f->args_name < 0) return;
    const arg *a = &c->args[f->args_name];
    if (a->kind != SV_STR) return;
    const char *nm = T(c, f->name_off);
    if (key_is(nm, f->name_len, "process_name") && f->has_pid) {
        name_map_set(c, &c->proc_names, T(c, f->pid_off), f->pid_len, T(c, a->s_off),
                     a->s_len);
    } else if (key_is(nm, f->name_len, "thread_name") && f->has_pid && f->has_tid) {
        size_t off = line_key(c, f, 0);
        /* Kineto pads stream names ("stream 7 "): trim. */
        uint32_t vn = a->s_len;
        while (vn && T(c, a->s_off)[vn - 1] == ' ') vn--;
        name_map_set(c, &c->thread_names, c->text.data + off, c->text.len - off,
                     T(c, a->s_off), vn);
        c->text.len = off;
    }
}

static void handle_event(ct *c, evf *f) {
    if (c->nev >= MAX_EVENTS) return;
    if (f->ph == 'X') c->sum.complete++;
    else c->sum.instants++;
    if (!f->has_ts) {
        f->ts = 0;
    }
    if (!f->has_dur || f->ph != 'X' || f->dur < 0) f->dur = 0;
    static const char empty[] = "";
    if (!f->has_pid) { f->pid_off = (uint32_t)c->text.len; f->pid_len = 0; }
    if (!f->has_tid) { f->tid_off = (uint32_t)c->text.len; f->tid_len = 0; }
    const char *cat = f->has_cat ? T(c, f->cat_off) : empty;
    size_t catn = f->has_cat ? f->cat_len : 0;
    int kernel = cat_is(cat, catn, "kernel");
    int gpu = kernel || cat_is(cat, catn, "gpu_memcpy") || cat_is(cat, catn, "gpu_memset") ||
              cat_is(cat, catn, "memcpy") || cat_is(cat, catn, "memset");
    int annot = cat_is(cat, catn, "gpu_user_annotation");
    int cpu_op = cat_is(cat, catn, "cpu_op") || cat_is(cat, catn, "operator");
    int runtime = cat_is(cat, catn, "cuda_runtime") || cat_is(cat, catn, "runtime") ||
                  cat_is(cat, catn, "cuda_driver");
    if (cpu_op) c->sum.host_ops++;
    if (kernel) c->sum.kernels++;

    uint32_t li = line_of(c, f, annot);
    /* line_of appends to the scratch text, which may move it: `cat`
     * pointed into it (use-after-free found by the fuzzing campaign). */
    cat = f->has_cat ? T(c, f->cat_off) : empty;
    ctline *ln = &c->lines[li];
    if (gpu || annot) ln->gpu = 1;
    ln->nev++;

    if (c->nev == c->capev) {
        c->capev = c->capev ? c->capev * 2 : 4096;
        c->ev = xpv_xrealloc(c->ev, c->capev * sizeof *c->ev);
    }
    ctev *e = &c->ev[c->nev++];
    memset(e, 0, sizeof *e);
    e->ts = f->ts;
    e->dur = f->dur;
    e->line = li;
    e->meta = name_id(c, f->has_name ? T(c, f->name_off) : empty,
                      f->has_name ? f->name_len : 0);
    e->st_off = c->blob.len;

    xpv_buf *b = &c->blob;
    if (catn) {
        uint32_t ref = stat_id(c, cat, catn);
        put_stat(b, 4, c->sid_cat, SV_REF, ref, 0, NULL, 0);
    }
    int64_t v;
    for (size_t i = 0; i < c->nargs; i++) {
        const arg *a = &c->args[i];
        if (a->kind < 0) continue;
        const char *k = T(c, a->key_off);
        size_t kn = a->key_len;
        uint32_t sid;
        if (key_is(k, kn, "correlation")) sid = c->sid_corr;
        else sid = stat_id(c, k, kn);
        if (a->kind == SV_STR && int_string_key(k, kn) && arg_int(c, a, &v))
            put_stat(b, 4, sid, SV_INT, v, 0, NULL, 0);
        else if (a->kind == SV_STR && a->s_len <= MAX_INTERN_LEN &&
                 c->interned_bytes < MAX_INTERN_BYTES)
            put_stat(b, 4, sid, SV_REF, intern(c, T(c, a->s_off), a->s_len), 0, NULL, 0);
        else
            put_stat(b, 4, sid, a->kind, a->i, a->d, a->kind == SV_STR ? T(c, a->s_off) : NULL,
                     a->s_len);
    }
    if (kernel) {
        int64_t regs = 0, shm = 0, occ_i = 0;
        const arg *occ = find_arg(c, "est. achieved occupancy %");
        uint32_t grid[3], block[3];
        arg_int(c, find_arg(c, "registers per thread"), &regs);
        arg_int(c, find_arg(c, "shared memory"), &shm);
        arg_dims(c, find_arg(c, "grid"), grid);
        arg_dims(c, find_arg(c, "block"), block);
        char kd[200];
        int n = snprintf(kd, sizeof kd,
                         "regs:%lld static_shared:%lld dynamic_shared:0 grid:%u,%u,%u "
                         "block:%u,%u,%u",
                         (long long)regs, (long long)shm, grid[0], grid[1], grid[2],
                         block[0], block[1], block[2]);
        if (occ && occ->kind == SV_DBL)
            n += snprintf(kd + n, sizeof kd - (size_t)n, " occ_pct:%g", occ->d);
        else if (arg_int(c, occ, &occ_i))
            n += snprintf(kd + n, sizeof kd - (size_t)n, " occ_pct:%lld", (long long)occ_i);
        put_stat(b, 4, c->sid_kd, SV_STR, 0, 0, kd, (size_t)n);
    }
    e->st_len = (uint32_t)(b->len - e->st_off);

    int64_t ext = 0;
    int has_ext = arg_int(c, find_arg(c, "External id"), &ext) ||
                  arg_int(c, find_arg(c, "external id"), &ext);
    if (gpu) {
        if (has_ext && ext) e->ext = ext;
        if (arg_int(c, find_arg(c, "device"), &v) && ln->device < 0) ln->device = v;
    } else if (cpu_op && has_ext && ext) {
        *i64map_slot(&c->ext_op, ext) = e->meta;
    }
    if ((gpu || runtime) && arg_int(c, find_arg(c, "correlation"), &v) && v) {
        e->corr = v;
        e->side = gpu ? 2 : 1;
        *i64map_slot(&c->corr_side, v) |= e->side;
    }
}

/* One traceEvents element (the '{' is next). */
static int parse_event(ct *c) {
    jin *j = &c->in;
    evf f;
    memset(&f, 0, sizeof f);
    f.args_name = -1;
    c->text.len = 0;
    c->nargs = 0;
    j->pos++;   /* '{' */
    int empty = 1;
    if (jws(j) == '}') {
        j->pos++;
    } else {
        char key[32];
        for (;;) {
            /* Keys of interest are short; longer ones are skipped. */
            size_t koff = c->text.len;
            if (jstring(j, &c->text, 0)) return -1;
            size_t kn = c->text.len - koff;
            if (kn < sizeof key) {
                if (kn) memcpy(key, c->text.data + koff, kn);
            } else {
                kn = 0;
            }
            key[kn] = 0;
            c->text.len = koff;
            if (jexpect(j, ':', "expected ':' in event")) return -1;
            empty = 0;
            uint32_t off, len;
            int rc = 0;
            if (!strcmp(key, "ph")) {
                rc = read_scalar_text(c, &off, &len);
                if (!rc) f.ph = len ? T(c, off)[0] : 0;
            } else if (!strcmp(key, "name")) {
                rc = read_scalar_text(c, &f.name_off, &f.name_len);
                f.has_name = 1;
            } else if (!strcmp(key, "cat")) {
                rc = read_scalar_text(c, &f.cat_off, &f.cat_len);
                f.has_cat = 1;
            } else if (!strcmp(key, "pid")) {
                rc = read_scalar_text(c, &f.pid_off, &f.pid_len);
                f.has_pid = 1;
            } else if (!strcmp(key, "tid")) {
                rc = read_scalar_text(c, &f.tid_off, &f.tid_len);
                f.has_tid = 1;
            } else if (!strcmp(key, "ts")) {
                rc = read_time(c, &f.ts, &f.has_ts);
            } else if (!strcmp(key, "dur")) {
                rc = read_time(c, &f.dur, &f.has_dur);
            } else if (!strcmp(key, "args")) {
                rc = parse_args(c);
            } else {
                rc = jskip(j, NULL);
            }
            if (rc) return -1;
            int more = jnext(j, '}');
            if (more < 0) return -1;
            if (!more) break;
        }
    }
    if (empty) return 0;   /* the trailing {} of TF traces */
    for (size_t i = 0; i < c->nargs; i++)
        if (key_is(T(c, c->args[i].key_off), c->args[i].key_len, "name")) f.args_name = (int)i;
    switch (f.ph) {
    case 'X': case 'i': case 'I':
        handle_event(c, &f);
        break;
    case 'M':
        handle_metadata(c, &f);
        break;
    case 's': case 't': case 'f':
        c->sum.flows++;
        break;
    default:
        c->sum.skipped++;
        break;
    }
    return 0;
}

static int parse_events(ct *c) {
    jin *j = &c->in;
    if (jexpect(j, '[', "traceEvents is not an array")) return -1;
    if (jws(j) == ']') {
        j->pos++;
        return 0;
    }
    for (;;) {
        int ch = jws(j);
        if (ch < 0) {
            c->sum.truncated = 1;
            return 0;
        }
        int rc = ch == '{' ? parse_event(c) : jskip(j, NULL);
        if (rc) {
            /* Input that simply stops (a trace still being written, a
             * truncated copy) keeps the events read so far. */
            if (c->in.eof && c->in.err->status == 422 && c->nev) {
                memset(c->in.err, 0, sizeof *c->in.err);
                c->sum.truncated = 1;
                return 0;
            }
            return -1;
        }
        int more = jnext(j, ']');
        if (more < 0) {
            if (c->in.eof && c->nev) {
                memset(c->in.err, 0, sizeof *c->in.err);
                c->sum.truncated = 1;
                return 0;
            }
            return -1;
        }
        if (!more) return 0;
    }
}

static int parse_device_props(ct *c) {
    jin *j = &c->in;
    if (jws(j) != '[') return jskip(j, NULL);
    j->pos++;
    if (jws(j) == ']') {
        j->pos++;
        return 0;
    }
    for (;;) {
        if (jws(j) != '{') {
            if (jskip(j, NULL)) return -1;
        } else {
            c->text.len = 0;
            c->nargs = 0;
            if (parse_args(c)) return -1;
            if (c->ndev == c->capdev) {
                c->capdev = c->capdev ? c->capdev * 2 : 8;
                c->dev = xpv_xrealloc(c->dev, c->capdev * sizeof *c->dev);
            }
            devprop *d = &c->dev[c->ndev++];
            memset(d, 0, sizeof *d);
            arg_int(c, find_arg(c, "id"), &d->id);
            arg_int(c, find_arg(c, "totalGlobalMem"), &d->mem);
            d->has_major = arg_int(c, find_arg(c, "computeMajor"), &d->major);
            arg_int(c, find_arg(c, "computeMinor"), &d->minor);
            arg_int(c, find_arg(c, "numSms"), &d->sms);
            const arg *nm = find_arg(c, "name");
            if (nm && nm->kind == SV_STR)
                d->name = xpv_arena_strndup(&c->arena, T(c, nm->s_off), nm->s_len);
            d->amd = find_arg(c, "maxSharedMemoryPerMultiProcessor") != NULL ||
                     (d->name && (strstr(d->name, "AMD") || strstr(d->name, "Radeon")));
        }
        int more = jnext(j, ']');
        if (more < 0) return -1;
        if (!more) return 0;
    }
}

static int parse_top(ct *c) {
    jin *j = &c->in;
    int ch = jws(j);
    if (ch == '[') {
        c->sum.bare_array = 1;
        return parse_events(c);
    }
    if (ch != '{') return jfail(j, XPV_E_BAD_PROFILE, "not a trace: expected '{' or '['");
    j->pos++;
    if (jws(j) == '}') {
        j->pos++;
        return 0;
    }
    for (;;) {
        c->text.len = 0;
        if (jstring(j, &c->text, 0)) return -1;
        char key[32];
        size_t kn = c->text.len < sizeof key ? c->text.len : 0;
        if (kn) memcpy(key, c->text.data, kn); /* data is NULL for "" */
        key[kn] = 0;
        if (jexpect(j, ':', "expected ':'")) return -1;
        int rc;
        if (!strcmp(key, "traceEvents")) {
            rc = parse_events(c);
            if (!rc && c->sum.truncated) return 0;
        } else if (!strcmp(key, "deviceProperties")) {
            rc = parse_device_props(c);
        } else if (!strcmp(key, "displayTimeUnit") && jws(j) == '"') {
            c->text.len = 0;
            rc = jstring(j, &c->text, 0);
            size_t n = c->text.len < sizeof c->sum.display_time_unit - 1
                           ? c->text.len : sizeof c->sum.display_time_unit - 1;
            if (n) memcpy(c->sum.display_time_unit, c->text.data, n);
            c->sum.display_time_unit[n] = 0;
        } else {
            rc = jskip(j, NULL);
        }
        if (rc) return -1;
        int more = jnext(j, '}');
        if (more < 0) return -1;
        if (!more) return 0;
    }
}

/* ==== Writer ============================================================= */

typedef struct plane_out {
    char name[64];
    int64_t id;
    int64_t device;               /* GPU ordinal, -1 for other planes */
    int kineto;                   /* a GPU plane of cat-typed (Kineto) events */
} plane_out;

static int parse_i64(const char *s, int64_t *v) {
    if (!*s) return 0;
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || *end) return 0;
    *v = x;
    return 1;
}

/* Digits in a tid like "stream 7" or "7". */
static int tid_number(const char *s, int64_t *v) {
    while (*s && (*s < '0' || *s > '9')) s++;
    if (!*s) return 0;
    int64_t x = 0;
    while (*s >= '0' && *s <= '9' && x < INT64_MAX / 10) x = x * 10 + (*s++ - '0');
    *v = x;
    return 1;
}

/* Index of the plane named `name`, created when new; `ix` maps plane names
 * to index + 1, so N distinct pids cost O(N), not O(N^2). */
static uint32_t plane_index(ct *c, strmap *ix, plane_out **pl, size_t *n, size_t *cap,
                            const char *name, int64_t device) {
    int found;
    strmap_ent *e = strmap_put(ix, &c->arena, name, strlen(name), &found);
    c->sum.work++;
    if (found) return e->val - 1;
    e->val = (uint32_t)*n + 1;
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        *pl = xpv_xrealloc(*pl, *cap * sizeof **pl);
    }
    plane_out *p = &(*pl)[*n];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->device = device;
    return (uint32_t)(*n)++;
}

/* qsort has no context argument: per thread, as several threads convert. */
static _Thread_local const ctev *sort_base;
static _Thread_local uint64_t *plane_cmp_count;
static int cmp_ev(const void *a, const void *b) {
    const ctev *x = &sort_base[*(const uint32_t *)a], *y = &sort_base[*(const uint32_t *)b];
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    if (x->dur != y->dur) return x->dur > y->dur ? -1 : 1;   /* parents first */
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_plane(const void *a, const void *b) {
    const plane_out *x = a, *y = b;
    if (plane_cmp_count) ++*plane_cmp_count;
    int hx = !strncmp(x->name, "/host:", 6), hy = !strncmp(y->name, "/host:", 6);
    if (hx != hy) return hy - hx;
    if (x->device >= 0 && y->device >= 0 && x->device != y->device)
        return x->device < y->device ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Hostile traces can carry any ts/dur: saturate instead of overflowing
 * (the decoder clamps times again). */
/* The XPlane decoder keeps |start| and dur within INT64_MAX / 4 ps (so
 * start + dur never overflows); write at most that, counting what had to
 * be clamped (sum.clamped, and an XSpace warning). */
#define CT_MAX_PS (INT64_MAX / 4)
static inline int64_t ns_to_ps(ct *c, int64_t ns) {
    int cl = 0;
    int64_t r = xpv_mul_i64(ns, 1000, &cl);
    if (r > CT_MAX_PS) { r = CT_MAX_PS; cl = 1; }
    if (r < -CT_MAX_PS) { r = -CT_MAX_PS; cl = 1; }
    if (cl) c->sum.clamped++;
    return r;
}

/* What write_space() works from, built in its phases. */
typedef struct wspace {
    plane_out *pl;                /* planes in output order */
    size_t npl;
    size_t *start;                /* events of line i: order[start[i]..start[i+1]) */
    uint32_t *order;
    size_t *pstart_ln;            /* lines of plane p: plines[pstart_ln[p]..] */
    uint32_t *plines;
    i64map devix;                 /* GPU ordinal -> index into c->dev + 1 */
    uint32_t *used;               /* meta id -> plane + 1 that listed it */
    uint32_t *pmeta;              /* event metadata used by the plane */
    size_t npmeta;
    xpv_buf evb, tmp;
    /* Device stat ids, registered before any plane writes the stat table. */
    uint32_t sid_device_name, sid_major, sid_minor, sid_cores, sid_mem, sid_vendor;
    uint32_t sid_occ_kind;
} wspace;

/* The plane of each line (from its process name, else GPU or host CPU),
 * planes sorted (host first, then GPUs by ordinal; names are unique, so
 * the order is total) and lines remapped: one sort, no search. */
static void ws_planes(ct *c, wspace *w) {
    size_t cappl = 0;
    strmap plane_ix = {0};
    for (size_t i = 0; i < c->nlines; i++) {
        ctline *ln = &c->lines[i];
        const char *pname = name_map_get(c, &c->proc_names, ln->pid, strlen(ln->pid));
        char buf[64];
        int64_t dev = -1, num;
        int named = pname && (!strncmp(pname, "/host:", 6) || !strncmp(pname, "/device:", 8));
        if (named) {
            snprintf(buf, sizeof buf, "%s", pname);
            const char *g = strrchr(pname, ':');
            if (!strncmp(pname, "/device:GPU:", 12) && g && parse_i64(g + 1, &num)) dev = num;
        } else if (ln->gpu) {
            dev = parse_i64(ln->pid, &num) ? num : ln->device >= 0 ? ln->device : 0;
            snprintf(buf, sizeof buf, "/device:GPU:%lld", (long long)dev);
        } else {
            snprintf(buf, sizeof buf, "/host:CPU");
        }
        ln->plane = plane_index(c, &plane_ix, &w->pl, &w->npl, &cappl, buf, dev);
        if (ln->gpu && !named) w->pl[ln->plane].kineto = 1;
    }
    strmap_free(&plane_ix);
    /* The new index travels in `id` during the sort. */
    size_t npl = w->npl;
    uint32_t *remap = xpv_xcalloc(npl ? npl : 1, sizeof *remap);
    for (size_t i = 0; i < npl; i++) w->pl[i].id = (int64_t)i;
    plane_cmp_count = &c->sum.work;
    if (npl) qsort(w->pl, npl, sizeof *w->pl, cmp_plane);   /* pl is NULL when empty */
    plane_cmp_count = NULL;
    for (size_t k = 0; k < npl; k++) remap[w->pl[k].id] = (uint32_t)k;
    for (size_t i = 0; i < c->nlines; i++) c->lines[i].plane = remap[c->lines[i].plane];
    c->sum.work += npl + c->nlines;
    for (size_t i = 0; i < npl; i++)
        w->pl[i].id = w->pl[i].device >= 0 ? w->pl[i].device + 1
                                           : (int64_t)(i == 0 ? 0 : 1000 + i);
    free(remap);
}

/* Events grouped by line (counting sort), each line sorted; lines grouped
 * by plane (counting sort, line order kept); the first deviceProperties
 * entry of each GPU ordinal. */
static void ws_group(ct *c, wspace *w) {
    w->start = xpv_xcalloc(c->nlines + 1, sizeof *w->start);
    for (size_t i = 0; i < c->nlines; i++) w->start[i + 1] = w->start[i] + c->lines[i].nev;
    w->order = xpv_xmalloc((c->nev ? c->nev : 1) * sizeof *w->order);
    size_t *fillp = xpv_xmalloc((c->nlines + 1) * sizeof *fillp);
    memcpy(fillp, w->start, (c->nlines + 1) * sizeof *fillp);
    for (size_t i = 0; i < c->nev; i++) w->order[fillp[c->ev[i].line]++] = (uint32_t)i;
    free(fillp);
    sort_base = c->ev;
    for (size_t i = 0; i < c->nlines; i++)
        qsort(w->order + w->start[i], w->start[i + 1] - w->start[i], sizeof *w->order, cmp_ev);

    w->pstart_ln = xpv_xcalloc(w->npl + 1, sizeof *w->pstart_ln);
    for (size_t i = 0; i < c->nlines; i++) w->pstart_ln[c->lines[i].plane + 1]++;
    for (size_t p = 0; p < w->npl; p++) w->pstart_ln[p + 1] += w->pstart_ln[p];
    w->plines = xpv_xmalloc((c->nlines ? c->nlines : 1) * sizeof *w->plines);
    size_t *fill = xpv_xmalloc((w->npl + 1) * sizeof *fill);
    memcpy(fill, w->pstart_ln, (w->npl + 1) * sizeof *fill);
    for (size_t i = 0; i < c->nlines; i++) w->plines[fill[c->lines[i].plane]++] = (uint32_t)i;
    free(fill);
    for (size_t d = 0; d < c->ndev; d++) {
        uint32_t *slot = i64map_slot(&w->devix, c->dev[d].id);
        if (!*slot) *slot = (uint32_t)d + 1;
    }
    uint32_t nmeta = (uint32_t)c->ev_names.n;
    w->used = xpv_xcalloc((size_t)nmeta + 1, sizeof *w->used);
    w->pmeta = xpv_xmalloc(((size_t)nmeta + 1) * sizeof *w->pmeta);
    xpv_buf_init(&w->evb);
    xpv_buf_init(&w->tmp);
    w->sid_device_name = stat_id(c, "gpu_device_name", 15);
    w->sid_major = stat_id(c, "compute_cap_major", 17);
    w->sid_minor = stat_id(c, "compute_cap_minor", 17);
    w->sid_cores = stat_id(c, "core_count", 10);
    w->sid_mem = stat_id(c, "memory_size", 11);
    w->sid_vendor = stat_id(c, "device_vendor", 13);
    w->sid_occ_kind = stat_id(c, "occupancy_kind", 14);
    c->sum.work += c->nlines + w->npl + c->ndev;
}

/* Ids and names of plane p's lines: the numeric tid when unique in the
 * plane (else ids from LINE_ID_BASE); "Stream #N" on GPUs, the thread
 * name, or the tid. */
static void ws_name_lines(ct *c, wspace *w, size_t p) {
    int64_t next_id = LINE_ID_BASE;
    i64map ids = {0};
    for (size_t li = w->pstart_ln[p]; li < w->pstart_ln[p + 1]; li++) {
        ctline *ln = &c->lines[w->plines[li]];
        c->sum.work++;
        if (!ln->nev) continue;
        int64_t num;
        int is_num = ln->gpu && !ln->annot ? tid_number(ln->tid, &num)
                                           : parse_i64(ln->tid, &num);
        uint32_t *slot = is_num ? i64map_slot(&ids, num) : NULL;
        if (slot && !*slot) {
            *slot = 1;
            ln->id = num;
        } else {
            ln->id = next_id++;
        }
        size_t off = c->text.len;
        xpv_buf_add(&c->text, ln->pid, strlen(ln->pid));
        xpv_buf_putc(&c->text, '\x01');
        xpv_buf_add(&c->text, ln->tid, strlen(ln->tid));
        const char *tname = name_map_get(c, &c->thread_names, c->text.data + off,
                                         c->text.len - off);
        c->text.len = off;
        char nb[160];
        if (ln->gpu && w->pl[p].device >= 0) {
            if (is_num)
                snprintf(nb, sizeof nb, ln->annot ? "Stream #%lld annotations" : "Stream #%lld",
                         (long long)num);
            else
                snprintf(nb, sizeof nb, ln->annot ? "%s annotations" : "%s", ln->tid);
        } else if (tname) {
            snprintf(nb, sizeof nb, "%s", tname);
        } else if (*ln->tid) {
            snprintf(nb, sizeof nb, "%s%s", is_num ? "Thread " : "", ln->tid);
        } else {
            snprintf(nb, sizeof nb, "%s", *ln->pid ? ln->pid : "(no thread)");
        }
        ln->name = xpv_arena_strndup(&c->arena, nb, strlen(nb));
    }
    i64map_free(&ids);
}

/* Line i (of plane p) with its events, noting the metadata they use. */
static void ws_line(ct *c, wspace *w, size_t i, size_t p, xpv_buf *out) {
    ctline *ln = &c->lines[i];
    size_t lstart = wire_frame_open(out, 3);
    wire_put_int(out, 1, ln->id);
    wire_put_bytes(out, 2, ln->name, strlen(ln->name));
    /* Events are sorted by ts: t0 is the smallest, so offsets are >= 0;
     * each is saturated, never wrapped. */
    const uint32_t *ord = w->order;
    int64_t t0 = c->ev[ord[w->start[i]]].ts, t1 = t0;
    for (size_t k = w->start[i]; k < w->start[i + 1]; k++) {
        const ctev *e = &c->ev[ord[k]];
        int64_t end = xpv_add_i64(e->ts, e->dur, NULL);
        if (end > t1) t1 = end;
    }
    wire_put_int(out, 3, t0);
    wire_put_int(out, 9, ns_to_ps(c, xpv_sub_i64(t1, t0, NULL)));
    xpv_buf *evb = &w->evb;
    for (size_t k = w->start[i]; k < w->start[i + 1]; k++) {
        const ctev *e = &c->ev[ord[k]];
        if (w->used[e->meta] != (uint32_t)p + 1) {
            w->used[e->meta] = (uint32_t)p + 1;
            w->pmeta[w->npmeta++] = e->meta;
        }
        xpv_buf_reset(evb);
        wire_put_int(evb, 1, e->meta);
        wire_put_int(evb, 2, ns_to_ps(c, xpv_sub_i64(e->ts, t0, NULL)));
        wire_put_int(evb, 3, ns_to_ps(c, e->dur));
        if (e->st_len) xpv_buf_add(evb, c->blob.data + e->st_off, e->st_len);
        uint32_t op;
        if (e->ext && (op = i64map_at(&c->ext_op, e->ext)))
            put_stat(evb, 4, c->sid_tf_op, SV_STR, 0, 0, c->ev_name_tab[op], c->ev_name_len[op]);
        if (e->corr && i64map_at(&c->corr_side, e->corr) == 3) {
            uint64_t flow = ((uint64_t)e->corr & ((1ULL << 56) - 1)) << 2;
            flow |= (e->side == 1 ? 2u : 1u) | (FLOW_GPU_LAUNCH << 58);
            put_stat(evb, 4, c->sid_flow, SV_UINT, (int64_t)flow, 0, NULL, 0);
        }
        wire_put_bytes(out, 4, evb->data, evb->len);
        c->sum.events_out++;
    }
    wire_frame_close_padded(out, lstart);
}

/* Metadata entry {1: id, 2: {1: id, 2: name}} as plane field `field`. */
static void ws_meta(wspace *w, xpv_buf *out, unsigned field, uint32_t id, const char *name,
                    size_t n) {
    xpv_buf_reset(&w->tmp);
    wire_put_int(&w->tmp, 1, id);
    wire_put_bytes(&w->tmp, 2, name, n);
    xpv_buf_reset(&w->evb);
    wire_put_int(&w->evb, 1, id);
    wire_put_bytes(&w->evb, 2, w->tmp.data, w->tmp.len);
    wire_put_bytes(out, field, w->evb.data, w->evb.len);
}

/* Plane p's stats: the device capabilities of its GPU ordinal, and
 * whether its occupancy is Kineto's. */
static void ws_plane_stats(ct *c, wspace *w, size_t p, xpv_buf *out) {
    uint32_t dix = w->pl[p].device >= 0 ? i64map_at(&w->devix, w->pl[p].device) : 0;
    if (dix) {
        const devprop *dp = &c->dev[dix - 1];
        if (dp->name)
            put_stat(out, 6, w->sid_device_name, SV_STR, 0, 0, dp->name,
                     strlen(dp->name));
        if (dp->has_major) {
            put_stat(out, 6, w->sid_major, SV_INT, dp->major, 0, NULL, 0);
            put_stat(out, 6, w->sid_minor, SV_INT, dp->minor, 0, NULL, 0);
        }
        if (dp->sms) put_stat(out, 6, w->sid_cores, SV_INT, dp->sms, 0, NULL, 0);
        if (dp->mem) put_stat(out, 6, w->sid_mem, SV_INT, dp->mem, 0, NULL, 0);
        const char *vendor = dp->amd ? "AMD" : "Nvidia";
        put_stat(out, 6, w->sid_vendor, SV_STR, 0, 0, vendor, strlen(vendor));
    }
    /* Kineto's occupancy (kernel_details occ_pct here) is its "est.
     * achieved occupancy %", not XProf's theoretical one: say so. */
    if (w->pl[p].kineto)
        put_stat(out, 6, w->sid_occ_kind, SV_STR, 0, 0, "achieved", 8);
}

static void ws_plane(ct *c, wspace *w, size_t p, xpv_buf *out) {
    w->npmeta = 0;
    size_t pstart = wire_frame_open(out, 1);
    wire_put_int(out, 1, w->pl[p].id);
    wire_put_bytes(out, 2, w->pl[p].name, strlen(w->pl[p].name));
    ws_name_lines(c, w, p);
    for (size_t li = w->pstart_ln[p]; li < w->pstart_ln[p + 1]; li++) {
        size_t i = w->plines[li];
        c->sum.work++;
        if (!c->lines[i].nev) continue;
        c->sum.lines++;
        ws_line(c, w, i, p, out);
    }
    /* Event metadata used by this plane, by id. */
    qsort(w->pmeta, w->npmeta, sizeof *w->pmeta, cmp_u32);
    c->sum.work += w->npmeta;
    for (size_t mi = 0; mi < w->npmeta; mi++) {
        uint32_t m = w->pmeta[mi];
        ws_meta(w, out, 4, m, c->ev_name_tab[m], c->ev_name_len[m]);
    }
    /* Stat metadata: the whole (small) table in every plane. */
    for (uint32_t s = 1; s <= c->stat_names.n; s++)
        ws_meta(w, out, 5, s, c->stat_tab[s], c->stat_len[s]);
    ws_plane_stats(c, w, p, out);
    wire_frame_close_padded(out, pstart);
    c->sum.planes++;
}

/* XSpace warnings (field 3) and host name (field 4). */
static void ws_trailer(ct *c, const xpv_ct_options *opt, xpv_buf *out) {
    char m[200];
    if (c->sum.truncated) {
        snprintf(m, sizeof m, "trace JSON ends early (at byte %llu): kept the %llu events read",
                 (unsigned long long)c->sum.json_bytes, (unsigned long long)c->nev);
        wire_put_bytes(out, 3, m, strlen(m));
    }
    if (c->sum.clamped) {
        snprintf(m, sizeof m, "%llu event times or durations beyond the int64 picosecond range "
                 "(e.g. dur of 1e15 us) were clamped to %lld ps",
                 (unsigned long long)c->sum.clamped, (long long)CT_MAX_PS);
        wire_put_bytes(out, 3, m, strlen(m));
    }
    if (c->sum.skipped) {
        snprintf(m, sizeof m, "%llu trace events of unsupported phases (B/E, C, b/e...) skipped",
                 (unsigned long long)c->sum.skipped);
        wire_put_bytes(out, 3, m, strlen(m));
    }
    if (opt && opt->hostname && *opt->hostname)
        wire_put_bytes(out, 4, opt->hostname, strlen(opt->hostname));
    c->sum.devices = (uint32_t)c->ndev;
}

static void ws_release(wspace *w) {
    xpv_buf_free(&w->evb);
    xpv_buf_free(&w->tmp);
    free(w->used);
    free(w->pmeta);
    free(w->plines);
    free(w->pstart_ln);
    i64map_free(&w->devix);
    free(w->order);
    free(w->start);
    free(w->pl);
}

/* The XSpace: planes (each: lines with their events, the metadata they
 * use, the stat table, device stats), then warnings and host name. */
static void write_space(ct *c, const xpv_ct_options *opt, xpv_buf *out) {
    wspace w;
    memset(&w, 0, sizeof w);
    ws_planes(c, &w);
    ws_group(c, &w);
    for (size_t p = 0; p < w.npl; p++) ws_plane(c, &w, p, out);
    ws_trailer(c, opt, out);
    ws_release(&w);
}

static void ct_free(ct *c) {
    xpv_arena_free(&c->arena);
    xpv_buf_free(&c->blob);
    xpv_buf_free(&c->text);
    free(c->ev);
    free(c->lines);
    strmap_free(&c->line_ix);
    strmap_free(&c->ev_names);
    free(c->ev_name_tab);
    free(c->ev_name_len);
    strmap_free(&c->stat_names);
    free(c->stat_tab);
    free(c->stat_len);
    strmap_free(&c->proc_names);
    strmap_free(&c->thread_names);
    free(c->pnames);
    i64map_free(&c->ext_op);
    i64map_free(&c->corr_side);
    free(c->dev);
    free(c->args);
    free(c->in.b);
}

int xpv_ct_convert(xpv_ct_read_fn rd, void *ctx, const xpv_ct_options *opt,
                   xpv_buf *out, xpv_ct_summary *sum, xpv_ct_error *err) {
    xpv_ct_error local;
    if (!err) err = &local;
    memset(err, 0, sizeof *err);
    ct *c = xpv_xcalloc(1, sizeof *c);
    xpv_arena_init(&c->arena, 64 * 1024);
    xpv_buf_init(&c->blob);
    xpv_buf_init(&c->text);
    c->in.rd = rd;
    c->in.ctx = ctx;
    c->in.cap = JIN_CHUNK;
    c->in.b = xpv_xmalloc(c->in.cap);
    c->in.max = opt ? opt->max_json_bytes : 0;
    c->in.err = err;
    c->sid_cat = stat_id(c, "cat", 3);
    c->sid_corr = stat_id(c, "correlation_id", 14);
    c->sid_kd = stat_id(c, "kernel_details", 14);
    c->sid_tf_op = stat_id(c, "tf_op", 5);
    c->sid_flow = stat_id(c, "flow", 4);
    name_id(c, "", 0);   /* meta id 1 = unnamed events */

    int rc = parse_top(c);
    if (!rc && !c->sum.truncated) {
        /* Only whitespace may follow the top-level value. */
        if (jws(&c->in) >= 0) rc = jfail(&c->in, XPV_E_BAD_PROFILE, "unexpected data after the trace");
    }
    c->sum.json_bytes = c->in.base + c->in.pos;
    if (!rc && jfailed(&c->in)) rc = -1;
    if (!rc) write_space(c, opt, out);
    if (sum) *sum = c->sum;
    ct_free(c);
    free(c);
    return rc ? -1 : 0;
}

/* ==== Input sources (base/instream.h) ===================================== */

/* Run the converter over `s` and free it. */
static int src_convert(xpv_instream *s, const xpv_ct_options *opt, xpv_buf *out,
                       xpv_ct_summary *sum, xpv_ct_error *err) {
    xpv_ct_error local;
    if (!err) err = &local;
    int rc;
    if (xpv_instream_failed_early(s)) {
        memset(err, 0, sizeof *err);
        err->status = XPV_E_INTERNAL;
        xpv_instream_error(s, err->msg, sizeof err->msg);
        rc = -1;
    } else {
        rc = xpv_ct_convert(xpv_instream_read, s, opt, out, sum, err);
        if (sum) sum->input_bytes = xpv_instream_raw_bytes(s);
        if (rc && err->status == 500) {
            int st = xpv_instream_error(s, err->msg, sizeof err->msg);
            if (st) err->status = st;   /* 413: a gzip bomb */
        }
    }
    xpv_instream_free(s);
    return rc;
}

int xpv_ct_convert_mem(const void *data, size_t len, const xpv_ct_options *opt,
                       xpv_buf *out, xpv_ct_summary *sum, xpv_ct_error *err) {
    return src_convert(xpv_instream_mem(data, len), opt, out, sum, err);
}

int xpv_ct_convert_fd(int fd, const xpv_ct_options *opt, xpv_buf *out,
                      xpv_ct_summary *sum, xpv_ct_error *err) {
    return src_convert(xpv_instream_fd(fd), opt, out, sum, err);
}
