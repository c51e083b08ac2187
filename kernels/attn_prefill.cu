/*
 * attn_prefill.cu - causal gated attention of a whole prompt chunk on tensor
 * cores (flash attention), the prefill twin of rs_k_attn (qwen35-model.md
 * §4.4, f16 KV cache as in §4.10).
 *
 *   o[t, h] = Σ_{s ≤ p0+t} softmax_s(scale·q[t, h]·K_j[s]) · V_j[s]
 *             ⊙ sigmoid(gate[t, h]),      j = h / (n_head / n_head_kv)
 *
 * for the N_TOK query tokens at positions p0 + t (p0 = params[0]) over the
 * keys 0 .. p0 + t already stored in the caches (n_ctx, n_head_kv·d).
 *
 * Two kernels compute it the same way with the same numerics: the wmma
 * kernel (SM70 and later; Volta's, described first, unchanged) and an
 * mma.sync kernel for code built for SM80 and later (the sm_90 cubin of
 * the default build; attn_prefill_mma.cuh), described after it.  The launcher takes the second
 * when the code the device runs for it was compiled for compute_80 or
 * later, so an sm_75 cubin on an SM80 part and compute_70 PTX that an H200
 * JIT-compiles (make volta) keep the wmma kernel.
 *
 * Tiling (wmma).  A block owns one KV head j and BR = 64 query *rows*,
 * where row r = t·g + i is query head j·g + i (i < g = n_head /
 * n_head_kv) of token t: the g heads of a GQA group share every K/V tile
 * the block loads, so a 27B block holds 64 / 6 ≈ 10.7 tokens × 6 heads.
 * The block walks the keys 0 .. p0 + (last token of its rows) in tiles of
 * BC = 64, each step:
 *   1. K tile (64 × d f16) global → shared, zero past the last key;
 *   2. S = Q·Kᵀ (64 × 64) with wmma m16n16k16, f16 operands, f32 sums;
 *   3. online softmax per row in f32: s·scale, causal mask per (row's
 *      token, key), running max m and sum l, α = e^(m_old − m_new),
 *      P = e^(s − m_new) rounded to f16 (l sums the rounded P, so the
 *      weights the output sees sum to 1); meanwhile the V tile replaces K;
 *   4. O = α·O + P·V with wmma, O (64 × dv f32) in accumulator registers.
 * A wmma accumulator's element layout is opaque, but it is a fixed function
 * of the fragment type and lane: loading a 16 × 16 matrix M[r][c] = r into
 * an accumulator fragment tells each thread the row of each of its
 * elements, which is how step 4 scales O by the α of its row and the end
 * divides by l (no O round trip through shared memory).  The last tile
 * finishes with o = O / l ⊙ sigmoid(gate), staged per warp through shared
 * memory so the gate and the output index are plain.
 *
 * Numerics: Q is rounded to f16 (K, V are f16 already), scores and the
 * softmax are f32, the scale is applied to the f32 score, P is rounded to
 * f16 for P·V, all products accumulate in f32.  Relative L2 error against
 * the double oracle about 3e-4 (Q and P rounding, 2^-11 relative each).
 *
 * Eight warps (256 threads).  Warp w computes S rows 16·(w mod 4) .. +15,
 * keys 32·(w / 4) .. +31 (two fragments sharing each Q fragment), the
 * softmax of rows 8w .. 8w+7 (lane = key, two keys per lane), and O rows
 * 32·(w mod 2) .. +31, columns dv/4·(w / 2) .. +dv/4 (2 × dv/64
 * fragments: 64 registers at dv = 256).  Shared memory, rows padded by 16
 * bytes against bank conflicts, at d = dv = 256: Q 64 × 264 f16 (33 KB),
 * one K-or-V tile 64 × 264 f16 (33 KB), S 64 × 68 f32 (17 KB), P 64 × 72
 * f16 (9 KB), α, m and l (0.75 KB): 95,232 B, under SM70's 96 KB opt-in
 * limit (K and V share a buffer to get there; sm_75's 64 KB limit rejects
 * d = 256 at launch); an H200 SM holds two such blocks (≤ 128 registers
 * per thread).
 *
 * Why group the GQA heads: one block per (query tile, head) would load each
 * K/V tile six times (from L2); grouped, a 64-key tile (64 KB of K + V at
 * d = 256) feeds 64 × 64 × 512 × 2 = 4.2 MFLOP, 64 FLOP per byte from L2.
 * A layer's K/V for a 4,096-token prompt is 16 MB, L2-resident on H200
 * (50 MB); on V100 (6 MB) the blocks of a wave walk the keys in step, so
 * they mostly share what is in L2.  Blocks are issued longest (last rows)
 * first for a short tail.
 *
 * Napkin math, 27B (24 heads, d = 256, 16 attention layers), T-token
 * prompt: Q·Kᵀ and P·V take 2·(T²/2)·256·24 FLOP each, 12,288·T² per
 * layer together, 196,608·T² in all: 3.3 TFLOP at T = 4,096, 211 TFLOP at
 * T = 32,768 (plus < 2% for the masked parts of diagonal tiles).  Per
 * 64-key tile a block moves about 390 KB through shared memory (wmma
 * fragments are loaded from it: Q and K for S, P and V for P·V; the S and
 * P round trips; the K and V stores), 10.7 FLOP per shared byte: at 128
 * B/clk/SM that caps the kernel near 1,370 FLOP/clk/SM, ~340 TFLOP/s on
 * H200 (132 SMs, ~1.9 GHz), ~170 on V100 (80 SMs, 1.53 GHz; above its 125
 * TFLOP/s tensor peak).  Four block barriers per tile, the SIMT softmax
 * and global loads that nothing hides but the other block (no cp.async
 * on SM70) cost about half of that: predicted ~170 TFLOP/s on H200, so
 * ~20 ms of attention for a 4,096-token prompt and ~1.25 s for 32,768 (at
 * 3,000 tok/s those prompts take 1.4 s and 10.9 s: 1.4% and 11% of it);
 * V100, one block of 8 warps per SM, ~55 TFLOP/s: ~60 ms and ~3.8 s.
 * Chunked prompts cost the same FLOPs; a chunk of c tokens fills
 * c·6/64·4 blocks (192 at c = 512: 73% of an H200's 264 slots, one wave;
 * 768 at backend.cu's 2,048: three waves), so long prompts want chunks of
 * 1,024 or more.  kernels/dev/attn_prefill.cu times both.  Measured on the
 * H200: ~150 TFLOP/s, ~42 µs of attention a token at 32,768.
 *
 * SM80 and later (mma.sync, FlashAttention-2's scheme).  mma.sync
 * m16n8k16 (f16 A, B; f32 C) has a documented fragment layout (PTX ISA,
 * "Matrix fragments for mma.m16n8k16"): lane l, gid = l/4, tig = l%4,
 * holds of a 16 × 8 accumulator C rows gid (c0, c1) and gid + 8 (c2, c3),
 * columns 2tig, 2tig+1; of a 16 × 16 A rows gid / gid+8 × columns
 * 2tig, +1 / 2tig+8, +9 in four f16x2 registers; of a 16 × 8 B column gid,
 * rows 2tig, +1 / 2tig+8, +9 in two.  So S, P and O stay in registers
 * with a known row for every element:
 *   - a block owns BR = 128 rows (same r = t·g + i grouping, 21.3 tokens
 *     × 6 heads on the 27B) and 8 warps; warp w owns rows 16w .. 16w+15
 *     and all D columns: S of a 64-key tile is 8 accumulators (32
 *     registers), O is D/8 (128 registers at D = 256);
 *   - Q (f16, converted once) and one K and one V tile (64 keys) sit in
 *     shared memory, rows D + 8 halves apart; A (Q) and B (K) fragments
 *     come from ldmatrix x4, V's B fragments from ldmatrix x4 .trans
 *     (V is key-major, B wants a column per lane);
 *   - the softmax is per row in registers: a row's 64 scores are spread
 *     over the 4 lanes of a quad, so its max takes two xor shuffles; the
 *     sum l stays a per-lane part until the end;
 *   - the C fragments of S's keys 16kk .. +7 and +8 .. +15 are, element
 *     for element, the A fragment of P for keys 16kk .. +15, so
 *     P = 2^(s − m) is rounded to f16 pairs in place (no shared memory);
 *   - O is scaled by α per row (c0, c1 by row gid's, c2, c3 by gid+8's)
 *     and finally by 1/l and the gate, written straight from registers;
 *   - cp.async (16 B, zero-filled past the last key) overlaps the tile
 *     copies with the math: V's copy runs under Q·Kᵀ and the softmax, the
 *     next K's under P·V, with one buffer each and two barriers a tile.
 * Scores are kept in the log2 domain (scale·log2 e folded into one
 * multiply, exp2); the rounding points are the wmma kernel's.
 *
 * Registers and shared memory (ptxas, sm_90, no spills): 254 registers at
 * D = 256 (one block of 8 warps per SM), 190 at 128, 128 at 64 (two
 * blocks); shared memory (128 + 2·64) rows × (D + 8) halves: 135,168 B at
 * D = 256, 69,632 at 128, 36,864 at 64 (SM80's limit is 163 KB, SM90's
 * 227 KB; SM86/89's 99 KB refuse D = 256 and fall back to wmma).
 *
 * Napkin math (mma.sync, H200, D = 256): a 64-key tile is 2,048 mma per
 * block (8 warps × (16 k-steps × 8 for S + 4 × 32 for P·V)), 8.4 MFLOP,
 * and 1,152 ldmatrix x4 (512 B each: per warp 16 Q + 64 K + 64 V), 590 KB
 * of shared-memory reads plus 64 KB of cp.async writes: 13 FLOP per
 * shared byte, ~1,650 FLOP/clk/SM at 128 B/clk, ~430 TFLOP/s at 132 SMs
 * and 1.98 GHz, below mma.sync's own ceiling (~2,500 FLOP/clk/SM on
 * Hopper, about 60% of wgmma's 4,096).  The wmma kernel's extra work
 * (the S and P round trips through shared memory, four barriers a tile)
 * is gone; what is left (two barriers a tile with one block per SM, the
 * softmax's MUFU and shuffles, the diagonal and tail waves) should cost
 * ~40%:
 * predicted ~260 TFLOP/s, 1.7× the wmma kernel, so ~24 µs of attention a
 * token at 32,768 instead of ~42 (with the ~143 µs a token the rest of
 * the 27B takes, the prompt rate at 32,768 goes from ~0.80× to ~0.87× of
 * that at 4,096).  L2: a block reads 64 KB of K + V per tile for 8.4
 * MFLOP (128 FLOP/B, 2 TB/s at 260 TFLOP/s), half of what 64-row blocks
 * would need.  Chunks: a c-token chunk of the 27B is
 * c·6/128·4 blocks, one per SM: 768 at c = 4,096 (5.8 waves), 384 at
 * backend.cu's 2,048 (2.9).
 *
 * Oracle: rs_cpu_attn_ref; test: tests/check_cuda.c "attn_prefill" (also
 * against rs_k_attn).
 */
