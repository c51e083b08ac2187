/*
 * check_metrics.c - the Prometheus text of GET /metrics.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_metrics.h"

/* The value on the line that starts with KEY followed by a space. */
static double
value_of(const char *text, const char *key)
{
	const char	*p = text;
	size_t		 n = strlen(key);

	while ((p = strstr(p, key)) != NULL) {
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return (strtod(p + n + 1, NULL));
		p += n;
	}
	ck_abort_msg("metric line '%s' missing in:\n%s", key, text);
	return (0);
}

START_TEST(counters)
{
	struct rs_metrics	*m;
	struct rs_buf		 b;

	ck_assert_int_eq(rs_metrics_new(&m, NULL), RS_OK);
	rs_metrics_request(m, "chat", 200);
	rs_metrics_request(m, "chat", 200);
	rs_metrics_request(m, "chat", 400);
	rs_metrics_request(m, "health", 200);
	rs_metrics_cancelled(m);
	/* 100 prompt tokens in 50 ms = 2000 tok/s; 30 tokens in 600 ms = 50 */
	rs_metrics_generation(m, 100, 50.0, 30, 600.0);
	rs_metrics_generation(m, 10, 0.0, 0, 0.0);
	rs_metrics_queue(m, 3, 1);
	rs_buf_init(&b);
	ck_assert_int_eq(rs_metrics_format(m, &b), 0);
	ck_assert_double_eq(value_of(b.data,
	    "rs_requests_total{route=\"chat\",code=\"200\"}"), 2);
	ck_assert_double_eq(value_of(b.data,
	    "rs_requests_total{route=\"chat\",code=\"400\"}"), 1);
	ck_assert_double_eq(value_of(b.data,
	    "rs_requests_total{route=\"health\",code=\"200\"}"), 1);
	ck_assert_double_eq(value_of(b.data, "rs_requests_cancelled_total"), 1);
	ck_assert_double_eq(value_of(b.data, "rs_prompt_tokens_total"), 110);
	ck_assert_double_eq(value_of(b.data, "rs_completion_tokens_total"), 30);
	ck_assert_double_eq_tol(value_of(b.data, "rs_decode_seconds_total"),
	    0.6, 1e-12);
	/* a generation without timing leaves the last rates alone */
	ck_assert_double_eq_tol(value_of(b.data,
	    "rs_prompt_tokens_per_second"), 2000, 1e-9);
	ck_assert_double_eq_tol(value_of(b.data,
	    "rs_decode_tokens_per_second"), 50, 1e-9);
	ck_assert_double_eq(value_of(b.data, "rs_queue_depth"), 3);
	ck_assert_double_eq(value_of(b.data, "rs_requests_running"), 1);
	ck_assert_ptr_nonnull(strstr(b.data,
	    "# TYPE rs_requests_total counter\n"));
	ck_assert_ptr_nonnull(strstr(b.data,
	    "# TYPE rs_queue_depth gauge\n"));
	rs_buf_cleanup(&b);
	rs_metrics_free(m);
	rs_metrics_free(NULL);
}
END_TEST

/* The checkpoint cache's series appear once it reported, with its values. */
START_TEST(checkpoints)
{
	struct rs_metrics	*m;
	struct rs_buf		 b;
	struct rs_ckcache_stats	 s = { .hits = 7, .misses = 2,
				    .tokens_reused = 12345, .cross = 1,
				    .saves = 20, .spills = 3, .evictions = 1,
				    .dev_bytes = 4096, .host_bytes = 1024,
				    .n_dev = 4, .n_host = 1 };

	ck_assert_int_eq(rs_metrics_new(&m, NULL), RS_OK);
	rs_buf_init(&b);
	ck_assert_int_eq(rs_metrics_format(m, &b), 0);
	ck_assert_ptr_null(strstr(b.data, "rs_checkpoint"));
	rs_metrics_checkpoints(m, &s);
	rs_buf_reset(&b);
	ck_assert_int_eq(rs_metrics_format(m, &b), 0);
	ck_assert_double_eq(value_of(b.data, "rs_checkpoint_hits_total"), 7);
	ck_assert_double_eq(value_of(b.data, "rs_checkpoint_misses_total"), 2);
	ck_assert_double_eq(value_of(b.data,
	    "rs_checkpoint_tokens_reused_total"), 12345);
	ck_assert_double_eq(value_of(b.data, "rs_checkpoint_cross_total"), 1);
	ck_assert_double_eq(value_of(b.data, "rs_checkpoint_spills_total"), 3);
	ck_assert_double_eq(value_of(b.data,
	    "rs_checkpoint_memory_bytes{where=\"device\"}"), 4096);
	ck_assert_double_eq(value_of(b.data,
	    "rs_checkpoint_memory_bytes{where=\"host\"}"), 1024);
	ck_assert_double_eq(value_of(b.data,
	    "rs_checkpoints{where=\"host\"}"), 1);
	rs_buf_cleanup(&b);
	rs_metrics_free(m);
}
END_TEST

/*
 * The draft series appear once a generation drafted; positions add up
 * across generations of different lengths, the totals are their sums.
 */
