/*
 * test_tool_memory_profile.c - memory profile converter: summary and peak,
 * step ids, deallocation metadata, breakdown at the peak (special rows,
 * merging), timeline sampling, error cases, and every real profile with
 * allocator events (peak == max stack+heap over the allocator's events).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "testutil.h"
#include "tool.h"
#include "tool_xspace.h"

#define US 1000000LL /* ps per us */

/* One allocator event with the stats TF's BFC allocator writes. */
typedef struct mev {
    int alloc;            /* 1 allocation, 0 deallocation */
    int64_t t_us;
    int64_t stack, heap, free_b, peak;
    int64_t req, bytes;
    int64_t addr;
    const char *op, *region, *shape;
    int dtype;            /* -1: no data_type stat */
    int64_t group;        /* -1: no group_id stat */
} mev;

static void add_mev(tx_space *s, int pl, int ln, const char *allocator, const mev *m) {
    tx_event_t *e = tx_event(s, pl, ln, m->alloc ? "MemoryAllocation" : "MemoryDeallocation",
                             m->t_us * US, 1 * US);
    tx_ev_str(s, pl, e, "allocator_name", allocator);
    tx_ev_int(s, pl, e, "bytes_reserved", m->stack);
    tx_ev_int(s, pl, e, "bytes_allocated", m->heap);
    tx_ev_int(s, pl, e, "bytes_available", m->free_b);
    tx_ev_int(s, pl, e, "peak_bytes_in_use", m->peak);
    tx_ev_int(s, pl, e, "requested_bytes", m->req);
    tx_ev_int(s, pl, e, "allocation_bytes", m->bytes);
    tx_ev_int(s, pl, e, "addr", m->addr);
    if (m->op) tx_ev_ref(s, pl, e, "tf_op", m->op);
    if (m->region) tx_ev_str(s, pl, e, "region_type", m->region);
    if (m->shape) tx_ev_str(s, pl, e, "shape", m->shape);
    if (m->dtype >= 0) tx_ev_int(s, pl, e, "data_type", m->dtype);
    if (m->group >= 0) tx_ev_int(s, pl, e, "group_id", m->group);
    tx_stat_t *f = tx_new_stat(s, pl, &e->n_stats, &e->stats, "fragmentation");
    f->value_case = TENSORFLOW__PROFILER__XSTAT__VALUE_DOUBLE_VALUE;
    f->double_value = 0.25;
}

/* Render the tool over one profile; returns the parsed JSON (or NULL with
 * *status set when the tool failed). */
static json_t *run_tool(const xpv_profile *p, int *status) {
    const xpv_profile *ps[1] = {p};
    const char *hn[1] = {"host"};
    xpv_hostset hs = {1, ps, hn};
    const xpv_tool *t = xpv_tool_find("memory_profile");
    assert_non_null(t);
    xpv_err err = {0};
    xpv_buf out;
    xpv_buf_init(&out);
    int rc = t->render(&hs, NULL, NULL, &out, &err);
    *status = rc ? err.status : 200;
    json_t *j = NULL;
    if (!rc) {
        json_error_t jerr;
        j = json_loadb(out.data, out.len, 0, &jerr);
        if (!j) fail_msg("invalid JSON: %s", jerr.text);
    }
    xpv_buf_free(&out);
    return j;
}

static const char *sget(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    if (!json_is_string(v)) fail_msg("field %s is not a string", k);
    return json_string_value(v);
}

static long long iget(json_t *o, const char *k) { return atoll(sget(o, k)); }

/*
 * Allocator "GPU_0_bfc", events spread over two thread lines (file order is
 * not time order).  Step 7 holds the peak: at t=40 stack 100 + heap 900.
 *   t=10 step 6  alloc A  addr 1  64 B   heap 164 (previous step)
 *   t=20 step 7  alloc B  addr 2  256 B  heap 420
 *   t=25 step 7  alloc C  addr 3  256 B  heap 676  (same shape as B)
 *   t=30 (no group) alloc D addr 4 224 B heap 900 -> step 8 (= last 7 + 1)
 *   t=40 step 7  dealloc A addr 1 (from step 6) -> heap 836 ... peak stays
 * The window peak is the last event whose stack+heap >= running max.
 */