#include <math.h>
#include <mma.h>

#include "attn_prefill_mma.cuh"
#include "common.cuh"
#include "rs_kernels.h"

using namespace nvcuda;

#define FA_BR		64	/* query rows (token, head of group) per block */
#define FA_BC		64	/* keys per tile */
#define FA_WARPS	8
#define FA_THREADS	(FA_WARPS * RS_WARP)
#define FA_ROWS_PER_WARP (FA_BR / FA_WARPS)	/* softmax rows of a warp */

typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major>
    frag_a;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major>
    frag_kt;			/* Kᵀ: K rows are the columns */
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major>
    frag_v;
typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> frag_acc;

/*
 * Shared memory of a block, in bytes from the start: every part and every
 * 16-row fragment inside it starts on 32 bytes, as wmma needs.  Row
 * strides (in elements) are padded by 16 bytes so the 16 rows of a
 * fragment start in different banks.
 */
template <int D, int DV>
struct fa_layout {
	static const int LDQ = D + 8;			/* halves */
	static const int LDKV = (D > DV ? D : DV) + 8;	/* halves */
	static const int LDS = FA_BC + 4;		/* floats */
	static const int LDP = FA_BC + 8;		/* halves */
	static const int Q = 0;
	static const int KV = Q + FA_BR * LDQ * 2;
	static const int S = KV + FA_BC * LDKV * 2;
	static const int P = S + FA_BR * LDS * 4;
	static const int ALPHA = P + FA_BR * LDP * 2;
	static const int M = ALPHA + FA_BR * 4;
	static const int L = M + FA_BR * 4;
	static const int BYTES = L + FA_BR * 4;

