/*
 * rs_gen.h - text generation over the engine: a request with OpenAI field
 * names (serving.md §4.3) becomes prompt tokens (chat template §2, §2.8),
 * then prefill, a decode loop with sampling and stop conditions, and the
 * output parser (§3), streamed as events and summed up in a result with
 * usage and timings (§4.8).
 *
 *   JSON body --rs_gen_req_parse()--> struct rs_gen_req      (validation,
 *     §2.3 normalisation, §2.5 thinking/effort mapping, sampling fields)
 *   --rs_gen_prepare()--> prompt tokens in the request      (rendering,
 *     tokenization, context check)
 *   --rs_gen_run()--> events to a callback, struct rs_gen_result
 *
 * Three kinds of request:
 *
 *   RS_GEN_CHAT    "messages" (+ "tools"...): rendered by the model's chat
 *                  template; output parsed into reasoning, content and tool
 *                  calls; CONTROL tokens that are not end-of-generation and
 *                  padding ids are never sampled (§0 hardening).
 *   RS_GEN_TEXT    "prompt" as a string: tokenized with special parsing on
 *                  (§4.10); every output byte is content.
 *   RS_GEN_TOKENS  "prompt" as an array of ids, or "tokens" / "ids": run as
 *                  given; every output byte is content.  Nothing is masked,
 *                  so greedy decoding follows the model's argmax exactly.
 *
 * Prefix reuse (§2.8).  The state keeps the token history of the previous
 * request (its prompt and output, less the last sampled token, which was
 * never run).  A new prompt of P tokens reuses the longest common prefix L
 * of its tokens with that history (at most P − 1: the last prompt token
 * must run to give logits), exactly: the state is cut to L when a snapshot
 * or the checkpoint allows it (rs_state_truncate), else rolled back to its
 * checkpoint C <= L and the prefill recomputes C..L, else it starts from
 * 0.  Each run takes the checkpoint at the start of the prompt's last
 * message (its last <|im_start|> token; P − 1 when there is none): the
 * next turn of a chat re-sends this prompt plus the answer (re-rendered,
 * re-tokenized, so it matches only up to somewhere in the assistant turn),
 * so it rolls back there and recomputes only the assistant opener and the
 * part of the answer that matches, not the conversation before it.
 * cached_tokens counts the prompt tokens not recomputed.  Make the state
 * with opts.checkpoint set (opts.n_snap snapshots help too); without, only
 * an exact continuation of the history is reused.  With a checkpoint cache
 * (rs_gen_set_ckcache(), rs_ckcache.h) the one checkpoint gives way to
 * many, kept by token prefix and shared with other generators: at every
 * assistant turn's start, every o.checkpoint_every positions and at the
 * prompt's end, so that an agent's turn whose template dropped earlier
 * reasoning, an edited message or another conversation sharing the system
 * prompt restarts from the latest one inside what it shares.
 *
 * Context (§4.9): a prompt of P >= n_ctx − 1 tokens is refused
 * (exceed_context_size_error); max_tokens beyond the room left is clamped
 * to n_ctx − P tokens and ends with finish_reason "length".
 *
 * Lifecycle and threads.  One struct rs_gen per sequence state; several
 * may share an engine (rs-serve --slots N: N states and generators on one
 * engine, run one at a time by its engine thread).  rs_gen_new() borrows
 * the engine, the state and the tokenizer, which must outlive it; the
 * state then belongs to it (do not run anything else on it;
 * rs_gen_reset() forgets the cache).
 * rs_gen_run() runs one request at a time.  rs_gen_req_parse() and
 * rs_gen_prepare() only read what never changes after rs_gen_new() (the
 * tokenizer, the template variant, n_ctx, n_vocab), so HTTP threads may
 * validate, render and tokenize while another request runs (§4.5 wants
 * all errors before the 200 status line).  A request belongs to one thread
 * at a time.
 */
#ifndef RS_GEN_H
#define RS_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "rs_chat.h"
#include "rs_drafter.h"
#include "rs_engine.h"
#include "rs_err.h"
#include "rs_json.h"
#include "rs_logprob.h"
#include "rs_sample.h"
#include "rs_state.h"
#include "rs_tok.h"