static xpv_profile *build_profile(void) {
    int pl, l1;
    tx_space *s = tx_new_line("/host:CPU", 1, "tf_executor", &pl, &l1);
    int l2 = tx_line(s, pl, 2, "tf_worker", 0);
    mev ev[] = {
        /* line 2 first in the file: later in time */
        {1, 20, 100, 420, 1000, 500, 200, 256, 2, "m/MatMul", "output", "[8,8]", 1, 7},
        {1, 25, 100, 676, 744, 800, 200, 256, 3, "m/MatMul", "output", "[8,8]", 1, 7},
        {1, 30, 100, 900, 520, 1000, 224, 224, 4, "m/Add", "temp", "[56]", 1, -1},
    };
    mev ev1[] = {
        {1, 10, 100, 164, 1256, 264, 60, 64, 1, "init/Const", "persist", "[16]", 9, 6},
        {0, 40, 100, 836, 584, 1000, 60, 64, 1, NULL, NULL, NULL, -1, 7},
    };
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++) add_mev(s, pl, l2, "GPU_0_bfc", &ev[i]);
    for (size_t i = 0; i < sizeof ev1 / sizeof ev1[0]; i++)
        add_mev(s, pl, l1, "GPU_0_bfc", &ev1[i]);
    /* A second allocator identified by device ordinal only. */
    tx_event_t *e = tx_event(s, pl, l1, "MemoryAllocation", 50 * US, US);
    tx_ev_int(s, pl, e, "device_ordinal", 3);
    tx_ev_int(s, pl, e, "bytes_allocated", 4096);
    tx_ev_int(s, pl, e, "allocation_bytes", 4096);
    tx_ev_int(s, pl, e, "requested_bytes", 4000);
    /* Not a memory event. */
    tx_event(s, pl, l1, "m/MatMul:MatMul", 5 * US, 50 * US);
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    return p;
}

static void test_summary_and_peak(void **state) {
    (void)state;
    xpv_profile *p = build_profile();
    int st;
    json_t *j = run_tool(p, &st);
    assert_int_equal(st, 200);
    /* Ids sorted: "3" < "GPU_0_bfc". */
    json_t *ids = json_object_get(j, "memoryIds");
    assert_int_equal(json_array_size(ids), 2);
    assert_string_equal(json_string_value(json_array_get(ids, 0)), "3");
    assert_string_equal(json_string_value(json_array_get(ids, 1)), "GPU_0_bfc");
    assert_int_equal(json_integer_value(json_object_get(j, "version")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "numHosts")), 1);

    json_t *a = json_object_get(json_object_get(j, "memoryProfilePerAllocator"), "GPU_0_bfc");
    assert_non_null(a);
    json_t *sum = json_object_get(a, "profileSummary");
    json_t *peak = json_object_get(sum, "peakStats");
    /* Peak = max(stack+heap) = 100 + 900 at t=30 us. */
    assert_int_equal(iget(peak, "peakBytesInUse"), 1000);
    assert_int_equal(iget(peak, "heapAllocatedBytes"), 900);
    assert_int_equal(iget(peak, "stackReservedBytes"), 100);
    assert_int_equal(iget(peak, "freeMemoryBytes"), 520);
    assert_int_equal(iget(sum, "peakStatsTimePs"), 30 * US);
    assert_int_equal(iget(sum, "memoryCapacity"), 1520);
    /* Lifetime peak = the largest allocator peak seen, never below the
     * in-profile peak (XProf keeps the last one in file order). */
    assert_int_equal(iget(sum, "peakBytesUsageLifetime"), 1000);

    /* Timeline: all 5 events, time-sorted, step ids repaired. */
    json_t *tl = json_object_get(a, "sampledTimelineSnapshots");
    assert_int_equal(json_array_size(tl), 5);
    static const long long want_t[] = {10, 20, 25, 30, 40};
    static const long long want_step[] = {6, 7, 7, 8, 7};
    for (size_t i = 0; i < 5; i++) {
        json_t *sn = json_array_get(tl, i);
        assert_int_equal(iget(sn, "timeOffsetPs"), want_t[i] * US);
        assert_int_equal(iget(json_object_get(sn, "activityMetadata"), "stepId"), want_step[i]);
    }
    /* The deallocation copies op/region/dtype/shape from its allocation. */
    json_t *dm = json_object_get(json_array_get(tl, 4), "activityMetadata");
    assert_string_equal(sget(dm, "memoryActivity"), "DEALLOCATION");
    assert_string_equal(sget(dm, "tfOpName"), "init/Const");
    assert_string_equal(sget(dm, "regionType"), "persist");
    assert_string_equal(sget(dm, "dataType"), "int64");
    assert_string_equal(sget(dm, "tensorShape"), "[16]");
    json_t *agg = json_object_get(json_array_get(tl, 0), "aggregationStats");
    assert_true(json_real_value(json_object_get(agg, "fragmentation")) == 0.25);

    json_decref(j);
    xpv_profile_free(p);
}

