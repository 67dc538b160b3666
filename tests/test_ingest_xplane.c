/*
 * test_ingest_xplane.c - the fast decoder against protobuf-c's unpack.
 *
 * Differential: every real .xplane.pb under ../shared/testdata/real (when
 * present), synthetic profiles from our generator, and hand-built XSpaces
 * with edge cases are decoded both ways and compared field by field.
 * Error paths: empty, truncated at every prefix of a small file, corrupt
 * real file, wrong-type bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "model.h"
#include "xplane.h"
#include "synth.h"
#include "xplane.pb-c.h"
#include "tool_xspace.h"

typedef Tensorflow__Profiler__XSpace PbSpace;
typedef Tensorflow__Profiler__XPlane PbPlane;
typedef Tensorflow__Profiler__XLine PbLine;
typedef Tensorflow__Profiler__XEvent PbEvent;
typedef Tensorflow__Profiler__XStat PbStat;

static int str_is(xpv_str s, const char *c) {
    if (!c) c = "";
    return s.len == strlen(c) && (s.len == 0 || memcmp(s.ptr, c, s.len) == 0);
}

/* Last stat metadata with this key (map semantics: last wins). */
static const Tensorflow__Profiler__XStatMetadata *pb_stat_meta(const PbPlane *pl, int64_t id) {
    const Tensorflow__Profiler__XStatMetadata *m = NULL;
    for (size_t i = 0; i < pl->n_stat_metadata; i++)
        if (pl->stat_metadata[i]->key == id) m = pl->stat_metadata[i]->value;
    return m;
}

static const Tensorflow__Profiler__XEventMetadata *pb_event_meta(const PbPlane *pl, int64_t id) {
    const Tensorflow__Profiler__XEventMetadata *m = NULL;
    for (size_t i = 0; i < pl->n_event_metadata; i++)
        if (pl->event_metadata[i]->key == id) m = pl->event_metadata[i]->value;
    return m;
}

static void compare_stat(const PbPlane *pp, const xpv_plane *pl, const PbStat *ps,
                         const xpv_stat *st) {
    const Tensorflow__Profiler__XStatMetadata *m = pb_stat_meta(pp, ps->metadata_id);
    if (m) {
        assert_true(st->meta >= 0);
        assert_true(str_is(pl->stat_meta[st->meta].name, m->name ? m->name : ""));
    } else {
        assert_int_equal(st->meta, -1);
    }
    switch (ps->value_case) {
    case TENSORFLOW__PROFILER__XSTAT__VALUE_DOUBLE_VALUE:
        assert_int_equal(st->kind, XPV_STAT_DOUBLE);
        assert_memory_equal(&st->v.d, &ps->double_value, sizeof(double));
        break;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE:
        assert_int_equal(st->kind, XPV_STAT_UINT);
        assert_true(st->v.u == ps->uint64_value);
        break;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_INT64_VALUE:
        assert_int_equal(st->kind, XPV_STAT_INT);
        assert_true(st->v.i == ps->int64_value);
        break;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_STR_VALUE:
        assert_int_equal(st->kind, XPV_STAT_STR);
        assert_true(str_is(st->v.s, ps->str_value));
        break;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_REF_VALUE: {
        assert_int_equal(st->kind, XPV_STAT_STR);
        assert_int_equal(st->is_ref, 1);
        const Tensorflow__Profiler__XStatMetadata *r = pb_stat_meta(pp, (int64_t)ps->ref_value);
        assert_true(str_is(st->v.s, r && r->name ? r->name : ""));
        break;
    }
    case TENSORFLOW__PROFILER__XSTAT__VALUE_BYTES_VALUE:
    case TENSORFLOW__PROFILER__XSTAT__VALUE_COMPRESSED_STR_VALUE:
        assert_int_equal(st->kind, ps->value_case == TENSORFLOW__PROFILER__XSTAT__VALUE_BYTES_VALUE
                                       ? XPV_STAT_BYTES : XPV_STAT_GZSTR);
        assert_int_equal(st->v.s.len, ps->bytes_value.len);
        if (st->v.s.len) assert_memory_equal(st->v.s.ptr, ps->bytes_value.data, st->v.s.len);
        break;
    default:
        assert_int_equal(st->kind, XPV_STAT_NONE);
    }
}

