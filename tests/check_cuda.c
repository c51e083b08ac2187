/*
 * check_cuda.c - every CUDA kernel against its CPU oracle (rs_cpu.h,
 * rs_types.c), then the CUDA engine against the CPU engine on the tiny
 * fixture models.  Built only with CUDA=1 and run by `make test-cuda` on a
 * machine with a GPU.  CUDA does not survive fork(), so each test
 * initialises it itself (Check forks before each test).
 *
 * Tolerances: kernels use f32 with another summation order than the
 * oracles (double in the _ref functions): relative L2 error of a few 1e-7,
 * bound 1e-5.  Attention reads an f16 KV cache: its oracle gets the same
 * f16-rounded K and V, so the bound stays 1e-5.  End to end, the GPU keeps
 * K and V in f16 (llama.cpp's default, §4.10) and the CPU in f32; the
 * issue's bounds are 1e-3 (f16 file) and 2e-3 (quantized files).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <cuda_runtime_api.h>

#include "rs_ckcache.h"
#include "rs_cpu.h"
#include "rs_engine.h"
#include "rs_half.h"
#include "rs_json.h"
#include "rs_kernels.h"
#include "rs_model.h"
#include "rs_quant_impl.h"
#include "rs_spec.h"
#include "rs_state.h"
#include "rs_tile.h"
#include "rs_types.h"
#include "rs_verify.h"
#include "rs_xq.h"
#include "t_ref.h"
#include "t_util.h"

#define CK(x)	ck_assert_int_eq((x), cudaSuccess)

/* ---- helpers ---- */

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static float
frand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return ((float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f);
}

/* A device copy of BYTES at H, or zeroed device memory when H is NULL. */
static void *
dup_dev(const void *h, size_t bytes)
{
	void *d = NULL;

	CK(cudaMalloc(&d, bytes ? bytes : 4));
	if (h == NULL)
		CK(cudaMemset(d, 0, bytes ? bytes : 4));
	else if (bytes)
		CK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
	return (d);
}

static void
to_host(void *h, const void *d, size_t bytes)
{
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
}

static void
expect_close(const char *what, const float *got, const float *ref, int64_t n,
    double tol)
{
	double e = rs_verify_rel_err(got, ref, n);

	ck_assert_msg(e <= tol, "%s: relative error %.3g > %.3g", what, e, tol);
	for (int64_t i = 0; i < n; i++)
		ck_assert_msg(isfinite(got[i]), "%s: value %lld not finite",
		    what, (long long)i);
}

static int32_t *
params_dev(int32_t pos0, int32_t snap_from)
{
	int32_t p[RS_K_N_PARAMS] = { pos0, snap_from, -1 };

	return (dup_dev(p, sizeof(p)));
}

/* ---- matvec ---- */

/*
 * Random but valid blocks of TYPE: random bytes with every f16 scale field
 * set to a finite value (decoded identically by host and device).
 */
static void
random_rows(int type, void *buf, size_t bytes)
{
	const struct rs_type_traits *tt = rs_type_traits(type);
	unsigned char *b = buf;
	uint16_t d = rs_f32_to_f16(0.01f);

	for (size_t i = 0; i < bytes; i++)
		b[i] = (unsigned char)(frand() * 127.0f + 128.0f);
	for (size_t off = 0; off < bytes; off += (size_t)tt->block_bytes) {
		unsigned char *k = b + off;
		switch (type) {
		case RS_TYPE_Q4_0: case RS_TYPE_Q5_0: case RS_TYPE_Q8_0:
		case RS_TYPE_IQ4_NL: case RS_TYPE_IQ4_XS:
			memcpy(k, &d, 2);
			break;
		case RS_TYPE_Q4_1: case RS_TYPE_Q5_1: case RS_TYPE_Q4_K:
		case RS_TYPE_Q5_K:
			memcpy(k, &d, 2);
			memcpy(k + 2, &d, 2);
			break;
		case RS_TYPE_Q2_K:
			memcpy(k + 80, &d, 2);
			memcpy(k + 82, &d, 2);
			break;
		case RS_TYPE_Q3_K:
			memcpy(k + 108, &d, 2);
			break;
		case RS_TYPE_Q6_K:
			memcpy(k + 208, &d, 2);
			break;
		case RS_TYPE_F16: case RS_TYPE_BF16:
			for (size_t i = 0; i < (size_t)tt->block_bytes; i += 2) {
				uint16_t h = type == RS_TYPE_F16 ?
				    rs_f32_to_f16(frand()) : rs_f32_to_bf16(frand());
				memcpy(k + i, &h, 2);
			}
			break;
		case RS_TYPE_F32: {
			float f = frand();
			memcpy(k, &f, 4);
			break;
		}
		}
	}
}

static int
xq_type(int type)
{
	return (type == RS_TYPE_Q4_K || type == RS_TYPE_Q5_K ||
	    type == RS_TYPE_Q6_K);
}

/*
 * W (Q4_K, Q5_K or Q6_K) on the device in 16-row tiles, as the engine
 * uploads it (rs_k_tile_upload, through a staging buffer of one tile row
 * and a half: groups of 16 rows, the last one short where N_OUT is not a
 * multiple of 16), its bytes checked against rs_tile_pack's.
 */
static void *
dev_tiled(const struct rs_gguf_tensor *w)
{
	const int64_t n_in = w->ne[0], n_out = w->ne[1];
	const size_t rb = w->nbytes / (uint64_t)n_out;
	const size_t bytes = rs_tile_bytes(w->type, n_in, n_out);
	uint8_t *want = malloc(bytes), *got = malloc(bytes);
	void *d = dup_dev(NULL, bytes), *stage = dup_dev(NULL, 24 * rb);
	struct rs_err err;

	ck_assert_ptr_nonnull(want);
	ck_assert_ptr_nonnull(got);
	ck_assert_msg(rs_k_tile_upload(w->data, w->type, n_in, n_out, d,
	    stage, 24 * rb, 0, &err) == RS_OK, "%s", err.msg);
	rs_tile_pack(w->type, n_in, n_out, w->data, want);
	to_host(got, d, bytes);
	ck_assert_msg(memcmp(got, want, bytes) == 0,
	    "tile upload of %s %lldx%lld differs from rs_tile_pack",
	    rs_type_name(w->type), (long long)n_out, (long long)n_in);
	cudaFree(stage);
	free(want);
	free(got);
	return (d);
}

/*
 * The integer path of W (n_in a multiple of 256) on the N_TOK columns of
 * X: against the same products in double on the quantized x̃
 * (rs_xq_dot_ref: what the kernel computes, up to f32 rounding), against
 * the f32 products REF (what the engine needs: x̃ is within 1e-5 of x),
 * and column by column (batch invariance: bit-identical).
 */
static void
check_matvec_xq(const struct rs_gguf_tensor *w, const float *x, int n_tok,
    const float *ref)
{
	const int64_t n_in = w->ne[0], n_out = w->ne[1];
	const int64_t rb = (int64_t)(w->nbytes / (uint64_t)n_out);
	const int64_t ldq = RS_XQ_COL_BYTES(n_in);
	const size_t qbytes = (size_t)RS_XQ_BATCH_BYTES(n_in, n_tok);
	const int bm = rs_k_xq_block_major(n_tok);
	uint8_t	*xq = malloc(qbytes);
	uint8_t	*cols = malloc((size_t)(n_tok * ldq));	/* one by one */
	float	*y = malloc((size_t)(n_tok * n_out) * 4);
	float	*y1 = malloc((size_t)n_out * 4);
	float	*exact = malloc((size_t)(n_tok * n_out) * 4);
	float	*row = malloc((size_t)n_in * 4);
	struct rs_err err;
	char	 what[128];

	rs_xq_quantize_batch(x, n_in, n_in, n_tok, bm, xq);
	for (int t = 0; t < n_tok; t++)
		rs_xq_column(xq, n_in, n_tok, bm, t, cols + t * ldq);
	for (int64_t o = 0; o < n_out; o++) {
		ck_assert_int_eq(rs_dequant_row(w->type,
		    (const uint8_t *)w->data + o * rb, row, n_in, NULL), RS_OK);
		for (int t = 0; t < n_tok; t++)
			exact[t * n_out + o] = (float)rs_xq_dot_ref(row,
			    cols + t * ldq, n_in);
	}
	void *dw = dev_tiled(w);
	const int type = w->type | RS_TILED;
	float *dx = dup_dev(x, (size_t)(n_tok * n_in) * 4);
	void *dq = dup_dev(xq, qbytes);
	float *dy = dup_dev(NULL, (size_t)(n_tok * n_out) * 4);
	ck_assert_int_eq(rs_k_matvec(dw, type, n_in, n_out, rb, dx, n_in,
	    (struct rs_k_xq_cols){ dq, n_tok, 0 }, dy, n_out, n_tok, 0, 0,
	    &err), RS_OK);
	to_host(y, dy, (size_t)(n_tok * n_out) * 4);
	snprintf(what, sizeof(what), "matvec xq %s %s %lldx%lld, %d cols",
	    w->name, rs_type_name(w->type), (long long)n_in, (long long)n_out,
	    n_tok);
	expect_close(what, y, exact, n_tok * n_out, 1e-5);
	expect_close(what, y, ref, n_tok * n_out, 1e-4);
	for (int t = 0; t < n_tok; t++) {
		ck_assert_int_eq(rs_k_matvec(dw, type, n_in, n_out, rb,
		    dx + t * n_in, n_in, (struct rs_k_xq_cols){ dq, n_tok, t },
		    dy, n_out, 1, 0, 0, &err), RS_OK);
		to_host(y1, dy, (size_t)n_out * 4);
		ck_assert_msg(memcmp(y1, y + t * n_out, (size_t)n_out * 4) == 0,
		    "%s: column %d alone differs from the batch", what, t);
		/* and quantized alone, a batch of one as a decode step has
		   it (the one-column kernels at constant strides) */
		void *d1 = dup_dev(cols + t * ldq, (size_t)RS_XQ_BATCH_BYTES(
		    n_in, 1));
		ck_assert_int_eq(rs_k_matvec(dw, type, n_in, n_out, rb,
		    dx + t * n_in, n_in, (struct rs_k_xq_cols){ d1, 1, 0 },
		    dy, n_out, 1, 0, 0, &err), RS_OK);
		to_host(y1, dy, (size_t)n_out * 4);
		ck_assert_msg(memcmp(y1, y + t * n_out, (size_t)n_out * 4) == 0,
		    "%s: column %d in a batch of one differs from the batch",
		    what, t);
		cudaFree(d1);
	}
	/* columns 1 .. of the batch in one launch: one that starts inside
	   its batch (the engine's launches past 16 columns) */
	if (n_tok >= 3) {
		const size_t b = (size_t)((n_tok - 1) * n_out) * 4;
		float *tail = malloc(b);
		ck_assert_int_eq(rs_k_matvec(dw, type, n_in, n_out, rb,
		    dx + n_in, n_in, (struct rs_k_xq_cols){ dq, n_tok, 1 }, dy,
		    n_out, n_tok - 1, 0, 0, &err), RS_OK);
		to_host(tail, dy, b);
		ck_assert_msg(memcmp(tail, y + n_out, b) == 0,
		    "%s: columns 1.. in one launch differ from the batch", what);
		free(tail);
	}
	cudaFree(dw);
	cudaFree(dx);
	cudaFree(dq);
	cudaFree(dy);
	free(xq);
	free(cols);
	free(y);
	free(y1);
	free(exact);
	free(row);
}

/*
 * One weight through rs_k_matvec against rs_cpu_matmul_ref, and through
 * its integer path where it has one.
 */
static void
check_matvec(const struct rs_gguf_tensor *w, int n_tok, int accumulate)
{
	int64_t	 n_in = w->ne[0], n_out = w->ne[1];
	float	*x = malloc((size_t)(n_tok * n_in) * 4);
	float	*y = malloc((size_t)(n_tok * n_out) * 4);
	float	*ref = malloc((size_t)(n_tok * n_out) * 4);
	float	*row = malloc((size_t)n_in * 4);
	struct rs_err err;
	char	 what[128];

	for (int64_t i = 0; i < n_tok * n_in; i++)
		x[i] = frand();
	for (int64_t i = 0; i < n_tok * n_out; i++)
		ref[i] = y[i] = accumulate ? frand() : 0.0f;
	struct rs_cpu_mm mm = { w, x, ref, n_out };
	if (accumulate) {
		float *tmp = malloc((size_t)(n_tok * n_out) * 4);
		mm.y = tmp;
		rs_cpu_matmul_ref(&mm, n_tok, row);
		for (int64_t i = 0; i < n_tok * n_out; i++)
			ref[i] += tmp[i];
		free(tmp);
	} else
		rs_cpu_matmul_ref(&mm, n_tok, row);
	void *dw = dup_dev(w->data, w->nbytes);
	float *dx = dup_dev(x, (size_t)(n_tok * n_in) * 4);
	float *dy = dup_dev(y, (size_t)(n_tok * n_out) * 4);
	ck_assert_int_eq(rs_k_matvec(dw, w->type, n_in, n_out,
	    (int64_t)(w->nbytes / (uint64_t)n_out), dx, n_in,
	    (struct rs_k_xq_cols){ NULL, 0, 0 }, dy, n_out, n_tok, accumulate,
	    0, &err), RS_OK);
	to_host(y, dy, (size_t)(n_tok * n_out) * 4);
	snprintf(what, sizeof(what), "matvec %s %s %lldx%lld, %d cols%s",
	    w->name, rs_type_name(w->type), (long long)n_in, (long long)n_out,
	    n_tok, accumulate ? " +=" : "");
	expect_close(what, y, ref, n_tok * n_out, 1e-5);
	if (!accumulate && xq_type(w->type) && n_in % 256 == 0)
		check_matvec_xq(w, x, n_tok, ref);
	cudaFree(dw);
	cudaFree(dx);
	cudaFree(dy);
	free(x);
	free(y);
	free(ref);
	free(row);
}

START_TEST(matvec_fixtures)
{
	static const char *const files[] = { "tiny/model-f16.gguf",
	    "tiny/model-q8_0.gguf", "tiny/model-q4_k_m.gguf",
	    "tiny/model-q5_k_m.gguf", "tiny/model-q4_0.gguf",
	    "tiny/model-q6_k.gguf" };
	static const int cols[] = { 1, 2, 5, 16 };
	int	seen[RS_TYPE_COUNT] = { 0 };

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct rs_model *m;
		struct rs_err err;
		ck_assert_int_eq(rs_model_open(&m, t_fixture(files[f]), &err),
		    RS_OK);
		/* every distinct type, on a GDN projection and the LM head */
		for (int64_t i = 0; i < rs_gguf_n_tensors(m->gguf); i++) {
			const struct rs_gguf_tensor *t = rs_gguf_tensor(m->gguf, i);
			if (t->n_dims != 2 || strstr(t->name, "conv1d") != NULL ||
			    (seen[t->type] >= 2 && strcmp(t->name,
			    "output.weight") != 0))
				continue;
			seen[t->type]++;
			for (size_t c = 0; c < sizeof(cols) / sizeof(cols[0]); c++)
				check_matvec(t, cols[c], c == 1);
		}
		rs_model_close(m);
	}
	ck_assert(seen[RS_TYPE_F16] && seen[RS_TYPE_Q8_0] && seen[RS_TYPE_Q4_K] &&
	    seen[RS_TYPE_Q5_K] && seen[RS_TYPE_Q6_K] && seen[RS_TYPE_Q4_0] &&
	    seen[RS_TYPE_F32] == 0);
}
END_TEST

/* *T: a 2-D weight "random" of N_OUT rows of N_IN values of TYPE, random
   valid blocks in the returned buffer (free it). */
static void *
random_tensor(struct rs_gguf_tensor *t, int type, int64_t n_in, int64_t n_out)
{
	size_t	 rb;
	void	*buf;

	memset(t, 0, sizeof(*t));
	t->name = "random";
	t->n_dims = 2;
	t->type = type;
	t->ne[0] = n_in;
	t->ne[1] = n_out;
	t->ne[2] = t->ne[3] = 1;
	ck_assert_int_eq(rs_type_row_bytes(type, n_in, &rb, NULL), RS_OK);
	t->nbytes = rb * (size_t)n_out;
	ck_assert((buf = malloc(t->nbytes)) != NULL);
	random_rows(type, buf, t->nbytes);
	t->data = buf;
	return (buf);
}

/* The block formats no fixture file holds: random valid blocks. */
START_TEST(matvec_all_types)
{
	static const int types[] = { RS_TYPE_F32, RS_TYPE_BF16, RS_TYPE_Q4_1,
	    RS_TYPE_Q5_0, RS_TYPE_Q5_1, RS_TYPE_IQ4_NL, RS_TYPE_Q2_K,
	    RS_TYPE_Q3_K, RS_TYPE_IQ4_XS, RS_TYPE_Q4_K, RS_TYPE_Q6_K };

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct rs_gguf_tensor t;
		/* 37 rows: not a multiple of the 4 rows a block */
		void *buf = random_tensor(&t, types[i], 512, 37);
		check_matvec(&t, 1, 0);
		check_matvec(&t, 7, 1);
		free(buf);
	}
}
END_TEST

/*
 * The integer path on rows of 13 super-blocks (odd: the main and the tail
 * loop of matvec_xq_kernel) and, for Q6_K, of 35 (FFN-wide rows, which
 * take two rows a warp and four steps in flight for one column: the main
 * loop's step of 8 super-blocks per set pair, then the tail), 67 rows (a
 * warp's rows cut short), 2, 3, 8 or 16 columns and each column alone
 * (check_matvec_xq), on tiles (rs_tile.h) whose last tile row is short
 * (67) or whole (64).  16 columns and the head's 1-8 run 4-warp CTAs
 * whose warps take two groups of virtual lanes (matvec_mma.cuh): 13
 * super-blocks give each warp both; the head's launch shapes need more
 * than MMA_TALL_ROWS rows (65,552 of 5 super-blocks; 2, 3, 4 and 8
 * columns, each column alone and columns 1..: every shape and x layout of
 * 1-8 columns), and so do 5-8 columns of Q4_K and Q5_K launches of more
 * than 8,192 rows (8,200 rows of 13 super-blocks, 5 and 8 columns).
 */
