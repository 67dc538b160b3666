/*
 * test_ingest_chrome_trace.c - Chrome trace JSON -> XSpace: constructed
 * traces with known answers, then every real PyTorch / TF trace in
 * ../shared/testdata/real (converted, decoded, event counts compared with
 * the JSON's own count of complete + instant events).  Reading from a file
 * descriptor (xpv_ct_convert_fd, what the loader uses) must give the same
 * bytes as reading from memory, and must not hold the JSON text: a forked
 * child's peak RSS stays far below the size of a mostly-whitespace trace.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "testutil.h"

#include "buf.h"
#include "chrome_trace.h"
#include "model.h"
#include "srv_fixture.h"
#include "xplane.h"
#include "xplane.pb-c.h"

/* Convert `json` and decode it; fails the test on any error. */
static xpv_profile *convert(const char *json, size_t len, xpv_ct_summary *sum) {
    xpv_buf out;
    xpv_buf_init(&out);
    xpv_ct_error err;
    xpv_ct_options opt = {"testhost", 0};
    int rc = xpv_ct_convert_mem(json, len, &opt, &out, sum, &err);
    if (rc) print_message("convert failed: %s at %llu\n", err.msg,
                          (unsigned long long)err.offset);
    assert_int_equal(rc, 0);
    return tu_decode_buf(&out);
}

static void release(xpv_profile *p) { xpv_profile_free(p); }

static const xpv_line *find_line(const xpv_plane *pl, const char *name) {
    for (uint32_t i = 0; i < pl->nlines; i++)
        if (xpv_str_eq(pl->lines[i].name, name)) return &pl->lines[i];
    return NULL;
}

static int stat_str(const xpv_plane *pl, const xpv_line *ln, const xpv_event *e,
                    const char *name, char *out, size_t cap) {
    xpv_stat st;
    int32_t id = xpv_stat_id(pl, name);
    if (id < 0 || !xpv_event_stat(pl, ln, e, id, &st) || st.kind != XPV_STAT_STR) return 0;
    snprintf(out, cap, "%.*s", (int)st.v.s.len, st.v.s.ptr);
    return 1;
}

static int stat_int(const xpv_plane *pl, const xpv_line *ln, const xpv_event *e,
                    const char *name, int64_t *v) {
    xpv_stat st;
    int32_t id = xpv_stat_id(pl, name);
    return id >= 0 && xpv_event_stat(pl, ln, e, id, &st) && xpv_stat_as_int(&st, v);
}

static void test_parse_us(void **state) {
    (void)state;
    int64_t ns;
    assert_true(xpv_ct_parse_us("12", 2, &ns) && ns == 12000);
    assert_true(xpv_ct_parse_us("12.5", 4, &ns) && ns == 12500);
    assert_true(xpv_ct_parse_us("1712167898123456.789", 20, &ns) &&
                ns == 1712167898123456789LL);
    assert_true(xpv_ct_parse_us("0.0015", 6, &ns) && ns == 2);   /* rounded */
    assert_true(xpv_ct_parse_us("-3.25", 5, &ns) && ns == -3250);
    assert_true(xpv_ct_parse_us("1.5e3", 5, &ns) && ns == 1500000);
    assert_false(xpv_ct_parse_us("abc", 3, &ns));
    assert_false(xpv_ct_parse_us("", 0, &ns));
    assert_false(xpv_ct_parse_us("99999999999999999999", 20, &ns));
}

/* displayTimeUnit "ns" does not change the unit of ts/dur (always µs);
 * the ns digits survive exactly even on epoch-scale timestamps. */
