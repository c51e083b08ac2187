/*
 * serve_http.c - the request side of rs-serve (serving.md §4): one Kore
 * route catches every path and serve_dispatch() routes it here, so that
 * unknown paths (404), wrong methods (405), missing keys (401) and the rest
 * all get the OpenAI error envelope (§4.6).  Also CORS (§4.2), the small
 * GET endpoints, request validation before a job is queued, and the access
 * log: one line per request on stderr.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kore/kore.h>
#include <kore/http.h>

#include "cli.h"
#include "serve.h"

int	serve_dispatch(struct http_request *);

struct rs_metrics *serve_metrics;

struct route;
typedef int	(*route_fn)(struct http_request *, const struct route *,
		    double t_recv);

struct route {
	const char	*path;
	const char	*alias;		/* the same without (or with) /v1 */
	const char	*name;		/* for logs and metrics */
	int		 methods;	/* HTTP_METHOD_* */
	int		 open;		/* no API key needed */
	int		 loading_ok;	/* answers while the model loads */
	route_fn	 fn;
};

static int	r_chat(struct http_request *, const struct route *, double);
static int	r_completions(struct http_request *, const struct route *,
		    double);
static int	r_models(struct http_request *, const struct route *, double);
static int	r_model(struct http_request *, const struct route *, double);
static int	r_health(struct http_request *, const struct route *, double);
static int	r_metrics(struct http_request *, const struct route *, double);
static int	r_tokenize(struct http_request *, const struct route *,
		    double);
static int	r_detokenize(struct http_request *, const struct route *,
		    double);
static int	r_template(struct http_request *, const struct route *,
		    double);

#define GET_HEAD	(HTTP_METHOD_GET | HTTP_METHOD_HEAD)

static const struct route routes[] = {
	{ "/v1/chat/completions", "/chat/completions", "chat",
	    HTTP_METHOD_POST, 0, 0, r_chat },
	{ "/v1/completions", "/completions", "completions",
	    HTTP_METHOD_POST, 0, 0, r_completions },
	{ "/v1/models", "/models", "models", GET_HEAD, 1, 0, r_models },
	{ "/health", "/v1/health", "health", GET_HEAD, 1, 0, r_health },
	{ "/metrics", NULL, "metrics", GET_HEAD, 0, 1, r_metrics },
	/* debugging helpers with llama.cpp's names (§4.1) */
	{ "/tokenize", NULL, "tokenize", HTTP_METHOD_POST, 0, 0, r_tokenize },
	{ "/detokenize", NULL, "detokenize", HTTP_METHOD_POST, 0, 0,
	    r_detokenize },
	{ "/apply-template", NULL, "apply-template", HTTP_METHOD_POST, 0, 0,
	    r_template },
};
#define N_ROUTES	(sizeof(routes) / sizeof(routes[0]))

/* GET /v1/models/{id} (OpenAI's retrieve): every path under the prefix */
static const struct route model_route = { "/v1/models/", "/models/",
    "model", GET_HEAD, 1, 0, r_model };

static int
has_prefix(const char *s, const char *prefix)
{
	return (strncmp(s, prefix, strlen(prefix)) == 0);
}

static const struct route *
route_find(const char *path)
{
	size_t i;

	for (i = 0; i < N_ROUTES; i++)
		if (strcmp(path, routes[i].path) == 0 || (routes[i].alias !=
		    NULL && strcmp(path, routes[i].alias) == 0))
			return (&routes[i]);
	if (has_prefix(path, model_route.path) ||
	    has_prefix(path, model_route.alias))
		return (&model_route);
	return (NULL);
}

/* ---- responses ---- */

void
serve_send_json(struct http_request *req, int code, struct rs_json *j)
{
	char *s;

	http_response_header(req, "content-type",
	    "application/json; charset=utf-8");
	if (j == NULL || (s = rs_json_dumps(j)) == NULL) {
		static const char oom[] = "{\"error\":{\"message\":\"out of "
		    "memory\",\"type\":\"server_error\",\"param\":null,"
		    "\"code\":500}}";

		http_response(req, 500, oom, sizeof(oom) - 1);
	} else {
		http_response(req, code, s, strlen(s));
		free(s);
	}
	rs_json_free(j);
	serve_conn_rearm(req->owner);
}

