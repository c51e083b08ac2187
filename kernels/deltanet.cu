/*
 * deltanet.cu - the gated delta rule of one GDN block over T tokens
 * (qwen35-model.md §4.6 steps 3-6), fused with the L2 norms, β and decay.
 *
 * Per value head n (q/k head m = n mod n_kh, the tiled order of §3.6), per
 * token:
 *   q, k = L2Norm(q_m), L2Norm(k_m)          (x / max(‖x‖, eps))
 *   β = sigmoid(b_n);  g = softplus(a_n + dt_n)·A_n  (softplus = x above 20)
 *   S ← e^g·S;  δ = β·(v − Sᵀk);  S ← S + k·δᵀ;  o = Sᵀq / √dk
 *
 * Column j of S (value index j) evolves on its own: δ_j = β(v_j − S[:,j]ᵀk)
 * needs only that column and the shared q and k.  So a head's columns are
 * split over blocks of DN_COLS columns (27B: 48 heads × 4 blocks, more
 * blocks than an H200 or V100 has SMs), and within a block DN_SPLIT
 * threads hold one column, DK / DN_SPLIT rows each, in registers for the
 * whole call: every step is a per-thread loop over those rows with q and k
 * broadcast from shared memory, and log2(DN_SPLIT) shuffles join the parts of each
 * dot product.  S is read and written once per call: 27B, 48 heads × 64 KB
 * per layer, 151 MB per token for 48 layers, read + written (about 2% of
 * the weight bytes).
 *
 * A prompt chunk is one launch walking its tokens in order, so what counts
 * is the latency of a token.  Tokens are staged DN_STAGE at a time: one
 * coalesced load of their q, k, v, β and α into shared memory, the L2
 * norms a warp a token, then the tokens run from shared memory with no
 * barrier and no memory round trip between them: two 32-long FMA chains
 * and four shuffles a token.  Measured on the H200 (docs/perf-log.md):
 * one block of 256 threads per head with per-token loads and four barriers
 * a token took 2.0 µs a token and layer, 42 % of a 2,048-token 27B
 * prefill chunk; the same split over 4 blocks a head, 2.6 µs; staged,
 * 1.0 µs (30 %); 8 threads a column over 8 blocks a head was no faster;
 * the stage's loads all in flight at once, 0.75 -> 0.59 µs.  Slower
 * (not kept): runs of four rows a thread (one 16-byte load of q and of k
 * a run) with four partial sums a dot product, 0.70 µs; a pair of
 * columns a thread (8 threads a column: half the reads of q and k, three
 * times the shuffles), 0.60 µs.
 *
 * Calls of up to RS_K_DN_GN_MAX tokens (decode, verification) can end
 * with the gated RMSNorm that follows the scan (rs_k_deltanet_gnorm):
 * then a block holds a whole head (DK columns, DK·DN_SPLIT threads), its
 * outputs stay in shared memory, and the block normalises them itself,
 * with the norm kernel's bits (dn_gnorm): one launch less a GDN block,
 * 0.02 ms of a one-token pass and 0.11 of a 16-token one on an H100
 * (docs/perf-log.md, session 45).
 *
 * Every sum runs in one order whatever T is, so a batch equals single
 * steps bit for bit.  The snapshot ring (rs_state.h): a token at position
 * p ≥ snap_from leaves its replay record in slot p mod n_snap (k of its
 * key head once, v, β and the decay e^g of every value head: what the
 * state update reads), and S after position params[2] goes to that
 * position's slot in full, once a call, instead of S after every token
 * (27B: 151 MB a token).  The replay kernel below rebuilds S from such a
 * full state and the records with the same update function, dn_update:
 * the same bits as the scan.  Oracle: rs_cpu_deltanet_ref; tests:
 * tests/check_cuda.c "deltanet" (the replay against the scan, bit for
 * bit).
 */
#include <math.h>

#include "common.cuh"
#include "rs_kernels.h"
#include "xq.cuh"

#define DN_COLS		32	/* columns of S per block */
#define DN_SPLIT	4	/* threads per column */
#define DN_THREADS	(DN_COLS * DN_SPLIT)
#define DN_STAGE	32	/* tokens staged in shared memory at once */

