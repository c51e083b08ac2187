/*
 * matvec.cu - y[t] (+)= W·x[t] for up to 16 token columns, W quantized
 * (qwen35-model.md §4.9: every projection of the forward pass).
 *
 *   W {n_in, n_out} (rows of n_in values, any §7 format), X (n_tok, n_in),
 *   Y (n_tok, n_out);  y[t][o] = Σ_i W[o][i]·x[t][i],  f32 accumulation.
 *
 * Two paths, every weight byte read once per launch for all N_TOK
 * columns:
 *   f32      (matvec_rows_kernel, matvec_sb.cuh) one warp per row walks it
 *            a 256-value super-block at a time, each lane decodes 8 values
 *            to floats and multiplies them with x in f32; every format;
 *   integer  x arrives quantized to 16 bits (lib/model/rs_xq.h); Q4_K, Q5_K and
 *            Q6_K, what the 27B files are made of, when the caller passes
 *            x in that form (the engine always does).  One order of sums
 *            (matvec_xq.cuh) in three kernels: one warp per row with dp4a
 *            (matvec_xq_kernel: decode, and every column count before
 *            SM80), the same with the weights copied through shared
 *            memory (matvec_pipe.cuh: Q6_K, 1..2 columns from SM80 on)
 *            and 16 rows per CTA on int8 tensor cores (matvec_mma.cuh:
 *            3..16 columns from SM80 on).
 * X is read through the L1/L2 caches (a column of the 27B: 20 KB as
 * floats, 12.8 KB as 16 bits, shared by every row).  Each sum runs in one
 * order whatever N_TOK is (batch invariance, see matvec_rows_kernel).
 * Oracles: rs_cpu_matmul_ref (lib/cpu/rs_cpu.h) and rs_xq_dot_ref; test:
 * tests/check_cuda.c "matvec"; measurements: docs/perf-log.md.
 *
 * Napkin math, decode (N_TOK = 1) of Qwen3.8-27B Q4_K_M: 15.8 GB of weights
 * per token; at the V100's 900 GB/s that is 17.6 ms (57 tok/s), at the
 * H200's 4.8 TB/s 3.3 ms (303 tok/s), if the kernel streams at full
 * bandwidth.  The f32 path spends ~9 instructions per weight and was
 * instruction-bound at a quarter of the H200's bandwidth; the integer
 * path spends ~2 and streams about half of it.  Each further column costs
 * the integer path 16 dp4a per 32 weights and lane, so groups of 16 are
 * instruction-bound (tensor cores are the next step there).  Only SM70
 * features are used.
 */
#include "common.cuh"
#include "matvec_sb.cuh"
#include "matvec_mma.cuh"
#include "matvec_pipe.cuh"
#include "matvec_xq.cuh"
#include "quant.cuh"
#include "rs_kernels.h"

extern "C" {
#include "rs_xq.h"
}

#define MV_WARPS	4	/* warps per block */

/*
 * CTAs an SM that matvec_xq_kernel's launch bounds ask for (registers:
 * 65,536 / (128·minb)).  One column of Q4_K at 4 (128 registers: x's
 * batch strides would take it to 134 and 12 warps, 5 % slower) and of
 * Q6_K (136 -> 128, 4 % faster), Q5_K free (164: capped, it spills, 12 %
 * slower); two columns at 3 (Q5_K 199 -> 165 and 26 % faster, Q6_K 238
 * -> 168 and 9 %); more free.  kernels/dev/matvec_xq.cu, perf-log.
 */
static constexpr int
mv_minb(int type, int nt)
{
	return (nt == 1 ? (type == RS_TYPE_Q5_K ? 1 : 4) : nt == 2 ? 3 : 1);
}
/*
 * Rows of whole 256-value super-blocks (every weight of the qwen35 models):
 * one warp per row walks the row's super-blocks in order, U per step so
 * that each warp keeps U loads of every kind in flight, and each lane
 * decodes 8 values per super-block (matvec_sb.cuh) that serve all NT
 * columns; a warp takes R rows so that the x loads serve R rows.
 *
 * Every y[t][o] is summed in one order (super-block by super-block, lane
 * by lane, then the warp reduction) whatever NT, R and U are, so a batch of
 * tokens gives bit for bit the logits of the same tokens one at a time: a
 * verification pass and its rollback are exact, as on the CPU.
 *
 * Measured on the H200 (kernels/dev/matvec_q4_k.cu, Q4_K 65536 x 5120, one
 * column): 1220 GB/s with U = 4, against 764 GB/s for a split-K layout;
 * the profile shows it instruction-bound (SM 72 %, DRAM 25 %).
 */
