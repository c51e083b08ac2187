/*
 * serve_prep.c - the prep thread: everything between a generation
 * request's bytes and its prompt tokens, off the event loop.
 *
 * Turning a body into tokens costs time in proportion to its size: UTF-8
 * and JSON parsing, the §2.3 normalisation, rendering the chat template,
 * tokenizing (about 35 ns per byte here; a 3 MB prompt takes 0.1 s, the
 * 64 MiB limit seconds).  Done on the loop, that would stall every other
 * client, /health and the token stream included.  So the loop moves the
 * body into a job and this thread does the work: rs_gen_req_parse() and
 * rs_gen_prepare() only read what never changes in the generator, so they
 * may run while the engine thread generates.  Jobs are taken in arrival
 * order; each ends READY or ANSWERED (error envelope in job->out, status in
 * job->status) and goes back to the loop through serve_job_prepared().
 * The debugging endpoints of §4.1 (/tokenize, /detokenize,
 * /apply-template) are answered here whole.  Nothing here calls Kore.
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "cli.h"
#include "rs_pyjson.h"
#include "rs_utf8.h"
#include "serve.h"

static struct {
	pthread_mutex_t		 lock;
	pthread_cond_t		 cond;
	pthread_t		 thread;
	int			 started;
	int			 quit;
	struct serve_job	*head, *tail;
} prep = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
};

/* ANSWERED with the body J (taken) and status CODE. */
static void
answer(struct serve_job *job, int code, struct rs_json *j)
{
	char *s;

	rs_buf_reset(&job->out);
	if (j == NULL || (s = rs_json_dumps(j)) == NULL) {
		rs_buf_adds(&job->out, "{\"error\":{\"message\":\"out of "
		    "memory\",\"type\":\"server_error\",\"param\":null,"
		    "\"code\":500}}");
		code = 500;
	} else {
		rs_buf_adds(&job->out, s);
		free(s);
	}
	rs_json_free(j);
	job->status = code;
	serve_job_prepared(job, SERVE_ANSWERED);
}