void
serve_send_error(struct http_request *req, int code, const char *type,
    const char *param, const char *fmt, ...)
{
	va_list	ap;
	char	msg[512];

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	serve_send_json(req, code, rs_oai_error(code, type, msg, param));
}

static const char *
method_name(int m)
{
	switch (m) {
	case HTTP_METHOD_GET: return ("GET");
	case HTTP_METHOD_POST: return ("POST");
	case HTTP_METHOD_PUT: return ("PUT");
	case HTTP_METHOD_DELETE: return ("DELETE");
	case HTTP_METHOD_HEAD: return ("HEAD");
	case HTTP_METHOD_OPTIONS: return ("OPTIONS");
	case HTTP_METHOD_PATCH: return ("PATCH");
	default: return ("?");
	}
}

void
serve_log_init(struct serve_log *l, struct http_request *req, double t_recv)
{
	struct connection	*c = req->owner;
	const struct route	*r = route_find(req->path);

	memset(l, 0, sizeof(*l));
	(void)snprintf(l->addr, sizeof(l->addr), "-");
	if (c != NULL && c->family == AF_INET)
		inet_ntop(AF_INET, &c->addr.ipv4.sin_addr, l->addr,
		    sizeof(l->addr));
	else if (c != NULL && c->family == AF_INET6)
		inet_ntop(AF_INET6, &c->addr.ipv6.sin6_addr, l->addr,
		    sizeof(l->addr));
	l->method = method_name(req->method);
	(void)snprintf(l->path, sizeof(l->path), "%s", req->path);
	l->route = r != NULL ? r->name : "other";
	l->t_recv = t_recv;
	l->ttft_ms = -1;
	l->cancel_ms = -1;
}

/*
 * The time to first token, piece by piece (rs_gen.h, struct
 * rs_gen_timings): " ttft=prep:P(render:R,tok:T),wait:W,pick:K,setup:S,
 * lookup:L,restore:X[@host][+kv],prefill:N/TOK/MS[(t1:ms1 ...)],
 * save:N/MS,spill:N/MS,first:F(+K:D)" (ms; WAIT the queue after the prep,
 * PICK the choice of a slot, K the output tokens before the first text, D
 * the first decode step).
 */
static int
ttft_fields(const struct serve_log *l, char *s, size_t cap)
{
	const struct rs_gen_timings *t = &l->timings;
	int64_t	tok = 0;
	int	n, k;

	for (int32_t i = 0; i < t->prefill_calls && i < RS_GEN_MAX_CALLS; i++)
		tok += t->call_tokens[i];
	n = snprintf(s, cap, " ttft=prep:%.1f(render:%.1f,tok:%.1f),"
	    "wait:%.1f,pick:%.1f,setup:%.1f,lookup:%.1f,restore:%.1f%s%s,"
	    "prefill:%d/%lld/%.1f", l->prep_ms, t->render_ms, t->tokenize_ms,
	    l->queue_ms - l->prep_ms, l->pick_ms, t->setup_ms, t->lookup_ms,
	    t->restore_ms, t->restore_from_host ? "@host" : "",
	    t->restore_cross ? "+kv" : "", (int)t->prefill_calls,
	    (long long)tok, t->prefill_call_ms);
	for (int32_t i = 0; i < t->prefill_calls && i < 8 && n > 0 &&
	    n < (int)cap; i++)
		n += snprintf(s + n, cap - n, "%s%d:%.1f%s", i == 0 ? "(" :
		    " ", (int)t->call_tokens[i], t->call_ms[i],
		    i + 1 == t->prefill_calls || i == 7 ? ")" : "");
	if (n > 0 && n < (int)cap) {
		k = snprintf(s + n, cap - n, ",save:%lld/%.1f,spill:%lld/%.1f,"
		    "first:%.1f(+%lld:%.1f)", (long long)t->checkpoint_saves,
		    t->save_ms, (long long)t->spills, t->spill_ms,
		    t->first_text_ms, (long long)t->first_text_tokens,
		    t->first_decode_ms);
		n += k;
	}
	return (n);
}

