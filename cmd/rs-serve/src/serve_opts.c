/*
 * serve_opts.c - rs-serve's command line.  Kore's single-binary mode parses
 * no flags, so this is the whole interface; kore_parent_configure() calls
 * serve_opts_parse() first.  Kore rewrites argv for the process title once
 * configuration is done, so every string kept here is a copy.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kore/kore.h>

#include "cli.h"
#include "serve.h"

#define USAGE	"rs-serve -m MODEL [--host ADDR] [--port N] [-c N] " \
		"[--api-key KEY] [options]"

struct serve_cfg serve_cfg;

static void
usage_full(void)
{
	printf("usage: %s\n\n"
	    "Serve MODEL over an OpenAI-compatible HTTP API (chat and text "
	    "completions,\nstreaming, tool calls, reasoning) for VS Code "
	    "Copilot and other clients.\n\n"
	    "  -m, --model FILE          GGUF model to serve (required)\n"
	    "      --host ADDR           address to listen on (default "
	    "127.0.0.1)\n"
	    "      --port N              TCP port (default 8081)\n"
	    "  -c, --ctx N               context size in tokens (default: "
	    "the model's);\n"
	    "                            --ctx-size N as in rs-generate\n"
	    "      --api-key KEY         require 'Authorization: Bearer KEY' "
	    "or 'X-Api-Key: KEY'\n"
	    "                            (except /health and /v1/models); "
	    "default $RS_API_KEY\n"
	    "      --alias NAME          model id in answers and /v1/models "
	    "(default: the\n"
	    "                            GGUF's general.name in lower case)\n"
	    "      --backend NAME        cpu, cuda or auto (default auto)\n"
	    "      --devices LIST        GPUs to split the blocks over, e.g. "
	    "0,1 (0,0: the\n"
	    "                            split path on one GPU; cuda only)\n"
	    "      --split LIST          blocks per device, e.g. 30,34 "
	    "(default: the split\n"
	    "                            that balances memory)\n"
	    "  -t, --threads N           CPU threads (default: online CPUs)\n",
	    USAGE);
	rs_cli_draft_help(28);
	fputs("      --slots N             keep N conversations' caches "
	    "(1..16, default 1; each\n"
	    "                            takes a sequence state's memory)\n"
	    "      --cache-mem MIB       state checkpoints kept in the "
	    "backend's memory (GPU\n"
	    "                            for cuda), shared by the slots "
	    "(default 4096)\n"
	    "      --cache-host-mem MIB  checkpoints spilled to host RAM "
	    "beyond that (default\n"
	    "                            8192); both 0: no checkpoint "
	    "cache\n"
	    "      --checkpoint-every N  also checkpoint every N prompt "
	    "tokens (default 2048;\n"
	    "                            0: only at assistant turns and "
	    "prompt ends)\n"
	    "      --checkpoint-min-call N  no checkpoint that leaves an "
	    "engine call under N\n"
	    "                            tokens (default 0: 256 with "
	    "cuda, 1 with cpu)\n"
	    "      --queue N             requests that may wait for the "
	    "engine (default 16);\n"
	    "                            more are refused with 503 and "
	    "Retry-After\n"
	    "      --max-body BYTES      largest request body; larger: 413 "
	    "(default: 32 bytes\n"
	    "                            a token of the context plus 4 MiB, "
	    "at least 8 MiB)\n"
	    "      --nfc                 normalize prompt text to NFC "
	    "(the default)\n"
	    "      --no-nfc              do not normalize: raw text, as "
	    "llama.cpp\n"
	    "      --client-specials     control-token texts in client text "
	    "become control tokens\n"
	    "                            (as the reference does; default: "
	    "they stay text)\n"
	    "      --default-enable-thinking true|false\n"
	    "                            think when a request neither sets "
	    "enable_thinking\n"
	    "                            nor gives an effort (default false: "
	    "Copilot's side\n"
	    "                            requests, which send no effort, do "
	    "not think)\n"
	    "      --default-reasoning-effort E\n"
	    "                            effort when thinking without a "
	    "level: xhigh, medium\n"
	    "                            or low (default xhigh)\n"
	    "      --no-thinking         the same as --default-enable-thinking "
	    "false\n"
	    "      --no-chat             serve /v1/completions alone: chat "
	    "requests are refused\n"
	    "                            (400); needed to serve a model "
	    "whose chat template\n"
	    "                            is not one rs-serve renders "
	    "(Qwen3.5, 3.6, 3.8)\n"
	    "      --reasoning-effort E  the same as --default-reasoning-effort "
	    "E\n"
	    "      --public-host NAME    also answer requests whose Host is "
	    "NAME (repeatable\n"
	    "                            or a comma list; default: loopback "
	    "names and --host)\n"
	    "      --cors-origin ORIGIN  browser origin allowed by CORS, or "
	    "'*' (repeatable or a\n"
	    "                            comma list; default: origins on "
	    "allowed hosts only)\n"
	    "      --copilot-config URL  print the VS Code "
	    "chatLanguageModels.json for this\n"
	    "                            model served at URL, and exit (Copilot "
	    "sends the\n"
	    "                            effort picked in its menu, so its "
	    "chat and agent\n"
	    "                            turns think and its side requests do "
	    "not)\n"
	    "      --pidfile FILE        write the server's process id to "
	    "FILE\n"
	    "      --runas USER          run the worker as USER (when started "
	    "as root)\n"
	    "      --chroot DIR          chroot the worker into DIR (when "
	    "started as root)\n"
	    "      --seccomp-trace       log system calls the sandbox would "
	    "refuse, instead of\n"
	    "                            killing the worker (to debug the "
	    "filter)\n"
	    "  -q, --quiet               no access log on stderr\n"
	    "  -h, --help                show this help and exit\n"
	    "      --version             show version and build "
	    "configuration\n\n"
	    "Endpoints: POST /v1/chat/completions, POST /v1/completions, "
	    "GET /v1/models,\nGET /v1/models/ID, GET /health, GET /metrics "
	    "(and the aliases without /v1).\n"
	    "Exit status: 0 after a clean shutdown (SIGINT, SIGTERM), 2 "
	    "error.\n", stdout);
	/* offered only where they can work (serve_main.c, check_tls) */
	if (serve_tls_available())
		printf("\nHTTPS (Kore's TLS with OpenSSL 1.1):\n"
		    "      --tls-cert FILE       serve HTTPS with this PEM "
		    "certificate (chain)\n"
		    "      --tls-key FILE        and this PEM private key\n");
}

