/*
 * rs_gen_req.c - a request from its JSON body: the input (messages,
 * prompt, tokens), the thinking switch and reasoning effort (serving.md
 * §2.5), tool_choice (§3.8) and the sampling fields with their ranges
 * (§4.3).  Every check names the field; null means the default (§4.2);
 * unknown fields are ignored.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs_argtype.h"
#include "rs_gen_impl.h"
#include "rs_utf8.h"

/* ---- errors ---- */

enum rs_status
rs_gen_fail(struct rs_gen_error *ge, enum rs_status st, const char *param,
    const char *fmt, ...)
{
	va_list	ap;
	int	server = st == RS_ERR_NOMEM || st == RS_ERR_IO ||
		    st == RS_ERR_CUDA;

	if (ge == NULL)
		return (st);
	memset(ge, 0, sizeof(*ge));
	ge->err.status = st;
	va_start(ap, fmt);
	vsnprintf(ge->err.msg, sizeof(ge->err.msg), fmt, ap);
	va_end(ap);
	ge->type = server ? "server_error" : "invalid_request_error";
	ge->code = server ? 500 : 400;
	snprintf(ge->param, sizeof(ge->param), "%s", param != NULL ? param :
	    "");
	return (st);
}

struct rs_json *
rs_gen_field(const struct rs_json *body, const char *key)
{
	struct rs_json	*v = rs_json_get(body, key);

	return (v == NULL || rs_json_kind(v) == RS_JSON_NULL ? NULL : v);
}

/* ---- lifecycle ---- */

void
rs_gen_req_init(struct rs_gen_req *r, const struct rs_gen *g)
{
	struct rs_gen_opts	 def;
	const struct rs_gen_opts *o = &def;

	if (g != NULL)
		o = &g->o;
	else
		rs_gen_opts_init(&def);
	memset(r, 0, sizeof(*r));
	r->kind = RS_GEN_TEXT;
	r->tool_choice = RS_GEN_TOOLS_NONE;
	r->parallel_tool_calls = 1;
	r->enable_thinking = o->enable_thinking;
	r->reasoning_effort = o->reasoning_effort;
	r->preserve_thinking = o->preserve_thinking;
	r->add_generation_prompt = 1;
	r->sample = o->sample;
	r->sample.bias = NULL;
	r->sample.n_bias = 0;
	r->max_tokens = -1;
}

void
rs_gen_req_cleanup(struct rs_gen_req *r)
{
	if (r == NULL)
		return;
	free(r->text);
	rs_json_free(r->messages);
	rs_json_free(r->tools);
	free(r->tool_name);
	free(r->bias);
	for (size_t i = 0; i < r->n_stop; i++)
		free(r->stop[i]);
	free(r->stop);
	free(r->stop_ids);
	free(r->prompt);
	free(r->rendered);
	free(r->forced);
	free(r->name_ids);
	free(r->name_end);
	memset(r, 0, sizeof(*r));
}

/* ---- typed fields ---- */

/* BODY[KEY] as a number in [MIN, MAX] (MIN excluded when OPEN) into *OUT. */
static enum rs_status
get_real(const struct rs_json *body, const char *key, double min, double max,
    int open, float *out, struct rs_gen_error *ge)
{
	struct rs_json	*v = rs_gen_field(body, key);
	double		 d;

	if (v == NULL)
		return (RS_OK);
	if (rs_json_as_real(v, &d) != 0)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, key,
		    "%s: must be a number", key));
	if (!(open ? d > min : d >= min) || !(d <= max))
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, key,
		    "%s: %.9g is outside %s%g, %g]", key, d, open ? "(" : "[",
		    min, max));
	/* the engine takes a float: a value past the open end only by less
	   than a float resolves (1e-320 for top_p) would become the end */
	if (open && !((float)d > (float)min))
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, key,
		    "%s: %.9g is too close to %g for a 32-bit float", key, d,
		    min));
	*out = (float)d;
	return (RS_OK);
}

