/*
 * check_ckcache.c - the checkpoint cache (rs_ckcache.h) on the tiny
 * fixture, CPU backend:
 *
 *   memory    budgets in bytes are kept, the least recently used
 *             checkpoint spills to host RAM first and is dropped from
 *             there first; a restore touches; restores are exact (the
 *             logits after a restore equal those of the run that took it,
 *             bit for bit: the CPU engine is batch-invariant)
 *             buffers are pooled and reused within the budgets
 *   greedy    rs_gen with the cache gives the greedy tokens of a
 *             generator without one, for a prompt that leaves the
 *             history inside a checkpoint interval, exactly at a
 *             checkpoint, and for a chat whose middle message is edited;
 *             the timings count the hit and the positions restored;
 *             and for a checkpoint restored into another generator's
 *             state (its KV rows copied); with a minimum call length
 *             (the GPU's rule) checkpoints that would split off short
 *             calls are skipped, but the opener of a template that drops
 *             reasoning is kept, and the output is still the same
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "rs_buf.h"
#include "rs_ckcache.h"
#include "rs_engine.h"
#include "rs_gen.h"
#include "rs_json.h"
#include "t_ref.h"
#include "t_tok.h"
#include "t_util.h"

#define F16	"tiny/model-f16.gguf"

/* ---- memory ---- */

/* Run N tokens (any ids) on ST, keeping the last row of logits in OUT. */
static void
advance(const struct t_lm *lm, struct rs_state *st, int32_t n, float *out)
{
	int32_t		toks[64];
	struct rs_err	err = { 0 };

	ck_assert(n <= 64);
	for (int32_t i = 0; i < n; i++)
		toks[i] = 100 + (rs_state_pos(st) + i) * 7 % 500;
	ck_assert_msg(rs_engine_forward(lm->e, st, toks, n, out,
	    out != NULL ? RS_LOGITS_LAST : RS_LOGITS_NONE, NULL, &err) ==
	    RS_OK, "%s", err.msg);
}

static int32_t
history(const struct rs_state *st, int32_t *out)
{
	for (int32_t i = 0; i < rs_state_pos(st); i++)
		out[i] = rs_state_token(st, i);
	return (rs_state_pos(st));
}

/*
 * Device budget of two checkpoints, host budget of one.  Saves at 8, 16,
 * 24: 8 spills.  A save at 32 spills 16, which drops 8 from the host.
 * Restoring 24 touches it, so the save at 40 spills 32 (not 24), which
 * drops 16.
 */
