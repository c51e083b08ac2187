/*
 * rs_gen_loop.c - the token loop of a run (see rs_gen.h, rs_gen.c):
 *
 *   prefix reuse   L = common prefix of the prompt and the state's history
 *                  (at most P − 1), kept exactly (reuse())
 *   prefill        prompt[L..P) in chunks (a PROGRESS event after each),
 *                  the checkpoint taken at the last message's start (or,
 *                  with a checkpoint cache, checkpoints at every
 *                  assistant-turn start, every checkpoint_every positions
 *                  and at P), the last chunk's last row of logits kept
 *   decode         per token: sample (or take a forced token), then
 *                    end-of-generation / stop id?  -> end (no text)
 *                    logprobs asked?  -> LOGPROB event from the row that
 *                                        predicted the token
 *                    bytes -> rs_detok (UTF-8 assembly, §1.8)
 *                          -> rs_stop (stop strings, hold-back)
 *                          -> rs_parse (chat) or content (raw)
 *                          -> events
 *                    max_tokens or context end?   -> end
 *                    TOKEN event; forward the token for the next logits
 *   end            flush what the detokenizer, the stop matcher and the
 *                  parser held back
 *
 * The last token is never forwarded: the state ends at P + n − 1
 * positions, which is what the next request's prefix reuse compares.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rs_ckcache.h"
#include "rs_draft.h"
#include "rs_gen_impl.h"

double
rs_gen_now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6);
}

/* ---- events ---- */

/* Hand EV to the callback; -1 once the run is cancelled. */
int
rs_gen_emit(struct rs_gen_job *u, const struct rs_gen_event *ev)
{
	if (u->cancelled)
		return (-1);
	if (u->cb != NULL && u->cb(ev, u->arg) != 0)
		u->cancelled = 1;
	return (u->cancelled ? -1 : 0);
}

/* The parser's events of its last feed or finish, as run events. */
static void
parse_events(struct rs_gen_job *u)
{
	const struct rs_parse_event	*pe;
	struct rs_gen_event		 ev;
	size_t				 n;

	pe = rs_parse_events(u->parse, &n);
	for (size_t i = 0; i < n; i++) {
		memset(&ev, 0, sizeof(ev));
		ev.kind = pe[i].kind == RS_PARSE_REASONING ?
		    RS_GEN_EV_REASONING : pe[i].kind == RS_PARSE_CONTENT ?
		    RS_GEN_EV_CONTENT : pe[i].kind == RS_PARSE_CALL ?
		    RS_GEN_EV_TOOL_CALL : RS_GEN_EV_TOOL_ARGS;
		ev.text = pe[i].text;
		ev.len = pe[i].len;
		ev.index = pe[i].index;
		ev.id = pe[i].id;
		if (rs_gen_emit(u, &ev) != 0)
			return;
	}
}

/* Stop-checked text: keep it, parse it (chat) or send it as content. */
static enum rs_status
deliver(struct rs_gen_job *u, const char *s, size_t n)
{
	struct rs_gen_event	ev = { .kind = RS_GEN_EV_CONTENT };

	if (n == 0)
		return (RS_OK);
	if (rs_buf_add(&u->raw, s, n) != 0)
		return (rs_errf(&u->err, RS_ERR_NOMEM, "out of memory"));
	if (u->parse != NULL) {
		if (rs_parse_feed(u->parse, s, n, &u->err) != RS_OK)
			return (u->err.status);
		parse_events(u);
		return (RS_OK);
	}
	ev.text = s;
	ev.len = n;
	rs_gen_emit(u, &ev);
	return (RS_OK);
}

/* Decoded bytes: through the stop-string matcher, then deliver(). */
static enum rs_status
text_in(struct rs_gen_job *u, const char *s, size_t n)
{
	const char	*out;
	size_t		 len;
	enum rs_status	 st;

	if (n == 0 || u->stopped)
		return (RS_OK);
	if ((st = rs_stop_feed(u->stop, s, n, &out, &len, &u->stopped,
	    &u->err)) != RS_OK)
		return (st);
	return (deliver(u, out, len));
}

