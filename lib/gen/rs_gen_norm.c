/*
 * rs_gen_norm.c - the server-side normalisation of a chat request before
 * rendering (serving.md §2.3), which is also its validation: what real
 * clients send (developer roles, several system messages, content parts,
 * string tool-call arguments, extra keys) becomes exactly what the
 * template can render, and what it cannot render well becomes a 400 that
 * names the field.
 *
 * Messages out: {"role", "content", "reasoning_content"?, "tool_calls"?}
 * with content a string (null only for an assistant), reasoning the first
 * string of reasoning_content / reasoning / reasoning_text / cot_summary,
 * and tool calls {"type": "function", "function": {"name", "arguments":
 * OBJECT}} with their key order kept (the template renders parameters in
 * that order).  Tools out: {"type": "function", "function": {"name",
 * "description"?, "parameters"}}, so the prompt does not depend on the
 * client's key order or extra fields (step 9).
 */
#include <stdio.h>
#include <string.h>

#include "rs_buf.h"
#include "rs_gen_impl.h"
#include "rs_pyjson.h"
#include "rs_utf8.h"

/* What a message becomes; RS_OK or a filled GE. */
struct msgctx {
	const struct rs_json	*in;		/* the message */
	size_t			 i;		/* its index */
	const char		*role;		/* normalised */
	struct rs_gen_error	*ge;
};

static enum rs_status	content_text(const struct rs_json *c,
			    const char *path, struct rs_buf *b,
			    struct rs_gen_error *ge);

static int
is_role(const char *r, const char *want)
{
	return (strcmp(r, want) == 0);
}

/* Step 1 and 2: the role, "developer" read as "system". */
static enum rs_status
norm_role(struct msgctx *m)
{
	const char	*r;
	size_t		 n;
	char		 path[48], q[RS_UTF8_QUOTE_SIZE];

	snprintf(path, sizeof(path), "messages[%zu].role", m->i);
	if (rs_json_as_str(rs_json_get(m->in, "role"), &r, &n) != 0)
		return (rs_gen_fail(m->ge, RS_ERR_INVALID_ARG, path,
		    "%s: missing or not a string", path));
	if (strlen(r) == n && is_role(r, "developer")) {
		r = "system";
		n = strlen(r);
	}
	if (strlen(r) != n || !(is_role(r, "system") || is_role(r, "user") ||
	    is_role(r, "assistant") || is_role(r, "tool")))
		return (rs_gen_fail(m->ge, RS_ERR_INVALID_ARG, path,
		    "%s: unexpected role '%s'; accepted: system, user, "
		    "assistant, tool (developer is read as system)", path,
		    rs_utf8_quote(r, n, q)));
	m->role = r;
	return (RS_OK);
}

/* Media part types this text-only server refuses (step 4). */
static int
is_media(const char *t)
{
	static const char *const media[] = { "image_url", "image",
	    "input_image", "input_audio", "audio", "video_url", "video",
	    "input_video", "file" };

	for (size_t i = 0; i < sizeof(media) / sizeof(media[0]); i++)
		if (strcmp(t, media[i]) == 0)
			return (1);
	return (0);
}

/* One content part: append its text to B (step 4). */
static enum rs_status
content_part(const struct rs_json *part, const char *path, struct rs_buf *b,
    struct rs_gen_error *ge)
{
	const char	*t, *s;
	size_t		 n;
	char		 p[96], q[RS_UTF8_QUOTE_SIZE];

	if (rs_json_kind(part) != RS_JSON_OBJECT)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
		    "%s: a content part must be an object", path));
	snprintf(p, sizeof(p), "%s.type", path);
	if (rs_json_as_str(rs_json_get(part, "type"), &t, &n) != 0)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, p,
		    "%s: missing or not a string", p));
	if (is_media(t))
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, p,
		    "%s: %.20s input is not supported by this server "
		    "(text-only)", p, t));
	if (strcmp(t, "text") != 0 && strcmp(t, "refusal") != 0)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, p,
		    "%s: unsupported content part type '%s'; accepted: "
		    "text, refusal", p, rs_utf8_quote(t, n, q)));
	snprintf(p, sizeof(p), "%s.%s", path, t);
	if (rs_json_as_str(rs_json_get(part, t), &s, &n) != 0)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, p,
		    "%s: missing or not a string", p));
	rs_buf_add(b, s, n);
	return (RS_OK);
}

