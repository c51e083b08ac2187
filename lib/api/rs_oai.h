/*
 * rs_oai.h - the OpenAI wire format of rs-serve's answers (serving.md §4):
 * chat and text completions as whole JSON bodies or as Server-Sent Events,
 * error envelopes, the model list, and the VS Code Copilot model entry
 * (§5.3).  Pure formatting over rs_gen's events and results: no I/O, no
 * HTTP.
 *
 * A struct rs_oai_resp holds what every chunk of one response repeats (id,
 * created, model, system_fingerprint), pre-rendered once, so that a streamed
 * token costs one JSON-escape of its text and a few appends (the per-token
 * budget of rs-serve is 0.2 ms; this is about a microsecond).
 *
 * Streaming (§4.5): rs_oai_sse_role() first, then rs_oai_sse_event() for
 * every rs_gen event, then rs_oai_sse_end() (finish chunk, the usage chunk
 * when asked for, timings on the last JSON chunk, "data: [DONE]") or
 * rs_oai_sse_error() after a failure.  Each appends whole events
 * ("data: <one-line JSON>\n\n") to a buffer and returns -1 only when the
 * buffer is out of memory.  Chat deltas: reasoning_content, content,
 * tool_calls (the first fragment of call k carries index k, its unique id,
 * type and name with empty arguments; later fragments index and arguments
 * only, and calls never interleave: what Copilot's parser needs, §3.5).
 * Text completions: {"text": ...} choices.
 *
 * Logprobs (§4.3), when rs_oai_resp_logprobs() asked for them: every
 * struct rs_logprob of the run (rs_gen.h says which tokens have one), as
 * OpenAI spells them.  Chat: "logprobs": {"content": [{"token", "logprob",
 * "bytes", "top_logprobs": [{"token", "logprob", "bytes"}, ...]}, ...]}.
 * Text completions: "logprobs": {"tokens", "token_logprobs",
 * "top_logprobs": [{token: logprob, ...}, ...], "text_offset"}.  A
 * token's "bytes" are its vocabulary entry's (a control token spelled
 * out, a padding row's empty); "token" is those bytes less any that are
 * not valid UTF-8 (a token may hold part of a character: the character
 * shows in no token string, its bytes in "bytes").  Streamed, LOGPROB
 * events queue their entries in the response and the next chunk carries
 * the queue (the entries of the tokens taken since the previous chunk;
 * chunks with none carry "logprobs": null), the finish chunk what is
 * left: tokens whose text went to no delta (markup the parser consumed, a
 * stop string).
 *
 * Lifecycle: rs_oai_resp_init() / rs_oai_resp_cleanup(); the model and
 * fingerprint strings are copied.  Functions returning struct rs_json give
 * a new value (caller frees with rs_json_free()) or NULL when out of
 * memory.  Thread-safe for distinct responses.
 */
#ifndef RS_OAI_H
#define RS_OAI_H

#include <stddef.h>
#include <stdint.h>

#include "rs_buf.h"
#include "rs_gen.h"
#include "rs_json.h"
#include "rs_logprob.h"
#include "rs_tok.h"

enum rs_oai_api {
	RS_OAI_CHAT,		/* POST /v1/chat/completions */
	RS_OAI_COMPLETION	/* POST /v1/completions */
};

#define RS_OAI_ID_MAX	48	/* "chatcmpl-" + 32 characters + NUL */

struct rs_oai_resp {
	enum rs_oai_api	 api;
	char		 id[RS_OAI_ID_MAX];
	int64_t		 created;	/* Unix seconds */
	char		*model;
	char		*fingerprint;
	int		 include_usage;	/* stream_options.include_usage */
	struct rs_buf	 head;		/* '{"id":...,"model":...,' */
	/* logprobs: TOK (borrowed) spells tokens, NULL when not asked for;
	   PEND queues the entries for the next chunk; OFFSET is the next
	   entry's text_offset (text completions) */
	const struct rs_tok *tok;
	struct rs_logprob *pend;	/* (cap_pend) */
	size_t		 n_pend, cap_pend;
	int64_t		 offset;
};

