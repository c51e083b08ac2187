/*
 * rs_chat.c - hand-written renderer of the Qwen3.5/3.6/3.8 chat templates
 * (serving.md §2.4, §2.7; see rs_chat.h).
 *
 * The code follows the template's evaluation order step by step, because
 * the order decides which error a bad conversation gets: effort check,
 * system turn (with the tools block), the backwards scan for the last real
 * user query, then every message, then the generation prompt.  Jinja
 * semantics that matter and are reproduced here:
 *
 *   - `x|trim` is Python str.strip(): the Unicode whitespace of isspace(),
 *     which includes U+001C..U+001F and U+0085 (§2.7 item 1);
 *   - `'image' in item` is key membership for a mapping, substring search
 *     for a string and element equality for a list;
 *   - an undefined attribute renders as "" but raises when concatenated
 *     with `+`, with Jinja's "'dict object' has no attribute 'name'";
 *   - `tojson` is json.dumps(ensure_ascii=False) (rs_pyjson.h).
 *
 * Text is built in a "segmented text": a byte buffer plus runs marking each
 * byte as template-authored or client-supplied (§1.3).  Message content is
 * rendered into its own segmented text first, trimmed as a byte range, and
 * then copied with its marks, so image placeholders inside a client's
 * content stay template-authored.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rs_buf.h"
#include "rs_chat.h"
#include "rs_pyjson.h"
#include "rs_pystr.h"

/* Texts written by the templates (quoted in serving.md §2.4 A and B). */
#define I_XHIGH	"Reasoning effort is set to xhigh. Please think carefully " \
	"through the task, validate key assumptions, consider plausible " \
	"alternatives, and prioritize correctness, consistency, and clarity " \
	"in the final answer."
#define I_LOW	"Reasoning effort is set to low. Keep your thinking brief " \
	"and focused, moving directly to the conclusion without unnecessary " \
	"elaboration."
#define TOOLS_HEAD	"# Tools\n\nYou have access to the following " \
	"functions:\n\n<tools>"
#define TOOL_RULES	"\n\nIf you choose to call a function ONLY reply in " \
	"the following format with NO suffix:\n\n<tool_call>\n" \
	"<function=example_function_name>\n<parameter=example_parameter_1>\n" \
	"value_1\n</parameter>\n<parameter=example_parameter_2>\nThis is the " \
	"value for the second parameter\nthat can span\nmultiple lines\n" \
	"</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n" \
	"- Function calls MUST follow the specified format: an inner " \
	"<function=...></function> block must be nested within " \
	"<tool_call></tool_call> XML tags\n- Required parameters MUST be " \
	"specified\n- You may provide optional reasoning for your function " \
	"call in natural language BEFORE the function call, but NOT after\n" \
	"- If there is no function call available, answer the question like " \
	"normal with your current knowledge and do not tell the user about " \
	"function calls\n</IMPORTANT>"
#define IMAGE_PH	"<|vision_start|><|image_pad|><|vision_end|>"
#define VIDEO_PH	"<|vision_start|><|video_pad|><|vision_end|>"

/* Text with a template/client mark per byte, as runs. */
struct stext {
	struct rs_buf		 b;
	struct rs_chat_seg	*segs;
	size_t			 n, cap;
	int			 oom;
};

/* A byte range of a segmented text (content after trim, say). */
struct span {
	const struct stext	*t;
	size_t			 lo, hi;
};

struct rctx {
	const struct rs_chat_opts *o;
	const struct rs_json	*msgs;
	size_t			 n;
	struct stext		 out;
	int			 n_images, n_videos;
	struct rs_err		*err;
};

static void
st_init(struct stext *t)
{
	memset(t, 0, sizeof(*t));
	rs_buf_init(&t->b);
}

static void
st_cleanup(struct stext *t)
{
	rs_buf_cleanup(&t->b);
	free(t->segs);
	st_init(t);
}

static int
st_oom(const struct stext *t)
{
	return (t->oom || t->b.oom);
}

