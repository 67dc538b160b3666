/*
 * loader.c - see loader.h.
 */
#include "loader.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arena.h"
#include "chrome_trace.h"

static void free_buf(void *buf, size_t len) {
    (void)len;
    free(buf);
}

/* The varint at p[*i], advancing *i past it: 1 with *v, 0 when the data
 * ends inside it, -1 when it runs past 64 bits. */
static int varint_at(const unsigned char *p, size_t len, size_t *i, uint64_t *v) {
    int shift = 0;
    *v = 0;
    do {
        if (*i >= len) return 0;
        if (shift > 63) return -1;
        *v |= (uint64_t)(p[*i] & 0x7f) << shift;
        shift += 7;
    } while (p[(*i)++] & 0x80);
    return 1;
}

/* Whether the XSpace's top-level fields run past the end of the data: the
 * file stops in the middle of a record, which is what a profile that is
 * still being written (or was cut short) looks like. */
static int ends_mid_record(const unsigned char *p, size_t len) {
    size_t i = 0;
    while (i < len) {
        uint64_t tag, n;
        int r = varint_at(p, len, &i, &tag);
        if (r <= 0) return r == 0;
        switch (tag & 7) {
        case 0:
            do {
                if (i >= len) return 1;
            } while (p[i++] & 0x80);
            break;
        case 1:
            if (len - i < 8) return 1;
            i += 8;
            break;
        case 5:
            if (len - i < 4) return 1;
            i += 4;
            break;
        case 2:
            r = varint_at(p, len, &i, &n);
            if (r <= 0) return r == 0;
            if (n > (1ULL << 32)) return 0;   /* absurd length: corrupt */
            if (n > len - i) return 1;
            i += (size_t)n;
            break;
        default:
            return 0;       /* not protobuf at all: corrupt, not incomplete */
        }
    }
    return 0;
}


/* ==== Confined open ==================================================== */

#define OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)

/* The error of a failed open()/openat() of `display`. */
static int open_error(xpv_err *err, int e, const char *display) {
    if (e == ELOOP || e == ENOTDIR)
        return xpv_err_set(err, XPV_E_FORBIDDEN, "%s: refused: a component of its path is a "
                           "symlink (or no longer a directory) since the logdir "
                           "was scanned; files are only read inside the logdir",
                           display);
    if (e == ENXIO)   /* a UNIX socket (or a device without its driver) */
        return xpv_err_set(err, XPV_E_BAD_PROFILE, "%s: not a regular file", display);
    return xpv_err_set(err, e == ENOENT ? XPV_E_NOT_FOUND : XPV_E_INTERNAL, "%s: cannot open: %s", display,
                       strerror(e));
}

int xpv_open_beneath(const char *root, const char *rel, const char *display,
                     xpv_err *err) {
    /* O_PATH: directories need only search permission, as for open(). */
    int dfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return open_error(err, errno, display);
    const char *p = rel;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        char comp[NAME_MAX + 1];
        if (n == 0 || n > NAME_MAX || (n == 1 && p[0] == '.') ||
            (n == 2 && p[0] == '.' && p[1] == '.')) {
            close(dfd);
            return xpv_err_set(err, XPV_E_FORBIDDEN, "%s: refused: not a plain path below "
                               "the logdir", display);
        }
        memcpy(comp, p, n);
        comp[n] = '\0';
        int fd = slash ? openat(dfd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                       : openat(dfd, comp, OPEN_FLAGS | O_NOFOLLOW);
        int e = errno;
        close(dfd);
        if (fd < 0) return open_error(err, e, display);
        if (!slash) return fd;
        dfd = fd;
        p = slash + 1;
    }
}

/* The part of `real` below `root` (both resolved and absolute), without the
 * leading '/'; NULL when `real` is not below `root`. */
static const char *below(const char *root, const char *real) {
    size_t rl = strlen(root);
    if (rl == 1 && root[0] == '/') return real[0] == '/' ? real + 1 : NULL;
    if (strncmp(real, root, rl) != 0 || real[rl] != '/') return NULL;
    return real + rl + 1;
}