void
serve_log_write(const struct serve_log *l, int code)
{
	char	line[1280], path[4 * sizeof(l->path)];
	int	n;

	rs_metrics_request(serve_metrics, l->route, code);
	if (serve_cfg.quiet)
		return;
	/* the client's bytes: no terminal escapes in the log (issue #15) */
	rs_cli_esc(l->path, strlen(l->path), path, sizeof(path));
	n = snprintf(line, sizeof(line), "%s: %s %s %s %d total_ms=%.1f",
	    rs_cli_name(), l->addr, l->method, path, code,
	    rs_time_ms() - l->t_recv);
	if (l->finish != NULL && n > 0 && n < (int)sizeof(line))
		n += snprintf(line + n, sizeof(line) - n, " prompt=%lld "
		    "cached=%lld completion=%lld queue_ms=%.1f prefill=%lld "
		    "prefill_ms=%.1f prefill_tok_s=%.1f", (long long)
		    l->prompt_tokens, (long long)l->cached_tokens,
		    (long long)l->completion_tokens, l->queue_ms,
		    (long long)l->timings.prompt_n,
		    l->prefill_ms, l->prefill_tps);
	/* "-": nothing but markup, or an error, before the end */
	if (l->finish != NULL && n > 0 && n < (int)sizeof(line))
		n += l->ttft_ms >= 0 ? snprintf(line + n, sizeof(line) - n,
		    " ttft_ms=%.1f", l->ttft_ms) : snprintf(line + n,
		    sizeof(line) - n, " ttft_ms=-");
	/* "-": no decode step timed (one token, from the prefill) */
	if (l->finish != NULL && n > 0 && n < (int)sizeof(line))
		n += l->decode_tps > 0 ? snprintf(line + n, sizeof(line) - n,
		    " tok_s=%.1f", l->decode_tps) : snprintf(line + n,
		    sizeof(line) - n, " tok_s=-");
	if (l->lag_max_ms > 0 && n > 0 && n < (int)sizeof(line))
		n += snprintf(line + n, sizeof(line) - n, " lag_ms=%.3f/%.3f",
		    l->lag_ms, l->lag_max_ms);
	if (l->finish != NULL && n > 0 && n < (int)sizeof(line))
		n += snprintf(line + n, sizeof(line) - n, " finish=%s",
		    l->finish);
	if (l->cancel_ms >= 0 && n > 0 && n < (int)sizeof(line))
		n += snprintf(line + n, sizeof(line) - n, " cancel_ms=%.2f",
		    l->cancel_ms);
	if (l->lone_surrogates > 0 && n > 0 && n < (int)sizeof(line))
		n += snprintf(line + n, sizeof(line) - n,
		    " lone_surrogates=%zu", l->lone_surrogates);
	if (l->has_timings && n > 0 && n < (int)sizeof(line))
		n += ttft_fields(l, line + n, sizeof(line) - n);
	if (n < 0 || n >= (int)sizeof(line) - 1)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	/* one write(2): lines never interleave */
	(void)!write(STDERR_FILENO, line, (size_t)n);
}

/* ---- Host and Origin checks, CORS (§4.2) ---- */

/*
 * Does the comma-separated LIST hold the N bytes at S (ignoring case)?
 * --public-host and --cors-origin are kept as such lists: each use of
 * the option appends to it (serve_opts.c).
 */
static int
list_has(const char *list, const char *s, size_t n)
{
	const char	*p, *e;

	for (p = list; p != NULL && *p != '\0'; p = *e != '\0' ? e + 1 : e) {
		if ((e = strchr(p, ',')) == NULL)
			e = p + strlen(p);
		if ((size_t)(e - p) == n && strncasecmp(p, s, n) == 0)
			return (1);
	}
	return (0);
}

/* Is the N-byte name at H an IPv4 address in 127.0.0.0/8? */
static int
loopback_v4(const char *h, size_t n)
{
	char		buf[INET_ADDRSTRLEN];
	struct in_addr	a;

	if (n >= sizeof(buf))
		return (0);
	memcpy(buf, h, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET, buf, &a) != 1)
		return (0);
	return ((ntohl(a.s_addr) >> 24) == 127);
}

