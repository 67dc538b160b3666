/*
 * hlo_memory.c - the memory viewer's analysis of one program (hlo_memory.h),
 * following XProf's hlo_proto_to_memory_visualization_utils.cc.
 *
 * Steps: index the instructions, logical buffers and allocations; pick the
 * heap simulator trace of the memory space (the trace whose first event's
 * buffer lies in a non-indefinite allocation of that colour, else the
 * trace with the most events of that colour); replay it with reference
 * counts (SHARE_WITH makes a buffer an alias of its canonical one, which
 * stays allocated until every alias is freed) recording the heap after
 * every event and the buffers alive at the peak; then the indefinite
 * allocations (their largest logical buffer joins the peak heap and their
 * size is added to every heap size) and the allocation totals.
 */
#include <stdlib.h>
#include <string.h>

#include "hlo_memory.h"
#include "checked.h"
#include "collections.h"
#include "hlo.h"

/* ==== Shapes ============================================================= */

/* Bytes of one element (sub-byte types take a byte each, as XLA's
 * ByteSizeOfPrimitiveType counts them). */
static int64_t element_bytes(int t) {
    switch (t) {
    case 3: case 7: case 10: case 16: return 2;             /* s16 u16 f16 bf16 */
    case 4: case 8: case 11: return 4;                      /* s32 u32 f32 */
    case 5: case 9: case 12: case 15: return 8;             /* s64 u64 f64 c64 */
    case 18: return 16;                                     /* c128 */
    case 14: return 8;                                      /* opaque: a pointer */
    case 0: case 13: case 17: return 0;                     /* invalid tuple token */
    default: return 1;                                      /* pred, 8-bit and smaller */
    }
}

static int is_tuple(const Xla__ShapeProto *s) { return s && s->element_type == 13; }

int64_t xpv_hlo_shape_unpadded_bytes(const Xla__ShapeProto *s) {
    if (!s) return 0;
    if (is_tuple(s)) return 8 * (int64_t)s->n_tuple_shapes;
    int64_t n = element_bytes(s->element_type);
    for (size_t i = 0; i < s->n_dimensions; i++)
        n = xpv_mul_i64(n, s->dimensions[i] > 0 ? s->dimensions[i] : 0, NULL);
    return n;
}


/* ==== Index ============================================================== */

typedef struct alloc_s {
    const Xla__BufferAllocationProto *p;
    int64_t trace;              /* heap simulator trace index, or -1 */
} alloc_s;

typedef struct lbuf {
    int64_t id;
    const Xla__LogicalBufferProto *p;
    const alloc_s *alloc;
    const Xla__HloInstructionProto *ins;
    int64_t offset;
    const Xla__ShapeProto *shape;   /* resolved by the last shape index */
    int64_t unpadded;
    const char *shape_text, *name_text;
    int64_t ref;
    struct lbuf *canonical;
    int has_span, seen;
    int32_t span0, span1;
    uint32_t epoch;                 /* frees so far: live entries of older epochs are gone */
} lbuf;

typedef struct ctx {
    const Xla__HloProto *proto;
    const Xla__BufferAssignmentProto *ba;
    alloc_s *allocs;
    size_t nallocs;
    lbuf *bufs;                 /* sorted by id */
    size_t nbufs;
    xpv_arena *arena;
} ctx;

static int cmp_lbuf(const void *a, const void *b) {
    int64_t x = ((const lbuf *)a)->id, y = ((const lbuf *)b)->id;
    return (x > y) - (x < y);
}

