/*
 * gemm.cu - y[t] (+)= W·x[t] for many token columns at once on tensor cores:
 * the projections of a prefill chunk (qwen35-model.md §4.9), where a weight
 * row serves hundreds or thousands of tokens and the work is arithmetic, not
 * bytes.
 *
 * W is a GGUF weight of any format with a device decoder (quant.cuh), X and
 * Y are row-major (n_tok, ld) in f32 as everywhere in the backend.  Three
 * steps, repeated for pieces of at most `piece` rows of W so that the f16
 * copy of W stays small (a budget of values, RS_K_MM_WBUDGET in the
 * engine):
 *
 *   1. x̃[t] = x[t]·s_t in f16, s_t a power of two per token that brings
 *      max|x[t]| to [2^12, 2^13): f16 keeps 11 significant bits at every
 *      scale, so the scale loses nothing and rules out overflow (hidden
 *      states of real models reach 10^3-10^4 in some channels; f16 stops
 *      at 65504).  Once per call, for every piece.
 *   2. W's rows r0 .. r0+piece−1 decoded to f16 (W̃): weights of every
 *      §7 format are a few bits times f16 scales, so the f16 rounding is
 *      2^-12 relative per weight, as llama.cpp's cuBLAS path for batches.
 *   3. cuBLAS GemmEx, f16 operands, f32 accumulation and output (tensor
 *      cores on SM70 and later): T = W̃·x̃ (column-major: W̃ᵀ stored as
 *      n_in × piece, x̃ as n_in × n_tok, the fast "TN" layout), then
 *      y[t][r0+r] (+)= T[t][r] / s_t.
 *
 * Why cuBLAS and not our own mma kernel: prefill is 54 GFLOP a token on the
 * 27B, so the product's rate is the whole story, and cuBLAS reaches most of
 * the tensor-core peak on every generation from Volta on; the decode step
 * from the f16 copy costs 2 bytes a weight written and read again, under
 * 10 % of the product's time at 2,048 tokens (docs/perf-log.md has the
 * numbers and the alternative).
 *
 * cuBLAS is loaded at run time (dlopen) rather than linked: one binary
 * then takes the cuBLAS of CUDA 13 or of CUDA 12 (the last with Volta
 * kernels), the sm_70 build (scripts/cuda129.sh, PyPI pieces) needs no
 * 860 MB cuBLAS wheel, and a machine without it gets an error that says
 * what to install or set (RS_CUBLAS).  The four entry points and the enum
 * values used are those of cuBLAS's C API (cublas_api.h), stable since
 * CUDA 11.
 *
 * Not bit-identical to the matvec (f16 rounding of x and W): the engine
 * uses it only for calls of more than RS_K_MATVEC_MAX_COLS tokens, which no
 * verification pass is.  Oracle: rs_cpu_matmul_ref; test: tests/check_cuda.c
 * "mm".  The conversions are in mm_conv.cu; this file is the host side.
 */
#include <dlfcn.h>
#include <stdlib.h>

#include <library_types.h>

#include "common.cuh"
#include "rs_kernels.h"

/* ---- cuBLAS, loaded at run time ---- */

/* The values of cublas_api.h's enums that we pass. */
enum {
	BLAS_OK = 0,		/* CUBLAS_STATUS_SUCCESS */
	BLAS_OP_N = 0,		/* CUBLAS_OP_N */
	BLAS_OP_T = 1,		/* CUBLAS_OP_T */
	BLAS_COMPUTE_32F = 68,	/* CUBLAS_COMPUTE_32F */
	BLAS_GEMM_DEFAULT = -1	/* CUBLAS_GEMM_DEFAULT */
};

typedef void *blas_handle;
struct blas {
	void	*lib;
	int	(*create)(blas_handle *);
	int	(*destroy)(blas_handle);
	int	(*set_stream)(blas_handle, cudaStream_t);
	int	(*gemm_ex)(blas_handle, int, int, int, int, int, const void *,
		    const void *, cudaDataType, int, const void *,
		    cudaDataType, int, const void *, void *, cudaDataType, int,
		    int, int);
};

