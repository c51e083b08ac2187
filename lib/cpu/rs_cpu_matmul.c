/*
 * rs_cpu_matmul.c - y (n_tok, n_out) = x (n_tok, n_in) · Wᵀ for a GGUF weight
 * W {n_in, n_out} of any type, dequantized on the fly (qwen35-model.md §0,
 * §4.10: the activations stay f32; we do not mimic llama.cpp's Q8
 * activation rounding).
 *
 * Fast path: the rows of every job are cut into blocks, which the pool's
 * threads claim one at a time.  A thread decodes RS_CPU_MM_ROWS rows into
 * its scratch (one decode per row per call, whatever n_tok is)
 * and then, token by token, takes the dot products of those rows with x[t],
 * so one load of x feeds four rows.  The dot product keeps 8 partial sums
 * (two rs_v4f) and combines them in rs_vec_hsum2's fixed order, identically
 * in dot1 and dot4, so the result does not depend on how rows fall into
 * blocks or threads.  Rows are decoded by rs_cpu_row_decoder (exact).
 *
 * Napkin math (tiny, 256 wide): decoding an f16 row costs about as much as
 * one dot product, so decode runs at ~2x the cost of the math and prefill
 * (64 tokens per decoded row) is compute bound.
 */
#include <assert.h>
#include <string.h>

#include "rs_cpu.h"
#include "rs_cpu_vec.h"
#include "rs_types.h"

/* Row blocks per job: each item of the run is one block of one job. */
#define MM_MAX_JOBS	8

struct mm_run {
	const struct rs_cpu_mm	*jobs;
	int			 n_jobs;
	int64_t			 n_tok;
	float			*scratch;
	size_t			 per_thread;	/* scratch floats per thread */
	int64_t			 block[MM_MAX_JOBS];	/* rows per item */
	int64_t			 first[MM_MAX_JOBS + 1]; /* first item of job */
};

/* Partial sums per dot product: two 4-lane vectors. */
#define DOT_STEP	(2 * RS_VEC)

static float
dot1(const float *w, const float *x, int64_t n)
{
	rs_v4f	lo = rs_vec_splat(0.0f), hi = lo;
	float	tail = 0.0f;
	int64_t	i;

	for (i = 0; i + DOT_STEP <= n; i += DOT_STEP) {
		lo += rs_vec_load(w + i) * rs_vec_load(x + i);
		hi += rs_vec_load(w + i + RS_VEC) * rs_vec_load(x + i + RS_VEC);
	}
	for (; i < n; i++)
		tail += w[i] * x[i];
	return (rs_vec_hsum2(lo, hi) + tail);
}

/* dot1 of four rows W, W+N, W+2N, W+3N with X, sharing the loads of X. */
static void
dot4(const float *w, const float *x, int64_t n, float *out)
{
	rs_v4f	l0 = rs_vec_splat(0.0f), h0 = l0, l1 = l0, h1 = l0;
	rs_v4f	l2 = l0, h2 = l0, l3 = l0, h3 = l0;
	float	t0 = 0.0f, t1 = 0.0f, t2 = 0.0f, t3 = 0.0f;
	const float *w0 = w, *w1 = w + n, *w2 = w + 2 * n, *w3 = w + 3 * n;
	int64_t	i;

	for (i = 0; i + DOT_STEP <= n; i += DOT_STEP) {
		rs_v4f xl = rs_vec_load(x + i);
		rs_v4f xh = rs_vec_load(x + i + RS_VEC);

		l0 += rs_vec_load(w0 + i) * xl;
		h0 += rs_vec_load(w0 + i + RS_VEC) * xh;
		l1 += rs_vec_load(w1 + i) * xl;
		h1 += rs_vec_load(w1 + i + RS_VEC) * xh;
		l2 += rs_vec_load(w2 + i) * xl;
		h2 += rs_vec_load(w2 + i + RS_VEC) * xh;
		l3 += rs_vec_load(w3 + i) * xl;
		h3 += rs_vec_load(w3 + i + RS_VEC) * xh;
	}
	for (; i < n; i++) {
		t0 += w0[i] * x[i];
		t1 += w1[i] * x[i];
		t2 += w2[i] * x[i];
		t3 += w3[i] * x[i];
	}
	out[0] = rs_vec_hsum2(l0, h0) + t0;
	out[1] = rs_vec_hsum2(l1, h1) + t1;
	out[2] = rs_vec_hsum2(l2, h2) + t2;
	out[3] = rs_vec_hsum2(l3, h3) + t3;
}

static size_t
row_bytes(const struct rs_gguf_tensor *w)
{
	const struct rs_type_traits *tt = rs_type_traits(w->type);

	return ((size_t)(w->ne[0] / tt->block_elems) * (size_t)tt->block_bytes);
}

