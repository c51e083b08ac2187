/*
 * rs_state.c - allocation, reset, truncation, snapshots and the checkpoint
 * of a sequence state (see rs_state.h for the costs).
 *
 * Sizes per model (floats):
 *   KV       n_attn · n_ctx · n_head_kv · (head_dim + head_dim_v)
 *   conv     n_gdn · (2·n_kh·d_state + d_inner) · (K − 1)
 *   ssm      n_gdn · n_vh · d_state²
 * Every buffer is allocated once here, through the state's memory
 * (rs_state_impl.h): calloc on the host (so untouched KV pages of a long
 * context are never faulted in), cudaMalloc for the CUDA backend.
 */
#include <stdlib.h>
#include <string.h>

#include "rs_cpu.h"
#include "rs_state_impl.h"

#define MAX_CTX		RS_CTX_MAX

static void *
host_alloc(size_t bytes)
{
	return (calloc(1, bytes));
}

static void
host_copy(void *dst, const void *src, size_t bytes)
{
	memcpy(dst, src, bytes);
}

static void
host_zero(void *p, size_t bytes)
{
	memset(p, 0, bytes);
}

/*
 * The CPU forward pass's records (rs_cpu_forward.c): k of every key head
 * (L2-normalised), v of every value head, β, then g (the log decay, as
 * rs_cpu_deltanet takes it).  Each token runs rs_cpu_deltanet itself, k
 * standing in for q: the state's update does not read q, and the output
 * is dropped.
 */
static enum rs_status
host_gdn_replay(struct rs_state *st, struct rs_state_part *q, int32_t base,
    int32_t last, struct rs_err *err)
{
	const struct rs_hparams *hp = &st->model->hp;
	const int	 ds = (int)hp->ssm_d_state;
	const int64_t	 nkh = hp->ssm_n_kh, nvh = hp->ssm_n_vh;
	float		 o[256];

	if (ds > (int)(sizeof(o) / sizeof(o[0])))
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "replay: d_state %d", ds));
	for (int32_t slot = q->gdn0; slot < q->gdn0 + q->n_gdn; slot++) {
		float *S = rs_state_ssm(st, slot);
		if (base >= 0)
			memcpy(S, rs_state_snap_ssm(st, base, slot),
			    (size_t)st->ssm_len * sizeof(float));
		else
			memset(S, 0, (size_t)st->ssm_len * sizeof(float));
		for (int32_t p = base + 1; p <= last; p++) {
			const float *r = rs_state_snap_rec(st, p, slot);
			const float *v = r + nkh * ds, *b = v + nvh * ds;
			for (int64_t vh = 0; vh < nvh; vh++) {
				const float *k = r + (vh % nkh) * ds;
				rs_cpu_deltanet(S + vh * ds * ds, k, k,
				    v + vh * ds, b[nvh + vh], b[vh], ds, ds,
				    1.0f, o);
			}
		}
	}
	return (RS_OK);
}

const struct rs_state_mem rs_state_host_mem = {
	.name = "host",
	.alloc = host_alloc,
	.free = free,
	.copy = host_copy,
	.zero = host_zero,
	.kv_elem = sizeof(float),
	.to_host = host_copy,
	.from_host = host_copy,
	.gdn_replay = host_gdn_replay,
};

/* N elements of ELEM bytes from ST's memory; NULL for none. */
static void *
alloc_elems(struct rs_state *st, int64_t n, size_t elem, int *fail)
{
	void	*p;

	if (n == 0 || *fail)
		return (NULL);
	if ((p = st->mem->alloc((size_t)n * elem)) == NULL)
		*fail = 1;
	return (p);
}

static void *
alloc_floats(struct rs_state *st, int64_t n, int *fail)
{
	return (alloc_elems(st, n, sizeof(float), fail));
}

void
rs_state_free(struct rs_state *st)
{
	if (st == NULL)
		return;
	free(st->tokens);
	free(st->slot);
	free(st->snap_full);
	free(st->snap_rec);
	free(st->snap_rbase);
	for (int j = 0; st->mem != NULL && j < st->n_part; j++) {
		struct rs_state_part *q = &st->part[j];
		void *bufs[] = { q->k, q->v, q->conv, q->ssm, q->snap_conv,
		    q->snap_ssm, q->snap_rec, q->ck_conv, q->ck_ssm,
		    j == st->n_part - 1 ? st->mtp_k : NULL,
		    j == st->n_part - 1 ? st->mtp_v : NULL };
		rs_state_on(st, q);
		for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
			if (bufs[i] != NULL)
				st->mem->free(bufs[i]);
	}
	free(st);
}

