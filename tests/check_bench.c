/*
 * check_bench.c - rs_bench_run on the tiny fixture with small sizes, CPU
 * backend: every row comes, in order, and its numbers agree with each
 * other (tokens/s from ms, bandwidth from bytes and tokens/s, cost of a
 * group of 1).  Timings themselves are the machine's: only their
 * consistency is checked.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_bench.h"
#include "rs_bench_spec.h"
#include "rs_model.h"
#include "t_util.h"

#define MAX_ROWS	16

struct rows {
	struct rs_bench_row	r[MAX_ROWS];
	char			test[MAX_ROWS][16];
	int			n;
};

static int
keep(const struct rs_bench_row *r, void *ctx)
{
	struct rows *rs = ctx;

	ck_assert_int_lt(rs->n, MAX_ROWS);
	rs->r[rs->n] = *r;
	strncpy(rs->test[rs->n], r->test, sizeof(rs->test[0]) - 1);
	rs->n++;
	return (0);
}

START_TEST(rows_in_order)
{
	static const char *const want[] = { "probe", "decode", "greedy",
	    "sampled", "verify", "verify", "prefill", "decode", "memory" };
	const struct rs_bench_opts o = { .decode_tokens = 4, .decode_depth = 8,
	    .groups = { 1, 3 }, .n_groups = 2, .verify_reps = 2,
	    .prefills = { 20 }, .n_prefills = 1, .depths = { 40 },
	    .n_depths = 1, .depth_tokens = 2, .seed = 7 };
	const struct rs_engine_opts eo = { .backend = RS_BACKEND_CPU,
	    .n_threads = 1 };
	struct rs_model	*m;
	struct rs_engine *e;
	struct rs_err	 err;
	struct rows	 rs = { .n = 0 };

	ck_assert_int_eq(rs_model_open(&m, t_fixture("tiny/model-q4_k_m.gguf"),
	    &err), RS_OK);
	ck_assert_int_eq(rs_engine_new(&e, m, &eo, &err), RS_OK);
	ck_assert_msg(rs_bench_run(e, &o, keep, &rs, &err) == RS_OK, "%s",
	    err.msg);
	ck_assert_int_eq(rs.n, (int)(sizeof(want) / sizeof(want[0])));
	for (int i = 0; i < rs.n; i++) {
		const struct rs_bench_row *r = &rs.r[i];
		ck_assert_str_eq(rs.test[i], want[i]);
		if (i == 0 || i == rs.n - 1)
			continue;
		ck_assert(r->ms > 0.0);
		ck_assert(fabs(r->tok_s - 1e3 * (double)r->n / r->ms) <=
		    1e-9 * r->tok_s);
		if (strcmp(rs.test[i], "prefill") == 0)
			continue;
		ck_assert(r->bytes_per_tok > 0.0);
		ck_assert(fabs(r->gb_s - r->bytes_per_tok * r->tok_s / 1e9) <=
		    1e-9 * r->gb_s);
	}
	/* the greedy and sampled rows decode at the decode row's depth */
	ck_assert_int_eq(rs.r[2].depth, 8);
	ck_assert_int_eq(rs.r[3].depth, 8);
	ck_assert(rs.r[2].bytes_per_tok == rs.r[1].bytes_per_tok);
	ck_assert(rs.r[4].rel_cost == 1.0);
	ck_assert_int_eq(rs.r[5].n, 3);
	ck_assert(rs.r[8].mem_weights > 0 && rs.r[8].mem_state > 0);
	rs_engine_free(e);
	rs_model_close(m);
}
END_TEST

