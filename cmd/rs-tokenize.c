/*
 * rs-tokenize - text to token ids and back with a model's tokenizer
 * (rs_tok.h, serving.md §1).
 *
 * Plain mode reads the whole input (FILE, stdin, or --text) as one text and
 * prints its ids on one line, or with --pieces one "id<TAB>piece" line per
 * token; --decode turns whitespace-separated ids back into the exact bytes.
 * --jsonl handles one JSON object per line ({"text": ...} or, with
 * --decode, {"ids": [...]}) and answers each with one line in order; a bad
 * line gets an error object in its place and exit status 1 at the end.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rs_gguf.h"
#include "rs_json.h"
#include "rs_pyjson.h"
#include "rs_time.h"
#include "rs_tok.h"
#include "rs_utf8.h"

#define USAGE	"rs-tokenize -m MODEL [-djpqv] [--text STRING] " \
		"[--no-special] [--no-added] [--nfc | --no-nfc] [FILE]"

struct opts {
	const char		*model;
	const char		*text;		/* --text, instead of input */
	const char		*file;		/* operand; NULL or "-": stdin */
	int			 jsonl;
	int			 decode;
	int			 pieces;
	int			 quiet;
	int			 verbose;
	enum rs_tok_special	 special;
	enum rs_tok_norm	 norm;
};

/* What a run needs and counts. */
struct run {
	const struct opts	*o;
	const struct rs_tok	*tok;
	unsigned		 dflags;	/* RS_TOK_DEC_* for decoding */
	int			 failed;	/* records that failed */
	int			 wfail;		/* a write to stdout failed */
	size_t			 bytes, tokens;	/* for --verbose */
	double			 secs;
};

static void
usage_full(void)
{
	printf("usage: %s\n\n"
	    "Turn text into token ids, or ids into text, with the tokenizer of "
	    "a GGUF model.\n\n"
	    "  -m, --model FILE   model (or vocabulary-only) GGUF to read the "
	    "tokenizer from\n"
	    "      --text STRING  tokenize (or with --decode, decode) STRING "
	    "instead of the input\n"
	    "  -j, --jsonl        JSON lines in and out: {\"text\": ...} -> "
	    "{\"ids\": [...], \"n\": N}\n"
	    "  -d, --decode       ids to text: whitespace-separated ids, or "
	    "with --jsonl {\"ids\": [...]}\n"
	    "  -p, --pieces       also show each token's text (one "
	    "\"id<TAB>piece\" line in plain mode)\n"
	    "      --no-special   CONTROL tokens (<|im_end|>, ...) are plain "
	    "text when encoding and\n"
	    "                     decode to nothing; USER_DEFINED ones "
	    "(<think>, ...) still match\n"
	    "      --no-added     no added token is matched in the text, not "
	    "even USER_DEFINED ones\n"
	    "      --nfc          normalize text between added tokens to NFC "
	    "(the default)\n"
	    "      --no-nfc       do not normalize: raw text, as llama.cpp "
	    "(differs on non-NFC text)\n"
	    "  -q, --quiet        no per-record error lines on stderr\n"
	    "  -v, --verbose      tokenizer facts and timing on stderr\n"
	    "  -h, --help         show this help and exit\n"
	    "      --version      show version and build configuration\n\n"
	    "With no FILE, or when FILE is -, read standard input.\n"
	    "Exit status: 0 success, 1 some record failed, 2 error.\n", USAGE);
}

/* ---- plain mode ---- */

/*
 * Piece bytes for a terminal: rs_cli_esc, with backslash doubled too so
 * that a piece holding "\\n" reads apart from one holding a newline.
 */
static void
put_escaped(const char *s, size_t n)
{
	char	buf[1024];

	for (size_t i = 0, j; i < n; i = j + 1) {
		for (j = i; j < n && s[j] != '\\' && j - i < 200; j++)
			;
		/* a cut at 200 bytes may split a character: widen it */
		while (j < n && j - i >= 200 && (s[j] & 0xc0) == 0x80)
			j++;
		rs_cli_esc(s + i, j - i, buf, sizeof(buf));
		fputs(buf, stdout);
		if (j < n && s[j] == '\\')
			fputs("\\\\", stdout);
		else if (j < n)
			j--;	/* the cut: S[j] starts the next chunk */
	}
}

static void
warn_invalid(const struct run *r, const char *what, const char *s, size_t n)
{
	size_t	bad;

	if (!r->o->quiet && !rs_utf8_valid(s, n, &bad))
		rs_cli_warn("%s: invalid UTF-8 at byte offset %zu, each invalid "
		    "byte replaced by U+FFFD", what, bad);
}