/* BODY[KEY] as an integer in [MIN, MAX] into *OUT (left when absent). */
static enum rs_status
get_int(const struct rs_json *body, const char *key, int64_t min,
    int64_t max, int64_t *out, struct rs_gen_error *ge)
{
	struct rs_json	*v = rs_gen_field(body, key);
	int64_t		 x;

	if (v == NULL)
		return (RS_OK);
	if (rs_json_as_whole(v, &x) != 0)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, key,
		    "%s: must be an integer", key));
	if (x < min || x > max)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, key,
		    "%s: %lld is outside [%lld, %lld]", key, (long long)x,
		    (long long)min, (long long)max));
	*out = x;
	return (RS_OK);
}

/* BODY[KEY] as a boolean into *OUT (left when absent). */
static enum rs_status
get_bool(const struct rs_json *body, const char *key, const char *path,
    int *out, struct rs_gen_error *ge)
{
	struct rs_json	*v = rs_gen_field(body, key);

	if (v != NULL && rs_json_as_bool(v, out) != 0)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
		    "%s: must be true or false", path));
	return (RS_OK);
}

/* An array of token ids in [0, N_VOCAB) at PATH into *OUT / *N. */
static enum rs_status
get_ids(const struct rs_json *arr, const char *path, int32_t n_vocab,
    int32_t **out, size_t *n, struct rs_gen_error *ge)
{
	size_t	 len;
	int64_t	 v;

	if (rs_json_kind(arr) != RS_JSON_ARRAY)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
		    "%s: must be an array of token ids", path));
	len = rs_json_arr_len(arr);
	if ((*out = malloc((len + 1) * sizeof(int32_t))) == NULL)
		return (rs_gen_fail(ge, RS_ERR_NOMEM, NULL, "out of memory"));
	for (size_t i = 0; i < len; i++) {
		char p[48];

		snprintf(p, sizeof(p), "%s[%zu]", path, i);
		if (rs_json_as_int(rs_json_arr_at(arr, i), &v) != 0)
			return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, p,
			    "%s: must be an integer token id", p));
		if (v < 0 || v >= n_vocab)
			return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, p,
			    "%s: token id %lld is outside the vocabulary [0, "
			    "%d)", p, (long long)v, (int)n_vocab));
		(*out)[i] = (int32_t)v;
	}
	*n = len;
	return (RS_OK);
}

/* ---- input ---- */

/*
 * OpenAI's prompt may be a batch: an array of strings or of token-id
 * arrays.  One of them is the prompt itself (what clients such as
 * LangChain send for a single prompt): *V becomes it; a batch of more is
 * refused.  Any other *V is left as it is.
 */
static enum rs_status
one_prompt(struct rs_json **v, struct rs_gen_error *ge)
{
	enum rs_json_kind	 k;
	size_t			 n = rs_json_arr_len(*v);

	if (rs_json_kind(*v) != RS_JSON_ARRAY || n == 0)
		return (RS_OK);
	k = rs_json_kind(rs_json_arr_at(*v, 0));
	if (k != RS_JSON_STRING && k != RS_JSON_ARRAY)
		return (RS_OK);
	if (n > 1)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, "prompt", "prompt: "
		    "one prompt a request (this array holds %zu)", n));
	*v = rs_json_arr_at(*v, 0);
	return (RS_OK);
}