#define RS_GEN_MAX_STOP		16	/* stop strings per request (§4.3) */
#define RS_GEN_MAX_TOOLS	128	/* tools per request (§4.3) */
#define RS_GEN_MAX_TOOL_NAME	128	/* characters of a tool name (§4.3) */

struct rs_gen;

/* ---- errors ---- */

/*
 * A failed request, ready for the OpenAI error envelope (§4.6):
 * {"error": {"message", "type", "param", "code"}}.
 */
struct rs_gen_error {
	struct rs_err	 err;		/* status and message */
	const char	*type;		/* "invalid_request_error",
					   "exceed_context_size_error",
					   "server_error" (static) */
	int		 code;		/* HTTP status: 400 or 500 */
	char		 param[128];	/* JSON path ("messages[2].content"),
					   "" when none */
	int64_t		 n_prompt_tokens;	/* exceed_context_size_error */
	int64_t		 n_ctx;			/* exceed_context_size_error */
};

/* ---- the generator ---- */

struct rs_gen_opts {
	/* RS_CHAT_UNKNOWN: identify the GGUF's tokenizer.chat_template; a
	   known variant overrides it (rs-generate --chat-template-file) */
	enum rs_chat_variant	 variant;
	/* 1: CONTROL-token texts in client text become control tokens, as
	   in the reference (§1.3 tokenize_client_specials); 0 (default):
	   they stay text */
	int			 client_specials;
	/* server defaults (§2.5), copied into each request by
	   rs_gen_req_init(): enable_thinking 0 (thinking off unless the
	   request asks: an effort other than "none", or enable_thinking
	   true), effort "xhigh" (one of "xhigh", "medium", "low"; used
	   when thinking is on without a level), preserve_thinking 1 */
	int			 enable_thinking;
	const char		*reasoning_effort;
	int			 preserve_thinking;
	/* sampling defaults: the model's (§0): temperature 1, top_p 0.95,
	   top_k 20, everything else off, seed 0 */
	struct rs_sample_params	 sample;
	/* prompt tokens per forward call, with a PROGRESS event after each
	   (the cancellation points of a long prefill); 0: the engine's
	   chunk (rs_engine_max_batch(): 2048 on the GPU, where prefill on
	   tensor cores wants long calls), at least 256 */
	int32_t			 prefill_chunk;
	/* RS_DRAFTER_NONE: one forward pass per token.  Otherwise
	   speculative decoding with that drafter (rs_drafter.h): each pass
	   verifies up to draft_max (1..16) drafted tokens, fewer when the
	   request's running acceptance says so, and keeps those the
	   sampler chooses; the output is the same token for token (the
	   engine is batch-invariant and the sampler draws once per token).
	   The state needs n_snap >= draft_max + 1 to drop rejected drafts
	   with one copy; MTP drafters need a model with an MTP block. */
	enum rs_drafter_kind	 draft;
	int			 draft_max;
	/* with a checkpoint cache (rs_gen_set_ckcache): also checkpoint
	   at the multiples of this many positions, in a prefill of more
	   than that many tokens, from min(it, 256) tokens after the
	   prefill's start on (each splits an engine call); 0: only at
	   assistant-turn starts and at the prompt's end */
	int32_t			 checkpoint_every;
	/* with a checkpoint cache: an assistant turn's start or a multiple
	   of checkpoint_every inside a prefill is checkpointed only where
	   both engine calls it separates get at least this many tokens
	   (each call has a fixed cost on the GPU, and calls of at most
	   RS_ENGINE_EXACT_MAX tokens run every token's attention over the
	   whole context on their own); the prompt's last assistant turn
	   (its opener) is checkpointed all the same when the request's
	   template drops earlier turns' reasoning, since the next turn
	   leaves the history there.  0: 256 on the GPU, 1 (any) on the
	   CPU, whose calls cost only their tokens */
	int32_t			 checkpoint_min_call;
};

void		rs_gen_opts_init(struct rs_gen_opts *o);

