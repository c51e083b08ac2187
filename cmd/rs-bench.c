/*
 * rs-bench - benchmark the engine on a model, or write synthetic models.
 *
 *   rs-bench -m MODEL [--backend B]   probe, decode, verify, prefill, long
 *                                     decode, memory (lib/tools/rs_bench.h)
 *   rs-bench -m MODEL --spec          speculative decoding: each drafter
 *                                     end to end, and the oracle table of
 *                                     speedup vs alpha and k
 *                                     (lib/tools/rs_bench_spec.h)
 *   rs-bench --synth PRESET --out F   a qwen35 GGUF with random weights
 *                                     (lib/tools/rs_synth.h)
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "rs_bench.h"
#include "rs_bench_spec.h"
#include "rs_engine.h"
#include "rs_json.h"
#include "rs_model.h"
#include "rs_out.h"
#include "rs_state.h"
#include "rs_synth.h"
#include "rs_time.h"

#define USAGE	"rs-bench -m MODEL [--backend B] [-c N] [-t N] [--max-batch N] [--json]\n" \
	"       [--devices LIST [--split LIST]] [-q] [--quick | --prefill N | --depth LIST]\n" \
	"       rs-bench -m MODEL --spec [--draft D] [--draft-max K] [--oracle-k N]\n" \
	"       [--alpha LIST] [--spec-tokens N] [--reps N] [--draft-vocab N]\n" \
	"       [--backend B] [--devices LIST [--split LIST]] [-t N]\n" \
	"       [--json] [-q]\n" \
	"       rs-bench -m MODEL --plan [-c N] [--snap N] [--devices LIST [--split LIST]]\n" \
	"       rs-bench --synth tiny|27b --out FILE [--mix MIX] [--vocab N] [-s SEED] [-q]"

struct opts {
	const char	*model, *preset, *out, *mix;
	const char	*devices, *split;	/* --devices, --split */
	int		 backend, json, quick, plan, quiet, spec;
	struct rs_cli_draft draft;	/* --draft, --draft-max */
	int64_t		 oracle_k, spec_tokens, reps, draft_vocab;
	double		 alphas[RS_BENCH_SPEC_MAX_ALPHA];
	int		 n_alphas;	/* 0: the defaults */
	int64_t		 prefill;	/* --prefill: that row alone */
	int		 depths[RS_BENCH_MAX_LIST];	/* --depth: those rows */
	int		 n_depths;
	int64_t		 threads, max_batch, seed, vocab, ctx, snap;
	int		 snap_given;
};

/*
 * A run that failed: a row its callback could not write (stdout full or
 * closed) is a write error, anything else the run's own error.
 */
static void
run_failed(const struct opts *o, const struct rs_err *err)
{
	if (ferror(stdout))
		rs_cli_fatal("write error on stdout: %s", strerror(errno));
	rs_cli_fatal("%s: %s", o->model, err->msg);
}

static void
usage_full(void)
{
	printf("usage: %s\n\n"
	    "Benchmark the engine on a model, or write a synthetic model.\n\n"
	    "  -m, --model FILE     model to benchmark\n"
	    "  -b, --backend B      cpu, cuda or auto (default auto)\n"
	    "      --devices LIST   GPUs to split the blocks over, e.g. 0,1 (0,0: the\n"
	    "                       split path on one GPU); with --plan, memory per GPU\n"
	    "      --split LIST     blocks per device, e.g. 30,34 (default: the split\n"
	    "                       that balances memory)\n"
	    "  -t, --threads N      CPU threads (default: all)\n"
	    "      --max-batch N    tokens per engine call (default 64 on the CPU,\n"
	    "                       2048 on the GPU)\n"
	    "  -j, --json           JSON lines instead of a table\n"
	    "      --quick          small sizes (decode 16, groups 1 2 4, prefill 64,\n"
	    "                       depth 256) for a fast check\n"
	    "      --depth LIST     only the probe, decode and verification groups of\n"
	    "                       1 2 4 8 16 after each depth in LIST (comma-separated,\n"
	    "                       at most 8): long-context decode and drafting\n"
	    "      --prefill N      only the probe and a prefill of N tokens (to\n"
	    "                       profile or compare one prompt length)\n"
	    "      --spec           speculative decoding: greedy generation after a\n"
	    "                       random prompt with each drafter (none, ngram, mtp,\n"
	    "                       mtp+ngram; their output must be plain decoding's),\n"
	    "                       then the oracle table: the drafter runs for its cost,\n"
	    "                       its drafts are replaced by the known continuation,\n"
	    "                       right with probability alpha; speedup per alpha\n"
	    "                       and k, measured and as the cost model predicts,\n"
	    "                       and with k adapted per round up to --oracle-k\n"
	    "      --draft D        --spec: only drafter D (none, ngram, mtp, mtp+ngram,\n"
	    "                       auto), whose cost the oracle also pays (default:\n"
	    "                       every drafter; the oracle pays mtp's)\n"
	    "      --draft-max K    --spec: drafts per pass of the drafter rows (1..16,\n"
	    "                       default 4, adapted down per run)\n"
	    "      --oracle-k N     --spec: oracle table for k = 1..N and adaptive k\n"
	    "                       up to N (1..16, default 8)\n"
	    "      --alpha LIST     --spec: comma-separated acceptance rates in [0, 1]\n"
	    "                       (default 0.5,0.6,0.7,0.8,0.9,1)\n"
	    "      --spec-tokens N  --spec: tokens generated per run (default 128)\n"
	    "      --draft-vocab N  --spec: MTP drafts over the first N token ids only\n"
	    "                       (a reduced head; CPU backend only)\n"
	    "      --reps N         --spec: runs per row, the fastest kept (default 1;\n"
	    "                       more on a machine shared with other work)\n"
	    "      --plan           print the memory plan (weights, KV cache, recurrent\n"
	    "                       state, snapshots) for the GPU and the CPU; no run\n"
	    "  -c, --ctx-size N     positions (default: the model's): the benchmark's\n"
	    "                       sizes are capped to fit them; with --plan, the\n"
	    "                       context planned for\n"
	    "      --snap N         --plan: rollback snapshots (default 5: the default\n"
	    "                       drafter's, --draft-max 4 plus one)\n"
	    "      --synth PRESET   write a model: tiny (256 hidden, 3 deltanet +\n"
	    "                       1 attention + mtp) or 27b (Qwen3.8-27B shapes,\n"
	    "                       Q4_K_M, random blocks)\n"
	    "  -o, --out FILE       where --synth writes (a regular file is replaced\n"
	    "                       atomically, a FIFO or device written in place)\n"
	    "  -q, --quiet          no progress lines or notes on stderr\n"
	    "      --mix MIX        --synth matrix types: q4_k_m, q8_0 or f16\n"
	    "      --vocab N        --synth vocabulary rows\n"
	    "  -s, --seed N         random seed (default 1)\n"
	    "  -h, --help           show this help and exit\n"
	    "      --version        show version and build configuration\n\n"
	    "Exit status: 0 success, 2 error.\n", USAGE);
}

