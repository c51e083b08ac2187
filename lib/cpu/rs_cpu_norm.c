/*
 * rs_cpu_norm.c - the normalisations of qwen35-model.md §4.1 and §4.6
 * step 7, on one vector of N values:
 *
 *   rmsnorm(x, w)     = x · (Σx²/n + ε)^(−1/2) ⊙ w
 *   l2norm(x)         = x / max(‖x‖₂, ε)
 *   gated(x, z, w)    = rmsnorm(x, w) ⊙ silu(z)
 *
 * Σx² is accumulated in double (as llama.cpp does on the CPU), so the
 * scale is exact to f32 rounding whatever N is.  The weights are applied as
 * stored: the GGUF norms already hold 1 + w (§3.5), ssm_norm holds w.
 */
#include "rs_cpu.h"

static double
sum_sq(const float *x, int64_t n)
{
	double	s = 0.0;

	for (int64_t i = 0; i < n; i++)
		s += (double)x[i] * (double)x[i];
	return (s);
}

void
rs_cpu_rmsnorm_ref(const float *x, const float *w, int64_t n, float eps,
    float *y)
{
	float	r = (float)(1.0 / sqrt(sum_sq(x, n) / (double)n + (double)eps));

	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] * r * w[i];
}

void
rs_cpu_l2norm_ref(const float *x, int64_t n, float eps, float *y)
{
	double	norm = sqrt(sum_sq(x, n));
	float	r = (float)(1.0 / (norm > (double)eps ? norm : (double)eps));

	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] * r;
}

void
rs_cpu_gated_rmsnorm_ref(const float *x, const float *z, const float *w,
    int64_t n, float eps, float *y)
{
	float	r = (float)(1.0 / sqrt(sum_sq(x, n) / (double)n + (double)eps));

	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] * r * w[i] * rs_cpu_silu(z[i]);
}
