/*
 * serve_job.c - jobs from submission to the last byte: the engine thread
 * and its FIFO, and the hand-over of results from the prep and engine
 * threads to the event loop.
 *
 * One engine thread owns the engine, the sequence states and their
 * generators (rs_gen; one of each per --slots), builds them at start (the
 * CUDA context is created and used in that thread only) and then runs one
 * job at a time, oldest first, on the slot whose state holds most of its
 * prompt, or else on the least recently used one (pick_slot): a side
 * request (a title, a summary) then does not evict the cache of the
 * conversation it interrupts.  A job
 * reaches its FIFO prepared (serve_prep.c) and admitted by the loop, which
 * for a stream has already sent the 200 header and the role chunk, so the
 * client has its first byte before the engine starts.
 *
 * Threads to loop.  For each rs_gen event the engine thread formats the
 * SSE chunk (rs_oai.h), frames it for chunked transfer encoding, appends
 * it to the job's out buffer under the lock, puts the job on the dirty
 * list and writes the eventfd; the prep thread does the same when a job
 * is prepared.  The loop (notify_handle) drains the eventfd, takes the
 * dirty list and acts on each job by its phase: admit or refuse it, send
 * its bytes with Kore (net_send_queue + net_send_flush), or finish its
 * response.  One wake-up and one send() per token; tokens that come faster
 * than the loop drains them are coalesced on their own.
 *
 * Loop to threads.  When a client goes away Kore frees its request; the
 * request's onfree hook sets the job's cancel flag, which the event
 * callback returns to rs_gen_run() at the next event: generation stops
 * within one token (or one prefill chunk).  A job still in the FIFO is
 * just removed.
 *
 * Ownership.  Only the loop frees a job: in READY, ANSWERED or DONE (no
 * thread holds it), off the dirty list, once its request is gone.  The
 * prep and engine threads never free a job and never call Kore.
 */
#include <sys/eventfd.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kore/kore.h>
#include <kore/http.h>

#include "cli.h"
#include "rs_ckcache.h"
#include "rs_fit.h"
#include "serve.h"

static struct {
	pthread_mutex_t		 lock;		/* the job lock */
	pthread_cond_t		 cond;
	pthread_t		 thread;
	int			 started;
	int			 quit;
	struct serve_job	*head, *tail;	/* the engine's FIFO */
	int			 waiting;
	struct serve_job	*running;
	struct serve_job	*dirty;
	int			 failed;
	char			 why[1024];	/* lines, '\n' apart */

	/* eventfd from the threads to the loop */
	struct {
		struct kore_event	 evt;	/* first: Kore casts to it */
		int			 fd;
	} notify;

	/* the generator, published once built */
	_Atomic(const struct rs_gen *) gen;
	int			 announced;

	/* the engine thread's own: serve_cfg.slots states and generators,
	   and when each slot last ran a job */
	struct rs_engine	*engine;
	struct rs_state		*state[SERVE_MAX_SLOTS];
	struct rs_gen		*g[SERVE_MAX_SLOTS];
	struct rs_ckcache	*ckc;		/* shared by the slots, or NULL */
	uint64_t		 used[SERVE_MAX_SLOTS];
	uint64_t		 n_jobs;
	struct rs_buf		 scratch;

	/* the loop's own */
	struct serve_job	*live;
	struct kore_timer	*timer;
} eng = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.notify = { .fd = -1 },
};

static void	notify_handle(void *, int);

const struct rs_gen *
serve_engine_gen(void)
{
	return (atomic_load_explicit(&eng.gen, memory_order_acquire));
}

void
serve_engine_load(int *waiting, int *running)
{
	pthread_mutex_lock(&eng.lock);
	*waiting = eng.waiting;
	*running = eng.running != NULL;
	pthread_mutex_unlock(&eng.lock);
}

/* Wake the loop; an eventfd counter never blocks a writer in practice. */
static void
wake_loop(void)
{
	uint64_t one = 1;

	while (write(eng.notify.fd, &one, sizeof(one)) == -1 && errno == EINTR)
		;
}

/* Put JOB on the dirty list; the caller holds the lock. */
static void
mark_dirty(struct serve_job *job)
{
	if (!job->dirty) {
		job->dirty = 1;
		job->d_next = eng.dirty;
		eng.dirty = job;
	}
}

void
serve_job_prepared(struct serve_job *job, enum serve_phase ph)
{
	pthread_mutex_lock(&eng.lock);
	job->phase = ph;
	mark_dirty(job);
	pthread_mutex_unlock(&eng.lock);
	wake_loop();
}

/*
 * Append N bytes at P to JOB's out buffer, as one chunk when the response
 * is chunked; with LAST the job is DONE.  Then wake the loop.
 */