/*
 * Content C (a string or an array of parts) as text into B: the template
 * concatenates text parts with no separator.
 */
static enum rs_status
content_text(const struct rs_json *c, const char *path, struct rs_buf *b,
    struct rs_gen_error *ge)
{
	const char	*s;
	size_t		 n;
	char		 p[80];
	enum rs_status	 st;

	if (rs_json_as_str(c, &s, &n) == 0) {
		rs_buf_add(b, s, n);
		return (RS_OK);
	}
	if (rs_json_kind(c) != RS_JSON_ARRAY)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
		    "%s: must be a string, an array of content parts or null",
		    path));
	for (size_t i = 0; i < rs_json_arr_len(c); i++) {
		snprintf(p, sizeof(p), "%s[%zu]", path, i);
		if ((st = content_part(rs_json_arr_at(c, i), p, b, ge)) !=
		    RS_OK)
			return (st);
	}
	return (RS_OK);
}

/*
 * Step 4: the message's content as a new JSON string, or null for an
 * assistant without content.  A missing content is an error for the other
 * roles (edge case 14); null is "".
 */
static enum rs_status
norm_content(struct msgctx *m, struct rs_json **out)
{
	struct rs_json	*c = rs_json_get(m->in, "content");
	struct rs_buf	 b;
	char		 path[48];
	enum rs_status	 st;

	snprintf(path, sizeof(path), "messages[%zu].content", m->i);
	if (c == NULL && !is_role(m->role, "assistant"))
		return (rs_gen_fail(m->ge, RS_ERR_INVALID_ARG, path,
		    "%s: missing (required for role %s)", path, m->role));
	if (c == NULL || rs_json_kind(c) == RS_JSON_NULL) {
		*out = is_role(m->role, "assistant") ? rs_json_null() :
		    rs_json_str("");
		return (*out == NULL ? rs_gen_fail(m->ge, RS_ERR_NOMEM, NULL,
		    "out of memory") : RS_OK);
	}
	rs_buf_init(&b);
	if ((st = content_text(c, path, &b, m->ge)) == RS_OK) {
		*out = rs_json_strn(b.data != NULL ? b.data : "", b.len);
		if (b.oom || *out == NULL) {
			rs_json_free(*out);
			st = rs_gen_fail(m->ge, RS_ERR_NOMEM, NULL,
			    "out of memory");
		}
	}
	rs_buf_cleanup(&b);
	return (st);
}

/* Step 5: the first string among the reasoning fields clients use. */
static struct rs_json *
reasoning_of(const struct rs_json *msg)
{
	static const char *const keys[] = { "reasoning_content", "reasoning",
	    "reasoning_text", "cot_summary" };
	struct rs_json	*v;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		v = rs_json_get(msg, keys[i]);
		if (v != NULL && rs_json_kind(v) == RS_JSON_STRING)
			return (v);
	}
	return (NULL);
}

/*
 * A key or name inserted raw into "<parameter=KEY>" / "<function=NAME>":
 * ">" or a line break would corrupt the prompt (§2.7 item 5).
 */
static int
markup_safe(const char *s, size_t n)
{
	return (n > 0 && memchr(s, '>', n) == NULL &&
	    memchr(s, '\n', n) == NULL && memchr(s, '\r', n) == NULL);
}

/*
 * Step 6: a string ARGS parsed to an object; "" or white space is {}.
 * Numbers beyond rs_json's range become strings (rs_pyjson_parse).
 */
static enum rs_status
args_object(const struct rs_json *a, const char *path, struct rs_json **out,
    struct rs_gen_error *ge)
{
	struct rs_err	 err = { 0 };
	enum rs_status	 st;
	const char	*s;
	size_t		 n;

	if (rs_json_kind(a) == RS_JSON_OBJECT) {
		*out = rs_json_ref((struct rs_json *)a);
		return (RS_OK);
	}
	if (rs_json_as_str(a, &s, &n) != 0)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
		    "%s: must be a JSON object or a string holding one", path));
	if (strspn(s, " \t\r\n") == n) {
		*out = rs_json_obj();
		return (*out == NULL ? rs_gen_fail(ge, RS_ERR_NOMEM, NULL,
		    "out of memory") : RS_OK);
	}
	if ((st = rs_pyjson_parse(s, n, out, &err)) != RS_OK)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
		    "%s: tool call arguments are not a JSON object: %s", path,
		    st == RS_ERR_NOMEM ? "out of memory" : err.msg));
	if (rs_json_kind(*out) != RS_JSON_OBJECT) {
		rs_json_free(*out);
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
		    "%s: tool call arguments are not a JSON object", path));
	}
	return (RS_OK);
}

