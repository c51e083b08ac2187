/*
 * rs-verify - run a prefix plus candidate tokens through the model in one
 * pass and report, per position, the argmax and the log-probability of the
 * next token, how many candidates the greedy rule accepts, and timings;
 * optionally dump the logits and MTP logits as .npy and check that rolling
 * back rejected candidates equals a plain sequential run.
 *
 * Input: one record from --tokens / --tokens-file, or JSON lines on stdin
 * ({"tokens": [...], "prefix": N, "id": ...}).  Output: one JSON line per
 * record on stdout (see rs-verify(1)).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cli_npy.h"
#include "rs_engine.h"
#include "rs_json.h"
#include "rs_model.h"
#include "rs_pyjson.h"
#include "rs_state.h"
#include "rs_time.h"
#include "rs_utf8.h"
#include "rs_verify.h"

#define DEFAULT_EXTRA	4	/* tokens decoded after a rollback */
#define MAX_ROWS	256	/* logits rows held at a time (1 MiB each, 27B) */

static const char usage_line[] =
    "rs-verify -m model [--tokens ids | --tokens-file file] [--prefix n]\n"
    "       [--logits out.npy] [--mtp-logits out.npy] [--check-rollback]\n"
    "       [--extra n] [--backend cpu|cuda|auto] [--devices list [--split list]]\n"
    "       [-t n] [-c n] [-b n] [-q]";

struct opts {
	const char	*model;
	const char	*tokens;	/* --tokens text */
	const char	*tokens_file;
	int32_t		 prefix;	/* −1: every token is context */
	const char	*logits_path;
	const char	*mtp_path;
	int		 check_rollback;
	int32_t		 extra;
	int		 backend;
	const char	*devices;	/* --devices, NULL: one GPU */
	const char	*split;		/* --split */
	int		 threads;
	int32_t		 ctx;
	int		 batch;
	int		 quiet;
};

/* A record: tokens, context length and the id to copy through. */
struct record {
	int32_t		*tokens;
	int32_t		 n;
	int32_t		 prefix;
	struct rs_json	*id;		/* owned; NULL when absent */
};

struct run {
	const struct opts	*o;
	struct rs_model		*model;
	struct rs_engine	*engine;
	struct rs_state		*state;
	struct rs_cli_npy	 logits, mtp;
	int			 want_logits, want_mtp;
	float			*lbuf;		/* (rows(), n_vocab) */
	int64_t			 tokens_done;
	double			 ms_done;
};

static void
help(void)
{
	printf("usage: %s\n\n", usage_line);
	puts("Score a prefix plus candidate tokens in one forward pass.\n"
	    "\n"
	    "  -m, --model FILE        qwen35 GGUF model (required)\n"
	    "      --tokens IDS        token ids, separated by spaces or "
	    "commas\n"
	    "      --tokens-file FILE  token ids from FILE ('-': stdin)\n"
	    "      --prefix N          the first N tokens are context, the "
	    "rest candidates\n"
	    "                          (default: all tokens are context)\n"
	    "      --logits FILE       write float32 [T, n_vocab] logits "
	    "(.npy)\n"
	    "      --mtp-logits FILE   write float32 [T, n_vocab] MTP logits "
	    "(.npy)\n"
	    "      --check-rollback    verify, accept, roll back, continue, "
	    "and compare\n"
	    "                          with a plain sequential run (exit 1 on "
	    "mismatch)\n"
	    "      --extra N           tokens decoded after the rollback "
	    "(default 4)\n"
	    "      --backend NAME      cpu, cuda or auto (default auto: cuda when a GPU\n"
	    "                          is present in a CUDA build, else cpu)\n"
	    "      --devices LIST      GPUs to split the blocks over, e.g. 0,1\n"
	    "                          (0,0: the split path on one GPU; cuda only)\n"
	    "      --split LIST        blocks per device, e.g. 30,34 (default: the\n"
	    "                          split that balances memory)\n"
	    "  -t, --threads N         worker threads (default: all CPUs)\n"
	    "  -c, --ctx-size N        context positions (default: the "
	    "model's)\n"
	    "  -b, --batch-size N      tokens per forward chunk (default 64 on the "
	    "CPU,\n"
	    "                          256 on the GPU)\n"
	    "  -q, --quiet             no timings, warnings, error lines or "
	    "progress on\n"
	    "                          stderr\n"
	    "  -h, --help              this help\n"
	    "      --version           version and build configuration\n"
	    "\n"
	    "Without --tokens or --tokens-file, reads JSON lines from stdin:\n"
	    "  {\"id\": ..., \"tokens\": [ids...], \"prefix\": N}  "
	    "(\"ids\" also accepted)\n"
	    "\n"
	    "Exit status: 0 every record ran (and every --check-rollback "
	    "passed);\n"
	    "1 the input was read to the end but a record was invalid or a "
	    "rollback\n"
	    "check failed; 2 could not run: usage, model, backend, bad "
	    "--tokens input,\n"
	    "non-finite logits, a bad record while writing .npy files, or a "
	    "write error.");
}

