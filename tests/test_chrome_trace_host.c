/*
 * test_chrome_trace_host.c - Chrome traces (PyTorch / Kineto) as hosts of
 * the server: the loader streams them from the file (its peak memory does
 * not grow with the JSON text), and run_tools offers framework_op_stats
 * when the trace has host ops (also CPU-only) or kernels, kernel_stats only
 * when it has kernel events (server/routes/legacy_serve.c).
 */
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app_fixture.h"
#include "loader.h"
#include "routes.h"
#include "srv_fixture.h"
#include "testutil.h"

/* ==== Peak memory of the loader ======================================== */

/* A Kineto-style trace of `mb` MiB (plain or gzip): one cpu_op per MiB,
 * separated by runs of spaces. */
static void write_padded_trace(const char *path, int mb, int gz) {
    static char pad[1 << 20];
    memset(pad, ' ', sizeof pad);
    gzFile g = NULL;
    FILE *f = NULL;
    if (gz) g = gzopen(path, "wb1");
    else f = fopen(path, "wb");
    assert_true(gz ? g != NULL : f != NULL);
    char ev[256];
    for (int i = 0; i <= mb; i++) {
        int n = i == 0 ? snprintf(ev, sizeof ev, "{\"traceEvents\":[")
                       : snprintf(ev, sizeof ev,
                                  "%s{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::add\","
                                  "\"pid\":1,\"tid\":1,\"ts\":%d,\"dur\":1}",
                                  i > 1 ? "," : "", i * 10);
        if (gz) {
            assert_int_equal(gzwrite(g, ev, (unsigned)n), n);
            if (i) assert_int_equal(gzwrite(g, pad, sizeof pad), (int)sizeof pad);
        } else {
            assert_int_equal(fwrite(ev, 1, (size_t)n, f), (size_t)n);
            if (i) assert_int_equal(fwrite(pad, 1, sizeof pad, f), sizeof pad);
        }
    }
    if (gz) {
        assert_int_equal(gzwrite(g, "]}", 2), 2);
        assert_int_equal(gzclose(g), Z_OK);
    } else {
        fputs("]}", f);
        assert_int_equal(fclose(f), 0);
    }
}

static int load_file(void *vpath) {
    xpv_err err;
    xpv_profile *p = xpv_load_profile(vpath, NULL, NULL, &err);
    if (!p) {
        fprintf(stderr, "load failed: %s\n", err.msg);
        return -1;
    }
    const xpv_plane *cpu = xpv_find_plane(p, "/host:CPU");
    int ok = cpu && p->nevents == 48;
    xpv_profile_free(p);
    return ok ? 0 : -1;
}

/* xpv_load_profile of a 48 MiB plain trace (and of the same text gzip'ed)
 * adds far less than 48 MiB to the peak RSS: the file is converted while
 * it streams in, never read whole.  A loader that reads the file into one
 * buffer first adds >= 48 MiB and fails here. */
static void test_loader_streams(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char path[4096];
    for (int gz = 0; gz < 2; gz++) {
        snprintf(path, sizeof path, "%s/w.pt.trace.json%s", dir, gz ? ".gz" : "");
        write_padded_trace(path, 48, gz);
        long kb = tu_child_peak_growth_kb(load_file, path);
        if (kb == -1) {
            tu_rmrf(dir);
            free(dir);
            print_message("SKIP: cannot reset the peak RSS (/proc/self/clear_refs)\n");
            skip();
        }
        print_message("loader, 48 MiB trace%s: peak RSS +%ld KiB\n", gz ? " (gzip)" : "", kb);
        assert_true(kb >= 0);
        assert_true(kb < 12 * 1024);
        unlink(path);
    }
    tu_rmrf(dir);
    free(dir);
}

/* Malformed JSON and corrupt gzip: errors naming the file and the cause. */
static void test_loader_errors(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char path[4096];
    snprintf(path, sizeof path, "%s/bad.pt.trace.json", dir);
    fx_write(path, "{\"traceEvents\":[{\"ph\":\"X\" \"x\"}]}", 33);
    xpv_err err;
    assert_null(xpv_load_profile(path, "bad.pt.trace.json", NULL, &err));
    assert_int_equal(err.status, 422);
    assert_non_null(strstr(err.msg, "bad.pt.trace.json"));
    assert_non_null(strstr(err.msg, "trace JSON"));
    snprintf(path, sizeof path, "%s/bad.pt.trace.json.gz", dir);
    fx_write(path, "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage-deflate", 25);
    assert_null(xpv_load_profile(path, NULL, NULL, &err));
    assert_true(err.status == 500 || err.status == 422);
    assert_non_null(strstr(err.msg, "gzip"));
    tu_rmrf(dir);
    free(dir);
}