/* Append N bytes at S marked CLIENT, extending the last run if it matches. */
static void
st_add(struct stext *t, const char *s, size_t n, int client)
{
	struct rs_chat_seg	*g;

	if (n == 0 || st_oom(t))
		return;
	if (t->n > 0 && t->segs[t->n - 1].client == client) {
		t->segs[t->n - 1].len += n;
	} else {
		if (t->n == t->cap) {
			size_t	cap = t->cap ? 2 * t->cap : 16;

			if ((g = realloc(t->segs, cap * sizeof(*g))) == NULL) {
				t->oom = 1;
				return;
			}
			t->segs = g;
			t->cap = cap;
		}
		t->segs[t->n++] = (struct rs_chat_seg){ t->b.len, n, client };
	}
	rs_buf_add(&t->b, s, n);
}

static void
tpl(struct stext *t, const char *s)
{
	st_add(t, s, strlen(s), 0);
}

/* Copy SP's bytes into T with their marks. */
static void
st_span(struct stext *t, struct span sp)
{
	const struct stext	*src = sp.t;

	for (size_t i = 0; i < src->n; i++) {
		size_t	lo = src->segs[i].off, hi = lo + src->segs[i].len;

		lo = lo > sp.lo ? lo : sp.lo;
		hi = hi < sp.hi ? hi : sp.hi;
		if (lo < hi)
			st_add(t, src->b.data + lo, hi - lo,
			    src->segs[i].client);
	}
}

/* SP with Python strip() applied. */
static struct span
trim(struct span sp)
{
	const char	*s = sp.t->b.data;

	if (sp.lo == sp.hi)
		return (sp);
	sp.lo += rs_pystr_lspace(s + sp.lo, sp.hi - sp.lo);
	sp.hi -= rs_pystr_rspace(s + sp.lo, sp.hi - sp.lo);
	return (sp);
}

static const char *
span_ptr(struct span sp)
{
	return (sp.t->b.data + sp.lo);
}

/* Offset of the first (LAST: last) occurrence of PAT in SP, or -1. */
static long
span_find(struct span sp, const char *pat, int last)
{
	size_t	m = strlen(pat), n = sp.hi - sp.lo;
	long	found = -1;

	for (size_t i = 0; i + m <= n; i++) {
		if (memcmp(span_ptr(sp) + i, pat, m) == 0) {
			found = (long)(sp.lo + i);
			if (!last)
				break;
		}
	}
	return (found);
}

static int
span_starts(struct span sp, const char *pat)
{
	size_t	m = strlen(pat);

	return (sp.hi - sp.lo >= m && memcmp(span_ptr(sp), pat, m) == 0);
}

static int
span_ends(struct span sp, const char *pat)
{
	size_t	m = strlen(pat);

	return (sp.hi - sp.lo >= m &&
	    memcmp(sp.t->b.data + sp.hi - m, pat, m) == 0);
}

/* ---- Jinja object model on JSON values ---- */

static int
str_eq(const struct rs_json *j, const char *lit)
{
	const char	*s;
	size_t		 n;

	return (j != NULL && rs_json_as_str(j, &s, &n) == 0 &&
	    n == strlen(lit) && memcmp(s, lit, n) == 0);
}

/* MSG.role == LIT, with an undefined role never equal. */
static int
role_is(const struct rs_json *msg, const char *lit)
{
	return (str_eq(rs_json_get(msg, "role"), lit));
}

/* A wide number's Python type: int for digits alone (Python's json). */
static int
wide_is_int(const struct rs_json *j)
{
	const char	*s;
	size_t		 n;

	return (rs_json_as_wide(j, &s, &n) == 0 && rs_pyjson_is_number(s, n,
	    1));
}

/* Python type name, as in "can only concatenate str (not \"int\")". */
static const char *
py_type(const struct rs_json *j)
{
	switch (rs_json_kind(j)) {
	case RS_JSON_NULL: return ("NoneType");
	case RS_JSON_BOOL: return ("bool");
	case RS_JSON_INT: return ("int");
	case RS_JSON_REAL: return ("float");
	case RS_JSON_STRING: return ("str");
	case RS_JSON_WIDE: return (wide_is_int(j) ? "int" : "float");
	case RS_JSON_ARRAY: return ("list");
	default: return ("dict");
	}
}

