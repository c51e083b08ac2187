/*
 * tile.cu - Q4_K / Q5_K / Q6_K matrices into the GPU's 16-row tiles
 * (rs_tile.h) at upload: host rows go through a device staging buffer a
 * group of tile rows at a time, and a kernel moves each 2-byte piece to
 * its place (rs_tile_off), so that the 27B's 16 GB need no host copy in
 * the new order and the staging stays small.  The bytes equal
 * rs_tile_pack's (test: tests/check_cuda.c "tile").
 */
#include "common.cuh"
#include "quant.cuh"
#include "rs_kernels.h"

#define TILE_THREADS	256

/*
 * Rows R0 .. R0 + N − 1 (R0 a multiple of 16) of a GGUF matrix of NB
 * super-blocks a row, the first of them at SRC, into their tiles of the
 * whole tiled matrix at DST: one thread per 2-byte piece.
 */
template <int T>
static __global__ void __launch_bounds__(TILE_THREADS)
tile_pack_kernel(const uint8_t *__restrict__ src, int64_t nb, int64_t r0,
    int64_t n, uint8_t *__restrict__ dst)
{
	constexpr int	 BB = qtraits<T>::qb;
	const int64_t	 row_bytes = nb * BB;
	const int64_t	 at = 2 * ((int64_t)blockIdx.x * TILE_THREADS +
	    threadIdx.x);

	if (at >= n * row_bytes)
		return;
	const int64_t r = r0 + at / row_bytes, b = at % row_bytes / BB;
	const int o = (int)(at % BB);
	uint8_t *tile = dst + (r / RS_TILE_ROWS * nb + b) * RS_TILE_ROWS * BB;

	*(uint16_t *)(tile + rs_tile_off(T, (int)(r % RS_TILE_ROWS), o)) =
	    *(const uint16_t *)(src + at);
}

struct tile_launch {
	const uint8_t	*src;
	int64_t		 nb, r0, n;
	uint8_t		*dst;
	cudaStream_t	 s;

	template <int T>
	void
	operator()(void) const
	{
		if constexpr (T == RS_TYPE_Q4_K || T == RS_TYPE_Q5_K ||
		    T == RS_TYPE_Q6_K) {
			const int64_t pieces = n * nb * qtraits<T>::qb / 2;
			tile_pack_kernel<T><<<(unsigned)((pieces +
			    TILE_THREADS - 1) / TILE_THREADS), TILE_THREADS,
			    0, s>>>(src, nb, r0, n, dst);
		}
	}
};

extern "C" enum rs_status
rs_k_tile_upload(const void *h_src, int type, int64_t n_in, int64_t n_out,
    void *d_dst, void *d_stage, size_t stage_bytes, cudaStream_t stream,
    struct rs_err *err)
{
	const int64_t	 row_bytes = n_in / 256 * rs_tile_block_bytes(type);
	const int64_t	 group = RS_TILE_ROWS * row_bytes;
	const int64_t	 per = (int64_t)stage_bytes / group * RS_TILE_ROWS;
	const uint8_t	*src = (const uint8_t *)h_src;

	if (!rs_tile_type(type) || n_in <= 0 || n_in % 256 != 0 ||
	    n_out <= 0 || per < RS_TILE_ROWS)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "tile upload: type %d, %lld x %lld, staging %zu bytes",
		    type, (long long)n_out, (long long)n_in, stage_bytes));
	RS_CUDA_TRY(err, cudaMemsetAsync(d_dst, 0, rs_tile_bytes(type, n_in,
	    n_out), stream));
	for (int64_t r0 = 0; r0 < n_out; r0 += per) {
		const int64_t n = n_out - r0 < per ? n_out - r0 : per;
		const tile_launch l = { (const uint8_t *)d_stage, n_in / 256,
		    r0, n, (uint8_t *)d_dst, stream };

		RS_CUDA_TRY(err, cudaMemcpyAsync(d_stage, src + r0 * row_bytes,
		    (size_t)(n * row_bytes), cudaMemcpyHostToDevice, stream));
		(void)dispatch_type(type, l);
		RS_LAUNCH_CHECK(err, "tile upload");
	}
	return (RS_OK);
}