START_TEST(matvec_xq_wide)
{
	static const struct {
		int	type, nsb, rows;
	} cases[] = {
		{ RS_TYPE_Q4_K, 13, 67 }, { RS_TYPE_Q5_K, 13, 67 },
		{ RS_TYPE_Q6_K, 13, 67 }, { RS_TYPE_Q6_K, 35, 67 },
		{ RS_TYPE_Q6_K, 13, 64 }, { RS_TYPE_Q6_K, 16, 67 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rs_gguf_tensor t;
		void *buf = random_tensor(&t, cases[i].type, cases[i].nsb * 256,
		    cases[i].rows);
		check_matvec(&t, 2, 0);
		check_matvec(&t, 3, 0);
		check_matvec(&t, 8, 0);
		check_matvec(&t, 16, 0);
		free(buf);
	}
	struct rs_gguf_tensor t;
	void *buf = random_tensor(&t, RS_TYPE_Q6_K, 5 * 256, 65552);
	check_matvec(&t, 2, 0);
	check_matvec(&t, 3, 0);
	check_matvec(&t, 4, 0);
	check_matvec(&t, 8, 0);
	free(buf);
	static const int tall[] = { RS_TYPE_Q4_K, RS_TYPE_Q5_K };
	for (size_t i = 0; i < sizeof(tall) / sizeof(tall[0]); i++) {
		buf = random_tensor(&t, tall[i], 13 * 256, 8200);
		check_matvec(&t, 5, 0);
		check_matvec(&t, 8, 0);
		free(buf);
	}
}
END_TEST

/*
 * 5-7 columns, which run the 8-column tensor-core kernel (matvec.cu's
 * go_xq: it writes only them and reads past the launch's last column,
 * the next block's slots, then the batch's tail), give the bits of each
 * column alone, for every hot type, on 8-warp and on tall
 * (4-warp) launches, and as the 5 or 7 columns after 8 in one call (13,
 * 15: launches that start inside their batch).
 */
START_TEST(matvec_5_to_7)
{
	static const struct {
		int	type, nsb, rows;
	} cases[] = {
		{ RS_TYPE_Q4_K, 13, 67 }, { RS_TYPE_Q5_K, 13, 67 },
		{ RS_TYPE_Q6_K, 13, 67 }, { RS_TYPE_Q4_K, 13, 8200 },
		{ RS_TYPE_Q5_K, 13, 8200 }, { RS_TYPE_Q6_K, 5, 65552 },
	};
	static const int cols[] = { 5, 6, 7, 13, 15 };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rs_gguf_tensor t;
		void *buf = random_tensor(&t, cases[i].type, cases[i].nsb * 256,
		    cases[i].rows);
		for (size_t c = 0; c < sizeof(cols) / sizeof(cols[0]); c++)
			check_matvec(&t, cols[c], 0);
		free(buf);
	}
}
END_TEST

/*
 * rs_k_matvec_parts: products of one x in one call, each bit for bit what
 * rs_k_matvec gives it alone, for groups of one type (one launch: a large
 * part, a 48-row part as ssm_beta's, a 67-row part whose warps end short;
 * the third accumulates) and of mixed types (one launch a type, or, for
 * one column in a batch of its own, one launch for two K-quant types:
 * matvec_xq_mma_mix_kernel, each pair it is built for), on 1, 2, 3, 8
 * and 16 columns and one column in a batch of its own; and the calls the
 * tiled path refuses.
 */
START_TEST(matvec_parts)
{
	static const int mixes[][3] = {
		{ RS_TYPE_Q4_K, RS_TYPE_Q4_K, RS_TYPE_Q4_K },
		{ RS_TYPE_Q5_K, RS_TYPE_Q5_K, RS_TYPE_Q5_K },
		{ RS_TYPE_Q6_K, RS_TYPE_Q6_K, RS_TYPE_Q6_K },
		{ RS_TYPE_Q4_K, RS_TYPE_Q6_K, RS_TYPE_Q4_K },
		{ RS_TYPE_Q5_K, RS_TYPE_Q4_K, RS_TYPE_Q5_K },
		{ RS_TYPE_Q6_K, RS_TYPE_Q6_K, RS_TYPE_Q5_K },
		{ RS_TYPE_Q4_K, RS_TYPE_Q5_K, RS_TYPE_Q6_K },
	};
	static const int64_t rows[3] = { 300, 48, 67 };
	/* 0: one column in a batch of its own (a decode step: the
	   one-column kernels at constant strides) */
	static const int cols[] = { 0, 1, 2, 3, 8, 16 };
	const int64_t n_in = 1024;
	struct rs_err err;

	for (size_t m = 0; m < sizeof(mixes) / sizeof(mixes[0]); m++) {
		struct rs_gguf_tensor t[3];
		struct rs_k_mv_part p[3];
		void *buf[3], *dw[3];
		float *dy[3], *dyo[3];
		const int nt = 16;
		float *x = malloc((size_t)(nt * n_in) * 4);
		const size_t qbytes = (size_t)RS_XQ_BATCH_BYTES(n_in, nt);
		uint8_t *xq = malloc(qbytes);

		for (int64_t i = 0; i < nt * n_in; i++)
			x[i] = frand();
		/* the first n of a batch of 16 columns */
		rs_xq_quantize_batch(x, n_in, n_in, nt,
		    rs_k_xq_block_major(nt), xq);
		float *dx = dup_dev(x, (size_t)(nt * n_in) * 4);
		void *dq = dup_dev(xq, qbytes);
		const struct rs_k_xq_cols xc = { dq, nt, 0 };
		uint8_t *xq1 = malloc((size_t)RS_XQ_BATCH_BYTES(n_in, 1));
		rs_xq_quantize_batch(x, n_in, n_in, 1, 0, xq1);
		void *dq1 = dup_dev(xq1, (size_t)RS_XQ_BATCH_BYTES(n_in, 1));
		const struct rs_k_xq_cols xc1 = { dq1, 1, 0 };
		for (int i = 0; i < 3; i++) {
			buf[i] = random_tensor(&t[i], mixes[m][i], n_in, rows[i]);
			dw[i] = dev_tiled(&t[i]);
			dy[i] = dup_dev(NULL, (size_t)(nt * rows[i]) * 4);
			dyo[i] = dup_dev(NULL, (size_t)(nt * rows[i]) * 4);
			p[i] = (struct rs_k_mv_part){ dw[i], t[i].type |
			    RS_TILED, rows[i],
			    (int64_t)(t[i].nbytes / (uint64_t)rows[i]), dy[i],
			    rows[i], i == 2 };
		}
		for (size_t k = 0; k < sizeof(cols) / sizeof(cols[0]); k++) {
			const int n = cols[k] > 0 ? cols[k] : 1;
			const struct rs_k_xq_cols xk = cols[k] > 0 ? xc : xc1;
			for (int i = 0; i < 3; i++) {
				const size_t b = (size_t)(n * rows[i]) * 4;
				float *ones = malloc(b);
				for (int64_t j = 0; j < n * rows[i]; j++)
					ones[j] = 0.5f;
				ck_assert(cudaMemcpy(dy[i], ones, b,
				    cudaMemcpyHostToDevice) == cudaSuccess);
				ck_assert(cudaMemcpy(dyo[i], ones, b,
				    cudaMemcpyHostToDevice) == cudaSuccess);
				free(ones);
			}
			ck_assert_msg(rs_k_matvec_parts(p, 3, n_in, dx, n_in, xk,
			    n, 0, &err) == RS_OK, "%s", err.msg);
			for (int i = 0; i < 3; i++) {
				ck_assert_msg(rs_k_matvec(dw[i], p[i].type, n_in,
				    rows[i], p[i].row_bytes, dx, n_in, xk,
				    dyo[i], rows[i], n, i == 2, 0, &err) ==
				    RS_OK, "%s", err.msg);
				const size_t b = (size_t)(n * rows[i]) * 4;
				float *a = malloc(b), *o = malloc(b);
				to_host(a, dy[i], b);
				to_host(o, dyo[i], b);
				ck_assert_msg(memcmp(a, o, b) == 0,
				    "parts %s/%s/%s, %d cols: part %d (%lld "
				    "rows) differs from its own launch",
				    rs_type_name(mixes[m][0]),
				    rs_type_name(mixes[m][1]),
				    rs_type_name(mixes[m][2]), n, i,
				    (long long)rows[i]);
				free(a);
				free(o);
			}
		}
		for (int i = 0; i < 3; i++) {
			cudaFree(dw[i]);
			cudaFree(dy[i]);
			cudaFree(dyo[i]);
			free(buf[i]);
		}
		cudaFree(dx);
		cudaFree(dq);
		cudaFree(dq1);
		free(x);
		free(xq);
		free(xq1);
	}
	/* more parts than a launch takes: refused */
	struct rs_k_mv_part many[RS_K_MATVEC_MAX_PARTS + 1] = { 0 };
	ck_assert_int_eq(rs_k_matvec_parts(many, RS_K_MATVEC_MAX_PARTS + 1,
	    256, NULL, 256, (struct rs_k_xq_cols){ NULL, 0, 0 }, 1, 0, &err),
	    RS_ERR_INVALID_ARG);
	/* tiles without x's 16-bit form, and an upload whose staging holds
	   less than a tile row: refused */
	struct rs_gguf_tensor t;
	void *buf = random_tensor(&t, RS_TYPE_Q4_K, 512, 20);
	const int64_t rb = (int64_t)(t.nbytes / 20);
	void *dw = dev_tiled(&t);
	ck_assert_int_eq(rs_k_matvec(dw, RS_TYPE_Q4_K | RS_TILED, 512, 20, rb,
	    NULL, 512, (struct rs_k_xq_cols){ NULL, 0, 0 }, NULL, 20, 1, 0, 0,
	    &err), RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_k_tile_upload(t.data, RS_TYPE_Q4_K, 512, 20, dw,
	    dw, (size_t)(15 * rb), 0, &err), RS_ERR_INVALID_ARG);
	cudaFree(dw);
	free(buf);
}
END_TEST

/* ---- the prefill products (rs_k_mm) ---- */

/*
 * W through rs_k_mm (N_TOK columns, read LDX = n_in + 24 apart, written
 * LDY = n_out + 8 apart) against rs_cpu_matmul_ref.  Token t's values are
 * scaled by 10^(t mod 4 − 1), and token 1 carries one value of 3·10^5
 * (beyond f16's range): the chunk's power-of-two scale must keep every
 * token within f16's range and precision, so each token's error is checked
 * on its own.  A budget of WROWS rows forces W into pieces.  Tolerance
 * 3e-3: x and W are each rounded to f16 (2^-12 relative), f32 sums;
 * poisoned outputs (NaN) must all be written, and nothing past n_out.  The
 * second product (+=, the residual) reuses the converted input.  TILED:
 * W in 16-row tiles (rs_tile.h), as the engine holds Q4_K, Q5_K, Q6_K.
 */
static void
check_mm(const struct rs_gguf_tensor *w, int n_tok, int64_t wrows, int tiled)
{
	int64_t	 n_in = w->ne[0], n_out = w->ne[1];
	int64_t	 ldx = n_in + 24, ldy = n_out + 8;
	float	*x = malloc((size_t)(n_tok * ldx) * 4);
	float	*xc = malloc((size_t)(n_tok * n_in) * 4);
	float	*y = malloc((size_t)(n_tok * ldy) * 4);
	float	*ref = malloc((size_t)(n_tok * n_out) * 4);
	float	*row = malloc((size_t)n_in * 4);
	struct rs_k_mm *mm = NULL;
	struct rs_err err;
	char	 what[160];

	for (int t = 0; t < n_tok; t++) {
		float sc = powf(10.0f, (float)(t % 4 - 1));
		for (int64_t i = 0; i < ldx; i++)
			x[t * ldx + i] = i < n_in ? frand() * sc : NAN;
		if (t == 1)
			x[t * ldx + n_in / 2] = 3e5f;
		memcpy(xc + t * n_in, x + t * ldx, (size_t)n_in * 4);
	}
	for (int64_t i = 0; i < n_tok * ldy; i++)
		y[i] = NAN;
	struct rs_cpu_mm cm = { w, xc, ref, n_out };
	rs_cpu_matmul_ref(&cm, n_tok, row);
	void *dw = tiled ? dev_tiled(w) : dup_dev(w->data, w->nbytes);
	const int type = tiled ? w->type | RS_TILED : w->type;
	float *dx = dup_dev(x, (size_t)(n_tok * ldx) * 4);
	float *dy = dup_dev(y, (size_t)(n_tok * ldy) * 4);
	ck_assert_msg(rs_k_mm_new(n_in, n_tok, wrows * n_in, &mm, &err) ==
	    RS_OK, "%s", err.msg);
	ck_assert_msg(rs_k_mm_input(mm, dx, ldx, n_in, n_tok, 0, &err) ==
	    RS_OK, "%s", err.msg);
	for (int pass = 0; pass < 2; pass++) {
		ck_assert_msg(rs_k_mm(mm, dw, type, n_in, n_out,
		    (int64_t)(w->nbytes / (uint64_t)n_out), dy, ldy, pass, 0,
		    &err) == RS_OK, "%s", err.msg);
		to_host(y, dy, (size_t)(n_tok * ldy) * 4);
		for (int t = 0; t < n_tok; t++) {
			for (int64_t o = n_out; o < ldy; o++)
				ck_assert_msg(isnan(y[t * ldy + o]),
				    "mm wrote past row %d's outputs", t);
			float *got = y + t * ldy, *want = ref + t * n_out;
			if (pass == 1)
				for (int64_t o = 0; o < n_out; o++)
					got[o] *= 0.5f;	/* y + y */
			snprintf(what, sizeof(what), "mm %s %s%s %lldx%lld, "
			    "token %d of %d, pieces of %lld rows%s", w->name,
			    rs_type_name(w->type), tiled ? " tiled" : "",
			    (long long)n_in, (long long)n_out, t, n_tok,
			    (long long)wrows, pass ? ", +=" : "");
			expect_close(what, got, want, n_out, 3e-3);
		}
	}
	rs_k_mm_free(mm);
	cudaFree(dw);
	cudaFree(dx);
	cudaFree(dy);
	free(x);
	free(xc);
	free(y);
	free(ref);
	free(row);
}

/* Every block format, whole and in pieces (an even split, and a short
   last piece), the tiled ones in both layouts. */
START_TEST(mm)
{
	static const int types[] = { RS_TYPE_F32, RS_TYPE_F16, RS_TYPE_BF16,
	    RS_TYPE_Q4_0, RS_TYPE_Q4_1, RS_TYPE_Q5_0, RS_TYPE_Q5_1,
	    RS_TYPE_Q8_0, RS_TYPE_IQ4_NL, RS_TYPE_Q2_K, RS_TYPE_Q3_K,
	    RS_TYPE_Q4_K, RS_TYPE_Q5_K, RS_TYPE_Q6_K, RS_TYPE_IQ4_XS };

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct rs_gguf_tensor t;
		void *buf = random_tensor(&t, types[i], 512, 300);
		for (int tl = 0; tl <= xq_type(types[i]); tl++) {
			check_mm(&t, 33, 1 << 20, tl);
			check_mm(&t, 70, 64, tl);
			check_mm(&t, 129, 128, tl);
		}
		free(buf);
	}
}
END_TEST

/*
 * rs_k_xq against rs_xq_quantize, byte for byte: random columns read with
 * a stride, and blocks of zeros, of one large value, of denormals, with a
 * NaN and with an infinity; each column of the batch (rs_xq_column: the
 * layout itself is check_xq.c's) as the CPU makes it alone.
 */
START_TEST(xq)
{
	const int64_t n = 320, ldx = 352;
	const int n_tok = 3;
	const int64_t ldq = RS_XQ_COL_BYTES(n);
	const size_t qbytes = (size_t)RS_XQ_BATCH_BYTES(n, n_tok);
	float	*x = malloc((size_t)(n_tok * ldx) * 4);
	uint8_t	*ref = malloc((size_t)(n_tok * ldq));
	uint8_t	*batch = malloc(qbytes);
	uint8_t	*got = malloc((size_t)(n_tok * ldq));
	struct rs_err err;

	for (int64_t i = 0; i < n_tok * ldx; i++)
		x[i] = frand() * (i % 7 == 0 ? 1000.0f : 1.0f);
	for (int i = 0; i < 32; i++) {
		x[32 + i] = 0.0f;
		x[64 + i] = i == 5 ? 3e30f : 1.0f;
		x[96 + i] = 1e-40f * (float)(i - 16);
	}
	x[ldx + 40] = NAN;
	x[2 * ldx + 300] = -INFINITY;
	for (int t = 0; t < n_tok; t++)
		rs_xq_quantize(x + t * ldx, n, ref + t * ldq);
	float *dx = dup_dev(x, (size_t)(n_tok * ldx) * 4);
	void *dq = dup_dev(NULL, qbytes);
	ck_assert_int_eq(rs_k_xq(dx, ldx, n, n_tok, dq, 0, &err), RS_OK);
	to_host(batch, dq, qbytes);
	for (int t = 0; t < n_tok; t++)
		rs_xq_column(batch, n, n_tok, rs_k_xq_block_major(n_tok), t,
		    got + t * ldq);
	for (int t = 0; t < n_tok; t++) {
		const uint8_t *g = got + t * ldq, *r = ref + t * ldq;
		for (int64_t i = 0; i < 2 * n; i++)
			ck_assert_msg(g[i] == r[i], "xq column %d byte %lld: "
			    "%u, cpu %u", t, (long long)i, g[i], r[i]);
		/* NaN payloads differ between GPU and CPU: compare as NaN */
		for (int64_t i = 0; i < n / 16; i++) {
			float a, b;
			memcpy(&a, g + 2 * n + 4 * i, 4);
			memcpy(&b, r + 2 * n + 4 * i, 4);
			ck_assert_msg((isnan(a) && isnan(b)) ||
			    memcmp(&a, &b, 4) == 0, "xq column %d meta %lld: "
			    "%g, cpu %g", t, (long long)i, a, b);
		}
	}
	ck_assert(isnan(rs_xq_value(ref + ldq, n, 40)));
	ck_assert_int_eq(rs_k_xq(dx, ldx, 100, n_tok, dq, 0, &err),
	    RS_ERR_INVALID_ARG);
	cudaFree(dx);
	cudaFree(dq);
	free(x);
	free(ref);
	free(batch);
	free(got);
}
END_TEST

START_TEST(embed_rows)
{
	struct rs_model	*m;
	struct rs_err	 err;
	int32_t		 tok[3] = { 0, 2175, 77 };

	ck_assert_int_eq(rs_model_open(&m, t_fixture("tiny/model-q4_k_m.gguf"),
	    &err), RS_OK);
	const struct rs_gguf_tensor *w = m->tok_embd;
	int64_t d = w->ne[0], rb = (int64_t)(w->nbytes / (uint64_t)w->ne[1]);
	float ref[3 * 256], got[3 * 256];
	for (int t = 0; t < 3; t++)
		rs_dequant_row(w->type, (const char *)w->data + tok[t] * rb,
		    ref + t * d, d, NULL);
	int32_t *dt = dup_dev(tok, sizeof(tok));
	float *dy = dup_dev(got, sizeof(got));
	/* the GGUF rows, then (a K-quant table, as the engine holds it)
	   the 16-row tiles of rs_tile.h */
	ck_assert(xq_type(w->type));
	for (int tl = 0; tl < 2; tl++) {
		void *dw = tl ? dev_tiled(w) : dup_dev(w->data, w->nbytes);
		ck_assert_int_eq(rs_k_embed(dw, tl ? w->type | RS_TILED :
		    w->type, d, rb, w->ne[1], dt, 3, dy, 0, &err), RS_OK);
		to_host(got, dy, sizeof(got));
		for (int i = 0; i < 3 * 256; i++)
			ck_assert(got[i] == ref[i]);	/* same formulas */
		cudaFree(dw);
	}
	cudaFree(dt);
	cudaFree(dy);
	rs_model_close(m);
}
END_TEST