static void
push(struct serve_job *job, const char *p, size_t n, int last)
{
	pthread_mutex_lock(&eng.lock);
	if (job->out.len == 0)
		job->out_t0 = rs_time_ms();
	if (n > 0) {
		if (job->chunked)
			rs_buf_addf(&job->out, "%zx\r\n", n);
		rs_buf_add(&job->out, p, n);
		if (job->chunked)
			rs_buf_add(&job->out, "\r\n", 2);
	}
	if (last) {
		if (job->chunked)
			rs_buf_add(&job->out, "0\r\n\r\n", 5);
		/* from here the loop may free the job: forget it now */
		job->phase = SERVE_DONE;
		if (eng.running == job)
			eng.running = NULL;
	}
	mark_dirty(job);
	pthread_mutex_unlock(&eng.lock);
	wake_loop();
}

/* ---- the engine thread ---- */

/*
 * Does EV put text into the answer?  The time to the first such event is
 * the request's time to first token (access log, /metrics): it includes
 * the queue and the prefill, which the stream's role chunk, sent on
 * admission to keep the connection alive, says nothing about.  Markup
 * tokens (<think>, <tool_call>) and logprobs come earlier and do not count.
 */
static int
is_output(enum rs_gen_ev kind)
{
	return (kind == RS_GEN_EV_REASONING || kind == RS_GEN_EV_CONTENT ||
	    kind == RS_GEN_EV_TOOL_CALL || kind == RS_GEN_EV_TOOL_ARGS);
}

static int
on_event(const struct rs_gen_event *ev, void *arg)
{
	struct serve_job *job = arg;

	if (is_output(ev->kind) && job->t_first == 0)
		job->t_first = rs_time_ms();
	if (job->stream) {
		rs_buf_reset(&eng.scratch);
		(void)rs_oai_sse_event(&job->fmt, ev, &eng.scratch);
		if (eng.scratch.len > 0 && !eng.scratch.oom)
			push(job, eng.scratch.data, eng.scratch.len, 0);
	}
	return (atomic_load_explicit(&job->cancel, memory_order_relaxed));
}

static void
fill_log(struct serve_job *job, const struct rs_gen_result *res)
{
	struct serve_log *l = &job->log;

	l->prompt_tokens = res->usage.prompt_tokens;
	l->cached_tokens = res->usage.cached_tokens;
	l->completion_tokens = res->usage.completion_tokens;
	l->decode_tps = res->timings.predicted_per_second;
	l->prefill_ms = res->timings.prompt_ms;
	l->prefill_tps = res->timings.prompt_per_second;
	l->finish = rs_gen_finish_name(res->finish);
	l->timings = res->timings;
	l->has_timings = 1;
	if (job->t_first > 0) {
		l->ttft_ms = job->t_first - job->t_recv;
		rs_metrics_ttft(serve_metrics, l->ttft_ms / 1e3);
	}
	/* (a one-token answer times no decode step: the speed gauge stays) */
	rs_metrics_generation(serve_metrics, res->timings.prompt_n,
	    res->timings.prompt_ms, res->usage.completion_tokens,
	    res->timings.predicted_per_second > 0 ?
	    res->timings.predicted_ms : 0.0);
	if (res->timings.draft != NULL)
		rs_metrics_drafts(serve_metrics, res->timings.draft_pos_n,
		    res->timings.draft_pos_accepted, res->timings.draft_n_pos,
		    res->timings.draft_ms + res->timings.draft_catchup_ms);
}

/* The whole body J (taken) into the scratch buffer; its status. */
static int
body(struct rs_json *j, int status)
{
	char *s;

	if (j == NULL || (s = rs_json_dumps(j)) == NULL) {
		rs_json_free(j);
		rs_buf_adds(&eng.scratch, "{\"error\":{\"message\":\"out of "
		    "memory\",\"type\":\"server_error\",\"param\":null,"
		    "\"code\":500}}");
		return (500);
	}
	rs_buf_adds(&eng.scratch, s);
	free(s);
	rs_json_free(j);
	return (status);
}

/*
 * The slot for JOB.  A slot whose history the prompt continues, or shares
 * an assistant turn with (the next turn of its conversation, or an edit of
 * an earlier one), holds its conversation (rs_gen_affinity()): the one of
 * those that can start furthest in (rs_gen_reusable()).  Else the one used
 * least recently: a side request or a new conversation shares the
 * template's first tokens, and an agent's its system prompt, tools and
 * files, with every slot, and running it there would overwrite a live
 * conversation and its checkpoints; with the checkpoint cache it still
 * starts from the latest checkpoint of any slot that it shares (rs_gen.h).
 * Without the cache, a slot that holds at least half the prompt is taken
 * all the same (its prefix is only reusable in place).  An agent's next
 * turn can share less than half: a template that drops the reasoning of
 * the turns since the last user message makes the prompt leave the
 * history at the first of them.
 */
static int
pick_slot(const struct serve_job *job)
{
	int	best = -1, lru = 0, best_a = 0;
	int32_t	best_r = -1;

	for (int i = 0; i < serve_cfg.slots; i++) {
		int32_t r = rs_gen_reusable(eng.g[i], &job->greq);
		int a = rs_gen_affinity(eng.g[i], &job->greq);
		if (best < 0 || (a > 0) > (best_a > 0) || ((a > 0) ==
		    (best_a > 0) && r > best_r)) {
			best = i;
			best_r = r;
			best_a = a;
		}
		if (eng.used[i] < eng.used[lru])
			lru = i;
	}
	if (best_a == 0 && (eng.ckc != NULL ||
	    2 * (int64_t)best_r < (int64_t)job->greq.n_prompt))
		best = lru;
	eng.used[best] = ++eng.n_jobs;
	return (best);
}