/* Breakdown at the peak.  The peak snapshot is at t=30 whose (repaired)
 * step is 8, so only step-8 activity before the peak counts: allocation D
 * (224 B).  Unmapped heap = 900 - 224 = 676 -> "unused preallocated"; the
 * stack (100) gets its own row. */
static void test_breakdown(void **state) {
    (void)state;
    xpv_profile *p = build_profile();
    int st;
    json_t *j = run_tool(p, &st);
    json_t *a = json_object_get(json_object_get(j, "memoryProfilePerAllocator"), "GPU_0_bfc");
    json_t *rows = json_object_get(a, "activeAllocations");
    json_t *special = json_object_get(a, "specialAllocations");
    json_t *snaps = json_object_get(a, "memoryProfileSnapshots");
    assert_int_equal(json_array_size(rows), 3);
    assert_int_equal(json_array_size(special), 2);
    assert_int_equal(json_array_size(snaps), 1);
    /* Sorted by allocation bytes desc: unused 676, D 224, stack 100. */
    json_t *r0 = json_array_get(rows, 0);
    assert_int_equal(iget(r0, "snapshotIndex"), -1);
    assert_int_equal(iget(r0, "specialIndex"), 0);
    json_t *s0 = json_array_get(special, 0);
    assert_string_equal(sget(s0, "tfOpName"), "unused preallocated device memory");
    assert_int_equal(iget(s0, "allocationBytes"), 676);
    assert_string_equal(sget(s0, "regionType"), "persist/dynamic");
    assert_string_equal(sget(s0, "dataType"), "INVALID");
    assert_int_equal(iget(s0, "stepId"), 8);
    json_t *r1 = json_array_get(rows, 1);
    assert_int_equal(iget(r1, "snapshotIndex"), 0);
    assert_int_equal(iget(r1, "specialIndex"), -1);
    json_t *m = json_object_get(json_array_get(snaps, 0), "activityMetadata");
    assert_string_equal(sget(m, "tfOpName"), "m/Add");
    assert_int_equal(iget(m, "allocationBytes"), 224);
    json_t *r2 = json_array_get(rows, 2);
    assert_int_equal(iget(r2, "snapshotIndex"), -2);
    assert_int_equal(iget(r2, "specialIndex"), 1);
    assert_string_equal(sget(json_array_get(special, 1), "tfOpName"), "stack");
    assert_int_equal(iget(json_array_get(special, 1), "allocationBytes"), 100);
    json_decref(j);
    xpv_profile_free(p);
}

/* Identical live allocations merge into one row with numOccurrences. */
static void test_breakdown_merge(void **state) {
    (void)state;
    int pl, ln;
    tx_space *s = tx_new_line("/host:CPU", 1, "t", &pl, &ln);
    int64_t heap = 0;
    for (int i = 0; i < 4; i++) {
        heap += 512;
        mev m = {1, 10 + i, 0, heap, 1 << 20, heap, 500, 512, 100 + i,
                 "net/conv", "output", "[128]", 1, 3};
        add_mev(s, pl, ln, "bfc", &m);
    }
    mev big = {1, 20, 0, heap + 4096, 1 << 20, heap + 4096, 4096, 4096, 999,
               "net/big", "temp", "[1024]", 1, 3};
    add_mev(s, pl, ln, "bfc", &big);
    xpv_profile *p = tx_decode(s);
    int st;
    json_t *j = run_tool(p, &st);
    json_t *a = json_object_get(json_object_get(j, "memoryProfilePerAllocator"), "bfc");
    json_t *rows = json_object_get(a, "activeAllocations");
    /* No unmapped heap, no stack: exactly 2 rows, big first. */
    assert_int_equal(json_array_size(rows), 2);
    assert_int_equal(json_array_size(json_object_get(a, "specialAllocations")), 0);
    assert_int_equal(iget(json_array_get(rows, 0), "numOccurrences"), 1);
    assert_int_equal(iget(json_array_get(rows, 1), "numOccurrences"), 4);
    json_t *snaps = json_object_get(a, "memoryProfileSnapshots");
    assert_int_equal(json_array_size(snaps), 2);
    assert_string_equal(
        sget(json_object_get(json_array_get(snaps, 0), "activityMetadata"), "tfOpName"),
        "net/big");
    json_decref(j);
    xpv_profile_free(p);
}