/* Encode TEXT and print it; returns 0, or -1 after a warning. */
static int
encode_plain(struct run *r, const char *text, size_t n)
{
	struct rs_tok_ids ids;
	struct rs_err	 err = { 0 };
	const char	*p;
	double		 t0;
	size_t		 k;

	warn_invalid(r, "input", text, n);
	rs_tok_ids_init(&ids);
	t0 = 1e-3 * rs_time_ms();
	if (rs_tok_encode(r->tok, text, n, r->o->special, &ids, &err) !=
	    RS_OK) {
		rs_cli_warn("input: %s", err.msg);
		return (-1);
	}
	r->secs += 1e-3 * rs_time_ms() - t0;
	r->bytes += n;
	r->tokens += ids.n;
	for (size_t i = 0; i < ids.n; i++) {
		if (!r->o->pieces) {
			printf(i > 0 ? " %d" : "%d", (int)ids.v[i]);
			continue;
		}
		p = rs_tok_piece(r->tok, ids.v[i], RS_TOK_DEC_SPECIAL, &k);
		printf("%d\t", (int)ids.v[i]);
		put_escaped(p, k);
		putchar('\n');
	}
	if (!r->o->pieces)
		putchar('\n');
	rs_tok_ids_cleanup(&ids);
	return (0);
}

static int
is_space(char c)
{
	return (c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
	    c == '\f' || c == '\v');
}

/* Whitespace-separated ids in TEXT into IDS; -1 after a warning. */
static int
parse_ids(const char *text, size_t n, struct rs_tok_ids *ids)
{
	char		 word[32];
	size_t		 i = 0, j, k;
	int64_t		 v;

	while (i < n) {
		for (; i < n && is_space(text[i]); i++)
			continue;
		for (j = i; j < n && !is_space(text[j]); j++)
			continue;
		if (j == i)
			break;
		/* a NUL inside a word would end it early: "2\0x" read as 2 */
		if (memchr(text + i, '\0', j - i) != NULL) {
			rs_cli_warn("input: a NUL byte in the word at byte "
			    "offset %zu", i);
			return (-1);
		}
		k = j - i < sizeof(word) - 1 ? j - i : sizeof(word) - 1;
		memcpy(word, text + i, k);
		word[k] = '\0';
		if (j - i >= sizeof(word) ||
		    rs_cli_parse_i64(word, 0, INT32_MAX, &v) != 0) {
			rs_cli_warn("input: '%s' at byte offset %zu is not a "
			    "token id", word, i);
			return (-1);
		}
		if (ids->n == ids->cap) {
			size_t	 cap = ids->cap > 0 ? 2 * ids->cap : 256;
			int32_t	*p = realloc(ids->v, cap * sizeof(*p));

			if (p == NULL)
				rs_cli_fatal("out of memory");
			ids->v = p;
			ids->cap = cap;
		}
		ids->v[ids->n++] = (int32_t)v;
		i = j;
	}
	return (0);
}

static int
decode_plain(struct run *r, const char *text, size_t n)
{
	struct rs_tok_ids ids;
	struct rs_err	 err = { 0 };
	char		*out;
	size_t		 len;
	int		 rc = -1;

	rs_tok_ids_init(&ids);
	if (parse_ids(text, n, &ids) == 0) {
		if (rs_tok_decode(r->tok, ids.v, ids.n, r->dflags, &out, &len,
		    &err) != RS_OK)
			rs_cli_warn("input: %s", err.msg);
		else {
			fwrite(out, 1, len, stdout);
			free(out);
			rc = 0;
		}
	}
	rs_tok_ids_cleanup(&ids);
	return (rc);
}

/* ---- JSON lines ---- */

/*
 * Fill RES for one encode request REQ; on a bad record return -1 with a
 * message in MSG.
 */
static int
encode_json(struct run *r, const struct rs_json *req, struct rs_json *res,
    char *msg, size_t cap)
{
	struct rs_tok_ids ids;
	struct rs_err	 err = { 0 };
	struct rs_json	*arr, *pieces = NULL;
	const char	*s, *p;
	size_t		 n, k;
	double		 t0;

	if (rs_json_as_str(rs_json_get(req, "text"), &s, &n) != 0) {
		snprintf(msg, cap, "text: missing or not a string");
		return (-1);
	}
	rs_tok_ids_init(&ids);
	t0 = 1e-3 * rs_time_ms();
	if (rs_tok_encode(r->tok, s, n, r->o->special, &ids, &err) != RS_OK) {
		snprintf(msg, cap, "text: %s", err.msg);
		return (-1);
	}
	r->secs += 1e-3 * rs_time_ms() - t0;
	r->bytes += n;
	r->tokens += ids.n;
	arr = rs_json_arr();
	if (r->o->pieces)
		pieces = rs_json_arr();
	for (size_t i = 0; i < ids.n; i++) {
		rs_json_push(arr, rs_json_int(ids.v[i]));
		if (pieces == NULL)
			continue;
		p = rs_tok_piece(r->tok, ids.v[i], RS_TOK_DEC_SPECIAL, &k);
		rs_json_push(pieces, rs_json_strn(p, k));
	}
	rs_json_set(res, "ids", arr);
	rs_json_set(res, "n", rs_json_int((int64_t)ids.n));
	if (pieces != NULL)
		rs_json_set(res, "pieces", pieces);
	rs_tok_ids_cleanup(&ids);
	return (0);
}

