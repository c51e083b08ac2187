/*
 * check_verify.c - rs-verify end to end: greedy acceptance against the
 * reference continuation, --check-rollback for k in {1, 2, 4, 8} and every
 * accept count, .npy outputs against the fixtures, bad input.
 */
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "rs_json.h"
#include "rs_verify.h"
#include "t_ref.h"
#include "t_util.h"

#define VOCAB	2176	/* tiny: rows of token_embd */

static char *
cmd(const char *fmt, const char *a, const char *b)
{
	static char	buf[4096];

	snprintf(buf, sizeof(buf), fmt, t_bin("rs-verify"),
	    t_fixture("tiny/model-f16.gguf"), a, b);
	return (buf);
}

static void
append_ids(char *buf, size_t cap, const int32_t *t, int32_t n, int json)
{
	size_t len = strlen(buf);

	for (int32_t i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%d",
		    i == 0 ? "" : json ? "," : " ", t[i]);
}

static struct rs_json *
parse_line(const char *line, size_t n)
{
	struct rs_json	*j;
	struct rs_err	 err;

	ck_assert_msg(rs_json_parse(line, n, &j, &err) == RS_OK, "%s: %.*s",
	    err.msg, (int)n, line);
	return (j);
}

static int64_t
get_int(const struct rs_json *j, const char *key)
{
	int64_t	v;

	ck_assert_msg(rs_json_as_int(rs_json_get(j, key), &v) == 0,
	    "field %s missing or not an integer", key);
	return (v);
}

static double
get_real(const struct rs_json *j, const char *key)
{
	double	v;

	ck_assert_msg(rs_json_as_real(rs_json_get(j, key), &v) == 0,
	    "field %s missing or not a number", key);
	return (v);
}

/* ---- usage ---- */

START_TEST(usage)
{
	char	*out;
	char	 c[1024];

	snprintf(c, sizeof(c), "%s --help", t_bin("rs-verify"));
	ck_assert_int_eq(t_run(c, &out), 0);
	ck_assert(strstr(out, "--check-rollback") != NULL);
	ck_assert(strstr(out, "--mtp-logits") != NULL);
	ck_assert(strstr(out, "-t, --threads") != NULL);
	/* the exit codes, as in every command's help (issue #15) */
	ck_assert_msg(strstr(out, "Exit status: 0 ") != NULL &&
	    strstr(out, "\n1 ") != NULL && strstr(out, "; 2 ") != NULL,
	    "%s", out);
	free(out);
	snprintf(c, sizeof(c), "%s --version", t_bin("rs-verify"));
	ck_assert_int_eq(t_run(c, &out), 0);
	ck_assert(strstr(out, "redshift") != NULL);
	free(out);
	snprintf(c, sizeof(c), "%s --bogus 2>/dev/null", t_bin("rs-verify"));
	ck_assert_int_eq(t_run(c, NULL), 2);
	snprintf(c, sizeof(c), "%s --tokens 1 2>/dev/null", t_bin("rs-verify"));
	ck_assert_int_eq(t_run(c, NULL), 2);
	ck_assert_int_eq(t_run(cmd("%s -m %s --tokens 1 --prefix 0%s%s "
	    "2>/dev/null", "", ""), NULL), 2);
	ck_assert_int_eq(t_run(cmd("%s -m %s --tokens 1 -t x%s%s 2>/dev/null",
	    "", ""), NULL), 2);
	ck_assert_int_eq(t_run(cmd("%s -m %s --tokens 1 --backend tpu%s%s "
	    "2>/dev/null", "", ""), NULL), 2);
}
END_TEST

/* ---- greedy acceptance against reference.json ---- */