/* ==== run_tools of Chrome-trace runs =================================== */

static const char cpu_only[] =
    "{\"traceEvents\":["
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#551\",\"pid\":1,"
    "\"tid\":1,\"ts\":0,\"dur\":100},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::empty\",\"pid\":1,\"tid\":1,"
    "\"ts\":10,\"dur\":5,\"args\":{\"External id\":1}}],\"deviceProperties\":[]}";

/* 2021 vocabulary (cat Operator), a GPU memcpy but no kernel. */
static const char memcpy_only[] =
    "[{\"ph\":\"X\",\"cat\":\"Operator\",\"name\":\"aten::copy_\",\"pid\":1,\"tid\":\"1\","
    "\"ts\":0,\"dur\":50,\"args\":{\"External id\":3}},"
    "{\"ph\":\"X\",\"cat\":\"Runtime\",\"name\":\"cudaMemcpyAsync\",\"pid\":1,\"tid\":\"1\","
    "\"ts\":5,\"dur\":5,\"args\":{\"correlation\":9,\"external id\":3}},"
    "{\"ph\":\"X\",\"cat\":\"Memcpy\",\"name\":\"Memcpy HtoD\",\"pid\":0,"
    "\"tid\":\"stream 7\",\"ts\":20,\"dur\":4,\"args\":{\"correlation\":9,\"device\":0}}]";

/* Only runtime calls and annotations (the cupti_profiler trace's shape). */
static const char no_ops[] =
    "{\"traceEvents\":["
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaDeviceSynchronize\",\"pid\":1,"
    "\"tid\":1,\"ts\":0,\"dur\":5,\"args\":{\"correlation\":1}},"
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"step\",\"pid\":1,\"tid\":1,"
    "\"ts\":0,\"dur\":50}]}";

/* Kernels launched by cpu_ops. */
static const char kernels[] =
    "{\"traceEvents\":["
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":1,\"ts\":0,"
    "\"dur\":50,\"args\":{\"External id\":4}},"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,"
    "\"ts\":5,\"dur\":5,\"args\":{\"correlation\":8,\"External id\":4}},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"sgemm\",\"pid\":0,\"tid\":7,\"ts\":20,"
    "\"dur\":30,\"args\":{\"correlation\":8,\"External id\":4,\"device\":0,"
    "\"registers per thread\":32,\"grid\":[4,1,1],\"block\":[64,1,1],"
    "\"est. achieved occupancy %\":40}}]}";

/* Kernels and nothing on the CPU (the mi210 gpu_only trace's shape). */
static const char gpu_only[] =
    "{\"traceEvents\":["
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"Cijk_gemm\",\"pid\":1,\"tid\":0,\"ts\":20,"
    "\"dur\":30,\"args\":{\"correlation\":8,\"device\":1,\"grid\":[4,1,1],"
    "\"block\":[64,1,1]}}]}";

static char *root;

static void put_trace(const char *run, const char *json) {
    char d[2048], f[4096];
    snprintf(d, sizeof d, "%s/%s", root, run);
    fx_mkdirs(d);
    snprintf(f, sizeof f, "%s/worker0.pt.trace.json", d);
    assert_int_equal(fx_write(f, json, strlen(json)), 0);
}

/* GET `uri` from `a`; returns the body (malloc'ed), status into *status. */
static char *get(xpv_app *a, const char *uri, int *status) {
    xpv_response r;
    xpv_app_route(a, "GET", uri, NULL, &r);
    char *b = malloc(r.len + 1);
    memcpy(b, r.body, r.len);
    b[r.len] = '\0';
    *status = r.status;
    xpv_response_release(&r);
    return b;
}

static int has(const char *list, const char *tool) {
    char q[64];
    snprintf(q, sizeof q, "\"%s\"", tool);
    return strstr(list, q) != NULL;
}

