/*
 * rs-inspect - describe or validate GGUF model files.
 *
 * Default: a human-readable summary (architecture, hyperparameters,
 * tokenizer, chat template, tensors per type, bytes read per decoded token).
 * --tensors lists every tensor, --json prints JSON lines, --check only
 * validates.  The GGUF and the qwen35 binding are validated in full before
 * anything is printed from them (rs_gguf.c, rs_model.c).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rs_gguf.h"
#include "rs_json.h"
#include "rs_model.h"
#include "rs_scan.h"
#include "rs_tok.h"
#include "rs_types.h"

#define USAGE	"rs-inspect [-c | -j | -t] [--max-array N] [-m MODEL] [MODEL ...]"

struct opts {
	int	check;
	int	json;
	int	tensors;
	int64_t	max_array;	/* array elements shown in --json */
};

static void
usage_full(void)
{
	printf("usage: %s\n\n"
	    "Describe or validate GGUF model files.\n\n"
	    "  -m, --model FILE     model to inspect (also as operand)\n"
	    "  -t, --tensors        list every tensor (name, type, shape, offset, bytes)\n"
	    "  -j, --json           JSON lines: one object per key, per tensor, a summary\n"
	    "      --max-array N    with --json, print at most N array elements (default 64; 0 = all)\n"
	    "  -c, --check          validate only, the vocabulary and values included\n"
	    "                       (no NaN or Inf in float tensors or block scales);\n"
	    "                       exit 0 if valid, 1 if not\n"
	    "  -h, --help           show this help and exit\n"
	    "      --version        show version and build configuration\n\n"
	    "Exit status: 0 success, 1 a file failed --check, 2 error.\n", USAGE);
}

/* ---- human-readable summary ---- */

static void
print_str_key(const struct rs_gguf *g, const char *label, const char *key)
{
	struct rs_gguf_str s;
	char		   esc[4 * 200 + 1];

	if (rs_gguf_get_str(g, key, &s, NULL) == RS_OK) {
		rs_cli_esc(s.ptr, s.len > 200 ? 200 : s.len, esc, sizeof(esc));
		printf("%-14s %s\n", label, esc);
	}
}

static void
print_hparams(const struct rs_model *m)
{
	const struct rs_hparams *hp = &m->hp;
	uint32_t n_gdn = 0, n_attn = 0;

	for (uint32_t il = 0; il < hp->n_layer; il++) {
		if (m->layers[il].kind == RS_LAYER_GDN)
			n_gdn++;
		else
			n_attn++;
	}
	printf("blocks         %u = %u trunk (%u gated deltanet + %u attention)"
	    " + %u mtp", hp->n_layer_all, hp->n_layer, n_gdn, n_attn,
	    hp->n_nextn);
	if (hp->n_nextn > 0)
		printf(" (block %u)", hp->n_layer);
	printf("\nembedding      %u\nffn            %u\nvocab          %u\n"
	    "context        %u (training)\n", hp->n_embd, hp->n_ff,
	    hp->n_vocab, hp->n_ctx_train);
	printf("attention      %u q heads, %u kv heads, head dim %u/%u, "
	    "%u rotated dims, rope base %g, sections [%u, %u, %u, %u]\n",
	    hp->n_head, hp->n_head_kv, hp->head_dim, hp->head_dim_v,
	    hp->n_rot, (double)hp->rope_base, hp->rope_sections[0],
	    hp->rope_sections[1], hp->rope_sections[2], hp->rope_sections[3]);
	printf("deltanet       %u q/k heads, %u v heads, head dim %u, "
	    "conv kernel %u, inner %u\n", hp->ssm_n_kh, hp->ssm_n_vh,
	    hp->ssm_d_state, hp->ssm_conv_kernel, hp->ssm_d_inner);
	printf("rms eps        %g\nattn interval  %u\n", (double)hp->rms_eps,
	    hp->full_attn_interval);
}

