/*
 * serve_main.c - rs-serve's entry points into Kore: the parent's
 * configuration (options, the model, listeners, limits, privilege
 * separation), the worker's start and end, the seccomp filter, and the
 * connection hook that answers an oversized body with a JSON 413 before
 * reading it.
 *
 * Kore's main() (single-binary mode) calls kore_parent_configure(argc,
 * argv) before anything listens, forks one worker (worker_count 1: one
 * engine per process), and in the worker calls kore_seccomp_hook() while
 * sandboxing and kore_worker_configure() when the event loop is about to
 * run.  A dead worker stops the server (worker policy "terminate"): a
 * generation engine that crashed is not silently reloaded in a loop.
 */
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/dh.h>
#include <openssl/objects.h>

#include <kore/kore.h>
#include <kore/http.h>
#include <kore/seccomp.h>

#include "cli.h"
#include "rs_chat.h"
#include "rs_version.h"
#include "serve.h"

/* Kore finds these by name (dlsym), so they need external linkage. */
void	kore_parent_configure(int, char **);
void	kore_parent_teardown(void);
void	kore_worker_configure(void);
void	kore_worker_teardown(void);
void	kore_seccomp_hook(void);
void	serve_connect(struct connection *);

struct serve_model serve_model;

/*
 * The worker's fate, in memory shared with the parent.  STATE: 1 while it
 * runs, 0 after a clean teardown, 2 when the engine could not start.
 * SYSCALL: the system call the sandbox refused (-1: none), written by the
 * worker's SIGSYS handler just before it dies.  Anything but (0, -1) when
 * the parent tears down makes rs-serve exit 2, with the reason.
 */
struct worker_fate {
	volatile int	state;
	volatile long	syscall;
};
static struct worker_fate *fate;

/* Kore's pool of header entries (http.c) */
extern struct kore_pool http_header_pool;

static int	serve_header_recv(struct netbuf *);
static int	serve_discard(struct netbuf *);

/* ---- the model ---- */

/* the longest default model id, in bytes (an --alias is the user's) */
#define ALIAS_MAX	128

/*
 * general.name in lower case, blanks and control characters as '-', cut
 * to ALIAS_MAX bytes at a character's start (the id is in every chunk of
 * a stream: a 5 MB name made each 5 MB); else the file's base name.
 */
static char *
default_alias(const struct rs_model *m, const char *path)
{
	struct rs_gguf_str	 s;
	const char		*base;
	char			*a, *p;
	size_t			 n;

	if (rs_gguf_get_str(m->gguf, "general.name", &s, NULL) == RS_OK &&
	    s.len > 0) {
		n = s.len;
		if (n > ALIAS_MAX) {
			n = ALIAS_MAX;
			while (n > 0 && ((unsigned char)s.ptr[n] & 0xC0) ==
			    0x80)
				n--;
		}
		a = strndup(s.ptr, n);
	} else {
		base = strrchr(path, '/') != NULL ? strrchr(path, '/') + 1 :
		    path;
		n = strlen(base);
		if (n > 5 && strcmp(base + n - 5, ".gguf") == 0)
			n -= 5;
		a = strndup(base, n);
	}
	if (a == NULL)
		rs_cli_fatal("out of memory");
	for (p = a; *p != '\0'; p++)
		*p = isspace((unsigned char)*p) || iscntrl((unsigned char)*p) ?
		    '-' : (char)tolower((unsigned char)*p);
	return (a);
}

/*
 * The default --max-body, from the context size N_CTX.  A prompt cannot
 * hold more than n_ctx tokens, and a token is rarely more than a few
 * bytes of text, so 32 bytes a token (room for long tokens and JSON
 * escapes) plus 4 MiB for tool schemas and the rest of the request bounds
 * any body that can succeed.  A larger one is refused with 413 before it
 * is read, instead of being parsed and tokenized in full (seconds and a
 * GB of memory for 50 MB) only to exceed the context (issue #15).
 */
static int64_t
default_body_max(int64_t n_ctx)
{
	const int64_t	floor = INT64_C(8) << 20, extra = INT64_C(4) << 20;
	int64_t		v = n_ctx * 32 + extra;

	return (v > floor ? v : floor);
}

static void
load_model(void)
{
	struct serve_cfg	*c = &serve_cfg;
	struct serve_model	*sm = &serve_model;
	enum rs_chat_variant	 v;
	struct rs_err		 err;

	if (rs_model_open(&sm->model, c->model_path, &err) != RS_OK)
		rs_cli_fatal("%s: %s", c->model_path, err.msg);
	if (rs_tok_new(&sm->tok, sm->model->gguf, c->tok_norm, &err) != RS_OK)
		rs_cli_fatal("%s: tokenizer: %s", c->model_path, err.msg);
	/*
	 * serving.md §2.1: the renderer implements the known templates
	 * alone.  A model with another (or none, or a vocabulary without the
	 * chat tokens) starts only when told to go without chat: a server
	 * whose every chat request fails looks broken to the client that
	 * finds out (Copilot), where this names the cause at once.
	 */
	if ((rs_chat_identify_gguf(sm->model->gguf, &v, &err) != RS_OK ||
	    rs_tok_check_chat(sm->tok, &err) != RS_OK) && !c->no_chat)
		rs_cli_fatal("%s: chat requests are not available with this "
		    "model (%s)%s", c->model_path, err.msg,
		    c->copilot_url != NULL ? ", and Copilot needs them" :
		    "; --no-chat serves /v1/completions alone");
	if (c->alias == NULL)
		c->alias = default_alias(sm->model, c->model_path);
	sm->info.id = c->alias;
	sm->info.created = (int64_t)time(NULL);
	sm->info.n_ctx_train = sm->model->hp.n_ctx_train;
	sm->info.n_ctx = c->n_ctx > 0 ? c->n_ctx : sm->info.n_ctx_train;
	sm->info.n_vocab = rs_tok_meta(sm->tok)->n_vocab;
	/* every known Qwen template thinks; only Qwen3.8's takes efforts */
	if (rs_chat_identify_gguf(sm->model->gguf, &v, NULL) == RS_OK) {
		sm->info.thinking = 1;
		sm->info.effort = v == RS_CHAT_QWEN38;
	}
	(void)snprintf(sm->fingerprint, sizeof(sm->fingerprint),
	    "redshift-%s", rs_version());
	if (c->body_max == 0)
		c->body_max = default_body_max(sm->info.n_ctx);
	if (c->n_ctx > sm->info.n_ctx_train)
		rs_cli_warn("--ctx %lld is beyond the model's context length "
		    "%lld", (long long)c->n_ctx,
		    (long long)sm->info.n_ctx_train);
}

