/*
 * rs_state.c - allocation, reset, truncation, snapshots and the checkpoint
 * of a sequence state (see rs_state.h for the costs).
 *
 * Sizes per model (floats):
 *   KV       n_attn · n_ctx · n_head_kv · (head_dim + head_dim_v)
 *   conv     n_gdn · (2·n_kh·d_state + d_inner) · (K − 1)
 *   ssm      n_gdn · n_vh · d_state²
 * Every buffer is allocated once here with calloc (so untouched KV pages
 * of a long context are never faulted in).
 */
#include <stdlib.h>
#include <string.h>

#include "rs_state_impl.h"

#define MAX_CTX		(1 << 24)

static void *
alloc_floats(int64_t n, int *fail)
{
	void	*p;

	if (n == 0 || *fail)
		return (NULL);
	if ((p = calloc((size_t)n, sizeof(float))) == NULL)
		*fail = 1;
	return (p);
}

void
rs_state_free(struct rs_state *st)
{
	if (st == NULL)
		return;
	free(st->tokens);
	free(st->slot);
	free(st->k);
	free(st->v);
	free(st->mtp_k);
	free(st->mtp_v);
	free(st->conv);
	free(st->ssm);
	free(st->snap_conv);
	free(st->snap_ssm);
	free(st->ck_conv);
	free(st->ck_ssm);
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
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	st->model = m;
	st->n_ctx = (int32_t)ctx;
	st->n_snap = o.n_snap;
	st->ck_pos = -1;
	channels = 2 * (int64_t)hp->ssm_n_kh * hp->ssm_d_state +
	    hp->ssm_d_inner;
	st->conv_len = channels * (hp->ssm_conv_kernel - 1);
	st->ssm_len = (int64_t)hp->ssm_n_vh * hp->ssm_d_state *
	    hp->ssm_d_state;
	st->kv_row = (int64_t)hp->n_head_kv * hp->head_dim;
	st->kv_row_v = (int64_t)hp->n_head_kv * hp->head_dim_v;
	if (number_layers(st, m) != 0 ||
	    (st->tokens = calloc((size_t)ctx, sizeof(int32_t))) == NULL)
		fail = 1;
	st->k = alloc_floats(st->n_attn * ctx * st->kv_row, &fail);
	st->v = alloc_floats(st->n_attn * ctx * st->kv_row_v, &fail);
	if (hp->n_nextn > 0) {
		st->mtp_k = alloc_floats(ctx * st->kv_row, &fail);
		st->mtp_v = alloc_floats(ctx * st->kv_row_v, &fail);
	}
	st->conv = alloc_floats(st->n_gdn * st->conv_len, &fail);
	st->ssm = alloc_floats(st->n_gdn * st->ssm_len, &fail);
	st->snap_conv = alloc_floats((int64_t)o.n_snap * st->n_gdn *
	    st->conv_len, &fail);
	st->snap_ssm = alloc_floats((int64_t)o.n_snap * st->n_gdn *
	    st->ssm_len, &fail);
	if (o.checkpoint) {
		st->ck_conv = alloc_floats(st->n_gdn * st->conv_len, &fail);
		st->ck_ssm = alloc_floats(st->n_gdn * st->ssm_len, &fail);
	}
	if (fail) {
		rs_state_free(st);
		return (rs_errf(err, RS_ERR_NOMEM,
		    "out of memory for a state of %lld positions",
		    (long long)ctx));
	}
	*out = st;
	return (RS_OK);
}

static void
zero_gdn(struct rs_state *st)
{
	memset(st->conv, 0, (size_t)(st->n_gdn * st->conv_len) *
	    sizeof(float));
	memset(st->ssm, 0, (size_t)(st->n_gdn * st->ssm_len) * sizeof(float));
}