/* Exactly one of messages, prompt, tokens, ids. */
static enum rs_status
parse_input(const struct rs_gen *g, struct rs_gen_req *r,
    const struct rs_json *body, struct rs_gen_error *ge)
{
	static const char *const keys[] = { "messages", "prompt", "tokens",
	    "ids" };
	struct rs_json	*v = NULL;
	const char	*key = NULL, *s;
	size_t		 n;
	enum rs_status	 st;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (rs_gen_field(body, keys[i]) == NULL)
			continue;
		if (key != NULL)
			return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, keys[i],
			    "%s and %s: give only one input (messages, prompt "
			    "or tokens)", key, keys[i]));
		key = keys[i];
		v = rs_gen_field(body, key);
	}
	if (key == NULL)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, "messages",
		    "no input: give messages, prompt or tokens"));
	r->input = key;
	if (strcmp(key, "messages") == 0) {
		r->kind = RS_GEN_CHAT;
		return (rs_gen_norm_messages(v, &r->messages, ge));
	}
	if (strcmp(key, "prompt") == 0 && (st = one_prompt(&v, ge)) != RS_OK)
		return (st);
	if (rs_json_as_str(v, &s, &n) == 0 && strcmp(key, "prompt") == 0) {
		r->kind = RS_GEN_TEXT;
		if ((r->text = malloc(n + 1)) == NULL)
			return (rs_gen_fail(ge, RS_ERR_NOMEM, NULL,
			    "out of memory"));
		memcpy(r->text, s, n + 1);
		r->text_len = n;
		return (RS_OK);
	}
	if (strcmp(key, "prompt") == 0 && rs_json_kind(v) != RS_JSON_ARRAY)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, key,
		    "prompt: must be a string or an array of token ids"));
	r->kind = RS_GEN_TOKENS;
	return (get_ids(v, key, g->n_vocab, &r->prompt, &r->n_prompt, ge));
}

/* ---- thinking and effort (§2.5) ---- */

/*
 * The template's effort for request value S (lower-cased first): "none"
 * for none, else low, medium or xhigh; NULL when unknown.
 */
static const char *
effort_map(const char *s, size_t n)
{
	static const struct { const char *in, *out; } map[] = {
		{ "none", "none" }, { "minimal", "low" }, { "low", "low" },
		{ "medium", "medium" }, { "high", "xhigh" },
		{ "xhigh", "xhigh" }, { "max", "xhigh" }
	};
	char	low[16];

	if (n >= sizeof(low) || strlen(s) != n)
		return (NULL);
	for (size_t i = 0; i <= n; i++)
		low[i] = s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i];
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(low, map[i].in) == 0)
			return (map[i].out);
	return (NULL);
}

/* An effort field at PATH (V may be NULL) into *OUT (kept if absent). */
static enum rs_status
get_effort(const struct rs_json *v, const char *path, const char **out,
    struct rs_gen_error *ge)
{
	const char	*s, *e;
	size_t		 n;

	if (v == NULL || rs_json_kind(v) == RS_JSON_NULL)
		return (RS_OK);
	if (rs_json_as_str(v, &s, &n) != 0 || (e = effort_map(s, n)) == NULL)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
		    "Unsupported %s%s%.32s%s. Accepted: none, minimal, low, "
		    "medium, high, xhigh, max.", path,
		    rs_json_kind(v) == RS_JSON_STRING ? " '" :
		    " (not a string)",
		    rs_json_kind(v) == RS_JSON_STRING ? s : "",
		    rs_json_kind(v) == RS_JSON_STRING ? "'" : ""));
	*out = e;
	return (RS_OK);
}

/*
 * serving.md §2.5, the product's rule: thinking stays off unless the
 * request asks for it.
 *
 *   enable_thinking = kwargs.enable_thinking ?? enable_thinking ??
 *       (effort_in given ? effort_in != none : server default, off)
 *   effort_in = kwargs.reasoning_effort ?? reasoning_effort ??
 *       reasoning.effort
 *   effort = effort_in unless absent or none, else the server default
 *       (xhigh: "enable_thinking: true" alone thinks at xhigh)
 *   preserve = kwargs.preserve_thinking ?? server default
 *
 * A level alone turns thinking on, so a client that sends the picked
 * level with its main requests (Copilot) thinks there, and its side
 * requests without one (titles, commit messages) do not.  Every effort
 * given is validated, used or not.
 */
static enum rs_status
parse_thinking(struct rs_gen_req *r, const struct rs_json *body,
    struct rs_gen_error *ge)
{
	struct rs_json	*kw = rs_gen_field(body, "chat_template_kwargs");
	struct rs_json	*reason = rs_gen_field(body, "reasoning");
	const char	*e_kw = NULL, *e_top = NULL, *e_rs = NULL, *e_in;
	int		 t_kw = -1, t_top = -1;
	enum rs_status	 st;