template <int TYPE, int NT, int R, int U>
static __global__ void __launch_bounds__(MV_WARPS * RS_WARP)
matvec_rows_kernel(const uint8_t *__restrict__ w, int64_t n_in,
    int64_t n_out, int64_t row_bytes, const float *__restrict__ x,
    int64_t ldx, float *__restrict__ y, int64_t ldy, int accumulate)
{
	const int	 lane = threadIdx.x % RS_WARP;
	const int64_t	 o0 = ((int64_t)blockIdx.x * MV_WARPS +
	    threadIdx.x / RS_WARP) * R;
	const int64_t	 nb = n_in / 256;
	const int	 xb = sb<TYPE>::base(lane);
	float		 acc[R][NT];

	if (o0 >= n_out)
		return;
#pragma unroll
	for (int r = 0; r < R; r++)
#pragma unroll
		for (int t = 0; t < NT; t++)
			acc[r][t] = 0.0f;
	for (int64_t bi = 0; bi < nb; bi += U) {
		float wv[U][R][8];
#pragma unroll
		for (int u = 0; u < U; u++)
#pragma unroll
			for (int r = 0; r < R; r++) {
				int64_t o = o0 + r < n_out ? o0 + r : n_out - 1;
				if (bi + u < nb)
					sb<TYPE>::load(w + o * row_bytes, bi + u,
					    lane, wv[u][r]);
			}
#pragma unroll
		for (int u = 0; u < U; u++) {
			if (bi + u >= nb)
				break;
#pragma unroll
			for (int t = 0; t < NT; t++) {
				float xv[8];
				load_x<sb<TYPE>::xp>(x + t * ldx +
				    (bi + u) * 256 + xb, xv);
#pragma unroll
				for (int r = 0; r < R; r++)
#pragma unroll
					for (int i = 0; i < 8; i++)
						acc[r][t] = fmaf(wv[u][r][i], xv[i],
						    acc[r][t]);
			}
		}
	}
#pragma unroll
	for (int r = 0; r < R; r++)
#pragma unroll
		for (int t = 0; t < NT; t++) {
			float v = warp_sum(acc[r][t]);
			if (lane == 0 && o0 + r < n_out) {
				float *dst = y + t * ldy + o0 + r;
				*dst = accumulate ? *dst + v : v;
			}
		}
}

/*
 * The integer path: x in the 16-bit format of rs_xq.h (XQ: the launch's
 * columns in their batch), Q4_K / Q5_K / Q6_K weights, summed in the
 * canonical order of matvec_xq.cuh: lane v of a warp is virtual lane v of
 * each of its R rows, taking the row's 64-value chunks v, v + 32, ...
 * (four lanes share a super-block, a warp reads eight consecutive ones),
 * U chunks a step in flight; each lane's chunk is decoded once for all NT
 * columns, and each x load serves the R rows.  R and U change no sum:
 * matvec_launch::go_xq picks them from kernels/dev/matvec_xq.cu's
 * timings.  This is the decode kernel (NT = 1), the two-column one, and
 * before SM80 every column count's; matvec_mma.cuh gives the same bits on
 * tensor cores.
 *
 * Instructions per 64 weights of a lane, one column: 3 (Q4_K) to 20
 * (Q6_K) loads of weights, 10 / R of x, ~16 nibble operations, 32 dp4a
 * and ~10 for scales and the float tail: ~1 per weight.  Each further
 * column adds 10 / R loads, 32 dp4a and ~10 more.  What limits it is not
 * the issue rate but the L1's sectors (ncu: L1/TEX 83 % busy, DRAM 38 %,
 * at R = 2): a lane's 16-byte loads of x and of weights each touch their
 * own 32-byte sector, and x is 2 bytes a value against the weights'
 * 0.56-0.82; hence R = 4.  BS1 as for xq_chunk_dot.
 */
template <int TYPE, int NT, int R, int U, bool BS1 = false>
static __global__ void __launch_bounds__(MV_WARPS * RS_WARP,
    mv_minb(TYPE, NT))