START_TEST(memory)
{
	struct t_lm		 lm;
	struct rs_ckcache	*c;
	struct rs_ckcache_stats	 s;
	struct rs_ckcache_opts	 o;
	struct rs_err		 err = { 0 };
	int32_t			 pos[8], hist[64], q;
	size_t			 g;

	t_lm_open(&lm, F16, 2, 0, 0, 0);
	g = rs_state_gdn_bytes(lm.st);
	o.dev_bytes = 2 * g + g / 2;
	o.host_bytes = g;
	ck_assert_int_eq(rs_ckcache_new(&c, &o, &err), RS_OK);
	for (int k = 0; k < 3; k++) {
		advance(&lm, lm.st, 8, NULL);
		ck_assert_int_eq(rs_ckcache_save(c, lm.st, &err), RS_OK);
	}
	rs_ckcache_stats(c, &s);
	ck_assert_uint_eq(s.n_dev, 2);
	ck_assert_uint_eq(s.n_host, 1);
	ck_assert_uint_eq(s.dev_bytes, 2 * g);
	ck_assert_uint_eq(s.host_bytes, g);
	ck_assert_uint_eq(s.spills, 1);
	advance(&lm, lm.st, 8, NULL);
	ck_assert_int_eq(rs_ckcache_save(c, lm.st, &err), RS_OK);
	ck_assert_int_eq(rs_ckcache_list(c, lm.st, pos, 8), 3);
	ck_assert_int_eq(pos[0], 16);
	ck_assert_int_eq(pos[1], 24);
	ck_assert_int_eq(pos[2], 32);
	rs_ckcache_stats(c, &s);
	ck_assert_uint_eq(s.evictions, 1);
	ck_assert_uint_eq(s.spills, 2);

	/* a save at the same position only touches */
	ck_assert_int_eq(rs_ckcache_save(c, lm.st, &err), RS_OK);
	rs_ckcache_stats(c, &s);
	ck_assert_uint_eq(s.saves, 4);

	/* restore 24 (the state is at 32: the common prefix is 32) */
	ck_assert_int_eq(history(lm.st, hist), 32);
	rs_ckcache_restore(c, lm.st, hist, 30, 30, &q);
	ck_assert_int_eq(q, 24);
	ck_assert_int_eq(rs_state_pos(lm.st), 24);
	advance(&lm, lm.st, 16, NULL);		/* the same tokens again: 40 */
	ck_assert_int_eq(rs_ckcache_save(c, lm.st, &err), RS_OK);
	ck_assert_int_eq(rs_ckcache_list(c, lm.st, pos, 8), 3);
	ck_assert_int_eq(pos[0], 24);
	ck_assert_int_eq(pos[1], 32);
	ck_assert_int_eq(pos[2], 40);
	rs_ckcache_stats(c, &s);
	ck_assert_uint_eq(s.n_dev, 2);
	ck_assert_uint_eq(s.n_host, 1);
	ck_assert_uint_le(s.dev_bytes, o.dev_bytes);
	ck_assert_uint_le(s.host_bytes, o.host_bytes);
	ck_assert_uint_eq(s.hits, 1);
	ck_assert_uint_eq(s.tokens_reused, 24);

	/* 32 is on the host now: a restore from there */
	ck_assert_int_eq(history(lm.st, hist), 40);
	rs_ckcache_restore(c, lm.st, hist, 39, 39, &q);
	ck_assert_int_eq(q, 32);

	/* prune drops what lies past the common prefix; forget the rest */
	rs_ckcache_prune(c, lm.st, 31);
	ck_assert_int_eq(rs_ckcache_list(c, lm.st, pos, 8), 1);
	rs_ckcache_restore(c, lm.st, hist, 20, 20, &q);
	ck_assert_int_eq(q, -1);
	rs_ckcache_stats(c, &s);
	ck_assert_uint_eq(s.misses, 1);
	rs_ckcache_forget(c, lm.st);
	rs_ckcache_stats(c, &s);
	ck_assert_uint_eq(s.n_dev + s.n_host, 0);
	ck_assert_uint_eq(s.dev_bytes + s.host_bytes, 0);
	rs_ckcache_free(c);
	t_lm_close(&lm);
}
END_TEST

/* Budgets below one checkpoint store nothing there; both: nothing. */
START_TEST(budgets)
{
	struct t_lm		 lm;
	struct rs_ckcache	*c;
	struct rs_ckcache_stats	 s;
	struct rs_ckcache_opts	 o;
	struct rs_err		 err = { 0 };
	size_t			 g;

	t_lm_open(&lm, F16, 2, 0, 0, 0);
	g = rs_state_gdn_bytes(lm.st);
	o.dev_bytes = g - 1;
	o.host_bytes = g;
	ck_assert_int_eq(rs_ckcache_new(&c, &o, &err), RS_OK);
	advance(&lm, lm.st, 4, NULL);
	ck_assert_int_eq(rs_ckcache_save(c, lm.st, &err), RS_OK);
	rs_ckcache_stats(c, &s);
	ck_assert_uint_eq(s.n_dev, 0);
	ck_assert_uint_eq(s.n_host, 1);
	rs_ckcache_free(c);
	o.dev_bytes = 0;
	o.host_bytes = 0;
	ck_assert_int_eq(rs_ckcache_new(&c, &o, &err), RS_OK);
	ck_assert_int_eq(rs_ckcache_save(c, lm.st, &err), RS_OK);
	rs_ckcache_stats(c, &s);
	ck_assert_uint_eq(s.saves, 0);
	rs_ckcache_free(c);
	t_lm_close(&lm);
}
END_TEST

/*
 * Buffers are pooled, not freed: after a prune the next saves take the
 * pooled buffers, and what is held plus what is pooled stays within each
 * budget through saves, spills, evictions and prunes.
 */
