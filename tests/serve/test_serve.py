"""rs-serve end to end, with the official OpenAI Python SDK and curl.

The expected generations come from rs-generate (the engine's own answer to
the same request, greedy or with the same seed), never from rs-serve; the
expected error statuses and shapes from serving.md §4.6 and §6; the
context length from the model's reference configuration (hf-config.json).
All servers listen on 127.0.0.1 only, and every call has a timeout.
"""
import json
import math
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

import openai
import pytest

from conftest import BIN, ROOT, fixture, http, rs_generate, start

MSG = [{"role": "user", "content": "Hello, who are you?"}]
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]
NAMED = {"type": "function", "function": {"name": "get_weather"}}


def tiny_token(text):
    """Id of an added token in the tiny vocabulary (reference tokenizer)."""
    with open(fixture("tokenizer/tiny-tokenizer.json")) as f:
        for t in json.load(f)["added_tokens"]:
            if t["content"] == text:
                return t["id"]
    pytest.fail(f"{text} not in the tiny vocabulary")


def n_ctx_train():
    with open(fixture("tiny/hf-config.json")) as f:
        return json.load(f)["max_position_embeddings"]


def client(srv, **kw):
    kw.setdefault("api_key", "anything")
    return openai.OpenAI(base_url=srv.url + "/v1", max_retries=0, timeout=60, **kw)


def extra(obj, key):
    return (obj.model_extra or {}).get(key)


def collect(stream):
    """Content, reasoning, tool calls and the chunks of a chat stream."""
    chunks = list(stream)
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    reasoning = "".join(extra(c.choices[0].delta, "reasoning_content") or ""
                        for c in chunks if c.choices)
    calls = {}
    for c in chunks:
        for tc in (c.choices[0].delta.tool_calls or []) if c.choices else []:
            call = calls.setdefault(tc.index, {"id": None, "name": None, "arguments": ""})
            if tc.id:
                call["id"] = tc.id
            if tc.function and tc.function.name:
                call["name"] = tc.function.name
            if tc.function and tc.function.arguments:
                call["arguments"] += tc.function.arguments
    return content, reasoning, calls, chunks


# ---- the small endpoints ----

def test_health_models_metrics(server):
    status, headers, body = http(server.url + "/health")
    assert status == 200 and json.loads(body) == {"status": "ok"}
    assert headers["content-type"].startswith("application/json")
    models = client(server).models.list()
    assert len(models.data) == 1
    m = models.data[0]
    assert extra(m, "meta")["n_ctx"] == n_ctx_train()
    assert extra(m, "meta")["n_ctx_train"] == n_ctx_train()
    client(server).chat.completions.create(model="x", messages=MSG, max_tokens=2)
    status, headers, body = http(server.url + "/metrics")
    text = body.decode()
    assert status == 200 and headers["content-type"].startswith("text/plain")
    assert re.search(r'^rs_requests_total\{route="chat",code="200"\} [1-9]', text, re.M)
    assert re.search(r"^rs_completion_tokens_total [1-9]", text, re.M)
    assert re.search(r"^rs_time_to_first_token_seconds_count [1-9]", text, re.M)
    assert re.search(r"^rs_queue_depth 0$", text, re.M)
    assert "# TYPE rs_decode_tokens_per_second gauge" in text


def test_model_retrieve(server):
    """GET /v1/models/{id} (the SDK's models.retrieve): the served model's
    object, also with its id percent-encoded; any other id is a 404 that
    names the served one (it was "Unknown path ... Try POST")."""
    c = client(server)
    mid = c.models.list().data[0].id
    m = c.models.retrieve(mid)
    assert m.id == mid and m.object == "model"
    assert extra(m, "meta")["n_ctx"] == n_ctx_train()
    status, _, body = http(server.url + "/v1/models/" + urllib.parse.quote(mid, safe=""))
    assert status == 200 and json.loads(body)["id"] == mid
    with pytest.raises(openai.NotFoundError) as e:
        c.models.retrieve("no-such-model")
    err = e.value.body
    assert err["param"] == "model" and mid in err["message"], err


def test_completions_prompt_batch_of_one(server):
    """A legacy prompt as a one-element list (what LangChain's OpenAI LLM
    sends) is that prompt; two prompts are a clear 400."""
    c = client(server)
    a = c.completions.create(model="x", prompt="def f(", max_tokens=3, temperature=0)
    b = c.completions.create(model="x", prompt=["def f("], max_tokens=3, temperature=0)
    assert a.choices[0].text == b.choices[0].text
    assert a.usage.prompt_tokens == b.usage.prompt_tokens
    with pytest.raises(openai.BadRequestError) as e:
        c.completions.create(model="x", prompt=["a", "b"], max_tokens=3)
    assert "one prompt a request" in e.value.body["message"]
    r = c.chat.completions.create(model="x", messages=MSG, max_tokens=2.0)
    assert r.usage.completion_tokens <= 2


def test_access_log_and_sandbox(server):
    client(server).chat.completions.create(model="x", messages=MSG, max_tokens=3)
    lines = server.log_lines("POST /v1/chat/completions 200")
    assert lines and re.search(r"prompt=\d+ cached=\d+ completion=3 .*ttft_ms=.*finish=",
                               lines[-1])
    # the worker (the server's only child) runs under a seccomp filter
    children = server.children()
    assert children
    status = open(f"/proc/{children[0]}/status").read()
    assert re.search(r"^Seccomp:\s+2$", status, re.M), status


def test_ttft_after_prefill(server):
    """The access log's ttft_ms runs from arrival to the first text of the
    answer, after the queue and the prefill, which it logs (prefill,
    prefill_ms, prefill_tok_s); the role chunk that a stream sends on
    admission does not count.  /metrics' histogram says the same."""
    def ttft_count():
        text = http(server.url + "/metrics")[2].decode()
        assert "# HELP rs_time_to_first_token_seconds Seconds from receiving a request " \
            "to the first content, reasoning or tool-call token" in text
        return int(re.search(r"^rs_time_to_first_token_seconds_count (\d+)", text, re.M)[1])

    before = ttft_count()
    logged = len(server.log_lines("POST /v1/chat/completions 200"))
    long = [{"role": "user", "content": " ".join(f"word{i}" for i in range(120))}]
    s = client(server).chat.completions.create(model="x", messages=long, max_tokens=16,
                                               temperature=0, stream=True)
    deltas = [c.choices[0].delta for c in s if c.choices]
    assert deltas[0].role == "assistant" and not deltas[0].content
    assert any(d.content or extra(d, "reasoning_content") for d in deltas[1:])
    end = time.monotonic() + 10     # the log line follows the last byte
    while (len(server.log_lines("POST /v1/chat/completions 200")) == logged and
           time.monotonic() < end):
        time.sleep(0.01)
    line = server.log_lines("POST /v1/chat/completions 200")[-1]
    f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
    assert int(f["prefill"]) == int(f["prompt"]) - int(f["cached"]) > 100, line
    assert float(f["prefill_ms"]) > 0 and float(f["prefill_tok_s"]) > 0, line
    # the log rounds to 0.1 ms
    assert float(f["ttft_ms"]) >= float(f["queue_ms"]) + float(f["prefill_ms"]) - 0.2, line
    assert float(f["ttft_ms"]) <= float(f["total_ms"]) + 0.1, line
    assert ttft_count() == before + 1


def test_ttft_breakdown(server):
    """Where the time to first token went, in the stream's last timings and
    in the access log's ttft=... field: the prefill's engine calls cover
    the prompt tokens run, their time is part of prompt_ms, and prompt_ms
    is set-up, lookup, restore, calls and saves."""
    logged = len(server.log_lines("POST /v1/chat/completions 200"))
    msgs = [{"role": "user", "content": " ".join(f"term{i}" for i in range(90))}]
    s = client(server).chat.completions.create(
        model="x", messages=msgs, max_tokens=4, temperature=0, stream=True,
        stream_options={"include_usage": True})
    t = None
    for c in s:
        if extra(c, "timings"):
            t = extra(c, "timings")
    assert t is not None
    calls = t["prefill_call_list"]
    assert t["prefill_calls"] == len(calls) >= 1, t
    assert sum(n for n, _ in calls) == t["prompt_n"], t
    assert abs(sum(ms for _, ms in calls) - t["prefill_call_ms"]) < 0.01, t
    parts = (t["setup_ms"] + t["lookup_ms"] + t["restore_ms"] + t["prefill_call_ms"] +
             t.get("checkpoint_save_ms", 0))
    assert parts <= t["prompt_ms"] + 0.01 and t["prompt_ms"] - parts < 5, t
    for k in ("render_ms", "tokenize_ms", "first_token_ms", "first_text_ms",
              "first_decode_ms"):
        assert t[k] >= 0, (k, t)
    assert t["tokenize_ms"] > 0 and t["first_text_tokens"] >= 1, t
    end = time.monotonic() + 10
    while (len(server.log_lines("POST /v1/chat/completions 200")) == logged and
           time.monotonic() < end):
        time.sleep(0.01)
    line = server.log_lines("POST /v1/chat/completions 200")[-1]
    m = re.search(r" ttft=prep:[\d.]+\(render:[\d.]+,tok:[\d.]+\),wait:-?[\d.]+,"
                  r"pick:[\d.]+,setup:[\d.]+,lookup:[\d.]+,restore:[\d.]+(@host)?(\+kv)?,"
                  r"prefill:(\d+)/(\d+)/[\d.]+\(.*\),save:\d+/[\d.]+,spill:\d+/[\d.]+,"
                  r"first:[\d.]+\(\+\d+:[\d.]+\)$", line)
    assert m, line
    assert int(m[3]) == t["prefill_calls"] and int(m[4]) == t["prompt_n"], line


def test_sandbox_violation_ends_server(tmp_path_factory):
    """A system call outside the filter (RS_SERVE_TEST_VIOLATION=1 makes
    the engine thread call getsid at its first job) ends the worker; the
    parent's last line names the call and it exits 2, not 0 and not by
    restarting the worker."""
    srv = start(tmp_path_factory, name="violation", env={"RS_SERVE_TEST_VIOLATION": "1"})
    try:
        with pytest.raises(openai.APIConnectionError):
            client(srv).chat.completions.create(
                model="x", messages=MSG, max_tokens=2)
        rc = srv.proc.wait(timeout=20)
    finally:
        srv.stop()
    last = srv.read_log().splitlines()[-1]
    assert rc == 2, srv.read_log()
    assert re.fullmatch(r"rs-serve: the worker was stopped by the sandbox: it made system "
                        r"call \d+ \(getsid\), which the seccomp filter does not allow; "
                        r"exiting .*", last), srv.read_log()


# ---- generation against rs-generate ----

def test_chat_nonstream_greedy(server):
    req = dict(messages=MSG, max_tokens=24, temperature=0)
    ref = rs_generate(req)
    r = client(server).chat.completions.create(model="tiny", **req)
    msg = r.choices[0].message
    assert r.object == "chat.completion" and r.id.startswith("chatcmpl-")
    assert msg.role == "assistant"
    assert msg.content == ref["text"]
    assert (extra(msg, "reasoning_content") or "") == ref["reasoning"]
    assert r.choices[0].finish_reason == ref["finish_reason"]
    assert r.usage.prompt_tokens == ref["usage"]["prompt_tokens"]
    assert r.usage.completion_tokens == ref["usage"]["completion_tokens"] == 24
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    assert extra(r, "timings")["predicted_n"] == 24