/*
 * Stage tokens T0 .. T0 + NT − 1 in shared memory: q and k of head M
 * L2-normalised, this block's DN_COLS values of v, β and the decay e^g.
 * Three barriers for NT tokens; the first keeps the previous stage until
 * every thread is done with it.
 */
template <int DK, int COLS, int STAGE>
static __device__ __forceinline__ void
dn_stage(const float *__restrict__ u, int64_t ldu, const float *__restrict__ bb,
    const float *__restrict__ aa, int64_t ldba, float dtn, float an, int m,
    int n, int n_kh, int j0, int t0, int nt, float eps, float (*sq)[DK],
    float (*sk)[DK], float (*sv)[COLS], float *sbeta, float *sdecay)
{
	constexpr int THREADS = COLS * DN_SPLIT;
	/* 16-byte pieces a thread: of q and of k, of v */
	constexpr int QK4 = STAGE * DK / 4 / THREADS;
	constexpr int V4 = STAGE * COLS / 4 / THREADS;
	const int lane = threadIdx.x % RS_WARP, warp = threadIdx.x / RS_WARP;
	float4 q[QK4], k[QK4], v[V4];
	float xa = 0.0f, xb = 0.0f;

	static_assert(QK4 * 4 * THREADS == STAGE * DK &&
	    V4 * 4 * THREADS == STAGE * COLS, "deltanet: stage");
	/*
	 * Every load of the stage is issued before the first store, and
	 * before the barrier that keeps the previous stage until every thread
	 * is done with it: one memory round trip a stage.  (A loop of single
	 * loads and stores waited on one every other iteration, ~0.2 µs a
	 * token of a long call.)  u is 16-byte aligned (the launcher checks).
	 */
#pragma unroll
	for (int r = 0; r < QK4; r++) {
		const int f = threadIdx.x + r * THREADS, t = f / (DK / 4);
		const float *ut = u + (int64_t)(t0 + t) * ldu + 4 * (f % (DK /
		    4));
		if (t < nt) {
			q[r] = __ldg((const float4 *)(ut + m * DK));
			k[r] = __ldg((const float4 *)(ut + (n_kh + m) * DK));
		}
	}
#pragma unroll
	for (int r = 0; r < V4; r++) {
		const int f = threadIdx.x + r * THREADS, t = f / (COLS / 4);
		if (t < nt)
			v[r] = __ldg((const float4 *)(u + (int64_t)(t0 + t) *
			    ldu + 2 * n_kh * DK + n * DK + j0 + 4 * (f %
			    (COLS / 4))));
	}
	if ((int)threadIdx.x < nt) {
		const int64_t t = t0 + threadIdx.x;
		xa = aa[t * ldba + n] + dtn;
		xb = bb[t * ldba + n];
	}
	__syncthreads();
#pragma unroll
	for (int r = 0; r < QK4; r++) {
		const int f = threadIdx.x + r * THREADS, t = f / (DK / 4);
		if (t < nt) {
			*(float4 *)&sq[t][4 * (f % (DK / 4))] = q[r];
			*(float4 *)&sk[t][4 * (f % (DK / 4))] = k[r];
		}
	}
#pragma unroll
	for (int r = 0; r < V4; r++) {
		const int f = threadIdx.x + r * THREADS, t = f / (COLS / 4);
		if (t < nt)
			*(float4 *)&sv[t][4 * (f % (COLS / 4))] = v[r];
	}
	if ((int)threadIdx.x < nt) {
		sbeta[threadIdx.x] = sigmoid_f(xb);
		sdecay[threadIdx.x] = expf((xa > 20.0f ? xa : log1pf(expf(xa))) *
		    an);
	}
	__syncthreads();
	/* a warp a token: ‖q‖ and ‖k‖, then x / max(‖x‖, eps) in place */
	for (int t = warp; t < nt; t += THREADS / RS_WARP) {
		float q2 = 0.0f, k2 = 0.0f;
		for (int e = lane; e < DK; e += RS_WARP) {
			q2 += sq[t][e] * sq[t][e];
			k2 += sk[t][e] * sk[t][e];
		}
		float qn = fmaxf(sqrtf(warp_sum(q2)), eps);
		float kn = fmaxf(sqrtf(warp_sum(k2)), eps);
		for (int e = lane; e < DK; e += RS_WARP) {
			sq[t][e] = sq[t][e] / qn;
			sk[t][e] = sk[t][e] / kn;
		}
	}
	__syncthreads();
}

