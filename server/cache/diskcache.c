/*
 * diskcache.c - derived data persisted under --cache_dir (see
 * diskcache.h for the layout, the key and the atomic-write protocol).
 *
 * An entry file: a 24-byte envelope header ("XPVDC2\n\0", key length,
 * payload length), the key, zero padding to 8 bytes, the payload (the
 * kind's own image, which carries its own magic, format and hash), and a
 * 32-byte HMAC-SHA256 of everything before it under DIR/secret.
 */
#include "diskcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "arena.h"
#include "trace_index.h"
#include "util.h"
#include "version.h"

#define ENV_MAGIC "XPVDC2\n"
#define ENV_HEAD 24
#define MAC_LEN 32
#define SECRET_LEN 32
#define SECRET_NAME "secret"
#define MAX_PENDING_BYTES (512u << 20) /* image bytes waiting to be written */
#define STALE_TMP_S 3600            /* temporary files older than this are litter */
#define TMP_PREFIX ".tmp."

struct xpv_diskcache {
    char *dir;                      /* resolved, no trailing '/' */
    uint64_t build_id;
    pthread_mutex_t mu;
    pthread_cond_t idle;            /* signalled when pending drops */
    int pending;                    /* background writes in flight */
    size_t pending_bytes;           /* their image bytes */
    uint64_t counter;               /* temporary file names */
    int logged;                     /* a write error was logged */
    int has_secret;                 /* 0: reads miss, writes are skipped */
    unsigned char secret[SECRET_LEN];
    xpv_diskcache_stats st;
};

/* ==== Paths ============================================================= */

/* Absolute, symlink-free form of `path` even when its tail does not exist
 * yet: the longest existing prefix is resolved with realpath(), the
 * missing components are appended lexically ("." dropped, ".." pops).
 * Returns a malloc'ed path or NULL. */
static char *resolve_path(const char *path) {
    char *r = realpath(path, NULL);
    if (r) return r;
    if (errno != ENOENT) return NULL;
    xpv_buf b;
    xpv_buf_init(&b);
    if (path[0] != '/') {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) return NULL;
        xpv_buf_puts(&b, cwd);
        xpv_buf_putc(&b, '/');
    }
    xpv_buf_puts(&b, path);
    xpv_buf_putc(&b, '\0');
    /* Find the longest existing prefix (at a '/' boundary). */
    char *abs = b.data, *res = NULL;
    size_t n = strlen(abs);
    while (n > 1 && abs[n - 1] == '/') abs[--n] = '\0';
    size_t cut = n;
    for (;;) {
        while (cut > 0 && abs[cut] != '/') cut--;
        char saved = abs[cut ? cut : 1];
        abs[cut ? cut : 1] = '\0';
        res = realpath(cut ? abs : "/", NULL);
        abs[cut ? cut : 1] = saved;
        if (res || !cut) break;
        cut--;
    }
    if (!res) {
        xpv_buf_free(&b);
        return NULL;
    }
    xpv_buf out;
    xpv_buf_init(&out);
    xpv_buf_puts(&out, strcmp(res, "/") ? res : "");
    free(res);
    const char *s = abs + cut;
    while (*s) {
        while (*s == '/') s++;
        size_t len = strcspn(s, "/");
        if (!len) break;
        if (len == 1 && s[0] == '.') {
            /* nothing */
        } else if (len == 2 && s[0] == '.' && s[1] == '.') {
            while (out.len && out.data[out.len - 1] != '/') out.len--;
            if (out.len) out.len--;
        } else {
            xpv_buf_putc(&out, '/');
            xpv_buf_add(&out, s, len);
        }
        s += len;
    }
    if (!out.len) xpv_buf_putc(&out, '/');
    xpv_buf_putc(&out, '\0');
    xpv_buf_free(&b);
    size_t l;
    return xpv_buf_steal(&out, &l);
}