	/* the warp roles of the header are written for this shape */
	static_assert(FA_BR == 64 && FA_BC == 64 && FA_WARPS == 8,
	    "warp roles assume 64 × 64 tiles and 8 warps");
	static_assert(D % 64 == 0 && DV % 64 == 0 &&
	    FA_BC * D / 8 % FA_THREADS == 0 && FA_BC * DV / 8 % FA_THREADS == 0,
	    "head dims must be multiples of 64");
	static_assert(BYTES <= 96 * 1024, "over SM70's 96 KB per block");
};

/* Q rows r0 .. r0+63 of KV head J as f16 (zero past the last row). */
template <int D, int DV>
static __device__ __forceinline__ void
load_q(half *sq, const float *__restrict__ q, int64_t ldq, int64_t qs,
    int r0, int n_rows, int g, int j)
{
	const int ld = fa_layout<D, DV>::LDQ;

	for (int e = threadIdx.x; e < FA_BR * D; e += FA_THREADS) {
		int r = e / D, i = e % D, row = r0 + r;
		float x = 0.0f;

		if (row < n_rows)
			x = q[(int64_t)(row / g) * ldq +
			    (int64_t)(j * g + row % g) * qs + i];
		sq[r * ld + i] = __float2half_rn(x);
	}
}

/*
 * Keys KV0 .. KV0+63 of one head (W halves each, rows ROW halves apart in
 * SRC) into shared memory; keys at or past N_KEYS read as zero, so nothing
 * outside the written cache is read and masked V rows are finite.
 */
