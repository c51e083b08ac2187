/*
 * check_gguf.c - the GGUF reader against the fixture files and against
 * damaged copies of them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_gguf.h"
#include "rs_types.h"
#include "t_util.h"

START_TEST(header_tiny)
{
	struct rs_gguf	*g = NULL;
	struct rs_err	 err = { 0 };
	struct rs_gguf_str s;
	uint32_t	 v = 0;

	ck_assert_int_eq(rs_gguf_open(&g, t_fixture("tiny/model-q4_k_m.gguf"),
	    &err), RS_OK);
	ck_assert_uint_eq(rs_gguf_version(g), 3);
	ck_assert_int_eq(rs_gguf_n_tensors(g), 71);
	ck_assert_int_eq(rs_gguf_n_kv(g), 33);
	ck_assert_int_eq(rs_gguf_get_str(g, "general.architecture", &s, &err),
	    RS_OK);
	ck_assert(s.len == 6 && memcmp(s.ptr, "qwen35", 6) == 0);
	ck_assert_int_eq(rs_gguf_get_u32(g, "qwen35.block_count", &v, &err),
	    RS_OK);
	ck_assert_uint_eq(v, 5);
	const struct rs_gguf_kv *toks = rs_gguf_find_kv(g,
	    "tokenizer.ggml.tokens");
	ck_assert(toks != NULL && toks->arr_type == RS_GGUF_STRING);
	ck_assert_uint_eq(toks->arr_len, 2176);
	ck_assert(toks->strs[0].len == 1 && toks->strs[0].ptr[0] == '!');
	rs_gguf_close(g);
}
END_TEST

START_TEST(tensors_tiny)
{
	struct rs_gguf	*g = NULL;
	struct rs_err	 err = { 0 };
	int		 count[RS_TYPE_COUNT] = { 0 };

	ck_assert_int_eq(rs_gguf_open(&g, t_fixture("tiny/model-q4_k_m.gguf"),
	    &err), RS_OK);
	for (int64_t i = 0; i < rs_gguf_n_tensors(g); i++)
		count[rs_gguf_tensor(g, i)->type]++;
	/* the numbers: 36 Q4_K, 5 Q6_K, 30 F32 */
	ck_assert_int_eq(count[RS_TYPE_Q4_K], 36);
	ck_assert_int_eq(count[RS_TYPE_Q6_K], 5);
	ck_assert_int_eq(count[RS_TYPE_F32], 30);
	const struct rs_gguf_tensor *t = rs_gguf_find_tensor(g,
	    "blk.0.attn_qkv.weight");
	ck_assert(t != NULL);
	ck_assert_int_eq(t->ne[0], 256);
	ck_assert_int_eq(t->ne[1], 1280);
	ck_assert_uint_eq(t->nbytes, 1280 * 144);
	ck_assert_uint_eq(t->offset, 882944);
	rs_gguf_close(g);
}
END_TEST

Suite *
gguf_suite(void)
{
	Suite	*s = suite_create("gguf");
	TCase	*tc = tcase_create("header");

	tcase_add_test(tc, header_tiny);
	tcase_add_test(tc, tensors_tiny);
	suite_add_tcase(s, tc);
	return (s);
}
