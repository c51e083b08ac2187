/*
 * deltanet.cu - playground for the gated delta rule of one GDN block
 * (kernels/deltanet.cu, rs_k_deltanet), the scan docs/perf-log.md names
 * first among what a prefill chunk waits on (30 % of a 2,048-token 27B
 * chunk, 1.0 µs a token and layer).
 *
 *   make CUDA=1 build/dev/deltanet && build/dev/deltanet
 *
 * First the launcher is compared with the CPU oracle (rs_cpu_deltanet_ref,
 * after the same L2 norms, β and decay) for head dims 64 and 128 on 1, 5
 * and 33 tokens (33: across a DN_STAGE of 32), relative L2 error of the
 * output and the state within 1e-5 (f32 sums against the oracle's double
 * ones).  Then batch invariance on the 27B shape: 8 and 16 tokens in one
 * call against the same tokens one at a time, bit for bit, with a hash of
 * the results' bits (two builds of the scan that compute the same print
 * the same hashes).  Then the 27B shape (16
 * key heads, 48 value heads, dk = dv = 128) is timed on 1, 4, 8, 16,
 * 256 and 2,048 tokens (CUDA events, a warm-up, L2 flushed before each
 * repeat; DN_TOKENS=N: N tokens only).  One JSON line per case: µs for
 * the call, µs a token, the state's bytes (read and written once a call:
 * 48 × 64 KB each way) over the time, and µs a token for the 48 GDN
 * layers.  A scan is latency-bound: on long calls µs a token is the
 * figure to move, not GB/s.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common.cuh"
#include "dev.cuh"
#include "rs_kernels.h"
extern "C" {
#include "rs_cpu.h"
#include "rs_verify.h"
}

#define EPS	1e-6f
#define LAYERS	48	/* GDN layers of the 27B */

/* One GDN block's inputs and state on the host and the device. */
struct gdn {
	int	 n_kh, n_vh, dk, t;
	int64_t	 ldu;			/* 2·n_kh·dk + n_vh·dk */
	float	*u, *b, *a, *dt, *ssm_a, *s;	/* host */
	float	*d_u, *d_b, *d_a, *d_dt, *d_ssm_a, *d_s, *d_o;
	int32_t	*d_params;		/* { 0, INT32_MAX }: no snapshots */
};

static void
gdn_new(struct gdn *g, int n_kh, int n_vh, int dk, int t)
{
	const int32_t	params[RS_K_N_PARAMS] = { 0, INT32_MAX };
	const size_t	ns = (size_t)n_vh * dk * dk;

	g->n_kh = n_kh;
	g->n_vh = n_vh;
	g->dk = dk;
	g->t = t;
	g->ldu = 2 * (int64_t)n_kh * dk + (int64_t)n_vh * dk;
	g->u = (float *)malloc((size_t)t * g->ldu * 4);
	g->b = (float *)malloc((size_t)t * n_vh * 4);
	g->a = (float *)malloc((size_t)t * n_vh * 4);
	g->dt = (float *)malloc((size_t)n_vh * 4);
	g->ssm_a = (float *)malloc((size_t)n_vh * 4);
	g->s = (float *)malloc(ns * 4);
	if (g->u == NULL || g->b == NULL || g->a == NULL || g->dt == NULL ||
	    g->ssm_a == NULL || g->s == NULL) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	/* the ranges of tests/check_cuda.c "deltanet" */
	for (int64_t i = 0; i < t * g->ldu; i++)
		g->u[i] = frand();
	for (int i = 0; i < t * n_vh; i++) {
		g->b[i] = frand() * 3.0f;
		g->a[i] = frand() * 3.0f;
	}
	for (int i = 0; i < n_vh; i++) {
		g->dt[i] = frand();
		g->ssm_a[i] = -expf(frand());
	}
	for (size_t i = 0; i < ns; i++)
		g->s[i] = frand() * 0.1f;
	g->d_u = (float *)dev_copy(g->u, (size_t)t * g->ldu * 4);
	g->d_b = (float *)dev_copy(g->b, (size_t)t * n_vh * 4);
	g->d_a = (float *)dev_copy(g->a, (size_t)t * n_vh * 4);
	g->d_dt = (float *)dev_copy(g->dt, (size_t)n_vh * 4);
	g->d_ssm_a = (float *)dev_copy(g->ssm_a, (size_t)n_vh * 4);
	g->d_s = (float *)dev_copy(g->s, ns * 4);
	g->d_params = (int32_t *)dev_copy(params, sizeof(params));
	die("malloc", cudaMalloc(&g->d_o, (size_t)t * n_vh * dk * 4));
}

