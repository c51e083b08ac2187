/*
 * fuzz_stream.c - libFuzzer target for the streaming path of an answer:
 * token ids through the streaming detokenizer (UTF-8 assembly), the stop
 * strings and the output parser, one token at a time, as rs_gen_loop.c
 * does, against the same ids decoded at once and parsed whole.  On the
 * tiny model's vocabulary ($RS_FIXTURES/tiny/model-f16.gguf).
 *
 * The first input byte picks the options (bit 0 thinking, bit 1 tools,
 * bit 2 the stop string "\n\n\n"), the rest are little-endian 16-bit ids
 * (mostly inside the 2176-entry vocabulary, special tokens included).
 * Both ways must give the same reasoning, content and calls, and valid
 * UTF-8 throughout; an id outside the vocabulary must fail both.  Any
 * violation aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs_buf.h"
#include "rs_gguf.h"
#include "rs_json.h"
#include "rs_parse.h"
#include "rs_stop.h"
#include "rs_tok.h"
#include "rs_utf8.h"

int	LLVMFuzzerInitialize(int *argc, char ***argv);
int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct rs_tok	*tok;
static struct rs_json	*tools;

static const char tools_json[] = "[{\"type\": \"function\", \"function\": "
    "{\"name\": \"f\", \"parameters\": {\"type\": \"object\", "
    "\"properties\": {\"a\": {\"type\": \"string\"}, \"n\": {\"type\": "
    "\"integer\"}}}}}]";

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char	*root = getenv("RS_FIXTURES");
	char		 path[1024];
	struct rs_gguf	*g;
	struct rs_err	 err = { 0 };

	(void)argc;
	(void)argv;
	snprintf(path, sizeof(path), "%s/tiny/model-f16.gguf",
	    root != NULL && *root != '\0' ? root : "../shared/fixtures");
	if (rs_gguf_open(&g, path, &err) != RS_OK ||
	    rs_tok_new(&tok, g, RS_TOK_NORM_NONE, &err) != RS_OK ||
	    rs_json_parse(tools_json, strlen(tools_json), &tools, &err) !=
	    RS_OK) {
		fprintf(stderr, "fuzz_stream: %s: %s\n", path, err.msg);
		exit(1);
	}
	rs_gguf_close(g);
	return (0);
}

/* Stop-checked TEXT into the parser P, as deliver() does. */
static void
stop_in(struct rs_stop *s, struct rs_parse *p, const char *text, size_t n,
    int *stopped)
{
	const char	*out;
	size_t		 len;

	if (*stopped || n == 0)
		return;
	if (rs_stop_feed(s, text, n, &out, &len, stopped, NULL) != RS_OK)
		abort();
	if (len > 0 && (!rs_utf8_valid(out, len, NULL) ||
	    rs_parse_feed(p, out, len, NULL) != RS_OK))
		abort();
}

static void
end(struct rs_stop *s, struct rs_parse *p, int stopped)
{
	const char	*out;
	size_t		 len;

	if (!stopped) {
		rs_stop_flush(s, &out, &len);
		if (len > 0 && rs_parse_feed(p, out, len, NULL) != RS_OK)
			abort();
	}
	if (rs_parse_finish(p, RS_PARSE_END_STOP, NULL) != RS_OK)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char	*stops[1] = { "\n\n\n" };
	struct rs_parse_opts	 po;
	struct rs_parse		*pa, *pb;
	struct rs_parse_result	 ra, rb;
	struct rs_stop		*sa, *sb;
	struct rs_detok		 d;
	int32_t			*ids;
	char			*piece, *whole = NULL;
	size_t			 k, m, wn, cap = rs_detok_max(tok);
	int			 bad = 0, stop_a = 0, stop_b = 0;
	enum rs_status		 st;

	if (size < 1)
		return (0);
	k = (size - 1) / 2;
	if ((ids = malloc((k + 1) * sizeof(*ids))) == NULL ||
	    (piece = malloc(cap)) == NULL)
		abort();
	for (size_t i = 0; i < k; i++)
		ids[i] = (int32_t)(data[1 + 2 * i] |
		    data[2 + 2 * i] << 8) % 2200;
	rs_parse_opts_init(&po);
	po.thinking = data[0] & 1;
	po.tools = (data[0] & 2) ? tools : NULL;
	if (rs_parse_new(&pa, &po, NULL) != RS_OK ||
	    rs_parse_new(&pb, &po, NULL) != RS_OK ||
	    rs_stop_new(&sa, NULL, 0, stops, (data[0] & 4) ? 1 : 0, NULL) !=
	    RS_OK ||
	    rs_stop_new(&sb, NULL, 0, stops, (data[0] & 4) ? 1 : 0, NULL) !=
	    RS_OK)
		abort();
	/* streamed: token by token */
	rs_detok_init(&d, tok, 0);
	for (size_t i = 0; i < k; i++) {
		if (rs_detok_feed(&d, ids[i], piece, cap, &m, NULL) != RS_OK) {
			bad = 1;
			break;
		}
		if (!rs_utf8_valid(piece, m, NULL))
			abort();
		stop_in(sa, pa, piece, m, &stop_a);
	}
	/* whole: decoded at once */
	st = rs_tok_decode(tok, ids, k, 0, &whole, &wn, NULL);
	if ((st != RS_OK) != bad)
		abort();
	if (st == RS_OK) {
		m = rs_detok_flush(&d, piece);
		stop_in(sa, pa, piece, m, &stop_a);
		end(sa, pa, stop_a);
		stop_in(sb, pb, whole, wn, &stop_b);
		end(sb, pb, stop_b);
		rs_parse_result(pa, &ra);
		rs_parse_result(pb, &rb);
		if (ra.content_len != rb.content_len ||
		    ra.reasoning_len != rb.reasoning_len ||
		    ra.n_calls != rb.n_calls ||
		    memcmp(ra.content, rb.content, ra.content_len) != 0 ||
		    memcmp(ra.reasoning, rb.reasoning, ra.reasoning_len) != 0 ||
		    !rs_utf8_valid(ra.content, ra.content_len, NULL))
			abort();
		for (size_t i = 0; i < ra.n_calls; i++)
			if (strcmp(ra.calls[i].name, rb.calls[i].name) != 0 ||
			    ra.calls[i].args_len != rb.calls[i].args_len ||
			    memcmp(ra.calls[i].args, rb.calls[i].args,
			    ra.calls[i].args_len) != 0)
				abort();
	}
	free(whole);
	rs_parse_free(pa);
	rs_parse_free(pb);
	rs_stop_free(sa);
	rs_stop_free(sb);
	free(ids);
	free(piece);
	return (0);
}