matvec_xq_kernel(const mv_parts parts, int64_t n_in, const xq_in xq)
{
	const mv_part	 pt = mv_part_of(parts, blockIdx.x);
	const uint8_t	*__restrict__ w = pt.w;
	float		*__restrict__ y = pt.y;
	const int64_t	 n_out = pt.n_out, row_bytes = pt.row_bytes;
	const int64_t	 ldy = pt.ldy;
	const int	 accumulate = pt.acc;
	const int	 lane = threadIdx.x % RS_WARP;
	const int64_t	 o0 = (pt.blk * MV_WARPS + threadIdx.x / RS_WARP) * R;
	const int64_t	 nc = n_in / 64;
	const xq_at	 x = xq_at_of(xq, n_in);
	const uint8_t	*row[R];
	float		 acc[R][NT];

	rs_pdl_trigger();
	if (o0 >= n_out)
		return;
#pragma unroll
	for (int r = 0; r < R; r++) {
		/* rows past the last read it again and write nothing */
		row[r] = w + (o0 + r < n_out ? o0 + r : n_out - 1) * row_bytes;
#pragma unroll
		for (int t = 0; t < NT; t++)
			acc[r][t] = 0.0f;
	}
	/* decode launches this kernel early (mv_launch): x is the output of
	   the kernel before, so nothing is read before the wait */
	rs_pdl_wait();
	int64_t k = lane;
	for (; k + (U - 1) * RS_WARP < nc; k += U * RS_WARP) {
		xq_chunk c[U][R];
#pragma unroll
		for (int u = 0; u < U; u++)
#pragma unroll
			for (int r = 0; r < R; r++)
				xqc<TYPE>::load(row[r], (k + u * RS_WARP) / 4,
				    (int)(k % 4), &c[u][r]);
#pragma unroll
		for (int u = 0; u < U; u++)
			xq_chunk_dot<TYPE, NT, R, BS1>(c[u], x,
			    (k + u * RS_WARP) / 4, acc);
	}
	for (; k < nc; k += RS_WARP) {
		xq_chunk c[R];
#pragma unroll
		for (int r = 0; r < R; r++)
			xqc<TYPE>::load(row[r], k / 4, (int)(k % 4), &c[r]);
		xq_chunk_dot<TYPE, NT, R, BS1>(c, x, k / 4, acc);
	}
#pragma unroll
	for (int r = 0; r < R; r++)
#pragma unroll
		for (int t = 0; t < NT; t++) {
			float v = warp_sum(acc[r][t]);
			if (lane == 0 && o0 + r < n_out) {
				float *dst = y + t * ldy + o0 + r;
				*dst = accumulate ? *dst + v : v;
			}
		}
}

/*
 * Rows that are not whole super-blocks (no qwen35 weight; other GGUFs):
 * one warp per row over chunks of 8 values (quant.cuh), one column.
 */
template <int TYPE, int NT>
static __global__ void __launch_bounds__(MV_WARPS * RS_WARP)
matvec_kernel(const uint8_t *__restrict__ w, int64_t n_in, int64_t n_out,
    int64_t row_bytes, const float *__restrict__ x, int64_t ldx,
    float *__restrict__ y, int64_t ldy, int accumulate)
{
	int64_t	o = (int64_t)blockIdx.x * MV_WARPS + threadIdx.x / RS_WARP;
	int	lane = threadIdx.x % RS_WARP;
	float	acc[NT];

	if (o >= n_out)
		return;
	const uint8_t *row = w + o * row_bytes;
	for (int t = 0; t < NT; t++)
		acc[t] = 0.0f;
	for (int64_t c = lane; c < n_in / 8; c += RS_WARP) {
		float v[8];
		dequant8<TYPE>(row, c, v);
		for (int t = 0; t < NT; t++) {
			const float4 *xp = (const float4 *)(x + t * ldx + 8 * c);
			float4 a = __ldg(xp), b = __ldg(xp + 1);
			acc[t] += v[0] * a.x + v[1] * a.y + v[2] * a.z +
			    v[3] * a.w + v[4] * b.x + v[5] * b.y + v[6] * b.z +
			    v[7] * b.w;
		}
	}
	for (int t = 0; t < NT; t++) {
		float s = warp_sum(acc[t]);
		if (lane == 0) {
			float *dst = y + t * ldy + o;
			*dst = accumulate ? *dst + s : s;
		}
	}
}

/* Types the 27B models use: every column count 1..8 and 16 is compiled. */
static bool
hot_type(int type)
{
	return (type == RS_TYPE_Q4_K || type == RS_TYPE_Q5_K ||
	    type == RS_TYPE_Q6_K || type == RS_TYPE_Q8_0 || type == RS_TYPE_F16);
}

/*
 * The largest compiled column count not above N: 1..8 and 16 for the hot
 * types, 1, 4 and 16 for the others (whose files are rare: extra launches
 * there cost compile time nothing and run time a little).
 */
