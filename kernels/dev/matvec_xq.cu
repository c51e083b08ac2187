/*
 * matvec_xq.cu - playground for the integer matvec (kernels/matvec.cu and
 * matvec_mma.cuh): the dp4a kernel's shapes (warps a CTA W, tile rows TR), the
 * tensor-core kernel's (groups of virtual lanes a warp G, CTAs an SM MINB)
 * and the cost of 1..16 columns through rs_k_matvec, on
 * the shapes of a Qwen3.8-27B Q4_K_M token, weights in the engine's
 * 16-row tiles (rs_tile.h).
 *
 *   make CUDA=1 build/dev/matvec_xq && build/dev/matvec_xq
 *   MX_SHAPE=ffn_up MX_VARIANT=mma4 ncu ... build/dev/matvec_xq
 *   MX_ROWS=2112,4224,6336 build/dev/matvec_xq   (each shape at these rows:
 *                                      how the time scales with CTAs an SM)
 *   MX_ROWS=2112 MX_IN=2048,4096,8192 build/dev/matvec_xq   (and at these
 *                                      input lengths: with a warp's steps)
 *
 * x is a batch of exactly the launch's columns (rs_xq.h), as in a
 * verification pass.  Every variant and column count is first compared bit
 * for bit with the same columns one at a time through rs_k_matvec, each
 * quantized alone (the kernel's contract:
 * tests/check_cuda.c checks it against the CPU oracle too); then 20
 * launches are timed with CUDA events, each on its own copy of the weights
 * (256 MB of copies in all), so that none finds them in the L2.
 * One JSON line per shape and variant or column count: microseconds, GB/s
 * of weight bytes, cost against one column.  (Earlier variants, split-K,
 * the shared-memory pipes, timing-only forms: docs/perf-log.md and this
 * file's history.)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../matvec.cu"

struct shape {
	const char	*name;
	int		 type;
	int64_t		 n_in, n_out;
};

static void
die(const char *what, cudaError_t e)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
		exit(1);
	}
}

static uint64_t rng = 88172645463325252ULL;

static uint32_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return ((uint32_t)(rng >> 16));
}

/* random blocks with finite f16 scales (0.01) */
static void
fill(int type, uint8_t *b, size_t bytes)
{
	const size_t bb = (size_t)rs_type_traits(type)->block_bytes;
	const size_t at = type == RS_TYPE_Q6_K ? 208 : 0;

	for (size_t i = 0; i < bytes; i++)
		b[i] = (uint8_t)next();
	for (size_t off = 0; off < bytes; off += bb) {
		b[off + at] = 0x1f;	/* 0x211f: 0.0100 */
		b[off + at + 1] = 0x21;
		if (type != RS_TYPE_Q6_K) {
			b[off + 2] = 0x1f;
			b[off + 3] = 0x21;
		}
	}
}

typedef void (*launch_fn)(const uint8_t *, int64_t, int64_t, const xq_in,
    float *, int64_t);

/* the kernels' parameters for one product */
static mv_parts
one_part(const uint8_t *w, int64_t n_out, float *y, int64_t ldy)
{
	mv_parts p = {};

	p.w[0] = w;
	p.y[0] = y;
	p.n_out[0] = n_out;
	p.ldy[0] = ldy;
	p.n = 1;
	return (p);
}

template <int TYPE, int NT, int W, int TR>
static void
launch(const uint8_t *w, int64_t n_in, int64_t n_out, const xq_in xq,
    float *y, int64_t ldy)
{
	mv_parts p = one_part(w, n_out, y, ldy);
	dim3 grid(mv_parts_grid(&p, TR * RS_TILE_ROWS));
	/* one column: the decode kernel's consecutive blocks (batch() makes
	   batches of one column then) */
	matvec_xq_kernel<TYPE, NT, W, TR, NT == 1><<<grid, W * RS_WARP>>>(p,
	    n_in, xq);
}

template <int TYPE, int NT, int G, int MINB>
static void
launch_mma(const uint8_t *w, int64_t n_in, int64_t n_out, const xq_in xq,
    float *y, int64_t ldy)
{
	mv_parts p = one_part(w, n_out, y, ldy);
	dim3 grid(mv_parts_grid(&p, MMA_ROWS));
	if constexpr (NT == 2 || (NT >= 3 && NT <= 4 &&
	    TYPE != RS_TYPE_Q5_K)) {
		if (xq.bm && xq.nb == NT && xq.t0 == 0) {
			matvec_xq_mma_kernel<TYPE, NT, G, MINB, XL_BM_NT><<<
			    grid, 8 / G * RS_WARP>>>(p, n_in, xq);
			return;
		}
	}
	if (xq.bm)
		matvec_xq_mma_kernel<TYPE, NT, G, MINB, XL_BM><<<grid,
		    8 / G * RS_WARP>>>(p, n_in, xq);
	else if constexpr (NT <= 4)
		matvec_xq_mma_kernel<TYPE, NT, G, MINB, XL_COLS><<<grid,
		    8 / G * RS_WARP>>>(p, n_in, xq);
}

