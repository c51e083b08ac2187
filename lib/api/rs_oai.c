/*
 * rs_oai.c - OpenAI response bodies, SSE chunks, errors, the model list and
 * the Copilot entry (see rs_oai.h; serving.md §4, §5).
 *
 * Chunks are assembled as text around a pre-rendered head because a
 * streamed token must be cheap: the only per-token work is escaping its
 * text (§4.5 allows any JSON layout; ours is compact, one line).  Whole
 * bodies go through rs_json, where speed does not matter.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs_oai.h"
#include "rs_utf8.h"

static const char alnum[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

void
rs_oai_make_id(enum rs_oai_api api, const unsigned char rnd[32],
    char id[RS_OAI_ID_MAX])
{
	const char	*pre = api == RS_OAI_CHAT ? "chatcmpl-" : "cmpl-";
	size_t		 n = strlen(pre), i;

	memcpy(id, pre, n);
	/* 62 symbols: the modulo bias (256 % 62 = 8) does not matter for ids */
	for (i = 0; i < 32; i++)
		id[n + i] = alnum[rnd[i] % (sizeof(alnum) - 1)];
	id[n + 32] = '\0';
}

/*
 * Append S (N bytes of UTF-8) as a JSON string, quotes included, escaped
 * as rs_json_dumps escapes: C0 controls as jansson writes them, DEL and
 * the C1 controls (U+0080..U+009F: CSI must not reach a terminal raw
 * when a stream is watched with curl) as \u007F, \u0080 .. \u009F.
 */
static void
add_jstr(struct rs_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef", HEX[] =
	    "0123456789ABCDEF";
	size_t		  i, run;
	unsigned char	  c;

	rs_buf_addc(b, '"');
	for (i = 0, run = 0; i < n; i++) {
		c = (unsigned char)s[i];
		if (c == 0x7F || (c == 0xC2 && i + 1 < n &&
		    (unsigned char)s[i + 1] >= 0x80 &&
		    (unsigned char)s[i + 1] <= 0x9F)) {
			rs_buf_add(b, s + run, i - run);
			if (c == 0xC2)
				c = (unsigned char)s[++i];
			run = i + 1;
			rs_buf_add(b, "\\u00", 4);
			rs_buf_addc(b, HEX[c >> 4]);
			rs_buf_addc(b, HEX[c & 15]);
			continue;
		}
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		rs_buf_add(b, s + run, i - run);
		run = i + 1;
		switch (c) {
		case '"':	rs_buf_add(b, "\\\"", 2); break;
		case '\\':	rs_buf_add(b, "\\\\", 2); break;
		case '\n':	rs_buf_add(b, "\\n", 2); break;
		case '\r':	rs_buf_add(b, "\\r", 2); break;
		case '\t':	rs_buf_add(b, "\\t", 2); break;
		default:
			rs_buf_add(b, "\\u00", 4);
			rs_buf_addc(b, hex[c >> 4]);
			rs_buf_addc(b, hex[c & 15]);
			break;
		}
	}
	rs_buf_add(b, s + run, n - run);
	rs_buf_addc(b, '"');
}

static void
add_jstrz(struct rs_buf *b, const char *s)
{
	add_jstr(b, s, strlen(s));
}

int
rs_oai_resp_init(struct rs_oai_resp *r, enum rs_oai_api api, const char *id,
    int64_t created, const char *model, const char *fingerprint,
    int include_usage)
{
	memset(r, 0, sizeof(*r));
	r->api = api;
	(void)snprintf(r->id, sizeof(r->id), "%s", id);
	r->created = created;
	r->model = strdup(model);
	r->fingerprint = strdup(fingerprint);
	r->include_usage = include_usage;
	rs_buf_init(&r->head);
	if (r->model == NULL || r->fingerprint == NULL)
		return (-1);
	rs_buf_adds(&r->head, "{\"id\":");
	add_jstrz(&r->head, r->id);
	rs_buf_addf(&r->head, ",\"object\":\"%s\",\"created\":%lld,\"model\":",
	    api == RS_OAI_CHAT ? "chat.completion.chunk" : "text_completion",
	    (long long)created);
	add_jstrz(&r->head, model);
	rs_buf_adds(&r->head, ",\"system_fingerprint\":");
	add_jstrz(&r->head, fingerprint);
	rs_buf_addc(&r->head, ',');
	return (r->head.oom ? -1 : 0);
}

