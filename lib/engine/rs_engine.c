/*
 * rs_engine.c - the backend-neutral half of the engine: options, argument
 * checks (done before any state changes), splitting calls into chunks of
 * max_batch tokens, exact truncation by replay.  The math lives in the
 * backends (rs_cpu_forward.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rs_engine_impl.h"
#include "rs_pool.h"
#include "rs_scan.h"

#define DEFAULT_MAX_BATCH	64
#define MAX_MAX_BATCH		65536

static const char *const backend_names[] = {
	[RS_BACKEND_AUTO] = "auto",
	[RS_BACKEND_CPU] = "cpu",
	[RS_BACKEND_CUDA] = "cuda",
};

const char *
rs_backend_name(enum rs_backend b)
{
	if ((unsigned)b >= sizeof(backend_names) / sizeof(backend_names[0]))
		return ("unknown");
	return (backend_names[b]);
}

int
rs_backend_from_name(const char *name)
{
	for (size_t i = 0; i < sizeof(backend_names) / sizeof(backend_names[0]);
	    i++)
		if (strcasecmp(name, backend_names[i]) == 0)
			return ((int)i);
	return (-1);
}

#ifdef RS_CUDA
static const struct rs_backend_ops *
cuda_ops(void)
{
	return (&rs_cuda_backend);
}
#else
static const struct rs_backend_ops *
cuda_ops(void)
{
	return (NULL);
}
#endif

/* Does this build run on GPU DEV (−1: the current one)? */
static enum rs_status
check_gpu(int dev, struct rs_err *err)
{
#ifdef RS_CUDA
	return (rs_cuda_check_device(dev, err));
#else
	(void)dev;
	(void)err;
	return (RS_OK);
#endif
}

/* Why no GPU was found (the driver's word). */
static const char *
no_gpu_why(void)
{
#ifdef RS_CUDA
	return (rs_cuda_no_device_why());
#else
	return ("no CUDA in this build");
#endif
}

/* Resolve AUTO and check that the backend asked for exists here. */
static enum rs_status
pick_backend(enum rs_backend *b, struct rs_err *err)
{
	int gpus = 0;

#ifdef RS_CUDA
	gpus = rs_cuda_device_count();
#endif
	switch (*b) {
	case RS_BACKEND_AUTO:
		*b = gpus > 0 ? RS_BACKEND_CUDA : RS_BACKEND_CPU;
		return (RS_OK);
	case RS_BACKEND_CPU:
		return (RS_OK);
	case RS_BACKEND_CUDA:
		if (cuda_ops() == NULL)
			return (rs_errf(err, RS_ERR_UNSUPPORTED,
			    "backend 'cuda' is not available in this build"));
		if (gpus == 0)
			return (rs_errf(err, RS_ERR_UNSUPPORTED,
			    "backend 'cuda': no CUDA device (%s)",
			    no_gpu_why()));
		return (RS_OK);
	}
	return (rs_errf(err, RS_ERR_INVALID_ARG, "unknown backend %d",
	    (int)*b));
}

/*
 * E's split from O's devices (none: one slot on the current device), each
 * GPU checked against this build's code (with AUTO too: a GPU the build
 * cannot run is an error, not the CPU's pace without a word).
 */
static enum rs_status
make_split(struct rs_engine *e, const struct rs_engine_opts *o,
    struct rs_err *err)
{
	struct rs_state_opts so = { .n_ctx = o->split_ctx, .n_snap = 3,
	    .checkpoint = 1 };
	enum rs_status st;
	int	given = 0, gpus = 0;

	if (o->n_devices == 0) {
		rs_split_single(&e->split, e->model, -1);
		return (e->backend == RS_BACKEND_CUDA ? check_gpu(-1, err) :
		    RS_OK);
	}
#ifdef RS_CUDA
	gpus = rs_cuda_device_count();
#endif
	for (int j = 0; j < o->n_devices; j++) {
		if (o->devices[j] < 0 || o->devices[j] >= gpus)
			return (rs_errf(err, RS_ERR_INVALID_ARG, "--devices: "
			    "no CUDA device %d (this machine has %d)",
			    o->devices[j], gpus));
		if ((st = check_gpu(o->devices[j], err)) != RS_OK)
			return (st);
		given |= o->split[j] != 0;
	}
	return (rs_split_make(&e->split, e->model, o->devices, o->n_devices,
	    given ? o->split : NULL, sizeof(uint16_t), &so,
	    o->split_states > 0 ? o->split_states : 1, 0, NULL, err));
}