/* ---- --synth ---- */

static void
synth_progress(void *ctx, uint64_t done, uint64_t total)
{
	rs_cli_progress(ctx, done, total);
}

static int
synth(const struct opts *o)
{
	struct rs_synth_cfg cfg;
	struct rs_err	 err = { 0 };
	double		 t0;

	if (o->out == NULL)
		rs_cli_usage_error(USAGE, "--synth needs --out");
	if (rs_synth_preset(o->preset, &cfg, &err) != RS_OK)
		rs_cli_usage_error(USAGE, "--synth: %s", err.msg);
	if (o->mix != NULL) {
		if (strcmp(o->mix, "q4_k_m") == 0)
			cfg.mix = RS_SYNTH_Q4_K_M;
		else if (strcmp(o->mix, "q8_0") == 0)
			cfg.mix = RS_SYNTH_Q8_0;
		else if (strcmp(o->mix, "f16") == 0)
			cfg.mix = RS_SYNTH_F16;
		else
			rs_cli_usage_error(USAGE, "--mix: unknown mix '%s'",
			    o->mix);
	}
	if (o->vocab > 0)
		cfg.n_vocab = (uint32_t)o->vocab;
	cfg.seed = (uint64_t)o->seed;
	cfg.progress = synth_progress;
	cfg.progress_ctx = (void *)o->out;
	rs_out_trap_signals();	/* ^C leaves no multi-GB temporary file */
	t0 = rs_time_ms();
	if (rs_synth_write(&cfg, o->out, &err) != RS_OK)
		rs_cli_fatal("%s: %s", o->out, err.msg);
	rs_cli_progress_end();
	if (!o->quiet)
		rs_cli_warn("wrote %s (%s) in %.1f s", o->out, o->preset,
		    (rs_time_ms() - t0) / 1e3);
	return (RS_EXIT_OK);
}

/* With --devices: the split the engine runs, on stderr. */
static void
split_note(const struct rs_engine *e)
{
	const struct rs_split *sp = rs_engine_split(e);
	char	 buf[256];
	size_t	 n = 0;

	if (sp->dev[0] < 0)
		return;
	for (int j = 0; j < sp->n && n < sizeof(buf); j++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%sgpu %d: "
		    "blocks %u-%u", j > 0 ? ", " : "", sp->dev[j],
		    sp->first[j], sp->first[j + 1] - 1);
	rs_cli_warn("layer split: %s", buf);
}

/* ---- -m --plan: memory plan ---- */

/*
 * --plan --devices: what each GPU of the layer split holds for one state
 * of SO, and the split itself (balanced, or --split's).
 */
