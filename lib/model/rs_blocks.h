/*
 * rs_blocks.h - byte layouts of the quantized blocks (qwen35-model.md §7).
 *
 * Shared by the C library and the CUDA kernels, so it uses only fixed-width
 * integer types.  Halves are stored as raw IEEE binary16 bits (uint16_t) and
 * converted with rs_half.h.  Every sizeof is pinned by a static assertion,
 * in C and in C++ alike: these structs are read straight out of the mmapped
 * file.  This is the one definition of each block's size: the traits table
 * (rs_types.c) and the kernels' qtraits (kernels/quant.cuh) take theirs from
 * sizeof.
 */
#ifndef RS_BLOCKS_H
#define RS_BLOCKS_H

#include <stdint.h>
#ifndef __cplusplus
#include <assert.h>	/* static_assert: a keyword in C++, a macro in C11 */
#endif

#define RS_QK	32		/* elements per legacy block */
#define RS_QK_K	256		/* elements per K-quant super-block */
#define RS_K_SCALE_BYTES 12	/* packed 6-bit scales of Q4_K / Q5_K */

struct rs_block_q4_0 {
	uint16_t	d;
	uint8_t		qs[RS_QK / 2];	/* low nibble: j, high nibble: j+16 */
};

struct rs_block_q4_1 {
	uint16_t	d, m;
	uint8_t		qs[RS_QK / 2];
};

struct rs_block_q5_0 {
	uint16_t	d;
	uint8_t		qh[4];		/* bit j = 5th bit of element j */
	uint8_t		qs[RS_QK / 2];
};

struct rs_block_q5_1 {
	uint16_t	d, m;
	uint8_t		qh[4];
	uint8_t		qs[RS_QK / 2];
};

struct rs_block_q8_0 {
	uint16_t	d;
	int8_t		qs[RS_QK];
};

/* an activation format: no decoder, listed for its size */
struct rs_block_q8_1 {
	uint16_t	d;
	uint16_t	s;		/* d · Σ qs */
	int8_t		qs[RS_QK];
};

struct rs_block_iq4_nl {
	uint16_t	d;
	uint8_t		qs[RS_QK / 2];
};

struct rs_block_q2_k {
	uint8_t		scales[RS_QK_K / 16];	/* low 4 bits scale, high 4 min */
	uint8_t		qs[RS_QK_K / 4];
	uint16_t	d, dmin;
};

struct rs_block_q3_k {
	uint8_t		hmask[RS_QK_K / 8];
	uint8_t		qs[RS_QK_K / 4];
	uint8_t		scales[12];
	uint16_t	d;
};

struct rs_block_q4_k {
	uint16_t	d, dmin;
	uint8_t		scales[RS_K_SCALE_BYTES];
	uint8_t		qs[RS_QK_K / 2];
};

struct rs_block_q5_k {
	uint16_t	d, dmin;
	uint8_t		scales[RS_K_SCALE_BYTES];
	uint8_t		qh[RS_QK_K / 8];
	uint8_t		qs[RS_QK_K / 2];
};

struct rs_block_q6_k {
	uint8_t		ql[RS_QK_K / 2];
	uint8_t		qh[RS_QK_K / 4];
	int8_t		scales[RS_QK_K / 16];
	uint16_t	d;
};

/* an activation format: no decoder, listed for its size */
struct rs_block_q8_k {
	float		d;
	int8_t		qs[RS_QK_K];
	int16_t		bsums[RS_QK_K / 16];	/* Σ qs per 16 */
};

struct rs_block_iq4_xs {
	uint16_t	d;
	uint16_t	scales_h;
	uint8_t		scales_l[RS_QK_K / 64];
	uint8_t		qs[RS_QK_K / 2];
};

static_assert(sizeof(struct rs_block_q4_0) == 18, "q4_0 block size");
static_assert(sizeof(struct rs_block_q4_1) == 20, "q4_1 block size");
static_assert(sizeof(struct rs_block_q5_0) == 22, "q5_0 block size");
static_assert(sizeof(struct rs_block_q5_1) == 24, "q5_1 block size");
static_assert(sizeof(struct rs_block_q8_0) == 34, "q8_0 block size");
static_assert(sizeof(struct rs_block_q8_1) == 36, "q8_1 block size");
static_assert(sizeof(struct rs_block_iq4_nl) == 18, "iq4_nl block size");
static_assert(sizeof(struct rs_block_q2_k) == 84, "q2_k block size");
static_assert(sizeof(struct rs_block_q3_k) == 110, "q3_k block size");
static_assert(sizeof(struct rs_block_q4_k) == 144, "q4_k block size");
static_assert(sizeof(struct rs_block_q5_k) == 176, "q5_k block size");
static_assert(sizeof(struct rs_block_q6_k) == 210, "q6_k block size");
static_assert(sizeof(struct rs_block_q8_k) == 292, "q8_k block size");
static_assert(sizeof(struct rs_block_iq4_xs) == 136, "iq4_xs block size");

/* IQ4_NL / IQ4_XS non-linear 4-bit codebook (§7.3). */
#define RS_IQ4_VALUES { -127, -104, -83, -65, -49, -35, -22, -10, \
	1, 13, 25, 38, 53, 69, 89, 113 }

#endif /* RS_BLOCKS_H */