static void
gdn_free(struct gdn *g)
{
	free(g->u);
	free(g->b);
	free(g->a);
	free(g->dt);
	free(g->ssm_a);
	free(g->s);
	cudaFree(g->d_u);
	cudaFree(g->d_b);
	cudaFree(g->d_a);
	cudaFree(g->d_dt);
	cudaFree(g->d_ssm_a);
	cudaFree(g->d_s);
	cudaFree(g->d_o);
	cudaFree(g->d_params);
}

/* Tokens T0 .. T0 + N − 1 of G through the launcher, on the device state. */
static void
run(const struct gdn *g, int t0, int n)
{
	struct rs_err	err;

	check("deltanet", rs_k_deltanet(g->d_s, g->d_u + t0 * g->ldu, g->ldu,
	    g->d_b + t0 * g->n_vh, g->d_a + t0 * g->n_vh, g->n_vh, g->d_dt,
	    g->d_ssm_a, g->n_kh, g->n_vh, g->dk, n, EPS,
	    g->d_o + (int64_t)t0 * g->n_vh * g->dk, NULL, g->d_params, 0, 0,
	    &err), &err);
}

/* dev_time_ms's view of run(): every token of the gdn at CTX. */
static void
run_all(void *ctx)
{
	const struct gdn *g = (const struct gdn *)ctx;

	run(g, 0, g->t);
}

/* The oracle over every token of G, on the host state: O (t, n_vh·dk). */
static void
oracle(struct gdn *g, float *o)
{
	const int	dk = g->dk;
	float		*q = (float *)malloc((size_t)dk * 4);
	float		*k = (float *)malloc((size_t)dk * 4);

	for (int t = 0; t < g->t; t++)
		for (int n = 0; n < g->n_vh; n++) {
			const float *ut = g->u + t * g->ldu;
			int m = n % g->n_kh;	/* tiled heads */
			float beta = rs_cpu_sigmoid(g->b[t * g->n_vh + n]);
			float dg = rs_cpu_softplus(g->a[t * g->n_vh + n] +
			    g->dt[n]) * g->ssm_a[n];

			rs_cpu_l2norm_ref(ut + m * dk, dk, EPS, q);
			rs_cpu_l2norm_ref(ut + (g->n_kh + m) * dk, dk, EPS, k);
			rs_cpu_deltanet_ref(g->s + (int64_t)n * dk * dk, q, k,
			    ut + 2 * g->n_kh * dk + n * dk, dg, beta, dk, dk,
			    1.0f / sqrtf((float)dk),
			    o + ((int64_t)t * g->n_vh + n) * dk);
		}
	free(q);
	free(k);
}

/* The launcher against the oracle; 0 when both errors are within 1e-5. */
static int
validate(int dk, int t)
{
	struct gdn	 g;
	const int64_t	 no = (int64_t)t * 6 * dk, ns = (int64_t)6 * dk * dk;
	float		*ref = (float *)malloc(no * 4);
	float		*got = (float *)malloc((no > ns ? no : ns) * 4);
	double		 eo, es;

	gdn_new(&g, 2, 6, dk, t);
	run(&g, 0, t);
	oracle(&g, ref);
	die("copy", cudaMemcpy(got, g.d_o, no * 4, cudaMemcpyDeviceToHost));
	eo = rs_verify_rel_err(got, ref, no);
	die("copy", cudaMemcpy(got, g.d_s, ns * 4, cudaMemcpyDeviceToHost));
	es = rs_verify_rel_err(got, g.s, ns);
	printf("{\"check\":\"vs oracle\",\"dk\":%d,\"tokens\":%d,"
	    "\"out_rel_err\":%.3g,\"state_rel_err\":%.3g}\n", dk, t, eo, es);
	gdn_free(&g);
	free(ref);
	free(got);
	return (eo <= 1e-5 && es <= 1e-5 ? 0 : 1);
}

