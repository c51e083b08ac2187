/*
 * cli.h - what every rs-* command shares: its name in messages, strict
 * number parsing, the usage/--version conventions and exit codes
 * (style.md §2.8).  Not part of librs: commands may print and exit.
 */
#ifndef RS_CLI_H
#define RS_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "rs_drafter.h"
#include "rs_engine.h"
#include "rs_err.h"
#include "rs_tok.h"

enum {
	RS_EXIT_OK = 0,		/* everything succeeded */
	RS_EXIT_FAIL = 1,	/* ran to the end, some records failed */
	RS_EXIT_ERROR = 2	/* could not do its job (usage, model, I/O) */
};

/*
 * Remember argv[0]'s base name for messages, and turn a SIGBUS from a
 * model file that shrank under the command into a message and exit 2
 * (cli.c); call first in main().
 */
void		 rs_cli_init(const char *argv0);
const char	*rs_cli_name(void);

/* "rs-x: <message>\n" on stderr. */
void		 rs_cli_warn(const char *fmt, ...)
		    __attribute__((format(printf, 1, 2)));
/* rs_cli_warn, then exit(RS_EXIT_ERROR). */
void		 rs_cli_fatal(const char *fmt, ...)
		    __attribute__((format(printf, 1, 2), noreturn));
/* "rs-x: what: <err msg>" on stderr. */
void		 rs_cli_warn_err(const char *what, const struct rs_err *err);
/*
 * "line LINE: MSG" into BUF (N bytes), MSG being about line LINE of a
 * JSON-lines input; a JSON parser's "line 1 column C: ..." (each line is
 * one JSON text of one line) becomes "line LINE column C: ...".  Returns
 * BUF.
 */
const char	*rs_cli_at_line(char *buf, size_t n, long long line,
		    const char *msg);

/*
 * A usage error: MSG, the short USAGE line and "Try 'rs-x --help'" on
 * stderr, then exit(RS_EXIT_ERROR).
 */
void		 rs_cli_usage_error(const char *usage, const char *fmt, ...)
		    __attribute__((format(printf, 2, 3), noreturn));

/* "rs-x redshift <version>" plus the build line, on stdout. */
void		 rs_cli_print_version(void);

/*
 * Parse S as a decimal integer in [MIN, MAX]: digits after an optional
 * '-', no white space, '+' or junk, no empty string, no clamping.  0 on success, -1 otherwise (the caller names the option).
 */
int		 rs_cli_parse_i64(const char *s, int64_t min, int64_t max,
		    int64_t *out);

/*
 * The tail every command's option parsing shares (rs-generate, rs-verify,
 * rs-serve, rs-tokenize).  The long options end with RS_CLI_LONGOPTS_TAIL
 * (--help, --version, the terminator), and the getopt_long switch hands
 * the options it does not handle itself to rs_cli_common_opt(): -h/--help
 * runs HELP (the full usage on stdout) and exits 0, --version prints
 * rs_cli_print_version() and exits 0, anything else is a usage error.
 * rs_cli_opts_done() then refuses operands and a missing -m.
 */
#define RS_CLI_OPT_VERSION	0x7f00	/* above every command's own ids */
#define RS_CLI_LONGOPTS_TAIL \
	{ "help", no_argument, NULL, 'h' }, \
	{ "version", no_argument, NULL, RS_CLI_OPT_VERSION }, \
	{ NULL, 0, NULL, 0 }

void		 rs_cli_common_opt(int c, const char *usage,
		    void (*help)(void)) __attribute__((noreturn));
void		 rs_cli_opts_done(int argc, char **argv, const char *model,
		    const char *usage);

/* The value S of numeric option OPT, in [MIN, MAX], or a usage error. */
int64_t		 rs_cli_num_opt(const char *opt, const char *s, int64_t min,
		    int64_t max, const char *usage);

/* The --backend value S (cpu, cuda or auto), or a usage error. */
enum rs_backend	 rs_cli_backend_opt(const char *s, const char *usage);

/*
 * Parse S as "true" or "false" into *OUT (1 or 0).  0 on success, -1
 * otherwise (the caller names the option).
 */
int		 rs_cli_parse_bool(const char *s, int *out);

/*
 * Parse S as a default reasoning effort, one of the Qwen3.8 template's
 * levels (serving.md §2.5: "xhigh", "medium", "low"), into *OUT, a static
 * string.  0 on success, -1 otherwise.
 */
int		 rs_cli_parse_effort(const char *s, const char **out);

/*
 * --nfc (NFC set) or --no-nfc into *NORM, which starts as
 * RS_TOK_NORM_DEFAULT (the tokenizer's default for its pre type, NFC for
 * the Qwen vocabularies); giving both is a usage error.  rs-tokenize,
 * rs-generate and rs-serve share the flags and this meaning.
 */
void		 rs_cli_norm_opt(enum rs_tok_norm *norm, int nfc,
		    const char *usage);

/*
 * The --draft and --draft-max flags of rs-generate, rs-serve and rs-bench:
 * rs_cli_draft_opt() for each --draft (ARG: none, ngram, mtp, mtp+ngram,
 * auto or a bare count N, meaning ngram with K = N as the flag first did)
 * and --draft-max (MAX_ARG, a count in [1, 16]), then rs_cli_draft_done()
 * after parsing: *KIND and *K are the drafter (DEF when --draft was not
 * given) and its draft_max (the default RS_DRAFTER_K_DEFAULT when neither
 * gave one, 0 with none).  A bad value, a bare count together with
 * --draft-max, or --draft-max with neither --draft nor a default drafter
 * is a usage error (--draft none --draft-max K is not: a script may loop
 * over the drafters).
 */
