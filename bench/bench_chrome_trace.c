/*
 * bench_chrome_trace.c - PyTorch (Kineto) trace loading: speed and memory.
 *
 *   bench_chrome_trace [SIZE_MB | FILE.json | FILE.json.gz]
 *
 * With a size (default 300; any other argument, e.g. the xplane bench/run.sh
 * passes, also means the default) it first writes a synthetic Kineto-style
 * trace of about that many MB, plain and gzip'ed (level 1), under
 * $XPV_BENCH_DIR (default /tmp/xpview-bench), reused when present: per
 * step a ProfilerStep annotation, then cpu_op / cuda_runtime launch /
 * kernel triples sharing External id and correlation (Kineto's full arg
 * sets, ac2g flow pairs), and a memcpy every 16 ops.
 *
 * Each measurement runs in a forked child so its peak RSS (ru_maxrss) is
 * its own:
 *   read       read() the file in 1 MiB chunks (the I/O baseline)
 *   whole      the old loader: read the whole file, convert from memory,
 *              decode (peak RSS only, for comparison)
 *   load       xpv_load_profile: streams from the fd (what the server does)
 *   load .gz   the same over the gzip file
 * Prints MB/s of JSON text and peak RSS as a multiple of the file size.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "bench_util.h"
#include "buf.h"
#include "chrome_trace.h"
#include "loader.h"
#include "model.h"
#include "xplane.h"

/* ==== Generator ========================================================= */

typedef struct gen {
    FILE *f;
    gzFile g;
    char buf[1 << 16];
    size_t n;
    uint64_t bytes;
} gen;

static void gflush(gen *w) {
    if (!w->n) return;
    if (fwrite(w->buf, 1, w->n, w->f) != w->n || gzwrite(w->g, w->buf, (unsigned)w->n) <= 0) {
        perror("write");
        exit(1);
    }
    w->bytes += w->n;
    w->n = 0;
}

