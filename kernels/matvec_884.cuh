/*
 * matvec_884.cuh - the integer matvec for 2..16 columns on Volta's tensor
 * cores (mma.sync.m8n8k4: f16 operands, f32 sums), bit-identical to the
 * one-column dp4a kernel of matvec.cu.  The launcher gives it every
 * product of 2-16 columns of tiled weights on a Volta GPU (V100) running
 * code built for SM70 (has_884_matvec: $RS_MATVEC_884 forces it on or
 * off); from SM80 on matvec_mma.cuh's int8 kernel takes them.
 *
 * Why: the dp4a kernel pays its dot products and x loads once a column,
 * so on SM70 a pass of 16 tokens cost ~7.3 one-token passes (the sm_70
 * build on an H200, docs/perf-log.md session 21).  Here each weight is
 * decoded once, to f16, and one m8n8k4 multiplies 8 rows by 4 columns'
 * two byte planes (rs_xq.h: v = 256·hi + lo, both signed bytes).
 *
 * Exact: the weights (|q| < 64) and the planes' bytes are integers that
 * f16 holds exactly, each product is exact in f32, and every partial sum
 * of a 32-value block is an integer below 2^24 (|Σ| <= 2^17), so each
 * step of the unit's accumulation is exact whatever its order or
 * rounding; fmaf(256, Σhi, Σlo) then rounds P = Σ q·v (|P| < 2^27) once,
 * to nearest: the float (float)P that the canonical tail makes of P
 * (matvec_xq.cuh's _f terms).  kernels/dev/mma884.cu checks both, and the
 * fragment map below, on the GPU it runs on and as sm_70 code.
 *
 * Layout: a CTA of 8 warps owns one tile row (16 rows, rs_tile.h).  Warp
 * w takes super-blocks bi = w, w + 8, ..., and quad-pair q of the warp
 * (lanes 4q .. 4q + 3 and 16 + 4q .. 16 + 4q + 3) chunk q of each: chunk
 * 4·bi + q, virtual lane 4w + q of the canonical order, added in
 * increasing bi as that lane would.  Lane j of a quad-pair (j = lane % 4
 * + 4·(lane / 16)) loads slots 8t + j (t = 0..3) of the chunk's runs,
 * rows j and j + 8 whole, as the dp4a kernel's lane does (8 lanes read a
 * 128-byte line a load); they are row j of A in two m8n8k4, rows 0-7 and
 * 8-15.  B's column j is plane j % 2 (high, low) of column 4u + j / 2 of
 * quad u.  A k-step takes 4 consecutive values of a 32-value block (the
 * order of an integer sum is free): 8 steps a block.  The f32 D (8 x 8)
 * puts accumulator d_i of a lane at row lane % 2 + (i & 2) + 4·(lane /
 * 16), column (i & 4) + (lane & 2) + (i & 1) (PTX ISA; mma884.cu checks
 * it), so a lane holds both planes of its (row, column) sums: rows r0
 * and r0 + 2 (r0 = lane % 2 + 4·(lane / 16)) of each half, columns tq
 * and tq + 2 (tq = lane / 2 % 2) of each quad, whose terms it adds
 * without an exchange.  Q6_K's scales change every 16 values, so its
 * blocks sum steps 0-3 and 4-7 into two D.  At the end the 32 partials of
 * every output meet in shared memory and are added in warp_sum's tree,
 * as in the other kernels.  Columns past NT are computed on a copy of
 * the last and not written.
 *
 * Per super-block, warp and quad of columns: 32 mma and, a lane, 16
 * conversions of x words (4 values: a logic operation, two byte
 * permutations, two f16 subtractions), 16 float terms (four instructions
 * each) and 4 meta loads; per super-block once, a lane: 32 conversions
 * of weight words and 4 heads' scales.  Estimates for a V100 in
 * docs/perf-log.md session 33 (not measured: no V100 here).
 */
#ifndef RS_MATVEC_884_CUH
#define RS_MATVEC_884_CUH

#ifndef __CUDACC_RTC__
#include <stdlib.h>
#include <string.h>
#endif

#include "matvec_xq.cuh"

