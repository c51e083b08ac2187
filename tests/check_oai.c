/*
 * check_oai.c - the OpenAI wire format: SSE chunks, whole responses,
 * error envelopes, the model list and the Copilot entry (serving.md §4,
 * §5).  Expected shapes come from the spec's examples (§4.4, §4.5, §4.6,
 * §4.11, §5.3), values from independent arithmetic.  Logprobs: token ids
 * are looked up in the tiny vocabulary by their text, so the bytes
 * expected are the texts searched for.
 */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_oai.h"
#include "t_tok.h"

static const unsigned char zeros[32];

/* Parse every "data: {...}" event of TEXT; the count in *N. */
static struct rs_json **
events(const char *text, size_t *n, int *done)
{
	struct rs_json	**v = NULL;
	const char	 *p = text, *e;

	*n = 0;
	*done = 0;
	while (*p != '\0') {
		ck_assert_msg(strncmp(p, "data: ", 6) == 0, "event at '%s'",
		    p);
		p += 6;
		e = strstr(p, "\n\n");
		ck_assert_ptr_nonnull(e);
		ck_assert_ptr_null(memchr(p, '\n', (size_t)(e - p)));
		if (e - p == 6 && strncmp(p, "[DONE]", 6) == 0) {
			*done = 1;
		} else {
			v = realloc(v, (*n + 1) * sizeof(*v));
			ck_assert_int_eq(rs_json_parse(p, (size_t)(e - p),
			    &v[*n], NULL), RS_OK);
			(*n)++;
		}
		p = e + 2;
	}
	return (v);
}

static const char *
str_at(const struct rs_json *j, const char *k1, const char *k2)
{
	const char	*s;
	size_t		 n;
	struct rs_json	*v = rs_json_get(j, k1);

	if (k2 != NULL)
		v = rs_json_get(v, k2);
	if (v == NULL || rs_json_as_str(v, &s, &n) != 0)
		return (NULL);
	return (s);
}

static struct rs_json *
choice0(const struct rs_json *chunk)
{
	return (rs_json_arr_at(rs_json_get(chunk, "choices"), 0));
}

static void
result_init(struct rs_gen_result *res, const char *content,
    const char *reasoning)
{
	memset(res, 0, sizeof(*res));
	res->finish = RS_GEN_FINISH_STOP;
	res->content = (char *)content;
	res->content_len = strlen(content);
	res->reasoning = (char *)reasoning;
	res->reasoning_len = strlen(reasoning);
	res->usage.prompt_tokens = 52;
	res->usage.completion_tokens = 14;
	res->usage.total_tokens = 66;
	res->usage.reasoning_tokens = 6;
	res->timings.predicted_n = 14;
}

START_TEST(ids)
{
	unsigned char	rnd[32];
	char		id[RS_OAI_ID_MAX];
	int		i;

	for (i = 0; i < 32; i++)
		rnd[i] = (unsigned char)(i * 37 + 5);
	rs_oai_make_id(RS_OAI_CHAT, rnd, id);
	ck_assert_uint_eq(strlen(id), 9 + 32);
	ck_assert_int_eq(strncmp(id, "chatcmpl-", 9), 0);
	for (i = 9; i < 41; i++)
		ck_assert_msg(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn"
		    "opqrstuvwxyz0123456789", id[i]) != NULL, "%s", id);
	rs_oai_make_id(RS_OAI_COMPLETION, zeros, id);
	ck_assert_str_eq(id, "cmpl-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
}
END_TEST

