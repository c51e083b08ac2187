/*
 * check_split.c - the layer split (rs_split.h) without a GPU: list
 * parsing, the balanced and the given split, tensor ownership, a state
 * in parts (host memory) whose checkpoint, rollback, truncation and copy
 * act on every part, and the CPU backend refusing --devices.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_engine.h"
#include "rs_model.h"
#include "rs_split.h"
#include "rs_state_impl.h"
#include "t_util.h"

START_TEST(parse)
{
	struct rs_err	err;
	int		v[RS_SPLIT_MAX], n = 0;

	ck_assert_int_eq(rs_split_parse("--devices", "0,1", 0, 1023, v, &n,
	    &err), RS_OK);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(v[0], 0);
	ck_assert_int_eq(v[1], 1);
	ck_assert_int_eq(rs_split_parse("--devices", "3", 0, 1023, v, &n,
	    &err), RS_OK);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(v[0], 3);
	ck_assert_int_eq(rs_split_parse("--split", "30,34", 1, 1 << 20, v, &n,
	    &err), RS_OK);
	ck_assert_int_eq(v[0] + v[1], 64);
	ck_assert_int_eq(rs_split_parse("--devices", "0,0,0,0,0,0,0,0", 0,
	    1023, v, &n, &err), RS_OK);
	ck_assert_int_eq(n, RS_SPLIT_MAX);
}
END_TEST

/* Each bad list, and a word its message must hold. */
START_TEST(bad_input)
{
	static const struct {
		const char *s, *word;
	} bad[] = {
		{ "", "item 1" }, { ",", "item 1" }, { "0,", "item 2" },
		{ "0,,1", "item 2" }, { "a", "not a number" },
		{ "0,1x", "not a number" }, { "-1", "not a number" },
		{ " 1", "not a number" }, { "1024", "outside [0, 1023]" },
		{ "99999999999999999999", "outside" },
		{ "0,0,0,0,0,0,0,0,0", "more than 8" },
	};
	struct rs_err	err;
	int		v[RS_SPLIT_MAX], n = 0;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(rs_split_parse("--devices", bad[i].s, 0, 1023,
		    v, &n, &err), RS_ERR_INVALID_ARG);
		ck_assert_msg(strstr(err.msg, bad[i].word) != NULL &&
		    strstr(err.msg, "--devices") != NULL, "'%s': %s",
		    bad[i].s, err.msg);
	}
}
END_TEST

/* A split's blocks are contiguous, cover the trunk, each slot has one. */
static void
check_cover(const struct rs_split *sp, const struct rs_model *m)
{
	ck_assert_uint_eq(sp->first[0], 0);
	ck_assert_uint_eq(sp->first[sp->n], m->hp.n_layer);
	for (int j = 0; j < sp->n; j++)
		ck_assert_uint_lt(sp->first[j], sp->first[j + 1]);
}