/* Terminate `b` as a C string (the NUL is not counted in b->len). */
static void cstr(xpv_buf *b) {
    xpv_buf_putc(b, '\0');
    b->len--;
}

/* 1 when `path` is `root` or inside it (both resolved). */
static int path_within(const char *path, const char *root) {
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/') return 1;
    return !strncmp(path, root, n) && (path[n] == '\0' || path[n] == '/');
}

/* mkdir -p of a resolved absolute path; returns 0 or -1. */
static int mkdirs(const char *path) {
    char *p = xpv_xstrdup(path);
    int rc = 0;
    for (char *s = p + 1;; s++) {
        if (*s == '/' || !*s) {
            char c = *s;
            *s = '\0';
            if (mkdir(p, 0755) != 0 && errno != EEXIST) rc = -1;
            *s = c;
            if (!c) break;
        }
    }
    free(p);
    return rc;
}

void xpv_diskcache_path(const xpv_diskcache *dc, const char *sub, const char *key, xpv_buf *out) {
    xpv_buf_printf(out, "%s/%s/%016llx.bin", dc->dir, sub,
                   (unsigned long long)xpv_hash64(key, strlen(key)));
    cstr(out);
}

/* Remove temporary files older than STALE_TMP_S from DIR/sub. */
static void sweep_tmp(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    int dfd = dirfd(d);
    time_t now = time(NULL);
    struct dirent *de;
    while ((de = readdir(d))) {
        struct stat st;
        if (strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) != 0) continue;
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (now - st.st_mtime > STALE_TMP_S) unlinkat(dfd, de->d_name, 0);
    }
    closedir(d);
}

/* ==== Authentication ==================================================== */

static int read_full(int fd, void *buf, size_t n, off_t off);
static int write_all(int fd, const void *buf, size_t n);

/* DIR/secret: read when it exists (exactly SECRET_LEN bytes, a regular
 * file, not a symlink), else made with O_EXCL (two replicas starting at
 * once: the loser reads the winner's).  1 when dc->secret holds it. */
static int load_secret(xpv_diskcache *dc) {
    xpv_buf p;
    xpv_buf_init(&p);
    xpv_buf_printf(&p, "%s/" SECRET_NAME, dc->dir);
    cstr(&p);
    int ok = 0;
    for (int attempt = 0; attempt < 2 && !ok; attempt++) {
        int fd = open(p.data, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd >= 0) {
            struct stat st;
            ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == SECRET_LEN &&
                 read_full(fd, dc->secret, SECRET_LEN, 0) == 0;
            close(fd);
            if (!ok) break;
            continue;
        }
        if (errno != ENOENT) break;
        unsigned char s[SECRET_LEN];
        if (getrandom(s, sizeof s, 0) != (ssize_t)sizeof s) break;
        fd = open(p.data, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 && errno == EEXIST) {
            struct timespec ts = {0, 50 * 1000000}; /* its writer is finishing */
            nanosleep(&ts, NULL);
            continue;
        }
        if (fd < 0) break;
        ok = write_all(fd, s, sizeof s) == 0 && fsync(fd) == 0;
        close(fd);
        if (ok) memcpy(dc->secret, s, sizeof s);
        else unlink(p.data);
    }
    if (!ok)
        fprintf(stderr, "xpview: --cache_dir: cannot read or create %s: the disk cache is "
                "off\n", p.data);
    xpv_buf_free(&p);
    return ok;
}

/* HMAC-SHA256 of the parts under the secret into out; 0 on success. */
static int entry_mac(const xpv_diskcache *dc, const void *const *parts, const size_t *lens,
                     size_t nparts, unsigned char out[MAC_LEN]) {
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           OSSL_PARAM_construct_end()};
    size_t outl = 0;
    int ok = ctx && EVP_MAC_init(ctx, dc->secret, SECRET_LEN, params) == 1;
    for (size_t i = 0; ok && i < nparts; i++)
        ok = EVP_MAC_update(ctx, parts[i], lens[i]) == 1;
    ok = ok && EVP_MAC_final(ctx, out, &outl, MAC_LEN) == 1 && outl == MAC_LEN;
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
    return ok ? 0 : -1;
}