/* Compare one decoded profile with protobuf-c's unpack of the same bytes. */
static void compare(const PbSpace *sp, const xpv_profile *p) {
    assert_int_equal(p->nplanes, sp->n_planes);
    assert_int_equal(p->nhostnames, sp->n_hostnames);
    for (size_t i = 0; i < sp->n_hostnames; i++) assert_true(str_is(p->hostnames[i], sp->hostnames[i]));
    assert_int_equal(p->nerrors, sp->n_errors);
    assert_int_equal(p->nwarnings, sp->n_warnings);
    for (size_t i = 0; i < sp->n_warnings; i++) assert_true(str_is(p->warnings[i], sp->warnings[i]));
    uint64_t total = 0;
    for (size_t pi = 0; pi < sp->n_planes; pi++) {
        const PbPlane *pp = sp->planes[pi];
        const xpv_plane *pl = &p->planes[pi];
        assert_true(pl->id == pp->id);
        assert_true(str_is(pl->name, pp->name));
        assert_int_equal(pl->nstat_meta, pp->n_stat_metadata + 1);
        assert_int_equal(pl->nevent_meta, pp->n_event_metadata + 1);
        for (size_t k = 0; k < pp->n_event_metadata; k++) {
            const Tensorflow__Profiler__XEventMetadata *m = pp->event_metadata[k]->value;
            const xpv_event_meta *em = &pl->event_meta[k + 1];
            if (!m) continue;
            assert_true(em->id == m->id);
            assert_true(str_is(em->name, m->name));
            assert_true(str_is(em->display_name, m->display_name));
            assert_int_equal(em->nstats, m->n_stats);
            for (size_t s = 0; s < m->n_stats; s++) compare_stat(pp, pl, m->stats[s], &em->stats[s]);
            assert_int_equal(em->nchildren, m->n_child_id);
            for (size_t c = 0; c < m->n_child_id; c++) assert_true(em->child_ids[c] == m->child_id[c]);
        }
        assert_int_equal(pl->nstats, pp->n_stats);
        for (size_t s = 0; s < pp->n_stats; s++) compare_stat(pp, pl, pp->stats[s], &pl->stats[s]);
        assert_int_equal(pl->nlines, pp->n_lines);
        for (size_t li = 0; li < pp->n_lines; li++) {
            const PbLine *pln = pp->lines[li];
            const xpv_line *ln = &pl->lines[li];
            assert_true(ln->id == pln->id);
            assert_true(ln->display_id == (pln->display_id ? pln->display_id : pln->id));
            assert_true(str_is(ln->name, pln->name));
            assert_true(str_is(ln->display_name, pln->display_name[0] ? pln->display_name : pln->name));
            assert_true(ln->timestamp_ns == pln->timestamp_ns);
            assert_true(ln->duration_ps == pln->duration_ps);
            assert_int_equal(ln->nevents, pln->n_events);
            int64_t base_ps = (pln->timestamp_ns - p->base_ns) * 1000;
            for (size_t ei = 0; ei < pln->n_events; ei++) {
                const PbEvent *pe = pln->events[ei];
                const xpv_event *e = &ln->events[ei];
                int64_t off = pe->data_case == TENSORFLOW__PROFILER__XEVENT__DATA_OFFSET_PS ? pe->offset_ps : 0;
                assert_true(e->start_ps == base_ps + off);
                assert_true(e->dur_ps == pe->duration_ps);
                const Tensorflow__Profiler__XEventMetadata *m = pb_event_meta(pp, pe->metadata_id);
                assert_true(str_is(pl->event_meta[e->meta].name, m ? m->name : ""));
                xpv_stat_iter it;
                xpv_stat st;
                size_t n = 0;
                xpv_stat_iter_init(&it, pl, ln, e);
                while (xpv_stat_next(&it, &st)) {
                    assert_true(n < pe->n_stats);
                    compare_stat(pp, pl, pe->stats[n], &st);
                    n++;
                }
                assert_int_equal(n, pe->n_stats);
            }
            total += ln->nevents;
        }
    }
    assert_true(total == p->nevents);
}