int xpv_open_confined(const char *root, const char *path, const char *display,
                      xpv_err *err) {
    if (!root) {
        int fd = open(path, OPEN_FLAGS);
        if (fd < 0 && errno == ENXIO) return open_error(err, errno, display);
        if (fd < 0) return xpv_err_set(err, errno == ENOENT ? XPV_E_NOT_FOUND : XPV_E_INTERNAL,
                                       "%s: cannot open: %s", display, strerror(errno));
        return fd;
    }
    char *real = realpath(path, NULL);
    if (!real) {
        int e = errno;
        return xpv_err_set(err, e == ENOENT || e == ENOTDIR ? XPV_E_NOT_FOUND : XPV_E_INTERNAL,
                           "%s: cannot open: %s", display, strerror(e));
    }
    const char *rel = below(root, real);
    int fd = -1;
    if (!rel || !*rel)
        xpv_err_set(err, XPV_E_FORBIDDEN, "%s: refused: it now resolves outside the logdir "
                    "(replaced by a symlink since the scan?)", display);
    else
        fd = xpv_open_beneath(root, rel, display, err);
    free(real);
    if (fd < 0) return -1;
    /* Belt and braces: where the kernel says the open file lives (a
     * directory moved out of the logdir mid-walk).  Skipped without /proc. */
    char link[64], where[PATH_MAX + 1];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t wl = readlink(link, where, sizeof where - 1);
    if (wl > 0) {
        where[wl] = '\0';
        if (!below(root, where)) {
            close(fd);
            return xpv_err_set(err, XPV_E_FORBIDDEN, "%s: refused: the file opened lies outside "
                               "the logdir", display);
        }
    }
    return fd;
}

/* ==== Mapped files ======================================================
 *
 * Plain XPlane files are mapped read-only instead of read into the heap:
 * no copy, and the bytes stay page cache the kernel can reclaim (a 10 GB
 * profile need not fit in memory beside its model).  Strings and event
 * stats of the model point into the mapping for the profile's life.
 *
 * A mapped file truncated by another process faults (SIGBUS) on its lost
 * pages.  The guard: a SIGBUS handler that, for a fault inside one of our
 * mappings, maps zero pages over the rest of it and returns, so the access
 * reads zeros (the decoder stops at a field 0, lazy stat decoding sees no
 * more stats) and the mapping is marked damaged; the loader then reports
 * the file as changed while it was read, and xpv_profile_damaged() says
 * that a cached profile lost its bytes.  Faults elsewhere go to the
 * previous handler (or the default action). */

#define MAX_MAPS 1024

typedef struct map_slot {
    _Atomic uintptr_t lo;       /* 0: free */
    _Atomic uintptr_t hi;
    _Atomic int damaged;
    /* The mapped file (its own descriptor) and its size and mtime when it
     * was mapped: a file rewritten in place changes the mapped bytes under
     * the model, which xpv_profile_changed() tells by them. */
    int fd;
    off_t size;
    struct timespec mtime, ctime; /* ctime: cp -p sets the mtime back */
} map_slot;

static map_slot maps[MAX_MAPS];
static struct sigaction old_bus;

static void on_sigbus(int sig, siginfo_t *si, void *uc) {
    uintptr_t a = (uintptr_t)si->si_addr;
    for (size_t i = 0; i < MAX_MAPS; i++) {
        uintptr_t lo = atomic_load(&maps[i].lo), hi = atomic_load(&maps[i].hi);
        if (!lo || a < lo || a >= hi) continue;
        uintptr_t pg = a & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);
        if (pg < lo) pg = lo;
        /* mmap is a plain system call on Linux: safe enough here. */
        if (mmap((void *)pg, hi - pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
                 0) == MAP_FAILED)
            break;
        atomic_store(&maps[i].damaged, 1);
        return;
    }
    if (old_bus.sa_flags & SA_SIGINFO) {
        old_bus.sa_sigaction(sig, si, uc);
    } else if (old_bus.sa_handler != SIG_DFL && old_bus.sa_handler != SIG_IGN) {
        old_bus.sa_handler(sig);
    } else {
        signal(SIGBUS, SIG_DFL);   /* the access faults again: default action */
    }
}