static int
pick_cols(int type, int n)
{
	if (n >= 16)
		return (16);
	if (hot_type(type))
		return (n > 8 ? 8 : n);
	return (n >= 4 ? 4 : 1);
}

#ifndef __CUDACC_RTC__
/*
 * The persistent grid of matvec_xq_pipe_kernel<TYPE, NT, R, S, BULK> on the
 * current device: as many CTAs as fit at once.  The first call per device
 * raises the kernel's shared-memory limit (above 48 KB needs it) and asks
 * the occupancy calculator; later calls read the cache.  Never 0: at
 * least one CTA an SM.
 */
template <int TYPE, int NT, int R, int S, bool BULK>
static unsigned
pipe_resident(void)
{
	static int	 per_sm[64], sms[64];
	const auto	 kernel = matvec_xq_pipe_kernel<TYPE, NT, R, S, BULK>;
	const int	 smem = pipe_smem_bytes<TYPE, R, S>();
	int		 dev = 0;

	if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64)
		dev = 0;
	if (per_sm[dev] == 0) {
		int n = 0;

		(void)cudaFuncSetAttribute(kernel,
		    cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
		if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel,
		    PIPE_WARPS * RS_WARP, smem) != cudaSuccess || n < 1)
			n = 1;
		if (cudaDeviceGetAttribute(&sms[dev],
		    cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
		    sms[dev] < 1)
			sms[dev] = 1;
		(void)cudaGetLastError();	/* not sticky: clear it */
		per_sm[dev] = n;
	}
	return ((unsigned)(per_sm[dev] * sms[dev]));
}
#endif

#ifndef __CUDACC_RTC__
/*
 * Launch K (an integer matvec kernel) on S, with PDL as a programmatic
 * dependent of the stream's previous kernel: it may start while that one
 * finishes, and touches nothing but weights before its rs_pdl_wait
 * (common.cuh).  A launch failure is left for cudaGetLastError, like
 * <<<>>>.
 */
static void
mv_launch(void (*k)(const mv_parts, int64_t, const xq_in), unsigned grid,
    unsigned threads, size_t smem, cudaStream_t s, int pdl,
    const mv_parts &p, int64_t n_in, const xq_in &xq)
{
	struct rs_launch l;

	rs_launch_init(&l, dim3(grid), dim3(threads), smem, s, pdl);
	(void)cudaLaunchKernelEx(&l.cfg, k, p, n_in, xq);
}
#endif

struct matvec_launch {
	const uint8_t	*w;
	int64_t		 n_in, n_out, row_bytes, ldx, ldy;
	const float	*x;
	xq_in		 xq;	/* xq.p NULL: the f32 path */
	float		*y;
	int		 n_tok, accumulate;
	cudaStream_t	 stream;
	mv_parts	 parts;	/* the integer path: every product (w, y: the
				   first's) */