/*
 * A generator over engine E, state ST (of E's model and backend, fresh or
 * not: it is reset) and tokenizer TOK; O may be NULL (defaults).  Sets E's
 * top-k skip mask to the chat bans (rs_engine_set_top_skip: sampling
 * without logprobs, penalties or biases takes only the best tokens of each
 * row from E).  Free with rs_gen_free(), which frees none of the three.  Fails with
 * RS_ERR_INVALID_ARG (ST of another model, TOK with more ids than the
 * model has rows, a bad default in O: effort, sampling ranges),
 * RS_ERR_UNSUPPORTED (O->variant not a known template), RS_ERR_NOMEM.  A
 * GGUF whose template is unknown or lacks the chat tokens still gives a
 * generator: only its RS_GEN_CHAT requests fail (rs_gen_chat_ok()).
 */
enum rs_status	rs_gen_new(struct rs_gen **out, struct rs_engine *e,
		    struct rs_state *st, const struct rs_tok *tok,
		    const struct rs_gen_opts *o, struct rs_err *err);
void		rs_gen_free(struct rs_gen *g);

/* Forget the cached prefix (the next prompt is prefilled from 0). */
void		rs_gen_reset(struct rs_gen *g);

struct rs_ckcache;

/*
 * Use checkpoint cache C (rs_ckcache.h; borrowed, NULL: none) for prefix
 * reuse from now on, instead of the state's one checkpoint: each prefill
 * saves the state at the start of every assistant turn of the prompt
 * (each "<|im_start|>" followed by "assistant"), every
 * o.checkpoint_every positions (both where o.checkpoint_min_call allows),
 * and at the prompt's end; a prompt that
 * the state's history cannot be cut back to exactly restores the longest
 * of the state's checkpoints inside the common prefix.  Several
 * generators (rs-serve's slots) may share C; they run one at a time.
 */
void		rs_gen_set_ckcache(struct rs_gen *g, struct rs_ckcache *c);

/* Positions of the state: the context size. */
int32_t		rs_gen_n_ctx(const struct rs_gen *g);

/* The chat template in use (RS_CHAT_UNKNOWN: none). */
enum rs_chat_variant rs_gen_variant(const struct rs_gen *g);

/*
 * 1 when chat requests can run; otherwise 0 and, when ERR is non-NULL,
 * why (unknown template, a chat token missing from the vocabulary).
 */
int		rs_gen_chat_ok(const struct rs_gen *g, struct rs_err *err);

/* ---- requests ---- */

enum rs_gen_kind {
	RS_GEN_CHAT,
	RS_GEN_TEXT,
	RS_GEN_TOKENS
};

/* tool_choice (§3.8). */
enum rs_gen_tool_choice {
	RS_GEN_TOOLS_AUTO,	/* parse calls when tools are given */
	RS_GEN_TOOLS_NONE,	/* tools left out of the prompt, no parsing */
	RS_GEN_TOOLS_REQUIRED,	/* force "<tool_call>\n<function=" */
	RS_GEN_TOOLS_NAMED	/* force "<tool_call>\n<function=NAME>\n" */
};

/*
 * One request.  rs_gen_req_init() fills the defaults, rs_gen_req_parse()
 * the fields a JSON body gives; a caller may also set fields directly
 * (rs-generate --raw does).  Every pointer is owned by the request and
 * freed by rs_gen_req_cleanup().
 */
struct rs_gen_req {
	enum rs_gen_kind	 kind;
	/* the body's input field ("messages", "prompt", "tokens", "ids";
	   static), the param of errors about the prompt (§4.6) */
	const char		*input;

	/* RS_GEN_TEXT: the prompt, TEXT_LEN bytes (NUL-terminated) */
	char			*text;
	size_t			 text_len;