/* Rows [r0, r1) of one job on one thread; BUF holds RS_CPU_MM_ROWS rows. */
static void
mm_rows(const struct rs_cpu_mm *mm, int64_t n_tok, int64_t r0, int64_t r1,
    float *buf)
{
	const rs_to_float_fn decode = rs_cpu_row_decoder(mm->w->type);
	const int64_t	n_in = mm->w->ne[0];
	const size_t	rb = row_bytes(mm->w);
	const uint8_t	*base = mm->w->data;
	float		 out[RS_CPU_MM_ROWS];

	for (int64_t r = r0; r < r1; r += RS_CPU_MM_ROWS) {
		int64_t nr = r1 - r < RS_CPU_MM_ROWS ? r1 - r : RS_CPU_MM_ROWS;

		for (int64_t j = 0; j < nr; j++)
			decode(base + (size_t)(r + j) * rb, buf + j * n_in,
			    n_in);
		for (int64_t t = 0; t < n_tok; t++) {
			const float *x = mm->x + t * n_in;
			float *y = mm->y + t * mm->ldy + r;

			if (nr == RS_CPU_MM_ROWS) {
				dot4(buf, x, n_in, out);
				memcpy(y, out, sizeof(out));
			} else {
				for (int64_t j = 0; j < nr; j++)
					y[j] = dot1(buf + j * n_in, x, n_in);
			}
		}
	}
}

static void
mm_item(void *arg, int64_t item, int ith)
{
	const struct mm_run *run = arg;
	float	*buf = run->scratch + (size_t)ith * run->per_thread;
	int	 j = 0;

	while (item >= run->first[j + 1])
		j++;
	int64_t lo = (item - run->first[j]) * run->block[j];
	int64_t hi = lo + run->block[j];
	if (hi > run->jobs[j].w->ne[1])
		hi = run->jobs[j].w->ne[1];
	mm_rows(&run->jobs[j], run->n_tok, lo, hi, buf);
}

size_t
rs_cpu_matmul_scratch(int64_t max_n_in, int nth)
{
	return ((size_t)max_n_in * RS_CPU_MM_ROWS * (size_t)nth);
}

/*
 * Rows per item: about 4 items per thread so late or slow threads even
 * out, but at least ~32k multiply-adds per item so the claim (one atomic)
 * stays negligible; a multiple of RS_CPU_MM_ROWS.
 */
static int64_t
block_rows(int64_t rows, int64_t n_in, int64_t n_tok, int nth)
{
	int64_t b = (rows + 4 * nth - 1) / (4 * nth);
	int64_t min_rows = (32768 + n_in * n_tok - 1) / (n_in * n_tok);

	if (b < min_rows)
		b = min_rows;
	b = (b + RS_CPU_MM_ROWS - 1) / RS_CPU_MM_ROWS * RS_CPU_MM_ROWS;
	return (b);
}

void
rs_cpu_matmul(struct rs_pool *pool, const struct rs_cpu_mm *jobs, int n_jobs,
    int64_t n_tok, float *scratch)
{
	struct mm_run run;
	int64_t	max_n_in = 0;

	assert(n_jobs >= 1 && n_jobs <= MM_MAX_JOBS);
	run.jobs = jobs;
	run.n_jobs = n_jobs;
	run.n_tok = n_tok;
	run.scratch = scratch;
	run.first[0] = 0;
	for (int j = 0; j < n_jobs; j++) {
		int64_t rows = jobs[j].w->ne[1];

		if (jobs[j].w->ne[0] > max_n_in)
			max_n_in = jobs[j].w->ne[0];
		run.block[j] = block_rows(rows, jobs[j].w->ne[0], n_tok,
		    rs_pool_size(pool));
		run.first[j + 1] = run.first[j] +
		    (rows + run.block[j] - 1) / run.block[j];
	}
	run.per_thread = (size_t)max_n_in * RS_CPU_MM_ROWS;
	rs_pool_run(pool, mm_item, &run, run.first[n_jobs]);
}

void
rs_cpu_matmul_ref(const struct rs_cpu_mm *mm, int64_t n_tok, float *row)
{
	const int64_t	n_in = mm->w->ne[0], n_out = mm->w->ne[1];
	const size_t	rb = row_bytes(mm->w);
	const uint8_t	*base = mm->w->data;

	for (int64_t o = 0; o < n_out; o++) {
		rs_dequant_row(mm->w->type, base + (size_t)o * rb, row, n_in,
		    NULL);
		for (int64_t t = 0; t < n_tok; t++) {
			const float *x = mm->x + t * n_in;
			double acc = 0.0;

			for (int64_t i = 0; i < n_in; i++)
				acc += (double)row[i] * (double)x[i];
			mm->y[t * mm->ldy + o] = (float)acc;
		}
	}
}
