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

#include "rs_ckcache.h"
#include "rs_gen_impl.h"

/* ---- events ---- */

/* Hand EV to the callback; -1 once the run is cancelled. */
int
rs_gen_emit(struct rs_gen_job *u, const struct rs_gen_event *ev)
{
	if (u->cancelled)
		return (-1);
	if (u->t_text == 0 && (ev->kind == RS_GEN_EV_REASONING ||
	    ev->kind == RS_GEN_EV_CONTENT || ev->kind == RS_GEN_EV_TOOL_CALL ||
	    ev->kind == RS_GEN_EV_TOOL_ARGS)) {
		u->t_text = rs_time_ms();
		u->n_text = (int64_t)u->n_out;
	}
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

/*
 * Decoded bytes: through the stop-string matcher, then deliver().  A
 * forced call (tool_choice required or named, §3.8) takes no stop string:
 * the answer must hold the call, and a stop in the reasoning or in the
 * call's forced opening ("</think>\n\n<tool_call>\n<function=") would
 * end it without one.
 */
static enum rs_status
text_in(struct rs_gen_job *u, const char *s, size_t n)
{
	const char	*out;
	size_t		 len;
	enum rs_status	 st;

	if (n == 0 || u->stopped)
		return (RS_OK);
	if (u->tc != RS_GEN_TC_OFF)
		return (deliver(u, s, n));
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
 * 1 when the next turn re-renders request R's last assistant turn (its
 * opener) differently from how it runs now: a template that drops the
 * reasoning of earlier turns (rs_chat.c assistant(): Qwen3.5 always,
 * Qwen3.6 unless preserve_thinking, Qwen3.8 when preserve_thinking is
 * false), or a prompt of tokens or text, whose template is unknown.
 */
static int
drops_reasoning(const struct rs_gen *g, const struct rs_gen_req *r)
{
	if (r->kind != RS_GEN_CHAT)
		return (1);
	if (g->variant == RS_CHAT_QWEN38)
		return (r->preserve_thinking == 0);
	if (g->variant == RS_CHAT_QWEN36)
		return (r->preserve_thinking != 1);
	return (1);
}

/*
 * Where to checkpoint (no cache): the last <|im_start|> of the prompt
 * (the start of the message the next turn may re-render differently: its
 * reasoning dropped, thinking switched on or off), else P − 1.
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
	struct rs_gen		*g = u->g;
	int32_t			 l = common_prefix(g, p, n), c;
	struct rs_ckcache_stats	 a, b;
	double			 t;

	rs_ckcache_prune(g->ckc, g->st, l);
	c = rs_ckcache_peek(g->ckc, g->st, p, l, n - 1);
	t = rs_time_ms();
	u->bd.lookup_ms = t - u->t_reuse;
	if (c <= l && rs_state_truncate(g->st, l, NULL) == RS_OK) {
		(void)rs_engine_sync(g->e, NULL);
		u->bd.restore_ms = rs_time_ms() - t;
		return (l);
	}
	rs_ckcache_stats(g->ckc, &a);
	rs_ckcache_restore(g->ckc, g->st, p, l, n - 1, &c);
	(void)rs_engine_sync(g->e, NULL);
	u->bd.restore_ms = rs_time_ms() - t;
	rs_ckcache_stats(g->ckc, &b);
	u->bd.restore_from_host = b.host_restores > a.host_restores;
	u->bd.restore_cross = b.cross > a.cross;
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
reuse_plain(struct rs_gen_job *u, const int32_t *p, int32_t n)
{
	struct rs_gen	*g = u->g;
	int32_t		 l, c;

	l = common_prefix(g, p, n);
	u->bd.lookup_ms = rs_time_ms() - u->t_reuse;
	if (rs_state_truncate(g->st, l, NULL) == RS_OK)
		return (l);
	c = rs_state_checkpoint_pos(g->st);
	if (c >= 0 && c <= l && rs_state_rollback(g->st, NULL) == RS_OK)
		return (c);
	rs_state_reset(g->st);
	return (0);
}

/* reuse_cached() or reuse_plain(), timed (lookup_ms, restore_ms). */
static int32_t
reuse(struct rs_gen_job *u, const int32_t *p, int32_t n)
{
	int32_t	pos;
	double	t;

	u->t_reuse = rs_time_ms();
	if (u->g->ckc != NULL)
		return (reuse_cached(u, p, n));
	pos = reuse_plain(u, p, n);
	t = u->t_reuse + u->bd.lookup_ms;
	(void)rs_engine_sync(u->g->e, NULL);
	u->bd.restore_ms = rs_time_ms() - t;
	return (pos);
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
 * With a checkpoint cache: 1 when the state before prompt token Q may be
 * checkpointed, in a prefill that starts at L.  At the start of an
 * assistant turn (rs_gen_turn_at()): a template that drops earlier
 * reasoning re-renders that turn without it in the next request, an edit
 * of a later message leaves the prompt after it, and the last one (the
 * opener) is where the answer's echo starts (serving.md §2.8).  Every
 * checkpoint_every positions E: bounds what a prompt that leaves the
 * history anywhere else recomputes; only in a long prefill (more than E
 * tokens: an agent's 200-token turn that crossed a multiple of 2,048 paid
 * a call for a checkpoint that saves a later prefill at most those 200
 * tokens).
 */
static int
is_checkpoint(const struct rs_gen *g, const int32_t *p, int32_t n, int32_t l,
    int32_t q)
{
	int32_t	e = g->o.checkpoint_every;

	if (q <= 0 || q >= n)
		return (0);
	if (e > 0 && q % e == 0 && n - l > e)
		return (1);
	return (rs_gen_turn_at(g, p, n, q, 1));
}

/* The prompt's last assistant turn start in (L, N), or −1. */
static int32_t
last_turn(const struct rs_gen *g, const int32_t *p, int32_t n, int32_t l)
{
	for (int32_t q = n - 1; q > l; q--)
		if (rs_gen_turn_at(g, p, n, q, 1))
			return (q);
	return (-1);
}

/*
 * The first position in (FROM, TO) to checkpoint at, or TO: HARD (the
 * opener that must be checkpointed, or −1), or a checkpoint (as above)
 * that leaves checkpoint_min_call tokens at least to the call it ends and
 * to the one it starts (up to HARD or N).  Why: on the GPU a call of more
 * than RS_ENGINE_EXACT_MAX tokens decodes every weight to f16 (27B: ~27
 * ms) and runs its attention at a fixed latency per block over the whole
 * context (~3 ms a layer at 51,000 positions), and a shorter one runs each
 * token's attention over the whole context on its own (~9 ms a token at
 * 51,000 positions), so a split costs 50-200 ms whatever it saves.
 */
static int32_t
next_checkpoint(const struct rs_gen *g, const int32_t *p, int32_t n,
    int32_t l, int32_t from, int32_t to, int32_t hard)
{
	int32_t	m = g->o.checkpoint_min_call, end;

	for (int32_t q = from + 1; q < to; q++) {
		if (q == hard)
			return (q);
		end = hard > q ? hard : n;
		if (q - from >= m && end - q >= m &&
		    is_checkpoint(g, p, n, l, q))
			return (q);
	}
	return (to);
}

/*
 * Checkpoint the state into the cache, if there is one (a failure only
 * costs a later reuse).  Timed with the copies it queued (save_ms; those
 * that spilled another checkpoint to host RAM also in spill_ms).
 */
static void
save(struct rs_gen_job *u)
{
	struct rs_ckcache_stats	before, after;
	double			t = rs_time_ms(), dt;

	rs_ckcache_stats(u->g->ckc, &before);
	if (rs_ckcache_save(u->g->ckc, u->g->st, NULL) != RS_OK)
		return;
	(void)rs_engine_sync(u->g->e, NULL);
	dt = rs_time_ms() - t;
	rs_ckcache_stats(u->g->ckc, &after);
	u->ck_saves += (int64_t)(after.saves - before.saves);
	u->bd.save_ms += dt;
	if (after.spills > before.spills) {
		u->bd.spills += (int64_t)(after.spills - before.spills);
		u->bd.spill_ms += dt;
	}
}

/*
 * Prompt tokens FROM .. TO − 1 in one engine call, the last one's logits
 * (or their best tokens, the job's top_k) kept when TO is the prompt's
 * end, the hidden rows shown to the drafter; timed (a call without logits
 * returns before the device is done, hence the sync).
 */
static enum rs_status
prefill_call(struct rs_gen_job *u, int32_t from, int32_t to, int32_t n)
{
	struct rs_gen	*g = u->g;
	const int32_t	*p = u->r->prompt;
	double		 t = rs_time_ms(), dt;
	int32_t		 k = u->bd.prefill_calls;
	enum rs_status	 st;

	if (to == n && u->top_k > 0)
		st = rs_engine_forward_top(g->e, g->st, p + from, to - from,
		    RS_LOGITS_LAST, u->top_k, u->r->kind == RS_GEN_CHAT, g->top,
		    g->hidden, &u->err);
	else
		st = rs_engine_forward(g->e, g->st, p + from, to - from,
		    to == n ? g->logits : NULL, to == n ? RS_LOGITS_LAST :
		    RS_LOGITS_NONE, g->hidden, &u->err);
	if (st == RS_OK && g->drafter != NULL)
		st = rs_drafter_observe(g->drafter, g->st, p + from, to - from,
		    from, g->hidden, &u->err);
	if (st == RS_OK && to < n)
		st = rs_engine_sync(g->e, &u->err);
	dt = rs_time_ms() - t;
	if (k < RS_GEN_MAX_CALLS) {
		u->bd.call_tokens[k] = to - from;
		u->bd.call_ms[k] = dt;
	}
	u->bd.prefill_calls++;
	u->bd.prefill_call_ms += dt;
	return (st);
}

enum rs_status
rs_gen_prefill(struct rs_gen_job *u)
{
	struct rs_gen		*g = u->g;
	const int32_t		*p = u->r->prompt;
	int32_t			 n = (int32_t)u->r->n_prompt, l, cp, from, to;
	int32_t			 hard, q;
	int			 at_ck, cut, tail;
	struct rs_gen_event	 ev = { .kind = RS_GEN_EV_PROGRESS };
	enum rs_status		 st;

	l = reuse(u, p, n);
	u->cached = l;
	if (g->drafter != NULL)
		rs_drafter_begin(g->drafter, g->st);
	cp = g->ckc != NULL ? -1 : checkpoint_pos(g, p, n);
	hard = g->ckc != NULL && drops_reasoning(g, u->r) ?
	    last_turn(g, p, n, l) : -1;
	/* a prompt with no assistant turn to restart at (completions, token
	   prompts): its last token runs alone after a checkpoint, so that
	   the same prompt again (a retry) or one that changes only its last
	   token (text appended to it re-tokenizes the end) restores there
	   and computes from P − 1 on; one at P cannot serve them, since the
	   last prompt token must run for its logits.  The split costs about
	   a decode step: only in a prefill longer than checkpoint_min_call
	   (a shorter one is what a resend recomputes without it) */
	tail = g->ckc != NULL && hard < 0 && u->r->kind != RS_GEN_CHAT &&
	    n - l > g->o.checkpoint_min_call && n - 1 > l;
	if (tail)
		hard = n - 1;
	/* the start needs no split: save it if it is a checkpoint */
	at_ck = g->ckc != NULL && is_checkpoint(g, p, n, l, l);
	ev.n_total = n - l;
	for (from = l; from < n; from = to) {
		to = from + g->o.prefill_chunk < n ? from +
		    g->o.prefill_chunk : n;
		if (cp > from && cp < to)
			to = cp;
		cut = 0;
		if (g->ckc != NULL && (q = next_checkpoint(g, p, n, l, from,
		    to, hard)) < to) {
			to = q;
			cut = 1;
		}
		if (from == cp && cp > 0)
			rs_state_checkpoint(g->st, NULL);	/* optional */
		if (at_ck)
			save(u);
		/* the next call starts at a checkpoint: one that split this
		   call, or one that falls on the chunk's end (no split) */
		at_ck = g->ckc != NULL && (cut || (to < n &&
		    is_checkpoint(g, p, n, l, to)));
		if ((st = prefill_call(u, from, to, n)) != RS_OK)
			return (st);
		u->prefilled = to - l;
		ev.n_done = to - l;
		if (rs_gen_emit(u, &ev) != 0)
			return (RS_OK);
	}
	/* the prompt's end (without a tail checkpoint one token before
	   it): a prompt that extends this one (the next turn) restarts
	   here */
	if (g->ckc != NULL && !tail)
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
 * The next output token: forced, or sampled from row I of the last pass
 * (its best tokens in g->top when the job has a top_k, else its logits),
 * under the forced call's rules (enum rs_gen_tc; a job that may have to
 * mask names has no top_k).
 */
static enum rs_status
next_token(struct rs_gen_job *u, int i, int32_t *t, int *forced)
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
	if (u->top_k > 0)
		st = rs_sample_next_top(u->smp, g->top + (int64_t)i * u->top_k,
		    u->top_k, t, &u->err);
	else {
		const float *row = g->logits + (int64_t)i * g->n_vocab;
		st = rs_sample_next(u->smp, u->tc == RS_GEN_TC_NAME ?
		    mask_names(u, row) : row, t, &u->err);
	}
	if (st != RS_OK)
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
	const int		 in_r = u->parse != NULL &&
	    rs_parse_in_reasoning(u->parse);
	enum rs_status		 st;

	if (!forced && in_r)
		u->reasoning++;
	if ((st = rs_sample_accept(u->smp, t, &u->err)) != RS_OK)
		return (st);
	u->out[u->n_out++] = t;
	if (u->n_out == 1)
		u->t_first = rs_time_ms();
	*end = RS_GEN_END_NONE;
	if (!forced && (rs_tok_is_eog(g->tok, t) || rs_stop_token(u->stop, t)))
		*end = RS_GEN_END_TOKEN;
	else if ((st = logprob(u, row, t)) != RS_OK ||
	    (st = token_text(u, t, end)) != RS_OK)
		return (st);
	/* one call: it ends at the "</tool_call>" that closes a call (§3.6),
	   not at a stray one in the reasoning or before any call */
	if (!in_r && t == g->id_call_start)
		u->call_open = 1;
	if (*end == RS_GEN_END_NONE && r->tools != NULL &&
	    (!r->parallel_tool_calls || r->tool_choice == RS_GEN_TOOLS_NAMED) &&
	    t == g->id_call_end && u->call_open)
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
 * A verification pass in flight: TOKS[0] was fed at position P with KK
 * drafts TOKS[1..KK] behind it, and I of them have been taken so far.
 */
struct pass {
	int32_t	p;
	int	fed;		/* 0 before the first pass */
	int	kk, i;
	int32_t	toks[1 + RS_DRAFTER_K_MAX];
};

/*
 * Feed T, the token just taken, with drafts behind it when a drafter is
 * on (none while tokens are being forced), and leave the logits rows in
 * g->logits, or their best tokens in g->top (the job's top_k), and the
 * hidden rows in g->hidden for an MTP drafter.
 */
static enum rs_status
feed(struct rs_gen_job *u, int32_t t, struct pass *ps)
{
	struct rs_gen	*g = u->g;
	int32_t		 room;
	int		 kk = 0, max;
	double		 t0;
	enum rs_status	 st;

	ps->p = rs_state_pos(g->st);
	room = g->n_ctx - ps->p - 1;		/* positions after T */
	ps->toks[0] = t;
	if (g->drafter != NULL && u->i_force >= u->n_force) {
		max = g->o.draft_max;
		if ((size_t)max > u->limit - u->n_out)
			max = (int)(u->limit - u->n_out);
		if (max > room)
			max = room;
		if (max > 0 && (st = rs_drafter_propose(g->drafter, g->st, t,
		    u->r->prompt, (int32_t)u->r->n_prompt, u->out,
		    (int32_t)u->n_out, max, ps->toks + 1, &kk, &u->err)) !=
		    RS_OK)
			return (st);
	}
	ps->fed = 1;
	ps->kk = kk;
	ps->i = 0;
	t0 = u->bd.first_decode_ms == 0 ? rs_time_ms() : 0;
	if (u->top_k > 0)
		st = rs_engine_forward_top(g->e, g->st, ps->toks, kk + 1,
		    kk > 0 ? RS_LOGITS_ALL : RS_LOGITS_LAST, u->top_k,
		    u->r->kind == RS_GEN_CHAT, g->top, g->hidden, &u->err);
	else
		st = rs_engine_forward(g->e, g->st, ps->toks, kk + 1,
		    g->logits, kk > 0 ? RS_LOGITS_ALL : RS_LOGITS_LAST,
		    g->hidden, &u->err);
	if (t0 > 0)
		u->bd.first_decode_ms = rs_time_ms() - t0;
	return (st);
}

/*
 * Close the pass PS: drop the drafts that were not taken (the caches keep
 * the fed token and the I drafts taken after it: a snapshot copy,
 * rs_state.h), show the kept tokens to the drafter (MTP catch-up) and
 * count the round.  COMPLETE: the pass was looked at to its end (a
 * rejection or every draft taken), not cut by the end of the run.
 */
static enum rs_status
settle(struct rs_gen_job *u, const struct pass *ps, int complete)
{
	struct rs_gen	*g = u->g;
	enum rs_status	 st;

	if (!ps->fed)
		return (RS_OK);
	if (ps->i < ps->kk && (st = rs_engine_truncate(g->e, g->st, ps->p +
	    ps->i + 1, &u->err)) != RS_OK)
		return (st);
	if (g->drafter == NULL)
		return (RS_OK);
	rs_drafter_result(g->drafter, ps->kk, ps->i, complete);
	return (rs_drafter_observe(g->drafter, g->st, ps->toks, ps->i + 1,
	    ps->p, g->hidden, &u->err));
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
		/* whole rows only without top_k (take's logprobs need them) */
		float *row = u->top_k > 0 ? NULL : u->g->logits +
		    (int64_t)ps.i * u->g->n_vocab;
		if ((st = next_token(u, ps.i, &t, &forced)) != RS_OK ||
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
		if (ps.i < ps.kk && t == ps.toks[1 + ps.i]) {
			ps.i++;
			continue;
		}
		if ((st = settle(u, &ps, 1)) != RS_OK ||
		    (st = feed(u, t, &ps)) != RS_OK)
			return (st);
	}
	u->end = end;
	/* as without drafts: the caches end before the last token taken */
	return (settle(u, &ps, 0));
}