static void
run_job(struct serve_job *job)
{
	struct rs_gen_result	res;
	struct rs_gen_error	ge;
	enum rs_status		st;
	int			status = 200, slot;

	job->t_start = rs_time_ms();
	job->log.queue_ms = job->t_start - job->t_recv;
	memset(&res, 0, sizeof(res));
	memset(&ge, 0, sizeof(ge));
	rs_buf_reset(&eng.scratch);
	if (atomic_load(&job->cancel)) {
		job->t_end = job->t_start;
		push(job, NULL, 0, 1);
		return;
	}
	slot = pick_slot(job);
	job->log.pick_ms = rs_time_ms() - job->t_start;
	st = rs_gen_run(eng.g[slot], &job->greq, on_event, job, &res, &ge);
	rs_buf_reset(&eng.scratch);
	if (st != RS_OK) {
		job->log.finish = "error";
		if (job->stream)
			(void)rs_oai_sse_error(&ge, &eng.scratch);
		else
			status = body(rs_oai_gen_error(&ge), ge.code);
		rs_cli_warn("generation failed: %s", ge.err.msg);
	} else {
		fill_log(job, &res);
		if (res.finish == RS_GEN_FINISH_CANCELLED)
			;	/* nobody is listening */
		else if (job->stream)
			(void)rs_oai_sse_end(&job->fmt, &res, &eng.scratch);
		else
			status = body(rs_oai_response(&job->fmt, &res), 200);
	}
	rs_gen_result_cleanup(&res);
	if (eng.ckc != NULL) {
		struct rs_ckcache_stats	cs;

		rs_ckcache_stats(eng.ckc, &cs);
		rs_metrics_checkpoints(serve_metrics, &cs);
	}
	job->t_end = rs_time_ms();
	pthread_mutex_lock(&eng.lock);
	job->status = status;
	pthread_mutex_unlock(&eng.lock);
	push(job, eng.scratch.data, eng.scratch.len, 1);
}

/*
 * Refuse an --ctx and --slots that the device cannot hold before a state
 * is allocated, with every term of the sum and what would fit (rs_fit.h),
 * rather than a failed allocation in slot k (issue #21).  The engine is
 * up, so the device's free memory no longer counts its weights and
 * scratch: adding them back gives what it had for all.  0, or -1 with
 * eng.why.  The CPU backend has no device memory to check.
 */
/*
 * check_fit() for a layer split: each GPU against what its slots will hold
 * (rs_fit_split_check), since the sum of the GPUs' free memory can fit
 * while one of them cannot.  1 fits, 0 not (MSG says why), -1: could not
 * check (warned).
 */
static int
check_split_fit(const struct rs_state_opts *so, struct rs_buf *msg)
{
	const struct rs_split *sp = rs_engine_split(eng.engine);
	const struct rs_model *m = rs_engine_model(eng.engine);
	struct rs_split_mem mem[RS_SPLIT_MAX];
	struct rs_split	 chk;
	struct rs_err	 err;
	uint64_t	 fr[RS_SPLIT_MAX], tot;
	int		 counts[RS_SPLIT_MAX];

	for (int j = 0; j < sp->n; j++) {
		counts[j] = (int)(sp->first[j + 1] - sp->first[j]);
		if (rs_engine_slot_memory(eng.engine, j, &fr[j], &tot, &err) !=
		    RS_OK) {
			rs_cli_warn("cannot check the memory of --slots: %s",
			    err.msg);
			return (-1);
		}
	}
	if (rs_split_make(&chk, m, sp->dev, sp->n, counts, sizeof(uint16_t),
	    so, serve_cfg.slots, rs_engine_cuda_scratch(m,
	    rs_engine_max_batch(eng.engine)), mem, &err) != RS_OK) {
		rs_cli_warn("cannot check the memory of --slots: %s", err.msg);
		return (-1);
	}
	return (rs_fit_split_check(sp, mem, fr, so->n_ctx, serve_cfg.slots,
	    msg));
}