static char *
dup_or_die(const char *s)
{
	char *d;

	if ((d = strdup(s)) == NULL)
		rs_cli_fatal("out of memory");
	return (d);
}

/*
 * Append ARG to the comma list *LIST: --public-host and --cors-origin may
 * be given more than once, each with one value or a comma list.
 */
static void
list_add(char **list, const char *arg)
{
	char	*n;
	size_t	 a = *list != NULL ? strlen(*list) : 0, b = strlen(arg);

	if (b == 0)
		rs_cli_usage_error(USAGE, "an empty value is not a host or an "
		    "origin");
	if ((n = realloc(*list, a + b + 2)) == NULL)
		rs_cli_fatal("out of memory");
	if (a > 0)
		n[a++] = ',';
	memcpy(n + a, arg, b + 1);
	*list = n;
}

enum {
	OPT_HOST = 256, OPT_PORT, OPT_API_KEY, OPT_ALIAS, OPT_BACKEND,
	OPT_QUEUE, OPT_MAX_BODY, OPT_NFC, OPT_NO_NFC, OPT_CLIENT_SPECIALS,
	OPT_NO_THINKING, OPT_NO_CHAT, OPT_EFFORT, OPT_TLS_CERT, OPT_TLS_KEY,
	OPT_CORS,
	OPT_COPILOT, OPT_PIDFILE, OPT_RUNAS, OPT_CHROOT, OPT_SECCOMP_TRACE,
	OPT_DRAFT, OPT_SLOTS, OPT_DEF_THINKING, OPT_CACHE_MEM,
	OPT_CACHE_HOST_MEM, OPT_CK_EVERY, OPT_CK_MIN_CALL, OPT_PUBLIC_HOST,
	OPT_DRAFT_MAX, OPT_DEVICES, OPT_SPLIT
};