/* ==== Open / free ======================================================= */

xpv_diskcache *xpv_diskcache_open(const char *dir, const char *logdir, uint64_t build_id,
                                  char *msg, size_t msglen) {
    if (!dir || !*dir) {
        snprintf(msg, msglen, "--cache_dir: empty path");
        return NULL;
    }
    char *res = resolve_path(dir);
    if (!res) {
        snprintf(msg, msglen, "--cache_dir %s: cannot resolve the path: %s", dir,
                 strerror(errno));
        return NULL;
    }
    char *root = logdir ? resolve_path(logdir) : NULL;
    if (root && path_within(res, root)) {
        snprintf(msg, msglen, "--cache_dir %s is inside the logdir %s: xpview never writes "
                 "into the logdir; choose a directory outside it", dir, root);
        free(res);
        free(root);
        return NULL;
    }
    free(root);
    xpv_diskcache *dc = xpv_xcalloc(1, sizeof *dc);
    dc->dir = res;
    dc->build_id = build_id;
    pthread_mutex_init(&dc->mu, NULL);
    pthread_cond_init(&dc->idle, NULL);
    mkdirs(dc->dir);            /* failure: reads miss, writes log once */
    /* A path that was missing may have been a dangling symlink: check the
     * directory actually created, too. */
    char *now = realpath(dc->dir, NULL);
    root = now && logdir ? resolve_path(logdir) : NULL;
    int inside = root && path_within(now, root);
    free(now);
    free(root);
    if (inside) {
        snprintf(msg, msglen, "--cache_dir %s resolves into the logdir: xpview never writes "
                 "into the logdir; choose a directory outside it", dir);
        xpv_diskcache_free(dc);
        return NULL;
    }
    dc->has_secret = load_secret(dc);
    xpv_buf sub;
    xpv_buf_init(&sub);
    xpv_buf_printf(&sub, "%s/trace-index", dc->dir);
    cstr(&sub);
    sweep_tmp(sub.data);
    xpv_buf_free(&sub);
    return dc;
}

void xpv_diskcache_flush(xpv_diskcache *dc) {
    if (!dc) return;
    pthread_mutex_lock(&dc->mu);
    while (dc->pending) pthread_cond_wait(&dc->idle, &dc->mu);
    pthread_mutex_unlock(&dc->mu);
}

void xpv_diskcache_free(xpv_diskcache *dc) {
    if (!dc) return;
    xpv_diskcache_flush(dc);
    pthread_mutex_destroy(&dc->mu);
    pthread_cond_destroy(&dc->idle);
    free(dc->dir);
    free(dc);
}

const char *xpv_diskcache_dir(const xpv_diskcache *dc) { return dc->dir; }

void xpv_diskcache_get_stats(xpv_diskcache *dc, xpv_diskcache_stats *st) {
    pthread_mutex_lock(&dc->mu);
    *st = dc->st;
    pthread_mutex_unlock(&dc->mu);
}

static void count(xpv_diskcache *dc, uint64_t *field) {
    pthread_mutex_lock(&dc->mu);
    (*field)++;
    pthread_mutex_unlock(&dc->mu);
}

/* ==== Read ============================================================== */

