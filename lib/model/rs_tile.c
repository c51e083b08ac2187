/*
 * rs_tile.c - GGUF rows of Q4_K / Q5_K / Q6_K into the GPU's 16-row tiles
 * and back (the layout: rs_tile.h).
 */
#include <string.h>

#include "rs_tile.h"

size_t
rs_tile_bytes(int type, int64_t n_in, int64_t n_out)
{
	const int64_t tile_rows = (n_out + RS_TILE_ROWS - 1) / RS_TILE_ROWS;

	return ((size_t)(tile_rows * (n_in / 256) * RS_TILE_ROWS *
	    rs_tile_block_bytes(type)));
}

/* One GGUF block SRC of row I (0..15) into its place in TILE. */
static void
put_block(int type, uint8_t *tile, int i, const uint8_t *src)
{
	const int bb = rs_tile_block_bytes(type);

	/* every 4-byte word (2 bytes: Q6_K's d) is contiguous in the tile */
	for (int o = 0; o < bb; o += 2)
		memcpy(tile + rs_tile_off(type, i, o), src + o, 2);
}

void
rs_tile_pack(int type, int64_t n_in, int64_t n_out, const void *src,
    void *dst)
{
	const int	 bb = rs_tile_block_bytes(type);
	const int64_t	 nb = n_in / 256, tb = (int64_t)RS_TILE_ROWS * bb;
	const uint8_t	*s = (const uint8_t *)src;
	uint8_t		*d = (uint8_t *)dst;

	memset(d, 0, rs_tile_bytes(type, n_in, n_out));
	for (int64_t r = 0; r < n_out; r++)
		for (int64_t b = 0; b < nb; b++)
			put_block(type, d + (r / RS_TILE_ROWS * nb + b) * tb,
			    (int)(r % RS_TILE_ROWS), s + (r * nb + b) * bb);
}

void
rs_tile_row(int type, int64_t n_in, const void *src, int64_t r, void *dst)
{
	const int	 bb = rs_tile_block_bytes(type);
	const int64_t	 nb = n_in / 256, tb = (int64_t)RS_TILE_ROWS * bb;
	const int	 i = (int)(r % RS_TILE_ROWS);
	const uint8_t	*s = (const uint8_t *)src;
	uint8_t		*d = (uint8_t *)dst;

	for (int64_t b = 0; b < nb; b++) {
		const uint8_t *tile = s + (r / RS_TILE_ROWS * nb + b) * tb;
		for (int o = 0; o < bb; o += 2)
			memcpy(d + b * bb + o, tile + rs_tile_off(type, i, o), 2);
	}
}