/* ---- --copilot-config ---- */

/* J indented by two spaces per level (jq's layout), on stdout. */
static void
print_pretty(const struct rs_json *j, int depth)
{
	struct rs_json	*v;
	const char	*key;
	void		*it = NULL;
	size_t		 i, n, klen;
	char		*s;

	switch (rs_json_kind(j)) {
	case RS_JSON_ARRAY:
		if ((n = rs_json_arr_len(j)) == 0) {
			fputs("[]", stdout);
			break;
		}
		fputs("[\n", stdout);
		for (i = 0; i < n; i++) {
			printf("%*s", 2 * (depth + 1), "");
			print_pretty(rs_json_arr_at(j, i), depth + 1);
			fputs(i + 1 < n ? ",\n" : "\n", stdout);
		}
		printf("%*s]", 2 * depth, "");
		break;
	case RS_JSON_OBJECT:
		if ((n = rs_json_obj_len(j)) == 0) {
			fputs("{}", stdout);
			break;
		}
		fputs("{\n", stdout);
		for (i = 0; rs_json_obj_next(j, &it, &key, &klen, &v) == 0;
		    i++) {
			struct rs_json *k = rs_json_str(key);

			if (k == NULL || (s = rs_json_dumps(k)) == NULL)
				rs_cli_fatal("out of memory");
			printf("%*s%s: ", 2 * (depth + 1), "", s);
			free(s);
			rs_json_free(k);
			print_pretty(v, depth + 1);
			fputs(i + 1 < n ? ",\n" : "\n", stdout);
		}
		printf("%*s}", 2 * depth, "");
		break;
	default:
		if ((s = rs_json_dumps(j)) == NULL)
			rs_cli_fatal("out of memory");
		fputs(s, stdout);
		free(s);
		break;
	}
}

/*
 * The Copilot entry's URL (http[s]://HOST[:PORT]/...) names a Host this
 * server, started with these options, answers 421 (DNS rebinding), or
 * another port: say so, since VS Code only shows the request failing.
 */
static void
warn_copilot_host(const char *url)
{
	const char	*a = strstr(url, "://"), *e, *c;
	char		 hp[512], port[16];
	const int	 tls = strncasecmp(url, "https:", 6) == 0;

	if (a == NULL)
		return;
	a += 3;
	e = a + strcspn(a, "/?#");
	if ((size_t)(e - a) >= sizeof(hp) || e == a)
		return;
	memcpy(hp, a, (size_t)(e - a));
	hp[e - a] = '\0';
	/* the port: after the host (an IPv6 one in brackets) */
	c = hp[0] == '[' ? strchr(hp, ']') : hp;
	c = c != NULL ? strchr(c, ':') : NULL;
	if (!serve_host_ok(hp))
		rs_cli_warn("--copilot-config: a server started with these "
		    "options answers Host '%.*s' with 421: start it with "
		    "--public-host and that name", c != NULL ? (int)(c - hp) :
		    (int)strlen(hp), hp);
	(void)snprintf(port, sizeof(port), "%s", c != NULL ? c + 1 : tls ?
	    "443" : "80");
	if (strcmp(port, serve_cfg.port) != 0)
		rs_cli_warn("--copilot-config: the URL's port %s is not --port "
		    "%s (right only behind a proxy, such as a TLS front)", port,
		    serve_cfg.port);
}

static void
print_copilot(void)
{
	struct rs_json		*j;
	char			 name[128];
	enum rs_chat_variant	 v;
	struct rs_err		 err = { 0 };

	/* an entry for a model whose chat requests all fail (its template
	   is not one rs-serve renders) would put it in Copilot's menu,
	   agent mode included, to fail there */
	if (rs_chat_identify_gguf(serve_model.model->gguf, &v, &err) != RS_OK)
		rs_cli_fatal("--copilot-config: chat requests are not available "
		    "with this model (%s)", err.msg);
	if (serve_cfg.no_chat)
		rs_cli_fatal("--copilot-config: chat requests are off "
		    "(--no-chat)");
	warn_copilot_host(serve_cfg.copilot_url);

	(void)snprintf(name, sizeof(name), "%s (Redshift)", serve_cfg.alias);
	if ((j = rs_oai_copilot(&serve_model.info, name,
	    serve_cfg.copilot_url)) == NULL)
		rs_cli_fatal("out of memory");
	print_pretty(j, 0);
	putchar('\n');
	rs_json_free(j);
	exit(rs_cli_finish(RS_EXIT_OK));
}

/* ---- listening ---- */