	/* RS_GEN_CHAT, after §2.3: messages with role, content (string, or
	   null for an assistant), reasoning_content, tool_calls (arguments
	   as objects); tools rebuilt as {type, function: {name,
	   description, parameters}}, NULL when absent, empty or
	   tool_choice "none" */
	struct rs_json		*messages;
	struct rs_json		*tools;
	enum rs_gen_tool_choice	 tool_choice;
	char			*tool_name;	/* RS_GEN_TOOLS_NAMED */
	int			 parallel_tool_calls;	/* default 1 */
	int			 enable_thinking;	/* resolved: 0 or 1 */
	const char		*reasoning_effort;	/* "xhigh", "medium",
							   "low" (static) */
	int			 preserve_thinking;
	int			 add_generation_prompt;	/* default 1 */

	/* sampling (rs_sample.h); SAMPLE.bias points at BIAS */
	struct rs_sample_params	 sample;
	struct rs_logit_bias	*bias;
	size_t			 n_bias;
	int64_t			 max_tokens;	/* >= 1, or -1: to the context
						   end */
	/* logprobs (§4.3): 1 reports a struct rs_logprob for every output
	   token (RS_GEN_EV_LOGPROB, rs_gen_result.logprobs) with the
	   TOP_LOGPROBS (0..RS_LOGPROB_MAX_TOP) most likely tokens */
	int			 logprobs;
	int			 top_logprobs;
	char			**stop;		/* N_STOP strings */
	size_t			 n_stop;
	int32_t			*stop_ids;	/* extra stop token ids */
	size_t			 n_stop_ids;

	/* the prompt: set by rs_gen_req_parse() for RS_GEN_TOKENS, by
	   rs_gen_prepare() otherwise */
	int32_t			*prompt;
	size_t			 n_prompt;
	/* set by rs_gen_prepare() for RS_GEN_CHAT: the rendered prompt
	   (what /apply-template returns), RENDERED_LEN bytes */
	char			*rendered;
	size_t			 rendered_len;
	/* set by rs_gen_prepare(): the output starts as reasoning (the
	   prompt ends in "<think>\n"); tokens forced after the prompt, or
	   after "</think>" when thinking (tool_choice required or named) */
	int			 thinking;
	int32_t			*forced;
	size_t			 n_forced;
	/* set by rs_gen_prepare() for tool_choice required: every tool's
	   "NAME>\n" as tokens, end to end, sequence i ending at
	   NAME_END[i]; the name after the forced "<function=" is sampled
	   among these only (rs_gen_loop.c) */
	int32_t			*name_ids;
	size_t			*name_end;
	size_t			 n_names;
	/* tool_choice required or named: the tokens the call's opening
	   needs at least ("</think>" when thinking, the forced text, the
	   longest name); max_tokens is raised to it, the reasoning ends in
	   time for it */
	size_t			 n_reserve;
	int			 prepared;
	/* set by rs_gen_prepare(): wall time of rendering the template and
	   of tokenizing (RS_GEN_TEXT: tokenizing only), ms */
	double			 render_ms, tokenize_ms;
};

/*
 * Defaults from G's options (G may be NULL: rs_gen_opts_init()'s): chat
 * switches, sampling, max_tokens −1.  Fields a body leaves out keep what R
 * holds when rs_gen_req_parse() runs, so a caller sets its own defaults in
 * between: a server a fresh sample.seed per request (OpenAI: no seed, no
 * determinism), rs-generate its -s and -n.
 */
void		rs_gen_req_init(struct rs_gen_req *r, const struct rs_gen *g);
void		rs_gen_req_cleanup(struct rs_gen_req *r);

