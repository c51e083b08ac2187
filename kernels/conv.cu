/*
 * conv.cu - the GDN causal depthwise convolution + SiLU (qwen35-model.md
 * §4.6 step 2, §4.8 "Conv").
 *
 *   seq_c = [state_c (K−1 raw inputs, oldest first), x_0[c], …, x_{T−1}[c]]
 *   u_t[c] = silu(Σ_{τ<K} seq_c[t+τ]·w[c][τ])         (tap K−1: current)
 *   state_c ← last K−1 entries of seq_c               (raw, not convolved)
 *
 * One thread per channel walks the T tokens keeping the window in
 * registers; K ≤ 8.  Optional snapshots write the state after each token
 * t ≥ snap_from (rollback of rejected drafts, §6.5).  Oracle:
 * rs_cpu_conv_ref; test: tests/check_cuda.c "conv".  27B: 10240 channels ×
 * (K + 2·T) floats per layer, a few hundred KB.
 */
#include "common.cuh"
#include "rs_kernels.h"

#define CONV_MAX_K	8

static __global__ void
conv_kernel(float *state, const float *__restrict__ w,
    const float *__restrict__ x, int64_t ldx, int64_t n_ch, int k, int n_tok,
    float *__restrict__ u, float *snap, int64_t snap_stride, int snap_from)
{
	int64_t	c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	float	win[CONV_MAX_K], wc[CONV_MAX_K];

	if (c >= n_ch)
		return;
	for (int i = 0; i < k; i++)
		wc[i] = w[c * k + i];
	for (int i = 0; i < k - 1; i++)
		win[i] = state[c * (k - 1) + i];
	for (int t = 0; t < n_tok; t++) {
		win[k - 1] = x[t * ldx + c];
		float acc = 0.0f;
		for (int i = 0; i < k; i++)
			acc += win[i] * wc[i];
		u[t * n_ch + c] = silu_f(acc);
		for (int i = 0; i < k - 1; i++)
			win[i] = win[i + 1];
		if (snap != NULL && t >= snap_from)
			for (int i = 0; i < k - 1; i++)
				snap[(t - snap_from) * snap_stride +
				    c * (k - 1) + i] = win[i];
	}
	for (int i = 0; i < k - 1; i++)
		state[c * (k - 1) + i] = win[i];
}

extern "C" enum rs_status
rs_k_conv(float *d_state, const float *d_w, const float *d_x, int64_t ldx,
    int64_t n_ch, int k, int n_tok, float *d_u, float *d_snap,
    int64_t snap_stride, int snap_from, cudaStream_t stream,
    struct rs_err *err)
{
	if (k < 2 || k > CONV_MAX_K || n_ch < 1 || n_tok < 1)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "conv: kernel %d (2..%d), %lld channels, %d tokens", k,
		    CONV_MAX_K, (long long)n_ch, n_tok));
	conv_kernel<<<(unsigned)((n_ch + 127) / 128), 128, 0, stream>>>(d_state,
	    d_w, d_x, ldx, n_ch, k, n_tok, d_u, d_snap, snap_stride, snap_from);
	RS_LAUNCH_CHECK(err, "conv");
	return (RS_OK);
}