START_TEST(pool)
{
	struct t_lm		 lm;
	struct rs_ckcache	*c;
	struct rs_ckcache_stats	 s;
	struct rs_ckcache_opts	 o;
	struct rs_err		 err = { 0 };
	size_t			 g;

	t_lm_open(&lm, F16, 2, 0, 0, 0);
	g = rs_state_gdn_bytes(lm.st);
	o.dev_bytes = 3 * g;
	o.host_bytes = 2 * g;
	ck_assert_int_eq(rs_ckcache_new(&c, &o, &err), RS_OK);
	for (int round = 0; round < 3; round++) {
		rs_state_reset(lm.st);
		rs_ckcache_prune(c, lm.st, 0);
		rs_ckcache_stats(c, &s);
		ck_assert_uint_eq(s.n_dev + s.n_host, 0);
		if (round > 0) {
			/* everything went to the pools, nothing was freed */
			ck_assert_uint_eq(s.dev_pool_bytes, 3 * g);
			ck_assert_uint_eq(s.host_pool_bytes, 2 * g);
		}
		for (int k = 0; k < 6; k++) {
			advance(&lm, lm.st, 4, NULL);
			ck_assert_int_eq(rs_ckcache_save(c, lm.st, &err),
			    RS_OK);
			rs_ckcache_stats(c, &s);
			ck_assert_uint_le(s.dev_bytes + s.dev_pool_bytes,
			    o.dev_bytes);
			ck_assert_uint_le(s.host_bytes + s.host_pool_bytes,
			    o.host_bytes);
		}
		rs_ckcache_stats(c, &s);
		ck_assert_uint_eq(s.n_dev, 3);
		ck_assert_uint_eq(s.n_host, 2);
		ck_assert_uint_eq(s.dev_pool_bytes + s.host_pool_bytes, 0);
		ck_assert_uint_eq(s.evictions, (uint64_t)(round + 1));
	}
	/* reserve fills nothing on the CPU backend (no page-locked memory) */
	rs_ckcache_reserve(c, lm.st);
	rs_ckcache_stats(c, &s);
	ck_assert_uint_eq(s.host_pool_bytes, 0);
	rs_ckcache_free(c);
	t_lm_close(&lm);
}
END_TEST

/*
 * Inputs that must not restore anything wrong: a save at position 0
 * stores nothing; a common prefix L that overstates what the prompt
 * shares (a caller's bug) is caught by the key check; another state takes
 * a checkpoint (with the KV rows) only while its owner still holds the
 * prefix, not once the owner was reset.
 */
START_TEST(bad_input)
{
	struct t_lm		 lm;
	struct rs_state		*other;
	struct rs_ckcache	*c;
	struct rs_ckcache_stats	 s;
	struct rs_ckcache_opts	 o;
	struct rs_err		 err = { 0 };
	int32_t			 hist[64], q;

	t_lm_open(&lm, F16, 2, 0, 0, 0);
	o.dev_bytes = 8 * rs_state_gdn_bytes(lm.st);
	o.host_bytes = 0;
	ck_assert_int_eq(rs_ckcache_new(&c, &o, &err), RS_OK);
	ck_assert_int_eq(rs_ckcache_save(c, lm.st, &err), RS_OK);
	rs_ckcache_stats(c, &s);
	ck_assert_uint_eq(s.saves, 0);
	advance(&lm, lm.st, 8, NULL);
	ck_assert_int_eq(rs_ckcache_save(c, lm.st, &err), RS_OK);
	advance(&lm, lm.st, 8, NULL);
	ck_assert_int_eq(rs_ckcache_save(c, lm.st, &err), RS_OK);
	history(lm.st, hist);
	hist[5] = 7;			/* the prompt differs at 5 */
	rs_ckcache_restore(c, lm.st, hist, 15, 15, &q);
	ck_assert_int_eq(q, -1);
	ck_assert_int_eq(rs_state_pos(lm.st), 16);

	/* another state may take them while the owner holds its history,
	   not once the owner was reset */
	other = t_state(&lm, 0, 0);
	history(lm.st, hist);
	rs_ckcache_restore(c, other, hist, 0, 15, &q);
	ck_assert_int_eq(q, 8);
	rs_state_reset(other);
	rs_state_reset(lm.st);
	rs_ckcache_restore(c, other, hist, 0, 15, &q);
	ck_assert_int_eq(q, -1);
	rs_ckcache_forget(c, other);
	rs_state_free(other);
	rs_ckcache_free(c);
	t_lm_close(&lm);
}
END_TEST

