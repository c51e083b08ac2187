"""Fixtures for rs-serve's integration tests: servers on 127.0.0.1.

Each server runs build/bin/rs-serve (or $RS_BIN/rs-serve) on the tiny
fixture model with the CPU backend, on a free loopback port, and is stopped
with SIGTERM at the end of the module; its stderr (the access log) is kept
in a file that tests can read.  Everything has a timeout, so a hung server
fails a test instead of hanging the run.
"""
import json
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, os.environ.get("RS_BIN", "build/bin"))
FIXTURES = os.environ.get("RS_FIXTURES", os.path.join(ROOT, "..", "shared", "fixtures"))
if not os.path.isabs(FIXTURES):
    FIXTURES = os.path.join(ROOT, FIXTURES)
MODEL = os.path.join(FIXTURES, "tiny", "model-q8_0.gguf")


def fixture(rel):
    path = os.path.join(FIXTURES, rel)
    if not os.path.exists(path):
        pytest.fail(f"fixture missing: {path}")
    return path


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One rs-serve process."""

    def __init__(self, tmp, *args, name="srv", env=None):
        self.port = free_port()
        tls = "--tls-cert" in args
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.ssl = ssl._create_unverified_context() if tls else None
        self.log_path = os.path.join(tmp, f"{name}-{self.port}.log")
        self.args = [os.path.join(BIN, "rs-serve"), "-m", fixture("tiny/model-q8_0.gguf"),
                     "--backend", "cpu", "-t", "1", "--host", "127.0.0.1",
                     "--port", str(self.port), *args]
        self.log = open(self.log_path, "w")
        # Kore keeps its configuration allocated until the process ends:
        # LeakSanitizer (make asan) would report that and change the exit
        # status, so leak checking is off for the server (the Check suites
        # cover the library's leaks)
        env = dict(os.environ, **(env or {}))
        env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, env=env,
                                     stdout=subprocess.PIPE, stderr=self.log)
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise

    def wait_ready(self, timeout=30):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                pytest.fail(f"rs-serve exited {self.proc.returncode}: {self.read_log()}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2,
                                            context=self.ssl) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.05)
        pytest.fail("rs-serve did not become healthy in %ds: %s" % (timeout, self.read_log()))

    def read_log(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def log_lines(self, needle):
        return [l for l in self.read_log().splitlines() if needle in l]

    def stop(self):
        """SIGTERM, then the exit status; a server that does not stop is
        killed with its worker (its only child) and fails the test."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                children = self.children()
                self.proc.kill()
                self.proc.wait()
                for pid in children:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                pytest.fail("rs-serve did not stop on SIGTERM")
        if not self.log.closed:
            self.log.close()
        return self.proc.returncode

    def stop_clean(self):
        """Stop; the exit status must be 0, else the server's log shows."""
        rc = self.stop()
        assert rc == 0, f"rs-serve exited {rc}:\n{self.read_log()}"

    def children(self):
        try:
            with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
                return [int(p) for p in f.read().split()]
        except OSError:
            return []


def start(tmp_path_factory, *args, name="srv", env=None):
    return Server(str(tmp_path_factory.mktemp(name)), *args, name=name, env=env)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """rs-serve as installed: default flags (it drafts: --draft auto)."""
    s = start(tmp_path_factory)
    yield s
    s.stop_clean()


@pytest.fixture(scope="module")
def plain_server(tmp_path_factory):
    """rs-serve decoding one token a pass (--draft none): plain decoding
    to compare a drafter's output with."""
    s = start(tmp_path_factory, "--draft", "none", name="plain")
    yield s
    s.stop_clean()


def rs_generate(request, *args, stream=False, timeout=120):
    """The engine's own answer to REQUEST (a dict) from rs-generate."""
    cmd = [os.path.join(BIN, "rs-generate"), "-m", fixture("tiny/model-q8_0.gguf"),
           "--backend", "cpu", "-t", "1", *args]
    if stream:
        cmd.append("--stream")
    p = subprocess.run(cmd, input=json.dumps(request) + "\n", capture_output=True,
                       text=True, timeout=timeout)
    assert p.returncode == 0, p.stderr
    lines = [json.loads(l) for l in p.stdout.splitlines()]
    return lines if stream else lines[-1]


def http(url, method="GET", body=None, headers=None, timeout=60):
    """(status, headers with lower-case names, body bytes) of one request."""
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()