static void
plan_split(const struct opts *o, const struct rs_model *m,
    const struct rs_state_opts *so, uint64_t scratch)
{
	const double gib = 1073741824.0;
	struct rs_engine_opts eo = { 0 };
	struct rs_split_mem mem[RS_SPLIT_MAX];
	struct rs_split	 sp;
	struct rs_err	 err = { 0 };
	int		 given = 0;

	rs_cli_devices_opt(o->devices, o->split, so->n_ctx, 1, &eo, USAGE);
	for (int j = 0; j < eo.n_devices; j++)
		given |= eo.split[j] != 0;
	if (rs_split_make(&sp, m, eo.devices, eo.n_devices,
	    given ? eo.split : NULL, 2, so, 1, scratch, mem, &err) != RS_OK)
		rs_cli_fatal("%s: %s", rs_cli_esc_str(o->model), err.msg);
	printf("cuda  layer split over %d device slots (%s):\n", sp.n,
	    given ? "--split" : "balanced for memory");
	for (int j = 0; j < sp.n; j++)
		printf("  gpu %d: blocks %u-%u (%u)%s%s: weights %.2f GiB + "
		    "state %.2f GiB + scratch %.2f GiB = %.2f GiB\n",
		    sp.dev[j], sp.first[j], sp.first[j + 1] - 1,
		    sp.first[j + 1] - sp.first[j], j == 0 ? ", embedding" : "",
		    j == sp.n - 1 ? ", head, mtp" : "", mem[j].weights / gib,
		    mem[j].state / gib, mem[j].scratch / gib,
		    mem[j].total / gib);
	printf("  --split %u", sp.first[1] - sp.first[0]);
	for (int j = 1; j < sp.n; j++)
		printf(",%u", sp.first[j + 1] - sp.first[j]);
	printf("; per token %d boundary cop%s of %llu bytes (the hidden "
	    "state)\n", sp.n - 1, sp.n == 2 ? "y" : "ies",
	    (unsigned long long)m->hp.n_embd * sizeof(float));
}

static void
plan_line(const char *what, const struct rs_state_plan *p, uint64_t weights)
{
	const double gib = 1073741824.0;

	printf("%-5s weights %.2f GiB + kv %.2f + mtp kv %.2f + recurrent %.3f "
	    "+ snapshots %.3f = %.2f GiB\n", what, weights / gib, p->kv / gib,
	    p->mtp_kv / gib, p->gdn / gib, p->snapshots / gib,
	    (weights + p->total) / gib);
}

static int
plan(const struct opts *o)
{
	struct rs_state_opts so = { .n_ctx = (int32_t)o->ctx,
	    .n_snap = (int32_t)o->snap };
	struct rs_state_plan p;
	struct rs_model	*m;
	struct rs_err	 err = { 0 };
	uint64_t	 weights = 0;

	if (rs_model_open(&m, o->model, &err) != RS_OK)
		rs_cli_fatal("%s: %s", o->model, err.msg);
	if (o->devices != NULL) {	/* a bad --split before any output */
		struct rs_engine_opts eo = { 0 };
		struct rs_split sp;
		int given = 0;
		rs_cli_devices_opt(o->devices, o->split, 0, 1, &eo, USAGE);
		for (int j = 0; j < eo.n_devices; j++)
			given |= eo.split[j] != 0;
		if (rs_split_make(&sp, m, eo.devices, eo.n_devices,
		    given ? eo.split : NULL, 2, &so, 1, 0, NULL, &err) != RS_OK)
			rs_cli_fatal("%s: %s", rs_cli_esc_str(o->model),
			    err.msg);
	}
	for (int64_t i = 0; i < rs_gguf_n_tensors(m->gguf); i++)
		weights += rs_gguf_tensor(m->gguf, i)->nbytes;
	uint64_t scratch = rs_engine_cuda_scratch(m, (int)o->max_batch);
	printf("%s: %d positions, %d snapshots\n", rs_cli_esc_str(o->model),
	    so.n_ctx > 0 ? so.n_ctx : (int)m->hp.n_ctx_train, so.n_snap);
	rs_state_plan(m, &so, 2, &p);
	plan_line("cuda", &p, weights);
	if (scratch > 0)
		printf("cuda  + scratch %.2f GiB (prefill chunk %d tokens; "
		    "--max-batch) + the CUDA context, ~0.5 GiB\n",
		    scratch / 1073741824.0, o->max_batch > 0 ?
		    (int)o->max_batch : RS_ENGINE_CUDA_CHUNK);
	if (o->devices != NULL)
		plan_split(o, m, &so, scratch);
	rs_state_plan(m, &so, 4, &p);
	plan_line("cpu", &p, weights);
	rs_model_close(m);
	return (RS_EXIT_OK);
}

/* ---- -m --spec ---- */

/* The oracle rows kept for the table printed at the end. */
struct spec_ctx {
	const struct opts		*o;
	struct rs_bench_spec_row	 rows[RS_BENCH_SPEC_MAX_ALPHA *
					    (RS_BENCH_SPEC_MAX_K + 1)];
	int				 n;
};

