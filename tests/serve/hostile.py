#!/usr/bin/env python3
"""hostile.py - a hostile-client suite against rs-serve (issue #15).

Starts rs-serve on the tiny fixture model on 127.0.0.1 (loopback only),
throws every case below at it with bounded counts and timeouts, and prints
a table: case, what was sent, what came back, pass or FAIL.  The run
passes when every case passes and, across all of them: no crash (the
server is alive at the end and exits 0 on SIGTERM), no 5xx status but 503,
the worker's RSS after a second flood within RSS_SLACK_MB of the first,
and /health answering at the end.

    python3 tests/serve/hostile.py [--table FILE]

make test runs it through tests/serve/test_serve_hostile.py; docs/hardening.md
has its table.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, os.environ.get("RS_BIN", "build/bin"))
FIXTURES = os.environ.get("RS_FIXTURES", os.path.join(ROOT, "..", "shared", "fixtures"))
if not os.path.isabs(FIXTURES):
    FIXTURES = os.path.join(ROOT, FIXTURES)
MODEL = os.path.join(FIXTURES, "tiny", "model-q8_0.gguf")
RSS_SLACK_MB = 16          # 128 for a sanitizer build (make asan): its quarantine holds
                           # freed memory
MSG = [{"role": "user", "content": "Hi"}]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, log_path):
        self.port = free_port()
        self.log = open(log_path, "w")
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
        self.proc = subprocess.Popen(
            [os.path.join(BIN, "rs-serve"), "-m", MODEL, "--backend", "cpu", "-t", "1",
             "--host", "127.0.0.1", "--port", str(self.port), "--queue", "4"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        end = time.monotonic() + 60
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("rs-serve exited %d" % self.proc.returncode)
            if status(self.port, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 1) == 200:
                return
            time.sleep(0.1)
        raise RuntimeError("rs-serve did not start")

    def worker_rss_mb(self):
        try:
            with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
                pid = int(f.read().split()[0])
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024
        except (OSError, IndexError, ValueError):
            return -1
        return -1

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return -9
        self.log.close()
        return self.proc.returncode


# ---- raw HTTP ----

def exchange(port, data, timeout=10, pause=None):
    """Send DATA (bytes, or a list of pieces sent PAUSE seconds apart) and
    read until the server closes or TIMEOUT; returns the bytes, with
    <TIMEOUT> or <RESET> appended when that is how it ended."""
    got = b""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        for piece in data if isinstance(data, list) else [data]:
            s.sendall(piece)
            if pause:
                time.sleep(pause)
        while True:
            c = s.recv(65536)
            if not c:
                break
            got += c
    except socket.timeout:
        got += b"<TIMEOUT>"
    except (ConnectionResetError, BrokenPipeError):
        got += b"<RESET>"
    finally:
        s.close()
    return got


def responses(raw):
    """[(status, body)] of the responses in RAW (Content-Length framed)."""
    out = []
    while raw.startswith(b"HTTP/1."):
        head, _, rest = raw.partition(b"\r\n\r\n")
        st = int(head[9:12])
        n = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                n = int(v)
            if k.strip().lower() == b"transfer-encoding":
                n = len(rest)
        out.append((st, rest[:n], head.lower()))
        raw = rest[n:]
    return out


def status(port, data, timeout=10):
    try:
        r = responses(exchange(port, data, timeout))
    except OSError:
        return None
    return r[0][0] if r else None


def post(path, body, headers=b""):
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    return (b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Connection: close\r\n%sContent-Length: %d\r\n\r\n%s"
            % (path.encode(), headers, len(body), body))


HEALTH = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"


def enveloped(body, code):
    try:
        e = json.loads(body)["error"]
        return e["code"] == code and bool(e["message"])
    except (ValueError, KeyError, TypeError):
        return False


# ---- the suite ----

class Suite:
    def __init__(self, srv):
        self.srv = srv
        self.port = srv.port
        self.rows = []
        self.statuses = []

    def row(self, name, sent, got, ok):
        self.rows.append((name, sent, got, ok))

    def one(self, name, sent, data, want, envelope=True, timeout=10):
        """DATA must get a status in WANT (with the envelope when asked)."""
        raw = exchange(self.port, data, timeout)
        r = responses(raw)
        if not r:
            tail = raw[-12:].decode("latin-1") if raw else "nothing"
            self.row(name, sent, "no response (%s)" % tail, False)
            return
        st, body, head = r[0]
        self.statuses.append(st)
        ok = st in want and (not envelope or enveloped(body, st))
        self.row(name, sent, "%d%s" % (st, ", envelope" if enveloped(body, st) else ""), ok)

    def pressure(self, n=100):
        """N connections that sent a byte and wait: the server is under
        pressure (its header timeout is short) while they are open."""
        idle = [socket.create_connection(("127.0.0.1", self.port)) for _ in range(n)]
        for s in idle:
            s.sendall(b"G")
        return idle

    def health_ok(self, timeout=2):
        t = time.monotonic()
        st = status(self.port, HEALTH, timeout)
        return st == 200, time.monotonic() - t

    # -- bodies --

    def bodies(self):
        chat = "/v1/chat/completions"
        self.one("malformed JSON", "{\"messages\": [", post(chat, b'{"messages": ['), {400})
        self.one("wrong type: messages", "messages: 5", post(chat, {"messages": 5}), {400})
        self.one("wrong type: max_tokens", "max_tokens: \"x\"",
                 post(chat, {"messages": MSG, "max_tokens": "x"}), {400})
        self.one("wrong type: temperature", "temperature: [1]",
                 post(chat, {"messages": MSG, "temperature": [1]}), {400})
        self.one("body not an object", "[1, 2]", post(chat, b"[1, 2]"), {400})
        self.one("invalid UTF-8", "\\xff in content",
                 post(chat, b'{"messages": [{"role": "user", "content": "\xff"}]}'), {400})
        # §1.7: read as U+FFFD, not refused (a client's cut JavaScript string)
        self.one("lone surrogate escape", "\\ud83d alone in content",
                 post(chat, b'{"messages": [{"role": "user", "content": "a\\ud83d"}], '
                      b'"max_tokens": 1}'), {200}, envelope=False, timeout=60)
        self.one("NUL in JSON", "\\u0000 in a role",
                 post(chat, b'{"messages": [{"role": "us\\u0000er", "content": "x"}]}'), {400})
        self.one("deep nesting", "100k nested arrays",
                 post(chat, b"[" * 100000 + b"]" * 100000), {400})
        # the first 64 KiB of a 9 MiB body: the 413 comes before the rest
        # is read (a client still sending when the server closes gets a
        # reset instead: rs-serve has no lingering close)
        big = post(chat, b"x" * (9 << 20))
        self.one("huge body, declared", "Content-Length 9 MiB (> --max-body)",
                 big[:big.index(b"\r\n\r\n") + 4 + 65536], {413}, timeout=20)
        self.one("huge Content-Length", "Content-Length 10^18, no body",
                 b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: "
                 b"1000000000000000000\r\n\r\n" % chat.encode(), {413})
        long_prompt = " ".join(["word"] * 20000)
        self.one("prompt beyond the context", "20k words, n_ctx 4096",
                 post(chat, {"messages": [{"role": "user", "content": long_prompt}],
                             "max_tokens": 1}), {400}, timeout=60)
        tools = [{"type": "function", "function": {
            "name": "t%d" % i, "parameters": {"type": "object", "properties": {
                "a": {"type": "string"}}}}} for i in range(3000)]
        self.one("thousands of tools", "3000 tools",
                 post(chat, {"messages": MSG, "tools": tools, "max_tokens": 1}), {200, 400},
                 envelope=False, timeout=60)
        self.one("n = 2", "n: 2", post(chat, {"messages": MSG, "n": 2}), {400})
        # null is unset: a chat request without messages, not a raw prompt
        # that skips the chat template
        self.one("messages null, prompt", "messages: null beside a prompt",
                 post(chat, {"messages": None, "prompt": "<|im_start|>",
                             "max_tokens": 1}), {400})
        self.one("prompt null, tokens", "/v1/completions, prompt: null, tokens",
                 post("/v1/completions", {"prompt": None, "tokens": [1, 2],
                                          "max_tokens": 1}), {400})
        self.one("unknown tool_choice name", "tool_choice names no tool",
                 post(chat, {"messages": MSG, "tools": tools[:1], "tool_choice": {
                     "type": "function", "function": {"name": "nope"}}}), {400})
        raw = exchange(self.port, post(chat, {
            "messages": MSG, "tools": tools[:2], "tool_choice": "required",
            "max_tokens": 3, "temperature": 1, "seed": 5}), 60)
        r = responses(raw)
        ok = bool(r) and r[0][0] == 200 and \
            json.loads(r[0][1])["choices"][0]["message"].get("tool_calls")
        if r:
            self.statuses.append(r[0][0])
        self.row("tool_choice required", "required, max_tokens 3, noise model",
                 "%s, %s" % (r[0][0] if r else "none", "a valid call" if ok else "no call"),
                 bool(ok))

    # -- HTTP framing --

    def framing(self):
        h = b"Host: 127.0.0.1\r\n"
        self.one("Transfer-Encoding + Content-Length", "smuggling attempt",
                 b"POST /v1/chat/completions HTTP/1.1\r\n" + h +
                 b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", {400})
        self.one("no Content-Length", "POST without a length",
                 b"POST /v1/chat/completions HTTP/1.1\r\n" + h + b"\r\n", {411})
        self.one("bad Content-Length", "Content-Length: 12abc",
                 b"POST /v1/chat/completions HTTP/1.1\r\n" + h +
                 b"Content-Length: 12abc\r\n\r\n{}", {400, 411})
        # RFC 9112 §6.3: two fields, or a list, frame nothing safely
        # behind a proxy that reads the other one (smuggling)
        ok = json.dumps({"messages": MSG, "max_tokens": 1}).encode()
        self.one("two Content-Lengths", "a valid body's length, then +50",
                 b"POST /v1/chat/completions HTTP/1.1\r\n" + h +
                 b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n%s"
                 % (len(ok), len(ok) + 50, ok), {400}, timeout=30)
        self.one("Content-Length list", "Content-Length: N, N",
                 b"POST /v1/chat/completions HTTP/1.1\r\n" + h +
                 b"Content-Length: %d, %d\r\n\r\n%s" % (len(ok), len(ok), ok),
                 {400}, timeout=30)
        self.one("100 KB target", "a 100 KB query string",
                 b"GET /health?" + b"a" * 100000 + b" HTTP/1.1\r\n" + h + b"\r\n",
                 {414})
        self.one("100 KB header", "one 100 KB header field",
                 b"GET /health HTTP/1.1\r\n" + h + b"X-Big: " + b"a" * 100000 + b"\r\n\r\n",
                 {431, 400})
        self.one("garbage request line", "GARBAGE", b"GARBAGE\r\n" + h + b"\r\n", {400})
        self.one("binary noise", "4 KB of random bytes + CRLFCRLF",
                 os.urandom(4096).replace(b"\n", b"x") + b"\r\n\r\n", {400})
        self.one("HTTP/2.0 request line", "GET / HTTP/2.0",
                 b"GET /health HTTP/2.0\r\n" + h + b"\r\n", {505})
        self.one("long URI", "3000-byte path",
                 b"GET /" + b"a" * 3000 + b" HTTP/1.1\r\n" + h + b"\r\n", {414})
        self.one("no Host", "HTTP/1.1 without Host",
                 b"GET /health HTTP/1.1\r\nX-A: b\r\n\r\n", {400})
        self.one("non-ASCII header", "X-A: \\xff",
                 b"GET /health HTTP/1.1\r\n" + h + b"X-A: \xff\r\n\r\n", {400})
        self.one("foreign Host", "Host: evil.example",
                 b"GET /v1/models HTTP/1.1\r\nHost: evil.example\r\n\r\n", {421})
        self.one("foreign Origin", "Origin: http://evil.example",
                 post("/v1/chat/completions", {"messages": MSG},
                      b"Origin: http://evil.example\r\n"), {403})
        self.one("unknown method", "BREW /health",
                 b"BREW /health HTTP/1.1\r\n" + h + b"\r\n", {400})
        self.one("unknown path", "GET /nope", b"GET /nope HTTP/1.1\r\n" + h + b"\r\n", {404})
        self.one("wrong method", "GET /v1/chat/completions",
                 b"GET /v1/chat/completions HTTP/1.1\r\n" + h + b"\r\n", {405})
        # pipelining: every request answered, or the first with
        # "connection: close" and then a clean close
        raw = exchange(self.port, b"GET /health HTTP/1.1\r\n" + h + b"\r\n"
                       b"GET /v1/models HTTP/1.1\r\n" + h + b"\r\n", 5)
        r = responses(raw)
        ok = bool(r) and not raw.endswith(b"<TIMEOUT>") and (
            len(r) == 2 or b"connection: close" in r[0][2])
        self.statuses += [x[0] for x in r]
        self.row("pipelined GETs", "two requests in one write",
                 "%d answered%s" % (len(r), ", then closed" if ok and len(r) == 1 else ""),
                 ok)
        body = json.dumps({"messages": MSG, "max_tokens": 1}).encode()
        raw = exchange(self.port, b"POST /v1/chat/completions HTTP/1.1\r\n" + h +
                       b"Content-Length: %d\r\n\r\n%s" % (len(body), body) +
                       b"GET /health HTTP/1.1\r\n" + h + b"\r\n", 30)
        r = responses(raw)
        ok = bool(r) and r[0][0] == 200 and not raw.endswith(b"<TIMEOUT>") and (
            len(r) == 2 or b"connection: close" in r[0][2])
        self.statuses += [x[0] for x in r]
        self.row("pipelined POST + GET", "a chat request and /health in one write",
                 "%d answered%s" % (len(r), ", then closed" if ok and len(r) == 1 else ""),
                 ok)

    # -- slow clients --

    def slow(self):
        n = 512
        socks = []
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            socks.append(s)
        worst = 0
        oks = 0
        for _ in range(5):
            ok, dt = self.health_ok(5)
            oks += ok
            worst = max(worst, dt)
        self.row("slow-loris", "%d half-open connections, then /health x5" % n,
                 "%d/5 answered, slowest %.0f ms" % (oks, worst * 1e3),
                 oks == 5 and worst < 1.0)
        # under pressure the header timeout is short: 408 with the envelope
        time.sleep(3)
        closed = enveloped_408 = 0
        for s in socks:
            s.settimeout(2)
            try:
                got = b""
                while True:
                    c = s.recv(4096)
                    if not c:
                        break
                    got += c
                closed += 1
                r = responses(got)
                enveloped_408 += bool(r) and r[0][0] == 408 and enveloped(r[0][1], 408)
            except (socket.timeout, OSError):
                pass
            s.close()
        self.row("slow-loris timeout", "the %d, 3 s later" % n,
                 "%d closed, %d with a 408 envelope" % (closed, enveloped_408),
                 closed == n)
        # a trickled header under pressure (100 idle connections): one
        # byte every 0.25 s, reading between the bytes
        idle = self.pressure()
        t = time.monotonic()
        req = b"GET /health HTTP/1.1\r\nX-Pad: " + b"a" * 200 + b"\r\n\r\n"
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        got = b""
        try:
            for i in range(len(req)):
                s.sendall(req[i:i + 1])
                s.settimeout(0.25)
                try:
                    c = s.recv(4096)
                    got += c
                    if not c or got:
                        break
                except socket.timeout:
                    pass
            s.settimeout(5)
            while True:
                c = s.recv(4096)
                if not c:
                    break
                got += c
        except OSError:
            pass
        s.close()
        r = responses(got)
        self.row("byte-at-a-time header", "1 byte / 0.25 s, under pressure",
                 "%s after %.1f s" % ("%d%s" % (r[0][0], ", envelope" if enveloped(
                     r[0][1], r[0][0]) else "") if r else "nothing",
                     time.monotonic() - t),
                 bool(r) and r[0][0] == 408 and enveloped(r[0][1], 408))
        for s in idle:
            s.close()
        # a stalled body, under pressure
        idle = self.pressure()
        t = time.monotonic()
        raw = exchange(self.port, b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1"
                       b"\r\nContent-Length: 1000\r\n\r\n{\"mess", 10)
        r = responses(raw)
        self.row("stalled body", "10 of 1000 bytes, under pressure",
                 "%s after %.1f s" % ("%d%s" % (r[0][0], ", envelope" if enveloped(
                     r[0][1], r[0][0]) else "") if r else "nothing",
                     time.monotonic() - t),
                 bool(r) and r[0][0] == 408 and enveloped(r[0][1], 408))
        for s in idle:
            s.close()
        # connect and leave at once
        for _ in range(1000):
            socket.create_connection(("127.0.0.1", self.port)).close()
        ok, dt = self.health_ok()
        self.row("connect flood", "1000 connect + close", "healthy (%.0f ms)" % (dt * 1e3), ok)

    # -- disconnects at every stage --

    def disconnects(self):
        body = json.dumps({"messages": MSG, "max_tokens": 64, "stream": True}).encode()
        req = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               b"Content-Length: %d\r\n\r\n" % len(body)) + body
        stages = [("in the request line", req[:10]),
                  ("in the headers", req[:60]),
                  ("after the headers", req[:req.index(b"\r\n\r\n") + 4]),
                  ("in the body", req[:-10]),
                  ("after the request", req),
                  ("after the first event", req)]
        for name, data in stages:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=30)
            s.sendall(data)
            if name == "after the first event":
                s.recv(1)
            elif name == "after the request":
                time.sleep(0.05)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            s.close()
            ok, dt = self.health_ok()
            self.row("disconnect " + name, "%d bytes, then RST" % len(data),
                     "healthy" if ok else "NOT healthy", ok)

    # -- floods --

    def flood(self, label):
        """64 clients x 20 keep-alive /health, and 48 short chats at once."""
        errs = []
        lock = threading.Lock()
        lat = []

        def health_client():
            try:
                s = socket.create_connection(("127.0.0.1", self.port), timeout=20)
                for _ in range(20):
                    t = time.monotonic()
                    s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                    got = b""
                    while b'"ok"}' not in got:
                        c = s.recv(4096)
                        if not c:
                            raise OSError("closed")
                        got += c
                    with lock:
                        lat.append(time.monotonic() - t)
                        self.statuses.append(int(got[9:12]))
                s.close()
            except OSError as e:
                with lock:
                    errs.append(str(e))

        def chat_client():
            st = status(self.port, post("/v1/chat/completions",
                                        {"messages": MSG, "max_tokens": 4}), 120)
            with lock:
                if st is None:
                    errs.append("no answer")
                else:
                    self.statuses.append(st)
                    codes.append(st)

        codes = []
        ts = [threading.Thread(target=health_client) for _ in range(64)]
        ts += [threading.Thread(target=chat_client) for _ in range(48)]
        t0 = time.monotonic()
        for t in ts:
            t.start()
        for t in ts:
            t.join(180)
        lat.sort()
        p99 = lat[int(len(lat) * 0.99) - 1] * 1e3 if lat else -1
        self.row("flood " + label, "1280 keep-alive /health + 48 chats at once",
                 "%d health in %.1f s (p99 %.0f ms), chats %s, %d errors" % (
                     len(lat), time.monotonic() - t0, p99,
                     "/".join("%d:%d" % (c, codes.count(c)) for c in sorted(set(codes))),
                     len(errs)),
                 not errs and set(codes) <= {200, 503} and len(lat) == 1280)

    def run(self):
        self.bodies()
        self.framing()
        self.slow()
        self.disconnects()
        self.flood("1")
        rss1 = self.srv.worker_rss_mb()
        self.flood("2")
        rss2 = self.srv.worker_rss_mb()
        with open(os.path.join(BIN, "rs-serve"), "rb") as f:
            slack = 128 if b"__asan_init" in f.read() else RSS_SLACK_MB
        self.row("RSS after the floods", "worker VmRSS, flood 1 vs 2",
                 "%.1f MB -> %.1f MB" % (rss1, rss2),
                 rss1 > 0 and rss2 - rss1 < slack)
        # 505 is HTTP's answer to "GET / HTTP/2.0" (a case above), not a
        # server failure
        bad = sorted({s for s in self.statuses if s >= 500 and s not in (503, 505)})
        self.row("no 5xx but 503", "%d statuses seen" % len(self.statuses),
                 "5xx: %s" % (bad or "none"), not bad)
        ok, dt = self.health_ok()
        self.row("healthy at the end", "GET /health", "200" if ok else "no", ok)
        alive = self.srv.proc.poll() is None
        rc = self.srv.stop()
        self.row("no crash", "SIGTERM at the end",
                 "exit %d" % rc if alive else "died before the end", alive and rc == 0)


def table(rows):
    lines = ["| case | sent | outcome | result |", "|---|---|---|---|"]
    for name, sent, got, ok in rows:
        lines.append("| %s | %s | %s | %s |" % (name, sent, got, "pass" if ok else "FAIL"))
    lines.append("")
    lines.append("%d cases, %d failed" % (len(rows), sum(not r[3] for r in rows)))
    return "\n".join(lines)


def main(argv=None, log_dir=None):
    argv = sys.argv[1:] if argv is None else argv
    log_dir = log_dir or os.environ.get("TMPDIR", "/tmp")
    srv = Server(os.path.join(log_dir, "hostile-rs-serve.log"))
    suite = Suite(srv)
    try:
        suite.run()
    finally:
        if srv.proc.poll() is None:
            srv.stop()
    out = table(suite.rows)
    print(out)
    if "--table" in argv:
        with open(argv[argv.index("--table") + 1], "w") as f:
            f.write(out + "\n")
    return suite.rows


if __name__ == "__main__":
    rows = main()
    sys.exit(0 if all(r[3] for r in rows) else 1)