/* ---- norms, rope, elementwise ---- */

/*
 * D_XQ (ROWS rows of N: one batch) is what rs_xq_quantize makes of each
 * row of Y.
 */
static void
expect_xq_of(const char *what, const float *y, const void *d_xq, int64_t n,
    int rows)
{
	const int64_t ldq = RS_XQ_COL_BYTES(n);
	const size_t qbytes = (size_t)RS_XQ_BATCH_BYTES(n, rows);
	uint8_t *batch = malloc(qbytes), *got = malloc((size_t)ldq);
	uint8_t *ref = malloc((size_t)ldq);

	to_host(batch, d_xq, qbytes);
	for (int r = 0; r < rows; r++) {
		rs_xq_quantize(y + r * n, n, ref);
		rs_xq_column(batch, n, rows, rs_k_xq_block_major(rows), r,
		    got);
		ck_assert_msg(memcmp(got, ref, (size_t)RS_XQ_DATA_BYTES(n)) ==
		    0, "%s: row %d: 16-bit form differs from rs_xq_quantize",
		    what, r);
	}
	free(batch);
	free(got);
	free(ref);
}

START_TEST(norms)
{
	enum { N = 320, ROWS = 7 };
	float	x[ROWS * N], z[ROWS * N], w[N], ref[ROWS * N], got[ROWS * N];
	struct rs_err err;

	for (int i = 0; i < ROWS * N; i++) {
		x[i] = frand() * 3.0f;
		z[i] = frand() * 4.0f;
	}
	for (int i = 0; i < N; i++)
		w[i] = 1.0f + frand() * 0.2f;
	float *dx = dup_dev(x, sizeof(x)), *dz = dup_dev(z, sizeof(z));
	float *dw = dup_dev(w, sizeof(w)), *dy = dup_dev(x, sizeof(x));
	for (int r = 0; r < ROWS; r++)
		rs_cpu_rmsnorm_ref(x + r * N, w, N, 1e-6f, ref + r * N);
	void *dq = dup_dev(NULL, (size_t)(ROWS * RS_XQ_COL_BYTES(N)));
	ck_assert_int_eq(rs_k_rmsnorm(dx, N, dw, dy, N, N, ROWS, 1e-6f, dq, 0,
	    &err), RS_OK);
	to_host(got, dy, sizeof(got));
	expect_close("rmsnorm", got, ref, ROWS * N, 1e-6);
	expect_xq_of("rmsnorm", got, dq, N, ROWS);
	ck_assert_int_eq(rs_k_rmsnorm(dx, N, dw, dy, N, N - 8, ROWS, 1e-6f, dq,
	    0, &err), RS_ERR_INVALID_ARG);
	cudaFree(dq);
	/*
	 * A few rows are split over blocks, many are not (prefill): the
	 * same bits either way, so 17 rows at once (one batch of 16-bit
	 * columns) equal each row alone.
	 */
	{
		enum { W = 5120, R = 17 };
		const size_t qb = (size_t)RS_XQ_COL_BYTES(W);
		float *hx = malloc(4 * W * R), *hw = malloc(4 * W);
		float *all = malloc(4 * W * R), *one = malloc(4 * W * R);
		uint8_t *qall = malloc(qb * R), *qone = malloc(qb * R);
		uint8_t *qcol = malloc(qb);
		int same = 1;

		for (int i = 0; i < W * R; i++)
			hx[i] = frand() * 2.0f;
		for (int i = 0; i < W; i++)
			hw[i] = 1.0f + frand() * 0.2f;
		float *ex = dup_dev(hx, 4 * W * R), *ew = dup_dev(hw, 4 * W);
		float *ey = dup_dev(NULL, 4 * W * R);
		void *eq = dup_dev(NULL, qb * R);
		ck_assert_int_eq(rs_k_rmsnorm(ex, W, ew, ey, W, W, R, 1e-6f,
		    eq, 0, &err), RS_OK);
		to_host(all, ey, 4 * W * R);
		to_host(qall, eq, qb * R);
		for (int r = 0; r < R; r++)
			ck_assert_int_eq(rs_k_rmsnorm(ex + r * W, W, ew,
			    ey + r * W, W, W, 1, 1e-6f, (uint8_t *)eq + r * qb,
			    0, &err), RS_OK);
		to_host(one, ey, 4 * W * R);
		to_host(qone, eq, qb * R);
		for (int r = 0; r < R; r++) {
			rs_xq_column(qall, W, R, rs_k_xq_block_major(R), r,
			    qcol);
			same &= memcmp(qcol, qone + r * qb,
			    (size_t)RS_XQ_DATA_BYTES(W)) == 0;
		}
		ck_assert_msg(memcmp(all, one, 4 * W * R) == 0 && same,
		    "rmsnorm: split rows differ from whole rows");
		cudaFree(ex);
		cudaFree(ew);
		cudaFree(ey);
		cudaFree(eq);
		free(hx);
		free(hw);
		free(all);
		free(one);
		free(qall);
		free(qone);
		free(qcol);
	}
	/* in place: one block a row, whatever the row count */
	float *wide = malloc(4 * 4160), *wv = malloc(4 * 4160);
	for (int i = 0; i < 4160; i++) {
		wide[i] = frand();
		wv[i] = 1.0f;
	}
	float *dwide = dup_dev(wide, 4 * 4160), *dwv = dup_dev(wv, 4 * 4160);
	dq = dup_dev(NULL, (size_t)RS_XQ_COL_BYTES(4160));
	ck_assert_int_eq(rs_k_rmsnorm(dwide, 4160, dwv, dwide, 4160, 4160, 1,
	    1e-6f, dq, 0, &err), RS_OK);
	to_host(wide, dwide, 4 * 4160);
	expect_xq_of("rmsnorm 4160", wide, dq, 4160, 1);
	cudaFree(dq);
	cudaFree(dwide);
	cudaFree(dwv);
	free(wide);
	free(wv);
	for (int r = 0; r < ROWS; r++)
		rs_cpu_gated_rmsnorm_ref(x + r * N, z + r * N, w, N, 1e-6f,
		    ref + r * N);
	/* the ROWS heads as one token's column of the 16-bit form */
	dq = dup_dev(NULL, (size_t)RS_XQ_COL_BYTES(ROWS * N));
	ck_assert_int_eq(rs_k_gated_rmsnorm(dx, dz, dw, dy, N, ROWS, 1e-6f, dq,
	    ROWS, 0, &err), RS_OK);
	to_host(got, dy, sizeof(got));
	expect_close("gated rmsnorm", got, ref, ROWS * N, 1e-6);
	expect_xq_of("gated rmsnorm", got, dq, ROWS * N, 1);
	ck_assert_int_eq(rs_k_gated_rmsnorm(dx, dz, dw, dy, N, ROWS, 1e-6f, dq,
	    2, 0, &err), RS_ERR_INVALID_ARG);
	cudaFree(dq);
	cudaFree(dx);
	cudaFree(dz);
	cudaFree(dw);
	cudaFree(dy);
}
END_TEST

/*
 * rs_k_qkv_prep on T tokens: NH q heads in [q | gate] rows, NKV k and v
 * heads.  q and k against rs_cpu_rmsnorm_ref then rs_cpu_rope_ref
 * (relative L2 1e-6; the gates untouched), the caches against the f16 of
 * the oracle's k and v at positions P0 .. P0 + T − 1 (1e-3: a value near
 * an f16 rounding boundary may round the other way), the cache rows
 * around them untouched; then the tokens one at a time bit for bit
 * against the batch (decode against verification).  Two section layouts;
 * a head dim below the block size (48) and the 27B's (256).
 */
/* The BYTES at device D equal BATCH, what the batch of tokens left there. */
static void
same_as_batch(const char *what, const char *name, const void *d,
    const void *batch, size_t bytes)
{
	void *h = malloc(bytes);

	to_host(h, d, bytes);
	ck_assert_msg(memcmp(h, batch, bytes) == 0, "%s: single-token %s "
	    "differs from the batch's", what, name);
	free(h);
}

static void
check_qkv_prep(int hd, const uint32_t sec[4])
{
	enum { T = 5, NH = 3, NKV = 2, NROT = 16, P0 = 1000, CTX = P0 + T + 4 };
	const int64_t	 ldq = 2 * NH * hd, ldk = NKV * hd, row = NKV * hd;
	const size_t	 qn = T * ldq, kn = T * ldk, cn = (size_t)CTX * row;
	float		*q = malloc(qn * 4), *k = malloc(kn * 4), *v = malloc(kn * 4);
	float		*qref = malloc(qn * 4), *kref = malloc(kn * 4);
	float		*wq = malloc(hd * 4), *wk = malloc(hd * 4);
	float		*got = malloc(qn * 4), *kb = malloc(kn * 4);
	float		 c[NROT / 2], s[NROT / 2];
	uint16_t	*kc = malloc(cn * 2), *vc = malloc(cn * 2);
	char		 what[64];
	struct rs_err	 err;

	snprintf(what, sizeof(what), "qkv prep hd %d sections %u,%u,%u,%u",
	    hd, sec[0], sec[1], sec[2], sec[3]);
	for (int i = 0; i < hd; i++) {
		wq[i] = 1.0f + frand();
		wk[i] = 1.0f + frand();
	}
	for (size_t i = 0; i < qn; i++)
		q[i] = qref[i] = frand() * 3.0f;
	for (size_t i = 0; i < kn; i++) {
		k[i] = kref[i] = frand() * 3.0f;
		v[i] = frand();
	}
	for (size_t i = 0; i < cn; i++)
		kc[i] = vc[i] = 0x7e00;		/* NaN: untouched rows */
	for (int t = 0; t < T; t++) {
		int32_t p = P0 + t, pos4[4] = { p, p, p, 0 };
		rs_cpu_rope_angles(pos4, sec, NROT, 1e7f, c, s);
		for (int h = 0; h < NH; h++) {
			float *x = qref + t * ldq + h * 2 * hd;
			rs_cpu_rmsnorm_ref(x, wq, hd, 1e-6f, x);
			rs_cpu_rope_ref(x, NROT, c, s);
		}
		for (int h = 0; h < NKV; h++) {
			float *x = kref + t * ldk + h * hd;
			rs_cpu_rmsnorm_ref(x, wk, hd, 1e-6f, x);
			rs_cpu_rope_ref(x, NROT, c, s);
		}
	}
	float *dq = dup_dev(q, qn * 4), *dk = dup_dev(k, kn * 4);
	float *dv = dup_dev(v, kn * 4), *dwq = dup_dev(wq, hd * 4);
	float *dwk = dup_dev(wk, hd * 4);
	uint16_t *dkc = dup_dev(kc, cn * 2), *dvc = dup_dev(vc, cn * 2);
	int32_t *dp = params_dev(P0, INT32_MAX);
	struct rs_k_qkv a = { dq, dk, dv, dwq, dwk, ldq, 2 * hd, ldk, ldk, NH,
	    NKV, hd, hd, dkc, dvc };
	ck_assert_msg(rs_k_qkv_prep(&a, T, NROT, sec, 1e7f, 1e-6f, dp, 0,
	    &err) == RS_OK, "%s: %s", what, err.msg);
	to_host(got, dq, qn * 4);
	expect_close(what, got, qref, qn, 1e-6);
	for (size_t i = 0; i < qn; i++)	/* the gates pass untouched */
		if (i % (2 * hd) >= (size_t)hd)
			ck_assert_msg(got[i] == q[i], "%s: gate %zu", what, i);
	to_host(kb, dk, kn * 4);
	expect_close(what, kb, kref, kn, 1e-6);
	to_host(kc, dkc, cn * 2);
	to_host(vc, dvc, cn * 2);
	for (size_t i = 0; i < cn; i++) {
		const int64_t pr = (int64_t)i / row - P0;
		const int in = pr >= 0 && pr < T;
		const float kw = in ? kref[pr * ldk + i % row] : NAN;
		const float vw = in ? v[pr * ldk + i % row] : NAN;
		const float kg = rs_f16_to_f32(kc[i]), vg = rs_f16_to_f32(vc[i]);
		ck_assert_msg(in ? fabsf(kg - kw) <= 1e-3f * fabsf(kw) + 1e-6f &&
		    fabsf(vg - vw) <= 1e-3f * fabsf(vw) + 1e-6f :
		    kc[i] == 0x7e00 && vc[i] == 0x7e00,
		    "%s: cache entry %zu: k %g (want %g), v %g (want %g)", what,
		    i, kg, kw, vg, vw);
	}
	/* one token at a time, as decode runs it: the same bits */
	cudaMemcpy(dq, q, qn * 4, cudaMemcpyHostToDevice);
	cudaMemcpy(dk, k, kn * 4, cudaMemcpyHostToDevice);
	for (int t = 0; t < T; t++) {
		int32_t *dpt = params_dev(P0 + t, INT32_MAX);
		struct rs_k_qkv at = a;
		at.q = dq + t * ldq;
		at.k = dk + t * ldk;
		at.v = dv + t * ldk;
		ck_assert_int_eq(rs_k_qkv_prep(&at, 1, NROT, sec, 1e7f, 1e-6f,
		    dpt, 0, &err), RS_OK);
		cudaFree(dpt);
	}
	same_as_batch(what, "q", dq, got, qn * 4);
	same_as_batch(what, "k", dk, kb, kn * 4);
	same_as_batch(what, "k cache", dkc, kc, cn * 2);
	same_as_batch(what, "v cache", dvc, vc, cn * 2);
	free(q); free(k); free(v); free(qref); free(kref); free(wq); free(wk);
	free(got); free(kb); free(kc); free(vc);
	cudaFree(dq); cudaFree(dk); cudaFree(dv); cudaFree(dwq);
	cudaFree(dwk); cudaFree(dkc); cudaFree(dvc); cudaFree(dp);
}

START_TEST(qkv_prep)
{
	static const uint32_t secs[2][4] = { { 3, 3, 2, 0 }, { 2, 2, 2, 2 } };

	check_qkv_prep(48, secs[0]);
	check_qkv_prep(256, secs[1]);
}
END_TEST

START_TEST(elementwise)
{
	enum { N = 3008, T = 3 };
	float	g[T * N], u[T * N], ref[T * N], got[T * N];
	int32_t	 am[T];
	struct rs_err err;

	for (int i = 0; i < T * N; i++) {
		g[i] = frand() * 5.0f;
		u[i] = frand();
		ref[i] = rs_cpu_silu(g[i]) * u[i];
	}
	g[N + 1234] = 100.0f;		/* row 1's maximum */
	g[2 * N + 7] = g[2 * N + 2999] = 50.0f; /* a tie: lowest index */
	g[7] = 80.0f;
	ref[1234 + N] = rs_cpu_silu(g[N + 1234]) * u[N + 1234];
	ref[2 * N + 7] = rs_cpu_silu(50.0f) * u[2 * N + 7];
	ref[2 * N + 2999] = rs_cpu_silu(50.0f) * u[2 * N + 2999];
	ref[7] = rs_cpu_silu(80.0f) * u[7];
	float *dg = dup_dev(g, sizeof(g)), *du = dup_dev(u, sizeof(u));
	float *dh = dup_dev(g, sizeof(g));
	int32_t *da = dup_dev(am, sizeof(am));
	ck_assert_int_eq(rs_k_argmax(dg, N, N, T, da, 0, &err), RS_OK);
	to_host(am, da, sizeof(am));
	ck_assert_int_eq(am[0], 7);
	ck_assert_int_eq(am[1], 1234);
	ck_assert_int_eq(am[2], 7);
	void *dq = dup_dev(NULL, (size_t)(T * RS_XQ_COL_BYTES(N)));
	ck_assert_int_eq(rs_k_swiglu(dg, du, dh, N, T, dq, 0, &err), RS_OK);
	to_host(got, dh, sizeof(got));
	expect_close("swiglu", got, ref, T * N, 1e-6);
	expect_xq_of("swiglu", got, dq, N, T);
	cudaFree(dq);
	cudaFree(dg);
	cudaFree(du);
	cudaFree(dh);
	cudaFree(da);
}
END_TEST

/* ---- attention ---- */

/*
 * rs_k_attn on N_TOK tokens after P0 cached positions, G·HKV query heads of
 * dim D ([q | gate] interleaved as attn_block has them), the new K/V rows
 * in the caches as rs_k_qkv_prep stores them (f16).  Against the oracle (relative L2 1e-5: f32 sums
 * in another order, __expf's ~2 ulp; a key off by one moves it ~1/n, far
 * more at these sizes), and bit for bit against the same rows run one
 * token at a time with a grid sized for 65,536 keys, as the decode graph
 * runs them (batch invariance).  Cache rows past the last key are NaN, so
 * a read past a row's keys fails.
 */