static void gput(gen *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void gput(gen *w, const char *fmt, ...) {
    va_list ap;
    if (sizeof w->buf - w->n < 2048) gflush(w);
    va_start(ap, fmt);
    int k = vsnprintf(w->buf + w->n, sizeof w->buf - w->n, fmt, ap);
    va_end(ap);
    w->n += (size_t)k;
}

static const char *const ops[] = {"aten::convolution", "aten::addmm", "aten::relu_",
                                  "aten::batch_norm", "aten::add_", "aten::max_pool2d",
                                  "aten::cudnn_convolution_backward_weight", "aten::mm"};
static const char *const kernels[] = {
    "void cudnn::detail::implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, "
    "false, false, true>(int, int, int, float const*, int, float*, float const*, "
    "kernel_conv_params, unsigned long long, int, float, float, int, float const*, "
    "float const*, bool, int, int)",
    "volta_sgemm_128x64_nn",
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
    "launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
    "at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::"
    "operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, "
    "at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, "
    "c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() "
    "const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)",
    "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>(cudnnTensorStruct, "
    "float const*, cudnnTensorStruct, float*, float const*, float const*, float, float, "
    "float*, float*, float*, float*, float, float)"};

/* Write a Kineto-style trace of about `target` bytes to `path` and
 * `path`.gz. */
static void generate(const char *path, uint64_t target) {
    char gzpath[4200];
    snprintf(gzpath, sizeof gzpath, "%s.gz", path);
    gen w;
    memset(&w, 0, sizeof w);
    w.f = fopen(path, "wb");
    w.g = gzopen(gzpath, "wb1");
    if (!w.f || !w.g) {
        perror(path);
        exit(1);
    }
    double t0 = bench_now();
    uint64_t base_us = 1712167898000000ULL;
    gput(&w, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\n"
             "      \"id\": 0, \"name\": \"NVIDIA A100-SXM4-80GB\", \"totalGlobalMem\": "
             "85097971712,\n      \"computeMajor\": 8, \"computeMinor\": 0,\n"
             "      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n"
             "      \"regsPerBlock\": 65536, \"regsPerMultiprocessor\": 65536, \"warpSize\": 32,\n"
             "      \"sharedMemPerBlock\": 49152, \"sharedMemPerMultiprocessor\": 167936,\n"
             "      \"numSms\": 108, \"sharedMemPerBlockOptin\": 166912\n    }\n  ],\n"
             "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 1},\n"
             "  \"traceEvents\": [\n");
    gput(&w, "  {\n    \"name\": \"process_name\", \"ph\": \"M\", \"ts\": %llu.000, \"pid\": "
             "2501, \"tid\": 0,\n    \"args\": {\n      \"name\": \"python3\"\n    }\n  },\n",
         (unsigned long long)base_us);
    gput(&w, "  {\n    \"name\": \"thread_name\", \"ph\": \"M\", \"ts\": %llu.000, \"pid\": 0, "
             "\"tid\": 7,\n    \"args\": {\n      \"name\": \"stream 7 \"\n    }\n  }",
         (unsigned long long)base_us);
    uint64_t ext = 1, corr = 100, ev = 0;
    double t = 0, gpu_t = 0;
    int step = 1;
    while (w.bytes + w.n < target) {
        if (ev % 4096 == 0) {
            gput(&w, ",\n  {\n    \"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": "
                     "\"ProfilerStep#%d\", \"pid\": 2501, \"tid\": 2501,\n    \"ts\": "
                     "%llu.%03d, \"dur\": 50000.125,\n    \"args\": {\n      \"External id\": "
                     "%llu,\"Record function id\": 0, \"Ev Idx\": %llu\n    }\n  }",
                 step++, (unsigned long long)(base_us + (uint64_t)t), (int)(ev % 1000),
                 (unsigned long long)ext++, (unsigned long long)ev);
        }
        const char *op = ops[ev % (sizeof ops / sizeof ops[0])];
        const char *kn = kernels[ev % (sizeof kernels / sizeof kernels[0])];
        uint64_t ts = base_us + (uint64_t)t;
        int frac = (int)(ev * 7 % 1000);
        gput(&w, ",\n  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": "
                 "2501, \"tid\": 2501,\n    \"ts\": %llu.%03d, \"dur\": 42.%03d,\n"
                 "    \"args\": {\n      \"External id\": %llu,\"Record function id\": 0, "
                 "\"Ev Idx\": %llu, \"Input Dims\": [[64, 256, 56, 56], [256, 64, 1, 1], [], "
                 "[], [], [], [], [], []], \"Input type\": [\"float\", \"float\", \"\", "
                 "\"ScalarList\", \"ScalarList\", \"ScalarList\", \"Scalar\", \"ScalarList\", "
                 "\"Scalar\"], \"Input Strides\": [[802816, 3136, 56, 1], [64, 1, 1, 1], [], [], "
                 "[], [], [], [], []], \"Concrete Inputs\": [\"\", \"\", \"\", \"[1, 1]\", "
                 "\"[0, 0]\", \"[1, 1]\", \"False\", \"[0, 0]\", \"1\"], \"Sequence number\": "
                 "%llu, \"Fwd thread id\": 0\n    }\n  }",
             op, (unsigned long long)ts, frac, frac, (unsigned long long)ext,
             (unsigned long long)ev, (unsigned long long)ev / 2);
        gput(&w, ",\n  {\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": "
                 "\"cudaLaunchKernel\", \"pid\": 2501, \"tid\": 2501,\n    \"ts\": %llu.%03d, "
                 "\"dur\": 6.%03d,\n    \"args\": {\n      \"External id\": %llu,  \"cbid\": "
                 "211, \"correlation\": %llu\n    }\n  }",
             (unsigned long long)ts + 20, frac, frac, (unsigned long long)ext,
             (unsigned long long)corr);
        gput(&w, ",\n  {\n    \"ph\": \"s\", \"id\": %llu, \"pid\": 2501, \"tid\": 2501, "
                 "\"ts\": %llu.%03d,\n    \"cat\": \"ac2g\", \"name\": \"ac2g\"\n  }",
             (unsigned long long)corr, (unsigned long long)ts + 20, frac);
        if (gpu_t < t + 30) gpu_t = t + 30;
        uint64_t gts = base_us + (uint64_t)gpu_t;
        gput(&w, ",\n  {\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, "
                 "\"tid\": 7,\n    \"ts\": %llu.%03d, \"dur\": 35.%03d,\n    \"args\": {\n"
                 "      \"External id\": %llu,\n      \"queued\": 0, \"device\": 0, "
                 "\"context\": 1,\n      \"stream\": 7, \"correlation\": %llu,\n      "
                 "\"registers per thread\": %d,\n      \"shared memory\": %d,\n      "
                 "\"blocks per SM\": 3.555556,\n      \"warps per SM\": 28.444445,\n      "
                 "\"grid\": [%d, 2, 1],\n      \"block\": [256, 1, 1],\n      "
                 "\"est. achieved occupancy %%\": %d\n    }\n  }",
             kn, (unsigned long long)gts, frac, frac, (unsigned long long)ext,
             (unsigned long long)corr, 32 + (int)(ev % 4) * 16, (int)(ev % 3) * 16384,
             128 + (int)(ev % 5), 25 + (int)(ev % 4) * 12);
        gput(&w, ",\n  {\n    \"ph\": \"f\", \"id\": %llu, \"pid\": 0, \"tid\": 7, "
                 "\"ts\": %llu.%03d,\n    \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  }",
             (unsigned long long)corr, (unsigned long long)gts, frac);
        if (ev % 16 == 15)
            gput(&w, ",\n  {\n    \"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy "
                     "HtoD (Pageable -> Device)\", \"pid\": 0, \"tid\": 7,\n    \"ts\": "
                     "%llu.%03d, \"dur\": 12.500,\n    \"args\": {\n      \"External id\": "
                     "%llu,\n      \"device\": 0, \"context\": 1,\n      \"stream\": 7, "
                     "\"correlation\": %llu,\n      \"bytes\": 602112, \"memory bandwidth "
                     "(GB/s)\": 48.17\n    }\n  }",
                 (unsigned long long)gts + 40, frac, (unsigned long long)ext,
                 (unsigned long long)corr + 1);
        gpu_t += 36;
        t += 45;
        ext++;
        corr += 2;
        ev++;
    }
    gput(&w, "\n  ],\n  \"traceName\": \"bench.pt.trace.json\",\n  \"displayTimeUnit\": \"ms\"\n}\n");
    gflush(&w);
    if (fclose(w.f) != 0 || gzclose(w.g) != Z_OK) {
        perror("close");
        exit(1);
    }
    printf("generated %s (+ .gz): %.1f MB, %llu op/launch/kernel triples, %.1f s\n", path,
           (double)w.bytes / 1e6, (unsigned long long)ev, bench_now() - t0);
}

/* ==== Measurements ====================================================== */

typedef struct result {
    double secs;
    uint64_t events;
    uint64_t xspace;              /* XSpace bytes (whole mode) */
    int ok;
} result;

typedef enum { M_READ, M_WHOLE, M_LOAD } mode;

static void work(const char *path, mode m, result *r) {
    double t0 = bench_now();
    if (m == M_READ) {
        int fd = open(path, O_RDONLY);
        static char b[1 << 20];
        ssize_t n;
        uint64_t sum = 0;
        while ((n = read(fd, b, sizeof b)) > 0) sum += (uint64_t)b[n - 1];
        close(fd);
        r->events = sum & 1;
        r->ok = 1;
    } else if (m == M_WHOLE) {
        int fd = open(path, O_RDONLY);
        struct stat st;
        fstat(fd, &st);
        size_t len = (size_t)st.st_size, got = 0;
        char *b = malloc(len);
        while (got < len) {
            ssize_t n = read(fd, b + got, len - got);
            if (n <= 0) break;
            got += (size_t)n;
        }
        close(fd);
        xpv_buf xs;
        xpv_buf_init(&xs);
        xpv_ct_error ce;
        r->ok = xpv_ct_convert_mem(b, len, NULL, &xs, NULL, &ce) == 0;
        free(b);
        size_t n;
        void *bytes = xpv_buf_steal(&xs, &n);
        r->xspace = n;
        xpv_decode_error de;
        xpv_profile *p = r->ok ? xpv_decode(bytes, n, NULL, &de) : NULL;
        r->ok = p != NULL;
        r->events = p ? p->nevents : 0;
        xpv_profile_free(p);
        free(bytes);
    } else {
        xpv_err err;
        xpv_profile *p = xpv_load_profile(path, NULL, NULL, &err);
        if (!p) fprintf(stderr, "load: %s\n", err.msg);
        r->ok = p != NULL;
        r->events = p ? p->nevents : 0;
        xpv_profile_free(p);
    }
    r->secs = bench_now() - t0;
}

/* Run `m` over `path` in a child; peak RSS (bytes) into *rss. */
static result measure(const char *path, mode m, uint64_t *rss) {
    int pfd[2];
    if (pipe(pfd) != 0) exit(1);
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        result r;
        memset(&r, 0, sizeof r);
        work(path, m, &r);
        ssize_t w = write(pfd[1], &r, sizeof r);
        _exit(w == (ssize_t)sizeof r ? 0 : 1);
    }
    close(pfd[1]);
    result r;
    memset(&r, 0, sizeof r);
    if (read(pfd[0], &r, sizeof r) != (ssize_t)sizeof r) r.ok = 0;
    close(pfd[0]);
    int st;
    struct rusage ru;
    wait4(pid, &st, 0, &ru);
    *rss = (uint64_t)ru.ru_maxrss * 1024;
    return r;
}