/* Decode `buf` both ways and compare; buf is copied. */
static void diff_bytes(const void *bytes, size_t len, const char *what) {
    PbSpace *sp = tensorflow__profiler__xspace__unpack(NULL, len, bytes);
    assert_non_null(sp);
    void *copy = malloc(len ? len : 1);
    memcpy(copy, bytes, len);
    xpv_decode_error err;
    xpv_profile *p = xpv_decode(copy, len, NULL, &err);
    if (!p) fail_msg("%s: decode failed at %llu: %s", what, (unsigned long long)err.offset, err.msg);
    compare(sp, p);
    xpv_profile_free(p);
    free(copy);
    tensorflow__profiler__xspace__free_unpacked(sp, NULL);
}

static void test_real_files(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    char **files = tu_real_xplanes();
    int n = 0;
    for (char **f = files; *f; f++) {
        size_t len;
        void *b = tu_read_file(*f, &len);
        assert_non_null(b);
        diff_bytes(b, len, *f);
        free(b);
        n++;
    }
    print_message("compared %d real xplane files\n", n);
    assert_true(n >= 5);
    tu_free_list(files);
}

static void test_synth_files(void **state) {
    (void)state;
    uint64_t sizes[] = {100 * 1000, 2 * 1000 * 1000};
    for (size_t i = 0; i < 2; i++) {
        xpv_synth_opts o = {0};
        o.size_bytes = sizes[i];
        o.hosts = 2;
        xpv_synth_defaults(&o);
        for (int h = 0; h < 2; h++) {
            xpv_buf b;
            xpv_buf_init(&b);
            assert_int_equal(xpv_synth_host(&o, h, &b), 0);
            assert_true(b.len > sizes[i] / 4);
            diff_bytes(b.data, b.len, "synth");
            xpv_buf_free(&b);
        }
    }
}

/* ---- hand-built edge cases ---------------------------------------------- */

static PbStat *mkstat(int64_t mid, int kind, uint64_t u, double d, const char *s) {
    PbStat *st = calloc(1, sizeof *st);
    tensorflow__profiler__xstat__init(st);
    st->metadata_id = mid;
    st->value_case = (Tensorflow__Profiler__XStat__ValueCase)kind;
    switch (kind) {
    case 2: st->double_value = d; break;
    case 3: case 4: case 7: st->uint64_value = u; break;
    case 5: st->str_value = (char *)s; break;
    case 6: st->bytes_value.data = (uint8_t *)s; st->bytes_value.len = strlen(s); break;
    default: break;
    }
    return st;
}

/* An XSpace exercising: sparse and negative metadata ids, duplicate map
 * keys, refs, every stat kind, display names, num_occurrences, events with
 * unknown metadata, empty lines, negative offsets. */