	/*
	 * The integer path: tensor cores for 2..16 columns where the
	 * device runs them (SM80 on), dp4a otherwise.  Both give the same
	 * bits (matvec_xq.cuh), so the choice may depend on NT.
	 */
	template <int TYPE, int NT>
	void
	go_xq(void)
	{
		/*
		 * Two columns: four rows a warp on dp4a beat the tensor-core
		 * kernel on every 27B matrix (each x load serves four rows;
		 * the mma kernel's quad of columns would idle half of its
		 * float tail).  Three and more: tensor cores where the device
		 * runs them (SM80 on) and the offsets in the batch of columns
		 * fit the kernel's 32 bits (MMA_MAX_IN).  Both give
		 * the same bits (matvec_xq.cuh), so the choice may depend on
		 * NT.
		 */
		if constexpr (NT > 2) {
			int mma = 0;

			/* a host runtime call: NVRTC's check of the kernels
			   (scripts/cuda129-nvrtc.sh) compiles without it */
#ifndef __CUDACC_RTC__
			mma = xq.nb * n_in <= MMA_MAX_IN &&
			    has_mma_matvec();
#endif
			if (mma) {
				go_mma<TYPE, NT>();
				return;
			}
		}
		/*
		 * Q6_K, one and two columns, from SM80 on: the weights
		 * stream through shared memory (matvec_pipe.cuh), faster than
		 * the register-fed kernel on its 27B matrices, from SM90 on
		 * by bulk copies (one column: ffn_down 30.5 µs against 33.1
		 * by cp.async and 35.0 on registers, the head 309 against
		 * 365 and 378; two: ffn_down 39.6 against 45.7 and 51.4):
		 * docs/perf-log.md, sessions 4 and 5.  Not for Q4_K or Q5_K,
		 * where both forms lose to dp4a (ffn_up 24-25 against 20).
		 * has_mma_matvec() and has_bulk_matvec() test that this
		 * device runs code built for SM80 or SM90 on, where the
		 * kernel has its body.  The copies round a row's slice out
		 * to 16-byte boundaries, which needs the tensor's first row
		 * there (every GGUF tensor is), and in bulk its end too.
		 */
		if constexpr (TYPE == RS_TYPE_Q6_K && NT <= 2) {
			int pipe = 0, bulk = 0;
#ifndef __CUDACC_RTC__
			pipe = has_mma_matvec() && pipe_aligned();
			bulk = has_bulk_matvec() && bulk_aligned();
#endif
			if (bulk) {
				/* four rows a warp for two columns and a
				   head's ~250k (309 against 343 µs), two for
				   ffn_down (30.5 against 35.2) */
				if (NT == 1 && rows() < 65536)
					go_pipe<TYPE, NT, 2, 2, true>();
				else
					go_pipe<TYPE, NT, 4, 2, true>();
				return;
			}
			if (pipe) {
				/* two rows a warp (more CTAs on 5,120 rows),
				   four for two columns and a head's ~250k */
				if (NT == 1 && rows() < 65536)
					go_pipe<TYPE, NT, 2, 2, false>();
				else
					go_pipe<TYPE, NT, 4, 2, false>();
				return;
			}
		}
		/*
		 * Rows per warp R and chunks in flight per lane U change no
		 * sum: four rows a warp, one chunk each, was the fastest
		 * one-column shape on every matrix of the 27B in
		 * kernels/dev/matvec_xq.cu (docs/perf-log.md); wider groups
		 * on dp4a (before SM80) keep two rows for registers.
		 */
		if (NT <= 4)
			go_dp4a<TYPE, NT, 4, 1>();
		else
			go_dp4a<TYPE, NT, 2, 1>();
	}

	/* one column whose blocks are consecutive: BS1 (the decode step) */
	template <int TYPE, int NT, int R, int U>
	void
	go_dp4a(void)
	{
		if (NT == 1 && (!xq.bm || xq.nb == 1))
			go_dp4a_k<TYPE, NT, R, U, NT == 1>();
		else
			go_dp4a_k<TYPE, NT, R, U, false>();
	}

	template <int TYPE, int NT, int R, int U, bool BS1>
	void
	go_dp4a_k(void)
	{
		const unsigned grid = mv_parts_grid(&parts, MV_WARPS * R);
#ifndef __CUDACC_RTC__
		mv_launch(matvec_xq_kernel<TYPE, NT, R, U, BS1>, grid,
		    MV_WARPS * RS_WARP, 0, stream, pdl<NT>(), parts, n_in, xq);
#else
		matvec_xq_kernel<TYPE, NT, R, U, BS1><<<grid, MV_WARPS * RS_WARP,
		    0, stream>>>(parts, n_in, xq);
#endif
	}

	/*
	 * The dp4a and pipe kernels (decode's one column, two-token
	 * verification) start early where the device runs SM90 code: they
	 * read x and y only after rs_pdl_wait.  The mma kernel (3..16
	 * columns) keeps plain launches: it has no wait.
	 */
	template <int NT>
	int
	pdl(void) const
	{
#ifndef __CUDACC_RTC__
		return (NT <= 2 && has_bulk_matvec());
#else
		return (0);
#endif
	}

	/* rows of all parts */
	int64_t
	rows(void) const
	{
		int64_t n = 0;

		for (int i = 0; i < parts.n; i++)
			n += parts.n_out[i];
		return (n);
	}

	/* Does every part's first row start at a multiple of 16 bytes? */
	bool
	pipe_aligned(void) const
	{
		for (int i = 0; i < parts.n; i++)
			if ((uintptr_t)parts.w[i] % 16 != 0)
				return (false);
		return (true);
	}

	/*
	 * And does every part end there too?  Then the bulk copies, which
	 * round a slice out to 16-byte boundaries, read only the tensor.
	 */
	bool
	bulk_aligned(void) const
	{
		for (int i = 0; i < parts.n; i++)
			if ((parts.n_out[i] * parts.row_bytes[i]) % 16 != 0)
				return (false);
		return (pipe_aligned());
	}