enum {
	OPT_TOKENS = 256, OPT_TOKENS_FILE, OPT_PREFIX, OPT_LOGITS, OPT_MTP,
	OPT_CHECK, OPT_EXTRA, OPT_BACKEND, OPT_DEVICES, OPT_SPLIT
};

/*
 * PATH's directory, resolved, and its last name into BUF ("" when the
 * directory does not resolve).
 */
static void
canonical(const char *path, char *buf, size_t cap)
{
	char		 dir[PATH_MAX], real[PATH_MAX];
	const char	*slash = strrchr(path, '/');

	buf[0] = '\0';
	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 :
		    (int)(slash - path), path);
	if (realpath(dir, real) != NULL)
		snprintf(buf, cap, "%s/%s", real, slash ? slash + 1 : path);
}

/*
 * Whether paths A and B name one file: the same inode, or (files
 * not there yet) the same name in the same directory.
 */
static int
same_file(const char *a, const char *b)
{
	struct stat	sa, sb;
	char		ca[2 * PATH_MAX], cb[2 * PATH_MAX];

	if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
		return (sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino);
	canonical(a, ca, sizeof(ca));
	canonical(b, cb, sizeof(cb));
	return (strcmp(a, b) == 0 || (ca[0] != '\0' && strcmp(ca, cb) == 0));
}

/* An output (option OPT, path OUT) must not replace an input. */
static void
check_not_input(const struct opts *o, const char *out, const char *opt)
{
	if (out == NULL)
		return;
	if (same_file(out, o->model))
		rs_cli_usage_error(usage_line, "%s names the model file: the "
		    "logits would replace it", opt);
	if (o->tokens_file != NULL && same_file(out, o->tokens_file))
		rs_cli_usage_error(usage_line, "%s names the --tokens-file: "
		    "the logits would replace it", opt);
}

static void
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "model", required_argument, NULL, 'm' },
		{ "tokens", required_argument, NULL, OPT_TOKENS },
		{ "tokens-file", required_argument, NULL, OPT_TOKENS_FILE },
		{ "prefix", required_argument, NULL, OPT_PREFIX },
		{ "logits", required_argument, NULL, OPT_LOGITS },
		{ "mtp-logits", required_argument, NULL, OPT_MTP },
		{ "check-rollback", no_argument, NULL, OPT_CHECK },
		{ "extra", required_argument, NULL, OPT_EXTRA },
		{ "backend", required_argument, NULL, OPT_BACKEND },
		{ "devices", required_argument, NULL, OPT_DEVICES },
		{ "split", required_argument, NULL, OPT_SPLIT },
		{ "threads", required_argument, NULL, 't' },
		{ "ctx-size", required_argument, NULL, 'c' },
		{ "batch-size", required_argument, NULL, 'b' },
		{ "quiet", no_argument, NULL, 'q' },
		RS_CLI_LONGOPTS_TAIL
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->prefix = -1;
	o->extra = DEFAULT_EXTRA;
	while ((c = getopt_long(argc, argv, "m:t:c:b:qh", longopts,
	    NULL)) != -1) {
		switch (c) {
		case 'm':
			o->model = optarg;
			break;
		case OPT_TOKENS:
			o->tokens = optarg;
			break;
		case OPT_TOKENS_FILE:
			o->tokens_file = optarg;
			break;
		case OPT_PREFIX:
			o->prefix = (int32_t)rs_cli_num_opt("--prefix", optarg, 1,
			    INT32_MAX, usage_line);
			break;
		case OPT_LOGITS:
			o->logits_path = optarg;
			break;
		case OPT_MTP:
			o->mtp_path = optarg;
			break;
		case OPT_CHECK:
			o->check_rollback = 1;
			break;
		case OPT_EXTRA:
			o->extra = (int32_t)rs_cli_num_opt("--extra", optarg, 0,
			    4096, usage_line);
			break;
		case OPT_BACKEND:
			o->backend = rs_cli_backend_opt(optarg, usage_line);
			break;
		case OPT_DEVICES:
			o->devices = optarg;
			break;
		case OPT_SPLIT:
			o->split = optarg;
			break;
		case 't':
			o->threads = (int)rs_cli_num_opt("--threads", optarg, 1,
			    256, usage_line);
			break;
		case 'c':
			o->ctx = (int32_t)rs_cli_num_opt("--ctx-size", optarg, 1,
			    1 << 24, usage_line);
			break;
		case 'b':
			o->batch = (int)rs_cli_num_opt("--batch-size", optarg, 1,
			    65536, usage_line);
			break;
		case 'q':
			o->quiet = 1;
			break;
		default:
			rs_cli_common_opt(c, usage_line, help);
		}
	}
	rs_cli_opts_done(argc, argv, o->model, usage_line);
	rs_cli_devices_check(o->devices, o->split, usage_line);
	if (o->tokens != NULL && o->tokens_file != NULL)
		rs_cli_usage_error(usage_line,
		    "--tokens and --tokens-file are exclusive");
	if (o->logits_path != NULL && o->mtp_path != NULL &&
	    same_file(o->logits_path, o->mtp_path))
		rs_cli_usage_error(usage_line, "--logits and --mtp-logits name "
		    "the same file: one would overwrite the other");
	check_not_input(o, o->logits_path, "--logits");
	check_not_input(o, o->mtp_path, "--mtp-logits");
}

