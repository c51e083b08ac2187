/*
 * rs_pretok.c - the split regexes of rs_pretok.h through PCRE2 (8-bit code
 * units, UTF mode).
 *
 * Cost: one pcre2_match() per word, started at the previous word's end.
 * Every alternative consumes at least one code point and together they
 * accept any code point, so each call matches at its start offset and the
 * total work is linear in the text, apart from the greedy \s* of the
 * newline alternative, which rescans a whitespace run once before giving it
 * back: still linear, because the run then becomes (part of) one word.
 */
#define PCRE2_CODE_UNIT_WIDTH	8

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcre2.h>

#include "rs_pretok.h"
#include "rs_unidelta.h"

/*
 * \s as the Unicode White_Space property (serving.md §1.4): TAB..CR, space,
 * NEL, NBSP, OGHAM SPACE MARK, EN QUAD..HAIR SPACE, LS, PS, NNBSP, MMSP,
 * IDEOGRAPHIC SPACE.  For use inside a character class.
 */
#define WS	"\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}" \
		"\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"

/*
 * The contractions, caseless with Unicode folding as in the HF pattern:
 * "'S" and "'\u017f" (long s) count too.  llama.cpp's ASCII-only rewrite
 * ('[sS]...) differs only on that second kind (serving.md §1.4).
 */
#define CONTRACTIONS	"(?i:'s|'t|'re|'ve|'m|'ll|'d)"
/* Newline run, whitespace not followed by non-space, any whitespace. */
#define SPACES		"|[" WS "]*[\\r\\n]+|[" WS "]+(?![^" WS "])|[" WS "]+"

/*
 * Letters, marks and numbers for use inside a character class: PCRE2's
 * Unicode classes and what Unicode added since 13.0 (rs_unidelta.h), so
 * that the split follows the Unicode 15 categories of serving.md §1.4
 * whatever version the linked PCRE2's tables are (Debian 12's: 14.0).
 */
#define L	"\\p{L}" RS_UNIDELTA_L
#define M	"\\p{M}" RS_UNIDELTA_M
#define N	"\\p{N}" RS_UNIDELTA_N

static const char *const patterns[] = {
	[RS_PRETOK_QWEN35] = CONTRACTIONS
	    "|[^\\r\\n" L N "]?[" L M "]+"
	    "|[" N "]"
	    "| ?[^" WS L M N "]+[\\r\\n]*"
	    SPACES,
	[RS_PRETOK_QWEN2] = CONTRACTIONS
	    "|[^\\r\\n" L N "]?[" L "]+"
	    "|[" N "]"
	    "| ?[^" WS L N "]+[\\r\\n]*"
	    SPACES,
};

static const char *const kind_names[] = {
	[RS_PRETOK_QWEN35] = "qwen35",
	[RS_PRETOK_QWEN2] = "qwen2",
};

#define N_KINDS	(sizeof(patterns) / sizeof(patterns[0]))

struct rs_pretok {
	enum rs_pretok_kind	 kind;
	pcre2_code		*code;
	int			 jit;
};

int
rs_pretok_kind_parse(const char *name, size_t n, enum rs_pretok_kind *out)
{
	for (size_t k = 0; k < N_KINDS; k++)
		if (strlen(kind_names[k]) == n &&
		    memcmp(kind_names[k], name, n) == 0) {
			*out = (enum rs_pretok_kind)k;
			return (0);
		}
	return (-1);
}

const char *
rs_pretok_kind_name(enum rs_pretok_kind kind)
{
	return ((size_t)kind < N_KINDS ? kind_names[kind] : "unknown");
}

enum rs_status
rs_pretok_new(struct rs_pretok **out, enum rs_pretok_kind kind,
    struct rs_err *err)
{
	struct rs_pretok *p;
	PCRE2_UCHAR	 msg[128];
	PCRE2_SIZE	 eoff;
	int		 ec;

	if ((size_t)kind >= N_KINDS)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "pre-tokenizer kind %d unknown", (int)kind));
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "pre-tokenizer: no memory"));
	p->kind = kind;
	p->code = pcre2_compile((PCRE2_SPTR)patterns[kind],
	    PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &ec, &eoff, NULL);
	if (p->code == NULL) {
		pcre2_get_error_message(ec, msg, sizeof(msg));
		rs_pretok_free(p);
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "pre-tokenizer '%s': pcre2 rejects the pattern at offset "
		    "%zu: %s", kind_names[kind], (size_t)eoff, (char *)msg));
	}
	/* JIT is an optimisation: the interpreter gives the same matches */
	p->jit = pcre2_jit_compile(p->code, PCRE2_JIT_COMPLETE) == 0;
	*out = p;
	return (RS_OK);
}

void
rs_pretok_free(struct rs_pretok *p)
{
	if (p == NULL)
		return;
	pcre2_code_free(p->code);
	free(p);
}

int
rs_pretok_jit(const struct rs_pretok *p)
{
	return (p->jit);
}

/* Length of the UTF-8 sequence led by byte C (the text is valid). */
static size_t
lead_len(unsigned char c)
{
	return (c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4);
}

static enum rs_status
match_error(int rc, struct rs_err *err)
{
	PCRE2_UCHAR	msg[128];

	pcre2_get_error_message(rc, msg, sizeof(msg));
	return (rs_errf(err, rc == PCRE2_ERROR_NOMEMORY ? RS_ERR_NOMEM :
	    RS_ERR_LIMIT, "pre-tokenizer: pcre2 match failed: %s",
	    (char *)msg));
}

enum rs_status
rs_pretok_split(const struct rs_pretok *p, const char *text, size_t len,
    rs_pretok_fn fn, void *arg, struct rs_err *err)
{
	pcre2_match_data *md;
	PCRE2_SIZE	*ov;
	enum rs_status	 st = RS_OK;
	size_t		 pos = 0, s, e;
	int		 rc;

	if (len == 0)
		return (RS_OK);
	if ((md = pcre2_match_data_create(1, NULL)) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "pre-tokenizer: no memory"));
	ov = pcre2_get_ovector_pointer(md);
	while (pos < len && st == RS_OK) {
		rc = pcre2_match(p->code, (PCRE2_SPTR)text, len, pos,
		    PCRE2_NO_UTF_CHECK, md, NULL);
		if (rc == PCRE2_ERROR_NOMATCH) {
			/* unreachable with our patterns; keep the tiling */
			st = fn(arg, pos, len - pos, err);
			break;
		}
		if (rc < 0) {
			st = match_error(rc, err);
			break;
		}
		s = ov[0];
		e = ov[1];
		if (e <= s)		/* an empty match: never, by design */
			e = s + lead_len((unsigned char)text[s]);
		if (s > pos)
			st = fn(arg, pos, s - pos, err);
		if (st == RS_OK)
			st = fn(arg, s, e - s, err);
		pos = e;
	}
	pcre2_match_data_free(md);
	return (st);
}

static char	version[96];

static void
make_version(void)
{
	char		ver[32] = "?", uni[32] = "?";
	uint32_t	jit = 0;

	pcre2_config(PCRE2_CONFIG_VERSION, ver);
	pcre2_config(PCRE2_CONFIG_UNICODE_VERSION, uni);
	pcre2_config(PCRE2_CONFIG_JIT, &jit);
	ver[strcspn(ver, " ")] = '\0';		/* drop the release date */
	snprintf(version, sizeof(version), "pcre2 %.20s (%sunicode %.20s, "
	    "classes to %s)", ver, jit ? "jit, " : "", uni,
	    RS_UNIDELTA_VERSION);
}

const char *
rs_pretok_lib_version(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, make_version);
	return (version);
}