static void
print_tokenizer(const struct rs_gguf *g)
{
	const struct rs_gguf_kv *toks, *merges, *tmpl;
	uint32_t eos;

	toks = rs_gguf_find_kv(g, "tokenizer.ggml.tokens");
	merges = rs_gguf_find_kv(g, "tokenizer.ggml.merges");
	if (toks == NULL) {
		printf("tokenizer      none\n");
	} else {
		printf("tokenizer      %llu tokens, %llu merges",
		    (unsigned long long)toks->arr_len,
		    (unsigned long long)(merges != NULL ? merges->arr_len : 0));
		if (rs_gguf_get_u32(g, "tokenizer.ggml.eos_token_id", &eos,
		    NULL) == RS_OK)
			printf(", eos %u", eos);
		printf("\n");
		print_str_key(g, "tokenizer type", "tokenizer.ggml.model");
		print_str_key(g, "pre-tokenizer", "tokenizer.ggml.pre");
	}
	tmpl = rs_gguf_find_kv(g, "tokenizer.chat_template");
	if (tmpl != NULL && tmpl->type == RS_GGUF_STRING) {
		uint64_t len;
		memcpy(&len, tmpl->data, 8);
		printf("chat template  present (%llu bytes)\n",
		    (unsigned long long)len);
	} else
		printf("chat template  absent\n");
}

static void
print_types(const struct rs_gguf *g)
{
	uint64_t bytes[RS_TYPE_COUNT] = { 0 };
	int64_t	 count[RS_TYPE_COUNT] = { 0 };

	for (int64_t i = 0; i < rs_gguf_n_tensors(g); i++) {
		const struct rs_gguf_tensor *t = rs_gguf_tensor(g, i);
		count[t->type]++;
		bytes[t->type] += t->nbytes;
	}
	printf("tensors        %lld\n", (long long)rs_gguf_n_tensors(g));
	for (int ty = 0; ty < RS_TYPE_COUNT; ty++)
		if (count[ty] > 0)
			printf("  %-8s %6lld tensors %15" PRIu64 " bytes\n",
			    rs_type_name(ty), (long long)count[ty], bytes[ty]);
}

static void
print_summary(const char *path, const struct rs_gguf *g,
    const struct rs_model *m, const struct rs_err *merr)
{
	printf("file           %s\n", rs_cli_esc_str(path));
	printf("format         GGUF v%u, %" PRIu64 " bytes, %lld keys, "
	    "alignment %u, data at %" PRIu64 "\n", rs_gguf_version(g),
	    rs_gguf_file_size(g), (long long)rs_gguf_n_kv(g),
	    rs_gguf_alignment(g), rs_gguf_data_offset(g));
	print_str_key(g, "architecture", "general.architecture");
	print_str_key(g, "name", "general.name");
	if (m != NULL)
		print_hparams(m);
	else
		printf("model          not usable as a qwen35 model: %s\n",
		    rs_cli_esc_str(merr->msg));
	print_tokenizer(g);
	print_types(g);
	if (m != NULL) {
		printf("decode reads   %" PRIu64 " bytes per token (embedding "
		    "table %" PRIu64 " bytes, 1 row read)\n",
		    rs_model_decode_bytes(m), m->tok_embd->nbytes);
		if (m->hp.n_nextn > 0)
			printf("mtp step reads %" PRIu64 " bytes\n",
			    rs_model_mtp_step_bytes(m));
	}
}

static void
print_tensors(const struct rs_gguf *g)
{
	for (int64_t i = 0; i < rs_gguf_n_tensors(g); i++) {
		const struct rs_gguf_tensor *t = rs_gguf_tensor(g, i);
		char shape[96];
		int  o = 0;

		for (int d = 0; d < t->n_dims; d++)
			o += snprintf(shape + o, sizeof(shape) - (size_t)o,
			    "%s%lld", d ? ", " : "{", (long long)t->ne[d]);
		snprintf(shape + o, sizeof(shape) - (size_t)o, "}");
		printf("%-44s %-7s %-18s %12" PRIu64 " %12" PRIu64 "\n",
		    rs_cli_esc_str(t->name), rs_type_name(t->type), shape, t->offset, t->nbytes);
	}
}

/* ---- JSON lines ---- */

