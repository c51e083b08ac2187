/*
 * rs_pool.c - persistent worker threads for rs_pool_run() (see rs_pool.h).
 *
 * A run publishes (fn, ctx, n_items), then bumps the generation in the
 * 64-bit word `claim` = (gen << 32) | next item.  Every participant claims
 * items with a compare-and-swap on `claim`; a CAS that succeeds proves the
 * generation was still current, and a run cannot finish (and fn/ctx cannot
 * change) before the item it claimed is done, so a worker never runs a
 * stale item.  n_items is kept per generation parity, because a worker may
 * read it just as the next run is being set up (its CAS then fails).
 * `left` counts unfinished items; whoever finishes the last one signals
 * `done`.  Sleeping workers wait on `wake` for the generation to change.
 * Both condition waits re-check their predicate under `mu`, and the
 * signalling side changes the predicate under `mu`, so no wake-up is lost.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rs_pool.h"

/*
 * About 10-40 us of polling: enough to bridge the serial work between two
 * runs of a forward pass (norms, residual adds).  Longer spins only steal
 * the CPU from the caller on a busy machine; a worker that fell asleep
 * costs little, since the caller does not wait for it to start (items are
 * claimed, not assigned).
 */
#define SPIN_ITERS	(1 << 10)

struct worker {
	struct rs_pool	*pool;
	int		 ith;
	pthread_t	 tid;
};

struct rs_pool {
	int		 n;		/* threads per run, caller included */
	int		 started;	/* workers created */
	struct worker	*workers;	/* n − 1 */
	pthread_mutex_t	 mu;
	pthread_cond_t	 wake;		/* generation changed */
	pthread_cond_t	 done;		/* left reached 0 */
	_Atomic uint64_t claim;		/* (gen << 32) | next item */
	_Atomic int64_t	 n_items[2];	/* per generation parity */
	_Atomic int64_t	 left;		/* items not finished */
	atomic_int	 stop;
	rs_pool_fn	 fn;		/* of the current run */
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
	atomic_init(&p->claim, 0);
	atomic_init(&p->n_items[0], 0);
	atomic_init(&p->n_items[1], 0);
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
	atomic_fetch_add(&p->claim, (uint64_t)1 << 32);
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

static uint32_t
gen_of(uint64_t claim)
{
	return ((uint32_t)(claim >> 32));
}

/* Wait until the generation differs from SEEN; returns the new one. */
static uint32_t
wait_gen(struct rs_pool *p, uint32_t seen)
{
	uint32_t g;

	for (int i = 0; i < SPIN_ITERS; i++) {
		if ((g = gen_of(atomic_load_explicit(&p->claim,
		    memory_order_acquire))) != seen)
			return (g);
		cpu_relax();
	}
	pthread_mutex_lock(&p->mu);
	while ((g = gen_of(atomic_load(&p->claim))) == seen)
		pthread_cond_wait(&p->wake, &p->mu);
	pthread_mutex_unlock(&p->mu);
	return (g);
}

/* Claim and run items of generation GEN until none are left. */
static void
work(struct rs_pool *p, int ith, uint32_t gen)
{
	for (;;) {
		uint64_t c = atomic_load_explicit(&p->claim,
		    memory_order_acquire);
		int64_t	 item = (int64_t)(uint32_t)c;

		if (gen_of(c) != gen || item >= atomic_load_explicit(
		    &p->n_items[gen & 1], memory_order_relaxed))
			return;
		if (!atomic_compare_exchange_weak_explicit(&p->claim, &c, c + 1,
		    memory_order_acq_rel, memory_order_relaxed))
			continue;
		p->fn(p->ctx, item, ith);
		if (atomic_fetch_sub_explicit(&p->left, 1,
		    memory_order_acq_rel) == 1) {
			pthread_mutex_lock(&p->mu);
			pthread_cond_signal(&p->done);
			pthread_mutex_unlock(&p->mu);
		}
	}
}

static void *
worker_main(void *arg)
{
	struct worker	*w = arg;
	struct rs_pool	*p = w->pool;
	uint32_t	 seen = 0;

	for (;;) {
		seen = wait_gen(p, seen);
		if (atomic_load(&p->stop))
			return (NULL);
		work(p, w->ith, seen);
	}
}

void
rs_pool_run(struct rs_pool *p, rs_pool_fn fn, void *ctx, int64_t n_items)
{
	uint32_t gen;

	if (n_items <= 0)
		return;
	if (p == NULL || p->n == 1) {
		for (int64_t i = 0; i < n_items; i++)
			fn(ctx, i, 0);
		return;
	}
	gen = gen_of(atomic_load(&p->claim)) + 1;
	p->fn = fn;
	p->ctx = ctx;
	atomic_store_explicit(&p->n_items[gen & 1], n_items,
	    memory_order_relaxed);
	atomic_store_explicit(&p->left, n_items, memory_order_relaxed);
	pthread_mutex_lock(&p->mu);
	atomic_store_explicit(&p->claim, (uint64_t)gen << 32,
	    memory_order_release);
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->mu);
	work(p, 0, gen);
	for (int i = 0; i < SPIN_ITERS; i++) {
		if (atomic_load_explicit(&p->left, memory_order_acquire) == 0)
			return;
		cpu_relax();
	}
	pthread_mutex_lock(&p->mu);
	while (atomic_load(&p->left) != 0)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
}