static void check_tools(xpv_app *a, const char *run, int op_stats, int kernel_stats) {
    char uri[512];
    int st;
    snprintf(uri, sizeof uri, "/data/plugin/profile/run_tools?run=%s", run);
    char *b = get(a, uri, &st);
    print_message("%s: %s\n", run, b);
    assert_int_equal(st, 200);
    assert_true(has(b, "trace_viewer"));
    assert_int_equal(has(b, "framework_op_stats"), op_stats);
    assert_int_equal(has(b, "kernel_stats"), kernel_stats);
    /* Step-based tools need TF step markers: never offered here. */
    assert_false(has(b, "overview_page"));
    assert_false(has(b, "input_pipeline_analyzer"));
    free(b);
    /* What is not offered answers 404, not an empty page. */
    snprintf(uri, sizeof uri, "/data/plugin/profile/data?run=%s&tag=overview_page&host=worker0",
             run);
    b = get(a, uri, &st);
    assert_int_equal(st, 404);
    assert_non_null(strstr(b, "run_tools"));
    free(b);
    if (!kernel_stats) {
        snprintf(uri, sizeof uri, "/data/plugin/profile/data?run=%s&tag=kernel_stats&host=worker0",
                 run);
        b = get(a, uri, &st);
        assert_int_equal(st, 404);
        free(b);
    }
    if (op_stats) {
        /* What is offered has rows. */
        snprintf(uri, sizeof uri, "/data/plugin/profile/data?run=%s&tag=framework_op_stats"
                 "&host=worker0", run);
        b = get(a, uri, &st);
        assert_int_equal(st, 200);
        assert_non_null(strstr(b, "\"rows\":[{"));
        free(b);
    }
}

static void test_run_tools(void **state) {
    (void)state;
    root = tu_mkdtemp();
    put_trace("cpu_only", cpu_only);
    put_trace("memcpy_only", memcpy_only);
    put_trace("no_ops", no_ops);
    put_trace("kernels", kernels);
    put_trace("gpu_only", gpu_only);
    xpv_app *a = fx_app_open(root, 64 << 20);
    assert_non_null(a);
    /* Twice: the second answer comes from the cached tool list. */
    for (int round = 0; round < 2; round++) {
        check_tools(a, "cpu_only", 1, 0);
        check_tools(a, "memcpy_only", 1, 0);
        check_tools(a, "no_ops", 0, 0);
        check_tools(a, "kernels", 1, 1);
        check_tools(a, "gpu_only", 1, 1);
    }
    xpv_app_free(a);
    tu_rmrf(root);
    free(root);
}

/* A real PyTorch training trace (backward ops, an optimizer step): TF
 * stats calls it training, and device rows carry the launching aten op as
 * their type instead of "Unknown". */
static void test_pytorch_training_op_types(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    xpv_app *a = fx_app_real("pytorch-kineto");
    if (!a) skip();
    int st;
    char *b = get(a, "/data/plugin/profile/data?run=pytorch/resnet50_num_workers_0"
                     "&tag=framework_op_stats&host=worker0", &st);
    if (st == 404) { free(b); xpv_app_free(a); skip(); }
    assert_int_equal(st, 200);
    json_error_t je;
    json_t *j = json_loads(b, 0, &je);
    assert_non_null(j);
    json_t *t = json_array_get(j, 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(t, "p"), "task_type")),
                        "Training");
    size_t i, ndev = 0;
    json_t *row;
    json_array_foreach(json_object_get(t, "rows"), i, row) {
        json_t *c = json_object_get(row, "c");
        const char *side = json_string_value(json_object_get(json_array_get(c, 1), "v"));
        const char *type = json_string_value(json_object_get(json_array_get(c, 2), "v"));
        const char *op = json_string_value(json_object_get(json_array_get(c, 3), "v"));
        if (strcmp(side, "Device") || !strcmp(type, "IDLE")) continue;
        ndev++;
        assert_string_not_equal(type, "Unknown");
        if (!strncmp(op, "aten::", 6)) assert_string_equal(type, op);
    }
    print_message("%zu device rows, all typed\n", ndev);
    assert_true(ndev > 5);
    json_decref(j);
    free(b);
    xpv_app_free(a);
}

TU_MAIN(cmocka_unit_test(test_loader_streams),
        cmocka_unit_test(test_loader_errors),
        cmocka_unit_test(test_run_tools),
        cmocka_unit_test(test_pytorch_training_op_types))