/*
 * One token's update of this thread's part of column j of S: S ← e^g·S;
 * δ_j = β(v_j − S[:,j]ᵀk); S[:,j] += k·δ_j.  K is the token's key (DK
 * values), the thread's rows sp, sp + DN_SPLIT, ...  The scan and the
 * replay both call this, which is what makes their states equal bit for
 * bit.
 */
template <int DK>
static __device__ __forceinline__ void
dn_update(float *s, const float *k, int sp, float decay, float beta, float v)
{
	const int R = DK / DN_SPLIT;
	float r = 0.0f;

#pragma unroll
	for (int i = 0; i < R; i++) {
		s[i] *= decay;
		r += s[i] * k[i * DN_SPLIT + sp];
	}
	for (int m = 1; m < DN_SPLIT; m <<= 1)
		r += __shfl_xor_sync(0xffffffffu, r, m);
	const float delta = beta * (v - r);
#pragma unroll
	for (int i = 0; i < R; i++)
		s[i] += k[i * DN_SPLIT + sp] * delta;
}

/* This thread's part of S (R rows of column j) into the ring entry DST. */
template <int DK>
static __device__ __forceinline__ void
dn_put(float *dst, const float *s, int sp, int j)
{
#pragma unroll
	for (int i = 0; i < DK / DN_SPLIT; i++)
		dst[(i * DN_SPLIT + sp) * DK + j] = s[i];
}

/*
 * Block (n, y)'s share of token TT's replay record REC (rs_k_gdn_ring):
 * its DN_COLS values of v; β and the decay from the first column block;
 * k from the first column block of the first n_kh value heads (value head
 * n < n_kh reads key head n).
 */
template <int DK, int COLS>
static __device__ __forceinline__ void
dn_record(float *rec, int n, int n_kh, int n_vh, int j0, const float *sk,
    const float *sv, float beta, float decay)
{
	if (threadIdx.x < COLS)
		rec[(int64_t)(n_kh + n) * DK + j0 + threadIdx.x] =
		    sv[threadIdx.x];
	if (j0 != 0)
		return;
	if (threadIdx.x == 0) {
		rec[(int64_t)(n_kh + n_vh) * DK + n] = beta;
		rec[(int64_t)(n_kh + n_vh) * DK + n_vh + n] = decay;
	}
	if (n < n_kh)
		for (int i = threadIdx.x; i < DK; i += COLS * DN_SPLIT)
			rec[(int64_t)n * DK + i] = sk[i];
}

/* The gated RMSNorm fused into the scan (rs_k_deltanet_gnorm). */
struct dn_gn {
	const float	*z, *w;
	float		 eps;
	uint8_t		*xq;
	int		 bm;
};

/*
 * The gated RMSNorm of head N's outputs SO[t][0 .. DK) for NT tokens into
 * Y (and GN.xq), by a block that holds the whole head (COLS = DK), with
 * the bits of gated_rmsnorm_kernel (norm.cu), a 128-thread block a (token,
 * head) row there: thread g of a 128-thread group takes value g, its
 * square summed from 0.0f; the four warps' warp_sums meet as block_sum
 * meets them, (s0 + s2) + (s1 + s3) (its last warp_sum over lanes 0..3,
 * the other lanes 0.0f, which adds nothing to a sum of squares); the value
 * is x·r·w·silu(z) in that order; xq_store converts each 32-value block.
 * A group a token; PART holds the groups' warp sums.
 */