/* §4.5's example: role, reasoning, content, finish, usage, [DONE]. */
START_TEST(chat_stream)
{
	struct rs_oai_resp	 r;
	struct rs_gen_event	 ev;
	struct rs_gen_result	 res;
	struct rs_buf		 b;
	struct rs_json		**v;
	size_t			 n, i;
	int			 done;
	int64_t			 x;

	ck_assert_int_eq(rs_oai_resp_init(&r, RS_OAI_CHAT, "chatcmpl-a1",
	    1767139200, "qwen3.8-27b", "fp\"1", 1), 0);
	rs_buf_init(&b);
	ck_assert_int_eq(rs_oai_sse_role(&r, &b), 0);
	memset(&ev, 0, sizeof(ev));
	ev.kind = RS_GEN_EV_REASONING;
	ev.text = "The user greets me.";
	ev.len = strlen(ev.text);
	ck_assert_int_eq(rs_oai_sse_event(&r, &ev, &b), 0);
	ev.kind = RS_GEN_EV_TOKEN;	/* no chunk */
	ck_assert_int_eq(rs_oai_sse_event(&r, &ev, &b), 0);
	ev.kind = RS_GEN_EV_CONTENT;
	ev.text = "Hello!\n\"q\"\t\\ \x01 ok";
	ev.len = strlen(ev.text);
	ck_assert_int_eq(rs_oai_sse_event(&r, &ev, &b), 0);
	result_init(&res, "", "");
	ck_assert_int_eq(rs_oai_sse_end(&r, &res, &b), 0);
	v = events(b.data, &n, &done);
	ck_assert(done);
	ck_assert_uint_eq(n, 5);
	for (i = 0; i < n; i++) {
		/* id, created, model identical in every chunk */
		ck_assert_str_eq(str_at(v[i], "id", NULL), "chatcmpl-a1");
		ck_assert_str_eq(str_at(v[i], "object", NULL),
		    "chat.completion.chunk");
		ck_assert_str_eq(str_at(v[i], "model", NULL), "qwen3.8-27b");
		ck_assert_str_eq(str_at(v[i], "system_fingerprint", NULL),
		    "fp\"1");
		ck_assert_int_eq(rs_json_as_int(rs_json_get(v[i], "created"),
		    &x), 0);
		ck_assert_int_eq(x, 1767139200);
		/* include_usage: usage null before the usage chunk */
		if (i + 1 < n)
			ck_assert_int_eq(rs_json_kind(rs_json_get(v[i],
			    "usage")), RS_JSON_NULL);
	}
	ck_assert_str_eq(str_at(choice0(v[0]), "delta", "role"), "assistant");
	ck_assert_str_eq(str_at(choice0(v[0]), "delta", "content"), "");
	ck_assert_str_eq(str_at(choice0(v[1]), "delta", "reasoning_content"),
	    "The user greets me.");
	ck_assert_str_eq(str_at(choice0(v[2]), "delta", "content"),
	    "Hello!\n\"q\"\t\\ \x01 ok");
	ck_assert_uint_eq(rs_json_obj_len(rs_json_get(choice0(v[3]),
	    "delta")), 0);
	ck_assert_str_eq(str_at(choice0(v[3]), "finish_reason", NULL), "stop");
	ck_assert_uint_eq(rs_json_arr_len(rs_json_get(v[4], "choices")), 0);
	ck_assert_int_eq(rs_json_as_int(rs_json_get(rs_json_get(v[4],
	    "usage"), "total_tokens"), &x), 0);
	ck_assert_int_eq(x, 66);
	/* timings ride on the last JSON chunk only */
	ck_assert_ptr_nonnull(rs_json_get(v[4], "timings"));
	ck_assert_ptr_null(rs_json_get(v[3], "timings"));
	for (i = 0; i < n; i++)
		rs_json_free(v[i]);
	free(v);
	rs_buf_cleanup(&b);
	rs_oai_resp_cleanup(&r);
}
END_TEST

/*
 * DEL and the C1 controls (CSI, U+009B) leave a chunk escaped, as
 * rs_json_dumps escapes them in whole bodies (docs/hardening.md), in
 * every text a chunk carries; the parsed value is the text itself.
 */
START_TEST(stream_c1_escaped)
{
	static const char	 text[] = "a\x7f" "b\xc2\x9b" "[2J\xc2\x80"
	    "\xc2\xa0\xc3\x9f";	/* NBSP and sharp s stay raw */
	static const enum rs_gen_ev kinds[] = { RS_GEN_EV_REASONING,
	    RS_GEN_EV_CONTENT, RS_GEN_EV_TOOL_CALL, RS_GEN_EV_TOOL_ARGS };
	struct rs_oai_resp	 r;
	struct rs_gen_event	 ev;
	struct rs_gen_result	 res;
	struct rs_buf		 b;
	struct rs_json		**v, *d;
	size_t			 n, i;
	int			 done, api;

	for (api = 0; api < 2; api++) {
		ck_assert_int_eq(rs_oai_resp_init(&r, api ? RS_OAI_COMPLETION :
		    RS_OAI_CHAT, "x", 1, "m", "f", 0), 0);
		rs_buf_init(&b);
		memset(&ev, 0, sizeof(ev));
		ev.text = text;
		ev.len = strlen(text);
		ev.id = "call_1";
		for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
			ev.kind = kinds[i];
			ck_assert_int_eq(rs_oai_sse_event(&r, &ev, &b), 0);
		}
		result_init(&res, "", "");
		ck_assert_int_eq(rs_oai_sse_end(&r, &res, &b), 0);
		ck_assert_ptr_null(memchr(b.data, 0x7f, b.len));
		ck_assert_ptr_null(strstr(b.data, "\xc2\x9b"));
		ck_assert_ptr_null(strstr(b.data, "\xc2\x80"));
		ck_assert_ptr_nonnull(strstr(b.data,
		    "a\\u007Fb\\u009B[2J\\u0080\xc2\xa0\xc3\x9f"));
		v = events(b.data, &n, &done);
		ck_assert(done);
		/* chat: four deltas and the end; completions: one text */
		ck_assert_uint_eq(n, api ? 2 : 5);
		if (api) {
			ck_assert_str_eq(str_at(choice0(v[0]), "text", NULL),
			    text);
		} else {
			ck_assert_str_eq(str_at(choice0(v[0]), "delta",
			    "reasoning_content"), text);
			ck_assert_str_eq(str_at(choice0(v[1]), "delta",
			    "content"), text);
			for (i = 2; i < 4; i++) {
				d = rs_json_arr_at(rs_json_get(rs_json_get(
				    choice0(v[i]), "delta"), "tool_calls"), 0);
				ck_assert_str_eq(str_at(d, "function", i == 2 ?
				    "name" : "arguments"), text);
			}
		}
		for (i = 0; i < n; i++)
			rs_json_free(v[i]);
		free(v);
		rs_buf_cleanup(&b);
		rs_oai_resp_cleanup(&r);
	}
}
END_TEST