/* ---- input ---- */

/*
 * Token ids separated by white space or commas into *REC.  Returns NULL or
 * a static message.
 */
static const char *
parse_id_text(const char *text, struct record *rec)
{
	static char	 msg[128];
	const char	*p = text;
	int32_t		 cap = 0;

	rec->n = 0;
	rec->tokens = NULL;
	for (;;) {
		char	 buf[32];
		size_t	 len;
		int64_t	 v;

		p += strspn(p, " \t\r\n,");
		if (*p == '\0')
			break;
		len = strcspn(p, " \t\r\n,");
		if (len >= sizeof(buf) || (memcpy(buf, p, len), buf[len] = '\0',
		    rs_cli_parse_i64(buf, INT32_MIN, INT32_MAX, &v) != 0)) {
			/* digits past 32 bits (or 64) are no token id */
			const size_t	sign = *p == '-';
			char		q[RS_UTF8_QUOTE_SIZE];

			if (len > sign && strspn(p + sign, "0123456789") ==
			    len - sign)
				snprintf(msg, sizeof(msg), "token %s at index "
				    "%d is outside the vocabulary",
				    rs_utf8_quote(p, len, q), rec->n);
			else
				snprintf(msg, sizeof(msg), "token %d: '%s' is "
				    "not an integer", rec->n,
				    rs_utf8_quote(p, len, q));
			return (msg);
		}
		if (rec->n == cap) {
			int32_t *t;

			cap = cap == 0 ? 64 : 2 * cap;
			if ((t = realloc(rec->tokens, (size_t)cap *
			    sizeof(*t))) == NULL)
				rs_cli_fatal("out of memory");
			rec->tokens = t;
		}
		rec->tokens[rec->n++] = (int32_t)v;
		p += len;
	}
	return (NULL);
}

/* The text of --tokens-file PATH (- for stdin); exits 2 on error. */
static char *
read_text(const char *path)
{
	FILE	*fp = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	char	*buf;
	size_t	 n;

	if (fp == NULL)
		rs_cli_fatal("%s: %s", path, strerror(errno));
	buf = rs_cli_read_all(fp, path, RS_CLI_MAX_LINE, &n);
	if (fp != stdin)
		fclose(fp);
	if (memchr(buf, '\0', n) != NULL)
		rs_cli_fatal("%s: a NUL byte among the token ids", path);
	return (buf);
}

/* One JSON input line into *REC; returns NULL or a message in MSG. */
static const char *
parse_json_record(const char *line, size_t len, int32_t def_prefix,
    struct record *rec, char *msg, size_t msgsz)
{
	struct rs_json	*j, *arr, *pj;
	struct rs_err	 err;
	int64_t		 v;

