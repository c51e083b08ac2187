/*
 * check_cpu.c - the CPU operators: the oracles (_ref) against values
 * worked out by hand from qwen35-model.md §4, and the fast versions
 * against the oracles on seeded inputs with tail shapes and on every
 * weight tensor of the tiny fixtures.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_cpu.h"
#include "rs_cpu_vec.h"
#include "rs_gguf.h"
#include "rs_half.h"
#include "rs_types.h"
#include "rs_verify.h"
#include "t_util.h"

/*
 * Fast vs oracle.  The oracles sum in double, the fast paths in f32 over at
 * most ~1000 terms of mixed sign: ~1e-6 relative; 1e-5 leaves margin and
 * is still far below any real mistake (O(1)).
 */
#define TOL_FAST	1e-5

static uint64_t rng_state;

static float
frand(void)
{
	/* xorshift64*, uniform in [-1, 1) */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return ((float)((rng_state * 2685821657736338717ULL) >> 40) /
	    (float)(1 << 23) - 1.0f);
}

static float *
frand_vec(int64_t n)
{
	float *p = malloc((size_t)n * sizeof(float));

	ck_assert(p != NULL);
	for (int64_t i = 0; i < n; i++)
		p[i] = frand();
	return (p);
}

/* ---- exact f16 decoding ---- */

START_TEST(f16_vector_decode)
{
	for (uint32_t i = 0; i < 65536; i += 4) {
		uint16_t h[4] = { (uint16_t)i, (uint16_t)(i + 1),
		    (uint16_t)(i + 2), (uint16_t)(i + 3) };
		rs_v4f	 v = rs_vec_from_f16(h);

		for (int l = 0; l < 4; l++) {
			float want = rs_f16_to_f32(h[l]);

			ck_assert_msg(rs_f32_bits(v[l]) == rs_f32_bits(want),
			    "f16 %04x: %08x, oracle %08x", h[l],
			    rs_f32_bits(v[l]), rs_f32_bits(want));
		}
	}
}
END_TEST

static const char *const files[] = {
	"f16", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0"
};

/* Every row of every tensor of fixture _i: fast decoder == oracle. */
START_TEST(row_decoders_exact)
{
	char		 rel[64];
	struct rs_gguf	*g;
	struct rs_err	 err;

	snprintf(rel, sizeof(rel), "tiny/model-%s.gguf", files[_i]);
	ck_assert_int_eq(rs_gguf_open(&g, t_fixture(rel), &err), RS_OK);
	for (int64_t i = 0; i < rs_gguf_n_tensors(g); i++) {
		const struct rs_gguf_tensor *t = rs_gguf_tensor(g, i);
		const struct rs_type_traits *tt = rs_type_traits(t->type);
		rs_to_float_fn fast = rs_cpu_row_decoder(t->type);
		int64_t	 n = t->ne[0], rows = t->nbytes / (n /
		    tt->block_elems * tt->block_bytes);
		size_t	 rb = (size_t)(n / tt->block_elems * tt->block_bytes);
		float	*a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4);

		for (int64_t r = 0; r < rows; r++) {
			const uint8_t *src = (const uint8_t *)t->data + r * rb;

			tt->to_float(src, a, n);
			fast(src, b, n);
			ck_assert_msg(memcmp(a, b, (size_t)n * 4) == 0,
			    "%s (%s) row %lld: fast decoder differs", t->name,
			    tt->name, (long long)r);
		}
		free(a);
		free(b);
	}
	/* activation-only and unknown types have no decoder */
	ck_assert(rs_cpu_row_decoder(RS_TYPE_Q8_K) == NULL);
	ck_assert(rs_cpu_row_decoder(99) == NULL);
	rs_gguf_close(g);
}
END_TEST

/* ---- matmul ---- */