/*
 * A restore is exact: the logits after running the same tokens from a
 * restored checkpoint equal the original run's, bit for bit, from the
 * device part and from host RAM.
 */
START_TEST(exact)
{
	struct t_lm		 lm;
	struct rs_ckcache	*c;
	struct rs_ckcache_opts	 o;
	struct rs_err		 err = { 0 };
	int32_t			 hist[64], q;
	int64_t			 v;
	float			*a, *b;

	t_lm_open(&lm, F16, 2, 0, 0, 0);
	v = (int64_t)lm.m->hp.n_vocab;
	a = malloc((size_t)v * sizeof(float));
	b = malloc((size_t)v * sizeof(float));
	ck_assert(a != NULL && b != NULL);
	for (int host = 0; host < 2; host++) {
		o.dev_bytes = host ? 0 : 4 * rs_state_gdn_bytes(lm.st);
		o.host_bytes = host ? 4 * rs_state_gdn_bytes(lm.st) : 0;
		ck_assert_int_eq(rs_ckcache_new(&c, &o, &err), RS_OK);
		rs_state_reset(lm.st);
		advance(&lm, lm.st, 13, NULL);
		ck_assert_int_eq(rs_ckcache_save(c, lm.st, &err), RS_OK);
		advance(&lm, lm.st, 9, a);
		history(lm.st, hist);
		rs_ckcache_restore(c, lm.st, hist, 20, 20, &q);
		ck_assert_int_eq(q, 13);
		advance(&lm, lm.st, 9, b);
		ck_assert_mem_eq(a, b, (size_t)v * sizeof(float));
		rs_ckcache_free(c);
	}
	free(a);
	free(b);
	t_lm_close(&lm);
}
END_TEST

/* ---- greedy output with and without the cache ---- */

struct gen {
	struct t_lm		 lm;
	struct rs_tok		*tok;
	struct rs_gen		*g;
	struct rs_ckcache	*c;
	enum rs_chat_variant	 variant;
};

/* A generator with checkpoints every 16 positions, calls of MIN_CALL at
   least between them (0: the default), prompt chunks of CHUNK tokens (0:
   the default) and template VARIANT. */
static void
gen_open_chunk(struct gen *x, int cached, int32_t min_call, int32_t chunk,
    enum rs_chat_variant variant)
{
	struct rs_gen_opts	o;
	struct rs_ckcache_opts	co = { 64 << 20, 64 << 20 };
	struct rs_err		err = { 0 };

	memset(x, 0, sizeof(*x));
	t_lm_open(&x->lm, F16, 2, 0, 0, 1);
	x->tok = t_tok_load(F16, RS_TOK_NORM_DEFAULT);
	rs_gen_opts_init(&o);
	o.checkpoint_every = 16;
	o.checkpoint_min_call = min_call;
	o.prefill_chunk = chunk;
	o.variant = variant;
	x->variant = variant;
	ck_assert_msg(rs_gen_new(&x->g, x->lm.e, x->lm.st, x->tok, &o,
	    &err) == RS_OK, "%s", err.msg);
	if (cached) {
		ck_assert_int_eq(rs_ckcache_new(&x->c, &co, &err), RS_OK);
		rs_gen_set_ckcache(x->g, x->c);
	}
}

static void
gen_open_with(struct gen *x, int cached, int32_t min_call,
    enum rs_chat_variant variant)
{
	gen_open_chunk(x, cached, min_call, 0, variant);
}

static void
gen_open(struct gen *x, int cached)
{
	gen_open_with(x, cached, 0, RS_CHAT_UNKNOWN);
}

static void
gen_close(struct gen *x)
{
	rs_gen_free(x->g);
	rs_ckcache_free(x->c);
	rs_tok_free(x->tok);
	t_lm_close(&x->lm);
}

static void
gen_run(struct gen *x, const char *body, struct rs_gen_result *res)
{
	struct rs_gen_req	r;
	struct rs_gen_error	ge = { 0 };
	struct rs_json		*j;
	struct rs_err		err = { 0 };

	ck_assert_msg(rs_json_parse(body, strlen(body), &j, &err) == RS_OK,
	    "test body: %s", err.msg);
	rs_gen_req_init(&r, x->g);
	ck_assert_msg(rs_gen_req_parse(x->g, &r, j, &ge) == RS_OK, "%s",
	    ge.err.msg);
	ck_assert_msg(rs_gen_run(x->g, &r, NULL, NULL, res, &ge) == RS_OK,
	    "%s", ge.err.msg);
	rs_gen_req_cleanup(&r);
	rs_json_free(j);
}