static uint8_t *build_edge_space(size_t *len) {
    static Tensorflow__Profiler__XStatMetadata sm[4];
    static Tensorflow__Profiler__XPlane__StatMetadataEntry sme[4], *smp[4];
    static Tensorflow__Profiler__XEventMetadata em[3];
    static Tensorflow__Profiler__XPlane__EventMetadataEntry eme[3], *emp[3];
    const char *snames[4] = {"correlation_id", "kernel_details", "regs:32 grid:1,1,1", "tf_op"};
    int64_t sids[4] = {1, 7, 1000000007LL, 7}; /* duplicate key 7: last wins */
    for (int i = 0; i < 4; i++) {
        tensorflow__profiler__xstat_metadata__init(&sm[i]);
        sm[i].id = sids[i];
        sm[i].name = (char *)snames[i];
        tensorflow__profiler__xplane__stat_metadata_entry__init(&sme[i]);
        sme[i].key = sids[i];
        sme[i].value = &sm[i];
        smp[i] = &sme[i];
    }
    int64_t eids[3] = {5, -3, 123456789012LL};
    const char *enames[3] = {"train", "volta_sgemm", "MemcpyH2D"};
    static int64_t children[2] = {-3, 5};
    for (int i = 0; i < 3; i++) {
        tensorflow__profiler__xevent_metadata__init(&em[i]);
        em[i].id = eids[i];
        em[i].name = (char *)enames[i];
        tensorflow__profiler__xplane__event_metadata_entry__init(&eme[i]);
        eme[i].key = eids[i];
        eme[i].value = &em[i];
        emp[i] = &eme[i];
    }
    em[1].display_name = "sgemm";
    static PbStat *mstats[1];
    mstats[0] = mkstat(1000000007LL, 7, 1000000007ULL, 0, NULL);
    em[1].n_stats = 1;
    em[1].stats = mstats;
    em[0].n_child_id = 2;
    em[0].child_id = children;

    static PbEvent ev[4], *evp[4];
    static PbStat *estats[6];
    estats[0] = mkstat(1, 4, (uint64_t)-5LL, 0, NULL);
    estats[1] = mkstat(1, 3, 18446744073709551615ULL, 0, NULL);
    estats[2] = mkstat(7, 2, 0, 3.25, NULL);
    estats[3] = mkstat(7, 5, 0, 0, "model/dense/MatMul:MatMul");
    estats[4] = mkstat(99, 6, 0, 0, "raw");     /* unknown stat metadata */
    estats[5] = mkstat(1000000007LL, 7, 7, 0, NULL); /* ref to the dup key */
    for (int i = 0; i < 4; i++) {
        tensorflow__profiler__xevent__init(&ev[i]);
        evp[i] = &ev[i];
    }
    ev[0].metadata_id = 5; ev[0].data_case = TENSORFLOW__PROFILER__XEVENT__DATA_OFFSET_PS;
    ev[0].offset_ps = 1000; ev[0].duration_ps = 5000000;
    ev[0].n_stats = 6; ev[0].stats = estats;
    ev[1].metadata_id = -3; ev[1].data_case = TENSORFLOW__PROFILER__XEVENT__DATA_OFFSET_PS;
    ev[1].offset_ps = -20; ev[1].duration_ps = 0;
    ev[2].metadata_id = 424242; /* unknown */
    ev[2].data_case = TENSORFLOW__PROFILER__XEVENT__DATA_NUM_OCCURRENCES; ev[2].num_occurrences = 9;
    ev[3].metadata_id = 123456789012LL; ev[3].data_case = TENSORFLOW__PROFILER__XEVENT__DATA_OFFSET_PS;
    ev[3].offset_ps = 3000000000000LL; ev[3].duration_ps = 1;

    static PbLine ln[2], *lnp[2];
    for (int i = 0; i < 2; i++) {
        tensorflow__profiler__xline__init(&ln[i]);
        lnp[i] = &ln[i];
    }
    ln[0].id = 77; ln[0].name = "Stream #7(Kernel)"; ln[0].timestamp_ns = 1234567;
    ln[0].n_events = 4; ln[0].events = evp;
    ln[1].id = 3735928559LL; ln[1].display_id = 5; ln[1].display_name = "Steps";
    ln[1].name = "empty";

    static PbStat *pstats[2];
    pstats[0] = mkstat(1, 3, 80, 0, NULL);
    pstats[1] = mkstat(7, 6, 0, 0, "\x01\x02");
    static PbPlane pl, *plp[2];
    static PbPlane pl2;
    tensorflow__profiler__xplane__init(&pl);
    pl.id = 2; pl.name = "/device:GPU:0";
    pl.n_lines = 2; pl.lines = lnp;
    pl.n_stat_metadata = 4; pl.stat_metadata = smp;
    pl.n_event_metadata = 3; pl.event_metadata = emp;
    pl.n_stats = 2; pl.stats = pstats;
    tensorflow__profiler__xplane__init(&pl2);
    pl2.name = "Task Environment";
    plp[0] = &pl; plp[1] = &pl2;
    static char *host[1] = {"worker0"};
    static char *warn[1] = {"dropped 3 events"};
    PbSpace sp;
    tensorflow__profiler__xspace__init(&sp);
    sp.n_planes = 2; sp.planes = plp;
    sp.n_hostnames = 1; sp.hostnames = host;
    sp.n_warnings = 1; sp.warnings = warn;
    *len = tensorflow__profiler__xspace__get_packed_size(&sp);
    uint8_t *buf = malloc(*len);
    tensorflow__profiler__xspace__pack(&sp, buf);
    for (int i = 0; i < 6; i++) free(estats[i]);
    free(mstats[0]);
    free(pstats[0]);
    free(pstats[1]);
    return buf;
}

