/*
 * tool_xspace.h - build small XSpaces in a test with protobuf-c, then
 * decode them with xpv_decode, so converter tests know every number.
 *
 *   tx_space *s = tx_new();
 *   int pl = tx_plane(s, "/host:CPU");
 *   int ln = tx_line(s, pl, 1, "python", 0);
 *   (or, for a space of one plane and one line at time 0:
 *    int pl, ln; tx_space *s = tx_new_line("/host:CPU", 1, "python", &pl, &ln);)
 *   Tensorflow__Profiler__XEvent *e = tx_event(s, pl, ln, "a:MatMul", 0, 10);
 *   tx_stat_int(s, pl, &e->n_stats, &e->stats, "is_eager", 1);
 *   xpv_profile *p = tx_decode(s);      // s is freed
 *
 * Metadata ids are assigned per plane by name.  Everything is allocated
 * from a pointer list released by tx_decode (or tx_free).  Header-only:
 * static functions, for test files.
 */
#ifndef XPV_TOOL_XSPACE_H
#define XPV_TOOL_XSPACE_H

#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "model.h"
#include "xplane.h"
#include "testutil.h"
#include "xplane.pb-c.h"

typedef Tensorflow__Profiler__XPlane tx_plane_t;
typedef Tensorflow__Profiler__XEvent tx_event_t;
typedef Tensorflow__Profiler__XStat tx_stat_t;

typedef struct tx_space {
    Tensorflow__Profiler__XSpace space;
    void **allocs;
    size_t nallocs, capallocs;
} tx_space;

static inline void *tx_alloc(tx_space *s, size_t n) {
    if (s->nallocs == s->capallocs) {
        s->capallocs = s->capallocs ? s->capallocs * 2 : 64;
        s->allocs = realloc(s->allocs, s->capallocs * sizeof *s->allocs);
    }
    void *p = calloc(1, n ? n : 1);
    s->allocs[s->nallocs++] = p;
    return p;
}

static inline char *tx_strdup(tx_space *s, const char *str) {
    size_t n = strlen(str);
    char *p = tx_alloc(s, n + 1);
    memcpy(p, str, n);
    return p;
}

/* Append `item` to a protobuf-c repeated pointer field. */
static inline void tx_push(tx_space *s, size_t *n, void ***arr, void *item) {
    void **na = tx_alloc(s, (*n + 1) * sizeof *na);
    if (*n) memcpy(na, *arr, *n * sizeof *na);
    na[(*n)++] = item;
    *arr = na;
}

static inline tx_space *tx_new(void) {
    tx_space *s = calloc(1, sizeof *s);
    Tensorflow__Profiler__XSpace init = TENSORFLOW__PROFILER__XSPACE__INIT;
    s->space = init;
    return s;
}

static inline void tx_free(tx_space *s) {
    for (size_t i = 0; i < s->nallocs; i++) free(s->allocs[i]);
    free(s->allocs);
    free(s);
}

static inline int tx_plane(tx_space *s, const char *name) {
    tx_plane_t *pl = tx_alloc(s, sizeof *pl);
    tx_plane_t init = TENSORFLOW__PROFILER__XPLANE__INIT;
    *pl = init;
    pl->id = (int64_t)s->space.n_planes;
    pl->name = tx_strdup(s, name);
    tx_push(s, &s->space.n_planes, (void ***)&s->space.planes, pl);
    return (int)s->space.n_planes - 1;
}

/* Stat metadata id for `name` in plane `pl`, created when new. */
static inline int64_t tx_stat_meta(tx_space *s, int pl, const char *name) {
    tx_plane_t *p = s->space.planes[pl];
    for (size_t i = 0; i < p->n_stat_metadata; i++)
        if (!strcmp(p->stat_metadata[i]->value->name, name)) return p->stat_metadata[i]->key;
    Tensorflow__Profiler__XPlane__StatMetadataEntry *e = tx_alloc(s, sizeof *e);
    Tensorflow__Profiler__XPlane__StatMetadataEntry ei =
        TENSORFLOW__PROFILER__XPLANE__STAT_METADATA_ENTRY__INIT;
    *e = ei;
    Tensorflow__Profiler__XStatMetadata *m = tx_alloc(s, sizeof *m);
    Tensorflow__Profiler__XStatMetadata mi = TENSORFLOW__PROFILER__XSTAT_METADATA__INIT;
    *m = mi;
    m->id = (int64_t)p->n_stat_metadata + 1;
    m->name = tx_strdup(s, name);
    e->key = m->id;
    e->value = m;
    tx_push(s, &p->n_stat_metadata, (void ***)&p->stat_metadata, e);
    return m->id;
}

