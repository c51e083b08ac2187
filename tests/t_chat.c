/*
 * t_chat.c - the chat fixtures' cases as renderer options (see t_chat.h).
 */
#include <stddef.h>

#include <check.h>

#include "t_chat.h"

/* KW[KEY] as RS_CHAT_UNSET (absent), 0 or 1. */
static int
flag_of(const struct rs_json *kw, const char *key)
{
	const struct rs_json	*v = rs_json_get(kw, key);
	int			 b;

	if (v == NULL)
		return (RS_CHAT_UNSET);
	ck_assert_msg(rs_json_as_bool(v, &b) == 0, "%s is not a bool", key);
	return (b);
}

void
t_chat_case_opts(const struct rs_json *c, enum rs_chat_variant variant,
    const char *kw_key, struct rs_chat_opts *o)
{
	const struct rs_json	*kw = rs_json_get(c, kw_key), *eff;
	const char		*s;
	size_t			 n;
	int			 agp;

	rs_chat_opts_init(o, variant);
	o->tools = rs_json_get(c, "tools");
	ck_assert(rs_json_as_bool(rs_json_get(c, "add_generation_prompt"),
	    &agp) == 0);
	o->add_generation_prompt = agp;
	o->enable_thinking = flag_of(kw, "enable_thinking");
	o->preserve_thinking = flag_of(kw, "preserve_thinking");
	if ((eff = rs_json_get(kw, "reasoning_effort")) != NULL) {
		ck_assert_msg(rs_json_as_str(eff, &s, &n) == 0,
		    "reasoning_effort is not a string");
		o->reasoning_effort = s;
	}
}