template <int W, int LD>
static __device__ __forceinline__ void
load_tile(half *dst, const uint16_t *__restrict__ src, int64_t row,
    int64_t kv0, int64_t n_keys)
{
	const int CH = W / 8;	/* 16-byte chunks per key */

#pragma unroll 4	/* 4 × 16 B in flight per thread, within 128 registers */
	for (int it = 0; it < FA_BC * CH / FA_THREADS; it++) {
		int e = threadIdx.x + it * FA_THREADS, key = e / CH, c = e % CH;
		int64_t s = kv0 + key;
		uint4 x = make_uint4(0, 0, 0, 0);

		if (s < n_keys)
			x = *(const uint4 *)(src + s * row + c * 8);
		*(uint4 *)(dst + key * LD + c * 8) = x;
	}
}

/*
 * S = Q·Kᵀ for the 64 × 64 tile: warp w writes rows 16·(w mod 4) and keys
 * 32·(w / 4) .. +31 of SS, unscaled (f32).
 */
template <int D, int DV>
static __device__ __forceinline__ void
scores(const half *sq, const half *sk, float *ss, int warp)
{
	typedef fa_layout<D, DV> L;
	const half *qa = sq + 16 * (warp % 4) * L::LDQ;
	const half *kb = sk + 32 * (warp / 4) * L::LDKV;
	frag_acc c[2];
	frag_a	 a;
	frag_kt	 b;

	wmma::fill_fragment(c[0], 0.0f);
	wmma::fill_fragment(c[1], 0.0f);
#pragma unroll 4	/* full unrolling hoists every fragment load: spills */
	for (int k = 0; k < D; k += 16) {
		wmma::load_matrix_sync(a, qa + k, L::LDQ);
#pragma unroll
		for (int n = 0; n < 2; n++) {
			wmma::load_matrix_sync(b, kb + 16 * n * L::LDKV + k,
			    L::LDKV);
			wmma::mma_sync(c[n], a, b, c[n]);
		}
	}
	for (int n = 0; n < 2; n++)
		wmma::store_matrix_sync(ss + 16 * (warp % 4) * L::LDS +
		    32 * (warp / 4) + 16 * n, c[n], L::LDS, wmma::mem_row_major);
}