void
rs_state_reset(struct rs_state *st)
{
	zero_gdn(st);
	st->pos = 0;
	st->mtp_pos = 0;
	st->snap_lo = 0;
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

int32_t
rs_state_snap_begin(struct rs_state *st, int32_t end)
{
	int32_t from;

	if (st->n_snap == 0) {
		st->snap_lo = end;
		return (INT32_MAX);
	}
	from = end - st->n_snap;
	if (st->snap_lo < from)
		st->snap_lo = from;
	return (from);
}

int32_t
rs_state_snap_floor(const struct rs_state *st)
{
	return (st->snap_lo < st->pos ? st->snap_lo : st->pos);
}

/* Copy the GDN state saved for position P - 1 back into the live state. */
static void
restore_snapshot(struct rs_state *st, int32_t p)
{
	for (int32_t s = 0; s < st->n_gdn; s++) {
		memcpy(rs_state_conv(st, s), rs_state_snap_conv(st, p - 1, s),
		    (size_t)st->conv_len * sizeof(float));
		memcpy(rs_state_ssm(st, s), rs_state_snap_ssm(st, p - 1, s),
		    (size_t)st->ssm_len * sizeof(float));
	}
}

static void
restore_checkpoint(struct rs_state *st)
{
	memcpy(st->conv, st->ck_conv, (size_t)(st->n_gdn * st->conv_len) *
	    sizeof(float));
	memcpy(st->ssm, st->ck_ssm, (size_t)(st->n_gdn * st->ssm_len) *
	    sizeof(float));
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
}

enum rs_status
rs_state_truncate(struct rs_state *st, int32_t pos, struct rs_err *err)
{
	if (pos < 0 || pos > st->pos)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "cannot truncate to position %d: the sequence has %d",
		    pos, st->pos));
	if (pos == st->pos) {
		/* nothing to undo */
	} else if (pos == 0) {
		zero_gdn(st);
		st->snap_lo = 0;
	} else if (st->n_snap > 0 && pos - 1 >= st->snap_lo)
		restore_snapshot(st, pos);
	else if (st->ck_pos == pos && st->ck_conv != NULL)
		restore_checkpoint(st);
	else if (st->snap_lo < st->pos)
		return (rs_errf(err, RS_ERR_LIMIT,
		    "cannot truncate to position %d: recurrent-state snapshots "
		    "cover positions %d..%d only", pos, st->snap_lo + 1,
		    st->pos));
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
	if (st->ck_conv == NULL && st->n_gdn > 0)
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "state was created without room for a checkpoint"));
	if (st->n_gdn > 0) {
		memcpy(st->ck_conv, st->conv, (size_t)(st->n_gdn *
		    st->conv_len) * sizeof(float));
		memcpy(st->ck_ssm, st->ssm, (size_t)(st->n_gdn * st->ssm_len) *
		    sizeof(float));
	}
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

	if (dst->model != src->model)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "cannot copy a state between models"));
	if (n > dst->n_ctx)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "state of %lld positions does not fit a context of %d",
		    (long long)n, dst->n_ctx));
	for (int32_t l = 0; l < src->n_attn; l++) {
		memcpy(dst->k + l * dst->n_ctx * dst->kv_row,
		    src->k + l * src->n_ctx * src->kv_row,
		    (size_t)(src->pos * src->kv_row) * sizeof(float));
		memcpy(dst->v + l * dst->n_ctx * dst->kv_row_v,
		    src->v + l * src->n_ctx * src->kv_row_v,
		    (size_t)(src->pos * src->kv_row_v) * sizeof(float));
	}
	if (src->mtp_k != NULL) {
		memcpy(dst->mtp_k, src->mtp_k, (size_t)(src->mtp_pos *
		    src->kv_row) * sizeof(float));
		memcpy(dst->mtp_v, src->mtp_v, (size_t)(src->mtp_pos *
		    src->kv_row_v) * sizeof(float));
	}
	memcpy(dst->conv, src->conv, (size_t)(src->n_gdn * src->conv_len) *
	    sizeof(float));
	memcpy(dst->ssm, src->ssm, (size_t)(src->n_gdn * src->ssm_len) *
	    sizeof(float));
	memcpy(dst->tokens, src->tokens, (size_t)src->pos * sizeof(int32_t));
	dst->pos = src->pos;
	dst->mtp_pos = src->mtp_pos;
	dst->snap_lo = dst->pos;
	dst->ck_pos = -1;
	return (RS_OK);
}
