/*
 * rs_pool.h - a small persistent pthread pool for data-parallel loops.
 *
 * rs_pool_run(p, fn, ctx, n) calls fn(ctx, item, ith) once for every item
 * in [0, n), spread over the calling thread (ith 0) and the pool's workers
 * (ith 1 .. nth − 1, nth = rs_pool_size(p)), and returns when all items
 * are done.  Items are claimed one at a time from a shared counter, so a
 * worker that is late (descheduled on a busy machine, still waking up)
 * just takes fewer items instead of stalling the run, and uneven items
 * balance themselves.  ITH lets FN use per-thread scratch.  A run costs
 * one atomic claim per item and no allocation; make items worth at least
 * a microsecond.  Workers spin briefly after a run (a decode step issues
 * dozens of runs back to back, and a futex wake-up costs about as much as
 * a small matmul), then sleep on a condition variable.
 *
 * Lifecycle: rs_pool_new() starts nth − 1 threads; rs_pool_free() stops and
 * joins them.  A pool serves one caller at a time: rs_pool_run() is not
 * reentrant and must not be called concurrently on the same pool (give
 * each engine its own).  A NULL pool runs every item inline with ith 0.
 */
#ifndef RS_POOL_H
#define RS_POOL_H

#include <stdint.h>

#include "rs_err.h"

#define RS_POOL_MAX_THREADS	256
#define RS_POOL_MAX_ITEMS	0x7fffffff

struct rs_pool;

typedef void	(*rs_pool_fn)(void *ctx, int64_t item, int ith);

/*
 * A pool of N_THREADS threads including the caller (1 <= N_THREADS <=
 * RS_POOL_MAX_THREADS; 1 starts no thread).  Fails with RS_ERR_INVALID_ARG
 * (count), RS_ERR_NOMEM, or RS_ERR_IO when pthread_create fails.
 */
enum rs_status	 rs_pool_new(struct rs_pool **out, int n_threads,
		    struct rs_err *err);

/* Stop and join the workers; NULL is fine. */
void		 rs_pool_free(struct rs_pool *p);

/* Threads that may take part in a run (1 for a NULL pool). */
int		 rs_pool_size(const struct rs_pool *p);

/*
 * FN(CTX, item, ith) for every item in [0, N_ITEMS) (N_ITEMS <=
 * RS_POOL_MAX_ITEMS); returns when all are done.
 */
void		 rs_pool_run(struct rs_pool *p, rs_pool_fn fn, void *ctx,
		    int64_t n_items);

/* Online CPUs, at least 1. */
int		 rs_pool_ncpu(void);

#endif /* RS_POOL_H */