/* Resolve HOST:PORT as Kore will, so that a typo is a clean exit 2. */
static void
check_address(const char *host, const char *port)
{
	struct addrinfo	 hints, *res;
	int		 rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0)
		rs_cli_fatal("--host %s: %s", host, gai_strerror(rc));
	freeaddrinfo(res);
}

static char *
absolute(const char *opt, const char *path)
{
	char	buf[PATH_MAX], *p;

	if (realpath(path, buf) == NULL)
		rs_cli_fatal("%s %s: %s", opt, path, strerror(errno));
	p = kore_strdup(buf);	/* Kore's allocator never returns NULL */
	return (p);
}

/*
 * Kore 4.1 compiles its OpenSSL TLS code whatever the flavor.  Its private
 * keys live in a separate key-manager process, and with OpenSSL 3 both
 * halves of that design fail, whatever the key type (RSA, EC P-256/P-384),
 * protocol (TLS 1.2 or 1.3) or cipher list:
 *
 *   - the worker decodes only the certificate, and OpenSSL 3 makes its
 *     public key a provider key; EVP_PKEY_get1_RSA/EC_KEY hand out a
 *     legacy copy, so the RSA_METHOD/EC_KEY_METHOD that forwards signing
 *     to the key manager lands on the copy, and the handshake signs with
 *     the provider key, which has no private half ("missing private key"
 *     from rsa_ossl_private_encrypt or ossl_ecdsa_simple_sign_sig): the
 *     client gets an internal_error alert;
 *   - the key manager reads the key with PEM_read_PrivateKey, also a
 *     provider key under OpenSSL 3, and takes it apart with EVP_PKEY_get0,
 *     which returns NULL for provider keys: RSA_size(NULL) crashes it (and
 *     stops the server), ECDSA_size(NULL) leaves EC requests unanswered.
 *
 * rs-serve runs no code in the key manager (Kore drops the application's
 * hooks there), so with OpenSSL 3 we refuse --tls-* up front, with the
 * reason, rather than accept connections that cannot complete; put a
 * TLS-terminating proxy in front, or reach the server through an SSH
 * tunnel.  With OpenSSL 1.1 Kore's TLS is used: it needs a Diffie-Hellman
 * group besides the certificate, and we take the RFC 7919 ffdhe2048 group
 * that OpenSSL carries, so no dhparam file is needed.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
int
serve_tls_available(void)
{
	return (OpenSSL_version_num() < 0x30000000L);
}

static void
check_tls(void)
{
	if (serve_cfg.tls_cert != NULL && !serve_tls_available())
		rs_cli_fatal("--tls-cert: TLS is not available: Kore %s cannot "
		    "sign handshakes with %s, for RSA and EC keys alike (its "
		    "key manager needs OpenSSL 1.1's legacy keys); terminate "
		    "TLS in a proxy in front of rs-serve or use an SSH tunnel",
		    kore_version, OpenSSL_version(OPENSSL_VERSION));
}

static void
setup_tls(struct kore_domain *dom)
{
	dom->certfile = absolute("--tls-cert", serve_cfg.tls_cert);
	dom->certkey = absolute("--tls-key", serve_cfg.tls_key);
	if ((tls_dhparam = DH_new_by_nid(NID_ffdhe2048)) == NULL)
		rs_cli_fatal("TLS: OpenSSL has no ffdhe2048 group");
}
#pragma GCC diagnostic pop

static void
setup_server(void)
{
	struct serve_cfg	*c = &serve_cfg;
	struct kore_server	*srv;
	struct kore_domain	*dom;
	int			 tls = c->tls_cert != NULL;

	check_address(c->host, c->port);
	srv = kore_server_create("rs-serve");
	srv->tls = tls;
	if (!kore_server_bind(srv, c->host, c->port, "serve_connect"))
		rs_cli_fatal("cannot listen on %s port %s: %s", c->host,
		    c->port, strerror(errno));
	dom = kore_domain_new("*");
	if (tls)
		setup_tls(dom);
	if (!kore_domain_attach(dom, srv))
		rs_cli_fatal("cannot attach the domain to the server");
	/* one catch-all route: serve_http.c routes, so 404 and 405 are JSON */
	if (!kore_module_handler_new(dom, "^/.*$", "serve_dispatch", NULL,
	    HANDLER_TYPE_DYNAMIC))
		rs_cli_fatal("cannot install the request handler");
}

/* Kore's knobs that rs-serve decides (Kore parses no flags here). */
static void
setup_kore(void)
{
	struct serve_cfg *c = &serve_cfg;

	kore_foreground = 1;
	kore_quiet = 1;
	worker_count = 1;
	worker_policy = KORE_WORKER_POLICY_TERMINATE;
	/* the engine's threads inherit the worker's CPU mask: keep it whole */
	worker_set_affinity = 0;
	skip_chroot = c->chroot == NULL;
	if (c->chroot != NULL)
		kore_root_path = absolute("--chroot", c->chroot);
	skip_runas = c->runas == NULL;
	if (c->runas != NULL)
		kore_runas_user = kore_strdup(c->runas);
	else if (geteuid() == 0)
		rs_cli_warn("running as root; consider --runas USER");
	kore_seccomp_tracing = c->seccomp_trace;
	/* Kore always writes a pid file: /dev/null unless asked for one */
	kore_pidfile = kore_strdup(c->pidfile != NULL ? c->pidfile :
	    "/dev/null");
	http_body_max = (size_t)c->body_max;
	http_header_max = 32768;	/* agent clients send long headers */
	/*
	 * Slow clients (serve_guard.c): the header and body timeouts are
	 * ours, with the envelope and shorter under pressure, so Kore's are
	 * set out of reach; room for 1024 connections (Kore's 512 all
	 * waiting stopped /health), of which serve_guard.c lets at most
	 * a few hundred wait for a request.
	 */
	http_header_timeout = UINT16_MAX;
	http_body_timeout = UINT16_MAX;
	/* (Kore announced 20 s while serve_guard.c closed at 10: undici
	   pools a connection as long as announced, and a POST sent as the
	   server closes it fails, not retried) */
	http_keepalive_time = SERVE_IDLE_S;
	worker_max_connections = 1024;
	worker_rlimit_nofiles = 1024 + 256;
	http_hsts_enable = 0;
	{
		char v[64];

		(void)snprintf(v, sizeof(v), "rs-serve/%s", rs_version());
		http_server_version(v);
	}
}