void
rs_oai_resp_cleanup(struct rs_oai_resp *r)
{
	if (r == NULL)
		return;
	free(r->model);
	free(r->fingerprint);
	free(r->pend);
	r->model = r->fingerprint = NULL;
	r->pend = NULL;
	r->n_pend = r->cap_pend = 0;
	rs_buf_cleanup(&r->head);
}

void
rs_oai_resp_logprobs(struct rs_oai_resp *r, const struct rs_tok *tok)
{
	r->tok = tok;
	r->offset = 0;
}

/* ---- streaming ---- */

/* 'data: ' + head + '"choices":[{"index":0,' — the choice is left open. */
static void
chunk_open(const struct rs_oai_resp *r, struct rs_buf *out)
{
	rs_buf_add(out, "data: ", 6);
	rs_buf_add(out, r->head.data, r->head.len);
	rs_buf_adds(out, "\"choices\":[{\"index\":0,");
}

static void	add_json(struct rs_buf *out, struct rs_json *j);

/*
 * The queued logprobs as the chunk's "logprobs" value, the queue emptied;
 * NULL when there are none (or they are not asked for).  Out of memory
 * marks OUT.
 */
static struct rs_json *
take_pending(struct rs_oai_resp *r, struct rs_buf *out)
{
	struct rs_json	*j = NULL, *c;

	if (r->tok == NULL || r->n_pend == 0)
		return (NULL);
	if (r->api == RS_OAI_COMPLETION)
		j = rs_oai_logprobs_text(r->pend, r->n_pend, r->tok,
		    &r->offset);
	else if ((c = rs_oai_logprobs_chat(r->pend, r->n_pend, r->tok)) !=
	    NULL && ((j = rs_json_obj()) == NULL ||
	    rs_json_set(j, "content", c) != 0)) {
		if (j == NULL)
			rs_json_free(c);
		rs_json_free(j);
		j = NULL;
	}
	r->n_pend = 0;
	if (j == NULL)
		out->oom = 1;
	return (j);
}

/*
 * Close the choice with logprobs LP (taken; NULL: null), FINISH (NULL:
 * null) and the chunk.
 */
static void
chunk_close(const struct rs_oai_resp *r, struct rs_buf *out,
    struct rs_json *lp, const char *finish)
{
	rs_buf_adds(out, ",\"logprobs\":");
	if (lp != NULL)
		add_json(out, lp);
	else
		rs_buf_adds(out, "null");
	rs_buf_adds(out, ",\"finish_reason\":");
	if (finish != NULL)
		add_jstrz(out, finish);
	else
		rs_buf_adds(out, "null");
	rs_buf_adds(out, "}]");
	if (r->include_usage)
		rs_buf_adds(out, ",\"usage\":null");
}

static int
done(struct rs_buf *out)
{
	return (out->oom ? -1 : 0);
}

int
rs_oai_sse_role(const struct rs_oai_resp *r, struct rs_buf *out)
{
	if (r->api != RS_OAI_CHAT)
		return (done(out));
	chunk_open(r, out);
	rs_buf_adds(out, "\"delta\":{\"role\":\"assistant\",\"content\":\"\"}");
	chunk_close(r, out, NULL, NULL);
	rs_buf_add(out, "}\n\n", 3);
	return (done(out));
}