def test_chat_stream_greedy(server):
    req = dict(messages=MSG, max_tokens=24, temperature=0)
    ref = rs_generate(req)
    s = client(server).chat.completions.create(
        model="tiny", stream=True, stream_options={"include_usage": True}, **req)
    content, reasoning, calls, chunks = collect(s)
    assert content == ref["text"] and reasoning == ref["reasoning"] and not calls
    assert len({c.id for c in chunks}) == 1 and len({c.created for c in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    finish = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert len(finish) == 1 and finish[0].choices[0].finish_reason == ref["finish_reason"]
    # the usage chunk comes last, after every chunk that carried usage null
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 24
    assert all(c.usage is None for c in chunks[:-1])
    assert extra(chunks[-1], "timings")["predicted_n"] == 24


def test_chat_stream_curl(server):
    body = json.dumps(dict(messages=MSG, max_tokens=6, temperature=0, stream=True))
    p = subprocess.run(["curl", "-sS", "-i", "-N", "--max-time", "60",
                        server.url + "/v1/chat/completions", "-d", body],
                       capture_output=True, text=True, timeout=90)
    assert p.returncode == 0, p.stderr
    head, _, sse = p.stdout.partition("\n\n")   # text mode: CR LF read as LF
    assert head.startswith("HTTP/1.1 200")
    assert re.search(r"^content-type: text/event-stream", head, re.M | re.I)
    assert re.search(r"^transfer-encoding: chunked", head, re.M | re.I)
    events = [e for e in sse.split("\n\n") if e]
    assert all(e.startswith("data: ") for e in events)
    assert events[-1] == "data: [DONE]"
    chunks = [json.loads(e[6:]) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    ref = rs_generate(dict(messages=MSG, max_tokens=6, temperature=0))
    text = "".join(c["choices"][0]["delta"].get("reasoning_content", "") for c in chunks)
    assert text == ref["reasoning"]
    assert "timings" in chunks[-1]


def test_chat_nonstream_curl(server):
    req = dict(messages=MSG, max_tokens=5, temperature=0, reasoning_effort="high")
    p = subprocess.run(["curl", "-sS", "--max-time", "60", "-H",
                        "Content-Type: application/json",
                        server.url + "/chat/completions", "-d", json.dumps(req)],
                       capture_output=True, text=True, timeout=90)
    r = json.loads(p.stdout)
    ref = rs_generate(req)
    assert ref["reasoning"]
    assert r["choices"][0]["message"]["reasoning_content"] == ref["reasoning"]
    assert r["usage"]["completion_tokens"] == 5


def test_seeded_sampling(server):
    req = dict(messages=MSG, max_tokens=16, temperature=0.9, top_p=0.95, seed=1234)
    ref = rs_generate(req)
    a = client(server).chat.completions.create(model="tiny", **req)
    b = client(server).chat.completions.create(model="tiny", **req)
    for r in (a, b):
        assert (extra(r.choices[0].message, "reasoning_content") or "") == ref["reasoning"]
        assert r.choices[0].message.content == ref["text"]


def test_text_completion(server):
    req = dict(prompt="The capital of France is", max_tokens=12, temperature=0)
    ref = rs_generate(req)
    c = client(server)
    r = c.completions.create(model="tiny", **req)
    assert r.object == "text_completion" and r.choices[0].text == ref["text"]
    assert r.choices[0].finish_reason == ref["finish_reason"]
    s = c.completions.create(model="tiny", stream=True, **req)
    assert "".join(ch.choices[0].text for ch in s if ch.choices) == ref["text"]


@pytest.mark.parametrize("think", [True, False])
def test_reasoning_switch(server, think):
    req = dict(messages=MSG, max_tokens=16, temperature=0,
               chat_template_kwargs={"enable_thinking": think})
    ref = rs_generate(req)
    r = client(server).chat.completions.create(
        model="tiny", messages=MSG, max_tokens=16, temperature=0,
        extra_body={"chat_template_kwargs": {"enable_thinking": think}})
    msg = r.choices[0].message
    assert (extra(msg, "reasoning_content") or "") == ref["reasoning"]
    assert msg.content == ref["text"]
    if think:
        assert ref["reasoning"]
    else:
        assert not ref["reasoning"] and extra(msg, "reasoning_content") is None
    # reasoning_effort "none" is thinking off (§2.5)
    if not think:
        r2 = client(server).chat.completions.create(
            model="tiny", messages=MSG, max_tokens=16, temperature=0,
            reasoning_effort="none")
        assert r2.choices[0].message.content == msg.content


def test_forced_tool_call(server):
    eog = tiny_token("<|im_end|>")
    req = dict(messages=[{"role": "user", "content": "Weather in Paris?"}], tools=TOOLS,
               tool_choice=NAMED, logit_bias={str(eog): 100}, max_tokens=30, temperature=0)
    ref = rs_generate({**req, "enable_thinking": False})
    assert ref["finish_reason"] == "tool_calls" and len(ref["tool_calls"]) == 1
    c = client(server)
    kw = dict(model="tiny", extra_body={"enable_thinking": False}, **req)
    r = c.chat.completions.create(**kw)
    msg = r.choices[0].message
    assert r.choices[0].finish_reason == "tool_calls"
    assert msg.content is None
    assert [(t.function.name, t.function.arguments) for t in msg.tool_calls] == \
        [(t["function"]["name"], t["function"]["arguments"]) for t in ref["tool_calls"]]
    assert re.fullmatch(r"call_[A-Za-z0-9]{24}", msg.tool_calls[0].id)
    # streamed: one call, its id and name in the first fragment only
    content, reasoning, calls, chunks = collect(c.chat.completions.create(stream=True, **kw))
    assert list(calls) == [0] and calls[0]["name"] == "get_weather"
    assert calls[0]["arguments"] == msg.tool_calls[0].function.arguments
    frags = [tc for ch in chunks if ch.choices for tc in ch.choices[0].delta.tool_calls or []]
    assert frags[0].id and frags[0].type == "function" and frags[0].function.arguments == ""
    assert all(f.id is None for f in frags[1:])
    finish = [ch.choices[0].finish_reason for ch in chunks if ch.choices]
    assert finish[-1] == "tool_calls"


def test_required_tool_choice_seeded(server):
    req = dict(messages=[{"role": "user", "content": "Weather in Paris?"}], tools=TOOLS,
               tool_choice="required", max_tokens=40, temperature=0.7, seed=7,
               parallel_tool_calls=False)
    ref = rs_generate(req)
    r = client(server).chat.completions.create(model="tiny", **req)
    msg = r.choices[0].message
    got = [(t.function.name, t.function.arguments) for t in msg.tool_calls or []]
    assert got == [(t["function"]["name"], t["function"]["arguments"])
                   for t in ref["tool_calls"]]
    assert (extra(msg, "reasoning_content") or "") == ref["reasoning"]
    assert r.choices[0].finish_reason == ref["finish_reason"]


TOOLS2 = TOOLS + [{"type": "function", "function": {"name": "get_time"}}]


@pytest.mark.parametrize("choice", ["required", {"type": "function",
                                                 "function": {"name": "get_time"}}])
@pytest.mark.parametrize("think", [False, True])
def test_tool_choice_constrained(server, choice, think):
    """#15: required and named yield a valid call of a listed tool whatever
    the model writes (the tiny model's weights are noise: at temperature 1
    it wanders, ends early, writes names of its own), streamed or not, with
    max_tokens too small for the call's opening too."""
    c = client(server)
    for seed in range(3):
        for mt in (2, 40):
            kw = dict(model="tiny", messages=[{"role": "user", "content": "Weather?"}],
                      tools=TOOLS2, tool_choice=choice, max_tokens=mt, temperature=1.0,
                      seed=seed, extra_body={"enable_thinking": think})
            msg = c.chat.completions.create(**kw).choices[0].message
            assert msg.tool_calls, (seed, mt, msg)
            names = {"get_time"} if isinstance(choice, dict) else {"get_time", "get_weather"}
            assert msg.tool_calls[0].function.name in names
            for t in msg.tool_calls:
                assert isinstance(json.loads(t.function.arguments), dict)
            _, _, calls, _ = collect(c.chat.completions.create(stream=True, **kw))
            assert [(calls[i]["name"], calls[i]["arguments"]) for i in sorted(calls)] == \
                [(t.function.name, t.function.arguments) for t in msg.tool_calls]


# ---- thinking: off unless the request asks (§2.5) ----
#
# The expected prompts are the fixtures' renderings by real Jinja2: the
# Qwen3.5 cases for the tiny GGUF's own template, the Qwen3.8 cases for a
# model that rs-bench --synth writes (it names the Qwen3.8 template).

@pytest.fixture(scope="module")
def synth38(tmp_path_factory):
    """A synthetic tiny model of the served template, Qwen3.8."""
    path = str(tmp_path_factory.mktemp("synth") / "tiny38.gguf")
    p = subprocess.run([os.path.join(BIN, "rs-bench"), "--synth", "tiny", "-o", path],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return path


def qwen38_case(name):
    with open(fixture("chat/qwen38-template-cases.json")) as f:
        for c in json.load(f)["cases"]:
            if c["name"] == name:
                return c
    pytest.fail(f"qwen38-template-cases.json: no case {name}")


def chat(srv, req):
    """REQ (a dict, fields the SDK does not know included) to SRV."""
    rest = {k: v for k, v in req.items() if k != "messages"}
    return client(srv).chat.completions.create(model="x", messages=req["messages"],
                                               extra_body=rest)


def rendered(srv, messages, fields):
    st, _, b = http(srv.url + "/apply-template", "POST", {"messages": messages, **fields})
    assert st == 200, b
    return json.loads(b)["prompt"]


# (request fields, the fixture case whose template arguments they mean)
THINK38 = [
    ({}, "thinking_off"),                       # E4: no effort, no flag
    ({"reasoning_effort": "none"}, "thinking_off"),
    ({"reasoning": {"effort": "none"}}, "thinking_off"),
    ({"enable_thinking": False, "reasoning_effort": "low"}, "thinking_off_ignores_effort"),
    ({"reasoning_effort": "minimal"}, "effort_low_with_system"),
    ({"reasoning_effort": "low"}, "effort_low_with_system"),
    ({"reasoning_effort": "medium"}, "effort_medium_with_system"),
    ({"reasoning_effort": "high"}, "effort_xhigh_explicit"),
    ({"reasoning_effort": "xhigh"}, "effort_xhigh_explicit"),
    ({"reasoning_effort": "max"}, "effort_xhigh_explicit"),
    ({"reasoning": {"effort": "medium"}}, "effort_medium_no_system"),
    ({"chat_template_kwargs": {"reasoning_effort": "low"}}, "effort_low_with_system"),
    ({"enable_thinking": True}, "thinking_on_explicit_true"),
    ({"chat_template_kwargs": {"enable_thinking": True}}, "thinking_on_explicit_true"),
    ({"chat_template_kwargs": {"enable_thinking": True}, "reasoning_effort": "none"},
     "thinking_on_explicit_true"),
]


def test_thinking_rule_qwen38(tmp_path_factory, synth38):
    srv = start(tmp_path_factory, "-m", synth38, name="synth38")
    try:
        for fields, name in THINK38:
            c = qwen38_case(name)
            assert rendered(srv, c["messages"], fields) == c["expected"], (fields, name)
    finally:
        srv.stop_clean()


def test_thinking_rule_qwen35(server):
    """The tiny GGUF's template (Qwen3.5) has a switch and no levels: any
    effort but none turns it on, and nothing turns it on by default."""
    with open(fixture("chat/qwen35-template-cases.json")) as f:
        cases = json.load(f)["cases"]
    hi = [{"role": "user", "content": "Hi"}]
    on = next(c["rendered"] for c in cases
              if c["messages"] == hi and c["kwargs"] == {"enable_thinking": True})
    off = next(c["rendered"] for c in cases
               if c["messages"] == hi and c["kwargs"] == {"enable_thinking": False})
    assert rendered(server, hi, {}) == off
    assert rendered(server, hi, {"reasoning_effort": "none"}) == off
    assert rendered(server, hi, {"enable_thinking": True}) == on
    for e in ["minimal", "low", "medium", "high", "xhigh", "max"]:
        assert rendered(server, hi, {"reasoning_effort": e}) == on, e
    # a plain request answers as content
    r = client(server).chat.completions.create(model="x", messages=hi, max_tokens=8, seed=1)
    assert r.usage.completion_tokens_details.reasoning_tokens == 0
    assert extra(r.choices[0].message, "reasoning_content") is None


def test_thinking_default_flags(tmp_path_factory, synth38):
    """--default-enable-thinking and --default-reasoning-effort (and the old
    names --no-thinking, --reasoning-effort) set what a request that does
    not ask gets; rs-generate takes the same flags and agrees."""
    runs = [
        (["--default-enable-thinking", "true", "--default-reasoning-effort", "low"],
         [({}, "effort_low_with_system"),
          ({"enable_thinking": True}, "effort_low_with_system"),
          ({"reasoning_effort": "none"}, "thinking_off"),
          ({"enable_thinking": False}, "thinking_off"),
          ({"reasoning_effort": "high"}, "effort_xhigh_explicit")]),
        (["--default-enable-thinking", "true"],
         [({}, "default_single_user"), ({"reasoning_effort": "medium"}, "effort_medium_no_system")]),
        (["--default-enable-thinking", "false", "--default-reasoning-effort", "medium"],
         [({}, "thinking_off"), ({"enable_thinking": True}, "effort_medium_with_system")]),
        (["--no-thinking", "--reasoning-effort", "medium"],
         [({}, "thinking_off"), ({"enable_thinking": True}, "effort_medium_with_system")]),
    ]
    # rs-generate has only the new names
    new_names = {"--no-thinking": ["--default-enable-thinking", "false"],
                 "--reasoning-effort": ["--default-reasoning-effort"]}
    for flags, rows in runs:
        gen_flags = [a for f in flags for a in new_names.get(f, [f])]
        srv = start(tmp_path_factory, "-m", synth38, *flags, name="flags")
        try:
            for fields, name in rows:
                c = qwen38_case(name)
                assert rendered(srv, c["messages"], fields) == c["expected"], (flags, fields)
                req = dict(messages=c["messages"], max_tokens=6, temperature=0, **fields)
                ref = rs_generate(req, "-m", synth38, *gen_flags)
                r = chat(srv, req)
                assert r.usage.prompt_tokens == ref["usage"]["prompt_tokens"]
                assert (r.choices[0].message.content or "") == ref["text"]
                assert (extra(r.choices[0].message, "reasoning_content") or "") == \
                    ref["reasoning"]
                assert bool(ref["reasoning"]) == c["expected"].endswith("<think>\n")
        finally:
            srv.stop_clean()


def readme_request():
    """The request of README.md's first chat example."""
    with open(os.path.join(ROOT, "README.md")) as f:
        m = re.search(r"/v1/chat/completions \\\n\s*-d '([^']*)'", f.read())
    assert m, "README.md: no chat example"
    return json.loads(m.group(1))


def test_readme_plain_request(tmp_path_factory, synth38):
    """README's plain request, to the model its quick start makes: the
    answer is content, with no thinking."""
    req = readme_request()
    assert set(req) == {"messages", "max_tokens"}
    srv = start(tmp_path_factory, "-m", synth38, name="readme")
    try:
        r = client(srv).chat.completions.create(model="x", seed=1, **req)
        msg = r.choices[0].message
        assert r.choices[0].finish_reason == "length"
        assert msg.content and extra(msg, "reasoning_content") is None
        assert r.usage.completion_tokens_details.reasoning_tokens == 0
        assert r.usage.completion_tokens == req["max_tokens"]
    finally:
        srv.stop_clean()


def test_thinking_alternates_with_cache(tmp_path_factory, synth38):
    """One conversation with and without thinking by turns: every answer is
    rs-generate's for that request alone, and the cache serves what the
    prompts share (medium adds no instruction: only the end differs; low
    changes the prompt's start)."""
    srv = start(tmp_path_factory, "-m", synth38, name="alt")
    try:
        turns = [{"role": "system", "content": "You are terse."},
                 {"role": "user", "content": "Hello"}]
        for i, fields in enumerate([{}, {"reasoning_effort": "medium"}, {},
                                    {"reasoning_effort": "low"}, {},
                                    {"enable_thinking": True}]):
            if i == 2:
                turns += [{"role": "assistant", "content": "Hi."},
                          {"role": "user", "content": "More"}]
            req = dict(messages=turns, max_tokens=6, temperature=0, **fields)
            ref = rs_generate(req, "-m", synth38)
            r = chat(srv, req)
            msg = r.choices[0].message
            assert (msg.content or "") == ref["text"], (i, fields)
            assert (extra(msg, "reasoning_content") or "") == ref["reasoning"], (i, fields)
            assert r.usage.prompt_tokens == ref["usage"]["prompt_tokens"]
            if i in (1, 2):
                assert r.usage.prompt_tokens_details.cached_tokens > 4, (i, fields)
    finally:
        srv.stop_clean()


# ---- the debugging endpoints (§4.1) ----

def test_apply_template(server):
    """/apply-template renders as real Jinja2 does with the template
    embedded in the tiny GGUF (the fixture's renderings)."""
    with open(fixture("chat/qwen35-template-cases.json")) as f:
        cases = json.load(f)["cases"]
    assert cases
    for c in cases:
        body = {"messages": c["messages"], "add_generation_prompt": c["add_generation_prompt"]}
        if "tools" in c:
            body["tools"] = c["tools"]
        # the raw template thinks when enable_thinking is undefined; the
        # server always passes a value, off unless asked (serving.md §2.2,
        # §2.5), so a case without one asks for the raw template's default
        body["chat_template_kwargs"] = {"enable_thinking": True, **c["kwargs"]}
        st, _, b = http(server.url + "/apply-template", "POST", body)
        assert st == 200, b
        assert json.loads(b)["prompt"] == c["rendered"]


def test_tokenize_detokenize(server, tmp_path_factory):
    """/tokenize and /detokenize against the reference tokenizer's ids for
    the tiny vocabulary, with the default NFC normalization (serving.md
    §1.2); --no-nfc keeps decomposed text raw and gives other ids."""
    import unicodedata
    with open(fixture("tokenizer/tokenizer-cases.json")) as f:
        cases = json.load(f)["cases"]
    for c in cases:
        st, _, b = http(server.url + "/tokenize", "POST", {"content": c["text"]})
        assert st == 200 and json.loads(b)["tokens"] == c["tiny"], c["text"]
        st, _, b = http(server.url + "/detokenize", "POST", {"tokens": c["tiny"]})
        assert st == 200 and json.loads(b)["content"] == c["tiny_decoded"]
    st, _, b = http(server.url + "/detokenize", "POST", {"tokens": [1, -2]})
    assert st == 400 and err(400, b)["param"] == "tokens"
    st, _, b = http(server.url + "/tokenize", "POST", {"content": 5})
    assert st == 400 and err(400, b)["param"] == "content"
    srv = start(tmp_path_factory, "--no-nfc", name="nonfc")
    try:
        nfd = [c for c in cases if unicodedata.normalize("NFC", c["text"]) != c["text"]]
        assert nfd
        for c in nfd:
            st, _, b = http(srv.url + "/tokenize", "POST", {"content": c["text"]})
            assert st == 200 and json.loads(b)["tokens"] != c["tiny"], c["text"]
    finally:
        srv.stop_clean()


# ---- logprobs (§4.3) ----

def load_npy(path):
    """A float32 .npy file as (shape, flat list), read by hand (NumPy's
    format: magic, version, header length, a dict literal, then data)."""
    import array
    import ast
    with open(path, "rb") as f:
        raw = f.read()
    assert raw[:6] == b"\x93NUMPY"
    hlen_size = 2 if raw[6] == 1 else 4
    hlen = int.from_bytes(raw[8:8 + hlen_size], "little")
    start = 8 + hlen_size
    head = ast.literal_eval(raw[start:start + hlen].decode("latin-1"))
    assert head["descr"] == "<f4" and not head["fortran_order"]
    data = array.array("f")
    data.frombytes(raw[start + hlen:])
    return head["shape"], data


def log_softmax(row):
    """log softmax of ROW in double, the maximum subtracted first."""
    m = max(row)
    lse = m + math.log(math.fsum(math.exp(x - m) for x in row))
    return [x - lse for x in row]


def check_chat_entry(e, greedy):
    """One entry of choices[].logprobs.content (OpenAI's shape)."""
    assert isinstance(e.token, str) and isinstance(e.bytes, list)
    assert all(0 <= b < 256 for b in e.bytes)
    assert e.logprob <= 0
    tops = [t.logprob for t in e.top_logprobs]
    assert tops == sorted(tops, reverse=True)
    assert math.fsum(math.exp(t) for t in tops) <= 1 + 1e-6
    if greedy and tops:
        # the greedy token is the most likely one (chat leaves out the
        # tokens it never samples, rs-serve(1))
        assert e.logprob == tops[0] and e.top_logprobs[0].token == e.token


def test_chat_logprobs(server):
    c = client(server)
    kw = dict(model="tiny", messages=MSG, max_tokens=12, temperature=0,
              logprobs=True, top_logprobs=3, extra_body={"enable_thinking": False})
    r = c.chat.completions.create(**kw)
    lp = r.choices[0].logprobs.content
    assert len(lp) == r.usage.completion_tokens == 12    # length: no ending token
    for e in lp:
        assert len(e.top_logprobs) == 3
        check_chat_entry(e, greedy=True)
    # the tokens' bytes are the content, in order
    assert b"".join(bytes(e.bytes) for e in lp).decode() == r.choices[0].message.content
    # streamed: each chunk's entries are those of its tokens; together the
    # same list as the whole body's
    content, reasoning, calls, chunks = collect(c.chat.completions.create(stream=True, **kw))
    streamed = [e for ch in chunks if ch.choices and ch.choices[0].logprobs
                for e in ch.choices[0].logprobs.content]
    assert content == r.choices[0].message.content
    assert b"".join(bytes(e.bytes) for e in streamed).decode() == content
    assert [(e.token, e.logprob, [t.logprob for t in e.top_logprobs]) for e in streamed] == \
        [(e.token, e.logprob, [t.logprob for t in e.top_logprobs]) for e in lp]
    # without logprobs: null
    r = c.chat.completions.create(model="tiny", messages=MSG, max_tokens=2)
    assert r.choices[0].logprobs is None


def test_chat_logprobs_reasoning(server):
    """Thinking on: every token has an entry, reasoning ones included (the
    documented choice), and sampling at temperature 1 changes nothing in
    how logprobs are computed."""
    r = client(server).chat.completions.create(
        model="tiny", messages=MSG, max_tokens=10, seed=3, logprobs=True,
        reasoning_effort="high")
    lp = r.choices[0].logprobs.content
    assert r.choices[0].finish_reason == "length"
    assert len(lp) == r.usage.completion_tokens == 10
    assert extra(r.choices[0].message, "reasoning_content")
    for e in lp:
        assert e.top_logprobs == []
        check_chat_entry(e, greedy=False)


def test_completion_logprobs(server):
    c = client(server)
    req = dict(model="tiny", prompt="The capital of France is", max_tokens=8,
               temperature=0, logprobs=3)
    r = c.completions.create(**req)
    lp = r.choices[0].logprobs
    text = r.choices[0].text
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == \
        len(lp.text_offset) == 8
    assert "".join(lp.tokens) == text
    for tok, l, top, off in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs, lp.text_offset):
        assert l <= 0 and text[off:off + len(tok)] == tok
        # the top 3 and the chosen token; greedy: the chosen one is the best
        assert 3 <= len(top) <= 4 and top[tok] == l == max(top.values())
        assert math.fsum(math.exp(v) for v in top.values()) <= 1 + 1e-6
    s = c.completions.create(stream=True, **req)
    toks, lps, offs = [], [], []
    for ch in s:
        if ch.choices and ch.choices[0].logprobs:
            toks += ch.choices[0].logprobs.tokens
            lps += ch.choices[0].logprobs.token_logprobs
            offs += ch.choices[0].logprobs.text_offset
    assert (toks, lps, offs) == (lp.tokens, lp.token_logprobs, lp.text_offset)


def test_logprobs_against_rs_verify(server, tmp_path):
    """The logprobs of a text completion from the engine's own logits:
    rs-verify scores prompt + output in one pass and writes every row; the
    log-softmax is computed here.  The prompt is given as ids, and
    rs-generate (greedy, same file and backend) gives the output's ids."""
    prompt = [2000, 2023, 778, 350, 1890]
    req = dict(prompt=prompt, max_tokens=6, temperature=0)
    out = [l["token"] for l in rs_generate(req, stream=True) if "token" in l]
    assert len(out) == 6
    r = client(server).completions.create(model="tiny", logprobs=5, **req)
    lp = r.choices[0].logprobs
    npy = str(tmp_path / "logits.npy")
    p = subprocess.run([os.path.join(BIN, "rs-verify"), "-q", "-m",
                        fixture("tiny/model-q8_0.gguf"), "--backend", "cpu", "-t", "1",
                        "--tokens", " ".join(map(str, prompt + out)), "--logits", npy],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    (rows, v), data = load_npy(npy)
    assert rows == len(prompt) + len(out)
    for i, t in enumerate(out):
        row = data[(len(prompt) - 1 + i) * v:(len(prompt) + i) * v]
        ref = log_softmax(row)
        # %.9g on the wire: 9 significant digits of values below 20
        assert abs(lp.token_logprobs[i] - ref[t]) <= 1e-6, (i, lp.token_logprobs[i], ref[t])
        best = sorted(ref, reverse=True)[:5]
        got = sorted(lp.top_logprobs[i].values(), reverse=True)[:5]
        assert all(abs(a - b) <= 1e-6 for a, b in zip(got, best)), (i, got, best)


def test_logprobs_with_drafts(server, plain_server, tmp_path_factory):
    """Speculative decoding (--draft, and the default drafter): a token
    taken as an accepted draft gets the logprobs of its own position in
    the verification pass, so the entries equal plain decoding's (the CPU
    engine is batch-invariant)."""
    with open(fixture("tiny/reference.json")) as f:
        ref = json.load(f)
    p = ref["prompts"][ref["greedy"]["prompt_index"]]
    # the reference's greedy sequence, then its prompt again: lookups hit
    body = dict(prompt=p + ref["greedy"]["tokens"] + p, max_tokens=40, temperature=0,
                logprobs=2)
    srv = start(tmp_path_factory, "--draft", "4", name="draft")
    try:
        st, _, b = http(srv.url + "/v1/completions", "POST", body)
        assert st == 200, b
        spec = json.loads(b)
    finally:
        srv.stop_clean()
    st, _, b = http(plain_server.url + "/v1/completions", "POST", body)
    plain = json.loads(b)
    st, _, b = http(server.url + "/v1/completions", "POST", body)
    auto = json.loads(b)
    assert "draft" not in plain["timings"]
    assert spec["timings"]["draft_n_accepted"] > 0
    assert auto["timings"]["draft"] == "mtp+ngram"
    for r in (spec, auto):
        assert r["choices"][0]["logprobs"] == plain["choices"][0]["logprobs"]
    assert len(plain["choices"][0]["logprobs"]["tokens"]) == 40


def test_default_drafter(server, plain_server, tmp_path_factory):
    """Without --draft the server drafts with mtp+ngram on a model with an
    MTP block, up to 4 tokens a pass or --draft-max alone; the startup
    line says which, and --draft none says none."""
    assert server.log_lines("drafts mtp+ngram, up to 4 a pass)")
    assert plain_server.log_lines("drafts none)")
    srv = start(tmp_path_factory, "--draft-max", "2", name="draftmax")
    try:
        assert srv.log_lines("drafts mtp+ngram, up to 2 a pass)")
    finally:
        srv.stop_clean()


def test_drafters_timings_metrics(plain_server, tmp_path_factory):
    """--draft mtp+ngram --draft-max 3: the same completion as plain
    decoding, greedy and seeded, the drafter's counts, acceptance per
    position and draft time in the response's timings, and the draft
    series in /metrics."""
    with open(fixture("tiny/reference.json")) as f:
        ref = json.load(f)
    p = ref["prompts"][ref["greedy"]["prompt_index"]]
    bodies = [dict(prompt=p + ref["greedy"]["tokens"] + p, max_tokens=40, temperature=0),
              dict(prompt=p, max_tokens=40, temperature=0.8, seed=4)]
    srv = start(tmp_path_factory, "--draft", "mtp+ngram", "--draft-max", "3",
                name="mtpdraft")
    try:
        for body in bodies:
            st, _, b = http(srv.url + "/v1/completions", "POST", body)
            assert st == 200, b
            spec = json.loads(b)
            st, _, b = http(plain_server.url + "/v1/completions", "POST", body)
            plain = json.loads(b)
            assert spec["choices"][0]["text"] == plain["choices"][0]["text"]
            t = spec["timings"]
            assert t["draft"] == "mtp+ngram"
            assert 0 <= t["draft_n_accepted"] <= t["draft_n"] and t["draft_n"] > 0
            assert 1 <= len(t["draft_acceptance"]) <= 3
            assert all(0 <= a <= 1 for a in t["draft_acceptance"])
            assert t["draft_ms"] >= 0 and t["draft_catchup_ms"] >= 0
            # 0: no count paid at the run's acceptance (a probe round in 8)
            assert 0 <= t["draft_k"] <= 3
        text = http(srv.url + "/metrics")[2].decode()
    finally:
        srv.stop_clean()
    assert re.search(r"^rs_draft_tokens_total [1-9]", text, re.M)
    assert re.search(r"^rs_draft_accepted_tokens_total \d", text, re.M)
    assert re.search(r'^rs_draft_position_tokens_total\{position="1"\} [1-9]', text, re.M)
    assert re.search(r'^rs_draft_position_accepted_total\{position="1"\} \d', text, re.M)
    assert "rs_draft_" not in http(plain_server.url + "/metrics")[2].decode()


def test_slots_keep_two_conversations(tmp_path_factory):
    """--slots 2: a request with another prompt runs on the second slot, so
    the first conversation's cache survives it; with one slot it does not.
    Measured by the prompt tokens the third request does not recompute."""
    def chat(srv, system):
        # thinking on: the opener after the checkpoint is then
        # "assistant\n<think>\n", which the bounds below count
        body = dict(messages=[{"role": "system", "content": system},
                              {"role": "user", "content": "hi"}],
                    max_tokens=2, temperature=0, enable_thinking=True)
        st, _, b = http(srv.url + "/v1/chat/completions", "POST", body)
        assert st == 200, b
        u = json.loads(b)["usage"]
        return u["prompt_tokens"], u["prompt_tokens_details"]["cached_tokens"]

    a = "You review Python code for a small team. " * 12
    b = "Translate every message into French, politely. " * 12
    cached = {}
    for slots in ("1", "2"):
        srv = start(tmp_path_factory, "--slots", slots, name="slots" + slots)
        try:
            chat(srv, a)
            chat(srv, b)
            n, cached[slots] = chat(srv, a)
        finally:
            srv.stop_clean()
    # two slots: all of A's prompt but the assistant opener after its last
    # <|im_start|> (the checkpoint); one slot: only the shared head
    assert cached["2"] >= n - 8, (n, cached)
    assert cached["1"] <= 8, (n, cached)


def test_slots_bad_usage():
    for bad in ("0", "17", "x"):
        p = subprocess.run([os.path.join(BIN, "rs-serve"), "-m",
                            fixture("tiny/model-q8_0.gguf"), "--slots", bad],
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 2 and "--slots" in p.stderr, p.stderr


def test_logprobs_errors(server):
    chat = server.url + "/v1/chat/completions"
    comp = server.url + "/v1/completions"
    cases = [
        (chat, dict(messages=MSG, logprobs=3), "logprobs"),
        (chat, dict(messages=MSG, logprobs="yes"), "logprobs"),
        (chat, dict(messages=MSG, top_logprobs=2), "top_logprobs"),
        (chat, dict(messages=MSG, logprobs=False, top_logprobs=2), "top_logprobs"),
        (chat, dict(messages=MSG, logprobs=True, top_logprobs=21), "top_logprobs"),
        (chat, dict(messages=MSG, logprobs=True, top_logprobs=-1), "top_logprobs"),
        (chat, dict(messages=MSG, logprobs=True, top_logprobs=2.5), "top_logprobs"),
        (comp, dict(prompt="hi", logprobs=21), "logprobs"),
        (comp, dict(prompt="hi", logprobs=-1), "logprobs"),
        (comp, dict(prompt="hi", logprobs=True), "logprobs"),
    ]
    for url, body, param in cases:
        st, _, b = http(url, "POST", dict(body, max_tokens=1))
        assert st == 400, (body, b)
        e = err(400, b)
        assert e["param"] == param and e["type"] == "invalid_request_error", (body, e)
    # null is the default (§4.2)
    st, _, b = http(chat, "POST", dict(messages=MSG, max_tokens=1, logprobs=None,
                                       top_logprobs=None))
    assert st == 200 and json.loads(b)["choices"][0]["logprobs"] is None


def test_single_call_ends_only_a_call(server):
    """One call (parallel_tool_calls false): the answer ends at the
    "</tool_call>" that closes a call (serving.md §3.6), not at one the
    model writes before any call opened: here every token is forced to be
    that one, and the answer runs to max_tokens."""
    r = client(server).chat.completions.create(
        model="x", messages=MSG, tools=TOOLS, parallel_tool_calls=False,
        max_tokens=4, seed=0, logit_bias={str(tiny_token("</tool_call>")): 100})
    assert r.choices[0].finish_reason == "length", r
    assert r.usage.completion_tokens == 4 and not r.choices[0].message.tool_calls


@pytest.mark.parametrize("choice", ["required", NAMED])
def test_forced_call_ignores_stop(server, choice):
    """Stop strings that match the forced opening ("<tool_call>\n<function="
    and the name) do not cut the call that tool_choice promises."""
    r = client(server).chat.completions.create(
        model="x", messages=MSG, tools=TOOLS, tool_choice=choice,
        stop=["\n", "get", "<tool"], max_tokens=40, seed=0)
    calls = r.choices[0].message.tool_calls
    assert calls and calls[0].function.name == "get_weather", r


def test_wide_numbers(server):
    """Numbers Python's json reads and rs_json cannot hold (past 64 bits,
    1e400): an unknown field or a tool schema with one passes; a field
    that wants an integer says it is not one (never "not valid JSON"); the
    prompt writes the schema's number as it came."""
    url = server.url + "/v1/chat/completions"
    tools = json.loads(json.dumps(TOOLS))
    tools[0]["function"]["parameters"]["properties"]["n"] = {
        "type": "integer", "maximum": 18446744073709551616}
    for extra_field in ({"foo": 123456789012345678901234567890},
                        {"metadata": {"x": 1e400}}, {"tools": tools}):
        body = json.dumps(dict(messages=MSG, max_tokens=1, **extra_field))
        body = body.replace("Infinity", "1e400")  # json.dumps writes inf so
        st, _, b = http(url, "POST", body.encode())
        assert st == 200, (extra_field, b)
    st, _, b = http(url, "POST", b'{"messages": [{"role": "user", "content": '
                    b'"hi"}], "max_tokens": 1, "seed": 18446744073709551616}')
    assert st == 400 and err(400, b)["param"] == "seed", b
    # the schema's number renders as Python's json.dumps writes it, not
    # quoted (the prompt's tools block)
    st, _, b = http(server.url + "/apply-template", "POST",
                    json.dumps(dict(messages=MSG, tools=tools)).encode())
    assert st == 200, b
    assert '"maximum": 18446744073709551616}' in json.loads(b)["prompt"], b


# ---- errors (§4.6, §6) ----

def err(status, body):
    e = json.loads(body)["error"]
    assert e["code"] == status and isinstance(e["message"], str) and e["message"]
    return e


def test_errors_400(server):
    url = server.url + "/v1/chat/completions"
    st, _, b = http(url, "POST", b'{"messages": [')
    assert st == 400 and "JSON" in err(400, b)["message"]
    st, _, b = http(url, "POST", b'{"messages": [{"role": "user", "content": "\xff"}]}')
    assert st == 400 and "UTF-8 at byte" in err(400, b)["message"]
    st, _, b = http(url, "POST", b"[1, 2]")
    assert st == 400 and err(400, b)["type"] == "invalid_request_error"
    st, _, b = http(url, "POST", {"model": "x"})
    assert st == 400 and err(400, b)["param"] == "messages"
    st, _, b = http(url, "POST", {"messages": []})
    assert st == 400
    c = client(server)
    with pytest.raises(openai.BadRequestError) as e:
        c.chat.completions.create(model="x", messages=MSG, temperature=3)
    assert e.value.status_code == 400 and e.value.body["param"] == "temperature"
    with pytest.raises(openai.BadRequestError) as e:
        c.chat.completions.create(model="x", messages=MSG, reasoning_effort="ultra")
    assert "xhigh" in e.value.body["message"]
    with pytest.raises(openai.BadRequestError):
        c.chat.completions.create(model="x", messages=MSG, tools=TOOLS,
                                  tool_choice={"type": "function",
                                               "function": {"name": "nope"}})
    with pytest.raises(openai.BadRequestError):
        c.completions.create(model="x", prompt="hi", echo=True)


def test_prompt_beyond_context(tmp_path_factory):
    srv = start(tmp_path_factory, "--ctx", "64", name="ctx64")
    try:
        long = [{"role": "user", "content": "word " * 200}]
        with pytest.raises(openai.BadRequestError) as e:
            client(srv).chat.completions.create(model="x", messages=long, stream=True)
        body = e.value.body
        assert body["type"] == "exceed_context_size_error"
        assert body["n_ctx"] == 64 and body["n_prompt_tokens"] > 64
        assert "maximum context length" in body["message"]
        # a request that fits, with max_tokens beyond the room: clamped, "length"
        r = client(srv).chat.completions.create(model="x", messages=MSG, max_tokens=1000,
                                                temperature=0)
        assert r.choices[0].finish_reason == "length"
        assert r.usage.prompt_tokens + r.usage.completion_tokens == 64
    finally:
        srv.stop_clean()


def test_tool_choice_without_room(server, tmp_path_factory):
    """A forced tool call that the context has no room for is a 400 before
    the stream opens (§3.8, §4.5), streamed or not."""
    tools = [{"type": "function", "function": {"name": "get_the_time_of_day_in_a_city"}}]
    r = client(server).chat.completions.create(model="x", messages=MSG, tools=tools,
                                               tool_choice="required", max_tokens=1)
    # room for 3 tokens after the prompt: less than the call's opening
    srv = start(tmp_path_factory, "--ctx", str(r.usage.prompt_tokens + 3), name="room")
    try:
        for stream in (True, False):
            with pytest.raises(openai.BadRequestError) as e:
                r = client(srv).chat.completions.create(
                    model="x", messages=MSG, tools=tools, tool_choice="required",
                    stream=stream)
                list(r) if stream else None
            assert e.value.body["param"] == "tool_choice"
            assert "forced tool call needs" in e.value.body["message"]
    finally:
        srv.stop_clean()


def test_lone_surrogates(tmp_path_factory):
    """An unpaired UTF-16 surrogate escape (a client's cut JavaScript
    string) reads as U+FFFD and is logged (§1.7, §6 row 3)."""
    srv = start(tmp_path_factory, name="surrogate")
    try:
        def answer(text):
            body = ('{"messages": [{"role": "user", "content": "%s"}], '
                    '"max_tokens": 4, "temperature": 0}' % text).encode()
            st, _, b = http(srv.url + "/v1/chat/completions", "POST", body)
            assert st == 200, b
            return json.loads(b)["choices"][0]["message"]["content"]
        assert answer("hi \\ud83d") == answer("hi \\ufffd")
        assert answer("\\udc00\\ud83d\\ude00") == answer("\\ufffd\\ud83d\\ude00")
        marked = [ln for ln in srv.read_log().splitlines() if "lone_surrogates=" in ln]
        assert len(marked) == 2 and all("lone_surrogates=1 " in ln for ln in marked), marked
    finally:
        srv.stop_clean()


def test_errors_404_405(server):
    st, _, b = http(server.url + "/v1/nothing")
    assert st == 404 and err(404, b)["type"] == "not_found_error"
    st, h, b = http(server.url + "/v1/chat/completions")
    assert st == 405 and "POST" in h["allow"]
    assert err(405, b)["type"] == "invalid_request_error"
    st, h, b = http(server.url + "/health", "POST", b"{}")
    assert st == 405 and "GET" in h["allow"]


def test_errors_401(tmp_path_factory):
    srv = start(tmp_path_factory, "--api-key", "s3cret", name="key")
    try:
        with pytest.raises(openai.AuthenticationError) as e:
            client(srv, api_key="wrong").chat.completions.create(model="x", messages=MSG)
        assert e.value.status_code == 401 and e.value.body["message"] == "Invalid API Key"
        st, h, b = http(srv.url + "/v1/chat/completions", "POST", {"messages": MSG})
        assert st == 401 and err(401, b)["type"] == "authentication_error"
        assert h["www-authenticate"] == "Bearer"
        r = client(srv, api_key="s3cret").chat.completions.create(
            model="x", messages=MSG, max_tokens=2)
        assert r.usage.completion_tokens == 2
        st, _, _ = http(srv.url + "/v1/completions", "POST",
                        {"prompt": "a", "max_tokens": 1}, {"X-Api-Key": "s3cret"})
        assert st == 200
        # /health and /v1/models stay open (§4.2)
        assert http(srv.url + "/health")[0] == 200
        assert http(srv.url + "/v1/models")[0] == 200
        assert http(srv.url + "/metrics")[0] == 401
    finally:
        srv.stop_clean()


def test_errors_413(tmp_path_factory):
    srv = start(tmp_path_factory, "--max-body", "4096", name="small")
    try:
        big = [{"role": "user", "content": "x" * 8000}]
        st, h, b = http(srv.url + "/v1/chat/completions", "POST", {"messages": big})
        assert st == 413 and err(413, b)["type"] == "invalid_request_error"
        assert h["content-type"].startswith("application/json")
        with pytest.raises(openai.APIStatusError) as e:
            client(srv).chat.completions.create(model="x", messages=big)
        assert e.value.status_code == 413
        p = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
                            "--max-time", "30", srv.url + "/v1/chat/completions",
                            "-d", json.dumps({"messages": big})],
                           capture_output=True, text=True, timeout=60)
        assert p.stdout == "413"
        # the limit is on the body only: a request under it still works
        r = client(srv).chat.completions.create(model="x", messages=MSG, max_tokens=2)
        assert r.usage.completion_tokens == 2
    finally:
        srv.stop_clean()


def test_errors_503_queue_full(tmp_path_factory):
    srv = start(tmp_path_factory, "--queue", "0", name="q0")
    try:
        c = client(srv)
        long = c.chat.completions.create(model="x", messages=MSG, max_tokens=3000,
                                         stream=True)
        next(iter(long))        # the role chunk: the request is on the engine
        st, h, b = http(srv.url + "/v1/chat/completions", "POST",
                        {"messages": MSG, "max_tokens": 2})
        assert st == 503 and h["retry-after"] == "1"
        assert err(503, b)["type"] == "unavailable_error"
        with pytest.raises(openai.InternalServerError) as e:
            c.chat.completions.create(model="x", messages=MSG, max_tokens=2)
        assert e.value.status_code == 503
        long.close()
    finally:
        srv.stop_clean()


def head_only(srv, length, wait):
    """The answer to a POST that announces LENGTH body bytes and sends none,
    or None when none comes within WAIT seconds (the server reads on)."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=wait)
    try:
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n{"
                  % length)
        got = b""
        while b"\r\n\r\n" not in got or not got.rstrip().endswith(b"}"):
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        return got
    except socket.timeout:
        return None
    finally:
        s.close()


def test_body_max_from_ctx(tmp_path_factory):
    """#15: the default --max-body follows the context (32 B/token + 4 MiB,
    at least 8 MiB): 9 MiB is refused before it is read, --max-body overrides."""
    srv = start(tmp_path_factory, "-c", "64", name="ctx64")
    try:
        got = head_only(srv, 9 << 20, 10)
        assert got is not None and got.startswith(b"HTTP/1.1 413 ")
        assert err(413, got.split(b"\r\n\r\n", 1)[1])["type"] == "invalid_request_error"
        assert head_only(srv, (8 << 20) - 1, 1) is None     # under the floor: read on
        assert http(srv.url + "/health")[0] == 200
    finally:
        srv.stop_clean()
    srv = start(tmp_path_factory, "-c", "64", "--max-body", str(16 << 20), name="ctx64big")
    try:
        assert head_only(srv, 9 << 20, 1) is None
    finally:
        srv.stop_clean()


def read_to_close(s):
    """All the socket S receives until the server closes it."""
    got = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return got
        got += chunk


def raw_answer(srv, data, wait=10):
    """All the server sends back to DATA until it closes (None: it did not
    close within WAIT seconds)."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=wait)
    try:
        s.sendall(data)
        return read_to_close(s)
    except socket.timeout:
        return None
    finally:
        s.close()


def test_protocol_errors_enveloped(server):
    """#15: Content-Length with Transfer-Encoding (smuggling) is a 400 and
    the connection closes; a body without Content-Length is a 411; both
    with the OpenAI error envelope."""
    body = json.dumps({"messages": MSG, "max_tokens": 1}).encode()
    smuggle = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               b"Content-Type: application/json\r\nContent-Length: %d\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n"
               b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
               % (len(body), len(body), body))
    for req in (smuggle, smuggle.replace(b"Content-Length: %d\r\n" % len(body), b"")):
        got = raw_answer(server, req)
        assert got is not None, "no answer and no close"
        head, b = got.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 400 ") and b"connection: close" in head.lower()
        assert "Transfer-Encoding" in err(400, b)["message"]   # one answer only
    got = raw_answer(server, b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                             b"Content-Type: application/json\r\n\r\n")
    head, b = got.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 411 ")
    assert err(411, b)["type"] == "invalid_request_error"
    assert "Content-Length" in err(411, b)["message"]
    assert http(server.url + "/health")[0] == 200


def test_expect_continue(server):
    """Expect: 100-continue (curl sends it for bodies over 1 MiB and then
    waits a second) is answered with 100 Continue before the body, by
    HTTP/1.1 only; the final response follows the body as usual."""
    body = json.dumps({"messages": MSG, "max_tokens": 1}).encode()
    for ver, want in ((b"HTTP/1.1", True), (b"HTTP/1.0", False)):
        s = socket.create_connection(("127.0.0.1", server.port), timeout=2)
        try:
            s.sendall(b"POST /v1/chat/completions %s\r\nHost: 127.0.0.1\r\n"
                      b"Content-Type: application/json\r\nExpect: 100-continue\r\n"
                      b"Content-Length: %d\r\nConnection: close\r\n\r\n"
                      % (ver, len(body)))
            try:
                first = s.recv(64)
            except socket.timeout:
                first = b""
            assert (first == b"HTTP/1.1 100 Continue\r\n\r\n") == want, first
            s.settimeout(60)
            s.sendall(body)
            got = read_to_close(s)
            assert got.startswith(b"HTTP/1.") and got[9:12] == b"200", got[:80]
        finally:
            s.close()


def test_cors(server):
    st, h, _ = http(server.url + "/v1/chat/completions", "OPTIONS", None,
                    {"Origin": "http://localhost:5173",
                     "Access-Control-Request-Headers": "authorization,content-type"})
    assert st == 204 and h["access-control-allow-origin"] == "http://localhost:5173"
    assert "POST" in h["access-control-allow-methods"]
    st, h, b = http(server.url + "/health", "GET", None, {"Origin": "https://evil.example"})
    assert st == 403 and "access-control-allow-origin" not in h
    assert err(403, b)["type"] == "permission_error"


def test_host_check(server):
    """DNS rebinding (#15): only Host names of this server are answered."""
    url = server.url + "/v1/models"
    for host in ("127.0.0.1", "127.0.0.1:%d" % server.port, "127.1.2.3", "localhost",
                 "LOCALHOST:%d" % server.port, "[::1]", "[::1]:%d" % server.port):
        st, _, _ = http(url, "GET", None, {"Host": host})
        assert st == 200, host
    for host in ("evil.example", "evil.example:%d" % server.port, "127.0.0.1.evil.example",
                 "localhost.evil.example", "127.0.0.1:x", "[::1"):
        st, _, b = http(url, "GET", None, {"Host": host})
        assert st == 421, host
        assert err(421, b)["type"] == "invalid_request_error"
    # refused before the route: a POST learns nothing either
    st, _, b = http(server.url + "/v1/chat/completions", "POST",
                    {"messages": MSG, "max_tokens": 1}, {"Host": "evil.example"})
    assert st == 421 and "--public-host" in err(421, b)["message"]


def test_origin_check(server):
    """CSRF (#15): a browser page of another origin is refused, no Origin is fine."""
    url = server.url + "/v1/chat/completions"
    body = {"messages": MSG, "max_tokens": 1}
    st, h, b = http(url, "POST", body, {"Origin": "http://evil.example"})
    assert st == 403 and "--cors-origin" in err(403, b)["message"]
    assert "access-control-allow-origin" not in h
    for o in ("null", "http://localhost.evil.example", "file://"):
        st, _, _ = http(url, "POST", body, {"Origin": o})
        assert st == 403, o
    st, h, _ = http(url, "POST", body, {"Origin": "http://127.0.0.1:%d" % server.port})
    assert st == 200 and h["access-control-allow-origin"] == "http://127.0.0.1:%d" % server.port
    st, h, _ = http(url, "POST", body)
    assert st == 200 and "access-control-allow-origin" not in h


def test_public_host_cors_origin(tmp_path_factory):
    srv = start(tmp_path_factory, "--public-host", "box.lan,gpu.lan", "--public-host",
                "other.lan,2001:db8::7", "--cors-origin", "https://app.example",
                "--cors-origin", "http://a.example:3000,http://b.example", name="pub")
    try:
        url = srv.url + "/v1/models"
        # an IPv6 --public-host without brackets: Host headers bracket it
        for host in ("box.lan", "gpu.lan:%d" % srv.port, "other.lan", "127.0.0.1",
                     "[2001:db8::7]", "[2001:db8::7]:%d" % srv.port):
            assert http(url, "GET", None, {"Host": host})[0] == 200, host
        assert http(url, "GET", None, {"Host": "[2001:db8::8]"})[0] == 421
        assert http(url, "GET", None, {"Host": "box.lan.evil"})[0] == 421
        for o in ("https://app.example", "http://a.example:3000", "http://b.example",
                  "http://box.lan:8080"):
            st, h, _ = http(url, "GET", None, {"Origin": o})
            assert st == 200 and h["access-control-allow-origin"] == o, o
        st, h, _ = http(url, "OPTIONS", None, {"Origin": "https://app.example",
                                              "Access-Control-Request-Method": "POST"})
        assert st == 204 and h["access-control-allow-origin"] == "https://app.example"
        for o in ("https://app.example.evil", "http://a.example", "https://evil.example"):
            assert http(url, "GET", None, {"Origin": o})[0] == 403, o
    finally:
        srv.stop_clean()


# ---- cancellation and concurrency (§4.9) ----

def raw_stream(srv, body):
    """A socket with a streaming request sent and its header read."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    data = json.dumps(body).encode()
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
              b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
              % (len(data), data))
    return s


def test_disconnect_cancels(server):
    s = raw_stream(server, dict(messages=MSG, max_tokens=3000, temperature=0, stream=True))
    got = b""
    while got.count(b"data: ") < 4:
        chunk = s.recv(65536)
        assert chunk
        got += chunk
    t0 = time.monotonic()
    s.close()
    # the engine is free again at once: the next request is served now
    r = client(server).chat.completions.create(model="x", messages=MSG, max_tokens=2)
    dt = time.monotonic() - t0
    assert r.usage.completion_tokens == 2
    assert dt < 3.0, f"next request waited {dt:.2f}s"
    end = time.monotonic() + 10
    while not server.log_lines(" 499 ") and time.monotonic() < end:
        time.sleep(0.05)
    line = server.log_lines(" 499 ")[-1]
    m = re.search(r"completion=(\d+) .*cancel_ms=([\d.]+)", line)
    assert m, line
    completion, cancel_ms = int(m.group(1)), float(m.group(2))
    print(f"\ncancelled after {completion} tokens; engine stopped {cancel_ms:.2f} ms "
          f"after the disconnect was seen")
    assert completion < 3000
    # within one token: well under the time of a few tokens
    assert cancel_ms < 200
    st, _, b = http(server.url + "/metrics")
    assert re.search(r"^rs_requests_cancelled_total [1-9]", b.decode(), re.M)


def test_keepalive_while_queued(tmp_path_factory):
    """§4.5: a stream silent while it waits gets SSE comments, a completions
    stream (no role chunk: it got none) and an HTTP/1.0 one (unchunked: it
    got none) too; the interval shortened to 100 ms for the test."""
    srv = start(tmp_path_factory, "--draft", "none", name="ka",
                env={"RS_SERVE_TEST_KEEPALIVE_MS": "100"})
    try:
        busy = raw_stream(srv, dict(messages=MSG, max_tokens=4000, temperature=1,
                                    seed=1, stream=True))
        got = b""
        while b"data: " not in got:         # the role chunk: it runs now
            chunk = busy.recv(65536)
            assert chunk
            got += chunk
        body = json.dumps(dict(prompt="Hello", max_tokens=2, stream=True)).encode()
        waiting = {}
        for version in (b"1.1", b"1.0"):      # both queued behind BUSY
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
            s.sendall(b"POST /v1/completions HTTP/%s\r\nHost: 127.0.0.1\r\n"
                      b"Content-Type: application/json\r\nContent-Length: %d\r\n"
                      b"\r\n%s" % (version, len(body), body))
            waiting[version] = s
        for version, s in waiting.items():
            got = b""
            while b"data: " not in got:
                chunk = s.recv(65536)
                assert chunk, got
                got += chunk
            s.close()
            head, _, events = got.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.%s 200" % version[-1:]), head
            assert b": keep-alive" in events.split(b"data: ")[0], (version, got)
        busy.close()
    finally:
        srv.stop_clean()


def test_shutdown_ends_streams(tmp_path_factory):
    """SIGTERM during a stream: it ends with an error event (503
    unavailable_error) and the end of its chunked body, no [DONE] (§4.5:
    errors after the header are events); the connection was cut after the
    last chunk, an incomplete body to the client."""
    srv = start(tmp_path_factory, "--draft", "none", name="term")
    s = raw_stream(srv, dict(messages=MSG, max_tokens=4000, temperature=1, seed=2,
                             stream=True))
    got = b""
    while got.count(b"data: ") < 3:
        chunk = s.recv(65536)
        assert chunk
        got += chunk
    srv.proc.send_signal(signal.SIGTERM)
    s.settimeout(20)
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        got += chunk
    s.close()
    assert srv.stop() == 0
    body = got.partition(b"\r\n\r\n")[2]
    assert body.endswith(b"\r\n0\r\n\r\n"), body[-200:]
    events = [l[6:] for l in body.split(b"\n") if l.startswith(b"data: ")]
    last = json.loads(events[-1])
    assert last["error"]["type"] == "unavailable_error", last
    assert last["error"]["code"] == 503 and "shutting down" in last["error"]["message"]
    assert b"[DONE]" not in body


def read_response(s):
    """One whole response with a Content-Length from socket S."""
    got = b""
    while b"\r\n\r\n" not in got or len(got.partition(b"\r\n\r\n")[2]) < int(
            re.search(rb"content-length: (\d+)", got, re.I).group(1)):
        chunk = s.recv(65536)
        assert chunk
        got += chunk
    return got


def test_idle_timeout_as_announced(tmp_path_factory):
    """An idle connection stays open as long as each response's
    "keep-alive: timeout=N" says, counted from the response, and closes
    soon after: it said 20 while the server closed at 10, and then Kore's
    idle timer counted from the request's arrival, so a connection whose
    request had waited closed that long before (a client's pooled POST
    then failed).  The request here waits behind four long streams."""
    srv = start(tmp_path_factory, "--draft", "none", name="idle")
    try:
        busy = [raw_stream(srv, dict(messages=MSG, max_tokens=4000, temperature=1,
                                     seed=k, stream=True)) for k in (1, 2, 3, 4)]
        time.sleep(0.3)
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
        body = json.dumps(dict(prompt="Hello", max_tokens=2)).encode()
        t_sent = time.monotonic()
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  b"Content-Type: application/json\r\nContent-Length: %d\r\n"
                  b"\r\n%s" % (len(body), body))
        got = read_response(s)
        t0 = time.monotonic()
        assert t0 - t_sent > 1.5, "the request did not wait: the test proves nothing"
        for b in busy:
            b.close()
        m = re.search(rb"\r\nkeep-alive: timeout=(\d+)\r\n", got, re.I)
        assert m, got
        n = int(m.group(1))
        assert 2 <= n <= 60
        time.sleep(max(0.0, t0 + n - 1.0 - time.monotonic()))
        s.setblocking(False)
        try:
            assert s.recv(1, socket.MSG_PEEK) != b"", (
                f"closed before its timeout (the request took {t0 - t_sent:.1f} s)")
        except BlockingIOError:
            pass                        # open, nothing to read: as announced
        s.setblocking(True)
        s.settimeout(max(0.1, t0 + n + 3 - time.monotonic()))
        try:
            rest = s.recv(65536)
        except ConnectionResetError:
            rest = b""
        assert rest == b"", "still open 3 s after its timeout"
        s.close()
    finally:
        srv.stop_clean()


def test_health_while_busy(server):
    """Generation and tokenization run off the event loop: /health
    answers at once while a request streams and while a 1 MB prompt is
    being tokenized."""
    s = raw_stream(server, dict(messages=MSG, max_tokens=400, temperature=0, stream=True))
    big = threading.Thread(target=http, args=(server.url + "/v1/chat/completions", "POST",
                                              {"messages": [{"role": "user",
                                                             "content": "x" * 1000000}],
                                               "max_tokens": 1}))
    try:
        assert s.recv(65536)
        big.start()
        worst = 0.0
        for _ in range(20):
            t0 = time.monotonic()
            assert http(server.url + "/health", timeout=10)[0] == 200
            worst = max(worst, time.monotonic() - t0)
            time.sleep(0.01)
        print(f"\n/health while busy: worst {worst * 1e3:.1f} ms")
        assert worst < 0.25
    finally:
        s.close()
        big.join(timeout=60)


def run_clients(srv, n, body, results):
    barrier = threading.Barrier(n)

    def one(i):
        c = client(srv)
        barrier.wait(timeout=30)
        try:
            s = c.chat.completions.create(model="x", stream=True, **body)
            results[i] = ("ok", "".join(ch.choices[0].delta.content or "" for ch in s
                                        if ch.choices))
        except openai.APIStatusError as e:
            results[i] = (e.status_code, e.response.headers.get("retry-after"))
        except Exception as e:  # noqa: BLE001 - reported by the assertion
            results[i] = ("exception", repr(e))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a client hung"


def test_16_concurrent_clients(server, tmp_path_factory):
    body = dict(messages=MSG, max_tokens=8, temperature=0,
                extra_body={"enable_thinking": False})
    ref = rs_generate(dict(messages=MSG, max_tokens=8, temperature=0, enable_thinking=False))
    results = [None] * 16
    run_clients(server, 16, body, results)
    # the default queue (16) holds them all, and each got the same answer
    assert all(r == ("ok", ref["text"]) for r in results), results
    assert http(server.url + "/health")[0] == 200

    small = start(tmp_path_factory, "--queue", "3", name="q3")
    try:
        results = [None] * 16
        run_clients(small, 16, dict(body, max_tokens=64), results)
        ok = [r for r in results if r[0] == "ok"]
        busy = [r for r in results if r[0] == 503]
        assert len(ok) + len(busy) == 16, results
        assert len(ok) >= 4 and busy and all(r[1] == "1" for r in busy)
        assert http(small.url + "/health")[0] == 200
        r = client(small).chat.completions.create(model="x", messages=MSG, max_tokens=2)
        assert r.usage.completion_tokens == 2
    finally:
        small.stop_clean()


# ---- overhead over rs-generate ----

def timed_stream(srv, path, body):
    """(first byte time, [(time, event)], t0) of a streamed request over a
    bare socket: the client does no parsing while it reads, so its own
    cost stays out of the timings."""
    data = json.dumps(dict(body, stream=True)).encode()
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    req = (b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           b"Content-Length: %d\r\n\r\n%s" % (path.encode(), len(data), data))
    t0 = time.monotonic()
    s.sendall(req)
    reads = []
    buf = b""
    while b"data: [DONE]" not in buf:
        chunk = s.recv(1 << 16)
        assert chunk, "connection closed"
        reads.append((time.monotonic(), len(buf) + len(chunk)))
        buf += chunk
    s.close()
    head, _, body = buf.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    events, pos = [], len(head) + 4
    for m in re.finditer(rb"data: (.*?)\n\n", buf[pos:]):
        end = pos + m.end()
        when = next(t for t, n in reads if n >= end)
        events.append((when, m.group(1)))
    return reads[0][0], events, t0


def test_overhead(server):
    """What the server adds to the engine, measured on the same requests.

    rs-generate runs the same engine code without a server; inside
    rs-serve the engine reports the same timings (the last chunk's
    "timings": ttft_ms from the run's start, prompt_ms + predicted_ms to
    its end).  So: the time to the first token seen by the client minus
    the engine's ttft_ms is the server's overhead there (HTTP, JSON,
    validation, tokenization, queue, hand-off, socket); the client-seen
    time from the first token's chunk to the finish chunk, against the
    engine's from its first token to its end, over n - 1 steps, is the
    per-token cost (tokens whose bytes are held back, an incomplete
    UTF-8 sequence, do not matter); and the server logs, per request, the
    mean delay from a token leaving the engine to its bytes leaving the
    socket (lag_ms).  Medians over several runs.
    """
    n = 64
    body = dict(prompt="Once upon a time", max_tokens=n, temperature=0)
    http(server.url + "/v1/completions", "POST", body)    # warm the prefix cache
    per_tok, ttft, ttfb, lag, inside = [], [], [], [], []
    for _ in range(7):
        logged = len(server.log_lines("POST /v1/completions 200"))
        first_byte, events, t0 = timed_stream(server, "/v1/completions", body)
        chunks = [(t, json.loads(e)) for t, e in events if e != b"[DONE]"]
        toks = [t for t, c in chunks if c["choices"] and c["choices"][0]["text"]]
        t_end = next(t for t, c in chunks if c["choices"] and c["choices"][0]["finish_reason"])
        timings = chunks[-1][1]["timings"]
        assert timings["predicted_n"] == n
        inside.append(timings["predicted_per_token_ms"])
        engine_span = timings["prompt_ms"] + timings["predicted_ms"] - timings["ttft_ms"]
        per_tok.append(((t_end - toks[0]) * 1e3 - engine_span) / (n - 1))
        ttft.append((toks[0] - t0) * 1e3 - timings["ttft_ms"])
        ttfb.append((first_byte - t0) * 1e3)
        # the access-log line follows the last byte
        end = time.monotonic() + 5
        while (len(server.log_lines("POST /v1/completions 200")) == logged and
               time.monotonic() < end):
            time.sleep(0.01)
        line = server.log_lines("POST /v1/completions 200")[-1]
        lag.append(float(re.search(r"lag_ms=([\d.]+)/", line).group(1)))
    # rs-generate on the same request: the engine's speed outside the server
    p = subprocess.run([os.path.join(BIN, "rs-generate"), "-m",
                        fixture("tiny/model-q8_0.gguf"), "--backend", "cpu", "-t", "1"],
                       input=json.dumps(body) + "\n", capture_output=True, text=True,
                       timeout=120)
    gen = json.loads(p.stdout.splitlines()[-1])["timings"]
    med = statistics.median
    fmt = lambda xs: ", ".join(f"{x:+.3f}" for x in xs)     # noqa: E731
    print(f"\nengine: {gen['predicted_per_token_ms']:.3f} ms/token in rs-generate, "
          f"{med(inside):.3f} ms/token inside rs-serve")
    print(f"rs-serve per streamed token: engine-to-socket {med(lag):.3f} ms; "
          f"client-seen spacing minus the engine's {med(per_tok):+.3f} ms ({fmt(per_tok)})")
    print(f"rs-serve first byte after {med(ttfb):.2f} ms; first token "
          f"{med(ttft):+.2f} ms over the engine's ttft ({fmt(ttft)})")
    # The guards catch what the design must not do (Nagle's 40 ms, a
    # polled hand-off, a write per N tokens), not a VM's scheduling noise:
    # on the 2-core CI machine the engine-to-socket delay (a wake-up of the
    # event loop while the engine thread computes) read 0.05-0.2 ms in
    # most runs and 1-3 ms for minutes at a time in others, with the same
    # binary, while the per-token spacing stayed within 0.03 ms.
    assert med(lag) <= 5.0
    assert med(per_tok) <= 0.2
    assert med(ttft) <= 5.0
    assert med(ttfb) <= 5.0


# ---- the command itself ----

def test_copilot_config():
    p = subprocess.run([os.path.join(BIN, "rs-serve"), "-m", fixture("tiny/model-q8_0.gguf"),
                        "--copilot-config", "http://127.0.0.1:8081/v1"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    groups = json.loads(p.stdout)
    assert len(groups) == 1 and groups[0]["vendor"] == "customendpoint"
    assert groups[0]["apiType"] == "chat-completions"
    (m,) = groups[0]["models"]
    assert m["url"] == "http://127.0.0.1:8081/v1/chat/completions"
    assert m["toolCalling"] is True and m["vision"] is False and m["streaming"] is True
    # the tiny GGUF carries the Qwen3.5 template: thinking, no effort
    # levels; since thinking is off unless a request asks (§2.5), Copilot
    # gets none and medium to ask with
    assert m["thinking"] is True
    assert m["supportsReasoningEffort"] == ["none", "medium"]
    assert m["reasoningEffortFormat"] == "chat-completions"
    ctx = n_ctx_train()
    out = min(32768, ctx // 4)
    inp = (ctx - out) * 7 // 8
    assert m["maxOutputTokens"] == out
    assert m["maxInputTokens"] == (inp // 1000 * 1000 if inp >= 1000 else inp)
    assert m["contextWindow"] == ctx


def test_copilot_config_host_warnings():
    """--copilot-config warns where the URL names a Host the server, as
    started with the same options, answers 421, or another port."""
    def cfg(*args):
        p = subprocess.run([os.path.join(BIN, "rs-serve"), "-m",
                            fixture("tiny/model-q8_0.gguf"), *args],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return p.stderr
    assert cfg("--copilot-config", "http://127.0.0.1:8081/v1") == ""
    assert cfg("--host", "0.0.0.0", "--public-host", "box.lan", "--port", "9000",
               "--copilot-config", "http://box.lan:9000/v1") == ""
    e = cfg("--host", "0.0.0.0", "--port", "9000", "--copilot-config",
            "http://192.168.1.20:8081/v1")
    assert "answers Host '192.168.1.20' with 421" in e, e
    assert "port 8081 is not --port 9000" in e, e
    e = cfg("--copilot-config", "https://127.0.0.1/v1")
    assert "421" not in e and "port 443 is not --port 8081" in e, e


def other_template(tmp_path):
    """The tiny model with one byte of its chat template changed: a
    template rs-serve does not render."""
    import struct
    b = bytearray(open(fixture("tiny/model-q8_0.gguf"), "rb").read())
    k = b"tokenizer.chat_template"
    at = b.index(struct.pack("<Q", len(k)) + k) + 8 + len(k)
    n, = struct.unpack_from("<Q", b, at + 4)
    i = b.index(b"message", at + 12, at + 12 + n)
    b[i] = ord("M")
    path = str(tmp_path / "other-template.gguf")
    open(path, "wb").write(b)
    return path


def test_copilot_config_no_chat(tmp_path):
    """A model whose chat template rs-serve does not render: no Copilot
    entry, whose every chat request would fail (it was printed,
    toolCalling true, exit 0)."""
    path = other_template(tmp_path)
    p = subprocess.run([os.path.join(BIN, "rs-serve"), "-m", path,
                        "--copilot-config", "http://127.0.0.1:8081/v1"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == "", (p.returncode, p.stdout)
    assert "chat requests are not available" in p.stderr, p.stderr
    # not the --no-chat hint: Copilot speaks chat alone
    assert "Copilot needs them" in p.stderr and "--no-chat" not in p.stderr, p.stderr


def test_unknown_template_refused_at_start(tmp_path_factory):
    """serving.md §2.1: a template the renderer does not implement stops
    the server at startup, named with its size and hash, unless --no-chat
    asks for /v1/completions alone (it started, and every chat request
    failed); with --no-chat the cause is logged and chat refused."""
    path = other_template(tmp_path_factory.mktemp("tpl"))
    p = subprocess.run([os.path.join(BIN, "rs-serve"), "-m", path, "--port", "1"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert re.search(r"chat requests are not available with this model \(.*"
                     r"\(\d+ bytes, sha256 [0-9a-f]{64}\).*--no-chat", p.stderr), p.stderr
    srv = start(tmp_path_factory, "-m", path, "--no-chat", name="tpl")
    try:
        lines = srv.log_lines("chat requests will be refused (400, --no-chat)")
        assert lines and re.search(r"\(\d+ bytes, sha256 [0-9a-f]{64}\)", lines[0]) \
            and "/v1/completions works" in lines[0], srv.read_log()
        st, _, b = http(srv.url + "/v1/chat/completions", "POST",
                        json.dumps(dict(messages=MSG, max_tokens=1)).encode())
        assert st == 400 and "--no-chat" in err(400, b)["message"], b
        st, _, b = http(srv.url + "/v1/completions", "POST",
                        json.dumps(dict(prompt="hi", max_tokens=1)).encode())
        assert st == 200, b
    finally:
        srv.stop_clean()


def test_no_chat(tmp_path_factory):
    """--no-chat on a model whose template rs-serve renders: chat and
    /apply-template refused with the reason, completions served, and no
    Copilot entry (Copilot speaks chat alone)."""
    srv = start(tmp_path_factory, "-m", fixture("tiny/model-q8_0.gguf"), "--no-chat",
                name="nochat")
    try:
        for path in ("/v1/chat/completions", "/apply-template"):
            st, _, b = http(srv.url + path, "POST",
                            json.dumps(dict(messages=MSG, max_tokens=1)).encode())
            assert st == 400 and "--no-chat" in err(400, b)["message"], (path, b)
        st, _, b = http(srv.url + "/v1/completions", "POST",
                        json.dumps(dict(prompt="hi", max_tokens=1)).encode())
        assert st == 200, b
    finally:
        srv.stop_clean()
    p = subprocess.run([os.path.join(BIN, "rs-serve"), "-m", fixture("tiny/model-q8_0.gguf"),
                        "--no-chat", "--copilot-config", "http://127.0.0.1:8081/v1"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == "" and "--no-chat" in p.stderr, p.stderr


def test_tls(tmp_path_factory):
    """--tls-cert/--tls-key: served over HTTPS by Kore's TLS, or refused
    with the reason when this Kore/OpenSSL pair cannot do TLS (Kore 4.1
    with OpenSSL 3), never a server whose handshakes fail."""
    tmp = tmp_path_factory.mktemp("tls")
    cert, key = str(tmp / "cert.pem"), str(tmp / "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=127.0.0.1"], check=True,
                   capture_output=True, timeout=60)
    args = ["--tls-cert", cert, "--tls-key", key]
    p = subprocess.run([os.path.join(BIN, "rs-serve"), "-m", fixture("tiny/model-q8_0.gguf"),
                        "--port", "1", *args], capture_output=True, text=True, timeout=30)
    if "TLS is not available" in p.stderr:
        assert p.returncode == 2 and "OpenSSL 3" in p.stderr
        # not offered where it cannot work: neither --help nor the man
        # page's synopsis and options, nor the completions (issue #15)
        h = subprocess.run([os.path.join(BIN, "rs-serve"), "--help"],
                           capture_output=True, text=True, timeout=30)
        assert h.returncode == 0 and "--tls" not in h.stdout
        man = open(os.path.join(ROOT, "man", "rs-serve.1")).read()
        assert "tls" not in man[:man.index(".Sh EXIT STATUS")]
        for comp in ("bash/rs-serve", "zsh/_rs-serve"):
            assert "tls" not in open(os.path.join(ROOT, "completions", comp)).read()
        return
    srv = start(tmp_path_factory, *args, name="tls")
    try:
        import httpx
        c = openai.OpenAI(base_url=srv.url + "/v1",
                          api_key="x", max_retries=0, timeout=30,
                          http_client=httpx.Client(verify=False))
        r = c.chat.completions.create(model="x", messages=MSG, max_tokens=2)
        assert r.usage.completion_tokens == 2
    finally:
        srv.stop_clean()


def test_bad_usage():
    exe = os.path.join(BIN, "rs-serve")
    for args, word in [([], "no model"), (["-m", "/nonexistent.gguf"], "nonexistent"),
                       (["-m", fixture("tiny/model-q8_0.gguf"), "--port", "0"], "--port"),
                       (["-m", fixture("tiny/model-q8_0.gguf"), "--tls-cert", "x"], "tls"),
                       (["-m", fixture("tiny/model-q8_0.gguf"),
                         "--default-enable-thinking", "yes"], "true or false"),
                       (["-m", fixture("tiny/model-q8_0.gguf"),
                         "--default-reasoning-effort", "high"], "xhigh, medium or low"),
                       (["-m", fixture("tiny/model-q8_0.gguf"), "--devices", "0,x"],
                        "--devices: item 2"),
                       (["-m", fixture("tiny/model-q8_0.gguf"), "--split", "1,3"],
                        "--split needs --devices"),
                       (["-m", fixture("tiny/model-q8_0.gguf"), "--devices", "0,1",
                         "--split", "4"], "--split: 1 counts for 2 devices")]:
        p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=30)
        assert p.returncode == 2 and word in p.stderr, (args, p.stderr)
    p = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and "--copilot-config" in p.stdout


def replay(tmp_path_factory, model_args, name, *extra):
    """scripts/copilot-replay.py against a server with three slots: its
    per-request rows, the server and the replayer's stderr."""
    srv = start(tmp_path_factory, "--slots", "3", *model_args, name=name)
    out = str(tmp_path_factory.mktemp(name) / "rows.jsonl")
    try:
        p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "copilot-replay.py"),
                            "--url", srv.url, "--turns", "9", "--tools", "3",
                            "--context-tokens", "150", "--max-tokens", "8",
                            "--last-user-tokens", "40", "--cold", "--timeout", "120",
                            "--jsonl", out, *extra],
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr + p.stdout
        st, _, metrics = http(srv.url + "/metrics")
        assert st == 200
    finally:
        srv.stop_clean()
    with open(out) as f:
        rows = [json.loads(line) for line in f]
    return rows, metrics.decode()