/* §3.5: the first fragment of a call has id, type and name; later ones not. */
START_TEST(tool_call_stream)
{
	struct rs_oai_resp	 r;
	struct rs_gen_event	 ev;
	struct rs_gen_result	 res;
	struct rs_buf		 b;
	struct rs_json		**v, *tc, *fn;
	size_t			 n, i;
	int			 done;
	int64_t			 idx;

	ck_assert_int_eq(rs_oai_resp_init(&r, RS_OAI_CHAT, "chatcmpl-b",
	    1, "m", "f", 0), 0);
	rs_buf_init(&b);
	memset(&ev, 0, sizeof(ev));
	ev.kind = RS_GEN_EV_TOOL_CALL;
	ev.index = 1;
	ev.id = "call_Qh7m2ZpX0aLr9sT3uVwY1bCd";
	ev.text = "get_weather";
	ev.len = strlen(ev.text);
	rs_oai_sse_event(&r, &ev, &b);
	ev.kind = RS_GEN_EV_TOOL_ARGS;
	ev.id = NULL;
	ev.text = "{\"city\": \"";
	ev.len = strlen(ev.text);
	rs_oai_sse_event(&r, &ev, &b);
	result_init(&res, "", "");
	res.finish = RS_GEN_FINISH_TOOL_CALLS;
	rs_oai_sse_end(&r, &res, &b);
	v = events(b.data, &n, &done);
	ck_assert(done);
	ck_assert_uint_eq(n, 3);
	tc = rs_json_arr_at(rs_json_get(rs_json_get(choice0(v[0]), "delta"),
	    "tool_calls"), 0);
	ck_assert_int_eq(rs_json_as_int(rs_json_get(tc, "index"), &idx), 0);
	ck_assert_int_eq(idx, 1);
	ck_assert_str_eq(str_at(tc, "id", NULL),
	    "call_Qh7m2ZpX0aLr9sT3uVwY1bCd");
	ck_assert_str_eq(str_at(tc, "type", NULL), "function");
	fn = rs_json_get(tc, "function");
	ck_assert_str_eq(str_at(fn, "name", NULL), "get_weather");
	ck_assert_str_eq(str_at(fn, "arguments", NULL), "");
	tc = rs_json_arr_at(rs_json_get(rs_json_get(choice0(v[1]), "delta"),
	    "tool_calls"), 0);
	ck_assert_ptr_null(rs_json_get(tc, "id"));
	ck_assert_ptr_null(rs_json_get(tc, "type"));
	ck_assert_int_eq(rs_json_as_int(rs_json_get(tc, "index"), &idx), 0);
	ck_assert_int_eq(idx, 1);
	ck_assert_str_eq(str_at(rs_json_get(tc, "function"), "arguments",
	    NULL), "{\"city\": \"");
	ck_assert_str_eq(str_at(choice0(v[2]), "finish_reason", NULL),
	    "tool_calls");
	/* without include_usage there is no usage key at all */
	ck_assert_ptr_null(rs_json_get(v[0], "usage"));
	ck_assert_ptr_nonnull(rs_json_get(v[2], "timings"));
	for (i = 0; i < n; i++)
		rs_json_free(v[i]);
	free(v);
	rs_buf_cleanup(&b);
	rs_oai_resp_cleanup(&r);
}
END_TEST

START_TEST(completion_stream)
{
	struct rs_oai_resp	 r;
	struct rs_gen_event	 ev;
	struct rs_gen_result	 res;
	struct rs_buf		 b;
	struct rs_json		**v;
	size_t			 n, i;
	int			 done;

	ck_assert_int_eq(rs_oai_resp_init(&r, RS_OAI_COMPLETION, "cmpl-x", 1,
	    "m", "f", 0), 0);
	rs_buf_init(&b);
	rs_oai_sse_role(&r, &b);	/* chat only */
	ck_assert_uint_eq(b.len, 0);
	memset(&ev, 0, sizeof(ev));
	ev.kind = RS_GEN_EV_REASONING;	/* text completions: content only */
	ev.text = "x";
	ev.len = 1;
	rs_oai_sse_event(&r, &ev, &b);
	ck_assert_uint_eq(b.len, 0);
	ev.kind = RS_GEN_EV_CONTENT;
	ev.text = " Paris";
	ev.len = 6;
	rs_oai_sse_event(&r, &ev, &b);
	result_init(&res, " Paris", "");
	res.finish = RS_GEN_FINISH_LENGTH;
	rs_oai_sse_end(&r, &res, &b);
	v = events(b.data, &n, &done);
	ck_assert(done);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(str_at(v[0], "object", NULL), "text_completion");
	ck_assert_str_eq(str_at(choice0(v[0]), "text", NULL), " Paris");
	ck_assert_str_eq(str_at(choice0(v[1]), "finish_reason", NULL),
	    "length");
	for (i = 0; i < n; i++)
		rs_json_free(v[i]);
	free(v);
	rs_buf_cleanup(&b);
	rs_oai_resp_cleanup(&r);
}
END_TEST