struct rs_cli_draft {
	int			 given;		/* --draft was */
	enum rs_drafter_kind	 kind;
	int			 count;		/* from a bare --draft N */
	int			 max;		/* from --draft-max */
};

void		 rs_cli_draft_opt(struct rs_cli_draft *d, const char *arg,
		    const char *max_arg, const char *usage);
void		 rs_cli_draft_done(const struct rs_cli_draft *d,
		    enum rs_drafter_kind def, enum rs_drafter_kind *kind,
		    int *k, const char *usage);
/* Their --help lines, descriptions from column COL as the command's. */
void		 rs_cli_draft_help(int col);

/*
 * --devices LIST and --split LIST, the layer split over GPUs, the same in
 * every command that runs the engine (rs-generate, rs-verify, rs-bench,
 * rs-serve): DEVICES ("0,1", CUDA ordinals; one may repeat) and SPLIT
 * (blocks per device, "30,34"), either NULL when not given, into EO.
 * CTX and STATES size the balanced split (rs_engine_opts' split_ctx and
 * split_states).  A malformed list, more than RS_SPLIT_MAX items, --split
 * without --devices or with another count is a usage error; counts that
 * do not sum to the model's blocks fail when the engine opens.
 */
#define RS_CLI_DEVICES_HELP \
	"      --devices LIST          GPUs to split the blocks over, e.g. 0,1\n" \
	"                              (0,0: the split path on one GPU; cuda only)\n" \
	"      --split LIST            blocks per device, e.g. 30,34 (default: the\n" \
	"                              split that balances memory)\n"

void		 rs_cli_devices_opt(const char *devices, const char *split,
		    int32_t ctx, int states, struct rs_engine_opts *eo,
		    const char *usage);

/* The same checks without a destination: the usage errors a command
   reports before it opens the model. */
void		 rs_cli_devices_check(const char *devices, const char *split,
		    const char *usage);

/*
 * The most bytes a command reads as one input line or one text (256 MiB:
 * a request of a whole 262,144-token context as ids is ~2 MB), so that an
 * endless input (/dev/zero) gets an error, not all of memory.  A JSON-lines
 * command skips a longer line with an error in its place, so that the lines
 * after it still get their answers.
 */
#define RS_CLI_MAX_LINE	((size_t)256 << 20)

/*
 * The whole of FP (at most MAX bytes) in a malloc'd, NUL-terminated buffer
 * of *N bytes (NULs inside kept).  Exits 2 on a read error, running out of
 * memory or more than MAX bytes, naming NAME.
 */
char		*rs_cli_read_all(FILE *fp, const char *name, size_t max,
		    size_t *n);

/*
 * Read the next line of FP, line end included, into *LINE (grown as
 * needed; *CAP its size; NUL-terminated, NULs inside kept): its length,
 * -1 at the end of the input, or -2 when it is longer than MAX bytes, its
 * line end included (the rest of it is read and dropped: the next call
 * reads the next line).  A
 * read error or running out of memory is fatal, naming NAME and LINENO.
 */
ssize_t		 rs_cli_getline(char **line, size_t *cap, FILE *fp, size_t max,
		    const char *name, size_t lineno);

/*
 * Call FN(CTX, LINE, N, LINENO) for every line of FP that is not blank,
 * with the line end (LF or CR LF) cut off: N bytes at LINE (NUL-terminated
 * at LINE[N] is not promised), LINENO counting from 1 over all lines.  A
 * line longer than RS_CLI_MAX_LINE comes as LINE NULL and N the limit, for
 * FN to answer with an error.  A read error is fatal, naming NAME.
 */
typedef void	(*rs_cli_line_fn)(void *ctx, char *line, size_t n,
		    size_t lineno);
void		 rs_cli_each_line(FILE *fp, const char *name, rs_cli_line_fn fn,
		    void *ctx);

/*
 * Escape the N bytes at S into BUF (CAP bytes, NUL-terminated, cut at a
 * whole piece when full) for a terminal: C0 controls and DEL as \xNN (\n,
 * \t, \r as such), C1 controls (U+0080..U+009F) as \uNNNN, bytes that are
 * not UTF-8 as \xNN; printable UTF-8 is kept.  Every human-readable output
 * of a string from outside (file names, GGUF keys and values, messages)
 * goes through it; rs_cli_warn/fatal/usage_error apply it to the whole
 * message.  Returns the length written.
 */
size_t		 rs_cli_esc(const char *s, size_t n, char *buf, size_t cap);

/* rs_cli_esc of a C string into a static buffer (4 rotating, 1 KiB each:
 * longer strings are cut). */
const char	*rs_cli_esc_str(const char *s);

/*
 * Progress of long work (model load, --synth, --check, long prefills) as
 * one line "rs-x: WHAT: 42%" rewritten in place on stderr, at most 4 times
 * a second, or "rs-x: WHAT ..." when TOTAL is 0 (work of unknown length,
 * such as loading a model); only when stderr is a terminal and the command
 * is not quiet (rs_cli_set_quiet, from -q).  rs_cli_progress_end() clears
 * the line; messages clear it too.
 */
#define RS_CLI_LONG_PROMPT	1024	/* tokens: prefill progress from here */

void		 rs_cli_set_quiet(int q);
void		 rs_cli_progress(const char *what, uint64_t done,
		    uint64_t total);
void		 rs_cli_progress_end(void);

/*
 * Flush and close stdout; report a write error (e.g. a full disk) and
 * return RS_EXIT_ERROR, otherwise CODE.
 */
int		 rs_cli_finish(int code);

#endif /* RS_CLI_H */