/* 2500 events -> 1000 timeline points by a max box filter: 500 boxes of
 * width 2, then 500 of width 3; each keeps its max stack+heap snapshot. */
static void test_sampling(void **state) {
    (void)state;
    enum { N = 2500 };
    static int64_t heap[N];
    int pl, ln;
    tx_space *s = tx_new_line("/host:CPU", 1, "t", &pl, &ln);
    int64_t maxheap = 0;
    for (int i = 0; i < N; i++) {
        heap[i] = (int64_t)((i * 7919) % 1009) * 1024;
        if (heap[i] > maxheap) maxheap = heap[i];
        mev m = {1, i, 0, heap[i], 0, 0, 8, 8, i, "op", "", "", -1, -1};
        add_mev(s, pl, ln, "a", &m);
    }
    xpv_profile *p = tx_decode(s);
    int st;
    json_t *j = run_tool(p, &st);
    json_t *a = json_object_get(json_object_get(j, "memoryProfilePerAllocator"), "a");
    json_t *tl = json_object_get(a, "sampledTimelineSnapshots");
    assert_int_equal(json_array_size(tl), 1000);
    size_t start = 0;
    for (size_t k = 0; k < 1000; k++) {
        size_t w = k < 500 ? 2 : 3;
        int64_t best = heap[start];
        size_t bi = start;
        for (size_t q = start + 1; q < start + w; q++)
            if (heap[q] > best) best = heap[q], bi = q;
        json_t *sn = json_array_get(tl, k);
        assert_int_equal(iget(sn, "timeOffsetPs"), (long long)bi * US);
        start += w;
    }
    assert_int_equal(start, N);
    json_t *peak = json_object_get(json_object_get(a, "profileSummary"), "peakStats");
    assert_int_equal(iget(peak, "peakBytesInUse"), maxheap);
    json_decref(j);
    xpv_profile_free(p);
}

static void test_empty_and_errors(void **state) {
    (void)state;
    /* No host plane: 404. */
    tx_space *s = tx_new();
    tx_plane(s, "/device:GPU:0");
    xpv_profile *p = tx_decode(s);
    int st;
    json_t *j = run_tool(p, &st);
    assert_null(j);
    assert_int_equal(st, 404);
    const xpv_tool *t = xpv_tool_find("memory_profile");
    assert_false(t->available(p));
    xpv_profile_free(p);

    /* Host plane without allocator events: empty profile. */
    s = tx_new();
    int pl = tx_plane(s, "/host:CPU");
    int ln = tx_line(s, pl, 1, "t", 0);
    tx_event(s, pl, ln, "a:B", 0, 10);
    p = tx_decode(s);
    j = run_tool(p, &st);
    assert_int_equal(st, 200);
    assert_int_equal(json_array_size(json_object_get(j, "memoryIds")), 0);
    assert_int_equal(json_object_size(json_object_get(j, "memoryProfilePerAllocator")), 0);
    assert_false(t->available(p));
    json_decref(j);
    xpv_profile_free(p);

    /* Two hosts: the tool needs one. */
    p = build_profile();
    assert_true(t->available(p));
    const xpv_profile *ps[2] = {p, p};
    const char *hn[2] = {"a", "b"};
    xpv_hostset hs = {2, ps, hn};
    xpv_err err = {0};
    xpv_buf out;
    xpv_buf_init(&out);
    assert_int_equal(t->render(&hs, NULL, NULL, &out, &err), -1);
    assert_int_equal(err.status, 400);
    xpv_buf_free(&out);
    xpv_profile_free(p);
}

