/*
 * rs_chat_id.c - which chat template a text is (see rs_chat.h).
 *
 * The renderer implements three exact texts, so identification is by
 * content: the SHA-256 of the text as Jinja reads it (CR LF and lone CR are
 * newlines; keep_trailing_newline is off, so one final newline is not part
 * of the template) against the hashes of the known texts.
 */
#include <stdint.h>
#include <string.h>

#include "rs_chat.h"
#include "rs_gguf.h"
#include "rs_sha256.h"
#include "rs_utf8.h"

/*
 * The known templates: SHA-256 of the canonical text (rs_chat_identify).
 * qwen35: the tokenizer.chat_template of the fixtures/tiny GGUFs (7,756
 * bytes).  qwen36 and qwen38: the texts of huggingface/trl's
 * trl/chat_templates/qwen3_6.jinja and qwen3_8.jinja (commit cb1275c7, the
 * copy serving.md §2.1 verified), 7,764 and 8,952 bytes, written out from
 * the qwen35 text and the differences between the files; rendered with
 * Jinja2, the qwen38 text reproduces every golden case.  Confirm against
 * the served GGUF (serving.md §7 item 1): an unknown hash is refused.
 */
static const struct {
	enum rs_chat_variant	 v;
	const char		*sha256;
} known[] = {
	{ RS_CHAT_QWEN35,
	  "a4aee8afcf2e0711942cf848899be66016f8d14a889ff9ede07bca099c28f715" },
	{ RS_CHAT_QWEN36,
	  "e84f32a23fdda27689f868aa4a1a5621f41133e51a48d7f3efcbea2839574259" },
	{ RS_CHAT_QWEN38,
	  "c3cf9e34abf4f9e36c2d72165aa9c132d3e2a725b6c2586aaa3a8af9d7a81041" },
};

void
rs_chat_template_hash(const char *text, size_t n, char hex[65])
{
	static const char	 digits[] = "0123456789abcdef";
	struct rs_sha256	 h;
	uint8_t			 d[RS_SHA256_LEN];
	size_t			 i, run = 0;

	/* Jinja's lexer: one trailing newline is not part of the template */
	if (n > 0 && text[n - 1] == '\n')
		n -= n > 1 && text[n - 2] == '\r' ? 2 : 1;
	else if (n > 0 && text[n - 1] == '\r')
		n--;
	rs_sha256_init(&h);
	for (i = 0; i < n; i++) {
		if (text[i] != '\r')
			continue;
		/* CR LF and a lone CR both read as LF */
		rs_sha256_update(&h, text + run, i - run);
		rs_sha256_update(&h, "\n", 1);
		if (i + 1 < n && text[i + 1] == '\n')
			i++;
		run = i + 1;
	}
	rs_sha256_update(&h, text + run, n - run);
	rs_sha256_final(&h, d);
	for (i = 0; i < RS_SHA256_LEN; i++) {
		hex[2 * i] = digits[d[i] >> 4];
		hex[2 * i + 1] = digits[d[i] & 15];
	}
	hex[64] = '\0';
}

enum rs_status
rs_chat_identify(const char *text, size_t n, enum rs_chat_variant *out,
    struct rs_err *err)
{
	char	hex[65];

	rs_chat_template_hash(text, n, hex);
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		if (strcmp(hex, known[i].sha256) == 0) {
			*out = known[i].v;
			return (RS_OK);
		}
	}
	return (rs_errf(err, RS_ERR_UNSUPPORTED,
	    "chat template not recognised (%zu bytes, sha256 %s): only "
	    "the Qwen3.5, Qwen3.6 and Qwen3.8 templates are supported", n,
	    hex));
}

enum rs_status
rs_chat_identify_gguf(const struct rs_gguf *g, enum rs_chat_variant *out,
    struct rs_err *err)
{
	struct rs_gguf_str	s;
	enum rs_status		st;

	/*
	 * Files that Redshift writes itself (rs-bench --synth) carry no
	 * template text, only the name of the variant their tokens are for.
	 */
	if (rs_gguf_find_kv(g, "tokenizer.chat_template") == NULL &&
	    rs_gguf_get_str(g, RS_CHAT_VARIANT_KEY, &s, NULL) == RS_OK) {
		for (int v = RS_CHAT_QWEN35; v <= RS_CHAT_QWEN38; v++) {
			const char *name = rs_chat_variant_name(
			    (enum rs_chat_variant)v);
			if (s.len == strlen(name) &&
			    memcmp(s.ptr, name, s.len) == 0) {
				*out = (enum rs_chat_variant)v;
				return (RS_OK);
			}
		}
		char q[RS_UTF8_QUOTE_SIZE];

		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "%s: unknown variant '%s'", RS_CHAT_VARIANT_KEY,
		    rs_utf8_quote(s.ptr, (size_t)s.len, q)));
	}
	if ((st = rs_gguf_get_str(g, "tokenizer.chat_template", &s, err)) !=
	    RS_OK)
		return (st);
	if ((st = rs_chat_identify(s.ptr, (size_t)s.len, out, err)) != RS_OK)
		rs_err_prefix(err, "tokenizer.chat_template");
	return (st);
}
