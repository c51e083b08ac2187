/*
 * serve.h - what the files of rs-serve share.  rs-serve is a Kore
 * application built as one binary (cmd/rs-serve/conf/build.conf); this
 * directory is its glue between Kore and librs:
 *
 *   serve_main.c    model loading, --copilot-config, Kore's servers and
 *                   limits (kore_parent_configure), the worker's start and
 *                   end, the seccomp filter, the 413 hook
 *   serve_opts.c    option parsing, --help, --version
 *   serve_guard.c   bounds on waiting connections, header timeouts
 *   serve_http.c    the route table, authentication, CORS, error bodies,
 *                   /health, /v1/models, /metrics, the access log
 *   serve_prep.c    the prep thread: validation, parsing, tokenization
 *   serve_job.c     the engine thread and its FIFO queue; events from the
 *                   threads to the event loop; streaming to connections
 *
 * Processes and threads.  Kore's parent process parses the options, loads
 * and validates the model and the tokenizer (so a bad file fails before
 * anything listens) and forks one worker.  The worker runs Kore's event
 * loop (every connection, every Kore call) and one engine thread that owns
 * the engine, the sequence state and the generator, and runs one request at
 * a time from a bounded FIFO queue, and one prep thread that validates,
 * parses and tokenizes requests first (rs_gen_req_parse/rs_gen_prepare
 * only read what never changes), so every 4xx goes out before a 200 and a
 * huge prompt does not stall the loop; both threads hand results back
 * through an eventfd that the loop watches.  No Kore function is called
 * off the loop thread, and librs never calls Kore.
 */
#ifndef SERVE_H
#define SERVE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "rs_engine.h"
#include "rs_gen.h"
#include "rs_metrics.h"
#include "rs_model.h"
#include "rs_oai.h"
#include "rs_time.h"
#include "rs_tok.h"

struct http_request;
struct connection;
struct netbuf;

/* ---- configuration (serve_opts.c) ---- */

#define SERVE_MAX_SLOTS	16

struct serve_cfg {
	char		*model_path;
	char		*host;		/* default 127.0.0.1 */
	char		*port;		/* default 8081 */
	int64_t		 n_ctx;		/* 0: the model's context length */
	char		*api_key;	/* NULL: no authentication */
	char		*alias;		/* model id; NULL: from the GGUF */
	enum rs_backend	 backend;
	char		*devices;	/* --devices LIST; NULL: one GPU */
	char		*split;		/* --split LIST */
	int		 threads;	/* 0: online CPUs */
	int64_t		 queue_max;	/* requests waiting beyond the one
					   running */
	int		 slots;		/* sequence states (prefix caches),
					   1..SERVE_MAX_SLOTS */
	int64_t		 cache_mem;	/* checkpoint cache in the backend's
					   memory, MiB (rs_ckcache.h) */
	int64_t		 cache_host_mem;	/* its spill to host RAM, MiB;
					   both 0: no cache */
	int64_t		 body_max;	/* bytes */
	enum rs_tok_norm tok_norm;	/* --nfc, --no-nfc */
	char		*tls_cert;
	char		*tls_key;
	char		*cors_origin;	/* comma list of origins also allowed
					   (besides our own hosts'); "*": any */
	char		*public_host;	/* comma list of Host names allowed
					   besides loopback and --host */
	char		*copilot_url;	/* print the Copilot entry and exit */
	char		*pidfile;
	char		*runas;		/* NULL: keep the user */
	char		*chroot;	/* NULL: no chroot */
	int		 seccomp_trace;
	int		 test_violation;	/* RS_SERVE_TEST_VIOLATION=1:
					   tests only (serve_main.c) */
	int		 keepalive_ms;	/* a stream silent this long gets
					   an SSE comment (§4.5): 10 s, or
					   RS_SERVE_TEST_KEEPALIVE_MS */
	int		 quiet;		/* no access log */
	int		 no_chat;	/* --no-chat: /v1/completions alone */
	struct rs_gen_opts gen;		/* server defaults for requests */
	struct rs_cli_draft draft;	/* --draft, --draft-max as given */
};

extern struct serve_cfg	serve_cfg;

/* Parse argv into serve_cfg; exits for --help, --version, usage errors. */
void		serve_opts_parse(int argc, char **argv);