static int read_full(int fd, void *buf, size_t n, off_t off) {
    char *p = buf;
    while (n) {
        ssize_t r = pread(fd, p, n, off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r;
        off += r;
        n -= (size_t)r;
    }
    return 0;
}

void *xpv_diskcache_get(xpv_diskcache *dc, const char *sub, const char *key, size_t max_len,
                        size_t *len) {
    if (!dc->has_secret) {
        count(dc, &dc->st.misses);
        return NULL;
    }
    xpv_buf path;
    xpv_buf_init(&path);
    xpv_diskcache_path(dc, sub, key, &path);
    /* O_NONBLOCK: a FIFO put in place of an entry must not block the
     * request (it is refused below as not a regular file). */
    int fd = open(path.data, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    xpv_buf_free(&path);
    if (fd < 0) {
        count(dc, &dc->st.misses);
        return NULL;
    }
    size_t klen = strlen(key), kpad = (klen + 7) & ~(size_t)7;
    struct stat st;
    unsigned char head[ENV_HEAD];
    char *kbuf = NULL;
    void *data = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size < ENV_HEAD + kpad || read_full(fd, head, ENV_HEAD, 0) != 0)
        goto bad;
    uint32_t hk, reserved;
    uint64_t plen;
    memcpy(&hk, head + 8, 4);
    memcpy(&reserved, head + 12, 4);
    memcpy(&plen, head + 16, 8);
    if (memcmp(head, ENV_MAGIC, 8) != 0 || hk != klen || reserved || plen > max_len ||
        (uint64_t)st.st_size != ENV_HEAD + kpad + plen + MAC_LEN)
        goto bad;
    kbuf = xpv_xmalloc(kpad ? kpad : 1);
    if (read_full(fd, kbuf, kpad, ENV_HEAD) != 0 || memcmp(kbuf, key, klen) != 0) goto bad;
    for (size_t i = klen; i < kpad; i++)
        if (kbuf[i]) goto bad;
    data = xpv_xmalloc(plen ? plen : 1);
    if (read_full(fd, data, plen, (off_t)(ENV_HEAD + kpad)) != 0) goto bad;
    unsigned char want[MAC_LEN], got[MAC_LEN];
    const void *parts[3] = {head, kbuf, data};
    size_t lens[3] = {ENV_HEAD, kpad, plen};
    if (read_full(fd, got, MAC_LEN, (off_t)(ENV_HEAD + kpad + plen)) != 0 ||
        entry_mac(dc, parts, lens, 3, want) != 0 || CRYPTO_memcmp(want, got, MAC_LEN) != 0)
        goto bad;
    free(kbuf);
    close(fd);
    *len = plen;
    return data;
bad:
    free(kbuf);
    free(data);
    close(fd);
    count(dc, &dc->st.rejected);
    return NULL;
}

/* ==== Write ============================================================= */

/* 64 random bits (getrandom; the clock and a counter if that fails). */
static uint64_t random_u64(void) {
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) == (ssize_t)sizeof v) return v;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    v = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return xpv_hash64(&v, sizeof v) ^ (uint64_t)(uintptr_t)&v;
}