/*
 * Online softmax of the warp's 8 rows of the tile at key KV0.  Row r (of
 * the block) belongs to token (r0 + r) / g and sees keys up to p0 + that
 * token; padding rows past N_ROWS take the last row's mask (their Q is
 * zero and they are never written).  Updates the running max SM and sum SL
 * of each row (shared memory, not registers: O needs those), writes P
 * (f16) and α = e^(m_old − m_new).  The first tile holds key 0, which
 * every row sees, so m is finite from then on; the guards only keep
 * e^(−∞ + ∞) out.
 */
template <int D, int DV>
static __device__ __forceinline__ void
softmax_tile(const float *ss, half *sp, float *salpha, float *sm, float *sl,
    int warp, int lane, int r0, int n_rows, int g, int64_t p0, int64_t kv0,
    float scale)
{
	typedef fa_layout<D, DV> L;

#pragma unroll
	for (int i = 0; i < FA_ROWS_PER_WARP; i++) {
		int r = warp * FA_ROWS_PER_WARP + i;
		int64_t last = p0 + min(r0 + r, n_rows - 1) / g;
		float s[FA_BC / RS_WARP], mx = -INFINITY;

#pragma unroll
		for (int c = 0; c < FA_BC / RS_WARP; c++) {
			int key = lane + c * RS_WARP;
			s[c] = kv0 + key <= last ? ss[r * L::LDS + key] * scale :
			    -INFINITY;
			mx = fmaxf(mx, s[c]);
		}
		float mo = sm[r], mn = fmaxf(mo, warp_max(mx));
		float alpha = mo == -INFINITY ? 0.0f : __expf(mo - mn);
		float sum = 0.0f;

#pragma unroll
		for (int c = 0; c < FA_BC / RS_WARP; c++) {
			half p = __float2half_rn(s[c] == -INFINITY ? 0.0f :
			    __expf(s[c] - mn));
			sp[r * L::LDP + lane + c * RS_WARP] = p;
			sum += __half2float(p);
		}
		sum = sl[r] * alpha + warp_sum(sum);
		__syncwarp();	/* every lane has read sm[r], sl[r] */
		if (lane == 0) {
			sm[r] = mn;
			sl[r] = sum;
			salpha[r] = alpha;
		}
	}
}

/*
 * O = α·O + P·V for the warp's 32 rows (two row fragments) and DV/4
 * columns (NC = DV/64 column fragments): o[rf·NC + cf] holds rows
 * 32·(w mod 2) + 16·rf, columns DV/4·(w / 2) + 16·cf.  A 32 × DV/4 block
 * loads 2 P and NC V fragments per 2·NC products, a third less shared
 * memory traffic than 16 × DV/2.  ROWS[e] is the row (0..15) of
 * accumulator element e.
 */