	if (kw != NULL && rs_json_kind(kw) != RS_JSON_OBJECT)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG,
		    "chat_template_kwargs", "chat_template_kwargs: must be an "
		    "object"));
	if (reason != NULL && rs_json_kind(reason) != RS_JSON_OBJECT)
		reason = NULL;
	if ((st = get_effort(rs_json_get(kw, "reasoning_effort"),
	    "chat_template_kwargs.reasoning_effort", &e_kw, ge)) != RS_OK ||
	    (st = get_effort(rs_json_get(body, "reasoning_effort"),
	    "reasoning_effort", &e_top, ge)) != RS_OK ||
	    (st = get_effort(rs_json_get(reason, "effort"),
	    "reasoning.effort", &e_rs, ge)) != RS_OK ||
	    (st = get_bool(kw, "enable_thinking",
	    "chat_template_kwargs.enable_thinking", &t_kw, ge)) != RS_OK ||
	    (st = get_bool(body, "enable_thinking", "enable_thinking", &t_top,
	    ge)) != RS_OK ||
	    (st = get_bool(kw, "preserve_thinking",
	    "chat_template_kwargs.preserve_thinking", &r->preserve_thinking,
	    ge)) != RS_OK)
		return (st);
	e_in = e_kw != NULL ? e_kw : e_top != NULL ? e_top : e_rs;
	if (t_kw >= 0)
		r->enable_thinking = t_kw;
	else if (t_top >= 0)
		r->enable_thinking = t_top;
	else if (e_in != NULL)
		r->enable_thinking = strcmp(e_in, "none") != 0;
	if (e_in != NULL && strcmp(e_in, "none") != 0)
		r->reasoning_effort = e_in;
	return (RS_OK);
}

/* ---- tools (§3.8) ---- */

static enum rs_status
parse_tool_choice(struct rs_gen_req *r, const struct rs_json *body,
    struct rs_gen_error *ge)
{
	struct rs_json	*tc = rs_gen_field(body, "tool_choice"), *fn;
	const char	*s, *name;
	size_t		 n, nn;
	char		 q[RS_UTF8_QUOTE_SIZE];

	r->tool_choice = r->tools != NULL ? RS_GEN_TOOLS_AUTO :
	    RS_GEN_TOOLS_NONE;
	if (tc == NULL)
		return (RS_OK);
	if (rs_json_as_str(tc, &s, &n) == 0) {
		if (strcmp(s, "none") == 0) {
			r->tool_choice = RS_GEN_TOOLS_NONE;
			return (RS_OK);
		}
		if (strcmp(s, "auto") == 0)
			r->tool_choice = RS_GEN_TOOLS_AUTO;
		else if (strcmp(s, "required") == 0)
			r->tool_choice = RS_GEN_TOOLS_REQUIRED;
		else
			return (rs_gen_fail(ge, RS_ERR_INVALID_ARG,
			    "tool_choice", "tool_choice: '%s' is not one "
			    "of none, auto, required or a named function",
			    rs_utf8_quote(s, n, q)));
	} else {
		if (rs_json_as_str(rs_json_get(tc, "type"), &s, &n) != 0 ||
		    strcmp(s, "function") != 0)
			return (rs_gen_fail(ge, RS_ERR_INVALID_ARG,
			    "tool_choice", "tool_choice: only none, auto, "
			    "required and {\"type\": \"function\", "
			    "\"function\": {\"name\": ...}} are supported"));
		fn = rs_json_get(tc, "function");
		if (rs_json_as_str(rs_json_get(fn, "name"), &name, &nn) != 0)
			return (rs_gen_fail(ge, RS_ERR_INVALID_ARG,
			    "tool_choice.function.name", "tool_choice.function"
			    ".name: missing or not a string"));
		if (r->tools != NULL && rs_argtype_tool(r->tools, name, nn) ==
		    NULL)
			return (rs_gen_fail(ge, RS_ERR_INVALID_ARG,
			    "tool_choice.function.name", "The tool specified "
			    "in tool_choice ('%s') does not match any of "
			    "the specified tools", rs_utf8_quote(name, nn, q)));
		if ((r->tool_name = strdup(name)) == NULL)
			return (rs_gen_fail(ge, RS_ERR_NOMEM, NULL,
			    "out of memory"));
		r->tool_choice = RS_GEN_TOOLS_NAMED;
	}
	if (r->tools == NULL)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, "tool_choice",
		    "When using tool_choice, tools must be set."));
	return (RS_OK);
}

