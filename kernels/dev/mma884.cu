/*
 * mma884.cu - playground for Volta's tensor cores as the integer matvec
 * uses them (kernels/matvec_884.cuh; issue #12: verification on SM70):
 * the fragment map and the exactness that kernel relies on.  Both checks
 * passed on an H100 and through the JIT (perf-log session 33).
 *
 *   make CUDA=1 build/dev/mma884 && build/dev/mma884
 *   make BUILD=build/sm70 CUDA=1 CUDA_ARCHS=70 \
 *       NVCC="$(bash scripts/cuda129.sh)" build/sm70/dev/mma884
 *   build/sm70/dev/mma884      (on a newer GPU: through the driver's JIT)
 *
 * Why.  On SM70 every column of a verification pass costs the dp4a
 * kernel its own dot products (16 tokens: ~7.3 decode steps through the
 * JIT on an H200, session 21), while one mma.sync.m8n8k4 (f16 operands,
 * f32 sums) multiplies 8 rows by 8 columns, 4 deep, in each of a warp's
 * four quad-pairs.  It can give the dp4a kernel's bits.  The weights
 * (|q| < 64) and x's byte planes (|b| <= 128, rs_xq.h) are exact in f16
 * and each product exact in f32; a 32-value block's plane sum (|Σ| <=
 * 2^17) is an integer that f32 holds exactly at every step of the
 * accumulation, so the unit's rounding never acts; and the block's
 * integer P = 256·Σ q·hi + Σ q·lo (|P| < 2^27) comes out of one
 * fmaf(256, Σhi, Σlo), rounded once to nearest, which is the float the
 * canonical tail makes of P (matvec_xq.cuh).  One FFMA then does what
 * the SM80 path's IMAD and I2FP do.  What this program checks is that
 * arithmetic and where each sum lands in the lanes, on the GPU it runs on
 * and, through the JIT, as SM70 code.  No timing: a newer GPU runs
 * m8n8k4 at a rate that says nothing of a V100's.
 *
 * Fragments assumed (PTX ISA, mma.m8n8k4 .row.col, f16 A and B, f32 C
 * and D; quad-pair p = (lane / 4) % 4 is lanes 4p .. 4p + 3 and 16 + 4p ..
 * 16 + 4p + 3, and h = lane / 16):
 *   A (8 x 4, row): the lane's row is lane % 4 + 4h, its k 0..3 in a0..a3
 *   B (4 x 8, col): the lane's column is lane % 4 + 4h, its k 0..3 in
 *                   b0..b3
 *   D (8 x 8, f32): d_i is row lane % 2 + (i & 2) + 4h, column (i & 4) +
 *                   (lane & 2) + (i & 1)
 * so d_2m and d_2m+1 are adjacent columns of one row: with column 2t the
 * high plane and 2t + 1 the low plane of token t, a lane holds both planes
 * of each of its (row, token) sums, as the SM80 path's m16n8k32 does.
 *
 * Checks, one JSON line each; exit 1 if one fails:
 *   layout  small random integers through one m8n8k4, every quad-pair
 *           its own A and B, against the CPU's product element for
 *           element under the assumed D map; on a mismatch, where the
 *           accumulators really land: (quad-pair, row, column) of each
 *           lane's d_i, from A constant along k and B all ones and the
 *           reverse
 *   blocks  32-value blocks of 4-, 5- and 6-bit weights (Q4_K's 0..15,
 *           Q5_K's 0..31, Q6_K's −32..31) against 4 tokens' hi and lo
 *           planes, 8 k-steps of 4 into zeroed sums, then fmaf(256, Σhi,
 *           Σlo) against the CPU's (float)P bit for bit: random blocks
 *           and the extremes of every range
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev.cuh"

#define QP	4		/* quad-pairs a warp */
#define KS	8		/* k-steps of 4: a 32-value block */
#define TOK	4		/* tokens a quad-pair: 8 columns, 2 planes */
#define NBLK	4096		/* random blocks */

/* Two f16 in one register, A in the low half: the order mma reads. */
static __device__ __forceinline__ uint32_t
pack2(float a, float b)
{
	const __half2 h = __floats2half2_rn(a, b);

	return (*(const uint32_t *)&h);
}

/*
 * D = A·B + D on one quad-pair's fragments.  (Compiled for any arch:
 * m8n8k4 exists from SM70 on, a slower form of it on later ones.)
 */
static __device__ __forceinline__ void
mma884(float d[8], const uint32_t a[2], const uint32_t b[2])
{
	asm volatile("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 "
	    "{%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9}, {%10, %11}, "
	    "{%0, %1, %2, %3, %4, %5, %6, %7};"
	    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]),
	    "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
	    : "r"(a[0]), "r"(a[1]), "r"(b[0]), "r"(b[1]));
}

/* The lane's A row and B column in its quad-pair (the assumed map). */
static __host__ __device__ inline int
frag_line(int lane)
{
	return (lane % 4 + 4 * (lane / 16));
}