/*
 * Whether Kore's TLS can work with the OpenSSL linked in (not with
 * OpenSSL 3, serve_main.c): --help offers --tls-* only then.
 */
int		serve_tls_available(void);

/* ---- the model, loaded by the parent and inherited by the worker ---- */

struct serve_model {
	struct rs_model		*model;
	struct rs_tok		*tok;
	struct rs_oai_model	 info;		/* id, n_ctx, capabilities */
	char			 fingerprint[64];
};

extern struct serve_model serve_model;

/* ---- HTTP helpers (serve_http.c) ---- */

extern struct rs_metrics *serve_metrics;

/*
 * May a request's Host header be HOSTPORT ("HOST[:PORT]")?  Loopback
 * names, the --host address and the --public-host names (DNS rebinding).
 */
int		serve_host_ok(const char *hostport);

/* Send the OpenAI error envelope J (taken) with status CODE. */
void		serve_send_json(struct http_request *req, int code,
		    struct rs_json *j);
void		serve_send_error(struct http_request *req, int code,
		    const char *type, const char *param, const char *fmt, ...)
		    __attribute__((format(printf, 5, 6)));

/*
 * One access-log line (and the request counter of /metrics) per request.
 * serve_log_init() takes what the line needs from REQ, so that it can be
 * written after Kore freed the request (a cancelled generation is logged
 * when the engine has stopped).  The generation fields are printed when
 * FINISH is set.
 */
struct serve_log {
	char		 addr[48];
	const char	*method;	/* static */
	char		 path[96];
	const char	*route;		/* static: the route's name */
	double		 t_recv;	/* rs_time_ms() on arrival */
	int64_t		 prompt_tokens, cached_tokens, completion_tokens;
	double		 queue_ms;	/* arrival to the engine */
	double		 prep_ms;	/* the prep thread's work on it:
					   JSON, checks, template, tokens */
	double		 pick_ms;	/* choosing its slot */
	int		 has_timings;	/* TIMINGS holds the run's */
	struct rs_gen_timings timings;	/* for the ttft breakdown */
	double		 prefill_ms;	/* prompt tokens not cached, run */
	double		 prefill_tps;	/* their rate, tokens/s */
	double		 ttft_ms;	/* arrival to the first content,
					   reasoning or tool-call token; -1:
					   none */
	double		 decode_tps;
	double		 lag_ms;	/* stream: engine-to-socket, mean */
	double		 lag_max_ms;
	double		 cancel_ms;	/* disconnect to engine stop, or -1 */
	const char	*finish;	/* NULL: no generation */
	size_t		 lone_surrogates; /* escapes read as U+FFFD (§1.7) */
};
void		serve_log_init(struct serve_log *l, struct http_request *req,
		    double t_recv);
void		serve_log_write(const struct serve_log *l, int code);

/*
 * Answer connection C with CODE and the OpenAI error envelope holding MSG,
 * then close it; what the client still sends on NB (its receive buffer,
 * or NULL) is dropped (serve_main.c).
 */
void		serve_refuse(struct connection *c, struct netbuf *nb, int code,
		    const char *msg);

/*
 * Slow clients (serve_guard.c): a new connection C may evict the oldest
 * connection waiting for a request; a timer closes those that wait too
 * long: SERVE_IDLE_S seconds, what each response's "keep-alive:
 * timeout=" announces (serve_main.c), so that a client does not reuse a
 * connection the server is closing.
 */
#define SERVE_IDLE_S	10
void		serve_guard_accept(struct connection *c);
void		serve_guard_start(void);

/* After Kore queued a response on C: keep the 413 check on its next read. */
void		serve_conn_rearm(struct connection *c);

/* The engine or a thread could not start: stop the server, exit 2. */
void		serve_worker_fail(void) __attribute__((noreturn));

/*
 * With RS_SERVE_TEST_VIOLATION=1 (for tests/serve only): make a system
 * call that the sandbox refuses, so that a test sees how it ends.
 */
void		serve_test_violation(void);

/* ---- jobs: preparation (serve_prep.c), the engine (serve_job.c) ---- */

enum serve_api {
	SERVE_CHAT,		/* POST /v1/chat/completions */
	SERVE_COMPLETION,	/* POST /v1/completions */
	SERVE_TOKENIZE,		/* POST /tokenize */
	SERVE_DETOKENIZE,	/* POST /detokenize */
	SERVE_TEMPLATE		/* POST /apply-template */
};

