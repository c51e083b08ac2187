/*
 * rs_gen_prompt.c - from a request to prompt tokens (serving.md §2.8):
 * render the conversation, tokenize it, decide how the output starts
 * (reasoning or not, forced tool-call text, §3.8) and check the context
 * (§4.9).
 *
 * Tokenization of a rendered chat prompt (§1.3).  The reference tokenizes
 * the whole prompt with special parsing on, so a client who types
 * "<|im_end|>" gets the control token.  We tokenize the same text, but
 * only the CONTROL-token texts that the template wrote are cut out as
 * control tokens; the text between them, client text included, goes
 * through rs_tok_encode() with USER_DEFINED tokens only (<think>,
 * <tool_call>, ...: those match in any text, as in the reference).  Pieces
 * are separated only where a control token sits, which is a pre-token
 * boundary in the reference as well, so an ordinary conversation gets the
 * reference's ids exactly.  Template control tokens are found by their
 * "<|...|>" form, which every control token a chat template writes has.
 */
#include <stdlib.h>
#include <string.h>

#include "rs_buf.h"
#include "rs_gen_impl.h"

/* Append ID to IDS. */
static int
ids_push(struct rs_tok_ids *ids, int32_t id)
{
	int32_t	*p;
	size_t	 cap;

	if (ids->n == ids->cap) {
		cap = ids->cap > 0 ? 2 * ids->cap : 256;
		if ((p = realloc(ids->v, cap * sizeof(*p))) == NULL)
			return (-1);
		ids->v = p;
		ids->cap = cap;
	}
	ids->v[ids->n++] = id;
	return (0);
}

/*
 * The next template-written control token in segment SEG of TEXT from
 * offset *AT on: its offset (*AT moves past it) and id, or -1.
 */
static int32_t
next_control(const struct rs_tok *tok, const char *text,
    const struct rs_chat_seg *seg, size_t *at, size_t *off)
{
	const char	*s, *e, *end = text + seg->off + seg->len;
	int32_t		 id;

	for (s = text + *at; s < end; s++) {
		if (end - s < 4 || s[0] != '<' || s[1] != '|')
			continue;
		if ((e = memmem(s + 2, (size_t)(end - s - 2), "|>", 2)) ==
		    NULL)
			return (-1);
		id = rs_tok_find(tok, s, (size_t)(e + 2 - s));
		if (id >= 0 && rs_tok_type(tok, id) == RS_TOK_CONTROL) {
			*off = (size_t)(s - text);
			*at = *off + (size_t)(e + 2 - s);
			return (id);
		}
	}
	return (-1);
}

/* Tokenize the rendered prompt P into IDS as described at the top. */
static enum rs_status
tokenize_chat(const struct rs_gen *g, const struct rs_chat_prompt *p,
    struct rs_tok_ids *ids, struct rs_err *err)
{
	size_t		 from = 0, at, off;
	int32_t		 id;
	enum rs_status	 st;

	if (g->o.client_specials)
		return (rs_tok_encode(g->tok, p->text, p->len,
		    RS_TOK_SPECIAL_ALL, ids, err));
	for (size_t i = 0; i < p->n_segs; i++) {
		if (p->segs[i].client)
			continue;
		at = p->segs[i].off;
		while ((id = next_control(g->tok, p->text, &p->segs[i], &at,
		    &off)) >= 0) {
			if (off > from && (st = rs_tok_encode(g->tok,
			    p->text + from, off - from, RS_TOK_SPECIAL_USER,
			    ids, err)) != RS_OK)
				return (st);
			if (ids_push(ids, id) != 0)
				return (rs_errf(err, RS_ERR_NOMEM,
				    "out of memory"));
			from = at;
		}
	}
	if (p->len > from)
		return (rs_tok_encode(g->tok, p->text + from, p->len - from,
		    RS_TOK_SPECIAL_USER, ids, err));
	return (RS_OK);
}

/*
 * tool_choice required: each tool's "NAME>\n" as tokens into R->name_ids
 * and R->name_end, the choices the decode loop samples the name from, and
 * the longest of them into R->n_reserve.
 */
static enum rs_status
name_choices(const struct rs_gen *g, struct rs_gen_req *r,
    struct rs_gen_error *ge)
{
	struct rs_tok_ids	 ids;
	struct rs_buf		 b;
	struct rs_err		 err = { 0 };
	struct rs_json		*fn;
	const char		*name;
	size_t			 i, n = rs_json_arr_len(r->tools), len, most = 0;
	enum rs_status		 st = RS_OK;