/* §4.4: content null only beside tool calls; reasoning only when there. */
START_TEST(whole_response)
{
	struct rs_oai_resp	 r;
	struct rs_gen_result	 res;
	struct rs_gen_call	 call;
	struct rs_json		*j, *msg, *tc;

	rs_oai_resp_init(&r, RS_OAI_CHAT, "chatcmpl-c", 7, "m", "f", 1);
	result_init(&res, "Final answer text", "Reasoning text");
	j = rs_oai_response(&r, &res);
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(str_at(j, "object", NULL), "chat.completion");
	ck_assert_str_eq(str_at(j, "id", NULL), "chatcmpl-c");
	msg = rs_json_get(choice0(j), "message");
	ck_assert_str_eq(str_at(msg, "role", NULL), "assistant");
	ck_assert_str_eq(str_at(msg, "content", NULL), "Final answer text");
	ck_assert_str_eq(str_at(msg, "reasoning_content", NULL),
	    "Reasoning text");
	ck_assert_ptr_null(rs_json_get(msg, "tool_calls"));
	ck_assert_str_eq(str_at(choice0(j), "finish_reason", NULL), "stop");
	ck_assert_ptr_nonnull(rs_json_get(j, "usage"));
	ck_assert_ptr_nonnull(rs_json_get(j, "timings"));
	rs_json_free(j);

	result_init(&res, "", "");
	memset(&call, 0, sizeof(call));
	call.id = "call_1";
	call.name = "get_weather";
	call.arguments = "{\"city\": \"Paris\"}";
	call.args_len = strlen(call.arguments);
	res.calls = &call;
	res.n_calls = 1;
	res.finish = RS_GEN_FINISH_TOOL_CALLS;
	j = rs_oai_response(&r, &res);
	msg = rs_json_get(choice0(j), "message");
	ck_assert_int_eq(rs_json_kind(rs_json_get(msg, "content")),
	    RS_JSON_NULL);
	ck_assert_ptr_null(rs_json_get(msg, "reasoning_content"));
	tc = rs_json_arr_at(rs_json_get(msg, "tool_calls"), 0);
	ck_assert_str_eq(str_at(tc, "function", "name"), "get_weather");
	ck_assert_str_eq(str_at(tc, "function", "arguments"),
	    "{\"city\": \"Paris\"}");
	ck_assert_str_eq(str_at(choice0(j), "finish_reason", NULL),
	    "tool_calls");
	rs_json_free(j);

	/* no tool calls and no text: "" (not null) */
	res.calls = NULL;
	res.n_calls = 0;
	res.finish = RS_GEN_FINISH_LENGTH;
	j = rs_oai_response(&r, &res);
	ck_assert_str_eq(str_at(rs_json_get(choice0(j), "message"), "content",
	    NULL), "");
	rs_json_free(j);
	rs_oai_resp_cleanup(&r);

	rs_oai_resp_init(&r, RS_OAI_COMPLETION, "cmpl-d", 7, "m", "f", 0);
	result_init(&res, "abc", "");
	j = rs_oai_response(&r, &res);
	ck_assert_str_eq(str_at(j, "object", NULL), "text_completion");
	ck_assert_str_eq(str_at(choice0(j), "text", NULL), "abc");
	rs_json_free(j);
	rs_oai_resp_cleanup(&r);
}
END_TEST

/* ---- logprobs ---- */

/* Id of the token whose bytes are TEXT in TOK (fails the test if none). */
static int32_t
tid(const struct rs_tok *tok, const char *text)
{
	int32_t id = rs_tok_find(tok, text, strlen(text));

	ck_assert_msg(id >= 0, "'%s' is no token of the tiny vocabulary",
	    text);
	return (id);
}

/* An entry for TOK with LOGPROB and alternatives TOP[0..N). */
static struct rs_logprob
entry(int32_t tok, double logprob, const int32_t *top, const double *tlp,
    int n)
{
	struct rs_logprob lp;

	memset(&lp, 0, sizeof(lp));
	lp.token = tok;
	lp.logprob = logprob;
	lp.n_top = n;
	for (int j = 0; j < n; j++) {
		lp.top[j].token = top[j];
		lp.top[j].logprob = tlp[j];
	}
	return (lp);
}

static double
num(const struct rs_json *j)
{
	double d;

	ck_assert_int_eq(rs_json_as_real(j, &d), 0);
	return (d);
}

/* {"token": TEXT, "logprob": LP, "bytes": BYTES of N} */
static void
ck_token(const struct rs_json *e, const char *text, double lp,
    const char *bytes, size_t n)
{
	struct rs_json	*b = rs_json_get(e, "bytes");
	int64_t		 v;

	ck_assert_str_eq(str_at(e, "token", NULL), text);
	ck_assert(num(rs_json_get(e, "logprob")) == lp);
	ck_assert_uint_eq(rs_json_arr_len(b), n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_int_eq(rs_json_as_int(rs_json_arr_at(b, i), &v), 0);
		ck_assert_int_eq(v, (unsigned char)bytes[i]);
	}
}

/* The "content" list of chunk or body J's choice. */
static struct rs_json *
lp_content(const struct rs_json *j)
{
	return (rs_json_get(rs_json_get(choice0(j), "logprobs"), "content"));
}