static void
check_attn(int d, int g, int hkv, int n_tok, int p0)
{
	const int	 h = g * hkv, n_keys = p0 + n_tok, ctx = n_keys + 64;
	const int64_t	 qdim = 2 * (int64_t)h * d, row = (int64_t)hkv * d;
	const int64_t	 n_out = (int64_t)n_tok * h * d;
	const float	 scale = 1.0f / sqrtf((float)d);
	float		*q = malloc(n_tok * qdim * 4), *k = malloc(n_tok * row * 4);
	float		*v = malloc(n_tok * row * 4), *want = malloc(n_out * 4);
	float		*got = malloc(n_out * 4), *one = malloc(n_out * 4);
	float		*kf = malloc(n_keys * row * 4);
	float		*vf = malloc(n_keys * row * 4);
	float		*scores = malloc(n_keys * 4);
	uint16_t	*kh = malloc(ctx * row * 2), *vh = malloc(ctx * row * 2);
	char		 what[96];
	struct rs_err	 err;

	snprintf(what, sizeof(what), "attn d %d, heads %d/%d, %d tokens "
	    "after %d", d, h, hkv, n_tok, p0);
	for (int64_t i = 0; i < ctx * row; i++) {
		int past = i >= p0 * row;
		kh[i] = past ? 0x7e00 : rs_f32_to_f16(frand() * 2.0f);
		vh[i] = past ? 0x7e00 : rs_f32_to_f16(frand());
	}
	for (int64_t i = 0; i < n_tok * qdim; i++)
		q[i] = frand() * 2.0f;
	for (int64_t i = 0; i < n_tok * row; i++) {
		k[i] = frand() * 2.0f;
		v[i] = frand();
	}
	for (int64_t i = 0; i < p0 * row; i++) {
		kf[i] = rs_f16_to_f32(kh[i]);
		vf[i] = rs_f16_to_f32(vh[i]);
	}
	for (int64_t i = 0; i < n_tok * row; i++) {	/* the new rows, f16 */
		kh[p0 * row + i] = rs_f32_to_f16(k[i]);
		vh[p0 * row + i] = rs_f32_to_f16(v[i]);
		kf[p0 * row + i] = rs_f16_to_f32(kh[p0 * row + i]);
		vf[p0 * row + i] = rs_f16_to_f32(vh[p0 * row + i]);
	}
	for (int t = 0; t < n_tok; t++)
		for (int hh = 0; hh < h; hh++) {
			int j = hh / g;
			float *o = want + ((int64_t)t * h + hh) * d;
			const float *qh = q + t * qdim + (int64_t)hh * 2 * d;
			rs_cpu_attn_ref(qh, kf + (int64_t)j * d, row,
			    vf + (int64_t)j * d, row, p0 + t + 1, d, d, scale, o,
			    scores);
			for (int i = 0; i < d; i++)
				o[i] *= rs_cpu_sigmoid(qh[d + i]);
		}
	float *dq = dup_dev(q, n_tok * qdim * 4);
	uint16_t *dkc = dup_dev(kh, ctx * row * 2), *dvc = dup_dev(vh, ctx * row * 2);
	float *dout = dup_dev(NULL, n_out * 4);
	float *scr = dup_dev(NULL, rs_k_attn_scratch(h, n_tok, d) * 4);
	int32_t *dp = params_dev(p0, INT32_MAX);
	ck_assert_msg(rs_k_attn(dq, qdim, 2 * d, d, dkc, dvc, h, hkv, d, d,
	    n_tok, dp, n_keys, scale, dout, scr, 0, &err) == RS_OK, "%s: %s",
	    what, err.msg);
	to_host(got, dout, n_out * 4);
	expect_close(what, got, want, n_out, 1e-5);
	/* the same call writing its output's 16-bit form too */
	void *dxq = dup_dev(NULL, (size_t)RS_XQ_BATCH_BYTES((int64_t)h * d,
	    n_tok));
	ck_assert_msg(rs_k_attn_xq(dq, qdim, 2 * d, d, dkc, dvc, h, hkv, d, d,
	    n_tok, dp, n_keys, scale, dout, dxq, scr, 0, &err) == RS_OK,
	    "%s: %s", what, err.msg);
	to_host(one, dout, n_out * 4);
	ck_assert_msg(memcmp(one, got, (size_t)n_out * 4) == 0,
	    "%s: the output changed with its 16-bit form", what);
	expect_xq_of(what, got, dxq, (int64_t)h * d, n_tok);
	cudaFree(dxq);
	for (int t = 0; t < n_tok; t++) {
		int32_t *dpt = params_dev(p0 + t, INT32_MAX);
		ck_assert_msg(rs_k_attn(dq + t * qdim, qdim, 2 * d, d, dkc, dvc,
		    h, hkv, d, d, 1, dpt, 65536, scale, dout, scr, 0, &err) ==
		    RS_OK, "%s: %s", what, err.msg);
		to_host(one + (int64_t)t * h * d, dout, (size_t)h * d * 4);
		cudaFree(dpt);
	}
	for (int64_t i = 0; i < n_out; i++)
		ck_assert_msg(memcmp(&got[i], &one[i], 4) == 0, "%s: token %lld "
		    "alone gives %.9g, in the batch %.9g", what,
		    (long long)(i / (h * d)), one[i], got[i]);
	/* the stored K rows are the f16 rounding of the inputs */
	uint16_t *back = malloc(n_tok * row * 2);
	to_host(back, dkc + p0 * row, n_tok * row * 2);
	for (int64_t i = 0; i < n_tok * row; i++)
		ck_assert_uint_eq(back[i], rs_f32_to_f16(k[i]));
	cudaFree(dq); cudaFree(dkc); cudaFree(dvc);
	cudaFree(dout); cudaFree(scr); cudaFree(dp);
	free(q); free(k); free(v); free(want); free(got); free(one); free(kf);
	free(vf); free(scores); free(kh); free(vh); free(back);
}

/*
 * Short rows (one split, a tile of fewer than 32 keys), the GQA groups
 * the launcher maps to 6, 4, 2 and 1 heads per block, rows that cross the
 * minimum split size, 5,000 keys (40 splits of 128, the last one partial),
 * rows on both sides of 16,384 keys, where the split size doubles, and of
 * 32,768, where rows take attn.cu's mma path from SM80 on; then the
 * arguments it must refuse.
 */
START_TEST(attn)
{
	struct rs_err err;

	check_attn(64, 2, 2, 3, 600);
	check_attn(64, 2, 2, 1, 0);
	check_attn(64, 5, 1, 32, 0);
	check_attn(128, 3, 2, 4, 126);
	check_attn(128, 4, 2, 17, 250);
	check_attn(256, 6, 4, 2, 30);
	check_attn(256, 6, 4, 16, 4990);
	check_attn(256, 6, 2, 5, 16382);
	check_attn(64, 8, 1, 3, 16383);
	/* across 32,768 keys, where rows move to the mma path from SM80 on
	   (and the split size doubles): both paths in one call */
	check_attn(256, 6, 2, 5, 32766);
	check_attn(256, 6, 4, 16, 33000);
	check_attn(128, 4, 2, 9, 32765);
	check_attn(64, 8, 1, 3, 32767);
	ck_assert_int_eq(rs_k_attn(NULL, 0, 0, 0, NULL, NULL, 4, 2, 96, 96, 1,
	    NULL, 1, 1.0f, NULL, NULL, 0, &err), RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_k_attn(NULL, 0, 0, 0, NULL, NULL, 4, 2, 128, 64,
	    1, NULL, 1, 1.0f, NULL, NULL, 0, &err), RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_k_attn(NULL, 0, 0, 0, NULL, NULL, 6, 4, 64, 64, 1,
	    NULL, 1, 1.0f, NULL, NULL, 0, &err), RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_k_attn(NULL, 0, 0, 0, NULL, NULL, 4, 2, 64, 64, 3,
	    NULL, 2, 1.0f, NULL, NULL, 0, &err), RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_k_attn_split_keys(16384), 128);
	ck_assert_int_eq(rs_k_attn_split_keys(16385), 256);
	ck_assert_int_eq(rs_k_attn_split_keys(32769), 512);
}
END_TEST

/* ---- top-k selection ---- */

/*
 * ROWS rows of N values at X (stride N) through rs_k_top with K, each
 * against rs_top_select: the same ids and logits bit for bit, the same
 * first non-finite index.
 */
static void
check_top(const float *x, int64_t n, int rows, int k,
    const unsigned char *skip)
{
	struct rs_top	*got = malloc((size_t)rows * k * sizeof(*got));
	struct rs_top	*want = malloc((size_t)k * sizeof(*want));
	int64_t		*bad = malloc((size_t)rows * sizeof(*bad));
	struct rs_err	 err;

	float *dx = dup_dev(x, (size_t)(rows * n) * 4);
	struct rs_top *dtop = dup_dev(NULL, (size_t)rows * k * sizeof(*got));
	int64_t *dbad = dup_dev(NULL, (size_t)rows * sizeof(*bad));
	void *scr = dup_dev(NULL, rs_k_top_scratch(rows, k));
	unsigned char *dskip = skip == NULL ? NULL : dup_dev(skip, (size_t)n);
	ck_assert_msg(rs_k_top(dx, n, n, rows, k, dskip, dtop, dbad, scr, 0, &err) ==
	    RS_OK, "top: %s", err.msg);
	to_host(got, dtop, (size_t)rows * k * sizeof(*got));
	to_host(bad, dbad, (size_t)rows * sizeof(*bad));
	for (int r = 0; r < rows; r++) {
		int64_t b = rs_top_select(x + r * n, n, k, skip, want);
		ck_assert_msg(bad[r] == b, "top n %lld k %d row %d: bad %lld, "
		    "expected %lld", (long long)n, k, r, (long long)bad[r],
		    (long long)b);
		for (int i = 0; i < k; i++)
			ck_assert_msg(got[r * k + i].id == want[i].id &&
			    memcmp(&got[r * k + i].logit, &want[i].logit, 4) ==
			    0, "top n %lld k %d row %d rank %d: %d (%g), "
			    "expected %d (%g)", (long long)n, k, r, i,
			    got[r * k + i].id, got[r * k + i].logit, want[i].id,
			    want[i].logit);
	}
	cudaFree(dx); cudaFree(dtop); cudaFree(dbad); cudaFree(scr);
	cudaFree(dskip);
	free(got); free(want); free(bad);
}

/*
 * rs_k_top against rs_top_select: the fixture's reference logits (every
 * row, k 1, 20, 64); rows the 27B's width with coarse values (ties
 * between ids in and around the top) and a NaN and an Inf planted;
 * rows shorter than k and than a slice per block; a skip mask that takes
 * out each row's best and a quarter of the rest.
 */
START_TEST(top)
{
	struct t_npy	 ref;
	const int64_t	 wide = 248320;
	float		*x = malloc((size_t)4 * wide * 4);
	unsigned char	*skip = malloc((size_t)wide);

	t_npy_load(t_fixture("tiny/ref-logits.npy"), &ref);
	ck_assert_int_eq(ref.ndim, 2);
	for (int64_t r = 0; r < ref.shape[0]; r += RS_ENGINE_EXACT_MAX) {
		int rows = (int)(ref.shape[0] - r < RS_ENGINE_EXACT_MAX ?
		    ref.shape[0] - r : RS_ENGINE_EXACT_MAX);
		check_top(ref.data + r * ref.shape[1], ref.shape[1], rows, 1,
		    NULL);
		check_top(ref.data + r * ref.shape[1], ref.shape[1], rows, 20,
		    NULL);
		check_top(ref.data + r * ref.shape[1], ref.shape[1], rows,
		    RS_TOP_MAX, NULL);
	}
	for (int64_t i = 0; i < 4 * wide; i++)
		x[i] = (float)((int)((frand() + 1.0f) * 40.0f)) * 0.5f;
	x[wide + 77777] = NAN;
	x[2 * wide + 5] = INFINITY;
	x[2 * wide + 9] = -INFINITY;
	check_top(x, wide, 4, 1, NULL);
	check_top(x, wide, 4, 37, NULL);
	check_top(x, wide, 4, RS_TOP_MAX, NULL);
	check_top(x, 50, 3, RS_TOP_MAX, NULL);
	check_top(x, 1, 1, 3, NULL);
	check_top(x, 1000, 2, 16, NULL);
	/* a skip mask over the best of each row and ~1/8 of the rest */
	for (int64_t i = 0; i < wide; i++)
		skip[i] = frand() > 0.75f;
	for (int r = 0; r < 4; r++) {
		struct rs_top best;
		rs_top_select(x + r * wide, wide, 1, NULL, &best);
		if (best.id >= 0)
			skip[best.id] = 1;
	}
	check_top(x, wide, 4, 1, skip);
	check_top(x, wide, 4, RS_TOP_MAX, skip);
	free(skip);
	free(x);
	free(ref.data);
}
END_TEST

/* ---- prefill attention (tensor cores) ---- */

/*
 * Tolerances of rs_k_attn_prefill.  It rounds Q and P to f16 (relative
 * error up to 2^-11, ~2.8e-4 rms each) where the oracle and rs_k_attn keep
 * f32: with |q|, |k| < 2 and scale 1/√d the scores (rms ~1.3) move by
 * ~4e-4, the weights by as much relative, and the output, an average of
 * the V rows, by ~5e-4 relative L2 in all.  2e-3 leaves a 4× margin yet
 * catches a mask one key off (~1/√n_keys, > 6e-2 here) or a missed
 * rescale.  Per element: |o| < 1 (V in [−1, 1], gate < 1), so an absolute
 * bound of 2e-3 plus 1e-2 of |ref| is far above rounding and below any
 * wrong weight.
 */
#define PREFILL_TOL	2e-3
#define PREFILL_ABS	2e-3
#define PREFILL_REL	1e-2

static void
expect_elems(const char *what, const float *got, const float *ref, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		ck_assert_msg(fabsf(got[i] - ref[i]) <= PREFILL_ABS +
		    PREFILL_REL * fabsf(ref[i]), "%s: element %lld: %g, "
		    "expected %g", what, (long long)i, got[i], ref[i]);
}

/*
 * rs_k_attn_prefill on N_TOK tokens after P0 cached positions, G·HKV query
 * heads of dim D (interleaved [q | gate] as attn_block has them), against
 * the oracle (unless REF is 0: long cases) and against rs_k_attn on the
 * same inputs.  Cache rows past the last key are NaN and the output starts
 * as NaN, so a read past the keys or an unwritten element fails.
 */
static void
check_attn_prefill(int d, int g, int hkv, int n_tok, int p0, int ref)
{
	const int	 h = g * hkv, n_keys = p0 + n_tok, ctx = n_keys + 64;
	const int64_t	 qdim = 2 * (int64_t)h * d, row = (int64_t)hkv * d;
	const int64_t	 n_out = (int64_t)n_tok * h * d;
	const float	 scale = 1.0f / sqrtf((float)d);
	float		*q = malloc(n_tok * qdim * 4), *want = malloc(n_out * 4);
	float		*got = malloc(n_out * 4), *got2 = malloc(n_out * 4);
	float		*kf = malloc(n_keys * row * 4);
	float		*vf = malloc(n_keys * row * 4);
	float		*scores = malloc(n_keys * 4);
	uint16_t	*kh = malloc(ctx * row * 2), *vh = malloc(ctx * row * 2);
	char		 what[96];
	struct rs_err	 err;

	snprintf(what, sizeof(what), "attn prefill d %d, heads %d/%d, "
	    "%d tokens after %d", d, h, hkv, n_tok, p0);
	for (int64_t i = 0; i < n_tok * qdim; i++)
		q[i] = frand() * 2.0f;
	for (int64_t i = 0; i < ctx * row; i++) {
		int past = i >= n_keys * row;
		kh[i] = past ? 0x7e00 : rs_f32_to_f16(frand() * 2.0f);
		vh[i] = past ? 0x7e00 : rs_f32_to_f16(frand());
	}
	for (int64_t i = 0; i < n_keys * row; i++) {
		kf[i] = rs_f16_to_f32(kh[i]);
		vf[i] = rs_f16_to_f32(vh[i]);
	}
	for (int t = 0; ref && t < n_tok; t++)
		for (int hh = 0; hh < h; hh++) {
			int j = hh / g;
			float *o = want + ((int64_t)t * h + hh) * d;
			const float *qh = q + t * qdim + (int64_t)hh * 2 * d;
			rs_cpu_attn_ref(qh, kf + (int64_t)j * d, row,
			    vf + (int64_t)j * d, row, p0 + t + 1, d, d, scale, o,
			    scores);
			for (int i = 0; i < d; i++)
				o[i] *= rs_cpu_sigmoid(qh[d + i]);
		}
	for (int64_t i = 0; i < n_out; i++)
		got[i] = NAN;
	float *dq = dup_dev(q, n_tok * qdim * 4);
	uint16_t *dkc = dup_dev(kh, ctx * row * 2), *dvc = dup_dev(vh, ctx * row * 2);
	float *dout = dup_dev(got, n_out * 4), *dout2 = dup_dev(got, n_out * 4);
	float *scr = dup_dev(NULL, rs_k_attn_scratch(h, n_tok, d) * 4);
	int32_t *dp = params_dev(p0, INT32_MAX);
	ck_assert_msg(rs_k_attn_prefill(dq, qdim, 2 * d, d, dkc, dvc, h, hkv,
	    d, d, n_tok, dp, scale, dout, 0, &err) == RS_OK, "%s: %s", what,
	    err.msg);
	ck_assert_msg(rs_k_attn(dq, qdim, 2 * d, d, dkc, dvc, h, hkv, d, d,
	    n_tok, dp, n_keys, scale, dout2, scr, 0, &err) == RS_OK, "%s: %s",
	    what, err.msg);
	to_host(got, dout, n_out * 4);
	to_host(got2, dout2, n_out * 4);
	if (ref) {
		expect_close(what, got, want, n_out, PREFILL_TOL);
		expect_elems(what, got, want, n_out);
	}
	expect_close(what, got, got2, n_out, PREFILL_TOL);
	expect_elems(what, got, got2, n_out);
	cudaFree(dq); cudaFree(dkc); cudaFree(dvc); cudaFree(dout);
	cudaFree(dout2); cudaFree(scr); cudaFree(dp);
	free(q); free(want); free(got); free(got2); free(kf); free(vf);
	free(scores); free(kh); free(vh);
}

/*
 * Head dims 64 and 256, GQA 1, 2 and 6 (two KV heads, so the second KV
 * head's offsets count), token counts around the 16-row fragments and
 * 64-row tiles (rows = tokens × group, so tiles also split tokens), with
 * and without earlier cached positions; head dim 128 and a single KV head
 * on a few; then the 27B's shape (24/4 heads, d 256) on 520 tokens after
 * 1,000, against rs_k_attn only; then the arguments it must refuse.
 */
START_TEST(attn_prefill)
{
	static const int dims[] = { 64, 256 }, groups[] = { 1, 2, 6 };
	static const int toks[] = { 1, 15, 16, 17, 63, 64, 65, 200 };
	static const int pre[] = { 0, 37 };
	struct rs_err err;

	for (size_t a = 0; a < sizeof(dims) / sizeof(dims[0]); a++)
		for (size_t b = 0; b < sizeof(groups) / sizeof(groups[0]); b++)
			for (size_t c = 0; c < sizeof(toks) / sizeof(toks[0]); c++)
				for (size_t e = 0; e < 2; e++)
					check_attn_prefill(dims[a], groups[b],
					    2, toks[c], pre[e], 1);
	check_attn_prefill(128, 3, 2, 65, 37, 1);
	check_attn_prefill(128, 4, 1, 100, 0, 1);
	check_attn_prefill(64, 5, 1, 77, 200, 1);
	check_attn_prefill(256, 6, 4, 520, 1000, 0);
	ck_assert_int_eq(rs_k_attn_prefill(NULL, 0, 0, 0, NULL, NULL, 4, 2,
	    96, 96, 1, NULL, 1.0f, NULL, 0, &err), RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_k_attn_prefill(NULL, 0, 0, 0, NULL, NULL, 4, 2,
	    128, 64, 1, NULL, 1.0f, NULL, 0, &err), RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_k_attn_prefill(NULL, 0, 0, 0, NULL, NULL, 6, 4,
	    64, 64, 1, NULL, 1.0f, NULL, 0, &err), RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_k_attn_prefill(NULL, 0, 0, 0, NULL, NULL, 4, 2,
	    64, 64, 0, NULL, 1.0f, NULL, 0, &err), RS_ERR_INVALID_ARG);
}
END_TEST