START_TEST(greedy_accept)
{
	struct t_ref	 ref;
	struct rs_json	*j, *am, *lp;
	char		 ids[8192] = "", pre[32];
	char		*out;
	int32_t		 plen;
	double		 v;

	t_ref_load(&ref);
	plen = ref.len[ref.greedy_prompt];
	/* the prompt plus the first 5 reference tokens as candidates */
	append_ids(ids, sizeof(ids), ref.seq, plen + 5, 0);
	snprintf(pre, sizeof(pre), "%d", plen);
	ck_assert_int_eq(t_run(cmd("%s -m %s --tokens '%s' --prefix %s -q",
	    ids, pre), &out), 0);
	j = parse_line(out, strlen(out));
	ck_assert_int_eq(get_int(j, "n_tokens"), plen + 5);
	ck_assert_int_eq(get_int(j, "n_candidates"), 5);
	ck_assert_int_eq(get_int(j, "accepted"), 5);
	ck_assert_int_eq(get_int(j, "next_token"), ref.greedy[5]);
	am = rs_json_get(j, "argmax");
	lp = rs_json_get(j, "logprob_next");
	ck_assert_int_eq(rs_json_arr_len(am), plen + 5);
	for (int32_t i = 0; i < 5; i++) {
		int64_t a;

		ck_assert(rs_json_as_int(rs_json_arr_at(am, plen - 1 + i),
		    &a) == 0);
		ck_assert_int_eq(a, ref.greedy[i]);
	}
	for (int32_t i = 0; i + 1 < plen + 5; i++) {
		ck_assert(rs_json_as_real(rs_json_arr_at(lp, i), &v) == 0);
		ck_assert(v <= 0.0 && v > -50.0);
	}
	ck_assert_int_eq(rs_json_kind(rs_json_arr_at(lp, plen + 4)),
	    RS_JSON_NULL);
	ck_assert(get_real(j, "forward_ms") > 0.0);
	rs_json_free(j);
	free(out);
	t_ref_free(&ref);
}
END_TEST

/* ---- --check-rollback over k and every accept count ---- */

static const int ks[] = { 1, 2, 4, 8 };

/*
 * Candidates for k and accept count j from the reference continuation:
 * the first j are the model's greedy tokens, the next is not, the rest is
 * filler.  So the greedy rule must accept exactly j (reference.json, not
 * the engine, says which tokens the model picks).
 */
static int32_t
candidates(const struct t_ref *ref, int k, int j, int32_t *out)
{
	int32_t	plen = ref->len[ref->greedy_prompt], n = plen;

	memcpy(out, ref->seq, (size_t)plen * sizeof(int32_t));
	for (int i = 0; i < k; i++) {
		int32_t t = ref->greedy[i];

		if (i == j)
			t = (t + 1) % VOCAB;
		out[n++] = t;
	}
	return (n);
}