static void test_units_and_object(void **state) {
    (void)state;
    const char *json =
        "{\"schemaVersion\":1,\"displayTimeUnit\":\"ns\",\"traceEvents\":["
        "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":10,\"tid\":7,"
        "\"args\":{\"name\":\"main thread\"}},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::add\",\"pid\":10,\"tid\":7,"
        "\"ts\":1712167898000100.125,\"dur\":2.5,\"args\":{\"External id\":5,"
        "\"Input Dims\":[[1, 2], []],\"Ev Idx\":3}},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mul\",\"pid\":10,\"tid\":7,"
        "\"ts\":1712167898000100.001,\"dur\":10},"
        "{\"ph\":\"i\",\"s\":\"t\",\"name\":\"mark\",\"pid\":10,\"tid\":7,\"ts\":1712167898000101}"
        "]}";
    xpv_ct_summary sum;
    xpv_profile *p = convert(json, strlen(json), &sum);
    assert_string_equal(sum.display_time_unit, "ns");
    assert_int_equal(sum.complete, 2);
    assert_int_equal(sum.instants, 1);
    assert_int_equal(sum.metadata, 1);
    assert_false(sum.bare_array);
    assert_int_equal(p->nhostnames, 1);
    assert_true(xpv_str_eq(p->hostnames[0], "testhost"));
    const xpv_plane *pl = xpv_find_plane(p, "/host:CPU");
    assert_non_null(pl);
    const xpv_line *ln = find_line(pl, "main thread");
    assert_non_null(ln);
    assert_int_equal(ln->id, 7);
    assert_int_equal(ln->nevents, 3);
    /* Sorted by start: mul (…100.001) first, then add, then the instant. */
    const xpv_event *mul = &ln->events[0], *add = &ln->events[1], *mark = &ln->events[2];
    assert_true(xpv_str_eq(xpv_event_display_name(pl, mul), "aten::mul"));
    assert_true(xpv_str_eq(xpv_event_display_name(pl, add), "aten::add"));
    assert_true(xpv_str_eq(xpv_event_display_name(pl, mark), "mark"));
    assert_true(add->start_ps - mul->start_ps == 124000);   /* 0.124 µs */
    assert_true(add->dur_ps == 2500000);                     /* 2.5 µs */
    assert_true(mul->dur_ps == 10000000);
    assert_true(mark->dur_ps == 0);
    /* Absolute time survives (base_ns keeps ps in range). */
    assert_true(p->base_ns + mul->start_ps / 1000 == 1712167898000100001LL);
    char s[128];
    assert_true(stat_str(pl, ln, add, "cat", s, sizeof s));
    assert_string_equal(s, "cpu_op");
    assert_true(stat_str(pl, ln, add, "Input Dims", s, sizeof s));
    assert_string_equal(s, "[[1,2],[]]");
    int64_t v;
    assert_true(stat_int(pl, ln, add, "Ev Idx", &v) && v == 3);
    release(p);
}

/* A bare array (PyTorch 1.8), GPU kernels with launch args, correlation
 * and External id links, TF-style integer strings. */
static void test_bare_array_gpu(void **state) {
    (void)state;
    const char *json =
        "[\n"
        "{\"ph\":\"X\",\"cat\":\"Operator\",\"name\":\"aten::conv2d\",\"pid\":1,\"tid\":\"99\","
        "\"ts\":100,\"dur\":50,\"args\":{\"External id\":42}},\n"
        "{\"ph\":\"X\",\"cat\":\"Runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":\"99\","
        "\"ts\":110,\"dur\":5,\"args\":{\"correlation\":777,\"external id\":42}},\n"
        "{\"ph\":\"X\",\"cat\":\"Kernel\",\"name\":\"implicit_gemm\",\"pid\":0,\"tid\":\"stream 7\","
        "\"ts\":120,\"dur\":30,\"args\":{\"queued\":0,\"device\":0,\"stream\":7,"
        "\"correlation\":777,\"external id\":42,\"registers per thread\":64,"
        "\"shared memory\":4096,\"blocks per SM\":1.5,\"grid\":[8,4,1],\"block\":[128,1,1],"
        "\"est. achieved occupancy %\":25}},\n"
        "{\"ph\":\"X\",\"cat\":\"Memcpy\",\"name\":\"Memcpy HtoD\",\"pid\":0,\"tid\":\"stream 7\","
        "\"ts\":160,\"dur\":4,\"args\":{\"bytes\":1024}},\n"
        "{\"ph\":\"f\",\"id\":777,\"pid\":0,\"tid\":7,\"ts\":120,\"cat\":\"async\",\"name\":\"launch\"},\n"
        "{\"ph\":\"C\",\"name\":\"counter\",\"pid\":1,\"ts\":100,\"args\":{\"v\":1}},\n"
        "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":0,\"tid\":\"stream 7\","
        "\"args\":{\"name\":\"stream 7 \"}}\n"
        "]\n";
    xpv_ct_summary sum;
    xpv_profile *p = convert(json, strlen(json), &sum);
    assert_true(sum.bare_array);
    assert_int_equal(sum.complete, 4);
    assert_int_equal(sum.flows, 1);
    assert_int_equal(sum.skipped, 1);
    assert_int_equal(p->nwarnings, 1);   /* the skipped counter */
    assert_int_equal(p->nplanes, 2);
    const xpv_plane *host = xpv_find_plane(p, "/host:CPU");
    const xpv_plane *gpu = xpv_find_plane(p, "/device:GPU:0");
    assert_non_null(host);
    assert_non_null(gpu);
    assert_true(&p->planes[0] == host);   /* host plane first */
    const xpv_line *st = find_line(gpu, "Stream #7");
    assert_non_null(st);
    assert_int_equal(st->id, 7);
    assert_int_equal(st->nevents, 2);
    const xpv_event *k = &st->events[0];
    char s[256];
    assert_true(stat_str(gpu, st, k, "kernel_details", s, sizeof s));
    assert_string_equal(s, "regs:64 static_shared:4096 dynamic_shared:0 grid:8,4,1 "
                           "block:128,1,1 occ_pct:25");
    assert_true(stat_str(gpu, st, k, "tf_op", s, sizeof s));
    assert_string_equal(s, "aten::conv2d");
    int64_t v;
    assert_true(stat_int(gpu, st, k, "correlation_id", &v) && v == 777);
    assert_true(stat_int(gpu, st, k, "flow", &v));
    assert_true(((uint64_t)v & 3) == 1);                 /* flow in */
    assert_true((((uint64_t)v >> 2) & ((1ULL << 56) - 1)) == 777);
    /* Memcpy has no launch args: no kernel_details. */
    assert_false(stat_str(gpu, st, &st->events[1], "kernel_details", s, sizeof s));

    const xpv_line *hl = find_line(host, "Thread 99");
    assert_non_null(hl);
    assert_int_equal(hl->nevents, 2);
    const xpv_event *launch = &hl->events[1];
    assert_true(stat_int(host, hl, launch, "correlation_id", &v) && v == 777);
    assert_true(stat_int(host, hl, launch, "flow", &v) && ((uint64_t)v & 3) == 2);
    /* The kernel starts 20 µs after the op on the same clock. */
    assert_true(k->start_ps - hl->events[0].start_ps == 20000000);
    release(p);
}

