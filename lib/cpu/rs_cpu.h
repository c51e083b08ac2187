/*
 * rs_cpu.h - the CPU operators of the qwen35 forward pass (qwen35-model.md
 * §4), one file per op (rs_cpu_<op>.c, beside this header).  The forward
 * pass that strings them together is rs_cpu_forward.c (lib/engine/), whose
 * CUDA twin is kernels/cuda_forward.cu.
 *
 * Every op has a literal scalar oracle rs_cpu_<op>_ref that transcribes the
 * spec's formula; where the engine uses a faster version (threaded matmul,
 * fused delta rule, streaming attention) it sits next to its oracle and
 * tests/check_cpu.c checks one against the other.  Cheap ops (norms, RoPE,
 * conv) have only the oracle, which the engine calls directly.
 *
 * Conventions: activations are f32, row-major, one row per token
 * ("(n_tok, n)").  Reductions that set a scale (RMS, L2) accumulate in
 * double; dot products accumulate in f32 in the fast paths and in double in
 * the oracles.  Nothing here allocates, fails or keeps state: buffers and
 * scratch are the caller's, and the functions are thread-safe as long as
 * their outputs do not overlap.
 */
#ifndef RS_CPU_H
#define RS_CPU_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "rs_gguf.h"
#include "rs_pool.h"
#include "rs_types.h"

/* ---- scalar activations (§4.1) ---- */

static inline float
rs_cpu_sigmoid(float x)
{
	return (1.0f / (1.0f + expf(-x)));
}

static inline float
rs_cpu_silu(float x)
{
	return (x / (1.0f + expf(-x)));
}

/* ln(1 + e^x), the identity above 20 as in llama.cpp (§8.16). */
static inline float
rs_cpu_softplus(float x)
{
	return (x > 20.0f ? x : log1pf(expf(x)));
}

/* ---- row decoding (rs_cpu_dequant.c, §7) ---- */

/*
 * The decoder for rows of TYPE: a vectorised one for f16, q4_0, q8_0, q4_k,
 * q5_k and q6_k, whose output is bit-identical to the rs_types.c oracle,
 * else the oracle itself; NULL for a type that cannot hold weights.
 */
rs_to_float_fn	rs_cpu_row_decoder(int type);

/* ---- matmul (rs_cpu_matmul.c): y = W·x per token ---- */

/*
 * One product of a batch: W is a GGUF weight {n_in, n_out} of any type
 * with a decoder (rs_types.h), X is (n_tok, n_in) and row t of Y (stride
 * LDY floats) receives y[t][o] = Σ_i W[o][i]·x[t][i] for o < n_out.
 */
struct rs_cpu_mm {
	const struct rs_gguf_tensor *w;
	const float	*x;
	float		*y;
	int64_t		 ldy;
};

/* Rows decoded at once by one thread of rs_cpu_matmul. */
#define RS_CPU_MM_ROWS	4

/*
 * Oracle: row by row, decode W[o] with rs_dequant_row into ROW (n_in
 * floats) and take double-precision dot products.  Single-threaded.
 */
void		rs_cpu_matmul_ref(const struct rs_cpu_mm *mm, int64_t n_tok,
		    float *row);

/* Floats of scratch rs_cpu_matmul needs for inputs up to MAX_N_IN wide. */
size_t		rs_cpu_matmul_scratch(int64_t max_n_in, int nth);

/*
 * The N_JOBS (1..8) products of JOBS on POOL in one run.  Rows are cut into
 * blocks that the threads claim; a thread decodes RS_CPU_MM_ROWS rows at a
 * time into its part of SCRATCH (rs_cpu_matmul_scratch) and uses them for
 * all N_TOK tokens, so a quantized matrix is decoded once per call.
 * y[t][o] does not depend on N_TOK, the thread count or the row split (one
 * fixed f32 summation order per dot product), which makes a batched
 * forward pass equal token-by-token decoding bit for bit.
 */
void		rs_cpu_matmul(struct rs_pool *pool,
		    const struct rs_cpu_mm *jobs, int n_jobs, int64_t n_tok,
		    float *scratch);

/* ---- norms (rs_cpu_norm.c, §4.1) ---- */

/* y = x / sqrt(mean(x²) + eps) ⊙ w (W used as stored: +1 already in). */
void		rs_cpu_rmsnorm_ref(const float *x, const float *w, int64_t n,
		    float eps, float *y);