/* Fast vs oracle vs token count vs thread count on tensor W. */
static void
check_matmul(const struct rs_gguf_tensor *w, struct rs_pool *pool)
{
	const int64_t	n_in = w->ne[0], n_out = w->ne[1], nt = 5;
	float		*x = frand_vec(nt * n_in);
	float		*ref = calloc((size_t)(nt * n_out), 4);
	float		*fast = calloc((size_t)(nt * n_out), 4);
	float		*one = calloc((size_t)n_out, 4);
	float		*row = malloc((size_t)n_in * 4);
	float		*scratch = malloc(rs_cpu_matmul_scratch(n_in,
	    rs_pool_size(pool)) * sizeof(float));
	struct rs_cpu_mm mm = { w, x, ref, n_out };
	double		 rel;

	ck_assert(ref && fast && one && row && scratch);
	rs_cpu_matmul_ref(&mm, nt, row);
	mm.y = fast;
	rs_cpu_matmul(pool, &mm, 1, nt, scratch);
	rel = rs_verify_rel_err(fast, ref, nt * n_out);
	ck_assert_msg(rel <= TOL_FAST, "%s (%s, %lld x %lld): rel %g",
	    w->name, rs_type_name(w->type), (long long)n_in,
	    (long long)n_out, rel);
	/* token t alone gives the same bits as inside the batch */
	for (int64_t t = 0; t < nt; t += 2) {
		mm.x = x + t * n_in;
		mm.y = one;
		rs_cpu_matmul(NULL, &mm, 1, 1, scratch);
		ck_assert_msg(memcmp(one, fast + t * n_out, (size_t)n_out *
		    4) == 0, "%s: token %lld alone differs from the batch",
		    w->name, (long long)t);
	}
	free(x);
	free(ref);
	free(fast);
	free(one);
	free(row);
	free(scratch);
}


START_TEST(matmul_tiny_tensors)
{
	char		 rel[64];
	struct rs_gguf	*g;
	struct rs_pool	*pool;
	struct rs_err	 err;
	int		 checked = 0;

	rng_state = 0x9e3779b97f4a7c15ULL + (uint64_t)_i;
	snprintf(rel, sizeof(rel), "tiny/model-%s.gguf", files[_i]);
	ck_assert_int_eq(rs_gguf_open(&g, t_fixture(rel), &err), RS_OK);
	ck_assert_int_eq(rs_pool_new(&pool, 3, &err), RS_OK);
	for (int64_t i = 0; i < rs_gguf_n_tensors(g); i++) {
		const struct rs_gguf_tensor *t = rs_gguf_tensor(g, i);

		/* 2-D weights; token_embd only as a matrix of 2176 rows */
		if (t->n_dims != 2 || t->ne[0] < 8)
			continue;
		check_matmul(t, pool);
		checked++;
	}
	ck_assert_int_ge(checked, 30);
	rs_pool_free(pool);
	rs_gguf_close(g);
}
END_TEST

/* Synthetic f32 / f16 weights with tails: n_in not a multiple of 8 and
 * n_out not a multiple of the 4-row block. */
START_TEST(matmul_odd_shapes)
{
	static const int64_t shapes[][2] = {
		{ 1, 1 }, { 13, 7 }, { 8, 5 }, { 31, 9 }, { 64, 3 }
	};
	struct rs_pool	*pool;
	struct rs_err	 err;

	rng_state = 42;
	ck_assert_int_eq(rs_pool_new(&pool, 2, &err), RS_OK);
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		int64_t	 n = shapes[s][0] * shapes[s][1];
		float	*w32 = frand_vec(n);
		uint16_t *w16 = malloc((size_t)n * 2);
		struct rs_gguf_tensor t = { 0 };

		for (int64_t i = 0; i < n; i++)
			w16[i] = rs_f32_to_f16(w32[i]);
		t.name = "synthetic";
		t.n_dims = 2;
		t.ne[0] = shapes[s][0];
		t.ne[1] = shapes[s][1];
		t.ne[2] = t.ne[3] = 1;
		t.type = RS_TYPE_F32;
		t.data = w32;
		check_matmul(&t, pool);
		t.type = RS_TYPE_F16;
		t.data = w16;
		check_matmul(&t, pool);
		free(w32);
		free(w16);
	}
	rs_pool_free(pool);
}
END_TEST

/* The oracle itself on a 2x3 matrix worked out by hand. */
START_TEST(matmul_ref_by_hand)
{
	/* rows (1 2 3) and (−1 .5 4) */
	float	w[6] = { 1, 2, 3, -1, 0.5f, 4 };
	float	x[6] = { 1, 1, 1, 2, 0, -1 };		/* two tokens */
	float	y[4], row[3];
	struct rs_gguf_tensor t = { .name = "w", .n_dims = 2,
	    .ne = { 3, 2, 1, 1 }, .type = RS_TYPE_F32, .data = w };
	struct rs_cpu_mm mm = { &t, x, y, 2 };

	rs_cpu_matmul_ref(&mm, 2, row);
	ck_assert_float_eq(y[0], 6.0f);
	ck_assert_float_eq(y[1], 3.5f);
	ck_assert_float_eq(y[2], -1.0f);
	ck_assert_float_eq(y[3], -6.0f);
}
END_TEST

