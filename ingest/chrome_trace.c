/*
 * chrome_trace.c - Chrome trace-event JSON -> XSpace bytes (see
 * chrome_trace.h).
 *
 * Three parts: a pull tokenizer over a refillable window (jin_*), the
 * event collector (one compact record per event, stats pre-encoded in
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
#include <unistd.h>
#include <zlib.h>

#include "arena.h"
#include "checked.h"
#include "gz.h"

#define JIN_CHUNK (256 * 1024)
#define MAX_NEST 512              /* nesting accepted inside skipped values */
#define MAX_NUM_TEXT 80           /* longest number token accepted */
#define MAX_EVENTS (UINT32_MAX - 1)
#define LINE_ID_BASE 1000000000000LL  /* ids for lines with no numeric tid */
#define FLOW_GPU_LAUNCH 9ULL      /* ContextType kGpuLaunch */
#define MAX_INTERN_LEN 512        /* longer string args stay inline */
#define MAX_INTERN_BYTES (4u << 20) /* interned value text, all planes share */

/* ==== Tokenizer ========================================================== */

typedef struct jin {
    xpv_ct_read_fn rd;
    void *ctx;
    unsigned char *b;
    size_t pos, len, cap;
    uint64_t base;                /* stream offset of b[0] */
    uint64_t max;                 /* byte cap, 0 = none */
    int eof;
    xpv_ct_error *err;            /* set once: err->msg[0] != 0 */
} jin;

static int jfail(jin *j, int status, const char *msg) {
    if (!j->err->msg[0]) {
        j->err->status = status;
        j->err->offset = j->base + j->pos;
        snprintf(j->err->msg, sizeof j->err->msg, "%s", msg);
    }
    return -1;
}

static int jfailed(const jin *j) { return j->err->msg[0] != 0; }

/* Refill the window; returns 1 when bytes were added. */
static int jfill(jin *j) {
    if (j->eof || jfailed(j)) return 0;
    if (j->pos) {
        memmove(j->b, j->b + j->pos, j->len - j->pos);
        j->base += j->pos;
        j->len -= j->pos;
        j->pos = 0;
    }
    long n = j->rd(j->ctx, j->b + j->len, j->cap - j->len);
    if (n < 0) {
        j->eof = 1;
        jfail(j, 500, "read error");
        return 0;
    }
    if (n == 0) {
        j->eof = 1;
        return 0;
    }
    j->len += (size_t)n;
    if (j->max && j->base + j->len > j->max) {
        j->eof = 1;
        jfail(j, 413, "trace JSON larger than the configured cap");
        return 0;
    }
    return 1;
}

static inline int jpeek(jin *j) {
    if (j->pos == j->len && !jfill(j)) return -1;
    return j->b[j->pos];
}

static inline int jget(jin *j) {
    if (j->pos == j->len && !jfill(j)) return -1;
    return j->b[j->pos++];
}

/* Skip whitespace; next byte (not consumed) or -1 at end. */
static int jws(jin *j) {
    for (;;) {
        while (j->pos < j->len) {
            unsigned char c = j->b[j->pos];
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return c;
            j->pos++;
        }
        if (!jfill(j)) return -1;
    }
}

static int jexpect(jin *j, int c, const char *msg) {
    if (jws(j) != c) return jfail(j, 422, msg);
    j->pos++;
    return 0;
}

