/*
 * rs_metrics.c - counters for GET /metrics (see rs_metrics.h).
 *
 * Everything sits behind one mutex: updates come a few times per request
 * (the engine thread at the end of a generation, the event loop once per
 * response), so contention is nil and a lock is simpler than atomics for
 * doubles and histograms.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs_metrics.h"

/*
 * Time-to-first-token buckets (seconds, upper bounds, "le").  The spread
 * covers a short prompt on the GPU (a few ms) up to a 100k-token agent
 * prompt prefilled on the CPU (minutes).
 */
static const double ttft_le[] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300
};
#define N_TTFT	(sizeof(ttft_le) / sizeof(ttft_le[0]))

struct series {
	char		route[RS_METRICS_ROUTE_MAX];
	int		code;
	uint64_t	count;
};

struct rs_metrics {
	pthread_mutex_t	lock;
	struct series	req[RS_METRICS_MAX_SERIES];
	int		n_req;
	uint64_t	dropped;	/* requests beyond the label table */
	uint64_t	cancelled;
	uint64_t	prompt_tokens;
	uint64_t	gen_tokens;
	double		prompt_s;
	double		decode_s;
	double		prompt_tps;	/* last request */
	double		decode_tps;
	int		waiting;
	int		running;
	uint64_t	ttft_bucket[N_TTFT];	/* non-cumulative counts */
	uint64_t	ttft_count;
	double		ttft_sum;
	uint64_t	draft_pos_n[RS_METRICS_MAX_POS];
	uint64_t	draft_pos_acc[RS_METRICS_MAX_POS];
	int		draft_n_pos;	/* positions seen so far */
	double		draft_s;
	int		have_ck;
	struct rs_ckcache_stats ck;
};

enum rs_status
rs_metrics_new(struct rs_metrics **out, struct rs_err *err)
{
	struct rs_metrics *m;

	if ((m = calloc(1, sizeof(*m))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "metrics: out of memory"));
	if (pthread_mutex_init(&m->lock, NULL) != 0) {
		free(m);
		return (rs_errf(err, RS_ERR_IO, "metrics: mutex init failed"));
	}
	*out = m;
	return (RS_OK);
}

void
rs_metrics_free(struct rs_metrics *m)
{
	if (m == NULL)
		return;
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/*
 * The series for (ROUTE, CODE), created if fewer than LIMIT exist; caller
 * locks.
 */
static struct series *
series_get(struct rs_metrics *m, const char *route, int code, int limit)
{
	struct series	*s;
	int		 i;

	for (i = 0; i < m->n_req; i++) {
		s = &m->req[i];
		if (s->code == code && strcmp(s->route, route) == 0)
			return (s);
	}
	if (m->n_req >= limit)
		return (NULL);
	s = &m->req[m->n_req++];
	/* route names are ours and short; a longer one is cut, not refused */
	(void)snprintf(s->route, sizeof(s->route), "%s", route);
	s->code = code;
	s->count = 0;
	return (s);
}

void
rs_metrics_request(struct rs_metrics *m, const char *route, int code)
{
	struct series *s;

	pthread_mutex_lock(&m->lock);
	/*
	 * Named series may fill all but one slot; route="other" takes the
	 * slack.  With every code seen on "other" too the table could fill
	 * up: such requests are counted as code="other".
	 */
	if ((s = series_get(m, route, code, RS_METRICS_MAX_SERIES - 1)) ==
	    NULL)
		s = series_get(m, "other", code, RS_METRICS_MAX_SERIES);
	if (s != NULL)
		s->count++;
	else
		m->dropped++;
	pthread_mutex_unlock(&m->lock);
}

void
rs_metrics_cancelled(struct rs_metrics *m)
{
	pthread_mutex_lock(&m->lock);
	m->cancelled++;
	pthread_mutex_unlock(&m->lock);
}

void
rs_metrics_generation(struct rs_metrics *m, int64_t n_prompt,
    double prompt_ms, int64_t n_gen, double decode_ms)
{
	pthread_mutex_lock(&m->lock);
	m->prompt_tokens += n_prompt > 0 ? (uint64_t)n_prompt : 0;
	m->gen_tokens += n_gen > 0 ? (uint64_t)n_gen : 0;
	if (prompt_ms > 0) {
		m->prompt_s += prompt_ms / 1e3;
		m->prompt_tps = n_prompt / (prompt_ms / 1e3);
	}
	if (decode_ms > 0) {
		m->decode_s += decode_ms / 1e3;
		m->decode_tps = n_gen / (decode_ms / 1e3);
	}
	pthread_mutex_unlock(&m->lock);
}

void
rs_metrics_drafts(struct rs_metrics *m, const int64_t *pos_n,
    const int64_t *pos_acc, int n, double ms)
{
	pthread_mutex_lock(&m->lock);
	for (int j = 0; j < n && j < RS_METRICS_MAX_POS; j++) {
		m->draft_pos_n[j] += pos_n[j] > 0 ? (uint64_t)pos_n[j] : 0;
		m->draft_pos_acc[j] += pos_acc[j] > 0 ? (uint64_t)pos_acc[j] :
		    0;
		if (j + 1 > m->draft_n_pos)
			m->draft_n_pos = j + 1;
	}
	if (ms > 0)
		m->draft_s += ms / 1e3;
	pthread_mutex_unlock(&m->lock);
}

void
rs_metrics_ttft(struct rs_metrics *m, double seconds)
{
	size_t i;

	pthread_mutex_lock(&m->lock);
	for (i = 0; i < N_TTFT && seconds > ttft_le[i]; i++)
		;
	if (i < N_TTFT)
		m->ttft_bucket[i]++;
	m->ttft_count++;
	m->ttft_sum += seconds;
	pthread_mutex_unlock(&m->lock);
}

void
rs_metrics_queue(struct rs_metrics *m, int waiting, int running)
{
	pthread_mutex_lock(&m->lock);
	m->waiting = waiting;
	m->running = running;
	pthread_mutex_unlock(&m->lock);
}

static void
head(struct rs_buf *out, const char *name, const char *type,
    const char *help)
{
	rs_buf_addf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
	    type);
}

