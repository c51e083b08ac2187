/*
 * t_chat.h - the chat fixtures' cases (the JSON files in fixtures/chat) as
 * renderer options, shared by check_chat.c (the renderer) and check_tok35.c
 * (the rendered prompts tokenized with the real vocabulary).
 */
#ifndef T_CHAT_H
#define T_CHAT_H

#include "rs_chat.h"
#include "rs_json.h"

/*
 * O for case C rendered as VARIANT: C's tools and add_generation_prompt,
 * and enable_thinking, preserve_thinking and reasoning_effort from the
 * object C[KW_KEY] (absent: undefined).  O borrows from C.  Fails the
 * running test on a malformed case.
 */
void		 t_chat_case_opts(const struct rs_json *c,
		    enum rs_chat_variant variant, const char *kw_key,
		    struct rs_chat_opts *o);

#endif /* T_CHAT_H */
