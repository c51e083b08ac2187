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
 * The integer path: x in the 16-bit format of rs_xq.h (XQ, column t at
 * t·RS_XQ_COL_BYTES(n_in)), Q4_K / Q5_K / Q6_K weights, summed in the
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
 * 0.56-0.82; hence R = 4.
 */
template <int TYPE, int NT, int R, int U>
static __global__ void __launch_bounds__(MV_WARPS * RS_WARP)
matvec_xq_kernel(const mv_parts parts, int64_t n_in,
    const uint8_t *__restrict__ xq)
{
	const mv_part	 pt = mv_part_of(parts, blockIdx.x);
	const uint8_t	*__restrict__ w = pt.w;
	float		*__restrict__ y = pt.y;
	const int64_t	 n_out = pt.n_out, row_bytes = pt.row_bytes;
	const int64_t	 ldy = pt.ldy;
	const int	 accumulate = pt.acc;
	const int	 lane = threadIdx.x % RS_WARP;
	const int64_t	 o0 = (pt.blk * MV_WARPS + threadIdx.x / RS_WARP) * R;
	const int64_t	 nc = n_in / 64, ldq = RS_XQ_COL_BYTES(n_in);
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
			xq_chunk_dot<TYPE, NT, R>(c[u], xq, ldq, n_in,
			    (k + u * RS_WARP) / 4, acc);
	}
	for (; k < nc; k += RS_WARP) {
		xq_chunk c[R];
#pragma unroll
		for (int r = 0; r < R; r++)
			xqc<TYPE>::load(row[r], k / 4, (int)(k % 4), &c[r]);
		xq_chunk_dot<TYPE, NT, R>(c, xq, ldq, n_in, k / 4, acc);
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
mv_launch(void (*k)(const mv_parts, int64_t, const uint8_t *), unsigned grid,
    unsigned threads, size_t smem, cudaStream_t s, int pdl,
    const mv_parts &p, int64_t n_in, const uint8_t *xq)
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
	const uint8_t	*xq;	/* NULL: the f32 path */
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
		 * runs them (SM80 on) and the columns' offsets fit the
		 * kernel's 32 bits (rows of up to 2^26 values).  Both give
		 * the same bits (matvec_xq.cuh), so the choice may depend on
		 * NT.
		 */
		if constexpr (NT > 2) {
			int mma = 0;

			/* a host runtime call: NVRTC's check of the kernels
			   (scripts/cuda129-nvrtc.sh) compiles without it */
#ifndef __CUDACC_RTC__
			mma = n_in <= MMA_MAX_IN && has_mma_matvec();
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

	template <int TYPE, int NT, int R, int U>
	void
	go_dp4a(void)
	{
		const unsigned grid = mv_parts_grid(&parts, MV_WARPS * R);
#ifndef __CUDACC_RTC__
		mv_launch(matvec_xq_kernel<TYPE, NT, R, U>, grid, MV_WARPS *
		    RS_WARP, 0, stream, pdl<NT>(), parts, n_in, xq);
#else
		matvec_xq_kernel<TYPE, NT, R, U><<<grid, MV_WARPS * RS_WARP, 0,
		    stream>>>(parts, n_in, xq);
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
		 * One super-block per warp and step; registers capped for two
		 * CTAs an SM up to 8 columns (more bytes in flight), free for
		 * 16 (spills otherwise).  A launch of few rows (5,120: ffn_down,
		 * ssm_out, attn_o) has too few warp tasks for two rounds of
		 * the GPU's warp slots: there one quad of columns runs in 80
		 * registers, three CTAs an SM, which also serves Q6_K (3-10 %
		 * faster than two super-blocks a warp, 5 % on the head), and
		 * 5-8 columns take two super-blocks a warp and step
		 * in CTAs of 4 warps (more independent work a warp; 12-19 %
		 * faster on those matrices, slower on the tall ones and on
		 * Q6_K, whose decode needs the registers).  Measured with
		 * kernels/dev/matvec_xq.cu (docs/perf-log.md).
		 */
		const bool short_launch = rows() <= 8192;
		if (NT <= 4 && (short_launch || TYPE == RS_TYPE_Q6_K))
			go_mma_spw<TYPE, NT, 1, 3>();
		else if (NT <= 8 && TYPE != RS_TYPE_Q6_K && short_launch)
			go_mma_spw<TYPE, NT, 2, 3>();
		else if (NT <= 8)
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
			if (xq != NULL) {
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

/* Whether the integer path takes W: rs_k_matvec's contract. */
static int
xq_path(int type, int64_t n_in, const void *d_xq)
{
	return (d_xq != NULL && n_in % 256 == 0 && (type == RS_TYPE_Q4_K ||
	    type == RS_TYPE_Q5_K || type == RS_TYPE_Q6_K));
}

static enum rs_status
check_args(const struct rs_k_mv_part *pt, int64_t n_in, const float *d_x,
    int64_t ldx, const void *d_xq, int n_tok, struct rs_err *err)
{
	if (n_tok < 1 || n_tok > RS_K_MATVEC_MAX_COLS || n_in <= 0 ||
	    n_in % 8 != 0 || pt->n_out <= 0 || ldx % 4 != 0 ||
	    ((uintptr_t)d_x & 15) != 0 || ((uintptr_t)d_xq & 15) != 0 ||
	    (d_xq != NULL && n_in % RS_XQ_BLOCK != 0))
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "matvec: n_tok %d, n_in %lld, n_out %lld, ldx %lld "
		    "(need 1..16 columns, n_in a multiple of 8, aligned x)",
		    n_tok, (long long)n_in, (long long)pt->n_out,
		    (long long)ldx));
	/* the integer path reads Q4_K / Q5_K blocks with 16-byte loads */
	if (d_xq != NULL && (pt->type == RS_TYPE_Q4_K ||
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
    const float *d_x, int64_t ldx, const void *d_xq, int n_tok,
    cudaStream_t stream, struct rs_err *err)
{
	const struct rs_k_mv_part *p0 = &parts[0];

	for (int done = 0; done < n_tok; ) {
		const int k = n_in % 256 != 0 ? 1 :
		    pick_cols(p0->type, n_tok - done);
		const uint8_t *xq = d_xq == NULL ? NULL :
		    (const uint8_t *)d_xq + done * RS_XQ_COL_BYTES(n_in);
		matvec_launch l = { (const uint8_t *)p0->d_w, n_in, p0->n_out,
		    p0->row_bytes, ldx, p0->ldy, d_x + done * ldx, xq,
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
    int64_t n_in, const float *d_x, int64_t ldx, const void *d_xq,
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
		if ((st = check_args(&parts[i], n_in, d_x, ldx, d_xq, n_tok,
		    err)) != RS_OK)
			return (st);
	/*
	 * One launch per type on the integer path (a GDN layer whose qkv
	 * is Q6_K and whose gate, beta and alpha are Q4_K: two, not four),
	 * one per product otherwise.  Products are independent, so the
	 * order of the launches changes no bit.
	 */
	for (int i = 0; i < n_parts; i++) {
		const int xq = xq_path(parts[i].type, n_in, d_xq);
		int n = 0;

		if (done[i])
			continue;
		for (int j = i; j < n_parts; j++)
			if (!done[j] && (j == i || (xq && parts[j].type ==
			    parts[i].type))) {
				group[n++] = parts[j];
				done[j] = 1;
			}
		if ((st = matvec_cols(group, n, n_in, d_x, ldx, d_xq, n_tok,
		    stream, err)) != RS_OK)
			return (st);
	}
	return (RS_OK);
}

extern "C" enum rs_status
rs_k_matvec(const void *d_w, int type, int64_t n_in, int64_t n_out,
    int64_t row_bytes, const float *d_x, int64_t ldx, const void *d_xq,
    float *d_y, int64_t ldy, int n_tok, int accumulate, cudaStream_t stream,
    struct rs_err *err)
{
	const struct rs_k_mv_part pt = { d_w, type, n_out, row_bytes, d_y,
	    ldy, accumulate };

	return (rs_k_matvec_parts(&pt, 1, n_in, d_x, ldx, d_xq, n_tok, stream,
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
