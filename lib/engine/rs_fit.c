/*
 * rs_fit.c - weights + scratch + slots × state against free memory
 * (rs_fit.h).
 */
#include "rs_fit.h"

#define GIB	1073741824.0
#define RS_FIT_MAX_CTX	(1 << 24)	/* rs_state_new()'s limit */

/* Bytes a slot's KV caches take per position (they are linear in it). */
static uint64_t
kv_per_pos(const struct rs_fit *f)
{
	return ((f->slot.kv + f->slot.mtp_kv) / (uint64_t)f->n_ctx);
}

/* Positions per slot for SLOTS slots in ROOM bytes; 0: none. */
static int32_t
max_ctx(const struct rs_fit *f, uint64_t room, int slots)
{
	uint64_t per = room / (uint64_t)slots;
	uint64_t fixed = f->slot.total - f->slot.kv - f->slot.mtp_kv;
	uint64_t pos = kv_per_pos(f);
	uint64_t n;

	if (per <= fixed || pos == 0)
		return (0);
	n = (per - fixed) / pos;
	if (n > RS_FIT_MAX_CTX)
		n = RS_FIT_MAX_CTX;
	if (n > 1024)
		n -= n % 1024;	/* a round number that still fits */
	return ((int32_t)n);
}

static void
explain(const struct rs_fit *f, const char *device,
    const struct rs_fit_result *r, struct rs_buf *msg)
{
	const struct rs_state_plan *p = &f->slot;

	rs_buf_addf(msg, "not enough %s memory for --ctx %d --slots %d: "
	    "needs %.2f GiB, %.2f GiB free\n", device, (int)f->n_ctx, f->slots,
	    r->need / GIB, f->avail / GIB);
	rs_buf_addf(msg, "  weights %.2f GiB + scratch %.2f GiB + %d slot%s "
	    "x %.2f GiB + reserve %.2f GiB\n", f->weights / GIB,
	    f->scratch / GIB, f->slots, f->slots == 1 ? "" : "s",
	    p->total / GIB, (double)RS_FIT_RESERVE / GIB);
	rs_buf_addf(msg, "  a slot of %d positions: KV cache %.2f GiB, MTP KV "
	    "cache %.2f GiB, recurrent state %.3f GiB, snapshots %.3f GiB, "
	    "checkpoint %.3f GiB\n", (int)f->n_ctx, p->kv / GIB,
	    p->mtp_kv / GIB, p->gdn / GIB, p->snapshots / GIB,
	    p->checkpoint / GIB);
	if (r->max_slots > 0)
		rs_buf_addf(msg, "  would fit: --slots %lld at --ctx %d",
		    (long long)r->max_slots, (int)f->n_ctx);
	else
		rs_buf_addf(msg, "  would fit: not one slot at --ctx %d",
		    (int)f->n_ctx);
	if (r->max_ctx > 0)
		rs_buf_addf(msg, ", or --ctx %d with --slots %d\n",
		    (int)r->max_ctx, f->slots);
	else
		rs_buf_addf(msg, ", and no --ctx with --slots %d\n",
		    f->slots);
}

int
rs_fit_check(const struct rs_fit *f, const char *device,
    struct rs_fit_result *res, struct rs_buf *msg)
{
	struct rs_fit_result	r;
	uint64_t		engine = f->weights + f->scratch +
				    RS_FIT_RESERVE;
	uint64_t		room = f->avail > engine ? f->avail - engine :
				    0;

	r.need = engine + (uint64_t)f->slots * f->slot.total;
	r.max_slots = f->slot.total > 0 ? (int64_t)(room / f->slot.total) :
	    INT64_MAX;
	r.max_ctx = max_ctx(f, room, f->slots);
	if (res != NULL)
		*res = r;
	if (r.need <= f->avail)
		return (1);
	if (msg != NULL)
		explain(f, device, &r, msg);
	return (0);
}

int
rs_fit_split_check(const struct rs_split *sp, const struct rs_split_mem *mem,
    const uint64_t *free_b, int32_t n_ctx, int slots, struct rs_buf *msg)
{
	int	ok = 1;

	for (int j = 0; j < sp->n; j++) {
		uint64_t need = RS_FIT_RESERVE, have;
		int first = 1;

		/* each GPU once, at its first slot */
		for (int i = 0; i < j; i++)
			first &= sp->dev[i] != sp->dev[j];
		if (!first)
			continue;
		have = free_b[j];
		for (int i = j; i < sp->n; i++)
			if (sp->dev[i] == sp->dev[j]) {
				need += mem[i].total;
				have += mem[i].weights + mem[i].scratch;
			}
		if (need <= have)
			continue;
		ok = 0;
		if (msg == NULL)
			continue;
		rs_buf_addf(msg, "not enough memory on GPU %d for --ctx %d "
		    "--slots %d: needs %.2f GiB, %.2f GiB free\n", sp->dev[j],
		    (int)n_ctx, slots, need / GIB, have / GIB);
		for (int i = j; i < sp->n; i++)
			if (sp->dev[i] == sp->dev[j])
				rs_buf_addf(msg, "  blocks %u-%u: weights %.2f "
				    "GiB + %d slot%s %.2f GiB + scratch %.2f "
				    "GiB\n", sp->first[i], sp->first[i + 1] - 1,
				    mem[i].weights / GIB, slots, slots == 1 ?
				    "" : "s", mem[i].state / GIB,
				    mem[i].scratch / GIB);
	}
	if (!ok && msg != NULL)
		rs_buf_addf(msg, "  move blocks with --split (rs-bench --plan "
		    "--devices LIST -c N shows each GPU), or lower --ctx or "
		    "--slots\n");
	return (ok);
}

int
rs_fit_drafts(int k, int (*fits)(int n_snap, void *ctx), void *ctx)
{
	for (;; k /= 2) {
		if (fits(k > 0 ? k + 1 : 0, ctx))
			return (k);
		if (k == 0)
			return (-1);
	}
}
