/*
 * matvec_xq.cu - playground for the integer matvec (kernels/matvec.cu,
 * matvec_xq_kernel): rows per warp (RW) and super-blocks per step (U) on
 * the shapes of a Qwen3.8-27B Q4_K_M token.
 *
 *   make CUDA=1 build/dev/matvec_xq && build/dev/matvec_xq
 *
 * Every variant is first compared with RW = 1, U = 1 (itself checked
 * against the CPU oracle by tests/check_cuda.c); then 20 launches are timed
 * with CUDA events, over matrices larger than the L2.  One JSON line per
 * shape and variant: GB/s of weight bytes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../matvec.cu"

struct shape {
	const char	*name;
	int		 type;
	int64_t		 n_in, n_out;
};

static void
die(const char *what, cudaError_t e)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
		exit(1);
	}
}

static uint64_t rng = 88172645463325252ULL;

static uint32_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return ((uint32_t)(rng >> 16));
}

/* random blocks with finite f16 scales (0.01) */
static void
fill(int type, uint8_t *b, size_t bytes)
{
	const size_t bb = type == RS_TYPE_Q6_K ? 210 : type == RS_TYPE_Q5_K ?
	    176 : 144;
	const size_t at = type == RS_TYPE_Q6_K ? 208 : 0;

	for (size_t i = 0; i < bytes; i++)
		b[i] = (uint8_t)next();
	for (size_t off = 0; off < bytes; off += bb) {
		b[off + at] = 0x1f;	/* 0x211f: 0.0100 */
		b[off + at + 1] = 0x21;
		if (type != RS_TYPE_Q6_K) {
			b[off + 2] = 0x1f;
			b[off + 3] = 0x21;
		}
	}
}

typedef void (*launch_fn)(const uint8_t *, int64_t, int64_t, int64_t,
    const uint8_t *, float *, int64_t);

template <int TYPE, int NT, int RW, int U>
static void
launch(const uint8_t *w, int64_t n_in, int64_t n_out, int64_t rb,
    const uint8_t *xq, float *y, int64_t ldy)
{
	dim3 grid((unsigned)((n_out + MV_WARPS * RW - 1) / (MV_WARPS * RW)));
	matvec_xq_kernel<TYPE, NT, RW, U><<<grid, MV_WARPS * RS_WARP>>>(w,
	    n_in, n_out, rb, xq, y, ldy, 0);
}

struct variant {
	const char	*name;
	int		 nt;
	launch_fn	 fn[3];		/* Q4_K, Q5_K, Q6_K */
};

#define V(nt, rw, u) { "nt" #nt "_rw" #rw "_u" #u, nt, { \
	launch<RS_TYPE_Q4_K, nt, rw, u>, launch<RS_TYPE_Q5_K, nt, rw, u>, \
	launch<RS_TYPE_Q6_K, nt, rw, u> } }

static const struct variant variants[] = {
	V(1, 1, 1), V(1, 1, 2), V(1, 1, 4), V(1, 2, 1), V(1, 2, 2),
	V(1, 2, 4), V(1, 4, 1), V(1, 4, 2), V(1, 4, 4),
	V(4, 1, 1), V(4, 2, 1), V(4, 4, 1), V(16, 1, 1), V(16, 2, 1),
	V(16, 4, 1),
};

static int
type_index(int type)
{
	return (type == RS_TYPE_Q4_K ? 0 : type == RS_TYPE_Q5_K ? 1 : 2);
}