static uint64_t file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

int main(int argc, char **argv) {
    const char *arg = argc > 1 ? argv[1] : "300";
    char path[4096];
    size_t al = strlen(arg);
    int given = (al > 5 && !strcmp(arg + al - 5, ".json")) ||
                (al > 8 && !strcmp(arg + al - 8, ".json.gz"));
    char gzpath[4200] = "";
    if (given) {
        snprintf(path, sizeof path, "%s", arg);
    } else {
        long mb = strtol(arg, NULL, 10);
        if (mb <= 0) mb = 300;
        const char *dir = getenv("XPV_BENCH_DIR");
        if (!dir) dir = "/tmp/xpview-bench";
        mkdir(dir, 0755);
        snprintf(path, sizeof path, "%s/kineto-%ldMB.pt.trace.json", dir, mb);
        snprintf(gzpath, sizeof gzpath, "%s.gz", path);
        if (!file_size(path) || !file_size(gzpath)) generate(path, (uint64_t)mb * 1000000);
    }
    uint64_t size = file_size(path);
    if (!size) {
        fprintf(stderr, "%s: missing or empty\n", path);
        return 1;
    }
    int is_gz = al > 3 && !strcmp(path + strlen(path) - 3, ".gz");
    printf("file %s: %.1f MB%s\n", path, (double)size / 1e6, is_gz ? " (gzip)" : "");
    uint64_t rss;
    result r = measure(path, M_READ, &rss);   /* also warms the page cache */
    r = measure(path, M_READ, &rss);
    printf("  %-10s %8.1f MB/s of file   peak RSS %7.1f MB\n", "read", size / 1e6 / r.secs,
           rss / 1e6);
    uint64_t json = size;
    if (!is_gz) {
        r = measure(path, M_WHOLE, &rss);
        printf("  %-10s %8.1f MB/s of JSON   peak RSS %7.1f MB = %.2fx the file  (%llu events, "
               "XSpace %.1f MB)%s\n",
               "whole", size / 1e6 / r.secs, rss / 1e6, (double)rss / size,
               (unsigned long long)r.events, r.xspace / 1e6, r.ok ? "" : "  FAILED");
    }
    r = measure(path, M_LOAD, &rss);
    printf("  %-10s %8.1f MB/s of %s   peak RSS %7.1f MB = %.2fx the file  (%llu events)%s\n",
           "load", size / 1e6 / r.secs, is_gz ? "gzip" : "JSON", rss / 1e6, (double)rss / size,
           (unsigned long long)r.events, r.ok ? "" : "  FAILED");
    if (gzpath[0] && file_size(gzpath)) {
        uint64_t gsz = file_size(gzpath);
        r = measure(gzpath, M_LOAD, &rss);
        printf("  %-10s %8.1f MB/s of JSON   peak RSS %7.1f MB = %.2fx the JSON, %.2fx the "
               "%.1f MB .gz  (%llu events)%s\n",
               "load .gz", json / 1e6 / r.secs, rss / 1e6, (double)rss / json,
               (double)rss / gsz, gsz / 1e6, (unsigned long long)r.events,
               r.ok ? "" : "  FAILED");
    }
    return 0;
}