void
kore_parent_configure(int argc, char **argv)
{
	struct rs_err err;

	serve_opts_parse(argc, argv);
	check_tls();
	load_model();
	if (serve_cfg.copilot_url != NULL)
		print_copilot();
	if (rs_metrics_new(&serve_metrics, &err) != RS_OK)
		rs_cli_fatal("%s", err.msg);
	fate = mmap(NULL, sizeof(*fate), PROT_READ | PROT_WRITE, MAP_SHARED |
	    MAP_ANONYMOUS, -1, 0);
	if (fate == MAP_FAILED)
		rs_cli_fatal("mmap: %s", strerror(errno));
	fate->state = 0;
	fate->syscall = -1;
	setup_kore();
	setup_server();
	/*
	 * stdout is for data; Kore's own messages (printf) go to stderr, a
	 * line at a time, so that they come when they happen (a violation
	 * logged by --seccomp-trace) and in order with ours
	 */
	if (dup2(STDERR_FILENO, STDOUT_FILENO) == -1)
		rs_cli_fatal("dup2: %s", strerror(errno));
	(void)setvbuf(stdout, NULL, _IOLBF, 0);
}

void
kore_parent_teardown(void)
{
	long		 nr = fate->syscall;
	const char	*name;

	if (serve_cfg.pidfile == NULL)
		kore_pidfile = "";	/* Kore unlinks it next: ENOENT */
	if (fate->state == 0 && nr < 0)
		return;
	if (serve_cfg.pidfile != NULL)
		(void)unlink(serve_cfg.pidfile);
	if (nr >= 0) {
		/* Kore's table stops at the calls of its release */
		name = kore_seccomp_syscall_name(nr);
		rs_cli_warn("the worker was stopped by the sandbox: it made "
		    "system call %ld (%s), which the seccomp filter does not "
		    "allow; exiting (--seccomp-trace lists every such call; "
		    "please report it)", nr, strcmp(name, "unknown") != 0 ?
		    name : "newer than Kore's table: see <asm/unistd.h>");
	} else
		rs_cli_warn("the worker %s; exiting", fate->state == 2 ?
		    "could not start the engine" : "died");
	exit(RS_EXIT_ERROR);
}

/* ---- the worker ---- */

void
kore_worker_configure(void)
{
	fate->state = 1;
	serve_guard_start();
	serve_engine_start();
}

void
kore_worker_teardown(void)
{
	serve_streams_shutdown();
	serve_engine_stop();
	fate->state = 0;
}

void
serve_worker_fail(void)
{
	fate->state = 2;
	exit(RS_EXIT_ERROR);
}

/* ---- the sandbox ---- */

/*
 * The worker's system calls.  Kore's own filter (seccomp.c) ends in
 * SECCOMP_RET_KILL, which kills only the calling *thread*: an engine
 * thread stopped that way inside dlopen() (the CUDA runtime loading its
 * driver) keeps the loader's lock, and the worker then hangs forever in its
 * next dlsym(), answering "Loading model".  A violation must end the whole
 * worker, so that the parent sees it and rs-serve exits.  The hook thus
 * installs one complete list ahead of Kore's (which is never reached):
 * Kore's own list, kept here as it is in Kore 4.1, then what the engine,
 * the threads and glibc need besides, then SECCOMP_RET_TRAP
 * (SECCOMP_RET_TRACE with --seccomp-trace, so that the parent logs the
 * call and lets it through).  The trap raises SIGSYS in the calling thread
 * with the call's number; sandbox_violation() hands that number to the
 * parent and ends the worker with SIGSYS, so the parent's last line names
 * the call (a plain SECCOMP_RET_KILL_PROCESS would leave only Kore's
 * "died from sandbox violation").  The additions, found with
 * --seccomp-trace: threads for the engine, the prep thread and the CPU
 * pool (clone3, or clone on older kernels, and the set_robust_list and
 * rseq calls glibc makes in every new thread), the eventfd between the
 * threads and the loop, mremap (glibc's realloc of blocks of 128 KiB and
 * more), newfstatat (glibc's stat(), which dlopen() uses), and gettid and
 * sched_getaffinity (the sanitizers' runtime, in make asan).  The waits
 * group is what threads do while they wait for each other or for the GPU:
 * the CUDA runtime calls sched_yield() hundreds of times per request while
 * it waits for a token of a 27B model (~11 ms; the tiny fixture's kernels
 * never made it wait that long), and glibc's sleeps and condition
 * variables use nanosleep, clock_nanosleep and futex (Kore's list) or
 * futex_waitv (newer glibc, where the kernel has it).
 */