def check_replay(rows, metrics, strict):
    """Every turn of both conversations after their first restarts from a
    checkpoint: STRICT (reasoning kept) all of the previous turn's prompt
    but its opener, else at least the first turn's prompt but its opener
    (the reasoning of the turns since the last user message is dropped:
    the prompt leaves the history at the first of them); the edited turn
    only what precedes its edit.  The title, the tool_choice none turn
    (no tools in its prompt) and the cold request reuse at most a shared
    system prompt.  /metrics counts the hits: exactly the turns that
    restored a checkpoint.  How many those are varies from run to run: the
    thinking turns sample unseeded (no temperature, as Copilot sends them),
    and a turn whose echoed answer re-tokenizes to the ids its slot
    generated continues that state in place instead; the edited turn always
    restores one (its prompt leaves the slot's history in the middle)."""
    prev, first = {}, {}
    for r in rows:
        what = f"turn {r['turn']} ({r['conv']} {r['kind']}): {r}"
        if r["kind"] in ("side", "cold_full", "none"):
            assert r["cached_tokens"] < r["prompt_tokens"] // 2, what
            continue
        if r["conv"] not in prev:
            prev[r["conv"]] = first[r["conv"]] = r
            continue
        # a checkpoint, or the state itself when the prompt continues its
        # whole history (the echoed answer re-tokenized to the same ids)
        assert r["checkpoint_hit"] == 1 or r["checkpoint_misses"] == 0, what
        if r["checkpoint_hit"]:
            assert r["cached_tokens"] == r["checkpoint_tokens"] > 0, what
        if r["kind"] == "edit_middle":
            assert r["cached_tokens"] < prev[r["conv"]]["prompt_tokens"] - 20, what
        elif strict:
            assert r["cached_tokens"] >= prev[r["conv"]]["prompt_tokens"] - 8, what
        else:
            # the opener "<|im_start|>assistant\n<think>\n" is recomputed:
            # 19 tokens in the synthetic byte-level vocabulary
            assert r["cached_tokens"] >= first[r["conv"]]["prompt_tokens"] - 24, what
        prev[r["conv"]] = r
    assert len([r for r in rows if r["conv"] == "B"]) >= 3
    edits = [r for r in rows if r["kind"] == "edit_middle"]
    assert edits and all(r["checkpoint_hit"] == 1 for r in edits), edits
    hits = [ln for ln in metrics.splitlines() if ln.startswith("rs_checkpoint_hits_total ")]
    n_hit = sum(1 for r in rows if r["checkpoint_hit"])
    assert hits and float(hits[0].split()[1]) == n_hit, (n_hit, metrics)
    assert 'rs_checkpoint_memory_bytes{where="device"}' in metrics


