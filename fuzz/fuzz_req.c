/*
 * fuzz_req.c - libFuzzer target for a request body on its way to prompt
 * tokens: JSON parsing, rs_gen_req_parse() (fields, ranges, the §2.3
 * normalization of messages and tools, tool_choice), rs_gen_prepare()
 * (the chat template, tokenization, the context check), on the tiny
 * model ($RS_FIXTURES/tiny/model-q8_0.gguf, default ../shared/fixtures)
 * with a CPU engine that never runs.
 *
 * The input is the body.  Any bytes must give RS_OK or an error with a
 * message, a status code (400, 500 for out of memory) and, for a chat,
 * a rendered prompt that is valid UTF-8 and tokens inside the
 * vocabulary.  Any violation aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs_engine.h"
#include "rs_gen.h"
#include "rs_json.h"
#include "rs_model.h"
#include "rs_tok.h"
#include "rs_utf8.h"

int	LLVMFuzzerInitialize(int *argc, char ***argv);
int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct rs_gen	*gen;
static int32_t		 n_vocab;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char		*root = getenv("RS_FIXTURES");
	char			 path[1024];
	struct rs_model		*m;
	struct rs_engine	*e;
	struct rs_state		*st;
	struct rs_tok		*tok;
	struct rs_err		 err = { 0 };
	struct rs_engine_opts	 eo = { .backend = RS_BACKEND_CPU,
				    .n_threads = 1 };
	struct rs_state_opts	 so = { .n_ctx = 0 };

	(void)argc;
	(void)argv;
	snprintf(path, sizeof(path), "%s/tiny/model-q8_0.gguf",
	    root != NULL && *root != '\0' ? root : "../shared/fixtures");
	if (rs_model_open(&m, path, &err) != RS_OK ||
	    rs_engine_new(&e, m, &eo, &err) != RS_OK ||
	    rs_engine_state_new(e, &so, &st, &err) != RS_OK ||
	    rs_tok_new(&tok, m->gguf, RS_TOK_NORM_DEFAULT, &err) != RS_OK ||
	    rs_gen_new(&gen, e, st, tok, NULL, &err) != RS_OK) {
		fprintf(stderr, "fuzz_req: %s: %s\n", path, err.msg);
		exit(1);
	}
	n_vocab = (int32_t)rs_tok_meta(tok)->n_vocab;
	return (0);		/* the model, engine and state live on */
}

static void
check_error(const struct rs_gen_error *ge)
{
	if (ge->err.msg[0] == '\0' || ge->type == NULL ||
	    (ge->code != 400 && ge->code != 500))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rs_gen_req	 r;
	struct rs_gen_error	 ge;
	struct rs_json		*body;

	if (rs_json_parse((const char *)data, size, &body, NULL) != RS_OK)
		return (0);
	memset(&ge, 0, sizeof(ge));
	rs_gen_req_init(&r, gen);
	if (rs_gen_req_parse(gen, &r, body, &ge) != RS_OK)
		check_error(&ge);
	else if (rs_gen_prepare(gen, &r, &ge) != RS_OK)
		check_error(&ge);
	else {
		if (r.kind == RS_GEN_CHAT && (r.rendered == NULL ||
		    !rs_utf8_valid(r.rendered, r.rendered_len, NULL)))
			abort();
		for (size_t i = 0; i < r.n_prompt; i++)
			if (r.prompt[i] < 0 || r.prompt[i] >= n_vocab)
				abort();
		for (size_t i = 0; i < r.n_forced; i++)
			if (r.forced[i] < 0 || r.forced[i] >= n_vocab)
				abort();
	}
	rs_gen_req_cleanup(&r);
	rs_json_free(body);
	return (0);
}