/* A delta with one text field: {"<key>": "<text>"}. */
static void
delta_text(struct rs_oai_resp *r, struct rs_buf *out, const char *key,
    const struct rs_gen_event *ev)
{
	chunk_open(r, out);
	rs_buf_addf(out, "\"delta\":{\"%s\":", key);
	add_jstr(out, ev->text, ev->len);
	rs_buf_addc(out, '}');
	chunk_close(r, out, take_pending(r, out), NULL);
	rs_buf_add(out, "}\n\n", 3);
}

static void
delta_call(struct rs_oai_resp *r, struct rs_buf *out,
    const struct rs_gen_event *ev)
{
	chunk_open(r, out);
	rs_buf_addf(out, "\"delta\":{\"tool_calls\":[{\"index\":%zu,",
	    ev->index);
	if (ev->kind == RS_GEN_EV_TOOL_CALL) {
		rs_buf_adds(out, "\"id\":");
		add_jstrz(out, ev->id);
		rs_buf_adds(out, ",\"type\":\"function\","
		    "\"function\":{\"name\":");
		add_jstr(out, ev->text, ev->len);
		rs_buf_adds(out, ",\"arguments\":\"\"}}]}");
	} else {
		rs_buf_adds(out, "\"function\":{\"arguments\":");
		add_jstr(out, ev->text, ev->len);
		rs_buf_adds(out, "}}]}");
	}
	chunk_close(r, out, take_pending(r, out), NULL);
	rs_buf_add(out, "}\n\n", 3);
}

/* Queue LP for the next chunk; -1 when out of memory. */
static int
queue(struct rs_oai_resp *r, const struct rs_logprob *lp)
{
	struct rs_logprob	*p;
	size_t			 cap;

	if (r->n_pend == r->cap_pend) {
		cap = r->cap_pend > 0 ? 2 * r->cap_pend : 8;
		if ((p = realloc(r->pend, cap * sizeof(*p))) == NULL)
			return (-1);
		r->pend = p;
		r->cap_pend = cap;
	}
	r->pend[r->n_pend++] = *lp;
	return (0);
}

int
rs_oai_sse_event(struct rs_oai_resp *r, const struct rs_gen_event *ev,
    struct rs_buf *out)
{
	if (ev->kind == RS_GEN_EV_LOGPROB) {
		if (r->tok != NULL && queue(r, ev->lp) != 0)
			out->oom = 1;
		return (done(out));
	}
	if (r->api == RS_OAI_COMPLETION) {
		if (ev->kind == RS_GEN_EV_CONTENT) {
			chunk_open(r, out);
			rs_buf_adds(out, "\"text\":");
			add_jstr(out, ev->text, ev->len);
			chunk_close(r, out, take_pending(r, out), NULL);
			rs_buf_add(out, "}\n\n", 3);
		}
		return (done(out));
	}
	switch (ev->kind) {
	case RS_GEN_EV_REASONING:
		delta_text(r, out, "reasoning_content", ev);
		break;
	case RS_GEN_EV_CONTENT:
		delta_text(r, out, "content", ev);
		break;
	case RS_GEN_EV_TOOL_CALL:
	case RS_GEN_EV_TOOL_ARGS:
		delta_call(r, out, ev);
		break;
	default:
		break;
	}
	return (done(out));
}

/* Append J (taken) compactly; a NULL J (out of memory) marks OUT as OOM. */
static void
add_json(struct rs_buf *out, struct rs_json *j)
{
	char	*s;

	if (j == NULL || (s = rs_json_dumps(j)) == NULL) {
		out->oom = 1;
	} else {
		rs_buf_adds(out, s);
		free(s);
	}
	rs_json_free(j);
}

int
rs_oai_sse_end(struct rs_oai_resp *r, const struct rs_gen_result *res,
    struct rs_buf *out)
{
	const char *finish = rs_gen_finish_name(res->finish);