static int write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = EIO;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int xpv_diskcache_write(xpv_diskcache *dc, const char *sub, const char *key, const void *data,
                        size_t len) {
    xpv_buf dir, final, tmp;
    xpv_buf_init(&dir);
    xpv_buf_init(&final);
    xpv_buf_init(&tmp);
    int fd = -1, ret = -1, e = 0, created = 0;
    const char *what = "write";
    if (!dc->has_secret) return -1;
    xpv_buf_printf(&dir, "%s/%s", dc->dir, sub);
    cstr(&dir);
    xpv_diskcache_path(dc, sub, key, &final);
    const char *base = strrchr(final.data, '/') + 1;
    if (mkdir(dir.data, 0755) != 0 && errno != EEXIST) {
        what = "mkdir";
        goto fail;
    }
    /* pid + counter are unique in this process; replicas in containers
     * often share a pid (1), hence the random part, and a retry. */
    for (int attempt = 0; fd < 0 && attempt < 4; attempt++) {
        pthread_mutex_lock(&dc->mu);
        uint64_t n = ++dc->counter;
        pthread_mutex_unlock(&dc->mu);
        xpv_buf_reset(&tmp);
        xpv_buf_printf(&tmp, "%s/" TMP_PREFIX "%ld.%llu.%016llx.%s", dir.data, (long)getpid(),
                       (unsigned long long)n, (unsigned long long)random_u64(), base);
        cstr(&tmp);
        fd = open(tmp.data, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        what = "create";
        goto fail;
    }
    created = 1;                /* from here on the temporary file is ours */
    size_t klen = strlen(key), kpad = (klen + 7) & ~(size_t)7;
    unsigned char head[ENV_HEAD];
    uint32_t k32 = (uint32_t)klen, zero = 0;
    uint64_t plen = len;
    memcpy(head, ENV_MAGIC, 8);
    memcpy(head + 8, &k32, 4);
    memcpy(head + 12, &zero, 4);
    memcpy(head + 16, &plen, 8);
    static const char pad[8];
    unsigned char kp[8] = {0}, mac[MAC_LEN];
    memcpy(kp, key + (klen & ~(size_t)7), klen & 7);
    /* the MAC covers the bytes as written: head, key + padding, payload */
    const void *parts[4] = {head, key, kp, data};
    size_t lens[4] = {ENV_HEAD, klen & ~(size_t)7, klen & 7 ? 8 : 0, len};
    what = "authenticate";
    if (entry_mac(dc, parts, lens, 4, mac) != 0) goto fail;
    what = "write";
    if (write_all(fd, head, ENV_HEAD) != 0 || write_all(fd, key, klen) != 0 ||
        write_all(fd, pad, kpad - klen) != 0 || write_all(fd, data, len) != 0 ||
        write_all(fd, mac, MAC_LEN) != 0)
        goto fail;
    what = "fsync";
    if (fsync(fd) != 0) goto fail;
    what = "close";
    int cr = close(fd);
    fd = -1;
    if (cr != 0) goto fail;
    what = "rename";
    if (rename(tmp.data, final.data) != 0) goto fail;
    /* Make the rename durable too (best effort). */
    int dfd = open(dir.data, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    count(dc, &dc->st.writes);
    ret = 0;
    goto done;
fail:
    e = errno;
    if (fd >= 0) close(fd);
    if (created) unlink(tmp.data);      /* never another writer's file */
    pthread_mutex_lock(&dc->mu);
    dc->st.write_errors++;
    int first = !dc->logged;
    dc->logged = 1;
    pthread_mutex_unlock(&dc->mu);
    if (first)
        fprintf(stderr, "xpview: --cache_dir: cannot %s %s: %s (the cache is not written; "
                "further errors are not logged)\n", what,
                !strcmp(what, "mkdir") ? dir.data : tmp.data, strerror(e));
    errno = e;
done:
    xpv_buf_free(&dir);
    xpv_buf_free(&final);
    xpv_buf_free(&tmp);
    return ret;
}

struct put_job {
    xpv_diskcache *dc;
    char *sub, *key;
    void *data;
    size_t len;
};

static void *put_thread(void *arg) {
    struct put_job *j = arg;
    xpv_diskcache *dc = j->dc;
    size_t len = j->len;
    xpv_diskcache_write(dc, j->sub, j->key, j->data, j->len);
    free(j->sub);
    free(j->key);
    free(j->data);
    free(j);
    pthread_mutex_lock(&dc->mu);
    dc->pending_bytes -= len;
    if (--dc->pending == 0) pthread_cond_broadcast(&dc->idle);
    pthread_mutex_unlock(&dc->mu);
    return NULL;
}

void xpv_diskcache_put(xpv_diskcache *dc, const char *sub, const char *key, void *data,
                       size_t len) {
    /* Images wait in memory until written: bound the bytes (one write is
     * always allowed, however big). */
    pthread_mutex_lock(&dc->mu);
    int full = dc->pending && dc->pending_bytes + len > MAX_PENDING_BYTES;
    if (full) {
        dc->st.skipped++;
    } else {
        dc->pending++;
        dc->pending_bytes += len;
    }
    pthread_mutex_unlock(&dc->mu);
    if (full) {
        free(data);
        return;
    }
    struct put_job *j = xpv_xmalloc(sizeof *j);
    *j = (struct put_job){dc, xpv_xstrdup(sub), xpv_xstrdup(key), data, len};
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &at, put_thread, j) != 0) {
        put_thread(j);      /* no thread: write now */
    }
    pthread_attr_destroy(&at);
}