	memset(rec, 0, sizeof(*rec));
	rec->prefix = def_prefix;
	/* an id past 64 bits (1e400) is copied as its lexeme, as the other
	   commands copy it, not refused */
	if (rs_pyjson_parse(line, len, &j, &err) != RS_OK) {
		snprintf(msg, msgsz, "%s", err.msg);
		return (msg);
	}
	rec->id = rs_json_copy(rs_json_get(j, "id"));
	if ((arr = rs_json_get(j, "tokens")) != NULL &&
	    rs_json_get(j, "ids") != NULL) {
		rs_json_free(j);
		snprintf(msg, msgsz, "give only one of \"tokens\" and "
		    "\"ids\"");
		return (msg);
	}
	if (arr == NULL)
		arr = rs_json_get(j, "ids");
	if (rs_json_kind(j) != RS_JSON_OBJECT || arr == NULL ||
	    rs_json_kind(arr) != RS_JSON_ARRAY) {
		rs_json_free(j);
		snprintf(msg, msgsz, "expected an object with a \"tokens\" "
		    "array");
		return (msg);
	}
	rec->n = (int32_t)rs_json_arr_len(arr);
	if ((rec->tokens = calloc(rec->n > 0 ? (size_t)rec->n : 1,
	    sizeof(int32_t))) == NULL)
		rs_cli_fatal("out of memory");
	for (int32_t i = 0; i < rec->n; i++) {
		if (rs_json_as_int(rs_json_arr_at(arr, i), &v) != 0) {
			rs_json_free(j);
			snprintf(msg, msgsz, "tokens[%d] is not an integer", i);
			return (msg);
		}
		if (v < INT32_MIN || v > INT32_MAX) {	/* (no id is) */
			rs_json_free(j);
			snprintf(msg, msgsz, "token %lld at index %d is outside "
			    "the vocabulary", (long long)v, i);
			return (msg);
		}
		rec->tokens[i] = (int32_t)v;
	}
	/* (null is unset, as in every command's requests) */
	if ((pj = rs_json_get(j, "prefix")) != NULL &&
	    rs_json_kind(pj) != RS_JSON_NULL) {
		if (rs_json_as_int(pj, &v) != 0 || v < 1) {
			rs_json_free(j);
			snprintf(msg, msgsz,
			    "prefix is not a positive integer");
			return (msg);
		}
		if (v > INT32_MAX) {
			rs_json_free(j);
			snprintf(msg, msgsz, "prefix %lld is longer than any "
			    "record (at most %d tokens)", (long long)v,
			    INT32_MAX);
			return (msg);
		}
		rec->prefix = (int32_t)v;
	}
	rs_json_free(j);
	return (NULL);
}

static void
free_record(struct record *rec)
{
	free(rec->tokens);
	rs_json_free(rec->id);
	memset(rec, 0, sizeof(*rec));
}

/* ---- one record ---- */

/* Checks the engine would also make, as messages about the input. */
static const char *
check_record(const struct run *r, struct record *rec, char *msg,
    size_t msgsz)
{
	uint32_t vocab = r->model->hp.n_vocab;
	int32_t	 ctx = rs_state_n_ctx(r->state);

	if (rec->n == 0) {
		snprintf(msg, msgsz, "empty input: no tokens");
		return (msg);
	}
	for (int32_t i = 0; i < rec->n; i++)
		if (rec->tokens[i] < 0 || (uint32_t)rec->tokens[i] >= vocab) {
			snprintf(msg, msgsz, "token %d at index %d is outside "
			    "the vocabulary [0, %u)", rec->tokens[i], i, vocab);
			return (msg);
		}
	if (rec->n > ctx) {
		snprintf(msg, msgsz, "%d tokens exceed the context of %d",
		    rec->n, ctx);
		return (msg);
	}
	if (rec->prefix < 0)
		rec->prefix = rec->n;
	if (rec->prefix < 1 || rec->prefix > rec->n) {
		snprintf(msg, msgsz, "prefix %d outside [1, %d]", rec->prefix,
		    rec->n);
		return (msg);
	}
	if (r->o->check_rollback && rec->prefix == rec->n) {
		snprintf(msg, msgsz, "--check-rollback needs candidates after "
		    "the prefix (prefix %d of %d tokens)", rec->prefix, rec->n);
		return (msg);
	}
	if (r->o->check_rollback && rec->n + r->o->extra > ctx) {
		snprintf(msg, msgsz, "%d tokens plus --extra %d exceed the "
		    "context of %d", rec->n, r->o->extra, ctx);
		return (msg);
	}
	return (NULL);
}