/* Install on_sigbus unless it is the handler now (someone - a test
 * harness - may have replaced it since: it is then the one chained to). */
static int install_bus(void) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    struct sigaction cur, sa;
    int ok = sigaction(SIGBUS, NULL, &cur) == 0;
    if (ok && (!(cur.sa_flags & SA_SIGINFO) || cur.sa_sigaction != on_sigbus)) {
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        ok = sigaction(SIGBUS, &sa, &old_bus) == 0;
    }
    pthread_mutex_unlock(&lock);
    return ok;
}

static map_slot *find_map(const void *p) {
    for (size_t i = 0; i < MAX_MAPS; i++)
        if (atomic_load(&maps[i].lo) == (uintptr_t)p) return &maps[i];
    return NULL;
}

static void unmap_buf(void *buf, size_t len) {
    map_slot *s = find_map(buf);
    munmap(buf, len);
    if (s) {
        if (s->fd >= 0) close(s->fd);
        s->fd = -1;
        atomic_store(&s->hi, 0);
        atomic_store(&s->lo, 0);
        atomic_store(&s->damaged, 0);
    }
}

/* Map `len` bytes of the file open on `fd` under the guard; NULL when it
 * cannot (no guard, every slot taken, mmap failed): read it instead. */
static void *map_file(int fd, const struct stat *st0, size_t len) {
    if (!install_bus()) return NULL;
    int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0) return NULL;
    void *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
        close(own);
        return NULL;
    }
    for (size_t i = 0; i < MAX_MAPS; i++) {
        uintptr_t want = 0;
        if (atomic_compare_exchange_strong(&maps[i].lo, &want, (uintptr_t)1)) {
            atomic_store(&maps[i].damaged, 0);
            maps[i].fd = own;
            maps[i].size = st0->st_size;
            maps[i].mtime = st0->st_mtim;
            maps[i].ctime = st0->st_ctim;
            atomic_store(&maps[i].hi, (uintptr_t)p + len);
            atomic_store(&maps[i].lo, (uintptr_t)p);
            /* Decoding reads it front to back (two streams at most). */
            madvise(p, len, MADV_WILLNEED);
            return p;
        }
    }
    munmap(p, len);
    close(own);
    return NULL;
}

int xpv_profile_damaged(const xpv_profile *p) {
    if (!p || p->buf_free != unmap_buf) return 0;
    map_slot *s = find_map(p->buf);
    return s && atomic_load(&s->damaged);
}

int xpv_profile_changed(const xpv_profile *p) {
    if (!p || p->buf_free != unmap_buf) return 0;
    map_slot *s = find_map(p->buf);
    if (!s) return 0;
    if (atomic_load(&s->damaged)) return 1;
    struct stat st;
    if (s->fd < 0 || fstat(s->fd, &st) != 0) return 1;
    return st.st_size != s->size || st.st_mtim.tv_sec != s->mtime.tv_sec ||
           st.st_mtim.tv_nsec != s->mtime.tv_nsec || st.st_ctim.tv_sec != s->ctime.tv_sec ||
           st.st_ctim.tv_nsec != s->ctime.tv_nsec;
}

/* ==== Loading ========================================================== */

/* Chrome trace JSON (PyTorch *.pt.trace.json[.gz], TF 2.2 *.trace.json.gz)
 * is named *.json or *.json.gz. */
static int is_trace_json(const char *path) {
    size_t n = strlen(path);
    return (n > 5 && !strcmp(path + n - 5, ".json")) ||
           (n > 8 && !strcmp(path + n - 8, ".json.gz"));
}