void
rs_engine_free(struct rs_engine *e)
{
	if (e == NULL)
		return;
	if (e->ops != NULL)
		e->ops->free(e);
	free(e->top_rows);
	free(e->top_skip);
	free(e);
}

enum rs_status
rs_engine_new(struct rs_engine **out, const struct rs_model *m,
    const struct rs_engine_opts *opts, struct rs_err *err)
{
	struct rs_engine_opts o = { 0 };
	struct rs_engine *e;
	enum rs_status	 st;

	if (opts != NULL)
		o = *opts;
	if (o.n_threads == 0)
		o.n_threads = rs_pool_ncpu();
	if (o.n_threads < 1 || o.n_threads > RS_POOL_MAX_THREADS)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "thread count %d outside [1, %d]", o.n_threads,
		    RS_POOL_MAX_THREADS));
	if (o.max_batch < 0 || o.max_batch > MAX_MAX_BATCH)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "max batch %d outside [1, %d]", o.max_batch,
		    MAX_MAX_BATCH));
	if (o.n_devices < 0 || o.n_devices > RS_SPLIT_MAX)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "%d devices outside "
		    "[0, %d]", o.n_devices, RS_SPLIT_MAX));
	if (o.n_devices > 0 && o.backend == RS_BACKEND_AUTO)
		o.backend = RS_BACKEND_CUDA;
	if (o.n_devices > 0 && o.backend == RS_BACKEND_CPU)
		return (rs_errf(err, RS_ERR_UNSUPPORTED, "--devices: the cpu "
		    "backend runs on the host, it takes no GPU list (use "
		    "--backend cuda)"));
	if ((st = pick_backend(&o.backend, err)) != RS_OK)
		return (st);
	if (o.max_batch == 0)
		o.max_batch = o.backend == RS_BACKEND_CUDA ?
		    RS_ENGINE_CUDA_CHUNK : DEFAULT_MAX_BATCH;
	if ((e = calloc(1, sizeof(*e))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	e->model = m;
	e->backend = o.backend;
	e->ops = o.backend == RS_BACKEND_CPU ? &rs_cpu_backend : cuda_ops();
	e->n_threads = o.n_threads;
	e->max_batch = o.max_batch;
	if ((st = make_split(e, &o, err)) != RS_OK ||
	    (st = e->ops->init(e, err)) != RS_OK) {
		rs_engine_free(e);
		return (st);
	}
	if ((e->ops->forward_top == NULL || e->ops->mtp_top == NULL) &&
	    (e->top_rows = malloc((size_t)
	    (o.max_batch < RS_ENGINE_EXACT_MAX ? o.max_batch :
	    RS_ENGINE_EXACT_MAX) * m->hp.n_vocab * sizeof(float))) == NULL) {
		rs_engine_free(e);
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	}
	*out = e;
	return (RS_OK);
}

enum rs_status
rs_engine_state_new(const struct rs_engine *e,
    const struct rs_state_opts *opts, struct rs_state **out,
    struct rs_err *err)
{
	return (rs_state_new_split(out, e->model, opts, e->ops->mem, &e->split,
	    err));
}

enum rs_status
rs_engine_probe_bandwidth(struct rs_engine *e, double *gb_s,
    struct rs_err *err)
{
	return (e->ops->probe(e, gb_s, err));
}

void
rs_engine_memory(const struct rs_engine *e, uint64_t *weights,
    uint64_t *scratch)
{
	e->ops->memory(e, weights, scratch);
}

uint64_t
rs_engine_cuda_scratch(const struct rs_model *m, int max_batch)
{
#ifdef RS_CUDA
	return (rs_cuda_scratch_plan(&m->hp, max_batch > 0 ? max_batch :
	    RS_ENGINE_CUDA_CHUNK));
#else
	(void)m;
	(void)max_batch;
	return (0);
#endif
}

void
rs_engine_state_plan(const struct rs_engine *e,
    const struct rs_state_opts *opts, struct rs_state_plan *out)
{
	rs_state_plan(e->model, opts, e->ops->mem->kv_elem, out);
}

enum rs_status
rs_engine_device_memory(const struct rs_engine *e, uint64_t *free_bytes,
    uint64_t *total_bytes, struct rs_err *err)
{
#ifdef RS_CUDA
	if (e->backend == RS_BACKEND_CUDA) {
		/* a split: summed over its distinct GPUs */
		uint64_t f = 0, t = 0, df, dt;
		enum rs_status st;
		for (int j = 0; j < e->split.n; j++) {
			int seen = 0;
			for (int i = 0; i < j; i++)
				seen |= e->split.dev[i] == e->split.dev[j];
			if (seen)
				continue;
			if ((st = rs_cuda_mem_info(e->split.dev[j], &df, &dt,
			    err)) != RS_OK)
				return (st);
			f += df;
			t += dt;
		}
		*free_bytes = f;
		*total_bytes = t;
		return (RS_OK);
	}
#else
	(void)free_bytes;
	(void)total_bytes;
#endif
	return (rs_errf(err, RS_ERR_UNSUPPORTED, "backend '%s' has no device "
	    "memory to report", rs_backend_name(e->backend)));
}

enum rs_status
rs_engine_slot_memory(const struct rs_engine *e, int j, uint64_t *free_bytes,
    uint64_t *total_bytes, struct rs_err *err)
{
	if (j < 0 || j >= e->split.n)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "device slot %d "
		    "outside [0, %d)", j, e->split.n));