/*
 * Open cuBLAS: $RS_CUBLAS if set, else the CUDA 13 then the CUDA 12
 * library by name (the loader's path, then /usr/local/cuda).
 */
static enum rs_status
blas_open(struct blas *b, struct rs_err *err)
{
	static const char *const names[] = {
		"libcublas.so.13", "libcublas.so.12",
		"/usr/local/cuda/lib64/libcublas.so.13",
		"/usr/local/cuda/lib64/libcublas.so.12",
	};
	const char *env = getenv("RS_CUBLAS");

	if (env != NULL && *env != '\0')
		b->lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
	for (size_t i = 0; b->lib == NULL && (env == NULL || *env == '\0') &&
	    i < sizeof(names) / sizeof(names[0]); i++)
		b->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (b->lib == NULL)
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "cuBLAS not found (%s); set RS_CUBLAS to its path",
		    env != NULL && *env != '\0' ? env :
		    "libcublas.so.13 or .12"));
	*(void **)&b->create = dlsym(b->lib, "cublasCreate_v2");
	*(void **)&b->destroy = dlsym(b->lib, "cublasDestroy_v2");
	*(void **)&b->set_stream = dlsym(b->lib, "cublasSetStream_v2");
	*(void **)&b->gemm_ex = dlsym(b->lib, "cublasGemmEx");
	if (b->create == NULL || b->destroy == NULL || b->set_stream == NULL ||
	    b->gemm_ex == NULL)
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "cuBLAS: missing entry points"));
	return (RS_OK);
}

struct rs_k_mm {
	struct blas	 blas;
	blas_handle	 h;
	int64_t		 max_in, max_tok, wbudget, tbudget;
	__half		*w16;	/* wbudget values */
	__half		*x16;	/* max_tok × max_in */
	float		*inv_s;	/* max_tok */
	float		*t;	/* tbudget values */
	size_t		 bytes;
};

static size_t
mm_w16_bytes(int64_t wbudget)
{
	return ((size_t)wbudget * sizeof(__half));
}

static size_t
mm_x16_bytes(int64_t max_in, int max_tok)
{
	return ((size_t)max_tok * (size_t)max_in * sizeof(__half));
}

extern "C" size_t
rs_k_mm_plan(int64_t max_in, int max_tok, int64_t wbudget, int64_t tbudget)
{
	return (mm_w16_bytes(wbudget) + mm_x16_bytes(max_in, max_tok) +
	    (size_t)max_tok * sizeof(float) + (size_t)tbudget * sizeof(float));
}

extern "C" enum rs_status
rs_k_mm_new(int64_t max_in, int max_tok, int64_t wbudget, int64_t tbudget,
    struct rs_k_mm **out, struct rs_err *err)
{
	struct rs_k_mm *m;
	enum rs_status s;
	int bs;

	if (max_in < 8 || max_tok < 1 || wbudget < 64 * max_in ||
	    tbudget < 64 * (int64_t)max_tok)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "mm: max_in %lld, max_tok %d, budgets %lld and %lld "
		    "(64 rows at least)", (long long)max_in, max_tok,
		    (long long)wbudget, (long long)tbudget));
	if ((m = (struct rs_k_mm *)calloc(1, sizeof(*m))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	*out = m;
	m->max_in = max_in;
	m->max_tok = max_tok;
	m->wbudget = wbudget;
	m->tbudget = tbudget;
	if ((s = blas_open(&m->blas, err)) != RS_OK)
		return (s);
	if ((bs = m->blas.create(&m->h)) != BLAS_OK) {
		m->h = NULL;
		return (rs_errf(err, RS_ERR_CUDA, "cuBLAS: create: status %d",
		    bs));
	}
	struct { void **p; size_t bytes; } bufs[] = {
		{ (void **)&m->w16, mm_w16_bytes(wbudget) },
		{ (void **)&m->x16, mm_x16_bytes(max_in, max_tok) },
		{ (void **)&m->inv_s, (size_t)max_tok * sizeof(float) },
		{ (void **)&m->t, (size_t)tbudget * sizeof(float) },
	};
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) {
		RS_CUDA_TRY(err, cudaMalloc(bufs[i].p, bufs[i].bytes));
		m->bytes += bufs[i].bytes;
	}
	return (RS_OK);
}

