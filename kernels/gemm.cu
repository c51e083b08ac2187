/*
 * gemm.cu - y[t] (+)= W·x[t] for many token columns at once on tensor cores:
 * the projections of a prefill chunk (qwen35-model.md §4.9), where a weight
 * row serves hundreds or thousands of tokens and the work is arithmetic, not
 * bytes.
 *
 * W is a GGUF weight of any format with a device decoder (quant.cuh), X and
 * Y are row-major (n_tok, ld) in f32 as everywhere in the backend.
 *
 *   input   x̃ = x·s in f16, s one power of two for the chunk that brings
 *           max|x| to [2^12, 2^13) (mm_conv.cu): f16 keeps 11 significant
 *           bits at every normal scale, so the scale costs nothing and
 *           rules out overflow (hidden states of real models reach
 *           10^3-10^4 in some channels; f16 stops at 65504).  Rows are
 *           normalised or gated before every product, so one scale for
 *           the chunk leaves every token far above f16's subnormals.  One
 *           conversion serves every product of the same input (q, k, v;
 *           gate and up).
 *   weight  W decoded to f16 (W̃) in pieces of at most `wbudget` values:
 *           weights of every §7 format are a few bits times f16 scales,
 *           so the f16 rounding is 2^-12 relative per weight, as in
 *           llama.cpp's cuBLAS path for batches.
 *   product cuBLAS GemmEx, f16 operands, f32 accumulation and output
 *           (tensor cores from SM70 on), straight into Y: column-major,
 *           Y's rows are n_out × n_tok with ld = ldy, W̃ᵀ is n_in × piece,
 *           x̃ n_in × n_tok (the fast "TN" layout); α = 1/s and β = 0 or 1
 *           (the residual) are read from device memory, so no host
 *           synchronisation learns s.
 *
 * Why cuBLAS and not our own mma kernel: prefill is 52 GFLOP a token on the
 * 27B, so the product's rate is the whole story, and cuBLAS reaches most of
 * the tensor-core peak on every generation from Volta on (~800 TFLOP/s on
 * the H200 at 2,048 tokens, docs/perf-log.md); decoding to the f16 copy
 * costs 2 bytes a weight written and read again, a few % of the product.
 *
 * cuBLAS is loaded at run time (dlopen) rather than linked: one binary
 * then takes the cuBLAS of CUDA 13 or of CUDA 12 (the last with Volta
 * kernels), the sm_70 build (scripts/cuda129.sh, PyPI pieces) needs no
 * 860 MB cuBLAS wheel, and a machine without it gets an error that says
 * what to install or set (RS_CUBLAS).  The entry points and the enum
 * values used are those of cuBLAS's C API (cublas_api.h), stable since
 * CUDA 11.
 *
 * Not bit-identical to the matvec (f16 rounding of x and W): the engine
 * uses it only for calls of more than RS_ENGINE_EXACT_MAX tokens, which no
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
	BLAS_PTR_DEVICE = 1,	/* CUBLAS_POINTER_MODE_DEVICE */
	BLAS_COMPUTE_32F = 68,	/* CUBLAS_COMPUTE_32F */
	BLAS_GEMM_DEFAULT = -1	/* CUBLAS_GEMM_DEFAULT */
};

typedef void *blas_handle;
struct blas {
	void	*lib;
	int	(*create)(blas_handle *);
	int	(*destroy)(blas_handle);
	int	(*set_stream)(blas_handle, cudaStream_t);
	int	(*set_pointer_mode)(blas_handle, int);
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
	const int named = env != NULL && *env != '\0';

	if (named)
		b->lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
	for (size_t i = 0; !named && b->lib == NULL &&
	    i < sizeof(names) / sizeof(names[0]); i++)
		b->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (b->lib == NULL)
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "cuBLAS not found (%s): the GPU prefill needs it; install "
		    "CUDA's cuBLAS or set RS_CUBLAS to its path",
		    named ? env : "libcublas.so.13 or .12"));
	*(void **)&b->create = dlsym(b->lib, "cublasCreate_v2");
	*(void **)&b->destroy = dlsym(b->lib, "cublasDestroy_v2");
	*(void **)&b->set_stream = dlsym(b->lib, "cublasSetStream_v2");
	*(void **)&b->set_pointer_mode = dlsym(b->lib,
	    "cublasSetPointerMode_v2");
	*(void **)&b->gemm_ex = dlsym(b->lib, "cublasGemmEx");
	if (b->create == NULL || b->destroy == NULL || b->set_stream == NULL ||
	    b->set_pointer_mode == NULL || b->gemm_ex == NULL)
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "cuBLAS: missing entry points"));
	return (RS_OK);
}

/* Device scalars: the input's max |x| (bits), α = 1/s, β = 0 and 1. */
struct mm_scalars {
	unsigned int	amax;
	float		alpha, zero, one;
};

struct rs_k_mm {
	struct blas	 blas;
	blas_handle	 h;
	int64_t		 max_in, max_tok, wbudget;
	__half		*w16;	/* wbudget values */
	__half		*x16;	/* the input, n_tok × n_in of max_tok × max_in */
	struct mm_scalars *sc;
	int64_t		 n_in, n_tok;	/* the input's; 0: none */
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
rs_k_mm_plan(int64_t max_in, int max_tok, int64_t wbudget)
{
	return (mm_w16_bytes(wbudget) + mm_x16_bytes(max_in, max_tok) +
	    sizeof(struct mm_scalars));
}

extern "C" enum rs_status
rs_k_mm_new(int64_t max_in, int max_tok, int64_t wbudget,
    struct rs_k_mm **out, struct rs_err *err)
{
	static const struct mm_scalars init = { 0, 1.0f, 0.0f, 1.0f };
	struct rs_k_mm *m;
	enum rs_status s;
	int bs;