#ifdef RS_CUDA
	if (e->backend == RS_BACKEND_CUDA)
		return (rs_cuda_mem_info(e->split.dev[j], free_bytes,
		    total_bytes, err));
#else
	(void)free_bytes;
	(void)total_bytes;
#endif
	return (rs_errf(err, RS_ERR_UNSUPPORTED, "backend '%s' has no device "
	    "memory to report", rs_backend_name(e->backend)));
}

const struct rs_split *
rs_engine_split(const struct rs_engine *e)
{
	return (&e->split);
}

const struct rs_model *
rs_engine_model(const struct rs_engine *e)
{
	return (e->model);
}

enum rs_backend
rs_engine_backend(const struct rs_engine *e)
{
	return (e->backend);
}

int
rs_engine_n_threads(const struct rs_engine *e)
{
	return (e->n_threads);
}

int
rs_engine_max_batch(const struct rs_engine *e)
{
	return (e->max_batch);
}

/* ---- argument checks ---- */

static enum rs_status
check_tokens(const struct rs_engine *e, const int32_t *tokens, int32_t n,
    struct rs_err *err)
{
	uint32_t vocab = e->model->hp.n_vocab;

	if (n < 1)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "no tokens to run (n = %d)", n));
	if (tokens == NULL)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "tokens is NULL"));
	for (int32_t i = 0; i < n; i++)
		if (tokens[i] < 0 || (uint32_t)tokens[i] >= vocab)
			return (rs_errf(err, RS_ERR_INVALID_ARG,
			    "token %d at index %d is outside the vocabulary "
			    "[0, %u)", tokens[i], i, vocab));
	return (RS_OK);
}

static enum rs_status
check_state(const struct rs_engine *e, const struct rs_state *st,
    int64_t pos, int32_t n, struct rs_err *err)
{
	if (st->model != e->model)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "state belongs to another model"));
	if (st->mem != e->ops->mem)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "state lives in %s memory, the %s backend needs %s "
		    "(make it with rs_engine_state_new)", st->mem->name,
		    e->ops->name, e->ops->mem->name));
	if (!rs_split_equal(&st->split, &e->split))
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "state was made for another layer split (make it with "
		    "rs_engine_state_new)"));
	if (pos + n > st->n_ctx)
		return (rs_errf(err, RS_ERR_LIMIT,
		    "%d tokens at position %lld exceed the context of %d",
		    n, (long long)pos, st->n_ctx));
	return (RS_OK);
}

/* ---- calls ---- */

/*
 * NaN or ±Inf in N rows of logits: weights holding NaN (a corrupt or badly
 * converted file), or an overflow.  Sampling from them would pick token 0
 * with null log-probabilities and look like an answer, so it is an error.
 */