/*
 * Fill R (initialised) from BODY, a JSON object with OpenAI field names.
 * Exactly one input: "messages" (RS_GEN_CHAT), "prompt" (a string:
 * RS_GEN_TEXT; an array of ids: RS_GEN_TOKENS), "tokens" or "ids"
 * (RS_GEN_TOKENS).  Read, with null meaning the default (§4.2): tools,
 * tool_choice, parallel_tool_calls, reasoning_effort, enable_thinking,
 * reasoning.effort, chat_template_kwargs.{enable_thinking,
 * reasoning_effort, preserve_thinking}, add_generation_prompt,
 * max_completion_tokens (wins) / max_tokens, temperature, top_p, top_k,
 * min_p, presence_penalty, frequency_penalty, repetition_penalty, seed,
 * stop, stop_token_ids, logit_bias, n, logprobs, top_logprobs,
 * response_format, continue_final_message, functions, function_call.
 * Every other field is ignored.  The thinking switch resolves as
 * serving.md §2.5 gives it: chat_template_kwargs.enable_thinking ??
 * enable_thinking ?? (an effort given ? effort != "none" : G's default,
 * off unless the caller changed it), so a request without either stays
 * out of thinking.  logprobs follows the endpoint the input
 * belongs to: with "messages" (chat) a boolean, with top_logprobs an
 * integer in [0, RS_LOGPROB_MAX_TOP] that needs logprobs true; with
 * "prompt", "tokens" or "ids" (text completions) an integer in [0,
 * RS_LOGPROB_MAX_TOP], the number of alternatives (top_logprobs is then
 * not read).
 *
 * Fails with RS_ERR_INVALID_ARG and GE filled (type invalid_request_error,
 * code 400, param the field's path) for: not an object, no input or two,
 * a wrong type, a value out of range (§4.3: temperature [0, 2], top_p
 * (0, 1], top_k >= -1, min_p [0, 1], penalties [-2, 2], repetition > 0,
 * max_tokens [1, 2^31 − 1], n = 1, at most RS_GEN_MAX_STOP non-empty
 * stop strings, logit_bias keys that are ids of G's model with values in
 * [-100, 100], logprobs and top_logprobs as above), a token id outside
 * the model, an effort other than none, minimal, low, medium, high,
 * xhigh, max (any case), unsupported features (response_format other than
 * text, n > 1, continue_final_message, functions), and every §2.3 rule
 * (roles, content parts, images, tool calls and their arguments, tool
 * messages, tools and their names, tool_choice).  RS_ERR_NOMEM (type
 * server_error, 500).  On failure R is left for rs_gen_req_cleanup() only.
 */
enum rs_status	rs_gen_req_parse(const struct rs_gen *g, struct rs_gen_req *r,
		    const struct rs_json *body, struct rs_gen_error *ge);

/*
 * Turn R's input into prompt tokens: render the messages (RS_GEN_CHAT;
 * template errors give their own message), tokenize (§1.3: template text
 * with special parsing, client text without unless client_specials),
 * check the ids and the context.  Idempotent.  Fails with
 * RS_ERR_INVALID_ARG (type invalid_request_error: a template error, an
 * empty prompt, an id outside the model, a forced tool call without room
 * in the context, param tool_choice), RS_ERR_LIMIT (type
 * exceed_context_size_error, with n_prompt_tokens and n_ctx, and a message
 * matching both "maximum context length" and "exceeds the available
 * context size"), RS_ERR_UNSUPPORTED (a chat request while
 * rs_gen_chat_ok() is 0), RS_ERR_NOMEM.
 */
enum rs_status	rs_gen_prepare(const struct rs_gen *g, struct rs_gen_req *r,
		    struct rs_gen_error *ge);

/*
 * How many prompt tokens of request R (rs_gen_prepare()d) G's state holds
 * already: the common prefix of R's prompt and the state's history, at
 * most P − 1.  The run may recompute part of it (back to the checkpoint,
 * see prefix reuse above).  For choosing among generators that share an
 * engine (rs-serve --slots); it reads G's state, so only the thread that
 * runs G may call it.
 */
int32_t		rs_gen_common_prefix(const struct rs_gen *g,
		    const struct rs_gen_req *r);

/*
 * How much R belongs on G: 2 when R's prompt starts with G's whole history
 * (it continues what G ran: a text completion fed back, a resend), 1 when
 * the common prefix (as above) holds the start of an assistant turn
 * ("<|im_start|>assistant": R continues, or edits, the conversation in
 * G's state), 0 when it shares less (a system prompt, tools and files:
 * another conversation).  rs-serve runs a request of affinity 0 on its
 * least recently used slot, which then takes what it shares from another
 * slot's checkpoints (rs_ckcache.h).  Same thread rule as
 * rs_gen_common_prefix().
 */
int		rs_gen_affinity(const struct rs_gen *g,
		    const struct rs_gen_req *r);

