/*
 * rs_split.c - the layer split over device slots (rs_split.h): list
 * parsing, the balanced split, which slot holds which tensor.
 *
 * Balance: with c[il] the bytes of block il (its tensors plus STATES
 * states' share of it) and F[j] a slot's fixed bytes, the split minimises
 * max_j (F[j] + Σ_{il in slot j} c[il]) over contiguous ranges of at least
 * one block, by dynamic programming over (slots, blocks): N·L² steps, 4096
 * for the 27B on two GPUs.  Ties go to the split with the earlier
 * boundaries, so the result is deterministic.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "rs_split.h"

static uint64_t
aligned(uint64_t b)
{
	return ((b + 255) / 256 * 256);
}

enum rs_status
rs_split_parse(const char *what, const char *s, int min, int max,
    int out[RS_SPLIT_MAX], int *n, struct rs_err *err)
{
	const char	*p = s;
	int		 k = 0;

	for (;;) {
		char	*end;
		long	 v;

		if (k == RS_SPLIT_MAX)
			return (rs_errf(err, RS_ERR_INVALID_ARG, "%s: more "
			    "than %d items in '%s'", what, RS_SPLIT_MAX, s));
		if (*p < '0' || *p > '9')
			return (rs_errf(err, RS_ERR_INVALID_ARG, "%s: item %d "
			    "of '%s' is not a number", what, k + 1, s));
		errno = 0;
		v = strtol(p, &end, 10);
		if (errno != 0 || v < min || v > max)
			return (rs_errf(err, RS_ERR_INVALID_ARG, "%s: item %d "
			    "of '%s' is outside [%d, %d]", what, k + 1, s,
			    min, max));
		if (*end != ',' && *end != '\0')
			return (rs_errf(err, RS_ERR_INVALID_ARG, "%s: item %d "
			    "of '%s' is not a number", what, k + 1, s));
		out[k++] = (int)v;
		if (*end == '\0')
			break;
		p = end + 1;
	}
	*n = k;
	return (RS_OK);
}

/* The block a tensor name "blk.N.*" belongs to, or −1. */
static int64_t
block_of(const char *name)
{
	char	*end;
	unsigned long v;

	if (strncmp(name, "blk.", 4) != 0 || name[4] < '0' || name[4] > '9')
		return (-1);
	v = strtoul(name + 4, &end, 10);
	if (*end != '.' || v > UINT32_MAX)
		return (-1);
	return ((int64_t)v);
}

/* Whether the last slot reads token_embd (the MTP block or a tied head). */
static int
embd_on_last(const struct rs_model *m)
{
	const struct rs_layer *mtp = m->hp.n_nextn > 0 ?
	    &m->layers[m->hp.n_layer] : NULL;

	return (m->output == m->tok_embd ||
	    (mtp != NULL && mtp->mtp_embd == m->tok_embd));
}

int
rs_split_slot_of(const struct rs_split *sp, uint32_t il)
{
	for (int j = 0; j < sp->n; j++)
		if (il < sp->first[j + 1])
			return (j);
	return (sp->n - 1);	/* the MTP block */
}

unsigned
rs_split_tensor_slots(const struct rs_split *sp, const struct rs_model *m,
    int64_t i)
{
	const struct rs_gguf_tensor *t = rs_gguf_tensor(m->gguf, i);
	const unsigned last = 1u << (sp->n - 1);
	int64_t	b = block_of(t->name);

	if (b >= 0)
		return (1u << rs_split_slot_of(sp, (uint32_t)b));
	if (t == m->tok_embd)
		return (1u | (embd_on_last(m) ? last : 0));
	if (t == m->output || t == m->output_norm)
		return (last);
	return ((1u << sp->n) - 1);
}

void
rs_split_single(struct rs_split *out, const struct rs_model *m, int dev)
{
	memset(out, 0, sizeof(*out));
	out->n = 1;
	out->dev[0] = dev;
	out->first[1] = m->hp.n_layer;
}

