/*
 * check_pool.c - the thread pool: every item runs exactly once, on a valid
 * thread index, over many back-to-back runs and odd sizes.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_pool.h"

struct count {
	atomic_int	*hits;		/* per item */
	atomic_int	 bad_ith;
	int		 nth;
};

static void
count_item(void *arg, int64_t item, int ith)
{
	struct count *c = arg;

	atomic_fetch_add(&c->hits[item], 1);
	if (ith < 0 || ith >= c->nth)
		atomic_fetch_add(&c->bad_ith, 1);
}

static void
check_runs(struct rs_pool *p, int64_t n, int runs)
{
	struct count c;

	c.hits = calloc((size_t)n, sizeof(*c.hits));
	ck_assert(c.hits != NULL);
	atomic_init(&c.bad_ith, 0);
	c.nth = rs_pool_size(p);
	for (int r = 0; r < runs; r++)
		rs_pool_run(p, count_item, &c, n);
	for (int64_t i = 0; i < n; i++)
		ck_assert_msg(atomic_load(&c.hits[i]) == runs,
		    "item %lld ran %d times in %d runs", (long long)i,
		    atomic_load(&c.hits[i]), runs);
	ck_assert_int_eq(atomic_load(&c.bad_ith), 0);
	free(c.hits);
}

static const int thread_counts[] = { 1, 2, 3, 8 };

START_TEST(every_item_once)
{
	struct rs_pool	*p;
	struct rs_err	 err;

	ck_assert_int_eq(rs_pool_new(&p, thread_counts[_i], &err), RS_OK);
	ck_assert_int_eq(rs_pool_size(p), thread_counts[_i]);
	check_runs(p, 1, 2000);
	check_runs(p, 3, 2000);
	check_runs(p, 7, 500);
	check_runs(p, 1000, 50);
	rs_pool_run(p, count_item, NULL, 0);	/* no items: no call */
	rs_pool_free(p);
}
END_TEST

START_TEST(null_pool_inline)
{
	check_runs(NULL, 5, 3);
	ck_assert_int_eq(rs_pool_size(NULL), 1);
	rs_pool_free(NULL);
}
END_TEST

START_TEST(bad_input)
{
	struct rs_pool	*p = NULL;
	struct rs_err	 err;

	ck_assert_int_eq(rs_pool_new(&p, 0, &err), RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "thread count") != NULL);
	ck_assert_int_eq(rs_pool_new(&p, RS_POOL_MAX_THREADS + 1, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert(p == NULL);
	ck_assert_int_ge(rs_pool_ncpu(), 1);
}
END_TEST

Suite *
pool_suite(void)
{
	Suite	*s = suite_create("pool");
	TCase	*tc = tcase_create("runs");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, every_item_once, 0,
	    (int)(sizeof(thread_counts) / sizeof(thread_counts[0])));
	tcase_add_test(tc, null_pool_inline);
	suite_add_tcase(s, tc);
	tc = tcase_create("bad_input");
	tcase_add_test(tc, bad_input);
	suite_add_tcase(s, tc);
	return (s);
}