static struct rs_json *
int_array(const int32_t *v, int32_t n)
{
	struct rs_json *a = rs_json_arr();

	for (int32_t i = 0; i < n && a != NULL; i++)
		rs_json_push(a, rs_json_int(v[i]));
	return (a);
}

/* What one record's passes produce. */
struct scores {
	int32_t	*amax;		/* (n) argmax per position */
	double	*lp;		/* (n) log p(next token); NAN for the last */
	float	*hid;		/* (n + 1, n_embd): zeros, then trunk rows */
	double	 fwd_ms, mtp_ms;
};

static void
free_scores(struct scores *sc)
{
	free(sc->amax);
	free(sc->lp);
	free(sc->hid);
}

/* Tokens per call: the engine's chunk, at most MAX_ROWS. */
static int32_t
rows(const struct run *r)
{
	int32_t b = rs_engine_max_batch(r->engine);

	return (b < MAX_ROWS ? b : MAX_ROWS);
}

/*
 * The trunk over REC in chunks of rows() tokens (the same numbers as one
 * call, §4.8): argmax and next-token log-probability per row, logits
 * rows to the .npy file, hidden rows kept for the MTP pass.  Only
 * rows() × n_vocab logits are held at a time (~1 MiB per row for 27B).
 */
static enum rs_status
score(struct run *r, const struct record *rec, struct scores *sc,
    struct rs_err *err)
{
	const int64_t	 vocab = r->model->hp.n_vocab;
	const int64_t	 embd = r->model->hp.n_embd;
	const int32_t	 b = rows(r);
	enum rs_status	 s;

	rs_state_reset(r->state);
	for (int32_t i = 0; i < rec->n; i += b) {
		int32_t	 c = rec->n - i < b ? rec->n - i : b;
		double	 t0 = rs_time_ms();

		if (rec->n >= RS_CLI_LONG_PROMPT)
			rs_cli_progress("prefill", (uint64_t)i,
			    (uint64_t)rec->n);

		if ((s = rs_engine_forward(r->engine, r->state, rec->tokens + i,
		    c, r->lbuf, RS_LOGITS_ALL, r->want_mtp ?
		    sc->hid + (i + 1) * embd : NULL, err)) != RS_OK)
			return (s);
		sc->fwd_ms += rs_time_ms() - t0;
		for (int32_t t = 0; t < c; t++) {
			const float *row = r->lbuf + t * vocab;

			sc->amax[i + t] = rs_logits_argmax(row, vocab);
			sc->lp[i + t] = i + t + 1 < rec->n ? rs_logits_logprob(row,
			    vocab, rec->tokens[i + t + 1]) : NAN;
		}
		if (r->want_logits && rs_cli_npy_rows(&r->logits, r->lbuf,
		    c) != 0)
			return (rs_errf(err, RS_ERR_IO, "%s: %s",
			    r->o->logits_path, strerror(errno)));
	}
	if (rec->n >= RS_CLI_LONG_PROMPT)
		rs_cli_progress_end();
	return (RS_OK);
}

/* The MTP catch-up (§6.3): row i takes token i and hidden row i − 1. */
static enum rs_status
mtp_pass(struct run *r, const struct record *rec, struct scores *sc,
    struct rs_err *err)
{
	const int64_t	 embd = r->model->hp.n_embd;
	const int32_t	 b = rows(r);
	enum rs_status	 s;

	for (int32_t i = 0; i < rec->n; i += b) {
		int32_t	 c = rec->n - i < b ? rec->n - i : b;
		double	 t0 = rs_time_ms();

		if ((s = rs_engine_mtp_batch(r->engine, r->state,
		    rec->tokens + i, c, i, sc->hid + i * embd, r->lbuf, NULL,
		    err)) != RS_OK)
			return (s);
		sc->mtp_ms += rs_time_ms() - t0;
		if (rs_cli_npy_rows(&r->mtp, r->lbuf, c) != 0)
			return (rs_errf(err, RS_ERR_IO, "%s: %s",
			    r->o->mtp_path, strerror(errno)));
	}
	return (RS_OK);
}