	chunk_open(r, out);
	rs_buf_adds(out, r->api == RS_OAI_CHAT ? "\"delta\":{}" :
	    "\"text\":\"\"");
	chunk_close(r, out, take_pending(r, out), finish);
	if (r->include_usage) {
		rs_buf_add(out, "}\n\n", 3);
		rs_buf_add(out, "data: ", 6);
		rs_buf_add(out, r->head.data, r->head.len);
		rs_buf_adds(out, "\"choices\":[],\"usage\":");
		add_json(out, rs_gen_usage_json(&res->usage));
	}
	/* timings go on the last JSON chunk, as llama.cpp does (§4.5) */
	rs_buf_adds(out, ",\"timings\":");
	add_json(out, rs_gen_timings_json(&res->timings));
	rs_buf_adds(out, "}\n\ndata: [DONE]\n\n");
	return (done(out));
}

int
rs_oai_sse_error(const struct rs_gen_error *ge, struct rs_buf *out)
{
	rs_buf_add(out, "data: ", 6);
	add_json(out, rs_oai_gen_error(ge));
	rs_buf_add(out, "\n\n", 2);
	return (done(out));
}

int
rs_oai_sse_keepalive(struct rs_buf *out)
{
	rs_buf_adds(out, ": keep-alive\n\n");
	return (done(out));
}

/* ---- whole bodies ---- */

/* OBJ[KEY] = V, remembering a failure in *BAD (V may be NULL: OOM). */
static void
put(struct rs_json *obj, const char *key, struct rs_json *v, int *bad)
{
	if (v == NULL || rs_json_set(obj, key, v) != 0)
		*bad = 1;
}

static struct rs_json *
message_json(const struct rs_gen_result *res, int *bad)
{
	struct rs_json *msg = rs_json_obj();

	if (msg == NULL) {
		*bad = 1;
		return (NULL);
	}
	put(msg, "role", rs_json_str("assistant"), bad);
	/* null only when there is nothing but tool calls (§4.4) */
	if (res->content_len == 0 && res->n_calls > 0)
		put(msg, "content", rs_json_null(), bad);
	else
		put(msg, "content", rs_json_strn(res->content,
		    res->content_len), bad);
	if (res->reasoning_len > 0)
		put(msg, "reasoning_content", rs_json_strn(res->reasoning,
		    res->reasoning_len), bad);
	if (res->n_calls > 0)
		put(msg, "tool_calls", rs_gen_calls_json(res), bad);
	return (msg);
}

/* The choice's "logprobs": null, or all of RES's entries. */
static struct rs_json *
choice_logprobs(const struct rs_oai_resp *r, const struct rs_gen_result *res)
{
	struct rs_json	*o, *c;
	int64_t		 off = 0;

	if (r->tok == NULL)
		return (rs_json_null());
	if (r->api == RS_OAI_COMPLETION)
		return (rs_oai_logprobs_text(res->logprobs, res->n_logprobs,
		    r->tok, &off));
	if ((c = rs_oai_logprobs_chat(res->logprobs, res->n_logprobs,
	    r->tok)) == NULL)
		return (NULL);
	if ((o = rs_json_obj()) == NULL || rs_json_set(o, "content", c) != 0) {
		if (o == NULL)
			rs_json_free(c);
		rs_json_free(o);
		return (NULL);
	}
	return (o);
}

struct rs_json *
rs_oai_response(const struct rs_oai_resp *r, const struct rs_gen_result *res)
{
	struct rs_json	*body, *choices, *choice;
	int		 bad = 0;

	body = rs_json_obj();
	choices = rs_json_arr();
	choice = rs_json_obj();
	if (body == NULL || choices == NULL || choice == NULL)
		bad = 1;
	if (!bad) {
		put(body, "id", rs_json_str(r->id), &bad);
		put(body, "object", rs_json_str(r->api == RS_OAI_CHAT ?
		    "chat.completion" : "text_completion"), &bad);
		put(body, "created", rs_json_int(r->created), &bad);
		put(body, "model", rs_json_str(r->model), &bad);
		put(body, "system_fingerprint", rs_json_str(r->fingerprint),
		    &bad);
		put(choice, "index", rs_json_int(0), &bad);
		if (r->api == RS_OAI_CHAT)
			put(choice, "message", message_json(res, &bad), &bad);
		else
			put(choice, "text", rs_json_strn(res->content,
			    res->content_len), &bad);
		put(choice, "logprobs", choice_logprobs(r, res), &bad);
		put(choice, "finish_reason",
		    rs_json_str(rs_gen_finish_name(res->finish)), &bad);
		if (rs_json_push(choices, choice) != 0)
			bad = 1;
		choice = NULL;
		put(body, "choices", choices, &bad);
		choices = NULL;
		put(body, "usage", rs_gen_usage_json(&res->usage), &bad);
		put(body, "timings", rs_gen_timings_json(&res->timings), &bad);
	}
	rs_json_free(choice);
	rs_json_free(choices);
	if (bad) {
		rs_json_free(body);
		return (NULL);
	}
	return (body);
}