/* Step 6: one history tool call into a rebuilt object *OUT. */
static enum rs_status
norm_call(const struct rs_json *c, const char *path, struct rs_json **out,
    struct rs_gen_error *ge)
{
	struct rs_json	*fn, *args = NULL, *o, *f, *v;
	const char	*s, *key;
	size_t		 n, klen;
	void		*it = NULL;
	char		 p[128], q[RS_UTF8_QUOTE_SIZE];
	enum rs_status	 st;

	if (rs_json_kind(c) != RS_JSON_OBJECT)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
		    "%s: must be an object", path));
	snprintf(p, sizeof(p), "%s.type", path);
	if ((v = rs_gen_field(c, "type")) != NULL &&
	    (rs_json_as_str(v, &s, &n) != 0 || strcmp(s, "function") != 0))
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, p,
		    "%s: must be \"function\"", p));
	snprintf(p, sizeof(p), "%s.function", path);
	if ((fn = rs_json_get(c, "function")) == NULL ||
	    rs_json_kind(fn) != RS_JSON_OBJECT)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, p,
		    "%s: missing or not an object", p));
	snprintf(p, sizeof(p), "%s.function.name", path);
	if (rs_json_as_str(rs_json_get(fn, "name"), &s, &n) != 0 ||
	    !markup_safe(s, n) || strlen(s) != n)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, p,
		    "%s: must be a non-empty string without '>' or line "
		    "breaks", p));
	snprintf(p, sizeof(p), "%s.function.arguments", path);
	if ((v = rs_gen_field(fn, "arguments")) == NULL)
		args = rs_json_obj();
	else if ((st = args_object(v, p, &args, ge)) != RS_OK)
		return (st);
	while (args != NULL && rs_json_obj_next(args, &it, &key, &klen, &v) ==
	    0)
		if (!markup_safe(key, klen) || strlen(key) != klen) {
			rs_gen_fail(ge, RS_ERR_INVALID_ARG, p, "%s: argument "
			    "name '%s' is empty or holds '>' or a line "
			    "break", p, rs_utf8_quote(key, klen, q));
			rs_json_free(args);	/* KEY was in it */
			return (RS_ERR_INVALID_ARG);
		}
	o = rs_json_obj();
	f = rs_json_obj();
	if (rs_json_set(f, "name", rs_json_strn(s, n)) != 0 ||
	    rs_json_set(f, "arguments", args) != 0 ||
	    rs_json_set(o, "type", rs_json_str("function")) != 0 ||
	    rs_json_set(o, "function", f) != 0) {
		rs_json_free(o);
		return (rs_gen_fail(ge, RS_ERR_NOMEM, NULL, "out of memory"));
	}
	*out = o;
	return (RS_OK);
}

/* Step 6: the assistant's tool_calls, or NULL when absent or empty. */
static enum rs_status
norm_calls(struct msgctx *m, struct rs_json **out)
{
	struct rs_json	*tc = rs_gen_field(m->in, "tool_calls"), *arr;
	struct rs_json	*c = NULL;
	char		 path[64];
	enum rs_status	 st;

	*out = NULL;
	snprintf(path, sizeof(path), "messages[%zu].tool_calls", m->i);
	if (tc == NULL || !is_role(m->role, "assistant"))
		return (RS_OK);
	if (rs_json_kind(tc) != RS_JSON_ARRAY)
		return (rs_gen_fail(m->ge, RS_ERR_INVALID_ARG, path,
		    "%s: must be an array", path));
	if (rs_json_arr_len(tc) == 0)
		return (RS_OK);
	if ((arr = rs_json_arr()) == NULL)
		return (rs_gen_fail(m->ge, RS_ERR_NOMEM, NULL,
		    "out of memory"));
	for (size_t j = 0; j < rs_json_arr_len(tc); j++) {
		snprintf(path, sizeof(path), "messages[%zu].tool_calls[%zu]",
		    m->i, j);
		if ((st = norm_call(rs_json_arr_at(tc, j), path, &c, m->ge)) !=
		    RS_OK) {
			rs_json_free(arr);
			return (st);
		}
		if (rs_json_push(arr, c) != 0) {
			rs_json_free(arr);
			return (rs_gen_fail(m->ge, RS_ERR_NOMEM, NULL,
			    "out of memory"));
		}
	}
	*out = arr;
	return (RS_OK);
}