static void
bad(struct serve_job *job, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ANSWERED with a 400 invalid_request_error. */
static void
bad(struct serve_job *job, const char *param, const char *fmt, ...)
{
	va_list	ap;
	char	msg[400];

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	answer(job, 400, rs_oai_error(400, NULL, msg, param));
}

/* BODY[KEY] as a bool in *V (absent or null: unchanged); -1 when not. */
static int
get_bool(const struct rs_json *obj, const char *key, int *v)
{
	struct rs_json *j = rs_json_get(obj, key);

	if (j == NULL || rs_json_kind(j) == RS_JSON_NULL)
		return (0);
	return (rs_json_as_bool(j, v));
}

/*
 * Whether BODY sets KEY: present and not null.  A null field is unset, as
 * OpenAI and rs_gen_req_parse read it, so "messages": null beside a prompt
 * must not pass for a chat request (it would skip the chat template).
 */
static int
given(const struct rs_json *b, const char *key)
{
	const struct rs_json *v = rs_json_get(b, key);

	return (v != NULL && rs_json_kind(v) != RS_JSON_NULL);
}

/*
 * The fields only the endpoint reads: stream and stream_options (§4.3;
 * include_usage is ignored without stream, §6 row 32), the input that
 * each endpoint takes (§4.1), and for text completions echo, suffix and
 * best_of (§4.10).  0, or -1 with the job ANSWERED.
 */
static int
endpoint_fields(struct serve_job *job, const struct rs_json *b)
{
	struct rs_json	*so, *j;
	int64_t		 best_of;
	int		 echo = 0;

	if (get_bool(b, "stream", &job->stream) != 0) {
		bad(job, "stream", "'stream' must be a boolean");
		return (-1);
	}
	so = rs_json_get(b, "stream_options");
	if (so != NULL && rs_json_kind(so) != RS_JSON_NULL &&
	    rs_json_kind(so) != RS_JSON_OBJECT) {
		bad(job, "stream_options", "'stream_options' must be an "
		    "object");
		return (-1);
	}
	if (get_bool(so, "include_usage", &job->include_usage) != 0) {
		bad(job, "stream_options.include_usage", "'stream_options."
		    "include_usage' must be a boolean");
		return (-1);
	}
	job->include_usage = job->include_usage && job->stream;
	if (job->api == SERVE_CHAT) {
		if (!given(b, "messages")) {
			bad(job, "messages", "'messages' is required");
			return (-1);
		}
		return (0);
	}
	if (!given(b, "prompt")) {
		bad(job, "prompt", "'prompt' is required");
		return (-1);
	}
	if (given(b, "messages")) {
		bad(job, "messages", "'messages' belongs to "
		    "/v1/chat/completions");
		return (-1);
	}
	if (get_bool(b, "echo", &echo) != 0 || echo) {
		bad(job, "echo", "'echo' is not supported by this server");
		return (-1);
	}
	j = rs_json_get(b, "suffix");
	if (j != NULL && rs_json_kind(j) != RS_JSON_NULL) {
		bad(job, "suffix", "'suffix' is not supported by this server");
		return (-1);
	}
	j = rs_json_get(b, "best_of");
	if (j != NULL && rs_json_kind(j) != RS_JSON_NULL &&
	    (rs_json_as_whole(j, &best_of) != 0 || best_of != 1)) {
		bad(job, "best_of", "'best_of' other than 1 is not supported "
		    "by this server");
		return (-1);
	}
	return (0);
}

/* {KEY: VALUE} (VALUE taken), or NULL when out of memory. */
static struct rs_json *
object1(const char *key, struct rs_json *value)
{
	struct rs_json *o = rs_json_obj();

	if (o == NULL || value == NULL || rs_json_set(o, key, value) != 0) {
		if (o == NULL)
			rs_json_free(value);
		rs_json_free(o);
		return (NULL);
	}
	return (o);
}

/*
 * POST /tokenize {"content": string, "parse_special": bool (default
 * true)} -> {"tokens": [ids]}, llama.cpp's names.
 */
static void
tokenize(struct serve_job *job, const struct rs_json *b)
{
	struct rs_tok_ids	 ids;
	struct rs_json		*arr;
	struct rs_err		 err;
	const char		*text;
	size_t			 n, i;
	int			 special = 1;

	if (rs_json_as_str(rs_json_get(b, "content"), &text, &n) != 0) {
		bad(job, "content", "'content' must be a string");
		return;
	}
	if (get_bool(b, "parse_special", &special) != 0) {
		bad(job, "parse_special", "'parse_special' must be a boolean");
		return;
	}
	rs_tok_ids_init(&ids);
	if (rs_tok_encode(serve_model.tok, text, n, special ?
	    RS_TOK_SPECIAL_ALL : RS_TOK_SPECIAL_USER, &ids, &err) != RS_OK) {
		rs_tok_ids_cleanup(&ids);
		answer(job, 500, rs_oai_error(500, NULL, err.msg, NULL));
		return;
	}
	if ((arr = rs_json_arr()) != NULL)
		for (i = 0; i < ids.n; i++)
			if (rs_json_push(arr, rs_json_int(ids.v[i])) != 0) {
				rs_json_free(arr);
				arr = NULL;
				break;
			}
	rs_tok_ids_cleanup(&ids);
	answer(job, 200, object1("tokens", arr));
}

/* POST /detokenize {"tokens": [ids]} -> {"content": string}. */
static void
detokenize(struct serve_job *job, const struct rs_json *b)
{
	struct rs_json	*arr = rs_json_get(b, "tokens");
	struct rs_err	 err;
	int32_t		*ids;
	int64_t		 v;
	size_t		 n, i, len;
	char		*text;

	if (arr == NULL || rs_json_kind(arr) != RS_JSON_ARRAY) {
		bad(job, "tokens", "'tokens' must be an array of token ids");
		return;
	}
	n = rs_json_arr_len(arr);
	if ((ids = calloc(n + 1, sizeof(*ids))) == NULL) {
		answer(job, 500, NULL);
		return;
	}
	for (i = 0; i < n; i++) {
		if (rs_json_as_int(rs_json_arr_at(arr, i), &v) != 0 || v < 0 ||
		    v > INT32_MAX) {
			free(ids);
			bad(job, "tokens", "tokens[%zu] is not a token id", i);
			return;
		}
		ids[i] = (int32_t)v;
	}
	if (rs_tok_decode(serve_model.tok, ids, n, RS_TOK_DEC_SPECIAL, &text,
	    &len, &err) != RS_OK) {
		free(ids);
		bad(job, "tokens", "%s", err.msg);
		return;
	}
	free(ids);
	answer(job, 200, object1("content", rs_json_strn(text, len)));
	free(text);
}

/*
 * The generation endpoints, and /apply-template, which answers a chat body
 * with the prompt it renders to (§4.1).
 */
static void
generation(struct serve_job *job, const struct rs_json *body, double t0)
{
	const struct rs_gen	*gen = serve_engine_gen();
	struct rs_gen_error	 ge;
	unsigned char		 rnd[32];
	char			 id[RS_OAI_ID_MAX];
	enum rs_oai_api		 api;

	if (job->api != SERVE_COMPLETION && serve_cfg.no_chat) {
		bad(job, NULL, "chat requests are off on this server "
		    "(rs-serve --no-chat): use /v1/completions");
		return;
	}
	if (job->api == SERVE_TEMPLATE && !given(body, "messages")) {
		bad(job, "messages", "'messages' is required");
		return;
	}
	if (job->api != SERVE_TEMPLATE && endpoint_fields(job, body) != 0)
		return;
	memset(&ge, 0, sizeof(ge));
	rs_gen_req_init(&job->greq, gen);
	/* no seed, no determinism (as OpenAI): a fresh one per request */
	if (getrandom(&job->greq.sample.seed, sizeof(job->greq.sample.seed),
	    0) != (ssize_t)sizeof(job->greq.sample.seed))
		job->greq.sample.seed = (uint64_t)rs_time_ms();
	if (rs_gen_req_parse(gen, &job->greq, body, &ge) != RS_OK ||
	    rs_gen_prepare(gen, &job->greq, &ge) != RS_OK) {
		answer(job, ge.code, rs_oai_gen_error(&ge));
		return;
	}
	if (job->api == SERVE_TEMPLATE) {
		answer(job, 200, object1("prompt", rs_json_strn(
		    job->greq.rendered, job->greq.rendered_len)));
		return;
	}
	api = job->api == SERVE_CHAT ? RS_OAI_CHAT : RS_OAI_COMPLETION;
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		memset(rnd, 0, sizeof(rnd));
	rs_oai_make_id(api, rnd, id);
	if (rs_oai_resp_init(&job->fmt, api, id, (int64_t)time(NULL),
	    serve_cfg.alias, serve_model.fingerprint,
	    job->include_usage) != 0) {
		answer(job, 500, NULL);
		return;
	}
	if (job->greq.logprobs)
		rs_oai_resp_logprobs(&job->fmt, serve_model.tok);
	/* before the hand-over: from there the engine thread owns the log */
	job->log.prep_ms = rs_time_ms() - t0;
	serve_job_prepared(job, SERVE_READY);
}

static void
prepare(struct serve_job *job)
{
	struct rs_json	*body;
	struct rs_err	 err;
	size_t		 at;
	double		 t0 = rs_time_ms();

	/* §6 rows 1, 2 and 4: bytes, then JSON, then an object */
	if (!rs_utf8_valid(job->body, job->body_len, &at)) {
		bad(job, NULL, "request body is not valid UTF-8 at byte %zu",
		    at);
		return;
	}
	/* §1.7: unpaired surrogate escapes are read as U+FFFD and logged */
	job->log.lone_surrogates = rs_json_lone_surrogates(job->body,
	    job->body_len);
	if (rs_pyjson_parse(job->body, job->body_len, &body, &err) != RS_OK) {
		bad(job, NULL, "request body is not valid JSON: %s", err.msg);
		return;
	}
	if (rs_json_kind(body) != RS_JSON_OBJECT)
		bad(job, NULL, "request body must be a JSON object");
	else if (job->api == SERVE_TOKENIZE)
		tokenize(job, body);
	else if (job->api == SERVE_DETOKENIZE)
		detokenize(job, body);
	else
		generation(job, body, t0);
	rs_json_free(body);
}

static void *
prep_main(void *arg)
{
	struct serve_job *job;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&prep.lock);
		while (!prep.quit && prep.head == NULL)
			pthread_cond_wait(&prep.cond, &prep.lock);
		if (prep.quit) {
			pthread_mutex_unlock(&prep.lock);
			break;
		}
		job = prep.head;
		if ((prep.head = job->q_next) == NULL)
			prep.tail = NULL;
		job->q_next = NULL;
		pthread_mutex_unlock(&prep.lock);
		if (atomic_load(&job->cancel))
			answer(job, 499, NULL);	/* nobody will read it */
		else
			prepare(job);
	}
	return (NULL);
}

void
serve_prep_submit(struct serve_job *job)
{
	pthread_mutex_lock(&prep.lock);
	if (prep.tail != NULL)
		prep.tail->q_next = job;
	else
		prep.head = job;
	prep.tail = job;
	pthread_cond_signal(&prep.cond);
	pthread_mutex_unlock(&prep.lock);
}

void
serve_prep_start(void)
{
	sigset_t	all, old;
	int		rc;

	/* as the engine thread (serve_job.c): every signal but SIGSYS */
	sigfillset(&all);
	sigdelset(&all, SIGSYS);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&prep.thread, NULL, prep_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		rs_cli_warn("prep thread: %s", strerror(rc));
		serve_worker_fail();
	}
	prep.started = 1;
}

void
serve_prep_stop(void)
{
	if (!prep.started)
		return;
	pthread_mutex_lock(&prep.lock);
	prep.quit = 1;
	pthread_cond_broadcast(&prep.cond);
	pthread_mutex_unlock(&prep.lock);
	pthread_join(prep.thread, NULL);
	prep.started = 0;
}