/* FNV-1a of N bytes at P continuing from H */
static uint64_t
fnv1a(const void *p, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ULL;
	return (h);
}

/*
 * 27B: T tokens in one call against one call a token, bit for bit, and
 * the FNV-1a hash of the call's state and output bits (to tell whether
 * two builds of the scan compute the same).
 */
static int
invariance(int t)
{
	struct gdn	 g;
	const size_t	 no = (size_t)t * 48 * 128, ns = (size_t)48 * 128 * 128;
	float		*o1 = (float *)malloc(no * 4);
	float		*s1 = (float *)malloc(ns * 4);
	float		*o2 = (float *)malloc(no * 4);
	float		*s2 = (float *)malloc(ns * 4);
	int		 same;

	gdn_new(&g, 16, 48, 128, t);
	run(&g, 0, t);
	die("copy", cudaMemcpy(o1, g.d_o, no * 4, cudaMemcpyDeviceToHost));
	die("copy", cudaMemcpy(s1, g.d_s, ns * 4, cudaMemcpyDeviceToHost));
	die("reset", cudaMemcpy(g.d_s, g.s, ns * 4, cudaMemcpyHostToDevice));
	for (int i = 0; i < t; i++)
		run(&g, i, 1);
	die("copy", cudaMemcpy(o2, g.d_o, no * 4, cudaMemcpyDeviceToHost));
	die("copy", cudaMemcpy(s2, g.d_s, ns * 4, cudaMemcpyDeviceToHost));
	same = memcmp(o1, o2, no * 4) == 0 && memcmp(s1, s2, ns * 4) == 0;
	printf("{\"check\":\"batch vs single\",\"tokens\":%d,"
	    "\"identical\":%s,\"fnv1a\":\"%016llx\"}\n", t,
	    same ? "true" : "false", (unsigned long long)fnv1a(o1, no * 4,
	    fnv1a(s1, ns * 4, 14695981039346656037ULL)));
	gdn_free(&g);
	free(o1);
	free(s1);
	free(o2);
	free(s2);
	return (same ? 0 : 1);
}

int
main(void)
{
	static const int dks[] = { 64, 128 }, vts[] = { 1, 5, 33 };
	static const int toks[] = { 1, 4, 8, 16, 256, 2048 };
	const double	 state_bytes = 2.0 * 48 * 128 * 128 * 4;
	int		 bad = 0;

	for (size_t i = 0; i < sizeof(dks) / sizeof(dks[0]); i++)
		for (size_t j = 0; j < sizeof(vts) / sizeof(vts[0]); j++)
			bad |= validate(dks[i], vts[j]);
	bad |= invariance(8);
	bad |= invariance(16);
	if (bad)
		return (1);
	/* DN_TOKENS=N: time N tokens only (e.g. under ncu) */
	const char	*only = getenv("DN_TOKENS");

	for (size_t i = 0; i < sizeof(toks) / sizeof(toks[0]); i++) {
		struct gdn	g;
		int		n = only != NULL ? atoi(only) : toks[i];
		double		us;

		if (only != NULL && (i > 0 || n < 1))
			break;

		gdn_new(&g, 16, 48, 128, n);
		us = 1e3 * dev_time_ms(run_all, &g, n >= 256 ? 5 : 20);
		printf("{\"kernel\":\"deltanet\",\"dk\":128,\"heads\":48,"
		    "\"tokens\":%d,\"us\":%.1f,\"us_token\":%.3f,"
		    "\"state_gb_s\":%.0f,\"us_token_48_layers\":%.1f}\n", n,
		    us, us / n, state_bytes / us / 1e3, LAYERS * us / n);
		gdn_free(&g);
	}
	return (0);
}