static int
spec_json(const struct rs_bench_spec_row *r)
{
	struct rs_json	*j = rs_json_obj();
	int		 rc;

	rs_json_set(j, "test", rs_json_str(r->test));
	rs_json_set(j, "drafter", rs_json_str(r->drafter));
	rs_json_set(j, "k", rs_json_int(r->k));
	rs_json_set(j, "adaptive", rs_json_bool(r->adaptive));
	if (r->alpha >= 0.0)
		rs_json_set(j, "alpha", rs_json_real(r->alpha));
	rs_json_set(j, "tokens", rs_json_int(r->tokens));
	rs_json_set(j, "rounds", rs_json_int(r->rounds));
	rs_json_set(j, "drafted", rs_json_int(r->drafted));
	rs_json_set(j, "accepted", rs_json_int(r->accepted));
	rs_json_set(j, "ms", rs_json_real(r->ms));
	rs_json_set(j, "tok_s", rs_json_real(r->tok_s));
	rs_json_set(j, "speedup", rs_json_real(r->speedup));
	rs_json_set(j, "verify_ms", rs_json_real(r->verify_ms));
	rs_json_set(j, "draft_ms", rs_json_real(r->draft_ms));
	rs_json_set(j, "catchup_ms", rs_json_real(r->catchup_ms));
	if (r->alpha >= 0.0 && r->predicted >= 0.0)
		rs_json_set(j, "predicted_speedup", rs_json_real(r->predicted));
	rc = rs_json_write_line(j, stdout);
	rs_json_free(j);
	return (rc);
}

/* Drafts a round (the adaptive rows' mean K). */
static double
per_round(const struct rs_bench_spec_row *r)
{
	return (r->rounds > 0 ? (double)r->drafted / (double)r->rounds : 0.0);
}

static int
spec_row(const struct rs_bench_spec_row *r, void *arg)
{
	struct spec_ctx *c = arg;

	/* oracle rows come once measured (progress) and once predicted */
	if (r->alpha >= 0.0 && r->predicted == 0.0) {
		if (c->o->quiet)
			return (0);
		if (r->k > 0)
			rs_cli_warn("oracle alpha %.2f k %d: %.1f tok/s, "
			    "%.2fx", r->alpha, r->k, r->tok_s, r->speedup);
		else
			rs_cli_warn("oracle alpha %.2f adaptive: %.1f tok/s, "
			    "%.2fx, %.2f drafts a round", r->alpha, r->tok_s,
			    r->speedup, per_round(r));
		return (0);
	}
	if (c->o->json)
		return (spec_json(r));
	if (r->alpha >= 0.0) {
		if (c->n < (int)(sizeof(c->rows) / sizeof(c->rows[0])))
			c->rows[c->n++] = *r;
		return (0);
	}
	if (strcmp(r->drafter, "none") == 0)
		printf("%-10s %3s %6s %6s %9s %9s %8s %8s %9s %10s\n",
		    "drafter", "k", "tokens", "passes", "accepted", "tok/s",
		    "speedup", "ms", "draft ms", "catchup ms");
	printf("%-10s %3d %6lld %6lld %4lld/%-4lld %9.2f %7.2fx %8.1f %9.1f "
	    "%10.1f\n", r->drafter, r->k, (long long)r->tokens,
	    (long long)r->rounds, (long long)r->accepted,
	    (long long)r->drafted, r->tok_s, r->speedup, r->ms, r->draft_ms,
	    r->catchup_ms);
	return (fflush(stdout) == 0 ? 0 : -1);
}

/* C's row of alpha ALPHA and k K (0: adaptive), or NULL. */
static const struct rs_bench_spec_row *
spec_cell(const struct spec_ctx *c, double alpha, int k)
{
	for (int i = 0; i < c->n; i++)
		if (c->rows[i].alpha == alpha && c->rows[i].k == k)
			return (&c->rows[i]);
	return (NULL);
}

/*
 * Speedup per alpha (rows) and k (columns): measured (predicted); then
 * the adaptive run's (its drafts a round).
 */
static void
spec_table(const struct spec_ctx *c)
{
	const struct rs_bench_spec_row *r;
	int	nk = 0;

	if (c->n == 0)
		return;
	for (int i = 0; i < c->n; i++)
		nk = c->rows[i].k > nk ? c->rows[i].k : nk;
	printf("\noracle (%s drafting): speedup over plain decoding, measured "
	    "(cost model); adaptive K (drafts a round)\n%-6s",
	    c->rows[0].drafter, "alpha");
	for (int k = 1; k <= nk; k++)
		printf(" k=%-12d", k);
	printf(" %s\n", "adaptive");
	for (int i = 0; i < c->n; i++) {
		if (c->rows[i].k != 1)
			continue;
		printf("%-6.2f", c->rows[i].alpha);
		for (int k = 1; k <= nk; k++)
			if ((r = spec_cell(c, c->rows[i].alpha, k)) != NULL)
				printf(" %5.2fx (%4.2f)", r->speedup,
				    r->predicted);
			else
				printf(" %14s", "");
		if ((r = spec_cell(c, c->rows[i].alpha, 0)) != NULL)
			printf(" %5.2fx (%4.2f)", r->speedup, per_round(r));
		printf("\n");
	}
}

