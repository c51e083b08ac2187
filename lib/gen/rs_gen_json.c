/*
 * rs_gen_json.c - the JSON shapes of a result that rs-generate and
 * rs-serve both write: usage (serving.md §4.4), timings (§4.8), tool calls
 * (§4.4) and the error envelope's inner object (§4.6).
 */
#include <string.h>

#include "rs_gen_impl.h"

/* OBJ[KEY] = V; -1 (and OBJ freed) when out of memory. */
static int
put(struct rs_json **obj, const char *key, struct rs_json *v)
{
	if (*obj == NULL || v == NULL || rs_json_set(*obj, key, v) != 0) {
		rs_json_free(*obj);
		rs_json_free(v);
		*obj = NULL;
		return (-1);
	}
	return (0);
}

struct rs_json *
rs_gen_usage_json(const struct rs_gen_usage *u)
{
	struct rs_json	*o = rs_json_obj(), *pd = rs_json_obj();
	struct rs_json	*cd = rs_json_obj();

	put(&pd, "cached_tokens", rs_json_int(u->cached_tokens));
	put(&cd, "reasoning_tokens", rs_json_int(u->reasoning_tokens));
	put(&o, "prompt_tokens", rs_json_int(u->prompt_tokens));
	put(&o, "completion_tokens", rs_json_int(u->completion_tokens));
	put(&o, "total_tokens", rs_json_int(u->total_tokens));
	put(&o, "prompt_tokens_details", pd);
	put(&o, "completion_tokens_details", cd);
	return (o);
}

struct rs_json *
rs_gen_timings_json(const struct rs_gen_timings *t)
{
	struct rs_json	*o = rs_json_obj(), *calls;

	put(&o, "cache_n", rs_json_int(t->cache_n));
	put(&o, "prompt_n", rs_json_int(t->prompt_n));
	put(&o, "prompt_ms", rs_json_real(t->prompt_ms));
	put(&o, "prompt_per_token_ms", rs_json_real(t->prompt_per_token_ms));
	put(&o, "prompt_per_second", rs_json_real(t->prompt_per_second));
	put(&o, "predicted_n", rs_json_int(t->predicted_n));
	put(&o, "predicted_ms", rs_json_real(t->predicted_ms));
	put(&o, "predicted_per_token_ms",
	    rs_json_real(t->predicted_per_token_ms));
	put(&o, "predicted_per_second", rs_json_real(t->predicted_per_second));
	put(&o, "ttft_ms", rs_json_real(t->ttft_ms));
	put(&o, "draft_n", rs_json_int(t->draft_n));
	put(&o, "draft_n_accepted", rs_json_int(t->draft_n_accepted));
	if (t->draft != NULL) {
		struct rs_json *acc = rs_json_arr();

		/* position j: the share of rounds drafting a (j+1)-th token
		   that kept it (drafts 1..j+1 all right) */
		for (int j = 0; j < t->draft_n_pos && acc != NULL; j++)
			if (rs_json_push(acc, rs_json_real((double)
			    t->draft_pos_accepted[j] /
			    (double)t->draft_pos_n[j])) != 0) {
				rs_json_free(acc);
				acc = NULL;
			}
		put(&o, "draft", rs_json_str(t->draft));
		put(&o, "draft_rounds", rs_json_int(t->draft_rounds));
		put(&o, "draft_ms", rs_json_real(t->draft_ms));
		put(&o, "draft_catchup_ms", rs_json_real(t->draft_catchup_ms));
		put(&o, "draft_k", rs_json_int(t->draft_k));
		put(&o, "draft_acceptance", acc);
	}
	if (t->ckcache) {
		put(&o, "checkpoint_hits", rs_json_int(t->checkpoint_hits));
		put(&o, "checkpoint_misses", rs_json_int(t->checkpoint_misses));
		put(&o, "checkpoint_tokens", rs_json_int(t->checkpoint_tokens));
		put(&o, "checkpoint_saves", rs_json_int(t->checkpoint_saves));
		put(&o, "checkpoint_mem_bytes",
		    rs_json_int(t->checkpoint_mem_bytes));
		put(&o, "checkpoint_host_mem_bytes",
		    rs_json_int(t->checkpoint_host_mem_bytes));
		put(&o, "checkpoint_save_ms", rs_json_real(t->save_ms));
		put(&o, "checkpoint_spills", rs_json_int(t->spills));
		put(&o, "checkpoint_spill_ms", rs_json_real(t->spill_ms));
		put(&o, "restore_from_host",
		    rs_json_bool(t->restore_from_host));
		put(&o, "restore_cross", rs_json_bool(t->restore_cross));
	}
	put(&o, "render_ms", rs_json_real(t->render_ms));
	put(&o, "tokenize_ms", rs_json_real(t->tokenize_ms));
	put(&o, "setup_ms", rs_json_real(t->setup_ms));
	put(&o, "lookup_ms", rs_json_real(t->lookup_ms));
	put(&o, "restore_ms", rs_json_real(t->restore_ms));
	put(&o, "prefill_calls", rs_json_int(t->prefill_calls));
	put(&o, "prefill_call_ms", rs_json_real(t->prefill_call_ms));
	calls = rs_json_arr();
	for (int32_t i = 0; i < t->prefill_calls && i < RS_GEN_MAX_CALLS &&
	    calls != NULL; i++) {
		struct rs_json *c = rs_json_arr();
		if (c == NULL || rs_json_push(c, rs_json_int(
		    t->call_tokens[i])) != 0 || rs_json_push(c,
		    rs_json_real(t->call_ms[i])) != 0 ||
		    rs_json_push(calls, c) != 0) {
			rs_json_free(calls);
			calls = NULL;
		}
	}
	put(&o, "prefill_call_list", calls);
	put(&o, "first_token_ms", rs_json_real(t->first_token_ms));
	put(&o, "first_text_ms", rs_json_real(t->first_text_ms));
	put(&o, "first_text_tokens", rs_json_int(t->first_text_tokens));
	put(&o, "first_decode_ms", rs_json_real(t->first_decode_ms));
	return (o);
}

struct rs_json *
rs_gen_calls_json(const struct rs_gen_result *res)
{
	struct rs_json	*arr = rs_json_arr(), *c, *f;

	for (size_t i = 0; i < res->n_calls && arr != NULL; i++) {
		c = rs_json_obj();
		f = rs_json_obj();
		put(&f, "name", rs_json_str(res->calls[i].name));
		put(&f, "arguments", rs_json_strn(res->calls[i].arguments,
		    res->calls[i].args_len));
		put(&c, "id", rs_json_str(res->calls[i].id));
		put(&c, "type", rs_json_str("function"));
		put(&c, "function", f);
		if (c == NULL || rs_json_push(arr, c) != 0) {
			rs_json_free(arr);
			arr = NULL;
		}
	}
	return (arr);
}

struct rs_json *
rs_gen_error_json(const struct rs_gen_error *ge)
{
	struct rs_json	*o = rs_json_obj();
	const char	*type = ge->type != NULL ? ge->type : "server_error";

	put(&o, "message", rs_json_str(ge->err.msg));
	put(&o, "type", rs_json_str(type));
	put(&o, "param", ge->param[0] != '\0' ? rs_json_str(ge->param) :
	    rs_json_null());
	put(&o, "code", rs_json_int(ge->code != 0 ? ge->code : 500));
	if (strcmp(type, "exceed_context_size_error") == 0) {
		put(&o, "n_prompt_tokens", rs_json_int(ge->n_prompt_tokens));
		put(&o, "n_ctx", rs_json_int(ge->n_ctx));
	}
	return (o);
}