/* TF 2.2 trace.json.gz: planes named by process_name, trailing {}, string
 * int args, a thread with only a sort index. */
static void test_tf_trace_gz(void **state) {
    (void)state;
    const char *json =
        "{\"displayTimeUnit\":\"ns\",\"metadata\":{\"highres-ticks\":true},\"traceEvents\":["
        "{\"ph\":\"M\",\"pid\":49,\"name\":\"process_name\",\"args\":{\"name\":\"/host:CPU\"}},"
        "{\"ph\":\"M\",\"pid\":3,\"name\":\"process_name\",\"args\":{\"name\":\"/device:GPU:0\"}},"
        "{\"ph\":\"M\",\"pid\":49,\"tid\":5,\"name\":\"thread_name\",\"args\":{\"name\":\"tf_Compute\"}},"
        "{\"ph\":\"X\",\"pid\":49,\"tid\":5,\"name\":\"dense/MatMul:MatMul\",\"ts\":21307,\"dur\":12,"
        "\"args\":{\"group_id\":\"4\",\"step_name\":\"4\"}},"
        "{\"ph\":\"X\",\"pid\":49,\"tid\":6,\"name\":\"x\",\"ts\":21300.5,\"dur\":1},"
        "{\"ph\":\"X\",\"pid\":3,\"tid\":2,\"name\":\"volta_sgemm\",\"ts\":21310,\"dur\":3},"
        "{}]}";
    /* gzip it: the converter inflates as it reads. */
    size_t gzlen;
    unsigned char *gz = fx_gzip(json, strlen(json), &gzlen);

    xpv_ct_summary sum;
    xpv_profile *p = convert((const char *)gz, gzlen, &sum);
    assert_int_equal(sum.complete, 3);
    assert_int_equal(sum.metadata, 3);
    const xpv_plane *host = xpv_find_plane(p, "/host:CPU");
    const xpv_plane *gpu = xpv_find_plane(p, "/device:GPU:0");
    assert_non_null(host);
    assert_non_null(gpu);
    const xpv_line *ln = find_line(host, "tf_Compute");
    assert_non_null(ln);
    int64_t v;
    assert_true(stat_int(host, ln, &ln->events[0], "group_id", &v) && v == 4);
    char s[64];
    assert_true(stat_str(host, ln, &ln->events[0], "step_name", s, sizeof s));
    assert_string_equal(s, "4");
    assert_non_null(find_line(host, "Thread 6"));
    assert_int_equal(gpu->nlines, 1);
    release(p);

    /* Truncated gzip: the events before the cut are kept, with a warning. */
    xpv_buf out;
    xpv_buf_init(&out);
    xpv_ct_error err;
    assert_int_equal(xpv_ct_convert_mem(gz, gzlen - 40, NULL, &out, &sum, &err), 0);
    assert_true(sum.truncated);
    xpv_buf_free(&out);
    free(gz);
}