/* Generation ended (not cancelled): release what was held back. */
static enum rs_status
flush(struct rs_gen_job *u, enum rs_gen_end how)
{
	const char	*out;
	size_t		 len;
	enum rs_parse_end pe;
	enum rs_status	 st;

	if (how != RS_GEN_END_STRING) {
		len = rs_detok_flush(&u->dt, u->g->piece);
		if ((st = text_in(u, u->g->piece, len)) != RS_OK)
			return (st);
	}
	if (!u->stopped) {
		rs_stop_flush(u->stop, &out, &len);
		if ((st = deliver(u, out, len)) != RS_OK)
			return (st);
	}
	if (u->parse == NULL)
		return (RS_OK);
	/* a forced call is closed and kept at any end (§3.8) */
	pe = how == RS_GEN_END_LENGTH && !u->stopped &&
	    u->tc != RS_GEN_TC_CALL ? RS_PARSE_END_LENGTH : RS_PARSE_END_STOP;
	if ((st = rs_parse_finish(u->parse, pe, &u->err)) != RS_OK)
		return (st);
	parse_events(u);
	return (RS_OK);
}

/* ---- prefill ---- */

/*
 * Where to checkpoint: the last <|im_start|> of the prompt (the start of
 * the message the next turn will re-render differently), else P − 1.
 */
static int32_t
checkpoint_pos(const struct rs_gen *g, const int32_t *p, int32_t n)
{
	for (int32_t i = n - 1; i > 0 && g->id_im_start >= 0; i--)
		if (p[i] == g->id_im_start)
			return (i);
	return (n - 1);
}

/*
 * Reuse what the state holds of prompt P (N tokens): L = the common prefix
 * of P and the state's history, at most N − 1 (the last prompt token must
 * run for its logits).  Exact in every case; returns the position to
 * prefill from:
 *   L        when rs_state_truncate() reaches it (a snapshot, the
 *            checkpoint taken at L, nothing to undo, or L = 0);
 *   C <= L   the checkpoint's position, rolled back to: the tokens from C
 *            to L are recomputed by the prefill (and counted there);
 *   0        otherwise (the state is reset).
 * rs_engine_truncate() would do the same but replay C..L itself; doing it
 * in the prefill keeps the accounting honest (cached_tokens are tokens not
 * recomputed) and the replay cancellable.
 */
static int32_t
common_prefix(const struct rs_gen *g, const int32_t *p, int32_t n)
{
	int32_t	pos = rs_state_pos(g->st), l = 0;

	while (l < pos && l < n - 1 && rs_state_token(g->st, l) == p[l])
		l++;
	return (l);
}

int32_t
rs_gen_common_prefix(const struct rs_gen *g, const struct rs_gen_req *r)
{
	return (common_prefix(g, r->prompt, (int32_t)r->n_prompt));
}

/*
 * reuse() with a checkpoint cache: the state's history past L is about to
 * be overwritten, so its checkpoints there go first; then L exactly when
 * the state reaches it by itself (a snapshot, nothing to undo, L = 0) and
 * no checkpoint of another state goes further (a new conversation in a
 * slot of its own that shares a system prompt with another slot), else
 * the longest checkpoint (a hit), else 0 (a miss).
 */
static int32_t
reuse_cached(struct rs_gen_job *u, const int32_t *p, int32_t n)
{
	struct rs_gen	*g = u->g;
	int32_t		 l = common_prefix(g, p, n), c;

	rs_ckcache_prune(g->ckc, g->st, l);
	if (rs_ckcache_peek(g->ckc, g->st, p, l, n - 1) <= l &&
	    rs_state_truncate(g->st, l, NULL) == RS_OK)
		return (l);
	rs_ckcache_restore(g->ckc, g->st, p, l, n - 1, &c);
	if (c >= 0) {
		u->ck_hit = 1;
		u->ck_tokens = c;
		return (c);
	}
	u->ck_miss = 1;
	rs_state_reset(g->st);
	return (0);
}