/* Is the N-byte name at H the --host address (an IPv6 one in brackets)? */
static int
is_listen_host(const char *h, size_t n)
{
	const char	*l = serve_cfg.host;
	size_t		 ln = l != NULL ? strlen(l) : 0;

	if (ln == 0)
		return (0);
	if (n == ln + 2 && h[0] == '[' && h[n - 1] == ']')
		return (strncasecmp(h + 1, l, ln) == 0);
	return (n == ln && strncasecmp(h, l, ln) == 0);
}

/*
 * May a request name the host H (N bytes, no port)?  A DNS rebinding
 * attack points a name the attacker owns at 127.0.0.1, so the browser
 * sends that name: only loopback names, the --host address and the
 * --public-host names are ours.
 */
static int
host_name_ok(const char *h, size_t n)
{
	if ((n == 9 && strncasecmp(h, "localhost", 9) == 0) ||
	    (n == 5 && strncmp(h, "[::1]", 5) == 0) || loopback_v4(h, n))
		return (1);
	/* an IPv6 --public-host given without its brackets matches too */
	if (n > 2 && h[0] == '[' && h[n - 1] == ']' &&
	    list_has(serve_cfg.public_host, h + 1, n - 2))
		return (1);
	return (is_listen_host(h, n) || list_has(serve_cfg.public_host, h, n));
}

/*
 * The length of the host in "HOST[:PORT]" at S, or -1 when the port is
 * not digits or a bracketed IPv6 address is not closed.
 */
static long
host_len(const char *s)
{
	const char	*e, *p;

	if (*s == '[') {
		if ((e = strchr(s, ']')) == NULL)
			return (-1);
		e++;
	} else
		e = s + strcspn(s, ":");
	if (*e == '\0')
		return ((long)(e - s));
	if (*e != ':' || e[1] == '\0')
		return (-1);
	for (p = e + 1; isdigit((unsigned char)*p); p++)
		;
	return (*p == '\0' ? (long)(e - s) : -1);
}

int
serve_host_ok(const char *hostport)
{
	long	n = host_len(hostport);

	return (n > 0 && host_name_ok(hostport, (size_t)n));
}

/*
 * Does REQ's Host header name this server?  A request without one is
 * let through: browsers always send it, so its absence is no attack.
 */
static int
host_allowed(struct http_request *req)
{
	const char	*h;
	long		 n;

	if (!http_request_header(req, "host", &h))
		return (1);
	return ((n = host_len(h)) > 0 && host_name_ok(h, (size_t)n));
}

/* Is ORIGIN http(s)://HOST[:PORT] with a HOST that names this server? */
static int
origin_host_ok(const char *o)
{
	const char	*p;
	long		 n;

	if (strncmp(o, "http://", 7) == 0)
		p = o + 7;
	else if (strncmp(o, "https://", 8) == 0)
		p = o + 8;
	else
		return (0);
	return ((n = host_len(p)) > 0 && host_name_ok(p, (size_t)n));
}

/*
 * Is REQ's Origin allowed?  No Origin: not a browser's cross-origin call
 * (curl, the SDKs, VS Code), so yes.  Otherwise a page of our own hosts,
 * or one that --cors-origin names ('*' for any).
 */
static int
origin_allowed(struct http_request *req, const char **origin)
{
	const char *o;

	*origin = NULL;
	if (!http_request_header(req, "origin", &o))
		return (1);
	*origin = o;
	return (list_has(serve_cfg.cors_origin, "*", 1) ||
	    list_has(serve_cfg.cors_origin, o, strlen(o)) || origin_host_ok(o));
}

/* Add the CORS response headers for an allowed ORIGIN. */
static void
cors(struct http_request *req, const char *origin)
{
	http_response_header(req, "access-control-allow-origin", origin);
	http_response_header(req, "vary", "Origin");
}

static int
preflight(struct http_request *req, int allowed)
{
	const char *h;

	if (allowed) {
		http_response_header(req, "access-control-allow-methods",
		    "GET, POST, OPTIONS");
		http_response_header(req, "access-control-allow-headers",
		    http_request_header(req, "access-control-request-headers",
		    &h) ? h : "Authorization, Content-Type, X-Api-Key");
		http_response_header(req, "access-control-max-age", "600");
	}
	http_response(req, 204, NULL, 0);
	serve_conn_rearm(req->owner);
	return (KORE_RESULT_OK);
}