/* the code the 884 kernels are built for on SM70-SM74 */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700 && __CUDA_ARCH__ < 750
#define RS_MV884_ARCH	1
#endif

#ifdef RS_MV884_ARCH

/* D += A·B on each quad-pair's fragments (row-major A, column-major B) */
static __device__ __forceinline__ void
mma884(float d[8], const uint32_t a[2], const uint32_t b[2])
{
	asm("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 "
	    "{%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9}, {%10, %11}, "
	    "{%0, %1, %2, %3, %4, %5, %6, %7};"
	    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]),
	    "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
	    : "r"(a[0]), "r"(a[1]), "r"(b[0]), "r"(b[1]));
}

/*
 * Four unsigned bytes of V as two f16 pairs, minus BIAS (two f16 alike):
 * the byte under the exponent of 1024 is the half 1024 + b exactly (the
 * spacing is 1 in [1024, 2048)), and the subtraction of an integer bias
 * is exact.  Bytes 0, 1 into H[0] (the low half first, mma's k order).
 */
static __device__ __forceinline__ void
h2_of_bytes(uint32_t v, uint32_t bias, uint32_t h[2])
{
	const uint32_t e = 0x64646464u;	/* 0x64 00: the half 1024 */
	uint32_t lo = __byte_perm(v, e, 0x4140), hi = __byte_perm(v, e, 0x4342);
	const __half2 b = *(const __half2 *)&bias;
	const __half2 l = __hsub2(*(const __half2 *)&lo, b);
	const __half2 u = __hsub2(*(const __half2 *)&hi, b);

	h[0] = *(const uint32_t *)&l;
	h[1] = *(const uint32_t *)&u;
}

/* biases as two f16: 1024 (Q4_K, Q5_K: q), 1056 (Q6_K: q − 32), 1152 (x's
   signed bytes with bit 7 flipped: b + 128) */
#define H2_1024	0x64006400u
#define H2_1056	0x64206420u
#define H2_1152	0x64806480u

/*
 * One chunk of rows j and j + 8 as lane j of a quad-pair loads it: w[t]
 * the 16 bytes of slot 8t + j of the chunk's quant run (row j's two words,
 * then row j + 8's), h[t] the same of the high bits' run (Q5_K's qh, Q6_K's
 * qh of the chunk's half; Q4_K: unused).
 */
struct m884_raw {
	uint4	w[4];
	uint4	h[4];
};

template <int TYPE> struct m884;

/* Q4_K and Q5_K: k-step s is word s % 2 of slot s / 2 (values 4s .. 4s + 3) */
template <int TYPE>
struct m884_k {
	static constexpr int QS = TYPE == RS_TYPE_Q5_K ? 768 : 256;
	static constexpr uint32_t BIAS = H2_1024;

	static __device__ __forceinline__ void
	load(const uint8_t *tile, int c, int j, m884_raw *r)
	{
#pragma unroll
		for (int t = 0; t < 4; t++) {
			r->w[t] = ld_weights((const uint4 *)(tile + QS +
			    512 * c) + 8 * t + j);
			if (TYPE == RS_TYPE_Q5_K)
				r->h[t] = ld_weights((const uint4 *)(tile +
				    256) + 8 * t + j);
		}
	}

	/* step S of block BLK of row j + 8·RR: four values as bytes */
	static __device__ __forceinline__ uint32_t
	step(const m884_raw &r, int c, int blk, int rr, int s)
	{
		const uint4 &w = r.w[s / 2];
		const uint32_t q = rr ? (s % 2 ? w.w : w.z) : (s % 2 ? w.y :
		    w.x);
		uint32_t v = (q >> (4 * blk)) & 0x0F0F0F0Fu;

		if (TYPE == RS_TYPE_Q5_K) {
			const uint4 &h = r.h[s / 2];
			const uint32_t hb = rr ? (s % 2 ? h.w : h.z) :
			    (s % 2 ? h.y : h.x);
			v |= ((hb >> (2 * c + blk)) & 0x01010101u) << 4;
		}
		return (v);
	}