/*
 * Chat stream: each chunk carries the entries queued since the previous
 * one, the finish chunk the rest; chunks with none carry null.  A token
 * holding part of a character has the valid part as "token" (here
 * nothing) and all its bytes; a padding row has neither; a control token
 * is spelled out.
 */
START_TEST(logprobs_chat_stream)
{
	struct rs_tok		*tok = t_tok_load("tiny/model-q8_0.gguf",
				    RS_TOK_NORM_DEFAULT);
	int32_t			 where = tid(tok, " where"), e2 = tid(tok,
				    "\xe2"), end = tid(tok, "<|im_end|>"),
				    x = tid(tok, "x"), pad = 2100;
	int32_t			 top[2] = { where, end };
	double			 tlp[2] = { -0.5, -1.25 };
	struct rs_logprob	 lp[4];
	struct rs_oai_resp	 r;
	struct rs_gen_event	 ev;
	struct rs_gen_result	 res;
	struct rs_buf		 b;
	struct rs_json		**v, *c, *t;
	size_t			 n, i;
	int			 done;

	/* 2057 tokens (tiny-tokenizer.json), 2176 rows: 2100 is padding */
	ck_assert_int_eq(rs_tok_type(tok, pad), RS_TOK_UNUSED);
	lp[0] = entry(where, -0.5, top, tlp, 2);
	lp[1] = entry(e2, -2.0, NULL, NULL, 0);
	lp[2] = entry(pad, -3.0, NULL, NULL, 0);
	lp[3] = entry(x, -0.125, NULL, NULL, 0);
	ck_assert_int_eq(rs_oai_resp_init(&r, RS_OAI_CHAT, "chatcmpl-l", 1,
	    "m", "f", 0), 0);
	rs_oai_resp_logprobs(&r, tok);
	rs_buf_init(&b);
	rs_oai_sse_role(&r, &b);
	memset(&ev, 0, sizeof(ev));
	ev.kind = RS_GEN_EV_LOGPROB;
	ev.lp = &lp[0];
	rs_oai_sse_event(&r, &ev, &b);
	ck_assert_uint_eq(b.len, strstr(b.data, "\n\n") + 2 - b.data);
	ev.kind = RS_GEN_EV_REASONING;
	ev.text = " where";
	ev.len = 6;
	rs_oai_sse_event(&r, &ev, &b);
	ev.kind = RS_GEN_EV_LOGPROB;
	ev.lp = &lp[1];
	rs_oai_sse_event(&r, &ev, &b);
	ev.lp = &lp[2];
	rs_oai_sse_event(&r, &ev, &b);
	ev.kind = RS_GEN_EV_TOKEN;	/* no chunk, no entry */
	rs_oai_sse_event(&r, &ev, &b);
	ev.kind = RS_GEN_EV_CONTENT;
	ev.text = "y";
	ev.len = 1;
	rs_oai_sse_event(&r, &ev, &b);
	ev.kind = RS_GEN_EV_CONTENT;	/* nothing queued: null */
	rs_oai_sse_event(&r, &ev, &b);
	ev.kind = RS_GEN_EV_LOGPROB;	/* text the parser kept: finish */
	ev.lp = &lp[3];
	rs_oai_sse_event(&r, &ev, &b);
	result_init(&res, "yy", " where");
	rs_oai_sse_end(&r, &res, &b);
	v = events(b.data, &n, &done);
	ck_assert(done);
	ck_assert_uint_eq(n, 5);
	ck_assert_int_eq(rs_json_kind(rs_json_get(choice0(v[0]),
	    "logprobs")), RS_JSON_NULL);
	c = lp_content(v[1]);
	ck_assert_uint_eq(rs_json_arr_len(c), 1);
	ck_token(rs_json_arr_at(c, 0), " where", -0.5, " where", 6);
	t = rs_json_get(rs_json_arr_at(c, 0), "top_logprobs");
	ck_assert_uint_eq(rs_json_arr_len(t), 2);
	ck_token(rs_json_arr_at(t, 0), " where", -0.5, " where", 6);
	ck_token(rs_json_arr_at(t, 1), "<|im_end|>", -1.25, "<|im_end|>", 10);
	c = lp_content(v[2]);
	ck_assert_uint_eq(rs_json_arr_len(c), 2);
	ck_token(rs_json_arr_at(c, 0), "", -2.0, "\xe2", 1);
	ck_token(rs_json_arr_at(c, 1), "", -3.0, "", 0);
	ck_assert_uint_eq(rs_json_arr_len(rs_json_get(rs_json_arr_at(c, 1),
	    "top_logprobs")), 0);
	ck_assert_int_eq(rs_json_kind(rs_json_get(choice0(v[3]),
	    "logprobs")), RS_JSON_NULL);
	ck_assert_str_eq(str_at(choice0(v[4]), "finish_reason", NULL), "stop");
	c = lp_content(v[4]);
	ck_assert_uint_eq(rs_json_arr_len(c), 1);
	ck_token(rs_json_arr_at(c, 0), "x", -0.125, "x", 1);
	for (i = 0; i < n; i++)
		rs_json_free(v[i]);
	free(v);

	/* the whole body: all four, in order; without logprobs: null */
	res.logprobs = lp;
	res.n_logprobs = 4;
	v = malloc(sizeof(*v));
	v[0] = rs_oai_response(&r, &res);
	c = lp_content(v[0]);
	ck_assert_uint_eq(rs_json_arr_len(c), 4);
	ck_token(rs_json_arr_at(c, 0), " where", -0.5, " where", 6);
	ck_token(rs_json_arr_at(c, 1), "", -2.0, "\xe2", 1);
	ck_token(rs_json_arr_at(c, 3), "x", -0.125, "x", 1);
	rs_json_free(v[0]);
	rs_oai_resp_cleanup(&r);
	rs_oai_resp_init(&r, RS_OAI_CHAT, "chatcmpl-m", 1, "m", "f", 0);
	v[0] = rs_oai_response(&r, &res);
	ck_assert_int_eq(rs_json_kind(rs_json_get(choice0(v[0]),
	    "logprobs")), RS_JSON_NULL);
	rs_json_free(v[0]);
	free(v);
	rs_oai_resp_cleanup(&r);
	rs_buf_cleanup(&b);
	rs_tok_free(tok);
}
END_TEST