static void test_errors(void **state) {
    (void)state;
    static const char *const bad[] = {
        "", "   ", "42", "{\"traceEvents\":{}}", "{\"traceEvents\":[{\"ph\":\"X\" \"a\":1}]}",
        "[{\"ph\":\"X\",\"args\":{\"a\":[1,2}}]", "{\"a\":\"unterminated}", "[]]",
        "{\"traceEvents\":[]} trailing",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        xpv_buf out;
        xpv_buf_init(&out);
        xpv_ct_error err;
        int rc = xpv_ct_convert_mem(bad[i], strlen(bad[i]), NULL, &out, NULL, &err);
        if (rc == 0) print_message("accepted bad input #%zu: %s\n", i, bad[i]);
        assert_int_equal(rc, -1);
        assert_int_equal(err.status, 422);
        assert_true(err.msg[0] != 0);
        xpv_buf_free(&out);
    }
    /* Cap on JSON bytes. */
    const char *ok = "[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":1}]";
    xpv_ct_options opt = {NULL, 10};
    xpv_buf out;
    xpv_buf_init(&out);
    xpv_ct_error err;
    assert_int_equal(xpv_ct_convert_mem(ok, strlen(ok), &opt, &out, NULL, &err), -1);
    assert_int_equal(err.status, 413);
    xpv_buf_free(&out);
    /* Empty trace: valid, no planes. */
    xpv_ct_summary sum;
    xpv_profile *p = convert("{\"traceEvents\":[]}", 18, &sum);
    assert_int_equal(p->nplanes, 0);
    release(p);
    /* Unicode escapes and lenient N/A. */
    const char *u = "[{\"ph\":\"X\",\"name\":\"\\u00e9\\ud83d\\ude00\",\"pid\":1,\"tid\":1,"
                    "\"ts\":1,\"dur\":1,\"args\":{\"x\":N/A}}]";
    p = convert(u, strlen(u), &sum);
    const xpv_plane *pl = xpv_find_plane(p, "/host:CPU");
    assert_true(xpv_str_eq(xpv_event_display_name(pl, &pl->lines[0].events[0]),
                           "\xc3\xa9\xf0\x9f\x98\x80"));
    release(p);
}

/* ---- real traces -------------------------------------------------------- */

static char *gunzip_all(const char *data, size_t len, size_t *out_len) {
    if (len < 2 || (unsigned char)data[0] != 0x1f || (unsigned char)data[1] != 0x8b) {
        char *c = malloc(len + 1);
        memcpy(c, data, len);
        c[len] = 0;
        *out_len = len;
        return c;
    }
    size_t cap = len * 8 + 1024, n = 0;
    char *o = malloc(cap);
    z_stream z;
    memset(&z, 0, sizeof z);
    inflateInit2(&z, 15 + 32);
    z.next_in = (unsigned char *)data;
    z.avail_in = (uInt)len;
    for (;;) {
        if (cap - n < 65536) {
            cap *= 2;
            o = realloc(o, cap);
        }
        z.next_out = (unsigned char *)o + n;
        z.avail_out = (uInt)(cap - n - 1);
        int r = inflate(&z, Z_NO_FLUSH);
        n = z.total_out;
        if (r == Z_STREAM_END) break;
        if (r != Z_OK) break;
    }
    inflateEnd(&z);
    o[n] = 0;
    *out_len = n;
    return o;
}

/* String args are interned: a value repeated over events is one stat
 * metadata entry the events refer to (ref_value); a long one stays inline. */
static void test_interned_strings(void **state) {
    (void)state;
    char longv[700];
    memset(longv, 'x', sizeof longv - 1);
    longv[sizeof longv - 1] = 0;
    char json[2048];
    snprintf(json, sizeof json,
             "[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":1,"
             "\"ts\":1,\"dur\":1,\"args\":{\"Input Dims\":[[8,4],[4,2]],\"Input type\":\"float\"}},"
             "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":1,"
             "\"ts\":3,\"dur\":1,\"args\":{\"Input Dims\":[[8,4],[4,2]],\"Input type\":\"float\","
             "\"note\":\"%s\"}}]", longv);
    xpv_ct_summary sum;
    xpv_profile *p = convert(json, strlen(json), &sum);
    const xpv_plane *host = xpv_find_plane(p, "/host:CPU");
    assert_non_null(host);
    const xpv_line *ln = &host->lines[0];
    assert_int_equal(ln->nevents, 2);
    for (uint32_t i = 0; i < 2; i++) {
        xpv_stat st;
        assert_true(xpv_event_stat(host, ln, &ln->events[i], xpv_stat_id(host, "Input Dims"), &st));
        assert_int_equal(st.kind, XPV_STAT_STR);
        assert_true(st.is_ref);
        assert_true(xpv_str_eq(st.v.s, "[[8,4],[4,2]]"));
        assert_true(xpv_event_stat(host, ln, &ln->events[i], xpv_stat_id(host, "Input type"), &st));
        assert_true(st.is_ref && xpv_str_eq(st.v.s, "float"));
    }
    xpv_stat st;
    assert_true(xpv_event_stat(host, ln, &ln->events[1], xpv_stat_id(host, "note"), &st));
    assert_false(st.is_ref);
    assert_int_equal(st.v.s.len, strlen(longv));
    release(p);
}