/* ---- GDN conv and delta rule ---- */

/*
 * T tokens at positions 8 .. 8 + T − 1 through rs_k_conv, snapshots of
 * the last two: up to 4 tokens one thread walks a channel (conv.cu), more
 * take the parallel kernel and the state kernel.
 */
static void
check_conv(int T)
{
	enum { CH = 300, K = 4, NSNAP = 3, TMAX = 17, P0 = 8 };
	float	x[TMAX * CH], w[CH * K], st0[CH * (K - 1)], st[CH * (K - 1)];
	float	ref[TMAX * CH], got[TMAX * CH], snaps[NSNAP][CH * (K - 1)];
	float	gsnap[NSNAP * CH * (K - 1)];
	const int from = T >= 2 ? T - 2 : 0;	/* first snapshotted token */
	struct rs_err err;
	char	what[64];

	ck_assert_int_le(T, TMAX);
	for (int i = 0; i < T * CH; i++)
		x[i] = frand();
	for (int i = 0; i < CH * K; i++)
		w[i] = frand();
	for (int i = 0; i < CH * (K - 1); i++)
		st0[i] = st[i] = frand();
	for (int t = from; t < T; t++)
		rs_cpu_conv_state_at(st0, x, CH, K, t, snaps[(P0 + t) % NSNAP]);
	rs_cpu_conv_ref(st, w, x, T, CH, K, ref);
	float *dst = dup_dev(st0, sizeof(st0)), *dw = dup_dev(w, sizeof(w));
	float *dx = dup_dev(x, sizeof(x)), *du = dup_dev(NULL, sizeof(got));
	float *ds = dup_dev(NULL, sizeof(gsnap));
	int32_t *dp = params_dev(P0, P0 + from);
	ck_assert_int_eq(rs_k_conv(dst, dw, dx, CH, CH, K, T, du, ds,
	    CH * (K - 1), NSNAP, dp, 0, &err), RS_OK);
	to_host(got, du, sizeof(got));
	snprintf(what, sizeof(what), "conv of %d tokens", T);
	expect_close(what, got, ref, T * CH, 1e-6);
	to_host(got, dst, sizeof(st));
	snprintf(what, sizeof(what), "conv state after %d tokens", T);
	expect_close(what, got, st, CH * (K - 1), 0);
	to_host(gsnap, ds, sizeof(gsnap));
	for (int t = from; t < T; t++) {
		const int p = P0 + t;
		snprintf(what, sizeof(what), "conv snapshot %d of %d", t, T);
		expect_close(what, gsnap + (p % NSNAP) * CH * (K - 1),
		    snaps[p % NSNAP], CH * (K - 1), 0);
	}
	cudaFree(dst); cudaFree(dw); cudaFree(dx); cudaFree(du); cudaFree(ds);
	cudaFree(dp);
}

START_TEST(conv)
{
	static const int ts[] = { 1, 2, 3, 4, 5, 9, 16, 17 };

	for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
		check_conv(ts[i]);
}
END_TEST

/* check_deltanet's inputs on the device. */
struct dn_in {
	int		 dk, kh, vh;
	int64_t		 ch;
	const float	*u, *b, *a, *dt, *A;
	float		*out;
};

/*
 * DS ← S0 (SB bytes) after the first J tokens of IN at positions P ..,
 * recording into RING (NULL: none) with base BASE.
 */
static void
scan_state(float *ds, const float *s0, size_t sb, const struct dn_in *in,
    int j, const struct rs_k_gdn_ring *ring, int32_t p, int32_t base)
{
	int32_t		 prm[RS_K_N_PARAMS] = { p, ring != NULL ? p : INT32_MAX,
	    base };
	int32_t		*dq = dup_dev(prm, sizeof(prm));
	struct rs_err	 err;

	cudaMemcpy(ds, s0, sb, cudaMemcpyHostToDevice);
	if (j > 0)
		ck_assert_msg(rs_k_deltanet(ds, in->u, in->ch, in->b, in->a,
		    in->vh, in->dt, in->A, in->kh, in->vh, in->dk, j, 1e-6f,
		    in->out, ring, dq, 0, 0, &err) == RS_OK, "%s", err.msg);
	cudaFree(dq);
}

/*
 * The snapshot ring of rs_k_deltanet against the scan itself, bit for bit
 * (rs_state.h): T tokens at positions P .. P + T − 1 recorded, the full
 * state written before the first token (BASE P − 1) or after the second
 * (P + 1, a call longer than its ring); every prefix of the records
 * replayed on that full state (rs_k_deltanet_replay) must give the state
 * the scan reached after the same tokens, and the ring must not change
 * the scan's own state.  S0: the initial state.
 */
static void
check_deltanet_ring(const struct dn_in *in, int T, const float *s0)
{
	enum { P = 7 };
	const int	 N = T + 1, dk = in->dk;
	const int64_t	 sl = (int64_t)in->vh * dk * dk;
	const int64_t	 rl = (int64_t)(in->kh + in->vh) * dk + 2 * in->vh;
	const size_t	 sb = (size_t)sl * 4;
	float		*want = malloc(sb), *got = malloc(sb);
	float		*dfull = dup_dev(NULL, N * sb);
	float		*drec = dup_dev(NULL, (size_t)(N * rl) * 4);
	float		*ds = dup_dev(NULL, sb);
	struct rs_k_gdn_ring ring = { dfull, sl, drec, rl, N };
	struct rs_err	 err;

	for (int base = P - 1; base <= P + 1; base += 2) {
		float *full = dfull + (base % N) * sl;

		/* the ring leaves the state the scan leaves without one */
		scan_state(ds, s0, sb, in, T, NULL, P, -1);
		to_host(want, ds, sb);
		scan_state(ds, s0, sb, in, T, &ring, P, base);
		to_host(got, ds, sb);
		ck_assert_msg(memcmp(got, want, sb) == 0, "deltanet dk %d: the "
		    "ring changed the state", dk);
		for (int j = base - P + 1; j <= T; j++) {
			scan_state(ds, s0, sb, in, j, NULL, P, -1);
			to_host(want, ds, sb);
			if (j == base - P + 1) {
				to_host(got, full, sb);
				ck_assert_msg(memcmp(got, want, sb) == 0,
				    "deltanet dk %d: the full entry of base "
				    "%d", dk, base);
			}
			cudaMemset(ds, 0xff, sb);
			ck_assert_int_eq(rs_k_deltanet_replay(ds, sl, full, drec,
			    rl, rl, N, base + 1, P + j - 1 - base, 1, in->kh,
			    in->vh, dk, 0, &err), RS_OK);
			ck_assert(cudaDeviceSynchronize() == cudaSuccess);
			to_host(got, ds, sb);
			ck_assert_msg(memcmp(got, want, sb) == 0, "deltanet dk "
			    "%d: replay of positions %d..%d on base %d",
			    dk, base + 1, P + j - 1, base);
		}
	}
	cudaFree(dfull); cudaFree(drec); cudaFree(ds);
	free(want); free(got);
}

/*
 * The scan launched early behind a convolution (AFTER_CONV = 1, the
 * engine's order: S loaded before the launch's wait) against the plain
 * launch's output GOT and state GS, bit for bit, from the same state S0.
 */
static void
check_deltanet_after_conv(float *ds, const float *s0, const float *du,
    int64_t ch, const float *db, const float *da, const float *ddt,
    const float *dA, int kh, int vh, int dk, int t, float *dout,
    const int32_t *dp, const float *got, const float *gs)
{
	const size_t ob = (size_t)t * vh * dk * 4, sb = (size_t)vh * dk * dk * 4;
	float	*o = malloc(ob), *st = malloc(sb);
	float	*cw = dup_dev(NULL, ch * 4 * 4), *cs = dup_dev(NULL, ch * 3 * 4);
	float	*cu = dup_dev(NULL, (size_t)t * ch * 4);
	struct rs_err err;

	cudaMemcpy(ds, s0, sb, cudaMemcpyHostToDevice);
	cudaMemset(dout, 0, ob);
	ck_assert_int_eq(rs_k_conv(cs, cw, du, ch, ch, 4, t, cu, NULL, 0, 0,
	    dp, 0, &err), RS_OK);
	ck_assert_int_eq(rs_k_deltanet(ds, du, ch, db, da, vh, ddt, dA, kh, vh,
	    dk, t, 1e-6f, dout, NULL, dp, 1, 0, &err), RS_OK);
	to_host(o, dout, ob);
	to_host(st, ds, sb);
	ck_assert_msg(memcmp(o, got, ob) == 0 && memcmp(st, gs, sb) == 0,
	    "deltanet dk %d: the scan behind a convolution differs from the "
	    "plain launch", dk);
	cudaFree(cw); cudaFree(cs); cudaFree(cu);
	free(o); free(st);
}

static void
check_deltanet(int dk)
{
	const int KH = 2, VH = 6, T = 4;
	const int64_t ch = 2 * KH * dk + VH * dk;
	float	*u = malloc(T * ch * 4), *s0 = malloc(VH * dk * dk * 4);
	float	*s = malloc(VH * dk * dk * 4), *ref = malloc(T * VH * dk * 4);
	float	*got = malloc(T * VH * dk * 4), *gs = malloc(VH * dk * dk * 4);
	float	 b[T * VH], a[T * VH], dt[VH], A[VH];
	float	*q = malloc(dk * 4), *k = malloc(dk * 4);
	struct rs_err err;
	char	 what[64];

	for (int64_t i = 0; i < T * ch; i++)
		u[i] = frand();
	for (int64_t i = 0; i < VH * dk * dk; i++)
		s0[i] = s[i] = frand() * 0.1f;
	for (int i = 0; i < T * VH; i++) {
		b[i] = frand() * 3.0f;
		a[i] = frand() * 3.0f;
	}
	a[1] = 25.0f;		/* softplus above its threshold */
	for (int i = 0; i < VH; i++) {
		dt[i] = frand();
		A[i] = -expf(frand());
	}
	for (int t = 0; t < T; t++)
		for (int n = 0; n < VH; n++) {
			int m = n % KH;		/* tiled heads, §3.6 */
			rs_cpu_l2norm_ref(u + t * ch + m * dk, dk, 1e-6f, q);
			rs_cpu_l2norm_ref(u + t * ch + KH * dk + m * dk, dk,
			    1e-6f, k);
			float beta = rs_cpu_sigmoid(b[t * VH + n]);
			float g = rs_cpu_softplus(a[t * VH + n] + dt[n]) * A[n];
			rs_cpu_deltanet_ref(s + (int64_t)n * dk * dk, q, k,
			    u + t * ch + 2 * KH * dk + n * dk, g, beta, dk, dk,
			    1.0f / sqrtf((float)dk), ref + (t * VH + n) * dk);
		}
	float *ds = dup_dev(s0, VH * dk * dk * 4), *du = dup_dev(u, T * ch * 4);
	float *db = dup_dev(b, sizeof(b)), *da = dup_dev(a, sizeof(a));
	float *ddt = dup_dev(dt, sizeof(dt)), *dA = dup_dev(A, sizeof(A));
	float *dout = dup_dev(NULL, T * VH * dk * 4);
	int32_t *dp = params_dev(0, INT32_MAX);
	ck_assert_int_eq(rs_k_deltanet(ds, du, ch, db, da, VH, ddt, dA, KH, VH,
	    dk, T, 1e-6f, dout, NULL, dp, 0, 0, &err), RS_OK);
	/* the stage loads u 16 bytes at a time: a u or a row stride off that
	   is refused before anything runs */
	ck_assert_int_eq(rs_k_deltanet(ds, du + 1, ch, db, da, VH, ddt, dA, KH,
	    VH, dk, T, 1e-6f, dout, NULL, dp, 0, 0, &err), RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_k_deltanet(ds, du, ch - 1, db, da, VH, ddt, dA, KH,
	    VH, dk, T, 1e-6f, dout, NULL, dp, 0, 0, &err), RS_ERR_INVALID_ARG);
	to_host(got, dout, T * VH * dk * 4);
	snprintf(what, sizeof(what), "deltanet dk %d output", dk);
	expect_close(what, got, ref, T * VH * dk, 1e-5);
	to_host(gs, ds, VH * dk * dk * 4);
	snprintf(what, sizeof(what), "deltanet dk %d state", dk);
	expect_close(what, gs, s, VH * dk * dk, 1e-5);
	check_deltanet_after_conv(ds, s0, du, ch, db, da, ddt, dA, KH, VH, dk,
	    T, dout, dp, got, gs);
	const struct dn_in in = { dk, KH, VH, ch, du, db, da, ddt, dA, dout };
	check_deltanet_ring(&in, T, s0);
	cudaFree(ds); cudaFree(du); cudaFree(db); cudaFree(da); cudaFree(ddt);
	cudaFree(dA); cudaFree(dout); cudaFree(dp);
	free(u); free(s0); free(s); free(ref); free(got); free(gs); free(q);
	free(k);
}

/*
 * rs_k_deltanet_gnorm against rs_k_deltanet then rs_k_gated_rmsnorm, bit
 * for bit, T tokens of head dim DK from a random state, the ring on (the
 * full state after the second token): the normed output, its 16-bit form,
 * the state, the ring's full entries and records.
 */
static void
check_deltanet_gnorm(int dk, int T)
{
	enum { KH = 2, VH = 6, P = 5 };
	const int64_t	 ch = 2 * KH * dk + VH * dk, sl = (int64_t)VH * dk * dk;
	const int64_t	 rl = (int64_t)(KH + VH) * dk + 2 * VH;
	const int	 N = T + 1;
	const size_t	 ob = (size_t)T * VH * dk * 4, sb = (size_t)sl * 4;
	const size_t	 qb = (size_t)T * RS_XQ_COL_BYTES(VH * dk);
	const size_t	 fb = (size_t)N * sb, rb = (size_t)(N * rl) * 4;
	float	*u = malloc((size_t)T * ch * 4), *z = malloc(ob);
	float	*s0 = malloc(sb), *b = malloc((size_t)T * VH * 4);
	float	*a = malloc((size_t)T * VH * 4), dt[VH], A[VH];
	float	*w = malloc(dk * 4);
	struct rs_err err;

	for (int64_t i = 0; i < T * ch; i++)
		u[i] = frand();
	for (int64_t i = 0; i < sl; i++)
		s0[i] = frand() * 0.1f;
	for (int i = 0; i < T * VH; i++) {
		b[i] = frand() * 3.0f;
		a[i] = frand() * 3.0f;
	}
	for (int i = 0; i < VH; i++) {
		dt[i] = frand();
		A[i] = -expf(frand());
	}
	for (size_t i = 0; i < ob / 4; i++)
		z[i] = frand() * 4.0f;
	for (int i = 0; i < dk; i++)
		w[i] = 1.0f + frand() * 0.5f;
	float *du = dup_dev(u, (size_t)T * ch * 4), *dz = dup_dev(z, ob);
	float *db = dup_dev(b, (size_t)T * VH * 4);
	float *da = dup_dev(a, (size_t)T * VH * 4), *dw = dup_dev(w, dk * 4);
	float *ddt = dup_dev(dt, sizeof(dt)), *dA = dup_dev(A, sizeof(A));
	int32_t prm[RS_K_N_PARAMS] = { P, P, P + (T > 1) };
	int32_t *dp = dup_dev(prm, sizeof(prm));
	void	*out[2][6];		/* o, xq, S, full, rec, host copy */

	for (int f = 0; f < 2; f++) {
		float *ds = dup_dev(s0, sb), *dout = dup_dev(NULL, ob);
		void *dq = dup_dev(NULL, qb);
		float *dfull = dup_dev(NULL, fb), *drec = dup_dev(NULL, rb);
		const struct rs_k_gdn_ring ring = { dfull, sl, drec, rl, N };
		const struct rs_k_gnorm gn = { dz, dw, 1e-6f, dq };

		if (f == 0) {
			ck_assert_int_eq(rs_k_deltanet(ds, du, ch, db, da, VH,
			    ddt, dA, KH, VH, dk, T, 1e-6f, dout, &ring, dp, 0,
			    0, &err), RS_OK);
			ck_assert_int_eq(rs_k_gated_rmsnorm(dout, dz, dw, dout,
			    dk, T * VH, 1e-6f, dq, VH, 0, &err), RS_OK);
		} else
			ck_assert_msg(rs_k_deltanet_gnorm(ds, du, ch, db, da,
			    VH, ddt, dA, KH, VH, dk, T, 1e-6f, dout, &ring, dp,
			    0, &gn, 0, &err) == RS_OK, "%s", err.msg);
		const void *dev[5] = { dout, dq, ds, dfull, drec };
		const size_t by[5] = { ob, qb, sb, fb, rb };
		for (int i = 0; i < 5; i++) {
			out[f][i] = malloc(by[i]);
			to_host(out[f][i], dev[i], by[i]);
		}
		cudaFree(ds); cudaFree(dout); cudaFree(dq); cudaFree(dfull);
		cudaFree(drec);
	}
	static const char *const what[5] = { "output", "16-bit form",
	    "state", "ring's full entries", "ring's records" };
	const size_t by[5] = { ob, qb, sb, fb, rb };
	for (int i = 0; i < 5; i++) {
		ck_assert_msg(memcmp(out[0][i], out[1][i], by[i]) == 0,
		    "deltanet + gated norm, dk %d, %d tokens: the %s differs "
		    "from the two launches'", dk, T, what[i]);
		free(out[0][i]);
		free(out[1][i]);
	}
	cudaFree(du); cudaFree(dz); cudaFree(db); cudaFree(da); cudaFree(dw);
	cudaFree(ddt); cudaFree(dA); cudaFree(dp);
	free(u); free(z); free(s0); free(b); free(a); free(w);
}

START_TEST(deltanet)
{
	static const int ts[] = { 1, 2, 3, 5, 8, 16 };
	struct rs_err err;

	check_deltanet(64);
	check_deltanet(128);
	for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
		check_deltanet_gnorm(64, ts[i]);
		check_deltanet_gnorm(128, ts[i]);
	}
	/* more tokens than one launch holds a head's outputs for, and no
	   norm weights: refused before anything runs */
	const struct rs_k_gnorm gn = { (const float *)16, (const float *)16,
	    1e-6f, NULL };
	ck_assert_int_eq(rs_k_deltanet_gnorm(NULL, (const float *)16, 768,
	    NULL, NULL, 6, NULL, NULL, 2, 6, 64, RS_K_DN_GN_MAX + 1, 1e-6f,
	    NULL, NULL, NULL, 0, &gn, 0, &err), RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_k_deltanet_gnorm(NULL, (const float *)16, 768,
	    NULL, NULL, 6, NULL, NULL, 2, 6, 64, 1, 1e-6f, NULL, NULL, NULL,
	    0, NULL, 0, &err), RS_ERR_INVALID_ARG);
}
END_TEST