const char *
rs_oai_error_type(int code)
{
	switch (code) {
	case 400:
	case 405:
	case 413:
		return ("invalid_request_error");
	case 401:
		return ("authentication_error");
	case 403:
		return ("permission_error");
	case 404:
		return ("not_found_error");
	case 501:
		return ("not_supported_error");
	case 503:
		return ("unavailable_error");
	default:
		return ("server_error");
	}
}

/* {"error": INNER}, taking INNER. */
static struct rs_json *
envelope(struct rs_json *inner)
{
	struct rs_json *e;

	if (inner == NULL)
		return (NULL);
	if ((e = rs_json_obj()) == NULL || rs_json_set(e, "error", inner)) {
		if (e == NULL)
			rs_json_free(inner);
		rs_json_free(e);
		return (NULL);
	}
	return (e);
}

struct rs_json *
rs_oai_error(int code, const char *type, const char *message,
    const char *param)
{
	struct rs_json	*in;
	int		 bad = 0;

	if ((in = rs_json_obj()) == NULL)
		return (NULL);
	put(in, "message", rs_json_str(message), &bad);
	put(in, "type", rs_json_str(type != NULL ? type :
	    rs_oai_error_type(code)), &bad);
	put(in, "param", param != NULL && *param != '\0' ?
	    rs_json_str(param) : rs_json_null(), &bad);
	put(in, "code", rs_json_int(code), &bad);
	if (bad) {
		rs_json_free(in);
		return (NULL);
	}
	return (envelope(in));
}

struct rs_json *
rs_oai_gen_error(const struct rs_gen_error *ge)
{
	return (envelope(rs_gen_error_json(ge)));
}

/* ---- logprobs ---- */

/*
 * Token ID's bytes as RS_TOK_DEC_SPECIAL decodes them (a control token
 * spelled out; a padding row, outside the tokenizer, has none).
 */
static const char *
token_bytes(const struct rs_tok *tok, int32_t id, size_t *n)
{
	const char *p = rs_tok_piece(tok, id, RS_TOK_DEC_SPECIAL, n);

	if (p == NULL)
		*n = 0;
	return (p != NULL ? p : "");
}

/*
 * The N bytes at P as a token string.  Valid UTF-8 stays as it is.  A
 * token that is part of a character: for chat (TEXT 0) its whole
 * characters only, the rest is in its "bytes" beside it; for a text
 * completion (TEXT 1: "tokens" and the keys of "top_logprobs", with no
 * "bytes") "bytes:" and the token, each byte outside a valid sequence as
 * \xHH, as OpenAI spells it (dropped there, the three byte tokens of one
 * character were all "", one key in "top_logprobs").
 */