template <int DK>
static __device__ __forceinline__ void
dn_gnorm(const float (*so)[DK], int nt, int n, int n_vh, float *y,
    const dn_gn &gn, float (*part)[4])
{
	const int ngrp = DK * DN_SPLIT / 128, grp = threadIdx.x / 128;
	const int g = threadIdx.x % 128, lane = g % RS_WARP, w = g / RS_WARP;

	for (int t0 = 0; t0 < nt; t0 += ngrp) {
		const int t = t0 + grp;
		const bool mine = t < nt && g < DK;	/* whole warps */
		const float x = mine ? so[t][g] : 0.0f;
		const float ss = warp_sum(0.0f + x * x);

		if (lane == 0)
			part[grp][w] = ss;
		__syncthreads();
		if (mine) {
			const float sum = (part[grp][0] + part[grp][2]) +
			    (part[grp][1] + part[grp][3]);
			const float r = rsqrtf(sum / (float)DK + gn.eps);
			const int64_t off = ((int64_t)t * n_vh + n) * DK;
			const float v = x * r * gn.w[g] * silu_f(gn.z[off + g]);

			y[off + g] = v;
			if (gn.xq != NULL)
				xq_store(v, lane, gn.xq, (int64_t)DK * n_vh, nt,
				    gn.bm, t,
				    (int64_t)n * (DK / RS_XQ_BLOCK) + w);
		}
		__syncthreads();	/* PART, for the next tokens */
	}
}

/*
 * COLS columns of S a block; STAGE tokens staged at once.  GN (COLS = DK,
 * n_tok <= STAGE): the outputs stay in shared memory and the block ends
 * with their gated RMSNorm (dn_gnorm) into O.
 */
template <int DK, int COLS, int STAGE, bool GN>
static __global__ void __launch_bounds__(COLS * DN_SPLIT)
deltanet_kernel(float *s_all, const float *__restrict__ u, int64_t ldu,
    const float *__restrict__ bb, const float *__restrict__ aa, int64_t ldba,
    const float *__restrict__ dt, const float *__restrict__ ssm_a, int n_kh,
    int n_vh, int n_tok, float eps, float *__restrict__ o,
    const struct rs_k_gdn_ring ring, const int32_t *__restrict__ params,
    const struct dn_gn gn)
{
	const int R = DK / DN_SPLIT;	/* rows of S per thread */
	__shared__ __align__(16) float sq[STAGE][DK], sk[STAGE][DK];
	__shared__ __align__(16) float sv[STAGE][COLS];
	__shared__ float sbeta[STAGE], sdecay[STAGE];
	__shared__ float so[GN ? STAGE : 1][GN ? DK : 1];
	__shared__ float part[GN ? DK * DN_SPLIT / 128 : 1][4];
	const int n = blockIdx.x, m = n % n_kh, j0 = blockIdx.y * COLS;
	const int jl = threadIdx.x / DN_SPLIT, j = j0 + jl;
	/* rows sp, sp + DN_SPLIT, ...: the DN_SPLIT threads of a column read
	   neighbouring words of q and k (distinct banks) */
	const int sp = threadIdx.x % DN_SPLIT;
	float	s[R];
	float	*S = s_all + (int64_t)n * DK * DK;
	const float scale = rsqrtf((float)DK);

	static_assert(DK % COLS == 0 && DK % DN_SPLIT == 0 && (!GN ||
	    COLS == DK), "deltanet: DK");
	/*
	 * S before the wait: launched early only after the convolution
	 * (rs_k_deltanet's AFTER_CONV), which writes no S and started when
	 * everything before it had ended, so no kernel that may still run
	 * writes S, and its round trip overlaps the convolution.
	 */
#pragma unroll
	for (int i = 0; i < R; i++)
		s[i] = S[(i * DN_SPLIT + sp) * DK + j];
	rs_pdl_wait();
	rs_pdl_trigger();	/* the gated norm after it may start */
	const int p0 = params[RS_K_PARAM_POS0];
	const int snap_from = params[RS_K_PARAM_SNAP_FROM];
	const int base = params[RS_K_PARAM_SNAP_BASE];
	/* the call's base may be the state before its first token */
	if (ring.full != NULL && base >= 0 && base == p0 - 1)
		dn_put<DK>(ring.full + (int64_t)(base % ring.n) *
		    ring.full_stride + (int64_t)n * DK * DK, s, sp, j);
	for (int t0 = 0; t0 < n_tok; t0 += STAGE) {
		const int nt = n_tok - t0 < STAGE ? n_tok - t0 : STAGE;
		dn_stage<DK, COLS, STAGE>(u, ldu, bb, aa, ldba, dt[n],
		    ssm_a[n], m, n, n_kh, j0, t0, nt, eps, sq, sk, sv, sbeta,
		    sdecay);
		for (int tt = 0; tt < nt; tt++) {
			dn_update<DK>(s, sk[tt], sp, sdecay[tt], sbeta[tt],
			    sv[tt][jl]);
			float acc = 0.0f;
#pragma unroll
			for (int i = 0; i < R; i++)
				acc += s[i] * sq[tt][i * DN_SPLIT + sp];
			for (int k = 1; k < DN_SPLIT; k <<= 1)
				acc += __shfl_xor_sync(0xffffffffu, acc, k);
			const int t = t0 + tt;
			if constexpr (GN) {
				if (sp == 0)
					so[t][j] = acc * scale;
			} else if (sp == 0)
				o[(int64_t)t * n_vh * DK + (int64_t)n * DK + j] =
				    acc * scale;
			const int p = p0 + t;
			if (ring.full == NULL)
				continue;
			if (p >= snap_from)
				dn_record<DK, COLS>(ring.rec +
				    (int64_t)(p % ring.n) * ring.rec_stride, n,
				    n_kh, n_vh, j0, sk[tt], sv[tt], sbeta[tt],
				    sdecay[tt]);
			if (p == base)
				dn_put<DK>(ring.full + (int64_t)(p % ring.n) *
				    ring.full_stride + (int64_t)n * DK * DK, s,
				    sp, j);
		}
	}
#pragma unroll
	for (int i = 0; i < R; i++)
		S[(i * DN_SPLIT + sp) * DK + j] = s[i];
	if constexpr (GN) {
		__syncthreads();	/* every column's outputs in SO */
		dn_gnorm<DK>(so, n_tok, n, n_vh, o, gn, part);
	}
}