/* Convert the Chrome trace open on `fd` (stat `st0`) to XSpace bytes,
 * streaming from the fd (gzip inflated chunk by chunk; see chrome_trace.h):
 * neither the file nor its JSON text is ever whole in memory.  Returns the
 * malloc'ed XSpace (length in *len), or NULL with `err` filled; *facts says
 * what the trace holds (XPV_TRACE_* bits, kept in the profile). */
static unsigned char *load_trace_json(int fd, const struct stat *st0, const char *display,
                                      const xpv_load_limits *lim, size_t *len,
                                      unsigned *facts, xpv_err *err) {
    xpv_buf xs;
    xpv_buf_init(&xs);
    xpv_ct_options opt = {NULL, lim->max_inflated};
    xpv_ct_summary sum;
    xpv_ct_error ce;
    memset(&sum, 0, sizeof sum);
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    int crc = xpv_ct_convert_fd(fd, &opt, &xs, &sum, &ce);
    struct stat st1;
    if (fstat(fd, &st1) != 0 || st1.st_size != st0->st_size ||
        st1.st_mtim.tv_sec != st0->st_mtim.tv_sec ||
        st1.st_mtim.tv_nsec != st0->st_mtim.tv_nsec) {
        xpv_buf_free(&xs);
        err->offset = (int64_t)sum.input_bytes;
        xpv_err_set(err, XPV_E_BAD_PROFILE, "%s: incomplete: the file changed while it was read "
                    "(still being written?); retry later", display);
        return NULL;
    }
    if (crc != 0) {
        xpv_buf_free(&xs);
        err->offset = (int64_t)ce.offset;
        xpv_err_set(err, ce.status ? ce.status : XPV_E_BAD_PROFILE,
                    "%s: cannot read trace JSON at byte %llu: %s", display,
                    (unsigned long long)ce.offset, ce.msg);
        return NULL;
    }
    *facts = (sum.host_ops ? XPV_TRACE_HOST_OPS : 0) | (sum.kernels ? XPV_TRACE_KERNELS : 0);
    *len = xs.len;
    return (unsigned char *)xpv_buf_steal(&xs, len);
}

/* Read `len` bytes of the file open on `fd` into a malloc'ed buffer.
 * NULL with `err` filled (413 no memory, 500 read error, 422 short read:
 * the file shrank). */