START_TEST(make)
{
	const int	 dev[3] = { 0, 1, 0 };
	struct rs_split_mem mem[RS_SPLIT_MAX];
	struct rs_state_opts so = { .n_ctx = 4096, .n_snap = 3 };
	struct rs_model	*m;
	struct rs_split	 sp, one;
	struct rs_err	 err;

	ck_assert_int_eq(rs_model_open(&m, t_fixture("demo/model-q4_k_m.gguf"),
	    &err), RS_OK);
	const int L = (int)m->hp.n_layer;
	ck_assert_int_ge(L, 4);
	/* balanced: no boundary moves one block without a worse maximum */
	ck_assert_int_eq(rs_split_make(&sp, m, dev, 2, NULL, 2, &so, 1,
	    1000, mem, &err), RS_OK);
	check_cover(&sp, m);
	ck_assert_int_eq(sp.dev[1], 1);
	uint64_t worst = mem[0].total > mem[1].total ? mem[0].total :
	    mem[1].total;
	for (int shift = -1; shift <= 1; shift += 2) {
		int b = (int)sp.first[1] + shift;
		struct rs_split_mem m2[2];
		struct rs_split sp2;
		if (b < 1 || b > L - 1)
			continue;
		const int c[2] = { b, L - b };
		ck_assert_int_eq(rs_split_make(&sp2, m, dev, 2, c, 2, &so, 1,
		    1000, m2, &err), RS_OK);
		ck_assert_uint_eq(sp2.first[1], (unsigned)b);
		ck_assert_uint_ge(m2[0].total > m2[1].total ? m2[0].total :
		    m2[1].total, worst);
	}
	/* the parts of the memory add up, scratch on every slot */
	for (int j = 0; j < 2; j++) {
		ck_assert_uint_eq(mem[j].scratch, 1000);
		ck_assert_uint_eq(mem[j].weights + mem[j].state +
		    mem[j].scratch, mem[j].total);
		ck_assert_uint_gt(mem[j].weights, 0);
	}
	/* slots and tensors: every tensor on at least one slot, a block's
	   on its own, token_embd on the first, output on the last */
	for (int64_t i = 0; i < rs_gguf_n_tensors(m->gguf); i++) {
		unsigned k = rs_split_tensor_slots(&sp, m, i);
		ck_assert_uint_ne(k, 0);
		ck_assert_uint_eq(k & ~3u, 0);
		if (rs_gguf_tensor(m->gguf, i) == m->tok_embd)
			ck_assert_uint_ne(k & 1, 0);
		if (rs_gguf_tensor(m->gguf, i) == m->output)
			ck_assert_uint_ne(k & 2, 0);
	}
	ck_assert_int_eq(rs_split_slot_of(&sp, 0), 0);
	ck_assert_int_eq(rs_split_slot_of(&sp, (uint32_t)L - 1), 1);
	ck_assert_int_eq(rs_split_slot_of(&sp, (uint32_t)L), 1);	/* MTP */
	/* three slots, the same device twice */
	ck_assert_int_eq(rs_split_make(&sp, m, dev, 3, NULL, 2, &so, 1, 0,
	    NULL, &err), RS_OK);
	check_cover(&sp, m);
	rs_split_single(&one, m, -1);
	ck_assert_int_eq(one.n, 1);
	ck_assert_uint_eq(one.first[1], m->hp.n_layer);
	ck_assert_int_eq(rs_split_equal(&one, &sp), 0);
	ck_assert_int_eq(rs_split_equal(&sp, &sp), 1);
	rs_model_close(m);
}
END_TEST

START_TEST(bad_split)
{
	const int	 dev[RS_SPLIT_MAX] = { 0 };
	struct rs_model	*m;
	struct rs_split	 sp;
	struct rs_err	 err;

	ck_assert_int_eq(rs_model_open(&m, t_fixture("tiny/model-q4_k_m.gguf"),
	    &err), RS_OK);
	const int L = (int)m->hp.n_layer;
	const int sum_low[2] = { 1, L - 2 }, zero[2] = { L, 0 };
	ck_assert_int_eq(rs_split_make(&sp, m, dev, 2, sum_low, 2, NULL, 1, 0,
	    NULL, &err), RS_ERR_INVALID_ARG);
	ck_assert_msg(strstr(err.msg, "sum to") != NULL, "%s", err.msg);
	ck_assert_int_eq(rs_split_make(&sp, m, dev, 2, zero, 2, NULL, 1, 0,
	    NULL, &err), RS_ERR_INVALID_ARG);
	ck_assert_msg(strstr(err.msg, "at least one block") != NULL, "%s",
	    err.msg);
	ck_assert_int_eq(rs_split_make(&sp, m, dev, L + 1, NULL, 2, NULL, 1,
	    0, NULL, &err), RS_ERR_INVALID_ARG);
	ck_assert_msg(strstr(err.msg, "at least one block") != NULL, "%s",
	    err.msg);
	ck_assert_int_eq(rs_split_make(&sp, m, dev, 0, NULL, 2, NULL, 1, 0,
	    NULL, &err), RS_ERR_INVALID_ARG);
	rs_model_close(m);
}
END_TEST

/* Fill every live GDN value of ST with a pattern from SEED. */
static void
fill_gdn(struct rs_state *st, float seed)
{
	for (int32_t s = 0; s < st->n_gdn; s++) {
		float *c = rs_state_conv(st, s), *h = rs_state_ssm(st, s);
		for (int64_t i = 0; i < st->conv_len; i++)
			c[i] = seed + (float)s + (float)i * 1e-3f;
		for (int64_t i = 0; i < st->ssm_len; i++)
			h[i] = seed - (float)s - (float)i * 1e-4f;
	}
}