/* Tools, tool_choice, parallel_tool_calls and the template switches. */
static enum rs_status
parse_chat(struct rs_gen_req *r, const struct rs_json *body,
    struct rs_gen_error *ge)
{
	enum rs_status	 st;
	int		 cont = 0;

	if ((st = rs_gen_norm_tools(rs_gen_field(body, "tools"), &r->tools,
	    ge)) != RS_OK ||
	    (st = parse_tool_choice(r, body, ge)) != RS_OK ||
	    (st = get_bool(body, "parallel_tool_calls", "parallel_tool_calls",
	    &r->parallel_tool_calls, ge)) != RS_OK ||
	    (st = get_bool(body, "add_generation_prompt",
	    "add_generation_prompt", &r->add_generation_prompt, ge)) !=
	    RS_OK ||
	    (st = get_bool(body, "continue_final_message",
	    "continue_final_message", &cont, ge)) != RS_OK ||
	    (st = parse_thinking(r, body, ge)) != RS_OK)
		return (st);
	if (cont)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG,
		    "continue_final_message", "continue_final_message is not "
		    "supported by this server"));
	if (r->tool_choice == RS_GEN_TOOLS_NONE) {
		/* tools_when_choice_none = "omit" (§2.3 step 10) */
		rs_json_free(r->tools);
		r->tools = NULL;
	}
	return (RS_OK);
}

/* ---- sampling (§4.3) ---- */

static enum rs_status
parse_stop(struct rs_gen_req *r, const struct rs_json *body,
    struct rs_gen_error *ge)
{
	struct rs_json	*v = rs_gen_field(body, "stop"), *e;
	const char	*s;
	size_t		 n, count;
	char		 path[16];

	if (v == NULL)
		return (RS_OK);
	count = rs_json_kind(v) == RS_JSON_ARRAY ? rs_json_arr_len(v) : 1;
	if (rs_json_kind(v) != RS_JSON_ARRAY &&
	    rs_json_kind(v) != RS_JSON_STRING)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, "stop",
		    "stop: must be a string or an array of strings"));
	if (count > RS_GEN_MAX_STOP)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, "stop",
		    "stop: %zu strings, at most %d allowed", count,
		    RS_GEN_MAX_STOP));
	if ((r->stop = calloc(count + 1, sizeof(char *))) == NULL)
		return (rs_gen_fail(ge, RS_ERR_NOMEM, NULL, "out of memory"));
	for (size_t i = 0; i < count; i++) {
		e = rs_json_kind(v) == RS_JSON_ARRAY ? rs_json_arr_at(v, i) : v;
		snprintf(path, sizeof(path), rs_json_kind(v) == RS_JSON_ARRAY ?
		    "stop[%zu]" : "stop", i);
		if (rs_json_as_str(e, &s, &n) != 0 || n == 0 ||
		    strlen(s) != n)
			return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
			    "%s: must be a non-empty string without NUL "
			    "characters", path));
		if (n > RS_STOP_MAX_LEN)
			return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
			    "%s: %zu bytes, at most %d allowed", path, n,
			    RS_STOP_MAX_LEN));
		if ((r->stop[i] = strdup(s)) == NULL)
			return (rs_gen_fail(ge, RS_ERR_NOMEM, NULL,
			    "out of memory"));
		r->n_stop++;
	}
	return (RS_OK);
}

/* KEY (N bytes) as a decimal token id: digits only, at most 9 of them. */
static int
parse_id(const char *key, size_t n, int64_t *out)
{
	int64_t	v = 0;

	if (n == 0 || n > 9)
		return (-1);
	for (size_t i = 0; i < n; i++) {
		if (key[i] < '0' || key[i] > '9')
			return (-1);
		v = v * 10 + (key[i] - '0');
	}
	*out = v;
	return (0);
}