static unsigned char *read_file(int fd, size_t len, const char *display, xpv_err *err) {
    unsigned char *buf = malloc(len);
    if (!buf) {
        xpv_err_set(err, XPV_E_TOO_LARGE, "%s: cannot allocate %zu bytes", display, len);
        return NULL;
    }
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(fd, buf + got, len - got, (off_t)got);
        if (r < 0) {
            if (errno == EINTR) continue;
            xpv_err_set(err, XPV_E_INTERNAL, "%s: read error at byte %zu: %s", display, got,
                        strerror(errno));
            free(buf);
            return NULL;
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    if (got < len) {
        err->offset = (int64_t)got;
        xpv_err_set(err, XPV_E_BAD_PROFILE, "%s: incomplete: the file changed while it was read "
                    "(still being written?); retry later", display);
        free(buf);
        return NULL;
    }
    return buf;
}

/* Whether the file open on `fd` still has the size and mtime of `st0`
 * (else `err` is filled: 422 incomplete, or 500 when fstat fails). */
static int unchanged(int fd, const struct stat *st0, const char *display, xpv_err *err) {
    struct stat st1;
    if (fstat(fd, &st1) != 0) {
        xpv_err_set(err, XPV_E_INTERNAL, "%s: fstat failed: %s", display, strerror(errno));
        return 0;
    }
    if (st1.st_size == st0->st_size && st1.st_mtim.tv_sec == st0->st_mtim.tv_sec &&
        st1.st_mtim.tv_nsec == st0->st_mtim.tv_nsec)
        return 1;
    xpv_err_set(err, XPV_E_BAD_PROFILE, "%s: incomplete: the file changed while it was read "
                "(still being written?); retry later", display);
    return 0;
}

/* Gunzip `buf` (owned; freed with `buf_free`) into a new malloc'ed buffer,
 * capped by --max_file_size and the memory budget.  NULL with `err`. */
static unsigned char *gunzip_buf(unsigned char *buf, size_t *len,
                                 void (*buf_free)(void *, size_t), const char *display,
                                 const xpv_load_limits *lim, xpv_err *err) {
    size_t ilen = 0;
    /* The smaller of --max_file_size and the memory budget. */
    uint64_t cap = lim->max_inflated;
    const char *cap_name = "limit (--max_file_size)";
    if (lim->max_mem && lim->max_mem < cap) {
        cap = lim->max_mem;
        cap_name = "memory budget (--cache_mb)";
    }
    unsigned char *inflated = xpv_gunzip_limited(buf, *len, cap, cap_name, &ilen, err);
    buf_free(buf, *len);
    if (!inflated) {
        char m[sizeof err->msg];
        memcpy(m, err->msg, sizeof m);
        xpv_err_set(err, err->status, "%.150s: %.200s", display, m);
        return NULL;
    }
    if (ilen == 0) {
        free(inflated);
        xpv_err_set(err, XPV_E_BAD_PROFILE, "%s: empty file (after gunzip)", display);
        return NULL;
    }
    *len = ilen;
    return inflated;
}

/* Decode `buf` (owned; freed with `buf_free`), failures as xpv_err. */
static xpv_profile *decode_buf(unsigned char *buf, size_t len, void (*buf_free)(void *, size_t),
                               const char *display, const xpv_load_limits *lim, xpv_err *err) {
    xpv_decode_error de;
    memset(&de, 0, sizeof de);
    /* Cheap (top-level fields only), decided before xpv_decode owns buf. */
    int cut = ends_mid_record(buf, len);
    /* A mapped file's bytes are page cache the kernel can reclaim: the
     * budget holds the model (and inflated or converted bytes). */
    xpv_decode_opts o = {.budget = lim->max_mem, .file_mapped = buf_free == unmap_buf};
    xpv_profile *p = xpv_decode_ex(buf, len, buf_free, &o, &de);
    if (p) return p;   /* buf is owned by xpv_decode now, also on failure */
    err->offset = (int64_t)de.offset;
    if (de.status == 413 || de.status == 503)
        xpv_err_set(err, de.status, "%s: %s (at byte offset %llu of %zu)", display, de.msg,
                    (unsigned long long)de.offset, len);
    else if (cut)
        xpv_err_set(err, XPV_E_BAD_PROFILE, "%s: incomplete: the file ends in the middle of a "
                    "record (byte offset %llu of %zu; still being written?); retry "
                    "when the profiler has finished writing it", display,
                    (unsigned long long)de.offset, len);
    else
        xpv_err_set(err, XPV_E_BAD_PROFILE, "%s: cannot decode XSpace at byte offset %llu: %s",
                    display, (unsigned long long)de.offset,
                    de.msg[0] ? de.msg : "malformed data");
    return NULL;
}

/* A plain or gzipped XPlane file open on `fd` (stat `st0`): mapped (read
 * when it cannot be), gunzipped when it starts with the gzip magic, and
 * decoded.  The file must not change until its bytes have been read: a
 * mapping is read while it is gunzipped or decoded, so it is checked after
 * that (a file that shrank meanwhile read zeros, see on_sigbus). */
static xpv_profile *load_xplane(int fd, const struct stat *st0, const char *display,
                                const xpv_load_limits *lim, xpv_err *err) {
    size_t len = (size_t)st0->st_size;
    void (*buf_free)(void *, size_t) = unmap_buf;
    unsigned char *buf = map_file(fd, st0, len);
    if (!buf) {
        buf_free = free_buf;
        if (!(buf = read_file(fd, len, display, err))) return NULL;
        if (!unchanged(fd, st0, display, err)) {
            free(buf);
            return NULL;
        }
    }
    int mapped = buf_free == unmap_buf;
    if (len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) {
        buf = gunzip_buf(buf, &len, buf_free, display, lim, err);
        if (buf && mapped && !unchanged(fd, st0, display, err)) {
            free(buf);
            return NULL;
        }
        if (!buf) return NULL;
        return decode_buf(buf, len, free_buf, display, lim, err);
    }
    xpv_profile *p = decode_buf(buf, len, buf_free, display, lim, err);
    if (mapped && !unchanged(fd, st0, display, err)) {
        err->offset = 0;
        xpv_profile_free(p);
        return NULL;
    }
    return p;
}

uint64_t xpv_load_heap_estimate(const char *path, uint64_t size, const xpv_load_limits *lim) {
    xpv_load_limits def = {XPV_DEFAULT_MAX_FILE, XPV_DEFAULT_MAX_FILE, NULL, 0};
    if (!lim) lim = &def;
    if (is_trace_json(path)) return xpv_decode_heap_estimate(size, 0);
    xpv_err err;
    int fd = xpv_open_confined(lim->root, path, path, &err);
    if (fd < 0) return xpv_decode_heap_estimate(size, 1);
    unsigned char m[2], t[4];
    uint64_t est = xpv_decode_heap_estimate(size, 1);
    if (size >= 18 && pread(fd, m, 2, 0) == 2 && m[0] == 0x1f && m[1] == 0x8b &&
        pread(fd, t, 4, (off_t)(size - 4)) == 4) {
        /* ISIZE: the inflated size mod 2^32 of the last member (it
         * understates multi-member files and those past 4 GiB: at least
         * the file's size); gunzip stops at the caps whatever it says. */
        uint64_t isize = (uint64_t)t[0] | (uint64_t)t[1] << 8 | (uint64_t)t[2] << 16 |
                         (uint64_t)t[3] << 24;
        uint64_t cap = lim->max_inflated;
        if (lim->max_mem && lim->max_mem < cap) cap = lim->max_mem;
        if (isize < size) isize = size;
        if (isize > cap) isize = cap;
        est = xpv_decode_heap_estimate(isize, 0);
    }
    close(fd);
    return est;
}

xpv_profile *xpv_load_profile(const char *path, const char *display,
                              const xpv_load_limits *lim, xpv_err *err) {
    xpv_load_limits def = {XPV_DEFAULT_MAX_FILE, XPV_DEFAULT_MAX_FILE, NULL, 0};
    struct stat st0;
    if (!lim) lim = &def;
    if (!display) display = path;
    xpv_err_clear(err);
    snprintf(err->file, sizeof err->file, "%s", display);

    /* O_NONBLOCK: a FIFO put in place of the file must not block the
     * thread (it is refused below as not a regular file). */
    int fd = xpv_open_confined(lim->root, path, display, err);
    if (fd < 0) return NULL;
    xpv_profile *p = NULL;
    if (fstat(fd, &st0) != 0 || !S_ISREG(st0.st_mode)) {
        xpv_err_set(err, XPV_E_BAD_PROFILE, "%s: not a regular file", display);
    } else if (st0.st_size == 0) {
        xpv_err_set(err, XPV_E_BAD_PROFILE, "%s: empty file", display);
    } else if ((uint64_t)st0.st_size > lim->max_file) {
        xpv_err_set(err, XPV_E_TOO_LARGE, "%s: file is %llu bytes, over the %llu-byte limit "
                    "(--max_file_size)", display, (unsigned long long)st0.st_size,
                    (unsigned long long)lim->max_file);
    } else if (is_trace_json(path)) {
        size_t len = 0;
        unsigned facts = 0;
        unsigned char *buf = load_trace_json(fd, &st0, display, lim, &len, &facts, err);
        if (buf && (p = decode_buf(buf, len, free_buf, display, lim, err)))
            p->trace_facts = facts;
    } else {
        p = load_xplane(fd, &st0, display, lim, err);
    }
    close(fd);
    return p;
}