static struct rs_json *
scalar_json(enum rs_gguf_vtype t, const void *p)
{
	int64_t	 v;
	uint64_t u;
	float	 f;
	double	 d;

	switch (t) {
	case RS_GGUF_F32:
		memcpy(&f, p, 4);
		return (rs_json_real(f));
	case RS_GGUF_F64:
		memcpy(&d, p, 8);
		return (rs_json_real(d));
	case RS_GGUF_BOOL:
		return (rs_json_bool(*(const uint8_t *)p != 0));
	case RS_GGUF_U64:
		memcpy(&u, p, 8);
		/* beyond int64: print as a string rather than alter it */
		if (u > INT64_MAX) {
			char buf[24];
			snprintf(buf, sizeof(buf), "%" PRIu64, u);
			return (rs_json_str(buf));
		}
		return (rs_json_int((int64_t)u));
	default: {
		struct rs_gguf_kv kv = { .type = t, .data = p, .key = "" };
		if (rs_gguf_kv_int(&kv, &v, NULL) != RS_OK)
			return (rs_json_null());
		return (rs_json_int(v));
	}
	}
}

static const uint8_t elem_size[RS_GGUF_VTYPE_COUNT] = {
	1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };

static struct rs_json *
kv_json(const struct rs_gguf_kv *kv, int64_t max_array)
{
	struct rs_json *o = rs_json_obj(), *arr;
	uint64_t n;

	rs_json_set(o, "kind", rs_json_str("kv"));
	rs_json_set(o, "key", rs_json_str(kv->key));
	rs_json_set(o, "type", rs_json_str(rs_gguf_vtype_name(kv->type)));
	if (kv->type == RS_GGUF_STRING) {
		memcpy(&n, kv->data, 8);
		rs_json_set(o, "value", rs_json_strn((const char *)kv->data + 8,
		    n));
		return (o);
	}
	if (kv->type != RS_GGUF_ARRAY) {
		rs_json_set(o, "value", scalar_json(kv->type, kv->data));
		return (o);
	}
	rs_json_set(o, "elem_type", rs_json_str(rs_gguf_vtype_name(kv->arr_type)));
	rs_json_set(o, "count", rs_json_int((int64_t)kv->arr_len));
	n = kv->arr_len;
	if (max_array > 0 && n > (uint64_t)max_array)
		n = (uint64_t)max_array;
	arr = rs_json_arr();
	for (uint64_t i = 0; i < n; i++) {
		if (kv->arr_type == RS_GGUF_STRING)
			rs_json_push(arr, rs_json_strn(kv->strs[i].ptr,
			    kv->strs[i].len));
		else
			rs_json_push(arr, scalar_json(kv->arr_type,
			    (const uint8_t *)kv->data + i * elem_size[kv->arr_type]));
	}
	rs_json_set(o, "value", arr);
	rs_json_set(o, "truncated", rs_json_bool(n < kv->arr_len));
	return (o);
}

static struct rs_json *
tensor_json(const struct rs_gguf_tensor *t)
{
	struct rs_json *o = rs_json_obj(), *shape = rs_json_arr();

	rs_json_set(o, "kind", rs_json_str("tensor"));
	rs_json_set(o, "name", rs_json_str(t->name));
	rs_json_set(o, "type", rs_json_str(rs_type_name(t->type)));
	for (int d = 0; d < t->n_dims; d++)
		rs_json_push(shape, rs_json_int(t->ne[d]));
	rs_json_set(o, "shape", shape);
	rs_json_set(o, "offset", rs_json_int((int64_t)t->offset));
	rs_json_set(o, "bytes", rs_json_int((int64_t)t->nbytes));
	return (o);
}

