/*
 * hlo.c - index and lazy decoding of the HLO protos of a profile (hlo.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "collections.h"
#include "hlo.h"
#include "util.h"
#include "wire.h"

_Thread_local uint64_t xpv_hlo_probes;

static size_t decode_budget;

void xpv_hlo_set_decode_budget(size_t bytes) {
    __atomic_store_n(&decode_budget, bytes, __ATOMIC_RELAXED);
}

/* protobuf-c's allocations for one decode, counted (with malloc's own
 * overhead, about 16 bytes a block) and refused past `cap`.  The blocks
 * are plain malloc ones: free_unpacked with the default allocator frees
 * them. */
typedef struct counting {
    size_t used, cap;
    int over;
} counting;

static void *count_alloc(void *ud, size_t n) {
    counting *c = ud;
    if (c->cap && (n > c->cap || c->used + n + 16 > c->cap)) {
        c->over = 1;
        return NULL;
    }
    c->used += n + 16;
    return malloc(n ? n : 1);
}

static void count_free(void *ud, void *p) {
    (void)ud;
    free(p);
}

/* ==== Index ============================================================== */

static int is_hlo_stat_name(xpv_str n) {
    return xpv_str_eq(n, "Hlo Proto") || xpv_str_eq(n, "HLO Proto");
}

/* Calls fn for each HLO bytes stat of the profile's metadata plane. */
typedef void (*proto_fn)(void *ctx, const xpv_plane *pl, uint32_t plane, uint32_t meta,
                         uint32_t stat);

static void each_proto(const xpv_profile *p, proto_fn fn, void *ctx) {
    for (uint32_t pi = 0; pi < p->nplanes; pi++) {
        const xpv_plane *pl = &p->planes[pi];
        if (!xpv_str_eq(pl->name, "/host:metadata")) continue;
        for (uint32_t mi = 1; mi < pl->nevent_meta; mi++) {
            const xpv_event_meta *em = &pl->event_meta[mi];
            for (uint32_t si = 0; si < em->nstats; si++) {
                const xpv_stat *st = &em->stats[si];
                if (st->meta < 0 || (uint32_t)st->meta >= pl->nstat_meta) continue;
                if (st->kind != XPV_STAT_BYTES && st->kind != XPV_STAT_STR) continue;
                if (!is_hlo_stat_name(pl->stat_meta[st->meta].name)) continue;
                fn(ctx, pl, pi, mi, si);
            }
        }
    }
}

static void count_fn(void *ctx, const xpv_plane *pl, uint32_t plane, uint32_t meta,
                     uint32_t stat) {
    (void)pl, (void)plane, (void)meta, (void)stat;
    (*(size_t *)ctx)++;
}

size_t xpv_hlo_count_protos(const xpv_profile *p) {
    size_t n = 0;
    if (p) each_proto(p, count_fn, &n);
    return n;
}

typedef struct index_ctx {
    xpv_hlo_map *m;
    size_t cap;
} index_ctx;

static uint64_t meta_program_id(const xpv_plane *pl, const xpv_event_meta *em) {
    for (uint32_t i = 0; i < em->nstats; i++) {
        const xpv_stat *st = &em->stats[i];
        if (st->meta < 0 || (uint32_t)st->meta >= pl->nstat_meta) continue;
        if (!xpv_str_eq(pl->stat_meta[st->meta].name, "program_id")) continue;
        int64_t v;
        if (xpv_stat_as_int(st, &v)) return (uint64_t)v;
    }
    return (uint64_t)(em->id ? em->id : em->key);
}

/* Add a program; map_finish keeps the first of each id (the first host
 * wins).  (A scan for the id per program was quadratic: 7 MB of protos
 * took 78 s, issue 26.) */
static void map_add(index_ctx *c, uint64_t pid, const char *name, size_t name_len,
                    const uint8_t *bytes, size_t nbytes, size_t file_size) {
    xpv_hlo_map *m = c->m;
    if (m->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        m->progs = xpv_xrealloc(m->progs, c->cap * sizeof *m->progs);
    }
    xpv_hlo_program *p = &m->progs[m->n++];
    memset(p, 0, sizeof *p);
    p->program_id = pid;
    p->meta_name = strndup(name ? name : "", name_len);
    p->bytes = bytes;
    p->nbytes = nbytes;
    p->file_size = file_size;
    p->state = (int)(m->n - 1); /* the order added, until map_finish */
}