static int
check_fit(const struct rs_state_opts *so)
{
	struct rs_fit	f;
	struct rs_buf	msg;
	struct rs_err	err;
	uint64_t	free_b, total_b;
	int		ok;

	if (rs_engine_split(eng.engine)->n > 1) {
		rs_buf_init(&msg);
		if ((ok = check_split_fit(so, &msg)) == 0)
			(void)snprintf(eng.why, sizeof(eng.why), "%.*s",
			    msg.oom ? 0 : (int)msg.len, msg.data);
		rs_buf_cleanup(&msg);
		return (ok == 0 ? -1 : 0);
	}
	if (rs_engine_device_memory(eng.engine, &free_b, &total_b, &err) !=
	    RS_OK) {
		if (err.status != RS_ERR_UNSUPPORTED)
			rs_cli_warn("cannot check the memory of --slots: %s",
			    err.msg);
		return (0);
	}
	memset(&f, 0, sizeof(f));
	rs_engine_memory(eng.engine, &f.weights, &f.scratch);
	rs_engine_state_plan(eng.engine, so, &f.slot);
	f.n_ctx = so->n_ctx;
	f.slots = serve_cfg.slots;
	f.avail = free_b + f.weights + f.scratch;
	rs_buf_init(&msg);
	if (!(ok = rs_fit_check(&f, "GPU", NULL, &msg)))
		(void)snprintf(eng.why, sizeof(eng.why), "%.*s",
		    msg.oom ? 0 : (int)msg.len, msg.data);
	rs_buf_cleanup(&msg);
	return (ok ? 0 : -1);
}

/* rs_fit_drafts()'s check: CTX, the state options, with N_SNAP */
static int
fits_snap(int n_snap, void *ctx)
{
	struct rs_state_opts *so = ctx;

	so->n_snap = n_snap;
	return (check_fit(so) == 0);
}

/*
 * check_fit() where the drafter came by default: its snapshots (draft_max
 * + 1 recurrent states, ~150 MB each on the 27B) give way to --ctx and
 * --slots, halving draft_max down to none, with a warning (rs_fit.h).  A
 * drafter asked for by name must fit as asked.  0, or -1 with eng.why.
 */
static int
fit_drafts(struct rs_state_opts *so)
{
	const int	k = serve_cfg.gen.draft_max;
	int		got;

	if (serve_cfg.draft.given || k == 0)
		return (check_fit(so));
	if ((got = rs_fit_drafts(k, fits_snap, so)) < 0)
		return (-1);
	if (got < k) {
		rs_cli_warn("drafting %d tokens a pass at most, not %d: the "
		    "state snapshots of more do not fit (--draft-max, --ctx, "
		    "--slots)", got, k);
		serve_cfg.gen.draft_max = got;
		if (got == 0)
			serve_cfg.gen.draft = RS_DRAFTER_NONE;
	}
	return (0);
}

/*
 * On the GPU with a drafter, the pass costs its adaptive rule weighs
 * (rs_drafter.h: measured when the generators were built, remembered by
 * the engine), for the log: what sets the drafts a round on this card.
 */
static void
cost_note(void)
{
	const int	 n = serve_cfg.gen.draft_max + 1;
	double		 c[RS_DRAFTER_K_MAX + 1], mtp;
	char		 line[256];
	size_t		 at = 0;
	struct rs_err	 err;

	if (serve_cfg.gen.draft == RS_DRAFTER_NONE ||
	    rs_engine_backend(eng.engine) != RS_BACKEND_CUDA ||
	    rs_engine_pass_costs(eng.engine, n, c, &mtp, &err) != RS_OK)
		return;
	for (int i = 0; i < n && at < sizeof(line); i++)
		at += (size_t)snprintf(line + at, sizeof(line) - at, " %.2f",
		    c[i]);
	rs_cli_warn("drafting on measured costs: passes of 1..%d tokens%s "
	    "decode steps, an MTP step %.2f", n, line, mtp);
}

/* Build the engine, the state and the generator; 0 or -1 with eng.why. */
static int
build(void)
{
	struct rs_engine_opts	eo;
	struct rs_state_opts	so;
	struct rs_err		err;

	memset(&eo, 0, sizeof(eo));
	eo.backend = serve_cfg.backend;
	eo.n_threads = serve_cfg.threads;
	/* checked when parsed (serve_opts.c): no usage error here */
	rs_cli_devices_opt(serve_cfg.devices, serve_cfg.split,
	    (int32_t)serve_model.info.n_ctx, serve_cfg.slots, &eo, "rs-serve");
	if (rs_engine_new(&eng.engine, serve_model.model, &eo, &err) != RS_OK)
		goto fail;
	memset(&so, 0, sizeof(so));
	so.n_ctx = (int32_t)serve_model.info.n_ctx;
	/* prefix reuse across turns (§2.8): the checkpoint cache, or else
	   each state's own checkpoint at its prompt's last message */
	so.checkpoint = serve_cfg.cache_mem == 0 &&
	    serve_cfg.cache_host_mem == 0;
	/* a snapshot per verified token to drop rejected drafts */
	so.n_snap = serve_cfg.gen.draft_max > 0 ?
	    serve_cfg.gen.draft_max + 1 : 0;
	if (fit_drafts(&so) != 0)
		return (-1);
	for (int i = 0; i < serve_cfg.slots; i++)
		if (rs_engine_state_new(eng.engine, &so, &eng.state[i],
		    &err) != RS_OK || rs_gen_new(&eng.g[i], eng.engine,
		    eng.state[i], serve_model.tok, &serve_cfg.gen, &err) !=
		    RS_OK) {
			(void)snprintf(eng.why, sizeof(eng.why), "engine: "
			    "slot %d of %d (--slots): %s", i + 1,
			    serve_cfg.slots, err.msg);
			return (-1);
		}
	cost_note();
	if (serve_cfg.cache_mem > 0 || serve_cfg.cache_host_mem > 0) {
		struct rs_ckcache_opts	co;
		struct rs_ckcache_stats	cs;

		co.dev_bytes = (uint64_t)serve_cfg.cache_mem << 20;
		co.host_bytes = (uint64_t)serve_cfg.cache_host_mem << 20;
		if (rs_ckcache_new(&eng.ckc, &co, &err) != RS_OK)
			goto fail;
		for (int i = 0; i < serve_cfg.slots; i++)
			rs_gen_set_ckcache(eng.g[i], eng.ckc);
		/* pin the host budget now, not on the first spills */
		rs_ckcache_reserve(eng.ckc, eng.state[0]);
		rs_ckcache_stats(eng.ckc, &cs);
		rs_metrics_checkpoints(serve_metrics, &cs);
	}
	return (0);
fail:
	(void)snprintf(eng.why, sizeof(eng.why), "engine: %s", err.msg);
	return (-1);
}