struct variant {
	const char	*name;
	int		 nt;
	launch_fn	 fn[3];		/* Q4_K, Q5_K, Q6_K */
	int		 cm;		/* x: 1 column after column, 2 block-major,
					   0 as rs_k_xq_block_major */
};

#define V(nt, w, tr) { "dp4a" #nt "_w" #w "_tr" #tr, nt, { \
	launch<RS_TYPE_Q4_K, nt, w, tr>, launch<RS_TYPE_Q5_K, nt, w, tr>, \
	launch<RS_TYPE_Q6_K, nt, w, tr> }, 0 }
#define M(nt, g, mb) { "mma" #nt "_g" #g "_minb" #mb, nt, { \
	launch_mma<RS_TYPE_Q4_K, nt, g, mb>, \
	launch_mma<RS_TYPE_Q5_K, nt, g, mb>, \
	launch_mma<RS_TYPE_Q6_K, nt, g, mb> }, 0 }

static const struct variant variants[] = {
	V(1, 8, 2), M(1, 1, 3), M(1, 2, 5), M(4, 1, 3), M(4, 2, 5),
	M(8, 1, 2), M(8, 1, 3), M(8, 2, 3), M(8, 2, 4), M(16, 1, 1),
	M(16, 1, 2), M(16, 2, 3), M(1, 4, 12), M(2, 1, 3), M(2, 2, 5),
	M(1, 2, 6),
};

static int
type_index(int type)
{
	return (type == RS_TYPE_Q4_K ? 0 : type == RS_TYPE_Q5_K ? 1 : 2);
}

/*
 * Copies of the weights that the timed launches take in turn, together
 * at least 256 MB: each launch then reads its weights from memory, not
 * from the L2 (50 MB) where the previous launch left them, as in a
 * decode step; back to back, the launches' gaps stay out of the time.
 * (Up to 256 copies, for MX_IN's small shapes: at 16, the 20 timed
 * launches of a 1.2 MB shape would have found 4 copies in the L2.)
 */
#define ROT_BYTES	((size_t)256 << 20)
#define ROT_MAX		256

struct rot {
	uint8_t	*w[ROT_MAX];
	int	 n;
};

static double
time_variant(launch_fn fn, const struct shape *sh, const struct rot *dw,
    const xq_in dq, float *dy, int reps)
{
	cudaEvent_t a, b;
	float ms;

	cudaEventCreate(&a);
	cudaEventCreate(&b);
	cudaEventRecord(a);
	for (int r = 0; r < reps; r++)
		fn(dw->w[r % dw->n], sh->n_in, sh->n_out, dq, dy, sh->n_out);
	cudaEventRecord(b);
	die("time", cudaEventSynchronize(b));
	cudaEventElapsedTime(&ms, a, b);
	cudaEventDestroy(a);
	cudaEventDestroy(b);
	return (ms * 1e3 / reps);
}

static double
time_us(const struct rot *dw, int type, const struct shape *sh, int64_t rb,
    const xq_in dq, float *dy, int nt, int reps)
{
	struct rs_err err;
	cudaEvent_t a, b;
	float ms;

	cudaEventCreate(&a);
	cudaEventCreate(&b);
	cudaEventRecord(a);
	for (int r = 0; r < reps; r++)
		if (rs_k_matvec(dw->w[r % dw->n], type | RS_TILED, sh->n_in,
		    sh->n_out, rb, NULL, sh->n_in, (rs_k_xq_cols){ dq.p,
		    dq.nb, dq.t0 }, dy, sh->n_out, nt, 0, 0, &err) != RS_OK) {
			fprintf(stderr, "matvec: %s\n", err.msg);
			exit(1);
		}
	cudaEventRecord(b);
	die("time", cudaEventSynchronize(b));
	cudaEventElapsedTime(&ms, a, b);
	cudaEventDestroy(a);
	cudaEventDestroy(b);
	return (ms * 1e3 / reps);
}