static enum rs_status
nonfinite(float v, int64_t tok, int32_t pos, struct rs_err *err)
{
	return (rs_errf(err, RS_ERR_FORMAT, "non-finite logit (%s) for token "
	    "%lld at position %d: the model's weights or activations are not "
	    "finite (see rs-inspect --check)", isnan(v) ? "nan" : "inf",
	    (long long)tok, pos));
}

static enum rs_status
check_finite(const float *lg, int32_t rows, int64_t vocab, int32_t pos,
    struct rs_err *err)
{
	/* every decode step: a vectorised pass over the row (rs_scan.h) */
	const int64_t i = rs_scan_f32(lg, (int64_t)rows * vocab);

	return (i < 0 ? RS_OK : nonfinite(lg[i], i % vocab,
	    pos + (int32_t)(i / vocab), err));
}

enum rs_status
rs_engine_forward(struct rs_engine *e, struct rs_state *st,
    const int32_t *tokens, int32_t n, float *logits, enum rs_logits_mode mode,
    float *hidden, struct rs_err *err)
{
	const int64_t	 vocab = e->model->hp.n_vocab;
	const int64_t	 embd = e->model->hp.n_embd;
	enum rs_status	 s;
	int32_t		 snap_from;

	if ((s = check_tokens(e, tokens, n, err)) != RS_OK ||
	    (s = check_state(e, st, st->pos, n, err)) != RS_OK)
		return (s);
	if (mode != RS_LOGITS_NONE && mode != RS_LOGITS_LAST &&
	    mode != RS_LOGITS_ALL)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "bad logits mode %d",
		    (int)mode));
	if (mode != RS_LOGITS_NONE && logits == NULL)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "logits requested into a NULL buffer"));
	snap_from = rs_state_snap_begin(st, st->pos, st->pos + n);
	for (int32_t i = 0; i < n; i += e->max_batch) {
		int32_t	 c = n - i < e->max_batch ? n - i : e->max_batch;
		float	*lg = NULL;
		int32_t	 lfrom = 0;

		if (mode == RS_LOGITS_ALL)
			lg = logits + (int64_t)i * vocab;
		else if (mode == RS_LOGITS_LAST && i + c == n) {
			lg = logits;
			lfrom = c - 1;
		}
		if ((s = e->ops->forward(e, st, tokens + i, c, snap_from, lg,
		    lfrom, hidden != NULL ? hidden + (int64_t)i * embd : NULL,
		    err)) != RS_OK)
			return (s);
		if (lg != NULL && (s = check_finite(lg, mode == RS_LOGITS_ALL ?
		    c : 1, vocab, st->pos - c + (mode == RS_LOGITS_ALL ? 0 :
		    c - 1), err)) != RS_OK)
			return (s);
	}
	return (RS_OK);
}

/*
 * One chunk of rs_engine_forward_top: C tokens, rows LFROM .. C − 1 (the
 * first at position POS) into TOP.
 */
static enum rs_status
forward_top_chunk(struct rs_engine *e, struct rs_state *st,
    const int32_t *tokens, int32_t c, int32_t snap_from, int32_t lfrom,
    int32_t k, int skip, struct rs_top *top, float *hidden,
    struct rs_err *err)
{
	const int64_t	 vocab = e->model->hp.n_vocab;
	const int32_t	 pos = st->pos + lfrom;
	enum rs_status	 s;
	int64_t		 bad;
	float		 v;

	if (e->ops->forward_top != NULL) {
		if ((s = e->ops->forward_top(e, st, tokens, c, snap_from, lfrom,
		    k, skip, top, &bad, &v, hidden, err)) != RS_OK)
			return (s);
		return (bad < 0 ? RS_OK : nonfinite(v, bad % vocab,
		    pos + (int32_t)(bad / vocab), err));
	}
	if ((s = e->ops->forward(e, st, tokens, c, snap_from, e->top_rows,
	    lfrom, hidden, err)) != RS_OK)
		return (s);
	for (int32_t r = 0; r < c - lfrom; r++) {
		const float *row = e->top_rows + (int64_t)r * vocab;
		if ((bad = rs_top_select(row, vocab, k, skip ? e->top_skip :
		    NULL, top + (int64_t)r * k)) >= 0)
			return (nonfinite(row[bad], bad, pos + r, err));
	}
	return (RS_OK);
}