/* The defaults on the tiny model's 4096 positions: capped, said so. */
START_TEST(fit_context)
{
	struct rs_bench_opts o;
	char	note[512];

	rs_bench_defaults(&o);
	ck_assert_int_eq(rs_bench_fit(&o, 262144, note, sizeof(note)), 0);
	ck_assert_str_eq(note, "");
	ck_assert_int_eq(o.n_prefills, 3);
	ck_assert_int_eq(o.prefills[2], 32768);	/* kept where they fit */
	ck_assert_int_eq(o.ttft_tokens, 30000);
	ck_assert_int_gt(rs_bench_fit(&o, 4096, note, sizeof(note)), 0);
	ck_assert_int_eq(o.n_prefills, 2);
	ck_assert_int_eq(o.prefills[0], 512);
	ck_assert_int_eq(o.prefills[1], 4096);
	ck_assert_int_eq(o.n_depths, 1);
	ck_assert_int_eq(o.depths[0] + o.depth_tokens, 4096);
	ck_assert_int_eq(o.ttft_tokens, 4095);
	ck_assert_int_eq(o.n_groups, 5);
	ck_assert_int_eq(o.decode_tokens, 128);
	ck_assert_str_eq(note, "prefill 32768 dropped; ttft 30000 -> 4095; "
	    "depth 4096 -> 4064; depth 32768 dropped");
	/* a context smaller than the decode row */
	rs_bench_defaults(&o);
	ck_assert_int_gt(rs_bench_fit(&o, 20, note, sizeof(note)), 0);
	ck_assert_int_eq(o.decode_tokens, 4);
	ck_assert_int_eq(o.n_groups, 3);	/* 1, 2 and 4 at depth 16 */
	ck_assert_int_eq(o.n_depths, 0);
}
END_TEST

