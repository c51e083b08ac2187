#!/usr/bin/env python3
"""copilot-replay.py - replay a VS Code Copilot agent session against rs-serve.

Requests are shaped as VS Code's custom-endpoint client sends them
(serving.md §5, issue #14):

  - always "stream": true with "stream_options": {"include_usage": true};
  - thinking turns carry a top-level "reasoning_effort" (default
    "medium", what Copilot's menu preselects from the entry's
    supportsReasoningEffort) and
    "max_completion_tokens", never "max_tokens" and no "temperature";
    side requests (a title) carry neither effort nor thinking, and
    "max_tokens";
  - "tools": ~30 function tools with JSON-schema parameters, and
    "tool_choice" auto, none or a named function;
  - earlier assistant turns echo their reasoning in both
    "reasoning_content" and "reasoning", and their tool calls, whose
    results come back as "role": "tool" messages;
  - Copilot's extra fields ("n", "copilot_cache_control").

The session: conversation A (a system prompt with attached files sized by
--context-tokens, then --turns agent turns: user messages, named and
automatic tool calls with tool results, a tool_choice none turn), with a
side request (a title, its own system prompt) and turns of a second
conversation B interleaved, and one turn that edits an earlier user message
of A (a miss in the middle: only the part before the edit can be reused).
The last turn of A adds a --last-user-tokens user message to the whole
conversation: its time to first token is what an agent user waits for.
With --cold, the same last request is sent once more with its first byte
changed, which no cache holds: the full-prefill time beside it.

Per request it prints: turn, conversation, kind, prompt tokens, tokens
reused (usage cached_tokens), the checkpoint hit and the positions it
restored (timings), client-side time to first token (request sent to the
first reasoning, content or tool-call delta), prefill ms and decode tok/s
(server timings), and output tok/s seen by the client; then, unless
--no-breakdown, a line with the server's time-to-first-token breakdown
(rs_gen.h: template render and tokenize, setup, prefix lookup, checkpoint
restore and whether from host RAM or another slot, each prefill call's
tokens and ms, checkpoint saves and spills with their ms, and the first
text event: output tokens before it and the first decode step).  --jsonl
FILE writes one JSON object per request too, the breakdown included.  Only the standard library (the GPU
machine has no OpenAI SDK); every request has --timeout.

Exit status: 0 when every request streamed a well-formed answer (chunks,
a final usage chunk, [DONE]), 1 when one did not (the first problems are
printed on stderr), 2 on a usage error or when the server is unreachable.

  python3 scripts/copilot-replay.py --url http://127.0.0.1:8081 \\
      --context-tokens 30000 --turns 12 --cold
"""
import argparse
import http.client
import json
import sys
import time
import urllib.parse

TOOL_NAMES = [
    "read_file", "grep_search", "file_search", "semantic_search",
    "list_dir", "run_in_terminal", "get_terminal_output", "get_errors",
    "replace_string_in_file", "multi_replace_string_in_file", "create_file",
    "create_directory", "insert_edit_into_file", "apply_patch",
    "run_tests", "test_failure", "list_code_usages", "get_changed_files",
    "fetch_webpage", "open_simple_browser", "github_repo", "run_vscode_command",
    "install_extension", "create_new_workspace", "get_project_setup_info",
    "run_task", "create_and_run_task", "get_task_output", "manage_todo_list",
    "think",
]

FILLER = (
    "static int\nparse_line(struct ctx *c, const char *s, size_t n)\n{\n"
    "\t/* split on the first '=' and keep both halves */\n"
    "\tconst char *eq = memchr(s, '=', n);\n\n"
    "\tif (eq == NULL)\n\t\treturn (-1);\n"
    "\treturn (ctx_put(c, s, (size_t)(eq - s), eq + 1, n - (size_t)(eq - s) - 1));\n}\n\n"
)


def tools(n):
    out = []
    for i, name in enumerate(TOOL_NAMES[:n]):
        props = {
            "path": {"type": "string", "description": "Absolute path of the file or folder."},
            "query": {"type": "string", "description": "What to look for; a regex where the tool allows."},
            "maxResults": {"type": "integer", "description": "At most this many results."},
        }
        if i % 3 == 0:
            props["explanation"] = {"type": "string",
                                    "description": "One sentence: why this tool is used now."}
        if i % 4 == 1:
            props["options"] = {"type": "object", "properties": {
                "caseSensitive": {"type": "boolean"},
                "include": {"type": "array", "items": {"type": "string"}}}}
        out.append({"type": "function", "function": {
            "name": name,
            "description": f"{name.replace('_', ' ').capitalize()} in the user's workspace. "
                           "Use it when the task needs it; prefer reading before editing.",
            "parameters": {"type": "object", "properties": props, "required": ["path"]}}})
    return out


