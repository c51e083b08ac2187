/*
 * rs_cpu_conv.c - the Gated DeltaNet's causal depthwise convolution,
 * qwen35-model.md §4.6 step 2 and §4.8:
 *
 *   seq_c = [state[c][0 .. K−2], x_0[c], …, x_{T−1}[c]]
 *   u_t[c] = silu( Σ_{τ<K} seq_c[t + τ] · w[c][τ] )     (tap K−1 = token t)
 *   state[c] ← last K−1 entries of seq_c               (raw inputs)
 *
 * Taps are used as stored (not flipped) and the state keeps the projection
 * values, not conv outputs (§8.13).  With T < K−1 part of the old state
 * stays in the new one.  Sums are f32 over K ≤ 16 terms.
 */
#include <string.h>

#include "rs_cpu.h"

#define CONV_MAX_K	16	/* rs_model accepts ssm.conv_kernel <= 16 */

void
rs_cpu_conv_ref(float *state, const float *w, const float *x, int64_t n_tok,
    int64_t n_ch, int k, float *u)
{
	float	win[CONV_MAX_K];

	for (int64_t c = 0; c < n_ch; c++) {
		float *st = state + c * (k - 1);
		const float *wc = w + c * k;

		/* win[0 .. K−2] = the K−1 previous inputs, oldest first */
		memcpy(win, st, (size_t)(k - 1) * sizeof(float));
		for (int64_t t = 0; t < n_tok; t++) {
			float acc = 0.0f;

			win[k - 1] = x[t * n_ch + c];
			for (int tau = 0; tau < k; tau++)
				acc += win[tau] * wc[tau];
			u[t * n_ch + c] = rs_cpu_silu(acc);
			memmove(win, win + 1, (size_t)(k - 1) * sizeof(float));
		}
		memcpy(st, win, (size_t)(k - 1) * sizeof(float));
	}
}

void
rs_cpu_conv_state_at(const float *state, const float *x, int64_t n_ch, int k,
    int64_t t, float *out)
{
	for (int64_t c = 0; c < n_ch; c++) {
		for (int j = 0; j < k - 1; j++) {
			/* entry t + 1 + j of seq_c, which holds the
			 * state first and then seq_c[i] = x_{i−(K−1)} */
			int64_t i = t + 1 + j, s = k - 1;

			out[c * s + j] = i < s ? state[c * s + i] :
			    x[(i - s) * n_ch + c];
		}
	}
}