/*
 * On the GPU, the pass costs the adaptive drafters weigh (rs_drafter.h),
 * measured here for passes of up to K + 1 tokens (the drafters then find
 * them remembered), and how long measuring took.
 */
static void
cost_note(const struct opts *o, struct rs_engine *e, int k)
{
	double		 c[RS_DRAFTER_K_MAX + 1], mtp, t;
	struct rs_err	 err;

	if (o->quiet || rs_engine_backend(e) != RS_BACKEND_CUDA)
		return;
	t = rs_time_ms();
	if (rs_engine_pass_costs(e, k + 1, c, &mtp, &err) != RS_OK) {
		rs_cli_warn("pass costs: %s", err.msg);
		return;
	}
	t = rs_time_ms() - t;
	fprintf(stderr, "rs-bench: pass of 1..%d tokens, in one-token passes:",
	    k + 1);
	for (int n = 0; n <= k; n++)
		fprintf(stderr, " %.2f", c[n]);
	fprintf(stderr, "; an MTP step %.2f (measured in %.0f ms)\n", mtp, t);
}

static int
spec(const struct opts *o)
{
	struct rs_engine_opts eo = { .backend = o->backend,
	    .n_threads = (int)o->threads, .max_batch = (int)o->max_batch };
	struct rs_bench_spec_opts bo;
	struct spec_ctx	*c;
	struct rs_engine *e;
	struct rs_model	*m;
	struct rs_err	 err = { 0 };
	enum rs_drafter_kind kind;
	int		 k;

	rs_cli_devices_opt(o->devices, o->split, (int32_t)o->ctx, 1, &eo,
	    USAGE);
	rs_bench_spec_defaults(&bo);
	rs_cli_draft_done(&o->draft, RS_DRAFTER_NONE, &kind, &k, USAGE);
	if (k > 0)
		bo.k_max = k;
	if (o->oracle_k > 0)
		bo.oracle_k_max = (int)o->oracle_k;
	if (o->spec_tokens > 0)
		bo.gen_tokens = (int32_t)o->spec_tokens;
	if (o->reps > 0)
		bo.reps = (int)o->reps;
	bo.vocab = (int32_t)o->draft_vocab;
	if (o->n_alphas > 0) {
		memcpy(bo.alphas, o->alphas, sizeof(bo.alphas));
		bo.n_alphas = o->n_alphas;
	}
	bo.seed = (uint64_t)o->seed;
	rs_cli_progress("loading the model", 0, 0);
	if (rs_model_open(&m, o->model, &err) != RS_OK)
		rs_cli_fatal("%s: %s", o->model, err.msg);
	if (o->draft.given) {
		bo.only = (int)rs_drafter_resolve(kind, m);
		bo.oracle = rs_drafter_resolve(kind, m);
	}
	if (rs_engine_new(&e, m, &eo, &err) != RS_OK)
		rs_cli_fatal("%s: %s", o->model, err.msg);
	rs_cli_progress_end();
	if ((c = calloc(1, sizeof(*c))) == NULL)
		rs_cli_fatal("out of memory");
	c->o = o;
	if (!o->quiet)
		rs_cli_warn("%s on %s, %d threads: %d random prompt tokens, "
		    "%d generated per run", o->model,
		    rs_backend_name(rs_engine_backend(e)),
		    rs_engine_n_threads(e), bo.prompt_tokens, bo.gen_tokens);
	split_note(e);
	cost_note(o, e, bo.oracle_k_max > bo.k_max ? bo.oracle_k_max :
	    bo.k_max);
	if (rs_bench_spec(e, &bo, spec_row, c, &err) != RS_OK) {
		free(c);
		run_failed(o, &err);
	}
	spec_table(c);
	free(c);
	rs_engine_free(e);
	rs_model_close(m);
	return (RS_EXIT_OK);
}

/* LIST: comma-separated alphas in [0, 1] into O; a usage error if bad. */
static void
parse_alphas(struct opts *o, const char *list)
{
	const char	*p = list;
	char		*end;

	o->n_alphas = 0;
	for (;;) {
		/* decimal digits and a point only: strtod alone would also
		   take blanks, signs, exponents, hex and "inf" ("0.5.1"
		   stops strtod at the second point: refused below) */
		const size_t	 len = strcspn(p, ",");
		const int	 bad = len == 0 ||
				    strspn(p, "0123456789.") < len;
		const double	 a = strtod(p, &end);

		if (bad || end == p || !(a >= 0.0 && a <= 1.0) || (*end != ',' &&
		    *end != '\0') || o->n_alphas == RS_BENCH_SPEC_MAX_ALPHA)
			rs_cli_usage_error(USAGE, "--alpha: '%s' is not a list of "
			    "at most %d numbers in [0, 1]", list,
			    RS_BENCH_SPEC_MAX_ALPHA);
		o->alphas[o->n_alphas++] = a;
		if (*end == '\0')
			return;
		p = end + 1;
	}
}

