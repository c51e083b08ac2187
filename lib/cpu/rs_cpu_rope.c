/*
 * rs_cpu_rope.c - rotary position embedding of qwen35-model.md §4.5
 * (LLAMA_ROPE_TYPE_IMROPE: interleaved multi-section sectors, NeoX pairs).
 *
 * For pair i < n_rot/2 of a head:
 *   sector = i mod (s0 + s1 + s2 + s3)
 *   pos    = t if sector ≡ 0 (mod 3) and sector < 3·s0
 *            h if sector ≡ 1 (mod 3) and sector < 3·s1
 *            w if sector ≡ 2 (mod 3) and sector < 3·s2
 *            e otherwise
 *   θ_i    = pos · base^(−2i/n_rot)
 *   (x[i], x[i + n_rot/2]) ← (x[i]·cos θ − x[i+n_rot/2]·sin θ,
 *                            x[i]·sin θ + x[i+n_rot/2]·cos θ)
 * Text tokens use (t, h, w, e) = (p, p, p, 0), which for the qwen35
 * sections ([11, 11, 10, 0]; tiny [3, 3, 2, 0]) is plain NeoX RoPE on the
 * first n_rot dims.  The angles are formed in double, like the float64
 * reference's inv_freq, and rounded once to f32.
 */
#include "rs_cpu.h"

/* Which of the 4 position components pair I uses (the sector rule). */
static int
rope_component(int i, const uint32_t sec[4])
{
	uint32_t total = sec[0] + sec[1] + sec[2] + sec[3];
	uint32_t sector = total > 0 ? (uint32_t)i % total : 0;

	if (sector % 3 == 0 && sector < 3 * sec[0])
		return (0);
	if (sector % 3 == 1 && sector < 3 * sec[1])
		return (1);
	if (sector % 3 == 2 && sector < 3 * sec[2])
		return (2);
	return (3);
}

void
rs_cpu_rope_angles(const int32_t pos4[4], const uint32_t sections[4],
    int n_rot, float base, float *cos_out, float *sin_out)
{
	for (int i = 0; i < n_rot / 2; i++) {
		double pos = (double)pos4[rope_component(i, sections)];
		double theta = pos * pow((double)base,
		    -2.0 * (double)i / (double)n_rot);

		cos_out[i] = (float)cos(theta);
		sin_out[i] = (float)sin(theta);
	}
}

void
rs_cpu_rope_ref(float *x, int n_rot, const float *cos_in, const float *sin_in)
{
	int	half = n_rot / 2;

	for (int i = 0; i < half; i++) {
		float a = x[i], b = x[i + half];

		x[i] = a * cos_in[i] - b * sin_in[i];
		x[i + half] = a * sin_in[i] + b * cos_in[i];
	}
}