static void put_utf8(xpv_buf *b, uint32_t cp) {
    char t[4];
    size_t n;
    if (cp < 0x80) {
        t[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        t[0] = (char)(0xc0 | (cp >> 6));
        t[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        t[0] = (char)(0xe0 | (cp >> 12));
        t[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        t[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        t[0] = (char)(0xf0 | (cp >> 18));
        t[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        t[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        t[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    xpv_buf_add(b, t, n);
}

static int hex4(jin *j, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int c = jget(j);
        int d = c >= '0' && c <= '9' ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return jfail(j, 422, "bad \\u escape in string");
        v = v * 16 + (uint32_t)d;
    }
    *out = v;
    return 0;
}

/* Read a string (the opening quote is next).  Decoded bytes are appended
 * to `dst` (NULL: skip).  With `raw` set, the bytes are appended exactly
 * as written, quotes and escapes included (for re-emitting JSON text). */
static int jstring(jin *j, xpv_buf *dst, int raw) {
    if (jws(j) != '"') return jfail(j, 422, "expected a string");
    j->pos++;
    if (raw && dst) xpv_buf_putc(dst, '"');
    for (;;) {
        if (j->pos == j->len && !jfill(j)) return jfail(j, 422, "unterminated string");
        /* Copy the run up to the next quote or backslash in one go. */
        const unsigned char *s = j->b + j->pos, *e = j->b + j->len, *p = s;
        while (p < e && *p != '"' && *p != '\\') p++;
        if (dst && p > s) xpv_buf_add(dst, s, (size_t)(p - s));
        j->pos += (size_t)(p - s);
        if (p == e) continue;
        int c = j->b[j->pos++];
        if (c == '"') {
            if (raw && dst) xpv_buf_putc(dst, '"');
            return 0;
        }
        int x = jget(j);
        if (x < 0) return jfail(j, 422, "unterminated string");
        if (raw) {
            if (dst) {
                xpv_buf_putc(dst, '\\');
                xpv_buf_putc(dst, (char)x);
            }
            continue;
        }
        uint32_t cp;
        switch (x) {
        case 'n': cp = '\n'; break;
        case 't': cp = '\t'; break;
        case 'r': cp = '\r'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'u':
            if (hex4(j, &cp)) return -1;
            if (cp >= 0xd800 && cp < 0xdc00 && jpeek(j) == '\\') {
                j->pos++;
                uint32_t lo;
                if (jget(j) != 'u' || hex4(j, &lo)) return jfail(j, 422, "bad surrogate pair");
                if (lo >= 0xdc00 && lo < 0xe000)
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                else
                    cp = 0xfffd;
            } else if (cp >= 0xd800 && cp < 0xe000) {
                cp = 0xfffd;
            }
            break;
        default: cp = (uint32_t)x; break;   /* \" \\ \/ and lenient others */
        }
        if (dst) put_utf8(dst, cp);
    }
}

/* A bare token (number, true/false/null, or a lenient unquoted word such
 * as N/A) into `t` (NUL-terminated); returns its length or -1. */
static int jbare(jin *j, char *t, size_t cap) {
    size_t n = 0;
    for (;;) {
        int c = jpeek(j);
        if (c < 0 || c == ',' || c == '}' || c == ']' || c == ':' || c == ' ' ||
            c == '\n' || c == '\r' || c == '\t' || c == '"' || c == '{' || c == '[')
            break;
        if (n + 1 >= cap) return jfail(j, 422, "token too long");
        t[n++] = (char)c;
        j->pos++;
    }
    t[n] = 0;
    if (!n) return jfail(j, 422, "expected a value");
    return (int)n;
}

/* Skip one value; with `cap` set, append it as compact JSON text. */
static int jskip(jin *j, xpv_buf *cap) {
    int depth = 0;
    char tok[MAX_NUM_TEXT];
    do {
        int c = jws(j);
        if (c < 0) return jfail(j, 422, "unexpected end of input");
        if (c == '{' || c == '[') {
            if (++depth > MAX_NEST) return jfail(j, 422, "nesting too deep");
            j->pos++;
            if (cap) xpv_buf_putc(cap, (char)c);
        } else if (c == '}' || c == ']') {
            if (depth == 0) return jfail(j, 422, "unbalanced bracket");
            depth--;
            j->pos++;
            if (cap) xpv_buf_putc(cap, (char)c);
        } else if (c == ',' || c == ':') {
            if (depth == 0) return jfail(j, 422, "unexpected separator");
            j->pos++;
            if (cap) xpv_buf_putc(cap, (char)c);
        } else if (c == '"') {
            if (jstring(j, cap, 1)) return -1;
        } else {
            int n = jbare(j, tok, sizeof tok);
            if (n < 0) return -1;
            if (cap) xpv_buf_add(cap, tok, (size_t)n);
        }
    } while (depth > 0);
    return 0;
}

/* After a member value: ',' (returns 1, more follow) or `close` (0). */
static int jnext(jin *j, int close) {
    int c = jws(j);
    if (c == ',') {
        j->pos++;
        return 1;
    }
    if (c == close) {
        j->pos++;
        return 0;
    }
    return jfail(j, 422, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
}

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

/* ==== Small hash maps ==================================================== */

static uint64_t hash_bytes(const void *p, size_t n) {
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ULL;
    return h ^ (h >> 29);
}

/* String -> uint32 value; keys copied into the arena. */
typedef struct smap {
    struct sent { const char *k; uint32_t klen, val; uint64_t h; } *slots;
    size_t n, cap;
} smap;

static void smap_grow(smap *m) {
    size_t nc = m->cap ? m->cap * 2 : 256;
    struct sent *ns = xpv_xcalloc(nc, sizeof *ns);
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].k) continue;
        size_t j = m->slots[i].h & (nc - 1);
        while (ns[j].k) j = (j + 1) & (nc - 1);
        ns[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = ns;
    m->cap = nc;
}

/* Slot for key (k, n); *found tells whether it existed.  New slots get the
 * key copied into `a` and val 0 for the caller to set. */
static struct sent *smap_put(smap *m, xpv_arena *a, const char *k, size_t n, int *found) {
    if ((m->n + 1) * 2 > m->cap) smap_grow(m);
    uint64_t h = hash_bytes(k, n);
    size_t j = h & (m->cap - 1);
    while (m->slots[j].k) {
        struct sent *e = &m->slots[j];
        if (e->h == h && e->klen == n && !memcmp(e->k, k, n)) {
            *found = 1;
            return e;
        }
        j = (j + 1) & (m->cap - 1);
    }
    struct sent *e = &m->slots[j];
    e->k = xpv_arena_strndup(a, k, n);
    e->klen = (uint32_t)n;
    e->h = h;
    e->val = 0;
    m->n++;
    *found = 0;
    return e;
}

static const struct sent *smap_get(const smap *m, const char *k, size_t n) {
    if (!m->cap) return NULL;
    uint64_t h = hash_bytes(k, n);
    size_t j = h & (m->cap - 1);
    while (m->slots[j].k) {
        const struct sent *e = &m->slots[j];
        if (e->h == h && e->klen == n && !memcmp(e->k, k, n)) return e;
        j = (j + 1) & (m->cap - 1);
    }
    return NULL;
}

/* int64 -> uint32 (0 = absent). */
typedef struct imap {
    struct ient { int64_t k; uint32_t val; } *slots;
    size_t n, cap;
} imap;

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static void imap_grow(imap *m) {
    size_t nc = m->cap ? m->cap * 2 : 1024;
    struct ient *ns = xpv_xcalloc(nc, sizeof *ns);
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].val) continue;
        size_t j = mix64((uint64_t)m->slots[i].k) & (nc - 1);
        while (ns[j].val) j = (j + 1) & (nc - 1);
        ns[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = ns;
    m->cap = nc;
}

static uint32_t *imap_slot(imap *m, int64_t k) {
    if ((m->n + 1) * 2 > m->cap) imap_grow(m);
    size_t j = mix64((uint64_t)k) & (m->cap - 1);
    while (m->slots[j].val && m->slots[j].k != k) j = (j + 1) & (m->cap - 1);
    if (!m->slots[j].val) {
        m->slots[j].k = k;
        m->n++;
    }
    return &m->slots[j].val;
}

static uint32_t imap_get(const imap *m, int64_t k) {
    if (!m->cap) return 0;
    size_t j = mix64((uint64_t)k) & (m->cap - 1);
    while (m->slots[j].val) {
        if (m->slots[j].k == k) return m->slots[j].val;
        j = (j + 1) & (m->cap - 1);
    }
    return 0;
}

/* ==== Wire encoding ====================================================== */

static void put_varint(xpv_buf *b, uint64_t v) {
    char t[10];
    size_t n = 0;
    while (v >= 0x80) {
        t[n++] = (char)(v | 0x80);
        v >>= 7;
    }
    t[n++] = (char)v;
    xpv_buf_add(b, t, n);
}

static void put_tag(xpv_buf *b, unsigned field, unsigned wt) {
    put_varint(b, ((uint64_t)field << 3) | wt);
}

static void put_int(xpv_buf *b, unsigned field, int64_t v) {
    if (!v) return;
    put_tag(b, field, 0);
    put_varint(b, (uint64_t)v);
}

static void put_bytes(xpv_buf *b, unsigned field, const void *p, size_t n) {
    put_tag(b, field, 2);
    put_varint(b, n);
    xpv_buf_add(b, p, n);
}

static void put_double(xpv_buf *b, unsigned field, double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    char t[8];
    for (int i = 0; i < 8; i++) t[i] = (char)(u >> (8 * i));
    put_tag(b, field, 1);
    xpv_buf_add(b, t, 8);
}

/* Append `inner` as length-delimited field `field` of `b`. */
static void put_msg(xpv_buf *b, unsigned field, const xpv_buf *inner) {
    put_bytes(b, field, inner->data, inner->len);
}

/* XStat kinds as written to the blob. */
enum { SV_INT, SV_UINT, SV_DBL, SV_STR, SV_REF };

/* Open length-delimited field `field` in `b` before its length is known:
 * the tag and a 5-byte varint placeholder (a padded varint, which protobuf
 * decoders accept).  Returns the offset of the content for msg_close().
 * Planes and lines are written in place this way instead of being built
 * in buffers and copied, so the XSpace exists once while it is written. */
static size_t msg_open(xpv_buf *b, unsigned field) {
    put_tag(b, field, 2);
    xpv_buf_add(b, "\x80\x80\x80\x80\x00", 5);
    return b->len;
}

/* Patch the length of the field opened at `start` (< 32 GiB). */
static void msg_close(xpv_buf *b, size_t start) {
    uint64_t n = b->len - start;
    unsigned char *p = (unsigned char *)b->data + start - 5;
    for (int i = 0; i < 5; i++) {
        p[i] = (unsigned char)((n & 0x7f) | (i < 4 ? 0x80 : 0));
        n >>= 7;
    }
}

static size_t varint_len(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* One XStat as length-delimited field `field` (XEvent 4, XPlane 6) of `b`.
 * The value is always written (it is a oneof member). */
static void put_stat(xpv_buf *b, unsigned field, uint32_t meta, int kind, int64_t i,
                     double d, const char *s, size_t n) {
    size_t inner = meta ? 1 + varint_len(meta) : 0;
    switch (kind) {
    case SV_INT: case SV_UINT: case SV_REF: inner += 1 + varint_len((uint64_t)i); break;
    case SV_DBL: inner += 9; break;
    default: inner += 1 + varint_len(n) + n; break;
    }
    put_tag(b, field, 2);
    put_varint(b, inner);
    put_int(b, 1, meta);
    switch (kind) {
    case SV_INT: put_tag(b, 4, 0); put_varint(b, (uint64_t)i); break;
    case SV_UINT: put_tag(b, 3, 0); put_varint(b, (uint64_t)i); break;
    case SV_REF: put_tag(b, 7, 0); put_varint(b, (uint64_t)i); break;
    case SV_DBL: put_double(b, 2, d); break;
    default: put_bytes(b, 5, s, n); break;
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
    smap line_ix;                 /* "pid\x01tid[\x01a]" -> line + 1 */
    smap ev_names;                /* event name -> meta id */
    const char **ev_name_tab;     /* meta id -> name */
    uint32_t *ev_name_len;
    size_t capnames;
    smap stat_names;              /* stat name -> stat meta id */
    const char **stat_tab;
    uint32_t *stat_len;
    size_t capstats;
    smap proc_names;              /* pid -> index into pnames + 1 */
    smap thread_names;            /* pid\x01tid -> index + 1 */
    const char **pnames;          /* names of processes / threads */
    size_t npnames, cappnames;
    imap ext_op;                  /* External id of cpu_op -> meta id */
    imap corr_side;               /* correlation -> side bits */
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
    struct sent *e = smap_put(&c->stat_names, &c->arena, k, n, &found);
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
    struct sent *e = smap_put(&c->ev_names, &c->arena, k, n, &found);
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

static void name_map_set(ct *c, smap *m, const char *k, size_t n, const char *v, size_t vn) {
    int found;
    struct sent *e = smap_put(m, &c->arena, k, n, &found);
    if (found) return;                       /* first name wins */
    if (c->npnames == c->cappnames) {
        c->cappnames = c->cappnames ? c->cappnames * 2 : 32;
        c->pnames = xpv_xrealloc(c->pnames, c->cappnames * sizeof *c->pnames);
    }
    c->pnames[c->npnames++] = xpv_arena_strndup(&c->arena, v, vn);
    e->val = (uint32_t)c->npnames;
}

static const char *name_map_get(const ct *c, const smap *m, const char *k, size_t n) {
    const struct sent *e = smap_get(m, k, n);
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
    struct sent *e = smap_put(&c->line_ix, &c->arena, t->data + off, t->len - off, &found);
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
        *imap_slot(&c->ext_op, ext) = e->meta;
    }
    if ((gpu || runtime) && arg_int(c, find_arg(c, "correlation"), &v) && v) {
        e->corr = v;
        e->side = gpu ? 2 : 1;
        *imap_slot(&c->corr_side, v) |= e->side;
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
    if (ch != '{') return jfail(j, 422, "not a trace: expected '{' or '['");
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
static uint32_t plane_index(ct *c, smap *ix, plane_out **pl, size_t *n, size_t *cap,
                            const char *name, int64_t device) {
    int found;
    struct sent *e = smap_put(ix, &c->arena, name, strlen(name), &found);
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

static void write_space(ct *c, const xpv_ct_options *opt, xpv_buf *out) {
    /* Planes and line names. */
    plane_out *pl = NULL;
    size_t npl = 0, cappl = 0;
    smap plane_ix = {0};
    for (size_t i = 0; i < c->nlines; i++) {
        ctline *ln = &c->lines[i];
        const char *pname = name_map_get(c, &c->proc_names, ln->pid, strlen(ln->pid));
        char buf[64];
        int64_t dev = -1, num;
        if (pname && (!strncmp(pname, "/host:", 6) || !strncmp(pname, "/device:", 8))) {
            snprintf(buf, sizeof buf, "%s", pname);
            const char *g = strrchr(pname, ':');
            if (!strncmp(pname, "/device:GPU:", 12) && g && parse_i64(g + 1, &num)) dev = num;
        } else if (ln->gpu) {
            dev = parse_i64(ln->pid, &num) ? num : ln->device >= 0 ? ln->device : 0;
            snprintf(buf, sizeof buf, "/device:GPU:%lld", (long long)dev);
        } else {
            snprintf(buf, sizeof buf, "/host:CPU");
        }
        ln->plane = plane_index(c, &plane_ix, &pl, &npl, &cappl, buf, dev);
        if (ln->gpu && !(pname && (!strncmp(pname, "/host:", 6) ||
                                   !strncmp(pname, "/device:", 8))))
            pl[ln->plane].kineto = 1;
    }
    free(plane_ix.slots);
    /* Sort planes (host first, then GPUs by ordinal; names are unique, so
     * the order is total) and remap the lines: one sort, no search.  The
     * new index travels in `id` during the sort. */
    uint32_t *remap = xpv_xcalloc(npl ? npl : 1, sizeof *remap);
    for (size_t i = 0; i < npl; i++) pl[i].id = (int64_t)i;
    plane_cmp_count = &c->sum.work;
    if (npl) qsort(pl, npl, sizeof *pl, cmp_plane);   /* pl is NULL when empty */
    plane_cmp_count = NULL;
    for (size_t k = 0; k < npl; k++) remap[pl[k].id] = (uint32_t)k;
    for (size_t i = 0; i < c->nlines; i++) c->lines[i].plane = remap[c->lines[i].plane];
    c->sum.work += npl + c->nlines;
    for (size_t i = 0; i < npl; i++)
        pl[i].id = pl[i].device >= 0 ? pl[i].device + 1 : (int64_t)(i == 0 ? 0 : 1000 + i);

    /* Events grouped by line: counting sort, then sort each line. */
    size_t *start = xpv_xcalloc(c->nlines + 1, sizeof *start);
    for (size_t i = 0; i < c->nlines; i++) start[i + 1] = start[i] + c->lines[i].nev;
    uint32_t *order = xpv_xmalloc((c->nev ? c->nev : 1) * sizeof *order);
    size_t *fillp = xpv_xmalloc((c->nlines + 1) * sizeof *fillp);
    memcpy(fillp, start, (c->nlines + 1) * sizeof *fillp);
    for (size_t i = 0; i < c->nev; i++) order[fillp[c->ev[i].line]++] = (uint32_t)i;
    free(fillp);
    sort_base = c->ev;
    for (size_t i = 0; i < c->nlines; i++)
        qsort(order + start[i], start[i + 1] - start[i], sizeof *order, cmp_ev);

    uint32_t nmeta = (uint32_t)c->ev_names.n;
    uint32_t *used = xpv_xcalloc((size_t)nmeta + 1, sizeof *used);
    xpv_buf evb, tmp;
    xpv_buf_init(&evb);
    xpv_buf_init(&tmp);
    uint32_t sid_device_name = stat_id(c, "gpu_device_name", 15);
    uint32_t sid_major = stat_id(c, "compute_cap_major", 17);
    uint32_t sid_minor = stat_id(c, "compute_cap_minor", 17);
    uint32_t sid_cores = stat_id(c, "core_count", 10);
    uint32_t sid_mem = stat_id(c, "memory_size", 11);
    uint32_t sid_vendor = stat_id(c, "device_vendor", 13);
    uint32_t sid_occ_kind = stat_id(c, "occupancy_kind", 14);

    /* Lines grouped by plane (counting sort, line order kept), the first
     * deviceProperties entry of each GPU ordinal, and a list of the event
     * metadata each plane uses: each plane visits only its own. */
    size_t *pstart_ln = xpv_xcalloc(npl + 1, sizeof *pstart_ln);
    for (size_t i = 0; i < c->nlines; i++) pstart_ln[c->lines[i].plane + 1]++;
    for (size_t p = 0; p < npl; p++) pstart_ln[p + 1] += pstart_ln[p];
    uint32_t *plines = xpv_xmalloc((c->nlines ? c->nlines : 1) * sizeof *plines);
    {
        size_t *fill = xpv_xmalloc((npl + 1) * sizeof *fill);
        memcpy(fill, pstart_ln, (npl + 1) * sizeof *fill);
        for (size_t i = 0; i < c->nlines; i++) plines[fill[c->lines[i].plane]++] = (uint32_t)i;
        free(fill);
    }
    imap devix = {0};                 /* GPU ordinal -> index into c->dev + 1 */
    for (size_t d = 0; d < c->ndev; d++) {
        uint32_t *slot = imap_slot(&devix, c->dev[d].id);
        if (!*slot) *slot = (uint32_t)d + 1;
    }
    uint32_t *pmeta = xpv_xmalloc(((size_t)nmeta + 1) * sizeof *pmeta);
    c->sum.work += c->nlines + npl + c->ndev;

    for (size_t p = 0; p < npl; p++) {
        size_t npmeta = 0;
        size_t pstart = msg_open(out, 1);
        put_int(out, 1, pl[p].id);
        put_bytes(out, 2, pl[p].name, strlen(pl[p].name));
        /* Line ids: numeric tid when unique in the plane. */
        int64_t next_id = LINE_ID_BASE;
        imap ids = {0};
        for (size_t li = pstart_ln[p]; li < pstart_ln[p + 1]; li++) {
            ctline *ln = &c->lines[plines[li]];
            c->sum.work++;
            if (!ln->nev) continue;
            int64_t num;
            int is_num = ln->gpu && !ln->annot ? tid_number(ln->tid, &num)
                                               : parse_i64(ln->tid, &num);
            uint32_t *slot = is_num ? imap_slot(&ids, num) : NULL;
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
            if (ln->gpu && pl[p].device >= 0) {
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
        free(ids.slots);

        for (size_t li = pstart_ln[p]; li < pstart_ln[p + 1]; li++) {
            size_t i = plines[li];
            ctline *ln = &c->lines[i];
            c->sum.work++;
            if (!ln->nev) continue;
            c->sum.lines++;
            size_t lstart = msg_open(out, 3);
            put_int(out, 1, ln->id);
            put_bytes(out, 2, ln->name, strlen(ln->name));
            /* Events are sorted by ts: t0 is the smallest, so offsets are
             * >= 0; each is saturated, never wrapped. */
            int64_t t0 = c->ev[order[start[i]]].ts, t1 = t0;
            for (size_t k = start[i]; k < start[i + 1]; k++) {
                const ctev *e = &c->ev[order[k]];
                int64_t end = xpv_add_i64(e->ts, e->dur, NULL);
                if (end > t1) t1 = end;
            }
            put_int(out, 3, t0);
            put_int(out, 9, ns_to_ps(c, xpv_sub_i64(t1, t0, NULL)));
            for (size_t k = start[i]; k < start[i + 1]; k++) {
                const ctev *e = &c->ev[order[k]];
                if (used[e->meta] != (uint32_t)p + 1) {
                    used[e->meta] = (uint32_t)p + 1;
                    pmeta[npmeta++] = e->meta;
                }
                xpv_buf_reset(&evb);
                put_int(&evb, 1, e->meta);
                put_int(&evb, 2, ns_to_ps(c, xpv_sub_i64(e->ts, t0, NULL)));
                put_int(&evb, 3, ns_to_ps(c, e->dur));
                if (e->st_len) xpv_buf_add(&evb, c->blob.data + e->st_off, e->st_len);
                uint32_t op;
                if (e->ext && (op = imap_get(&c->ext_op, e->ext)))
                    put_stat(&evb, 4, c->sid_tf_op, SV_STR, 0, 0, c->ev_name_tab[op],
                             c->ev_name_len[op]);
                if (e->corr && imap_get(&c->corr_side, e->corr) == 3) {
                    uint64_t flow = ((uint64_t)e->corr & ((1ULL << 56) - 1)) << 2;
                    flow |= (e->side == 1 ? 2u : 1u) | (FLOW_GPU_LAUNCH << 58);
                    put_stat(&evb, 4, c->sid_flow, SV_UINT, (int64_t)flow, 0, NULL, 0);
                }
                put_msg(out, 4, &evb);
                c->sum.events_out++;
            }
            msg_close(out, lstart);
        }
        /* Event metadata used by this plane, by id. */
        qsort(pmeta, npmeta, sizeof *pmeta, cmp_u32);
        c->sum.work += npmeta;
        for (size_t mi = 0; mi < npmeta; mi++) {
            uint32_t m = pmeta[mi];
            xpv_buf_reset(&tmp);
            put_int(&tmp, 1, m);
            put_bytes(&tmp, 2, c->ev_name_tab[m], c->ev_name_len[m]);
            xpv_buf_reset(&evb);
            put_int(&evb, 1, m);
            put_msg(&evb, 2, &tmp);
            put_msg(out, 4, &evb);
        }
        /* Stat metadata: the whole (small) table in every plane. */
        for (uint32_t s = 1; s <= c->stat_names.n; s++) {
            xpv_buf_reset(&tmp);
            put_int(&tmp, 1, s);
            put_bytes(&tmp, 2, c->stat_tab[s], c->stat_len[s]);
            xpv_buf_reset(&evb);
            put_int(&evb, 1, s);
            put_msg(&evb, 2, &tmp);
            put_msg(out, 5, &evb);
        }
        /* Device capabilities. */
        uint32_t dix = pl[p].device >= 0 ? imap_get(&devix, pl[p].device) : 0;
        for (size_t d = dix ? dix - 1 : c->ndev; d < c->ndev; d++) {
            const devprop *dp = &c->dev[d];
            if (dp->name)
                put_stat(out, 6, sid_device_name, SV_STR, 0, 0, dp->name, strlen(dp->name));
            if (dp->has_major) {
                put_stat(out, 6, sid_major, SV_INT, dp->major, 0, NULL, 0);
                put_stat(out, 6, sid_minor, SV_INT, dp->minor, 0, NULL, 0);
            }
            if (dp->sms) put_stat(out, 6, sid_cores, SV_INT, dp->sms, 0, NULL, 0);
            if (dp->mem) put_stat(out, 6, sid_mem, SV_INT, dp->mem, 0, NULL, 0);
            const char *vendor = dp->amd ? "AMD" : "Nvidia";
            put_stat(out, 6, sid_vendor, SV_STR, 0, 0, vendor, strlen(vendor));
            break;
        }
        /* Kineto's occupancy (kernel_details occ_pct here) is its "est.
         * achieved occupancy %", not XProf's theoretical one: say so. */
        if (pl[p].kineto)
            put_stat(out, 6, sid_occ_kind, SV_STR, 0, 0, "achieved", 8);
        msg_close(out, pstart);
        c->sum.planes++;
    }
    /* Warnings and host name. */
    char w[200];
    if (c->sum.truncated) {
        snprintf(w, sizeof w, "trace JSON ends early (at byte %llu): kept the %llu events read",
                 (unsigned long long)c->sum.json_bytes, (unsigned long long)c->nev);
        put_bytes(out, 3, w, strlen(w));
    }
    if (c->sum.clamped) {
        snprintf(w, sizeof w, "%llu event times or durations beyond the int64 picosecond range "
                 "(e.g. dur of 1e15 us) were clamped to %lld ps",
                 (unsigned long long)c->sum.clamped, (long long)CT_MAX_PS);
        put_bytes(out, 3, w, strlen(w));
    }
    if (c->sum.skipped) {
        snprintf(w, sizeof w, "%llu trace events of unsupported phases (B/E, C, b/e...) skipped",
                 (unsigned long long)c->sum.skipped);
        put_bytes(out, 3, w, strlen(w));
    }
    if (opt && opt->hostname && *opt->hostname)
        put_bytes(out, 4, opt->hostname, strlen(opt->hostname));
    c->sum.devices = (uint32_t)c->ndev;

    xpv_buf_free(&evb);
    xpv_buf_free(&tmp);
    free(used);
    free(pmeta);
    free(plines);
    free(pstart_ln);
    free(devix.slots);
    free(order);
    free(start);
    free(remap);
    free(pl);
}

static void ct_free(ct *c) {
    xpv_arena_free(&c->arena);
    xpv_buf_free(&c->blob);
    xpv_buf_free(&c->text);
    free(c->ev);
    free(c->lines);
    free(c->line_ix.slots);
    free(c->ev_names.slots);
    free(c->ev_name_tab);
    free(c->ev_name_len);
    free(c->stat_names.slots);
    free(c->stat_tab);
    free(c->stat_len);
    free(c->proc_names.slots);
    free(c->thread_names.slots);
    free(c->pnames);
    free(c->ext_op.slots);
    free(c->corr_side.slots);
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
        if (jws(&c->in) >= 0) rc = jfail(&c->in, 422, "unexpected data after the trace");
    }
    c->sum.json_bytes = c->in.base + c->in.pos;
    if (!rc && jfailed(&c->in)) rc = -1;
    if (!rc) write_space(c, opt, out);
    if (sum) *sum = c->sum;
    ct_free(c);
    free(c);
    return rc ? -1 : 0;
}

/* ==== Input sources: memory or a file descriptor, plain or gzip ========= */

#define SRC_CHUNK (1024 * 1024)   /* fd reads of compressed input */

/* The raw bytes come from memory (mem != NULL) or from fd, read into
 * ibuf; gzip input is inflated into the tokenizer's window.  Plain fd
 * input is read straight into the window (no copy), after whatever the
 * magic-number probe left in ibuf. */
typedef struct src {
    const unsigned char *mem;
    size_t mem_len, mem_pos;
    int fd;
    unsigned char *ibuf;
    size_t ipos, ilen;            /* unread raw bytes: ibuf[ipos..ilen) */
    uint64_t raw;                 /* raw bytes taken from mem / fd */
    int raw_eof, raw_err, raw_errno;
    int gz, zinit, zend;
    int bomb;                     /* stopped: a ratio no real trace has */
    uint64_t zout;                /* bytes inflated so far */
    z_stream z;
} src;

/* read() from the fd into `buf` (EINTR retried): bytes read, 0 at the end
 * of the file (remembered), -1 on error (errno kept). */
static long src_fd_read(src *s, unsigned char *buf, size_t cap) {
    if (s->raw_eof) return 0;
    for (;;) {
        ssize_t r = read(s->fd, buf, cap);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            s->raw_err = 1;
            s->raw_errno = errno;
            return -1;
        }
        if (r == 0) s->raw_eof = 1;
        s->raw += (uint64_t)r;
        return (long)r;
    }
}

/* The next raw chunk (at most `cap` bytes; from ibuf first).  Returns its
 * length, 0 at end of input, -1 on a read error. */
static long src_raw(src *s, const unsigned char **p, size_t cap) {
    if (s->ipos < s->ilen) {
        size_t n = s->ilen - s->ipos < cap ? s->ilen - s->ipos : cap;
        *p = s->ibuf + s->ipos;
        s->ipos += n;
        return (long)n;
    }
    if (s->mem) {
        size_t n = s->mem_len - s->mem_pos < cap ? s->mem_len - s->mem_pos : cap;
        *p = s->mem + s->mem_pos;
        s->mem_pos += n;
        s->raw += n;
        return (long)n;
    }
    long r = src_fd_read(s, s->ibuf, cap < SRC_CHUNK ? cap : SRC_CHUNK);
    *p = s->ibuf;
    s->ipos = s->ilen = 0;
    return r;
}

/* Plain input: copy (memory, probe leftovers) or read into the window. */
static long src_plain(src *s, unsigned char *buf, size_t cap) {
    if (s->mem || s->ipos < s->ilen) {
        const unsigned char *p;
        long n = src_raw(s, &p, cap);
        if (n > 0) memcpy(buf, p, (size_t)n);
        return n;
    }
    return src_fd_read(s, buf, cap);
}

/* Whether another gzip member follows the one that just ended. */
static int src_more_gzip(src *s) {
    if (s->z.avail_in == 0) {
        const unsigned char *p;
        long n = src_raw(s, &p, SRC_CHUNK);
        if (n <= 0) return 0;
        s->z.next_in = (unsigned char *)(uintptr_t)p;
        s->z.avail_in = (uInt)n;
    }
    /* A member header split after its first byte is too short to be one. */
    return s->z.avail_in >= 2 && s->z.next_in[0] == 0x1f && s->z.next_in[1] == 0x8b;
}

static long src_read(void *vctx, void *vbuf, size_t cap) {
    src *s = vctx;
    unsigned char *buf = vbuf;
    if (!s->gz) return src_plain(s, buf, cap);
    if (s->zend) return 0;
    if (!s->zinit) {
        memset(&s->z, 0, sizeof s->z);
        if (inflateInit2(&s->z, 15 + 32) != Z_OK) return -1;
        s->zinit = 1;
    }
    if (cap > UINT32_MAX) cap = UINT32_MAX;
    s->z.next_out = buf;
    s->z.avail_out = (uInt)cap;
    while (s->z.avail_out == cap) {
        if (s->z.avail_in == 0) {
            const unsigned char *p;
            long n = src_raw(s, &p, s->mem ? (1u << 30) : SRC_CHUNK);
            if (n < 0) return -1;
            if (n == 0) {           /* the stream ends before its trailer */
                s->zend = 1;
                break;
            }
            s->z.next_in = (unsigned char *)(uintptr_t)p;
            s->z.avail_in = (uInt)n;
        }
        int zr = inflate(&s->z, Z_NO_FLUSH);
        if (zr == Z_STREAM_END) {
            /* Concatenated gzip members: continue with the next one. */
            if (src_more_gzip(s)) {
                if (inflateReset(&s->z) != Z_OK) return -1;
                continue;
            }
            if (s->raw_err) return -1;
            s->zend = 1;
            break;
        }
        if (zr != Z_OK && zr != Z_BUF_ERROR) return -1;
    }
    /* The same bomb rule as base/gz.c: past the floor, more than
     * XPV_GZ_MAX_RATIO:1 stops the read (413, see src_convert). */
    s->zout += cap - s->z.avail_out;
    if (s->zout > XPV_GZ_RATIO_FLOOR && s->zout / XPV_GZ_MAX_RATIO > s->raw - s->z.avail_in) {
        s->bomb = 1;
        return -1;
    }
    return (long)(cap - s->z.avail_out);
}

/* Run the converter over `s` (gz already decided) and clean up. */
static int src_convert(src *s, const xpv_ct_options *opt, xpv_buf *out,
                       xpv_ct_summary *sum, xpv_ct_error *err) {
    xpv_ct_error local;
    if (!err) err = &local;
    int rc = xpv_ct_convert(src_read, s, opt, out, sum, err);
    if (s->zinit) inflateEnd(&s->z);
    if (sum) sum->input_bytes = s->raw;
    if (rc && s->bomb) {
        err->status = 413;
        snprintf(err->msg, sizeof err->msg, "gzip bomb: %llu compressed bytes inflate to "
                 "over %llu MiB (more than %u:1; no real trace compresses that well)",
                 (unsigned long long)(s->raw - s->z.avail_in),
                 (unsigned long long)(s->zout >> 20), (unsigned)XPV_GZ_MAX_RATIO);
    } else if (rc && err->status == 500) {
        if (s->raw_err)
            snprintf(err->msg, sizeof err->msg, "read error after %llu bytes: %s",
                     (unsigned long long)s->raw, strerror(s->raw_errno));
        else if (s->gz)
            snprintf(err->msg, sizeof err->msg, "corrupt gzip stream (at compressed byte "
                     "%llu)", (unsigned long long)(s->raw - (s->zinit ? s->z.avail_in : 0)));
    }
    return rc;
}

int xpv_ct_convert_mem(const void *data, size_t len, const xpv_ct_options *opt,
                       xpv_buf *out, xpv_ct_summary *sum, xpv_ct_error *err) {
    src s;
    memset(&s, 0, sizeof s);
    s.mem = data ? data : (const void *)"";
    s.mem_len = data ? len : 0;
    s.fd = -1;
    s.gz = len >= 2 && s.mem[0] == 0x1f && s.mem[1] == 0x8b;
    return src_convert(&s, opt, out, sum, err);
}

int xpv_ct_convert_fd(int fd, const xpv_ct_options *opt, xpv_buf *out,
                      xpv_ct_summary *sum, xpv_ct_error *err) {
    src s;
    memset(&s, 0, sizeof s);
    s.fd = fd;
    s.ibuf = xpv_xmalloc(SRC_CHUNK);
    /* Probe the magic: read until 2 bytes are in (or the input ends). */
    while (s.ilen < 2 && !s.raw_eof && !s.raw_err) {
        ssize_t r = read(fd, s.ibuf + s.ilen, SRC_CHUNK - s.ilen);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            s.raw_err = 1;
            s.raw_errno = errno;
        } else if (r == 0) {
            s.raw_eof = 1;
        } else {
            s.raw += (uint64_t)r;
            s.ilen += (size_t)r;
        }
    }
    s.gz = s.ilen >= 2 && s.ibuf[0] == 0x1f && s.ibuf[1] == 0x8b;
    int rc;
    if (s.raw_err) {
        xpv_ct_error local;
        if (!err) err = &local;
        memset(err, 0, sizeof *err);
        err->status = 500;
        snprintf(err->msg, sizeof err->msg, "read error: %s", strerror(s.raw_errno));
        rc = -1;
    } else {
        rc = src_convert(&s, opt, out, sum, err);
    }
    free(s.ibuf);
    return rc;
}