int32_t
rs_gen_reusable(const struct rs_gen *g, const struct rs_gen_req *r)
{
	int32_t	l = common_prefix(g, r->prompt, (int32_t)r->n_prompt), c;

	if (g->ckc == NULL || l == 0 || l == rs_state_pos(g->st) ||
	    (rs_state_n_snap(g->st) > 0 && l >= rs_state_snap_floor(g->st)))
		return (l);
	c = rs_ckcache_peek(g->ckc, g->st, r->prompt, l, l);
	return (c > 0 ? c : 0);
}

int
rs_gen_affinity(const struct rs_gen *g, const struct rs_gen_req *r)
{
	int32_t	l = common_prefix(g, r->prompt, (int32_t)r->n_prompt);

	if (l > 0 && l == rs_state_pos(g->st))
		return (2);

	for (int32_t q = 0; q < l; q++)
		if (rs_gen_turn_at(g, r->prompt, l, q, 0))
			return (1);
	return (0);
}

static int32_t
reuse(struct rs_gen_job *u, const int32_t *p, int32_t n)
{
	struct rs_gen	*g = u->g;
	int32_t		 l, c;

	if (g->ckc != NULL)
		return (reuse_cached(u, p, n));
	l = common_prefix(g, p, n);
	if (rs_state_truncate(g->st, l, NULL) == RS_OK)
		return (l);
	c = rs_state_checkpoint_pos(g->st);
	if (c >= 0 && c <= l && rs_state_rollback(g->st, NULL) == RS_OK)
		return (c);
	rs_state_reset(g->st);
	return (0);
}

int
rs_gen_turn_at(const struct rs_gen *g, const int32_t *p, int32_t n,
    int32_t q, int any)
{
	if (g->id_im_start < 0 || p[q] != g->id_im_start)
		return (0);
	if (g->n_asst == 0)
		return (any);
	if (q + 1 + g->n_asst > n)
		return (0);
	return (memcmp(p + q + 1, g->asst, (size_t)g->n_asst *
	    sizeof(int32_t)) == 0);
}

/*
 * With a checkpoint cache: 1 when the state before prompt token Q is
 * checkpointed.  At the start of an assistant turn (rs_gen_turn_at()): a
 * template that drops earlier reasoning re-renders that turn without it
 * in the next request, an edit of a later message leaves the prompt after
 * it, and the last one (the opener) is where the answer's echo starts
 * (serving.md §2.8).  Every checkpoint_every positions: bounds what a
 * prompt that leaves the history anywhere else recomputes.
 */
static int
is_checkpoint(const struct rs_gen *g, const int32_t *p, int32_t n, int32_t q)
{
	int32_t	e = g->o.checkpoint_every;

	if (q <= 0 || q >= n)
		return (0);
	if (e > 0 && q % e == 0)
		return (1);
	return (rs_gen_turn_at(g, p, n, q, 1));
}

/* The first checkpoint position in (FROM, TO), or TO. */
static int32_t
next_checkpoint(const struct rs_gen *g, const int32_t *p, int32_t n,
    int32_t from, int32_t to)
{
	for (int32_t q = from + 1; q < to; q++)
		if (is_checkpoint(g, p, n, q))
			return (q);
	return (to);
}

/* Checkpoint the state into the cache, if there is one (a failure only
   costs a later reuse). */
static void
save(struct rs_gen_job *u)
{
	struct rs_ckcache_stats	before, after;

	rs_ckcache_stats(u->g->ckc, &before);
	if (rs_ckcache_save(u->g->ckc, u->g->st, NULL) != RS_OK)
		return;
	rs_ckcache_stats(u->g->ckc, &after);
	u->ck_saves += (int64_t)(after.saves - before.saves);
}