template <int D, int DV>
static __device__ __forceinline__ void
pv(frag_acc *o, const int *rows, const half *sp, const half *sv,
    const float *salpha, int warp)
{
	typedef fa_layout<D, DV> L;
	const int NC = DV / 64;
	const half *pa = sp + 32 * (warp % 2) * L::LDP;
	const half *vb = sv + DV / 4 * (warp / 2);
	frag_a	 a[2];
	frag_v	 b;

#pragma unroll
	for (int e = 0; e < frag_acc::num_elements; e++) {
#pragma unroll
		for (int rf = 0; rf < 2; rf++) {
			float alpha = salpha[32 * (warp % 2) + 16 * rf +
			    rows[e]];
#pragma unroll
			for (int cf = 0; cf < NC; cf++)
				o[rf * NC + cf].x[e] *= alpha;
		}
	}
#pragma unroll 1	/* unrolled, the V fragments of all steps spill */
	for (int k = 0; k < FA_BC; k += 16) {
		wmma::load_matrix_sync(a[0], pa + k, L::LDP);
		wmma::load_matrix_sync(a[1], pa + 16 * L::LDP + k, L::LDP);
#pragma unroll
		for (int cf = 0; cf < NC; cf++) {
			wmma::load_matrix_sync(b, vb + k * L::LDKV + 16 * cf,
			    L::LDKV);
			wmma::mma_sync(o[cf], a[0], b, o[cf]);
			wmma::mma_sync(o[NC + cf], a[1], b, o[NC + cf]);
		}
	}
}

/*
 * o = O / l ⊙ sigmoid(gate) for the warp's fragments: each goes through a
 * 16 × 16 f32 staging square of the warp (STAGE) so that lane e of 32
 * writes elements e, e + 32, ... with a known (row, column).
 */
template <int D, int DV>
static __device__ __forceinline__ void
write_out(frag_acc *o, const int *rows, const float *sl, float *stage,
    const float *__restrict__ q, int64_t ldq, int64_t qs, int64_t gate_off,
    int n_head, int r0, int n_rows, int g, int j, int warp, int lane,
    float *__restrict__ out)
{
	const int NC = DV / 64;
	int	rb = 32 * (warp % 2), cb = DV / 4 * (warp / 2);

#pragma unroll
	for (int e = 0; e < frag_acc::num_elements; e++) {
#pragma unroll
		for (int rf = 0; rf < 2; rf++) {
			float inv = 1.0f / sl[rb + 16 * rf + rows[e]];
#pragma unroll
			for (int cf = 0; cf < NC; cf++)
				o[rf * NC + cf].x[e] *= inv;
		}
	}
#pragma unroll
	for (int f = 0; f < 2 * NC; f++) {
		wmma::store_matrix_sync(stage, o[f], 16, wmma::mem_row_major);
		__syncwarp();
		for (int e = lane; e < 256; e += RS_WARP) {
			int row = r0 + rb + 16 * (f / NC) + e / 16;
			int col = cb + 16 * (f % NC) + e % 16;
			if (row >= n_rows)
				continue;
			int64_t t = row / g, h = (int64_t)j * g + row % g;
			float gate = q[t * ldq + h * qs + gate_off + col];
			out[(t * n_head + h) * DV + col] = stage[e] *
			    sigmoid_f(gate);
		}
		__syncwarp();
	}
}

/*
 * One block: rows r0 .. r0+63 (r = t·g + i) of KV head blockIdx.x.  Blocks
 * start x fastest, so the heads of the last (longest) row tile go first.
 * See the header for the steps and the warp roles.
 */