	template <int TYPE, int NT, int R, int S, bool BULK>
	void
	go_pipe(void)
	{
		constexpr int smem = pipe_smem_bytes<TYPE, R, S>();
		unsigned grid = mv_parts_grid(&parts, PIPE_WARPS * R);

#ifndef __CUDACC_RTC__
		const unsigned resident = pipe_resident<TYPE, NT, R, S,
		    BULK>();
		if (grid > resident)
			grid = resident;
#endif
#ifndef __CUDACC_RTC__
		mv_launch(matvec_xq_pipe_kernel<TYPE, NT, R, S, BULK>, grid,
		    PIPE_WARPS * RS_WARP, smem, stream, pdl<NT>(), parts, n_in,
		    xq);
#else
		matvec_xq_pipe_kernel<TYPE, NT, R, S, BULK><<<grid, PIPE_WARPS *
		    RS_WARP, smem, stream>>>(parts, n_in, xq);
#endif
	}

	template <int TYPE, int NT>
	void
	go_mma(void)
	{
		/*
		 * One super-block per warp and step, in CTAs of 8 warps.
		 * Registers for three CTAs an SM (80) where a quad of columns
		 * fits them: Q4_K/Q5_K up to 4 columns, and up to 8 on launches
		 * of few rows (5,120: ffn_down, ssm_out, attn_o, too few warp
		 * tasks for two rounds of the warp slots); two CTAs (128) for
		 * Q6_K, whose decode needs them, and the tall launches of 5-8
		 * columns; 16 columns unbounded (spills otherwise) but on the
		 * head's ~250k rows, where two CTAs an SM win (1,014 against
		 * 1,207 µs).  Measured on x's block-major batches with
		 * kernels/dev/matvec_xq.cu (docs/perf-log.md; two super-blocks
		 * a warp no longer win anywhere).
		 */
		const int64_t n = rows();
		if (NT <= 8 && TYPE != RS_TYPE_Q6_K && (NT <= 4 || n <= 8192))
			go_mma_spw<TYPE, NT, 1, 3>();
		else if (NT <= 8 || n > 65536)
			go_mma_spw<TYPE, NT, 1, 2>();
		else
			go_mma_spw<TYPE, NT, 1, 1>();
	}

	template <int TYPE, int NT, int SPW, int MINB>
	void
	go_mma_spw(void)
	{
		dim3 grid(mv_parts_grid(&parts, MMA_ROWS));
		matvec_xq_mma_kernel<TYPE, NT, SPW, MINB><<<grid,
		    8 / SPW * RS_WARP, 0, stream>>>(parts, n_in, xq);
	}

	template <int TYPE, int NT, int R, int U>
	void
	go_rows(void)
	{
		const int64_t rows = MV_WARPS * R;
		dim3 grid((unsigned)((n_out + rows - 1) / rows));
		matvec_rows_kernel<TYPE, NT, R, U><<<grid, MV_WARPS * RS_WARP,
		    0, stream>>>(w, n_in, n_out, row_bytes, x, ldx, y, ldy,
		    accumulate);
	}

	/*
	 * Shapes per column count, tuned for registers: one column keeps four
	 * super-blocks in flight; more columns share each decoded value and
	 * the x loads over two rows.
	 */
	template <int TYPE, int NT>
	void
	go(void)
	{
		if constexpr (NT == 1)
			go_rows<TYPE, 1, 1, 4>();
		else if constexpr (NT <= 4)
			go_rows<TYPE, NT, 2, 2>();
		else
			go_rows<TYPE, NT, 1, 2>();
	}

	/* rows that are not whole super-blocks: one column at a time */
	template <int TYPE>
	void
	go_small(void)
	{
		dim3 grid((unsigned)((n_out + MV_WARPS - 1) / MV_WARPS));
		matvec_kernel<TYPE, 1><<<grid, MV_WARPS * RS_WARP, 0, stream>>>(
		    w, n_in, n_out, row_bytes, x, ldx, y, ldy, accumulate);
	}

	template <int TYPE>
	void
	operator()(void)
	{
		if (n_in % 256 != 0) {
			go_small<TYPE>();
			return;
		}
		if constexpr (TYPE == RS_TYPE_Q4_K || TYPE == RS_TYPE_Q5_K ||
		    TYPE == RS_TYPE_Q6_K) {
			if (xq.p != NULL) {
				switch (n_tok) {
#define NT_CASE(n) case n: go_xq<TYPE, n>(); break;
				NT_CASE(1) NT_CASE(2) NT_CASE(3) NT_CASE(4)
				NT_CASE(5) NT_CASE(6) NT_CASE(7) NT_CASE(8)
#undef NT_CASE
				default: go_xq<TYPE, 16>(); break;
				}
				return;
			}
		}
		if (!hot_type(TYPE)) {
			switch (n_tok) {
			case 1: go<TYPE, 1>(); break;
			case 4: go<TYPE, 4>(); break;
			default: go<TYPE, 16>(); break;
			}
			return;
		}
		switch (n_tok) {
#define NT_CASE(n) case n: go<TYPE, n>(); break;
		NT_CASE(1) NT_CASE(2) NT_CASE(3) NT_CASE(4)
		NT_CASE(5) NT_CASE(6) NT_CASE(7) NT_CASE(8)
#undef NT_CASE
		default: go<TYPE, 16>(); break;
		}
	}
};