static const struct option longopts[] = {
	{ "alias", required_argument, NULL, OPT_ALIAS },
	{ "api-key", required_argument, NULL, OPT_API_KEY },
	{ "backend", required_argument, NULL, OPT_BACKEND },
	{ "cache-host-mem", required_argument, NULL, OPT_CACHE_HOST_MEM },
	{ "cache-mem", required_argument, NULL, OPT_CACHE_MEM },
	{ "checkpoint-every", required_argument, NULL, OPT_CK_EVERY },
	{ "checkpoint-min-call", required_argument, NULL, OPT_CK_MIN_CALL },
	{ "chroot", required_argument, NULL, OPT_CHROOT },
	{ "client-specials", no_argument, NULL, OPT_CLIENT_SPECIALS },
	{ "copilot-config", required_argument, NULL, OPT_COPILOT },
	{ "cors-origin", required_argument, NULL, OPT_CORS },
	{ "public-host", required_argument, NULL, OPT_PUBLIC_HOST },
	{ "default-enable-thinking", required_argument, NULL,
	    OPT_DEF_THINKING },
	{ "default-reasoning-effort", required_argument, NULL, OPT_EFFORT },
	{ "devices", required_argument, NULL, OPT_DEVICES },
	{ "draft", required_argument, NULL, OPT_DRAFT },
	{ "draft-max", required_argument, NULL, OPT_DRAFT_MAX },
	{ "ctx", required_argument, NULL, 'c' },
	{ "ctx-size", required_argument, NULL, 'c' },
	{ "host", required_argument, NULL, OPT_HOST },
	{ "max-body", required_argument, NULL, OPT_MAX_BODY },
	{ "model", required_argument, NULL, 'm' },
	{ "nfc", no_argument, NULL, OPT_NFC },
	{ "no-nfc", no_argument, NULL, OPT_NO_NFC },
	{ "no-chat", no_argument, NULL, OPT_NO_CHAT },
	{ "no-thinking", no_argument, NULL, OPT_NO_THINKING },
	{ "pidfile", required_argument, NULL, OPT_PIDFILE },
	{ "port", required_argument, NULL, OPT_PORT },
	{ "queue", required_argument, NULL, OPT_QUEUE },
	{ "quiet", no_argument, NULL, 'q' },
	{ "reasoning-effort", required_argument, NULL, OPT_EFFORT },
	{ "runas", required_argument, NULL, OPT_RUNAS },
	{ "seccomp-trace", no_argument, NULL, OPT_SECCOMP_TRACE },
	{ "slots", required_argument, NULL, OPT_SLOTS },
	{ "split", required_argument, NULL, OPT_SPLIT },
	{ "threads", required_argument, NULL, 't' },
	{ "tls-cert", required_argument, NULL, OPT_TLS_CERT },
	{ "tls-key", required_argument, NULL, OPT_TLS_KEY },
	RS_CLI_LONGOPTS_TAIL
};

static void
defaults(struct serve_cfg *c)
{
	const char *key;

	memset(c, 0, sizeof(*c));
	c->host = dup_or_die("127.0.0.1");
	c->port = dup_or_die("8081");
	c->backend = RS_BACKEND_AUTO;
	c->queue_max = 16;
	c->slots = 1;
	c->cache_mem = 4096;
	c->cache_host_mem = 8192;
	c->body_max = 0;	/* from the context (serve_main.c) */
	c->tok_norm = RS_TOK_NORM_DEFAULT;
	rs_gen_opts_init(&c->gen);
	c->gen.checkpoint_every = 2048;
	if ((key = getenv("RS_API_KEY")) != NULL && *key != '\0')
		c->api_key = dup_or_die(key);
	/* tests/serve only: see serve_test_violation() */
	key = getenv("RS_SERVE_TEST_VIOLATION");
	c->test_violation = key != NULL && strcmp(key, "1") == 0;
	/* tests/serve only: keep-alive comments without waiting 10 s */
	key = getenv("RS_SERVE_TEST_KEEPALIVE_MS");
	c->keepalive_ms = key != NULL && atoi(key) > 0 && atoi(key) < 10000 ?
	    atoi(key) : 10000;
}