static void *
engine_main(void *arg)
{
	struct serve_job *job;

	(void)arg;
	if (build() != 0) {
		pthread_mutex_lock(&eng.lock);
		eng.failed = 1;
		pthread_mutex_unlock(&eng.lock);
		wake_loop();
		return (NULL);
	}
	atomic_store_explicit(&eng.gen, eng.g[0], memory_order_release);
	wake_loop();
	for (;;) {
		pthread_mutex_lock(&eng.lock);
		while (!eng.quit && eng.head == NULL)
			pthread_cond_wait(&eng.cond, &eng.lock);
		if (eng.quit) {
			pthread_mutex_unlock(&eng.lock);
			break;
		}
		job = eng.head;
		if ((eng.head = job->q_next) == NULL)
			eng.tail = NULL;
		job->q_next = NULL;
		job->phase = SERVE_RUNNING;
		eng.waiting--;
		eng.running = job;
		rs_metrics_queue(serve_metrics, eng.waiting, 1);
		pthread_mutex_unlock(&eng.lock);

		serve_test_violation();
		run_job(job);	/* ends with eng.running NULL */

		pthread_mutex_lock(&eng.lock);
		rs_metrics_queue(serve_metrics, eng.waiting, 0);
		pthread_mutex_unlock(&eng.lock);
	}
	return (NULL);
}

/* ---- the loop: sending ---- */

static void
live_add(struct serve_job *job)
{
	job->l_prev = NULL;
	if ((job->l_next = eng.live) != NULL)
		eng.live->l_prev = job;
	eng.live = job;
}

static void
live_remove(struct serve_job *job)
{
	if (job->l_prev != NULL)
		job->l_prev->l_next = job->l_next;
	else
		eng.live = job->l_next;
	if (job->l_next != NULL)
		job->l_next->l_prev = job->l_prev;
	job->l_prev = job->l_next = NULL;
}

static void
job_free(struct serve_job *job)
{
	if (job->kbody != NULL)
		kore_buf_free(job->kbody);
	rs_gen_req_cleanup(&job->greq);
	rs_oai_resp_cleanup(&job->fmt);
	rs_buf_cleanup(&job->out);
	rs_buf_cleanup(&job->send);
	free(job);
}

/* Queue bytes on JOB's connection and flush; the connection may close. */
static void
send_bytes(struct serve_job *job, const char *p, size_t n)
{
	struct connection *c = job->http != NULL ? job->http->owner : NULL;

	if (c == NULL)
		return;
	if (n > 0) {
		net_send_queue(c, p, n);
		job->last_write = rs_time_ms();
	}
	if (!net_send_flush(c))
		kore_connection_disconnect(c);
}

/* One chunk of chunked transfer encoding, from the loop. */
static void
send_chunk(struct serve_job *job, const struct rs_buf *b)
{
	char hdr[24];

	if (job->chunked) {
		(void)snprintf(hdr, sizeof(hdr), "%zx\r\n", b->len);
		send_bytes(job, hdr, strlen(hdr));
	}
	send_bytes(job, b->data, b->len);
	if (job->chunked)
		send_bytes(job, "\r\n", 2);
}

/* A whole JSON body (the response, or an error) with STATUS. */
static void
send_whole(struct serve_job *job, int status)
{
	struct http_request *req = job->http;

	if (status == 503)
		http_response_header(req, "retry-after", "1");
	http_response_header(req, "content-type",
	    "application/json; charset=utf-8");
	http_response(req, status, job->send.data, job->send.len);
	serve_conn_rearm(req->owner);
}

/* The response is complete: Kore finishes the request next. */
static void
answered(struct serve_job *job, int status)
{
	job->status = status;
	job->answered = 1;
	http_request_wakeup(job->http);
}

/*
 * Send a stream's 200 header and role chunk now (§5.4 item 7): the client
 * has its first byte while the request waits for the engine.
 */