/* ==== File-descriptor input ============================================ */

/* Append `n` bytes of `data` as one gzip member to `out`. */
static void gz_member(const void *data, size_t n, xpv_buf *out) {
    size_t zn;
    unsigned char *z = fx_gzip(data, n, &zn);
    xpv_buf_add(out, z, zn);
    free(z);
}

/* Convert `len` bytes written to a temporary file through
 * xpv_ct_convert_fd; returns its status, output in `out`. */
static int convert_via_fd(const void *data, size_t len, xpv_buf *out, xpv_ct_summary *sum,
                          xpv_ct_error *err) {
    char *dir = tu_mkdtemp();
    char path[4096];
    snprintf(path, sizeof path, "%s/t.json", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(len ? fwrite(data, 1, len, f) : 0, len);
    assert_int_equal(fclose(f), 0);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    int rc = xpv_ct_convert_fd(fd, NULL, out, sum, err);
    close(fd);
    tu_rmrf(dir);
    free(dir);
    return rc;
}

/* The fd and memory readers give the same XSpace bytes and summary. */
static void assert_fd_same(const void *data, size_t len, xpv_ct_summary *sum) {
    xpv_buf a, b;
    xpv_buf_init(&a);
    xpv_buf_init(&b);
    xpv_ct_summary sa, sb;
    xpv_ct_error ea, eb;
    int ra = xpv_ct_convert_mem(data, len, NULL, &a, &sa, &ea);
    int rb = convert_via_fd(data, len, &b, &sb, &eb);
    assert_int_equal(ra, rb);
    if (ra == 0) {
        /* Planes and lines carry padded length varints (written in
         * place): protobuf-c, as the oracle, must read the same events. */
        Tensorflow__Profiler__XSpace *x =
            tensorflow__profiler__xspace__unpack(NULL, a.len, (const uint8_t *)a.data);
        assert_non_null(x);
        uint64_t nev = 0;
        for (size_t i = 0; i < x->n_planes; i++)
            for (size_t l = 0; l < x->planes[i]->n_lines; l++)
                nev += x->planes[i]->lines[l]->n_events;
        assert_int_equal(nev, sa.events_out);
        tensorflow__profiler__xspace__free_unpacked(x, NULL);
        assert_int_equal(a.len, b.len);
        assert_memory_equal(a.data, b.data, a.len);
        assert_int_equal(sa.events_out, sb.events_out);
        assert_int_equal(sa.host_ops, sb.host_ops);
        assert_int_equal(sa.kernels, sb.kernels);
        assert_int_equal(sa.json_bytes, sb.json_bytes);
        assert_int_equal(sa.truncated, sb.truncated);
        assert_int_equal(sb.input_bytes, len);
    } else {
        assert_int_equal(ea.status, eb.status);
    }
    if (sum) *sum = sb;
    xpv_buf_free(&a);
    xpv_buf_free(&b);
}

static const char small_trace[] =
    "{\"traceEvents\":[\n"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":2,"
    "\"ts\":100,\"dur\":50,\"args\":{\"External id\":9}},\n"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,"
    "\"tid\":2,\"ts\":110,\"dur\":5,\"args\":{\"correlation\":5,\"External id\":9}},\n"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"pid\":0,\"tid\":7,"
    "\"ts\":120,\"dur\":30,\"args\":{\"device\":0,\"stream\":7,\"correlation\":5,"
    "\"External id\":9,\"grid\":[8,1,1],\"block\":[128,1,1]}},\n"
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":1,"
    "\"tid\":2,\"ts\":90,\"dur\":100}\n"
    "]}\n";

/* Regression (use-after-free): the line key pid \x01 tid is built at the end
 * of the importer's text buffer from bytes in that same buffer; a long name
 * before a string pid made the append reallocate under the copy.  Names of
 * every length around the buffer's first capacity make one key straddle
 * it; ASan reports the read of the freed block. */
/* Issue 10 item 4: PyTorch traces with `dur` 1e15 us (1e21 ps) or extreme
 * ts: every duration is clamped to the decoder's range, none is negative,
 * start + dur never overflows, and the file says what was clamped. */
static void test_extreme_times(void **state) {
    (void)state;
    const char *json =
        "{\"traceEvents\":["
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"huge\",\"pid\":1,\"tid\":1,"
        "\"ts\":1,\"dur\":1e15},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"huge2\",\"pid\":1,\"tid\":1,"
        "\"ts\":2,\"dur\":1000000000000000},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"far\",\"pid\":1,\"tid\":2,"
        "\"ts\":-9000000000000000,\"dur\":5},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"far\",\"pid\":1,\"tid\":2,"
        "\"ts\":9000000000000000,\"dur\":9000000000000000},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"neg\",\"pid\":1,\"tid\":3,"
        "\"ts\":5,\"dur\":-7},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"ok\",\"pid\":1,\"tid\":3,"
        "\"ts\":6,\"dur\":1.5}]}";
    xpv_ct_summary sum;
    xpv_profile *p = convert(json, strlen(json), &sum);
    assert_true(sum.clamped >= 2);
    uint32_t nev = 0;
    int64_t ok_dur = -1;
    for (uint32_t pi = 0; pi < p->nplanes; pi++)
        for (uint32_t l = 0; l < p->planes[pi].nlines; l++)
            for (uint32_t k = 0; k < p->planes[pi].lines[l].nevents; k++) {
                const xpv_plane *pl = &p->planes[pi];
                const xpv_event *e = &pl->lines[l].events[k];
                int64_t end;
                assert_true(e->dur_ps >= 0);
                assert_false(__builtin_add_overflow(e->start_ps, e->dur_ps, &end));
                if (xpv_str_eq(pl->event_meta[e->meta].name, "ok")) ok_dur = e->dur_ps;
                if (xpv_str_eq(pl->event_meta[e->meta].name, "huge"))
                    assert_true(e->dur_ps >= INT64_MAX / 8);  /* clamped, not wrapped */
                nev++;
            }
    assert_int_equal(nev, 6);
    assert_int_equal(ok_dur, 1500000);   /* ordinary events keep exact values */
    int warned = 0;
    for (uint32_t i = 0; i < p->nwarnings; i++)
        warned += strstr(p->warnings[i].ptr, "clamped") != NULL;
    assert_true(warned >= 1);
    release(p);
}

/* Issue 10 item 5: N distinct pids (each its own GPU plane) cost O(N log N)
 * steps, not O(N^2): 10x the pids must take ~10x the work (the converter's
 * own step counter, never a timing). */
static uint64_t pid_work(size_t npids) {
    xpv_buf j;
    xpv_buf_init(&j);
    xpv_buf_puts(&j, "{\"deviceProperties\":[{\"id\":3,\"name\":\"H100\"}],\"traceEvents\":[");
    for (size_t i = 0; i < npids; i++) {
        char ev[160];
        int n = snprintf(ev, sizeof ev,
                         "%s{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k%zu\",\"pid\":%zu,"
                         "\"tid\":7,\"ts\":%zu,\"dur\":1}",
                         i ? "," : "", i % 97, npids - i, i);
        xpv_buf_add(&j, ev, (size_t)n);
    }
    xpv_buf_puts(&j, "]}");
    xpv_buf out;
    xpv_buf_init(&out);
    xpv_ct_summary sum;
    xpv_ct_error err;
    assert_int_equal(xpv_ct_convert_mem(j.data, j.len, NULL, &out, &sum, &err), 0);
    assert_int_equal(sum.planes, npids);
    assert_int_equal(sum.lines, npids);
    assert_int_equal(sum.events_out, npids);
    /* The planes come out sorted by ordinal: decode and check a few. */
    xpv_profile *p = tu_decode_buf(&out);
    assert_int_equal(p->nplanes, npids);
    assert_true(xpv_str_eq(p->planes[0].name, "/device:GPU:1"));
    char last[64];
    snprintf(last, sizeof last, "/device:GPU:%zu", npids);
    assert_true(xpv_str_eq(p->planes[npids - 1].name, last));
    release(p);
    xpv_buf_free(&j);
    return sum.work;
}

static void test_many_pids_linear(void **state) {
    (void)state;
    uint64_t w1 = pid_work(5000), w2 = pid_work(50000);
    print_message("work: 5k pids %llu, 50k pids %llu (x%.2f)\n", (unsigned long long)w1,
                  (unsigned long long)w2, (double)w2 / (double)w1);
    /* n log n sorting: ~12x; quadratic would be ~100x. */
    assert_true(w2 >= 9 * w1);
    assert_true(w2 <= 14 * w1);
}

static void test_long_name_string_pid(void **state) {
    (void)state;
    size_t cap = 5200;
    char *json = malloc(cap);
    assert_non_null(json);
    for (size_t n = 3900; n < 4200; n += 1) {
        int k = snprintf(json, cap, "{\"traceEvents\":[{\"ph\":\"M\",\"name\":"
                         "\"thread_name\",\"pid\":\"proc-%zu\",\"tid\":\"t\","
                         "\"args\":{\"name\":\"stream 7 \"}},"
                         "{\"ph\":\"X\",\"name\":\"", n);
        memset(json + k, 'a', n);
        k += (int)n;
        k += snprintf(json + k, cap - (size_t)k,
                      "\",\"pid\":\"proc-%zu\",\"tid\":\"thread-with-a-long-name\","
                      "\"ts\":1,\"dur\":2}]}", n);
        xpv_ct_summary sum;
        xpv_profile *p = convert(json, (size_t)k, &sum);
        assert_int_equal(sum.complete, 1);
        release(p);
    }
    free(json);
}

static void test_fd_source(void **state) {
    (void)state;
    size_t n = strlen(small_trace);
    xpv_ct_summary sum;
    /* Plain. */
    assert_fd_same(small_trace, n, &sum);
    assert_int_equal(sum.events_out, 4);
    assert_int_equal(sum.host_ops, 1);
    assert_int_equal(sum.kernels, 1);
    /* gzip in two members, split inside a token. */
    xpv_buf gz;
    xpv_buf_init(&gz);
    gz_member(small_trace, 77, &gz);
    gz_member(small_trace + 77, n - 77, &gz);
    assert_fd_same(gz.data, gz.len, &sum);
    assert_false(sum.truncated);
    assert_int_equal(sum.events_out, 4);
    /* A gzip stream cut before its end: the events read are kept. */
    assert_fd_same(gz.data, gz.len - 30, &sum);
    assert_true(sum.truncated);
    /* Corrupt deflate data: a 500 naming the gzip stream. */
    xpv_buf bad;
    xpv_buf_init(&bad);
    xpv_buf_add(&bad, gz.data, gz.len);
    for (size_t i = 12; i < 40 && i < bad.len; i++) bad.data[i] = (char)0xff;
    xpv_buf out;
    xpv_buf_init(&out);
    xpv_ct_error err;
    assert_int_equal(convert_via_fd(bad.data, bad.len, &out, &sum, &err), -1);
    assert_int_equal(err.status, 500);
    assert_non_null(strstr(err.msg, "gzip"));
    xpv_buf_free(&out);
    assert_fd_same(bad.data, bad.len, NULL);
    /* Empty and one-byte files. */
    assert_fd_same("", 0, NULL);
    assert_fd_same("[", 1, NULL);
    xpv_buf_free(&bad);
    xpv_buf_free(&gz);
}

/* A trace of `mb` MiB: a few events separated by long runs of spaces. */
static void write_padded_trace(const char *path, int mb) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    static char pad[1 << 20];
    memset(pad, ' ', sizeof pad);
    fputs("{\"traceEvents\":[", f);
    for (int i = 0; i < mb; i++) {
        fprintf(f, "%s{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::add\","
                "\"pid\":1,\"tid\":1,\"ts\":%d,\"dur\":1}", i ? "," : "", i * 10);
        assert_int_equal(fwrite(pad, 1, sizeof pad, f), sizeof pad);
    }
    fputs("]}", f);
    assert_int_equal(fclose(f), 0);
}