static struct sock_filter filter_worker[] = {
	/* Kore 4.1's filter_kore: refused with an errno */
	KORE_SYSCALL_DENY(ioctl, EACCES),
	/* files */
#if defined(SYS_open)
	KORE_SYSCALL_ALLOW(open),
#endif
	KORE_SYSCALL_ALLOW(read),
#if defined(SYS_stat)
	KORE_SYSCALL_ALLOW(stat),
#endif
#if defined(SYS_lstat)
	KORE_SYSCALL_ALLOW(lstat),
#endif
	KORE_SYSCALL_ALLOW(fstat),
	KORE_SYSCALL_ALLOW(write),
	KORE_SYSCALL_ALLOW(fcntl),
	KORE_SYSCALL_ALLOW(lseek),
	KORE_SYSCALL_ALLOW(close),
	KORE_SYSCALL_ALLOW(openat),
#if defined(SYS_access)
	KORE_SYSCALL_ALLOW(access),
#endif
	KORE_SYSCALL_ALLOW(writev),
	KORE_SYSCALL_ALLOW(getcwd),
#if defined(SYS_unlink)
	KORE_SYSCALL_ALLOW(unlink),
#endif
#if defined(SYS_readlink)
	KORE_SYSCALL_ALLOW(readlink),
#endif
	/* processes */
	KORE_SYSCALL_ALLOW(exit),
	KORE_SYSCALL_ALLOW(kill),
	KORE_SYSCALL_ALLOW(getpid),
	KORE_SYSCALL_ALLOW(getuid),
	KORE_SYSCALL_ALLOW(geteuid),
	KORE_SYSCALL_ALLOW(exit_group),
	KORE_SYSCALL_ALLOW(nanosleep),
	KORE_SYSCALL_ALLOW(clock_nanosleep),
	/* memory: no mapping both writable and executable */
	KORE_SYSCALL_ALLOW(brk),
	KORE_SYSCALL_ALLOW(munmap),
	KORE_SYSCALL_DENY_WITH_FLAG(mmap, 2, PROT_EXEC | PROT_WRITE, EINVAL),
	KORE_SYSCALL_DENY_WITH_FLAG(mprotect, 2, PROT_EXEC, EINVAL),
	KORE_SYSCALL_ALLOW(mmap),
	KORE_SYSCALL_ALLOW(madvise),
	KORE_SYSCALL_ALLOW(mprotect),
	/* network */
#if defined(SYS_poll)
	KORE_SYSCALL_ALLOW(poll),
#endif
	KORE_SYSCALL_ALLOW(ppoll),
	KORE_SYSCALL_ALLOW(sendto),
	KORE_SYSCALL_ALLOW(accept),
	KORE_SYSCALL_ALLOW(sendfile),
	KORE_SYSCALL_ALLOW(recvfrom),
	KORE_SYSCALL_ALLOW(epoll_ctl),
	KORE_SYSCALL_ALLOW(setsockopt),
#if defined(SYS_epoll_wait)
	KORE_SYSCALL_ALLOW(epoll_wait),
#endif
	KORE_SYSCALL_ALLOW(epoll_pwait),
	/* signals */
	KORE_SYSCALL_ALLOW(sigaltstack),
	KORE_SYSCALL_ALLOW(rt_sigreturn),
	KORE_SYSCALL_ALLOW(rt_sigaction),
	KORE_SYSCALL_ALLOW(rt_sigprocmask),
	/* the rest */
	KORE_SYSCALL_ALLOW(futex),
	KORE_SYSCALL_ALLOW(clock_gettime),
	KORE_SYSCALL_ALLOW(getrandom),

	/* rs-serve's additions */
	KORE_SYSCALL_ALLOW(clone),
#if defined(SYS_clone3)
	KORE_SYSCALL_ALLOW(clone3),
#endif
	KORE_SYSCALL_ALLOW(set_robust_list),
#if defined(SYS_rseq)
	KORE_SYSCALL_ALLOW(rseq),
#endif
	KORE_SYSCALL_ALLOW(eventfd2),
	KORE_SYSCALL_ALLOW(mremap),
	KORE_SYSCALL_ALLOW(newfstatat),
	KORE_SYSCALL_ALLOW(gettid),
	KORE_SYSCALL_ALLOW(sched_getaffinity),
	/* waits (nanosleep, clock_nanosleep and futex are in Kore's list) */
	KORE_SYSCALL_ALLOW(sched_yield),
#if defined(SYS_futex_waitv)
	KORE_SYSCALL_ALLOW(futex_waitv),
#endif

	/* anything else: SIGSYS (patched for --seccomp-trace) */
	KORE_BPF_RET(SECCOMP_RET_TRAP)
};

#if defined(RS_CUDA)
/*
 * The CUDA driver, ahead of the list above when the backend may be CUDA:
 * it talks to the kernel module through ioctl() on /dev/nvidia* (refused
 * above), maps device memory and its own code (writable-and-executable
 * mappings, refused above), pins host memory, reads /proc and /sys, sets
 * thread affinity and priorities, makes pipes and dup()s descriptors, and
 * sets up a listening UNIX socket with its directory and links.  Found with
 * `rs-serve --backend cuda --seccomp-trace` on an H200 (driver 580.159,
 * tests/serve can not run it: CI has no GPU); without the last group the
 * worker died of a sandbox violation at its first request.
 */