enum rs_status
rs_engine_set_top_skip(struct rs_engine *e, const unsigned char *mask,
    struct rs_err *err)
{
	const size_t	 v = e->model->hp.n_vocab;
	enum rs_status	 s;

	if (mask == NULL) {
		free(e->top_skip);
		e->top_skip = NULL;
		return (RS_OK);
	}
	if (e->top_skip == NULL && (e->top_skip = malloc(v)) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	memcpy(e->top_skip, mask, v);
	if (e->ops->set_top_skip != NULL &&
	    (s = e->ops->set_top_skip(e, mask, err)) != RS_OK) {
		free(e->top_skip);
		e->top_skip = NULL;
		return (s);
	}
	return (RS_OK);
}

enum rs_status
rs_engine_forward_top(struct rs_engine *e, struct rs_state *st,
    const int32_t *tokens, int32_t n, enum rs_logits_mode mode, int32_t k,
    int skip, struct rs_top *top, float *hidden, struct rs_err *err)
{
	const int64_t	 embd = e->model->hp.n_embd;
	const int32_t	 chunk = e->max_batch < RS_ENGINE_EXACT_MAX ?
	    e->max_batch : RS_ENGINE_EXACT_MAX;
	enum rs_status	 s;
	int32_t		 snap_from;

	if ((s = check_tokens(e, tokens, n, err)) != RS_OK ||
	    (s = check_state(e, st, st->pos, n, err)) != RS_OK)
		return (s);
	if (mode != RS_LOGITS_LAST && mode != RS_LOGITS_ALL)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "top-k with logits "
		    "mode %d: expected LAST or ALL", (int)mode));
	if (top == NULL || k < 1 || k > RS_TOP_MAX)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "top-k: %d candidates "
		    "into %s (expected 1 .. %d)", k, top == NULL ? "NULL" :
		    "a buffer", RS_TOP_MAX));
	if (mode == RS_LOGITS_ALL && n > RS_ENGINE_EXACT_MAX)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "top-k of every row of "
		    "%d tokens: at most %d", n, RS_ENGINE_EXACT_MAX));
	skip = skip && e->top_skip != NULL;
	snap_from = rs_state_snap_begin(st, st->pos, st->pos + n);
	/* ALL: chunks of at most CHUNK rows; LAST: max_batch chunks, the
	   last one's last row */
	for (int32_t i = 0; i < n;) {
		int32_t	 step = mode == RS_LOGITS_ALL ? chunk : e->max_batch;
		int32_t	 c = n - i < step ? n - i : step;
		float	*h = hidden != NULL ? hidden + (int64_t)i * embd : NULL;

		if (mode == RS_LOGITS_ALL)
			s = forward_top_chunk(e, st, tokens + i, c, snap_from,
			    0, k, skip, top + (int64_t)i * k, h, err);
		else if (i + c == n)
			s = forward_top_chunk(e, st, tokens + i, c, snap_from,
			    c - 1, k, skip, top, h, err);
		else
			s = e->ops->forward(e, st, tokens + i, c, snap_from,
			    NULL, 0, h, err);
		if (s != RS_OK)
			return (s);
		i += c;
	}
	return (RS_OK);
}

enum rs_status
rs_engine_sync(struct rs_engine *e, struct rs_err *err)
{
	return (e->ops->sync != NULL ? e->ops->sync(e, err) : RS_OK);
}