static void
start_stream(struct serve_job *job)
{
	struct http_request	*req = job->http;
	struct connection	*c;
	struct rs_buf		 b;

	http_response_header(req, "content-type", "text/event-stream");
	http_response_header(req, "cache-control", "no-cache");
	http_response_header(req, "x-accel-buffering", "no");
	job->chunked = !(req->flags & HTTP_VERSION_1_0);
	if (job->chunked)
		http_response_header(req, "transfer-encoding", "chunked");
	req->flags |= HTTP_REQUEST_NO_CONTENT_LENGTH;
	http_response(req, 200, NULL, 0);
	/* (the header is the stream's first write: tick's keep-alive
	   comments count from it, a completions stream has no role chunk) */
	job->last_write = rs_time_ms();
	if ((c = req->owner) == NULL)
		return;
	/*
	 * Kore marks a connection to close once its send queue is empty
	 * (HTTP/1.0, "Connection: close"), which would cut the stream after
	 * the header; close it at the end instead.  Kore's header timeout
	 * for the next request must not fire during a long stream either.
	 */
	if (c->flags & CONN_CLOSE_EMPTY) {
		c->flags &= ~CONN_CLOSE_EMPTY;
		job->close_at_end = 1;
	}
	c->http_timeout = 0;
	serve_conn_rearm(c);
	rs_buf_init(&b);
	if (rs_oai_sse_role(&job->fmt, &b) == 0 && b.len > 0)
		send_chunk(job, &b);
	else
		send_bytes(job, NULL, 0);
	rs_buf_cleanup(&b);
}

/* A prepared job: refuse it (queue full) or queue it for the engine. */
static void
admit(struct serve_job *job)
{
	int full;

	pthread_mutex_lock(&eng.lock);
	full = eng.waiting >= serve_cfg.queue_max &&
	    (eng.running != NULL || eng.waiting > 0);
	pthread_mutex_unlock(&eng.lock);
	if (full) {
		rs_buf_reset(&job->send);
		rs_buf_addf(&job->send, "{\"error\":{\"message\":\"The server "
		    "is busy: %lld requests are waiting. Retry later.\","
		    "\"type\":\"unavailable_error\",\"param\":null,"
		    "\"code\":503}}", (long long)serve_cfg.queue_max);
		send_whole(job, 503);
		answered(job, 503);
		return;
	}
	if (job->stream)
		start_stream(job);
	pthread_mutex_lock(&eng.lock);
	job->phase = SERVE_QUEUED;
	if (eng.tail != NULL)
		eng.tail->q_next = job;
	else
		eng.head = job;
	eng.tail = job;
	eng.waiting++;
	rs_metrics_queue(serve_metrics, eng.waiting, eng.running != NULL);
	pthread_cond_signal(&eng.cond);
	pthread_mutex_unlock(&eng.lock);
}

/* Record the engine-to-socket delay of the bytes in JOB->send. */
static void
note_lag(struct serve_job *job)
{
	double lag = rs_time_ms() - job->send_t0;

	job->lag_sum += lag;
	job->lag_n++;
	if (lag > job->log.lag_max_ms)
		job->log.lag_max_ms = lag;
	job->log.lag_ms = job->lag_sum / job->lag_n;
}

/* The end of a generation. */
static void
finish(struct serve_job *job)
{
	struct connection *c = job->http->owner;

	if (!job->stream) {
		send_whole(job, job->status);
		answered(job, job->status);
		return;
	}
	if (c != NULL) {
		/* the header timeout applies again, to the next request */
		c->http_start = kore_time_ms();
		c->http_timeout = http_header_timeout * 1000;
		if (job->close_at_end)
			c->flags |= CONN_CLOSE_EMPTY;
	}
	send_bytes(job, job->send.data, job->send.len);
	answered(job, 200);
}

/* The access-log line of a generation the client abandoned. */
static void
log_cancelled(struct serve_job *job)
{
	if (job->log.finish == NULL)
		job->log.finish = "cancelled";
	job->log.cancel_ms = job->t_end > job->t_cancel ?
	    job->t_end - job->t_cancel : 0;
	serve_log_write(&job->log, 499);
}

/* Act on JOB, taken off the dirty list in phase PH. */
static void
deliver(struct serve_job *job, enum serve_phase ph)
{
	if (job->http == NULL) {
		/* the client left: free the job once no thread holds it */
		if (ph == SERVE_READY || ph == SERVE_ANSWERED ||
		    ph == SERVE_DONE) {
			if (ph == SERVE_DONE)
				log_cancelled(job);
			else
				serve_log_write(&job->log, 499);
			job_free(job);
		}
		return;
	}
	if (job->send.len > 0 && (ph == SERVE_DONE || ph == SERVE_RUNNING) &&
	    job->stream)
		note_lag(job);
	switch (ph) {
	case SERVE_READY:
		admit(job);
		break;
	case SERVE_ANSWERED:
		send_whole(job, job->status);
		answered(job, job->status);
		break;
	case SERVE_RUNNING:
		if (job->stream)
			send_bytes(job, job->send.data, job->send.len);
		break;
	case SERVE_DONE:
		finish(job);
		break;
	default:
		break;
	}
	rs_buf_reset(&job->send);
}