/* ---- norms and scalar functions (§4.1) ---- */

START_TEST(norms_by_hand)
{
	float	x[2] = { 3, 4 }, w[2] = { 1, 2 }, z[2] = { 0, 50 };
	float	y[2], tiny[2] = { 1e-8f, 0 };

	/* mean(x²) = 12.5 */
	rs_cpu_rmsnorm_ref(x, w, 2, 0.0f, y);
	ck_assert_float_eq_tol(y[0], 3.0f / sqrtf(12.5f), 1e-6f);
	ck_assert_float_eq_tol(y[1], 8.0f / sqrtf(12.5f), 1e-6f);
	rs_cpu_l2norm_ref(x, 2, 1e-6f, y);
	ck_assert_float_eq_tol(y[0], 0.6f, 1e-7f);
	ck_assert_float_eq_tol(y[1], 0.8f, 1e-7f);
	/* the clamp: ‖x‖ = 1e-8 < eps, so x / eps, not x / ‖x‖ */
	rs_cpu_l2norm_ref(tiny, 2, 1e-6f, y);
	ck_assert_float_eq_tol(y[0], 0.01f, 1e-9f);
	/* gated: silu(0) = 0, silu(50) = 50 */
	rs_cpu_gated_rmsnorm_ref(x, z, w, 2, 0.0f, y);
	ck_assert_float_eq(y[0], 0.0f);
	ck_assert_float_eq_tol(y[1], 8.0f / sqrtf(12.5f) * 50.0f, 1e-4f);
	ck_assert_float_eq(rs_cpu_softplus(25.0f), 25.0f);
	ck_assert_float_eq_tol(rs_cpu_softplus(0.0f), logf(2.0f), 1e-7f);
	ck_assert_float_eq_tol(rs_cpu_softplus(19.0f), 19.0f, 1e-5f);
	ck_assert_float_eq_tol(rs_cpu_sigmoid(0.0f), 0.5f, 1e-7f);
	ck_assert_float_eq_tol(rs_cpu_silu(-1.0f), -1.0f / (1.0f + expf(1)),
	    1e-7f);
}
END_TEST

/* ---- RoPE (§4.5) ---- */

START_TEST(rope_sectors)
{
	const uint32_t	 s3320[4] = { 3, 3, 2, 0 }, s1111[4] = { 1, 1, 1, 1 };
	const int32_t	 pos4[4] = { 5, 7, 11, 0 };
	/* sections [3, 3, 2, 0], 8 pairs: sector = i → t h w t h w t h */
	const int	 comp[8] = { 0, 1, 2, 0, 1, 2, 0, 1 };
	float		 c[8], s[8];

	rs_cpu_rope_angles(pos4, s3320, 16, 1e7f, c, s);
	for (int i = 0; i < 8; i++) {
		double th = pos4[comp[i]] * pow(1e7, -2.0 * i / 16.0);

		ck_assert_float_eq_tol(c[i], (float)cos(th), 1e-6f);
		ck_assert_float_eq_tol(s[i], (float)sin(th), 1e-6f);
	}
	/* [1, 1, 1, 1]: sector 3 of every 4 takes e = 0: no rotation */
	rs_cpu_rope_angles(pos4, s1111, 16, 1e7f, c, s);
	for (int i = 3; i < 8; i += 4) {
		ck_assert_float_eq(c[i], 1.0f);
		ck_assert_float_eq(s[i], 0.0f);
	}
	ck_assert_float_eq_tol(s[0], (float)sin(5.0), 1e-6f);
	ck_assert_float_eq_tol(s[1], (float)sin(7.0 * pow(1e7, -2.0 / 16)),
	    1e-6f);
}
END_TEST