/* The rollback check's fields; *FAILED set on a mismatch. */
static enum rs_status
add_rollback(struct run *r, const struct record *rec, struct rs_json *out,
    int *failed, struct rs_err *err)
{
	struct rs_rollback_check rc;
	enum rs_status	 s;
	int		 ok;

	if ((s = rs_verify_check_rollback(r->engine, rec->tokens, rec->n,
	    rec->prefix, r->o->extra, rs_state_n_ctx(r->state), &rc,
	    err)) != RS_OK)
		return (s);
	ok = rc.rel_err <= RS_VERIFY_ROLLBACK_TOL &&
	    rc.mtp_rel_err <= RS_VERIFY_ROLLBACK_TOL;
	rs_json_set(out, "rollback_ok", rs_json_bool(ok));
	rs_json_set(out, "rollback_positions", rs_json_int(rc.n_compared));
	rs_json_set(out, "rollback_rel_err", rs_json_real(rc.rel_err));
	rs_json_set(out, "rollback_mtp_rel_err", rc.mtp_rel_err < 0.0 ?
	    rs_json_null() : rs_json_real(rc.mtp_rel_err));
	rs_json_set(out, "sequential_ms", rs_json_real(rc.sequential_ms));
	if (!ok && !r->o->quiet)
		rs_cli_warn("rollback mismatch: accepted %d, rel_err %.3g, "
		    "mtp_rel_err %.3g", rc.accepted, rc.rel_err,
		    rc.mtp_rel_err);
	*failed = !ok;
	return (RS_OK);
}

static struct rs_json *
report(const struct run *r, struct record *rec, const struct scores *sc)
{
	struct rs_json	*out = rs_json_obj(), *lp = rs_json_arr();
	int32_t		 acc = 0;

	if (rec->prefix < rec->n)
		acc = rs_verify_accept(rec->tokens, sc->amax, rec->n,
		    rec->prefix);
	for (int32_t i = 0; i < rec->n; i++)
		rs_json_push(lp, isnan(sc->lp[i]) ? rs_json_null() :
		    rs_json_real(sc->lp[i]));
	if (rec->id != NULL) {
		rs_json_set(out, "id", rec->id);
		rec->id = NULL;
	}
	rs_json_set(out, "n_tokens", rs_json_int(rec->n));
	rs_json_set(out, "prefix", rs_json_int(rec->prefix));
	rs_json_set(out, "n_candidates", rs_json_int(rec->n - rec->prefix));
	rs_json_set(out, "accepted", rs_json_int(acc));
	rs_json_set(out, "next_token",
	    rs_json_int(sc->amax[rec->prefix + acc - 1]));
	rs_json_set(out, "argmax", int_array(sc->amax, rec->n));
	rs_json_set(out, "logprob_next", lp);
	rs_json_set(out, "forward_ms", rs_json_real(sc->fwd_ms));
	rs_json_set(out, "tok_s", rs_json_real(sc->fwd_ms > 0.0 ?
	    rec->n / (sc->fwd_ms / 1e3) : 0.0));
	if (r->want_mtp)
		rs_json_set(out, "mtp_ms", rs_json_real(sc->mtp_ms));
	return (out);
}

/*
 * Run REC and print its output line.  Returns RS_EXIT_OK, RS_EXIT_FAIL (a
 * rollback mismatch) or RS_EXIT_ERROR (ERR says why).
 */
static int
run_record(struct run *r, struct record *rec, struct rs_err *err)
{
	const int64_t	 embd = r->model->hp.n_embd;
	struct scores	 sc = { 0 };
	struct rs_json	*out = NULL;
	int		 failed = 0, code = RS_EXIT_ERROR;

	sc.amax = malloc((size_t)rec->n * sizeof(*sc.amax));
	sc.lp = malloc((size_t)rec->n * sizeof(*sc.lp));
	if (r->want_mtp)
		sc.hid = calloc((size_t)((rec->n + 1) * embd), sizeof(float));
	if (sc.amax == NULL || sc.lp == NULL || (r->want_mtp && sc.hid == NULL))
		rs_cli_fatal("out of memory");
	if (score(r, rec, &sc, err) != RS_OK ||
	    (r->want_mtp && mtp_pass(r, rec, &sc, err) != RS_OK))
		goto out;
	r->tokens_done += rec->n;
	r->ms_done += sc.fwd_ms;
	out = report(r, rec, &sc);
	if (r->o->check_rollback && add_rollback(r, rec, out, &failed,
	    err) != RS_OK)
		goto out;
	if (out == NULL)
		rs_cli_fatal("out of memory");
	if (rs_json_write_line(out, stdout) != 0)
		rs_cli_fatal("write error on stdout: %s", strerror(errno));
	code = failed ? RS_EXIT_FAIL : RS_EXIT_OK;
out:
	rs_json_free(out);
	free_scores(&sc);
	return (code);
}