enum rs_status
rs_gen_prefill(struct rs_gen_job *u)
{
	struct rs_gen		*g = u->g;
	const int32_t		*p = u->r->prompt;
	int32_t			 n = (int32_t)u->r->n_prompt, l, cp, from, to;
	struct rs_gen_event	 ev = { .kind = RS_GEN_EV_PROGRESS };
	enum rs_status		 st;

	l = reuse(u, p, n);
	u->cached = l;
	cp = g->ckc != NULL ? -1 : checkpoint_pos(g, p, n);
	ev.n_total = n - l;
	for (from = l; from < n; from = to) {
		to = from + g->o.prefill_chunk < n ? from +
		    g->o.prefill_chunk : n;
		if (cp > from && cp < to)
			to = cp;
		if (g->ckc != NULL)
			to = next_checkpoint(g, p, n, from, to);
		if (from == cp && cp > 0)
			rs_state_checkpoint(g->st, NULL);	/* optional */
		if (g->ckc != NULL && is_checkpoint(g, p, n, from))
			save(u);
		st = rs_engine_forward(g->e, g->st, p + from, to - from,
		    to == n ? g->logits : NULL, to == n ? RS_LOGITS_LAST :
		    RS_LOGITS_NONE, NULL, &u->err);
		if (st != RS_OK)
			return (st);
		ev.n_done = to - l;
		if (rs_gen_emit(u, &ev) != 0)
			return (RS_OK);
	}
	/* the prompt's end: an exact resend (a retry, the same prompt on
	   another turn) restarts here */
	if (g->ckc != NULL)
		save(u);
	return (RS_OK);
}

/* ---- decode ---- */

/*
 * RS_GEN_TC_NAME: ROW with only the next token of every name still
 * possible (the others -inf) into U->masked, so that whatever the model
 * prefers, the sampler picks a tool's name; ROW itself stays as it is
 * for the log-probabilities.
 */
static const float *
mask_names(struct rs_gen_job *u, const float *row)
{
	const struct rs_gen_req	*r = u->r;
	size_t			 i, from;

	for (int32_t v = 0; v < u->g->n_vocab; v++)
		u->masked[v] = -INFINITY;
	for (i = 0; i < r->n_names; i++) {
		from = i > 0 ? r->name_end[i - 1] : 0;
		if (u->cand[i] && from + u->name_k < r->name_end[i])
			u->masked[r->name_ids[from + u->name_k]] =
			    row[r->name_ids[from + u->name_k]];
	}
	return (u->masked);
}

/*
 * The next output token: forced, or sampled from the logits ROW, under the
 * forced call's rules (enum rs_gen_tc).
 */
static enum rs_status
next_token(struct rs_gen_job *u, float *row, int32_t *t, int *forced)
{
	const struct rs_gen	*g = u->g;
	enum rs_status		 st;

	*forced = u->i_force < u->n_force;
	if (*forced) {
		*t = u->force[u->i_force++];
		return (RS_OK);
	}
	if (u->tc == RS_GEN_TC_THINK && u->limit - u->n_out <= u->r->n_reserve) {
		*forced = 1;
		*t = g->id_think_end;
		return (RS_OK);
	}
	if ((st = rs_sample_next(u->smp, u->tc == RS_GEN_TC_NAME ?
	    mask_names(u, row) : row, t, &u->err)) != RS_OK)
		return (st);
	if (u->tc == RS_GEN_TC_THINK && (*t == g->id_call_start ||
	    rs_tok_is_eog(g->tok, *t)))
		*t = g->id_think_end;
	return (RS_OK);
}

/* RS_GEN_TC_NAME: the name token T taken; the call opens after the last. */
static void
name_step(struct rs_gen_job *u, int32_t t)
{
	const struct rs_gen_req	*r = u->r;
	size_t			 i, from;

	for (i = 0; i < r->n_names; i++) {
		from = i > 0 ? r->name_end[i - 1] : 0;
		if (u->cand[i] && (from + u->name_k >= r->name_end[i] ||
		    r->name_ids[from + u->name_k] != t))
			u->cand[i] = 0;
	}
	u->name_k++;
	for (i = 0; i < r->n_names; i++) {
		from = i > 0 ? r->name_end[i - 1] : 0;
		if (u->cand[i] && from + u->name_k == r->name_end[i])
			u->tc = RS_GEN_TC_CALL;
	}
}

