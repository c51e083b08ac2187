#!/usr/bin/env python3
"""serve-traffic.py - a few minutes of real, bounded traffic against rs-serve.

What a user's clients do, for scripts/gpu-check.sh to run rs-serve under
its sandbox with (issue #21: the CUDA runtime's calls during long waits
only show with a 27B-sized model and real requests):

  1. one chat prompt of --long-tokens tokens (measured with /tokenize),
     streamed;
  2. a burst of --queue + 4 streamed requests at once: more than the
     server's queue holds, so some get 503;
  3. streams that the client drops after a few chunks;
  4. until --duration seconds have passed since the start: --workers
     clients (fewer than the queue holds) sending a mix of streamed and whole chat and text
     completions, some dropped mid-stream.

Only the standard library (the GPU machine has no OpenAI SDK); every call
has a timeout and the whole run ends by --duration plus one request's
timeout.  Prints one JSON summary line on stdout; exits 1 when a request
failed in a way other than 503 (a connection refused or reset: the server
died) or the server is not healthy at the end.

  python3 scripts/serve-traffic.py --port 8099 --queue 2 --duration 150
"""
import argparse
import http.client
import json
import random
import sys
import threading
import time


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.n = {"requests": 0, "ok": 0, "busy_503": 0, "dropped": 0,
                  "tokens": 0, "errors": 0}
        self.first_errors = []

    def add(self, **kw):
        with self.lock:
            for k, v in kw.items():
                self.n[k] += v

    def error(self, what):
        with self.lock:
            self.n["errors"] += 1
            if len(self.first_errors) < 5:
                self.first_errors.append(what)


def post(port, path, body, timeout):
    """(status, parsed JSON or None) of a whole-body POST."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        try:
            return r.status, json.loads(data)
        except ValueError:
            return r.status, None
    finally:
        c.close()


def stream(port, path, body, timeout, drop_after=None):
    """Stream BODY; (status, tokens, dropped).  Tokens are usage's
    completion_tokens, or the text chunks seen when the client drops the
    stream after DROP_AFTER data events."""
    body = dict(body, stream=True, stream_options={"include_usage": True})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            r.read()
            return r.status, 0, False
        events = chunks = 0
        usage = None
        done = False
        for line in r:
            if not line.startswith(b"data: "):
                continue
            data = line[6:].strip()
            if data == b"[DONE]":
                done = True
                break
            ev = json.loads(data)
            if "error" in ev:
                raise RuntimeError(f"error event: {ev['error']}")
            events += 1
            if ev.get("usage"):
                usage = ev["usage"]["completion_tokens"]
            for ch in ev.get("choices", []):
                d = ch.get("delta", ch)
                if d.get("content") or d.get("reasoning_content") or d.get("text"):
                    chunks += 1
            if drop_after is not None and events >= drop_after:
                return 200, chunks, True    # close() below drops it
        if not done:
            raise RuntimeError(f"the stream ended after {events} events, without [DONE]")
        return 200, usage if usage is not None else chunks, False
    finally:
        c.close()


def run_one(port, st, kind, prompt, max_tokens, timeout):
    chat = {"messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens}
    text = {"prompt": prompt, "max_tokens": max_tokens}
    st.add(requests=1)
    try:
        if kind == "whole":
            status, j = post(port, "/v1/chat/completions", chat, timeout)
            toks = j["usage"]["completion_tokens"] if status == 200 and j else 0
            dropped = False
        elif kind == "text":
            status, toks, dropped = stream(port, "/v1/completions", text, timeout)
        else:
            drop = random.randint(2, 6) if kind == "drop" else None
            status, toks, dropped = stream(port, "/v1/chat/completions", chat, timeout,
                                           drop)
    except Exception as e:      # refused, reset, timeout: the server is sick
        st.error(f"{kind}: {type(e).__name__}: {e}")
        return
    if status == 200:
        st.add(ok=1, tokens=toks, dropped=int(dropped))
    elif status == 503:
        st.add(busy_503=1)
    else:
        st.error(f"{kind}: HTTP {status}")


def long_prompt(port, n_tokens, timeout):
    """A prompt of about N_TOKENS tokens (at least), and its count: the
    tokens per word of a short probe (/tokenize) set the length."""
    words = ["redshift", "serves", "a", "large", "model", "on", "one", "GPU",
             "while", "clients", "wait", "for", "tokens", "and", "the",
             "sandbox", "watches", "every", "system", "call."]

    def count(n):
        text = " ".join(words[i % len(words)] for i in range(n))
        status, j = post(port, "/tokenize", {"content": text}, timeout)
        if status != 200:
            raise RuntimeError(f"/tokenize: HTTP {status}")
        return text, len(j["tokens"])

    _, got = count(200)
    n = n_tokens * 200 // max(got, 1) + 1
    while True:
        text, got = count(n)
        if got >= n_tokens:
            return text, got
        n += n // 50 + 1


def burst(port, st, n, timeout):
    """N streamed requests released together."""
    go = threading.Barrier(n)

    def one():
        go.wait()
        run_one(port, st, "stream", "Count from one to twenty.", 24, timeout)
    ts = [threading.Thread(target=one) for _ in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def mixed(port, st, deadline, timeout, seed):
    rnd = random.Random(seed)
    prompts = ["Hi", "Write a haiku about memory.", "Explain seccomp in two lines.",
               "List five prime numbers.", "What is a KV cache?"]
    while time.monotonic() < deadline and st.n["errors"] == 0:
        kind = rnd.choices(["stream", "whole", "text", "drop"], [5, 2, 1, 2])[0]
        busy = st.n["busy_503"]
        run_one(port, st, kind, rnd.choice(prompts), rnd.randint(8, 64), timeout)
        if st.n["busy_503"] > busy:
            time.sleep(0.25)    # a dropped stream's job may still hold its place


def healthy(port, timeout):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        c.request("GET", "/health")
        ok = c.getresponse().status == 200
        c.close()
        return ok
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--queue", type=int, default=16, help="the server's --queue")
    ap.add_argument("--duration", type=float, default=150, help="seconds, all phases")
    ap.add_argument("--long-tokens", type=int, default=4000)
    ap.add_argument("--workers", type=int, default=2, help="clients in phase 4")
    ap.add_argument("--timeout", type=float, default=90, help="seconds per request")
    a = ap.parse_args()
    t0 = time.monotonic()
    deadline = t0 + a.duration
    st = Stats()

    text, n_long = long_prompt(a.port, a.long_tokens, a.timeout)
    run_one(a.port, st, "stream", text, 16, a.timeout)
    burst(a.port, st, a.queue + 4, a.timeout)
    for _ in range(4):
        run_one(a.port, st, "drop", "Tell me a long story.", 200, a.timeout)
    ts = [threading.Thread(target=mixed, args=(a.port, st, deadline, a.timeout, i))
          for i in range(a.workers)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    alive = healthy(a.port, 10)
    if not alive:
        st.error("not healthy at the end")
    out = dict(st.n, long_prompt_tokens=n_long, seconds=round(time.monotonic() - t0, 1),
               healthy=alive, first_errors=st.first_errors)
    print(json.dumps(out), flush=True)
    return 1 if st.n["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