int
main(void)
{
	static const struct shape shapes[] = {
		{ "ffn_up", RS_TYPE_Q4_K, 5120, 17408 },
		{ "ffn_down", RS_TYPE_Q4_K, 17408, 5120 },
		{ "ffn_down_q6", RS_TYPE_Q6_K, 17408, 5120 },
		{ "gdn_qkv", RS_TYPE_Q4_K, 5120, 10240 },
		{ "ssm_out", RS_TYPE_Q4_K, 6144, 5120 },
		{ "attn_o", RS_TYPE_Q5_K, 6144, 5120 },
		{ "output", RS_TYPE_Q6_K, 5120, 248320 },
	};
	const int nt_max = 16, reps = 20;

	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		const struct shape *sh = &shapes[s];
		const int64_t rb = sh->n_in / 256 * (sh->type == RS_TYPE_Q6_K ?
		    210 : sh->type == RS_TYPE_Q5_K ? 176 : 144);
		const size_t wbytes = (size_t)(rb * sh->n_out);
		const int64_t ldq = RS_XQ_COL_BYTES(sh->n_in);
		uint8_t *hw = (uint8_t *)malloc(wbytes);
		uint8_t *hq = (uint8_t *)malloc((size_t)(nt_max * ldq));
		float *hx = (float *)malloc((size_t)sh->n_in * 4);
		float *ref = (float *)malloc((size_t)(nt_max * sh->n_out) * 4);
		float *got = (float *)malloc((size_t)(nt_max * sh->n_out) * 4);
		uint8_t *dw, *dq;
		float *dy;

		fill(sh->type, hw, wbytes);
		for (int t = 0; t < nt_max; t++) {
			for (int64_t i = 0; i < sh->n_in; i++)
				hx[i] = (float)(next() % 20001) / 10000.0f - 1.0f;
			rs_xq_quantize(hx, sh->n_in, hq + t * ldq);
		}
		die("malloc", cudaMalloc(&dw, wbytes));
		die("malloc", cudaMalloc(&dq, (size_t)(nt_max * ldq)));
		die("malloc", cudaMalloc(&dy, (size_t)(nt_max * sh->n_out) * 4));
		die("copy", cudaMemcpy(dw, hw, wbytes, cudaMemcpyHostToDevice));
		die("copy", cudaMemcpy(dq, hq, (size_t)(nt_max * ldq),
		    cudaMemcpyHostToDevice));
		/* the reference: every column alone, RW 1, U 1 */
		for (int t = 0; t < nt_max; t++)
			variants[0].fn[type_index(sh->type)](dw, sh->n_in,
			    sh->n_out, rb, dq + t * ldq, dy + t * sh->n_out,
			    sh->n_out);
		die("ref", cudaMemcpy(ref, dy, (size_t)(nt_max * sh->n_out) * 4,
		    cudaMemcpyDeviceToHost));
		for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]);
		    v++) {
			const struct variant *va = &variants[v];
			launch_fn fn = va->fn[type_index(sh->type)];
			cudaEvent_t a, b;
			float ms;
			double num = 0.0, den = 0.0;

			fn(dw, sh->n_in, sh->n_out, rb, dq, dy, sh->n_out);
			die("run", cudaMemcpy(got, dy, (size_t)(va->nt *
			    sh->n_out) * 4, cudaMemcpyDeviceToHost));
			for (int64_t i = 0; i < va->nt * sh->n_out; i++) {
				num += (got[i] - ref[i]) * (double)(got[i] - ref[i]);
				den += ref[i] * (double)ref[i];
			}
			cudaEventCreate(&a);
			cudaEventCreate(&b);
			cudaEventRecord(a);
			for (int r = 0; r < reps; r++)
				fn(dw, sh->n_in, sh->n_out, rb, dq, dy,
				    sh->n_out);
			cudaEventRecord(b);
			die("time", cudaEventSynchronize(b));
			cudaEventElapsedTime(&ms, a, b);
			ms /= reps;
			printf("{\"shape\":\"%s\",\"variant\":\"%s\",\"us\":%.1f,"
			    "\"GB_s\":%.0f,\"rel_err\":%.2g}\n", sh->name,
			    va->name, ms * 1e3, wbytes / (ms * 1e-3) / 1e9,
			    sqrt(num / den));
		}
		cudaFree(dw);
		cudaFree(dq);
		cudaFree(dy);
		free(hw);
		free(hq);
		free(hx);
		free(ref);
		free(got);
	}
	return (0);
}