/* ---- the engine end to end ---- */

struct prompts {
	int	 n;
	int32_t	*tok[16];
	int	 len[16];
	int	 greedy_prompt;
	int32_t	 greedy[64];
	int	 n_greedy;
};

static void
read_ids(struct rs_json *arr, int32_t **out, int *n)
{
	*n = (int)rs_json_arr_len(arr);
	*out = malloc((size_t)*n * sizeof(int32_t));
	for (int i = 0; i < *n; i++) {
		int64_t v;
		ck_assert(rs_json_as_int(rs_json_arr_at(arr, (size_t)i), &v) == 0);
		(*out)[i] = (int32_t)v;
	}
}

static void
load_prompts(struct prompts *p)
{
	size_t	 n;
	char	*text = t_read_file(t_fixture("tiny/reference.json"), &n);
	struct rs_json *j, *arr, *g;
	struct rs_err err;
	int32_t	*ids;
	int64_t	 v;

	ck_assert_int_eq(rs_json_parse(text, n, &j, &err), RS_OK);
	arr = rs_json_get(j, "prompts");
	ck_assert(arr != NULL);
	p->n = (int)rs_json_arr_len(arr);
	ck_assert(p->n <= 16);
	for (int i = 0; i < p->n; i++)
		read_ids(rs_json_arr_at(arr, (size_t)i), &p->tok[i], &p->len[i]);
	g = rs_json_get(j, "greedy");
	ck_assert_msg(g != NULL, "reference.json: no 'greedy' object");
	ck_assert(rs_json_as_int(rs_json_get(g, "prompt_index"), &v) == 0);
	p->greedy_prompt = (int)v;
	read_ids(rs_json_get(g, "tokens"), &ids, &p->n_greedy);
	ck_assert(p->n_greedy <= 64);
	memcpy(p->greedy, ids, (size_t)p->n_greedy * sizeof(int32_t));
	free(ids);
	rs_json_free(j);
	free(text);
}

static struct rs_engine *
engine(struct rs_model *m, enum rs_backend b, int max_batch)
{
	struct rs_engine_opts o = { .backend = b, .n_threads = 2,
	    .max_batch = max_batch };
	struct rs_engine *e;
	struct rs_err err;

	ck_assert_msg(rs_engine_new(&e, m, &o, &err) == RS_OK, "%s", err.msg);
	return (e);
}

static float *
run_prompt(struct rs_engine *e, const int32_t *tok, int n)
{
	struct rs_state *st;
	struct rs_err	 err;
	float *lg = malloc((size_t)n * rs_engine_model(e)->hp.n_vocab * 4);

	ck_assert_int_eq(rs_engine_state_new(e, NULL, &st, &err), RS_OK);
	ck_assert_msg(rs_engine_forward(e, st, tok, n, lg, RS_LOGITS_ALL, NULL,
	    &err) == RS_OK, "%s", err.msg);
	rs_state_free(st);
	return (lg);
}

/* Every fixture model and prompt: GPU logits against CPU logits. */
START_TEST(engine_logits)
{
	/*
	 * tol: prompts of at most RS_ENGINE_EXACT_MAX tokens, the exact path
	 * (6e-5 to 1.3e-4 measured on an H200); ptol: longer ones, the
	 * prefill path, whose f16 activations in the products give 0.8e-3 to
	 * 1.5e-3 there, as llama.cpp's f16 activations give it 0.5e-3 to
	 * 1.4e-3 against the float64 reference (peer-errors.json, f16 file).
	 */
	static const struct { const char *file; double tol, ptol; } files[] = {
		{ "tiny/model-f16.gguf", 1e-3, 2e-3 },
		{ "tiny/model-q8_0.gguf", 2e-3, 3e-3 },
		{ "tiny/model-q6_k.gguf", 2e-3, 3e-3 },
		{ "tiny/model-q5_k_m.gguf", 2e-3, 3e-3 },
		{ "tiny/model-q4_k_m.gguf", 2e-3, 3e-3 },
		{ "tiny/model-q4_0.gguf", 2e-3, 3e-3 },
	};
	struct prompts p;

	load_prompts(&p);
	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct rs_model *m;
		struct rs_err err;
		ck_assert_int_eq(rs_model_open(&m, t_fixture(files[f].file),
		    &err), RS_OK);
		struct rs_engine *cpu = engine(m, RS_BACKEND_CPU, 64);
		struct rs_engine *gpu = engine(m, RS_BACKEND_CUDA, 64);
		for (int i = 0; i < p.n; i++) {
			float *a = run_prompt(cpu, p.tok[i], p.len[i]);
			float *b = run_prompt(gpu, p.tok[i], p.len[i]);
			int64_t cnt = (int64_t)p.len[i] * m->hp.n_vocab;
			double e = rs_verify_rel_err(b, a, cnt);
			printf("cuda %s prompt %d (%d tokens): rel err vs cpu "
			    "%.3g\n", files[f].file, i, p.len[i], e);
			ck_assert_msg(e <= (p.len[i] > RS_ENGINE_EXACT_MAX ?
			    files[f].ptol : files[f].tol), "%s prompt %d: %.3g",
			    files[f].file, i, e);
			free(a);
			free(b);
		}
		rs_engine_free(cpu);
		rs_engine_free(gpu);
		rs_model_close(m);
	}
}
END_TEST

/* Greedy decode token by token on the GPU reproduces reference.json. */
START_TEST(engine_greedy)
{
	struct prompts	 p;
	struct rs_model	*m;
	struct rs_state	*st;
	struct rs_err	 err;
	int32_t		 tok;

	load_prompts(&p);
	ck_assert_int_eq(rs_model_open(&m, t_fixture("tiny/model-f16.gguf"),
	    &err), RS_OK);
	struct rs_engine *gpu = engine(m, RS_BACKEND_CUDA, 64);
	float *lg = malloc((size_t)m->hp.n_vocab * 4);
	ck_assert_int_eq(rs_engine_state_new(gpu, NULL, &st, &err), RS_OK);
	const int32_t *pr = p.tok[p.greedy_prompt];
	ck_assert_int_eq(rs_engine_forward(gpu, st, pr, p.len[p.greedy_prompt],
	    lg, RS_LOGITS_LAST, NULL, &err), RS_OK);
	for (int i = 0; i < p.n_greedy; i++) {
		tok = 0;
		for (uint32_t v = 1; v < m->hp.n_vocab; v++)
			if (lg[v] > lg[tok])
				tok = (int32_t)v;
		ck_assert_msg(tok == p.greedy[i], "greedy token %d: %d, "
		    "reference %d", i, tok, p.greedy[i]);
		/* single-token steps: the CUDA-graph path */
		ck_assert_int_eq(rs_engine_forward(gpu, st, &tok, 1, lg,
		    RS_LOGITS_LAST, NULL, &err), RS_OK);
	}
	rs_state_free(st);
	rs_engine_free(gpu);
	free(lg);
	rs_model_close(m);
}
END_TEST

/*
 * rs_engine_forward_top on the GPU: every row of a verification-sized call
 * (ALL) and the decode graph's row (LAST, one token) are rs_top_select of
 * the rows rs_engine_forward returns for the same calls, k 1 and 64 (with
 * a skip mask), also along a greedy continuation fed from the top path;
 * the hidden rows of a top-k call (a graph per token count) equal those
 * of the all-logits call (launched from the stream when it returns more
 * than one row); an MTP step's row against rs_engine_mtp's.
 */
START_TEST(engine_top)
{
	struct prompts	 p;
	struct rs_model	*m;
	struct rs_state	*st;
	struct rs_err	 err;
	struct rs_top	 top[RS_ENGINE_EXACT_MAX * RS_TOP_MAX], want[RS_TOP_MAX];

	load_prompts(&p);
	ck_assert_int_eq(rs_model_open(&m, t_fixture("tiny/model-q4_k_m.gguf"),
	    &err), RS_OK);
	struct rs_engine *gpu = engine(m, RS_BACKEND_CUDA, 64);
	const int64_t V = m->hp.n_vocab;
	/* k 64 runs with a skip mask: every third token */
	unsigned char *mask = malloc((size_t)V);
	for (int64_t i = 0; i < V; i++)
		mask[i] = i % 3 == 0;
	ck_assert_int_eq(rs_engine_set_top_skip(gpu, mask, &err), RS_OK);
	for (int i = 0; i < p.n; i++) {
		int n = p.len[i] < RS_ENGINE_EXACT_MAX ? p.len[i] :
		    RS_ENGINE_EXACT_MAX;
		const int64_t d = m->hp.n_embd;
		float *lg = malloc((size_t)(n * V) * sizeof(float));
		float *hs = malloc((size_t)(n * d) * sizeof(float));
		float *hg = malloc((size_t)(n * d) * sizeof(float));
		ck_assert_int_eq(rs_engine_state_new(gpu, NULL, &st, &err),
		    RS_OK);
		ck_assert_int_eq(rs_engine_forward(gpu, st, p.tok[i], n, lg,
		    RS_LOGITS_ALL, hs, &err), RS_OK);
		rs_state_free(st);
		for (int k = 1; k <= RS_TOP_MAX; k += RS_TOP_MAX - 1) {
			ck_assert_int_eq(rs_engine_state_new(gpu, NULL, &st,
			    &err), RS_OK);
			memset(hg, 0xff, (size_t)(n * d) * sizeof(float));
			ck_assert_msg(rs_engine_forward_top(gpu, st, p.tok[i], n,
			    RS_LOGITS_ALL, k, k > 1, top, hg, &err) == RS_OK,
			    "%s", err.msg);
			ck_assert_msg(memcmp(hs, hg, (size_t)(n * d) *
			    sizeof(float)) == 0, "prompt %d k %d: hidden rows",
			    i, k);
			for (int r = 0; r < n; r++) {
				ck_assert_int_eq(rs_top_select(lg + r * V, V, k,
				    k > 1 ? mask : NULL, want), -1);
				ck_assert_msg(memcmp(want, top + r * k, (size_t)k *
				    sizeof(*top)) == 0, "prompt %d row %d k %d",
				    i, r, k);
			}
			rs_state_free(st);
		}
		free(lg);
		free(hs);
		free(hg);
	}
	/* greedy through the decode graph's top path (k 1, then 64) */
	float *lg = malloc((size_t)V * 4);
	for (int k = 1; k <= RS_TOP_MAX; k += RS_TOP_MAX - 1) {
		struct rs_state *s2;
		const int32_t *pr = p.tok[p.greedy_prompt];
		ck_assert_int_eq(rs_engine_state_new(gpu, NULL, &st, &err),
		    RS_OK);
		ck_assert_int_eq(rs_engine_state_new(gpu, NULL, &s2, &err),
		    RS_OK);
		ck_assert_int_eq(rs_engine_forward_top(gpu, st, pr,
		    p.len[p.greedy_prompt], RS_LOGITS_LAST, k, k > 1, top, NULL,
		    &err), RS_OK);
		ck_assert_int_eq(rs_engine_forward(gpu, s2, pr,
		    p.len[p.greedy_prompt], lg, RS_LOGITS_LAST, NULL, &err),
		    RS_OK);
		for (int i = 0; i < p.n_greedy; i++) {
			int32_t tok = top[0].id;
			ck_assert_int_eq(rs_top_select(lg, V, k, k > 1 ?
			    mask : NULL, want), -1);
			ck_assert(memcmp(want, top, (size_t)k * sizeof(*top)) ==
			    0);
			ck_assert_int_eq(rs_engine_forward_top(gpu, st, &tok, 1,
			    RS_LOGITS_LAST, k, k > 1, top, NULL, &err), RS_OK);
			ck_assert_int_eq(rs_engine_forward(gpu, s2, &tok, 1, lg,
			    RS_LOGITS_LAST, NULL, &err), RS_OK);
		}
		rs_state_free(st);
		rs_state_free(s2);
	}
	/* an MTP draft step on the GPU (k 1 and 64, no mask) */
	{
		const int64_t d = m->hp.n_embd;
		float *h = calloc((size_t)d, sizeof(float));
		for (int k = 1; k <= RS_TOP_MAX; k += RS_TOP_MAX - 1) {
			struct rs_state *s2;
			ck_assert_int_eq(rs_engine_state_new(gpu, NULL, &st,
			    &err), RS_OK);
			ck_assert_int_eq(rs_engine_state_new(gpu, NULL, &s2,
			    &err), RS_OK);
			ck_assert_int_eq(rs_engine_mtp(gpu, st, 42, 0, h, lg,
			    NULL, &err), RS_OK);
			ck_assert_msg(rs_engine_mtp_top(gpu, s2, 42, 0, h, k,
			    top, NULL, &err) == RS_OK, "%s", err.msg);
			rs_top_select(lg, V, k, NULL, want);
			ck_assert(memcmp(want, top, (size_t)k * sizeof(*top)) ==
			    0);
			rs_state_free(st);
			rs_state_free(s2);
		}
		free(h);
	}
	free(lg);
	free(mask);
	rs_engine_free(gpu);
	rs_model_close(m);
}
END_TEST

/*
 * Speculative decoding on the GPU with every drafter: 200 greedy tokens
 * after each of the demo model's prompts equal plain decoding's on the
 * GPU (verification passes are bit-identical to single steps); the
 * acceptance and times are printed for the perf log.  The Q4_K_M file:
 * the GPU's integer paths, and small enough to travel to a GPU machine.
 */
START_TEST(engine_drafters)
{
	static const enum rs_drafter_kind kinds[] = { RS_DRAFTER_NGRAM,
	    RS_DRAFTER_MTP, RS_DRAFTER_MTP_NGRAM };
	struct t_demo	 dm;
	struct rs_model	*m;
	struct rs_err	 err;
	int32_t		 want[200], got[200];

	t_demo_load(&dm);
	ck_assert_int_eq(rs_model_open(&m, t_fixture("demo/model-q4_k_m.gguf"),
	    &err), RS_OK);
	struct rs_engine *gpu = engine(m, RS_BACKEND_CUDA, 0);
	struct rs_state_opts so = { .n_ctx = 512, .n_snap = 5 };
	for (int i = 0; i < dm.n; i++) {
		struct rs_spec_stats s;
		struct rs_state *st;
		ck_assert_int_eq(rs_engine_state_new(gpu, &so, &st, &err), RS_OK);
		ck_assert_msg(rs_spec_greedy(gpu, st, NULL, dm.seq[i],
		    dm.n_prompt[i], 200, want, &s, &err) == RS_OK, "%s", err.msg);
		rs_state_free(st);
		double plain_ms = s.decode_ms;
		for (size_t k = 0; k < 3; k++) {
			struct rs_drafter_opts o;
			struct rs_drafter *d;
			rs_drafter_opts_init(&o);
			o.kind = kinds[k];
			o.k_max = 4;
			ck_assert_int_eq(rs_drafter_new(&d, gpu, &o, &err), RS_OK);
			ck_assert_int_eq(rs_engine_state_new(gpu, &so, &st, &err),
			    RS_OK);
			ck_assert_msg(rs_spec_greedy(gpu, st, d, dm.seq[i],
			    dm.n_prompt[i], 200, got, &s, &err) == RS_OK, "%s",
			    err.msg);
			ck_assert_msg(memcmp(got, want, sizeof(want)) == 0,
			    "prompt %d, %s: not plain decoding's tokens", i,
			    rs_drafter_kind_name(kinds[k]));
			printf("cuda demo prompt %d %s: %lld/%lld drafts kept in "
			    "%lld passes, %.1f ms (plain %.1f ms), draft %.1f ms, "
			    "catch-up %.1f ms\n", i, rs_drafter_kind_name(kinds[k]),
			    (long long)s.accepted, (long long)s.drafted,
			    (long long)s.rounds, s.decode_ms, plain_ms, s.draft_ms,
			    s.catchup_ms);
			rs_state_free(st);
			rs_drafter_free(d);
		}
	}
	rs_engine_free(gpu);
	rs_model_close(m);
	t_demo_free(&dm);
}
END_TEST

/*
 * The demo model's Q4_K_M file teacher forced over two 1,024-token
 * windows of its evaluation text (t_ref.h), the GPU against the CPU
 * backend on the same file: on the exact path (calls of 16 tokens, as
 * verification makes them; the MTP likewise) every argmax must equal the
 * CPU's except at a near-tie of the GPU's row (0.02: the two are ~1e-4
 * apart); on the prefill path (the window in one call: products on f16
 * tensor cores, within ~1e-3) except at a wider one (0.25), and at 99 %
 * of the rows at least.  Against the float32 reference's argmax the
 * exact path is held to check_eval.c's bounds for this file (llama.cpp's
 * agreement less a margin; check_eval.c holds the f16 file to the
 * reference on the CPU).
 */
struct eval_rows {
	struct t_tally	 exact, mtp, prefill;	/* GPU vs CPU */
	struct t_tally	 ref_exact, ref_mtp;	/* GPU vs the reference */
};

/* Window IDS (N tokens) on E: trunk rows (calls of K, or one call when
   K is N) into LG, the MTP's into MLG when not NULL. */
static void
eval_window(struct rs_engine *e, const int32_t *ids, int64_t n, int64_t k,
    float *lg, float *mlg, float *hid)
{
	const int64_t v = rs_engine_model(e)->hp.n_vocab;
	const int64_t d = rs_engine_model(e)->hp.n_embd;
	struct rs_state *st;
	struct rs_err err;

	ck_assert_int_eq(rs_engine_state_new(e, NULL, &st, &err), RS_OK);
	memset(hid, 0, (size_t)d * sizeof(float));
	for (int64_t p = 0; p < n; p += k) {
		const int32_t c = (int32_t)(n - p < k ? n - p : k);
		ck_assert_msg(rs_engine_forward(e, st, ids + p, c, lg + p * v,
		    RS_LOGITS_ALL, hid + (p + 1) * d, &err) == RS_OK, "%s",
		    err.msg);
	}
	for (int64_t p = 0; mlg != NULL && p < n; p += k) {
		const int32_t c = (int32_t)(n - p < k ? n - p : k);
		ck_assert_msg(rs_engine_mtp_batch(e, st, ids + p, c, (int32_t)p,
		    hid + p * d, mlg + p * v, NULL, &err) == RS_OK, "%s",
		    err.msg);
	}
	rs_state_free(st);
}

/* Each row's argmax as floats (t_tally_rows' reference form). */
static void
argmax_f(const float *lg, int64_t n, int64_t v, float *out)
{
	int32_t *a = malloc((size_t)n * sizeof(int32_t));

	ck_assert(a != NULL);
	t_argmax_rows(lg, n, v, a);
	for (int64_t i = 0; i < n; i++)
		out[i] = (float)a[i];
	free(a);
}