static int
gdn_is(struct rs_state *st, float seed)
{
	for (int32_t s = 0; s < st->n_gdn; s++) {
		float *c = rs_state_conv(st, s), *h = rs_state_ssm(st, s);
		for (int64_t i = 0; i < st->conv_len; i++)
			if (c[i] != seed + (float)s + (float)i * 1e-3f)
				return (0);
		for (int64_t i = 0; i < st->ssm_len; i++)
			if (h[i] != seed - (float)s - (float)i * 1e-4f)
				return (0);
	}
	return (1);
}

/*
 * A state in two parts on the host: each GDN block's live state lies in
 * its part, the checkpoint and rollback, reset and copy act on all parts,
 * and a copy between two splits is refused.
 */
START_TEST(state_parts)
{
	const int	 dev[2] = { -1, -1 };
	struct rs_state_opts so = { .n_ctx = 64, .n_snap = 2,
	    .checkpoint = 1 };
	struct rs_model	*m;
	struct rs_state	*st, *cp, *other;
	struct rs_split	 sp;
	struct rs_err	 err;

	ck_assert_int_eq(rs_model_open(&m, t_fixture("demo/model-q4_k_m.gguf"),
	    &err), RS_OK);
	const int L = (int)m->hp.n_layer;
	const int c[2] = { 1, L - 1 };
	ck_assert_int_eq(rs_split_make(&sp, m, dev, 2, c, 4, &so, 1, 0, NULL,
	    &err), RS_OK);
	ck_assert_int_eq(rs_state_new_split(&st, m, &so, &rs_state_host_mem,
	    &sp, &err), RS_OK);
	ck_assert_int_eq(st->n_part, 2);
	ck_assert_int_eq(st->part[0].n_gdn + st->part[1].n_gdn, st->n_gdn);
	ck_assert_int_eq(st->part[0].n_attn + st->part[1].n_attn, st->n_attn);
	ck_assert_int_eq(st->part[1].gdn0, st->part[0].n_gdn);
	/* block 0 is a GDN block: slot 0 in part 0, the rest in part 1 */
	ck_assert_int_eq(m->layers[0].kind, RS_LAYER_GDN);
	ck_assert_int_eq(st->part[0].n_gdn, 1);
	ck_assert_ptr_eq(rs_state_conv(st, 0), st->part[0].conv);
	ck_assert_ptr_eq(rs_state_conv(st, 1), st->part[1].conv);
	ck_assert_ptr_eq(rs_state_kv_k(st, 0), st->part[1].k);
	fill_gdn(st, 1.0f);
	st->pos = 5;
	ck_assert_int_eq(rs_state_checkpoint(st, &err), RS_OK);
	fill_gdn(st, 2.0f);
	st->pos = 9;
	ck_assert_int_eq(rs_state_rollback(st, &err), RS_OK);
	ck_assert_int_eq(rs_state_pos(st), 5);
	ck_assert(gdn_is(st, 1.0f));
	/* a copy into a state of the same split */
	ck_assert_int_eq(rs_state_new_split(&cp, m, &so, &rs_state_host_mem,
	    &sp, &err), RS_OK);
	ck_assert_int_eq(rs_state_copy(cp, st, &err), RS_OK);
	ck_assert(gdn_is(cp, 1.0f));
	/* not into one of another split */
	ck_assert_int_eq(rs_state_new(&other, m, &so, &err), RS_OK);
	ck_assert_int_eq(rs_state_copy(other, st, &err), RS_ERR_INVALID_ARG);
	ck_assert_msg(strstr(err.msg, "split") != NULL, "%s", err.msg);
	rs_state_reset(st);
	ck_assert(gdn_is(st, 1.0f) == 0);
	ck_assert_float_eq(rs_state_ssm(st, st->n_gdn - 1)[0], 0.0f);
	rs_state_free(other);
	rs_state_free(cp);
	rs_state_free(st);
	rs_model_close(m);
}
END_TEST

/* The CPU backend computes on the host: a GPU list is an error. */
START_TEST(cpu_refuses)
{
	struct rs_engine_opts o = { .backend = RS_BACKEND_CPU, .n_threads = 1,
	    .n_devices = 2 };
	struct rs_engine *e = NULL;
	struct rs_model	*m;
	struct rs_err	 err;

	ck_assert_int_eq(rs_model_open(&m, t_fixture("tiny/model-q4_k_m.gguf"),
	    &err), RS_OK);
	ck_assert_int_eq(rs_engine_new(&e, m, &o, &err), RS_ERR_UNSUPPORTED);
	ck_assert_msg(strstr(err.msg, "--devices") != NULL &&
	    strstr(err.msg, "cpu") != NULL, "%s", err.msg);
	o.n_devices = RS_SPLIT_MAX + 1;
	ck_assert_int_eq(rs_engine_new(&e, m, &o, &err), RS_ERR_INVALID_ARG);
	/* without devices the CPU engine's split is one slot */
	o.n_devices = 0;
	ck_assert_int_eq(rs_engine_new(&e, m, &o, &err), RS_OK);
	ck_assert_int_eq(rs_engine_split(e)->n, 1);
	rs_engine_free(e);
	rs_model_close(m);
}
END_TEST