/*
 * The id of a response: "chatcmpl-" (chat) or "cmpl-" followed by 32
 * characters of [A-Za-z0-9] taken from the 32 bytes at RND (random bytes;
 * the caller draws them).
 */
void		 rs_oai_make_id(enum rs_oai_api api,
		    const unsigned char rnd[32], char id[RS_OAI_ID_MAX]);

/*
 * Start response ID (copied) of API, created at CREATED (Unix seconds),
 * for MODEL with SYSTEM_FINGERPRINT (both copied, JSON-escaped).  Returns -1
 * when out of memory (the response can still be cleaned up).
 */
int		 rs_oai_resp_init(struct rs_oai_resp *r, enum rs_oai_api api,
		    const char *id, int64_t created, const char *model,
		    const char *fingerprint, int include_usage);
void		 rs_oai_resp_cleanup(struct rs_oai_resp *r);

/*
 * Report logprobs in R's chunks and body (the request asked for them);
 * TOK, the model's tokenizer, must outlive R.
 */
void		 rs_oai_resp_logprobs(struct rs_oai_resp *r,
		    const struct rs_tok *tok);

/* ---- streaming ---- */

/* The first chunk: delta {"role":"assistant","content":""} (chat only). */
int		 rs_oai_sse_role(const struct rs_oai_resp *r,
		    struct rs_buf *out);

/*
 * The chunk of one rs_gen event, if it has one (REASONING, CONTENT,
 * TOOL_CALL, TOOL_ARGS; PROGRESS, TOKEN and FINISH give nothing; LOGPROB
 * is queued for the next chunk when logprobs are on).  Text completions
 * only stream CONTENT.
 */
int		 rs_oai_sse_event(struct rs_oai_resp *r,
		    const struct rs_gen_event *ev, struct rs_buf *out);

/*
 * The end of a successful stream: the finish chunk (delta {}, RES's
 * finish_reason), the usage chunk (choices [], RES's usage) when
 * include_usage, RES's timings on the last of them, then "data: [DONE]".
 */
int		 rs_oai_sse_end(struct rs_oai_resp *r,
		    const struct rs_gen_result *res, struct rs_buf *out);

/*
 * A failure after the stream started (§4.5): 'data: {"error": {...}}' and
 * no [DONE].
 */
int		 rs_oai_sse_error(const struct rs_gen_error *ge,
		    struct rs_buf *out);

/* A comment line that clients ignore, to keep idle timeouts away. */
int		 rs_oai_sse_keepalive(struct rs_buf *out);

/* ---- whole bodies ---- */

/*
 * The non-streamed response (§4.4): chat.completion with the message
 * (content, null only when empty and tool calls exist; reasoning_content
 * and tool_calls only when non-empty) or text_completion with the text;
 * logprobs (null unless asked for), finish_reason, usage and timings.
 */
struct rs_json	*rs_oai_response(const struct rs_oai_resp *r,
		    const struct rs_gen_result *res);

/*
 * The error envelope {"error": {"message", "type", "param", "code"}}
 * (§4.6).  TYPE NULL: the usual type for CODE (rs_oai_error_type()); PARAM
 * NULL or "": null.
 */
struct rs_json	*rs_oai_error(int code, const char *type, const char *message,
		    const char *param);

/* The envelope around rs_gen_error_json(GE). */
struct rs_json	*rs_oai_gen_error(const struct rs_gen_error *ge);

/*
 * §4.6: 400 invalid_request_error, 401 authentication_error, 403
 * permission_error, 404 not_found_error, 405 and 413 invalid_request_error,
 * 501 not_supported_error, 503 unavailable_error, anything else
 * server_error.
 */
