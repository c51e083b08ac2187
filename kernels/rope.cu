/*
 * rope.cu - IMRoPE, interleaved multi-section rotary embedding with NeoX
 * pairing (qwen35-model.md §4.5), in place on the q or k heads.
 *
 * Pair i < n_rot/2 of a head takes the position component chosen by the
 * sector rule (sector = i mod Σsections; t if sector ≡ 0 (mod 3) and
 * sector < 3·s0, h if ≡ 1 and < 3·s1, w if ≡ 2 and < 3·s2, else e) and
 * rotates (x[i], x[i + n_rot/2]) by θ_i = pos·base^(−2i/n_rot).  Text
 * tokens have components (p, p, p, 0).  θ is computed in double, as the
 * oracle (rs_cpu_rope_angles) does; test: tests/check_cuda.c "rope".
 */
#include "common.cuh"
#include "rs_kernels.h"

struct rope_sections {
	uint32_t s[4];
};

static __global__ void
rope_kernel(float *x, int64_t ldx, int64_t head_stride, int n_rot,
    rope_sections sec, float base, const int32_t *__restrict__ pos0)
{
	int	 t = blockIdx.y, h = blockIdx.x, i = threadIdx.x;
	int	 half = n_rot / 2;
	int	 p = *pos0 + t;
	uint32_t sum = sec.s[0] + sec.s[1] + sec.s[2] + sec.s[3];

	if (i >= half)
		return;
	uint32_t sector = (uint32_t)i % sum;
	int comp = p;		/* t, h and w are p for text; e is 0 */
	if (!((sector % 3 == 0 && sector < 3 * sec.s[0]) ||
	    (sector % 3 == 1 && sector < 3 * sec.s[1]) ||
	    (sector % 3 == 2 && sector < 3 * sec.s[2])))
		comp = 0;
	double theta = (double)comp * pow((double)base,
	    -2.0 * (double)i / (double)n_rot);
	float c = (float)cos(theta), s = (float)sin(theta);
	float *hx = x + (int64_t)t * ldx + (int64_t)h * head_stride;
	float a = hx[i], b = hx[i + half];
	hx[i] = a * c - b * s;
	hx[i + half] = a * s + b * c;
}

extern "C" enum rs_status
rs_k_rope(float *d_x, int64_t ldx, int64_t head_stride, int n_heads,
    int n_tok, int n_rot, const uint32_t sections[4], float base,
    const int32_t *d_pos0, cudaStream_t stream, struct rs_err *err)
{
	rope_sections sec = { { sections[0], sections[1], sections[2],
	    sections[3] } };

	if (n_heads < 1 || n_tok < 1 || n_rot < 2 || n_rot % 2 != 0 ||
	    n_rot > 2048 || sec.s[0] + sec.s[1] + sec.s[2] + sec.s[3] == 0)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "rope: heads %d, tokens %d, n_rot %d", n_heads, n_tok,
		    n_rot));
	dim3 grid((unsigned)n_heads, (unsigned)n_tok);
	int threads = (n_rot / 2 + 31) / 32 * 32;
	rope_kernel<<<grid, threads, 0, stream>>>(d_x, ldx, head_stride, n_rot,
	    sec, base, d_pos0);
	RS_LAUNCH_CHECK(err, "rope");
	return (RS_OK);
}