/* Steps 1-6 and 8 for one message: a new {role, content, ...} in *OUT. */
static enum rs_status
norm_message(struct msgctx *m, struct rs_json **out)
{
	struct rs_json	*o, *content = NULL, *calls = NULL, *r;
	char		 path[32];
	enum rs_status	 st;

	snprintf(path, sizeof(path), "messages[%zu]", m->i);
	if (rs_json_kind(m->in) != RS_JSON_OBJECT)
		return (rs_gen_fail(m->ge, RS_ERR_INVALID_ARG, path,
		    "%s: must be an object", path));
	if ((st = norm_role(m)) != RS_OK ||
	    (st = norm_content(m, &content)) != RS_OK)
		return (st);
	if ((st = norm_calls(m, &calls)) != RS_OK) {
		rs_json_free(content);
		return (st);
	}
	r = is_role(m->role, "assistant") ? reasoning_of(m->in) : NULL;
	o = rs_json_obj();
	if (rs_json_set(o, "role", rs_json_str(m->role)) != 0 ||
	    rs_json_set(o, "content", content) != 0 ||
	    (r != NULL && rs_json_set(o, "reasoning_content",
	    rs_json_ref(r)) != 0) ||
	    (calls != NULL && rs_json_set(o, "tool_calls", calls) != 0)) {
		rs_json_free(o);
		return (rs_gen_fail(m->ge, RS_ERR_NOMEM, NULL,
		    "out of memory"));
	}
	*out = o;
	return (RS_OK);
}

static const char *
role_of(const struct rs_json *msg)
{
	const char	*r;
	size_t		 n;

	return (rs_json_as_str(rs_json_get(msg, "role"), &r, &n) == 0 ? r :
	    "");
}

/*
 * Step 3: merge the leading system messages (contents joined by "\n\n")
 * into ONE, and turn later ones into user messages (late_system =
 * "as_user").  Step 7: a tool message must follow an assistant message
 * with tool calls or another tool message.
 */
static enum rs_status
arrange(struct rs_json *norm, struct rs_json **out, struct rs_gen_error *ge)
{
	struct rs_json	*res, *m, *sys = NULL;
	struct rs_buf	 b;
	const char	*s, *prev = "";
	size_t		 i, n, lead;
	int		 prev_calls = 0, bad = 0;
	char		 path[32];

	rs_buf_init(&b);
	for (lead = 0; lead < rs_json_arr_len(norm); lead++) {
		m = rs_json_arr_at(norm, lead);
		if (strcmp(role_of(m), "system") != 0)
			break;
		rs_json_as_str(rs_json_get(m, "content"), &s, &n);
		if (lead > 0)
			rs_buf_adds(&b, "\n\n");
		rs_buf_add(&b, s, n);
	}
	res = rs_json_arr();
	if (lead > 0) {
		sys = rs_json_obj();
		rs_json_set(sys, "role", rs_json_str("system"));
		rs_json_set(sys, "content", rs_json_strn(b.data != NULL ?
		    b.data : "", b.len));
		rs_json_push(res, sys);
	}
	for (i = lead; i < rs_json_arr_len(norm) && !bad; i++) {
		m = rs_json_arr_at(norm, i);
		if (strcmp(role_of(m), "system") == 0)
			rs_json_set(m, "role", rs_json_str("user"));
		if (strcmp(role_of(m), "tool") == 0 && !prev_calls &&
		    strcmp(prev, "tool") != 0)
			bad = 1;
		else {
			prev = role_of(m);
			prev_calls = rs_json_get(m, "tool_calls") != NULL;
			rs_json_push(res, rs_json_ref(m));
		}
	}
	if (b.oom || res == NULL) {
		rs_buf_cleanup(&b);
		rs_json_free(res);
		return (rs_gen_fail(ge, RS_ERR_NOMEM, NULL, "out of memory"));
	}
	rs_buf_cleanup(&b);
	if (bad) {
		rs_json_free(res);
		snprintf(path, sizeof(path), "messages[%zu]", i - 1);
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
		    "%s: a tool message must follow an assistant message "
		    "with tool_calls or another tool message", path));
	}
	*out = res;
	return (RS_OK);
}