	if (n == 0)
		return (RS_OK);
	if ((r->name_end = calloc(n, sizeof(*r->name_end))) == NULL)
		return (rs_gen_fail(ge, RS_ERR_NOMEM, NULL, "out of memory"));
	rs_tok_ids_init(&ids);
	rs_buf_init(&b);
	for (i = 0; i < n && st == RS_OK; i++) {
		size_t from = ids.n;

		fn = rs_json_get(rs_json_arr_at(r->tools, i), "function");
		if (rs_json_as_str(rs_json_get(fn, "name"), &name, &len) != 0) {
			st = rs_errf(&err, RS_ERR_INVALID_ARG, "tools[%zu]: no "
			    "function name", i);
			break;
		}
		b.len = 0;
		rs_buf_add(&b, name, len);
		rs_buf_adds(&b, ">\n");
		if (b.oom)
			st = rs_errf(&err, RS_ERR_NOMEM, "out of memory");
		else
			st = rs_tok_encode(g->tok, b.data, b.len,
			    RS_TOK_SPECIAL_USER, &ids, &err);
		r->name_end[i] = ids.n;
		if (ids.n - from > most)
			most = ids.n - from;
	}
	rs_buf_cleanup(&b);
	if (st != RS_OK) {
		rs_tok_ids_cleanup(&ids);
		return (rs_gen_fail(ge, st, "tools", "%s", err.msg));
	}
	r->name_ids = ids.v;
	r->n_names = n;
	r->n_reserve += most;
	return (RS_OK);
}

/*
 * tool_choice required or named (§3.8): the text forced into the output,
 * after the generation prompt or, when thinking, after "</think>".
 */
static enum rs_status
forced_text(const struct rs_gen *g, struct rs_gen_req *r,
    struct rs_gen_error *ge)
{
	struct rs_tok_ids	 ids;
	struct rs_buf		 b;
	struct rs_err		 err = { 0 };
	enum rs_status		 st;

	if (r->tool_choice != RS_GEN_TOOLS_REQUIRED &&
	    r->tool_choice != RS_GEN_TOOLS_NAMED)
		return (RS_OK);
	rs_buf_init(&b);
	rs_buf_adds(&b, r->thinking ? "\n\n<tool_call>\n<function=" :
	    "<tool_call>\n<function=");
	if (r->tool_choice == RS_GEN_TOOLS_NAMED) {
		rs_buf_adds(&b, r->tool_name);
		rs_buf_adds(&b, ">\n");
	}
	rs_tok_ids_init(&ids);
	if (b.oom)
		st = rs_errf(&err, RS_ERR_NOMEM, "out of memory");
	else
		st = rs_tok_encode(g->tok, b.data, b.len, RS_TOK_SPECIAL_USER,
		    &ids, &err);
	rs_buf_cleanup(&b);
	if (st != RS_OK) {
		rs_tok_ids_cleanup(&ids);
		return (rs_gen_fail(ge, st, NULL, "%s", err.msg));
	}
	r->forced = ids.v;
	r->n_forced = ids.n;
	r->n_reserve = (r->thinking ? 1 : 0) + r->n_forced;
	if (r->tool_choice == RS_GEN_TOOLS_REQUIRED)
		return (name_choices(g, r, ge));
	return (RS_OK);
}

/* Render R's messages and tokenize them into R->prompt. */
static enum rs_status
prepare_chat(const struct rs_gen *g, struct rs_gen_req *r,
    struct rs_gen_error *ge)
{
	struct rs_chat_opts	 co;
	struct rs_chat_prompt	 p = { 0 };
	struct rs_tok_ids	 ids;
	struct rs_err		 err = { 0 };
	enum rs_status		 st;
	double			 t0, t1;
	static const char	 think[] = "<think>\n";

	if (!rs_gen_chat_ok(g, &err))
		return (rs_gen_fail(ge, RS_ERR_UNSUPPORTED, "messages",
		    "chat requests are not available with this model: %s",
		    err.msg));
	rs_chat_opts_init(&co, g->variant);
	co.tools = r->tools;
	co.add_generation_prompt = r->add_generation_prompt;
	co.enable_thinking = r->enable_thinking;
	co.preserve_thinking = r->preserve_thinking;
	if (g->variant == RS_CHAT_QWEN38)
		co.reasoning_effort = r->reasoning_effort;
	t0 = rs_time_ms();
	if ((st = rs_chat_render(&co, r->messages, &p, &err)) != RS_OK) {
		rs_chat_prompt_cleanup(&p);
		return (rs_gen_fail(ge, st, "messages", "%s", err.msg));
	}
	t1 = rs_time_ms();
	r->render_ms = t1 - t0;
	r->thinking = p.len >= sizeof(think) - 1 && memcmp(p.text + p.len -
	    (sizeof(think) - 1), think, sizeof(think) - 1) == 0;
	rs_tok_ids_init(&ids);
	st = tokenize_chat(g, &p, &ids, &err);
	r->tokenize_ms = rs_time_ms() - t1;
	r->rendered = p.text;		/* kept: the request owns it now */
	r->rendered_len = p.len;
	p.text = NULL;
	rs_chat_prompt_cleanup(&p);
	if (st != RS_OK) {
		rs_tok_ids_cleanup(&ids);
		return (rs_gen_fail(ge, st, "messages", "%s", err.msg));
	}
	r->prompt = ids.v;
	r->n_prompt = ids.n;
	return (forced_text(g, r, ge));
}