static int convert_file(void *vpath) {
    int fd = open(vpath, O_RDONLY);
    if (fd < 0) return -1;
    xpv_buf out;
    xpv_buf_init(&out);
    xpv_ct_summary sum;
    xpv_ct_error err;
    int rc = xpv_ct_convert_fd(fd, NULL, &out, &sum, &err);
    close(fd);
    xpv_buf_free(&out);
    return rc || sum.events_out != 48 ? -1 : 0;
}

/* 48 MiB of trace text read through the fd: peak RSS grows by far less
 * than the text (a reader holding it whole would add >= 48 MiB). */
static void test_fd_memory_bound(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char path[4096];
    snprintf(path, sizeof path, "%s/big.pt.trace.json", dir);
    write_padded_trace(path, 48);
    long kb = tu_child_peak_growth_kb(convert_file, path);
    tu_rmrf(dir);
    free(dir);
    if (kb == -1) {
        print_message("SKIP: cannot reset the peak RSS (/proc/self/clear_refs)\n");
        skip();
    }
    print_message("48 MiB trace via fd: peak RSS +%ld KiB\n", kb);
    assert_true(kb >= 0);
    assert_true(kb < 12 * 1024);
}

/* The next "\"ph\"" at or after p, or NULL.  A plain loop, not memmem:
 * under AddressSanitizer each memmem call checks the shadow of the whole
 * rest of the text, which made counting a 50 MB trace quadratic (the test
 * ran 9 minutes under ASan, 13 s without). */
