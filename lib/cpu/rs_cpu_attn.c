/*
 * rs_cpu_attn.c - softmax attention of one query head over N cached
 * positions, qwen35-model.md §4.4:
 *
 *   s_t = scale · q·K[t]      α = softmax_t(s)      o = Σ_t α_t V[t]
 *
 * The max is subtracted before exponentiating so e^x never overflows.  The
 * oracle does it in three literal passes over a score buffer; the fast
 * version streams once (online softmax): it keeps the running max m, the
 * sum l = Σ e^(s−m) and the unnormalised output, and rescales both by
 * e^(m_old − m_new) when the max grows.  f32 throughout; with N up to a
 * few thousand the sums lose well under 1e-6 relative.
 */
#include "rs_cpu.h"

#define DV_MAX	1024	/* rs_model bounds value_length to 1024 */

static float
dotf(const float *a, const float *b, int n)
{
	float	acc = 0.0f;

	for (int i = 0; i < n; i++)
		acc += a[i] * b[i];
	return (acc);
}

void
rs_cpu_attn_ref(const float *q, const float *k, int64_t ldk, const float *v,
    int64_t ldv, int64_t n, int d, int dv, float scale, float *o,
    float *scores)
{
	double	mx = -INFINITY, sum = 0.0;

	for (int64_t t = 0; t < n; t++) {
		double acc = 0.0;

		for (int i = 0; i < d; i++)
			acc += (double)q[i] * (double)k[t * ldk + i];
		scores[t] = (float)(acc * scale);
		if (scores[t] > mx)
			mx = scores[t];
	}
	for (int64_t t = 0; t < n; t++) {
		scores[t] = (float)exp((double)scores[t] - mx);
		sum += scores[t];
	}
	for (int j = 0; j < dv; j++) {
		double acc = 0.0;

		for (int64_t t = 0; t < n; t++)
			acc += (double)scores[t] * (double)v[t * ldv + j];
		o[j] = (float)(acc / sum);
	}
}

void
rs_cpu_attn(const float *q, const float *k, int64_t ldk, const float *v,
    int64_t ldv, int64_t n, int d, int dv, float scale, float *o)
{
	float	acc[DV_MAX];
	float	m = -INFINITY, l = 0.0f;

	for (int j = 0; j < dv; j++)
		acc[j] = 0.0f;
	for (int64_t t = 0; t < n; t++) {
		float s = scale * dotf(q, k + t * ldk, d);
		const float *vt = v + t * ldv;
		float p;

		if (s > m) {
			float corr = expf(m - s);	/* 0 on the first row */

			for (int j = 0; j < dv; j++)
				acc[j] *= corr;
			l *= corr;
			m = s;
		}
		p = expf(s - m);
		l += p;
		for (int j = 0; j < dv; j++)
			acc[j] += p * vt[j];
	}
	for (int j = 0; j < dv; j++)
		o[j] = acc[j] / l;
}