/* {"tokens": T (N ids), greedy, 8 tokens} */
static char *
tokens_body(const int32_t *t, int32_t n)
{
	struct rs_buf	b;

	rs_buf_init(&b);
	rs_buf_adds(&b, "{\"tokens\": [");
	for (int32_t i = 0; i < n; i++)
		rs_buf_addf(&b, i > 0 ? ",%d" : "%d", (int)t[i]);
	rs_buf_adds(&b, "], \"temperature\": 0, \"max_tokens\": 8}");
	ck_assert(!b.oom);
	return (rs_buf_release(&b, NULL));
}

/*
 * BODY on X (the cache warm from what ran before) and on a fresh
 * generator without a cache: the same tokens.  Returns X's result.
 */
static void
same_as_fresh(struct gen *x, const char *body, struct rs_gen_result *res)
{
	struct gen		f;
	struct rs_gen_result	ref;

	gen_run(x, body, res);
	gen_open_with(&f, 0, 0, x->variant);
	gen_run(&f, body, &ref);
	ck_assert_int_eq(ref.usage.cached_tokens, 0);
	ck_assert_uint_eq(res->n_tokens, ref.n_tokens);
	ck_assert_mem_eq(res->tokens, ref.tokens, ref.n_tokens *
	    sizeof(int32_t));
	rs_gen_result_cleanup(&ref);
	gen_close(&f);
}

/*
 * A 70-token prompt checkpoints at 16, 32, 48, 64 and 69 (a token prompt:
 * before its last token).  Then prompts
 * that leave it at 37 (inside 32..48: 32 is restored, 5 recomputed), at
 * 48 exactly (restored, nothing recomputed), and at 21 (16 is restored),
 * each followed by the 70-token prompt again.
 */
START_TEST(greedy_intervals)
{
	static const struct { int32_t leave, hit; } cases[] = {
		{ 37, 32 }, { 48, 48 }, { 21, 16 },
	};
	struct gen		x;
	struct rs_gen_result	a, b;
	int32_t			p[70], q[70];
	char			*body;

	for (int32_t i = 0; i < 70; i++)
		p[i] = 200 + i * 13 % 700;
	gen_open(&x, 1);
	body = tokens_body(p, 70);
	same_as_fresh(&x, body, &a);
	ck_assert_int_eq(a.timings.ckcache, 1);
	ck_assert_int_eq(a.timings.checkpoint_misses, 0);	/* fresh */
	ck_assert_int_eq(a.timings.checkpoint_saves, 5);
	free(body);
	rs_gen_result_cleanup(&a);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		memcpy(q, p, sizeof(q));
		for (int32_t i = cases[k].leave; i < 70; i++)
			q[i] = 900 + i;
		body = tokens_body(q, 70);
		same_as_fresh(&x, body, &b);
		ck_assert_int_eq(b.timings.checkpoint_hits, 1);
		ck_assert_int_eq(b.timings.checkpoint_tokens, cases[k].hit);
		ck_assert_int_eq(b.usage.cached_tokens, cases[k].hit);
		free(body);
		rs_gen_result_cleanup(&b);
		/* back to P for the next case: its tail is recomputed */
		body = tokens_body(p, 70);
		gen_run(&x, body, &b);
		free(body);
		rs_gen_result_cleanup(&b);
	}
	gen_close(&x);
}
END_TEST

/*
 * checkpoint_min_call 24 (the GPU's rule at the tiny scale): the 70-token
 * prompt is checkpointed at 32 (16 would end a 16-token call, 48 and 64
 * would start calls shorter than 24 tokens) and before its last token,
 * which the rule does not hold back (a token prompt's tail: one token
 * computed when it is sent again), in three calls whose tokens and times
 * the timings list; a prompt that leaves it at 37 restores 32, and gives
 * the fresh generator's tokens.
 */