/* Jinja's error for the undefined attribute ATTR of J. */
static enum rs_status
undef_attr(struct rs_err *err, const struct rs_json *j, const char *attr)
{
	if (rs_json_kind(j) == RS_JSON_NULL)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "'None' has no attribute '%s'", attr));
	return (rs_errf(err, RS_ERR_INVALID_ARG,
	    "'%s object' has no attribute '%s'", py_type(j), attr));
}

/*
 * Python `KEY in ITEM`: 1 or 0, or -1 with an error when ITEM is not a
 * container (a number, a boolean, None).
 */
static int
py_in(struct rctx *c, const struct rs_json *item, const char *key)
{
	const char	*s;
	size_t		 n, i, m = strlen(key);

	switch (rs_json_kind(item)) {
	case RS_JSON_OBJECT:
		return (rs_json_get(item, key) != NULL);
	case RS_JSON_STRING:
		rs_json_as_str(item, &s, &n);
		for (i = 0; i + m <= n; i++)
			if (memcmp(s + i, key, m) == 0)
				return (1);
		return (0);
	case RS_JSON_ARRAY:
		for (i = 0; i < rs_json_arr_len(item); i++)
			if (str_eq(rs_json_arr_at(item, i), key))
				return (1);
		return (0);
	default:
		rs_errf(c->err, RS_ERR_INVALID_ARG,
		    "argument of type '%s' is not iterable", py_type(item));
		return (-1);
	}
}

/* ---- render_content macro ---- */

/* One image or video part: the placeholder, counted when COUNT. */
static enum rs_status
render_visual(struct rctx *c, int video, int count, int is_system,
    struct stext *dst)
{
	int	*counter = video ? &c->n_videos : &c->n_images;

	if (is_system)
		return (rs_errf(c->err, RS_ERR_INVALID_ARG,
		    "System message cannot contain %s.",
		    video ? "videos" : "images"));
	if (count)
		(*counter)++;
	if (c->o->add_vision_id) {
		char	label[48];

		snprintf(label, sizeof(label), "%s %d: ",
		    video ? "Video" : "Picture", *counter);
		tpl(dst, label);
	}
	tpl(dst, video ? VIDEO_PH : IMAGE_PH);
	return (RS_OK);
}

/* A text part: {{ item.text }} (undefined renders as nothing). */
static enum rs_status
render_text_part(struct rctx *c, const struct rs_json *item,
    struct stext *dst)
{
	const struct rs_json	*text = rs_json_get(item, "text");
	struct rs_buf		 b;

	if (text == NULL)
		return (RS_OK);
	rs_buf_init(&b);
	if (rs_pyjson_pystr(&b, text) != 0) {
		rs_buf_cleanup(&b);
		return (rs_errf(c->err, RS_ERR_INVALID_ARG,
		    "content part text is %s, not a string",
		    rs_json_kind(text) == RS_JSON_ARRAY ? "an array" :
		    "an object"));
	}
	st_add(dst, b.data, b.len, 1);
	if (b.oom)
		dst->oom = 1;
	rs_buf_cleanup(&b);
	return (RS_OK);
}

static enum rs_status
render_part(struct rctx *c, const struct rs_json *item, int count,
    int is_system, struct stext *dst)
{
	int	a, v;

	if ((a = py_in(c, item, "image")) < 0)
		return (RS_ERR_INVALID_ARG);
	if (!a && !(a = py_in(c, item, "image_url")))
		a = str_eq(rs_json_get(item, "type"), "image");
	if (a)
		return (render_visual(c, 0, count, is_system, dst));
	if (!(v = py_in(c, item, "video")))
		v = str_eq(rs_json_get(item, "type"), "video");
	if (v)
		return (render_visual(c, 1, count, is_system, dst));
	if (py_in(c, item, "text"))
		return (render_text_part(c, item, dst));
	return (rs_errf(c->err, RS_ERR_INVALID_ARG,
	    "Unexpected item type in content."));
}

/*
 * render_content(content, COUNT, IS_SYSTEM)|trim of MSG into DST (emptied
 * first); *OUT is the trimmed range.
 */