/* Count blocks of each kind and number them. */
static int
number_layers(struct rs_state *st, const struct rs_model *m)
{
	if ((st->slot = calloc(m->hp.n_layer_all, sizeof(*st->slot))) == NULL)
		return (-1);
	for (uint32_t il = 0; il < m->hp.n_layer_all; il++) {
		switch (m->layers[il].kind) {
		case RS_LAYER_GDN:
			st->slot[il] = st->n_gdn++;
			break;
		case RS_LAYER_ATTN:
			st->slot[il] = st->n_attn++;
			break;
		case RS_LAYER_MTP:
			st->slot[il] = -1;
			break;
		}
	}
	return (0);
}

enum rs_status
rs_state_new(struct rs_state **out, const struct rs_model *m,
    const struct rs_state_opts *opts, struct rs_err *err)
{
	return (rs_state_new_in(out, m, opts, &rs_state_host_mem, err));
}

/* The last state serial handed out (struct rs_state's serial). */
static uint64_t state_serial;

enum rs_status
rs_state_new_in(struct rs_state **out, const struct rs_model *m,
    const struct rs_state_opts *opts, const struct rs_state_mem *mem,
    struct rs_err *err)
{
	return (rs_state_new_split(out, m, opts, mem, NULL, err));
}

/* Slot ranges of each part of ST's split. */
static void
number_parts(struct rs_state *st, const struct rs_model *m)
{
	int32_t	gdn = 0, attn = 0;

	st->n_part = st->split.n;
	for (int j = 0; j < st->n_part; j++) {
		struct rs_state_part *q = &st->part[j];
		q->dev = st->split.dev[j];
		q->gdn0 = gdn;
		q->attn0 = attn;
		for (uint32_t il = st->split.first[j];
		    il < st->split.first[j + 1]; il++) {
			if (m->layers[il].kind == RS_LAYER_GDN)
				gdn++;
			else if (m->layers[il].kind == RS_LAYER_ATTN)
				attn++;
		}
		q->n_gdn = gdn - q->gdn0;
		q->n_attn = attn - q->attn0;
	}
}

/* Part Q's buffers (the state's sizes already set). */
static void
alloc_part(struct rs_state *st, struct rs_state_part *q, int64_t ctx,
    int32_t n_snap, int ck, int *fail)
{
	const size_t ke = st->mem->kv_elem;

	rs_state_on(st, q);
	q->k = alloc_elems(st, q->n_attn * ctx * st->kv_row, ke, fail);
	q->v = alloc_elems(st, q->n_attn * ctx * st->kv_row_v, ke, fail);
	q->conv = alloc_floats(st, q->n_gdn * st->conv_len, fail);
	q->ssm = alloc_floats(st, q->n_gdn * st->ssm_len, fail);
	q->snap_conv = alloc_floats(st, (int64_t)n_snap * q->n_gdn *
	    st->conv_len, fail);
	q->snap_ssm = alloc_floats(st, (int64_t)n_snap * q->n_gdn *
	    st->ssm_len, fail);
	q->snap_rec = alloc_floats(st, (int64_t)n_snap * q->n_gdn *
	    st->rec_len, fail);
	if (ck) {
		q->ck_conv = alloc_floats(st, q->n_gdn * st->conv_len, fail);
		q->ck_ssm = alloc_floats(st, q->n_gdn * st->ssm_len, fail);
	}
}

