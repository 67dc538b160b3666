/*
 * par.h - two halves of a computation on two threads (the machine this
 * targets has two cores), with xpv_oom_run()'s rules across them: an
 * allocation failure in either half unwinds the caller, but only after
 * both halves have stopped, so neither touches the other's stack frame
 * once it is gone.
 */
#ifndef XPV_PAR_H
#define XPV_PAR_H

/* Run fa(a) on a second thread (on this one, after fb, when no thread can
 * be started) and fb(b) on this one; return when both are done.  When an
 * allocation failed in either, the failure is raised here, in the caller's
 * xpv_oom_run() (or aborts the process without one). */
void xpv_par_run(void (*fa)(void *), void *a, void (*fb)(void *), void *b);

/* xpv_par_run() when `parallel`; otherwise fb(b) then fa(a) on this thread,
 * with no thread started (starting and joining one costs more than a
 * small profile's whole pass, most of all under the sanitizers).  An
 * allocation failure then unwinds the caller directly, fa not run: the
 * same outcome as xpv_par_run() when no thread can be started. */
void xpv_par_run_if(int parallel, void (*fa)(void *), void *a, void (*fb)(void *), void *b);

/* fn(args[i]) for every i < n, on this thread and up to 63 others (one
 * each when n <= 64; past that, each thread takes the next job left; all
 * on this thread when no thread can be started); returns when all are
 * done, raising an allocation failure of any as xpv_par_run does (the
 * thread whose job failed takes no more; the others go on). */
void xpv_par_many(void (*fn)(void *), void *const *args, int n);

#endif
