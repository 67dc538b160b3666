/*
 * trace_layout.c - the first stage of a trace index (trace_index.h): which
 * planes and lines are shown, as which processes and rows (pids, tids,
 * names, order), before any row is indexed.  Used by the build
 * (trace_index.c, trace_index_par.c) and by an image load
 * (trace_index_image.c).
 */
#include "checked.h"
#include "group_events.h"
#include "trace_index.h"
#include "trace_index_int.h"
#include "derived_lines.h"
#include "enrich.h"
#include "par.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define LV XPV_TRACE_LEVELS
#define NONE INT64_MIN

void *xpv_ti_grow(void *p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return p;
    size_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    *cap = c;
    return xpv_xrealloc(p, c * elem);
}

/* ==== Names ============================================================= */

static const char *const internal_names[] = {
    "MemoryAllocation", "MemoryDeallocation",
    "PrefetchProduce", "PrefetchConsume",
    "ParallelInterleaveProduce", "ParallelInterleaveConsume",
    "ParallelMapProduce", "ParallelMapConsume",
    "MapAndBatchProduce", "MapAndBatchConsume",
    "ParseExampleProduce", "ParseExampleConsume",
    "ParallelBatchProduce", "ParallelBatchConsume",
};

int xpv_trace_is_internal(xpv_str name) {
    for (size_t i = 0; i < sizeof internal_names / sizeof internal_names[0]; i++)
        if (xpv_str_eq(name, internal_names[i])) return 1;
    return 0;
}

/* ==== Plane selection (pid mapping) ===================================== */

static int has_prefix(xpv_str s, const char *p) { return xpv_str_has_prefix(s, p); }

/* pid of every plane (-1: not shown).  The first plane named exactly
 * `/host:CPU` gets 701, every other `/host:CPU*` plane 702, 703... in plane
 * order; GPU planes 1 + id (TPU planes when there is no GPU plane), clamped
 * to 1 beyond 500; `/device:CUSTOM:*` 501 + id. */
static void plane_pids(const xpv_profile *p, int64_t *pids) {
    int any_gpu = 0;
    int64_t exact = -1;
    for (uint32_t i = 0; i < p->nplanes; i++) {
        if (has_prefix(p->planes[i].name, "/device:GPU:")) any_gpu = 1;
        if (exact < 0 && xpv_str_eq(p->planes[i].name, "/host:CPU")) exact = i;
    }
    int64_t next_host = exact >= 0 ? 702 : 701;
    for (uint32_t i = 0; i < p->nplanes; i++) {
        const xpv_plane *pl = &p->planes[i];
        int64_t pid = -1;
        if ((int64_t)i == exact) {
            pid = 701;
        } else if (has_prefix(pl->name, "/host:CPU")) {
            pid = next_host++;
        } else if (has_prefix(pl->name, any_gpu ? "/device:GPU:" : "/device:TPU:")) {
            pid = pl->id + 1;
            if (pid > 500 || pid < 1) pid = 1;
        } else if (has_prefix(pl->name, "/device:CUSTOM:")) {
            pid = 501 + pl->id;
        }
        pids[i] = pid;
    }
}

/* ==== Build ============================================================= */

/* (One row at a time: trace_index_row.c.) */

/* ==== Flows ============================================================= */

/*
 * XProf decides a flow's visibility by its first event (§2.12): when the
 * launching end is visible, the other ends are shown too.  At build time
 * every other end of a flow is moved up to its launching end's level (a
 * coarser level never hides anything: the query applies the rule exactly
 * over all levels), so at a resolution where the launching end is a
 * candidate, so are its other ends; the query then adds the ones the rule
 * hid (xpv_trace_query, phase 2).
 */

typedef struct row_key {
    int64_t pid, tid;
    uint32_t order;
} row_key;

/* An absent string (a line or plane with no name field: NULL, 0) is "". */
static char *dup_str(xpv_arena *a, xpv_str s) {
    return xpv_arena_strndup(a, s.len ? s.ptr : "", s.len);
}

/* Comparisons made by the layout sorts (qsort has no context argument;
 * per thread, as several threads build indexes). */