static int
decode_json(struct run *r, const struct rs_json *req, struct rs_json *res,
    char *msg, size_t cap)
{
	struct rs_tok_ids ids;
	struct rs_err	 err = { 0 };
	struct rs_json	*arr;
	const char	*key = "ids";
	char		*text;
	size_t		 len;
	int64_t		 v;
	int		 rc = -1;

	if ((arr = rs_json_get(req, key)) == NULL)
		arr = rs_json_get(req, key = "tokens");
	if (arr == NULL || rs_json_kind(arr) != RS_JSON_ARRAY) {
		snprintf(msg, cap, "ids: missing or not an array");
		return (-1);
	}
	rs_tok_ids_init(&ids);
	if ((ids.v = malloc((rs_json_arr_len(arr) + 1) * sizeof(int32_t))) ==
	    NULL)
		rs_cli_fatal("out of memory");
	for (size_t i = 0; i < rs_json_arr_len(arr); i++) {
		if (rs_json_as_int(rs_json_arr_at(arr, i), &v) != 0 ||
		    v < INT32_MIN || v > INT32_MAX) {
			snprintf(msg, cap, "%s[%zu]: not a token id", key, i);
			goto out;
		}
		ids.v[ids.n++] = (int32_t)v;
	}
	if (rs_tok_decode(r->tok, ids.v, ids.n, r->dflags, &text, &len,
	    &err) != RS_OK) {
		snprintf(msg, cap, "%s", err.msg);
		goto out;
	}
	rs_json_set(res, "text", rs_json_strn(text, len));
	free(text);
	rc = 0;
out:
	rs_tok_ids_cleanup(&ids);
	return (rc);
}

static void
write_line(struct run *r, const struct rs_json *j)
{
	if (rs_json_write_line(j, stdout) != 0)
		r->wfail = 1;
}

/*
 * One input line: answer with a result or an error object (LINE NULL: a
 * line longer than N bytes, rs_cli_each_line).
 */
static void
json_line(struct run *r, const char *line, size_t n, size_t lineno)
{
	struct rs_json	*req = NULL, *res, *id, *e;
	struct rs_err	 err = { 0 };
	char		 msg[320];
	int		 rc = -1, located = 0;

	res = rs_json_obj();
	if (line == NULL || rs_pyjson_parse(line, n, &req, &err) != RS_OK) {
		/* the line itself is at fault: the message names it (the
		   parser saw the line alone and says line 1) */
		if (line == NULL)	/* rs_cli_each_line: over N bytes */
			snprintf(err.msg, sizeof(err.msg), "the line is "
			    "longer than %zu bytes", n);
		(void)rs_cli_at_line(msg, sizeof(msg), (long long)lineno,
		    err.msg);
		located = 1;
	} else if (rs_json_kind(req) != RS_JSON_OBJECT)
		snprintf(msg, sizeof(msg), "not a JSON object");
	else {
		/* the request's id leads the answer, whatever its type */
		if ((id = rs_json_get(req, "id")) != NULL) {
			struct rs_json *c = rs_json_copy(id);

			if (c == NULL)
				rs_cli_fatal("out of memory");
			rs_json_set(res, "id", c);
		}
		rc = r->o->decode ? decode_json(r, req, res, msg, sizeof(msg)) :
		    encode_json(r, req, res, msg, sizeof(msg));
	}
	if (rc != 0) {
		r->failed++;
		if (!r->o->quiet) {
			char at[320];

			rs_cli_warn("%s", located ? msg : rs_cli_at_line(at,
			    sizeof(at), (long long)lineno, msg));
		}
		e = rs_json_obj();
		rs_json_set(e, "type", rs_json_str("invalid_input"));
		rs_json_set(e, "message", rs_json_str(msg));
		rs_json_set(res, "error", e);
	}
	write_line(r, res);
	rs_json_free(res);
	rs_json_free(req);
}

/* rs_cli_each_line callback: one record per line */
static void
each_line(void *ctx, char *line, size_t n, size_t lineno)
{
	json_line(ctx, line, n, lineno);
}

static void
run_jsonl(struct run *r, FILE *fp, const char *name)
{
	rs_cli_each_line(fp, name, each_line, r);
}

/* ---- main ---- */