extern "C" void
rs_k_mm_free(struct rs_k_mm *m)
{
	if (m == NULL)
		return;
	if (m->h != NULL)
		m->blas.destroy(m->h);
	if (m->blas.lib != NULL)
		dlclose(m->blas.lib);
	cudaFree(m->w16);
	cudaFree(m->x16);
	cudaFree(m->inv_s);
	cudaFree(m->t);
	free(m);
}

extern "C" size_t
rs_k_mm_bytes(const struct rs_k_mm *m)
{
	return (m->bytes);
}

/*
 * Rows of W per piece: within both budgets, and the pieces of equal size
 * (rounded up to 64 rows), since a small last piece runs the tensor cores
 * at a fraction of their rate.  0 when not even 64 rows fit.
 */
static int64_t
mm_piece(const struct rs_k_mm *m, int64_t n_in, int64_t n_out, int n_tok)
{
	int64_t p = m->wbudget / n_in;
	int64_t q = m->tbudget / n_tok;

	p = (p < q ? p : q) / 64 * 64;
	if (p < 64)
		return (0);
	if (p >= n_out)
		return (n_out);
	int64_t pieces = (n_out + p - 1) / p;
	int64_t even = ((n_out + pieces - 1) / pieces + 63) / 64 * 64;
	return (even < p ? even : p);
}

extern "C" enum rs_status
rs_k_mm(struct rs_k_mm *m, const void *d_w, int type, int64_t n_in,
    int64_t n_out, int64_t row_bytes, const float *d_x, int64_t ldx,
    float *d_y, int64_t ldy, int n_tok, int accumulate, cudaStream_t stream,
    struct rs_err *err)
{
	const float one = 1.0f, zero = 0.0f;
	int bs;

	if (n_in < 8 || n_in % 8 != 0 || n_in > m->max_in || n_out < 1 ||
	    n_tok < 1 || n_tok > m->max_tok || ldx < n_in || ldy < n_out ||
	    mm_piece(m, n_in, n_out, n_tok) < 1)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "mm: %lld x %lld weight, %d tokens (room for %lld x %lld)",
		    (long long)n_out, (long long)n_in, n_tok,
		    (long long)m->max_in, (long long)m->max_tok));
	if ((bs = m->blas.set_stream(m->h, stream)) != BLAS_OK)
		return (rs_errf(err, RS_ERR_CUDA, "cuBLAS: stream: status %d",
		    bs));
	enum rs_status s = rs_k_mm_x16(d_x, ldx, n_in, n_tok, m->x16,
	    m->inv_s, stream, err);
	if (s != RS_OK)
		return (s);
	const int64_t piece = mm_piece(m, n_in, n_out, n_tok);
	for (int64_t r0 = 0; r0 < n_out; r0 += piece) {
		int64_t rows = n_out - r0 < piece ? n_out - r0 : piece;
		if ((s = rs_k_mm_w16(d_w, type, n_in, row_bytes, r0, rows,
		    m->w16, stream, err)) != RS_OK)
			return (s);
		bs = m->blas.gemm_ex(m->h, BLAS_OP_T, BLAS_OP_N, (int)rows,
		    n_tok, (int)n_in, &one, m->w16, CUDA_R_16F, (int)n_in,
		    m->x16, CUDA_R_16F, (int)n_in, &zero, m->t, CUDA_R_32F,
		    (int)rows, BLAS_COMPUTE_32F, BLAS_GEMM_DEFAULT);
		if (bs != BLAS_OK)
			return (rs_errf(err, RS_ERR_CUDA,
			    "cuBLAS: GemmEx %lld x %d x %lld: status %d",
			    (long long)rows, n_tok, (long long)n_in, bs));
		if ((s = rs_k_mm_store(m->t, rows, n_tok, m->inv_s, d_y + r0,
		    ldy, accumulate, stream, err)) != RS_OK)
			return (s);
	}
	return (RS_OK);
}