/* I-th integer of array A. */
static int64_t
int_at(const struct rs_json *a, size_t i)
{
	int64_t v;

	ck_assert_int_eq(rs_json_as_int(rs_json_arr_at(a, i), &v), 0);
	return (v);
}

/* I-th string of array A. */
static const char *
str_el(const struct rs_json *a, size_t i)
{
	const char	*s;
	size_t		 n;

	ck_assert_int_eq(rs_json_as_str(rs_json_arr_at(a, i), &s, &n), 0);
	return (s);
}

/*
 * Text completions: parallel lists; the top object holds the chosen
 * token too; text_offset counts code points of the text across chunks:
 * " where" is 6, and "€" (E2 82 AC, three byte tokens) starts at 6 and
 * ends at 7.  A token that is part of a character is "bytes:\xe2" (as
 * OpenAI spells it), so two such alternatives keep two keys.
 */
START_TEST(logprobs_completion)
{
	struct rs_tok		*tok = t_tok_load("tiny/model-q8_0.gguf",
				    RS_TOK_NORM_DEFAULT);
	int32_t			 ids[5] = { tid(tok, " where"), tid(tok,
				    "\xe2"), tid(tok, "\x82"), tid(tok,
				    "\xac"), tid(tok, "x") };
	int32_t			 top[1] = { tid(tok, "<|im_end|>") };
	double			 tlp[1] = { -1.5 };
	static const int64_t	 offsets[5] = { 0, 6, 7, 7, 7 };
	struct rs_logprob	 lp[5];
	struct rs_oai_resp	 r;
	struct rs_gen_event	 ev;
	struct rs_gen_result	 res;
	struct rs_buf		 b;
	struct rs_json		**v, *o, *a, *body;
	size_t			 n, i;
	int			 done;

	for (i = 0; i < 5; i++)
		lp[i] = entry(ids[i], -0.25 * (double)(i + 1), top, tlp,
		    i == 0);
	lp[1].n_top = 1;	/* E2's alternative: 82 */
	lp[1].top[0].token = ids[2];
	lp[1].top[0].logprob = -3.0;
	rs_oai_resp_init(&r, RS_OAI_COMPLETION, "cmpl-l", 1, "m", "f", 0);
	rs_oai_resp_logprobs(&r, tok);
	rs_buf_init(&b);
	memset(&ev, 0, sizeof(ev));
	for (i = 0; i < 5; i++) {
		ev.kind = RS_GEN_EV_LOGPROB;
		ev.lp = &lp[i];
		rs_oai_sse_event(&r, &ev, &b);
		if (i == 0 || i == 3) {
			ev.kind = RS_GEN_EV_CONTENT;
			ev.text = i == 0 ? " where" : "\xe2\x82\xac";
			ev.len = strlen(ev.text);
			rs_oai_sse_event(&r, &ev, &b);
		}
	}
	result_init(&res, " where\xe2\x82\xacx", "");
	rs_oai_sse_end(&r, &res, &b);
	v = events(b.data, &n, &done);
	ck_assert_uint_eq(n, 3);
	o = rs_json_get(choice0(v[0]), "logprobs");
	a = rs_json_get(o, "tokens");
	ck_assert_uint_eq(rs_json_arr_len(a), 1);
	ck_assert_str_eq(str_el(a, 0), " where");
	ck_assert(num(rs_json_arr_at(rs_json_get(o, "token_logprobs"), 0)) ==
	    -0.25);
	ck_assert_int_eq(int_at(rs_json_get(o, "text_offset"), 0), 0);
	a = rs_json_arr_at(rs_json_get(o, "top_logprobs"), 0);
	ck_assert_uint_eq(rs_json_obj_len(a), 2);
	ck_assert(num(rs_json_get(a, " where")) == -0.25);
	ck_assert(num(rs_json_get(a, "<|im_end|>")) == -1.5);
	o = rs_json_get(choice0(v[1]), "logprobs");
	ck_assert_uint_eq(rs_json_arr_len(rs_json_get(o, "tokens")), 3);
	ck_assert_int_eq(int_at(rs_json_get(o, "text_offset"), 0), 6);
	ck_assert_int_eq(int_at(rs_json_get(o, "text_offset"), 1), 7);
	ck_assert_int_eq(int_at(rs_json_get(o, "text_offset"), 2), 7);
	/* parts of a character */
	ck_assert_str_eq(str_el(rs_json_get(o, "tokens"), 0), "bytes:\\xe2");
	ck_assert_str_eq(str_el(rs_json_get(o, "tokens"), 1), "bytes:\\x82");
	ck_assert_str_eq(str_el(rs_json_get(o, "tokens"), 2), "bytes:\\xac");
	a = rs_json_arr_at(rs_json_get(o, "top_logprobs"), 0);
	ck_assert_uint_eq(rs_json_obj_len(a), 2);
	ck_assert(num(rs_json_get(a, "bytes:\\xe2")) == -0.5);
	ck_assert(num(rs_json_get(a, "bytes:\\x82")) == -3.0);
	/* the finish chunk: the last token, at offset 7 */
	o = rs_json_get(choice0(v[2]), "logprobs");
	ck_assert_int_eq(int_at(rs_json_get(o, "text_offset"), 0), 7);
	a = rs_json_arr_at(rs_json_get(o, "top_logprobs"), 0);
	ck_assert_uint_eq(rs_json_obj_len(a), 1);
	ck_assert(num(rs_json_get(a, "x")) == -1.25);
	for (i = 0; i < n; i++)
		rs_json_free(v[i]);
	free(v);
	/* the whole body: offsets from 0 again */
	res.logprobs = lp;
	res.n_logprobs = 5;
	body = rs_oai_response(&r, &res);
	o = rs_json_get(choice0(body), "logprobs");
	for (i = 0; i < 5; i++)
		ck_assert_int_eq(int_at(rs_json_get(o, "text_offset"), i),
		    offsets[i]);
	ck_assert_str_eq(str_el(rs_json_get(o, "tokens"), 4), "x");
	rs_json_free(body);
	rs_oai_resp_cleanup(&r);
	rs_buf_cleanup(&b);
	rs_tok_free(tok);
}
END_TEST