/* Issue 10 item 4: extreme line timestamps, offsets and durations (as a
 * hostile or broken writer could put there) saturate instead of wrapping:
 * no event gets a negative duration, start + dur never overflows, the file
 * gets one warning saying values were clamped; an event-metadata key of
 * INT64_MAX (once `max + 1` in the id map) is found through the hash path. */
static void test_extreme_times_and_keys(void **state) {
    (void)state;
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/device:GPU:0");
    int l1 = tx_line(s, pl, 1, "far future", INT64_MAX);
    tx_event(s, pl, l1, "a", INT64_MAX, -1);           /* dur UINT64_MAX on the wire */
    tx_event(s, pl, l1, "b", -1, INT64_MAX);
    int l2 = tx_line(s, pl, 2, "far past", INT64_MIN + 1);
    tx_event(s, pl, l2, "a", INT64_MIN, INT64_MIN);
    tx_event(s, pl, l2, "big key", 5, 7);
    int l3 = tx_line(s, pl, 3, "zero", 0);
    tx_event(s, pl, l3, "b", 1000, 2000);
    /* Event metadata "big key" gets id/key INT64_MAX. */
    tx_plane_t *tp = s->space.planes[pl];
    for (size_t i = 0; i < tp->n_event_metadata; i++)
        if (!strcmp(tp->event_metadata[i]->value->name, "big key")) {
            int64_t old = tp->event_metadata[i]->key;
            tp->event_metadata[i]->key = INT64_MAX;
            tp->event_metadata[i]->value->id = INT64_MAX;
            for (size_t l = 0; l < tp->n_lines; l++)
                for (size_t e = 0; e < tp->lines[l]->n_events; e++)
                    if (tp->lines[l]->events[e]->metadata_id == old)
                        tp->lines[l]->events[e]->metadata_id = INT64_MAX;
        }
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    const xpv_plane *xp = &p->planes[0];
    uint32_t nev = 0;
    for (uint32_t l = 0; l < xp->nlines; l++)
        for (uint32_t k = 0; k < xp->lines[l].nevents; k++) {
            const xpv_event *e = &xp->lines[l].events[k];
            int64_t end;
            assert_true(e->dur_ps >= 0);
            assert_false(__builtin_add_overflow(e->start_ps, e->dur_ps, &end));
            assert_true(end <= INT64_MAX / 2 && e->start_ps >= -(INT64_MAX / 2));
            nev++;
        }
    assert_int_equal(nev, 5);
    int warned = 0;
    for (uint32_t i = 0; i < p->nwarnings; i++)
        warned += strstr(p->warnings[i].ptr, "clamped") != NULL &&
                  p->warnings[i].len == strlen(p->warnings[i].ptr);
    assert_int_equal(warned, 1);
    /* The INT64_MAX key resolves, and the event that uses it points at it. */
    uint32_t mi = xpv_event_meta_index(xp, INT64_MAX);
    assert_true(mi > 0);
    assert_true(str_is(xp->event_meta[mi].name, "big key"));
    assert_int_equal(xp->lines[1].events[1].meta, mi);
    xpv_profile_free(p);

    /* An ordinary file gets no such warning. */
    s = tx_new();
    pl = tx_plane(s, "/host:CPU");
    l1 = tx_line(s, pl, 1, "t", 1700000000000000000LL); /* epoch ns: rebased */
    tx_event(s, pl, l1, "a", 10, 20);
    l2 = tx_line(s, pl, 2, "empty", 0);
    p = tx_decode(s);
    assert_non_null(p);
    assert_int_equal(p->nwarnings, 0);
    xpv_profile_free(p);
}