enum rs_status
rs_state_new_split(struct rs_state **out, const struct rs_model *m,
    const struct rs_state_opts *opts, const struct rs_state_mem *mem,
    const struct rs_split *sp, struct rs_err *err)
{
	const struct rs_hparams *hp = &m->hp;
	struct rs_state_opts o = { 0 };
	struct rs_state	*st;
	int64_t	 ctx, channels;
	int	 fail = 0;

	if (opts != NULL)
		o = *opts;
	ctx = o.n_ctx == 0 ? (int64_t)hp->n_ctx_train : o.n_ctx;
	if (ctx < 1 || ctx > MAX_CTX)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "context size %lld outside [1, %d]", (long long)ctx,
		    MAX_CTX));
	if (o.n_snap < 0 || o.n_snap > 4096)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "snapshot count %d outside [0, 4096]", o.n_snap));
	if (sp != NULL && (sp->n < 1 || sp->n > RS_SPLIT_MAX ||
	    sp->first[sp->n] != hp->n_layer))
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "a split of %d slots that does not cover the model's %u "
		    "blocks", sp->n, hp->n_layer));
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	st->model = m;
	if (sp != NULL)
		st->split = *sp;
	else
		rs_split_single(&st->split, m, -1);
	st->mem = mem;
	st->serial = __atomic_add_fetch(&state_serial, 1, __ATOMIC_RELAXED);
	st->n_ctx = (int32_t)ctx;
	st->n_snap = o.n_snap;
	st->snap_base = -1;
	st->rec_len = rs_state_rec_len(hp);
	st->ck_pos = -1;
	channels = 2 * (int64_t)hp->ssm_n_kh * hp->ssm_d_state +
	    hp->ssm_d_inner;
	st->conv_len = channels * (hp->ssm_conv_kernel - 1);
	st->ssm_len = (int64_t)hp->ssm_n_vh * hp->ssm_d_state *
	    hp->ssm_d_state;
	st->kv_row = (int64_t)hp->n_head_kv * hp->head_dim;
	st->kv_row_v = (int64_t)hp->n_head_kv * hp->head_dim_v;
	st->ck_room = o.checkpoint != 0;
	if (number_layers(st, m) != 0 ||
	    (st->tokens = calloc((size_t)ctx, sizeof(int32_t))) == NULL)
		fail = 1;
	if (o.n_snap > 0 && ((st->snap_full = malloc((size_t)o.n_snap *
	    sizeof(int32_t))) == NULL || (st->snap_rec = malloc(
	    (size_t)o.n_snap * sizeof(int32_t))) == NULL ||
	    (st->snap_rbase = malloc((size_t)o.n_snap *
	    sizeof(int32_t))) == NULL))
		fail = 1;
	number_parts(st, m);
	for (int j = 0; j < st->n_part; j++)
		alloc_part(st, &st->part[j], ctx, o.n_snap, o.checkpoint,
		    &fail);
	if (hp->n_nextn > 0) {
		/* the MTP block runs on the last slot */
		rs_state_on(st, &st->part[st->n_part - 1]);
		st->mtp_k = alloc_elems(st, ctx * st->kv_row, mem->kv_elem,
		    &fail);
		st->mtp_v = alloc_elems(st, ctx * st->kv_row_v, mem->kv_elem,
		    &fail);
	}
	st->k = st->part[0].k;
	st->v = st->part[0].v;
	st->conv = st->part[0].conv;
	st->ssm = st->part[0].ssm;
	st->snap_conv = st->part[0].snap_conv;
	st->snap_ssm = st->part[0].snap_ssm;
	st->ck_conv = st->part[0].ck_conv;
	st->ck_ssm = st->part[0].ck_ssm;
	if (fail) {
		rs_state_free(st);
		return (rs_errf(err, RS_ERR_NOMEM,
		    "out of %s memory for a state of %lld positions",
		    mem->name, (long long)ctx));
	}
	rs_state_snap_drop(st);
	*out = st;
	return (RS_OK);
}

static void
zero_gdn(struct rs_state *st)
{
	for (int j = 0; j < st->n_part; j++) {
		struct rs_state_part *q = &st->part[j];
		if (q->n_gdn == 0)
			continue;
		rs_state_on(st, q);
		st->mem->zero(q->conv, (size_t)(q->n_gdn * st->conv_len) *
		    sizeof(float));
		st->mem->zero(q->ssm, (size_t)(q->n_gdn * st->ssm_len) *
		    sizeof(float));
	}
}

/*
 * Copy the GDN state of every part: FROM_CK the checkpoint into the live
 * state, else the live state into the checkpoint.
 */