static struct rs_json *
summary_json(const char *path, const struct rs_gguf *g,
    const struct rs_model *m, const struct rs_err *merr)
{
	struct rs_json *o = rs_json_obj();

	rs_json_set(o, "kind", rs_json_str("summary"));
	rs_json_set(o, "file", rs_json_str(path));
	rs_json_set(o, "version", rs_json_int(rs_gguf_version(g)));
	rs_json_set(o, "file_bytes", rs_json_int((int64_t)rs_gguf_file_size(g)));
	rs_json_set(o, "n_kv", rs_json_int(rs_gguf_n_kv(g)));
	rs_json_set(o, "n_tensors", rs_json_int(rs_gguf_n_tensors(g)));
	if (m == NULL) {
		rs_json_set(o, "model_error", rs_json_str(merr->msg));
		return (o);
	}
	const struct rs_hparams *hp = &m->hp;
	rs_json_set(o, "n_layer_all", rs_json_int(hp->n_layer_all));
	rs_json_set(o, "n_layer", rs_json_int(hp->n_layer));
	rs_json_set(o, "n_nextn", rs_json_int(hp->n_nextn));
	rs_json_set(o, "n_embd", rs_json_int(hp->n_embd));
	rs_json_set(o, "n_ff", rs_json_int(hp->n_ff));
	rs_json_set(o, "n_vocab", rs_json_int(hp->n_vocab));
	rs_json_set(o, "n_head", rs_json_int(hp->n_head));
	rs_json_set(o, "n_head_kv", rs_json_int(hp->n_head_kv));
	rs_json_set(o, "head_dim", rs_json_int(hp->head_dim));
	rs_json_set(o, "decode_bytes_per_token",
	    rs_json_int((int64_t)rs_model_decode_bytes(m)));
	rs_json_set(o, "embedding_bytes", rs_json_int((int64_t)m->tok_embd->nbytes));
	rs_json_set(o, "mtp_step_bytes",
	    rs_json_int((int64_t)rs_model_mtp_step_bytes(m)));
	return (o);
}

static int
print_json(const char *path, const struct rs_gguf *g,
    const struct rs_model *m, const struct rs_err *merr, int64_t max_array)
{
	struct rs_json *o;
	int	rc = 0;

	for (int64_t i = 0; i < rs_gguf_n_kv(g) && rc == 0; i++) {
		o = kv_json(rs_gguf_kv(g, i), max_array);
		rc = rs_json_write_line(o, stdout);
		rs_json_free(o);
	}
	for (int64_t i = 0; i < rs_gguf_n_tensors(g) && rc == 0; i++) {
		o = tensor_json(rs_gguf_tensor(g, i));
		rc = rs_json_write_line(o, stdout);
		rs_json_free(o);
	}
	if (rc == 0) {
		o = summary_json(path, g, m, merr);
		rc = rs_json_write_line(o, stdout);
		rs_json_free(o);
	}
	return (rc);
}

/* ---- main ---- */

/*
 * --check's last part: every float tensor and every quantized block's
 * scales finite (rs_scan.h), with progress by bytes on a terminal since a
 * 27B file takes a while to read.
 */
static int
check_values(const char *path, const struct rs_gguf *g)
{
	struct rs_err	err = { 0 };
	uint64_t	total = 0, done = 0;

	for (int64_t i = 0; i < rs_gguf_n_tensors(g); i++)
		total += rs_gguf_tensor(g, i)->nbytes;
	for (int64_t i = 0; i < rs_gguf_n_tensors(g); i++) {
		const struct rs_gguf_tensor *t = rs_gguf_tensor(g, i);

		rs_cli_progress(path, done, total);
		if (rs_scan_tensor(t, &err) != RS_OK) {
			rs_cli_warn("%s: %s", path, err.msg);
			return (RS_EXIT_FAIL);
		}
		done += t->nbytes;
	}
	rs_cli_progress(path, total, total);
	rs_cli_progress_end();
	return (RS_EXIT_OK);
}

/*
 * --check: the vocabulary as the commands that tokenize load it (ids of
 * the special tokens inside it, merges, token types, token texts), so
 * that a file --check passes is not refused by rs-tokenize or rs-serve.
 * A file with no tokenizer key at all (weights for token ids alone:
 * rs-verify, rs-bench) has none to check and passes with a note of the
 * commands that need one; one with some of them is checked, so that a
 * missing tokenizer.ggml.model is reported.
 */