	/* row I's factors of chunk C: F[blk] = a, m (k_scales) */
	static __device__ __forceinline__ void
	factors(const uint8_t *tile, int c, int i, float f[2][2])
	{
		float a[2], m[2];

		k_scales(__ldg((const uint4 *)tile + i), c, a, m);
		f[0][0] = a[0]; f[0][1] = m[0];
		f[1][0] = a[1]; f[1][1] = m[1];
	}

	static __device__ __forceinline__ int
	xblock(int c, int blk)
	{
		return (2 * c + blk);
	}
};

template <> struct m884<RS_TYPE_Q4_K> : m884_k<RS_TYPE_Q4_K> {};
template <> struct m884<RS_TYPE_Q5_K> : m884_k<RS_TYPE_Q5_K> {};

/*
 * Q6_K: slot 8t + j holds row j's ql words of values 4t .. and 16 + 4t ..
 * (the chunk's halves), so k-step s is word s / 4 of slot s % 4: steps
 * 0-3 the block's first 16 values, 4-7 its last.
 */
template <> struct m884<RS_TYPE_Q6_K> {
	static constexpr uint32_t BIAS = H2_1056;

	static __device__ __forceinline__ void
	load(const uint8_t *tile, int c, int j, m884_raw *r)
	{
#pragma unroll
		for (int t = 0; t < 4; t++) {
			r->w[t] = ld_weights((const uint4 *)(tile + 288 +
			    512 * c) + 8 * t + j);
			r->h[t] = ld_weights((const uint4 *)(tile + 2336 +
			    512 * (c >> 1)) + 8 * t + j);
		}
	}

	/* q (0..63) of four values: the low bits and the qh pair in place */
	static __device__ __forceinline__ uint32_t
	step(const m884_raw &r, int c, int blk, int rr, int s)
	{
		const uint4 &w = r.w[s % 4], &h = r.h[s % 4];
		const uint32_t ql = rr ? (s / 4 ? w.w : w.z) : (s / 4 ? w.y :
		    w.x);
		const uint32_t qh = rr ? (s / 4 ? h.w : h.z) : (s / 4 ? h.y :
		    h.x);

		return (((ql >> (4 * blk)) & 0x0F0F0F0Fu) | (((qh >> (2 * (c &
		    1) + 4 * blk)) & 0x03030303u) << 4));
	}

	/* row I's factors of chunk C: F[blk] = d·sc of its two halves, as
	   xqc<RS_TYPE_Q6_K>::load_pair forms them */
	static __device__ __forceinline__ void
	factors(const uint8_t *tile, int c, int i, float f[2][2])
	{
		const uint4 sc = __ldg((const uint4 *)tile + i);
		const float d = half_to_float(__ldg((const unsigned short *)
		    (tile + 256) + i));
		const int sh = 16 * (c & 1);
		const uint32_t lw = c >> 1 ? sc.z : sc.x;
		const uint32_t hw = c >> 1 ? sc.w : sc.y;

		f[0][0] = d * (float)(int8_t)(lw >> sh);
		f[0][1] = d * (float)(int8_t)(lw >> (sh + 8));
		f[1][0] = d * (float)(int8_t)(hw >> sh);
		f[1][1] = d * (float)(int8_t)(hw >> (sh + 8));
	}

	static __device__ __forceinline__ int
	xblock(int c, int blk)
	{
		return (4 * (c >> 1) + (c & 1) + 2 * blk);
	}
};

/*
 * Quad U's terms of block BLK (x-block XB) into P[rr][rw][tk]: B from
 * x, the 16 mma into D (NH sums a block: Q6_K's halves), then the
 * lane's float terms.  A[rr][s]: the block's step s of row j + 8·rr.
 */
