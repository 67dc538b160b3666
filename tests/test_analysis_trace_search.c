/*
 * test_analysis_trace_search.c - trace search over the name index built
 * once per trace index (trace_search.c).  The reference is the walk the
 * search used to be (kept here verbatim: every indexed event, its
 * `step_name` stat and string stats decoded per search): on every real
 * xplane of ../shared and on a constructed trace with step names,
 * computed group names, metadata stats and string args, prefix and
 * substring searches (with start bounds and limits) give exactly the
 * walk's events and totals.  The work is bounded: the index is built by
 * the first search only, a prefix search visits exactly its matches, and
 * a rare substring visits a small fraction of the events.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group_events.h"
#include "testutil.h"
#include "tool_xspace.h"
#include "trace_index.h"

#define LV XPV_TRACE_LEVELS

/* ---- the walk (the search before the name index) ---------------------- */

static int prefix_ci(xpv_str s, const char *p, size_t n) {
    if (s.len < n) return 0;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)s.ptr[i]) != tolower((unsigned char)p[i])) return 0;
    return 1;
}

/* A hit of the reference search, in answer order: by start, then row
 * and event. */
typedef struct hit_key {
    int64_t start;
    uint64_t uid;       /* row << 32 | event */
} hit_key;

static int cmp_hit(const void *a, const void *b) {
    const hit_key *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return (x->uid > y->uid) - (x->uid < y->uid);
}

/* Case-insensitive substring (n > 0). */
static int contains_ci(xpv_str s, const char *p, size_t n) {
    if (s.len < n) return 0;
    for (size_t i = 0; i + n <= s.len; i++) {
        size_t k = 0;
        while (k < n && tolower((unsigned char)s.ptr[i + k]) == tolower((unsigned char)p[k])) k++;
        if (k == n) return 1;
    }
    return 0;
}

/* Whether an event's own args (string stats, ref_values resolved) hold the
 * text. */
static int args_contain(const xpv_plane *pl, const xpv_line *ln, const xpv_event *e,
                        const char *text, size_t tn) {
    if (e->wire == XPV_NO_STATS) return 0;
    xpv_stat_iter it;
    xpv_stat st;
    xpv_stat_iter_init(&it, pl, ln, e);
    while (xpv_stat_next(&it, &st))
        if (st.kind == XPV_STAT_STR && contains_ci(st.v.s, text, tn)) return 1;
    return 0;
}

/* One search over every indexed event: mode 0 = the shown name starts
 * with `text`, mode 1 = the shown name or a string arg (event or metadata
 * stat) contains it. */