int
rs_split_equal(const struct rs_split *a, const struct rs_split *b)
{
	if (a->n != b->n)
		return (0);
	for (int j = 0; j < a->n; j++)
		if (a->dev[j] != b->dev[j] ||
		    a->first[j + 1] != b->first[j + 1])
			return (0);
	return (1);
}

/*
 * Bytes per block (COST, n_layer_all entries: tensors + state) and of the
 * parts every layout puts on the first (*FIRST) and last (*LAST) slot.
 */
static void
costs(const struct rs_model *m, size_t kv_elem,
    const struct rs_state_opts *opts, int states, uint64_t *cost,
    uint64_t *first, uint64_t *last)
{
	const struct rs_hparams *hp = &m->hp;
	const int64_t nt = rs_gguf_n_tensors(m->gguf);
	const uint64_t ctx = opts != NULL && opts->n_ctx > 0 ?
	    (uint64_t)opts->n_ctx : hp->n_ctx_train;
	const uint64_t row = (uint64_t)hp->n_head_kv * (hp->head_dim +
	    hp->head_dim_v);
	const uint64_t ch = 2 * (uint64_t)hp->ssm_n_kh * hp->ssm_d_state +
	    hp->ssm_d_inner;
	const uint64_t gdn = (ch * (hp->ssm_conv_kernel - 1) +
	    (uint64_t)hp->ssm_n_vh * hp->ssm_d_state * hp->ssm_d_state) *
	    sizeof(float);
	const uint64_t copies = 1 + (opts != NULL ? (uint64_t)opts->n_snap +
	    (opts->checkpoint != 0) : 0);

	*first = *last = 0;
	for (uint32_t il = 0; il < hp->n_layer_all; il++) {
		switch (m->layers[il].kind) {
		case RS_LAYER_GDN:
			cost[il] = (uint64_t)states * copies * gdn;
			break;
		case RS_LAYER_ATTN:
		case RS_LAYER_MTP:
			cost[il] = (uint64_t)states * ctx * row * kv_elem;
			break;
		}
	}
	for (int64_t i = 0; i < nt; i++) {
		const struct rs_gguf_tensor *t = rs_gguf_tensor(m->gguf, i);
		int64_t b = block_of(t->name);

		if (b >= 0 && b < hp->n_layer_all)
			cost[b] += aligned(t->nbytes);
		else if (t == m->tok_embd) {
			*first += aligned(t->nbytes);
			if (embd_on_last(m))
				*last += aligned(t->nbytes);
		} else if (t == m->output || t == m->output_norm)
			*last += aligned(t->nbytes);
		else {
			*first += aligned(t->nbytes);
			*last += aligned(t->nbytes);
		}
	}
	/* the MTP block (and its KV cache) goes with the last slot */
	for (uint32_t il = hp->n_layer; il < hp->n_layer_all; il++)
		*last += cost[il];
}

/*
 * The balanced boundaries of N slots over L blocks of cost C into BOUND
 * (N + 1 entries).  Fails only for memory.
 */