extern "C" int
rs_k_xq_block_major(int nb)
{
#ifndef __CUDACC_RTC__
	return (nb >= RS_K_XQ_BM_MIN && has_mma_matvec());
#else
	return (0);
#endif
}

/* Whether the integer path takes W: rs_k_matvec's contract. */
static int
xq_path(int type, int64_t n_in, const rs_k_xq_cols &xq)
{
	return (xq.d != NULL && n_in % 256 == 0 && (type == RS_TYPE_Q4_K ||
	    type == RS_TYPE_Q5_K || type == RS_TYPE_Q6_K));
}

static enum rs_status
check_args(const struct rs_k_mv_part *pt, int64_t n_in, const float *d_x,
    int64_t ldx, const rs_k_xq_cols &xq, int n_tok, struct rs_err *err)
{
	if (n_tok < 1 || n_tok > RS_K_MATVEC_MAX_COLS || n_in <= 0 ||
	    n_in % 8 != 0 || pt->n_out <= 0 || ldx % 4 != 0 ||
	    ((uintptr_t)d_x & 15) != 0 || ((uintptr_t)xq.d & 15) != 0)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "matvec: n_tok %d, n_in %lld, n_out %lld, ldx %lld "
		    "(need 1..16 columns, n_in a multiple of 8, aligned x)",
		    n_tok, (long long)n_in, (long long)pt->n_out,
		    (long long)ldx));
	if (xq.d != NULL && (n_in % RS_XQ_BLOCK != 0 || xq.t0 < 0 ||
	    xq.nb < xq.t0 + n_tok))
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "matvec: columns %d..%d of a batch of %d, n_in %lld (need "
		    "the columns inside the batch, n_in a multiple of 32)",
		    xq.t0, xq.t0 + n_tok - 1, xq.nb, (long long)n_in));
	/* the integer path reads Q4_K / Q5_K blocks with 16-byte loads */
	if (xq.d != NULL && (pt->type == RS_TYPE_Q4_K ||
	    pt->type == RS_TYPE_Q5_K) &&
	    (((uintptr_t)pt->d_w | (uintptr_t)pt->row_bytes) & 15) != 0)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "matvec: %s weights at %p, rows %lld bytes apart: the "
		    "integer path needs 16-byte alignment",
		    rs_type_name(pt->type), pt->d_w,
		    (long long)pt->row_bytes));
	return (RS_OK);
}

/*
 * The NP products at PARTS (one type; several only on the integer path)
 * in launches of up to 16 columns.
 */
static enum rs_status
matvec_cols(const struct rs_k_mv_part *parts, int np, int64_t n_in,
    const float *d_x, int64_t ldx, const rs_k_xq_cols &xq, int n_tok,
    cudaStream_t stream, struct rs_err *err)
{
	const struct rs_k_mv_part *p0 = &parts[0];

	for (int done = 0; done < n_tok; ) {
		const int k = n_in % 256 != 0 ? 1 :
		    pick_cols(p0->type, n_tok - done);
		const xq_in xk = { (const uint8_t *)xq.d, xq.nb, xq.t0 + done,
		    rs_k_xq_block_major(xq.nb) };
		matvec_launch l = { (const uint8_t *)p0->d_w, n_in, p0->n_out,
		    p0->row_bytes, ldx, p0->ldy, d_x + done * ldx, xk,
		    p0->d_y + done * p0->ldy, k, p0->accumulate, stream, {} };
		for (int j = 0; j < np; j++) {
			l.parts.w[j] = (const uint8_t *)parts[j].d_w;
			l.parts.y[j] = parts[j].d_y + done * parts[j].ldy;
			l.parts.n_out[j] = parts[j].n_out;
			l.parts.row_bytes[j] = parts[j].row_bytes;
			l.parts.ldy[j] = parts[j].ldy;
			l.parts.acc[j] = parts[j].accumulate;
		}
		l.parts.n = np;
		if (!dispatch_type(p0->type, l))
			return (rs_errf(err, RS_ERR_UNSUPPORTED,
			    "matvec: no device decoder for %s",
			    rs_type_name(p0->type)));
		RS_LAUNCH_CHECK(err, "matvec");
		done += k;
	}
	return (RS_OK);
}