enum rs_status
rs_engine_mtp_batch(struct rs_engine *e, struct rs_state *st,
    const int32_t *tokens, int32_t n, int32_t pos, const float *h_in,
    float *logits, float *h_out, struct rs_err *err)
{
	const int64_t	 vocab = e->model->hp.n_vocab;
	const int64_t	 embd = e->model->hp.n_embd;
	enum rs_status	 s;

	if (e->model->hp.n_nextn == 0)
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "model has no MTP block"));
	if ((s = check_tokens(e, tokens, n, err)) != RS_OK ||
	    (s = check_state(e, st, pos, n, err)) != RS_OK)
		return (s);
	if (pos < 0 || pos > st->mtp_pos)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "MTP position %d outside [0, %d]: the MTP cache would "
		    "have a gap", pos, st->mtp_pos));
	if (h_in == NULL)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "MTP input hidden state is NULL"));
	for (int32_t i = 0; i < n; i += e->max_batch) {
		int32_t c = n - i < e->max_batch ? n - i : e->max_batch;

		if ((s = e->ops->mtp(e, st, tokens + i, c, pos + i,
		    h_in + (int64_t)i * embd,
		    logits != NULL ? logits + (int64_t)i * vocab : NULL,
		    h_out != NULL ? h_out + (int64_t)i * embd : NULL,
		    err)) != RS_OK)
			return (s);
		if (logits != NULL && (s = check_finite(logits +
		    (int64_t)i * vocab, c, vocab, pos + i, err)) != RS_OK)
			return (s);
	}
	return (RS_OK);
}

enum rs_status
rs_engine_mtp(struct rs_engine *e, struct rs_state *st, int32_t token,
    int32_t pos, const float *h_in, float *logits, float *h_out,
    struct rs_err *err)
{
	return (rs_engine_mtp_batch(e, st, &token, 1, pos, h_in, logits, h_out,
	    err));
}

enum rs_status
rs_engine_mtp_top(struct rs_engine *e, struct rs_state *st, int32_t token,
    int32_t pos, const float *h_in, int32_t k, struct rs_top *top,
    float *h_out, struct rs_err *err)
{
	const int64_t	 vocab = e->model->hp.n_vocab;
	enum rs_status	 s;
	int64_t		 bad;
	float		 v;

	if (e->model->hp.n_nextn == 0)
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "model has no MTP block"));
	if ((s = check_tokens(e, &token, 1, err)) != RS_OK ||
	    (s = check_state(e, st, pos, 1, err)) != RS_OK)
		return (s);
	if (pos < 0 || pos > st->mtp_pos)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "MTP position %d outside [0, %d]: the MTP cache would "
		    "have a gap", pos, st->mtp_pos));
	if (h_in == NULL)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "MTP input hidden state is NULL"));
	if (top == NULL || k < 1 || k > RS_TOP_MAX)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "top-k: %d candidates "
		    "into %s (expected 1 .. %d)", k, top == NULL ? "NULL" :
		    "a buffer", RS_TOP_MAX));
	if (e->ops->mtp_top != NULL) {
		if ((s = e->ops->mtp_top(e, st, &token, 1, pos, h_in, k, top,
		    &bad, &v, h_out, err)) != RS_OK)
			return (s);
		return (bad < 0 ? RS_OK : nonfinite(v, bad % vocab, pos, err));
	}
	if ((s = e->ops->mtp(e, st, &token, 1, pos, h_in, e->top_rows, h_out,
	    err)) != RS_OK)
		return (s);
	if ((bad = rs_top_select(e->top_rows, vocab, k, NULL, top)) >= 0)
		return (nonfinite(e->top_rows[bad], bad, pos, err));
	return (RS_OK);
}

enum rs_status
rs_engine_truncate(struct rs_engine *e, struct rs_state *st, int32_t pos,
    struct rs_err *err)
{
	enum rs_status	s;
	int32_t		from, mtp;

	if (pos < 0 || pos > st->pos)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "cannot truncate to position %d: the sequence has %d",
		    pos, st->pos));
	if (rs_state_truncate(st, pos, NULL) == RS_OK)
		return (RS_OK);
	/* MTP entries below POS stay valid: they do not depend on the GDN
	 * state, only on the hidden rows they were computed from */
	mtp = st->mtp_pos < pos ? st->mtp_pos : pos;
	if (st->ck_pos >= 0 && st->ck_pos <= pos) {
		if ((s = rs_state_rollback(st, err)) != RS_OK)
			return (s);
	} else
		rs_state_truncate(st, 0, NULL);
	st->mtp_pos = mtp;
	from = st->pos;
	/* the history below pos is intact: replay reads it in place */
	if (pos > from)
		return (rs_engine_forward(e, st, st->tokens + from, pos - from,
		    NULL, RS_LOGITS_NONE, NULL, err));
	return (RS_OK);
}