/* ---- authentication (§4.2) ---- */

/* Compare without an early exit, so timing does not leak the key. */
static int
key_equal(const char *a, const char *key)
{
	size_t		na = strlen(a), nk = strlen(key), i;
	unsigned char	d = na != nk;

	for (i = 0; i < nk; i++)
		d |= (unsigned char)key[i] ^ (unsigned char)(i < na ? a[i] : 0);
	return (d == 0);
}

static int
authorized(struct http_request *req)
{
	const char *h;

	if (serve_cfg.api_key == NULL)
		return (1);
	if (http_request_header(req, "authorization", &h) &&
	    strncasecmp(h, "Bearer ", 7) == 0) {
		for (h += 7; *h == ' '; h++)
			;
		return (key_equal(h, serve_cfg.api_key));
	}
	if (http_request_header(req, "x-api-key", &h))
		return (key_equal(h, serve_cfg.api_key));
	return (0);
}

/* ---- the dispatcher ---- */

static void
allow_header(struct http_request *req, int methods)
{
	char buf[64];

	(void)snprintf(buf, sizeof(buf), "%s%sOPTIONS",
	    methods & HTTP_METHOD_GET ? "GET, HEAD, " : "",
	    methods & HTTP_METHOD_POST ? "POST, " : "");
	http_response_header(req, "allow", buf);
}

/* Answer REQ with an error and log it. */
static int
fail(struct http_request *req, double t0, int code, const char *type,
    const char *param, const char *msg)
{
	struct serve_log l;

	serve_send_error(req, code, type, param, "%s", msg);
	serve_log_init(&l, req, t0);
	serve_log_write(&l, code);
	return (KORE_RESULT_OK);
}

/* Log a successful small response. */
static int
done(struct http_request *req, double t0, int code)
{
	struct serve_log l;

	serve_log_init(&l, req, t0);
	serve_log_write(&l, code);
	return (KORE_RESULT_OK);
}

int
serve_dispatch(struct http_request *req)
{
	const struct route	*r;
	const char		*origin;
	double			 t0;
	char			 msg[256];
	int			 allowed;

	if (req->hdlr_extra != NULL)
		return (serve_job_resume(req));
	t0 = rs_time_ms();
	r = route_find(req->path);
	/* before anything else: a refused page learns nothing of the API */
	if (!host_allowed(req))
		return (fail(req, t0, 421, "invalid_request_error", NULL,
		    "This server does not "
		    "answer for that Host; start it with --public-host NAME "
		    "to allow a name."));
	if (!origin_allowed(req, &origin)) {
		http_response_header(req, "vary", "Origin");
		return (fail(req, t0, 403, NULL, NULL, "Cross-origin request "
		    "refused; start the server with --cors-origin ORIGIN to "
		    "allow that origin."));
	}
	if ((allowed = origin != NULL))
		cors(req, origin);
	if (r == NULL) {
		(void)snprintf(msg, sizeof(msg), "Unknown path '%.200s'. Try "
		    "POST /v1/chat/completions.", req->path);
		return (fail(req, t0, 404, NULL, NULL, msg));
	}
	if (req->method == HTTP_METHOD_OPTIONS) {
		preflight(req, allowed);
		return (done(req, t0, 204));
	}
	if (!(r->methods & req->method)) {
		allow_header(req, r->methods);
		(void)snprintf(msg, sizeof(msg), "Method %s is not allowed on "
		    "%s; use %s.", method_name(req->method), req->path,
		    r->methods & HTTP_METHOD_POST ? "POST" : "GET");
		return (fail(req, t0, 405, NULL, NULL, msg));
	}
	if (!r->open && !authorized(req)) {
		http_response_header(req, "www-authenticate", "Bearer");
		return (fail(req, t0, 401, NULL, NULL, "Invalid API Key"));
	}
	if (!r->loading_ok && serve_engine_gen() == NULL) {
		http_response_header(req, "retry-after", "1");
		return (fail(req, t0, 503, NULL, NULL, "Loading model"));
	}
	return (r->fn(req, r, t0));
}

