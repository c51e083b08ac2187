/*
 * serve_guard.c - slow and hostile clients (issue #15): how many
 * connections may wait, and for how long, before a request arrives.
 *
 * Kore stops accepting at worker_max_connections, so 512 connections that
 * open and never finish a request (slow-loris, half-open floods) used to
 * stop /health until Kore's header timeout (10 s) freed them.  rs-serve
 * takes over that timeout (Kore's http_header_timeout and
 * http_body_timeout are set out of reach, serve_main.c) and bounds the
 * *waiting* connections, those with no request in progress:
 *
 *   - on every accept, a client (an address) with more than
 *     GUARD_PER_CLIENT waiting connections, or a server with more than
 *     GUARD_WAITING, loses its oldest waiting one, so a new connection,
 *     a health check included, is always taken and served;
 *   - every GUARD_TICK_MS a timer closes the waiting connections older
 *     than the header timeout: GUARD_HEADER_MS, or GUARD_PRESSURE_MS once
 *     more than GUARD_PRESSURE connections wait; a request body gets
 *     GUARD_BODY_MS (GUARD_PRESSURE_MS under pressure) to arrive.
 *     Pressure lasts GUARD_HOLD_MS after it was last seen: the short
 *     timeouts reap the flood itself, and the connections that arrived
 *     with it but sat in a later tick must not fall back to the long
 *     ones the moment the flood is gone.
 *
 * A connection closed with part of a request received is answered 408
 * with the OpenAI error envelope first; an idle keep-alive one is just
 * closed (RFC 9112 §9.5).  Connections busy with a request (a generation
 * queued or streaming) are never touched here: the engine's queue bounds
 * those (503 beyond --queue).
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include <string.h>

#include <kore/kore.h>
#include <kore/http.h>

#include "serve.h"

#define GUARD_TICK_MS		250
#define GUARD_HEADER_MS		(SERVE_IDLE_S * 1000)
#define GUARD_BODY_MS		30000
#define GUARD_PRESSURE		64
#define GUARD_PRESSURE_MS	2000
#define GUARD_HOLD_MS		10000
#define GUARD_PER_CLIENT	128
#define GUARD_WAITING		384

extern struct connection_list connections;

/* Is C waiting for a request (no request in progress)? */
static int
waiting(const struct connection *c)
{
	return (c->state == CONN_STATE_ESTABLISHED &&
	    c->proto == CONN_PROTO_HTTP && TAILQ_EMPTY(&c->http_requests) &&
	    c->rnb != NULL && c->rnb->buf != NULL);
}

/* Is C still receiving the body of its request? */
static int
in_body(const struct connection *c)
{
	const struct http_request *req = TAILQ_FIRST(&c->http_requests);

	return (c->state == CONN_STATE_ESTABLISHED && req != NULL &&
	    (req->flags & HTTP_REQUEST_EXPECT_BODY) &&
	    !(req->flags & HTTP_REQUEST_COMPLETE));
}

static int
same_client(const struct connection *a, const struct connection *b)
{
	if (a->family != b->family)
		return (0);
	if (a->family == AF_INET)
		return (a->addr.ipv4.sin_addr.s_addr ==
		    b->addr.ipv4.sin_addr.s_addr);
	if (a->family == AF_INET6)
		return (memcmp(&a->addr.ipv6.sin6_addr, &b->addr.ipv6.sin6_addr,
		    sizeof(a->addr.ipv6.sin6_addr)) == 0);
	return (1);
}

/* Close C, which waited too long or was evicted; 408 if it sent a part. */
static void
drop(struct connection *c)
{
	if (in_body(c))
		serve_refuse(c, c->rnb, 408, "the request body did not arrive "
		    "in time; the connection is closed");
	else if (c->rnb != NULL && c->rnb->buf != NULL && c->rnb->s_off > 0)
		serve_refuse(c, c->rnb, 408, "the request did not arrive in "
		    "time; the connection is closed");
	else
		kore_connection_disconnect(c);
}

void
serve_guard_accept(struct connection *nc)
{
	struct connection	*c, *oldest = NULL, *oldest_mine = NULL;
	size_t			 n = 0, mine = 0;

	TAILQ_FOREACH(c, &connections, list) {
		if (c == nc || !waiting(c))
			continue;
		n++;
		if (oldest == NULL || c->http_start < oldest->http_start)
			oldest = c;
		if (same_client(c, nc)) {
			mine++;
			if (oldest_mine == NULL ||
			    c->http_start < oldest_mine->http_start)
				oldest_mine = c;
		}
	}
	if (mine >= GUARD_PER_CLIENT)
		oldest = oldest_mine;
	else if (n < GUARD_WAITING)
		return;
	drop(oldest);
}

/* The timer: waiting connections past their time are closed. */
static void
guard_tick(void *arg, u_int64_t now)
{
	static u_int64_t	 pressure_until;
	struct connection	*c, *next;
	size_t			 n = 0;
	u_int64_t		 hdr, body;

	(void)arg;
	TAILQ_FOREACH(c, &connections, list)
		n += waiting(c);
	if (n > GUARD_PRESSURE)
		pressure_until = now + GUARD_HOLD_MS;
	hdr = now < pressure_until ? GUARD_PRESSURE_MS : GUARD_HEADER_MS;
	body = now < pressure_until ? GUARD_PRESSURE_MS : GUARD_BODY_MS;
	for (c = TAILQ_FIRST(&connections); c != NULL; c = next) {
		next = TAILQ_NEXT(c, list);
		if (now < c->http_start)
			continue;
		if ((waiting(c) && now - c->http_start >= hdr) ||
		    (in_body(c) && now - c->http_start >= body))
			drop(c);
	}
}

void
serve_guard_start(void)
{
	(void)kore_timer_add(guard_tick, GUARD_TICK_MS, NULL, 0);
}