START_TEST(rope_pairs)
{
	float	x[10] = { 1, 2, 0, 0, 9, 3, 4, 0, 0, 9 };
	float	c[2] = { 0.0f, 1.0f }, s[2] = { 1.0f, 0.0f };

	/* n_rot 4: pairs (0, 2) and (1, 3); pair 0 turns by 90 degrees */
	rs_cpu_rope_ref(x, 4, c, s);
	ck_assert_float_eq(x[0], 0.0f);		/* 1·0 − 0·1 */
	ck_assert_float_eq(x[2], 1.0f);		/* 1·1 + 0·0 */
	ck_assert_float_eq(x[1], 2.0f);		/* pair 1: angle 0 */
	ck_assert_float_eq(x[4], 9.0f);		/* past n_rot: untouched */
	ck_assert_float_eq(x[5], 3.0f);
}
END_TEST

/* ---- conv (§4.6 step 2) ---- */

START_TEST(conv_by_hand)
{
	/* 2 channels, K = 4; channel 1 has taps (0 0 0 1): u = silu(x_t) */
	float	w[8] = { 1, 2, 3, 4, 0, 0, 0, 1 };
	float	st[6] = { 10, 20, 30, -1, -2, -3 };
	float	x[10] = { 1, 5, 2, 6, 3, 7, 4, 8, 0, 9 };	/* (5, 2) */
	float	u[10], snap[6], st2[6];

	/* channel 0, token 0: window (10 20 30 1) → 10+40+90+4 = 144 */
	rs_cpu_conv_state_at(st, x, 2, 4, 1, snap);
	memcpy(st2, st, sizeof(st));
	rs_cpu_conv_ref(st, w, x, 5, 2, 4, u);
	ck_assert_float_eq_tol(u[0], rs_cpu_silu(144.0f), 1e-4f);
	/* token 1: (20 30 1 2) → 20+60+3+8 = 91 */
	ck_assert_float_eq_tol(u[2], rs_cpu_silu(91.0f), 1e-4f);
	for (int t = 0; t < 5; t++)
		ck_assert_float_eq_tol(u[2 * t + 1], rs_cpu_silu(x[2 * t + 1]),
		    1e-6f);
	/* the state keeps the last 3 raw inputs */
	ck_assert_float_eq(st[0], 3.0f);
	ck_assert_float_eq(st[1], 4.0f);
	ck_assert_float_eq(st[2], 0.0f);
	ck_assert_float_eq(st[5], 9.0f);
	/* after token 1 of 5: (30 1 2) and (−3 5 6) */
	ck_assert_float_eq(snap[0], 30.0f);
	ck_assert_float_eq(snap[1], 1.0f);
	ck_assert_float_eq(snap[2], 2.0f);
	ck_assert_float_eq(snap[3], -3.0f);
	ck_assert_float_eq(snap[5], 6.0f);
	/* fewer tokens than K − 1: part of the old state stays */
	rs_cpu_conv_ref(st2, w, x, 1, 2, 4, u);
	ck_assert_float_eq(st2[0], 20.0f);
	ck_assert_float_eq(st2[2], 1.0f);
}
END_TEST

/* ---- delta rule (§4.6 step 6) ---- */

START_TEST(deltanet_by_hand)
{
	/* dk = dv = 1: every step is scalar arithmetic */
	float	s = 2.0f, q = 1.0f, k = 1.0f, v = 3.0f, o;
	float	g = logf(0.5f), beta = 0.25f;
	/* decayed S = 1; read r = 1; δ = 0.25·(3 − 1) = 0.5; S = 1.5;
	 * o = scale·1.5 = 3 */
	rs_cpu_deltanet_ref(&s, &q, &k, &v, g, beta, 1, 1, 2.0f, &o);
	ck_assert_float_eq_tol(s, 1.5f, 1e-6f);
	ck_assert_float_eq_tol(o, 3.0f, 1e-6f);
}
END_TEST