/* ---- GET endpoints ---- */

static int
r_health(struct http_request *req, const struct route *r, double t0)
{
	static const char	ok[] = "{\"status\":\"ok\"}";

	(void)r;
	http_response_header(req, "content-type",
	    "application/json; charset=utf-8");
	http_response(req, 200, ok, sizeof(ok) - 1);
	serve_conn_rearm(req->owner);
	return (done(req, t0, 200));
}

static int
r_models(struct http_request *req, const struct route *r, double t0)
{
	struct rs_oai_model m = serve_model.info;

	(void)r;
	m.n_ctx = rs_gen_n_ctx(serve_engine_gen());
	serve_send_json(req, 200, rs_oai_models(&m));
	return (done(req, t0, 200));
}

/*
 * S percent-decoded into OUT (CAP bytes); -1 for a bad escape, a NUL or
 * no room.
 */
static int
url_decode(const char *s, char *out, size_t cap)
{
	size_t	n = 0;

	for (; *s != '\0'; s++) {
		int c = (unsigned char)*s;

		if (c == '%') {
			if (!isxdigit((unsigned char)s[1]) ||
			    !isxdigit((unsigned char)s[2]))
				return (-1);
			char hex[3] = { s[1], s[2], '\0' };
			c = (int)strtol(hex, NULL, 16);
			s += 2;
		}
		if (c == 0 || n + 1 >= cap)
			return (-1);
		out[n++] = (char)c;
	}
	out[n] = '\0';
	return (0);
}

/*
 * GET /v1/models/{id}: the served model's object when ID is its id (the
 * rest of the path, percent-decoded: an id may hold a '/'), else 404.
 */
static int
r_model(struct http_request *req, const struct route *r, double t0)
{
	struct rs_oai_model	 m = serve_model.info;
	const char		*id = req->path + strlen(has_prefix(req->path,
				    r->path) ? r->path : r->alias);
	char			 want[512], msg[700];

	if (url_decode(id, want, sizeof(want)) != 0 ||
	    strcmp(want, m.id) != 0) {
		(void)snprintf(msg, sizeof(msg), "The model '%.200s' does not "
		    "exist; this server serves '%.200s'.", id, m.id);
		return (fail(req, t0, 404, NULL, "model", msg));
	}
	m.n_ctx = rs_gen_n_ctx(serve_engine_gen());
	serve_send_json(req, 200, rs_oai_model_obj(&m));
	return (done(req, t0, 200));
}

static int
r_metrics(struct http_request *req, const struct route *r, double t0)
{
	struct rs_buf	b;
	int		waiting, running;

	(void)r;
	serve_engine_load(&waiting, &running);
	rs_metrics_queue(serve_metrics, waiting, running);
	rs_buf_init(&b);
	if (rs_metrics_format(serve_metrics, &b) != 0) {
		rs_buf_cleanup(&b);
		return (fail(req, t0, 500, NULL, NULL, "out of memory"));
	}
	http_response_header(req, "content-type",
	    "text/plain; version=0.0.4; charset=utf-8");
	http_response(req, 200, b.data, b.len);
	serve_conn_rearm(req->owner);
	rs_buf_cleanup(&b);
	return (done(req, t0, 200));
}

/* ---- generation endpoints ---- */

/* The body is validated and tokenized by the prep thread (serve_prep.c). */
static int
r_chat(struct http_request *req, const struct route *r, double t0)
{
	(void)r;
	return (serve_job_submit(req, SERVE_CHAT, t0));
}

static int
r_completions(struct http_request *req, const struct route *r, double t0)
{
	(void)r;
	return (serve_job_submit(req, SERVE_COMPLETION, t0));
}

static int
r_tokenize(struct http_request *req, const struct route *r, double t0)
{
	(void)r;
	return (serve_job_submit(req, SERVE_TOKENIZE, t0));
}

static int
r_detokenize(struct http_request *req, const struct route *r, double t0)
{
	(void)r;
	return (serve_job_submit(req, SERVE_DETOKENIZE, t0));
}

static int
r_template(struct http_request *req, const struct route *r, double t0)
{
	(void)r;
	return (serve_job_submit(req, SERVE_TEMPLATE, t0));
}