static void
announce(void)
{
	const struct rs_gen *g = serve_engine_gen();
	char		 drafts[64] = "none";
	struct rs_err	 err = { 0 };

	if (serve_cfg.gen.draft != RS_DRAFTER_NONE)
		(void)snprintf(drafts, sizeof(drafts), "%s, up to %d a pass",
		    rs_drafter_kind_name(rs_drafter_resolve(
		    serve_cfg.gen.draft, serve_model.model)),
		    serve_cfg.gen.draft_max);
	eng.announced = 1;
	rs_cli_warn("serving %s on %s://%s:%s (backend %s, %d threads, "
	    "context %d, template %s, drafts %s)", serve_cfg.alias,
	    serve_cfg.tls_cert != NULL ? "https" : "http", serve_cfg.host,
	    serve_cfg.port, rs_backend_name(rs_engine_backend(eng.engine)),
	    rs_engine_n_threads(eng.engine), rs_gen_n_ctx(g),
	    rs_chat_variant_name(rs_gen_variant(g)), drafts);
	/* serving.md §2.1: a template the renderer does not implement is
	   named at startup, with its size and hash, not at each request */
	if (serve_cfg.no_chat)
		rs_cli_warn("chat requests will be refused (400, --no-chat)"
		    "%s%s; /v1/completions works", rs_gen_chat_ok(g, &err) ?
		    "" : ": ", err.msg);
}

/* One warning per line of S (trailing '\n' or not). */
static void
warn_lines(const char *s)
{
	const char *nl;

	for (; *s != '\0'; s = *nl != '\0' ? nl + 1 : nl) {
		nl = s + strcspn(s, "\n");
		rs_cli_warn("%.*s", (int)(nl - s), s);
	}
}

static void
notify_handle(void *arg, int error)
{
	struct serve_job	*list, *job, *next;
	struct rs_buf		 tmp;
	uint64_t		 v;
	enum serve_phase	 ph;
	int			 failed;

	(void)arg;
	(void)error;
	while (read(eng.notify.fd, &v, sizeof(v)) == sizeof(v))
		;
	pthread_mutex_lock(&eng.lock);
	failed = eng.failed;
	list = eng.dirty;
	eng.dirty = NULL;
	pthread_mutex_unlock(&eng.lock);
	if (failed) {
		warn_lines(eng.why);
		serve_worker_fail();
	}
	if (!eng.announced && serve_engine_gen() != NULL)
		announce();
	for (job = list; job != NULL; job = next) {
		pthread_mutex_lock(&eng.lock);
		next = job->d_next;
		job->dirty = 0;
		ph = job->phase;
		/* swap the buffers: the threads append to an empty one */
		tmp = job->send;
		job->send = job->out;
		job->out = tmp;
		job->send_t0 = job->out_t0;
		pthread_mutex_unlock(&eng.lock);
		deliver(job, ph);
	}
}

/* Every second: keep idle streams alive, refresh the queue gauges. */
static void
tick(void *arg, u_int64_t now)
{
	struct serve_job	*job;
	struct rs_buf		 b;
	double			 t = rs_time_ms();
	int			 waiting, running;

	(void)arg;
	(void)now;
	rs_buf_init(&b);
	(void)rs_oai_sse_keepalive(&b);
	for (job = eng.live; job != NULL; job = job->l_next)
		if (job->stream && !job->answered && job->last_write > 0 &&
		    t - job->last_write >= serve_cfg.keepalive_ms)
			send_chunk(job, &b);
	rs_buf_cleanup(&b);
	serve_engine_load(&waiting, &running);
	rs_metrics_queue(serve_metrics, waiting, running);
}

void
serve_engine_start(void)
{
	sigset_t	all, old;
	int		rc;

	if ((eng.notify.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1) {
		rs_cli_warn("eventfd: %s", strerror(errno));
		serve_worker_fail();
	}
	eng.notify.evt.type = 0x7273;	/* any: only handle is used */
	eng.notify.evt.handle = notify_handle;
	kore_platform_schedule_read(eng.notify.fd, &eng.notify);
	rs_buf_init(&eng.scratch);
	eng.timer = kore_timer_add(tick, serve_cfg.keepalive_ms < 1000 ?
	    (uint64_t)serve_cfg.keepalive_ms : 1000, NULL, 0);

	/*
	 * Signals are the loop's business: the engine threads block them,
	 * all but SIGSYS, the sandbox's report of a refused call
	 * (serve_main.c), which must reach the thread that made it.
	 */
	sigfillset(&all);
	sigdelset(&all, SIGSYS);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&eng.thread, NULL, engine_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		rs_cli_warn("engine thread: %s", strerror(rc));
		serve_worker_fail();
	}
	eng.started = 1;
	serve_prep_start();
}