START_TEST(engine_eval)
{
	const int	 windows = 2, k = RS_ENGINE_EXACT_MAX;
	struct t_eval	 ev;
	struct rs_model	*m;
	struct rs_err	 err;
	struct eval_rows r;

	memset(&r, 0, sizeof(r));
	t_eval_load(&ev);
	ck_assert_int_eq(rs_model_open(&m, t_fixture("demo/model-q4_k_m.gguf"),
	    &err), RS_OK);
	struct rs_engine *gpu = engine(m, RS_BACKEND_CUDA, 2048);
	struct rs_engine *cpu = engine(m, RS_BACKEND_CPU, 0);
	const int64_t n = ev.n, v = m->hp.n_vocab, d = m->hp.n_embd;
	int32_t *ids = malloc((size_t)n * sizeof(int32_t));
	float *lg = malloc((size_t)(n * v) * sizeof(float));
	float *mlg = malloc((size_t)(n * v) * sizeof(float));
	float *hid = malloc((size_t)((n + 1) * d) * sizeof(float));
	float *am = malloc((size_t)n * sizeof(float));
	float *mam = malloc((size_t)n * sizeof(float));
	ck_assert(ids && lg && mlg && hid && am && mam);
	for (int w = 0; w < windows; w++) {
		t_eval_ids(&ev, w, ids);
		eval_window(cpu, ids, n, n, lg, mlg, hid);
		argmax_f(lg, n, v, am);
		argmax_f(mlg, n, v, mam);
		eval_window(gpu, ids, n, k, lg, mlg, hid);
		t_tally_rows(&r.exact, lg, n, v, am, ids, 0.02);
		t_tally_rows(&r.mtp, mlg, n, v, mam, ids, 0.02);
		t_tally_rows(&r.ref_exact, lg, n, v, t_eval_ref(&ev, 0, w), ids,
		    0.02);
		t_tally_rows(&r.ref_mtp, mlg, n, v, t_eval_ref(&ev, 1, w), ids,
		    0.02);
		eval_window(gpu, ids, n, n, lg, NULL, hid);
		t_tally_rows(&r.prefill, lg, n, v, am, ids, 0.25);
	}
	t_tally_print("cuda eval q4_k_m, exact path vs the cpu", &r.exact);
	t_tally_print("cuda eval q4_k_m, MTP vs the cpu", &r.mtp);
	t_tally_print("cuda eval q4_k_m, prefill path vs the cpu", &r.prefill);
	t_tally_print("cuda eval q4_k_m, exact path vs the reference",
	    &r.ref_exact);
	t_tally_print("cuda eval q4_k_m, MTP vs the reference", &r.ref_mtp);
	ck_assert_int_eq(r.exact.agree + r.exact.ties, r.exact.rows);
	ck_assert_int_eq(r.mtp.agree + r.mtp.ties, r.mtp.rows);
	ck_assert_int_eq(r.prefill.agree + r.prefill.ties, r.prefill.rows);
	ck_assert_int_ge(r.prefill.agree * 100, r.prefill.rows * 99);
	ck_assert_int_ge(r.ref_exact.agree * 1000, r.ref_exact.rows * 902);
	ck_assert_int_ge(r.ref_mtp.agree * 1000, r.ref_mtp.rows * 864);
	free(ids);
	free(lg);
	free(mlg);
	free(hid);
	free(am);
	free(mam);
	rs_engine_free(cpu);
	rs_engine_free(gpu);
	rs_model_close(m);
	t_eval_free(&ev);
}
END_TEST

/*
 * Verification and rollback on the GPU: run k drafts, truncate back to
 * j accepted through the snapshots, continue; logits must equal a plain
 * sequential run's.
 */
START_TEST(engine_rollback)
{
	struct prompts	 p;
	struct rs_model	*m;
	struct rs_err	 err;
	struct rs_state_opts so = { .n_snap = 9 };

	load_prompts(&p);
	ck_assert_int_eq(rs_model_open(&m, t_fixture("tiny/model-q4_k_m.gguf"),
	    &err), RS_OK);
	struct rs_engine *gpu = engine(m, RS_BACKEND_CUDA, 64);
	const int64_t V = m->hp.n_vocab;
	const int32_t *tok = p.tok[2];
	float *a = malloc(8 * V * 4), *b = malloc(8 * V * 4);
	for (int k = 1; k <= 8; k *= 2)
		for (int j = 0; j <= k; j++) {
			struct rs_state *s1, *s2;
			ck_assert_int_eq(rs_engine_state_new(gpu, &so, &s1, &err),
			    RS_OK);
			ck_assert_int_eq(rs_engine_state_new(gpu, &so, &s2, &err),
			    RS_OK);
			/* 20 context tokens, k drafts (tokens 20..19+k) */
			ck_assert_int_eq(rs_engine_forward(gpu, s1, tok, 20 + k,
			    NULL, RS_LOGITS_NONE, NULL, &err), RS_OK);
			ck_assert_msg(rs_engine_truncate(gpu, s1, 20 + j, &err) ==
			    RS_OK, "%s", err.msg);
			/* continue with 4 other tokens */
			ck_assert_int_eq(rs_engine_forward(gpu, s1, tok + 40, 4,
			    a, RS_LOGITS_ALL, NULL, &err), RS_OK);
			ck_assert_int_eq(rs_engine_forward(gpu, s2, tok, 20 + j,
			    NULL, RS_LOGITS_NONE, NULL, &err), RS_OK);
			ck_assert_int_eq(rs_engine_forward(gpu, s2, tok + 40, 4,
			    b, RS_LOGITS_ALL, NULL, &err), RS_OK);
			/* batch invariance makes the rollback exact */
			ck_assert_msg(memcmp(a, b, (size_t)(4 * V) * 4) == 0,
			    "k %d j %d: rollback differs by %.3g", k, j,
			    rs_verify_rel_err(a, b, 4 * V));
			rs_state_free(s1);
			rs_state_free(s2);
		}
	free(a);
	free(b);
	rs_engine_free(gpu);
	rs_model_close(m);
}
END_TEST

/*
 * The checkpoint cache on the device (rs_ckcache.h): a device budget of
 * one checkpoint and a page-locked host budget of two, reserved up front.
 * Saves at 13 and 18 (the second spills the first to host RAM through an
 * asynchronous copy), 9 more tokens with logits A; then restores from
 * host RAM (13) and from the device (18), each followed by the same
 * tokens: the last row equals A's bit for bit (the exact path is
 * batch-invariant, so the different grouping of the calls does not
 * matter), and the buffers stay within the budgets.
 */
START_TEST(engine_ckcache)
{
	struct prompts		 p;
	struct rs_model		*m;
	struct rs_state		*st;
	struct rs_ckcache	*c;
	struct rs_ckcache_opts	 co;
	struct rs_ckcache_stats	 cs;
	struct rs_err		 err;
	int32_t			 hist[32], q;

	load_prompts(&p);
	ck_assert_int_eq(rs_model_open(&m, t_fixture("tiny/model-q4_k_m.gguf"),
	    &err), RS_OK);
	struct rs_engine *gpu = engine(m, RS_BACKEND_CUDA, 64);
	const int64_t V = m->hp.n_vocab;
	const int32_t *tok = p.tok[2];
	float *a = malloc(V * 4), *b = malloc(V * 4);
	ck_assert_int_eq(rs_engine_state_new(gpu, NULL, &st, &err), RS_OK);
	co.dev_bytes = rs_state_gdn_bytes(st);
	co.host_bytes = 2 * rs_state_gdn_bytes(st);
	ck_assert_int_eq(rs_ckcache_new(&c, &co, &err), RS_OK);
	rs_ckcache_reserve(c, st);
	rs_ckcache_stats(c, &cs);
	ck_assert_uint_eq(cs.host_pool_bytes, co.host_bytes);
	ck_assert_int_eq(rs_engine_forward(gpu, st, tok, 13, NULL,
	    RS_LOGITS_NONE, NULL, &err), RS_OK);
	ck_assert_int_eq(rs_ckcache_save(c, st, &err), RS_OK);
	ck_assert_int_eq(rs_engine_forward(gpu, st, tok + 13, 5, NULL,
	    RS_LOGITS_NONE, NULL, &err), RS_OK);
	ck_assert_int_eq(rs_ckcache_save(c, st, &err), RS_OK);
	ck_assert_int_eq(rs_engine_forward(gpu, st, tok + 18, 9, a,
	    RS_LOGITS_LAST, NULL, &err), RS_OK);
	rs_ckcache_stats(c, &cs);
	ck_assert_uint_eq(cs.spills, 1);
	ck_assert_uint_eq(cs.n_dev, 1);
	ck_assert_uint_eq(cs.n_host, 1);
	for (int32_t i = 0; i < 27; i++)
		hist[i] = rs_state_token(st, i);
	for (int k = 0; k < 2; k++) {
		int32_t want = k == 0 ? 13 : 18;
		rs_ckcache_restore(c, st, hist, want, want, &q);
		ck_assert_int_eq(q, want);
		ck_assert_int_eq(rs_engine_forward(gpu, st, tok + want,
		    27 - want, b, RS_LOGITS_LAST, NULL, &err), RS_OK);
		ck_assert_msg(memcmp(a, b, (size_t)V * 4) == 0,
		    "restored at %d: logits differ by %.3g", want,
		    rs_verify_rel_err(a, b, V));
	}
	rs_ckcache_stats(c, &cs);
	ck_assert_uint_eq(cs.host_restores, 1);
	ck_assert_uint_le(cs.dev_bytes + cs.dev_pool_bytes, co.dev_bytes);
	ck_assert_uint_le(cs.host_bytes + cs.host_pool_bytes, co.host_bytes);
	rs_ckcache_free(c);
	rs_state_free(st);
	free(a);
	free(b);
	rs_engine_free(gpu);
	rs_model_close(m);
}
END_TEST

/*
 * The N tokens at TOK run in groups of G on a fresh state of GPU give
 * logits STEP (N rows of V) bit for bit; GRP is scratch.  WHAT names the
 * case in the failure.
 */
static void
check_groups(struct rs_engine *gpu, struct rs_state *st, const int32_t *tok,
    int n, const float *step, float *grp, int g, const char *what)
{
	const int64_t	 V = rs_engine_model(gpu)->hp.n_vocab;
	struct rs_err	 err;

	rs_state_reset(st);
	for (int i = 0; i < n; i += g) {
		int k = n - i < g ? n - i : g;
		ck_assert_int_eq(rs_engine_forward(gpu, st, tok + i, k,
		    grp + i * V, RS_LOGITS_ALL, NULL, &err), RS_OK);
	}
	ck_assert_msg(memcmp(grp, step, (size_t)n * V * 4) == 0, "%s: groups "
	    "of %d differ from single steps (rel %.3g)", what, g,
	    rs_verify_rel_err(step, grp, n * V));
}

/*
 * Batch invariance: on the exact path every kernel sums each output in one
 * order whatever the number of tokens in the call, so a 70-token prompt
 * run in groups of G (every G from 2 to RS_ENGINE_EXACT_MAX, the longest
 * verification pass and more) equals 70 single steps (the CUDA-graph path)
 * bit for bit, for every fixture file.
 */
START_TEST(engine_batch_invariant)
{
	static const char *const files[] = { "tiny/model-q4_k_m.gguf",
	    "tiny/model-f16.gguf", "tiny/model-q8_0.gguf",
	    "tiny/model-q6_k.gguf", "tiny/model-q5_k_m.gguf",
	    "tiny/model-q4_0.gguf" };
	struct prompts	 p;

	load_prompts(&p);
	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct rs_model	*m;
		struct rs_state	*st;
		struct rs_err	 err;
		ck_assert_int_eq(rs_model_open(&m, t_fixture(files[f]), &err),
		    RS_OK);
		struct rs_engine *gpu = engine(m, RS_BACKEND_CUDA, 64);
		const int64_t V = m->hp.n_vocab;
		const int n = p.len[2];
		float *step = malloc((size_t)n * V * 4);
		float *grp = malloc((size_t)n * V * 4);
		ck_assert_int_eq(rs_engine_state_new(gpu, NULL, &st, &err), RS_OK);
		for (int i = 0; i < n; i++)
			ck_assert_int_eq(rs_engine_forward(gpu, st, p.tok[2] + i, 1,
			    step + i * V, RS_LOGITS_LAST, NULL, &err), RS_OK);
		for (int g = 2; g <= RS_ENGINE_EXACT_MAX; g++)
			check_groups(gpu, st, p.tok[2], n, step, grp, g,
			    files[f]);
		rs_state_free(st);
		free(step);
		free(grp);
		rs_engine_free(gpu);
		rs_model_close(m);
	}
}
END_TEST

/*
 * rs_engine_pass_costs on the GPU (the drafters' adaptive K rests on it):
 * the one-token pass is the unit, every size up to the longest pass
 * finite and positive, an MTP step too; printed for the log.  The
 * scratch state it runs on leaves the caller's untouched: a state's
 * greedy step after the measurement equals the same step before it.
 */
START_TEST(engine_pass_costs)
{
	struct rs_model	*m;
	struct rs_state	*st;
	struct rs_err	 err;
	double		 c[RS_ENGINE_EXACT_MAX], mtp;
	const int	 n_max = RS_DRAFTER_K_MAX + 1;

	ck_assert_int_eq(rs_model_open(&m, t_fixture("tiny/model-q4_k_m.gguf"),
	    &err), RS_OK);
	struct rs_engine *gpu = engine(m, RS_BACKEND_CUDA, 64);
	const int64_t V = m->hp.n_vocab;
	float *a = malloc((size_t)V * sizeof(float));
	float *b = malloc((size_t)V * sizeof(float));
	int32_t tok[3] = { 5, 17, 99 };

	ck_assert_int_eq(rs_engine_state_new(gpu, NULL, &st, &err), RS_OK);
	ck_assert_int_eq(rs_engine_forward(gpu, st, tok, 2, a, RS_LOGITS_LAST,
	    NULL, &err), RS_OK);
	ck_assert_msg(rs_engine_pass_costs(gpu, n_max, c, &mtp, &err) ==
	    RS_OK, "%s", err.msg);
	ck_assert_int_eq(rs_engine_forward(gpu, st, tok + 2, 1, b,
	    RS_LOGITS_LAST, NULL, &err), RS_OK);
	rs_state_reset(st);
	ck_assert_int_eq(rs_engine_forward(gpu, st, tok, 3, a, RS_LOGITS_LAST,
	    NULL, &err), RS_OK);
	ck_assert(memcmp(a, b, (size_t)V * sizeof(float)) == 0);
	ck_assert(c[0] == 1.0 && isfinite(mtp) && mtp > 0.0);
	printf("cuda pass costs (tiny q4_k_m), 1..%d tokens:", n_max);
	for (int n = 0; n < n_max; n++) {
		ck_assert(isfinite(c[n]) && c[n] > 0.0);
		printf(" %.2f", c[n]);
	}
	printf("; MTP step %.2f\n", mtp);
	rs_state_free(st);
	free(a);
	free(b);
	rs_engine_free(gpu);
	rs_model_close(m);
}
END_TEST

/*
 * Graphs of several states in turn: GS states (more than the engine keeps
 * graphs for at one token count) each run their own token stream in calls
 * of 1-4 tokens, one call a state in round robin, so every call finds the
 * graph of another state (a capture into a used way, an update in place
 * of a graph holding another state's caches, half of them for another
 * context size, so another attention grid) or its own one.  Each
 * state's logits equal those of the same calls run on an engine of its
 * own: a graph launched with another state's pointers would read or
 * write the wrong caches.
 */
#define GS	6
#define GS_CALLS 12

static int
gs_len(int i, int t)
{
	return (1 + (i + t) % 4);
}

static void
gs_call(struct rs_engine *gpu, struct rs_state *st, int i, int t, float *lg)
{
	int32_t	tok[4];
	struct rs_err err;
	const int n = gs_len(i, t);

	for (int k = 0; k < n; k++)
		tok[k] = (int32_t)((i * 131 + t * 17 + k * 7) % 2000);
	ck_assert_msg(rs_engine_forward(gpu, st, tok, n, lg, RS_LOGITS_LAST,
	    NULL, &err) == RS_OK, "%s", err.msg);
}

START_TEST(engine_graph_states)
{
	struct rs_model	*m;
	struct rs_state	*st[GS];
	struct rs_err	 err;

	ck_assert_int_eq(rs_model_open(&m, t_fixture("tiny/model-q4_k_m.gguf"),
	    &err), RS_OK);
	struct rs_engine *gpu = engine(m, RS_BACKEND_CUDA, 64);
	const int64_t V = m->hp.n_vocab;
	float *want = malloc((size_t)(GS * GS_CALLS * V) * sizeof(float));
	float *lg = malloc((size_t)V * sizeof(float));

	for (int i = 0; i < GS; i++) {
		/* every other state of a small context: another attention
		   grid, so updates in place also change a graph's shape */
		const struct rs_state_opts so = { .n_ctx = i % 2 ? 64 : 0 };
		struct rs_engine *alone = engine(m, RS_BACKEND_CUDA, 64);
		struct rs_state *s1;
		ck_assert_int_eq(rs_engine_state_new(alone, &so, &s1, &err),
		    RS_OK);
		for (int t = 0; t < GS_CALLS; t++)
			gs_call(alone, s1, i, t, want + (i * GS_CALLS + t) * V);
		rs_state_free(s1);
		rs_engine_free(alone);
		ck_assert_int_eq(rs_engine_state_new(gpu, &so, &st[i], &err),
		    RS_OK);
	}
	for (int t = 0; t < GS_CALLS; t++)
		for (int i = 0; i < GS; i++) {
			gs_call(gpu, st[i], i, t, lg);
			ck_assert_msg(memcmp(lg, want + (i * GS_CALLS + t) * V,
			    (size_t)V * sizeof(float)) == 0,
			    "state %d call %d (%d tokens) differs from the "
			    "state alone", i, t, gs_len(i, t));
		}
	for (int i = 0; i < GS; i++)
		rs_state_free(st[i]);
	free(want);
	free(lg);
	rs_engine_free(gpu);
	rs_model_close(m);
}
END_TEST

/*
 * Graphs across RS_K_ATTN_MMA_FROM keys: a graph of rows shorter than that
 * sizes its attention below it (the FMA kernel alone), one of longer rows
 * for the whole context (the mma path from SM80 on), so a state crossing
 * it must capture again.  Three states of one prefill of GR_PRE tokens:
 * single steps (graphs) across the bound, calls of 4 (graphs; the first
 * ends below it, the second above), and one call of 8 with every row's
 * logits (no graph: the attention sized for exactly its keys).  Rows at
 * the same position must agree bit for bit; a graph reused past the
 * bound would run the FMA path where the call of 8 runs the mma path.
 */
#define GR_PRE	(RS_K_ATTN_MMA_FROM - 5)