static struct rs_json *
token_str(const char *p, size_t n, int text)
{
	static const char	 hex[] = "0123456789abcdef";
	struct rs_json		*j;
	char			*v;
	size_t			 o = 0;
	int			 k;

	if (rs_utf8_valid(p, n, NULL))
		return (rs_json_strn(p, n));
	if ((v = malloc(6 + 4 * n)) == NULL)
		return (NULL);
	if (text) {
		memcpy(v, "bytes:", 6);
		o = 6;
	}
	for (size_t i = 0; i < n; i += k > 0 ? (size_t)k : 1) {
		k = rs_utf8_seq((const unsigned char *)p + i, n - i, NULL);
		if (k > 0) {
			memcpy(v + o, p + i, (size_t)k);
			o += (size_t)k;
		} else if (text) {
			v[o++] = '\\';
			v[o++] = 'x';
			v[o++] = hex[(unsigned char)p[i] >> 4];
			v[o++] = hex[(unsigned char)p[i] & 15];
		}
	}
	j = rs_json_strn(v, o);
	free(v);
	return (j);
}

/* {"token", "logprob", "bytes"} of ID, plus whatever the caller adds. */
static struct rs_json *
token_json(const struct rs_tok *tok, int32_t id, double logprob, int *bad)
{
	struct rs_json	*o = rs_json_obj(), *b = rs_json_arr();
	const char	*p;
	size_t		 n;

	if (o == NULL || b == NULL) {
		rs_json_free(o);
		rs_json_free(b);
		*bad = 1;
		return (NULL);
	}
	p = token_bytes(tok, id, &n);
	for (size_t i = 0; i < n; i++)
		if (rs_json_push(b, rs_json_int((unsigned char)p[i])) != 0)
			*bad = 1;
	put(o, "token", token_str(p, n, 0), bad);
	put(o, "logprob", rs_json_real(logprob), bad);
	put(o, "bytes", b, bad);
	return (o);
}

struct rs_json *
rs_oai_logprobs_chat(const struct rs_logprob *lp, size_t n,
    const struct rs_tok *tok)
{
	struct rs_json	*list = rs_json_arr(), *e, *top;
	int		 bad = list == NULL;

	for (size_t i = 0; i < n && !bad; i++) {
		e = token_json(tok, lp[i].token, lp[i].logprob, &bad);
		if ((top = rs_json_arr()) == NULL)
			bad = 1;
		for (int j = 0; j < lp[i].n_top && top != NULL; j++)
			if (rs_json_push(top, token_json(tok,
			    lp[i].top[j].token, lp[i].top[j].logprob, &bad)))
				bad = 1;
		if (e != NULL) {
			put(e, "top_logprobs", top, &bad);
			top = NULL;
		}
		rs_json_free(top);
		if (e == NULL || rs_json_push(list, e) != 0)
			bad = 1;
	}
	if (bad) {
		rs_json_free(list);
		return (NULL);
	}
	return (list);
}

/* Unicode code points that token ID adds to the output text. */
static int64_t
text_points(const struct rs_tok *tok, int32_t id)
{
	const char	*p;
	size_t		 n;
	int64_t		 c = 0;

	if ((p = rs_tok_piece(tok, id, 0, &n)) == NULL)
		return (0);
	/* a code point starts at every byte that is not 10xxxxxx */
	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)p[i] & 0xc0) != 0x80;
	return (c);
}

/* {token string: logprob} of LP's alternatives and its own token. */
static struct rs_json *
top_object(const struct rs_logprob *lp, const struct rs_tok *tok, int *bad)
{
	struct rs_json	*o = rs_json_obj(), *k;
	const char	*s, *p;
	size_t		 len, n;

	if (o == NULL) {
		*bad = 1;
		return (NULL);
	}
	for (int j = -1; j < lp->n_top; j++) {
		p = token_bytes(tok, j < 0 ? lp->token : lp->top[j].token, &n);
		if ((k = token_str(p, n, 1)) == NULL ||
		    rs_json_as_str(k, &s, &len) != 0) {
			rs_json_free(k);
			*bad = 1;
			continue;
		}
		put(o, s, rs_json_real(j < 0 ? lp->logprob :
		    lp->top[j].logprob), bad);
		rs_json_free(k);
	}
	return (o);
}