static enum rs_status
render_content(struct rctx *c, const struct rs_json *msg, int count,
    int is_system, struct stext *dst, struct span *out)
{
	const struct rs_json	*content = rs_json_get(msg, "content");
	enum rs_status		 st = RS_OK;
	const char		*s;
	size_t			 n;

	st_cleanup(dst);
	if (content == NULL || rs_json_kind(content) == RS_JSON_NULL) {
		/* none or undefined: '' */
	} else if (rs_json_as_str(content, &s, &n) == 0) {
		st_add(dst, s, n, 1);
	} else if (rs_json_kind(content) == RS_JSON_ARRAY) {
		for (size_t i = 0; i < rs_json_arr_len(content) && st == RS_OK;
		    i++)
			st = render_part(c, rs_json_arr_at(content, i), count,
			    is_system, dst);
	} else {
		st = rs_errf(c->err, RS_ERR_INVALID_ARG,
		    "Unexpected content type.");
	}
	if (st == RS_OK && st_oom(dst))
		st = rs_errf(c->err, RS_ERR_NOMEM, "out of memory");
	*out = trim((struct span){ dst, 0, dst->b.len });
	return (st);
}

/* ---- system turn, tools, last query ---- */

/*
 * The reasoning instruction (QWEN38, thinking on), or "" (§2.4 A).
 */
static enum rs_status
instruction(struct rctx *c, const char **instr)
{
	const char	*eff = c->o->reasoning_effort;

	*instr = "";
	if (c->o->variant != RS_CHAT_QWEN38 ||
	    (c->o->enable_thinking != RS_CHAT_UNSET &&
	    c->o->enable_thinking != 1))
		return (RS_OK);
	if (eff == NULL || strcmp(eff, "xhigh") == 0)
		*instr = I_XHIGH;
	else if (strcmp(eff, "low") == 0)
		*instr = I_LOW;
	else if (strcmp(eff, "medium") != 0)
		return (rs_errf(c->err, RS_ERR_INVALID_ARG,
		    "Unexpected reasoning effort %s. Supported types are "
		    "xhigh (default), medium, and low.", eff));
	return (RS_OK);
}

static enum rs_status
system_turn(struct rctx *c, const char *instr)
{
	const struct rs_json	*tools = c->o->tools;
	const struct rs_json	*m0 = rs_json_arr_at(c->msgs, 0);
	int			 sys = role_is(m0, "system");
	struct stext		 content;
	struct span		 sp = { NULL, 0, 0 };
	enum rs_status		 st = RS_OK;
	struct rs_buf		 js;

	st_init(&content);
	if (sys && (st = render_content(c, m0, 0, 1, &content, &sp)) != RS_OK)
		goto out;
	if (tools != NULL && rs_json_arr_len(tools) > 0) {
		tpl(&c->out, "<|im_start|>system\n");
		if (*instr != '\0') {
			tpl(&c->out, instr);
			tpl(&c->out, "\n\n");
		}
		tpl(&c->out, TOOLS_HEAD);
		rs_buf_init(&js);
		for (size_t i = 0; i < rs_json_arr_len(tools); i++) {
			tpl(&c->out, "\n");
			rs_buf_reset(&js);
			rs_pyjson_dump(&js, rs_json_arr_at(tools, i));
			if (js.oom)
				c->out.oom = 1;
			st_add(&c->out, js.data, js.len, 1);
		}
		rs_buf_cleanup(&js);
		tpl(&c->out, "\n</tools>");
		tpl(&c->out, TOOL_RULES);
		if (sys && sp.hi > sp.lo) {
			tpl(&c->out, "\n\n");
			st_span(&c->out, sp);
		}
		tpl(&c->out, "<|im_end|>\n");
	} else if (sys && (sp.hi > sp.lo ||
	    c->o->variant != RS_CHAT_QWEN38)) {
		/* QWEN35/36 write the system turn even when it is empty */
		tpl(&c->out, "<|im_start|>system\n");
		if (*instr != '\0') {
			tpl(&c->out, instr);
			tpl(&c->out, "\n\n");
		}
		st_span(&c->out, sp);
		tpl(&c->out, "<|im_end|>\n");
	} else if (*instr != '\0') {
		tpl(&c->out, "<|im_start|>system\n");
		tpl(&c->out, instr);
		tpl(&c->out, "<|im_end|>\n");
	}
out:
	st_cleanup(&content);
	return (st);
}

