/*
 * rs_cpu_matmul.c - y (n_tok, n_out) = x (n_tok, n_in) · Wᵀ for a GGUF weight
 * W {n_in, n_out} of any type, dequantized on the fly (qwen35-model.md §0,
 * §4.10: the activations stay f32; we do not mimic llama.cpp's Q8
 * activation rounding).
 *
 * Fast path: each thread owns whole output rows.  It decodes RS_CPU_MM_ROWS
 * rows into its scratch (one decode per row per call, whatever n_tok is)
 * and then, token by token, takes the dot products of those rows with x[t],
 * so one load of x feeds four rows.  The dot product keeps 8 partial sums in
 * a fixed order (the compiler maps them onto SIMD lanes) and combines them
 * pairwise, identically in dot1 and dot4, so the result does not depend on
 * how rows fall into blocks or threads.
 *
 * Napkin math (tiny, 256 wide): decoding an f16 row costs about as much as
 * one dot product, so decode runs at ~2x the cost of the math and prefill
 * (64 tokens per decoded row) is compute bound.
 */
#include <string.h>

#include "rs_cpu.h"
#include "rs_types.h"

#define LANES	8

struct mm_run {
	const struct rs_cpu_mm	*jobs;
	int			 n_jobs;
	int64_t			 n_tok;
	float			*scratch;
	size_t			 per_thread;	/* floats of scratch per thread */
};

/* The 8 partial sums, combined pairwise: the one summation order. */
static inline float
lanes_sum(const float *acc)
{
	return (((acc[0] + acc[4]) + (acc[2] + acc[6])) +
	    ((acc[1] + acc[5]) + (acc[3] + acc[7])));
}

static float
dot1(const float *w, const float *x, int64_t n)
{
	float	acc[LANES] = { 0 };
	float	tail = 0.0f;
	int64_t	i;

	for (i = 0; i + LANES <= n; i += LANES)
		for (int l = 0; l < LANES; l++)
			acc[l] += w[i + l] * x[i + l];
	for (; i < n; i++)
		tail += w[i] * x[i];
	return (lanes_sum(acc) + tail);
}

/* dot1 of four rows W, W+N, W+2N, W+3N with X, sharing the loads of X. */
static void
dot4(const float *w, const float *x, int64_t n, float *out)
{
	float	a0[LANES] = { 0 }, a1[LANES] = { 0 };
	float	a2[LANES] = { 0 }, a3[LANES] = { 0 };
	float	t0 = 0.0f, t1 = 0.0f, t2 = 0.0f, t3 = 0.0f;
	const float *w0 = w, *w1 = w + n, *w2 = w + 2 * n, *w3 = w + 3 * n;
	int64_t	i;

	for (i = 0; i + LANES <= n; i += LANES) {
		for (int l = 0; l < LANES; l++) {
			float xv = x[i + l];
			a0[l] += w0[i + l] * xv;
			a1[l] += w1[i + l] * xv;
			a2[l] += w2[i + l] * xv;
			a3[l] += w3[i + l] * xv;
		}
	}
	for (; i < n; i++) {
		t0 += w0[i] * x[i];
		t1 += w1[i] * x[i];
		t2 += w2[i] * x[i];
		t3 += w3[i] * x[i];
	}
	out[0] = lanes_sum(a0) + t0;
	out[1] = lanes_sum(a1) + t1;
	out[2] = lanes_sum(a2) + t2;
	out[3] = lanes_sum(a3) + t3;
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
	const struct rs_type_traits *tt = rs_type_traits(mm->w->type);
	const int64_t	n_in = mm->w->ne[0];
	const size_t	rb = row_bytes(mm->w);
	const uint8_t	*base = mm->w->data;
	float		 out[RS_CPU_MM_ROWS];

	for (int64_t r = r0; r < r1; r += RS_CPU_MM_ROWS) {
		int64_t nr = r1 - r < RS_CPU_MM_ROWS ? r1 - r : RS_CPU_MM_ROWS;

		for (int64_t j = 0; j < nr; j++)
			tt->to_float(base + (size_t)(r + j) * rb,
			    buf + j * n_in, n_in);
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
mm_thread(void *arg, int ith, int nth)
{
	const struct mm_run *run = arg;
	float	*buf = run->scratch + (size_t)ith * run->per_thread;

	for (int j = 0; j < run->n_jobs; j++) {
		const struct rs_cpu_mm *mm = &run->jobs[j];
		int64_t lo, hi;

		rs_pool_range(mm->w->ne[1], RS_CPU_MM_ROWS, ith, nth, &lo, &hi);
		if (lo < hi)
			mm_rows(mm, run->n_tok, lo, hi, buf);
	}
}

size_t
rs_cpu_matmul_scratch(int64_t max_n_in, int nth)
{
	return ((size_t)max_n_in * RS_CPU_MM_ROWS * (size_t)nth);
}

void
rs_cpu_matmul(struct rs_pool *pool, const struct rs_cpu_mm *jobs, int n_jobs,
    int64_t n_tok, float *scratch)
{
	struct mm_run run;
	int64_t	max_n_in = 0;

	for (int j = 0; j < n_jobs; j++)
		if (jobs[j].w->ne[0] > max_n_in)
			max_n_in = jobs[j].w->ne[0];
	run.jobs = jobs;
	run.n_jobs = n_jobs;
	run.n_tok = n_tok;
	run.scratch = scratch;
	run.per_thread = (size_t)max_n_in * RS_CPU_MM_ROWS;
	rs_pool_run(pool, mm_thread, &run);
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
