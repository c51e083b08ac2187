/*
 * check_tile.c - the GPU's tiled layout of Q4_K / Q5_K / Q6_K (rs_tile.h):
 * every byte of a tile has exactly one source, rows come back whole,
 * padding rows are zeros, and a few offsets worked out by hand from the
 * header's table.  check_cuda.c runs the kernels on packed tiles against
 * the CPU oracle on the GGUF rows.
 */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_tile.h"

static const int types[] = { RS_TYPE_Q4_K, RS_TYPE_Q5_K, RS_TYPE_Q6_K };

/* Each 2-byte piece of each of the 16 rows' blocks lands on its own place. */
START_TEST(bijective)
{
	const int type = types[_i];
	const int bb = rs_tile_block_bytes(type), tb = RS_TILE_ROWS * bb;
	unsigned char *seen = calloc((size_t)tb, 1);

	ck_assert_ptr_nonnull(seen);
	for (int i = 0; i < RS_TILE_ROWS; i++)
		for (int o = 0; o < bb; o += 2) {
			const int at = rs_tile_off(type, i, o);
			ck_assert_int_ge(at, 0);
			ck_assert_int_lt(at + 1, tb);
			/* the piece's two bytes stay together */
			ck_assert_int_eq(rs_tile_off(type, i, o + 1), at + 1);
			ck_assert_int_eq(seen[at] | seen[at + 1], 0);
			seen[at] = seen[at + 1] = 1;
		}
	for (int k = 0; k < tb; k++)
		ck_assert_int_eq(seen[k], 1);
	free(seen);
}
END_TEST

/* The table of rs_tile.h, entry by entry, at hand-picked bytes. */
START_TEST(by_hand)
{
	/* Q4_K row 9 (g 1, h 1): head byte 3; qs byte 32·2 + 8·3 + 5 */
	ck_assert_int_eq(rs_tile_off(RS_TYPE_Q4_K, 9, 3), 16 * 9 + 3);
	ck_assert_int_eq(rs_tile_off(RS_TYPE_Q4_K, 9, 16 + 93),
	    256 + 512 * 2 + 16 * (8 * 3 + 1) + 8 + 5);
	/* Q5_K row 2: qh byte 13 (t 1); qs byte 7 of chunk 0 */
	ck_assert_int_eq(rs_tile_off(RS_TYPE_Q5_K, 2, 16 + 13),
	    256 + 16 * (8 * 1 + 2) + 5);
	ck_assert_int_eq(rs_tile_off(RS_TYPE_Q5_K, 2, 48 + 7),
	    768 + 16 * 2 + 7);
	/* Q6_K row 15 (g 7, h 1): ql byte 32·3 + 16 + 4·2 + 1; qh byte
	   32 + 6 (t 1); scale 5; d's second byte */
	ck_assert_int_eq(rs_tile_off(RS_TYPE_Q6_K, 15, 96 + 16 + 9),
	    288 + 512 * 3 + 16 * (8 * 2 + 7) + 8 + 4 + 1);
	ck_assert_int_eq(rs_tile_off(RS_TYPE_Q6_K, 15, 128 + 38),
	    2336 + 512 + 16 * (8 * 1 + 7) + 8 + 2);
	ck_assert_int_eq(rs_tile_off(RS_TYPE_Q6_K, 15, 192 + 5), 16 * 15 + 5);
	ck_assert_int_eq(rs_tile_off(RS_TYPE_Q6_K, 15, 209), 256 + 30 + 1);
}
END_TEST

/* 37 rows (2 whole tile rows and 5 of a third) of 512 values. */
START_TEST(round_trip)
{
	enum { N_IN = 512, N_OUT = 37 };
	const int type = types[_i];
	const size_t rb = (size_t)(N_IN / 256 * rs_tile_block_bytes(type));
	const size_t tbytes = rs_tile_bytes(type, N_IN, N_OUT);
	uint8_t *src = malloc(rb * N_OUT), *t = malloc(tbytes);
	uint8_t *row = malloc(rb), *zero = calloc(rb, 1);
	uint32_t r = 2463534242u;

	ck_assert_ptr_nonnull(src);
	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_nonnull(row);
	ck_assert_ptr_nonnull(zero);
	ck_assert_uint_eq(tbytes, 3 * 2 * 16 * (rb / 2));
	for (size_t k = 0; k < rb * N_OUT; k++) {
		r ^= r << 13;
		r ^= r >> 17;
		r ^= r << 5;
		src[k] = (uint8_t)(r >> 11) | 1;	/* no zero bytes */
	}
	memset(t, 0xA5, tbytes);
	rs_tile_pack(type, N_IN, N_OUT, src, t);
	for (int o = 0; o < 48; o++) {
		rs_tile_row(type, N_IN, t, o, row);
		ck_assert_msg(memcmp(row, o < N_OUT ? src + o * rb : zero,
		    rb) == 0, "row %d", o);
	}
	free(src);
	free(t);
	free(row);
	free(zero);
}
END_TEST

Suite *
tile_suite(void)
{
	Suite	*s = suite_create("tile");
	TCase	*tc = tcase_create("layout");

	tcase_add_loop_test(tc, bijective, 0, 3);
	tcase_add_test(tc, by_hand);
	tcase_add_loop_test(tc, round_trip, 0, 3);
	suite_add_tcase(s, tc);
	return (s);
}