/*
 * Where a job is.  The loop creates it in PREP; the prep thread validates
 * and tokenizes it (READY), or answers it itself (ANSWERED: an error, or
 * the whole answer of /tokenize, /detokenize or /apply-template, in OUT
 * with its status); the loop
 * admits it to the engine's FIFO (QUEUED) or refuses it (503); the engine
 * thread runs it (RUNNING, streaming into OUT) and ends it (DONE).  The
 * loop may free a job only in READY, ANSWERED or DONE, once its request is
 * gone and it is off the dirty list.
 */
enum serve_phase {
	SERVE_PREP,
	SERVE_READY,
	SERVE_ANSWERED,
	SERVE_QUEUED,
	SERVE_RUNNING,
	SERVE_DONE
};

struct serve_job {
	/* set by the loop at submission */
	enum serve_api		 api;
	double			 t_recv;	/* rs_time_ms() on arrival */
	const char		*body;		/* the request body, BODY_LEN */
	size_t			 body_len;	/* bytes (Kore's buffer, taken
						   from the request: KBODY) */
	void			*kbody;		/* struct kore_buf *, freed by
						   the loop */

	/* set by the prep thread (read by the others after PREP) */
	struct rs_gen_req	 greq;
	struct rs_oai_resp	 fmt;
	int			 stream;
	int			 include_usage;

	/* the engine thread's while RUNNING */
	int			 chunked;	/* set before QUEUED */
	double			 t_start;
	double			 t_first;	/* first text of the answer
						   (is_output()), 0 before */
	double			 t_end;

	/* shared, under the job lock (serve_job.c) */
	enum serve_phase	 phase;
	struct rs_buf		 out;		/* bytes for the client */
	double			 out_t0;	/* OUT's oldest byte */
	int			 status;	/* HTTP status of OUT */
	int			 dirty;		/* on the dirty list */
	struct serve_job	*q_next;	/* prep or engine FIFO */
	struct serve_job	*d_next;	/* dirty list */
	struct serve_log	 log;

	atomic_int		 cancel;	/* the client went away */

	/* the loop's */
	struct http_request	*http;		/* NULL once Kore freed it */
	struct rs_buf		 send;		/* OUT, moved out of the lock */
	double			 send_t0;	/* its OUT_T0 */
	double			 lag_sum;	/* engine-to-socket delays */
	int64_t			 lag_n;
	double			 t_cancel;	/* when the client left */
	int			 answered;	/* the response is complete */
	int			 close_at_end;
	double			 last_write;
	struct serve_job	*l_prev, *l_next;	/* live jobs */
};

/* Start and stop the engine thread and the prep thread (worker). */
void		serve_engine_start(void);
void		serve_engine_stop(void);
/*
 * The worker is stopping (SIGTERM, SIGINT), its loop has ended: every
 * stream still open ends with an error event and the end of its body
 * (§4.5), rather than a connection cut after its last chunk.
 */
void		serve_streams_shutdown(void);
/* The generator once the engine is up, else NULL ("Loading model"). */
const struct rs_gen *serve_engine_gen(void);
/* Requests waiting and running. */
void		serve_engine_load(int *waiting, int *running);

/*
 * Take over REQ, received at T_RECV, for a generation on API: the body
 * moves into a job that the prep thread validates and tokenizes, the loop
 * then queues for the engine.  Returns the Kore handler result.
 */
int		serve_job_submit(struct http_request *req, enum serve_api api,
		    double t_recv);
/* The handler entered again for a request that has a job. */
int		serve_job_resume(struct http_request *req);
/* Prep thread: JOB is READY or ANSWERED; hand it back to the loop. */
void		serve_job_prepared(struct serve_job *job, enum serve_phase ph);

/*
 * The prep thread: validates the body (UTF-8, JSON, the endpoint's
 * fields), parses it into JOB->greq and tokenizes it (rs_gen_req_parse,
 * rs_gen_prepare), or answers the debugging endpoints, off the event
 * loop, so that a 64 MiB prompt does not stall other clients.  Calls
 * serve_job_prepared() for every job.
 */
void		serve_prep_start(void);
void		serve_prep_stop(void);
void		serve_prep_submit(struct serve_job *job);

#endif /* SERVE_H */