static _Thread_local uint64_t *layout_cmp_count;

/* (pid, tid), then original order: a total order, so qsort is stable. */
static int cmp_row_key(const void *a, const void *b) {
    const row_key *x = a, *y = b;
    if (layout_cmp_count) ++*layout_cmp_count;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

typedef struct proc_key {
    int64_t pid;
    uint32_t order;
} proc_key;

static int cmp_proc_key(const void *a, const void *b) {
    const proc_key *x = a, *y = b;
    if (layout_cmp_count) ++*layout_cmp_count;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Escape every event metadata's shown name once (the renderer copies). */
static void json_names(xpv_arena *a, const xpv_plane *pl, xpv_trace_proc *pr) {
    uint32_t n = pl->nevent_meta;
    pr->jname = xpv_arena_calloc(a, n ? n : 1, sizeof *pr->jname);
    pr->jname_len = xpv_arena_calloc(a, n ? n : 1, sizeof *pr->jname_len);
    xpv_buf b;
    xpv_buf_init(&b);
    for (uint32_t k = 0; k < n; k++) {
        const xpv_event_meta *m = &pl->event_meta[k];
        xpv_str s = m->display_name.len ? m->display_name : m->name;
        xpv_buf_reset(&b);
        xpv_buf_json_str(&b, s.ptr, s.len);
        pr->jname[k] = xpv_arena_strndup(a, b.data, b.len);
        pr->jname_len[k] = (uint32_t)b.len;
    }
    xpv_buf_free(&b);
}

/* Pass 1 of a build (and of a load): processes and rows of the host set,
 * ordered, with their names, pids/tids and stat ids; group ranges are left
 * empty.  Returns the number of events of the shown lines (an upper bound
 * of the indexed events). */
uint64_t xpv_ti_layout(builder *bd, const xpv_hostset *hs) {
    xpv_trace_index *ix = bd->ix;
    uint64_t total = 0;
    for (size_t h = 0; h < hs->n; h++) {
        const xpv_profile *p = hs->profiles[h];
        if (!p || !p->nplanes) continue;
        int64_t *pids = xpv_xcalloc(p->nplanes, sizeof *pids);
        plane_pids(p, pids);
        if (!ix->derived) {
            ix->derived = xpv_xcalloc(hs->n, sizeof *ix->derived);
            ix->nderived = hs->n;
        }
        /* The profile's derived lines (enrich.h): borrowed, kept with it. */
        ix->derived[h] = xpv_profile_derived_lines(p);
        const xpv_derived_lines *dl = ix->derived[h];
        const char *hname = xpv_arena_strndup(&ix->arena, hs->hostnames ? hs->hostnames[h] : "",
                                              hs->hostnames ? strlen(hs->hostnames[h]) : 0);
        for (uint32_t pi = 0; pi < p->nplanes; pi++) {
            if (pids[pi] < 0) continue;
            const xpv_plane *pl = &p->planes[pi];
            int64_t pid = pids[pi] + (hs->n > 1 ? 1000 * (int64_t)(h + 1) : 0);
            uint32_t proc = ix->nprocs;
            ix->procs = xpv_ti_grow(ix->procs, &bd->cap_procs, (size_t)ix->nprocs + 1,
                             sizeof *ix->procs);
            ix->procs[proc] = (xpv_trace_proc){pid, (uint32_t)h, pi, dup_str(&ix->arena, pl->name),
                                               hname, 0, NULL, NULL};
            json_names(&ix->arena, pl, &ix->procs[proc]);
            ix->nprocs++;
            int host = has_prefix(pl->name, "/host:");
            const xpv_dl_plane *dlp = xpv_derived_lines_plane(dl, pi);
            const char *const *djname = NULL;
            const uint32_t *djname_len = NULL;
            if (dlp) {
                xpv_trace_proc tmp;
                json_names(&ix->arena, &dlp->synth, &tmp);
                djname = tmp.jname;
                djname_len = tmp.jname_len;
            }
            uint32_t nall = pl->nlines + (dlp ? dlp->synth.nlines : 0);
            for (uint32_t li = 0; li < nall; li++) {
                int der = li >= pl->nlines;
                const xpv_plane *rpl = der ? &dlp->synth : pl;
                const xpv_line *ln = der ? &dlp->synth.lines[li - pl->nlines] : &pl->lines[li];
                if (!ln->nevents || has_prefix(ln->name, "counters_")) continue;
                ix->rows = xpv_ti_grow(ix->rows, &bd->cap_rows, (size_t)ix->nrows + 1, sizeof *ix->rows);
                xpv_trace_row *r = &ix->rows[ix->nrows++];
                memset(r, 0, sizeof *r);
                r->host = (uint32_t)h;
                r->plane = pi;
                r->line = li;
                r->proc = proc;
                r->pid = pid;
                r->tid = ln->display_id;
                if (dlp && !der) r->tid = dlp->line_display_id[li];
                r->pl = rpl;
                r->ln = ln;
                r->jname = der ? djname : (const char *const *)ix->procs[proc].jname;
                r->jname_len = der ? djname_len : ix->procs[proc].jname_len;
                r->name = dup_str(&ix->arena, ln->display_name);
                r->is_counter = xpv_str_eq(ln->name, "_counters_");
                r->is_host = host;
                r->st_step_name = xpv_stat_id(rpl, "step_name");
                r->st_group_id = xpv_stat_id(rpl, "group_id");
                /* a derived event's correlation_id (XLA Ops of a CUDA
                 * graph node) is an arg, not a launch flow: XProf binds
                 * flows before deriving lines */
                r->st_corr = der ? -1 : xpv_stat_id(rpl, "correlation_id");
                r->st_flow = xpv_stat_id(rpl, "flow");
                r->st_async = xpv_stat_id(rpl, "_a");
                ix->procs[proc].nthreads++;
                total += ln->nevents;
            }
        }
        free(pids);
    }
    /* Order: processes by pid (stable), rows by (pid, tid) (stable). */
    {
        row_key *keys = xpv_xcalloc(ix->nrows ? ix->nrows : 1, sizeof *keys);
        xpv_trace_row *sorted = xpv_xcalloc(ix->nrows ? ix->nrows : 1, sizeof *sorted);
        for (uint32_t i = 0; i < ix->nrows; i++)
            keys[i] = (row_key){ix->rows[i].pid, ix->rows[i].tid, i};
        /* One sort, O(n log n) whatever the file order (lines in
         * descending id order used to make an insertion sort quadratic). */
        layout_cmp_count = &ix->build_work;
        qsort(keys, ix->nrows, sizeof *keys, cmp_row_key);
        for (uint32_t i = 0; i < ix->nrows; i++) sorted[i] = ix->rows[keys[i].order];
        ix->build_work += ix->nrows;
        free(ix->rows);
        ix->rows = sorted;
        free(keys);
        /* procs: sort by pid, remap rows' proc */
        proc_key *pk = xpv_xcalloc(ix->nprocs ? ix->nprocs : 1, sizeof *pk);
        for (uint32_t i = 0; i < ix->nprocs; i++) pk[i] = (proc_key){ix->procs[i].pid, i};
        qsort(pk, ix->nprocs, sizeof *pk, cmp_proc_key);
        layout_cmp_count = NULL;
        uint32_t *perm = xpv_xcalloc(ix->nprocs ? ix->nprocs : 1, sizeof *perm);
        for (uint32_t i = 0; i < ix->nprocs; i++) perm[i] = pk[i].order;
        free(pk);
        ix->build_work += ix->nprocs;
        xpv_trace_proc *np = xpv_xcalloc(ix->nprocs ? ix->nprocs : 1, sizeof *np);
        uint32_t *inv = xpv_xcalloc(ix->nprocs ? ix->nprocs : 1, sizeof *inv);
        for (uint32_t i = 0; i < ix->nprocs; i++) {
            np[i] = ix->procs[perm[i]];
            inv[perm[i]] = i;
        }
        for (uint32_t i = 0; i < ix->nrows; i++) ix->rows[i].proc = inv[ix->rows[i].proc];
        free(ix->procs);
        ix->procs = np;
        free(perm);
        free(inv);
    }

    return total;
}