static void
copy_ck(struct rs_state *st, int from_ck)
{
	for (int j = 0; j < st->n_part; j++) {
		struct rs_state_part *q = &st->part[j];
		size_t cb = (size_t)(q->n_gdn * st->conv_len) * sizeof(float);
		size_t sb = (size_t)(q->n_gdn * st->ssm_len) * sizeof(float);
		if (q->n_gdn == 0)
			continue;
		rs_state_on(st, q);
		if (from_ck) {
			st->mem->copy(q->conv, q->ck_conv, cb);
			st->mem->copy(q->ssm, q->ck_ssm, sb);
		} else {
			st->mem->copy(q->ck_conv, q->conv, cb);
			st->mem->copy(q->ck_ssm, q->ssm, sb);
		}
	}
}

void
rs_state_reset(struct rs_state *st)
{
	zero_gdn(st);
	st->pos = 0;
	st->mtp_pos = 0;
	rs_state_snap_drop(st);
	st->ck_pos = -1;
}

int32_t
rs_state_pos(const struct rs_state *st)
{
	return (st->pos);
}

int32_t
rs_state_mtp_pos(const struct rs_state *st)
{
	return (st->mtp_pos);
}

int32_t
rs_state_n_ctx(const struct rs_state *st)
{
	return (st->n_ctx);
}

int32_t
rs_state_n_snap(const struct rs_state *st)
{
	return (st->n_snap);
}

const struct rs_model *
rs_state_model(const struct rs_state *st)
{
	return (st->model);
}

int32_t
rs_state_token(const struct rs_state *st, int32_t p)
{
	return (p >= 0 && p < st->pos ? st->tokens[p] : -1);
}

size_t
rs_state_gdn_bytes(const struct rs_state *st)
{
	return ((size_t)(st->n_gdn * (st->conv_len + st->ssm_len)) *
	    sizeof(float));
}

int64_t
rs_state_rec_len(const struct rs_hparams *hp)
{
	return (((int64_t)hp->ssm_n_kh + hp->ssm_n_vh) * hp->ssm_d_state +
	    2 * (int64_t)hp->ssm_n_vh);
}

void
rs_state_snap_drop(struct rs_state *st)
{
	st->snap_lo = st->pos;
	st->snap_base = -1;
	for (int32_t i = 0; i < st->n_snap; i++)
		st->snap_full[i] = st->snap_rec[i] = st->snap_rbase[i] = -1;
}

/* Forget what the ring holds for positions FROM on (a branch undone). */
static void
snap_forget(struct rs_state *st, int32_t from)
{
	for (int32_t i = 0; i < st->n_snap; i++) {
		if (st->snap_full[i] >= from)
			st->snap_full[i] = -1;
		if (st->snap_rec[i] >= from)
			st->snap_rec[i] = -1;
	}
}

int32_t
rs_state_snap_begin(struct rs_state *st, int32_t p0, int32_t end)
{
	const int32_t n = st->n_snap;
	int32_t from, f;

	st->snap_base = -1;
	if (n == 0) {
		st->snap_lo = end;
		return (INT32_MAX);
	}
	from = end - n;
	if (st->snap_lo < from)
		st->snap_lo = from;
	/* positions f .. end − 1 get records replayed on the state after
	   f − 1, which this pass writes in full (unless it is the zero state
	   before position 0) */
	f = from > p0 ? from : p0;
	for (int32_t p = f; p < end; p++) {
		st->snap_rec[p % n] = p;
		st->snap_rbase[p % n] = f - 1;
	}
	if (f > 0) {
		st->snap_base = f - 1;
		st->snap_full[(f - 1) % n] = f - 1;
	}
	return (from);
}

void
rs_state_plan(const struct rs_model *m, const struct rs_state_opts *opts,
    size_t kv_elem, struct rs_state_plan *out)
{
	const struct rs_hparams *hp = &m->hp;
	uint64_t ctx = opts != NULL && opts->n_ctx > 0 ? (uint64_t)opts->n_ctx :
	    hp->n_ctx_train;
	uint64_t n_attn = 0, n_gdn = 0;
	uint64_t row = (uint64_t)hp->n_head_kv * (hp->head_dim + hp->head_dim_v);
	uint64_t ch = 2 * (uint64_t)hp->ssm_n_kh * hp->ssm_d_state +
	    hp->ssm_d_inner;

	for (uint32_t il = 0; il < hp->n_layer_all; il++) {
		if (m->layers[il].kind == RS_LAYER_GDN)
			n_gdn++;
		else if (m->layers[il].kind == RS_LAYER_ATTN)
			n_attn++;
	}
	memset(out, 0, sizeof(*out));
	out->kv = n_attn * ctx * row * kv_elem;
	out->mtp_kv = hp->n_nextn > 0 ? ctx * row * kv_elem : 0;
	out->gdn = n_gdn * (ch * (hp->ssm_conv_kernel - 1) +
	    (uint64_t)hp->ssm_n_vh * hp->ssm_d_state * hp->ssm_d_state) *
	    sizeof(float);
	out->snapshots = opts != NULL ? (uint64_t)opts->n_snap * (out->gdn +
	    n_gdn * (uint64_t)rs_state_rec_len(hp) * sizeof(float)) : 0;
	out->checkpoint = opts != NULL && opts->checkpoint ? out->gdn : 0;
	out->tokens = ctx * sizeof(int32_t);
	out->total = out->kv + out->mtp_kv + out->gdn + out->snapshots +
	    out->checkpoint;
}