/*
 * S of GDN block g (grid z) ← the full state at BASE (NULL: zeros) with
 * the records of positions FIRST .. FIRST + N_TOK − 1 applied in order,
 * each token staged like the scan's (k of the key head, this block's v
 * columns, β, the decay) and run through dn_update.
 */
template <int DK>
static __global__ void __launch_bounds__(DN_THREADS)
deltanet_replay_kernel(float *s_all, int64_t s_stride,
    const float *__restrict__ base, const float *__restrict__ rec,
    int64_t rec_len, int64_t rec_stride, int n_snap, int first, int n_tok,
    int n_kh, int n_vh)
{
	const int R = DK / DN_SPLIT;
	__shared__ float sk[DK], sv[DN_COLS], sg[2];
	const int n = blockIdx.x, m = n % n_kh, j0 = blockIdx.y * DN_COLS;
	const int jl = threadIdx.x / DN_SPLIT, j = j0 + jl;
	const int sp = threadIdx.x % DN_SPLIT;
	const int64_t at = (int64_t)blockIdx.z * s_stride + (int64_t)n * DK * DK;
	float	s[R];

#pragma unroll
	for (int i = 0; i < R; i++)
		s[i] = base != NULL ? base[at + (i * DN_SPLIT + sp) * DK + j] :
		    0.0f;
	for (int t = 0; t < n_tok; t++) {
		const float *r = rec + (int64_t)((first + t) % n_snap) *
		    rec_stride + (int64_t)blockIdx.z * rec_len;
		__syncthreads();
		for (int i = threadIdx.x; i < DK; i += DN_THREADS)
			sk[i] = r[(int64_t)m * DK + i];
		if (threadIdx.x < DN_COLS)
			sv[threadIdx.x] = r[(int64_t)(n_kh + n) * DK + j0 +
			    threadIdx.x];
		if (threadIdx.x < 2)
			sg[threadIdx.x] = r[(int64_t)(n_kh + n_vh) * DK +
			    threadIdx.x * n_vh + n];
		__syncthreads();
		dn_update<DK>(s, sk, sp, sg[1], sg[0], sv[jl]);
	}
#pragma unroll
	for (int i = 0; i < R; i++)
		s_all[at + (i * DN_SPLIT + sp) * DK + j] = s[i];
}

