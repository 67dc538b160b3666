/*
 * bench_ingest.c - XPlane ingest speed and memory against same-run baselines.
 *
 *   bench_ingest FILE.xplane.pb [reps]
 *
 * Each measurement runs in a forked child so its peak RSS (ru_maxrss) is
 * its own.  Baselines, all over the same bytes already in memory:
 *   memcpy     copy the file buffer (memory bandwidth)
 *   inflate    zlib inflate of a level-1 gzip of the first 64 MiB (MB/s of output)
 *   wirewalk   plain protobuf wire walk: descend XSpace/XPlane/XLine/XEvent/
 *              XStat, read every varint, skip the rest, checksum, no allocation
 *   load       xpv_load_profile: open + read (or map) + decode, the server's path
 *   decode     xpv_decode: the profile model the server uses (lines parsed
 *              by one thread per CPU); "decode 1 thr": the serial decoder
 * Prints MB/s (best of reps), the decode/wirewalk ratio, and peak RSS of a
 * child that loads the file (file buffer included) as a multiple of the
 * file size.
 */
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
#include "model.h"
#include "xplane.h"
#include "loader.h"
#include "wire.h"

/* ---- plain wire walk (the baseline the decoder is compared with) -------- */
static uint64_t walk(const uint8_t *p, const uint8_t *end, int depth) {
    uint64_t sum = 0;
    while (p < end) {
        uint64_t tag, v;
        const uint8_t *s;
        if (!wire_varint(&p, end, &tag)) return sum;
        unsigned f = (unsigned)(tag >> 3), wt = (unsigned)(tag & 7);
        if (wt == WT_VARINT) {
            if (!wire_varint(&p, end, &v)) return sum;
            sum += v;
        } else if (wt == WT_LEN) {
            if (!wire_len(&p, end, &s, &v)) return sum;
            /* descend into planes(1) -> lines(3) -> events(4) -> stats(4),
             * and plane metadata maps / stats */
            int sub = (depth == 0 && f == 1) || (depth == 1 && (f >= 3 && f <= 6)) ||
                      (depth == 2 && (f == 4 || f == 2)) || (depth == 3 && f == 4);
            if (sub) sum += walk(s, s + v, depth + 1);
            else sum += v;
        } else if (!wire_skip(&p, end, wt)) {
            return sum;
        }
    }
    return sum;
}

typedef struct result {
    double best_s;
    long maxrss_kb;
    uint64_t check;
} result;

static volatile uint64_t sink;