class Replay:
    def __init__(self, a):
        self.a = a
        u = urllib.parse.urlsplit(a.url)
        self.host, self.port = u.hostname, u.port or (443 if u.scheme == "https" else 80)
        self.https = u.scheme == "https"
        # the server's base: the entry's URL (.../v1/chat/completions),
        # .../v1 or the bare origin all name it
        self.base = u.path.rstrip("/")
        for tail in ("/chat/completions", "/v1"):
            if self.base.endswith(tail):
                self.base = self.base[:-len(tail)]
        self.rows = []
        self.problems = []
        self.turn = 0
        self.jsonl = open(a.jsonl, "w") if a.jsonl else None

    def conn(self):
        c = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        return c(self.host, self.port, timeout=self.a.timeout)

    def headers(self):
        h = {"Content-Type": "application/json", "Accept": "text/event-stream",
             "User-Agent": "GitHubCopilotChat/0.32.0", "X-Initiator": "agent",
             "Authorization": f"Bearer {self.a.api_key or 'copilot-replay'}"}
        return h

    def post_json(self, path, body):
        c = self.conn()
        try:
            c.request("POST", self.base + path, json.dumps(body), self.headers())
            r = c.getresponse()
            data = r.read()
            if r.status != 200:
                raise RuntimeError(f"{path}: HTTP {r.status}: {data[:200]!r}")
            return json.loads(data)
        finally:
            c.close()

    def tokens_per_char(self):
        """Tokens per character of the filler, from the server's /tokenize."""
        sample = FILLER * 8
        j = self.post_json("/tokenize", {"content": sample})
        return len(j["tokens"]) / len(sample)

    def problem(self, what):
        if len(self.problems) < 10:
            self.problems.append(what)

    def stream(self, body, conv, kind):
        """One streamed chat request; returns the assistant message to echo."""
        self.turn += 1
        c = self.conn()
        t0 = time.monotonic()
        ttft = None
        reasoning, content, calls = [], [], {}
        usage = timings = None
        done = False
        n_chunks = 0
        finish = None
        try:
            c.request("POST", self.base + "/v1/chat/completions", json.dumps(body), self.headers())
            r = c.getresponse()
            if r.status != 200:
                self.problem(f"turn {self.turn}: HTTP {r.status}: {r.read()[:300]!r}")
                return None
            for raw in r:
                line = raw.decode("utf-8").rstrip("\r\n")
                if not line.startswith("data: "):
                    continue
                data = line[6:]
                if data == "[DONE]":
                    done = True
                    break
                ch = json.loads(data)
                n_chunks += 1
                if "error" in ch:
                    self.problem(f"turn {self.turn}: stream error {ch['error']}")
                    return None
                if ch.get("usage"):
                    usage = ch["usage"]
                if ch.get("timings"):
                    timings = ch["timings"]
                for choice in ch.get("choices", []):
                    d = choice.get("delta", {})
                    if choice.get("finish_reason"):
                        finish = choice["finish_reason"]
                    got = False
                    if d.get("reasoning_content"):
                        reasoning.append(d["reasoning_content"])
                        got = True
                    if d.get("content"):
                        content.append(d["content"])
                        got = True
                    for tc in d.get("tool_calls") or []:
                        k = tc["index"]
                        e = calls.setdefault(k, {"id": None, "name": "", "arguments": ""})
                        if tc.get("id"):
                            e["id"] = tc["id"]
                        f = tc.get("function", {})
                        if f.get("name"):
                            e["name"] = f["name"]
                        e["arguments"] += f.get("arguments", "") or ""
                        got = True
                    if got and ttft is None:
                        ttft = time.monotonic() - t0
        except (OSError, http.client.HTTPException, ValueError) as e:
            self.problem(f"turn {self.turn}: {type(e).__name__}: {e}")
            return None
        finally:
            c.close()
        total = time.monotonic() - t0
        if not done:
            self.problem(f"turn {self.turn}: stream ended without [DONE]")
        if usage is None:
            self.problem(f"turn {self.turn}: no usage chunk (include_usage)")
            usage = {}
        if body.get("reasoning_effort") and not reasoning and finish != "tool_calls" \
                and body.get("tool_choice", "auto") == "auto":
            # a thinking turn streams its reasoning as delta.reasoning_content
            # (it can be empty only when a forced call ends it)
            self.problem(f"turn {self.turn}: no delta.reasoning_content in a thinking turn")
        tm = timings or {}
        n_out = usage.get("completion_tokens", 0)
        dec_s = total - (ttft or total)
        row = {
            "turn": self.turn, "conv": conv, "kind": kind,
            "prompt_tokens": usage.get("prompt_tokens"),
            "cached_tokens": (usage.get("prompt_tokens_details") or {}).get("cached_tokens"),
            "checkpoint_hit": tm.get("checkpoint_hits"),
            "checkpoint_misses": tm.get("checkpoint_misses"),
            "checkpoint_tokens": tm.get("checkpoint_tokens"),
            "ttft_s": round(ttft, 4) if ttft is not None else None,
            "prefill_ms": round(tm.get("prompt_ms", 0.0), 1),
            "prefill_tokens": tm.get("prompt_n"),
            "decode_tok_s": round(tm.get("predicted_per_second", 0.0), 1),
            "client_tok_s": round((n_out - 1) / dec_s, 1) if n_out > 1 and dec_s > 0 else None,
            "completion_tokens": n_out, "finish_reason": finish,
            "checkpoint_mem_bytes": tm.get("checkpoint_mem_bytes"),
            "checkpoint_host_mem_bytes": tm.get("checkpoint_host_mem_bytes"),
            "breakdown": breakdown(tm),
        }
        self.rows.append(row)
        self.print_row(row)
        self.print_breakdown(row)
        if self.jsonl:
            self.jsonl.write(json.dumps(row) + "\n")
            self.jsonl.flush()
        msg = {"role": "assistant", "content": "".join(content)}
        text = "".join(reasoning)
        if text:
            # VS Code sends the reasoning back under both names
            msg["reasoning_content"] = text
            msg["reasoning"] = text
        if calls:
            msg["tool_calls"] = [{"id": e["id"], "type": "function",
                                  "function": {"name": e["name"], "arguments": e["arguments"]}}
                                 for _, e in sorted(calls.items())]
        return msg

    def print_breakdown(self, r):
        b = r.get("breakdown")
        if not b or self.a.no_breakdown:
            return
        calls = " ".join(f"{t}:{ms:.0f}" for t, ms in b["calls"][:8])
        if len(b["calls"]) > 8:
            calls += " ..."
        print(f"{'':>4} ttft ms: render {b['render_ms']:.1f} tokenize {b['tokenize_ms']:.1f}"
              f" | setup {b['setup_ms']:.1f} lookup {b['lookup_ms']:.1f}"
              f" restore {b['restore_ms']:.1f}{'@host' if b['restore_from_host'] else ''}"
              f"{'+kv' if b['restore_cross'] else ''}"
              f" | prefill {b['prefill_calls']} calls [{calls}] {b['prefill_call_ms']:.1f}"
              f" | save {b['saves']}/{b['save_ms']:.1f} spill {b['spills']}/{b['spill_ms']:.1f}"
              f" | first text +{b['first_text_tokens']} tok {b['first_text_ms']:.1f}"
              f" (decode step {b['first_decode_ms']:.1f})")

    def print_row(self, r):
        if len(self.rows) == 1:
            print(f"{'turn':>4} {'conv':<5} {'kind':<12} {'prompt':>7} {'reused':>7} "
                  f"{'ck_hit':>6} {'ck_tok':>7} {'ttft_s':>8} {'prefill_ms':>10} "
                  f"{'dec_tok/s':>9} {'cli_tok/s':>9}")

        def f(v, w, fmt=""):
            return f"{'-' if v is None else format(v, fmt):>{w}}"
        print(f"{r['turn']:>4} {r['conv']:<5} {r['kind']:<12} {f(r['prompt_tokens'], 7)} "
              f"{f(r['cached_tokens'], 7)} {f(r['checkpoint_hit'], 6)} "
              f"{f(r['checkpoint_tokens'], 7)} {f(r['ttft_s'], 8, '.3f')} "
              f"{f(r['prefill_ms'], 10, '.1f')} {f(r['decode_tok_s'], 9, '.1f')} "
              f"{f(r['client_tok_s'], 9, '.1f')}", flush=True)


