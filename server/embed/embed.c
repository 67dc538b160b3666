/*
 * embed.c - build-time generator of the embedded web/ tree.
 *
 * Usage: xpv_embed OUT.c WEB_DIR
 *
 * Walks WEB_DIR recursively (hidden files and directories skipped, entries
 * sorted so the output is deterministic) and writes a C file defining the
 * table declared in server/assets.h: for every file its path relative to
 * WEB_DIR, its MIME type, its bytes, a gzip (level 9) copy for text types
 * when that is smaller, and a content hash used as the ETag.  The table is
 * sorted by path so xpv_asset_find() can binary-search it.
 *
 * Versioned URLs: a hash of the whole tree (every path and its bytes) is
 * emitted as xpv_assets_version, and in index.html every src="X" / href="X"
 * naming an embedded file is rewritten to "v/<version>/X".  The server
 * serves the tree under that prefix as immutable; relative module imports
 * (static and dynamic) resolve inside the same prefix, so no JS is
 * rewritten.  web/v/ is therefore reserved.
 *
 * This program runs on the build machine only; it is not linked into the
 * server.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define MAX_FILES 4096
#define MAX_DEPTH 16

struct file {
    char *rel;      /* path relative to WEB_DIR, '/'-separated */
    char *abs;
};

static struct file files[MAX_FILES];
static size_t nfiles;

static void die(const char *what, const char *arg) {
    fprintf(stderr, "xpv_embed: %s %s: %s\n", what, arg ? arg : "",
            errno ? strerror(errno) : "");
    exit(1);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) die("out of memory", NULL);
    return p;
}

static char *join(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    char *r = xmalloc(la + lb + 2);
    memcpy(r, a, la);
    r[la] = '/';
    memcpy(r + la + 1, b, lb + 1);
    return r;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Collect every regular file below `abs` (whose path relative to the web
 * root is `rel`, "" for the root). */
static void walk(const char *abs, const char *rel, int depth) {
    if (depth > MAX_DEPTH) {
        fprintf(stderr, "xpv_embed: %s: too deep\n", abs);
        exit(1);
    }
    DIR *d = opendir(abs);
    if (!d) die("cannot open directory", abs);
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;  /* ., .., hidden files */
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            names = realloc(names, cap * sizeof *names);
            if (!names) die("out of memory", NULL);
        }
        names[n] = xmalloc(strlen(de->d_name) + 1);
        strcpy(names[n], de->d_name);
        n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        char *a = join(abs, names[i]);
        char *r;
        if (rel[0]) {
            r = join(rel, names[i]);
        } else {
            r = xmalloc(strlen(names[i]) + 1);
            strcpy(r, names[i]);
        }
        struct stat st;
        if (stat(a, &st) != 0) die("cannot stat", a);
        if (S_ISREG(st.st_mode)) {
            if (nfiles == MAX_FILES) die("too many files in", abs);
            files[nfiles].rel = r;   /* both kept until main() frees them */
            files[nfiles].abs = a;
            nfiles++;
        } else {
            if (S_ISDIR(st.st_mode)) walk(a, r, depth + 1);
            free(a);
            free(r);
        }
        free(names[i]);
    }
    free(names);
}

static const char *mime_of(const char *path, int *text) {
    static const struct {
        const char *ext, *mime;
        int text;
    } types[] = {
        {".html", "text/html; charset=utf-8", 1},
        {".js", "text/javascript; charset=utf-8", 1},
        {".mjs", "text/javascript; charset=utf-8", 1},
        {".css", "text/css; charset=utf-8", 1},
        {".json", "application/json", 1},
        {".svg", "image/svg+xml", 1},
        {".txt", "text/plain; charset=utf-8", 1},
        {".md", "text/plain; charset=utf-8", 1},
        {".map", "application/json", 1},
        {".png", "image/png", 0},
        {".ico", "image/x-icon", 1},
        {".woff2", "font/woff2", 0},
        {".wasm", "application/wasm", 1},
    };
    const char *dot = strrchr(path, '.');
    if (dot)
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
            if (!strcmp(dot, types[i].ext)) {
                *text = types[i].text;
                return types[i].mime;
            }
    *text = 0;
    return "application/octet-stream";
}