static int cmp_prog_order(const void *a, const void *b) {
    const xpv_hlo_program *x = a, *y = b;
    if (x->program_id != y->program_id) return x->program_id < y->program_id ? -1 : 1;
    return (x->state > y->state) - (x->state < y->state);
}

/* Sort by program id, keep the first added of each id. */
static void map_finish(xpv_hlo_map *m) {
    if (m->n) qsort(m->progs, m->n, sizeof *m->progs, cmp_prog_order);
    size_t w = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (w && m->progs[w - 1].program_id == m->progs[i].program_id) {
            free(m->progs[i].meta_name);
            continue;
        }
        m->progs[w] = m->progs[i];
        m->progs[w].state = 0;
        m->total_bytes += m->progs[w].nbytes;
        w++;
    }
    m->n = w;
}

static void index_fn(void *vctx, const xpv_plane *pl, uint32_t plane, uint32_t meta,
                     uint32_t stat) {
    (void)plane;
    struct {
        index_ctx c;
        size_t file_size;
    } *x = vctx;
    const xpv_event_meta *em = &pl->event_meta[meta];
    const xpv_str v = em->stats[stat].v.s;
    map_add(&x->c, meta_program_id(pl, em), em->name.ptr, em->name.len,
            (const uint8_t *)v.ptr, v.len, x->file_size);
}

static xpv_hlo_map *map_new(void) {
    xpv_hlo_map *m = xpv_xcalloc(1, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    return m;
}

xpv_hlo_map *xpv_hlo_map_build(const xpv_hostset *hs) {
    struct {
        index_ctx c;
        size_t file_size;
    } x = {{map_new(), 0}, 0};
    for (size_t h = 0; hs && h < hs->n; h++) {
        if (!hs->profiles[h]) continue;
        x.file_size = hs->profiles[h]->file_size;
        each_proto(hs->profiles[h], index_fn, &x);
    }
    map_finish(x.c.m);
    return x.c.m;
}

/* A proto found by xpv_hlo_list, before the first of each id is kept. */
typedef struct found_proto {
    uint64_t program_id;
    size_t order;
    const xpv_event_meta *em;
    xpv_str bytes;
} found_proto;

typedef struct list_ctx {
    found_proto *v;
    size_t n, cap;
} list_ctx;

static void list_fn(void *vctx, const xpv_plane *pl, uint32_t plane, uint32_t meta,
                    uint32_t stat) {
    (void)plane;
    list_ctx *c = vctx;
    const xpv_event_meta *em = &pl->event_meta[meta];
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->v = xpv_xrealloc(c->v, c->cap * sizeof *c->v);
    }
    c->v[c->n] = (found_proto){meta_program_id(pl, em), c->n, em, em->stats[stat].v.s};
    c->n++;
}