template <int D, int DV>
static __global__ void __launch_bounds__(FA_THREADS, 2)
attn_prefill_kernel(const float *__restrict__ q, int64_t ldq, int64_t qs,
    int64_t gate_off, const uint16_t *__restrict__ kc,
    const uint16_t *__restrict__ vc, int n_head, int n_head_kv, int n_tok,
    const int32_t *__restrict__ params, float scale, float *__restrict__ out)
{
	typedef fa_layout<D, DV> L;
	extern __shared__ __align__(128) unsigned char fa_sm[];
	half	*sq = (half *)(fa_sm + L::Q), *skv = (half *)(fa_sm + L::KV);
	float	*ss = (float *)(fa_sm + L::S);
	half	*sp = (half *)(fa_sm + L::P);
	float	*salpha = (float *)(fa_sm + L::ALPHA);
	float	*sm = (float *)(fa_sm + L::M), *sl = (float *)(fa_sm + L::L);
	int	 warp = threadIdx.x / RS_WARP, lane = threadIdx.x % RS_WARP;
	int	 g = n_head / n_head_kv, j = blockIdx.x, n_rows = n_tok * g;
	int	 r0 = (gridDim.y - 1 - blockIdx.y) * FA_BR;	/* longest first */
	int64_t	 p0 = params[RS_K_PARAM_POS0];
	int64_t	 n_keys = p0 + (min(r0 + FA_BR, n_rows) - 1) / g + 1;
	int64_t	 krow = (int64_t)n_head_kv * D, vrow = (int64_t)n_head_kv * DV;
	int	 rows[frag_acc::num_elements];
	frag_acc o[DV / 32], ridx;

	load_q<D, DV>(sq, q, ldq, qs, r0, n_rows, g, j);
	/* ss[r][c] = r for the 16 × 16 square that maps accumulator rows */
	for (int e = threadIdx.x; e < 256; e += FA_THREADS)
		ss[e / 16 * L::LDS + e % 16] = (float)(e / 16);
	for (int r = threadIdx.x; r < FA_BR; r += FA_THREADS) {
		sm[r] = -INFINITY;
		sl[r] = 0.0f;
	}
	__syncthreads();
	wmma::load_matrix_sync(ridx, ss, L::LDS, wmma::mem_row_major);
	for (int e = 0; e < frag_acc::num_elements; e++)
		rows[e] = (int)ridx.x[e];
	for (int f = 0; f < DV / 32; f++)
		wmma::fill_fragment(o[f], 0.0f);
	for (int64_t kv0 = 0; kv0 < n_keys; kv0 += FA_BC) {
		load_tile<D, L::LDKV>(skv, kc + (int64_t)j * D, krow, kv0,
		    n_keys);
		__syncthreads();	/* K in; also: ridx read before S */
		scores<D, DV>(sq, skv, ss, warp);
		__syncthreads();	/* S complete, K no longer read */
		softmax_tile<D, DV>(ss, sp, salpha, sm, sl, warp, lane, r0,
		    n_rows, g, p0, kv0, scale);
		load_tile<DV, L::LDKV>(skv, vc + (int64_t)j * DV, vrow, kv0,
		    n_keys);
		__syncthreads();	/* P, α and V in */
		pv<D, DV>(o, rows, sp, skv, salpha, warp);
		__syncthreads();	/* V, P and S free for the next tile */
	}
	write_out<D, DV>(o, rows, sl, ss + warp * 256, q, ldq, qs, gate_off,
	    n_head, r0, n_rows, g, j, warp, lane, out);
}