static unsigned char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) die("cannot open", path);
    size_t cap = 65536, n = 0;
    unsigned char *b = xmalloc(cap);
    for (;;) {
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (n < cap) break;
        cap *= 2;
        b = realloc(b, cap);
        if (!b) die("out of memory", NULL);
    }
    if (ferror(f)) die("cannot read", path);
    fclose(f);
    *len = n;
    return b;
}

/* gzip `in` at level 9 with a fixed mtime so the output is reproducible. */
static unsigned char *gzip9(const unsigned char *in, size_t len, size_t *out_len) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK)
        die("deflateInit2 failed", NULL);
    gz_header h;
    memset(&h, 0, sizeof h);
    h.os = 3;
    deflateSetHeader(&z, &h);
    size_t cap = deflateBound(&z, (uLong)len) + 32;
    unsigned char *out = xmalloc(cap);
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) die("deflate failed", NULL);
    *out_len = z.total_out;
    deflateEnd(&z);
    return out;
}

/* 64-bit FNV-1a: a content hash for ETags (not a security boundary). */
static uint64_t fnv1a(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

#define VERSION_LEN 12    /* hex digits of the tree hash in URLs */

/* The tree hash: FNV-1a over every file's path, a NUL and its bytes, in
 * path order (so renames count, and the result is reproducible). */
static void tree_version(char out[VERSION_LEN + 1]) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < nfiles; i++) {
        size_t len;
        unsigned char *data = read_all(files[i].abs, &len);
        uint64_t fh = fnv1a(data, len), ph = fnv1a((const unsigned char *)files[i].rel,
                                                   strlen(files[i].rel) + 1);
        unsigned char mix[16];
        memcpy(mix, &ph, 8);
        memcpy(mix + 8, &fh, 8);
        for (size_t k = 0; k < sizeof mix; k++) {
            h ^= mix[k];
            h *= 1099511628211ULL;
        }
        free(data);
    }
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
    memcpy(out, hex, VERSION_LEN);
    out[VERSION_LEN] = '\0';
}

static int is_embedded(const char *p, size_t n) {
    for (size_t i = 0; i < nfiles; i++)
        if (strlen(files[i].rel) == n && !memcmp(files[i].rel, p, n)) return 1;
    return 0;
}

/* index.html with every src="X" / href="X" (X an embedded file's path)
 * turned into "v/<version>/X".  Returns a new buffer, length in *out_len. */
static unsigned char *rewrite_html(const unsigned char *in, size_t len,
                                   const char *version, size_t *out_len) {
    static const char *const attrs[] = {"src=\"", "href=\""};
    /* Each rewrite adds VERSION_LEN + 3 bytes to an attribute of at least
     * 8 (' src="x"'): the output is under 3x the input. */
    size_t cap = len * 3 + 64, n = 0, i = 0;
    unsigned char *out = xmalloc(cap);
    while (i < len) {
        size_t alen = 0;
        for (size_t a = 0; a < 2 && !alen; a++) {
            size_t l = strlen(attrs[a]);
            if (i + l <= len && !memcmp(in + i, attrs[a], l) &&
                (i == 0 || in[i - 1] == ' ' || in[i - 1] == '\n' || in[i - 1] == '\t'))
                alen = l;
        }
        if (alen) {
            const unsigned char *v = in + i + alen;
            const unsigned char *q = memchr(v, '"', len - i - alen);
            if (q && is_embedded((const char *)v, (size_t)(q - v))) {
                if (n + alen + VERSION_LEN + 3 > cap) die("internal error", NULL);
                memcpy(out + n, in + i, alen);
                n += alen;
                n += (size_t)snprintf((char *)out + n, cap - n, "v/%s/", version);
                i += alen;
                continue;
            }
        }
        if (n + 1 > cap) die("internal error", NULL);
        out[n++] = in[i++];
    }
    *out_len = n;
    return out;
}