struct rs_json *
rs_oai_logprobs_text(const struct rs_logprob *lp, size_t n,
    const struct rs_tok *tok, int64_t *offset)
{
	struct rs_json	*o = rs_json_obj(), *toks = rs_json_arr(),
			*lps = rs_json_arr(), *tops = rs_json_arr(),
			*offs = rs_json_arr();
	const char	*p;
	size_t		 len;
	int		 bad = 0;

	if (o == NULL || toks == NULL || lps == NULL || tops == NULL ||
	    offs == NULL)
		bad = 1;
	for (size_t i = 0; i < n && !bad; i++) {
		p = token_bytes(tok, lp[i].token, &len);
		if (rs_json_push(toks, token_str(p, len, 1)) != 0 ||
		    rs_json_push(lps, rs_json_real(lp[i].logprob)) != 0 ||
		    rs_json_push(tops, top_object(&lp[i], tok, &bad)) != 0 ||
		    rs_json_push(offs, rs_json_int(*offset)) != 0)
			bad = 1;
		*offset += text_points(tok, lp[i].token);
	}
	if (!bad) {
		put(o, "tokens", toks, &bad);
		put(o, "token_logprobs", lps, &bad);
		put(o, "top_logprobs", tops, &bad);
		put(o, "text_offset", offs, &bad);
		toks = lps = tops = offs = NULL;
	}
	rs_json_free(toks);
	rs_json_free(lps);
	rs_json_free(tops);
	rs_json_free(offs);
	if (bad) {
		rs_json_free(o);
		return (NULL);
	}
	return (o);
}

/* ---- the model ---- */

struct rs_json *
rs_oai_model_obj(const struct rs_oai_model *m)
{
	struct rs_json	*model, *meta;
	int		 bad = 0;

	model = rs_json_obj();
	meta = rs_json_obj();
	if (model == NULL || meta == NULL) {
		rs_json_free(model);
		rs_json_free(meta);
		return (NULL);
	}
	put(meta, "n_ctx", rs_json_int(m->n_ctx), &bad);
	put(meta, "n_ctx_train", rs_json_int(m->n_ctx_train), &bad);
	put(meta, "n_vocab", rs_json_int(m->n_vocab), &bad);
	put(model, "id", rs_json_str(m->id), &bad);
	put(model, "object", rs_json_str("model"), &bad);
	put(model, "created", rs_json_int(m->created), &bad);
	put(model, "owned_by", rs_json_str("local"), &bad);
	put(model, "meta", meta, &bad);
	/* vLLM's name for the context length; some clients read it */
	put(model, "max_model_len", rs_json_int(m->n_ctx), &bad);
	if (bad) {
		rs_json_free(model);
		return (NULL);
	}
	return (model);
}

struct rs_json *
rs_oai_models(const struct rs_oai_model *m)
{
	struct rs_json	*list, *data, *model;
	int		 bad = 0;

	list = rs_json_obj();
	data = rs_json_arr();
	model = rs_oai_model_obj(m);
	if (list == NULL || data == NULL || model == NULL) {
		rs_json_free(list);
		rs_json_free(data);
		rs_json_free(model);
		return (NULL);
	}
	if (rs_json_push(data, model) != 0)
		bad = 1;
	put(list, "object", rs_json_str("list"), &bad);
	put(list, "data", data, &bad);
	if (bad) {
		rs_json_free(list);
		return (NULL);
	}
	return (list);
}

void
rs_oai_copilot_budget(int64_t n_ctx, int64_t *max_in, int64_t *max_out)
{
	int64_t out, in;

	out = n_ctx / 4 < 32768 ? n_ctx / 4 : 32768;
	in = (n_ctx - out) - (n_ctx - out) / 8;
	if (in >= 1000)
		in -= in % 1000;
	*max_in = in;
	*max_out = out;
}