/* --depth: at most RS_BENCH_MAX_LIST positive depths. */
static void
parse_depths(struct opts *o, const char *list)
{
	const char	*p = list;
	char		*end;

	o->n_depths = 0;
	for (;;) {
		/* (digits only: strtoll would take blanks and a sign) */
		long long d = *p >= '0' && *p <= '9' ? strtoll(p, &end, 10) :
		    (end = (char *)p, 0);
		if (end == p || d < 1 || d > 1 << 24 || (*end != ',' &&
		    *end != '\0') || o->n_depths == RS_BENCH_MAX_LIST)
			rs_cli_usage_error(USAGE, "--depth: '%s' is not a list of "
			    "at most %d depths in 1..%d", list,
			    RS_BENCH_MAX_LIST, 1 << 24);
		o->depths[o->n_depths++] = (int)d;
		if (*end == '\0')
			return;
		p = end + 1;
	}
}

/* ---- -m: benchmark ---- */

static int
print_row(const struct rs_bench_row *r, void *ctx)
{
	const struct opts *o = ctx;

	if (o->json) {
		struct rs_json *j = rs_json_obj();
		rs_json_set(j, "test", rs_json_str(r->test));
		if (strcmp(r->test, "memory") == 0) {
			rs_json_set(j, "weights_bytes", rs_json_int((int64_t)r->mem_weights));
			rs_json_set(j, "state_bytes", rs_json_int((int64_t)r->mem_state));
			rs_json_set(j, "scratch_bytes", rs_json_int((int64_t)r->mem_scratch));
		} else if (strcmp(r->test, "probe") == 0) {
			rs_json_set(j, "gb_s", rs_json_real(r->gb_s));
		} else {
			rs_json_set(j, "tokens", rs_json_int(r->n));
			rs_json_set(j, "depth", rs_json_int(r->depth));
			rs_json_set(j, "ms", rs_json_real(r->ms));
			rs_json_set(j, "tok_s", rs_json_real(r->tok_s));
			if (r->bytes_per_tok > 0.0) {
				rs_json_set(j, "bytes_per_tok", rs_json_real(r->bytes_per_tok));
				rs_json_set(j, "gb_s", rs_json_real(r->gb_s));
				rs_json_set(j, "bw_eff", rs_json_real(r->eff));
			}
			if (r->rel_cost > 0.0)
				rs_json_set(j, "rel_cost", rs_json_real(r->rel_cost));
		}
		int rc = rs_json_write_line(j, stdout);
		rs_json_free(j);
		return (rc);
	}
	if (strcmp(r->test, "probe") == 0) {
		printf("%-8s %6s %6s %10s %10s %10s %7s %6s\n", "test", "tokens",
		    "depth", "ms", "tok/s", "GB/s", "eff", "cost");
		printf("%-8s %6s %6s %10s %10s %10.1f %6.0f%% %6s\n", "probe", "",
		    "", "", "", r->gb_s, 100.0, "");
	} else if (strcmp(r->test, "memory") == 0) {
		printf("memory: weights %.2f GiB, state %.2f GiB, scratch %.2f "
		    "GiB, total %.2f GiB\n", r->mem_weights / 1073741824.0,
		    r->mem_state / 1073741824.0, r->mem_scratch / 1073741824.0,
		    (r->mem_weights + r->mem_state + r->mem_scratch) /
		    1073741824.0);
	} else {
		printf("%-8s %6" PRId64 " %6" PRId64 " %10.3f %10.1f ", r->test,
		    r->n, r->depth, r->ms, r->tok_s);
		if (r->bytes_per_tok > 0.0)
			printf("%10.1f %6.1f%% ", r->gb_s, 100.0 * r->eff);
		else
			printf("%10s %7s ", "-", "-");
		if (r->rel_cost > 0.0)
			printf("%5.2fx", r->rel_cost);
		printf("\n");
	}
	return (fflush(stdout) == 0 ? 0 : -1);
}

/*
 * The sizes follow the context, -c or the model's: rows that do not fit are
 * capped (and said so on stderr), so that a 4096-position model can be
 * benchmarked with the defaults made for 262144.
 */
static void
fit(const struct opts *o, const struct rs_model *m, struct rs_bench_opts *bo)
{
	int64_t	n_ctx = o->ctx > 0 ? o->ctx : m->hp.n_ctx_train;
	char	note[512];

	if (n_ctx > m->hp.n_ctx_train)
		rs_cli_fatal("%s: --ctx-size %lld is beyond the model's "
		    "context, %u", o->model, (long long)n_ctx,
		    m->hp.n_ctx_train);
	if (o->prefill > n_ctx)
		rs_cli_fatal("%s: --prefill %lld does not fit the context, "
		    "%lld", o->model, (long long)o->prefill, (long long)n_ctx);
	for (int i = 0; i < o->n_depths; i++)
		if ((int64_t)o->depths[i] + bo->depth_tokens > n_ctx)
			rs_cli_fatal("%s: --depth %d and its %d decoded tokens "
			    "do not fit the context, %lld", o->model,
			    o->depths[i], bo->depth_tokens, (long long)n_ctx);
	if (rs_bench_fit(bo, (int32_t)n_ctx, note, sizeof(note)) > 0 &&
	    !o->quiet)
		rs_cli_warn("%s: context %lld: %s", o->model,
		    (long long)n_ctx, note);
}