START_TEST(engine_graph_reach)
{
	struct rs_model	*m;
	struct rs_state	*st[3];
	struct rs_err	 err;

	ck_assert_int_eq(rs_model_open(&m, t_fixture("tiny/model-q4_k_m.gguf"),
	    &err), RS_OK);
	struct rs_engine *gpu = engine(m, RS_BACKEND_CUDA, 64);
	const int64_t V = m->hp.n_vocab;
	const struct rs_state_opts so = { .n_ctx = GR_PRE + 40 };
	int32_t *tok = malloc((GR_PRE + 8) * sizeof(int32_t));
	float *one = malloc((size_t)(8 * V) * sizeof(float));
	float *four = malloc((size_t)(2 * V) * sizeof(float));
	float *all = malloc((size_t)(8 * V) * sizeof(float));

	for (int i = 0; i < GR_PRE + 8; i++)
		tok[i] = (int32_t)((i * 7919 + 13) % 2000);
	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(rs_engine_state_new(gpu, &so, &st[k], &err),
		    RS_OK);
		ck_assert_msg(rs_engine_forward(gpu, st[k], tok, GR_PRE, NULL,
		    RS_LOGITS_NONE, NULL, &err) == RS_OK, "%s", err.msg);
	}
	for (int t = 0; t < 8; t++)
		ck_assert_msg(rs_engine_forward(gpu, st[0], tok + GR_PRE + t, 1,
		    one + t * V, RS_LOGITS_LAST, NULL, &err) == RS_OK, "%s",
		    err.msg);
	for (int c = 0; c < 2; c++)
		ck_assert_msg(rs_engine_forward(gpu, st[1], tok + GR_PRE + 4 * c,
		    4, four + c * V, RS_LOGITS_LAST, NULL, &err) == RS_OK, "%s",
		    err.msg);
	ck_assert_msg(rs_engine_forward(gpu, st[2], tok + GR_PRE, 8, all,
	    RS_LOGITS_ALL, NULL, &err) == RS_OK, "%s", err.msg);
	for (int t = 0; t < 8; t++)
		ck_assert_msg(memcmp(one + t * V, all + t * V, (size_t)V *
		    sizeof(float)) == 0, "single step at %d keys differs from "
		    "the call of 8", GR_PRE + t + 1);
	for (int c = 0; c < 2; c++)
		ck_assert_msg(memcmp(four + c * V, all + (4 * c + 3) * V,
		    (size_t)V * sizeof(float)) == 0, "call of 4 ending at %d "
		    "keys differs from the call of 8", GR_PRE + 4 * c + 4);
	for (int k = 0; k < 3; k++)
		rs_state_free(st[k]);
	free(tok);
	free(one);
	free(four);
	free(all);
	rs_engine_free(gpu);
	rs_model_close(m);
}
END_TEST

/*
 * The prefill path (calls of more than RS_ENGINE_EXACT_MAX tokens) against
 * the CPU reference at every chunk boundary class: prompts of 1, 31-33,
 * 63-65, chunk − 1 .. chunk + 1 and 2·chunk + 44 tokens with a chunk of
 * 128 (each prompt one call, which the engine cuts into chunks, the last
 * possibly short enough for the exact path), then 4 single steps on the
 * state the prefill left (its KV cache, conv and recurrent state).  The
 * tolerance is engine_logits' for the prefill path.
 */
START_TEST(engine_prefill_chunks)
{
	static const int lens[] = { 1, 31, 32, 33, 63, 64, 65, 127, 128, 129,
	    300 };
	struct prompts	 p;
	struct rs_model	*m;
	struct rs_err	 err;

	load_prompts(&p);
	ck_assert_int_eq(rs_model_open(&m, t_fixture("tiny/model-q4_k_m.gguf"),
	    &err), RS_OK);
	struct rs_engine *cpu = engine(m, RS_BACKEND_CPU, 64);
	struct rs_engine *gpu = engine(m, RS_BACKEND_CUDA, 128);
	const int64_t V = m->hp.n_vocab;
	const int32_t *tok = p.tok[4];		/* 499 tokens */
	ck_assert_int_ge(p.len[4], 304);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		int n = lens[i];
		float *a = malloc((size_t)(n + 4) * V * 4);
		float *b = malloc((size_t)(n + 4) * V * 4);
		struct rs_engine *es[2] = { cpu, gpu };
		float *out[2] = { a, b };
		for (int k = 0; k < 2; k++) {
			struct rs_state *st;
			ck_assert_int_eq(rs_engine_state_new(es[k], NULL, &st,
			    &err), RS_OK);
			ck_assert_msg(rs_engine_forward(es[k], st, tok, n,
			    out[k], RS_LOGITS_ALL, NULL, &err) == RS_OK, "%s",
			    err.msg);
			for (int t = 0; t < 4; t++)
				ck_assert_int_eq(rs_engine_forward(es[k], st,
				    tok + n + t, 1, out[k] + (n + t) * V,
				    RS_LOGITS_LAST, NULL, &err), RS_OK);
			rs_state_free(st);
		}
		double e = rs_verify_rel_err(b, a, n * V);
		double e4 = rs_verify_rel_err(b + n * V, a + n * V, 4 * V);
		printf("prefill %d tokens: rel err vs cpu %.3g, the 4 steps "
		    "after %.3g\n", n, e, e4);
		ck_assert_msg(e <= 3e-3 && e4 <= 3e-3, "prefill %d: %.3g, "
		    "after %.3g", n, e, e4);
		free(a);
		free(b);
	}
	rs_engine_free(cpu);
	rs_engine_free(gpu);
	rs_model_close(m);
}
END_TEST

/* ---- the layer split (--devices, rs_split.h) on one GPU ---- */

/*
 * What engine_split compares: a fixed script of calls on one state, every
 * output appended.  Prefill of 70 tokens in chunks of 64 (the tensor-core
 * path, then the exact path) with all rows and hidden states; 6 decode
 * steps (the CUDA-graph path); a checkpoint, a verification group of 9,
 * a truncation through the snapshot ring and 4 more tokens; a rollback to
 * the checkpoint and 4 tokens; a top-4 group of 5; a checkpoint-cache
 * save, 3 tokens, a restore and the same 3 tokens; the MTP block over
 * the first 10 tokens with the prefill's hidden states.
 */
struct split_out {
	float		*f;	/* logits and hidden rows, appended */
	int64_t		 n, cap;
	struct rs_top	 top[5 * 4];
};

static float *
take(struct split_out *o, int64_t n)
{
	ck_assert_int_le(o->n + n, o->cap);
	o->n += n;
	return (o->f + o->n - n);
}

static void
split_script(struct rs_engine *e, const int32_t *tok, struct split_out *o)
{
	const struct rs_model *m = rs_engine_model(e);
	const int64_t V = m->hp.n_vocab, d = m->hp.n_embd;
	struct rs_state_opts so = { .n_ctx = 256, .n_snap = 9,
	    .checkpoint = 1 };
	struct rs_ckcache_opts co;
	struct rs_ckcache *c;
	struct rs_state	*st;
	struct rs_err	 err;
	float		*hid;
	int32_t		 hist[128], q, p;

	o->n = 0;
	ck_assert_int_eq(rs_engine_state_new(e, &so, &st, &err), RS_OK);
	hid = take(o, 70 * d);
	ck_assert_msg(rs_engine_forward(e, st, tok, 70, take(o, 70 * V),
	    RS_LOGITS_ALL, hid, &err) == RS_OK, "%s", err.msg);
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(rs_engine_forward(e, st, tok + 70 + i, 1,
		    take(o, V), RS_LOGITS_LAST, take(o, d), &err), RS_OK);
	ck_assert_int_eq(rs_state_checkpoint(st, &err), RS_OK);
	p = rs_state_pos(st);
	ck_assert_int_eq(rs_engine_forward(e, st, tok + 80, 9, take(o, 9 * V),
	    RS_LOGITS_ALL, NULL, &err), RS_OK);
	ck_assert_msg(rs_engine_truncate(e, st, p + 3, &err) == RS_OK, "%s",
	    err.msg);
	ck_assert_int_eq(rs_engine_forward(e, st, tok + 100, 4,
	    take(o, 4 * V), RS_LOGITS_ALL, NULL, &err), RS_OK);
	ck_assert_int_eq(rs_state_rollback(st, &err), RS_OK);
	ck_assert_int_eq(rs_engine_forward(e, st, tok + 110, 4,
	    take(o, 4 * V), RS_LOGITS_ALL, NULL, &err), RS_OK);
	ck_assert_int_eq(rs_engine_forward_top(e, st, tok + 120, 5,
	    RS_LOGITS_ALL, 4, 0, o->top, NULL, &err), RS_OK);
	/* the checkpoint cache: one entry on the device, spill to the host */
	co.dev_bytes = rs_state_gdn_bytes(st);
	co.host_bytes = 2 * rs_state_gdn_bytes(st);
	ck_assert_int_eq(rs_ckcache_new(&c, &co, &err), RS_OK);
	ck_assert_int_eq(rs_ckcache_save(c, st, &err), RS_OK);
	p = rs_state_pos(st);
	ck_assert_int_le(p + 3, 128);
	ck_assert_int_eq(rs_engine_forward(e, st, tok + 130, 3,
	    take(o, 3 * V), RS_LOGITS_ALL, NULL, &err), RS_OK);
	ck_assert_int_eq(rs_ckcache_save(c, st, &err), RS_OK);
	for (int32_t i = 0; i < p; i++)
		hist[i] = rs_state_token(st, i);
	rs_ckcache_restore(c, st, hist, p, p, &q);
	ck_assert_int_eq(q, p);
	ck_assert_int_eq(rs_engine_forward(e, st, tok + 130, 3,
	    take(o, 3 * V), RS_LOGITS_ALL, NULL, &err), RS_OK);
	rs_ckcache_free(c);
	if (m->hp.n_nextn > 0)
		ck_assert_msg(rs_engine_mtp_batch(e, st, tok + 1, 10, 0, hid,
		    take(o, 10 * V), take(o, 10 * d), &err) == RS_OK, "%s",
		    err.msg);
	rs_state_free(st);
}

static struct rs_engine *
split_engine(struct rs_model *m, int n, const int *counts)
{
	struct rs_engine_opts o = { .backend = RS_BACKEND_CUDA, .n_threads = 2,
	    .max_batch = 64, .n_devices = n };
	struct rs_engine *e;
	struct rs_err err;

	for (int j = 0; j < n; j++) {
		o.devices[j] = 0;
		o.split[j] = counts != NULL ? counts[j] : 0;
	}
	ck_assert_msg(rs_engine_new(&e, m, &o, &err) == RS_OK, "%s", err.msg);
	return (e);
}

/*
 * The layer split on one GPU ("--devices 0,0"): the same device slot code,
 * allocations and boundary copies as on two GPUs.  Per layer the kernels
 * and their order are the single-GPU engine's, so every output of
 * split_script (prefill on both paths, decode graphs, verification
 * groups, top-k, truncation and rollback, the checkpoint cache, the MTP
 * block) must equal it bit for bit, for every fixture file and for the
 * balanced split, the most uneven one (1 block first), the opposite (1
 * block last) and three slots.
 */
START_TEST(engine_split)
{
	static const char *const files[] = { "tiny/model-q4_k_m.gguf",
	    "tiny/model-f16.gguf", "tiny/model-q8_0.gguf",
	    "tiny/model-q6_k.gguf", "tiny/model-q5_k_m.gguf",
	    "tiny/model-q4_0.gguf", "demo/model-q4_k_m.gguf" };
	struct prompts	 p;

	load_prompts(&p);
	ck_assert_int_ge(p.len[4], 140);
	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct rs_model	*m;
		struct rs_err	 err;
		ck_assert_int_eq(rs_model_open(&m, t_fixture(files[f]), &err),
		    RS_OK);
		const int L = (int)m->hp.n_layer;
		const int64_t cap = 200 * (int64_t)(m->hp.n_vocab +
		    m->hp.n_embd);
		struct split_out ref = { malloc(cap * 4), 0, cap, { { 0 } } };
		struct split_out got = { malloc(cap * 4), 0, cap, { { 0 } } };
		const int first1[2] = { 1, L - 1 }, last1[2] = { L - 1, 1 };
		const int three[3] = { 1, 1, L - 2 };
		struct {
			int n;
			const int *counts;
			const char *what;
		} cf[] = {
			{ 2, NULL, "0,0 balanced" },
			{ 2, first1, "0,0 --split 1,L-1" },
			{ 2, last1, "0,0 --split L-1,1" },
			{ 3, three, "0,0,0 --split 1,1,L-2" },
		};
		struct rs_engine *one = engine(m, RS_BACKEND_CUDA, 64);
		split_script(one, p.tok[4], &ref);
		rs_engine_free(one);
		for (size_t c = 0; c < sizeof(cf) / sizeof(cf[0]); c++) {
			if (cf[c].n == 3 && L < 3)
				continue;
			struct rs_engine *e = split_engine(m, cf[c].n,
			    cf[c].counts);
			const struct rs_split *sp = rs_engine_split(e);
			ck_assert_int_eq(sp->n, cf[c].n);
			ck_assert_uint_eq(sp->first[sp->n], (unsigned)L);
			split_script(e, p.tok[4], &got);
			ck_assert_int_eq(got.n, ref.n);
			if (memcmp(got.f, ref.f, (size_t)ref.n * 4) != 0) {
				int64_t i = 0;
				while (memcmp(&got.f[i], &ref.f[i], 4) == 0)
					i++;
				ck_abort_msg("%s, %s: output %lld is %.9g, one "
				    "GPU %.9g (rel err of all %.3g)", files[f],
				    cf[c].what, (long long)i, got.f[i],
				    ref.f[i], rs_verify_rel_err(got.f, ref.f, ref.n));
			}
			ck_assert_msg(memcmp(got.top, ref.top, sizeof(ref.top))
			    == 0, "%s, %s: top-k differs", files[f],
			    cf[c].what);
			rs_engine_free(e);
		}
		free(ref.f);
		free(got.f);
		rs_model_close(m);
	}
}
END_TEST

/*
 * Rollback on the split engine itself, as engine_rollback: truncating k
 * drafts to j and continuing equals a state that never saw them, bit for
 * bit (rs-verify --check-rollback's rollback_rel_err 0).
 */
START_TEST(engine_split_rollback)
{
	struct prompts	 p;
	struct rs_model	*m;
	struct rs_err	 err;
	struct rs_state_opts so = { .n_snap = 9 };

	load_prompts(&p);
	ck_assert_int_eq(rs_model_open(&m, t_fixture("tiny/model-q4_k_m.gguf"),
	    &err), RS_OK);
	struct rs_engine *gpu = split_engine(m, 2, NULL);
	const int64_t V = m->hp.n_vocab;
	const int32_t *tok = p.tok[2];
	float *a = malloc(4 * V * 4), *b = malloc(4 * V * 4);
	for (int k = 1; k <= 8; k *= 2)
		for (int j = 0; j <= k; j++) {
			struct rs_state *s1, *s2;
			ck_assert_int_eq(rs_engine_state_new(gpu, &so, &s1, &err),
			    RS_OK);
			ck_assert_int_eq(rs_engine_state_new(gpu, &so, &s2, &err),
			    RS_OK);
			ck_assert_int_eq(rs_engine_forward(gpu, s1, tok, 20 + k,
			    NULL, RS_LOGITS_NONE, NULL, &err), RS_OK);
			ck_assert_msg(rs_engine_truncate(gpu, s1, 20 + j, &err) ==
			    RS_OK, "%s", err.msg);
			ck_assert_int_eq(rs_engine_forward(gpu, s1, tok + 40, 4,
			    a, RS_LOGITS_ALL, NULL, &err), RS_OK);
			ck_assert_int_eq(rs_engine_forward(gpu, s2, tok, 20 + j,
			    NULL, RS_LOGITS_NONE, NULL, &err), RS_OK);
			ck_assert_int_eq(rs_engine_forward(gpu, s2, tok + 40, 4,
			    b, RS_LOGITS_ALL, NULL, &err), RS_OK);
			ck_assert_msg(memcmp(a, b, (size_t)(4 * V) * 4) == 0,
			    "k %d j %d: rollback differs by %.3g", k, j,
			    rs_verify_rel_err(a, b, 4 * V));
			rs_state_free(s1);
			rs_state_free(s2);
		}
	/* a state of the one-GPU engine is refused, with a reason */
	struct rs_engine *one = engine(m, RS_BACKEND_CUDA, 64);
	struct rs_state *s1;
	int32_t t0 = tok[0];
	ck_assert_int_eq(rs_engine_state_new(one, &so, &s1, &err), RS_OK);
	ck_assert_int_eq(rs_engine_forward(gpu, s1, &t0, 1, NULL,
	    RS_LOGITS_NONE, NULL, &err), RS_ERR_INVALID_ARG);
	ck_assert_msg(strstr(err.msg, "layer split") != NULL, "%s", err.msg);
	rs_state_free(s1);
	rs_engine_free(one);
	free(a);
	free(b);
	rs_engine_free(gpu);
	rs_model_close(m);
}
END_TEST

Suite *
cuda_suite(void)
{
	Suite	*s = suite_create("cuda");
	TCase	*k = tcase_create("kernels");
	TCase	*e = tcase_create("engine");
	TCase	*v = tcase_create("eval");	/* long windows (demo/) */

	tcase_set_timeout(k, 120);
	tcase_add_test(k, matvec_fixtures);
	tcase_add_test(k, matvec_all_types);
	tcase_add_test(k, matvec_xq_wide);
	tcase_add_test(k, matvec_parts);
	tcase_add_test(k, matvec_5_to_7);
	tcase_add_test(k, mm);
	tcase_add_test(k, xq);
	tcase_add_test(k, embed_rows);
	tcase_add_test(k, norms);
	tcase_add_test(k, qkv_prep);
	tcase_add_test(k, elementwise);
	tcase_add_test(k, attn);
	tcase_add_test(k, top);
	tcase_add_test(k, attn_prefill);
	tcase_add_test(k, conv);
	tcase_add_test(k, deltanet);
	suite_add_tcase(s, k);
	tcase_set_timeout(e, 300);
	tcase_add_test(e, engine_logits);
	tcase_add_test(e, engine_greedy);
	tcase_add_test(e, engine_top);
	tcase_add_test(e, engine_rollback);
	tcase_add_test(e, engine_drafters);
	tcase_add_test(e, engine_batch_invariant);
	tcase_add_test(e, engine_graph_states);
	tcase_add_test(e, engine_graph_reach);
	tcase_add_test(e, engine_pass_costs);
	tcase_add_test(e, engine_prefill_chunks);
	tcase_add_test(e, engine_ckcache);
	tcase_add_test(e, engine_split);
	tcase_add_test(e, engine_split_rollback);
	suite_add_tcase(s, e);
	tcase_set_timeout(v, 300);
	tcase_add_test(v, engine_eval);
	suite_add_tcase(s, v);
	return (s);
}

int
main(void)
{
	SRunner	*sr = srunner_create(cuda_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return (failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
}