/*
 * Launch the scan, after the convolution (EARLY) as a programmatic
 * dependent (common.cuh) where the device runs its SM90 code: it then
 * starts while the convolution runs (which triggers at its start) and
 * loads S meanwhile.  Measured on an H100 (docs/perf-log.md, session 30):
 * -0.03 to -0.09 ms a pass; with the gated norm launched early behind
 * it, -0.10 to -0.16 ms on passes of 1-4 tokens.
 */
template <typename K>
static void
dn_launch(K kernel, dim3 grid, int threads, int early, cudaStream_t stream,
    float *d_s, const float *d_u, int64_t ldu, const float *d_b,
    const float *d_a, int64_t ldba, const float *d_dt, const float *d_ssm_a,
    int n_kh, int n_vh, int n_tok, float eps, float *d_o,
    struct rs_k_gdn_ring rg, const int32_t *d_params, struct dn_gn gn)
{
#ifndef __CUDACC_RTC__
	static signed char known[RS_MAX_DEVICES];
	struct rs_launch l;

	rs_launch_init(&l, grid, dim3((unsigned)threads), 0, stream, early &&
	    rs_runs_ptx(kernel, 90, known));
	(void)cudaLaunchKernelEx(&l.cfg, kernel, d_s, d_u, ldu, d_b, d_a,
	    ldba, d_dt, d_ssm_a, n_kh, n_vh, n_tok, eps, d_o, rg, d_params, gn);
#else	/* NVRTC's check (scripts/cuda129-nvrtc.sh): no host runtime */
	(void)early;
	kernel<<<grid, threads, 0, stream>>>(d_s, d_u, ldu, d_b, d_a, ldba,
	    d_dt, d_ssm_a, n_kh, n_vh, n_tok, eps, d_o, rg, d_params, gn);
#endif
}

/* rs_k_deltanet, and rs_k_deltanet_gnorm where GN is not NULL. */
static enum rs_status
dn_scan(float *d_s, const float *d_u, int64_t ldu, const float *d_b,
    const float *d_a, int64_t ldba, const float *d_dt, const float *d_ssm_a,
    int n_kh, int n_vh, int dk, int n_tok, float eps, float *d_o,
    const struct rs_k_gdn_ring *ring, const int32_t *d_params,
    int after_conv, const struct rs_k_gnorm *gn, cudaStream_t stream,
    struct rs_err *err)
{
	const struct rs_k_gdn_ring none = { NULL, 0, NULL, 0, 0 };
	const struct rs_k_gdn_ring rg = ring != NULL ? *ring : none;
	struct dn_gn g = { NULL, NULL, 0.0f, NULL, 0 };

	if (n_tok < 1 || n_kh < 1 || n_vh < 1 || n_vh % n_kh != 0 ||
	    (rg.full != NULL && (rg.rec == NULL || rg.n < 1)) ||
	    (gn != NULL && n_tok > RS_K_DN_GN_MAX))
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "deltanet: %d tokens (at most %d with the gated norm), "
		    "%d/%d heads, a ring of %d", n_tok, RS_K_DN_GN_MAX, n_kh,
		    n_vh, rg.n));
	/* the stage's 16-byte loads of q, k and v */
	if ((uintptr_t)d_u % 16 != 0 || ldu % 4 != 0)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "deltanet: u not 16-byte aligned (row stride %lld)",
		    (long long)ldu));
	if (gn != NULL) {
		g.z = gn->z;
		g.w = gn->w;
		g.eps = gn->eps;
		g.xq = (uint8_t *)gn->xq;
		g.bm = gn->xq != NULL ? rs_k_xq_block_major(n_tok) : 0;
	}