/* ==== Derived values ==================================================== */

static void trace_index_save(const xpv_hostset *hs, const void *d, xpv_buf *out) {
    xpv_trace_index_save(d, hs, out);
}
static void *trace_index_load(const xpv_hostset *hs, const void *data, size_t len) {
    return xpv_trace_index_load(hs, data, len);
}

/* The derived kinds that are persisted: directory, image format, codec. */
static const struct persisted {
    const xpv_derived_kind *kind;
    const char *sub;
    unsigned format;
    void (*save)(const xpv_hostset *hs, const void *d, xpv_buf *out);
    void *(*load)(const xpv_hostset *hs, const void *data, size_t len);
} persisted[] = {
    {&xpv_derived_trace_index, "trace-index", XPV_TRACE_INDEX_FORMAT, trace_index_save,
     trace_index_load},
};

static const struct persisted *find_persisted(const xpv_derived_kind *kind) {
    for (size_t i = 0; i < sizeof persisted / sizeof persisted[0]; i++)
        if (persisted[i].kind == kind) return &persisted[i];
    return NULL;
}

int xpv_diskcache_persists(const xpv_derived_kind *kind) { return find_persisted(kind) != NULL; }

/* Key of a derived value: what makes an image stale.  Paths are relative
 * to the logdir, so replicas mounting it at different places agree. */
static void derived_key(const xpv_diskcache *dc, const struct persisted *p,
                        const xpv_host *const *hosts, size_t n, xpv_buf *key) {
    xpv_buf_printf(key, "%s\x1f" "format %u\x1fxpview %s\x1f" "build %016llx\x1f", p->kind->name,
                   p->format, XPV_VERSION, (unsigned long long)dc->build_id);
    for (size_t i = 0; i < n; i++)
        xpv_buf_printf(key, "%s\x1f%llu\x1f%lld\x1e", hosts[i]->rel,
                       (unsigned long long)hosts[i]->size, (long long)hosts[i]->mtime_ns);
    xpv_buf_putc(key, '\0');
}

void *xpv_diskcache_load_derived(xpv_diskcache *dc, const xpv_derived_kind *kind,
                                 const xpv_host *const *hosts, const xpv_hostset *hs) {
    const struct persisted *p = find_persisted(kind);
    if (!p) return NULL;
    /* An image is ~5 bytes per event, events >= ~10 bytes on the wire:
     * anything far bigger than the files is not an image of them. */
    uint64_t max = 64u << 20;
    for (size_t i = 0; i < hs->n; i++) max += 2 * hosts[i]->size;
    xpv_buf key;
    xpv_buf_init(&key);
    derived_key(dc, p, hosts, hs->n, &key);
    size_t len = 0;
    void *bytes = xpv_diskcache_get(dc, p->sub, key.data, max > SIZE_MAX ? SIZE_MAX : max, &len);
    xpv_buf_free(&key);
    if (!bytes) return NULL;
    void *d = p->load(hs, bytes, len);
    free(bytes);
    count(dc, d ? &dc->st.hits : &dc->st.rejected);
    return d;
}

void xpv_diskcache_save_derived(xpv_diskcache *dc, const xpv_derived_kind *kind,
                                const xpv_host *const *hosts, const xpv_hostset *hs,
                                const void *d) {
    const struct persisted *p = find_persisted(kind);
    if (!p) return;
    xpv_buf key, img;
    xpv_buf_init(&key);
    xpv_buf_init(&img);
    derived_key(dc, p, hosts, hs->n, &key);
    p->save(hs, d, &img);
    size_t len;
    void *bytes = xpv_buf_steal(&img, &len);
    xpv_diskcache_put(dc, p->sub, key.data, bytes, len);
    xpv_buf_free(&key);
}