/* Decode token T's bytes and pass them on; sets RS_GEN_END_STRING on a stop. */
static enum rs_status
token_text(struct rs_gen_job *u, int32_t t, enum rs_gen_end *end)
{
	size_t		n;
	enum rs_status	st;

	if ((st = rs_detok_feed(&u->dt, t, u->g->piece, u->g->piece_cap, &n,
	    &u->err)) != RS_OK || (st = text_in(u, u->g->piece, n)) != RS_OK)
		return (st);
	if (u->stopped)
		*end = RS_GEN_END_STRING;
	return (RS_OK);
}

/*
 * Token T's log-probability and top alternatives from ROW, the logits
 * that predicted it, kept for the result and sent as a LOGPROB event.
 * The list grows by doubling (a realloc every doubling, only when logprobs
 * are asked for; entries are about 340 bytes, so no up-front allocation
 * for the whole context).
 */
static enum rs_status
logprob(struct rs_gen_job *u, const float *row, int32_t t)
{
	struct rs_gen_event	 ev = { .kind = RS_GEN_EV_LOGPROB };
	struct rs_logprob	*lp;
	size_t			 cap;
	enum rs_status		 st;

	if (!u->r->logprobs)
		return (RS_OK);
	if (u->n_lp == u->cap_lp) {
		cap = u->cap_lp > 0 ? 2 * u->cap_lp : 64;
		if ((lp = realloc(u->lp, cap * sizeof(*lp))) == NULL)
			return (rs_errf(&u->err, RS_ERR_NOMEM,
			    "out of memory"));
		u->lp = lp;
		u->cap_lp = cap;
	}
	lp = &u->lp[u->n_lp];
	if ((st = rs_logprob_compute(row, u->g->n_vocab, u->r->kind ==
	    RS_GEN_CHAT ? u->g->banned : NULL, t, u->r->top_logprobs, lp,
	    &u->err)) != RS_OK)
		return (st);
	u->n_lp++;
	ev.lp = lp;
	rs_gen_emit(u, &ev);
	return (RS_OK);
}

/*
 * One output token T, predicted by the logits ROW: count it, send its
 * logprob and its text, decide whether it ends.
 */
static enum rs_status
take(struct rs_gen_job *u, const float *row, int32_t t, int forced,
    enum rs_gen_end *end)
{
	struct rs_gen		*g = u->g;
	struct rs_gen_req	*r = u->r;
	enum rs_status		 st;

	if (!forced && u->parse != NULL && rs_parse_in_reasoning(u->parse))
		u->reasoning++;
	if ((st = rs_sample_accept(u->smp, t, &u->err)) != RS_OK)
		return (st);
	u->out[u->n_out++] = t;
	if (u->n_out == 1)
		u->t_first = rs_gen_now_ms();
	*end = RS_GEN_END_NONE;
	if (!forced && (rs_tok_is_eog(g->tok, t) || rs_stop_token(u->stop, t)))
		*end = RS_GEN_END_TOKEN;
	else if ((st = logprob(u, row, t)) != RS_OK ||
	    (st = token_text(u, t, end)) != RS_OK)
		return (st);
	if (*end == RS_GEN_END_NONE && r->tools != NULL &&
	    (!r->parallel_tool_calls || r->tool_choice == RS_GEN_TOOLS_NAMED) &&
	    t == g->id_call_end)
		*end = RS_GEN_END_TOKEN;
	if (*end == RS_GEN_END_NONE && r->thinking && r->n_forced > 0 &&
	    !u->forced_think && t == g->id_think_end) {
		u->force = r->forced;
		u->n_force = r->n_forced;
		u->i_force = 0;
		u->forced_think = 1;
		u->tc = RS_GEN_TC_FORCE;
	} else if (u->tc == RS_GEN_TC_FORCE && u->i_force == u->n_force) {
		u->tc = r->n_names > 0 ? RS_GEN_TC_NAME : RS_GEN_TC_CALL;
		u->name_k = 0;
		if (r->n_names > 0)
			memset(u->cand, 1, r->n_names);
	} else if (u->tc == RS_GEN_TC_NAME)
		name_step(u, t);
	if (*end == RS_GEN_END_NONE && u->n_out >= u->limit)
		*end = RS_GEN_END_LENGTH;
	return (RS_OK);
}