START_TEST(check_rollback_matrix)
{
	struct t_ref	 ref;
	const char	*dir = t_tmpdir();
	char		 path[1100], c[2400], *out, *line, *save;
	FILE		*fp;
	int32_t		 tok[128], plen;
	int		 records = 0, seen = 0;

	t_ref_load(&ref);
	plen = ref.len[ref.greedy_prompt];
	snprintf(path, sizeof(path), "%s/records.jsonl", dir);
	fp = fopen(path, "w");
	ck_assert(fp != NULL);
	for (size_t ki = 0; ki < sizeof(ks) / sizeof(ks[0]); ki++)
		for (int j = 0; j <= ks[ki]; j++) {
			char	ids[4096] = "";
			int32_t	n = candidates(&ref, ks[ki], j, tok);

			append_ids(ids, sizeof(ids), tok, n, 1);
			fprintf(fp, "{\"id\":[%d,%d],\"tokens\":[%s],"
			    "\"prefix\":%d}\n", ks[ki], j, ids, plen);
			records++;
		}
	ck_assert(fclose(fp) == 0);
	snprintf(c, sizeof(c), "%s -m %s --check-rollback --extra 3 -q < %s",
	    t_bin("rs-verify"), t_fixture("tiny/model-f16.gguf"), path);
	ck_assert_int_eq(t_run(c, &out), 0);
	for (line = strtok_r(out, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		struct rs_json	*j = parse_line(line, strlen(line));
		struct rs_json	*id = rs_json_get(j, "id");
		int64_t		 k, acc;
		int		 ok;

		ck_assert(rs_json_as_int(rs_json_arr_at(id, 0), &k) == 0);
		ck_assert(rs_json_as_int(rs_json_arr_at(id, 1), &acc) == 0);
		ck_assert_int_eq(get_int(j, "n_candidates"), k);
		ck_assert_msg(get_int(j, "accepted") == acc,
		    "k %lld: accepted %lld, expected %lld", (long long)k,
		    (long long)get_int(j, "accepted"), (long long)acc);
		ck_assert_int_eq(get_int(j, "next_token"), ref.greedy[acc]);
		ck_assert(rs_json_as_bool(rs_json_get(j, "rollback_ok"),
		    &ok) == 0 && ok);
		ck_assert_int_eq(get_int(j, "rollback_positions"),
		    plen + acc + 3);
		ck_assert(get_real(j, "rollback_rel_err") <=
		    RS_VERIFY_ROLLBACK_TOL);
		ck_assert(get_real(j, "rollback_mtp_rel_err") <=
		    RS_VERIFY_ROLLBACK_TOL);
		rs_json_free(j);
		seen++;
	}
	ck_assert_int_eq(seen, records);
	printf("verify: --check-rollback passed for %d (k, j) pairs, k in "
	    "{1, 2, 4, 8}, j in 0..k\n", seen);
	free(out);
	t_ref_free(&ref);
}
END_TEST

/* The library entry point directly, once. */
START_TEST(check_rollback_library)
{
	struct t_ref	 ref;
	struct t_lm	 lm;
	struct rs_rollback_check rc;
	struct rs_err	 err;
	int32_t		 tok[128], n;

	t_ref_load(&ref);
	t_lm_open(&lm, "tiny/model-q4_k_m.gguf", 0, 4, 0, 0);
	n = candidates(&ref, 6, 2, tok);
	ck_assert_msg(rs_verify_check_rollback(lm.e, tok, n,
	    ref.len[ref.greedy_prompt], 5, 0, &rc, &err) == RS_OK, "%s",
	    err.msg);
	ck_assert_int_eq(rc.n_compared, ref.len[ref.greedy_prompt] +
	    rc.accepted + 5);
	ck_assert(rc.rel_err <= RS_VERIFY_ROLLBACK_TOL);
	ck_assert(rc.mtp_rel_err >= 0.0 &&
	    rc.mtp_rel_err <= RS_VERIFY_ROLLBACK_TOL);
	ck_assert_int_eq(rs_verify_check_rollback(lm.e, tok, n, n, 5, 0, &rc,
	    &err), RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_verify_check_rollback(lm.e, tok, n, 3, 5, n + 2,
	    &rc, &err), RS_ERR_LIMIT);
	t_lm_close(&lm);
	t_ref_free(&ref);
}
END_TEST

/* ---- .npy outputs ---- */

/* Every prompt as JSON lines; --logits rows concatenated like the
 * fixture. */
START_TEST(logits_npy)
{
	struct t_ref	 ref;
	struct t_npy	 got, want;
	const char	*dir = t_tmpdir();
	char		 in[1100], npy[1100], c[2600];
	FILE		*fp;

	t_ref_load(&ref);
	snprintf(in, sizeof(in), "%s/prompts.jsonl", dir);
	snprintf(npy, sizeof(npy), "%s/logits.npy", dir);
	fp = fopen(in, "w");
	ck_assert(fp != NULL);
	for (int p = 0; p < ref.n_prompts; p++) {
		char ids[8192] = "";

		append_ids(ids, sizeof(ids), ref.prompt[p], ref.len[p], 1);
		/* the second prompt through "ids", the alternative key */
		fprintf(fp, "{\"%s\":[%s]}\n", p == 1 ? "ids" : "tokens",
		    ids);
	}
	ck_assert(fclose(fp) == 0);
	snprintf(c, sizeof(c), "%s -m %s --logits %s -q < %s >/dev/null",
	    t_bin("rs-verify"), t_fixture("tiny/model-f16.gguf"), npy, in);
	ck_assert_int_eq(t_run(c, NULL), 0);
	t_npy_load(npy, &got);
	t_npy_load(t_fixture("tiny/ref-logits.npy"), &want);
	ck_assert(got.ndim == 2 && got.shape[0] == ref.rows &&
	    got.shape[1] == VOCAB);
	for (int p = 0; p < ref.n_prompts; p++) {
		double rel = rs_verify_rel_err(got.data + ref.row0[p] * VOCAB,
		    want.data + ref.row0[p] * VOCAB, ref.len[p] * VOCAB);

		ck_assert_msg(rel <= T_MAX_REL, "prompt %d: %g", p, rel);
	}
	free(got.data);
	free(want.data);
	t_ref_free(&ref);
}
END_TEST

/* --mtp-logits over the greedy sequence vs llama.cpp (§6.2 pairing). */
START_TEST(mtp_npy)
{
	struct t_ref	 ref;
	struct t_npy	 got, want;
	const char	*dir = t_tmpdir();
	char		 ids[8192] = "", path[1100], idfile[1100], c[2600];
	double		 rel;

	t_ref_load(&ref);
	append_ids(ids, sizeof(ids), ref.seq, ref.n_seq, 0);
	snprintf(idfile, sizeof(idfile), "%s/ids.txt", dir);
	t_write_file(idfile, ids, strlen(ids));
	snprintf(path, sizeof(path), "%s/mtp.npy", dir);
	snprintf(c, sizeof(c), "%s -m %s --tokens-file %s --mtp-logits %s -q "
	    ">/dev/null", t_bin("rs-verify"), t_fixture("tiny/model-f16.gguf"),
	    idfile, path);
	ck_assert_int_eq(t_run(c, NULL), 0);
	t_npy_load(path, &got);
	t_npy_load(t_fixture("tiny/llamacpp-mtp-logits.npy"), &want);
	ck_assert(got.shape[0] == ref.n_seq && got.shape[1] == VOCAB);
	rel = rs_verify_rel_err(got.data, want.data, ref.n_seq * VOCAB);
	ck_assert_msg(rel <= 5e-3, "MTP logits vs llama.cpp: %g", rel);
	free(got.data);
	free(want.data);
	t_ref_free(&ref);
}
END_TEST

/* ---- bad input ---- */

/* DIR holds nothing (no output, no temporary file). */
static void
assert_empty_dir(const char *dir)
{
	DIR		*d = opendir(dir);
	struct dirent	*e;

	ck_assert(d != NULL);
	while ((e = readdir(d)) != NULL)
		ck_assert_msg(strcmp(e->d_name, ".") == 0 ||
		    strcmp(e->d_name, "..") == 0, "left behind: %s/%s", dir,
		    e->d_name);
	closedir(d);
}

static const char *const bad_inputs[] = {
	"--tokens '1 2 2176'",			/* outside the vocabulary */
	"--tokens '1 -1'",
	"--tokens ''",				/* empty */
	"--tokens '1 2 x'",			/* not a number */
	"--tokens '1 2 3 4 5' -c 4",		/* more than the context */
	"--tokens '1 2 3' --prefix 4",		/* prefix past the tokens */
	"--tokens '1 2' --check-rollback",	/* no candidates */
	"--tokens-file /nonexistent/ids",
	"--tokens-file /dev/zero",		/* endless: over the limit */
	"--tokens 1 --backend cuda",
	"< /dev/null",				/* no records */
};

START_TEST(bad_input_exit2)
{
	const char	*dir = t_tmpdir();
	char		 out[1100], c[2600], *so;

	snprintf(out, sizeof(out), "%s/out.npy", dir);
	snprintf(c, sizeof(c), "%s -m %s %s --logits %s --mtp-logits %s.mtp "
	    "2>/dev/null", t_bin("rs-verify"), t_fixture("tiny/model-f16.gguf"),
	    bad_inputs[_i], out, out);
	ck_assert_msg(t_run(c, &so) == 2, "not exit 2: %s", bad_inputs[_i]);
	ck_assert_str_eq(so, "");
	free(so);
	assert_empty_dir(dir);
}
END_TEST

/*
 * --logits and --mtp-logits naming one file (by two spellings) is a usage
 * error, not one output silently overwritten by the other.
 */
START_TEST(same_outputs)
{
	const char	*dir = t_tmpdir();
	char		 c[2600], *so;

	snprintf(c, sizeof(c), "%s -m %s --tokens '1 2 3' --logits %s/o.npy "
	    "--mtp-logits %s/./o.npy 2>&1", t_bin("rs-verify"),
	    t_fixture("tiny/model-f16.gguf"), dir, dir);
	ck_assert_int_eq(t_run(c, &so), 2);
	ck_assert_msg(strstr(so, "name the same file") != NULL, "%s", so);
	free(so);
	assert_empty_dir(dir);
}
END_TEST

/*
 * An output that names an input (the model through a link, the tokens
 * file) is a usage error: the logits replaced the file, exit 0.
 */
START_TEST(output_is_input)
{
	const char	*dir = t_tmpdir();
	char		 c[2600], m[1100], tf[1100], *so, *data;
	size_t		 n;

	snprintf(m, sizeof(m), "%s/m.gguf", dir);
	char		 real[PATH_MAX];

	ck_assert_ptr_nonnull(realpath(t_fixture("tiny/model-f16.gguf"),
	    real));
	ck_assert_int_eq(symlink(real, m), 0);
	snprintf(tf, sizeof(tf), "%s/t.txt", dir);
	t_write_file(tf, "1 2 3\n", 6);
	snprintf(c, sizeof(c), "%s -m %s --tokens 1 --logits %s 2>&1",
	    t_bin("rs-verify"), m, t_fixture("tiny/model-f16.gguf"));
	ck_assert_int_eq(t_run(c, &so), 2);
	ck_assert_msg(strstr(so, "--logits names the model file") != NULL,
	    "%s", so);
	free(so);
	snprintf(c, sizeof(c), "%s -m %s --tokens-file %s --mtp-logits "
	    "%s/./t.txt 2>&1", t_bin("rs-verify"), m, tf, dir);
	ck_assert_int_eq(t_run(c, &so), 2);
	ck_assert_msg(strstr(so, "--mtp-logits names the --tokens-file") !=
	    NULL, "%s", so);
	free(so);
	data = t_read_file(tf, &n);
	ck_assert_uint_eq(n, 6);
	ck_assert_int_eq(memcmp(data, "1 2 3\n", 6), 0);
	free(data);
	unlink(m);
	unlink(tf);
}
END_TEST

/*
 * A JSON line over the 256 MiB limit gets an error object in its place
 * and the record after it still runs (getline's running out of memory
 * used to end the input silently, exit 0).
 */
START_TEST(huge_line)
{
	char	 c[2600], *out, *l2;

	snprintf(c, sizeof(c), "(echo '{\"id\":1,\"tokens\":[5,6]}'; head -c "
	    "268435457 /dev/zero; echo; echo '{\"id\":3,\"tokens\":[5,6]}') "
	    "| %s -m %s -q", t_bin("rs-verify"),
	    t_fixture("tiny/model-f16.gguf"));
	ck_assert_int_eq(t_run(c, &out), 1);
	ck_assert((l2 = strchr(out, '\n')) != NULL);
	ck_assert_msg(strstr(l2, "line 2: the line is longer than 268435456 "
	    "bytes") != NULL, "%s", out);
	ck_assert_msg(strstr(l2, "\"id\":3") != NULL, "%s", out);
	free(out);
}
END_TEST

/*
 * An id past 64 bits is copied as its lexeme, a bare number as it came,
 * as rs-tokenize and rs-generate copy it (the record was refused);
 * "tokens" and "ids"
 * together are refused, as rs-generate refuses two inputs.
 */
START_TEST(wide_id_two_inputs)
{
	char	 c[2600], *out;

	snprintf(c, sizeof(c), "printf '%%s\\n' '{\"id\":1e400,\"tokens\":"
	    "[5,6]}' '{\"id\":2,\"tokens\":[5],\"ids\":[5]}' | %s -m %s -q",
	    t_bin("rs-verify"), t_fixture("tiny/model-f16.gguf"));
	ck_assert_int_eq(t_run(c, &out), 1);
	ck_assert_msg(strncmp(out, "{\"id\":1e400,\"n_tokens\":2,", 25) ==
	    0, "%s", out);
	ck_assert_msg(strstr(out, "give only one of \\\"tokens\\\" and") !=
	    NULL, "%s", out);
	free(out);
}
END_TEST

/* A bad JSON line without .npy outputs: an error object in its place,
 * the other records still run, exit 1.  A null prefix is unset. */
START_TEST(bad_record_exit1)
{
	static const char text[] = "{\"id\":\"a\",\"tokens\":[1,2,3]}\n"
	    "{\"id\":\"b\",\"tokens\":[1,99999]}\n"
	    "not json\n"
	    "{\"id\":\"d\",\"tokens\":[4,5],\"prefix\":1}\n"
	    "{\"id\":\"e\",\"tokens\":[4,5,6],\"prefix\":null}\n";
	const char	*dir = t_tmpdir();
	char		 in[1100], c[2600], *out, *l2, *l3, *l4, *l5;
	struct rs_json	*j;

	snprintf(in, sizeof(in), "%s/in.jsonl", dir);
	t_write_file(in, text, strlen(text));
	snprintf(c, sizeof(c), "%s -m %s -q < %s", t_bin("rs-verify"),
	    t_fixture("tiny/model-f16.gguf"), in);
	ck_assert_int_eq(t_run(c, &out), 1);
	ck_assert((l2 = strchr(out, '\n')) != NULL);
	ck_assert((l3 = strchr(l2 + 1, '\n')) != NULL);
	ck_assert((l4 = strchr(l3 + 1, '\n')) != NULL);
	j = parse_line(l2 + 1, (size_t)(l3 - l2 - 1));
	ck_assert(rs_json_get(j, "error") != NULL);
	ck_assert(strstr(l2, "vocabulary") != NULL);
	ck_assert(strstr(l2, "\"id\":\"b\"") != NULL);
	rs_json_free(j);
	j = parse_line(l3 + 1, (size_t)(l4 - l3 - 1));
	ck_assert(rs_json_get(j, "error") != NULL);
	rs_json_free(j);
	ck_assert((l5 = strchr(l4 + 1, '\n')) != NULL);
	j = parse_line(l4 + 1, (size_t)(l5 - l4 - 1));
	ck_assert_int_eq(get_int(j, "n_candidates"), 1);
	rs_json_free(j);
	j = parse_line(l5 + 1, strlen(l5 + 1));
	ck_assert(rs_json_get(j, "error") == NULL);
	ck_assert_int_eq(get_int(j, "prefix"), 3);
	ck_assert_int_eq(get_int(j, "n_candidates"), 0);
	rs_json_free(j);
	free(out);
	/* an id past 32 bits is outside the vocabulary, a prefix past 32
	   bits too long (both were "not an integer") */
	snprintf(c, sizeof(c), "printf '%%s\\n' '{\"tokens\":[1,2147483648]}' "
	    "'{\"tokens\":[1,2],\"prefix\":4294967298}' | %s -m %s -q",
	    t_bin("rs-verify"), t_fixture("tiny/model-f16.gguf"));
	ck_assert_int_eq(t_run(c, &out), 1);
	ck_assert_msg(strstr(out, "token 2147483648 at index 1 is outside the "
	    "vocabulary") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "prefix 4294967298 is longer than any "
	    "record") != NULL, "%s", out);
	free(out);
	/* the same in --tokens, past 64 bits too */
	snprintf(c, sizeof(c), "%s -m %s -q --tokens '1 99999999999999999999' "
	    "2>&1", t_bin("rs-verify"), t_fixture("tiny/model-f16.gguf"));
	ck_assert_int_eq(t_run(c, &out), 2);
	ck_assert_msg(strstr(out, "token 99999999999999999999 at index 1 is "
	    "outside the vocabulary") != NULL, "%s", out);
	free(out);
}
END_TEST