static lbuf *find_buf(const ctx *c, int64_t id) {
    size_t lo = 0, hi = c->nbufs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->bufs[mid].id == id) return &c->bufs[mid];
        if (c->bufs[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

static const Xla__LogicalBufferProto *find_lb_proto(const Xla__LogicalBufferProto **sorted,
                                                    size_t n, int64_t id) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sorted[mid]->id == id) return sorted[mid];
        if (sorted[mid]->id < id) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

static int cmp_lb_proto(const void *a, const void *b) {
    int64_t x = (*(const Xla__LogicalBufferProto *const *)a)->id;
    int64_t y = (*(const Xla__LogicalBufferProto *const *)b)->id;
    return (x > y) - (x < y);
}

/* Instruction by unique id: a sorted array of (id, instruction). */
typedef struct ins_ref {
    int64_t id;
    const Xla__HloInstructionProto *ins;
} ins_ref;

static int cmp_ins(const void *a, const void *b) {
    int64_t x = ((const ins_ref *)a)->id, y = ((const ins_ref *)b)->id;
    return (x > y) - (x < y);
}

static ins_ref *index_ins(const Xla__HloModuleProto *mod, size_t *n) {
    size_t cap = 0, k = 0;
    for (size_t c = 0; mod && c < mod->n_computations; c++)
        if (mod->computations[c]) cap += mod->computations[c]->n_instructions;
    ins_ref *r = xpv_xcalloc(cap + 1, sizeof *r);
    for (size_t c = 0; mod && c < mod->n_computations; c++) {
        const Xla__HloComputationProto *comp = mod->computations[c];
        for (size_t i = 0; comp && i < comp->n_instructions; i++)
            if (comp->instructions[i]) r[k++] = (ins_ref){comp->instructions[i]->id,
                                                          comp->instructions[i]};
    }
    if (k) qsort(r, k, sizeof *r, cmp_ins);
    *n = k;
    return r;
}

static const Xla__HloInstructionProto *find_ins(const ins_ref *r, size_t n, int64_t id) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid].id == id) return r[mid].ins;
        if (r[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* The logical buffer's shape: its instruction's, or the tuple element of
 * the last shape index (XProf keeps this "historical" choice). */
static const Xla__ShapeProto *resolve_shape(const Xla__ShapeProto *s,
                                            const Xla__LogicalBufferProto__Location *at) {
    if (!s || !at || !at->n_shape_index) return s;
    int64_t i = at->shape_index[at->n_shape_index - 1];
    if (i >= 0 && (size_t)i < s->n_tuple_shapes && s->tuple_shapes[i]) return s->tuple_shapes[i];
    return s;
}

static void describe_buf(ctx *c, lbuf *b) {
    xpv_buf t;
    xpv_buf_init(&t);
    xpv_hlo_shape_layout_text(&t, b->shape);
    b->shape_text = xpv_arena_strndup(c->arena, t.data ? t.data : "", t.len);
    xpv_buf_reset(&t);
    xpv_buf_puts(&t, b->ins->name ? b->ins->name : "");
    const Xla__LogicalBufferProto__Location *at = b->p->defined_at;
    if (at && at->n_shape_index) {
        xpv_buf_putc(&t, '{');
        for (size_t i = 0; i < at->n_shape_index; i++) {
            if (i) xpv_buf_putc(&t, ',');
            xpv_buf_i64(&t, at->shape_index[i]);
        }
        xpv_buf_putc(&t, '}');
    }
    b->name_text = xpv_arena_strndup(c->arena, t.data ? t.data : "", t.len);
    xpv_buf_free(&t);
}

/* Logical buffers are those assigned to an allocation whose proto and
 * defining instruction exist (XProf skips the others). */
static void index_buffers(ctx *c) {
    const Xla__BufferAssignmentProto *ba = c->ba;
    size_t nlb = ba->n_logical_buffers;
    const Xla__LogicalBufferProto **sorted = xpv_xcalloc(nlb + 1, sizeof *sorted);
    size_t k = 0;
    for (size_t i = 0; i < nlb; i++)
        if (ba->logical_buffers[i]) sorted[k++] = ba->logical_buffers[i];
    nlb = k;
    if (nlb) qsort(sorted, nlb, sizeof *sorted, cmp_lb_proto);
    size_t nins;
    ins_ref *ins = index_ins(c->proto->hlo_module, &nins);
    c->nallocs = ba->n_buffer_allocations;
    c->allocs = xpv_arena_calloc(c->arena, c->nallocs + 1, sizeof *c->allocs);
    size_t cap = 0;
    for (size_t a = 0; a < c->nallocs; a++)
        if (ba->buffer_allocations[a]) cap += ba->buffer_allocations[a]->n_assigned;
    c->bufs = xpv_arena_calloc(c->arena, cap + 1, sizeof *c->bufs);
    for (size_t a = 0; a < c->nallocs; a++) {
        const Xla__BufferAllocationProto *ap = ba->buffer_allocations[a];
        c->allocs[a].p = ap;
        c->allocs[a].trace = -1;
        for (size_t j = 0; ap && j < ap->n_assigned; j++) {
            const Xla__BufferAllocationProto__Assigned *as = ap->assigned[j];
            if (!as) continue;
            const Xla__LogicalBufferProto *lp = find_lb_proto(sorted, nlb, as->logical_buffer_id);
            if (!lp) continue;
            const Xla__HloInstructionProto *in =
                find_ins(ins, nins, lp->defined_at ? lp->defined_at->instruction_id : 0);
            if (!in) continue;
            lbuf *b = &c->bufs[c->nbufs++];
            b->id = lp->id;
            b->p = lp;
            b->alloc = &c->allocs[a];
            b->ins = in;
            b->offset = as->offset;
            b->shape = resolve_shape(in->shape, lp->defined_at);
            b->unpadded = xpv_hlo_shape_unpadded_bytes(b->shape);
            describe_buf(c, b);
        }
    }
    if (c->nbufs) qsort(c->bufs, c->nbufs, sizeof *c->bufs, cmp_lbuf);
    /* a buffer assigned twice: the later assignment wins, as in XProf's map */
    size_t w = 0;
    for (size_t i = 0; i < c->nbufs; i++) {
        if (w && c->bufs[w - 1].id == c->bufs[i].id) w--;
        c->bufs[w++] = c->bufs[i];
    }
    c->nbufs = w;
    /* each trace belongs to the allocation of its first event's buffer */
    for (size_t t = 0; t < ba->n_heap_simulator_traces; t++) {
        const Xla__HeapSimulatorTrace *tr = ba->heap_simulator_traces[t];
        if (!tr || !tr->n_events || !tr->events[0]) continue;
        lbuf *b = find_buf(c, tr->events[0]->buffer_id);
        if (b) ((alloc_s *)b->alloc)->trace = (int64_t)t;
    }
    free(sorted);
    free(ins);
}

static int is_indefinite(const Xla__BufferAllocationProto *a) {
    return a->is_thread_local || a->is_entry_computation_parameter || a->is_constant ||
           a->maybe_live_out;
}

static const char *category(const Xla__BufferAllocationProto *a) {
    if (a->is_entry_computation_parameter) return "Parameter";
    if (a->maybe_live_out) return "Output";
    if (a->is_thread_local) return "Thread-local";
    if (a->is_constant) return "Constant";
    return "Temporary";
}

static int64_t trace_for_color(const ctx *c, int64_t color) {
    for (size_t a = 0; a < c->nallocs; a++) {
        const Xla__BufferAllocationProto *ap = c->allocs[a].p;
        if (!ap || ap->color != color || is_indefinite(ap)) continue;
        if (c->allocs[a].trace >= 0) return c->allocs[a].trace;
    }
    int64_t best = -1;
    size_t best_n = 0;
    for (size_t t = 0; t < c->ba->n_heap_simulator_traces; t++) {
        const Xla__HeapSimulatorTrace *tr = c->ba->heap_simulator_traces[t];
        size_t n = 0;
        for (size_t e = 0; tr && e < tr->n_events; e++) {
            const lbuf *b = tr->events[e] ? find_buf(c, tr->events[e]->buffer_id) : NULL;
            if (b && b->p->color == color) n++;
        }
        if (n > best_n) best = (int64_t)t, best_n = n;
    }
    return best;
}

/* ==== Heap simulation ==================================================== */

/* The replay's state.  The first pass records the timeline, the peak and
 * the spans; the second (`replay`) runs the events up to the one that made
 * the peak again and keeps only the live set, so the peak's buffers are
 * found without copying the live set at every new peak. */
typedef struct sim {
    xpv_hlo_memory *m;
    int replay;
    size_t event;               /* index of the event being applied */
    size_t nevents;
    int64_t heap, unpadded;
    /* Canonical buffers made alive, in allocation order, each with its
     * buffer's epoch then: an entry whose buffer was freed since (a later
     * epoch) is gone.  XProf removes every occurrence of a freed buffer
     * from its list; a scan per free was quadratic (issue 26), so frees
     * only bump the epoch and the list is filtered once at the end. */
    lbuf **live;
    uint32_t *live_epoch;
    size_t nlive;
    int has_peak;
    size_t peak_event;
} sim;

/* The root of a SHARE_WITH chain (bounded: a hostile trace may loop). */
static lbuf *canonical(lbuf *b) {
    for (int i = 0; b->canonical && i < 4096; i++) b = b->canonical;
    return b;
}

static int64_t ref_inc(lbuf *b) { return ++canonical(b)->ref; }
static int64_t ref_dec(lbuf *b) { return --canonical(b)->ref; }

static void increase(sim *s, lbuf *b, int init_span) {
    s->live[s->nlive] = b;
    s->live_epoch[s->nlive++] = b->epoch;
    /* sizes come from the file: saturate, never overflow */
    s->heap = xpv_add_i64(s->heap, b->p->size, NULL);
    s->unpadded = xpv_add_i64(s->unpadded, b->unpadded, NULL);
    if (s->replay) return;
    if (s->heap > s->m->peak) {
        s->m->peak = s->heap;
        s->m->peak_position = (int64_t)s->event;
        s->m->peak_unpadded = s->unpadded;
        s->has_peak = 1;
        s->peak_event = s->event;
    }
    if (init_span) {   /* until the last event unless a FREE ends it */
        b->has_span = 1;
        b->span0 = (int32_t)s->event;
        b->span1 = (int32_t)s->nevents - 1;
    }
}

static int decrease(sim *s, lbuf *b, xpv_err *err) {
    b->epoch++;   /* every occurrence of b in the live list is gone */
    s->heap = xpv_sub_i64(s->heap, b->p->size, NULL);
    s->unpadded = xpv_sub_i64(s->unpadded, b->unpadded, NULL);
    if (s->replay) return 0;
    if (s->heap < 0)
        return xpv_err_set(err, XPV_E_BAD_PROFILE, "heap size below zero (%lld bytes) at event %zu",
                           (long long)s->heap, s->event);
    if (b->has_span) b->span1 = (int32_t)s->event;
    return 0;
}

/* One event: the timeline gets the heap before it, then it applies. */
static int apply_event(sim *s, ctx *c, const Xla__HeapSimulatorTrace__Event *ev,
                       const alloc_s **seen_alloc, xpv_err *err) {
    xpv_hlo_memory *m = s->m;
    if (!s->replay) {
        m->heap[m->ntimeline] = s->heap;
        m->unpadded_heap[m->ntimeline] = s->unpadded;
        m->instruction_names[m->ntimeline] = ev->instruction_name ? ev->instruction_name : "";
        m->ntimeline++;
    }
    lbuf *b = find_buf(c, ev->buffer_id);
    if (!b) return 0;
    b->seen = 1;
    if (*seen_alloc && *seen_alloc != b->alloc)
        return xpv_err_set(err, XPV_E_BAD_PROFILE,
                           "the heap simulation spans more than one buffer allocation");
    *seen_alloc = b->alloc;
    switch (ev->kind) {
    case XLA__HEAP_SIMULATOR_TRACE__EVENT__KIND__ALLOC:
        ref_inc(b);
        increase(s, b, 1);
        return 0;
    case XLA__HEAP_SIMULATOR_TRACE__EVENT__KIND__FREE: {
        int64_t r = ref_dec(b);
        if (r < 0)
            return xpv_err_set(err, XPV_E_BAD_PROFILE, "buffer %lld is freed more than once",
                               (long long)b->id);
        return r == 0 ? decrease(s, canonical(b), err) : 0;
    }
    case XLA__HEAP_SIMULATOR_TRACE__EVENT__KIND__SHARE_WITH: {
        lbuf *cb = find_buf(c, ev->share_with_canonical_id);
        if (!cb) return 0;
        b->canonical = cb == b ? NULL : cb;
        /* shared after its canonical buffer was freed: allocated again */
        if (ref_inc(cb) == 1) increase(s, cb, 0);
        return 0;
    }
    default:
        return xpv_err_set(err, XPV_E_BAD_PROFILE, "unknown heap simulator event kind %d", (int)ev->kind);
    }
}

static int run_events(sim *s, ctx *c, const Xla__HeapSimulatorTrace *tr, size_t n,
                      xpv_err *err) {
    const alloc_s *seen_alloc = NULL;
    for (s->event = 0; s->event < n; s->event++) {
        const Xla__HeapSimulatorTrace__Event *ev = tr->events[s->event];
        if (ev && apply_event(s, c, ev, &seen_alloc, err) != 0) return -1;
    }
    if (!s->replay && tr && !seen_alloc)
        return xpv_err_set(err, XPV_E_BAD_PROFILE, "the heap simulation touches no buffer allocation");
    return 0;
}

/* Replays the trace; *peak / *npeak receive the buffers alive at the peak
 * (malloc'd, the caller frees). */
static int simulate(ctx *c, xpv_hlo_memory *m, int64_t trace, lbuf ***peak, size_t *npeak,
                    xpv_err *err) {
    const Xla__HeapSimulatorTrace *tr =
        trace >= 0 && (size_t)trace < c->ba->n_heap_simulator_traces
            ? c->ba->heap_simulator_traces[trace] : NULL;
    size_t n = tr ? tr->n_events : 0;
    m->heap = xpv_arena_calloc(&m->arena, n + 1, sizeof *m->heap);
    m->unpadded_heap = xpv_arena_calloc(&m->arena, n + 1, sizeof *m->unpadded_heap);
    m->instruction_names = xpv_arena_calloc(&m->arena, n + 1, sizeof *m->instruction_names);
    sim s = {.m = m, .nevents = n};
    s.live = xpv_xcalloc(n + 1, sizeof *s.live);
    s.live_epoch = xpv_xcalloc(n + 1, sizeof *s.live_epoch);
    if (run_events(&s, c, tr, n, err) != 0) {
        free(s.live);
        free(s.live_epoch);
        return -1;
    }
    m->heap[m->ntimeline] = s.heap;
    m->unpadded_heap[m->ntimeline] = s.unpadded;
    m->instruction_names[m->ntimeline] = "";
    m->ntimeline++;
    m->has_trace = tr != NULL;
    m->trace_index = m->has_trace ? trace : -1;
    /* second pass, up to the event that made the peak */
    for (size_t i = 0; i < c->nbufs; i++)
        c->bufs[i].ref = 0, c->bufs[i].canonical = NULL, c->bufs[i].epoch = 0;
    s.replay = 1;
    s.heap = s.unpadded = 0;
    s.nlive = 0;
    if (s.has_peak) run_events(&s, c, tr, s.peak_event + 1, err);
    size_t w = 0;
    for (size_t i = 0; i < s.nlive; i++)
        if (s.live_epoch[i] == s.live[i]->epoch) s.live[w++] = s.live[i];
    free(s.live_epoch);
    *peak = s.live;
    *npeak = w;
    return 0;
}

/* ==== Peak heap objects ================================================== */

typedef struct objs {
    xpv_hlo_memory *m;
    size_t n;
    int64_t small_bytes, small_limit;
    int32_t colorno;
} objs;

static void add_object(objs *o, const lbuf *b) {
    if (b->p->size < o->small_limit) {
        o->small_bytes += b->p->size;
        return;
    }
    xpv_hlo_memory *m = o->m;
    xpv_heap_object *h = &m->objects[o->n++];
    const Xla__HloInstructionProto *in = b->ins;
    const char *op_name = in->metadata && in->metadata->op_name ? in->metadata->op_name : "";
    xpv_buf t;
    xpv_buf_init(&t);
    xpv_buf_printf(&t, "%s: %s # %s", in->name ? in->name : "", b->shape_text, op_name);
    h->label = xpv_arena_strndup(&m->arena, t.data, t.len);
    xpv_buf_free(&t);
    h->color = o->colorno++;
    h->logical_buffer_id = b->id;
    h->size = b->p->size;
    h->unpadded_size = b->unpadded;
    h->instruction_name = b->name_text;
    h->shape = b->shape_text;
    h->tf_op_name = op_name;
    h->group_name = category(b->alloc->p);
    h->op_code = in->opcode ? in->opcode : "";
    h->source_file = in->metadata && in->metadata->source_file ? in->metadata->source_file : "";
    h->source_line = in->metadata ? in->metadata->source_line : 0;
}

/* The largest logical buffer of an indefinite allocation stands for it. */
static const lbuf *largest_buffer(const ctx *c, const Xla__BufferAllocationProto *ap) {
    const lbuf *best = NULL;
    int64_t best_size = 0;
    for (size_t j = 0; j < ap->n_assigned; j++) {
        const lbuf *b = ap->assigned[j] ? find_buf(c, ap->assigned[j]->logical_buffer_id) : NULL;
        if (b && b->p->size > best_size) best = b, best_size = b->p->size;
    }
    return best;
}

static void make_objects(ctx *c, xpv_hlo_memory *m, int64_t color, int64_t small_limit,
                         lbuf *const *peak, size_t npeak) {
    m->objects = xpv_arena_calloc(&m->arena, npeak + c->nallocs + 2, sizeof *m->objects);
    objs o = {m, 0, 0, small_limit, 0};
    for (size_t a = 0; a < c->nallocs; a++) {
        const Xla__BufferAllocationProto *ap = c->allocs[a].p;
        if (!ap || ap->color != color || !is_indefinite(ap)) continue;
        const lbuf *b = largest_buffer(c, ap);
        if (!b) continue;
        m->indefinite_bytes = xpv_add_i64(m->indefinite_bytes, ap->size, NULL);
        add_object(&o, b);
    }
    for (size_t i = 0; i < npeak; i++) add_object(&o, peak[i]);
    if (o.small_bytes) {
        xpv_heap_object *h = &m->objects[o.n++];
        xpv_buf t;
        xpv_buf_init(&t);
        xpv_buf_printf(&t, "small (<%lld bytes)", (long long)small_limit);
        h->label = xpv_arena_strndup(&m->arena, t.data, t.len);
        xpv_buf_free(&t);
        h->color = o.colorno++;
        h->logical_buffer_id = -1;
        h->size = o.small_bytes;
        h->instruction_name = h->shape = h->tf_op_name = h->group_name = h->op_code = "";
        h->source_file = "";
    }
    m->nobjects = o.n;
    m->by_size = xpv_arena_calloc(&m->arena, o.n + 1, sizeof *m->by_size);
    m->to_by_size = xpv_arena_calloc(&m->arena, o.n + 1, sizeof *m->to_by_size);
    /* Largest first; equal sizes keep their order (XProf's std::sort
     * leaves ties unspecified). */
    xpv_ranked *keys = xpv_xcalloc(o.n + 1, sizeof *keys);
    for (size_t i = 0; i < o.n; i++) keys[i] = (xpv_ranked){m->objects[i].size, i};
    xpv_ranked_sort_desc(keys, o.n);
    for (size_t r = 0; r < o.n; r++) m->by_size[r] = (int32_t)keys[r].pos;
    free(keys);
    for (size_t r = 0; r < o.n; r++) m->to_by_size[m->by_size[r]] = (int32_t)r;
}

/* ==== Spans and allocations ============================================== */

static void collect_spans(ctx *c, xpv_hlo_memory *m) {
    size_t n = 0;
    for (size_t i = 0; i < c->nbufs; i++) n += c->bufs[i].seen && c->bufs[i].has_span;
    m->spans = xpv_arena_calloc(&m->arena, n + 1, sizeof *m->spans);
    for (size_t i = 0; i < c->nbufs; i++)   /* bufs are sorted by id */
        if (c->bufs[i].seen && c->bufs[i].has_span)
            m->spans[m->nspans++] =
                (xpv_buffer_span){c->bufs[i].id, c->bufs[i].span0, c->bufs[i].span1};
}

static int is_reusable(const Xla__BufferAllocationProto *a) {
    return !a->is_thread_local && !a->is_tuple;
}

static void describe_alloc(ctx *c, xpv_hlo_memory *m, const Xla__BufferAllocationProto *ap,
                           xpv_alloc_info *out) {
    out->id = ap->index;
    out->size = ap->size;
    out->entry_parameter = ap->is_entry_computation_parameter;
    out->maybe_live_out = ap->maybe_live_out;
    out->reusable = is_reusable(ap);
    out->buffers = xpv_arena_calloc(&m->arena, ap->n_assigned + 1, sizeof *out->buffers);
    for (size_t j = 0; j < ap->n_assigned; j++) {
        const Xla__BufferAllocationProto__Assigned *as = ap->assigned[j];
        if (!as) continue;
        xpv_alloc_buffer *lb = &out->buffers[out->nbuffers++];
        lb->id = as->logical_buffer_id;
        lb->size = as->size;
        const lbuf *b = find_buf(c, as->logical_buffer_id);
        if (!b) continue;
        lb->hlo_name = b->ins->name ? b->ins->name : "";
        if (b->p->defined_at) {
            lb->shape_index = b->p->defined_at->shape_index;
            lb->nshape_index = b->p->defined_at->n_shape_index;
        }
        lb->shape = b->shape_text;
    }
    out->common_shape = "";
    for (size_t j = 0; j < out->nbuffers; j++) {
        const char *s = out->buffers[j].shape ? out->buffers[j].shape : "";
        if (j == 0) out->common_shape = s;
        else if (strcmp(s, out->common_shape)) {
            out->common_shape = "";
            break;
        }
    }
}

static void note_allocations(ctx *c, xpv_hlo_memory *m, int64_t color) {
    m->indefinite = xpv_arena_calloc(&m->arena, c->nallocs + 1, sizeof *m->indefinite);
    for (size_t a = 0; a < c->nallocs; a++) {
        const Xla__BufferAllocationProto *ap = c->allocs[a].p;
        if (!ap || ap->color != color) continue;
        m->total_allocation_bytes = xpv_add_i64(m->total_allocation_bytes, ap->size, NULL);
        if (ap->is_entry_computation_parameter)
            m->entry_parameters_bytes = xpv_add_i64(m->entry_parameters_bytes, ap->size, NULL);
        if (!is_reusable(ap)) m->non_reusable_bytes += ap->size;
        if (ap->maybe_live_out)
            m->maybe_live_out_bytes = xpv_add_i64(m->maybe_live_out_bytes, ap->size, NULL);
        if (is_indefinite(ap)) {
            m->indefinite_allocation_bytes += ap->size;
            describe_alloc(c, m, ap, &m->indefinite[m->nindefinite++]);
        }
    }
}

/* ==== Entry points ======================================================= */

xpv_hlo_memory *xpv_hlo_memory_compute(const Xla__HloProto *proto, int64_t color,
                                       int64_t small_buffer_size, xpv_err *err) {
    static const Xla__BufferAssignmentProto empty = XLA__BUFFER_ASSIGNMENT_PROTO__INIT;
    xpv_hlo_memory *m = xpv_xcalloc(1, sizeof *m);
    xpv_arena_init(&m->arena, 0);
    m->color = color;
    m->trace_index = -1;
    ctx c = {proto, proto && proto->buffer_assignment ? proto->buffer_assignment : &empty,
             NULL, 0, NULL, 0, &m->arena};
    index_buffers(&c);
    lbuf **peak = NULL;
    size_t npeak = 0;
    if (simulate(&c, m, trace_for_color(&c, color), &peak, &npeak, err) != 0) {
        xpv_hlo_memory_free(m);
        return NULL;
    }
    make_objects(&c, m, color, small_buffer_size, peak, npeak);
    free(peak);
    collect_spans(&c, m);
    const Xla__HloModuleProto *mod = proto ? proto->hlo_module : NULL;
    m->module_name = mod && mod->name ? mod->name : "";
    m->entry_computation_name =
        mod && mod->entry_computation_name ? mod->entry_computation_name : "";
    note_allocations(&c, m, color);
    return m;
}

void xpv_hlo_memory_free(xpv_hlo_memory *m) {
    if (!m) return;
    xpv_arena_free(&m->arena);
    free(m);
}

int xpv_hlo_has_buffer_assignment(const Xla__HloProto *proto) {
    return proto && proto->buffer_assignment && proto->buffer_assignment->n_buffer_allocations;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

size_t xpv_hlo_memory_spaces(const Xla__HloProto *proto, int64_t *out, size_t max) {
    size_t n = 0;
    const Xla__BufferAssignmentProto *ba = proto ? proto->buffer_assignment : NULL;
    for (size_t a = 0; ba && a < ba->n_buffer_allocations; a++) {
        if (!ba->buffer_allocations[a]) continue;
        int64_t col = ba->buffer_allocations[a]->color;
        int dup = 0;
        for (size_t i = 0; i < n && !dup; i++) dup = out[i] == col;
        if (!dup && n < max) out[n++] = col;
    }
    if (n) qsort(out, n, sizeof *out, cmp_i64);
    return n;
}

size_t xpv_hlo_heap_trace_events(const Xla__HloProto *proto) {
    size_t n = 0;
    const Xla__BufferAssignmentProto *ba = proto ? proto->buffer_assignment : NULL;
    for (size_t t = 0; ba && t < ba->n_heap_simulator_traces; t++)
        if (ba->heap_simulator_traces[t]) n += ba->heap_simulator_traces[t]->n_events;
    return n;
}
