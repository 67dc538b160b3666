/*
 * testutil.h - helpers shared by the cmocka tests.
 */
#ifndef XPV_TESTUTIL_H
#define XPV_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

/* ../shared beside the checkout ($XPV_SHARED), or NULL when absent. */
const char *tu_shared_dir(void);
/* Read a whole file into malloc'ed memory; NULL on error. */
void *tu_read_file(const char *path, size_t *len);
/* Recursively collect files under `dir` whose name ends with `suffix`.
 * Returns a NULL-terminated malloc'ed array of malloc'ed paths. */
char **tu_find_files(const char *dir, const char *suffix);
void tu_free_list(char **list);
/* A fresh temporary directory (removed by tu_rmrf). */
char *tu_mkdtemp(void);
void tu_rmrf(const char *path);
/* Print a clear skip message and skip the current cmocka test. */
#define TU_SKIP_NO_SHARED()                                                   \
    do {                                                                      \
        if (!tu_shared_dir()) {                                               \
            print_message("SKIP: ../shared/testdata not present; real-file " \
                          "checks skipped\n");                               \
            skip();                                                           \
        }                                                                     \
    } while (0)

#endif