static inline int64_t tx_event_meta(tx_space *s, int pl, const char *name) {
    tx_plane_t *p = s->space.planes[pl];
    for (size_t i = 0; i < p->n_event_metadata; i++)
        if (!strcmp(p->event_metadata[i]->value->name, name)) return p->event_metadata[i]->key;
    Tensorflow__Profiler__XPlane__EventMetadataEntry *e = tx_alloc(s, sizeof *e);
    Tensorflow__Profiler__XPlane__EventMetadataEntry ei =
        TENSORFLOW__PROFILER__XPLANE__EVENT_METADATA_ENTRY__INIT;
    *e = ei;
    Tensorflow__Profiler__XEventMetadata *m = tx_alloc(s, sizeof *m);
    Tensorflow__Profiler__XEventMetadata mi = TENSORFLOW__PROFILER__XEVENT_METADATA__INIT;
    *m = mi;
    m->id = (int64_t)p->n_event_metadata + 1;
    m->name = tx_strdup(s, name);
    e->key = m->id;
    e->value = m;
    tx_push(s, &p->n_event_metadata, (void ***)&p->event_metadata, e);
    return m->id;
}

static inline int tx_line(tx_space *s, int pl, int64_t id, const char *name, int64_t ts_ns) {
    tx_plane_t *p = s->space.planes[pl];
    Tensorflow__Profiler__XLine *l = tx_alloc(s, sizeof *l);
    Tensorflow__Profiler__XLine init = TENSORFLOW__PROFILER__XLINE__INIT;
    *l = init;
    l->id = id;
    l->name = tx_strdup(s, name);
    l->timestamp_ns = ts_ns;
    tx_push(s, &p->n_lines, (void ***)&p->lines, l);
    return (int)p->n_lines - 1;
}

/* A new space whose plane `plane` (index in *pl) holds one line (index in
 * *ln) with id `id` and name `line`, at time 0: how most constructed
 * profiles start. */
static inline tx_space *tx_new_line(const char *plane, int64_t id, const char *line, int *pl,
                                    int *ln) {
    tx_space *s = tx_new();
    *pl = tx_plane(s, plane);
    *ln = tx_line(s, *pl, id, line, 0);
    return s;
}

static inline tx_event_t *tx_event(tx_space *s, int pl, int ln, const char *name, int64_t offset_ps,
                            int64_t dur_ps) {
    Tensorflow__Profiler__XLine *l = s->space.planes[pl]->lines[ln];
    tx_event_t *e = tx_alloc(s, sizeof *e);
    tx_event_t init = TENSORFLOW__PROFILER__XEVENT__INIT;
    *e = init;
    e->metadata_id = tx_event_meta(s, pl, name);
    e->data_case = TENSORFLOW__PROFILER__XEVENT__DATA_OFFSET_PS;
    e->offset_ps = offset_ps;
    e->duration_ps = dur_ps;
    tx_push(s, &l->n_events, (void ***)&l->events, e);
    return e;
}

static inline tx_stat_t *tx_new_stat(tx_space *s, int pl, size_t *n, tx_stat_t ***arr,
                              const char *name) {
    tx_stat_t *st = tx_alloc(s, sizeof *st);
    tx_stat_t init = TENSORFLOW__PROFILER__XSTAT__INIT;
    *st = init;
    st->metadata_id = tx_stat_meta(s, pl, name);
    tx_push(s, n, (void ***)arr, st);
    return st;
}

static inline void tx_ev_int(tx_space *s, int pl, tx_event_t *e, const char *name, int64_t v) {
    tx_stat_t *st = tx_new_stat(s, pl, &e->n_stats, &e->stats, name);
    st->value_case = TENSORFLOW__PROFILER__XSTAT__VALUE_INT64_VALUE;
    st->int64_value = v;
}

static inline void tx_ev_str(tx_space *s, int pl, tx_event_t *e, const char *name, const char *v) {
    tx_stat_t *st = tx_new_stat(s, pl, &e->n_stats, &e->stats, name);
    st->value_case = TENSORFLOW__PROFILER__XSTAT__VALUE_STR_VALUE;
    st->str_value = tx_strdup(s, v);
}

/* A string stored as ref_value (interned in stat metadata), as CUPTI does. */
static inline void tx_ev_ref(tx_space *s, int pl, tx_event_t *e, const char *name, const char *v) {
    int64_t ref = tx_stat_meta(s, pl, v);
    tx_stat_t *st = tx_new_stat(s, pl, &e->n_stats, &e->stats, name);
    st->value_case = TENSORFLOW__PROFILER__XSTAT__VALUE_REF_VALUE;
    st->ref_value = (uint64_t)ref;
}

static inline void tx_plane_int(tx_space *s, int pl, const char *name, int64_t v) {
    tx_plane_t *p = s->space.planes[pl];
    tx_stat_t *st = tx_new_stat(s, pl, &p->n_stats, &p->stats, name);
    st->value_case = TENSORFLOW__PROFILER__XSTAT__VALUE_INT64_VALUE;
    st->int64_value = v;
}

static inline void tx_plane_str(tx_space *s, int pl, const char *name, const char *v) {
    tx_plane_t *p = s->space.planes[pl];
    tx_stat_t *st = tx_new_stat(s, pl, &p->n_stats, &p->stats, name);
    st->value_case = TENSORFLOW__PROFILER__XSTAT__VALUE_STR_VALUE;
    st->str_value = tx_strdup(s, v);
}