template <int TYPE, int NT>
static __device__ __forceinline__ void
m884_quad(const xq_at &x, int64_t xb, int u, int j, int tq,
    const uint32_t (&a)[2][8][2], const float (&f)[2][2][2],
    float (&p)[2][2][2])
{
	constexpr int NH = TYPE == RS_TYPE_Q6_K ? 2 : 1;
	const int tb = min(4 * u + j / 2, NT - 1);
	const uint4 *bp = (const uint4 *)(x.h + (j & 1) * x.lo + 32 *
	    (xb * x.bs + tb * x.cs));
	const uint4 v0 = xq_ld(bp), v1 = xq_ld(bp + 1);
	const uint32_t xw[8] = { v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z,
	    v1.w };
	float d[2][NH][8];

#pragma unroll
	for (int rr = 0; rr < 2; rr++)
#pragma unroll
		for (int h = 0; h < NH; h++)
#pragma unroll
			for (int e = 0; e < 8; e++)
				d[rr][h][e] = 0.0f;
#pragma unroll
	for (int s = 0; s < 8; s++) {
		uint32_t b[2];

		h2_of_bytes(xw[s] ^ 0x80808080u, H2_1152, b);
#pragma unroll
		for (int rr = 0; rr < 2; rr++)
			mma884(d[rr][s * NH / 8], a[rr][s], b);
	}
#pragma unroll
	for (int tk = 0; tk < 2; tk++) {
		const int tt = min(4 * u + tq + 2 * tk, NT - 1);
		const float2 m = xq_ld((const float2 *)x.m + xb * x.bs +
		    tt * x.cs);
#pragma unroll
		for (int rr = 0; rr < 2; rr++)
#pragma unroll
			for (int rw = 0; rw < 2; rw++) {
				const int e = 4 * tk + 2 * rw;
				const float p0 = fmaf(256.0f, d[rr][0][e],
				    d[rr][0][e + 1]);
				float &acc = p[rr][rw][tk];

				if constexpr (NH == 2)
					acc = xq_term_q6_f(acc, f[rr][rw][0],
					    f[rr][rw][1], m.x, p0, fmaf(256.0f,
					    d[rr][1][e], d[rr][1][e + 1]));
				else
					acc = xq_term_min_f(acc, f[rr][rw][0],
					    f[rr][rw][1], m, p0);
			}
	}
}

/* the kernel's work for the CTA's part PT */
template <int TYPE, int NT>
static __device__ __forceinline__ void
matvec_884_body(const mv_part &pt, int64_t n_in, const xq_in &xc)
{
	constexpr int	 NQ = (NT + 3) / 4;	/* quads of columns */
	constexpr int	 QR = NQ < 2 ? NQ : 2;	/* quads a reduction round */
	constexpr int	 TB = RS_TILE_ROWS * qtraits<TYPE>::qb;
	__shared__ float red[RS_WARP][RS_TILE_ROWS][4 * QR];
	const int	 lane = threadIdx.x % RS_WARP;
	const int	 wi = threadIdx.x / RS_WARP;
	const int	 q = (lane >> 2) & 3, j = (lane & 3) + 4 * (lane >> 4);
	const int	 r0 = (lane & 1) + 4 * (lane >> 4);
	const int	 tq = (lane >> 1) & 1;
	const int64_t	 nb = n_in / 256;
	const uint8_t	*tiles = pt.w + pt.blk * nb * TB;
	const xq_at	 x = xq_at_of(xc, n_in);
	/* [quad][rr][rw][tk]: row 8·rr + r0 + 2·rw, column 4u + tq + 2·tk */
	float		 p[NQ][2][2][2];

#pragma unroll
	for (int u = 0; u < NQ; u++)
#pragma unroll
		for (int e = 0; e < 8; e++)
			p[u][e / 4][e / 2 % 2][e % 2] = 0.0f;
	for (int64_t bi = wi; bi < nb; bi += 8) {
		const uint8_t *tile = tiles + bi * TB;
		m884_raw raw;
		float f[2][2][2][2];	/* [blk][rr][rw][factor] */

		m884<TYPE>::load(tile, q, j, &raw);
#pragma unroll
		for (int rr = 0; rr < 2; rr++)
#pragma unroll
			for (int rw = 0; rw < 2; rw++) {
				float g[2][2];
				m884<TYPE>::factors(tile, q, 8 * rr + r0 +
				    2 * rw, g);
#pragma unroll
				for (int blk = 0; blk < 2; blk++) {
					f[blk][rr][rw][0] = g[blk][0];
					f[blk][rr][rw][1] = g[blk][1];
				}
			}
		/* low block, then high: each output's canonical order */
#pragma unroll
		for (int blk = 0; blk < 2; blk++) {
			uint32_t a[2][8][2];
			const int64_t xb = bi * 8 + m884<TYPE>::xblock(q, blk);

#pragma unroll
			for (int rr = 0; rr < 2; rr++)
#pragma unroll
				for (int s = 0; s < 8; s++)
					h2_of_bytes(m884<TYPE>::step(raw, q,
					    blk, rr, s), m884<TYPE>::BIAS,
					    a[rr][s]);
#pragma unroll
			for (int u = 0; u < NQ; u++)
				m884_quad<TYPE, NT>(x, xb, u, j, tq, a, f[blk],
				    p[u]);
		}
	}
	/* the 32 virtual lanes of every output, added in warp_sum's tree,
	   QR quads a round */
#pragma unroll
	for (int u0 = 0; u0 < NQ; u0 += QR) {
#pragma unroll
		for (int u = u0; u < u0 + QR && u < NQ; u++)
#pragma unroll
			for (int e = 0; e < 8; e++)
				red[4 * wi + q][8 * (e / 4) + r0 + 2 * (e / 2 %
				    2)][4 * (u - u0) + tq + 2 * (e % 2)] =
				    p[u][e / 4][e / 2 % 2][e % 2];
		__syncthreads();
		for (int el = threadIdx.x; el < RS_TILE_ROWS * 4 * QR;
		    el += blockDim.x) {
			const int row = el / (4 * QR), col = el % (4 * QR);
			const float s = xq_lanes_sum(red, row, col);
			const int64_t orow = pt.blk * RS_TILE_ROWS + row;
			const int tc = 4 * u0 + col;
			if (orow < pt.n_out && tc < NT) {
				float *dst = pt.y + tc * pt.ldy + orow;
				*dst = pt.acc ? *dst + s : s;
			}
		}
		if (u0 + QR < NQ)
			__syncthreads();	/* red is written again */
	}
}