START_TEST(deltanet_fast)
{
	static const int dims[][2] = { { 64, 64 }, { 5, 7 }, { 16, 9 } };

	rng_state = 7;
	for (size_t c = 0; c < sizeof(dims) / sizeof(dims[0]); c++) {
		int	 dk = dims[c][0], dv = dims[c][1];
		float	*s1 = frand_vec(dk * dv), *s2 = malloc((size_t)(dk *
		    dv) * 4);
		float	*o1 = malloc((size_t)dv * 4), *o2 = malloc((size_t)dv *
		    4);
		double	 worst = 0.0;

		memcpy(s2, s1, (size_t)(dk * dv) * 4);
		for (int step = 0; step < 20; step++) {
			float	*q = frand_vec(dk), *k = frand_vec(dk);
			float	*v = frand_vec(dv);
			float	 g = -fabsf(frand()), beta = 0.5f + 0.5f *
			    frand();
			double	 r;

			rs_cpu_l2norm_ref(q, dk, 1e-6f, q);
			rs_cpu_l2norm_ref(k, dk, 1e-6f, k);
			rs_cpu_deltanet_ref(s1, q, k, v, g, beta, dk, dv,
			    0.125f, o1);
			rs_cpu_deltanet(s2, q, k, v, g, beta, dk, dv, 0.125f,
			    o2);
			r = rs_verify_rel_err(o2, o1, dv);
			worst = r > worst ? r : worst;
			free(q);
			free(k);
			free(v);
		}
		ck_assert_msg(worst <= TOL_FAST, "dk %d dv %d: output rel %g",
		    dk, dv, worst);
		ck_assert_msg(rs_verify_rel_err(s2, s1, dk * dv) <= TOL_FAST,
		    "dk %d dv %d: state", dk, dv);
		free(s1);
		free(s2);
		free(o1);
		free(o2);
	}
}
END_TEST

/* ---- attention (§4.4) ---- */

START_TEST(attn_by_hand)
{
	/* d = 1, two rows: scores (0, ln 3)/1 → weights 1/4, 3/4 */
	float	q = 1.0f, k[2] = { 0.0f, logf(3.0f) }, v[2] = { 4.0f, 8.0f };
	float	o, sc[2];

	rs_cpu_attn_ref(&q, k, 1, v, 1, 2, 1, 1, 1.0f, &o, sc);
	ck_assert_float_eq_tol(o, 7.0f, 1e-5f);
	rs_cpu_attn(&q, k, 1, v, 1, 2, 1, 1, 1.0f, &o);
	ck_assert_float_eq_tol(o, 7.0f, 1e-5f);
}
END_TEST

START_TEST(attn_fast)
{
	static const int64_t lens[] = { 1, 5, 300 };

	rng_state = 11;
	for (size_t c = 0; c < sizeof(lens) / sizeof(lens[0]); c++) {
		int64_t	 n = lens[c], ld = 2 * 64;	/* 2 kv heads */
		float	*q = frand_vec(64), *kv = frand_vec(n * ld);
		float	*vv = frand_vec(n * ld), *sc = malloc((size_t)n * 4);
		float	 o1[64], o2[64];

		for (int i = 0; i < 64; i++)
			q[i] *= 8.0f;		/* peaked softmax */
		rs_cpu_attn_ref(q, kv + 64, ld, vv + 64, ld, n, 64, 64,
		    0.125f, o1, sc);
		rs_cpu_attn(q, kv + 64, ld, vv + 64, ld, n, 64, 64, 0.125f, o2);
		ck_assert_msg(rs_verify_rel_err(o2, o1, 64) <= TOL_FAST,
		    "n %lld: %g", (long long)n, rs_verify_rel_err(o2, o1, 64));
		free(q);
		free(kv);
		free(vv);
		free(sc);
	}
}
END_TEST

Suite *
cpu_suite(void)
{
	Suite	*s = suite_create("cpu");
	TCase	*tc;

	tc = tcase_create("matmul");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, f16_vector_decode);
	tcase_add_loop_test(tc, row_decoders_exact, 0,
	    (int)(sizeof(files) / sizeof(files[0])));
	tcase_add_loop_test(tc, matmul_tiny_tensors, 0,
	    (int)(sizeof(files) / sizeof(files[0])));
	tcase_add_test(tc, matmul_odd_shapes);
	tcase_add_test(tc, matmul_ref_by_hand);
	suite_add_tcase(s, tc);
	tc = tcase_create("ops");
	tcase_add_test(tc, norms_by_hand);
	tcase_add_test(tc, rope_sectors);
	tcase_add_test(tc, rope_pairs);
	tcase_add_test(tc, conv_by_hand);
	tcase_add_test(tc, deltanet_by_hand);
	tcase_add_test(tc, deltanet_fast);
	tcase_add_test(tc, attn_by_hand);
	tcase_add_test(tc, attn_fast);
	suite_add_tcase(s, tc);
	return (s);
}