static void emit_bytes(FILE *o, const char *name, const unsigned char *p, size_t n) {
    fprintf(o, "static const unsigned char %s[%zu] = {", name, n ? n : 1);
    if (!n) fputs("0", o);
    for (size_t i = 0; i < n; i++) {
        if (i % 20 == 0) fputs("\n ", o);
        fprintf(o, "%u,", p[i]);
    }
    fputs("\n};\n", o);
}

static void emit_cstr(FILE *o, const char *s) {
    fputc('"', o);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(o, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f || c == '?') fprintf(o, "\\%03o", c);
        else fputc(c, o);
    }
    fputc('"', o);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: xpv_embed OUT.c WEB_DIR\n");
        return 2;
    }
    struct stat st;
    if (stat(argv[2], &st) == 0 && S_ISDIR(st.st_mode))
        walk(argv[2], "", 0);
    /* files[] is already sorted by path: directories are walked in sorted
     * order and '/' sorts below every printable name character except a few
     * punctuation marks; sort again to be exact. */
    for (size_t i = 1; i < nfiles; i++)
        for (size_t j = i; j > 0 && strcmp(files[j - 1].rel, files[j].rel) > 0; j--) {
            struct file t = files[j];
            files[j] = files[j - 1];
            files[j - 1] = t;
        }

    for (size_t i = 0; i < nfiles; i++)
        if (!strncmp(files[i].rel, "v/", 2)) die("web/v/ is reserved:", files[i].rel);
    char version[VERSION_LEN + 1];
    tree_version(version);

    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    FILE *o = fopen(tmp, "w");
    if (!o) die("cannot create", tmp);
    fputs("/* Generated by xpv_embed from web/.  Do not edit. */\n"
          "#include \"assets.h\"\n\n", o);
    for (size_t i = 0; i < nfiles; i++) {
        size_t len, gzlen = 0;
        unsigned char *data = read_all(files[i].abs, &len);
        if (!strcmp(files[i].rel, "index.html")) {
            unsigned char *html = rewrite_html(data, len, version, &len);
            free(data);
            data = html;
        }
        int text;
        mime_of(files[i].rel, &text);
        char name[32];
        snprintf(name, sizeof name, "d%zu", i);
        emit_bytes(o, name, data, len);
        if (text && len > 0) {
            unsigned char *gz = gzip9(data, len, &gzlen);
            if (gzlen < len) {
                snprintf(name, sizeof name, "z%zu", i);
                emit_bytes(o, name, gz, gzlen);
            } else {
                gzlen = 0;
            }
            free(gz);
        }
        /* Stash the hash and gz length in the file record for the table. */
        char *meta = xmalloc(64);
        snprintf(meta, 64, "%016llx %zu %zu",
                 (unsigned long long)fnv1a(data, len), len, gzlen);
        free(files[i].abs);
        files[i].abs = meta;
        free(data);
    }
    fprintf(o, "\nconst xpv_asset xpv_assets[] = {\n");
    for (size_t i = 0; i < nfiles; i++) {
        char hash[17];
        size_t len, gzlen;
        if (sscanf(files[i].abs, "%16s %zu %zu", hash, &len, &gzlen) != 3)
            die("internal error", NULL);
        int text;
        const char *mime = mime_of(files[i].rel, &text);
        fputs("    {", o);
        emit_cstr(o, files[i].rel);
        fputs(", ", o);
        emit_cstr(o, mime);
        fprintf(o, ", d%zu, %zu, ", i, len);
        if (gzlen) fprintf(o, "z%zu, %zu, ", i, gzlen);
        else fputs("NULL, 0, ", o);
        fprintf(o, "\"\\\"%s\\\"\"},\n", hash);
    }
    fputs("    {NULL, NULL, NULL, 0, NULL, 0, NULL}\n};\n", o);
    fprintf(o, "const size_t xpv_nassets = %zu;\n", nfiles);
    fprintf(o, "const char xpv_assets_version[] = \"%s\";\n", version);
    for (size_t i = 0; i < nfiles; i++) {
        free(files[i].rel);
        free(files[i].abs);
    }
    if (fclose(o) != 0) die("cannot write", tmp);
    if (rename(tmp, argv[1]) != 0) die("cannot rename", tmp);
    return 0;
}
