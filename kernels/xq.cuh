/*
 * xq.cuh - one 32-value block into the 16-bit activation format of
 * rs_xq.h, by the warp that holds it (one value per lane).  Shared by
 * the conversion kernel (xq.cu) and the kernels that produce a matvec's
 * input and convert it on the way out (RMSNorm, SwiGLU): the same f32
 * operations as rs_xq_quantize, so the bytes match the CPU oracle exactly.
 */
#ifndef RS_XQ_CUH
#define RS_XQ_CUH

#include <math.h>

#include "common.cuh"

extern "C" {
#include "rs_xq.h"
}

/*
 * Lane LANE's value XI of block B of column T of the batch XQ (NB columns
 * of N values, block-major if BM: rs_xq.h); every lane of the warp calls
 * it with its own value.
 */
static __device__ __forceinline__ void
xq_store(float xi, int lane, uint8_t *xq, int64_t n, int64_t nb, int bm,
    int64_t t, int64_t b)
{
	const int	 finite = __all_sync(0xffffffffu, isfinite(xi));
	const float	 amax = warp_max(fabsf(xi));
	const int	 zero = !finite || amax < RS_XQ_MIN_AMAX;
	const float	 inv = (float)RS_XQ_VMAX / amax;
	const float	 s = !finite ? NAN : zero ? 0.0f : amax /
	    (float)RS_XQ_VMAX;
	const int	 v = zero ? 0 : __float2int_rn(xi * inv);

	const int	 hi = (v + 128) >> 8;

	xq[RS_XQ_HI_AT(n, nb, bm, t, b) + lane] = (uint8_t)(int8_t)hi;
	xq[RS_XQ_LO_AT(n, nb, bm, t, b) + lane] = (uint8_t)(int8_t)(v - 256 *
	    hi);
	/* the exact integer sum of the block, scaled once */
	int sum = v;
	for (int o = RS_WARP / 2; o > 0; o >>= 1)
		sum += __shfl_xor_sync(0xffffffffu, sum, o);
	if (lane == 0) {
		float2 *meta = (float2 *)(xq + RS_XQ_META_AT(n, nb, bm, t, b));
		*meta = make_float2(s, s * (float)sum);
	}
}

#endif /* RS_XQ_CUH */