/*
 * Index of the last user message that is not wholly a <tool_response>
 * block (§2.4 C), scanning backwards as the template does.
 */
static enum rs_status
last_query(struct rctx *c, size_t *q)
{
	struct stext	content;
	struct span	sp;
	enum rs_status	st = RS_OK;
	size_t		i;

	st_init(&content);
	for (i = c->n; i-- > 0;) {
		const struct rs_json *m = rs_json_arr_at(c->msgs, i);

		if (!role_is(m, "user"))
			continue;
		if ((st = render_content(c, m, 0, 0, &content, &sp)) != RS_OK)
			break;
		if (!(span_starts(sp, "<tool_response>") &&
		    span_ends(sp, "</tool_response>"))) {
			*q = i;
			break;
		}
	}
	st_cleanup(&content);
	if (st == RS_OK && i == (size_t)-1)
		st = rs_errf(c->err, RS_ERR_INVALID_ARG,
		    "No user query found in messages.");
	return (st);
}

/* ---- assistant turns ---- */

/*
 * QWEN35/36 without reasoning_content: split "<think>R</think>C" out of the
 * content, as content.split('</think>')[0].rstrip('\n').split('<think>')[-1]
 * .lstrip('\n') and content.split('</think>')[-1].lstrip('\n').
 */
static void
split_think(struct span *content, struct span *reasoning)
{
	const char	*s = content->t->b.data;
	long		 first = span_find(*content, "</think>", 0);
	long		 last = span_find(*content, "</think>", 1);
	long		 open;
	struct span	 r = *content;

	if (first < 0)
		return;
	r.hi = (size_t)first;
	while (r.hi > r.lo && s[r.hi - 1] == '\n')
		r.hi--;
	if ((open = span_find(r, "<think>", 1)) >= 0)
		r.lo = (size_t)open + strlen("<think>");
	while (r.lo < r.hi && s[r.lo] == '\n')
		r.lo++;
	*reasoning = r;
	content->lo = (size_t)last + strlen("</think>");
	while (content->lo < content->hi && s[content->lo] == '\n')
		content->lo++;
}

/* One argument value: raw string, tojson, or (QWEN35) Python str(). */
static void
arg_value(struct rctx *c, const struct rs_json *v, struct rs_buf *b)
{
	enum rs_json_kind	k = rs_json_kind(v);

	if (c->o->variant == RS_CHAT_QWEN35) {
		if (k == RS_JSON_ARRAY || k == RS_JSON_OBJECT)
			rs_pyjson_dump(b, v);
		else
			rs_pyjson_pystr(b, v);
	} else if (k == RS_JSON_STRING) {
		rs_pyjson_pystr(b, v);
	} else {
		rs_pyjson_dump(b, v);
	}
}

static enum rs_status
tool_call(struct rctx *c, const struct rs_json *el, size_t k,
    int have_content)
{
	const struct rs_json	*tc = el, *name, *args, *v;
	const char		*s, *key;
	size_t			 n, klen;
	void			*it = NULL;
	struct rs_buf		 b;

	if (rs_json_kind(el) == RS_JSON_OBJECT &&
	    rs_json_get(el, "function") != NULL)
		tc = rs_json_get(el, "function");
	name = rs_json_kind(tc) == RS_JSON_OBJECT ? rs_json_get(tc, "name") :
	    NULL;
	if (name == NULL)
		return (undef_attr(c->err, tc, "name"));
	if (rs_json_as_str(name, &s, &n) != 0)
		return (rs_errf(c->err, RS_ERR_INVALID_ARG,
		    "can only concatenate str (not \"%s\") to str",
		    py_type(name)));
	tpl(&c->out, k > 0 ? "\n<tool_call>\n<function=" : have_content ?
	    "\n\n<tool_call>\n<function=" : "<tool_call>\n<function=");
	st_add(&c->out, s, n, 1);
	tpl(&c->out, ">\n");
	args = rs_json_get(tc, "arguments");
	if (args != NULL && !(c->o->variant == RS_CHAT_QWEN38 &&
	    str_eq(args, ""))) {
		if (rs_json_kind(args) != RS_JSON_OBJECT)
			return (rs_errf(c->err, RS_ERR_INVALID_ARG,
			    "Can only get item pairs from a mapping."));
		rs_buf_init(&b);
		while (rs_json_obj_next(args, &it, &key, &klen,
		    (struct rs_json **)&v) == 0) {
			tpl(&c->out, "<parameter=");
			st_add(&c->out, key, klen, 1);
			tpl(&c->out, ">\n");
			rs_buf_reset(&b);
			arg_value(c, v, &b);
			if (b.oom)
				c->out.oom = 1;
			st_add(&c->out, b.data, b.len, 1);
			tpl(&c->out, "\n</parameter>\n");
		}
		rs_buf_cleanup(&b);
	}
	tpl(&c->out, "</function>\n</tool_call>");
	return (RS_OK);
}