static int cmp_found(const void *a, const void *b) {
    const found_proto *x = a, *y = b;
    if (x->program_id != y->program_id) return x->program_id < y->program_id ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

static int cmp_found_order(const void *a, const void *b) {
    const found_proto *x = a, *y = b;
    return (x->order > y->order) - (x->order < y->order);
}

size_t xpv_hlo_list(const xpv_profile *p, xpv_arena *a, xpv_hlo_blob **out) {
    list_ctx c = {NULL, 0, 0};
    if (p) each_proto(p, list_fn, &c);
    /* the first of each program id, in the order found */
    if (c.n) qsort(c.v, c.n, sizeof *c.v, cmp_found);
    size_t w = 0;
    for (size_t i = 0; i < c.n; i++)
        if (!w || c.v[w - 1].program_id != c.v[i].program_id) c.v[w++] = c.v[i];
    if (w) qsort(c.v, w, sizeof *c.v, cmp_found_order);
    size_t file_size = p ? p->file_size : 0;
    xpv_hlo_blob *v = w ? xpv_arena_alloc(a, w * sizeof *v) : NULL;
    for (size_t i = 0; i < w; i++) {
        const xpv_event_meta *em = c.v[i].em;
        const xpv_str s = c.v[i].bytes;
        xpv_hlo_blob *b = &v[i];
        b->program_id = c.v[i].program_id;
        b->meta_name = xpv_arena_strndup(a, em->name.ptr ? em->name.ptr : "", em->name.len);
        b->nbytes = s.len;
        b->file_size = file_size;
        b->bytes = NULL;
        /* A proto bigger than its file is not one (xpv_hlo_decode says so). */
        if (s.ptr && (!file_size || s.len <= file_size)) {
            uint8_t *copy = xpv_arena_alloc(a, s.len ? s.len : 1);
            if (s.len) memcpy(copy, s.ptr, s.len);
            b->bytes = copy;
        }
    }
    free(c.v);
    *out = v;
    return w;
}

xpv_hlo_map *xpv_hlo_map_from_lists(const xpv_hlo_blob *const *lists, const size_t *counts,
                                    size_t n) {
    index_ctx c = {map_new(), 0};
    for (size_t h = 0; h < n; h++)
        for (size_t i = 0; lists && lists[h] && i < counts[h]; i++) {
            const xpv_hlo_blob *b = &lists[h][i];
            map_add(&c, b->program_id, b->meta_name, strlen(b->meta_name), b->bytes, b->nbytes,
                    b->file_size);
        }
    map_finish(c.m);
    return c.m;
}

void xpv_hlo_map_free(xpv_hlo_map *m) {
    if (!m) return;
    for (size_t i = 0; i < m->n; i++) {
        xpv_hlo_program *p = &m->progs[i];
        free(p->meta_name);
        if (p->proto) xla__hlo_proto__free_unpacked(p->proto, NULL);
        free(p->slots);
        free(p->id_slots);
        free(p->comps_by_id);
    }
    free(m->progs);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

const xpv_hlo_program *xpv_hlo_find(const xpv_hlo_map *m, uint64_t program_id) {
    size_t lo = 0, hi = m ? m->n : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t v = m->progs[mid].program_id;
        if (v == program_id) return &m->progs[mid];
        if (v < program_id) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* ==== Decoding =========================================================== */

/* protobuf-c unpacks nested messages recursively; the only recursive
 * message of the schema is ShapeProto (tuple_shapes).  Walk the path
 * HloProto.hlo_module -> computations -> instructions -> shape and refuse a
 * shape nested deeper than this before handing the bytes to protobuf-c. */
#define MAX_SHAPE_DEPTH 64

static int shape_ok(const uint8_t *p, const uint8_t *end, int depth) {
    if (depth > MAX_SHAPE_DEPTH) return 0;
    while (p < end) {
        uint64_t tag;
        if (!wire_varint(&p, end, &tag)) return 0;
        if (tag == ((4u << 3) | WT_LEN)) {
            const uint8_t *s;
            uint64_t n;
            if (!wire_len(&p, end, &s, &n) || !shape_ok(s, s + n, depth + 1)) return 0;
        } else if (!wire_skip(&p, end, (unsigned)(tag & 7))) {
            return 0;
        }
    }
    return 1;
}

/* Fields (by level) that lead to shapes: HloProto.1, Module.3,
 * Computation.2, Instruction.3 (shape). */
static int depth_ok(const uint8_t *p, const uint8_t *end, int level) {
    static const unsigned path[] = {1, 3, 2, 3};
    while (p < end) {
        uint64_t tag;
        if (!wire_varint(&p, end, &tag)) return 0;
        if ((tag & 7) == WT_LEN && (tag >> 3) == path[level]) {
            const uint8_t *s;
            uint64_t n;
            if (!wire_len(&p, end, &s, &n)) return 0;
            int ok = level == 3 ? shape_ok(s, s + n, 1) : depth_ok(s, s + n, level + 1);
            if (!ok) return 0;
        } else if (!wire_skip(&p, end, (unsigned)(tag & 7))) {
            return 0;
        }
    }
    return 1;
}

typedef struct comp_pos {
    const Xla__HloComputationProto *c;
    size_t pos;
} comp_pos;

static int cmp_comp_pos(const void *x, const void *y) {
    const comp_pos *a = x, *b = y;
    if (a->c->id != b->c->id) return a->c->id < b->c->id ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

/* The computations by id, for xpv_hlo_computation's binary search (was a
 * scan of every computation per lookup: quadratic, issue 26). */
static void index_computations(xpv_hlo_program *p) {
    const Xla__HloModuleProto *mod = p->module;
    comp_pos *t = xpv_xmalloc((mod->n_computations ? mod->n_computations : 1) * sizeof *t);
    size_t n = 0;
    for (size_t c = 0; c < mod->n_computations; c++)
        if (mod->computations[c]) t[n++] = (comp_pos){mod->computations[c], c};
    qsort(t, n, sizeof *t, cmp_comp_pos);
    p->comps_by_id = xpv_xmalloc((n ? n : 1) * sizeof *p->comps_by_id);
    for (size_t i = 0; i < n; i++) p->comps_by_id[i] = t[i].c;
    p->ncomps_by_id = n;
    free(t);
}

static void index_instructions(xpv_hlo_program *p) {
    const Xla__HloModuleProto *mod = p->module;
    index_computations(p);
    size_t n = 0;
    for (size_t c = 0; c < mod->n_computations; c++)
        if (mod->computations[c]) n += mod->computations[c]->n_instructions;
    size_t ns = 16;
    while (ns < n * 2) ns *= 2;
    p->slots = xpv_xcalloc(ns, sizeof *p->slots);
    p->id_slots = xpv_xcalloc(ns, sizeof *p->id_slots);
    p->nslots = ns;
    for (size_t c = 0; c < mod->n_computations; c++) {
        const Xla__HloComputationProto *comp = mod->computations[c];
        if (!comp) continue;
        for (size_t i = 0; i < comp->n_instructions; i++) {
            const Xla__HloInstructionProto *ins = comp->instructions[i];
            if (!ins || !ins->name) continue;
            size_t len = strlen(ins->name);
            size_t j = xpv_hash64_seeded(ins->name, len) & (ns - 1);
            int dup = 0;
            while (p->slots[j].ins) {
                if (!strcmp(p->slots[j].ins->name, ins->name)) {
                    dup = 1; /* first one wins */
                    break;
                }
                j = (j + 1) & (ns - 1);
            }
            if (!dup) p->slots[j] = (xpv_hlo_instr){ins, comp};
            j = mix64s((uint64_t)ins->id) & (ns - 1);
            dup = 0;
            while (p->id_slots[j].ins) {
                xpv_hlo_probes++;
                if (p->id_slots[j].ins->id == ins->id) {
                    dup = 1;
                    break;
                }
                j = (j + 1) & (ns - 1);
            }
            if (!dup) p->id_slots[j] = (xpv_hlo_instr){ins, comp};
        }
    }
}

static int index_call(void *p) {
    index_instructions(p);
    return 0;
}

const xpv_hlo_program *xpv_hlo_decode(xpv_hlo_map *m, const xpv_hostset *hs,
                                      const xpv_hlo_program *cprog, xpv_err *err) {
    if (!m || !cprog) {
        xpv_err_set(err, XPV_E_NOT_FOUND, "no such HLO program");
        return NULL;
    }
    xpv_hlo_program *p = (xpv_hlo_program *)cprog;
    (void)hs;
    pthread_mutex_lock(&m->mu);
    if (p->state == 0) {
        const uint8_t *bytes = p->bytes;
        size_t len = p->nbytes;
        p->error_status = XPV_E_BAD_PROFILE;
        if (!bytes && !len) {
            snprintf(p->error, sizeof p->error,
                     "program %s: its HLO proto is no longer in the profile", p->meta_name);
        } else if (!bytes || (p->file_size && len > p->file_size)) {
            snprintf(p->error, sizeof p->error,
                     "program %s: HLO proto of %zu bytes is larger than its file", p->meta_name,
                     len);
        } else if (!depth_ok(bytes, bytes + len, 0)) {
            snprintf(p->error, sizeof p->error,
                     "program %s: HLO proto (%zu bytes) is malformed or nests shapes "
                     "deeper than %d",
                     p->meta_name, len, MAX_SHAPE_DEPTH);
        } else {
            size_t budget = __atomic_load_n(&decode_budget, __ATOMIC_RELAXED);
            counting cnt = {0, 0, 0};
            if (budget) cnt.cap = budget > m->decoded_heap ? budget - m->decoded_heap : 1;
            ProtobufCAllocator al = {count_alloc, count_free, &cnt};
            p->proto = xla__hlo_proto__unpack(&al, len, bytes);
            if (p->proto) m->decoded_heap += cnt.used; /* else it was freed */
            if (!p->proto && cnt.over) {
                snprintf(p->error, sizeof p->error,
                         "program %s: its HLO proto (%zu bytes) would take more than the "
                         "%zu MiB memory budget (--cache_mb) decoded", p->meta_name, len,
                         budget >> 20);
                p->error_status = XPV_E_TOO_LARGE;
            } else if (!p->proto) {
                snprintf(p->error, sizeof p->error,
                         "program %s: HLO proto (%zu bytes) does not decode", p->meta_name, len);
            } else if (!p->proto->hlo_module) {
                snprintf(p->error, sizeof p->error, "program %s: HLO proto has no module",
                         p->meta_name);
            }
        }
        size_t failed = 0;
        if (p->proto && p->proto->hlo_module) {
            p->module = p->proto->hlo_module;
            /* The lock is held: an allocation failure must come back here. */
            if (xpv_oom_run(index_call, p, &failed) == XPV_OOM_FAILED) {
                snprintf(p->error, sizeof p->error,
                         "program %s: out of memory indexing its instructions (%zu bytes)",
                         p->meta_name, failed);
                p->error_status = XPV_E_TOO_LARGE;
                p->module = NULL;
                p->state = -1;
            } else {
                p->state = 1;
                p->cost_units_left = XPV_HLO_COST_PROGRAM_BUDGET;
                m->decoded_bytes += len;
                m->decoded_heap += p->nslots * 2 * sizeof *p->slots +
                                   p->ncomps_by_id * sizeof *p->comps_by_id;
            }
        } else {
            p->state = -1;
        }
    }
    int ok = p->state == 1;
    pthread_mutex_unlock(&m->mu);
    if (!ok) {
        xpv_err_set(err, p->error_status ? p->error_status : XPV_E_BAD_PROFILE, "%s", p->error);
        return NULL;
    }
    return p;
}

/* ==== Lookups ============================================================ */

xpv_hlo_instr xpv_hlo_instr_by_name(const xpv_hlo_program *p, const char *name, size_t len) {
    xpv_hlo_instr none = {NULL, NULL};
    if (!p || p->state != 1 || !p->nslots) return none;
    if (len && name[0] == '%') name++, len--;
    size_t j = xpv_hash64_seeded(name, len) & (p->nslots - 1);
    while (p->slots[j].ins) {
        const char *n = p->slots[j].ins->name;
        if (strlen(n) == len && !memcmp(n, name, len)) return p->slots[j];
        j = (j + 1) & (p->nslots - 1);
    }
    return none;
}

xpv_hlo_instr xpv_hlo_instr_by_id(const xpv_hlo_program *p, int64_t id) {
    xpv_hlo_instr none = {NULL, NULL};
    if (!p || p->state != 1 || !p->nslots) return none;
    size_t j = mix64s((uint64_t)id) & (p->nslots - 1);
    while (p->id_slots[j].ins) {
        xpv_hlo_probes++;
        if (p->id_slots[j].ins->id == id) return p->id_slots[j];
        j = (j + 1) & (p->nslots - 1);
    }
    return none;
}

const Xla__HloComputationProto *xpv_hlo_computation(const xpv_hlo_program *p, int64_t id) {
    if (!p || !p->module || !p->comps_by_id) return NULL;
    size_t lo = 0, hi = p->ncomps_by_id;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->comps_by_id[mid]->id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < p->ncomps_by_id && p->comps_by_id[lo]->id == id ? p->comps_by_id[lo] : NULL;
}

/* ==== Text =============================================================== */

static const char *type_name(int t) {
    static const char *const names[] = {
        "invalid", "pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64",
        "f16", "f32", "f64", "tuple", "opaque", "c64", "bf16", "token", "c128", "f8e5m2",
        "f8e4m3fn", "s4", "u4", "f8e4m3b11fnuz", "f8e5m2fnuz", "f8e4m3fnuz", "s2", "u2",
        "f8e4m3", "f8e3m4", "f4e2m1fn", "f8e8m0fnu", "s1", "u1", "buffer",
    };
    if (t >= 0 && (size_t)t < sizeof names / sizeof names[0]) return names[t];
    return "unknown";
}

static void layout_text(xpv_buf *b, const Xla__LayoutProto *l) {
    xpv_buf_putc(b, '{');
    for (size_t i = 0; i < l->n_minor_to_major; i++) {
        if (i) xpv_buf_putc(b, ',');
        xpv_buf_i64(b, l->minor_to_major[i]);
    }
    int colon = 0;
    if (l->n_tiles) {
        xpv_buf_puts(b, ":T");
        colon = 1;
        for (size_t t = 0; t < l->n_tiles; t++) {
            const Xla__TileProto *tp = l->tiles[t];
            xpv_buf_putc(b, '(');
            for (size_t i = 0; tp && i < tp->n_dimensions; i++) {
                if (i) xpv_buf_putc(b, ',');
                if (tp->dimensions[i] == -1) xpv_buf_putc(b, '*');   /* combined dim */
                else xpv_buf_i64(b, tp->dimensions[i]);
            }
            xpv_buf_putc(b, ')');
        }
    }
    if (l->element_size_in_bits) {
        xpv_buf_puts(b, colon ? "E(" : ":E(");
        colon = 1;
        xpv_buf_i64(b, l->element_size_in_bits);
        xpv_buf_putc(b, ')');
    }
    if (l->memory_space) {
        xpv_buf_puts(b, colon ? "S(" : ":S(");
        xpv_buf_i64(b, l->memory_space);
        xpv_buf_putc(b, ')');
    }
    xpv_buf_putc(b, '}');
}

/* XLA's shape text, with the layout ("{1,0:T(8,128)}") when `layout`. */
static void shape_text(xpv_buf *b, const Xla__ShapeProto *s, int depth, int layout) {
    if (!s) {
        xpv_buf_puts(b, "()");
        return;
    }
    if (s->element_type == 13 /* TUPLE */) {
        xpv_buf_putc(b, '(');
        for (size_t i = 0; i < s->n_tuple_shapes && depth < MAX_SHAPE_DEPTH; i++) {
            if (i) xpv_buf_puts(b, ", ");
            shape_text(b, s->tuple_shapes[i], depth + 1, layout);
        }
        xpv_buf_putc(b, ')');
        return;
    }
    xpv_buf_puts(b, type_name(s->element_type));
    xpv_buf_putc(b, '[');
    for (size_t i = 0; i < s->n_dimensions; i++) {
        if (i) xpv_buf_putc(b, ',');
        if (i < s->n_is_dynamic_dimension && s->is_dynamic_dimension[i]) xpv_buf_puts(b, "<=");
        xpv_buf_i64(b, s->dimensions[i]);
    }
    xpv_buf_putc(b, ']');
    if (!layout || !s->layout || s->element_type == 17 || s->element_type == 14) return;
    size_t mark = b->len;
    layout_text(b, s->layout);
    /* XLA prints no "{}" for a scalar */
    if (s->n_dimensions == 0 && b->len - mark == 2) b->len = mark;
}

void xpv_hlo_shape_text(xpv_buf *b, const Xla__ShapeProto *s) { shape_text(b, s, 0, 0); }

void xpv_hlo_shape_layout_text(xpv_buf *b, const Xla__ShapeProto *s) { shape_text(b, s, 0, 1); }

static void comp_ref(xpv_buf *b, const xpv_hlo_program *p, int64_t id) {
    const Xla__HloComputationProto *c = xpv_hlo_computation(p, id);
    xpv_buf_putc(b, '%');
    if (c && c->name) xpv_buf_puts(b, c->name);
    else xpv_buf_i64(b, id);
}

void xpv_hlo_expression(xpv_buf *b, const xpv_hlo_program *p, xpv_hlo_instr in) {
    const Xla__HloInstructionProto *ins = in.ins;
    if (!ins) return;
    size_t start = b->len;
    xpv_buf_putc(b, '%');
    xpv_buf_puts(b, ins->name ? ins->name : "");
    xpv_buf_puts(b, " = ");
    shape_text(b, ins->shape, 0, 0);
    xpv_buf_putc(b, ' ');
    xpv_buf_puts(b, ins->opcode ? ins->opcode : "");
    xpv_buf_putc(b, '(');
    for (size_t i = 0; i < ins->n_operand_ids; i++) {
        if (i) xpv_buf_puts(b, ", ");
        if (b->len - start > XPV_HLO_EXPR_MAX) {
            /* an op with thousands of operands naming huge tuples would make
             * one expression of gigabytes (issue 26): the rest is counted */
            xpv_buf_printf(b, "... %zu more", ins->n_operand_ids - i);
            break;
        }
        xpv_hlo_instr op = xpv_hlo_instr_by_id(p, ins->operand_ids[i]);
        if (op.ins) {
            shape_text(b, op.ins->shape, 0, 0);
            xpv_buf_puts(b, " %");
            xpv_buf_puts(b, op.ins->name ? op.ins->name : "");
        } else {
            xpv_buf_puts(b, "%<id ");
            xpv_buf_i64(b, ins->operand_ids[i]);
            xpv_buf_putc(b, '>');
        }
    }
    xpv_buf_putc(b, ')');
    const char *opc = ins->opcode ? ins->opcode : "";
    if (!strcmp(opc, "parameter")) {
        /* "parameter(0)": the number replaces the empty operand list */
        b->len -= 1;
        xpv_buf_i64(b, ins->parameter_number);
        xpv_buf_putc(b, ')');
    }
    if (!strcmp(opc, "get-tuple-element")) {
        xpv_buf_puts(b, ", index=");
        xpv_buf_i64(b, ins->tuple_index);
    }
    if (ins->n_dimensions && strcmp(opc, "fusion")) {
        xpv_buf_puts(b, ", dimensions={");
        for (size_t i = 0; i < ins->n_dimensions; i++) {
            if (i) xpv_buf_putc(b, ',');
            xpv_buf_i64(b, ins->dimensions[i]);
        }
        xpv_buf_putc(b, '}');
    }
    if (ins->comparison_direction && ins->comparison_direction[0]) {
        xpv_buf_puts(b, ", direction=");
        xpv_buf_puts(b, ins->comparison_direction);
    }
    if (!strcmp(opc, "fusion")) {
        if (ins->fusion_kind && ins->fusion_kind[0]) {
            xpv_buf_puts(b, ", kind=");
            xpv_buf_puts(b, ins->fusion_kind);
        }
        for (size_t i = 0; i < ins->n_called_computation_ids; i++) {
            xpv_buf_puts(b, i ? ", " : ", calls=");
            comp_ref(b, p, ins->called_computation_ids[i]);
        }
    } else if (!strcmp(opc, "while") && ins->n_called_computation_ids == 2) {
        /* XLA keeps the body first, the condition second */
        xpv_buf_puts(b, ", condition=");
        comp_ref(b, p, ins->called_computation_ids[1]);
        xpv_buf_puts(b, ", body=");
        comp_ref(b, p, ins->called_computation_ids[0]);
    } else if (ins->n_called_computation_ids == 1) {
        xpv_buf_puts(b, ", to_apply=");
        comp_ref(b, p, ins->called_computation_ids[0]);
    } else if (ins->n_called_computation_ids > 1) {
        xpv_buf_puts(b, ", calls={");
        for (size_t i = 0; i < ins->n_called_computation_ids; i++) {
            if (i) xpv_buf_puts(b, ", ");
            comp_ref(b, p, ins->called_computation_ids[i]);
        }
        xpv_buf_putc(b, '}');
    }
    if (ins->custom_call_target && ins->custom_call_target[0]) {
        xpv_buf_puts(b, ", custom_call_target=\"");
        xpv_buf_puts(b, ins->custom_call_target);
        xpv_buf_putc(b, '"');
    }
}

static int in_list(const char *s, const char *const *list) {
    for (; *list; list++)
        if (!strcmp(s, *list)) return 1;
    return 0;
}

const char *xpv_hlo_category(const Xla__HloInstructionProto *ins) {
    static const char *const formatting[] = {
        "bitcast", "broadcast", "concatenate", "copy", "copy-start", "copy-done",
        "dynamic-slice", "dynamic-update-slice", "pad", "reshape", "reverse", "slice",
        "transpose", "gather", "scatter", "iota", "bitcast-convert", NULL,
    };
    static const char *const elementwise[] = {
        "abs", "add", "and", "atan2", "cbrt", "ceil", "clamp", "compare", "convert", "cosine",
        "divide", "exponential", "exponential-minus-one", "floor", "imag", "is-finite", "log",
        "log-plus-one", "logistic", "maximum", "minimum", "multiply", "negate", "not", "or",
        "popcnt", "power", "real", "remainder", "round-nearest-afz", "round-nearest-even",
        "rsqrt", "select", "shift-left", "shift-right-arithmetic", "shift-right-logical",
        "sign", "sine", "sqrt", "subtract", "tan", "tanh", "xor", "erf", NULL,
    };
    if (!ins || !ins->opcode) return "unknown";
    const char *op = ins->opcode;
    if (!strcmp(op, "fusion")) {
        const char *k = ins->fusion_kind ? ins->fusion_kind : "";
        if (!strcmp(k, "kLoop")) return "loop fusion";
        if (!strcmp(k, "kInput")) return "input fusion";
        if (!strcmp(k, "kOutput")) return "output fusion";
        if (!strcmp(k, "kCustom")) return "custom fusion";
        return "fusion";
    }
    if (!strcmp(op, "convolution")) return "convolution";
    if (in_list(op, formatting)) return "data formatting";
    if (in_list(op, elementwise)) return "non-fusion elementwise";
    return op;
}

/* ==== Device ops ========================================================= */

xpv_str xpv_hlo_op_name(const xpv_op_metric *op) {
    const char *t = op->long_name && op->long_name[0] ? op->long_name : op->name;
    const char *eq = strstr(t, " = ");
    size_t n = eq ? (size_t)(eq - t) : strlen(t);
    if (n && t[0] == '%') t++, n--;
    xpv_str s = {t, (uint32_t)n};
    return s;
}

int xpv_hlo_resolve(xpv_hlo_map *m, const xpv_hostset *hs, const xpv_op_metric *op,
                    xpv_hlo_op *out, xpv_err *err) {
    memset(out, 0, sizeof *out);
    if (op->is_idle) return 0;
    const xpv_hlo_program *p = xpv_hlo_find(m, (uint64_t)op->program_id);
    if (!p) return 0;
    p = xpv_hlo_decode(m, hs, p, err);
    if (!p) return -1;
    out->prog = p;
    xpv_str n = xpv_hlo_op_name(op);
    out->in = xpv_hlo_instr_by_name(p, n.ptr, n.len);
    return 0;
}

/* ==== Module selector ==================================================== */

typedef struct prog_time {
    const xpv_hlo_program *p;
    int64_t ps;
} prog_time;

static int cmp_prog_time(const void *a, const void *b) {
    const prog_time *x = a, *y = b;
    if (x->ps != y->ps) return x->ps > y->ps ? -1 : 1;
    return strcmp(x->p->meta_name, y->p->meta_name);
}

const xpv_hlo_program **xpv_hlo_programs_by_device_time(const xpv_hlo_map *m,
                                                        const xpv_op_metrics_db *db) {
    if (!m || !m->n) return NULL;
    prog_time *t = xpv_xcalloc(m->n, sizeof *t);
    for (size_t i = 0; i < m->n; i++) t[i].p = &m->progs[i];
    for (size_t i = 0; db && i < db->n; i++) {
        const xpv_op_metric *op = &db->ops[i];
        if (op->is_idle) continue;
        xpv_hlo_program *p = (xpv_hlo_program *)xpv_hlo_find(m, (uint64_t)op->program_id);
        if (p) t[p - m->progs].ps += op->self_time_ps;
    }
    qsort(t, m->n, sizeof *t, cmp_prog_time);
    const xpv_hlo_program **out = xpv_xcalloc(m->n, sizeof *out);
    for (size_t i = 0; i < m->n; i++) out[i] = t[i].p;
    free(t);
    return out;
}

const char *xpv_hlo_op_category(int tpu, const xpv_op_metric *op, const xpv_hlo_op *h) {
    if (h->in.ins && (!tpu || !op->category[0])) return xpv_hlo_category(h->in.ins);
    return op->category;
}

void xpv_hlo_op_source(const xpv_hlo_op *h, char *out, size_t n) {
    const Xla__OpMetadata *md = h->in.ins ? h->in.ins->metadata : NULL;
    out[0] = 0;
    if (md && md->source_file && md->source_file[0])
        snprintf(out, n, "%s:%d", md->source_file, (int)md->source_line);
}