enum rs_status
rs_gen_norm_messages(const struct rs_json *msgs, struct rs_json **out,
    struct rs_gen_error *ge)
{
	struct rs_json	*norm, *m = NULL;
	struct msgctx	 c = { .ge = ge };
	enum rs_status	 st = RS_OK;

	if (msgs == NULL || rs_json_kind(msgs) != RS_JSON_ARRAY)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, "messages",
		    "messages: must be an array"));
	if (rs_json_arr_len(msgs) == 0)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, "messages",
		    "No messages provided."));
	if ((norm = rs_json_arr()) == NULL)
		return (rs_gen_fail(ge, RS_ERR_NOMEM, NULL, "out of memory"));
	for (size_t i = 0; i < rs_json_arr_len(msgs) && st == RS_OK; i++) {
		c.in = rs_json_arr_at(msgs, i);
		c.i = i;
		if ((st = norm_message(&c, &m)) == RS_OK &&
		    rs_json_push(norm, m) != 0)
			st = rs_gen_fail(ge, RS_ERR_NOMEM, NULL,
			    "out of memory");
	}
	if (st == RS_OK)
		st = arrange(norm, out, ge);
	rs_json_free(norm);
	return (st);
}

/* ---- tools ---- */

/*
 * Unicode White_Space past ASCII (serving.md §1.4's list) and the C1
 * controls: white space in a tool name like the ASCII kinds (§4.3).
 */
static int
wide_space(uint32_t cp)
{
	return ((cp >= 0x80 && cp <= 0xA0) || cp == 0x1680 ||
	    (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
	    cp == 0x202F || cp == 0x205F || cp == 0x3000);
}

int
rs_gen_tool_name_ok(const char *name, size_t n)
{
	size_t	chars = 0;

	if (n == 0 || strlen(name) != n)
		return (0);
	for (size_t i = 0; i < n; chars++) {
		uint32_t	cp;
		int		len = rs_utf8_seq((const unsigned char *)name + i,
				    n - i, &cp);

		if (len <= 0 || cp <= 0x20 || cp == 0x7f || wide_space(cp) ||
		    (cp < 0x80 && strchr("\"'<>{}=", (int)cp) != NULL))
			return (0);
		i += (size_t)len;
	}
	return (chars <= RS_GEN_MAX_TOOL_NAME);
}

/* parameters: an object whose properties (an object) and required (an
   array of strings) have the right types when present. */
static enum rs_status
check_params(const struct rs_json *p, const char *path,
    struct rs_gen_error *ge)
{
	struct rs_json	*v;
	const char	*s;
	size_t		 n;

	if (rs_json_kind(p) != RS_JSON_OBJECT)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
		    "%s: must be a JSON schema object", path));
	if ((v = rs_gen_field(p, "properties")) != NULL &&
	    rs_json_kind(v) != RS_JSON_OBJECT)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
		    "%s.properties: must be an object", path));
	if ((v = rs_gen_field(p, "required")) == NULL)
		return (RS_OK);
	if (rs_json_kind(v) != RS_JSON_ARRAY)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
		    "%s.required: must be an array of strings", path));
	for (size_t i = 0; i < rs_json_arr_len(v); i++)
		if (rs_json_as_str(rs_json_arr_at(v, i), &s, &n) != 0)
			return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
			    "%s.required[%zu]: must be a string", path, i));
	return (RS_OK);
}