static struct sock_filter filter_cuda[] = {
	KORE_SYSCALL_ALLOW(ioctl),
	KORE_SYSCALL_ALLOW(mmap),
	KORE_SYSCALL_ALLOW(mprotect),
	KORE_SYSCALL_ALLOW(mlock),
	KORE_SYSCALL_ALLOW(munlock),
	KORE_SYSCALL_ALLOW(readlink),
	KORE_SYSCALL_ALLOW(readlinkat),
	KORE_SYSCALL_ALLOW(sched_setaffinity),
	KORE_SYSCALL_ALLOW(getppid),
	KORE_SYSCALL_ALLOW(getdents64),
	KORE_SYSCALL_ALLOW(memfd_create),
	KORE_SYSCALL_ALLOW(ftruncate),
	KORE_SYSCALL_ALLOW(uname),
	KORE_SYSCALL_ALLOW(sysinfo),
	KORE_SYSCALL_ALLOW(prlimit64),
	KORE_SYSCALL_ALLOW(pread64),
	KORE_SYSCALL_ALLOW(get_mempolicy),
	KORE_SYSCALL_ALLOW(mbind),
	KORE_SYSCALL_ALLOW(socket),
	KORE_SYSCALL_ALLOW(connect),
#if defined(SYS_poll)
	KORE_SYSCALL_ALLOW(poll),
#endif
	KORE_SYSCALL_ALLOW(sched_get_priority_max),
	KORE_SYSCALL_ALLOW(sched_get_priority_min),
	KORE_SYSCALL_ALLOW(pipe2),
	KORE_SYSCALL_ALLOW(dup),
	KORE_SYSCALL_ALLOW(bind),
	KORE_SYSCALL_ALLOW(listen),
#if defined(SYS_mkdir)
	KORE_SYSCALL_ALLOW(mkdir),
#endif
	KORE_SYSCALL_ALLOW(mkdirat),
#if defined(SYS_symlink)
	KORE_SYSCALL_ALLOW(symlink),
#endif
	KORE_SYSCALL_ALLOW(symlinkat),
};
#endif

/*
 * SIGSYS from SECCOMP_RET_TRAP, in the thread that made the refused call:
 * record its number for the parent, then die of SIGSYS as if the filter
 * had killed the process (SA_RESETHAND made the action the default one,
 * SA_NODEFER left the signal unblocked here, so the kill is taken on the
 * way back from it).  Only calls the filter allows, all async-signal-safe.
 * A thread that blocks SIGSYS cannot run this handler: the kernel then
 * kills the process with SIGSYS itself, and the parent can only say that
 * the worker died.  The engine threads block every signal but SIGSYS
 * (serve_job.c) for that reason.
 */
static void
sandbox_violation(int sig, siginfo_t *si, void *uc)
{
	struct timespec ts = { 1, 0 };

	(void)uc;
	fate->syscall = si->si_syscall;
	(void)kill(getpid(), sig);
	for (;;)
		(void)nanosleep(&ts, NULL);
}

void
serve_test_violation(void)
{
	/* harmless if let through (--seccomp-trace), never in the filter */
	if (serve_cfg.test_violation)
		(void)syscall(SYS_getsid, 0);
}

void
kore_seccomp_hook(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sandbox_violation;
	sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER;
	(void)sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) == -1)
		fatalx("sigaction(SIGSYS): %s", errno_s);
#if defined(RS_CUDA)
	if (serve_cfg.backend != RS_BACKEND_CPU)
		kore_seccomp_filter("rs-serve-cuda", filter_cuda,
		    KORE_FILTER_LEN(filter_cuda));
#endif
	if (kore_seccomp_tracing)
		filter_worker[KORE_FILTER_LEN(filter_worker) - 1].k =
		    SECCOMP_RET_TRACE;
	kore_seccomp_filter("rs-serve", filter_worker,
	    KORE_FILTER_LEN(filter_worker));
}

/* ---- 413 before the body ---- */

/*
 * Kore answers a Content-Length beyond http_body_max with a bare 413.  To
 * send the JSON envelope instead, every connection starts with our own
 * header callback, which looks at Content-Length once the headers are in
 * and hands everything else to Kore's http_header_recv().  After each
 * response Kore re-arms its own callback; serve_conn_rearm() puts ours
 * back.  (http_body_max stays set as the backstop.)
 */
void
serve_connect(struct connection *c)
{
	c->proto = CONN_PROTO_HTTP;
	if (http_keepalive_time != 0)
		c->idle_timer.length = http_keepalive_time * 1000;
	net_recv_queue(c, http_header_max, NETBUF_CALL_CB_ALWAYS,
	    serve_header_recv);
	serve_guard_accept(c);
}

void
serve_conn_rearm(struct connection *c)
{
	if (c != NULL && c->rnb != NULL && c->rnb->cb == http_header_recv)
		c->rnb->cb = serve_header_recv;
}

/*
 * Where the value of the header KEY ("\nname:", lower case) starts in the
 * header block H (N bytes), past its blanks, or NULL when it is absent.
 */
static const char *
header_find(const char *h, size_t n, const char *key)
{
	const char	*p, *end = h + n;
	size_t		 k = strlen(key), i;

	for (p = h; p + k < end; p++) {
		for (i = 0; i < k && tolower((unsigned char)p[i]) == key[i];
		    i++)
			;
		if (i < k)
			continue;
		for (p += k; p < end && (*p == ' ' || *p == '\t'); p++)
			;
		return (p);
	}
	return (NULL);
}

/* content_length(): a Content-Length that frames nothing safely */
#define CL_BAD	(-2)

/*
 * The Content-Length value in the header block H (N bytes): -1 when there
 * is none, CL_BAD when the field is not one run of digits (blanks around
 * it allowed) or appears twice.  RFC 9112 §6.3 makes either a 400: a
 * proxy in front that frames the body by another field, or by a list
 * "5, 50", would see other request boundaries than we do (request
 * smuggling), so none of them is read at all.
 */