static const char *next_ph(const char *p, const char *end) {
    for (; end - p >= 4; p++)
        if (p[0] == '"' && p[1] == 'p' && p[2] == 'h' && p[3] == '"') return p;
    return NULL;
}

/* Occurrences of "ph" : "<ph>" in the text (any spacing). */
static uint64_t count_ph(const char *s, size_t n, char ph) {
    uint64_t c = 0;
    const char *end = s + n;
    for (const char *p = s; (p = next_ph(p, end)); p += 4) {
        const char *q = p + 4;
        while (q < end && (*q == ' ' || *q == '\n' || *q == '\t' || *q == '\r')) q++;
        if (q >= end || *q != ':') continue;
        q++;
        while (q < end && (*q == ' ' || *q == '\n' || *q == '\t' || *q == '\r')) q++;
        if (q + 2 < end && q[0] == '"' && q[1] == ph && q[2] == '"') c++;
    }
    return c;
}

static void check_real(const char *path, uint64_t *total) {
    size_t len, tlen;
    char *data = tu_read_file(path, &len);
    assert_non_null(data);
    char *text = gunzip_all(data, len, &tlen);
    uint64_t nx = count_ph(text, tlen, 'X');
    uint64_t ni = count_ph(text, tlen, 'i') + count_ph(text, tlen, 'I');
    uint64_t nm = count_ph(text, tlen, 'M');
    free(text);
    xpv_ct_summary sum;
    xpv_profile *p = convert(data, len, &sum);
    assert_fd_same(data, len, NULL);
    print_message("%s: %llu X, %llu i, %llu M; planes %u, lines %u, events %llu\n",
                  strstr(path, "real/") ? strstr(path, "real/") + 5 : path,
                  (unsigned long long)nx, (unsigned long long)ni,
                  (unsigned long long)nm, p->nplanes, sum.lines,
                  (unsigned long long)p->nevents);
    assert_false(sum.truncated);
    assert_int_equal(sum.complete, nx);
    assert_int_equal(sum.instants, ni);
    assert_int_equal(sum.metadata, nm);
    assert_int_equal(p->nevents, nx + ni);
    assert_true(p->nplanes >= 1);
    *total += p->nevents;
    release(p);
    free(data);
}