/* Row and column of accumulator I of LANE (the assumed map). */
static __host__ __device__ inline void
acc_at(int lane, int i, int *row, int *col)
{
	*row = lane % 2 + (i & 2) + 4 * (lane / 16);
	*col = (i & 4) + (lane & 2) + (i & 1);
}

/*
 * One m8n8k4: quad-pair p multiplies A[p] (8 x 4, row-major) by B[p]
 * (4 x 8, row-major here, read as the lane's column); lane l's d_i goes
 * to D[8·l + i] as it comes.
 */
static __global__ void
layout_kernel(const float *a, const float *b, float *d)
{
	const int	lane = threadIdx.x, p = (lane / 4) % QP;
	const int	r = frag_line(lane);
	uint32_t	fa[2], fb[2];
	float		acc[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };

	fa[0] = pack2(a[p * 32 + r * 4 + 0], a[p * 32 + r * 4 + 1]);
	fa[1] = pack2(a[p * 32 + r * 4 + 2], a[p * 32 + r * 4 + 3]);
	fb[0] = pack2(b[p * 32 + 0 * 8 + r], b[p * 32 + 1 * 8 + r]);
	fb[1] = pack2(b[p * 32 + 2 * 8 + r], b[p * 32 + 3 * 8 + r]);
	mma884(acc, fa, fb);
	for (int i = 0; i < 8; i++)
		d[lane * 8 + i] = acc[i];
}

/* D of one layout_kernel call on host A and B ([QP][8][4], [QP][4][8]). */
static void
run_layout(const float *a, const float *b, float *d)
{
	float	*da = (float *)dev_copy(a, QP * 32 * 4);
	float	*db = (float *)dev_copy(b, QP * 32 * 4);
	float	*dd;

	die("malloc", cudaMalloc(&dd, 32 * 8 * 4));
	layout_kernel<<<1, 32>>>(da, db, dd);
	die("layout", cudaGetLastError());
	die("copy", cudaMemcpy(d, dd, 32 * 8 * 4, cudaMemcpyDeviceToHost));
	cudaFree(da);
	cudaFree(db);
	cudaFree(dd);
}

/*
 * Where each accumulator lands, whatever the map: A constant along k and
 * B all ones make d = 4·A's value of its row; the reverse, 4·B's value of
 * its column.  Printed as "lane/i:p,row,col".
 */
static void
discover(void)
{
	float	a[QP * 32], b[QP * 32], dr[256], dc[256], dp[256];

	for (int which = 0; which < 3; which++) {
		for (int p = 0; p < QP; p++)
			for (int x = 0; x < 8; x++)
				for (int k = 0; k < 4; k++) {
					a[p * 32 + x * 4 + k] = which == 0 ?
					    (float)(x + 1) : which == 2 ?
					    (float)(p + 1) : 1.0f;
					b[p * 32 + k * 8 + x] = which == 1 ?
					    (float)(x + 1) : 1.0f;
				}
		run_layout(a, b, which == 0 ? dr : which == 1 ? dc : dp);
	}
	printf("{\"check\":\"layout\",\"found\":\"");
	for (int l = 0; l < 32; l++)
		for (int i = 0; i < 8; i++)
			printf("%s%d/%d:%g,%g,%g", l + i ? " " : "", l, i,
			    dp[l * 8 + i] / 4 - 1, dr[l * 8 + i] / 4 - 1,
			    dc[l * 8 + i] / 4 - 1);
	printf("\"}\n");
}

/* The layout check; 1 if the assumed map holds. */
static int
check_layout(void)
{
	float	a[QP * 32], b[QP * 32], d[256];
	int	bad = 0;

	for (int i = 0; i < QP * 32; i++) {
		a[i] = (float)((int)(next64() % 15) - 7);
		b[i] = (float)((int)(next64() % 15) - 7);
	}
	run_layout(a, b, d);
	for (int l = 0; l < 32; l++)
		for (int i = 0; i < 8; i++) {
			const int p = (l / 4) % QP;
			int r, c;
			float want = 0.0f;

			acc_at(l, i, &r, &c);
			for (int k = 0; k < 4; k++)
				want += a[p * 32 + r * 4 + k] *
				    b[p * 32 + k * 8 + c];
			bad += d[l * 8 + i] != want;
		}
	printf("{\"check\":\"layout\",\"mismatches\":%d,\"ok\":%s}\n", bad,
	    bad ? "false" : "true");
	if (bad)
		discover();
	return (bad == 0);
}

/*
 * Block j: weights w[j][32 rows][32] (quad-pair p: rows 8p .. 8p + 7),
 * x[j][4 tokens][2 planes: hi, lo][32] as signed bytes; out[j][32
 * rows][4 tokens] = fmaf(256, Σ q·hi, Σ q·lo), the sums from 8 k-steps.
 */