/* The event metadata named `ev_name` in plane `pl` (created when new). */
static inline Tensorflow__Profiler__XEventMetadata *tx_meta(tx_space *s, int pl,
                                                             const char *ev_name) {
    int64_t id = tx_event_meta(s, pl, ev_name);
    tx_plane_t *p = s->space.planes[pl];
    for (size_t i = 0; i < p->n_event_metadata; i++)
        if (p->event_metadata[i]->key == id) return p->event_metadata[i]->value;
    return NULL;
}

/* Metadata-level stats (XProf keeps program_id, symbol_id, hlo_category,
 * tf_op, flops, bytes_accessed there for TPU ops). */
static inline void tx_meta_int(tx_space *s, int pl, const char *ev_name, const char *name,
                               int64_t v) {
    Tensorflow__Profiler__XEventMetadata *m = tx_meta(s, pl, ev_name);
    tx_stat_t *st = tx_new_stat(s, pl, &m->n_stats, &m->stats, name);
    st->value_case = TENSORFLOW__PROFILER__XSTAT__VALUE_INT64_VALUE;
    st->int64_value = v;
}

static inline void tx_meta_str(tx_space *s, int pl, const char *ev_name, const char *name,
                               const char *v) {
    Tensorflow__Profiler__XEventMetadata *m = tx_meta(s, pl, ev_name);
    tx_stat_t *st = tx_new_stat(s, pl, &m->n_stats, &m->stats, name);
    st->value_case = TENSORFLOW__PROFILER__XSTAT__VALUE_STR_VALUE;
    st->str_value = tx_strdup(s, v);
}

static inline void tx_meta_display(tx_space *s, int pl, const char *ev_name, const char *disp) {
    tx_meta(s, pl, ev_name)->display_name = tx_strdup(s, disp);
}

static inline void tx_buf_free(void *buf, size_t len) {
    (void)len;
    free(buf);
}

/* Pack, free the builder, decode.  NULL when decoding fails. */
static inline xpv_profile *tx_decode(tx_space *s) {
    size_t n = tensorflow__profiler__xspace__get_packed_size(&s->space);
    uint8_t *buf = malloc(n ? n : 1);
    tensorflow__profiler__xspace__pack(&s->space, buf);
    tx_free(s);
    xpv_decode_error err;
    return xpv_decode(buf, n, tx_buf_free, &err);
}

/* Read and decode the xplane file at `path`; fails the test when it cannot
 * be read, returns NULL (and fills `*derr`) when it does not decode.  The
 * profile owns the file buffer: free both with xpv_profile_free. */
static inline xpv_profile *tx_try_decode_file(const char *path, xpv_decode_error *derr) {
    size_t len;
    void *buf = tu_read_file(path, &len);
    if (!buf) fail_msg("%s: cannot read", path);
    return xpv_decode(buf, len, tx_buf_free, derr);
}

/* As tx_try_decode_file, but a file that does not decode fails the test. */
static inline xpv_profile *tx_decode_file(const char *path) {
    xpv_decode_error derr;
    xpv_profile *p = tx_try_decode_file(path, &derr);
    if (!p) fail_msg("%s: %s", path, derr.msg);
    return p;
}

/* Decode every real xplane of ../shared (tu_real_xplanes) in turn and call
 * `fn(path, p, ctx)` on it; `path` and `p` are borrowed for the call (the
 * profile is freed after it).  A file that does not decode is skipped, or
 * fails the test when `all_decode`.  Returns how many profiles `fn` saw.
 * Call after TU_SKIP_NO_SHARED. */
static inline int tx_each_real_profile(int all_decode,
                                       void (*fn)(const char *path, xpv_profile *p, void *ctx),
                                       void *ctx) {
    char **files = tu_real_xplanes();
    int n = 0;
    for (char **f = files; *f; f++) {
        xpv_decode_error derr;
        xpv_profile *p = tx_try_decode_file(*f, &derr);
        if (!p) {
            if (all_decode) fail_msg("%s: %s", *f, derr.msg);
            continue;
        }
        fn(*f, p, ctx);
        xpv_profile_free(p);
        n++;
    }
    tu_free_list(files);
    return n;
}

/* The path of the real JAX-on-TPU capture of ../shared (openxla-xprof's
 * tpu_inference_2) in `out`.  Call after TU_SKIP_NO_SHARED. */
static inline const char *tx_real_tpu_path(char *out, size_t n) {
    snprintf(out, n,
             "%s/testdata/real/openxla-xprof/plugins/profile/tpu_inference_2/"
             "tpu_inference_2.xplane.pb",
             tu_shared_dir());
    return out;
}

/* The real TF 2.4 GPU training profile of ../shared (one host of
 * GPU-multi-worker), decoded as by tx_decode_file; skips the current test
 * when the file is missing. */
static inline xpv_profile *tx_decode_real_gpu_file(void) {
    char path[1024];
    snprintf(path, sizeof path,
             "%s/testdata/real/tensorflow-profiler/plugins/profile/GPU-multi-worker/"
             "34.83.195.179_6003.xplane.pb",
             tu_shared_dir());
    if (access(path, R_OK) != 0) {
        print_message("SKIP: %s missing\n", path);
        skip();
    }
    return tx_decode_file(path);
}

#endif