/* The per-option part of serve_opts_parse(). */
static void
option(struct serve_cfg *c, int ch, const char *arg)
{
	switch (ch) {
	case 'm': c->model_path = dup_or_die(arg); break;
	case 'c':
		c->n_ctx = rs_cli_num_opt("--ctx", arg, 2, 1 << 24, USAGE);
		break;
	case 't':
		c->threads = (int)rs_cli_num_opt("--threads", arg, 1, 256,
		    USAGE);
		break;
	case 'q': c->quiet = 1; break;
	case OPT_HOST: free(c->host); c->host = dup_or_die(arg); break;
	case OPT_PORT:
		(void)rs_cli_num_opt("--port", arg, 1, 65535, USAGE);
		free(c->port);
		c->port = dup_or_die(arg);
		break;
	case OPT_API_KEY:
		if (*arg == '\0')
			rs_cli_usage_error(USAGE, "--api-key: empty key");
		free(c->api_key);
		c->api_key = dup_or_die(arg);
		break;
	case OPT_ALIAS:
		if (*arg == '\0')
			rs_cli_usage_error(USAGE, "--alias: empty name");
		c->alias = dup_or_die(arg);
		break;
	case OPT_BACKEND: c->backend = rs_cli_backend_opt(arg, USAGE); break;
	case OPT_QUEUE:
		c->queue_max = rs_cli_num_opt("--queue", arg, 0, 4096, USAGE);
		break;
	case OPT_DEVICES:
		free(c->devices);
		c->devices = dup_or_die(arg);
		break;
	case OPT_SPLIT:
		free(c->split);
		c->split = dup_or_die(arg);
		break;
	case OPT_DRAFT: rs_cli_draft_opt(&c->draft, arg, NULL, USAGE); break;
	case OPT_DRAFT_MAX:
		rs_cli_draft_opt(&c->draft, NULL, arg, USAGE);
		break;
	case OPT_SLOTS:
		c->slots = (int)rs_cli_num_opt("--slots", arg, 1,
		    SERVE_MAX_SLOTS, USAGE);
		break;
	case OPT_CACHE_MEM:
		c->cache_mem = rs_cli_num_opt("--cache-mem", arg, 0,
		    INT64_C(1) << 24, USAGE);
		break;
	case OPT_CACHE_HOST_MEM:
		c->cache_host_mem = rs_cli_num_opt("--cache-host-mem", arg, 0,
		    INT64_C(1) << 24, USAGE);
		break;
	case OPT_CK_EVERY:
		c->gen.checkpoint_every = (int32_t)rs_cli_num_opt(
		    "--checkpoint-every", arg, 0, 1 << 24, USAGE);
		break;
	case OPT_CK_MIN_CALL:
		c->gen.checkpoint_min_call = (int32_t)rs_cli_num_opt(
		    "--checkpoint-min-call", arg, 0, 1 << 24, USAGE);
		break;
	case OPT_MAX_BODY:
		c->body_max = rs_cli_num_opt("--max-body", arg, 1024,
		    INT64_C(1) << 32, USAGE);
		break;
	case OPT_NFC:
	case OPT_NO_NFC:
		rs_cli_norm_opt(&c->tok_norm, ch == OPT_NFC, USAGE);
		break;
	case OPT_CLIENT_SPECIALS: c->gen.client_specials = 1; break;
	/* --no-thinking and --reasoning-effort: the names before §2.5
	   named the defaults; kept so that existing scripts still start */
	case OPT_NO_THINKING: c->gen.enable_thinking = 0; break;
	case OPT_NO_CHAT: c->no_chat = 1; break;
	case OPT_DEF_THINKING:
		if (rs_cli_parse_bool(arg, &c->gen.enable_thinking) != 0)
			rs_cli_usage_error(USAGE, "--default-enable-thinking: "
			    "'%s' is not true or false", arg);
		break;
	case OPT_EFFORT:
		if (rs_cli_parse_effort(arg, &c->gen.reasoning_effort) != 0)
			rs_cli_usage_error(USAGE, "--default-reasoning-effort: "
			    "'%s' is not xhigh, medium or low", arg);
		break;
	case OPT_TLS_CERT: c->tls_cert = dup_or_die(arg); break;
	case OPT_TLS_KEY: c->tls_key = dup_or_die(arg); break;
	case OPT_CORS: list_add(&c->cors_origin, arg); break;
	case OPT_PUBLIC_HOST: list_add(&c->public_host, arg); break;
	case OPT_COPILOT:
		if (strncmp(arg, "http://", 7) != 0 &&
		    strncmp(arg, "https://", 8) != 0)
			rs_cli_usage_error(USAGE, "--copilot-config: '%s' does "
			    "not start with http:// or https://", arg);
		c->copilot_url = dup_or_die(arg);
		break;
	case OPT_PIDFILE: c->pidfile = dup_or_die(arg); break;
	case OPT_RUNAS: c->runas = dup_or_die(arg); break;
	case OPT_CHROOT: c->chroot = dup_or_die(arg); break;
	case OPT_SECCOMP_TRACE: c->seccomp_trace = 1; break;
	default:
		rs_cli_common_opt(ch, USAGE, usage_full);
	}
}

void
serve_opts_parse(int argc, char **argv)
{
	struct serve_cfg	*c = &serve_cfg;
	int			 ch;

	/* a copy: Kore reuses argv's memory for the process title */
	rs_cli_init(dup_or_die(argv[0]));
	defaults(c);
	while ((ch = getopt_long(argc, argv, "c:hm:qt:", longopts, NULL)) !=
	    -1) {
		/* the version of the Kore linked in too */
		if (ch == RS_CLI_OPT_VERSION) {
			rs_cli_print_version();
			printf("kore %s\n", kore_version);
			exit(rs_cli_finish(RS_EXIT_OK));
		}
		option(c, ch, optarg);
	}
	rs_cli_opts_done(argc, argv, c->model_path, USAGE);
	if ((c->tls_cert == NULL) != (c->tls_key == NULL))
		rs_cli_usage_error(USAGE, "--tls-cert and --tls-key go "
		    "together");
	rs_cli_draft_done(&c->draft, RS_DRAFTER_AUTO, &c->gen.draft,
	    &c->gen.draft_max, USAGE);
	rs_cli_devices_check(c->devices, c->split, USAGE);
}