/*
 * A verification pass in flight: T was fed at position P with KK drafts
 * behind it (positions P+1 ..), and I of them have been taken so far.
 */
struct pass {
	int32_t	p;
	int	kk, i;
	int32_t	drafts[16];
};

/*
 * Feed T, the token just taken, with prompt-lookup drafts behind it when
 * they are on (none while tokens are being forced), and leave the logits
 * rows in g->logits.
 */
static enum rs_status
feed(struct rs_gen_job *u, int32_t t, struct pass *ps)
{
	struct rs_gen	*g = u->g;
	int32_t		 toks[17], room;
	int		 kk = 0;

	ps->p = rs_state_pos(g->st);
	room = g->n_ctx - ps->p - 1;		/* positions after T */
	if (g->o.draft_ngram > 0 && u->i_force >= u->n_force) {
		int max = g->o.draft_ngram;
		if ((size_t)max > u->limit - u->n_out)
			max = (int)(u->limit - u->n_out);
		if (max > room)
			max = room;
		if (max > 0)
			kk = rs_draft_lookup(u->r->prompt, (int32_t)u->r->n_prompt,
			    u->out, (int32_t)u->n_out, ps->drafts, max);
	}
	ps->kk = kk;
	ps->i = 0;
	u->drafted += kk;
	toks[0] = t;
	for (int i = 0; i < kk; i++)
		toks[i + 1] = ps->drafts[i];
	return (rs_engine_forward(g->e, g->st, toks, kk + 1, g->logits,
	    kk > 0 ? RS_LOGITS_ALL : RS_LOGITS_LAST, NULL, &u->err));
}

/*
 * Drop the drafts of PS that were not taken: the caches keep the fed
 * token and the I drafts taken after it (a snapshot copy, rs_state.h).
 */
static enum rs_status
drop_rest(struct rs_gen_job *u, const struct pass *ps)
{
	if (ps->kk == 0 || ps->i == ps->kk)
		return (RS_OK);
	return (rs_engine_truncate(u->g->e, u->g->st, ps->p + ps->i + 1,
	    &u->err));
}

enum rs_status
rs_gen_decode(struct rs_gen_job *u)
{
	struct rs_gen_event	ev = { .kind = RS_GEN_EV_TOKEN };
	enum rs_gen_end		end = RS_GEN_END_NONE;
	enum rs_status		st;
	struct pass		ps = { 0 };
	int32_t			t;
	int			forced;

	if (!u->r->thinking && u->r->n_forced > 0) {
		u->force = u->r->forced;
		u->n_force = u->r->n_forced;
		u->tc = RS_GEN_TC_FORCE;
	} else if (u->r->n_forced > 0)
		u->tc = RS_GEN_TC_THINK;
	while (!u->cancelled) {
		float *row = u->g->logits + (int64_t)ps.i * u->g->n_vocab;
		if ((st = next_token(u, row, &t, &forced)) != RS_OK ||
		    (st = take(u, row, t, forced, &end)) != RS_OK)
			return (st);
		if (u->cancelled)
			break;
		if (end != RS_GEN_END_NONE && (st = flush(u, end)) != RS_OK)
			return (st);
		ev.token = t;
		if (rs_gen_emit(u, &ev) != 0 || end != RS_GEN_END_NONE)
			break;
		/* a draft the sampler chose is already in the caches */
		if (ps.i < ps.kk && t == ps.drafts[ps.i]) {
			ps.i++;
			u->accepted++;
			continue;
		}
		if ((st = drop_rest(u, &ps)) != RS_OK ||
		    (st = feed(u, t, &ps)) != RS_OK)
			return (st);
	}
	u->end = end;
	/* as without drafts: the caches end before the last token taken */
	return (drop_rest(u, &ps));
}