static void test_edge_cases(void **state) {
    (void)state;
    size_t len;
    uint8_t *buf = build_edge_space(&len);
    diff_bytes(buf, len, "edge");

    /* Spot checks of semantics the oracle comparison does not spell out. */
    xpv_decode_error err;
    xpv_profile *p = xpv_decode(buf, len, NULL, &err);
    assert_non_null(p);
    const xpv_plane *pl = xpv_find_plane(p, "/device:GPU:0");
    assert_non_null(pl);
    assert_null(xpv_find_plane(p, "/host:CPU"));
    const xpv_line *ln = &pl->lines[0];
    assert_int_equal(ln->nevents, 4);
    assert_true(ln->events[0].start_ps == 1234567LL * 1000 + 1000);
    xpv_str dn = xpv_event_display_name(pl, &ln->events[1]);
    assert_true(str_is(dn, "sgemm"));
    assert_int_equal(ln->events[2].meta, 0);  /* unknown metadata -> empty */
    assert_int_equal(ln->has_num_occurrences, 1);
    /* duplicate stat metadata key 7: "tf_op" wins; "kernel_details" unreachable */
    assert_int_equal(xpv_stat_id(pl, "kernel_details"), -1);
    int32_t tfop = xpv_stat_id(pl, "tf_op");
    assert_true(tfop > 0);
    xpv_stat st;
    assert_true(xpv_event_stat(pl, ln, &ln->events[0], tfop, &st));
    assert_int_equal(st.kind, XPV_STAT_STR); /* last of the two tf_op stats */
    assert_true(str_is(st.v.s, "model/dense/MatMul:MatMul"));
    int32_t corr = xpv_stat_id(pl, "correlation_id");
    assert_true(xpv_event_stat(pl, ln, &ln->events[0], corr, &st));
    int64_t iv;
    assert_true(xpv_stat_as_int(&st, &iv));
    assert_true(iv == -1); /* uint64 max read as int64 */
    /* metadata stat that is a ref to the name "regs:32 grid:1,1,1" */
    int32_t rid = xpv_stat_id(pl, "regs:32 grid:1,1,1");
    assert_true(xpv_event_or_meta_stat(pl, ln, &ln->events[1], rid, &st));
    assert_true(str_is(st.v.s, "regs:32 grid:1,1,1"));
    /* derived line id (0xdeadbeef) */
    assert_true(xpv_line_is_derived(&pl->lines[1]));
    assert_false(xpv_line_is_derived(&pl->lines[0]));
    assert_int_equal(pl->lines[1].display_id, 5);
    assert_true(xpv_plane_stat(pl, xpv_stat_id(pl, "correlation_id"), &st));
    assert_true(st.v.u == 80);
    xpv_profile_free(p);
    free(buf);
}

static void test_errors(void **state) {
    (void)state;
    xpv_decode_error err;
    char empty[1];
    assert_null(xpv_decode(empty, 0, NULL, &err));
    assert_non_null(strstr(err.msg, "empty"));

    /* Every strict prefix of a valid file either decodes (a prefix that
     * ends on a field boundary is itself valid protobuf) or fails with an
     * offset inside the prefix, never crashing. */
    size_t len;
    uint8_t *buf = build_edge_space(&len);
    int failures = 0;
    for (size_t cut = 1; cut < len; cut++) {
        uint8_t *b = malloc(cut);
        memcpy(b, buf, cut);
        xpv_profile *p = xpv_decode(b, cut, NULL, &err);
        if (!p) {
            failures++;
            assert_true(err.offset <= cut);
            assert_true(err.msg[0] != 0);
        }
        xpv_profile_free(p);
        free(b);
    }
    assert_true(failures > (int)len / 2);

    /* Text is not an XSpace. */
    const char *txt = "{\"traceEvents\": []}\n";
    char *t = strdup(txt);
    assert_null(xpv_decode(t, strlen(t), NULL, &err));
    free(t);
    free(buf);
}

static void test_corrupt_real(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    char **files = tu_real_files("corrupt", ".xplane.pb");
    int n = 0;
    for (char **f = files; *f; f++) {
        size_t len;
        void *b = tu_read_file(*f, &len);
        assert_non_null(b);
        /* protobuf-c agrees the file is broken. */
        assert_null(tensorflow__profiler__xspace__unpack(NULL, len, b));
        xpv_decode_error err;
        assert_null(xpv_decode(b, len, NULL, &err));
        print_message("%s: offset %llu: %s\n", *f, (unsigned long long)err.offset, err.msg);
        assert_true(err.offset < len);
        assert_true(err.msg[0] != 0);
        free(b);
        n++;
    }
    tu_free_list(files);
    assert_true(n >= 1);
}