/* ---- main ---- */

/* A record that could not run: an error object on stdout (style §2.9). */
static void
print_error(const struct opts *o, struct rs_json *id, const char *msg)
{
	struct rs_json *out = rs_json_obj(), *e = rs_json_obj();

	if (id != NULL)
		rs_json_set(out, "id", id);
	rs_json_set(e, "type", rs_json_str("invalid_input"));
	rs_json_set(e, "message", rs_json_str(msg));
	rs_json_set(out, "error", e);
	if (rs_json_write_line(out, stdout) != 0)
		rs_cli_fatal("write error on stdout: %s", strerror(errno));
	rs_json_free(out);
	if (!o->quiet)
		rs_cli_warn("%s", msg);
}

static void
abort_outputs(struct run *r)
{
	if (r->want_logits)
		rs_cli_npy_abort(&r->logits);
	if (r->want_mtp)
		rs_cli_npy_abort(&r->mtp);
	r->want_logits = r->want_mtp = 0;
}

/* Any exit before the outputs are complete removes their temporary files
 * (rs_cli_fatal on a read error or out of memory included). */
static struct run *exiting_run;

static void
abort_at_exit(void)
{
	if (exiting_run != NULL)
		abort_outputs(exiting_run);
}

/* Stop: remove partial outputs, say why, exit 2. */
static void
fail(struct run *r, const char *msg)
{
	abort_outputs(r);
	rs_cli_warn("%s", msg);
	exit(RS_EXIT_ERROR);
}

/*
 * One record: bad input stops the command when it came from --tokens or
 * when .npy files are being written (their rows would no longer line up),
 * otherwise it becomes an error line and exit status 1.
 */
static int
do_record(struct run *r, struct record *rec, int fatal_input,
    const char *where)
{
	struct rs_err	 err = { 0 };
	char		 msg[256], full[300];
	const char	*bad;
	int		 code;

	if ((bad = check_record(r, rec, msg, sizeof(msg))) != NULL) {
		snprintf(full, sizeof(full), "%s%s", where, bad);
		if (fatal_input || r->want_logits || r->want_mtp)
			fail(r, full);
		print_error(r->o, rec->id, full);
		rec->id = NULL;
		return (RS_EXIT_FAIL);
	}
	if ((code = run_record(r, rec, &err)) == RS_EXIT_ERROR)
		fail(r, err.msg);
	return (code);
}

static int
run_stdin(struct run *r)
{
	char	*line = NULL;
	size_t	 cap = 0;
	ssize_t	 len;
	int64_t	 lineno = 0, records = 0;
	int	 code = RS_EXIT_OK;

	while ((len = rs_cli_getline(&line, &cap, stdin, RS_CLI_MAX_LINE,
	    "stdin", (size_t)lineno + 1)) != -1) {
		struct record	rec = { 0 };
		char		msg[256], where[48];
		const char	*bad;
		int		c;

		lineno++;
		if (len >= 0 && strspn(line, " \t\r\n") == (size_t)len)
			continue;
		records++;
		snprintf(where, sizeof(where), "line %lld: ",
		    (long long)lineno);
		if (len == -2) {
			snprintf(msg, sizeof(msg), "the line is longer than "
			    "%zu bytes", RS_CLI_MAX_LINE);
			bad = msg;
		} else
			bad = parse_json_record(line, (size_t)len,
			    r->o->prefix, &rec, msg, sizeof(msg));
		if (bad != NULL) {
			char full[320];

			(void)rs_cli_at_line(full, sizeof(full),
			    (long long)lineno, bad);
			if (r->want_logits || r->want_mtp)
				fail(r, full);
			print_error(r->o, rec.id, full);
			rec.id = NULL;
			free_record(&rec);
			code = RS_EXIT_FAIL;
			continue;
		}
		c = do_record(r, &rec, 0, where);
		if (c != RS_EXIT_OK)
			code = c;
		free_record(&rec);
	}
	free(line);
	if (records == 0)
		fail(r, "empty input: no records on stdin");
	return (code);
}