def test_copilot_replay_tiny(tmp_path_factory):
    """The Copilot-shaped session on the tiny fixture (Qwen3.5 template,
    which drops the reasoning of turns before the last user message: the
    checkpoint at each assistant turn's start is what makes turns hit)."""
    check_replay(*replay(tmp_path_factory, (), "replay35"), strict=False)


def test_copilot_replay_qwen38(tmp_path_factory):
    """The same session on a synthetic model with the Qwen3.8 template
    (rs-bench --synth tiny): its reasoning is kept (preserve_thinking
    default), so a turn leaves the history inside the echoed answer after
    the previous prompt's end; with preserve_thinking false it drops it, as
    Qwen3.5's does.  Both keep hitting."""
    path = str(tmp_path_factory.mktemp("synth") / "synth-tiny.gguf")
    p = subprocess.run([os.path.join(BIN, "rs-bench"), "--synth", "tiny", "-o", path],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    check_replay(*replay(tmp_path_factory, ("-m", path, "-c", "8192"), "replay38"),
                 strict=True)
    check_replay(*replay(tmp_path_factory, ("-m", path, "-c", "8192"), "replay38d",
                         "--drop-reasoning"), strict=False)
    # the GPU's rule (no checkpoint that splits off a call under 256
    # tokens, but the opener when the reasoning is dropped): still hits
    for name, extra_args, strict in (("replay38m", (), True),
                                     ("replay38md", ("--drop-reasoning",), False)):
        rows, metrics = replay(tmp_path_factory, ("-m", path, "-c", "8192",
                                                  "--checkpoint-min-call", "256"),
                               name, *extra_args)
        check_replay(rows, metrics, strict=strict)
        if strict:
            # reasoning kept: an agent turn after its conversation's first
            # (not an edit) is one engine call
            seen = set()
            for r in rows:
                if r["conv"] in seen and r["kind"] in ("tool_named", "tool_result",
                                                       "user", "last_user"):
                    assert r["breakdown"]["prefill_calls"] == 1, r
                seen.add(r["conv"])


def nan_model(src, dst, tensor):
    """A copy of GGUF SRC at DST with element 0 of the F32 tensor TENSOR
    made NaN (the header walked as rs_gguf.h lays it out)."""
    import struct
    b = bytearray(open(src, "rb").read())
    _, n_t, n_kv = struct.unpack_from("<IQQ", b, 4)
    o = 24
    size = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def string(o):
        n, = struct.unpack_from("<Q", b, o)
        return b[o + 8:o + 8 + n].decode(), o + 8 + n

    def skip(t, o):
        if t == 8:
            return string(o)[1]
        if t == 9:
            at, n = struct.unpack_from("<IQ", b, o)
            o += 12
            for _ in range(n):
                o = skip(at, o)
            return o
        return o + size[t]
    align = 32
    for _ in range(n_kv):
        key, o = string(o)
        t, = struct.unpack_from("<I", b, o)
        if key == "general.alignment":
            align, = struct.unpack_from("<I", b, o + 4)
        o = skip(t, o + 4)
    where = None
    for _ in range(n_t):
        name, o = string(o)
        nd, = struct.unpack_from("<I", b, o)
        o += 4 + 8 * nd
        t, off = struct.unpack_from("<IQ", b, o)
        o += 12
        if name == tensor:
            assert t == 0, "an F32 tensor"
            where = off
    struct.pack_into("<f", b, (o + align - 1) // align * align + where, math.nan)
    open(dst, "wb").write(b)


def long_name_model(src, dst, grow):
    """A copy of GGUF SRC at DST whose general.name is GROW bytes longer
    (a multiple of the alignment: the data keeps its padding), starting
    with an escape sequence and a blank."""
    import struct
    b = open(src, "rb").read()
    k = b"general.name"
    at = b.index(struct.pack("<Q", len(k)) + k) + 8 + len(k)
    assert struct.unpack_from("<I", b, at)[0] == 8
    n, = struct.unpack_from("<Q", b, at + 4)
    name = b"Big\x1b[2J Model " + b"x" * (n + grow - 14)
    assert len(name) == n + grow
    with open(dst, "wb") as f:
        f.write(b[:at + 4] + struct.pack("<Q", len(name)) + name +
                b[at + 12 + n:])


def test_long_model_name(tmp_path_factory):
    """A 32 KB general.name: the default model id is its first 128 bytes
    with control characters and blanks as '-' (it was the whole name, in
    every chunk of a stream)."""
    tmp = tmp_path_factory.mktemp("name")
    path = str(tmp / "name.gguf")
    long_name_model(fixture("tiny/model-q8_0.gguf"), path, 32 * 1024)
    srv = start(tmp_path_factory, "-m", path, name="longname")
    try:
        status, _, data = http(srv.url + "/v1/models")
        assert status == 200, data
        mid = json.loads(data)["data"][0]["id"]
        assert mid == "big-[2j-model-" + "x" * 114, mid
        body = {"messages": MSG, "max_tokens": 2, "stream": True}
        status, _, data = http(srv.url + "/v1/chat/completions", "POST", body)
        assert status == 200 and len(data) < 4096, len(data)
    finally:
        srv.stop()


def test_nan_model(tmp_path_factory):
    """Weights holding NaN: a generation is an error (500 with the reason,
    streamed or not), not token 0 with null log-probabilities; the server
    stays up (issue #15).  The same whether whole rows come back
    (logprobs) or only their best tokens (greedy, top-k sampling), with or
    without a drafter."""
    tmp = tmp_path_factory.mktemp("nan")
    path = str(tmp / "nan.gguf")
    nan_model(fixture("tiny/model-q8_0.gguf"), path, "output_norm.weight")
    for name, args in (("nan", ("--draft", "none")),
                       ("nandraft", ("--draft", "mtp+ngram", "--draft-max", "3")),
                       ("nanauto", ())):
        srv = start(tmp_path_factory, "-m", path, *args, name=name)
        try:
            body = {"model": "x", "messages": MSG, "max_tokens": 2, "logprobs": True}
            status, _, data = http(srv.url + "/v1/chat/completions", "POST", body)
            assert status == 500, data
            assert "non-finite logit" in json.loads(data)["error"]["message"]
            status, _, data = http(srv.url + "/v1/chat/completions", "POST",
                                   dict(body, stream=True))
            assert b"non-finite logit" in data and b'"logprob": null' not in data
            for extra in ({"temperature": 0}, {"seed": 3}):
                b = {"model": "x", "messages": MSG, "max_tokens": 2, **extra}
                status, _, data = http(srv.url + "/v1/chat/completions", "POST", b)
                assert status == 500, data
                assert "non-finite logit" in json.loads(data)["error"]["message"]
            assert http(srv.url + "/health")[0] == 200
        finally:
            srv.stop()


def test_log_escapes(tmp_path_factory):
    """A request path with ESC and BEL reaches the access log escaped, not
    as terminal control sequences (issue #15)."""
    srv = start(tmp_path_factory, name="esc")
    try:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
            s.sendall(b"GET /\x1b]0;pwned\x07 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert s.recv(100).startswith(b"HTTP/1.1 404")
        assert http(srv.url + "/health")[0] == 200
        log = srv.read_log()
        assert "\x1b" not in log and "\x07" not in log
        assert "GET /\\x1b]0;pwned\\x07 404" in log
    finally:
        srv.stop_clean()