/* The largest |got − ref| over the largest |ref| (N values). */
static double
max_rel_err(const float *got, const float *ref, size_t n)
{
	double d = 0.0, m = 0.0;

	for (size_t i = 0; i < n; i++) {
		const double e = fabs((double)got[i] - (double)ref[i]);
		const double r = fabs((double)ref[i]);
		d = e > d ? e : d;
		m = r > m ? r : m;
	}
	return (m > 0.0 ? d / m : d);
}

/*
 * The NT columns at X (N values each) as one batch in D (host copy H):
 * in rs_k_xq_block_major's layout, column after column (CM 1) or
 * block-major (CM 2).
 */
static xq_in
batch(const float *x, int64_t n, int nt, int cm, uint8_t *h, uint8_t *d)
{
	const xq_in c = { d, nt, 0, cm ? cm == 2 : rs_k_xq_block_major(nt),
	    nt };

	rs_xq_quantize_batch(x, n, n, nt, c.bm, h);
	die("copy", cudaMemcpy(d, h, (size_t)RS_XQ_BATCH_BYTES(n, nt),
	    cudaMemcpyHostToDevice));
	return (c);
}

/*
 * The comma-separated positive multiples of M in the environment
 * variable NAME (unset: none) into V (at most 16), their count in *N;
 * -1, with a message, on anything else.
 */
static int
list_env(const char *name, int64_t m, int64_t *v, int *n)
{
	const char *e = getenv(name);
	char *end;

	*n = 0;
	for (const char *r = e; r != NULL && *r != '\0'; r = end + (*end ==
	    ',')) {
		const long long x = strtoll(r, &end, 10);
		if (*n == 16 || end == r || (*end != ',' && *end != '\0') ||
		    x <= 0 || x % m != 0) {
			fprintf(stderr, "%s: %s: at most 16 positive multiples "
			    "of %lld, comma-separated\n", name, e,
			    (long long)m);
			return (-1);
		}
		v[(*n)++] = x;
	}
	return (0);
}