#endif /* RS_MV884_ARCH */

template <int TYPE, int NT>
static __global__ void __launch_bounds__(8 * RS_WARP, 1)
matvec_884_kernel(const mv_parts parts, int64_t n_in, const xq_in xc)
{
#ifdef RS_MV884_ARCH
	matvec_884_body<TYPE, NT>(mv_part_of(parts, blockIdx.x), n_in, xc);
#else
	/* the host pass and other archs: the launcher never picks this
	   kernel there */
	(void)parts; (void)n_in; (void)xc;
#ifdef __CUDA_ARCH__
	__trap();
#endif
#endif
}

#ifndef __CUDACC_RTC__
/*
 * Whether the 884 kernels run here: their code on this device was built
 * for compute_70 .. compute_74, and the device is a Volta (7.0, 7.2) or
 * $RS_MATVEC_884 says otherwise ("1": on any device that runs that code,
 * e.g. the sm_70 build's tests on a newer GPU, through the JIT; "0": off,
 * dp4a for every column count, to compare on a V100).  Later GPUs run
 * m8n8k4 slowly (on an H100 a two-token pass of the 27B took 4.3x as
 * long as with dp4a, docs/perf-log.md session 33) and from SM80
 * matvec_mma.cuh takes these products.  One instantiation answers for all.
 */
static int
has_884_matvec(void)
{
	static signed char from70[RS_MAX_DEVICES], from75[RS_MAX_DEVICES];
	static signed char volta[RS_MAX_DEVICES];
	const char *env = getenv("RS_MATVEC_884");
	int dev = 0, major = 0, minor = 0;

	if (!rs_runs_ptx(matvec_884_kernel<RS_TYPE_Q4_K, 2>, 70, from70) ||
	    rs_runs_ptx(matvec_884_kernel<RS_TYPE_Q4_K, 2>, 75, from75))
		return (0);
	if (env != NULL && *env != '\0')
		return (strcmp(env, "0") != 0);
	if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 ||
	    dev >= RS_MAX_DEVICES)
		dev = 0;
	if (volta[dev] == 0) {
		const int ok = cudaDeviceGetAttribute(&major,
		    cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
		    cudaDeviceGetAttribute(&minor,
		    cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess &&
		    major == 7 && minor < 5;
		(void)cudaGetLastError();
		volta[dev] = ok ? 1 : -1;
	}
	return (volta[dev] > 0);
}
#endif

#endif /* RS_MATVEC_884_CUH */
