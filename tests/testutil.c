/*
 * testutil.c - helpers shared by the cmocka tests.
 */
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *tu_shared_dir(void) {
    static char path[4096];
    const char *env = getenv("XPV_SHARED");
    if (!env) env = "../shared";
    snprintf(path, sizeof path, "%s/testdata/real", env);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return NULL;
    snprintf(path, sizeof path, "%s", env);
    return path;
}

void *tu_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        return NULL;
    }
    buf[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void collect(const char *dir, const char *suffix, char ***list,
                    size_t *n, size_t *cap) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    size_t sl = strlen(suffix);
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(path, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            collect(path, suffix, list, n, cap);
        } else {
            size_t l = strlen(de->d_name);
            if (l >= sl && !strcmp(de->d_name + l - sl, suffix)) {
                if (*n + 2 > *cap) {
                    *cap = *cap ? *cap * 2 : 16;
                    *list = realloc(*list, *cap * sizeof(char *));
                }
                (*list)[(*n)++] = strdup(path);
                (*list)[*n] = NULL;
            }
        }
    }
    closedir(d);
}

char **tu_find_files(const char *dir, const char *suffix) {
    char **list = NULL;
    size_t n = 0, cap = 0;
    collect(dir, suffix, &list, &n, &cap);
    if (!list) list = calloc(1, sizeof(char *));
    return list;
}

void tu_free_list(char **list) {
    for (char **p = list; p && *p; p++) free(*p);
    free(list);
}

char *tu_mkdtemp(void) {
    char tmpl[] = "/tmp/xpvtest.XXXXXX";
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

void tu_rmrf(const char *path) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) fprintf(stderr, "rm -rf %s failed\n", path);
}