def breakdown(tm):
    """The server's time-to-first-token breakdown (rs_gen.h), or None."""
    if "prefill_calls" not in tm:
        return None
    g = lambda k: tm.get(k) or 0
    return {
        "render_ms": g("render_ms"), "tokenize_ms": g("tokenize_ms"),
        "setup_ms": g("setup_ms"), "lookup_ms": g("lookup_ms"),
        "restore_ms": g("restore_ms"),
        "restore_from_host": bool(tm.get("restore_from_host")),
        "restore_cross": bool(tm.get("restore_cross")),
        "prefill_calls": g("prefill_calls"), "prefill_call_ms": g("prefill_call_ms"),
        "calls": [tuple(c) for c in tm.get("prefill_call_list") or []],
        "saves": g("checkpoint_saves"), "save_ms": g("checkpoint_save_ms"),
        "spills": g("checkpoint_spills"), "spill_ms": g("checkpoint_spill_ms"),
        "first_token_ms": g("first_token_ms"), "first_text_ms": g("first_text_ms"),
        "first_text_tokens": g("first_text_tokens"),
        "first_decode_ms": g("first_decode_ms"),
    }


def body_for(a, messages, thinking=True, tool_choice="auto", with_tools=True):
    b = {"model": a.model, "messages": messages, "stream": True,
         "stream_options": {"include_usage": True}, "n": 1}
    if with_tools:
        b["tools"] = TOOLS
        b["tool_choice"] = tool_choice
    if thinking:
        b["reasoning_effort"] = a.effort
        b["max_completion_tokens"] = a.max_tokens
    else:
        b["max_tokens"] = a.max_tokens
        b["temperature"] = 0.1
    if a.drop_reasoning:
        b["chat_template_kwargs"] = {"preserve_thinking": False}
    if messages:
        messages[-1] = dict(messages[-1], copilot_cache_control={"type": "ephemeral"})
    return b


