/*
 * grow_xplane.c - C twin of ../shared/tools/grow_xplane.py, for profiles
 * past what Python makes in reasonable time (a 10 GB file; issue 17).
 *
 *   grow_xplane IN.xplane.pb OUT.xplane.pb TARGET_BYTES
 *
 * Same output bytes as the Python tool: k = round(TARGET / input size)
 * (ties to even, as Python rounds) copies of every line's events, copy c
 * with offset_ps + c * (line span + 1 us) written after the event's other
 * fields that precede offset_ps, the rest after; a line's other fields
 * first.  Streams: each grown plane's length is computed first, then it is
 * written line by line, so memory stays the input's size.  Check: its
 * output has the md5 of grow_xplane.py's for the same arguments.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "wire.h"

typedef struct part {          /* one event: bytes around its offset_ps */
    const uint8_t *pre, *post;
    size_t npre, npost;
    uint64_t off;
} part;

static FILE *out;

static int vlen(uint64_t v) {
    int n = 1;
    while (v >= 0x80) v >>= 7, n++;
    return n;
}

static void put_varint(uint64_t v) {
    while (v >= 0x80) {
        putc((int)(v & 0x7f) | 0x80, out);
        v >>= 7;
    }
    putc((int)v, out);
}

/* Events of a line, head fields' byte ranges; 0 when it is not grown. */
typedef struct line {
    const uint8_t *s, *e;
    part *parts;
    size_t nparts;
    const uint8_t **head_s, **head_e;
    size_t nhead;
    uint64_t step;
} line;

static void parse_line(line *ln, const uint8_t *s, const uint8_t *e) {
    memset(ln, 0, sizeof *ln);
    ln->s = s;
    ln->e = e;
    size_t cap = 0, hcap = 0;
    uint64_t lo = 0, hi = 0;
    for (const uint8_t *p = s; p < e;) {
        const uint8_t *k0 = p, *v = NULL;
        uint64_t tag = 0, len = 0;
        if (!wire_varint(&p, e, &tag)) { fprintf(stderr, "bad line\n"); exit(1); }
        if (tag == ((4 << 3) | WT_LEN)) {
            if (!wire_len(&p, e, &v, &len)) exit(1);
            part pt = {v, v + len, len, 0, 0};
            uint64_t dur = 0;
            for (const uint8_t *q = v; q < v + len;) {
                const uint8_t *j0 = q;
                uint64_t t2 = 0, x = 0;
                if (!wire_varint(&q, v + len, &t2)) exit(1);
                if (t2 == ((2 << 3) | WT_VARINT) || t2 == ((3 << 3) | WT_VARINT)) {
                    if (!wire_varint(&q, v + len, &x)) exit(1);
                    if (t2 == ((2 << 3) | WT_VARINT)) {
                        pt.off = x;
                        pt.npre = (size_t)(j0 - v);
                        pt.post = q;
                        pt.npost = (size_t)(v + len - q);
                    } else {
                        dur = x;
                    }
                } else if (!wire_skip(&q, v + len, (unsigned)(t2 & 7))) {
                    exit(1);
                }
            }
            if (ln->nparts == cap) {
                cap = cap ? cap * 2 : 64;
                ln->parts = realloc(ln->parts, cap * sizeof *ln->parts);
            }
            if (!ln->nparts || pt.off < lo) lo = pt.off;
            if (!ln->nparts || pt.off + dur > hi) hi = pt.off + dur;
            ln->parts[ln->nparts++] = pt;
        } else {
            if (!wire_skip(&p, e, (unsigned)(tag & 7))) exit(1);
            if (ln->nhead == hcap) {
                hcap = hcap ? hcap * 2 : 8;
                ln->head_s = realloc(ln->head_s, hcap * sizeof *ln->head_s);
                ln->head_e = realloc(ln->head_e, hcap * sizeof *ln->head_e);
            }
            ln->head_s[ln->nhead] = k0;
            ln->head_e[ln->nhead++] = p;
        }
    }
    ln->step = hi - lo + 1000000;
}

static uint64_t line_size(const line *ln, uint64_t k) {
    if (!ln->nparts || k <= 1) return (uint64_t)(ln->e - ln->s);
    uint64_t n = 0;
    for (size_t h = 0; h < ln->nhead; h++) n += (uint64_t)(ln->head_e[h] - ln->head_s[h]);
    for (uint64_t c = 0; c < k; c++)
        for (size_t i = 0; i < ln->nparts; i++) {
            const part *pt = &ln->parts[i];
            uint64_t body = pt->npre + 1 + (uint64_t)vlen(pt->off + c * ln->step) + pt->npost;
            n += 1 + (uint64_t)vlen(body) + body;
        }
    return n;
}