START_TEST(greedy_min_call)
{
	struct gen		x;
	struct rs_gen_result	a, b;
	int32_t			p[70], pos[8];
	char			*body;
	double			sum = 0;

	for (int32_t i = 0; i < 70; i++)
		p[i] = 200 + i * 13 % 700;
	/* prompt chunks of 16 (below the rule's 24): their ends at 16, 32,
	   48 and 64 are checkpoints that split nothing, so they are kept,
	   and the tail splits the last chunk */
	gen_open_chunk(&x, 1, 24, 16, RS_CHAT_UNKNOWN);
	body = tokens_body(p, 70);
	gen_run(&x, body, &a);
	free(body);
	ck_assert_int_eq(rs_ckcache_list(x.c, x.lm.st, pos, 8), 5);
	ck_assert_int_eq(pos[4], 69);
	ck_assert_int_eq(a.timings.prefill_calls, 6);
	rs_gen_result_cleanup(&a);
	gen_close(&x);
	gen_open_with(&x, 1, 24, RS_CHAT_UNKNOWN);
	body = tokens_body(p, 70);
	same_as_fresh(&x, body, &a);
	free(body);
	ck_assert_int_eq(a.timings.checkpoint_saves, 2);
	ck_assert_int_eq(rs_ckcache_list(x.c, x.lm.st, pos, 8), 2);
	ck_assert_int_eq(pos[0], 32);
	ck_assert_int_eq(pos[1], 69);
	ck_assert_int_eq(a.timings.prefill_calls, 3);
	ck_assert_int_eq(a.timings.call_tokens[0], 32);
	ck_assert_int_eq(a.timings.call_tokens[1], 37);
	ck_assert_int_eq(a.timings.call_tokens[2], 1);
	for (int i = 0; i < 3; i++) {
		ck_assert(a.timings.call_ms[i] >= 0);
		sum += a.timings.call_ms[i];
	}
	ck_assert(sum <= a.timings.prefill_call_ms + 1e-9 &&
	    a.timings.prefill_call_ms <= a.timings.prompt_ms);
	rs_gen_result_cleanup(&a);
	for (int32_t i = 37; i < 70; i++)
		p[i] = 900 + i;
	body = tokens_body(p, 70);
	same_as_fresh(&x, body, &b);
	ck_assert_int_eq(b.timings.checkpoint_hits, 1);
	ck_assert_int_eq(b.timings.checkpoint_tokens, 32);
	ck_assert_int_eq(b.timings.prefill_calls, 2);
	ck_assert_int_eq(b.timings.call_tokens[0], 37);
	ck_assert_int_eq(b.timings.call_tokens[1], 1);
	free(body);
	rs_gen_result_cleanup(&b);
	gen_close(&x);
}
END_TEST

/*
 * A token prompt sent again (a retry), and then with its last token
 * changed (text appended to a completions prompt re-tokenizes its end):
 * each restores the checkpoint before the last token and computes from
 * there, where a checkpoint at the prompt's end could serve neither; a
 * completions text prompt sent again likewise.  Each answer is the fresh
 * generator's.  Not in a prefill of checkpoint_min_call tokens or fewer.
 */
START_TEST(greedy_resend)
{
	static const char text[] = "{\"prompt\": \"def add(a, b):\\n    "
	    "return a + b\\n\\ndef sub(a, b):\", \"temperature\": 0, "
	    "\"max_tokens\": 8}";
	struct gen		x;
	struct rs_gen_result	a, b;
	int32_t			p[50];
	char			*body;

	for (int32_t i = 0; i < 50; i++)
		p[i] = 300 + i * 7 % 500;
	gen_open(&x, 1);
	for (int k = 0; k < 3; k++) {
		if (k == 2)
			p[49] = 1000;
		body = tokens_body(p, 50);
		same_as_fresh(&x, body, &a);
		ck_assert_int_eq(a.timings.checkpoint_hits, k > 0);
		ck_assert_int_eq(a.usage.cached_tokens, k > 0 ? 49 : 0);
		ck_assert_int_eq(a.timings.prompt_n, k > 0 ? 1 : 50);
		free(body);
		rs_gen_result_cleanup(&a);
	}
	same_as_fresh(&x, text, &a);
	same_as_fresh(&x, text, &b);
	ck_assert_int_gt(a.usage.prompt_tokens, 10);
	ck_assert_int_eq(b.timings.checkpoint_hits, 1);
	ck_assert_int_eq(b.usage.cached_tokens, a.usage.prompt_tokens - 1);
	rs_gen_result_cleanup(&a);
	rs_gen_result_cleanup(&b);
	gen_close(&x);
	/* a prefill no longer than checkpoint_min_call is not split: one
	   call, the end checkpointed at P, which a resend cannot use */
	gen_open_with(&x, 1, 50, RS_CHAT_UNKNOWN);
	body = tokens_body(p, 50);
	gen_run(&x, body, &a);
	ck_assert_int_eq(a.timings.prefill_calls, 1);
	same_as_fresh(&x, body, &b);
	ck_assert_int_eq(b.usage.cached_tokens, 0);
	free(body);
	rs_gen_result_cleanup(&a);
	rs_gen_result_cleanup(&b);
	gen_close(&x);
}
END_TEST