/* §4.6's table. */
START_TEST(errors)
{
	static const struct {
		int		 code;
		const char	*type;
	} t[] = {
		{ 400, "invalid_request_error" },
		{ 401, "authentication_error" },
		{ 403, "permission_error" },
		{ 404, "not_found_error" },
		{ 405, "invalid_request_error" },
		{ 413, "invalid_request_error" },
		{ 500, "server_error" },
		{ 501, "not_supported_error" },
		{ 503, "unavailable_error" },
	};
	struct rs_json	*j, *e;
	size_t		 i;
	int64_t		 code;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		ck_assert_str_eq(rs_oai_error_type(t[i].code), t[i].type);
	j = rs_oai_error(400, NULL, "bad \"x\"", "messages[3].content");
	e = rs_json_get(j, "error");
	ck_assert_str_eq(str_at(e, "message", NULL), "bad \"x\"");
	ck_assert_str_eq(str_at(e, "type", NULL), "invalid_request_error");
	ck_assert_str_eq(str_at(e, "param", NULL), "messages[3].content");
	ck_assert_int_eq(rs_json_as_int(rs_json_get(e, "code"), &code), 0);
	ck_assert_int_eq(code, 400);
	ck_assert_uint_eq(rs_json_obj_len(j), 1);
	rs_json_free(j);
	j = rs_oai_error(503, "unavailable_error", "Loading model", "");
	e = rs_json_get(j, "error");
	ck_assert_int_eq(rs_json_kind(rs_json_get(e, "param")), RS_JSON_NULL);
	rs_json_free(j);
}
END_TEST

START_TEST(models)
{
	struct rs_oai_model	 m = { "qwen3.8-27b", 1767139200, 131072,
	    262144, 248320, 1, 1 };
	struct rs_json		*j, *d;
	int64_t			 x;

	j = rs_oai_models(&m);
	ck_assert_str_eq(str_at(j, "object", NULL), "list");
	d = rs_json_arr_at(rs_json_get(j, "data"), 0);
	ck_assert_str_eq(str_at(d, "id", NULL), "qwen3.8-27b");
	ck_assert_str_eq(str_at(d, "object", NULL), "model");
	ck_assert_str_eq(str_at(d, "owned_by", NULL), "local");
	ck_assert_int_eq(rs_json_as_int(rs_json_get(rs_json_get(d, "meta"),
	    "n_ctx"), &x), 0);
	ck_assert_int_eq(x, 131072);
	ck_assert_int_eq(rs_json_as_int(rs_json_get(rs_json_get(d, "meta"),
	    "n_vocab"), &x), 0);
	ck_assert_int_eq(x, 248320);
	rs_json_free(j);
}
END_TEST