/* Max stack+heap per allocator, walking the model directly. */
static int64_t model_peak(const xpv_profile *p, const char *allocator) {
    const xpv_plane *pl = xpv_find_plane(p, "/host:CPU");
    int32_t an = xpv_stat_id(pl, "allocator_name");
    int32_t dord = xpv_stat_id(pl, "device_ordinal");
    int32_t ioh = xpv_stat_id(pl, "index_on_host");
    int32_t br = xpv_stat_id(pl, "bytes_reserved");
    int32_t ba = xpv_stat_id(pl, "bytes_allocated");
    int64_t best = 0;
    for (uint32_t li = 0; li < pl->nlines; li++) {
        const xpv_line *ln = &pl->lines[li];
        for (uint32_t ei = 0; ei < ln->nevents; ei++) {
            const xpv_event *e = &ln->events[ei];
            xpv_str name = xpv_event_metadata(pl, e)->name;
            if (!xpv_str_eq(name, "MemoryAllocation") && !xpv_str_eq(name, "MemoryDeallocation"))
                continue;
            xpv_stat st;
            /* Memory id: allocator_name, else the device ordinal. */
            char id[64] = "";
            int64_t ord;
            if (xpv_event_stat(pl, ln, e, an, &st) && st.kind == XPV_STAT_STR)
                snprintf(id, sizeof id, "%.*s", (int)st.v.s.len, st.v.s.ptr);
            else if ((xpv_event_stat(pl, ln, e, dord, &st) ||
                      xpv_event_stat(pl, ln, e, ioh, &st)) && xpv_stat_as_int(&st, &ord))
                snprintf(id, sizeof id, "%lld", (long long)ord);
            if (strcmp(id, allocator)) continue;
            int64_t stack = 0, heap = 0;
            if (xpv_event_stat(pl, ln, e, br, &st)) xpv_stat_as_int(&st, &stack);
            if (xpv_event_stat(pl, ln, e, ba, &st)) xpv_stat_as_int(&st, &heap);
            if (stack + heap > best) best = stack + heap;
        }
    }
    return best;
}

static void check_real_file(const char *path, xpv_profile *p, void *ctx) {
    int *with_memory = ctx;
    const xpv_tool *t = xpv_tool_find("memory_profile");
    int st;
    json_t *j = run_tool(p, &st);
    if (!j) {
        assert_int_equal(st, 404); /* no host plane */
        return;
    }
    json_t *ids = json_object_get(j, "memoryIds");
    if (json_array_size(ids)) (*with_memory)++;
    assert_int_equal(json_array_size(ids) > 0, t->available(p));
    for (size_t i = 0; i < json_array_size(ids); i++) {
        const char *id = json_string_value(json_array_get(ids, i));
        json_t *a = json_object_get(json_object_get(j, "memoryProfilePerAllocator"), id);
        json_t *peak = json_object_get(json_object_get(a, "profileSummary"), "peakStats");
        long long got = iget(peak, "peakBytesInUse");
        long long want = (long long)model_peak(p, id);
        if (got != want)
            fail_msg("%s allocator %s: peak %lld, max stack+heap %lld", path, id, got, want);
        /* The allocator's lifetime peak is never below what the profile
         * itself saw (the audit found 5.0 GB under a 6.2 GB peak). */
        long long life = iget(json_object_get(a, "profileSummary"), "peakBytesUsageLifetime");
        if (life < got)
            fail_msg("%s allocator %s: lifetime peak %lld < in-profile peak %lld", path, id, life, got);
        assert_true(json_array_size(json_object_get(a, "sampledTimelineSnapshots")) <= 1000);
        /* Every breakdown row resolves to a snapshot or special entry. */
        json_t *rows = json_object_get(a, "activeAllocations");
        size_t nsnap = json_array_size(json_object_get(a, "memoryProfileSnapshots"));
        size_t nspec = json_array_size(json_object_get(a, "specialAllocations"));
        for (size_t r = 0; r < json_array_size(rows); r++) {
            long long si = iget(json_array_get(rows, r), "snapshotIndex");
            long long sp = iget(json_array_get(rows, r), "specialIndex");
            if (si >= 0) assert_true((size_t)si < nsnap);
            else assert_true(sp >= 0 && (size_t)sp < nspec);
        }
    }
    json_decref(j);
}

static void test_real_files(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    int with_memory = 0;
    tx_each_real_profile(1, check_real_file, &with_memory);
    print_message("memory_profile: %d real profiles with allocator events\n", with_memory);
    assert_true(with_memory > 0);
}

TU_MAIN(cmocka_unit_test(test_summary_and_peak),
        cmocka_unit_test(test_breakdown),
        cmocka_unit_test(test_breakdown_merge),
        cmocka_unit_test(test_sampling),
        cmocka_unit_test(test_empty_and_errors),
        cmocka_unit_test(test_real_files))