static void run_child(int mode, const char *path, void *buf, size_t len, int reps,
                      int pipefd) {
    result r = {1e30, 0, 0};
    if (mode == 3) {
        /* load from disk, as the server does (xpv_load_profile) */
        for (int i = 0; i < reps; i++) {
            double t0 = bench_now();
            xpv_err err;
            xpv_profile *p = xpv_load_profile(path, NULL, NULL, &err);
            if (!p) { fprintf(stderr, "load: %s\n", err.msg); exit(1); }
            double t = bench_now() - t0;
            r.check = p->nevents;
            xpv_profile_free(p);
            if (t < r.best_s) r.best_s = t;
        }
    } else if (mode == 4 || mode == 5) {
        /* decode only (bytes already in memory); mode 5: one thread */
        for (int i = 0; i < reps; i++) {
            double t0 = bench_now();
            xpv_decode_error err;
            xpv_decode_opts o = {.threads = mode == 5 ? 1 : 0};
            xpv_profile *p = xpv_decode_ex(buf, len, NULL, &o, &err);
            double t = bench_now() - t0;
            if (!p) exit(1);
            r.check = p->nevents;
            xpv_profile_free(p);
            if (t < r.best_s) r.best_s = t;
        }
    } else if (mode == 0) {
        char *dst = malloc(len);
        memset(dst, 1, len);
        for (int i = 0; i < reps; i++) {
            double t0 = bench_now();
            memcpy(dst, buf, len);
            __asm__ volatile("" ::: "memory");
            double t = bench_now() - t0;
            if (t < r.best_s) r.best_s = t;
        }
        r.check = (uint64_t)dst[len / 2];
        free(dst);
    } else if (mode == 1) {
        size_t in = len < (64u << 20) ? len : (64u << 20);
        uLongf zcap = compressBound((uLong)in);
        Bytef *z = malloc(zcap);
        z_stream zs;
        memset(&zs, 0, sizeof zs);
        deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
        zs.next_in = buf; zs.avail_in = (uInt)in; zs.next_out = z; zs.avail_out = (uInt)zcap;
        deflate(&zs, Z_FINISH);
        size_t zlen = zs.total_out;
        deflateEnd(&zs);
        Bytef *out = malloc(in);
        for (int i = 0; i < reps; i++) {
            double t0 = bench_now();
            memset(&zs, 0, sizeof zs);
            inflateInit2(&zs, 15 + 32);
            zs.next_in = z; zs.avail_in = (uInt)zlen; zs.next_out = out; zs.avail_out = (uInt)in;
            inflate(&zs, Z_FINISH);
            inflateEnd(&zs);
            double t = (bench_now() - t0) * ((double)len / (double)in); /* scale to file size */
            if (t < r.best_s) r.best_s = t;
        }
        free(z);
        free(out);
    } else if (mode == 2) {
        for (int i = 0; i < reps; i++) {
            double t0 = bench_now();
            r.check = walk(buf, (const uint8_t *)buf + len, 0);
            double t = bench_now() - t0;
            if (t < r.best_s) r.best_s = t;
        }
    }
    sink = r.check;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    r.maxrss_kb = ru.ru_maxrss;
    if (write(pipefd, &r, sizeof r) != (ssize_t)sizeof r) exit(1);
    exit(0);
}

static result measure(int mode, const char *path, int reps) {
    int fds[2];
    if (pipe(fds)) exit(1);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        void *buf = NULL;
        size_t len = 0;
        if (mode != 3) buf = bench_read_all(path, &len);
        run_child(mode, path, buf, len, reps, fds[1]);
    }
    close(fds[1]);
    result r;
    memset(&r, 0, sizeof r);
    if (read(fds[0], &r, sizeof r) != (ssize_t)sizeof r) {
        fprintf(stderr, "child failed\n");
        exit(1);
    }
    close(fds[0]);
    waitpid(pid, NULL, 0);
    return r;
}

int main(int argc, char **argv) {
    bench_need_file(argc, argv, "[reps]");
    const char *path = argv[1];
    int reps = argc > 2 ? atoi(argv[2]) : 3;
    struct stat st;
    if (stat(path, &st)) { perror(path); return 1; }
    double mb = (double)st.st_size / 1e6;
    const char *names[] = {"memcpy", "inflate", "wirewalk", "load", "decode", "decode 1 thr"};
    double mbs[6];
    long rss[6];
    printf("file: %s (%.1f MB), best of %d\n", path, mb, reps);
    for (int m = 0; m < 6; m++) {
        result r = measure(m, path, reps);
        mbs[m] = mb / r.best_s;
        rss[m] = r.maxrss_kb;
        printf("%-12s %9.1f MB/s  %7.3f s  peak RSS %7.1f MB (%.2fx file)\n", names[m], mbs[m],
               r.best_s, (double)r.maxrss_kb / 1024.0, (double)r.maxrss_kb * 1024.0 / (double)st.st_size);
    }
    printf("ratio decode/wirewalk: %.2f (goal >= 0.5)\n", mbs[4] / mbs[2]);
    printf("decode threads speed-up: %.2fx\n", mbs[4] / mbs[5]);
    printf("peak RSS load: %.2fx file (goal <= 1.5)\n",
           (double)rss[3] * 1024.0 / (double)st.st_size);
    return 0;
}
