/*
 * rs_tile.h - the GPU's layout of Q4_K, Q5_K and Q6_K weights: 16-row
 * tiles (kernels/matvec_xq.cuh and matvec_mma.cuh read it; the engine
 * packs every such matrix at upload).
 *
 * Why: a tensor-core product of 2..16 token columns gives each lane (g, t)
 * of a warp rows g and g + 8 of 16, and 8 bytes of each 32-byte chunk of
 * their quants.  In the GGUF layout (rows one after the other) one warp
 * load then touches 8 rows' lines for 256 bytes, and Q6_K's 210-byte
 * blocks are only 2-byte aligned.  Stored as tiles, a lane's bytes for
 * both rows are 16 contiguous bytes and a warp load one 512-byte run:
 * four columns cost 1.02-1.21x one column instead of 1.18-1.71x
 * (docs/perf-log.md, session 11).  The one-column kernel reads the same
 * tiles (the weights live once in device memory): a lane takes a chunk of
 * a pair of rows g, g + 8, and the 8 lanes of one chunk read one 128-byte
 * line per load, hence the slots' order (t-major).
 *
 * A matrix of N_OUT rows of N_IN values (N_IN a multiple of 256) becomes
 * ⌈N_OUT/16⌉ tile rows of N_IN/256 tiles, tile (T, b) holding super-block
 * b of rows 16T .. 16T + 15 (rows past N_OUT are zero bytes: zero
 * scales, zero values), tiles in row-major order, each 16 block sizes
 * long (Q4_K 2,304 bytes, Q5_K 2,816, Q6_K 3,360).  Inside a tile, row
 * i = g + 8h (g = i % 8, h = i / 8) and "slot" L = 8t + g (t = 0..3):
 *
 *   Q4_K  [0, 256)      row i's 16-byte head (d, dmin, scales) at 16i
 *         [256, 2304)   chunk c (qs bytes 32c .. 32c + 31), slot L: 16
 *                       bytes at 256 + 512c + 16L: qs bytes 32c + 8t ..
 *                       32c + 8t + 7 of row g, then the same of row g + 8
 *   Q5_K  the head as Q4_K; [256, 768) qh: slot L at 256 + 16L, qh bytes
 *         8t .. 8t + 7 of row g, then of row g + 8; qs as Q4_K from 768
 *   Q6_K  [0, 256) row i's 16 scale bytes at 16i; [256, 288) its f16 d at
 *         256 + 2i; [288, 2336) ql: chunk c, slot L: 16 bytes at 288 +
 *         512c + 16L: ql bytes 32c + 4t .. + 3 and 32c + 16 + 4t .. + 3
 *         of row g, then the same of row g + 8; [2336, 3360) qh: half hh,
 *         slot L at 2336 + 512hh + 16L: qh bytes 32hh + 4t .. + 3 and
 *         32hh + 16 + 4t .. + 3 of row g, then of row g + 8
 *
 * Every 4-byte-aligned word of a GGUF block (and Q6_K's 2-byte d) stays
 * contiguous in the tile, so a reader may fetch any of them through
 * rs_tile_off.  On the device a tiled matrix is named by its type with
 * RS_TILED set (rs_kernels.h takes both forms).
 */
#ifndef RS_TILE_H
#define RS_TILE_H

#include <stddef.h>
#include <stdint.h>

#include "rs_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __CUDACC__
#define RS_TILE_FN	static __host__ __device__ __forceinline__
#else
#define RS_TILE_FN	static inline
#endif

#define RS_TILE_ROWS	16
#define RS_TILED	0x100	/* or-ed into a type: its tiled form */

/* Whether TYPE (not tiled) has a tiled form. */
RS_TILE_FN int
rs_tile_type(int type)
{
	return (type == RS_TYPE_Q4_K || type == RS_TYPE_Q5_K ||
	    type == RS_TYPE_Q6_K);
}

/* Bytes of one super-block of TYPE (a tile is RS_TILE_ROWS of them). */
RS_TILE_FN int
rs_tile_block_bytes(int type)
{
	return (type == RS_TYPE_Q4_K ? 144 : type == RS_TYPE_Q5_K ? 176 : 210);
}

/*
 * Where byte O (0 .. block bytes − 1) of row I's (0..15) block lies inside
 * its tile of TYPE (a type with a tiled form).
 */
RS_TILE_FN int
rs_tile_off(int type, int i, int o)
{
	const int g = i % 8, h = i / 8;

	if (type == RS_TYPE_Q6_K) {
		if (o >= 208)
			return (256 + 2 * i + (o - 208));
		if (o >= 192)
			return (16 * i + (o - 192));
		const int qh = o >= 128, q = qh ? o - 128 : o;
		const int l = q % 32, t = (l % 16) / 4;
		return ((qh ? 2336 : 288) + 512 * (q / 32) + 16 * (8 * t + g) +
		    8 * h + 4 * (l / 16) + l % 4);
	}
	if (o < 16)
		return (16 * i + o);
	if (type == RS_TYPE_Q5_K && o < 48)
		return (256 + 16 * (8 * ((o - 16) / 8) + g) + 8 * h +
		    (o - 16) % 8);
	const int q = o - (type == RS_TYPE_Q5_K ? 48 : 16);
	const int l = q % 32;
	return ((type == RS_TYPE_Q5_K ? 768 : 256) + 512 * (q / 32) +
	    16 * (8 * (l / 8) + g) + 8 * h + l % 8);
}

/* Bytes of the tiled form of N_OUT rows of N_IN values of TYPE. */
size_t	rs_tile_bytes(int type, int64_t n_in, int64_t n_out);

/*
 * SRC (N_OUT GGUF rows of N_IN values of TYPE, a type with a tiled form,
 * N_IN a multiple of 256) into DST (rs_tile_bytes of it, not overlapping).
 */
void	rs_tile_pack(int type, int64_t n_in, int64_t n_out, const void *src,
	    void *dst);

/* Row R of the tiled SRC back into its GGUF bytes at DST. */
void	rs_tile_row(int type, int64_t n_in, const void *src, int64_t r,
	    void *dst);

#ifdef __cplusplus
}
#endif

#endif /* RS_TILE_H */