/* rs-bench -m tiny: -c is the context the sizes are capped to. */
START_TEST(cmd_context)
{
	char		 model[600], c[2048], *out;

	/* a copy: t_fixture's and t_bin's paths share a ring of buffers */
	snprintf(model, sizeof(model), "%s", t_fixture("tiny/model-q8_0.gguf"));
	snprintf(c, sizeof(c), "%s -m %s -b cpu -t 1 --quick -c 100 --json "
	    "2>&1", t_bin("rs-bench"), model);
	ck_assert_int_eq(t_run(c, &out), 0);
	ck_assert_msg(strstr(out, "context 100: depth 256 -> 92") != NULL,
	    "%s", out);
	ck_assert_msg(strstr(out, "\"depth\":92") != NULL, "%s", out);
	free(out);
	/* options of another mode are refused, not ignored */
	snprintf(c, sizeof(c), "%s -m %s --snap 3 2>/dev/null", t_bin("rs-bench"),
	    model);
	ck_assert_int_eq(t_run(c, NULL), 2);
	snprintf(c, sizeof(c), "%s -m %s --mix q8_0 2>/dev/null",
	    t_bin("rs-bench"), model);
	ck_assert_int_eq(t_run(c, NULL), 2);
	snprintf(c, sizeof(c), "%s -m %s -c 5000 2>&1", t_bin("rs-bench"),
	    model);
	ck_assert_int_eq(t_run(c, &out), 2);
	ck_assert_msg(strstr(out, "beyond the model's context, 4096") != NULL,
	    "%s", out);
	free(out);
	snprintf(c, sizeof(c), "%s -m %s --prefill 5000 2>&1",
	    t_bin("rs-bench"), model);
	ck_assert_int_eq(t_run(c, &out), 2);
	ck_assert_msg(strstr(out, "does not fit") != NULL, "%s", out);
	free(out);
	snprintf(c, sizeof(c), "%s -m %s --depth 100,4070 2>&1",
	    t_bin("rs-bench"), model);
	ck_assert_int_eq(t_run(c, &out), 2);
	ck_assert_msg(strstr(out, "--depth 4070 and its 32 decoded tokens do "
	    "not fit the context, 4096") != NULL, "%s", out);
	free(out);
	snprintf(c, sizeof(c), "%s -m %s --depth 100,4x 2>&1",
	    t_bin("rs-bench"), model);
	ck_assert_int_eq(t_run(c, &out), 2);
	free(out);
	/* numbers parsed strictly (redshift(7)): strtod and strtoll alone
	   took blanks, signs, hex, exponents and "inf" */
	static const char *const lax[] = { "--depth ' 5'", "--depth +5",
	    "--spec --alpha ' 0.5'", "--spec --alpha 0x1p-1",
	    "--spec --alpha 1e-1", "--spec --alpha inf",
	    "--spec --alpha 0.5.1" };
	/* options the mode would ignore are refused */
	static const char *const ignored[][2] = {
		{ "--spec -c 10", "--spec excludes" },
		{ "--plan --quick", "--plan excludes" },
		{ "--plan --prefill 64", "--plan excludes" },
	};
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++) {
		snprintf(c, sizeof(c), "%s -m %s %s 2>&1", t_bin("rs-bench"),
		    model, ignored[i][0]);
		ck_assert_int_eq(t_run(c, &out), 2);
		ck_assert_msg(strstr(out, ignored[i][1]) != NULL, "%s: %s",
		    ignored[i][0], out);
		free(out);
	}
	for (size_t i = 0; i < sizeof(lax) / sizeof(lax[0]); i++) {
		snprintf(c, sizeof(c), "%s -m %s %s 2>&1", t_bin("rs-bench"),
		    model, lax[i]);
		ck_assert_int_eq(t_run(c, &out), 2);
		ck_assert_msg(strstr(out, "is not a list") != NULL, "%s: %s",
		    lax[i], out);
		free(out);
	}
	snprintf(c, sizeof(c), "%s -m %s -b cpu -t 1 --depth 40,8 --json "
	    "2>&1", t_bin("rs-bench"), model);
	ck_assert_int_eq(t_run(c, &out), 0);
	ck_assert_msg(strstr(out, "\"depth\":40") != NULL &&
	    strstr(out, "\"depth\":8") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "\"test\":\"verify\",\"tokens\":16,"
	    "\"depth\":40") != NULL &&
	    strstr(out, "\"test\":\"verify\",\"tokens\":4,\"depth\":8") !=
	    NULL && strstr(out, "\"depth\":16") == NULL &&
	    strstr(out, "\"test\":\"prefill\"") == NULL &&
	    strstr(out, "\"test\":\"probe\"") != NULL, "%s", out);
	free(out);
	snprintf(c, sizeof(c), "%s --synth tiny -o /dev/null -c 10 2>&1",
	    t_bin("rs-bench"));
	ck_assert_int_eq(t_run(c, &out), 2);
	free(out);
	snprintf(c, sizeof(c), "%s --synth tiny -o /dev/null --depth 10 2>&1",
	    t_bin("rs-bench"));
	ck_assert_int_eq(t_run(c, &out), 2);
	ck_assert_msg(strstr(out, "are for -m, not --synth") != NULL, "%s",
	    out);
	free(out);
	/* numbers are digits after an optional '-' (redshift(7)) */
	snprintf(c, sizeof(c), "%s -m %s -c +300 2>/dev/null",
	    t_bin("rs-bench"), model);
	ck_assert_int_eq(t_run(c, NULL), 2);
	snprintf(c, sizeof(c), "%s -m %s -c ' 300' 2>/dev/null",
	    t_bin("rs-bench"), model);
	ck_assert_int_eq(t_run(c, NULL), 2);
	/* --plan prints a table: --json would be ignored */
	snprintf(c, sizeof(c), "%s -m %s --plan --json 2>/dev/null",
	    t_bin("rs-bench"), model);
	ck_assert_int_eq(t_run(c, NULL), 2);
	/* a row that cannot be written is a write error, and -q keeps
	   stderr to that */
	snprintf(c, sizeof(c), "%s -m %s -b cpu -t 1 --prefill 16 -q "
	    "2>&1 >/dev/full; echo rc $?", t_bin("rs-bench"), model);
	ck_assert_int_eq(t_run(c, &out), 0);
	ck_assert_msg(strstr(out, "write error on stdout") != NULL &&
	    strstr(out, " on cpu, ") == NULL && strstr(out, "rc 2") != NULL,
	    "%s", out);
	free(out);
}
END_TEST

struct spec_rows {
	struct rs_bench_spec_row r[32];
	int			 n;
};

static int
keep_spec(const struct rs_bench_spec_row *r, void *ctx)
{
	struct spec_rows *rs = ctx;

	ck_assert_int_lt(rs->n, 32);
	rs->r[rs->n++] = *r;
	return (0);
}

/*
 * rs_bench_spec on the tiny fixture (CPU), twice on one engine: the spec
 * rows of every drafter, then an oracle table at alpha 1 and 0.5 for k 1
 * to 3 and adaptive K, each measured row followed at the end by its
 * prediction (fixed k) or -1 (adaptive).  At
 * alpha 1 every draft is the plain run's next token and must be accepted,
 * so a round makes k + 1 tokens; the runs reuse their states (reset in
 * between, rs_bench_spec.h), and rs_bench_spec itself fails unless every
 * drafter's tokens equal plain decoding's: a state left dirty by the run
 * before (an untimed warm-up, the other k) would break both.  The second
 * call gives the same token counts.
 */