/* §5.2's URL rule and §5.3's numbers. */
START_TEST(copilot)
{
	static const struct {
		const char	*in;
		const char	*out;
	} urls[] = {
		{ "http://h:8081/v1", "http://h:8081/v1/chat/completions" },
		{ "http://h:8081/v1/", "http://h:8081/v1/chat/completions" },
		{ "http://h:8081", "http://h:8081/v1/chat/completions" },
		{ "http://h:8081/", "http://h:8081/v1/chat/completions" },
		{ "https://h/api/v2", "https://h/api/v2/chat/completions" },
		{ "http://h/v", "http://h/v/v1/chat/completions" },
		{ "http://h/x/chat/completions",
		    "http://h/x/chat/completions" },
	};
	struct rs_oai_model	 m = { "qwen3.8-27b", 0, 131072, 262144, 0,
	    1, 1 };
	struct rs_json		*j, *e, *eff;
	int64_t			 in, out, x;
	size_t			 i;
	char			*s;
	const char		*v;
	size_t			 n;

	for (i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
		s = rs_oai_chat_url(urls[i].in);
		ck_assert_str_eq(s, urls[i].out);
		free(s);
	}
	rs_oai_copilot_budget(131072, &in, &out);
	ck_assert_int_eq(in, 86000);
	ck_assert_int_eq(out, 32768);
	rs_oai_copilot_budget(262144, &in, &out);
	ck_assert_int_eq(in, 200000);
	ck_assert_int_eq(out, 32768);
	rs_oai_copilot_budget(4096, &in, &out);
	ck_assert_int_eq(out, 1024);
	ck_assert_int_eq(in, 2000);	/* 3072 - 384 = 2688 */
	rs_oai_copilot_budget(1000, &in, &out);
	ck_assert_int_eq(out, 250);
	ck_assert_int_eq(in, 657);	/* 750 - 93, under 1000: not rounded */

	j = rs_oai_copilot(&m, "Qwen3.8 27B (local)", "http://HOST:8081/v1");
	ck_assert_uint_eq(rs_json_arr_len(j), 1);
	e = rs_json_get(rs_json_arr_at(j, 0), "models");
	ck_assert_str_eq(str_at(rs_json_arr_at(j, 0), "vendor", NULL),
	    "customendpoint");
	ck_assert_str_eq(str_at(rs_json_arr_at(j, 0), "apiType", NULL),
	    "chat-completions");
	e = rs_json_arr_at(e, 0);
	ck_assert_str_eq(str_at(e, "id", NULL), "qwen3.8-27b");
	ck_assert_str_eq(str_at(e, "url", NULL),
	    "http://HOST:8081/v1/chat/completions");
	ck_assert_int_eq(rs_json_as_int(rs_json_get(e, "maxInputTokens"), &x),
	    0);
	ck_assert_int_eq(x, 86000);
	ck_assert_int_eq(rs_json_as_int(rs_json_get(e, "maxOutputTokens"),
	    &x), 0);
	ck_assert_int_eq(x, 32768);
	ck_assert_int_eq(rs_json_as_int(rs_json_get(e, "contextWindow"),
	    &x), 0);
	ck_assert_int_eq(x, 131072);
	eff = rs_json_get(e, "supportsReasoningEffort");
	ck_assert_uint_eq(rs_json_arr_len(eff), 4);
	rs_json_as_str(rs_json_arr_at(eff, 3), &v, &n);
	ck_assert_str_eq(v, "xhigh");
	ck_assert_str_eq(str_at(e, "reasoningEffortFormat", NULL),
	    "chat-completions");
	rs_json_free(j);
	/* a switch without levels: a menu of none and medium, so that
	   Copilot's turns can ask for thinking (off by default, §2.5) */
	m.effort = 0;
	j = rs_oai_copilot(&m, "x", "http://h");
	e = rs_json_arr_at(rs_json_get(rs_json_arr_at(j, 0), "models"), 0);
	eff = rs_json_get(e, "supportsReasoningEffort");
	ck_assert_uint_eq(rs_json_arr_len(eff), 2);
	rs_json_as_str(rs_json_arr_at(eff, 0), &v, &n);
	ck_assert_str_eq(v, "none");
	rs_json_as_str(rs_json_arr_at(eff, 1), &v, &n);
	ck_assert_str_eq(v, "medium");
	ck_assert_str_eq(str_at(e, "reasoningEffortFormat", NULL),
	    "chat-completions");
	rs_json_free(j);
	/* no thinking switch: no menu */
	m.thinking = 0;
	j = rs_oai_copilot(&m, "x", "http://h");
	e = rs_json_arr_at(rs_json_get(rs_json_arr_at(j, 0), "models"), 0);
	ck_assert_ptr_null(rs_json_get(e, "supportsReasoningEffort"));
	rs_json_free(j);
}
END_TEST

Suite *
oai_suite(void)
{
	Suite	*s = suite_create("oai");
	TCase	*tc;

	tc = tcase_create("stream");
	tcase_add_test(tc, ids);
	tcase_add_test(tc, chat_stream);
	tcase_add_test(tc, tool_call_stream);
	tcase_add_test(tc, completion_stream);
	tcase_add_test(tc, stream_c1_escaped);
	suite_add_tcase(s, tc);
	tc = tcase_create("bodies");
	tcase_add_test(tc, whole_response);
	tcase_add_test(tc, errors);
	tcase_add_test(tc, models);
	tcase_add_test(tc, copilot);
	suite_add_tcase(s, tc);
	tc = tcase_create("logprobs");
	tcase_add_test(tc, logprobs_chat_stream);
	tcase_add_test(tc, logprobs_completion);
	suite_add_tcase(s, tc);
	return (s);
}