static int64_t
content_length(const char *h, size_t n)
{
	const char	*p, *end = h + n;
	int64_t		 v;

	if ((p = header_find(h, n, "\ncontent-length:")) == NULL)
		return (-1);
	if (p == end || !isdigit((unsigned char)*p))
		return (CL_BAD);
	for (v = 0; p < end && isdigit((unsigned char)*p); p++) {
		if (v > (INT64_MAX - 9) / 10)
			v = INT64_MAX;
		else
			v = v * 10 + (*p - '0');
	}
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
		p++;
	if (p < end && *p != '\n')
		return (CL_BAD);
	if (header_find(p, (size_t)(end - p), "\ncontent-length:") != NULL)
		return (CL_BAD);
	return (v);
}

/* Does the request line at H name a method that Kore expects a body for? */
static int
expects_body(const char *h, size_t n)
{
	return ((n > 5 && strncmp(h, "POST ", 5) == 0) ||
	    (n > 4 && strncmp(h, "PUT ", 4) == 0) ||
	    (n > 6 && strncmp(h, "PATCH ", 6) == 0));
}

/* The reason phrase of CODE (Kore's table lacks 431). */
static const char *
reason(int code)
{
	const char *t;

	if (code == 431)
		return ("Request Header Fields Too Large");
	t = http_status_text(code);
	return (t != NULL && *t != '\0' ? t : "Error");
}

void
serve_refuse(struct connection *c, struct netbuf *nb, int code,
    const char *msg)
{
	struct rs_json	*j;
	struct rs_buf	 b;
	char		*body;

	/* the client's doing (411, 408, 505 included), but for 500 and 503 */
	j = rs_oai_error(code, code == 503 ? "unavailable_error" :
	    code == 500 ? "server_error" : "invalid_request_error", msg,
	    NULL);
	body = j != NULL ? rs_json_dumps(j) : NULL;
	rs_json_free(j);
	rs_buf_init(&b);
	rs_buf_addf(&b, "HTTP/1.1 %d %s\r\n"
	    "server: rs-serve/%s\r\n"
	    "content-type: application/json; charset=utf-8\r\n"
	    "content-length: %zu\r\nconnection: close\r\n\r\n%s", code,
	    reason(code), rs_version(), body != NULL ? strlen(body) : 0,
	    body != NULL ? body : "");
	free(body);
	if (!serve_cfg.quiet)
		rs_cli_warn("%d %s", code, msg);
	rs_metrics_request(serve_metrics, "other", code);
	if (nb != NULL && nb->buf != NULL) {
		nb->s_off = 0;
		nb->cb = serve_discard;
	}
	c->flags |= CONN_CLOSE_EMPTY;
	if (!b.oom)
		net_send_queue(c, b.data, b.len);
	rs_buf_cleanup(&b);
	if (!net_send_flush(c))
		kore_connection_disconnect(c);
}

static void
refuse(struct connection *c, struct netbuf *nb, int code, const char *status,
    const char *msg)
{
	(void)status;
	serve_refuse(c, nb, code, msg);
}

/* What Kore's own refusals (http_error_response()) mean, for the client. */
static const char *
kore_error_msg(int code)
{
	switch (code) {
	case 400:
		return ("malformed request: the request line, the Host header "
		    "or a header field is not valid HTTP/1.1");
	case 405:
		return ("HTTP/1.0 allows only GET, POST and HEAD");
	case 411:
		return ("a request body needs a valid Content-Length header");
	case 413:
		return ("request body too large (--max-body)");
	case 414:
		return ("request target too long: at most 1998 bytes");
	case 503:
		return ("too many requests in progress; retry later");
	case 505:
		return ("HTTP version not supported: use HTTP/1.1 or "
		    "HTTP/1.0");
	default:
		return ("the request could not be handled");
	}
}