static struct rs_tok *
load(const struct opts *o)
{
	struct rs_err	 err = { 0 };
	struct rs_gguf	*g;
	struct rs_tok	*tok;
	const struct rs_tok_meta *m;

	if (rs_gguf_open(&g, o->model, &err) != RS_OK)
		rs_cli_fatal("%s: %s", o->model, err.msg);
	if (rs_tok_new(&tok, g, o->norm, &err) != RS_OK)
		rs_cli_fatal("%s: %s", o->model, err.msg);
	rs_gguf_close(g);
	if (o->verbose) {
		m = rs_tok_meta(tok);
		rs_cli_warn("%s: pre-tokenizer %s%s, %d tokens (%d added), "
		    "%d merges, %s; %s", o->model, m->pre,
		    m->jit ? " (jit)" : "", m->n_vocab, m->n_added,
		    m->n_merges, m->nfc ? "NFC" : "no normalization",
		    rs_tok_lib_versions());
	}
	return (tok);
}

static void
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "decode", no_argument, NULL, 'd' },
		{ "jsonl", no_argument, NULL, 'j' },
		{ "model", required_argument, NULL, 'm' },
		{ "nfc", no_argument, NULL, 'N' },
		{ "no-added", no_argument, NULL, 'A' },
		{ "no-nfc", no_argument, NULL, 'n' },
		{ "no-special", no_argument, NULL, 'S' },
		{ "pieces", no_argument, NULL, 'p' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "text", required_argument, NULL, 'T' },
		{ "verbose", no_argument, NULL, 'v' },
		RS_CLI_LONGOPTS_TAIL
	};
	int	ch, no_added = 0, no_special = 0;

	while ((ch = getopt_long(argc, argv, "dhjm:pqv", longopts, NULL)) !=
	    -1) {
		switch (ch) {
		case 'd': o->decode = 1; break;
		case 'j': o->jsonl = 1; break;
		case 'm': o->model = optarg; break;
		case 'p': o->pieces = 1; break;
		case 'q': o->quiet = 1; break;
		case 'v': o->verbose = 1; break;
		case 'A': no_added = 1; break;
		case 'S': no_special = 1; break;
		case 'T': o->text = optarg; break;
		case 'N':
		case 'n':
			rs_cli_norm_opt(&o->norm, ch == 'N', USAGE);
			break;
		default:
			rs_cli_common_opt(ch, USAGE, usage_full);
		}
	}
	o->special = no_added ? RS_TOK_SPECIAL_NONE : no_special ?
	    RS_TOK_SPECIAL_USER : RS_TOK_SPECIAL_ALL;
	if (o->model == NULL)
		rs_cli_usage_error(USAGE, "no model given (-m MODEL)");
	if (argc - optind > 1)
		rs_cli_usage_error(USAGE, "at most one input FILE");
	if (argc - optind == 1)
		o->file = argv[optind];
	if (o->text != NULL && (o->file != NULL || o->jsonl))
		rs_cli_usage_error(USAGE, "--text excludes FILE and --jsonl");
	if (o->decode && o->pieces)
		rs_cli_usage_error(USAGE, "--pieces is for encoding");
}

int
main(int argc, char **argv)
{
	struct opts	 o = { 0 };
	struct run	 r = { 0 };
	FILE		*fp = stdin;
	const char	*name = "stdin";
	char		*buf;
	size_t		 n;
	int		 rc;

	rs_cli_init(argv[0]);
	parse_opts(argc, argv, &o);
	r.o = &o;
	r.tok = load(&o);
	r.dflags = o.special == RS_TOK_SPECIAL_ALL ? RS_TOK_DEC_SPECIAL : 0;
	if (o.file != NULL && strcmp(o.file, "-") != 0) {
		if ((fp = fopen(o.file, "rb")) == NULL)
			rs_cli_fatal("%s: %s", o.file, strerror(errno));
		name = o.file;
	}
	if (o.jsonl)
		run_jsonl(&r, fp, name);
	else {
		if (o.text != NULL) {
			n = strlen(o.text);
			buf = strdup(o.text);
		} else
			buf = rs_cli_read_all(fp, name, RS_CLI_MAX_LINE, &n);
		rc = o.decode ? decode_plain(&r, buf, n) :
		    encode_plain(&r, buf, n);
		if (rc != 0)
			r.failed++;
		free(buf);
	}
	if (fp != stdin)
		fclose(fp);
	if (o.verbose && !o.decode)
		rs_cli_warn("%zu bytes -> %zu tokens in %.3f s (%.2f MB/s)",
		    r.bytes, r.tokens, r.secs, r.secs > 0 ?
		    (double)r.bytes / r.secs / 1e6 : 0.0);
	rs_tok_free((struct rs_tok *)r.tok);
	/* a write error leaves stdout's error flag: rs_cli_finish says it */
	return (rs_cli_finish(r.wfail ? RS_EXIT_ERROR : r.failed > 0 ?
	    RS_EXIT_FAIL : RS_EXIT_OK));
}