static size_t walk_search(const xpv_hostset *hs, const xpv_trace_index *ix, const char *text,
                           int mode, int64_t from_ps, size_t limit, xpv_trace_hit **out,
                           uint64_t *total) {
    (void)hs;
    size_t pn = strlen(text), nh = 0;
    /* Every hit, sorted afterwards: simpler than the search's bounded
     * heap, so it checks that heap too. */
    size_t cap = 16;
    hit_key *heap = xpv_xmalloc(cap * sizeof *heap);
    uint8_t *match = NULL;
    const xpv_plane *last_pl = NULL;
    *total = 0;
    for (uint32_t ri = 0; ri < ix->nrows; ri++) {
        const xpv_trace_row *r = &ix->rows[ri];
        if (r->is_counter) continue;
        const xpv_plane *pl = r->pl;
        if (pl != last_pl) {
            /* Per event metadata, once per plane: 1 = the name matches,
             * 2 = (substring mode) one of its metadata stats does. */
            match = realloc(match, pl->nevent_meta + 1);
            for (uint32_t k = 0; k < pl->nevent_meta; k++) {
                const xpv_event_meta *m = &pl->event_meta[k];
                xpv_str nm = m->display_name.len ? m->display_name : m->name;
                uint8_t v = (uint8_t)(mode ? contains_ci(nm, text, pn) : prefix_ci(nm, text, pn));
                if (!v && mode)
                    for (uint32_t si = 0; si < m->nstats && !v; si++)
                        if (m->stats[si].kind == XPV_STAT_STR &&
                            contains_ci(m->stats[si].v.s, text, pn))
                            v = 2;
                match[k] = v;
            }
            last_pl = pl;
        }
        const xpv_line *ln = r->ln;
        const xpv_event *evs = ln->events;
        const xpv_groups *hg = r->host < ix->nhosts ? ix->hgroups[r->host] : NULL;
        for (uint32_t gi = r->group0; gi < r->group0 + r->ngroups; gi++) {
            const xpv_trace_group *g = &ix->groups[gi];
            uint64_t n = g->seg[LV];
            for (uint64_t i = 0; i < n; i++) {
                uint32_t ev = ix->idx[g->off + i];
                const xpv_event *e = &evs[ev];
                if (e->start_ps < from_ps) continue;
                /* The shown name: a non-empty `step_name` stat replaces the
                 * metadata name (as the renderer does), so match that. */
                xpv_stat st;
                int hit;
                const char *sn;
                if (r->st_step_name >= 0 && e->wire != XPV_NO_STATS &&
                    xpv_event_stat(pl, ln, e, r->st_step_name, &st) &&
                    st.kind == XPV_STAT_STR && st.v.s.len) {
                    hit = mode ? contains_ci(st.v.s, text, pn) || match[e->meta] == 2 ||
                                     args_contain(pl, ln, e, text, pn)
                               : prefix_ci(st.v.s, text, pn);
                } else if (hg && (sn = xpv_groups_step_name(hg, r->plane, r->line, ev))) {
                    /* a computed group's root (group_events.h) is shown
                     * under its group name */
                    hit = mode ? contains_ci(xpv_cstr(sn), text, pn) || match[e->meta] == 2 ||
                                     args_contain(pl, ln, e, text, pn)
                               : prefix_ci(xpv_cstr(sn), text, pn);
                } else {
                    hit = match[e->meta] || (mode && args_contain(pl, ln, e, text, pn));
                }
                if (!hit) continue;
                (*total)++;
                if (nh == cap) heap = xpv_xrealloc(heap, (cap *= 2) * sizeof *heap);
                heap[nh++] = (hit_key){e->start_ps, ((uint64_t)ri << 32) | ev};
            }
        }
    }
    free(match);
    qsort(heap, nh, sizeof *heap, cmp_hit);
    if (nh > limit) nh = limit;
    xpv_trace_hit *hits = xpv_xmalloc((nh ? nh : 1) * sizeof *hits);
    for (size_t i = 0; i < nh; i++)
        hits[i] = (xpv_trace_hit){(uint32_t)(heap[i].uid >> 32), (uint32_t)heap[i].uid};
    free(heap);
    *out = hits;
    return nh;
}


/* ---- comparisons ------------------------------------------------------- */

static int checks;

static void same(const xpv_hostset *hs, const xpv_trace_index *ix, const char *text, int mode,
                 int64_t from, size_t limit) {
    xpv_trace_hit *a, *b;
    uint64_t ta, tb;
    xpv_trace_search_work w;
    size_t na = 0;
    ta = 0;
    if (mode && !*text) a = malloc(1);   /* xpv_trace_search_text: nothing */
    else na = walk_search(hs, ix, text, mode, from, limit, &a, &ta);
    size_t nb = xpv_trace_search_ex(hs, ix, text, mode, from, limit, &b, &tb, &w);
    if (na != nb || ta != tb || (na && memcmp(a, b, na * sizeof *a)))
        fail_msg("search %s \"%s\" from %lld limit %zu: walk %zu/%llu, index %zu/%llu",
                 mode ? "text" : "prefix", text, (long long)from, limit, na,
                 (unsigned long long)ta, nb, (unsigned long long)tb);
    /* A prefix visits exactly its matches (one shown name per event). */
    if (!mode && from == INT64_MIN) assert_int_equal(w.events, tb);
    free(a);
    free(b);
    checks++;
}

/* Queries from the index's own names: prefixes of several lengths,
 * substrings, case changes, a token that matches nothing, the empty text. */
static void compare_all(const xpv_hostset *hs, const xpv_trace_index *ix) {
    int64_t mid = ix->min_ps + (ix->max_ps - ix->min_ps) / 2;
    const char *fixed[] = {"", "a", "s", "%", "zzqqxx", "step", "Philox", "fusion", "_", "1"};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        for (int mode = 0; mode < 2; mode++) {
            same(hs, ix, fixed[i], mode, INT64_MIN, 1000);
            same(hs, ix, fixed[i], mode, mid, 7);
        }
    for (uint32_t ri = 0; ri < ix->nrows; ri += 1 + ix->nrows / 6) {
        const xpv_trace_row *r = &ix->rows[ri];
        if (r->is_counter || !r->ln->nevents) continue;
        const xpv_event_meta *m = &r->pl->event_meta[r->ln->events[r->ln->nevents / 2].meta];
        xpv_str nm = m->display_name.len ? m->display_name : m->name;
        char q[64];
        size_t n = nm.len < 40 ? nm.len : 40;
        for (size_t k = 1; k <= n; k += 1 + n / 4) {
            memcpy(q, nm.ptr, k);
            q[k] = 0;
            same(hs, ix, q, 0, INT64_MIN, 1000);
            same(hs, ix, q, 0, mid, 0);
            for (size_t i = 0; i < k; i++) q[i] = (char)toupper((unsigned char)q[i]);
            same(hs, ix, q, 1, INT64_MIN, 50);
        }
        if (n > 4) {                    /* a middle piece */
            memcpy(q, nm.ptr + n / 3, n / 3);
            q[n / 3] = 0;
            same(hs, ix, q, 1, INT64_MIN, 1000);
            same(hs, ix, q, 1, mid, 3);
        }
    }
}