/*
 * The commands: --devices and --split mean the same in rs-generate,
 * rs-verify and rs-bench (rs-serve's: tests/serve); a bad list is a usage
 * error (exit 2) naming the option, --backend cpu with devices fails
 * with the reason, and rs-bench --plan --devices prints each GPU.
 */
START_TEST(commands)
{
	static const char *const cmds[] = { "rs-generate", "rs-verify",
	    "rs-bench" };
	static const struct {
		const char *args, *word;
	} bad[] = {
		{ "--devices 0,x", "--devices: item 2 of '0,x' is not a number" },
		{ "--devices ''", "--devices: item 1" },
		{ "--devices 0,0,0,0,0,0,0,0,0", "more than 8" },
		{ "--split 2,2", "--split needs --devices" },
		{ "--devices 0,1 --split 4", "--split: 1 counts for 2 devices" },
		{ "--devices 0,1 --split 4,0", "--split: item 2" },
		{ "--backend cpu --devices 0", "the cpu backend runs on the host" },
	};
	char		 m[1024], c[2048], *out;

	/* t_bin() reuses t_fixture()'s buffer */
	snprintf(m, sizeof(m), "%s", t_fixture("tiny/model-q4_k_m.gguf"));
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			snprintf(c, sizeof(c), "%s -m %s %s -q </dev/null "
			    "2>&1", t_bin(cmds[i]), m, bad[k].args);
			ck_assert_msg(t_run(c, &out) == 2, "%s", c);
			ck_assert_msg(strstr(out, bad[k].word) != NULL,
			    "%s: %s", c, out);
			free(out);
		}
	/* the plan: 4 blocks of the tiny model over two GPUs, given */
	snprintf(c, sizeof(c), "%s -m %s --plan -c 4096 --devices 0,1 "
	    "--split 1,3", t_bin("rs-bench"), m);
	ck_assert_int_eq(t_run(c, &out), 0);
	ck_assert_msg(strstr(out, "  gpu 0: blocks 0-0 (1), embedding: ") !=
	    NULL && strstr(out, "  gpu 1: blocks 1-3 (3), head, mtp: ") !=
	    NULL && strstr(out, "--split 1,3; per token 1 boundary copy") !=
	    NULL, "%s", out);
	free(out);
	/* --plan runs no engine: it refused --backend cpu --devices too */
	snprintf(c, sizeof(c), "%s -m %s --plan --backend cpu --devices 0 "
	    "2>&1", t_bin("rs-bench"), m);
	ck_assert_int_eq(t_run(c, &out), 2);
	ck_assert_msg(strstr(out, "the cpu backend runs on the host") != NULL,
	    "%s", out);
	free(out);
	/* counts that do not add up: exit 2 before any plan is printed */
	snprintf(c, sizeof(c), "%s -m %s --plan --devices 0,1 --split 1,2 "
	    "2>&1", t_bin("rs-bench"), m);
	ck_assert_int_eq(t_run(c, &out), 2);
	ck_assert_msg(strstr(out, "the counts sum to 3, the model has 4 "
	    "blocks") != NULL && strstr(out, "weights") == NULL, "%s", out);
	free(out);
}
END_TEST

Suite *
split_suite(void)
{
	Suite	*s = suite_create("split");
	TCase	*p = tcase_create("parse");
	TCase	*k = tcase_create("plan");

	tcase_add_test(p, parse);
	tcase_add_test(p, bad_input);
	suite_add_tcase(s, p);
	tcase_set_timeout(k, 60);
	tcase_add_test(k, make);
	tcase_add_test(k, bad_split);
	tcase_add_test(k, state_parts);
	tcase_add_test(k, cpu_refuses);
	tcase_add_test(k, commands);
	suite_add_tcase(s, k);
	return (s);
}