static void
scalar(struct rs_buf *out, const char *name, const char *type,
    const char *help, double v)
{
	head(out, name, type, help);
	rs_buf_addf(out, "%s %.17g\n", name, v);
}

void
rs_metrics_checkpoints(struct rs_metrics *m, const struct rs_ckcache_stats *s)
{
	pthread_mutex_lock(&m->lock);
	m->have_ck = 1;
	m->ck = *s;
	pthread_mutex_unlock(&m->lock);
}

/* The checkpoint cache's series (rs_metrics.h); caller locks. */
static void
checkpoints(struct rs_metrics *m, struct rs_buf *out)
{
	const struct rs_ckcache_stats *s = &m->ck;

	scalar(out, "rs_checkpoint_hits_total", "counter",
	    "Prompts whose prefix was restored from a state checkpoint.",
	    (double)s->hits);
	scalar(out, "rs_checkpoint_misses_total", "counter",
	    "Prompts that looked for a state checkpoint and found none.",
	    (double)s->misses);
	scalar(out, "rs_checkpoint_tokens_reused_total", "counter",
	    "Prompt positions restored from state checkpoints.",
	    (double)s->tokens_reused);
	scalar(out, "rs_checkpoint_cross_total", "counter",
	    "Checkpoint hits restored into another slot than the one they "
	    "were taken in (its KV rows copied).", (double)s->cross);
	scalar(out, "rs_checkpoint_saves_total", "counter",
	    "State checkpoints stored.", (double)s->saves);
	scalar(out, "rs_checkpoint_spills_total", "counter",
	    "State checkpoints moved from device memory to host RAM.",
	    (double)s->spills);
	scalar(out, "rs_checkpoint_evictions_total", "counter",
	    "State checkpoints dropped to make room.", (double)s->evictions);
	head(out, "rs_checkpoint_memory_bytes", "gauge",
	    "Bytes of state checkpoints held, by where they are.");
	rs_buf_addf(out, "rs_checkpoint_memory_bytes{where=\"device\"} "
	    "%llu\n", (unsigned long long)s->dev_bytes);
	rs_buf_addf(out, "rs_checkpoint_memory_bytes{where=\"host\"} "
	    "%llu\n", (unsigned long long)s->host_bytes);
	head(out, "rs_checkpoints", "gauge",
	    "State checkpoints held, by where they are.");
	rs_buf_addf(out, "rs_checkpoints{where=\"device\"} %u\n", s->n_dev);
	rs_buf_addf(out, "rs_checkpoints{where=\"host\"} %u\n", s->n_host);
}