def clean(messages):
    """The history as the next request sends it (cache markers only on the last)."""
    return [{k: v for k, v in m.items() if k != "copilot_cache_control"} for m in messages]


def words(n_tokens, tpc, seed):
    """About N_TOKENS tokens of prose-like text."""
    base = ("Please look at how the parser handles a line without an equals sign and make it "
            "report the line number; keep the change small and add a test for it. ")
    text = f"[{seed}] " + base * (int(n_tokens / tpc) // len(base) + 1)
    return text[:max(1, int(n_tokens / tpc))]


def run(a):
    global TOOLS
    TOOLS = tools(a.tools)
    rp = Replay(a)
    try:
        tpc = rp.tokens_per_char()
    except (OSError, http.client.HTTPException, RuntimeError, ValueError) as e:
        print(f"copilot-replay: {a.url}: {e}", file=sys.stderr)
        return 2
    files = FILLER * (int(a.context_tokens / tpc) // len(FILLER) + 1)
    files = files[:int(a.context_tokens / tpc)]
    system = ("You are an expert AI programming assistant, working with a user in the VS Code "
              "editor. Follow the user's requirements carefully. Use the tools to read and edit "
              "files; never guess file contents.\n\n<attachments>\n<attachment path=\"src/parse.c\">\n"
              + files + "\n</attachment>\n</attachments>")
    A = [{"role": "system", "content": system}]
    B = [{"role": "system", "content": system.replace("src/parse.c", "src/lex.c")}]
    user_msgs = [
        "The parser crashes on lines without '='. Find where and fix it.",
        "Now run the tests.",
        "Also make the error message name the file.",
        "Update the README section on configuration files.",
        "Can you double check the edge case of an empty value?",
        "Summarise what you changed.",
    ]
    # the schedule of conversation A: (kind, tool_choice)
    plan = []
    for i in range(a.turns):
        if i % 3 == 0:
            plan.append(("user", "auto"))
        elif i % 3 == 1:
            plan.append(("tool_named", TOOL_NAMES[i % a.tools]))
        else:
            plan.append(("tool_result", "auto"))
    edit_at = max(3, (2 * a.turns) // 3)
    n_user = 0
    pending_calls = None
    for i, (kind, tc) in enumerate(plan):
        if i == a.turns - 1:
            kind = "last_user"
        if kind in ("user", "last_user"):
            if pending_calls:
                for call in pending_calls:
                    A.append({"role": "tool", "tool_call_id": call["id"],
                              "content": f"ok: {call['function']['name']} done"})
            text = (words(a.last_user_tokens, tpc, i) if kind == "last_user"
                    else user_msgs[n_user % len(user_msgs)])
            n_user += 1
            A.append({"role": "user", "content": text})
            choice = "auto"
        elif kind == "tool_named":
            A.append({"role": "user", "content": f"Use {tc} on src/parse.c."})
            choice = {"type": "function", "function": {"name": tc}}
        else:
            if pending_calls:
                for call in pending_calls:
                    A.append({"role": "tool", "tool_call_id": call["id"],
                              "content": "line 42: if (eq == NULL)\n\t\treturn (-1);"})
            else:
                A.append({"role": "user", "content": "Continue."})
            choice = tc
        if i == edit_at:
            # the user edits an earlier message (their second, or their
            # first in a short session): the prompt leaves the cached
            # history there
            earlier = [m for m in A[:-1] if m["role"] == "user"]
            if earlier:
                m = earlier[1] if len(earlier) > 2 else earlier[0]
                m["content"] = "Edited: " + m["content"]
                kind = "edit_middle"
        reply = rp.stream(body_for(a, A, tool_choice=choice), "A", kind)
        A = clean(A)
        if reply is None:
            break
        A.append(reply)
        # a named tool_choice forces the call once the reasoning ends; a
        # reasoning that runs to max_completion_tokens ends without it
        pending_calls = reply.get("tool_calls")
        # interleaved: a title request and a second conversation
        if i == 1:
            rp.stream(body_for(a, [
                {"role": "system", "content": "Summarize the conversation in a short title."},
                {"role": "user", "content": user_msgs[0]}], thinking=False, with_tools=False),
                "title", "side")
        if a.second and i % 2 == 1 and i < a.turns - 1:
            # B's last turn has tool_choice none, which leaves the tools out
            # of the prompt (serving.md §2.3 step 10): a new prefix, so it
            # comes last, where it costs no later turn its reuse
            last_b = i + 2 >= a.turns - 1
            B.append({"role": "user", "content": user_msgs[(i // 2) % len(user_msgs)]})
            r = rp.stream(body_for(a, B, tool_choice="none" if last_b else "auto"), "B",
                          "none" if last_b else "user")
            B = clean(B)
            if r is not None:
                if r.get("tool_calls"):
                    r = dict(r)
                    del r["tool_calls"]
                    r["content"] = r["content"] or "Done."
                B.append(r)
    if a.cold and rp.rows and rp.rows[-1]["conv"] == "A":
        # the first tool's description opens the prompt after the effort
        # line: changing it leaves nothing to reuse
        TOOLS[0] = json.loads(json.dumps(TOOLS[0]))
        TOOLS[0]["function"]["description"] = "Cold: " + TOOLS[0]["function"]["description"]
        rp.stream(body_for(a, clean(A)[:-1]), "A", "cold_full")
    if rp.problems:
        for p in rp.problems:
            print(f"copilot-replay: {p}", file=sys.stderr)
        return 1
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", default="http://127.0.0.1:8081", help="server base URL")
    p.add_argument("--api-key", default=None)
    p.add_argument("--model", default="copilot-replay", help="model field (any)")
    p.add_argument("--turns", type=int, default=12, help="requests of conversation A (>= 4)")
    p.add_argument("--tools", type=int, default=30,
                   help=f"tools in every agent request (1..{len(TOOL_NAMES)})")
    p.add_argument("--context-tokens", type=int, default=2000,
                   help="tokens of attached files in the system prompt")
    p.add_argument("--last-user-tokens", type=int, default=200,
                   help="tokens of the last user message")
    p.add_argument("--max-tokens", type=int, default=48,
                   help="max_completion_tokens (thinking) / max_tokens (side) per request")
    p.add_argument("--effort", default="medium", help="reasoning_effort of thinking turns")
    p.add_argument("--no-second", dest="second", action="store_false",
                   help="no interleaved second conversation")
    p.add_argument("--drop-reasoning", action="store_true",
                   help="send chat_template_kwargs.preserve_thinking false (the template "
                        "then drops the reasoning of turns before the last user message)")
    p.add_argument("--cold", action="store_true",
                   help="end with the last request again on a prefix no cache holds")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per request")
    p.add_argument("--jsonl", default=None, help="also write one JSON object per request here")
    p.add_argument("--no-breakdown", action="store_true",
                   help="leave out the per-turn line of the server's ttft breakdown")
    a = p.parse_args()
    if a.turns < 4:
        p.error("--turns must be at least 4")
    if not 1 <= a.tools <= len(TOOL_NAMES):
        p.error(f"--tools must be in 1..{len(TOOL_NAMES)}")
    sys.exit(run(a))


if __name__ == "__main__":
    main()
