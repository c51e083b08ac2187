/*
 * check_scan.c - non-finite values in tensor data: every fixture is clean,
 * a NaN planted in an F32 tensor, an F16 tensor or a quantized block's
 * scale is found (rs_scan.h) and fails rs-inspect --check; and non-finite
 * logits are an error in rs-verify and rs-generate, not token 0 with null
 * log-probabilities (issue #15).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_gguf.h"
#include "rs_scan.h"
#include "rs_types.h"
#include "t_util.h"

static const char *const clean[] = {
	"tiny/model-f16.gguf", "tiny/model-q4_0.gguf", "tiny/model-q4_k_m.gguf",
	"tiny/model-q5_k_m.gguf", "tiny/model-q6_k.gguf", "tiny/model-q8_0.gguf"
};

START_TEST(fixtures_clean)
{
	struct rs_gguf	*g;
	struct rs_err	 err = { 0 };

	ck_assert_int_eq(rs_gguf_open(&g, t_fixture(clean[_i]), &err), RS_OK);
	for (int64_t i = 0; i < rs_gguf_n_tensors(g); i++)
		ck_assert_msg(rs_scan_tensor(rs_gguf_tensor(g, i), &err) ==
		    RS_OK, "%s: %s", clean[_i], err.msg);
	rs_gguf_close(g);
}
END_TEST

/* Hand-made tensors: each float format, both signs of infinity. */
START_TEST(values)
{
	float		 f[4] = { 1, 2, 3, 4 };
	uint16_t	 h[4] = { 0x3c00, 0x3c00, 0x3c00, 0x3c00 };
	struct rs_gguf_tensor t = { .name = "t", .n_dims = 1, .ne = { 4, 1,
	    1, 1 }, .type = RS_TYPE_F32, .nbytes = 16, .data = f };
	struct rs_err	 err = { 0 };

	ck_assert_int_eq(rs_scan_tensor(&t, &err), RS_OK);
	f[3] = -INFINITY;
	ck_assert_int_eq(rs_scan_tensor(&t, &err), RS_ERR_FORMAT);
	ck_assert_str_eq(err.msg, "tensor 't': element 3 is -inf");
	t.type = RS_TYPE_F16;
	t.nbytes = 8;
	t.data = h;
	ck_assert_int_eq(rs_scan_tensor(&t, &err), RS_OK);
	h[2] = 0x7c00;
	ck_assert_int_eq(rs_scan_tensor(&t, &err), RS_ERR_FORMAT);
	ck_assert_str_eq(err.msg, "tensor 't': element 2 is inf");
	t.type = RS_TYPE_BF16;
	h[2] = 0x3f80;
	ck_assert_int_eq(rs_scan_tensor(&t, &err), RS_OK);
	h[1] = 0xffc0;
	ck_assert_int_eq(rs_scan_tensor(&t, &err), RS_ERR_FORMAT);
	ck_assert_str_eq(err.msg, "tensor 't': element 1 is nan");
}
END_TEST

/*
 * rs_scan_f32: lengths around its runs of 64 values and the tail after
 * them, read from an odd address; every kind of non-finite value planted
 * at each position is found there, the first of two wins, and finite
 * extremes (±FLT_MAX, the smallest subnormal, -0) are no hit.
 */
START_TEST(f32_first)
{
	static const uint32_t bad[] = { 0x7f800000u, 0xff800000u,
	    0x7fc00000u, 0x7f800001u, 0xffffffffu };
	static const uint32_t fine[] = { 0x7f7fffffu, 0xff7fffffu,
	    0x00000001u, 0x80000000u, 0x3f800000u, 0x00800000u };
	enum { MAXN = 200 };
	static uint8_t	 buf[1 + 4 * MAXN];
	uint8_t		*x = buf + 1;

	for (int64_t n = 0; n <= MAXN; n++) {
		for (int64_t i = 0; i < n; i++)
			memcpy(x + 4 * i, &fine[i % 6], 4);
		ck_assert_int_eq(rs_scan_f32(x, n), -1);
		for (int64_t at = 0; at < n; at++)
			for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]);
			    k++) {
				memcpy(x + 4 * at, &bad[k], 4);
				ck_assert_int_eq(rs_scan_f32(x, n), at);
				if (at + 1 < n) {	/* a later one too */
					memcpy(x + 4 * (n - 1), &bad[0], 4);
					ck_assert_int_eq(rs_scan_f32(x, n), at);
					memcpy(x + 4 * (n - 1),
					    &fine[(n - 1) % 6], 4);
				}
				memcpy(x + 4 * at, &fine[at % 6], 4);
			}
	}
}
END_TEST