void
serve_streams_shutdown(void)
{
	struct serve_job	*job;
	struct rs_gen_error	 ge;
	struct rs_buf		 b;

	memset(&ge, 0, sizeof(ge));
	(void)snprintf(ge.err.msg, sizeof(ge.err.msg), "the server is "
	    "shutting down");
	ge.type = "unavailable_error";
	ge.code = 503;
	rs_buf_init(&b);
	(void)rs_oai_sse_error(&ge, &b);
	/* (last_write: the header went out, start_stream; the loop sent
	   whole chunks, so the stream is at a chunk's end) */
	for (job = eng.live; job != NULL; job = job->l_next) {
		if (job->http == NULL || job->answered || !job->stream ||
		    job->last_write == 0)
			continue;
		send_chunk(job, &b);
		if (job->chunked)
			send_bytes(job, "0\r\n\r\n", 5);
	}
	rs_buf_cleanup(&b);
}

void
serve_engine_stop(void)
{
	if (!eng.started)
		return;
	serve_prep_stop();
	pthread_mutex_lock(&eng.lock);
	eng.quit = 1;
	if (eng.running != NULL)
		atomic_store(&eng.running->cancel, 1);
	pthread_cond_broadcast(&eng.cond);
	pthread_mutex_unlock(&eng.lock);
	pthread_join(eng.thread, NULL);
	eng.started = 0;
	for (int i = 0; i < serve_cfg.slots; i++) {
		rs_gen_free(eng.g[i]);
		rs_state_free(eng.state[i]);
	}
	rs_ckcache_free(eng.ckc);
	rs_engine_free(eng.engine);
	rs_buf_cleanup(&eng.scratch);
}

/* ---- the loop: requests ---- */

/* Kore frees REQ: at the end of the response, or because the client left. */
static void
job_onfree(struct http_request *req)
{
	struct serve_job	*job = req->hdlr_extra;
	struct serve_job	**pp, *t;
	int			 free_now = 0;

	req->hdlr_extra = NULL;
	job->http = NULL;
	live_remove(job);
	if (!job->answered) {
		/* gone before the end: stop the generation (§4.9) */
		atomic_store(&job->cancel, 1);
		job->t_cancel = rs_time_ms();
		rs_metrics_cancelled(serve_metrics);
	}
	pthread_mutex_lock(&eng.lock);
	if (job->phase == SERVE_QUEUED) {
		/* never started: take it out of the FIFO */
		for (pp = &eng.head; *pp != job; pp = &(*pp)->q_next)
			;
		*pp = job->q_next;
		for (t = eng.head; t != NULL && t->q_next != NULL;
		    t = t->q_next)
			;
		eng.tail = t;
		eng.waiting--;
		job->t_end = job->t_cancel;
		job->phase = SERVE_DONE;
		free_now = 1;
	} else if (!job->dirty && (job->phase == SERVE_READY ||
	    job->phase == SERVE_ANSWERED || job->phase == SERVE_DONE)) {
		free_now = 1;
	}
	pthread_mutex_unlock(&eng.lock);
	if (!free_now)
		return;		/* a thread holds it: deliver() frees it */
	if (!job->answered)
		log_cancelled(job);
	job_free(job);
}

int
serve_job_resume(struct http_request *req)
{
	struct serve_job *job = req->hdlr_extra;

	if (!job->answered) {
		http_request_sleep(req);
		return (KORE_RESULT_RETRY);
	}
	serve_log_write(&job->log, job->status);
	/* the connection is idle from now: Kore's idle timer restarts only
	   on a socket event, so it still counted from the request's arrival
	   and closed the connection that long before the "keep-alive:
	   timeout=" its response announced */
	if (req->owner != NULL)
		kore_connection_start_idletimer(req->owner);
	return (KORE_RESULT_OK);
}

int
serve_job_submit(struct http_request *req, enum serve_api api,
    double t_recv)
{
	struct serve_job *job;

	if ((job = calloc(1, sizeof(*job))) == NULL) {
		struct serve_log l;

		serve_send_error(req, 500, NULL, NULL, "out of memory");
		serve_log_init(&l, req, t_recv);
		serve_log_write(&l, 500);
		return (KORE_RESULT_OK);
	}
	job->api = api;
	job->t_recv = t_recv;
	job->phase = SERVE_PREP;
	/* the body moves to the job: Kore frees the request, not the body */
	if (req->http_body != NULL) {
		job->kbody = req->http_body;
		job->body = (const char *)req->http_body->data +
		    req->http_body->offset;
		job->body_len = req->http_body_length;
		req->http_body = NULL;
	} else {
		job->body = "";
	}
	rs_buf_init(&job->out);
	rs_buf_init(&job->send);
	serve_log_init(&job->log, req, t_recv);
	job->http = req;
	req->hdlr_extra = job;
	req->flags |= HTTP_REQUEST_RETAIN_EXTRA;
	req->onfree = job_onfree;
	live_add(job);
	serve_prep_submit(job);
	http_request_sleep(req);
	return (KORE_RESULT_RETRY);
}