const char	*rs_oai_error_type(int code);

/* ---- logprobs ---- */

/*
 * Chat's "content" list for the N entries at LP, tokens spelled by TOK:
 * [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob",
 * "bytes"}, ...]}, ...].
 */
struct rs_json	*rs_oai_logprobs_chat(const struct rs_logprob *lp, size_t n,
		    const struct rs_tok *tok);

/*
 * Text completions' object for the N entries at LP: {"tokens",
 * "token_logprobs", "top_logprobs", "text_offset"}.  Each top_logprobs
 * object holds the entry's alternatives and its own token (OpenAI: up to
 * logprobs + 1 of them).  text_offset is the position, in Unicode code
 * points of the completion text, where the token's text starts (counting
 * from *OFFSET, which is advanced past the N tokens): a control token
 * adds nothing there, as the text does not hold it.
 */
struct rs_json	*rs_oai_logprobs_text(const struct rs_logprob *lp, size_t n,
		    const struct rs_tok *tok, int64_t *offset);

/* ---- the model ---- */

struct rs_oai_model {
	const char	*id;		/* served model id (the alias) */
	int64_t		 created;	/* Unix seconds */
	int64_t		 n_ctx;		/* context size served */
	int64_t		 n_ctx_train;	/* the model's own context length */
	int64_t		 n_vocab;
	/* Copilot capabilities */
	int		 thinking;	/* the template has a thinking switch */
	int		 effort;	/* ... and reasoning-effort levels */
};

/*
 * GET /v1/models (§4.11): {"object": "list", "data": [{"id", "object":
 * "model", "created", "owned_by": "local", "meta": {"n_ctx",
 * "n_ctx_train", "n_vocab"}, "max_model_len"}]}.
 */
struct rs_json	*rs_oai_models(const struct rs_oai_model *m);
/* GET /v1/models/{id}: the one model object of that list. */
struct rs_json	*rs_oai_model_obj(const struct rs_oai_model *m);

/*
 * The output budget rs-serve advertises for a context of N_CTX tokens:
 * min(32768, n_ctx / 4).  The input budget leaves 12.5% headroom below
 * n_ctx − output, for the difference between Copilot's o200k token counts
 * and Qwen's (§5.2), rounded down to a multiple of 1000 when that is
 * still positive: n_ctx 131072 gives 86000 and 32768, 262144 gives 200000
 * and 32768 (the numbers of §5.3).
 */
void		 rs_oai_copilot_budget(int64_t n_ctx, int64_t *max_in,
		    int64_t *max_out);

/*
 * The chatLanguageModels.json content for a server at URL (§5.2, §5.3): an
 * array of one "customendpoint" group holding one model entry.  URL is the
 * server's base ("http://127.0.0.1:8081", ".../v1") or a full
 * ".../chat/completions" endpoint; the entry gets the full endpoint.
 * toolCalling true, vision false, streaming true, thinking as M says,
 * token budgets from rs_oai_copilot_budget().  When M->thinking:
 * supportsReasoningEffort ["none", "low", "medium", "xhigh"] (M->effort)
 * or ["none", "medium"] (a switch without levels), with
 * reasoningEffortFormat "chat-completions": Copilot sends the level picked
 * in its menu as reasoning_effort, which turns thinking on (§2.5), while
 * its side requests (titles, commit messages) send none and do not think.
 * NULL when out of memory.
 */
struct rs_json	*rs_oai_copilot(const struct rs_oai_model *m, const char *name,
		    const char *url);

/*
 * The endpoint Copilot calls for base URL (§5.2): URL as is when it
 * contains "/chat/completions"; else URL (less trailing slashes) plus
 * "/chat/completions" when it ends in "/v<digits>", plus
 * "/v1/chat/completions" otherwise.  Caller frees.  NULL when out of
 * memory.
 */
char		*rs_oai_chat_url(const char *url);

#endif /* RS_OAI_H */
