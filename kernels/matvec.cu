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
 *            Q6_K, what the 27B files are made of, held in the 16-row
 *            tiles of rs_tile.h (as the engine uploads them).  One order
 *            of sums (matvec_xq.cuh) in two kernels: dp4a with a lane per
 *            chunk of a pair of rows (matvec_xq_kernel: one column
 *            before SM80, and every column count where no tensor-core
 *            kernel runs; one column of Q6_K after), f16 tensor cores on
 *            Volta (matvec_884.cuh: 2-16 columns on SM70-SM74) and int8
 *            tensor cores (matvec_mma.cuh: the rest from SM80 on).
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
 * the dp4a kernel 16 dp4a per 32 weights and lane, so groups of 16 are
 * instruction-bound there; the tensor-core kernels decode each weight
 * once for all columns.  The baseline kernels use only SM70 features.
 */
#include "common.cuh"
#include "matvec_sb.cuh"
#include "matvec_884.cuh"
#include "matvec_mma.cuh"
#include "matvec_xq.cuh"
#include "quant.cuh"
#include "rs_kernels.h"

extern "C" {
#include "rs_xq.h"
}

#define MV_WARPS	4	/* warps per block */
/*
 * The dp4a kernel's CTA for one and two columns: 8 warps over 2 tile rows
 * (each lane 4 rows, one super-block phase a warp; no spills), against
 * 4 warps over 1 or 2 (session 11 in docs/perf-log.md).
 */
#define DP4A_W		8
#define DP4A_TR		2
/* launches of Q6_K above this many rows (the head) run on 4-warp CTAs
   (go_mma) */
#define MMA_TALL_ROWS	65536


/*
 * Warps an SM that matvec_xq_kernel's launch bounds ask for (registers:
 * 65,536 / (32·warps)): 16 for one column (128 registers: Q4_K needs
 * 126, Q6_K 128, and Q5_K, 201 unbounded, fits without spilling), 12 for
 * two, more columns free.  kernels/dev/matvec_xq.cu, perf-log.
 */