/*
 * Where a run of R on G would start prefilling: the common prefix L when
 * G's state reaches it exactly (nothing to undo, a snapshot, L = 0), else
 * with a checkpoint cache the longest of G's own checkpoints inside L (or
 * 0), else L (the state's own checkpoint is not looked at: it only
 * recomputes the last turn).  For choosing a slot; same thread rule as
 * rs_gen_common_prefix().
 */
int32_t		rs_gen_reusable(const struct rs_gen *g,
		    const struct rs_gen_req *r);

/* ---- running ---- */

enum rs_gen_finish {
	RS_GEN_FINISH_STOP,		/* end-of-generation token, stop token
					   id or stop string */
	RS_GEN_FINISH_LENGTH,		/* max_tokens or the context end */
	RS_GEN_FINISH_TOOL_CALLS,	/* STOP with at least one tool call */
	RS_GEN_FINISH_CANCELLED		/* the callback asked to stop */
};

/* "stop", "length", "tool_calls", "cancelled". */
const char	*rs_gen_finish_name(enum rs_gen_finish f);

enum rs_gen_ev {
	RS_GEN_EV_PROGRESS,	/* prefill: N_DONE of N_TOTAL tokens run */
	RS_GEN_EV_REASONING,	/* TEXT: a piece of reasoning_content */
	RS_GEN_EV_CONTENT,	/* TEXT: a piece of content */
	RS_GEN_EV_TOOL_CALL,	/* call INDEX starts: ID, name in TEXT */
	RS_GEN_EV_TOOL_ARGS,	/* TEXT: a piece of call INDEX's arguments */
	RS_GEN_EV_LOGPROB,	/* LP: the next output token, before its
				   text (only when logprobs are asked) */
	RS_GEN_EV_TOKEN,	/* TOKEN joined the output (after its text) */
	RS_GEN_EV_FINISH	/* generation ended: FINISH (not sent when
				   cancelled) */
};

struct rs_gen_event {
	enum rs_gen_ev		 kind;
	const char		*text;	/* LEN bytes, valid UTF-8, not empty;
					   borrowed for the callback only */
	size_t			 len;
	size_t			 index;	/* TOOL_*: the call, 0-based */
	const char		*id;	/* TOOL_CALL: "call_" + 24 chars */
	int32_t			 token;	/* TOKEN: its id */
	const struct rs_logprob	*lp;	/* LOGPROB; borrowed for the callback
					   only */
	int32_t			 n_done, n_total;	/* PROGRESS */
	enum rs_gen_finish	 finish;		/* FINISH */
};

/*
 * Logprobs.  With R->logprobs set, every output token gets a struct
 * rs_logprob, in output order, except a token that ends the run without
 * text (end-of-generation, a stop_token_ids id): reasoning, markup
 * (</think>, <tool_call>), tool-call and content tokens alike, forced
 * tokens (tool_choice) and a token whose text a stop string cuts
 * included.  Its logprob is the log-softmax of the raw logits of the
 * position that predicted it (rs_logprob.h: temperature 1, before
 * penalties, logit_bias and the sampler's filters), over the tokens the
 * request can produce: for RS_GEN_TEXT and RS_GEN_TOKENS every row of the
 * model's output matrix (padding rows included, as nothing is masked
 * there); for RS_GEN_CHAT all but the padding rows and control tokens it
 * never samples (§0 hardening), so that a greedy token is always the
 * first of its top list.  The same whether the token was sampled, forced
 * or an accepted draft (then the verification pass's row for its
 * position).  The LOGPROB event comes before the token's text events, so
 * a streaming client attaches the entries received since its last chunk
 * to its next chunk.
 */

/*
 * Called for every event, in order.  A non-zero return cancels the run
 * at once: no further forward pass, no further event (cancellation lands
 * within one token, or within one prefill chunk).
 */
typedef int	(*rs_gen_cb)(const struct rs_gen_event *ev, void *arg);

struct rs_gen_usage {
	int64_t	prompt_tokens;		/* P, reused ones included */
	int64_t	cached_tokens;		/* reused from the previous request */
	int64_t	completion_tokens;	/* sampled and forced, EOG included */
	int64_t	reasoning_tokens;	/* sampled while in reasoning,
					   "</think>" included */
	int64_t	total_tokens;
};