uint64_t
rs_state_bytes(const struct rs_state *st)
{
	struct rs_state_opts o = { .n_ctx = st->n_ctx, .n_snap = st->n_snap,
	    .checkpoint = st->ck_room };
	struct rs_state_plan p;

	rs_state_plan(st->model, &o, st->mem->kv_elem, &p);
	return (p.total);
}

/* What the ring restores the state after position T from. */
enum snap_way { SNAP_NONE, SNAP_FULL, SNAP_REPLAY };

static enum snap_way
snap_way(const struct rs_state *st, int32_t t)
{
	const int32_t n = st->n_snap;
	int32_t b;

	if (n == 0 || t < st->snap_lo || t >= st->pos)
		return (SNAP_NONE);
	if (st->snap_full[t % n] == t)
		return (SNAP_FULL);
	if (st->snap_rec[t % n] != t)
		return (SNAP_NONE);
	/* the base, then every record after it (a later base in the base's
	   slot also takes the next record's: the chain breaks there too) */
	b = st->snap_rbase[t % n];
	if (b >= 0 && st->snap_full[b % n] != b)
		return (SNAP_NONE);
	for (int32_t p = b + 1; p < t; p++)
		if (st->snap_rec[p % n] != p)
			return (SNAP_NONE);
	return (SNAP_REPLAY);
}

int32_t
rs_state_snap_floor(const struct rs_state *st)
{
	int32_t p = st->pos;

	/* truncating to P − 1 needs the state after P − 2, or a reset */
	while (p > 0 && (p == 1 || snap_way(st, p - 2) != SNAP_NONE))
		p--;
	return (p);
}

/*
 * The GDN state after position T back into the live state, part by part:
 * the conv state from its slot, the recurrent state from its full copy or
 * replayed by the backend.
 */
static enum rs_status
restore_snapshot(struct rs_state *st, int32_t t, enum snap_way way,
    struct rs_err *err)
{
	const int64_t at = t % st->n_snap;
	enum rs_status s;

	for (int j = 0; j < st->n_part; j++) {
		struct rs_state_part *q = &st->part[j];
		if (q->n_gdn == 0)
			continue;
		rs_state_on(st, q);
		st->mem->copy(q->conv, q->snap_conv + at * q->n_gdn *
		    st->conv_len, (size_t)(q->n_gdn * st->conv_len) *
		    sizeof(float));
		if (way == SNAP_FULL)
			st->mem->copy(q->ssm, q->snap_ssm + at * q->n_gdn *
			    st->ssm_len, (size_t)(q->n_gdn * st->ssm_len) *
			    sizeof(float));
		else if ((s = st->mem->gdn_replay(st, q,
		    st->snap_rbase[at], t, err)) != RS_OK)
			return (s);
	}
	return (RS_OK);
}

static void
restore_checkpoint(struct rs_state *st)
{
	copy_ck(st, 1);
}

/* The trunk is at POS now; cut the MTP cache and drop a stale checkpoint. */
static void
set_pos(struct rs_state *st, int32_t pos)
{
	st->pos = pos;
	if (st->mtp_pos > pos)
		st->mtp_pos = pos;
	if (st->ck_pos > pos)
		st->ck_pos = -1;
	snap_forget(st, pos);
}