/* y = x / max(‖x‖₂, eps): llama.cpp's clamp, not HF's rsqrt(Σx² + eps). */
void		rs_cpu_l2norm_ref(const float *x, int64_t n, float eps,
		    float *y);

/* GDN output (§4.6 step 7): y = rmsnorm(x, w) ⊙ silu(z). */
void		rs_cpu_gated_rmsnorm_ref(const float *x, const float *z,
		    const float *w, int64_t n, float eps, float *y);

/* ---- RoPE (rs_cpu_rope.c, §4.5) ---- */

/*
 * Angles of the N_ROT/2 rotated pairs for a token whose IMRoPE position
 * components are POS4 = (t, h, w, e) (text: (p, p, p, 0)): pair i takes
 * the component chosen by the sector rule over SECTIONS and
 * θ_i = pos · base^(−2i/n_rot).  Writes cos θ_i and sin θ_i (computed in
 * double, stored as f32).
 */
void		rs_cpu_rope_angles(const int32_t pos4[4],
		    const uint32_t sections[4], int n_rot, float base,
		    float *cos_out, float *sin_out);

/*
 * Rotate the NeoX pairs (x[i], x[i + n_rot/2]) of one head by the angles
 * from rs_cpu_rope_angles; dims n_rot.. are untouched.
 */
void		rs_cpu_rope_ref(float *x, int n_rot, const float *cos_in,
		    const float *sin_in);

/* ---- causal depthwise conv (rs_cpu_conv.c, §4.6 step 2) ---- */

/*
 * For each of N_CH channels, over the sequence [state, x_0 .. x_{T−1}]
 * (T = N_TOK): u[t][c] = silu(Σ_τ seq[t+τ]·w[c][τ]), τ < K, tap K−1 on the
 * current token.  W is (n_ch, K) (the GGUF {K, n_ch} tensor), STATE is
 * (n_ch, K−1) raw inputs, oldest first, and is replaced by the last K−1
 * entries of the sequence.  X and U are (n_tok, n_ch).
 */
void		rs_cpu_conv_ref(float *state, const float *w, const float *x,
		    int64_t n_tok, int64_t n_ch, int k, float *u);

/*
 * The conv state as it would be right after token T of that call, written
 * to OUT (n_ch, K−1) without changing STATE (rollback snapshots, §6.5).
 */
void		rs_cpu_conv_state_at(const float *state, const float *x,
		    int64_t n_ch, int k, int64_t t, float *out);

/* ---- gated delta rule (rs_cpu_deltanet.c, §4.6 step 6) ---- */

/*
 * One token of one value head.  S is (dk, dv), S[i][j] with i the key
 * index; q and k are L2-normalised, G = g (≤ 0, decay e^g), BETA = β.
 *   S ← e^g·S;  δ = β(v − Sᵀk);  S ← S + k δᵀ;  o = SCALE · Sᵀq
 * The oracle runs the four steps literally (double dot products); the fast
 * version fuses them into two passes over S with f32 sums.
 */
void		rs_cpu_deltanet_ref(float *s, const float *q, const float *k,
		    const float *v, float g, float beta, int dk, int dv,
		    float scale, float *o);
void		rs_cpu_deltanet(float *s, const float *q, const float *k,
		    const float *v, float g, float beta, int dk, int dv,
		    float scale, float *o);

/* ---- attention of one query head (rs_cpu_attn.c, §4.4) ---- */

/*
 * o = Σ_s α_s·V[s], α = softmax_s(SCALE·q·K[s]) over the N cached rows
 * s < N; row s of K (D floats) starts at s·LDK and of V (DV floats) at
 * s·LDV.
 * The oracle materialises the scores in SCORES (N floats) and subtracts the
 * max before exponentiating; the fast version streams once over the rows
 * with a running max and rescaled sum (online softmax), so it needs no
 * buffer of context length.
 */
void		rs_cpu_attn_ref(const float *q, const float *k, int64_t ldk,
		    const float *v, int64_t ldv, int64_t n, int d, int dv,
		    float scale, float *o, float *scores);
void		rs_cpu_attn(const float *q, const float *k, int64_t ldk,
		    const float *v, int64_t ldv, int64_t n, int d, int dv,
		    float scale, float *o);

#endif /* RS_CPU_H */