static int
check_tokenizer(const char *path, const struct rs_gguf *g)
{
	struct rs_err	 err = { 0 };
	struct rs_tok	*tok = NULL;

	if (rs_gguf_find_kv(g, "tokenizer.ggml.model") == NULL &&
	    rs_gguf_find_kv(g, "tokenizer.ggml.tokens") == NULL) {
		rs_cli_warn("%s: no vocabulary: rs-verify and rs-bench take it "
		    "(token ids); rs-tokenize, rs-generate and rs-serve refuse "
		    "it", path);
		return (RS_EXIT_OK);
	}
	if (rs_tok_new(&tok, g, RS_TOK_NORM_DEFAULT, &err) != RS_OK) {
		rs_cli_warn("%s: %s", path, err.msg);
		return (RS_EXIT_FAIL);
	}
	rs_tok_free(tok);
	return (RS_EXIT_OK);
}

/* Inspect one file; returns its exit code. */
static int
inspect(const char *path, const struct opts *o)
{
	struct rs_err	 err = { 0 }, merr = { 0 };
	struct rs_gguf	*g;
	struct rs_model	*m = NULL;
	int		 rc;

	if (rs_gguf_open(&g, path, &err) != RS_OK) {
		rs_cli_warn("%s: %s", path, err.msg);
		return (o->check ? RS_EXIT_FAIL : RS_EXIT_ERROR);
	}
	if (o->check) {
		/* the model takes ownership of g, also on failure */
		if (rs_model_from_gguf(&m, g, &merr) != RS_OK) {
			rs_cli_warn("%s: %s", path, merr.msg);
			return (RS_EXIT_FAIL);
		}
		rc = check_tokenizer(path, m->gguf);
		if (rc == RS_EXIT_OK)
			rc = check_values(path, m->gguf);
		rs_model_close(m);
		return (rc);
	}
	/* keep the GGUF open even when the qwen35 binding fails */
	struct rs_gguf *g2;
	if (rs_gguf_open(&g2, path, &err) == RS_OK &&
	    rs_model_from_gguf(&m, g2, &merr) != RS_OK)
		m = NULL;
	if (o->json) {
		if (print_json(path, g, m, &merr, o->max_array) != 0)
			rs_cli_fatal("write error on stdout: %s",
			    strerror(errno));
	} else if (o->tensors)
		print_tensors(g);
	else
		print_summary(path, g, m, &merr);
	rs_model_close(m);
	rs_gguf_close(g);
	return (RS_EXIT_OK);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "check", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ "max-array", required_argument, NULL, 'A' },
		{ "model", required_argument, NULL, 'm' },
		{ "tensors", no_argument, NULL, 't' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	struct opts	 o = { .max_array = 64 };
	const char	*models[64];
	int		 n = 0, ch, rc = RS_EXIT_OK;

	rs_cli_init(argv[0]);
	while ((ch = getopt_long(argc, argv, "chjm:t", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c': o.check = 1; break;
		case 'j': o.json = 1; break;
		case 't': o.tensors = 1; break;
		case 'h': usage_full(); return (rs_cli_finish(RS_EXIT_OK));
		case 'V': rs_cli_print_version(); return (rs_cli_finish(0));
		case 'A':
			if (rs_cli_parse_i64(optarg, 0, INT32_MAX, &o.max_array))
				rs_cli_usage_error(USAGE,
				    "--max-array: '%s' is not a count", optarg);
			break;
		case 'm':
			if (n == 64)
				rs_cli_usage_error(USAGE, "too many models");
			models[n++] = optarg;
			break;
		default:	/* getopt_long said which option, and why */
			rs_cli_common_opt(ch, USAGE, usage_full);
		}
	}
	for (int i = optind; i < argc; i++) {
		if (n == 64)
			rs_cli_usage_error(USAGE, "too many models");
		models[n++] = argv[i];
	}
	if (n == 0)
		rs_cli_usage_error(USAGE, "no model given");
	if (o.json + o.tensors + o.check > 1)
		rs_cli_usage_error(USAGE,
		    "--check, --json and --tensors exclude each other");
	for (int i = 0; i < n; i++) {
		int r = inspect(models[i], &o);
		if (r > rc)
			rc = r;
	}
	return (rs_cli_finish(rc));
}