	if (max_in < 8 || max_tok < 1 || wbudget < 64 * max_in)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "mm: max_in %lld, max_tok %d, budget %lld (64 rows at "
		    "least)", (long long)max_in, max_tok, (long long)wbudget));
	if ((m = (struct rs_k_mm *)calloc(1, sizeof(*m))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	*out = m;
	m->max_in = max_in;
	m->max_tok = max_tok;
	m->wbudget = wbudget;
	if ((s = blas_open(&m->blas, err)) != RS_OK)
		return (s);
	if ((bs = m->blas.create(&m->h)) != BLAS_OK) {
		m->h = NULL;
		return (rs_errf(err, RS_ERR_CUDA, "cuBLAS: create: status %d",
		    bs));
	}
	if ((bs = m->blas.set_pointer_mode(m->h, BLAS_PTR_DEVICE)) != BLAS_OK)
		return (rs_errf(err, RS_ERR_CUDA, "cuBLAS: pointer mode: "
		    "status %d", bs));
	RS_CUDA_TRY(err, cudaMalloc((void **)&m->w16, mm_w16_bytes(wbudget)));
	RS_CUDA_TRY(err, cudaMalloc((void **)&m->x16, mm_x16_bytes(max_in,
	    max_tok)));
	RS_CUDA_TRY(err, cudaMalloc((void **)&m->sc, sizeof(*m->sc)));
	RS_CUDA_TRY(err, cudaMemcpy(m->sc, &init, sizeof(init),
	    cudaMemcpyHostToDevice));
	m->bytes = rs_k_mm_plan(max_in, max_tok, wbudget);
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
	cudaFree(m->sc);
	free(m);
}

extern "C" size_t
rs_k_mm_bytes(const struct rs_k_mm *m)
{
	return (m->bytes);
}

extern "C" enum rs_status
rs_k_mm_input(struct rs_k_mm *m, const float *d_x, int64_t ldx,
    int64_t n_in, int n_tok, cudaStream_t stream, struct rs_err *err)
{
	enum rs_status s;

	m->n_in = m->n_tok = 0;
	if (n_in < 8 || n_in % 8 != 0 || n_in > m->max_in || n_tok < 1 ||
	    n_tok > m->max_tok || ldx < n_in)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "mm input: %d x %lld (room for %lld x %lld)", n_tok,
		    (long long)n_in, (long long)m->max_tok,
		    (long long)m->max_in));
	if ((s = rs_k_mm_x16(d_x, ldx, n_in, n_tok, m->x16, &m->sc->amax,
	    &m->sc->alpha, stream, err)) != RS_OK)
		return (s);
	m->n_in = n_in;
	m->n_tok = n_tok;
	return (RS_OK);
}

/*
 * Rows of W per piece: within the budget, and the pieces of equal size
 * (rounded up to 64 rows), since a small last piece runs the tensor cores
 * at a fraction of their rate.
 */
static int64_t
mm_piece(const struct rs_k_mm *m, int64_t n_in, int64_t n_out)
{
	int64_t p = m->wbudget / n_in / 64 * 64;

	if (p >= n_out)
		return (n_out);
	int64_t pieces = (n_out + p - 1) / p;
	int64_t even = ((n_out + pieces - 1) / pieces + 63) / 64 * 64;
	return (even < p ? even : p);
}

extern "C" enum rs_status
rs_k_mm(struct rs_k_mm *m, const void *d_w, int type, int64_t n_in,
    int64_t n_out, int64_t row_bytes, float *d_y, int64_t ldy,
    int accumulate, cudaStream_t stream, struct rs_err *err)
{
	enum rs_status s;
	int bs;

	if (m->n_tok == 0 || n_in != m->n_in || n_out < 1 || ldy < n_out)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "mm: %lld x %lld weight on an input of %lld values",
		    (long long)n_out, (long long)n_in, (long long)m->n_in));
	if ((bs = m->blas.set_stream(m->h, stream)) != BLAS_OK)
		return (rs_errf(err, RS_ERR_CUDA, "cuBLAS: stream: status %d",
		    bs));
	const int64_t piece = mm_piece(m, n_in, n_out);
	for (int64_t r0 = 0; r0 < n_out; r0 += piece) {
		int64_t rows = n_out - r0 < piece ? n_out - r0 : piece;
		if ((s = rs_k_mm_w16(d_w, type, n_in, row_bytes, r0, rows,
		    m->w16, stream, err)) != RS_OK)
			return (s);
		bs = m->blas.gemm_ex(m->h, BLAS_OP_T, BLAS_OP_N, (int)rows,
		    (int)m->n_tok, (int)n_in, &m->sc->alpha, m->w16,
		    CUDA_R_16F, (int)n_in, m->x16, CUDA_R_16F, (int)n_in,
		    accumulate ? &m->sc->one : &m->sc->zero, d_y + r0,
		    CUDA_R_32F, (int)ldy, BLAS_COMPUTE_32F, BLAS_GEMM_DEFAULT);
		if (bs != BLAS_OK)
			return (rs_errf(err, RS_ERR_CUDA,
			    "cuBLAS: GemmEx %lld x %lld x %lld: status %d",
			    (long long)rows, (long long)m->n_tok,
			    (long long)n_in, bs));
	}
	return (RS_OK);
}