static int
balance(const uint64_t *c, uint32_t l, int n, uint64_t first, uint64_t last,
    uint32_t *bound)
{
	/* best[j·(l+1) + i]: the least largest slot for blocks 0 .. i − 1 on
	   slots 0 .. j − 1; cut[..]: where slot j − 1 starts then */
	const size_t w = (size_t)l + 1;
	uint64_t *pre = calloc(w, sizeof(*pre));
	uint64_t *best = calloc((size_t)(n + 1) * w, sizeof(*best));
	uint32_t *cut = calloc((size_t)(n + 1) * w, sizeof(*cut));

	if (pre == NULL || best == NULL || cut == NULL) {
		free(pre);
		free(best);
		free(cut);
		return (-1);
	}
	for (uint32_t i = 0; i < l; i++)
		pre[i + 1] = pre[i] + c[i];
	for (size_t i = 0; i < (size_t)(n + 1) * w; i++)
		best[i] = UINT64_MAX;
	best[0] = 0;
	for (int j = 1; j <= n; j++) {
		uint64_t fixed = (j == 1 ? first : 0) + (j == n ? last : 0);
		for (uint32_t i = (uint32_t)j; i <= l; i++)
			for (uint32_t a = (uint32_t)j - 1; a < i; a++) {
				uint64_t prev = best[(j - 1) * w + a], here, v;
				if (prev == UINT64_MAX)
					continue;
				here = fixed + pre[i] - pre[a];
				v = here > prev ? here : prev;
				if (v < best[j * w + i]) {
					best[j * w + i] = v;
					cut[j * w + i] = a;
				}
			}
	}
	bound[n] = l;
	for (int j = n; j > 0; j--)
		bound[j - 1] = cut[j * w + bound[j]];
	free(pre);
	free(best);
	free(cut);
	return (0);
}

enum rs_status
rs_split_make(struct rs_split *out, const struct rs_model *m, const int *dev,
    int n, const int *counts, size_t kv_elem,
    const struct rs_state_opts *opts, int states, uint64_t scratch,
    struct rs_split_mem *mem, struct rs_err *err)
{
	const uint32_t l = m->hp.n_layer;
	uint64_t	*cost, first, last;
	struct rs_split	 sp;

	if (n < 1 || n > RS_SPLIT_MAX)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "%d devices: between "
		    "1 and %d", n, RS_SPLIT_MAX));
	if ((uint32_t)n > l)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "%d devices for %u "
		    "blocks: every device needs at least one block", n, l));
	if (states < 0)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "%d states", states));
	memset(&sp, 0, sizeof(sp));
	sp.n = n;
	for (int j = 0; j < n; j++)
		sp.dev[j] = dev[j];
	if (counts != NULL) {
		uint64_t sum = 0;
		for (int j = 0; j < n; j++) {
			if (counts[j] < 1)
				return (rs_errf(err, RS_ERR_INVALID_ARG,
				    "--split: item %d is %d: every device needs "
				    "at least one block", j + 1, counts[j]));
			sum += (uint64_t)counts[j];
		}
		if (sum != l)
			return (rs_errf(err, RS_ERR_INVALID_ARG, "--split: the "
			    "counts sum to %llu, the model has %u blocks",
			    (unsigned long long)sum, l));
		for (int j = 0; j < n; j++)
			sp.first[j + 1] = sp.first[j] + (uint32_t)counts[j];
	}
	if ((cost = calloc(m->hp.n_layer_all + 1, sizeof(*cost))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	costs(m, kv_elem, opts, states, cost, &first, &last);
	if (counts == NULL && balance(cost, l, n, first, last,
	    sp.first) != 0) {
		free(cost);
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	}
	for (int j = 0; mem != NULL && j < n; j++) {
		memset(&mem[j], 0, sizeof(mem[j]));
		for (uint32_t il = sp.first[j]; il < sp.first[j + 1]; il++)
			mem[j].total += cost[il];
		mem[j].total += (j == 0 ? first : 0) + (j == n - 1 ? last : 0);
	}
	if (mem != NULL) {
		/* the weights alone: the same costs for no states */
		memset(cost, 0, (m->hp.n_layer_all + 1) * sizeof(*cost));
		costs(m, kv_elem, opts, 0, cost, &first, &last);
		for (int j = 0; j < n; j++) {
			for (uint32_t il = sp.first[j]; il < sp.first[j + 1];
			    il++)
				mem[j].weights += cost[il];
			mem[j].weights += (j == 0 ? first : 0) +
			    (j == n - 1 ? last : 0);
			mem[j].state = mem[j].total - mem[j].weights;
			mem[j].scratch = scratch;
			mem[j].total += scratch;
		}
	}
	free(cost);
	*out = sp;
	return (RS_OK);
}