/* A chat of four turns, with message MID's text given. */
static char *
chat_body(const char *mid)
{
	struct rs_buf	b;

	rs_buf_init(&b);
	rs_buf_addf(&b, "{\"messages\": ["
	    "{\"role\": \"system\", \"content\": \"You are terse.\"},"
	    "{\"role\": \"user\", \"content\": \"Name a colour.\"},"
	    "{\"role\": \"assistant\", \"content\": \"Blue.\"},"
	    "{\"role\": \"user\", \"content\": \"%s\"},"
	    "{\"role\": \"assistant\", \"content\": \"Seven.\"},"
	    "{\"role\": \"user\", \"content\": \"And a fruit?\"}],"
	    "\"temperature\": 0, \"max_tokens\": 8, "
	    "\"enable_thinking\": false}", mid);
	ck_assert(!b.oom);
	return (rs_buf_release(&b, NULL));
}

/*
 * Edit the middle user message: the prompt leaves the history there, and
 * the checkpoint at the first assistant turn's start (before it) is
 * restored; the answer is the fresh generator's.
 */
START_TEST(greedy_edit)
{
	struct gen		x;
	struct rs_gen_result	a, b;
	char			*body;

	gen_open(&x, 1);
	body = chat_body("Name a number.");
	same_as_fresh(&x, body, &a);
	free(body);
	body = chat_body("Name a prime number below ten.");
	same_as_fresh(&x, body, &b);
	ck_assert_int_eq(b.timings.checkpoint_hits, 1);
	ck_assert_int_gt(b.timings.checkpoint_tokens, 10);
	ck_assert_int_eq(b.usage.cached_tokens, b.timings.checkpoint_tokens);
	ck_assert_int_gt(b.timings.checkpoint_mem_bytes, 0);
	free(body);
	rs_gen_result_cleanup(&a);
	rs_gen_result_cleanup(&b);
	gen_close(&x);
}
END_TEST

/*
 * Two generators (two slots) share a cache.  A 70-token prompt runs on the
 * first; a prompt that shares its first 40 tokens runs on the second,
 * fresh: the first's checkpoint at 32 is restored with its KV rows copied,
 * and the answer is a fresh generator's.  Once the first runs something
 * else, its checkpoints are gone and the second finds none there.
 */
START_TEST(greedy_cross)
{
	struct gen		x, y;
	struct rs_gen_result	a, b;
	struct rs_ckcache_stats	s;
	struct rs_err		err = { 0 };
	struct rs_gen_opts	o;
	int32_t			p[70], q[70];
	char			*body;

	for (int32_t i = 0; i < 70; i++) {
		p[i] = 200 + i * 13 % 700;
		q[i] = i < 40 ? p[i] : 950 + i;
	}
	gen_open(&x, 1);
	memset(&y, 0, sizeof(y));
	y.lm = x.lm;
	y.lm.st = t_state(&x.lm, 0, 1);
	rs_gen_opts_init(&o);
	o.checkpoint_every = 16;
	ck_assert_int_eq(rs_gen_new(&y.g, x.lm.e, y.lm.st, x.tok, &o, &err),
	    RS_OK);
	rs_gen_set_ckcache(y.g, x.c);
	body = tokens_body(p, 70);
	gen_run(&x, body, &a);
	free(body);
	rs_gen_result_cleanup(&a);
	body = tokens_body(q, 70);
	same_as_fresh(&y, body, &b);
	ck_assert_int_eq(b.timings.checkpoint_hits, 1);
	ck_assert_int_eq(b.timings.checkpoint_tokens, 32);
	rs_ckcache_stats(x.c, &s);
	ck_assert_uint_eq(s.cross, 1);
	free(body);
	rs_gen_result_cleanup(&b);

	/* X runs other tokens: its checkpoints past 0 go */
	for (int32_t i = 0; i < 70; i++)
		q[i] = 300 + i;
	body = tokens_body(q, 70);
	gen_run(&x, body, &a);
	rs_gen_result_cleanup(&a);
	free(body);
	rs_gen_reset(y.g);
	body = tokens_body(p, 70);
	gen_run(&y, body, &b);
	ck_assert_int_eq(b.timings.checkpoint_hits, 0);
	ck_assert_int_eq(b.usage.cached_tokens, 0);
	free(body);
	rs_gen_result_cleanup(&b);
	rs_gen_free(y.g);
	rs_ckcache_forget(x.c, y.lm.st);
	rs_state_free(y.lm.st);
	gen_close(&x);
}
END_TEST