static void line_write(const line *ln, uint64_t k) {
    if (!ln->nparts || k <= 1) {
        fwrite(ln->s, 1, (size_t)(ln->e - ln->s), out);
        return;
    }
    for (size_t h = 0; h < ln->nhead; h++)
        fwrite(ln->head_s[h], 1, (size_t)(ln->head_e[h] - ln->head_s[h]), out);
    for (uint64_t c = 0; c < k; c++)
        for (size_t i = 0; i < ln->nparts; i++) {
            const part *pt = &ln->parts[i];
            uint64_t off = pt->off + c * ln->step;
            putc((4 << 3) | WT_LEN, out);
            put_varint(pt->npre + 1 + (uint64_t)vlen(off) + pt->npost);
            fwrite(pt->pre, 1, pt->npre, out);
            putc((2 << 3) | WT_VARINT, out);
            put_varint(off);
            fwrite(pt->post, 1, pt->npost, out);
        }
}

static void grow_plane(const uint8_t *s, const uint8_t *e, uint64_t k) {
    size_t n = 0, cap = 0;
    line *lines = NULL;
    uint64_t total = 0;
    for (const uint8_t *p = s; p < e;) {      /* pass 1: lengths */
        const uint8_t *k0 = p, *v = NULL;
        uint64_t tag = 0, len = 0;
        if (!wire_varint(&p, e, &tag)) exit(1);
        if (tag == ((3 << 3) | WT_LEN)) {
            if (!wire_len(&p, e, &v, &len)) exit(1);
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                lines = realloc(lines, cap * sizeof *lines);
            }
            parse_line(&lines[n], v, v + len);
            uint64_t ls = line_size(&lines[n++], k);
            total += 1 + (uint64_t)vlen(ls) + ls;
        } else {
            if (!wire_skip(&p, e, (unsigned)(tag & 7))) exit(1);
            total += (uint64_t)(p - k0);
        }
    }
    putc((1 << 3) | WT_LEN, out);
    put_varint(total);
    size_t li = 0;
    for (const uint8_t *p = s; p < e;) {      /* pass 2: bytes */
        const uint8_t *k0 = p, *v = NULL;
        uint64_t tag = 0, len = 0;
        wire_varint(&p, e, &tag);
        if (tag == ((3 << 3) | WT_LEN)) {
            wire_len(&p, e, &v, &len);
            putc((3 << 3) | WT_LEN, out);
            put_varint(line_size(&lines[li], k));
            line_write(&lines[li], k);
            free(lines[li].parts);
            free(lines[li].head_s);
            free(lines[li].head_e);
            li++;
        } else {
            wire_skip(&p, e, (unsigned)(tag & 7));
            fwrite(k0, 1, (size_t)(p - k0), out);
        }
    }
    free(lines);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: grow_xplane IN.xplane.pb OUT.xplane.pb TARGET_BYTES\n");
        return 2;
    }
    size_t len;
    const uint8_t *b = bench_read_all(argv[1], &len);
    double r = nearbyint(strtod(argv[3], NULL) / (double)len);   /* ties to even */
    uint64_t k = r < 1 ? 1 : (uint64_t)r;
    out = fopen(argv[2], "wb");
    if (!out) { perror(argv[2]); return 1; }
    static char obuf[1 << 20];
    setvbuf(out, obuf, _IOFBF, sizeof obuf);
    for (const uint8_t *p = b, *e = b + len; p < e;) {
        const uint8_t *k0 = p, *v = NULL;
        uint64_t tag = 0, l = 0;
        if (!wire_varint(&p, e, &tag)) { fprintf(stderr, "bad XSpace\n"); return 1; }
        if (tag == ((1 << 3) | WT_LEN)) {
            if (!wire_len(&p, e, &v, &l)) return 1;
            grow_plane(v, v + l, k);
        } else {
            if (!wire_skip(&p, e, (unsigned)(tag & 7))) return 1;
            fwrite(k0, 1, (size_t)(p - k0), out);
        }
    }
    if (fclose(out)) { perror(argv[2]); return 1; }
    printf("%s: x%llu -> %s\n", argv[1], (unsigned long long)k, argv[2]);
    return 0;
}