static void test_real_traces(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    char **files = tu_real_files(NULL, ".json.gz");
    uint64_t total = 0;
    size_t n = 0;
    for (char **f = files; *f; f++) {
        if (strstr(*f, "reference_outputs") || strstr(*f, "memory_profile")) continue;
        check_real(*f, &total);
        n++;
    }
    tu_free_list(files);
    /* 10 PyTorch traces + 2 TF trace.json.gz. */
    assert_true(n >= 12);
    assert_true(total > 240000);
}

/* Golden facts of specific real traces (spec §7.6). */
static void test_real_golden(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    char path[4096];
    snprintf(path, sizeof path, "%s/testdata/real/facebookresearch-HolisticTraceAnalysis/"
             "pytorch/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
             tu_shared_dir());
    size_t len;
    char *data = tu_read_file(path, &len);
    assert_non_null(data);
    xpv_ct_summary sum;
    xpv_profile *p = convert(data, len, &sum);
    assert_string_equal(sum.display_time_unit, "ns");
    uint64_t kernels = 0, with_details = 0, with_op = 0;
    const xpv_plane *gpu = xpv_find_plane(p, "/device:GPU:0");
    assert_non_null(gpu);
    int32_t cat = xpv_stat_id(gpu, "cat"), kd = xpv_stat_id(gpu, "kernel_details"),
            tf = xpv_stat_id(gpu, "tf_op");
    for (uint32_t l = 0; l < gpu->nlines; l++) {
        const xpv_line *ln = &gpu->lines[l];
        for (uint32_t k = 0; k < ln->nevents; k++) {
            xpv_stat st;
            if (!xpv_event_stat(gpu, ln, &ln->events[k], cat, &st) ||
                !xpv_str_eq(st.v.s, "kernel"))
                continue;
            kernels++;
            with_details += xpv_event_stat(gpu, ln, &ln->events[k], kd, &st);
            with_op += xpv_event_stat(gpu, ln, &ln->events[k], tf, &st);
        }
    }
    assert_int_equal(kernels, 4350);
    assert_int_equal(with_details, 4350);
    assert_true(with_op > 4000);
    /* Device capabilities from deviceProperties (V100: cc 7.0, 80 SMs). */
    xpv_stat st;
    int64_t v;
    assert_true(xpv_plane_stat(gpu, xpv_stat_id(gpu, "core_count"), &st) &&
                xpv_stat_as_int(&st, &v) && v == 80);
    assert_true(xpv_plane_stat(gpu, xpv_stat_id(gpu, "compute_cap_major"), &st) &&
                xpv_stat_as_int(&st, &v) && v == 7);
    release(p);
    free(data);
}

TU_MAIN(cmocka_unit_test(test_parse_us),
        cmocka_unit_test(test_units_and_object),
        cmocka_unit_test(test_bare_array_gpu),
        cmocka_unit_test(test_tf_trace_gz),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_interned_strings),
        cmocka_unit_test(test_long_name_string_pid),
        cmocka_unit_test(test_extreme_times),
        cmocka_unit_test(test_many_pids_linear),
        cmocka_unit_test(test_fd_source),
        cmocka_unit_test(test_fd_memory_bound),
        cmocka_unit_test(test_real_traces),
        cmocka_unit_test(test_real_golden))