/* logit_bias: {"id": bias in [-100, 100]} with ids of the model. */
static enum rs_status
parse_bias(const struct rs_gen *g, struct rs_gen_req *r,
    const struct rs_json *body, struct rs_gen_error *ge)
{
	struct rs_json	*v = rs_gen_field(body, "logit_bias"), *b;
	const char	*key;
	size_t		 klen;
	void		*it = NULL;
	int64_t		 id;
	double		 d;
	char		 path[16 + RS_UTF8_QUOTE_SIZE], q[RS_UTF8_QUOTE_SIZE];

	if (v == NULL)
		return (RS_OK);
	if (rs_json_kind(v) != RS_JSON_OBJECT)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, "logit_bias",
		    "logit_bias: must be an object of token id: bias"));
	r->bias = calloc(rs_json_obj_len(v) + 1, sizeof(*r->bias));
	if (r->bias == NULL)
		return (rs_gen_fail(ge, RS_ERR_NOMEM, NULL, "out of memory"));
	while (rs_json_obj_next(v, &it, &key, &klen, &b) == 0) {
		/* (the key as quoted: a client's bytes, ESC among them) */
		snprintf(path, sizeof(path), "logit_bias.%s",
		    rs_utf8_quote(key, klen, q));
		if (parse_id(key, klen, &id) != 0 || id >= g->n_vocab)
			return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
			    "%s: '%s' is not a token id in [0, %d)", path, q,
			    (int)g->n_vocab));
		if (rs_json_as_real(b, &d) != 0 || !(d >= -100 && d <= 100))
			return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
			    "%s: must be a number in [-100, 100]", path));
		r->bias[r->n_bias].token = (int32_t)id;
		r->bias[r->n_bias++].bias = (float)d;
	}
	return (RS_OK);
}

/*
 * logprobs and top_logprobs, in the shape of the endpoint (§4.3): chat
 * takes "logprobs": bool and "top_logprobs": 0..20, which needs logprobs
 * true; text completions take "logprobs": 0..20 alone (OpenAI allows
 * 0..5 there; vLLM and llama.cpp more).
 */
static enum rs_status
parse_logprobs(struct rs_gen_req *r, const struct rs_json *body,
    struct rs_gen_error *ge)
{
	struct rs_json	*v = rs_gen_field(body, "logprobs");
	int64_t		 top = r->top_logprobs;
	enum rs_status	 st;

	if (r->kind != RS_GEN_CHAT) {
		if (v != NULL && rs_json_as_whole(v, &top) != 0)
			return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, "logprobs",
			    "logprobs: must be an integer in [0, %d] (the "
			    "alternatives listed per token)",
			    RS_LOGPROB_MAX_TOP));
		if ((st = get_int(body, "logprobs", 0, RS_LOGPROB_MAX_TOP,
		    &top, ge)) != RS_OK)
			return (st);
		if (v != NULL)
			r->logprobs = 1;
		r->top_logprobs = (int)top;
		return (RS_OK);
	}
	if ((st = get_bool(body, "logprobs", "logprobs", &r->logprobs, ge)) !=
	    RS_OK || (st = get_int(body, "top_logprobs", 0,
	    RS_LOGPROB_MAX_TOP, &top, ge)) != RS_OK)
		return (st);
	if (rs_gen_field(body, "top_logprobs") != NULL && !r->logprobs)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, "top_logprobs",
		    "top_logprobs: needs logprobs set to true"));
	r->top_logprobs = (int)top;
	return (RS_OK);
}