/* Prefill calls listed one by one in struct rs_gen_timings. */
#define RS_GEN_MAX_CALLS	32

/* The llama.cpp "timings" object (§4.8) plus the time to first token. */
struct rs_gen_timings {
	int64_t	cache_n;		/* prompt tokens reused */
	int64_t	prompt_n;		/* prompt tokens run now */
	double	prompt_ms;		/* prefill wall time, replay included */
	double	prompt_per_token_ms;
	double	prompt_per_second;
	int64_t	predicted_n;		/* output tokens */
	double	predicted_ms;		/* from the prefill's end to the end */
	double	predicted_per_token_ms;
	double	predicted_per_second;
	double	ttft_ms;		/* from the run's start to the first
					   output token */
	int64_t	draft_n;		/* drafted tokens verified */
	int64_t	draft_n_accepted;	/* of those, taken as output */
	/* with a drafter (rs_gen_opts.draft), else NULL and 0, and left out
	   of the JSON */
	const char *draft;		/* its name, static */
	int64_t	draft_rounds;		/* verification passes with drafts */
	double	draft_ms;		/* proposing drafts (MTP steps) */
	double	draft_catchup_ms;	/* MTP cache catch-up */
	int	draft_k;		/* the K the run ended with */
	int	draft_n_pos;		/* positions with rounds below */
	int64_t	draft_pos_n[RS_DRAFTER_K_MAX];	/* rounds that drafted a
						   (j+1)-th token */
	int64_t	draft_pos_accepted[RS_DRAFTER_K_MAX];	/* that kept it */
	/* with a checkpoint cache (rs_gen_set_ckcache), else all 0 and
	   left out of the JSON */
	int	ckcache;		/* 1: a cache was in use */
	int64_t	checkpoint_hits;	/* 1: the prefix came from one */
	int64_t	checkpoint_misses;	/* 1: looked up, none applied */
	int64_t	checkpoint_tokens;	/* positions it restored */
	int64_t	checkpoint_saves;	/* checkpoints this run stored */
	int64_t	checkpoint_mem_bytes;	/* the cache's device bytes after
					   the run (host for the CPU) */
	int64_t	checkpoint_host_mem_bytes;	/* spilled to host RAM */
	/*
	 * Where the time to the first token went (ms, wall clock; the engine
	 * is synchronised after each step below, so device work is counted
	 * where it was issued).  RENDER_MS and TOKENIZE_MS come from
	 * rs_gen_prepare() (rs-serve: its prep thread, before the queue);
	 * the rest is rs_gen_run(): SETUP_MS (sampler, stop matcher,
	 * parser), LOOKUP_MS (common prefix, checkpoint pruning and choice),
	 * RESTORE_MS (a checkpoint restored; RESTORE_FROM_HOST 1 when it
	 * came from host RAM, RESTORE_CROSS 1 when from another state, KV
	 * rows copied), the PREFILL_CALLS engine calls (the first
	 * RS_GEN_MAX_CALLS of them in CALL_TOKENS / CALL_MS, PREFILL_CALL_MS
	 * their sum), the checkpoint saves (checkpoint_saves, SAVE_MS,
	 * spills to host among them: SPILLS, SPILL_MS), FIRST_TOKEN_MS (the
	 * prefill's end to the first output token: sampling it) and
	 * FIRST_TEXT_MS (the prefill's end to the first text event, after
	 * FIRST_TEXT_TOKENS output tokens: decode steps of markup such as
	 * <think> or held-back bytes).  prompt_ms = setup + lookup + restore
	 * + calls + saves, up to a few µs of bookkeeping.
	 */
	double	render_ms, tokenize_ms, setup_ms, lookup_ms, restore_ms;
	int	restore_from_host, restore_cross;
	int32_t	prefill_calls;
	double	prefill_call_ms;
	int32_t	call_tokens[RS_GEN_MAX_CALLS];
	double	call_ms[RS_GEN_MAX_CALLS];
	double	save_ms;
	int64_t	spills;
	double	spill_ms;
	double	first_token_ms, first_text_ms;
	int64_t	first_text_tokens;
	double	first_decode_ms;	/* the first decode step's engine
					   call (a graph re-capture when
					   the slot changed included) */
};