START_TEST(drafts)
{
	struct rs_metrics	*m;
	struct rs_buf		 b;
	const int64_t		 n1[] = { 10, 8, 5 }, a1[] = { 8, 5, 2 };
	const int64_t		 n2[] = { 4 }, a2[] = { 3 };

	ck_assert_int_eq(rs_metrics_new(&m, NULL), RS_OK);
	rs_buf_init(&b);
	ck_assert_int_eq(rs_metrics_format(m, &b), 0);
	ck_assert_ptr_null(strstr(b.data, "rs_draft"));
	rs_metrics_drafts(m, n1, a1, 3, 250.0);
	rs_metrics_drafts(m, n2, a2, 1, 50.0);
	rs_buf_reset(&b);
	ck_assert_int_eq(rs_metrics_format(m, &b), 0);
	ck_assert_double_eq(value_of(b.data, "rs_draft_tokens_total"), 27);
	ck_assert_double_eq(value_of(b.data, "rs_draft_accepted_tokens_total"),
	    18);
	ck_assert_double_eq_tol(value_of(b.data, "rs_draft_seconds_total"),
	    0.3, 1e-12);
	ck_assert_double_eq(value_of(b.data,
	    "rs_draft_position_tokens_total{position=\"1\"}"), 14);
	ck_assert_double_eq(value_of(b.data,
	    "rs_draft_position_accepted_total{position=\"1\"}"), 11);
	ck_assert_double_eq(value_of(b.data,
	    "rs_draft_position_accepted_total{position=\"3\"}"), 2);
	ck_assert_ptr_null(strstr(b.data, "position=\"4\""));
	ck_assert_ptr_nonnull(strstr(b.data,
	    "# TYPE rs_draft_position_tokens_total counter\n"));
	rs_buf_cleanup(&b);
	rs_metrics_free(m);
}
END_TEST

START_TEST(ttft_histogram)
{
	struct rs_metrics	*m;
	struct rs_buf		 b;

	ck_assert_int_eq(rs_metrics_new(&m, NULL), RS_OK);
	/* buckets are cumulative and "le" is inclusive */
	rs_metrics_ttft(m, 0.003);
	rs_metrics_ttft(m, 0.01);
	rs_metrics_ttft(m, 0.2);
	rs_metrics_ttft(m, 1000);
	rs_buf_init(&b);
	ck_assert_int_eq(rs_metrics_format(m, &b), 0);
	ck_assert_double_eq(value_of(b.data,
	    "rs_time_to_first_token_seconds_bucket{le=\"0.005\"}"), 1);
	ck_assert_double_eq(value_of(b.data,
	    "rs_time_to_first_token_seconds_bucket{le=\"0.01\"}"), 2);
	ck_assert_double_eq(value_of(b.data,
	    "rs_time_to_first_token_seconds_bucket{le=\"0.1\"}"), 2);
	ck_assert_double_eq(value_of(b.data,
	    "rs_time_to_first_token_seconds_bucket{le=\"0.25\"}"), 3);
	ck_assert_double_eq(value_of(b.data,
	    "rs_time_to_first_token_seconds_bucket{le=\"300\"}"), 3);
	ck_assert_double_eq(value_of(b.data,
	    "rs_time_to_first_token_seconds_bucket{le=\"+Inf\"}"), 4);
	ck_assert_double_eq(value_of(b.data,
	    "rs_time_to_first_token_seconds_count"), 4);
	ck_assert_double_eq_tol(value_of(b.data,
	    "rs_time_to_first_token_seconds_sum"), 1000.213, 1e-9);
	rs_buf_cleanup(&b);
	rs_metrics_free(m);
}
END_TEST

START_TEST(bounded_labels)
{
	struct rs_metrics	*m;
	struct rs_buf		 b;
	char			 route[32];
	int			 i, lines;
	const char		*p;

	ck_assert_int_eq(rs_metrics_new(&m, NULL), RS_OK);
	/* more (route, code) pairs than the table holds: the rest is "other" */
	for (i = 0; i < RS_METRICS_MAX_SERIES + 10; i++) {
		snprintf(route, sizeof(route), "r%d", i);
		rs_metrics_request(m, route, 200);
	}
	/* and once "other" holds the last slot, new codes still count */
	rs_metrics_request(m, "late", 500);
	rs_buf_init(&b);
	ck_assert_int_eq(rs_metrics_format(m, &b), 0);
	lines = 0;
	for (p = b.data; (p = strstr(p, "\nrs_requests_total{")) != NULL; p++)
		lines++;
	ck_assert_int_le(lines, RS_METRICS_MAX_SERIES + 1);
	ck_assert_double_eq(value_of(b.data,
	    "rs_requests_total{route=\"other\",code=\"200\"}"), 11);
	/* nothing is lost: the counts add up */
	{
		double	sum = 0;

		for (p = b.data; (p = strstr(p, "\nrs_requests_total{")) !=
		    NULL; p++)
			sum += strtod(strchr(p, '}') + 1, NULL);
		ck_assert_double_eq(sum, RS_METRICS_MAX_SERIES + 11);
	}
	rs_buf_cleanup(&b);
	rs_metrics_free(m);
}
END_TEST

Suite *
metrics_suite(void)
{
	Suite	*s = suite_create("metrics");
	TCase	*tc;

	tc = tcase_create("counters");
	tcase_add_test(tc, counters);
	tcase_add_test(tc, ttft_histogram);
	tcase_add_test(tc, checkpoints);
	tcase_add_test(tc, drafts);
	suite_add_tcase(s, tc);
	tc = tcase_create("bad_input");
	tcase_add_test(tc, bounded_labels);
	suite_add_tcase(s, tc);
	return (s);
}