static enum rs_status
assistant(struct rctx *c, const struct rs_json *m, size_t i, size_t q,
    struct span content)
{
	const struct rs_json	*rc = rs_json_get(m, "reasoning_content");
	const struct rs_json	*tcs = rs_json_get(m, "tool_calls");
	enum rs_chat_variant	 var = c->o->variant;
	int			 pt = c->o->preserve_thinking, keep;
	struct stext		 rtext;
	struct span		 r = { content.t, 0, 0 };
	enum rs_status		 st = RS_OK;
	const char		*s;
	size_t			 n;

	st_init(&rtext);
	if (rc != NULL && rs_json_as_str(rc, &s, &n) == 0) {
		st_add(&rtext, s, n, 1);
		r = (struct span){ &rtext, 0, rtext.b.len };
	} else if (var != RS_CHAT_QWEN38) {
		split_think(&content, &r);
	}
	r = trim(r);
	if (var == RS_CHAT_QWEN38)
		keep = pt == RS_CHAT_UNSET || pt == 1 || i > q;
	else if (var == RS_CHAT_QWEN36)
		keep = pt == 1 || i > q;
	else
		keep = i > q;
	if (keep) {
		tpl(&c->out, "<|im_start|>assistant\n<think>\n");
		st_span(&c->out, r);
		tpl(&c->out, "\n</think>\n\n");
	} else {
		tpl(&c->out, "<|im_start|>assistant\n");
	}
	st_span(&c->out, content);
	if (st_oom(&rtext))
		c->out.oom = 1;
	st_cleanup(&rtext);
	if (tcs != NULL && rs_json_kind(tcs) == RS_JSON_ARRAY) {
		struct span	 ct = trim(content);

		for (size_t k = 0; k < rs_json_arr_len(tcs) && st == RS_OK; k++)
			st = tool_call(c, rs_json_arr_at(tcs, k), k,
			    ct.hi > ct.lo);
	} else if (rs_json_as_str(tcs, &s, &n) == 0 && n > 0) {
		/* a string is iterable: its first character has no .name */
		st = rs_errf(c->err, RS_ERR_INVALID_ARG,
		    "'str object' has no attribute 'name'");
	}
	if (st == RS_OK)
		tpl(&c->out, "<|im_end|>\n");
	return (st);
}

/* ---- the message loop ---- */

static void
tool_message(struct rctx *c, size_t i, struct span content)
{
	const struct rs_json	*prev, *next;

	prev = i > 0 ? rs_json_arr_at(c->msgs, i - 1) : NULL;
	next = i + 1 < c->n ? rs_json_arr_at(c->msgs, i + 1) : NULL;
	if (prev != NULL && !role_is(prev, "tool"))
		tpl(&c->out, "<|im_start|>user");
	tpl(&c->out, "\n<tool_response>\n");
	st_span(&c->out, content);
	tpl(&c->out, "\n</tool_response>");
	if (next == NULL || !role_is(next, "tool"))
		tpl(&c->out, "<|im_end|>\n");
}

