/*
 * rs_pool.c - persistent worker threads for rs_pool_run() (see rs_pool.h).
 *
 * A run publishes (fn, ctx), sets `left` to the worker count and bumps the
 * generation counter `gen`.  A worker waits for gen to change (spinning
 * SPIN_ITERS loads, then on `wake` under `mu`), runs its share and
 * decrements `left`; the one that reaches zero signals `done`.  Both
 * condition waits re-check their predicate under `mu`, and the signalling
 * side changes the predicate under `mu`, so no wake-up is lost.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rs_pool.h"

/*
 * About 50-200 us of polling: long enough to bridge the gap between two
 * runs of one forward pass, short enough that an idle engine sleeps.
 */
#define SPIN_ITERS	(1 << 15)

struct worker {
	struct rs_pool	*pool;
	int		 ith;
	pthread_t	 tid;
};

struct rs_pool {
	int		 n;		/* threads per run, caller included */
	int		 started;	/* workers created */
	struct worker	*workers;	/* n - 1 */
	pthread_mutex_t	 mu;
	pthread_cond_t	 wake;		/* gen changed */
	pthread_cond_t	 done;		/* left reached 0 */
	atomic_uint	 gen;
	atomic_int	 left;
	atomic_int	 stop;
	rs_pool_fn	 fn;		/* written before gen is bumped */
	void		*ctx;
};

static void	*worker_main(void *);

static inline void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

int
rs_pool_ncpu(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return (n < 1 ? 1 : n > RS_POOL_MAX_THREADS ? RS_POOL_MAX_THREADS :
	    (int)n);
}

enum rs_status
rs_pool_new(struct rs_pool **out, int n_threads, struct rs_err *err)
{
	struct rs_pool	*p;

	if (n_threads < 1 || n_threads > RS_POOL_MAX_THREADS)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "thread count %d outside [1, %d]", n_threads,
		    RS_POOL_MAX_THREADS));
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	p->n = n_threads;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->wake, NULL);
	pthread_cond_init(&p->done, NULL);
	atomic_init(&p->gen, 0);
	atomic_init(&p->left, 0);
	atomic_init(&p->stop, 0);
	if (n_threads > 1 &&
	    (p->workers = calloc((size_t)n_threads - 1,
	    sizeof(*p->workers))) == NULL) {
		rs_pool_free(p);
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	}
	for (int i = 0; i < n_threads - 1; i++) {
		struct worker *w = &p->workers[i];
		int rc;

		w->pool = p;
		w->ith = i + 1;
		if ((rc = pthread_create(&w->tid, NULL, worker_main, w)) != 0) {
			rs_pool_free(p);
			return (rs_errf(err, RS_ERR_IO,
			    "cannot start worker thread %d: %s", i + 1,
			    strerror(rc)));
		}
		p->started++;
	}
	*out = p;
	return (RS_OK);
}

void
rs_pool_free(struct rs_pool *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	atomic_store(&p->stop, 1);
	atomic_fetch_add(&p->gen, 1);
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->started; i++)
		pthread_join(p->workers[i].tid, NULL);
	pthread_cond_destroy(&p->done);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->mu);
	free(p->workers);
	free(p);
}

int
rs_pool_size(const struct rs_pool *p)
{
	return (p == NULL ? 1 : p->n);
}

/* Wait until gen differs from SEEN; returns the new value. */
static unsigned
wait_gen(struct rs_pool *p, unsigned seen)
{
	unsigned g;

	for (int i = 0; i < SPIN_ITERS; i++) {
		if ((g = atomic_load_explicit(&p->gen,
		    memory_order_acquire)) != seen)
			return (g);
		cpu_relax();
	}
	pthread_mutex_lock(&p->mu);
	while ((g = atomic_load(&p->gen)) == seen)
		pthread_cond_wait(&p->wake, &p->mu);
	pthread_mutex_unlock(&p->mu);
	return (g);
}

static void *
worker_main(void *arg)
{
	struct worker	*w = arg;
	struct rs_pool	*p = w->pool;
	unsigned	 seen = 0;

	for (;;) {
		seen = wait_gen(p, seen);
		if (atomic_load(&p->stop))
			return (NULL);
		p->fn(p->ctx, w->ith, p->n);
		if (atomic_fetch_sub_explicit(&p->left, 1,
		    memory_order_acq_rel) == 1) {
			pthread_mutex_lock(&p->mu);
			pthread_cond_signal(&p->done);
			pthread_mutex_unlock(&p->mu);
		}
	}
}

void
rs_pool_run(struct rs_pool *p, rs_pool_fn fn, void *ctx)
{
	int i;

	if (p == NULL || p->n == 1) {
		fn(ctx, 0, 1);
		return;
	}
	p->fn = fn;
	p->ctx = ctx;
	atomic_store(&p->left, p->n - 1);
	pthread_mutex_lock(&p->mu);
	atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->mu);
	fn(ctx, 0, p->n);
	for (i = 0; i < SPIN_ITERS; i++) {
		if (atomic_load_explicit(&p->left, memory_order_acquire) == 0)
			return;
		cpu_relax();
	}
	pthread_mutex_lock(&p->mu);
	while (atomic_load(&p->left) != 0)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

void
rs_pool_range(int64_t n, int64_t align, int ith, int nth, int64_t *lo,
    int64_t *hi)
{
	int64_t units, per, extra, a, b;

	if (align < 1)
		align = 1;
	units = (n + align - 1) / align;
	per = units / nth;
	extra = units % nth;
	/* the first EXTRA shares get one more unit */
	a = ith * per + (ith < extra ? ith : extra);
	b = a + per + (ith < extra ? 1 : 0);
	*lo = a * align < n ? a * align : n;
	*hi = b * align < n ? b * align : n;
}