/* One tool, rebuilt as {type, function: {name, description?, parameters}}. */
static enum rs_status
norm_tool(const struct rs_json *t, size_t i, struct rs_json **out,
    const char **name, struct rs_gen_error *ge)
{
	struct rs_json	*fn, *v, *params, *o, *f;
	const char	*s;
	size_t		 n;
	char		 path[48];
	enum rs_status	 st;

	snprintf(path, sizeof(path), "tools[%zu]", i);
	if (rs_json_kind(t) != RS_JSON_OBJECT)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
		    "%s: must be an object", path));
	snprintf(path, sizeof(path), "tools[%zu].type", i);
	if ((v = rs_gen_field(t, "type")) != NULL &&
	    (rs_json_as_str(v, &s, &n) != 0 || strcmp(s, "function") != 0))
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
		    "%s: only \"function\" tools are supported", path));
	snprintf(path, sizeof(path), "tools[%zu].function", i);
	if ((fn = rs_json_get(t, "function")) == NULL ||
	    rs_json_kind(fn) != RS_JSON_OBJECT)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
		    "%s: missing or not an object", path));
	snprintf(path, sizeof(path), "tools[%zu].function.name", i);
	if (rs_json_as_str(rs_json_get(fn, "name"), &s, &n) != 0 ||
	    !rs_gen_tool_name_ok(s, n))
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
		    "%s: must be a string of 1 to %d characters without "
		    "white space, quotes, <, >, {, } or =", path,
		    RS_GEN_MAX_TOOL_NAME));
	*name = s;
	snprintf(path, sizeof(path), "tools[%zu].function.description", i);
	if ((v = rs_gen_field(fn, "description")) != NULL &&
	    rs_json_kind(v) != RS_JSON_STRING)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, path,
		    "%s: must be a string", path));
	snprintf(path, sizeof(path), "tools[%zu].function.parameters", i);
	if ((params = rs_gen_field(fn, "parameters")) != NULL) {
		if ((st = check_params(params, path, ge)) != RS_OK)
			return (st);
		params = rs_json_ref(params);
	} else if ((params = rs_json_obj()) != NULL) {
		rs_json_set(params, "type", rs_json_str("object"));
		rs_json_set(params, "properties", rs_json_obj());
	}
	o = rs_json_obj();
	f = rs_json_obj();
	if (rs_json_set(f, "name", rs_json_strn(s, n)) != 0 ||
	    (v != NULL && rs_json_set(f, "description", rs_json_ref(v)) != 0) ||
	    rs_json_set(f, "parameters", params) != 0 ||
	    rs_json_set(o, "type", rs_json_str("function")) != 0 ||
	    rs_json_set(o, "function", f) != 0) {
		rs_json_free(o);
		return (rs_gen_fail(ge, RS_ERR_NOMEM, NULL, "out of memory"));
	}
	*out = o;
	return (RS_OK);
}

enum rs_status
rs_gen_norm_tools(const struct rs_json *tools, struct rs_json **out,
    struct rs_gen_error *ge)
{
	struct rs_json	*arr, *t = NULL;
	const char	*names[RS_GEN_MAX_TOOLS];
	size_t		 n;
	char		 path[48], q[RS_UTF8_QUOTE_SIZE];
	enum rs_status	 st;

	*out = NULL;
	if (tools == NULL)
		return (RS_OK);
	if (rs_json_kind(tools) != RS_JSON_ARRAY)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, "tools",
		    "tools: must be an array"));
	if ((n = rs_json_arr_len(tools)) == 0)
		return (RS_OK);		/* [] is treated as absent */
	if (n > RS_GEN_MAX_TOOLS)
		return (rs_gen_fail(ge, RS_ERR_INVALID_ARG, "tools",
		    "tools: %zu tools, at most %d allowed", n,
		    RS_GEN_MAX_TOOLS));
	if ((arr = rs_json_arr()) == NULL)
		return (rs_gen_fail(ge, RS_ERR_NOMEM, NULL, "out of memory"));
	for (size_t i = 0; i < n; i++) {
		if ((st = norm_tool(rs_json_arr_at(tools, i), i, &t, &names[i],
		    ge)) != RS_OK) {
			rs_json_free(arr);
			return (st);
		}
		if (rs_json_push(arr, t) != 0) {
			rs_json_free(arr);
			return (rs_gen_fail(ge, RS_ERR_NOMEM, NULL,
			    "out of memory"));
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp(names[j], names[i]) == 0) {
				rs_json_free(arr);
				snprintf(path, sizeof(path),
				    "tools[%zu].function.name", i);
				return (rs_gen_fail(ge, RS_ERR_INVALID_ARG,
				    path, "%s: duplicate tool name '%s'", path,
				    rs_utf8_quote(names[i], strlen(names[i]),
				    q)));
			}
	}
	*out = arr;
	return (RS_OK);
}