static __global__ void
blocks_kernel(const int8_t *w, const int8_t *x, float *out)
{
	const int	lane = threadIdx.x, p = (lane / 4) % QP;
	const int	line = frag_line(lane);
	const int8_t	*wr = w + (int64_t)blockIdx.x * 32 * 32 +
	    (8 * p + line) * 32;
	/* column `line`: token line / 2, plane line % 2 */
	const int8_t	*xc = x + (int64_t)blockIdx.x * TOK * 2 * 32 +
	    line * 32;
	float		acc[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };

	for (int s = 0; s < KS; s++) {
		uint32_t fa[2], fb[2];

		fa[0] = pack2(wr[4 * s], wr[4 * s + 1]);
		fa[1] = pack2(wr[4 * s + 2], wr[4 * s + 3]);
		fb[0] = pack2(xc[4 * s], xc[4 * s + 1]);
		fb[1] = pack2(xc[4 * s + 2], xc[4 * s + 3]);
		mma884(acc, fa, fb);
	}
	for (int m = 0; m < 4; m++) {
		int r, c;

		acc_at(lane, 2 * m, &r, &c);	/* c even: token c / 2 */
		out[((int64_t)blockIdx.x * 32 + 8 * p + r) * TOK + c / 2] =
		    fmaf(256.0f, acc[2 * m], acc[2 * m + 1]);
	}
}

/* A weight of FORMAT 0 (0..15), 1 (0..31), 2 (−32..31); EXT: its extreme. */
static int8_t
weight(int format, int ext)
{
	static const int lo[3] = { 0, 0, -32 }, span[3] = { 16, 32, 64 };

	if (ext)
		return ((int8_t)(ext > 0 ? lo[format] + span[format] - 1 :
		    lo[format]));
	return ((int8_t)(lo[format] + (int)(next64() % span[format])));
}

/* A byte of plane HI (−127..127) or lo (−128..127); EXT: its extreme. */
static int8_t
plane(int hi, int ext)
{
	if (ext)
		return ((int8_t)(ext > 0 ? 127 : hi ? -127 : -128));
	return ((int8_t)((int)(next64() % (hi ? 255 : 256)) - (hi ? 127 :
	    128)));
}

/*
 * NB blocks: random ones, then one a sign pattern (weights at their top
 * or bottom, planes at theirs) for each format; bits against the CPU.
 */
static int
check_blocks(void)
{
	const int	 n_ext = 3 * 4, nb = NBLK + n_ext;
	int8_t		*w = (int8_t *)malloc((size_t)nb * 32 * 32);
	int8_t		*x = (int8_t *)malloc((size_t)nb * TOK * 2 * 32);
	float		*got = (float *)malloc((size_t)nb * 32 * TOK * 4);
	float		*dout;
	int		 bad = 0;

	for (int j = 0; j < nb; j++) {
		const int e = j - NBLK, format = e >= 0 ? e / 4 : j % 3;
		const int we = e >= 0 ? (e % 2 ? 1 : -1) : 0;
		const int xe = e >= 0 ? (e / 2 % 2 ? 1 : -1) : 0;

		for (int i = 0; i < 32 * 32; i++)
			w[(int64_t)j * 1024 + i] = weight(format, we);
		for (int i = 0; i < TOK * 2 * 32; i++)
			x[(int64_t)j * 256 + i] = plane((i / 32) % 2 == 0, xe);
	}
	int8_t *dw = (int8_t *)dev_copy(w, (size_t)nb * 32 * 32);
	int8_t *dx = (int8_t *)dev_copy(x, (size_t)nb * TOK * 2 * 32);
	die("malloc", cudaMalloc(&dout, (size_t)nb * 32 * TOK * 4));
	blocks_kernel<<<nb, 32>>>(dw, dx, dout);
	die("blocks", cudaGetLastError());
	die("copy", cudaMemcpy(got, dout, (size_t)nb * 32 * TOK * 4,
	    cudaMemcpyDeviceToHost));
	for (int j = 0; j < nb; j++)
		for (int r = 0; r < 32; r++)
			for (int t = 0; t < TOK; t++) {
				const int8_t *wr = w + (int64_t)j * 1024 +
				    r * 32;
				const int8_t *hi = x + (int64_t)j * 256 +
				    (2 * t) * 32, *lo = hi + 32;
				int32_t P = 0;

				for (int k = 0; k < 32; k++)
					P += wr[k] * (256 * hi[k] + lo[k]);
				const float want = (float)P;
				const float g = got[((int64_t)j * 32 + r) *
				    TOK + t];

				if (memcmp(&g, &want, 4) != 0 && bad++ < 4)
					printf("{\"check\":\"blocks\","
					    "\"block\":%d,\"row\":%d,"
					    "\"token\":%d,\"P\":%d,"
					    "\"got\":%.9g}\n", j, r, t, P,
					    g);
			}
	printf("{\"check\":\"blocks\",\"blocks\":%d,\"sums\":%d,"
	    "\"mismatches\":%d,\"ok\":%s}\n", nb, nb * 32 * TOK, bad,
	    bad ? "false" : "true");
	cudaFree(dw);
	cudaFree(dx);
	cudaFree(dout);
	free(w);
	free(x);
	free(got);
	return (bad == 0);
}

int
main(void)
{
	const int layout = check_layout();
	/* the blocks read sums where the assumed map puts them */
	const int blocks = layout && check_blocks();

	return (layout && blocks ? 0 : 1);
}