static int
bench(const struct opts *o)
{
	struct rs_engine_opts eo = { .backend = o->backend,
	    .n_threads = (int)o->threads, .max_batch = (int)o->max_batch };
	struct rs_bench_opts bo;
	struct rs_engine *e;
	struct rs_model	*m;
	struct rs_err	 err = { 0 };

	rs_cli_devices_opt(o->devices, o->split, (int32_t)o->ctx, 1, &eo,
	    USAGE);
	rs_bench_defaults(&bo);
	if (o->quick) {
		static const struct rs_bench_opts q = {
			.decode_tokens = 16, .decode_depth = 16,
			.groups = { 1, 2, 4 }, .n_groups = 3, .verify_reps = 2,
			.prefills = { 64 }, .n_prefills = 1,
			.depths = { 256 }, .n_depths = 1, .depth_tokens = 8,
		};
		bo = q;
	} else if (o->prefill > 0) {
		static const struct rs_bench_opts p = { .n_prefills = 1 };
		bo = p;
		bo.prefills[0] = (int)o->prefill;
	} else if (o->n_depths > 0) {
		static const struct rs_bench_opts d = { .depth_tokens = 32,
			.groups = { 1, 2, 4, 8, 16 }, .n_groups = 5,
			.verify_reps = 8, .depth_verify = 1 };
		bo = d;
		memcpy(bo.depths, o->depths, sizeof(bo.depths));
		bo.n_depths = o->n_depths;
	}
	bo.seed = (uint64_t)o->seed;
	rs_cli_progress("loading the model", 0, 0);
	if (rs_model_open(&m, o->model, &err) != RS_OK)
		rs_cli_fatal("%s: %s", o->model, err.msg);
	fit(o, m, &bo);
	if (rs_engine_new(&e, m, &eo, &err) != RS_OK)
		rs_cli_fatal("%s: %s", o->model, err.msg);
	rs_cli_progress_end();
	if (!o->quiet)
		rs_cli_warn("%s on %s, %d threads, max batch %d", o->model,
		    rs_backend_name(rs_engine_backend(e)),
		    rs_engine_n_threads(e), rs_engine_max_batch(e));
	split_note(e);
	if (rs_bench_run(e, &bo, print_row, (void *)o, &err) != RS_OK)
		run_failed(o, &err);
	rs_engine_free(e);
	rs_model_close(m);
	return (RS_EXIT_OK);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "devices", required_argument, NULL, 'G' },
		{ "split", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ "max-batch", required_argument, NULL, 'B' },
		{ "mix", required_argument, NULL, 'x' },
		{ "model", required_argument, NULL, 'm' },
		{ "out", required_argument, NULL, 'o' },
		{ "quick", no_argument, NULL, 'Q' },
		{ "prefill", required_argument, NULL, 'F' },
		{ "depth", required_argument, NULL, 'E' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "plan", no_argument, NULL, 'P' },
		{ "ctx-size", required_argument, NULL, 'c' },
		{ "snap", required_argument, NULL, 'N' },
		{ "seed", required_argument, NULL, 's' },
		{ "synth", required_argument, NULL, 'S' },
		{ "threads", required_argument, NULL, 't' },
		{ "version", no_argument, NULL, RS_CLI_OPT_VERSION },
		{ "vocab", required_argument, NULL, 'v' },
		{ "spec", no_argument, NULL, 'X' },
		{ "draft", required_argument, NULL, 'D' },
		{ "draft-max", required_argument, NULL, 'K' },
		{ "oracle-k", required_argument, NULL, 'O' },
		{ "alpha", required_argument, NULL, 'A' },
		{ "spec-tokens", required_argument, NULL, 'T' },
		{ "reps", required_argument, NULL, 'R' },
		{ "draft-vocab", required_argument, NULL, 'W' },
		{ NULL, 0, NULL, 0 }
	};
	struct opts	 o = { .seed = 1, .snap = RS_DRAFTER_K_DEFAULT + 1 };
	int		 ch;

	rs_cli_init(argv[0]);
	while ((ch = getopt_long(argc, argv, "b:c:hjm:o:qs:t:", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'b':
			o.backend = (int)rs_cli_backend_opt(optarg, USAGE);
			break;
		case 'j': o.json = 1; break;
		case 'm': o.model = optarg; break;
		case 'o': o.out = optarg; break;
		case 'Q': o.quick = 1; break;
		case 'q': o.quiet = 1; break;
		case 'F':
			o.prefill = rs_cli_num_opt("--prefill", optarg,
			    1, 1 << 24, USAGE);
			break;
		case 'E': parse_depths(&o, optarg); break;
		case 'P': o.plan = 1; break;
		case 'c':
			o.ctx = rs_cli_num_opt("--ctx-size", optarg, 1, 1 << 24,
			    USAGE);
			break;
		case 'N':
			o.snap_given = 1;
			o.snap = rs_cli_num_opt("--snap", optarg, 0, 4096,
			    USAGE);
			break;
		case 'S': o.preset = optarg; break;
		case 'x': o.mix = optarg; break;
		case 'B':
			o.max_batch = rs_cli_num_opt("--max-batch", optarg,
			    1, 65536, USAGE);
			break;
		case 's':
			o.seed = rs_cli_num_opt("--seed", optarg, 0, INT64_MAX,
			    USAGE);
			break;
		case 't':
			o.threads = rs_cli_num_opt("--threads", optarg, 1, 256,
			    USAGE);
			break;
		case 'X': o.spec = 1; break;
		case 'D': rs_cli_draft_opt(&o.draft, optarg, NULL, USAGE); break;
		case 'K': rs_cli_draft_opt(&o.draft, NULL, optarg, USAGE); break;
		case 'O':
			o.oracle_k = rs_cli_num_opt("--oracle-k", optarg,
			    1, RS_DRAFTER_K_MAX, USAGE);
			break;
		case 'A': parse_alphas(&o, optarg); break;
		case 'W':
			o.draft_vocab = rs_cli_num_opt("--draft-vocab", optarg,
			    1, 1 << 24, USAGE);
			break;
		case 'R':
			o.reps = rs_cli_num_opt("--reps", optarg, 1, 100,
			    USAGE);
			break;
		case 'T':
			o.spec_tokens = rs_cli_num_opt("--spec-tokens", optarg,
			    2, 1 << 20, USAGE);
			break;
		case 'v':
			o.vocab = rs_cli_num_opt("--vocab", optarg, 1, 1 << 24,
			    USAGE);
			break;
		case 'G':
			o.devices = optarg;
			break;
		case 'L':
			o.split = optarg;
			break;
		default:
			rs_cli_common_opt(ch, USAGE, usage_full);
		}
	}
	if (optind < argc)
		rs_cli_usage_error(USAGE, "unexpected operand '%s'", argv[optind]);
	if (o.quick + (o.prefill > 0) + (o.n_depths > 0) > 1)
		rs_cli_usage_error(USAGE, "--quick, --prefill and --depth exclude "
		    "each other");
	if ((o.model == NULL) == (o.preset == NULL))
		rs_cli_usage_error(USAGE, "give either -m MODEL or --synth PRESET");
	if (o.ctx > 0 && o.preset != NULL)
		rs_cli_usage_error(USAGE, "--ctx-size is for -m, not --synth");
	if (o.preset != NULL && (o.quick || o.prefill > 0 || o.n_depths > 0))
		rs_cli_usage_error(USAGE, "--quick, --prefill and --depth are for "
		    "-m, not --synth");
	if (!o.spec && (o.draft.given || o.draft.max > 0 || o.oracle_k > 0 ||
	    o.n_alphas > 0 ||
	    o.spec_tokens > 0 || o.reps > 0 || o.draft_vocab > 0))
		rs_cli_usage_error(USAGE, "--draft, --draft-max, --oracle-k, "
		    "--alpha, --spec-tokens, --reps and --draft-vocab go with "
		    "--spec");
	if (o.spec && (o.preset != NULL || o.plan || o.quick || o.prefill > 0 ||
	    o.n_depths > 0 || o.ctx > 0))
		rs_cli_usage_error(USAGE, "--spec excludes --synth, --plan, "
		    "--quick, --prefill, --depth and --ctx-size");
	if (o.plan && (o.quick || o.prefill > 0 || o.n_depths > 0))
		rs_cli_usage_error(USAGE, "--plan excludes --quick, --prefill "
		    "and --depth (it runs nothing)");
	/* (the engine refuses it too, but --plan opens none) */
	if (o.devices != NULL && o.backend == RS_BACKEND_CPU)
		rs_cli_usage_error(USAGE, "--devices: the cpu backend runs on "
		    "the host, it takes no GPU list (use --backend cuda)");
	if (o.devices != NULL && o.preset != NULL)
		rs_cli_usage_error(USAGE, "--devices is for -m, not --synth");
	/* options that would otherwise be ignored */
	if (o.preset == NULL && (o.out != NULL || o.mix != NULL ||
	    o.vocab > 0))
		rs_cli_usage_error(USAGE, "--out, --mix and --vocab go with "
		    "--synth");
	if (o.snap_given && !o.plan)
		rs_cli_usage_error(USAGE, "--snap goes with --plan");
	if (o.plan && (o.json || o.preset != NULL))
		rs_cli_usage_error(USAGE, "--plan prints a table for -m: not "
		    "with --json or --synth");
	rs_cli_devices_check(o.devices, o.split, USAGE);
	rs_cli_set_quiet(o.quiet);
	return (rs_cli_finish(o.preset != NULL ? synth(&o) : o.plan ?
	    plan(&o) : o.spec ? spec(&o) : bench(&o)));
}