static constexpr int
mv_warps_sm(int nt)
{
	return (nt == 1 ? 16 : nt == 2 ? 12 : 1);
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
 * columns in their batch), Q4_K / Q5_K / Q6_K weights in 16-row tiles
 * (rs_tile.h), summed in the canonical order of matvec_xq.cuh with dp4a.
 * One CTA of W warps per tile row: warp w takes the tile row's
 * super-blocks b = w, w + W, ..., and its lane 4p + c chunk c of rows p
 * and p + 8 of each, so that the 8 lanes of a chunk read one 128-byte
 * line a load (the tile's slot order).  Chunk k = 4b + c is virtual lane
 * v = k % 32 = 4·(b % 8) + c: a lane keeps the sums of the 8 / W virtual
 * lanes b % 8 = w + W·s of its two rows, each adding its chunks in
 * increasing b as the canonical order does; at the end the 32 sums of
 * every output meet in shared memory and are added in warp_sum's tree.
 * A lane's chunk is decoded once for all NT columns and each x load
 * serves its two rows.  This is the one-column kernel before SM80 (the
 * V100's decode), every column count's where no tensor-core kernel runs
 * (Turing), and Q6_K's one-column kernel after; matvec_884.cuh and
 * matvec_mma.cuh give the same bits on tensor cores.  BS1 as for
 * xq_chunk_dot.
 *
 * Instructions per 64 weights of a lane and row, one column: 2-4 (Q4_K)
 * to 4-6 (Q6_K) loads of weights, 5 of x, ~16 nibble operations, 32 dp4a
 * and ~10 for scales and the float tail.  Each further column adds 5
 * loads, 32 dp4a and ~10 more.
 */
template <int TYPE, int NT, int W, int TR, bool BS1 = false>
static __global__ void __launch_bounds__(W * RS_WARP,
    (mv_warps_sm(NT) + W - 1) / W)
matvec_xq_kernel(const mv_parts parts, int64_t n_in, const xq_in xq)
{
	static_assert(8 % W == 0, "W warps share the 8 super-block phases");
	constexpr int	 TB = RS_TILE_ROWS * qtraits<TYPE>::qb;
	constexpr int	 S = 8 / W;	/* a lane's virtual lanes a row */
	constexpr int	 R = 2 * TR;	/* a lane's rows */
	__shared__ float red[RS_WARP][TR * RS_TILE_ROWS][NT];
	const mv_part	 pt = mv_part_of(parts, blockIdx.x);
	const int	 lane = threadIdx.x % RS_WARP, wi = threadIdx.x / RS_WARP;
	const int	 p = lane / 4, c = lane % 4;
	const int64_t	 nb = n_in / 256, o0 = pt.blk * TR * RS_TILE_ROWS;
	const int64_t	 n_tr = (pt.n_out + RS_TILE_ROWS - 1) / RS_TILE_ROWS;
	const xq_at	 x = xq_at_of(xq, n_in);
	const uint8_t	*tiles[TR];
	float		 acc[S][R][NT];

	rs_pdl_trigger();
#pragma unroll
	for (int j = 0; j < TR; j++) {
		/* a tile row past the last reads the last again, writes
		   nothing */
		const int64_t tr = pt.blk * TR + j < n_tr ? pt.blk * TR + j :
		    n_tr - 1;
		tiles[j] = pt.w + tr * nb * TB;
	}
#pragma unroll
	for (int s = 0; s < S; s++)
#pragma unroll
		for (int r = 0; r < R; r++)
#pragma unroll
			for (int t = 0; t < NT; t++)
				acc[s][r][t] = 0.0f;
	for (int64_t b0 = 0; b0 < nb; b0 += 8) {
		xq_chunk k[S][R];
#pragma unroll
		for (int s = 0; s < S; s++) {
			const int64_t b = b0 + wi + W * s;
#pragma unroll
			for (int j = 0; j < TR; j++)
				if (b < nb)
					xqc<TYPE>::load_pair(tiles[j] + b * TB,
					    p, c, &k[s][2 * j],
					    &k[s][2 * j + 1]);
		}
		/* decode launches this kernel early (mv_launch): x is the
		   output of the kernel before, read only after the wait,
		   while the first weights are on their way */
		if (b0 == 0)
			rs_pdl_wait();
#pragma unroll
		for (int s = 0; s < S; s++) {
			const int64_t b = b0 + wi + W * s;
			if (b < nb)
				xq_chunk_dot<TYPE, NT, R, BS1>(k[s], x, b,
				    acc[s]);
		}
	}
	/* the 32 virtual lanes of every output, added in warp_sum's tree */
#pragma unroll
	for (int s = 0; s < S; s++)
#pragma unroll
		for (int r = 0; r < R; r++)
#pragma unroll
			for (int t = 0; t < NT; t++)
				red[4 * (wi + W * s) + c][RS_TILE_ROWS * (r / 2) +
				    p + 8 * (r % 2)][t] = acc[s][r][t];
	__syncthreads();
	for (int el = threadIdx.x; el < TR * RS_TILE_ROWS * NT;
	    el += blockDim.x) {
		const int row = el / NT, t = el % NT;
		const float v = xq_lanes_sum(red, row, t);

		if (o0 + row < pt.n_out) {
			float *dst = pt.y + t * pt.ldy + o0 + row;
			*dst = pt.acc ? *dst + v : v;
		}
	}
}

#ifndef __CUDACC_RTC__
/*
 * Does this device run code built for SM90 or later, where the integer
 * kernels' launches are programmatic (mv_launch)?  Like has_mma_matvec().
 */
static int
has_pdl_matvec(void)
{
	static signed char known[RS_MAX_DEVICES];

	return (rs_runs_ptx(matvec_xq_kernel<RS_TYPE_Q4_K, 1, DP4A_W, DP4A_TR,
	    true>, 90, known));
}
#endif

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

/*
 * Whether a one-column product of N_IN inputs runs on 4-warp CTAs, five
 * an SM, two groups a warp: rows of 9-31 super-blocks that 8 warps do not
 * split evenly (5,120 inputs: 20, taken 3, 3, 3, 3, 2, 2, 2, 2; on 4
 * warps 5 each).  Decode step -0.07 ms on an H200, -0.05 on an H100,
 * three rounds each (docs/perf-log.md session 40); six CTAs an SM lost
 * 0.12 ms on the H100 (session 39).  go_mma and mix_go both ask it.
 */
static inline bool
mma1_uneven(int64_t n_in)
{
	const int64_t nb = n_in / 256;

	return (nb % 8 != 0 && nb < 32);
}

struct matvec_launch {
	const uint8_t	*w;
	int64_t		 n_in, n_out, row_bytes, ldx, ldy;
	const float	*x;
	xq_in		 xq;	/* the integer path's x (tiled weights) */
	float		*y;
	int		 n_tok, accumulate;
	int		 tiled;	/* W in 16-row tiles: the integer path */
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
		 * Tensor cores where the device runs them (SM80 on) and the
		 * offsets in the batch of columns fit the kernel's 32 bits
		 * (MMA_MAX_IN): on tiles two columns cost them about what
		 * three and four do (ffn_up 20.8 µs against 35.1 on dp4a),
		 * and even one column of Q4_K / Q5_K runs faster there than
		 * on dp4a (gdn_qkv 15.0 against 17.1 µs: two rounds of
		 * 16-row CTAs fill the SMs better than 1.2 of 32-row ones);
		 * so does one column of Q6_K at three CTAs an SM (ffn_down
		 * 30.3 against 32.1 µs), and since each lane adds only its
		 * own chunk of a column (session 22) the head too, on 4-warp
		 * CTAs (238 against 280 µs; go_mma).  docs/perf-log.md
		 * sessions 11-13, 22-23.  Both give the same bits
		 * (matvec_xq.cuh), so the choice may depend on NT and the
		 * shape.
		 *
		 * (has_mma_matvec is a host runtime call: NVRTC's check of
		 * the kernels, scripts/cuda129-nvrtc.sh, compiles without it.)
		 * More than one quad of columns needs block-major x, whose
		 * quads the kernel reads at fixed offsets (every batch of
		 * more than 4 columns is block-major there).
		 */
#ifndef __CUDACC_RTC__
		const int mma = xq.nb * n_in <= MMA_MAX_IN && (NT <= 4 ||
		    xq.bm) && has_mma_matvec();
#else
		const int mma = 0;
#endif
		if (!mma)
			go_int<TYPE, NT>();
		else if constexpr (NT >= 5 && NT <= 7)
			go_mma<TYPE, 8>();	/* writes NT: xq_in.nw */
		else
			go_mma<TYPE, NT>();
	}

	/*
	 * Before SM80: 2-16 columns on Volta's tensor cores where the code
	 * that runs was built for SM70-SM74 (matvec_884.cuh; the same bits
	 * as dp4a), otherwise, and for one column, dp4a.
	 */
	template <int TYPE, int NT>
	void
	go_int(void)
	{
#ifndef __CUDACC_RTC__
		if constexpr (NT >= 2) {
			if (has_884_matvec()) {
				const unsigned grid = mv_parts_grid(&parts,
				    RS_TILE_ROWS);
				/* (no PDL: the kernel does not wait for x) */
				mv_launch(matvec_884_kernel<TYPE, NT>, grid,
				    8 * RS_WARP, 0, stream, 0, parts, n_in, xq);
				return;
			}
		}
#endif
		go_dp4a<TYPE, NT>();
	}

	/*
	 * Four warps a tile row for one and two columns; eight (one virtual
	 * lane a lane: fewer sums in registers) for the wider groups that
	 * run here where no tensor-core kernel does.  BS1: one column whose
	 * blocks are consecutive (the decode step).
	 */
	template <int TYPE, int NT>
	void
	go_dp4a(void)
	{
		constexpr int W = NT <= 2 ? DP4A_W : 8;

		if (NT == 1 && (!xq.bm || xq.nb == 1))
			go_dp4a_k<TYPE, NT, W, NT == 1>();
		else
			go_dp4a_k<TYPE, NT, W, false>();
	}

	template <int TYPE, int NT, int W, bool BS1>
	void
	go_dp4a_k(void)
	{
		constexpr int TR = NT <= 2 ? DP4A_TR : 1;
		const unsigned grid = mv_parts_grid(&parts, TR * RS_TILE_ROWS);
#ifndef __CUDACC_RTC__
		mv_launch(matvec_xq_kernel<TYPE, NT, W, TR, BS1>, grid,
		    W * RS_WARP, 0, stream, pdl(), parts, n_in, xq);
#else
		matvec_xq_kernel<TYPE, NT, W, TR, BS1><<<grid, W * RS_WARP, 0,
		    stream>>>(parts, n_in, xq);
#endif
	}

	/*
	 * Both kernels' launches start early where the device runs SM90
	 * code: they read x and y only after rs_pdl_wait.
	 */
	int
	pdl(void) const
	{
#ifndef __CUDACC_RTC__
		return (has_pdl_matvec());
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

	template <int TYPE, int NT>
	void
	go_mma(void)
	{
		/*
		 * CTAs of 8 warps (G = 1) or 4 (G = 2: each warp two groups of
		 * virtual lanes, matvec_mma.cuh).  Registers for three CTAs
		 * of 8 an SM (80) up to 8 columns (Q6_K too: ffn_down at 4
		 * columns 30.7 against 34.0 µs at two CTAs, the head 319
		 * against 367; at 8, 38.3 against 43.5, verify 8 -0.18 ms in
		 * the engine, session 20) but on tall launches; there 4-warp
		 * CTAs, four an SM (128 registers): 5-8 columns of the Q4_K /
		 * Q5_K launches of more than 8,192 rows (a row of 5,120
		 * inputs has 20 super-blocks: 5 a warp, where 8 warps took 3,
		 * 3, 3, 3, 2, 2, 2, 2; verify 8 10.58 -> 10.36 ms in the
		 * engine, session 19) and the head (Q6_K, 248,320 rows: 423
		 * against 479 µs).  16 columns on 4-warp CTAs, three an SM:
		 * ffn_up 46.5 against 58.6 µs, gdn_qkv 30.7 against 35.6,
		 * ssm_out 18.7 against 22.4, attn_o 20.2 against 23.7, the
		 * head 765 against 845 (session 16), and since session 20 the
		 * 17,408-input ffn_down too (45.1 against 50.8 µs on 8 warps,
		 * verify 16 -0.26 ms).  Measured on x's block-major batches
		 * with kernels/dev/matvec_xq.cu and rs-bench
		 * (docs/perf-log.md).  The head's 1-4 columns on 4-warp CTAs
		 * too, five an SM (96 registers): 238 / 271 / 296 µs against
		 * 269 / 290 / 306 on 8-warp CTAs for 1 / 2 / 4 columns
		 * (session 23).
		 */
		/* (mma1_uneven; the head's tall Q6_K rows take the same
		   launch below) */
		if constexpr (NT == 1) {
			if (mma1_uneven(n_in)) {
				go_mma_g<TYPE, NT, 2, 5>();
				return;
			}
		}
		if constexpr (NT <= 4 && TYPE == RS_TYPE_Q6_K) {
			if (rows() > MMA_TALL_ROWS)
				go_mma_g<TYPE, NT, 2, 5>();
			else
				go_mma_g<TYPE, NT, 1, 3>();
		} else if constexpr (NT <= 4) {
			go_mma_g<TYPE, NT, 1, 3>();
		} else if constexpr (NT <= 8) {
			const int64_t tall = TYPE == RS_TYPE_Q6_K ?
			    MMA_TALL_ROWS : 8192;
			if (rows() > tall)
				go_mma_g<TYPE, NT, 2, 4>();
			else
				go_mma_g<TYPE, NT, 1, 3>();
		} else {
			go_mma_g<TYPE, NT, 2, 3>();
		}
	}

	/*
	 * A kernel for each layout of x (matvec_mma.cuh's XL): one quad of
	 * columns laid out column after column, or block-major of exactly
	 * its 2-4 columns (a pass of 2-4 tokens), at constant strides;
	 * other block-major batches with the strides read from xq.  One
	 * column runs 3-6 % faster at constant strides (ffn_up 19.6 ->
	 * 18.8 µs, ssm_out 8.1 -> 7.6; docs/perf-log.md session 22).
	 */
	template <int TYPE, int NT, int G, int MINB>
	void
	go_mma_g(void)
	{
		if constexpr (NT <= 4) {
			if (!xq.bm) {
				go_mma_k<TYPE, NT, G, MINB, XL_COLS>();
				return;
			}
		}
		/* (Q5_K's 3-4 columns at constant strides spill: attn_o 9.3
		   -> 10.6 µs at four columns) */
		if constexpr (NT == 2 || (NT >= 3 && NT <= 4 &&
		    TYPE != RS_TYPE_Q5_K)) {
			if (xq.nb == NT && xq.t0 == 0) {
				go_mma_k<TYPE, NT, G, MINB, XL_BM_NT>();
				return;
			}
		}
		go_mma_k<TYPE, NT, G, MINB, XL_BM>();
	}

	template <int TYPE, int NT, int G, int MINB, int XL>
	void
	go_mma_k(void)
	{
		const unsigned grid = mv_parts_grid(&parts, MMA_ROWS);
#ifndef __CUDACC_RTC__
		mv_launch(matvec_xq_mma_kernel<TYPE, NT, G, MINB, XL>, grid,
		    8 / G * RS_WARP, 0, stream, pdl(), parts, n_in, xq);
#else
		matvec_xq_mma_kernel<TYPE, NT, G, MINB, XL><<<grid,
		    8 / G * RS_WARP, 0, stream>>>(parts, n_in, xq);
#endif
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
			if (tiled) {
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
xq_path(int type)
{
	return ((type & RS_TILED) != 0);
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
	/* tiled weights: the integer path, 16-byte loads of whole tiles */
	if ((pt->type & RS_TILED) != 0 && (!rs_tile_type(pt->type &
	    ~RS_TILED) || xq.d == NULL || n_in % 256 != 0 ||
	    ((uintptr_t)pt->d_w & 15) != 0))
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "matvec: tiled type %d at %p, n_in %lld: tiles of Q4_K, "
		    "Q5_K or Q6_K take x in 16 bits, whole super-blocks and "
		    "16-byte alignment", pt->type, pt->d_w, (long long)n_in));
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
	const int type = p0->type & ~RS_TILED;

	for (int done = 0; done < n_tok; ) {
		const int k = n_in % 256 != 0 ? 1 :
		    pick_cols(type, n_tok - done);
		const xq_in xk = { (const uint8_t *)xq.d, xq.nb, xq.t0 + done,
		    rs_k_xq_block_major(xq.nb), k };
		matvec_launch l = { (const uint8_t *)p0->d_w, n_in, p0->n_out,
		    p0->row_bytes, ldx, p0->ldy, d_x + done * ldx, xk,
		    p0->d_y + done * p0->ldy, k, p0->accumulate,
		    xq_path(p0->type), stream, {} };
		for (int j = 0; j < np; j++) {
			l.parts.w[j] = (const uint8_t *)parts[j].d_w;
			l.parts.y[j] = parts[j].d_y + done * parts[j].ldy;
			l.parts.n_out[j] = parts[j].n_out;
			l.parts.ldy[j] = parts[j].ldy;
			l.parts.acc[j] = parts[j].accumulate;
		}
		l.parts.n = np;
		if (!dispatch_type(type, l))
			return (rs_errf(err, RS_ERR_UNSUPPORTED,
			    "matvec: no device decoder for type %d",
			    p0->type));
		RS_LAUNCH_CHECK(err, "matvec");
		done += k;
	}
	return (RS_OK);
}

#ifndef __CUDACC_RTC__
template <int TA, int TB>
static void
mix_go(const mv_parts &p, unsigned grid, int64_t n_in, const xq_in &xk,
    cudaStream_t s)
{
	if (mma1_uneven(n_in)) {
		mv_launch(matvec_xq_mma_mix_kernel<TA, TB, 1, 2, 5, XL_COLS>,
		    grid, 4 * RS_WARP, 0, s, has_pdl_matvec(), p, n_in, xk);
		return;
	}
	mv_launch(matvec_xq_mma_mix_kernel<TA, TB, 1, 1, 3, XL_COLS>, grid,
	    8 * RS_WARP, 0, s, has_pdl_matvec(), p, n_in, xk);
}

/*
 * The decode step's products of one input in one launch when they hold
 * exactly two K-quant types of tiled weights (the tensor-core kernel at
 * one column, matvec_xq_mma_mix_kernel): 1 if launched, else 0 and the
 * caller launches a type at a time.
 */
static int
matvec_mix(const struct rs_k_mv_part *parts, int n, int64_t n_in,
    const rs_k_xq_cols &xq, int n_tok, cudaStream_t stream)
{
	mv_parts p = {};
	int ta = -1, tb = -1;
	int64_t rows = 0;

	if (n_tok != 1 || n_in % 256 != 0 || xq.d == NULL ||
	    rs_k_xq_block_major(xq.nb) || (int64_t)xq.nb * n_in > MMA_MAX_IN ||
	    !has_mma_matvec())
		return (0);
	for (int i = 0; i < n; i++) {
		const int t = parts[i].type & ~RS_TILED;

		if (!xq_path(parts[i].type) || (t != RS_TYPE_Q4_K &&
		    t != RS_TYPE_Q5_K && t != RS_TYPE_Q6_K))
			return (0);
		if (ta < 0 || t == ta)
			ta = t;
		else if (tb < 0 || t == tb)
			tb = t;
		else
			return (0);
		p.w[i] = (const uint8_t *)parts[i].d_w;
		p.y[i] = parts[i].d_y;
		p.n_out[i] = parts[i].n_out;
		p.ldy[i] = parts[i].ldy;
		p.acc[i] = parts[i].accumulate;
		p.type[i] = t;
		rows += parts[i].n_out;
	}
	if (tb < 0 || rows > MMA_TALL_ROWS)
		return (0);
	p.n = n;
	const unsigned grid = mv_parts_grid(&p, MMA_ROWS);
	const xq_in xk = { (const uint8_t *)xq.d, xq.nb, xq.t0, 0, 1 };
	const int lo = ta < tb ? ta : tb, hi = ta < tb ? tb : ta;
	if (lo == RS_TYPE_Q4_K && hi == RS_TYPE_Q5_K)
		mix_go<RS_TYPE_Q4_K, RS_TYPE_Q5_K>(p, grid, n_in, xk, stream);
	else if (lo == RS_TYPE_Q4_K)
		mix_go<RS_TYPE_Q4_K, RS_TYPE_Q6_K>(p, grid, n_in, xk, stream);
	else
		mix_go<RS_TYPE_Q5_K, RS_TYPE_Q6_K>(p, grid, n_in, xk, stream);
	return (1);
}
#endif

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
#ifndef __CUDACC_RTC__
	if (n_parts > 1 && matvec_mix(parts, n_parts, n_in, xq, n_tok,
	    stream)) {
		RS_LAUNCH_CHECK(err, "matvec");
		return (RS_OK);
	}
#endif
	/*
	 * One launch per type on the integer path (a GDN layer whose qkv
	 * is Q6_K and whose gate, beta and alpha are Q4_K: two, not four),
	 * one per product otherwise.  Products are independent, so the
	 * order of the launches changes no bit.
	 */
	for (int i = 0; i < n_parts; i++) {
		const int ip = xq_path(parts[i].type);
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
	const int64_t r = tokens[blockIdx.x];
	float	*dst = y + (int64_t)blockIdx.x * n_embd;

	for (int64_t c = threadIdx.x; c < n_embd / 8; c += blockDim.x) {
		float v[8];
		dequant8_at<TYPE>(w, row_bytes, r, c, v);
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
	if (!dispatch_stored(type, l))
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "embed: no device decoder for type %d", type));
	RS_LAUNCH_CHECK(err, "embed");
	return (RS_OK);
}