/* Fields this server does not implement: a 400 rather than silence. */
static enum rs_status
parse_unsupported(const struct rs_json *body, struct rs_gen_error *ge)
{
	struct rs_json	*rf = rs_gen_field(body, "response_format");
	const char	*s;
	size_t		 n;
	char		 q[RS_UTF8_QUOTE_SIZE];
	int64_t		 count = 1;
	enum rs_status	 st;

	if ((st = get_int(body, "n", INT64_MIN, INT64_MAX, &count, ge)) !=
	    RS_OK)
		return (st);
	if (count != 1)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, "n",
		    "n: %lld; only n = 1 is supported", (long long)count));
	if (rf != NULL && rs_json_as_str(rs_json_get(rf, "type"), &s, &n) != 0)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, "response_format",
		    "response_format: must be an object with a string 'type' "
		    "(only \"text\" is supported by this server)"));
	if (rf != NULL && strcmp(s, "text") != 0)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, "response_format",
		    "response_format type '%s' is not supported by this "
		    "server", rs_utf8_quote(s, n, q)));
	if (rs_gen_field(body, "functions") != NULL ||
	    rs_gen_field(body, "function_call") != NULL)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, "functions",
		    "functions and function_call are not supported; use "
		    "tools and tool_choice"));
	return (RS_OK);
}

static enum rs_status
parse_sampling(const struct rs_gen *g, struct rs_gen_req *r,
    const struct rs_json *body, struct rs_gen_error *ge)
{
	struct rs_sample_params	*p = &r->sample;
	struct rs_json		*v;
	int64_t			 k = p->top_k, seed, mt = r->max_tokens;
	enum rs_status		 st;

	if ((st = get_real(body, "temperature", 0, 2, 0, &p->temperature,
	    ge)) != RS_OK ||
	    (st = get_real(body, "top_p", 0, 1, 1, &p->top_p, ge)) != RS_OK ||
	    (st = get_real(body, "min_p", 0, 1, 0, &p->min_p, ge)) != RS_OK ||
	    (st = get_real(body, "presence_penalty", -2, 2, 0,
	    &p->presence_penalty, ge)) != RS_OK ||
	    (st = get_real(body, "frequency_penalty", -2, 2, 0,
	    &p->frequency_penalty, ge)) != RS_OK ||
	    (st = get_real(body, "repetition_penalty", 0, 1e6, 1,
	    &p->repetition_penalty, ge)) != RS_OK ||
	    (st = get_int(body, "top_k", -1, INT32_MAX, &k, ge)) != RS_OK ||
	    (st = get_int(body, "max_tokens", 1, INT32_MAX, &mt, ge)) !=
	    RS_OK ||
	    (st = get_int(body, "max_completion_tokens", 1, INT32_MAX, &mt,
	    ge)) != RS_OK)
		return (st);
	p->top_k = (int32_t)(k < 0 ? 0 : k);
	r->max_tokens = mt;
	if ((v = rs_gen_field(body, "seed")) != NULL) {
		if (rs_json_as_whole(v, &seed) != 0)
			return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, "seed",
			    "seed: must be a 64-bit integer"));
		p->seed = (uint64_t)seed;
	}
	if ((v = rs_gen_field(body, "stop_token_ids")) != NULL &&
	    (st = get_ids(v, "stop_token_ids", g->n_vocab, &r->stop_ids,
	    &r->n_stop_ids, ge)) != RS_OK)
		return (st);
	if ((st = parse_stop(r, body, ge)) != RS_OK ||
	    (st = parse_bias(g, r, body, ge)) != RS_OK ||
	    (st = parse_logprobs(r, body, ge)) != RS_OK)
		return (st);
	return (parse_unsupported(body, ge));
}

enum rs_status
rs_gen_req_parse(const struct rs_gen *g, struct rs_gen_req *r,
    const struct rs_json *body, struct rs_gen_error *ge)
{
	enum rs_status	st;

	if (body == NULL || rs_json_kind(body) != RS_JSON_OBJECT)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, NULL,
		    "the request must be a JSON object"));
	if ((st = parse_input(g, r, body, ge)) != RS_OK ||
	    (st = parse_sampling(g, r, body, ge)) != RS_OK)
		return (st);
	if (r->kind == RS_GEN_CHAT && (st = parse_chat(r, body, ge)) != RS_OK)
		return (st);
	r->sample.bias = r->bias;
	r->sample.n_bias = r->n_bias;
	r->prepared = 0;
	return (RS_OK);
}