/* ---- parallel line parsing ---------------------------------------------- */

static void same_str(xpv_str a, xpv_str b) {
    assert_int_equal(a.len, b.len);
    if (a.len) assert_memory_equal(a.ptr, b.ptr, a.len);
}

static void same_stats(const xpv_stat *a, const xpv_stat *b, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(a[i].meta, b[i].meta);
        assert_int_equal(a[i].kind, b[i].kind);
        assert_int_equal(a[i].is_ref, b[i].is_ref);
        if (a[i].kind >= XPV_STAT_STR) same_str(a[i].v.s, b[i].v.s);
        else assert_true(a[i].v.u == b[i].v.u);
    }
}

/* Two decodes of the same bytes hold the same model, field by field (the
 * arena layout too: same mem_size). */
static void same_profile(const xpv_profile *a, const xpv_profile *b) {
    assert_int_equal(a->nplanes, b->nplanes);
    assert_true(a->nevents == b->nevents);
    assert_true(a->base_ns == b->base_ns);
    assert_true(a->mem_size == b->mem_size);
    assert_int_equal(a->nwarnings, b->nwarnings);
    for (uint32_t i = 0; i < a->nwarnings; i++) same_str(a->warnings[i], b->warnings[i]);
    assert_int_equal(a->nhostnames, b->nhostnames);
    for (uint32_t i = 0; i < a->nhostnames; i++) same_str(a->hostnames[i], b->hostnames[i]);
    for (uint32_t i = 0; i < a->nplanes; i++) {
        const xpv_plane *x = &a->planes[i], *y = &b->planes[i];
        assert_true(x->id == y->id);
        same_str(x->name, y->name);
        assert_int_equal(x->nlines, y->nlines);
        assert_int_equal(x->nevent_meta, y->nevent_meta);
        assert_int_equal(x->nstat_meta, y->nstat_meta);
        assert_true(x->nevents == y->nevents);
        assert_int_equal(x->nstats, y->nstats);
        same_stats(x->stats, y->stats, x->nstats);
        for (uint32_t k = 0; k < x->nevent_meta; k++) {
            assert_true(x->event_meta[k].key == y->event_meta[k].key);
            same_str(x->event_meta[k].name, y->event_meta[k].name);
            assert_int_equal(x->event_meta[k].nstats, y->event_meta[k].nstats);
            same_stats(x->event_meta[k].stats, y->event_meta[k].stats, x->event_meta[k].nstats);
        }
        for (uint32_t l = 0; l < x->nlines; l++) {
            const xpv_line *p = &x->lines[l], *q = &y->lines[l];
            assert_true(p->id == q->id && p->display_id == q->display_id);
            assert_true(p->timestamp_ns == q->timestamp_ns && p->duration_ps == q->duration_ps);
            same_str(p->name, q->name);
            same_str(p->display_name, q->display_name);
            assert_ptr_equal(p->wire, q->wire);
            assert_int_equal(p->has_num_occurrences, q->has_num_occurrences);
            assert_int_equal(p->nevents, q->nevents);
            if (p->nevents)
                assert_memory_equal(p->events, q->events, p->nevents * sizeof *p->events);
        }
    }
}

/* Decode `buf` serially and with 2..8 threads forced on whatever its size:
 * the same profile, or the same error (status, offset, message).  Returns
 * whether the parallel path ran (or 0 when the bytes do not decode). */
static int par_vs_serial(void *buf, size_t len, uint64_t budget, const char *what) {
    xpv_decode_error es, ep;
    xpv_decode_opts so = {.budget = budget, .threads = 1};
    xpv_profile *s = xpv_decode_ex(buf, len, NULL, &so, &es);
    assert_int_equal(so.parallel_used, 0);
    int used = 0;
    static const int threads[] = {2, 3, 4, 8};
    for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
        xpv_decode_opts po = {.budget = budget, .threads = threads[t], .parallel_min = 1,
                              .min_avg_line = 1};
        memset(&ep, 0x5a, sizeof ep);
        xpv_profile *p = xpv_decode_ex(buf, len, NULL, &po, &ep);
        if (!s) {
            if (p) fail_msg("%s: parallel decoded what serial refused: %s", what, es.msg);
            assert_true(ep.offset == es.offset);
            assert_int_equal(ep.status, es.status);
            assert_string_equal(ep.msg, es.msg);
            continue;
        }
        if (!p) fail_msg("%s: parallel failed: %s", what, ep.msg);
        same_profile(s, p);
        used |= po.parallel_used;
        xpv_profile_free(p);
    }
    xpv_profile_free(s);
    return used;
}