#define DN_GO(DK) do {						\
	if (gn != NULL)							\
		dn_launch(deltanet_kernel<DK, DK, RS_K_DN_GN_MAX, true>, \
		    dim3(n_vh, 1), DK * DN_SPLIT, after_conv, stream,	\
		    d_s, d_u, ldu, d_b, d_a, ldba, d_dt, d_ssm_a, n_kh,	\
		    n_vh, n_tok, eps, d_o, rg, d_params, g);		\
	else								\
		dn_launch(deltanet_kernel<DK, DN_COLS, DN_STAGE, false>, \
		    dim3(n_vh, DK / DN_COLS), DN_THREADS, after_conv,	\
		    stream, d_s, d_u, ldu, d_b, d_a, ldba, d_dt,	\
		    d_ssm_a, n_kh, n_vh, n_tok, eps, d_o, rg, d_params, g); \
} while (0)
	switch (dk) {
	case 64:
		DN_GO(64);
		break;
	case 128:
		DN_GO(128);
		break;
	default:
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "deltanet: head dim %d (only 64 and 128)", dk));
	}
#undef DN_GO
	RS_LAUNCH_CHECK(err, "deltanet");
	return (RS_OK);
}

extern "C" enum rs_status
rs_k_deltanet(float *d_s, const float *d_u, int64_t ldu, const float *d_b,
    const float *d_a, int64_t ldba, const float *d_dt, const float *d_ssm_a,
    int n_kh, int n_vh, int dk, int n_tok, float eps, float *d_o,
    const struct rs_k_gdn_ring *ring, const int32_t *d_params,
    int after_conv, cudaStream_t stream, struct rs_err *err)
{
	return (dn_scan(d_s, d_u, ldu, d_b, d_a, ldba, d_dt, d_ssm_a, n_kh,
	    n_vh, dk, n_tok, eps, d_o, ring, d_params, after_conv, NULL,
	    stream, err));
}

extern "C" enum rs_status
rs_k_deltanet_gnorm(float *d_s, const float *d_u, int64_t ldu,
    const float *d_b, const float *d_a, int64_t ldba, const float *d_dt,
    const float *d_ssm_a, int n_kh, int n_vh, int dk, int n_tok, float eps,
    float *d_o, const struct rs_k_gdn_ring *ring, const int32_t *d_params,
    int after_conv, const struct rs_k_gnorm *gn, cudaStream_t stream,
    struct rs_err *err)
{
	if (gn == NULL || gn->z == NULL || gn->w == NULL)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "deltanet: the gated norm's z and w are required"));
	return (dn_scan(d_s, d_u, ldu, d_b, d_a, ldba, d_dt, d_ssm_a, n_kh,
	    n_vh, dk, n_tok, eps, d_o, ring, d_params, after_conv, gn, stream,
	    err));
}

extern "C" enum rs_status
rs_k_deltanet_replay(float *d_s, int64_t s_stride, const float *d_base,
    const float *d_rec, int64_t rec_len, int64_t rec_stride, int n_snap,
    int first, int n_tok, int n_blocks, int n_kh, int n_vh, int dk,
    cudaStream_t stream, struct rs_err *err)
{
	if (n_tok < 0 || n_blocks < 1 || n_kh < 1 || n_vh < 1 ||
	    n_vh % n_kh != 0 || n_snap < 1 || first < 0 || n_tok > n_snap)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "deltanet replay: %d tokens from %d, a ring of %d, %d "
		    "blocks, %d/%d heads", n_tok, first, n_snap, n_blocks,
		    n_kh, n_vh));
	switch (dk) {
	case 64:
		deltanet_replay_kernel<64><<<dim3(n_vh, 64 / DN_COLS,
		    n_blocks), DN_THREADS, 0, stream>>>(d_s, s_stride, d_base,
		    d_rec, rec_len, rec_stride, n_snap, first, n_tok, n_kh,
		    n_vh);
		break;
	case 128:
		deltanet_replay_kernel<128><<<dim3(n_vh, 128 / DN_COLS,
		    n_blocks), DN_THREADS, 0, stream>>>(d_s, s_stride, d_base,
		    d_rec, rec_len, rec_stride, n_snap, first, n_tok, n_kh,
		    n_vh);
		break;
	default:
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "deltanet replay: head dim %d (only 64 and 128)", dk));
	}
	RS_LAUNCH_CHECK(err, "deltanet replay");
	return (RS_OK);
}