char *
rs_oai_chat_url(const char *url)
{
	struct rs_buf	 b;
	size_t		 n = strlen(url), i;

	rs_buf_init(&b);
	if (strstr(url, "/chat/completions") != NULL) {
		rs_buf_adds(&b, url);
		return (rs_buf_release(&b, NULL));
	}
	while (n > 0 && url[n - 1] == '/')
		n--;
	rs_buf_add(&b, url, n);
	/* ends in "/v<digits>"? */
	for (i = n; i > 0 && url[i - 1] >= '0' && url[i - 1] <= '9'; i--)
		;
	if (i < n && i >= 2 && url[i - 1] == 'v' && url[i - 2] == '/')
		rs_buf_adds(&b, "/chat/completions");
	else
		rs_buf_adds(&b, "/v1/chat/completions");
	return (rs_buf_release(&b, NULL));
}

static struct rs_json *
str_array(const char *const *v, size_t n, int *bad)
{
	struct rs_json	*a = rs_json_arr();
	size_t		 i;

	if (a == NULL) {
		*bad = 1;
		return (NULL);
	}
	for (i = 0; i < n; i++)
		if (rs_json_push(a, rs_json_str(v[i])) != 0)
			*bad = 1;
	return (a);
}

struct rs_json *
rs_oai_copilot(const struct rs_oai_model *m, const char *name,
    const char *url)
{
	/*
	 * The template's own levels plus "none" (thinking off), §5.3.
	 * Since §2.5 a request without an effort does not think, so a
	 * template that thinks without levels (Qwen3.5, 3.6) still needs a
	 * menu for Copilot to ask: "none" and "medium", which adds no
	 * instruction on any template and is Copilot's preselection.
	 */
	static const char *const efforts[] = { "none", "low", "medium",
	    "xhigh" };
	static const char *const switch_only[] = { "none", "medium" };
	struct rs_json	*file, *group, *models, *e;
	char		*endpoint;
	int64_t		 max_in, max_out;
	int		 bad = 0;

	if ((endpoint = rs_oai_chat_url(url)) == NULL)
		return (NULL);
	rs_oai_copilot_budget(m->n_ctx, &max_in, &max_out);
	file = rs_json_arr();
	group = rs_json_obj();
	models = rs_json_arr();
	e = rs_json_obj();
	if (file == NULL || group == NULL || models == NULL || e == NULL) {
		bad = 1;
		goto out;
	}
	put(e, "id", rs_json_str(m->id), &bad);
	put(e, "name", rs_json_str(name), &bad);
	put(e, "url", rs_json_str(endpoint), &bad);
	put(e, "toolCalling", rs_json_bool(1), &bad);
	put(e, "vision", rs_json_bool(0), &bad);
	put(e, "thinking", rs_json_bool(m->thinking), &bad);
	put(e, "streaming", rs_json_bool(1), &bad);
	put(e, "maxInputTokens", rs_json_int(max_in), &bad);
	put(e, "maxOutputTokens", rs_json_int(max_out), &bad);
	/* the whole window, so that Copilot's clamping of the two budgets
	   (serving.md §5.2) works from the server's real n_ctx */
	put(e, "contextWindow", rs_json_int(m->n_ctx), &bad);
	if (m->thinking) {
		put(e, "supportsReasoningEffort", m->effort ?
		    str_array(efforts, sizeof(efforts) / sizeof(efforts[0]),
		    &bad) : str_array(switch_only, 2, &bad), &bad);
		put(e, "reasoningEffortFormat",
		    rs_json_str("chat-completions"), &bad);
	}
	if (rs_json_push(models, e) != 0)
		bad = 1;
	e = NULL;
	put(group, "name", rs_json_str("Redshift"), &bad);
	put(group, "vendor", rs_json_str("customendpoint"), &bad);
	put(group, "apiKey", rs_json_str("${input:chat.lm.secret.redshift}"),
	    &bad);
	put(group, "apiType", rs_json_str("chat-completions"), &bad);
	put(group, "models", models, &bad);
	models = NULL;
	if (rs_json_push(file, group) != 0)
		bad = 1;
	group = NULL;
out:
	free(endpoint);
	rs_json_free(e);
	rs_json_free(models);
	rs_json_free(group);
	if (bad) {
		rs_json_free(file);
		return (NULL);
	}
	return (file);
}