template <int D, int DV>
static enum rs_status
launch(const float *d_q, int64_t ldq, int64_t qs, int64_t gate_off,
    const uint16_t *d_kc, const uint16_t *d_vc, int n_head, int n_head_kv,
    int n_tok, const int32_t *d_params, float scale, float *d_o,
    cudaStream_t stream, struct rs_err *err)
{
	const int	 bytes = fa_layout<D, DV>::BYTES;
	int64_t		 n_rows = (int64_t)n_tok * (n_head / n_head_kv);
	dim3		 grid((unsigned)n_head_kv,
			     (unsigned)((n_rows + FA_BR - 1) / FA_BR));
	int		 mma = 0;

	/* host runtime calls: NVRTC's check of the kernels (scripts/
	   cuda129-nvrtc.sh, device runtime only) compiles without them, and
	   both launches (so both kernels) */
#ifndef __CUDACC_RTC__
	mma = has_mma_path<D>();
#endif
	if (mma) {
		dim3 grid2((unsigned)n_head_kv,
		    (unsigned)((n_rows + FA2_BR - 1) / FA2_BR));

		attn_prefill_mma_kernel<D><<<grid2, FA2_THREADS,
		    fa2_layout<D>::BYTES, stream>>>(d_q, ldq, qs, gate_off,
		    d_kc, d_vc, n_head, n_head_kv, n_tok, d_params, scale, d_o);
		RS_LAUNCH_CHECK(err, "attn prefill (mma.sync)");
		return (RS_OK);
	}
#ifndef __CUDACC_RTC__
	cudaError_t e = cudaFuncSetAttribute(attn_prefill_kernel<D, DV>,
	    cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
	if (e != cudaSuccess) {
		(void)cudaGetLastError();	/* not sticky: clear it */
		return (rs_errf(err, RS_ERR_CUDA, "attn prefill: %d bytes of "
		    "shared memory for head dim %d: %s", bytes, D,
		    cudaGetErrorString(e)));
	}
#endif
	attn_prefill_kernel<D, DV><<<grid, FA_THREADS, bytes, stream>>>(d_q,
	    ldq, qs, gate_off, d_kc, d_vc, n_head, n_head_kv, n_tok, d_params,
	    scale, d_o);
	RS_LAUNCH_CHECK(err, "attn prefill");
	return (RS_OK);
}

extern "C" int
rs_k_attn_prefill_mma(int d)
{
#ifdef __CUDACC_RTC__
	(void)d;
	return (0);
#else
	switch (d) {
	case 64:
		return (has_mma_path<64>());
	case 128:
		return (has_mma_path<128>());
	case 256:
		return (has_mma_path<256>());
	default:
		return (0);
	}
#endif
}

extern "C" enum rs_status
rs_k_attn_prefill(const float *d_q, int64_t ldq, int64_t qs, int64_t gate_off,
    const uint16_t *d_kc, const uint16_t *d_vc, int n_head, int n_head_kv,
    int d, int dv, int n_tok, const int32_t *d_params, float scale, float *d_o,
    cudaStream_t stream, struct rs_err *err)
{
	if (n_tok < 1 || n_head < 1 || n_head_kv < 1 ||
	    n_head % n_head_kv != 0 ||
	    (int64_t)n_tok * (n_head / n_head_kv) > (int64_t)65535 * FA_BR)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "attn prefill: %d "
		    "tokens, heads %d/%d (tokens × group at most %d)", n_tok,
		    n_head, n_head_kv, 65535 * FA_BR));
	if (d != dv || !(d == 64 || d == 128 || d == 256))
		return (rs_errf(err, RS_ERR_INVALID_ARG, "attn prefill: head "
		    "dims %d/%d, expected equal and 64, 128 or 256", d, dv));
	if ((((uintptr_t)d_kc | (uintptr_t)d_vc) & 15) != 0)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "attn prefill: K/V "
		    "caches must be 16-byte aligned"));
	switch (d) {
	case 64:
		return (launch<64, 64>(d_q, ldq, qs, gate_off, d_kc, d_vc,
		    n_head, n_head_kv, n_tok, d_params, scale, d_o, stream,
		    err));
	case 128:
		return (launch<128, 128>(d_q, ldq, qs, gate_off, d_kc, d_vc,
		    n_head, n_head_kv, n_tok, d_params, scale, d_o, stream,
		    err));
	default:
		return (launch<256, 256>(d_q, ldq, qs, gate_off, d_kc, d_vc,
		    n_head, n_head_kv, n_tok, d_params, scale, d_o, stream,
		    err));
	}
}