/* A NaN planted in each kind of tensor: (fixture, tensor, message part) */
static const char *const planted[][3] = {
	{ "tiny/model-f16.gguf", "output_norm.weight", "element 0 is nan" },
	{ "tiny/model-f16.gguf", "token_embd.weight", "element 0 is nan" },
	{ "tiny/model-q8_0.gguf", "blk.0.attn_qkv.weight",
	    "block 0 has a nan scale (d)" },
	{ "tiny/model-q4_k_m.gguf", "token_embd.weight",
	    "block 0 has a nan scale (d)" },
};

START_TEST(inspect_check_nan)
{
	const char	*path = t_nan_copy(planted[_i][0], planted[_i][1]);
	char		 c[1024], *out;

	snprintf(c, sizeof(c), "%s --check '%s' 2>&1", t_bin("rs-inspect"),
	    path);
	ck_assert_int_eq(t_run(c, &out), 1);
	ck_assert_msg(strstr(out, planted[_i][1]) != NULL &&
	    strstr(out, planted[_i][2]) != NULL, "%s", out);
	free(out);
}
END_TEST

/* On a terminal, --check shows how far it got; elsewhere it is quiet. */
START_TEST(inspect_check_progress)
{
	char	c[1024], *out;

	snprintf(c, sizeof(c), "%s --check %s", t_bin("rs-inspect"),
	    t_fixture("tiny/model-f16.gguf"));
	ck_assert_int_eq(t_run_tty(c, &out), 0);
	ck_assert_msg(strstr(out, "100%") != NULL, "%s", out);
	free(out);
	snprintf(c, sizeof(c), "%s --check %s 2>&1", t_bin("rs-inspect"),
	    t_fixture("tiny/model-f16.gguf"));
	ck_assert_int_eq(t_run(c, &out), 0);
	ck_assert_str_eq(out, "");
	free(out);
}
END_TEST

START_TEST(verify_nan)
{
	const char	*path = t_nan_copy("tiny/model-f16.gguf",
	    "output_norm.weight");
	char		 c[1024], *out;

	snprintf(c, sizeof(c), "%s -m '%s' --tokens 1,2 2>&1",
	    t_bin("rs-verify"), path);
	ck_assert_int_eq(t_run(c, &out), 2);
	ck_assert_msg(strstr(out, "non-finite logit") != NULL, "%s", out);
	free(out);
}
END_TEST

START_TEST(generate_nan)
{
	const char	*path = t_nan_copy("tiny/model-f16.gguf",
	    "output_norm.weight");
	char		 c[1024], *out;

	snprintf(c, sizeof(c), "echo '{\"prompt\":\"hi\",\"max_tokens\":2}' | "
	    "%s -m '%s' -q", t_bin("rs-generate"), path);
	ck_assert_int_eq(t_run(c, &out), 1);
	ck_assert_msg(strstr(out, "\"error\"") != NULL &&
	    strstr(out, "non-finite logit") != NULL, "%s", out);
	free(out);
}
END_TEST

Suite *
scan_suite(void)
{
	Suite	*s = suite_create("scan");
	TCase	*tc = tcase_create("values");
	TCase	*cmd = tcase_create("commands");

	tcase_add_loop_test(tc, fixtures_clean, 0,
	    sizeof(clean) / sizeof(clean[0]));
	tcase_add_test(tc, values);
	tcase_add_test(tc, f32_first);
	suite_add_tcase(s, tc);
	tcase_set_timeout(cmd, 60);
	tcase_add_loop_test(cmd, inspect_check_nan, 0,
	    sizeof(planted) / sizeof(planted[0]));
	tcase_add_test(cmd, inspect_check_progress);
	tcase_add_test(cmd, verify_nan);
	tcase_add_test(cmd, generate_nan);
	suite_add_tcase(s, cmd);
	return (s);
}