extern "C" enum rs_status
rs_k_matvec_parts(const struct rs_k_mv_part *parts, int n_parts,
    int64_t n_in, const float *d_x, int64_t ldx, struct rs_k_xq_cols xq,
    int n_tok, cudaStream_t stream, struct rs_err *err)
{
	struct rs_k_mv_part group[RS_K_MATVEC_MAX_PARTS];
	int done[RS_K_MATVEC_MAX_PARTS] = { 0 };
	enum rs_status st;

	if (n_parts < 1 || n_parts > RS_K_MATVEC_MAX_PARTS)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "matvec: %d products in one call (1..%d)", n_parts,
		    RS_K_MATVEC_MAX_PARTS));
	for (int i = 0; i < n_parts; i++)
		if ((st = check_args(&parts[i], n_in, d_x, ldx, xq, n_tok,
		    err)) != RS_OK)
			return (st);
	/*
	 * One launch per type on the integer path (a GDN layer whose qkv
	 * is Q6_K and whose gate, beta and alpha are Q4_K: two, not four),
	 * one per product otherwise.  Products are independent, so the
	 * order of the launches changes no bit.
	 */
	for (int i = 0; i < n_parts; i++) {
		const int ip = xq_path(parts[i].type, n_in, xq);
		int n = 0;

		if (done[i])
			continue;
		for (int j = i; j < n_parts; j++)
			if (!done[j] && (j == i || (ip && parts[j].type ==
			    parts[i].type))) {
				group[n++] = parts[j];
				done[j] = 1;
			}
		if ((st = matvec_cols(group, n, n_in, d_x, ldx, xq, n_tok,
		    stream, err)) != RS_OK)
			return (st);
	}
	return (RS_OK);
}

extern "C" enum rs_status
rs_k_matvec(const void *d_w, int type, int64_t n_in, int64_t n_out,
    int64_t row_bytes, const float *d_x, int64_t ldx, struct rs_k_xq_cols xq,
    float *d_y, int64_t ldy, int n_tok, int accumulate, cudaStream_t stream,
    struct rs_err *err)
{
	const struct rs_k_mv_part pt = { d_w, type, n_out, row_bytes, d_y,
	    ldy, accumulate };

	return (rs_k_matvec_parts(&pt, 1, n_in, d_x, ldx, xq, n_tok, stream,
	    err));
}

/* ---- embedding rows ---- */

template <int TYPE>
static __global__ void
embed_kernel(const uint8_t *__restrict__ w, int64_t n_embd, int64_t row_bytes,
    const int32_t *__restrict__ tokens, float *__restrict__ y)
{
	const uint8_t *row = w + (int64_t)tokens[blockIdx.x] * row_bytes;
	float	*dst = y + (int64_t)blockIdx.x * n_embd;

	for (int64_t c = threadIdx.x; c < n_embd / 8; c += blockDim.x) {
		float v[8];
		dequant8<TYPE>(row, c, v);
		for (int i = 0; i < 8; i++)
			dst[8 * c + i] = v[i];
	}
}

struct embed_launch {
	const uint8_t	*w;
	int64_t		 n_embd, row_bytes;
	const int32_t	*tokens;
	float		*y;
	int		 n_tok;
	cudaStream_t	 stream;

	template <int TYPE>
	void
	operator()(void)
	{
		embed_kernel<TYPE><<<n_tok, 128, 0, stream>>>(w, n_embd,
		    row_bytes, tokens, y);
	}
};

extern "C" enum rs_status
rs_k_embed(const void *d_w, int type, int64_t n_embd, int64_t row_bytes,
    int64_t n_vocab, const int32_t *d_tokens, int n_tok, float *d_y,
    cudaStream_t stream, struct rs_err *err)
{
	embed_launch l = { (const uint8_t *)d_w, n_embd, row_bytes, d_tokens,
	    d_y, n_tok, stream };

	(void)n_vocab;	/* token ids are validated on the host */
	if (n_tok < 1 || n_embd % 8 != 0)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "embed: n_tok %d, n_embd %lld", n_tok, (long long)n_embd));
	if (!dispatch_type(type, l))
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "embed: no device decoder for %s", rs_type_name(type)));
	RS_LAUNCH_CHECK(err, "embed");
	return (RS_OK);
}