int
main(void)
{
	static const struct shape shapes[] = {
		{ "ffn_up", RS_TYPE_Q4_K, 5120, 17408 },
		{ "ffn_down", RS_TYPE_Q4_K, 17408, 5120 },
		{ "ffn_down_q6", RS_TYPE_Q6_K, 17408, 5120 },
		{ "gdn_qkv", RS_TYPE_Q4_K, 5120, 10240 },
		{ "ssm_out", RS_TYPE_Q4_K, 6144, 5120 },
		{ "attn_o", RS_TYPE_Q5_K, 6144, 5120 },
		{ "output", RS_TYPE_Q6_K, 5120, 248320 },
	};
	static const int cols[] = { 1, 2, 3, 4, 5, 6, 7, 8, 16 };
	const int nt_max = 16, reps = 20;
	/* for a profiler: one shape, the variants whose name holds a string */
	const char *only_shape = getenv("MX_SHAPE");
	const char *only_variant = getenv("MX_VARIANT");
	int status = 0;

	/* MX_ROWS="r1,r2,...", MX_IN="n1,n2,...": each shape at these row
	   counts and input lengths instead (how the time scales with the
	   CTAs an SM gets and with a warp's steps; at most 16 of each) */
	int64_t rows[16], ins[16];
	int n_rows = 0, n_ins = 0;

	if (list_env("MX_ROWS", MMA_ROWS, rows, &n_rows) != 0 ||
	    list_env("MX_IN", 256, ins, &n_ins) != 0)
		return (2);
	const int nr = n_rows > 0 ? n_rows : 1, ni = n_ins > 0 ? n_ins : 1;
	for (size_t sr = 0; sr < sizeof(shapes) / sizeof(shapes[0]) * nr *
	    ni; sr++) {
		const size_t s = sr / (size_t)(nr * ni);
		struct shape shr = shapes[s];
		if (n_rows > 0)
			shr.n_out = rows[sr / ni % nr];
		if (n_ins > 0)
			shr.n_in = ins[sr % ni];
		const struct shape *sh = &shr;
		if (only_shape && strcmp(only_shape, sh->name) != 0)
			continue;
		const int64_t rb = sh->n_in / 256 *
		    rs_type_traits(sh->type)->block_bytes;
		const size_t wbytes = (size_t)(rb * sh->n_out);
		const size_t qbytes = (size_t)RS_XQ_BATCH_BYTES(sh->n_in,
		    nt_max);
		uint8_t *hw = (uint8_t *)malloc(wbytes);
		uint8_t *hq = (uint8_t *)malloc(qbytes);
		float *hx = (float *)malloc((size_t)(nt_max * sh->n_in) * 4);
		float *ref = (float *)malloc((size_t)(nt_max * sh->n_out) * 4);
		float *got = (float *)malloc((size_t)(nt_max * sh->n_out) * 4);
		struct rot dw;
		uint8_t *dq;
		float *dy;

		fill(sh->type, hw, wbytes);
		{	/* the engine's layout (every shape has whole tile rows) */
			uint8_t *rows = (uint8_t *)malloc(wbytes);
			memcpy(rows, hw, wbytes);
			rs_tile_pack(sh->type, sh->n_in, sh->n_out, rows, hw);
			free(rows);
		}
		for (int64_t i = 0; i < nt_max * sh->n_in; i++)
			hx[i] = (float)(next() % 20001) / 10000.0f - 1.0f;
		dw.n = (int)((ROT_BYTES + wbytes - 1) / wbytes);
		if (dw.n > ROT_MAX)
			dw.n = ROT_MAX;
		for (int i = 0; i < dw.n; i++) {
			die("malloc", cudaMalloc(&dw.w[i], wbytes));
			die("copy", cudaMemcpy(dw.w[i], hw, wbytes,
			    cudaMemcpyHostToDevice));
		}
		die("malloc", cudaMalloc(&dq, qbytes));
		die("malloc", cudaMalloc(&dy, (size_t)(nt_max * sh->n_out) * 4));
		/* the reference: every column alone */
		for (int t = 0; t < nt_max; t++)
			(void)time_us(&dw, sh->type, sh, rb, batch(hx + t *
			    sh->n_in, sh->n_in, 1, 0, hq, dq), dy + t *
			    sh->n_out, 1, 1);
		die("ref", cudaMemcpy(ref, dy, (size_t)(nt_max * sh->n_out) * 4,
		    cudaMemcpyDeviceToHost));
		for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]);
		    v++) {
			launch_fn fn = variants[v].fn[type_index(sh->type)];
			if (only_variant && !strstr(variants[v].name,
			    only_variant))
				continue;

			const size_t outs = (size_t)(variants[v].nt * sh->n_out);
			const xq_in xc = batch(hx, sh->n_in, variants[v].nt,
			    variants[v].cm, hq, dq);
			fn(dw.w[0], sh->n_in, sh->n_out, xc, dy, sh->n_out);
			die("run", cudaMemcpy(got, dy, outs * 4,
			    cudaMemcpyDeviceToHost));
			const int same = memcmp(got, ref, outs * 4) == 0;
			const double err = max_rel_err(got, ref, outs);
			const double us = time_variant(fn, sh, &dw, xc, dy,
			    reps);
			printf("{\"shape\":\"%s\",\"rows\":%lld,"
			    "\"in\":%lld,\"variant\":\"%s\","
			    "\"us\":%.1f,\"GB_s\":%.0f,\"bit_identical\":"
			    "%s,\"max_rel_err\":%.3g}\n", sh->name,
			    (long long)sh->n_out, (long long)sh->n_in,
			    variants[v].name, us,
			    wbytes / (us * 1e-6) / 1e9, same ? "true" :
			    "false", err);
			if (!same)
				status = 1;
		}
		double us1 = 0.0;
		for (size_t v = 0; v < (only_variant ? 0 : sizeof(cols) /
		    sizeof(cols[0])); v++) {
			const int nt = cols[v];
			const xq_in xc = batch(hx, sh->n_in, nt, 0, hq, dq);

			(void)time_us(&dw, sh->type, sh, rb, xc, dy, nt, 1);
			die("run", cudaMemcpy(got, dy, (size_t)(nt *
			    sh->n_out) * 4, cudaMemcpyDeviceToHost));
			const int same = memcmp(got, ref, (size_t)(nt *
			    sh->n_out) * 4) == 0;
			const double us = time_us(&dw, sh->type, sh, rb, xc, dy,
			    nt, reps);
			if (nt == 1)
				us1 = us;
			printf("{\"shape\":\"%s\",\"cols\":%d,\"us\":%.1f,"
			    "\"GB_s\":%.0f,\"cost\":%.2f,\"bit_identical\":"
			    "%s}\n", sh->name, nt, us, wbytes / (us * 1e-6) /
			    1e9, us / us1, same ? "true" : "false");
			if (!same)
				status = 1;
		}
		for (int i = 0; i < dw.n; i++)
			cudaFree(dw.w[i]);
		cudaFree(dq);
		cudaFree(dy);
		free(hw);
		free(hq);
		free(hx);
		free(ref);
		free(got);
	}
	return (status);
}
