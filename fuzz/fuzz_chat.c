/*
 * fuzz_chat.c - libFuzzer target for the chat-template renderer
 * (rs_chat_render(), serving.md §2.4), given messages and tools straight,
 * without the normalization that a request gets first, so every branch of
 * the templates' own checks is reached.
 *
 * The first input byte picks the options, the rest is JSON: an array of
 * messages, or an object with "messages" and "tools".
 *   bits 0-1   template: Qwen3.5, 3.6, 3.8 (3: 3.8)
 *   bit 2      add_generation_prompt
 *   bits 3-4   enable_thinking: unset, 0, 1 (3: unset)
 *   bits 5-7   reasoning_effort: unset, xhigh, medium, low, "bogus"...,
 *              and preserve_thinking on for odd values
 * A render must succeed or fail with a message; on success the segments
 * cover the text exactly, in order, none empty, and the text is valid
 * UTF-8.  Any violation aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rs_chat.h"
#include "rs_json.h"
#include "rs_utf8.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum rs_chat_variant variants[4] = { RS_CHAT_QWEN35,
	    RS_CHAT_QWEN36, RS_CHAT_QWEN38, RS_CHAT_QWEN38 };
	static const char *efforts[8] = { NULL, "xhigh", "medium", "low",
	    "bogus", NULL, "xhigh", "" };
	struct rs_chat_opts	 o;
	struct rs_chat_prompt	 p = { 0 };
	struct rs_json		*j, *msgs;
	struct rs_err		 err = { 0 };
	size_t			 at = 0;
	unsigned		 b;

	if (size < 1)
		return (0);
	b = data[0];
	if (rs_json_parse((const char *)data + 1, size - 1, &j, NULL) != RS_OK)
		return (0);
	rs_chat_opts_init(&o, variants[b & 3]);
	o.add_generation_prompt = (b >> 2) & 1;
	o.enable_thinking = ((b >> 3) & 3) == 1 ? 0 : ((b >> 3) & 3) == 2 ?
	    1 : RS_CHAT_UNSET;
	o.reasoning_effort = efforts[(b >> 5) & 7];
	o.preserve_thinking = ((b >> 5) & 1) ? 1 : RS_CHAT_UNSET;
	if (rs_json_kind(j) == RS_JSON_OBJECT) {
		msgs = rs_json_get(j, "messages");
		o.tools = rs_json_get(j, "tools");
	} else
		msgs = j;
	if (rs_chat_render(&o, msgs, &p, &err) != RS_OK) {
		if (err.msg[0] == '\0')
			abort();
	} else {
		if (p.text == NULL || !rs_utf8_valid(p.text, p.len, NULL))
			abort();
		for (size_t i = 0; i < p.n_segs; i++) {
			if (p.segs[i].off != at || p.segs[i].len == 0)
				abort();
			at += p.segs[i].len;
		}
		if (at != p.len)
			abort();
	}
	rs_chat_prompt_cleanup(&p);
	rs_json_free(j);
	return (0);
}