enum rs_status
rs_state_truncate(struct rs_state *st, int32_t pos, struct rs_err *err)
{
	enum snap_way way;
	enum rs_status s;

	if (pos < 0 || pos > st->pos)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "cannot truncate to position %d: the sequence has %d",
		    pos, st->pos));
	if (pos == st->pos) {
		/* nothing to undo */
	} else if (pos == 0) {
		zero_gdn(st);
		st->snap_lo = 0;
	} else if ((way = snap_way(st, pos - 1)) != SNAP_NONE) {
		if ((s = restore_snapshot(st, pos - 1, way, err)) != RS_OK)
			return (s);
	} else if (st->ck_pos == pos && st->ck_room)
		restore_checkpoint(st);
	else if (rs_state_snap_floor(st) < st->pos)
		return (rs_errf(err, RS_ERR_LIMIT,
		    "cannot truncate to position %d: recurrent-state snapshots "
		    "cover positions %d..%d only", pos,
		    rs_state_snap_floor(st), st->pos));
	else
		return (rs_errf(err, RS_ERR_LIMIT,
		    "cannot truncate to position %d: no recurrent-state "
		    "snapshot (state made with n_snap %d)", pos, st->n_snap));
	set_pos(st, pos);
	return (RS_OK);
}

enum rs_status
rs_state_checkpoint(struct rs_state *st, struct rs_err *err)
{
	if (!st->ck_room && st->n_gdn > 0)
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "state was created without room for a checkpoint"));
	copy_ck(st, 0);
	st->ck_pos = st->pos;
	return (RS_OK);
}

enum rs_status
rs_state_rollback(struct rs_state *st, struct rs_err *err)
{
	if (st->ck_pos < 0)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "no checkpoint to roll back to"));
	if (st->n_gdn > 0)
		restore_checkpoint(st);
	st->pos = st->ck_pos;
	if (st->mtp_pos > st->pos)
		st->mtp_pos = st->pos;
	snap_forget(st, st->pos);
	return (RS_OK);
}

int32_t
rs_state_checkpoint_pos(const struct rs_state *st)
{
	return (st->ck_pos);
}

enum rs_status
rs_state_copy(struct rs_state *dst, const struct rs_state *src,
    struct rs_err *err)
{
	int64_t	n = src->pos > src->mtp_pos ? src->pos : src->mtp_pos;

	const size_t ke = src->mem->kv_elem;

	if (dst->model != src->model)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "cannot copy a state between models"));
	if (dst->mem != src->mem)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "cannot copy a state from %s to %s memory", src->mem->name,
		    dst->mem->name));
	if (n > dst->n_ctx)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "state of %lld positions does not fit a context of %d",
		    (long long)n, dst->n_ctx));
	if (!rs_split_equal(&dst->split, &src->split))
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "cannot copy a state between two layer splits"));
	for (int32_t l = 0; l < src->n_attn; l++) {
		struct rs_state *s = (struct rs_state *)src;
		rs_state_on(src, rs_state_attn_part(s, l));
		src->mem->copy(rs_state_kv_k(dst, l), rs_state_kv_k(s, l),
		    (size_t)(src->pos * src->kv_row) * ke);
		src->mem->copy(rs_state_kv_v(dst, l), rs_state_kv_v(s, l),
		    (size_t)(src->pos * src->kv_row_v) * ke);
	}
	if (src->mtp_k != NULL && src->mtp_pos > 0) {
		rs_state_on(src, &src->part[src->n_part - 1]);
		src->mem->copy(dst->mtp_k, src->mtp_k, (size_t)(src->mtp_pos *
		    src->kv_row) * ke);
		src->mem->copy(dst->mtp_v, src->mtp_v, (size_t)(src->mtp_pos *
		    src->kv_row_v) * ke);
	}
	for (int j = 0; j < src->n_part; j++) {
		const struct rs_state_part *q = &src->part[j];
		if (q->n_gdn == 0)
			continue;
		rs_state_on(src, q);
		src->mem->copy(dst->part[j].conv, q->conv, (size_t)(q->n_gdn *
		    src->conv_len) * sizeof(float));
		src->mem->copy(dst->part[j].ssm, q->ssm, (size_t)(q->n_gdn *
		    src->ssm_len) * sizeof(float));
	}
	memcpy(dst->tokens, src->tokens, (size_t)src->pos * sizeof(int32_t));
	dst->pos = src->pos;
	dst->mtp_pos = src->mtp_pos;
	rs_state_snap_drop(dst);
	dst->ck_pos = -1;
	return (RS_OK);
}