START_TEST(spec_rows)
{
	const struct rs_engine_opts eo = { .backend = RS_BACKEND_CPU,
	    .n_threads = 1 };
	struct rs_bench_spec_opts o;
	struct rs_model	*m;
	struct rs_engine *e;
	struct rs_err	 err;
	struct spec_rows rs[2];

	rs_bench_spec_defaults(&o);
	o.prompt_tokens = 12;
	o.gen_tokens = 17;
	o.k_max = 3;
	o.oracle_k_max = 3;
	o.alphas[0] = 1.0;
	o.alphas[1] = 0.5;
	o.n_alphas = 2;
	o.reps = 2;
	ck_assert_int_eq(rs_model_open(&m, t_fixture("tiny/model-q4_k_m.gguf"),
	    &err), RS_OK);
	ck_assert_int_eq(rs_engine_new(&e, m, &eo, &err), RS_OK);
	for (int call = 0; call < 2; call++) {
		rs[call].n = 0;
		ck_assert_msg(rs_bench_spec(e, &o, keep_spec, &rs[call], &err)
		    == RS_OK, "%s", err.msg);
		/* none, ngram, mtp, mtp+ngram; 6 + 2 adaptive measured,
		   then again with predictions */
		ck_assert_int_eq(rs[call].n, 4 + 2 * 8);
		ck_assert_str_eq(rs[call].r[0].drafter, "none");
		for (int i = 0; i < rs[call].n; i++)
			ck_assert_int_eq(rs[call].r[i].tokens, o.gen_tokens);
		for (int k = 1; k <= 3; k++) {
			const struct rs_bench_spec_row *r =
			    &rs[call].r[4 + k - 1];
			ck_assert_str_eq(r->test, "oracle");
			ck_assert(r->alpha == 1.0 && r->k == k);
			ck_assert_int_eq(r->accepted, r->drafted);
			/* the prefill makes the first token */
			ck_assert_int_eq(r->rounds, (o.gen_tokens - 1 + k) /
			    (k + 1));
			ck_assert(!r->adaptive);
		}
		/* alpha 1's adaptive run (after the fixed k): every draft
		   kept, K growing to the most (3) */
		const struct rs_bench_spec_row *ad = &rs[call].r[4 + 3];
		ck_assert(ad->alpha == 1.0 && ad->k == 0 && ad->adaptive);
		ck_assert_int_eq(ad->accepted, ad->drafted);
		ck_assert_int_ge(ad->drafted, 2 * ad->rounds);
		/* the final rows: fixed k with predictions, adaptive last */
		for (int i = 4 + 8; i < 4 + 8 + 6; i++)
			ck_assert(rs[call].r[i].k > 0 &&
			    rs[call].r[i].predicted > 0.0);
		ck_assert(rs[call].r[18].k == 0 &&
		    rs[call].r[18].predicted == -1.0 &&
		    rs[call].r[19].alpha == 0.5);
	}
	for (int i = 0; i < rs[0].n; i++) {
		ck_assert_int_eq(rs[0].r[i].rounds, rs[1].r[i].rounds);
		ck_assert_int_eq(rs[0].r[i].accepted, rs[1].r[i].accepted);
	}
	/* a draft vocabulary beyond the model's: refused before any row */
	o.vocab = (int32_t)m->hp.n_vocab + 1;
	rs[0].n = 0;
	ck_assert_int_eq(rs_bench_spec(e, &o, keep_spec, &rs[0], &err),
	    RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs[0].n, 0);
	rs_engine_free(e);
	rs_model_close(m);
}
END_TEST

Suite *
bench_suite(void)
{
	Suite	*s = suite_create("bench");
	TCase	*tc = tcase_create("run");

	/* about 5 s under make asan, past Check's default 4 s */
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, rows_in_order);
	tcase_add_test(tc, fit_context);
	tcase_add_test(tc, cmd_context);
	tcase_add_test(tc, spec_rows);
	suite_add_tcase(s, tc);
	return (s);
}