/* The speculative-decoding series, once a generation drafted. */
static void
drafts(struct rs_metrics *m, struct rs_buf *out)
{
	uint64_t n = 0, acc = 0;
	int	 j;

	/* a draft at position j was verified once per round reaching it:
	   the totals are the sums over positions */
	for (j = 0; j < m->draft_n_pos; j++) {
		n += m->draft_pos_n[j];
		acc += m->draft_pos_acc[j];
	}
	scalar(out, "rs_draft_tokens_total", "counter",
	    "Draft tokens verified by speculative decoding.", (double)n);
	scalar(out, "rs_draft_accepted_tokens_total", "counter",
	    "Draft tokens kept (the sampler chose them).", (double)acc);
	scalar(out, "rs_draft_seconds_total", "counter",
	    "Seconds spent drafting and catching the MTP cache up.",
	    m->draft_s);
	head(out, "rs_draft_position_tokens_total", "counter",
	    "Verification rounds that drafted a token at this position.");
	for (j = 0; j < m->draft_n_pos; j++)
		rs_buf_addf(out, "rs_draft_position_tokens_total{position="
		    "\"%d\"} %llu\n", j + 1,
		    (unsigned long long)m->draft_pos_n[j]);
	head(out, "rs_draft_position_accepted_total", "counter",
	    "Of those rounds, the ones that kept the draft at this position "
	    "(and every draft before it).");
	for (j = 0; j < m->draft_n_pos; j++)
		rs_buf_addf(out, "rs_draft_position_accepted_total{position="
		    "\"%d\"} %llu\n", j + 1,
		    (unsigned long long)m->draft_pos_acc[j]);
}

int
rs_metrics_format(struct rs_metrics *m, struct rs_buf *out)
{
	uint64_t	cum;
	size_t		i;
	int		j;

	pthread_mutex_lock(&m->lock);
	head(out, "rs_requests_total", "counter",
	    "HTTP requests answered, by route and status code.");
	for (j = 0; j < m->n_req; j++)
		rs_buf_addf(out, "rs_requests_total{route=\"%s\",code=\"%d\"} "
		    "%llu\n", m->req[j].route, m->req[j].code,
		    (unsigned long long)m->req[j].count);
	if (m->dropped > 0)
		rs_buf_addf(out, "rs_requests_total{route=\"other\","
		    "code=\"other\"} %llu\n", (unsigned long long)m->dropped);
	scalar(out, "rs_requests_cancelled_total", "counter",
	    "Generations stopped because the client went away.",
	    (double)m->cancelled);
	scalar(out, "rs_prompt_tokens_total", "counter",
	    "Prompt tokens computed (cached ones not counted).",
	    (double)m->prompt_tokens);
	scalar(out, "rs_completion_tokens_total", "counter",
	    "Tokens sampled by finished generations.",
	    (double)m->gen_tokens);
	scalar(out, "rs_prompt_seconds_total", "counter",
	    "Seconds spent processing prompts.", m->prompt_s);
	scalar(out, "rs_decode_seconds_total", "counter",
	    "Seconds spent generating tokens.", m->decode_s);
	scalar(out, "rs_prompt_tokens_per_second", "gauge",
	    "Prompt processing speed of the last generation.", m->prompt_tps);
	scalar(out, "rs_decode_tokens_per_second", "gauge",
	    "Generation speed of the last generation.", m->decode_tps);
	scalar(out, "rs_queue_depth", "gauge",
	    "Requests waiting for the engine.", m->waiting);
	scalar(out, "rs_requests_running", "gauge",
	    "Requests being generated.", m->running);
	head(out, "rs_time_to_first_token_seconds", "histogram",
	    "Seconds from receiving a request to the first content, "
	    "reasoning or tool-call token of its answer: queue and prompt "
	    "processing included, the role chunk a stream sends first and "
	    "markup tokens not counted.");
	cum = 0;
	for (i = 0; i < N_TTFT; i++) {
		cum += m->ttft_bucket[i];
		rs_buf_addf(out, "rs_time_to_first_token_seconds_bucket"
		    "{le=\"%g\"} %llu\n", ttft_le[i], (unsigned long long)cum);
	}
	rs_buf_addf(out, "rs_time_to_first_token_seconds_bucket{le=\"+Inf\"} "
	    "%llu\n", (unsigned long long)m->ttft_count);
	rs_buf_addf(out, "rs_time_to_first_token_seconds_sum %.17g\n",
	    m->ttft_sum);
	rs_buf_addf(out, "rs_time_to_first_token_seconds_count %llu\n",
	    (unsigned long long)m->ttft_count);
	if (m->draft_n_pos > 0)
		drafts(m, out);
	if (m->have_ck)
		checkpoints(m, out);
	pthread_mutex_unlock(&m->lock);
	return (out->oom ? -1 : 0);
}
