/*
 * rs_cpu_deltanet.c - one token of the gated delta rule for one value head,
 * qwen35-model.md §4.6 step 6.  S is (dk, dv), S[i][j] with i the key
 * index; q and k are L2-normalised; g ≤ 0.
 *
 *   S    ← e^g · S                   decay first
 *   r_j  = Σ_i S[i][j] k_i           read with the decayed state
 *   δ_j  = β (v_j − r_j)
 *   S    ← S + k δᵀ                  rank-1 write
 *   o_j  = scale · Σ_i S[i][j] q_i   read with the updated state
 *
 * The fast version fuses decay+read and write+readout into two passes over
 * S (2·dk·dv loads and stores instead of 4), with f32 sums running along i
 * so the inner loop over j runs 4 lanes of j at a time.  Cost per token and
 * head: ~4·dk·dv flops and two sweeps of the 64 KiB (dk = dv = 128) state.
 */
#include "rs_cpu.h"
#include "rs_cpu_vec.h"

#define DV_MAX	1024	/* rs_model bounds ssm.state_size to 1024 */

void
rs_cpu_deltanet_ref(float *s, const float *q, const float *k, const float *v,
    float g, float beta, int dk, int dv, float scale, float *o)
{
	float	decay = expf(g);
	float	delta[DV_MAX];

	for (int i = 0; i < dk; i++)
		for (int j = 0; j < dv; j++)
			s[i * dv + j] *= decay;
	for (int j = 0; j < dv; j++) {
		double r = 0.0;

		for (int i = 0; i < dk; i++)
			r += (double)s[i * dv + j] * (double)k[i];
		delta[j] = beta * (v[j] - (float)r);
	}
	for (int i = 0; i < dk; i++)
		for (int j = 0; j < dv; j++)
			s[i * dv + j] += k[i] * delta[j];
	for (int j = 0; j < dv; j++) {
		double acc = 0.0;

		for (int i = 0; i < dk; i++)
			acc += (double)s[i * dv + j] * (double)q[i];
		o[j] = scale * (float)acc;
	}
}

/* row[j] *= decay; r[j] += row[j]·ki over J < DV. */
static void
decay_read(float *row, float *r, float decay, float ki, int dv)
{
	rs_v4f	vd = rs_vec_splat(decay), vk = rs_vec_splat(ki);
	int	j;

	for (j = 0; j + RS_VEC <= dv; j += RS_VEC) {
		rs_v4f v = rs_vec_load(row + j) * vd;

		rs_vec_store(row + j, v);
		rs_vec_store(r + j, rs_vec_load(r + j) + v * vk);
	}
	for (; j < dv; j++) {
		row[j] *= decay;
		r[j] += row[j] * ki;
	}
}

/* row[j] += ki·delta[j]; o[j] += row[j]·qi over J < DV. */
static void
write_read(float *row, float *o, const float *delta, float ki, float qi,
    int dv)
{
	rs_v4f	vk = rs_vec_splat(ki), vq = rs_vec_splat(qi);
	int	j;

	for (j = 0; j + RS_VEC <= dv; j += RS_VEC) {
		rs_v4f v = rs_vec_load(row + j) + vk * rs_vec_load(delta + j);

		rs_vec_store(row + j, v);
		rs_vec_store(o + j, rs_vec_load(o + j) + v * vq);
	}
	for (; j < dv; j++) {
		row[j] += ki * delta[j];
		o[j] += row[j] * qi;
	}
}

void
rs_cpu_deltanet(float *s, const float *q, const float *k, const float *v,
    float g, float beta, int dk, int dv, float scale, float *o)
{
	float	decay = expf(g);
	float	r[DV_MAX], delta[DV_MAX];

	for (int j = 0; j < dv; j++) {
		r[j] = 0.0f;
		o[j] = 0.0f;
	}
	/* pass 1: decay and read r = Sᵀk */
	for (int i = 0; i < dk; i++)
		decay_read(s + (int64_t)i * dv, r, decay, k[i], dv);
	for (int j = 0; j < dv; j++)
		delta[j] = beta * (v[j] - r[j]);
	/* pass 2: write k δᵀ and read o = Sᵀq */
	for (int i = 0; i < dk; i++)
		write_read(s + (int64_t)i * dv, o, delta, k[i], q[i], dv);
	for (int j = 0; j < dv; j++)
		o[j] *= scale;
}