static int
run_text(struct run *r)
{
	struct record	 rec = { 0 };
	char		*text;
	const char	*bad;
	int		 code;

	text = r->o->tokens != NULL ? strdup(r->o->tokens) :
	    read_text(r->o->tokens_file);
	if (text == NULL)
		rs_cli_fatal("out of memory");
	if ((bad = parse_id_text(text, &rec)) != NULL)
		fail(r, bad);
	free(text);
	rec.prefix = r->o->prefix;
	code = do_record(r, &rec, 1, "");
	free_record(&rec);
	return (code);
}

static void
open_outputs(struct run *r)
{
	int64_t vocab = r->model->hp.n_vocab;

	struct rs_err err = { 0 };

	rs_out_trap_signals();
	if (r->o->logits_path != NULL) {
		if (rs_cli_npy_open(&r->logits, r->o->logits_path, vocab,
		    &err) != 0)
			rs_cli_fatal("%s: %s", r->o->logits_path, err.msg);
		r->want_logits = 1;
	}
	if (r->o->mtp_path != NULL) {
		if (r->model->hp.n_nextn == 0) {
			abort_outputs(r);
			rs_cli_fatal("%s: --mtp-logits: the model has no MTP "
			    "block", r->o->model);
		}
		if (rs_cli_npy_open(&r->mtp, r->o->mtp_path, vocab,
		    &err) != 0) {
			abort_outputs(r);
			rs_cli_fatal("%s: %s", r->o->mtp_path, err.msg);
		}
		r->want_mtp = 1;
	}
}

static void
close_outputs(struct run *r)
{
	struct rs_err	err = { 0 };
	char		msg[512];

	if (r->want_logits && rs_cli_npy_finish(&r->logits, &err) != 0) {
		snprintf(msg, sizeof(msg), "%s: %s", r->o->logits_path,
		    err.msg);
		r->want_logits = 0;
		fail(r, msg);
	}
	if (r->want_mtp && rs_cli_npy_finish(&r->mtp, &err) != 0) {
		snprintf(msg, sizeof(msg), "%s: %s", r->o->mtp_path,
		    err.msg);
		r->want_mtp = 0;
		fail(r, msg);
	}
}

int
main(int argc, char **argv)
{
	struct opts		 o;
	struct run		 r;
	struct rs_err		 err = { 0 };
	struct rs_engine_opts	 eo = { 0 };
	struct rs_state_opts	 so = { 0 };
	int			 code;

	rs_cli_init(argv[0]);
	parse_opts(argc, argv, &o);
	rs_cli_set_quiet(o.quiet);
	memset(&r, 0, sizeof(r));
	r.o = &o;
	rs_cli_progress("loading the model", 0, 0);
	if (rs_model_open(&r.model, o.model, &err) != RS_OK)
		rs_cli_fatal("%s: %s", o.model, err.msg);
	eo.backend = o.backend;
	eo.n_threads = o.threads;
	eo.max_batch = o.batch;
	rs_cli_devices_opt(o.devices, o.split, o.ctx, 1, &eo, usage_line);
	so.n_ctx = o.ctx;
	if (rs_engine_new(&r.engine, r.model, &eo, &err) != RS_OK ||
	    rs_engine_state_new(r.engine, &so, &r.state, &err) != RS_OK)
		rs_cli_fatal("%s: %s", o.model, err.msg);
	rs_cli_progress_end();
	r.lbuf = malloc((size_t)rows(&r) *
	    r.model->hp.n_vocab * sizeof(float));
	if (r.lbuf == NULL)
		rs_cli_fatal("out of memory");
	exiting_run = &r;
	atexit(abort_at_exit);
	open_outputs(&r);
	code = o.tokens != NULL || o.tokens_file != NULL ? run_text(&r) :
	    run_stdin(&r);
	close_outputs(&r);
	exiting_run = NULL;
	if (!o.quiet && r.ms_done > 0.0)
		rs_cli_warn("%lld tokens in %.1f ms (%.0f tok/s, %s, %d "
		    "threads)", (long long)r.tokens_done, r.ms_done,
		    r.tokens_done / (r.ms_done / 1e3),
		    rs_backend_name(rs_engine_backend(r.engine)),
		    rs_engine_n_threads(r.engine));
	free(r.lbuf);
	rs_state_free(r.state);
	rs_engine_free(r.engine);
	rs_model_close(r.model);
	return (rs_cli_finish(code));
}