struct rs_gen_call {
	char	*id;		/* "call_" + 24 of [A-Za-z0-9] */
	char	*name;
	char	*arguments;	/* JSON object text, ARGS_LEN bytes */
	size_t	 args_len;
	int	 known;		/* NAME is one of the request's tools */
};

/* What a run produced; every pointer is owned: rs_gen_result_cleanup(). */
struct rs_gen_result {
	enum rs_gen_finish	 finish;
	char			*content;	/* CONTENT_LEN bytes, NUL-ended:
						   all text but RS_GEN_CHAT's
						   reasoning and calls */
	size_t			 content_len;
	char			*reasoning;	/* trimmed; "" when none */
	size_t			 reasoning_len;
	struct rs_gen_call	*calls;		/* complete tool calls */
	size_t			 n_calls;
	char			*raw;		/* the decoded output before
						   parsing: markup included,
						   stop string and EOG not */
	size_t			 raw_len;
	int32_t			*tokens;	/* output ids, forced and EOG
						   included */
	size_t			 n_tokens;
	struct rs_logprob	*logprobs;	/* with R->logprobs: one per
						   output token but an ending
						   one, in order; else NULL */
	size_t			 n_logprobs;
	struct rs_gen_usage	 usage;
	struct rs_gen_timings	 timings;
};

void		rs_gen_result_cleanup(struct rs_gen_result *res);

/*
 * Run prepared request R (rs_gen_prepare() is called if it was not):
 * reuse the cached prefix, prefill the rest, then sample until an
 * end-of-generation token, a stop token id or stop string, max_tokens or
 * the context end, or until CB (may be NULL) returns non-zero.  Events
 * stream to CB; on RS_OK *RES (initialised here) holds the result, also
 * for a cancelled run.  The same seed and request give the same tokens.
 *
 * Fails, with *RES empty, with rs_gen_prepare()'s errors; with
 * RS_ERR_INVALID_ARG or RS_ERR_LIMIT (code 400) for sampling or stop
 * values set directly in R that the sampler or the stop matcher refuse
 * (rs_gen_req_parse() never lets them through); or, once the prefill has
 * begun, with an engine or sampler failure (RS_ERR_NOMEM, RS_ERR_CUDA,
 * RS_ERR_INVALID_ARG for NaN logits; type server_error, code 500), after
 * which the cache is dropped.  Events already sent stay sent.
 */
enum rs_status	rs_gen_run(struct rs_gen *g, struct rs_gen_req *r,
		    rs_gen_cb cb, void *arg, struct rs_gen_result *res,
		    struct rs_gen_error *ge);

/* ---- JSON views (shared by rs-generate and rs-serve) ---- */

/*
 * {"prompt_tokens", "completion_tokens", "total_tokens",
 *  "prompt_tokens_details": {"cached_tokens"},
 *  "completion_tokens_details": {"reasoning_tokens"}} (§4.4).
 * NULL when out of memory; caller frees with rs_json_free().
 */
struct rs_json	*rs_gen_usage_json(const struct rs_gen_usage *u);

/* The §4.8 timings object plus "ttft_ms".  NULL when out of memory. */
struct rs_json	*rs_gen_timings_json(const struct rs_gen_timings *t);

/*
 * [{"id", "type": "function", "function": {"name", "arguments"}}, ...]
 * (§4.4).  NULL when out of memory.
 */
struct rs_json	*rs_gen_calls_json(const struct rs_gen_result *res);

/*
 * The inner object of the error envelope: {"message", "type", "param"
 * (null when empty), "code"}, plus "n_prompt_tokens" and "n_ctx" for
 * exceed_context_size_error (§4.6).  NULL when out of memory.
 */
struct rs_json	*rs_gen_error_json(const struct rs_gen_error *ge);

#endif /* RS_GEN_H */