/*
 * On a terminal, loading the model and a long prompt (RS_CLI_LONG_PROMPT
 * tokens) show progress on stderr; not with -q, not into a pipe.
 */
START_TEST(progress)
{
	char	toks[512], c[2048], *out, *list;
	size_t	len = 0;

	list = malloc(1100 * 6);
	ck_assert_ptr_nonnull(list);
	for (int i = 0; i < 1100; i++)
		len += (size_t)sprintf(list + len, "%d ", i % 2000 + 1);
	snprintf(toks, sizeof(toks), "%s/toks", t_tmpdir());
	t_write_file(toks, list, len);
	free(list);
	snprintf(c, sizeof(c), "%s -m %s -t 1 --tokens-file %s >/dev/null",
	    t_bin("rs-verify"), t_fixture("tiny/model-f16.gguf"), toks);
	ck_assert_int_eq(t_run_tty(c, &out), 0);
	ck_assert_msg(strstr(out, "rs-verify: loading the model ...") != NULL &&
	    strstr(out, "rs-verify: prefill:   0%") != NULL, "%s", out);
	free(out);
	snprintf(c, sizeof(c), "%s -m %s -t 1 -q --tokens-file %s >/dev/null",
	    t_bin("rs-verify"), t_fixture("tiny/model-f16.gguf"), toks);
	ck_assert_int_eq(t_run_tty(c, &out), 0);
	ck_assert_msg(strstr(out, "prefill") == NULL, "%s", out);
	free(out);
}
END_TEST

Suite *
verify_suite(void)
{
	Suite	*s = suite_create("verify");
	TCase	*tc;

	tc = tcase_create("command");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, usage);
	tcase_add_test(tc, greedy_accept);
	tcase_add_test(tc, logits_npy);
	tcase_add_test(tc, mtp_npy);
	tcase_add_test(tc, progress);
	suite_add_tcase(s, tc);
	tc = tcase_create("rollback");
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, check_rollback_matrix);
	tcase_add_test(tc, check_rollback_library);
	suite_add_tcase(s, tc);
	tc = tcase_create("bad_input");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, bad_input_exit2, 0,
	    (int)(sizeof(bad_inputs) / sizeof(bad_inputs[0])));
	tcase_add_test(tc, bad_record_exit1);
	tcase_add_test(tc, same_outputs);
	tcase_add_test(tc, output_is_input);
	tcase_add_test(tc, huge_line);
	tcase_add_test(tc, wide_id_two_inputs);
	suite_add_tcase(s, tc);
	return (s);
}
