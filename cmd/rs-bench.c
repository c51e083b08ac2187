/*
 * rs-bench - synthetic models for benchmarks and demos.
 *
 * --synth PRESET --out FILE writes a qwen35 GGUF with the exact tensor
 * layout of the preset and random weights (lib/rs_synth.h).  Timed
 * benchmarks of a model (-m) arrive with the CUDA backend.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "rs_synth.h"

#define USAGE	"rs-bench --synth tiny|27b --out FILE [--mix q4_k_m|q8_0|f16] [-s SEED]"

static void
usage_full(void)
{
	printf("usage: %s\n\n"
	    "Write a synthetic qwen35 model with random weights.\n\n"
	    "      --synth PRESET   tiny (256 hidden, 3 deltanet + 1 attention + mtp)\n"
	    "                       or 27b (Qwen3.8-27B shapes, Q4_K_M, random blocks)\n"
	    "  -o, --out FILE       where to write the GGUF (replaced atomically)\n"
	    "      --mix MIX        matrix types: q4_k_m, q8_0 or f16 (default: the preset's)\n"
	    "      --vocab N        vocabulary rows (default: the preset's)\n"
	    "  -s, --seed N         random seed (default 1)\n"
	    "  -h, --help           show this help and exit\n"
	    "      --version        show version and build configuration\n\n"
	    "Exit status: 0 success, 2 error.\n", USAGE);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "mix", required_argument, NULL, 'x' },
		{ "out", required_argument, NULL, 'o' },
		{ "seed", required_argument, NULL, 's' },
		{ "synth", required_argument, NULL, 'S' },
		{ "version", no_argument, NULL, 'V' },
		{ "vocab", required_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 }
	};
	struct rs_synth_cfg cfg;
	struct rs_err	 err = { 0 };
	const char	*preset = NULL, *out = NULL, *mix = NULL;
	int64_t		 seed = 1, vocab = 0;
	struct timespec	 t0, t1;
	int		 ch;

	rs_cli_init(argv[0]);
	while ((ch = getopt_long(argc, argv, "ho:s:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'h': usage_full(); return (rs_cli_finish(RS_EXIT_OK));
		case 'V': rs_cli_print_version(); return (rs_cli_finish(0));
		case 'S': preset = optarg; break;
		case 'o': out = optarg; break;
		case 'x': mix = optarg; break;
		case 's':
			if (rs_cli_parse_i64(optarg, 0, INT64_MAX, &seed))
				rs_cli_usage_error(USAGE,
				    "--seed: '%s' is not a non-negative integer",
				    optarg);
			break;
		case 'v':
			if (rs_cli_parse_i64(optarg, 1, 1 << 24, &vocab))
				rs_cli_usage_error(USAGE,
				    "--vocab: '%s' is not in [1, 16777216]", optarg);
			break;
		default:
			rs_cli_usage_error(USAGE, "unknown option");
		}
	}
	if (optind < argc)
		rs_cli_usage_error(USAGE, "unexpected operand '%s'", argv[optind]);
	if (preset == NULL || out == NULL)
		rs_cli_usage_error(USAGE, "--synth and --out are required");
	if (rs_synth_preset(preset, &cfg, &err) != RS_OK)
		rs_cli_usage_error(USAGE, "--synth: %s", err.msg);
	if (mix != NULL) {
		if (strcmp(mix, "q4_k_m") == 0)
			cfg.mix = RS_SYNTH_Q4_K_M;
		else if (strcmp(mix, "q8_0") == 0)
			cfg.mix = RS_SYNTH_Q8_0;
		else if (strcmp(mix, "f16") == 0)
			cfg.mix = RS_SYNTH_F16;
		else
			rs_cli_usage_error(USAGE, "--mix: unknown mix '%s'", mix);
	}
	if (vocab > 0)
		cfg.n_vocab = (uint32_t)vocab;
	cfg.seed = (uint64_t)seed;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (rs_synth_write(&cfg, out, &err) != RS_OK)
		rs_cli_fatal("%s: %s", out, err.msg);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fprintf(stderr, "%s: wrote %s (%s) in %.1f s\n", rs_cli_name(), out,
	    preset, (double)(t1.tv_sec - t0.tv_sec) +
	    (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
	return (rs_cli_finish(RS_EXIT_OK));
}