/* The status of the response at the head of C's send queue, or 0. */
static int
queued_status(struct connection *c)
{
	struct netbuf	*nb = TAILQ_FIRST(&c->send_queue);
	const char	*p;

	if (nb == NULL || nb->buf == NULL || nb->b_len < 12)
		return (0);
	p = (const char *)nb->buf;
	if (strncmp(p, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)p[9]) ||
	    !isdigit((unsigned char)p[10]) || !isdigit((unsigned char)p[11]))
		return (0);
	return ((p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0'));
}

/*
 * Does the header block H (N bytes) ask "Expect: 100-continue" of HTTP/1.1?
 * (A 1.0 client is never sent an interim response, RFC 9110 §15.2.)
 */
static int
asks_continue(const char *h, size_t n)
{
	const char	*eol = memchr(h, '\n', n), *p;

	if (eol == NULL || eol - h < 9 || (strncmp(eol - 8, "HTTP/1.1", 8) !=
	    0 && strncmp(eol - 9, "HTTP/1.1\r", 9) != 0))
		return (0);
	if ((p = header_find(h, n, "\nexpect:")) == NULL ||
	    (size_t)(h + n - p) < 12)
		return (0);
	return (strncasecmp(p, "100-continue", 12) == 0);
}

/*
 * Hand the header block (HLEN bytes, a body of CLEN behind it) to Kore's
 * http_header_recv(), with three amendments:
 *
 *   - pipelining: Kore takes the receive buffer with the request and
 *     would lose a second request read with the first (or, behind a body,
 *     count it as body).  Bytes past this request are dropped, and the
 *     request is given "Connection: close", so its response says so and
 *     the connection closes after it: the client retries the rest on a
 *     new connection (RFC 9112 §9.3.2), nothing is silently lost;
 *   - Kore refuses a malformed request (400, 414, 505, 503 at its request
 *     limit...) with an empty body.  Its writes are held while it parses
 *     (the write flag is off), and a refusal it queued is replaced by the
 *     same status with the OpenAI error envelope;
 *   - Kore does not answer "Expect: 100-continue", so a client that asks
 *     it (curl, for bodies over 1 MiB) waits a second before it sends the
 *     body anyway: once Kore has taken the request and waits for the
 *     body, "100 Continue" goes out (RFC 9110 §10.1.1).
 */
static int
kore_header(struct connection *c, struct netbuf *nb, size_t hlen,
    int64_t clen)
{
	struct http_request	*req, *last = NULL;
	struct http_header	*hdr;
	struct netbuf		*q;
	size_t			 want = hlen + (size_t)(clen > 0 ? clen : 0);
	int			 pipelined = 0, hold, w, rc, code, cont;

	TAILQ_FOREACH(req, &c->http_requests, olist)
		last = req;
	/* (before Kore takes the buffer: the body still to come, asked) */
	cont = clen > 0 && nb->s_off < want && asks_continue((const char *)
	    nb->buf, hlen);
	if (nb->s_off > want) {
		pipelined = 1;
		nb->s_off = want;
	}
	hold = TAILQ_EMPTY(&c->send_queue) && !(c->flags & CONN_CLOSE_EMPTY);
	w = c->evt.flags & KORE_EVENT_WRITE;
	if (hold)
		c->evt.flags &= ~KORE_EVENT_WRITE;
	rc = http_header_recv(nb);
	if (hold) {
		c->evt.flags |= w;
		if ((code = queued_status(c)) >= 400) {
			while ((q = TAILQ_FIRST(&c->send_queue)) != NULL)
				net_remove_netbuf(c, q);
			c->flags &= ~CONN_CLOSE_EMPTY;
			serve_refuse(c, c->rnb, code, kore_error_msg(code));
			return (KORE_RESULT_OK);
		}
		if (!TAILQ_EMPTY(&c->send_queue) && !net_send_flush(c))
			kore_connection_disconnect(c);
	}
	TAILQ_FOREACH(req, &c->http_requests, olist)
		if (TAILQ_NEXT(req, olist) == NULL)
			break;
	if (cont && rc == KORE_RESULT_OK && req != NULL && req != last &&
	    (req->flags & HTTP_REQUEST_EXPECT_BODY) &&
	    !(req->flags & HTTP_REQUEST_COMPLETE)) {
		static const char go_on[] = "HTTP/1.1 100 Continue\r\n\r\n";

		net_send_queue(c, go_on, sizeof(go_on) - 1);
		if (!net_send_flush(c))
			kore_connection_disconnect(c);
	}
	if (pipelined && req != NULL && req != last) {
		static char conn[] = "connection", close[] = "close";

		hdr = kore_pool_get(&http_header_pool);
		hdr->header = conn;
		hdr->value = close;
		TAILQ_INSERT_HEAD(&req->req_headers, hdr, list);
	}
	return (rc);
}

/*
 * Kore knows no Transfer-Encoding: with one it would read a chunked body
 * as Content-Length bytes (or wait for them), and a front proxy that
 * honours the chunks would see other request boundaries than we do
 * (request smuggling).  So any Transfer-Encoding is refused with 400 and
 * the connection closed.  A body method without a usable Content-Length
 * gets 411, and a body beyond --max-body 413, with the envelope rather
 * than Kore's bare answers.
 */
static int
serve_header_recv(struct netbuf *nb)
{
	struct connection	*c = nb->owner;
	const char		*h = (const char *)nb->buf, *eoh;
	char			 msg[128];
	size_t			 n, skip;
	int64_t			 len;

	if (nb->s_off < 4)
		return (KORE_RESULT_OK);
	skip = 4;
	eoh = memmem(h, nb->s_off, "\r\n\r\n", 4);
	if (eoh == NULL && (skip = 2,
	    eoh = memmem(h, nb->s_off, "\n\n", 2)) == NULL) {
		/* a full buffer without the end: Kore would read 0 bytes into
		   it, take that for the end of the connection and reset it */
		if (nb->s_off >= nb->b_len &&
		    memchr(h, '\n', nb->s_off) == NULL)
			/* not even the request line: its target is too
			   long (414, as the man page says) */
			refuse(c, nb, 414, NULL, kore_error_msg(414));
		else if (nb->s_off >= nb->b_len) {
			(void)snprintf(msg, sizeof(msg), "request header "
			    "fields too large: at most %u bytes",
			    (unsigned)http_header_max);
			refuse(c, nb, 431, NULL, msg);
		}
		return (KORE_RESULT_OK);
	}
	n = (size_t)(eoh - h);
	len = content_length(h, n);
	if (header_find(h, n, "\ntransfer-encoding:") != NULL)
		refuse(c, nb, 400, "Bad Request", "Transfer-Encoding is not "
		    "supported: send the body with Content-Length alone");
	else if (len == CL_BAD)
		refuse(c, nb, 400, "Bad Request", "Content-Length must be one "
		    "field of decimal digits");
	else if (len < 0 && expects_body(h, n))
		refuse(c, nb, 411, "Length Required", "a request body needs a "
		    "valid Content-Length header");
	else if (len > serve_cfg.body_max) {
		(void)snprintf(msg, sizeof(msg), "request body too large: "
		    "%lld bytes, the limit is %lld (--max-body)",
		    (long long)len, (long long)serve_cfg.body_max);
		refuse(c, nb, 413, "Payload Too Large", msg);
	} else
		return (kore_header(c, nb, n + skip, len));
	return (KORE_RESULT_OK);
}

/* Drop what a refused client still sends until the connection closes. */
static int
serve_discard(struct netbuf *nb)
{
	nb->s_off = 0;
	return (KORE_RESULT_OK);
}