/* The conversation of chat_body() and its next turn: the answer, then a
   new user message. */
static char *
next_turn_body(const char *answer)
{
	struct rs_buf	b;

	rs_buf_init(&b);
	rs_buf_addf(&b, "{\"messages\": ["
	    "{\"role\": \"system\", \"content\": \"You are terse.\"},"
	    "{\"role\": \"user\", \"content\": \"Name a colour.\"},"
	    "{\"role\": \"assistant\", \"content\": \"Blue.\","
	    " \"reasoning_content\": \"Colours: blue.\"},"
	    "{\"role\": \"user\", \"content\": \"And a fruit?\"}%s],"
	    "\"temperature\": 0, \"max_tokens\": 8, "
	    "\"enable_thinking\": true}", answer);
	ck_assert(!b.oom);
	return (rs_buf_release(&b, NULL));
}

/*
 * With calls of at least 1,000 tokens (nothing may split these prompts),
 * the opener of the prompt's last assistant turn is still checkpointed
 * when the template drops earlier reasoning (Qwen3.5: the next turn
 * re-renders that turn without it and leaves the history there), and not
 * when it keeps it (Qwen3.8: the next turn continues the whole prompt,
 * which the checkpoint at its end serves).  Both give the fresh
 * generator's tokens on the next turn, and both hit.
 */
START_TEST(greedy_opener)
{
	static const enum rs_chat_variant var[] = { RS_CHAT_QWEN35,
	    RS_CHAT_QWEN38 };
	struct gen		x;
	struct rs_gen_result	a, b;
	int32_t			pos[16];
	char			*body;
	int			n;

	for (size_t k = 0; k < 2; k++) {
		gen_open_with(&x, 1, 1000, var[k]);
		body = next_turn_body("");
		gen_run(&x, body, &a);
		free(body);
		n = rs_ckcache_list(x.c, x.lm.st, pos, 16);
		ck_assert_int_eq(a.timings.prefill_calls, k == 0 ? 2 : 1);
		ck_assert_int_eq(n, k == 0 ? 2 : 1);
		ck_assert_int_eq(pos[n - 1], a.usage.prompt_tokens);
		rs_gen_result_cleanup(&a);
		body = next_turn_body(", {\"role\": \"assistant\", "
		    "\"content\": \"Pear.\", \"reasoning_content\": "
		    "\"A fruit: pear.\"}, {\"role\": \"user\", "
		    "\"content\": \"A number?\"}");
		same_as_fresh(&x, body, &b);
		ck_assert_int_ge(b.usage.cached_tokens, pos[0]);
		ck_assert_int_eq(b.timings.checkpoint_hits, 1);
		free(body);
		rs_gen_result_cleanup(&b);
		gen_close(&x);
	}
}
END_TEST

Suite *
ckcache_suite(void)
{
	Suite	*s = suite_create("ckcache");
	TCase	*tc;

	tc = tcase_create("memory");
	tcase_add_test(tc, memory);
	tcase_add_test(tc, budgets);
	tcase_add_test(tc, pool);
	tcase_add_test(tc, bad_input);
	tcase_add_test(tc, exact);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	tc = tcase_create("greedy");
	tcase_add_test(tc, greedy_intervals);
	tcase_add_test(tc, greedy_edit);
	tcase_add_test(tc, greedy_cross);
	tcase_add_test(tc, greedy_min_call);
	tcase_add_test(tc, greedy_resend);
	tcase_add_test(tc, greedy_opener);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return (s);
}