static void test_parallel_equals_serial(void **state) {
    (void)state;
    /* Synthetic: several lines per plane, two hosts, two sizes. */
    uint64_t sizes[] = {100 * 1000, 2 * 1000 * 1000};
    for (size_t i = 0; i < 2; i++) {
        xpv_synth_opts o = {0};
        o.size_bytes = sizes[i];
        o.hosts = 2;
        xpv_synth_defaults(&o);
        for (int h = 0; h < 2; h++) {
            xpv_buf b;
            xpv_buf_init(&b);
            assert_int_equal(xpv_synth_host(&o, h, &b), 0);
            assert_true(par_vs_serial(b.data, b.len, 0, "synth"));
            xpv_buf_free(&b);
        }
    }
    /* Hand-built edge cases (clamped times, odd keys, num_occurrences). */
    size_t len;
    uint8_t *buf = build_edge_space(&len);
    assert_true(par_vs_serial(buf, len, 0, "edge"));
    free(buf);
    if (!tu_shared_dir()) return;
    char **files = tu_real_xplanes();
    int n = 0;
    for (char **f = files; *f; f++) {
        void *b = tu_read_file(*f, &len);
        assert_non_null(b);
        assert_true(par_vs_serial(b, len, 0, *f));
        free(b);
        n++;
    }
    print_message("parallel = serial on %d real xplane files\n", n);
    assert_true(n >= 5);
    tu_free_list(files);
}

/* Errors stay the serial decoder's: every prefix of a file, a corrupt real
 * file, and memory budgets from "only the file" up to "enough". */
static void test_parallel_errors(void **state) {
    (void)state;
    size_t len;
    uint8_t *buf = build_edge_space(&len);
    for (size_t cut = 1; cut < len; cut++) par_vs_serial(buf, cut, 0, "prefix");
    free(buf);

    xpv_synth_opts o = {0};
    o.size_bytes = 300 * 1000;
    o.hosts = 1;
    xpv_synth_defaults(&o);
    xpv_buf b;
    xpv_buf_init(&b);
    assert_int_equal(xpv_synth_host(&o, 0, &b), 0);
    xpv_decode_error err;
    xpv_profile *p = xpv_decode(b.data, b.len, NULL, &err);
    assert_non_null(p);
    uint64_t need = p->mem_size;
    xpv_profile_free(p);
    int refused = 0;
    for (uint64_t budget = b.len; budget < need + need / 8; budget += need / 64) {
        xpv_decode_opts so = {.budget = budget, .threads = 1};
        p = xpv_decode_ex(b.data, b.len, NULL, &so, &err);
        refused += !p;
        if (!p) assert_int_equal(err.status, 413);
        xpv_profile_free(p);
        par_vs_serial(b.data, b.len, budget, "budget");
    }
    assert_true(refused > 3);
    /* A line's bytes corrupted in the middle of the file. */
    b.data[b.len / 2] = (char)0xff;
    b.data[b.len / 2 + 1] = (char)0xff;
    par_vs_serial(b.data, b.len, 0, "corrupted");
    xpv_buf_free(&b);

    if (!tu_shared_dir()) return;
    char **files = tu_real_files("corrupt", ".xplane.pb");
    for (char **f = files; *f; f++) {
        void *c = tu_read_file(*f, &len);
        assert_non_null(c);
        par_vs_serial(c, len, 0, *f);
        free(c);
    }
    tu_free_list(files);
}

TU_MAIN(cmocka_unit_test(test_edge_cases),
        cmocka_unit_test(test_extreme_times_and_keys),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_synth_files),
        cmocka_unit_test(test_real_files),
        cmocka_unit_test(test_corrupt_real),
        cmocka_unit_test(test_parallel_equals_serial),
        cmocka_unit_test(test_parallel_errors))