static enum rs_status
prepare_text(const struct rs_gen *g, struct rs_gen_req *r,
    struct rs_gen_error *ge)
{
	struct rs_tok_ids	 ids;
	struct rs_err		 err = { 0 };
	double			 t0 = rs_time_ms();
	enum rs_status		 st;

	if (r->text == NULL)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, "messages",
		    "no input: give messages, prompt or tokens"));
	rs_tok_ids_init(&ids);
	st = rs_tok_encode(g->tok, r->text, r->text_len, RS_TOK_SPECIAL_ALL,
	    &ids, &err);
	r->tokenize_ms = rs_time_ms() - t0;
	if (st != RS_OK) {
		rs_tok_ids_cleanup(&ids);
		return (rs_gen_fail(ge, err.status, "prompt", "prompt: %s",
		    err.msg));
	}
	r->prompt = ids.v;
	r->n_prompt = ids.n;
	return (RS_OK);
}

/*
 * A forced tool call's opening always fits (§3.8): rs_gen_run() raises
 * max_tokens to R->n_reserve, so a prompt that leaves less room than that
 * is refused here, before a server opens a stream (§4.5: errors known
 * before the first token are plain HTTP errors).
 */
static enum rs_status
check_reserve(const struct rs_gen *g, const struct rs_gen_req *r,
    struct rs_gen_error *ge)
{
	int64_t	room = (int64_t)g->n_ctx - (int64_t)r->n_prompt;

	if ((int64_t)r->n_reserve <= room)
		return (RS_OK);
	return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, "tool_choice",
	    "tool_choice: the prompt leaves %lld tokens of context, the forced "
	    "tool call needs %zu", (long long)room, r->n_reserve));
}

/* The context rule of §4.9, with both phrasings clients match (§4.6). */
static enum rs_status
check_context(const struct rs_gen *g, const struct rs_gen_req *r,
    struct rs_gen_error *ge)
{
	/* the field the prompt came from: a completions prompt of token
	   ids is "prompt" */
	const char	*param = r->input != NULL ? r->input : r->kind ==
			    RS_GEN_CHAT ? "messages" : r->kind == RS_GEN_TEXT ?
			    "prompt" : "tokens";

	if (r->n_prompt == 0)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, param,
		    "%s: the prompt is empty (no tokens)", param));
	for (size_t i = 0; i < r->n_prompt; i++)
		if (r->prompt[i] < 0 || r->prompt[i] >= g->n_vocab)
			return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, param,
			    "%s: token id %d at %zu is outside the vocabulary "
			    "[0, %d)", param, (int)r->prompt[i], i,
			    (int)g->n_vocab));
	if ((int64_t)r->n_prompt < (int64_t)g->n_ctx - 1)
		return (check_reserve(g, r, ge));
	/* (both phrasings, which clients match, §4.6; where the prompt
	   itself fits, the rule that refuses it, §4.9: the answer needs a
	   position; all within the 256 bytes of a message at 262,144) */
	rs_gen_fail(ge, RS_ERR_LIMIT, param, "This model's maximum context "
	    "length is %d tokens. However, your messages resulted in %zu "
	    "tokens. Please reduce the length of the messages. (request (%zu "
	    "tokens) exceeds the available context size (%d tokens))%s",
	    (int)g->n_ctx, r->n_prompt, r->n_prompt, (int)g->n_ctx,
	    (int64_t)r->n_prompt < (int64_t)g->n_ctx ? " Leave 2 positions "
	    "free." : "");
	if (ge != NULL) {
		ge->type = "exceed_context_size_error";
		ge->n_prompt_tokens = (int64_t)r->n_prompt;
		ge->n_ctx = g->n_ctx;
	}
	return (RS_ERR_LIMIT);
}

enum rs_status
rs_gen_prepare(const struct rs_gen *g, struct rs_gen_req *r,
    struct rs_gen_error *ge)
{
	enum rs_status	st = RS_OK;

	if (r->prepared)
		return (RS_OK);
	if (r->kind != RS_GEN_TOKENS) {
		free(r->prompt);
		free(r->forced);
		free(r->rendered);
		free(r->name_ids);
		free(r->name_end);
		r->name_ids = NULL;
		r->name_end = NULL;
		r->n_names = r->n_reserve = 0;
		r->prompt = r->forced = NULL;
		r->rendered = NULL;
		r->n_prompt = r->n_forced = r->rendered_len = 0;
		r->thinking = 0;
	}
	if (r->kind == RS_GEN_CHAT)
		st = prepare_chat(g, r, ge);
	else if (r->kind == RS_GEN_TEXT)
		st = prepare_text(g, r, ge);
	if (st == RS_OK && (st = check_context(g, r, ge)) == RS_OK)
		r->prepared = 1;
	return (st);
}