static void check_real_file(const char *path, xpv_profile *p, void *ctx) {
    (void)path;
    (void)ctx;
    const xpv_profile *ps[1] = {p};
    const char *names[1] = {"host"};
    xpv_hostset hs = {1, ps, names};
    xpv_trace_index *ix = xpv_trace_index_build(&hs);
    assert_int_equal(xpv_trace_names_bytes(ix), 0);    /* not before a search */
    compare_all(&hs, ix);
    if (ix->nidx) assert_true(xpv_trace_names_bytes(ix) > 0);
    xpv_trace_index_free(ix);
}

static void test_real_files(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    int nfiles = tx_each_real_profile(1, check_real_file, NULL);
    print_message("%d real files, %d searches compared with the walk\n", nfiles, checks);
    assert_true(nfiles >= 5);
}

/* Step names (a `step_name` stat replaces the shown name), a metadata
 * stat and string args, on two rows; built once; bounded work. */
static void test_constructed(void **state) {
    (void)state;
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/host:CPU");
    int l1 = tx_line(s, pl, 1, "main", 0), l2 = tx_line(s, pl, 2, "worker", 0);
    for (int i = 0; i < 2000; i++) {
        tx_event_t *e = tx_event(s, pl, l1, i % 100 ? "MatMul" : "StepRoot", (int64_t)i * 1000000, 900000);
        if (i % 100 == 0) tx_ev_str(s, pl, e, "step_name", i % 200 ? "train 1" : "eval 2");
        e = tx_event(s, pl, l2, "Conv2D", (int64_t)i * 1000000 + 5, 500000);
        if (i % 500 == 7) tx_ev_str(s, pl, e, "kernel_details", "regs:32 Philox rare");
        else if (i % 3 == 0) tx_ev_ref(s, pl, e, "tf_op", "model/conv:Conv2D");
    }
    tx_meta_str(s, pl, "Conv2D", "category", "convolution");
    xpv_profile *p = tx_decode(s);
    const xpv_profile *ps[1] = {p};
    const char *names[1] = {"host"};
    xpv_hostset hs = {1, ps, names};
    xpv_trace_index *ix = xpv_trace_index_build(&hs);
    xpv_trace_hit *h;
    uint64_t total;
    xpv_trace_search_work w;
    size_t n = xpv_trace_search_ex(&hs, ix, "train", 0, INT64_MIN, 100, &h, &total, &w);
    assert_int_equal(w.built, 1);
    assert_int_equal(total, 10);        /* renamed roots, not "StepRoot" */
    assert_int_equal(n, 10);
    free(h);
    n = xpv_trace_search_ex(&hs, ix, "StepR", 0, INT64_MIN, 100, &h, &total, &w);
    assert_int_equal(w.built, 0);       /* the index is built once */
    assert_int_equal(total, 0);
    free(h);
    n = xpv_trace_search_ex(&hs, ix, "philox", 1, INT64_MIN, 100, &h, &total, &w);
    assert_int_equal(total, 4);         /* i = 7, 507, 1007, 1507 */
    assert_true(w.events <= 8);         /* not a walk over 4000 events */
    free(h);
    compare_all(&hs, ix);
    same(&hs, ix, "train", 0, INT64_MIN, 3);
    same(&hs, ix, "EVAL", 1, INT64_MIN, 1000);
    same(&hs, ix, "conv", 1, INT64_MIN, 10);
    same(&hs, ix, "model/", 1, 500 * 1000000LL, 10);
    same(&hs, ix, "volution", 1, INT64_MIN, 10);
    xpv_trace_index_free(ix);
    xpv_profile_free(p);
}

TU_MAIN(cmocka_unit_test(test_constructed),
        cmocka_unit_test(test_real_files))