static enum rs_status
messages(struct rctx *c, size_t q)
{
	struct stext	content;
	struct span	sp;
	enum rs_status	st = RS_OK;

	st_init(&content);
	for (size_t i = 0; i < c->n && st == RS_OK; i++) {
		const struct rs_json *m = rs_json_arr_at(c->msgs, i);

		if ((st = render_content(c, m, 1, 0, &content, &sp)) != RS_OK)
			break;
		if (role_is(m, "system")) {
			if (i != 0)
				st = rs_errf(c->err, RS_ERR_INVALID_ARG,
				    "System message must be at the "
				    "beginning.");
		} else if (role_is(m, "user")) {
			tpl(&c->out, "<|im_start|>user\n");
			st_span(&c->out, sp);
			tpl(&c->out, "<|im_end|>\n");
		} else if (role_is(m, "assistant")) {
			st = assistant(c, m, i, q, sp);
		} else if (role_is(m, "tool")) {
			tool_message(c, i, sp);
		} else {
			st = rs_errf(c->err, RS_ERR_INVALID_ARG,
			    "Unexpected message role.");
		}
	}
	st_cleanup(&content);
	return (st);
}

/* ---- public API ---- */

void
rs_chat_opts_init(struct rs_chat_opts *o, enum rs_chat_variant variant)
{
	memset(o, 0, sizeof(*o));
	o->variant = variant;
	o->add_generation_prompt = 1;
	o->enable_thinking = RS_CHAT_UNSET;
	o->preserve_thinking = RS_CHAT_UNSET;
}

static enum rs_status
render(struct rctx *c)
{
	const char	*instr;
	enum rs_status	 st;
	size_t		 q = 0;

	if ((st = instruction(c, &instr)) != RS_OK ||
	    (st = system_turn(c, instr)) != RS_OK ||
	    (st = last_query(c, &q)) != RS_OK ||
	    (st = messages(c, q)) != RS_OK)
		return (st);
	if (c->o->add_generation_prompt) {
		tpl(&c->out, "<|im_start|>assistant\n");
		tpl(&c->out, c->o->enable_thinking == 0 ?
		    "<think>\n\n</think>\n\n" : "<think>\n");
	}
	return (RS_OK);
}

enum rs_status
rs_chat_render(const struct rs_chat_opts *o, const struct rs_json *messages,
    struct rs_chat_prompt *out, struct rs_err *err)
{
	struct rctx	c;
	enum rs_status	st;

	memset(out, 0, sizeof(*out));
	if (o->variant != RS_CHAT_QWEN35 && o->variant != RS_CHAT_QWEN36 &&
	    o->variant != RS_CHAT_QWEN38)
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "chat template variant %d is not one we can render",
		    (int)o->variant));
	if (messages == NULL || (rs_json_kind(messages) == RS_JSON_ARRAY &&
	    rs_json_arr_len(messages) == 0))
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "No messages provided."));
	if (rs_json_kind(messages) != RS_JSON_ARRAY)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "messages must be an array"));
	if (o->tools != NULL && rs_json_kind(o->tools) != RS_JSON_ARRAY)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "tools must be an array"));
	memset(&c, 0, sizeof(c));
	c.o = o;
	c.msgs = messages;
	c.n = rs_json_arr_len(messages);
	c.err = err;
	st_init(&c.out);
	st = render(&c);
	if (st == RS_OK && st_oom(&c.out))
		st = rs_errf(err, RS_ERR_NOMEM, "out of memory");
	if (st != RS_OK) {
		st_cleanup(&c.out);
		return (st);
	}
	out->segs = c.out.segs;
	out->n_segs = c.out.n;
	if ((out->text = rs_buf_release(&c.out.b, &out->len)) == NULL) {
		free(c.out.segs);
		memset(out, 0, sizeof(*out));
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	}
	return (RS_OK);
}

void
rs_chat_prompt_cleanup(struct rs_chat_prompt *out)
{
	if (out == NULL)
		return;
	free(out->text);
	free(out->segs);
	memset(out, 0, sizeof(*out));
}

const char *
rs_chat_variant_name(enum rs_chat_variant v)
{
	switch (v) {
	case RS_CHAT_QWEN35: return ("qwen35");
	case RS_CHAT_QWEN36: return ("qwen36");
	case RS_CHAT_QWEN38: return ("qwen38");
	default: return ("unknown");
	}
}
