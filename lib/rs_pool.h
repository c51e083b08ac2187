/*
 * rs_pool.h - a small persistent pthread pool for data-parallel loops.
 *
 * rs_pool_run(p, fn, ctx) calls fn(ctx, ith, nth) once for every ith in
 * [0, nth), where nth = rs_pool_size(p): ith 0 on the calling thread, the
 * others on the pool's workers, and returns when all have returned.  FN
 * splits its own work (rs_pool_range() gives ith's share of [0, n)), so a
 * run costs one wake-up per worker and no allocation.  Workers spin briefly
 * after a run (a decode step issues dozens of runs back to back, and a
 * futex wake-up costs more than the work of a small matmul), then sleep on
 * a condition variable.
 *
 * Lifecycle: rs_pool_new() starts nth - 1 threads; rs_pool_free() stops and
 * joins them.  A pool serves one caller at a time: rs_pool_run() is not
 * reentrant and must not be called concurrently on the same pool (give
 * each engine its own).  A NULL pool runs FN inline with nth = 1.
 */
#ifndef RS_POOL_H
#define RS_POOL_H

#include <stdint.h>

#include "rs_err.h"

#define RS_POOL_MAX_THREADS	256

struct rs_pool;

typedef void	(*rs_pool_fn)(void *ctx, int ith, int nth);

/*
 * A pool of N_THREADS threads including the caller (1 <= N_THREADS <=
 * RS_POOL_MAX_THREADS; 1 starts no thread).  Fails with RS_ERR_INVALID_ARG
 * (count), RS_ERR_NOMEM, or RS_ERR_IO when pthread_create fails.
 */
enum rs_status	 rs_pool_new(struct rs_pool **out, int n_threads,
		    struct rs_err *err);

/* Stop and join the workers; NULL is fine. */
void		 rs_pool_free(struct rs_pool *p);

/* Threads taking part in a run (1 for a NULL pool). */
int		 rs_pool_size(const struct rs_pool *p);

/* Run FN(CTX, ith, nth) on every thread; returns when all are done. */
void		 rs_pool_run(struct rs_pool *p, rs_pool_fn fn, void *ctx);

/*
 * Share ITH of [0, N) split into NTH contiguous ranges whose boundaries are
 * multiples of ALIGN (the last range takes the remainder): [*LO, *HI).
 */
void		 rs_pool_range(int64_t n, int64_t align, int ith, int nth,
		    int64_t *lo, int64_t *hi);

/* Online CPUs, at least 1. */
int		 rs_pool_ncpu(void);

#endif /* RS_POOL_H */
