"""What the client's tests share: the servers the Go test started (e2e/pyclient_test.go),
owners of their own, inputs, and a proxy that breaks answers off as a failing network does.

The servers run the stand-in tools: boltz2, BoltzGen, RFdiffusion3 and the ESM/SaProt
models answer like the real tools, quickly. The limited server runs the test engine, whose
job names choose what a job does ("ok" ends at once, "hang" runs until canceled).
"""

from __future__ import annotations

import asyncio
import http.server
import logging
import os
import threading
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

import httpx
import pytest

import chaperone

REPO = Path(__file__).resolve().parents[3]
PACKAGE = REPO / "clients" / "python"

SEQ = "MKTAYIAKQRQISFVKSHFSRQ"
BINDER_SPEC = "entities:\n  - protein: {id: B, sequence: 20..30}\n"
#: A design the BoltzGen stand-in takes 0.2 s per design for, printing progress.
SLOW_SPEC = BINDER_SPEC + "# boltzgentest: slow\n"
#: A design the stand-in works on for five minutes, unless canceled.
HANGING_SPEC = BINDER_SPEC + "# boltzgentest: hang\n"


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(
            f"${name} is not set: these tests run against servers that go test ./e2e -run TestPythonClient starts"
        )
    return value


@pytest.fixture(scope="session")
def server_url() -> str:
    """The server with every stand-in tool, and quotas one owner can hold hundreds of jobs in."""
    return _env("CHAPERONE_TEST_URL")


@pytest.fixture(scope="session")
def limited_url() -> str:
    """A server on the test engine that lets an owner have one active job."""
    return _env("CHAPERONE_TEST_LIMITED_URL")


@pytest.fixture(scope="session")
def broken_url() -> str:
    """A server whose store is closed: every call that reads it is a 500."""
    return _env("CHAPERONE_TEST_BROKEN_URL")


@pytest.fixture(scope="session")
def keys() -> Dict[str, str]:
    """API keys of the main server, each an owner of its own, by the test they are for."""
    return dict(kv.split("=", 1) for kv in _env("CHAPERONE_TEST_KEYS").split(","))


@pytest.fixture(autouse=True)
def _no_ambient_config(monkeypatch: pytest.MonkeyPatch) -> None:
    # A test sets what it means to use; nothing leaks in from the environment.
    monkeypatch.delenv("CHAPERONE_URL", raising=False)
    monkeypatch.delenv("CHAPERONE_API_KEY", raising=False)


@pytest.fixture
def client(server_url: str) -> Iterator[chaperone.Client]:
    with chaperone.Client(server_url) as c:
        yield c


def run(coro: Any) -> Any:
    """Run a coroutine to its end: the async tests are plain functions that call this."""
    return asyncio.run(coro)


class Records(logging.Handler):
    """The client's log records, and an event set when one matches."""

    def __init__(self, match: Callable[[logging.LogRecord], bool]) -> None:
        super().__init__(logging.DEBUG)
        self.match, self.event = match, threading.Event()
        self.records: List[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if self.match(record):
            self.event.set()


@pytest.fixture
def client_log() -> Iterator[Callable[[Callable[[logging.LogRecord], bool]], Records]]:
    """Attach a Records handler to the client's logger for the test."""
    logger = logging.getLogger("chaperone")
    handlers: List[Records] = []
    level = logger.level

    def attach(match: Callable[[logging.LogRecord], bool]) -> Records:
        h = Records(match)
        logger.addHandler(h)
        logger.setLevel(logging.DEBUG)
        handlers.append(h)
        return h

    yield attach
    for h in handlers:
        logger.removeHandler(h)
    logger.setLevel(level)


def pdb_target(residues: int) -> str:
    """A PDB text of one protein chain A: a CA atom per residue, along a line."""
    lines = ["HEADER    DESIGN TARGET"]
    for i in range(1, residues + 1):
        lines.append(f"ATOM  {i:5d}  CA  GLU A{i:4d}    {3.8 * i:8.3f}{0.0:8.3f}{0.0:8.3f}  1.00 20.00           C")
    return "\n".join(lines + ["TER", "END"]) + "\n"


@pytest.fixture(scope="session")
def paged_jobs(server_url: str, keys: Dict[str, str]) -> List[str]:
    """120 jobs of an owner of their own, newest first, all ended: more than a page of 100."""
    with chaperone.Client(server_url, api_key=keys["paging"]) as c:
        jobs = [c.embed("MKV", model="esmc-300m", name=f"page-{i}") for i in range(120)]
        c.wait_all(jobs, progress=False)
    return [j.id for j in reversed(jobs)]


# A proxy that fails as networks and edges do ---------------------------------------------


class Seen:
    def __init__(self, method: str, path: str, headers: Dict[str, str], status: int) -> None:
        self.method, self.path, self.status = method, path, status
        self.range = headers.get("range")
        self.if_range = headers.get("if-range")
        self.user_agent = headers.get("user-agent")


class FailingProxy:
    """A real HTTP proxy in front of a server. It forwards every request and records it;
    ``cut(match, after, times)`` breaks off the next answers to matching requests after
    that many body bytes (the connection closes mid-body, as a failing network does), and
    ``refuse(match)`` answers matching requests itself with a 403 "error code: 1010", as an
    edge's bot filter does; ``fail(match, status, retry_after, times)`` answers the next
    matching requests itself with that status, as a proxy whose upstream is away does."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.seen: List[Seen] = []
        self._cuts: List[List[Any]] = []
        self._refuse: Optional[Callable[[Dict[str, str]], bool]] = None
        self._fails: List[List[Any]] = []
        self._http = httpx.Client(base_url=upstream, timeout=120)
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                headers = {k.lower(): v for k, v in self.headers.items()}
                body = self.rfile.read(int(headers.get("content-length") or 0))
                if proxy._refuse and proxy._refuse(headers):
                    proxy.seen.append(Seen(self.command, self.path, headers, 403))  # before the client can look
                    self._answer(403, {"content-type": "text/plain"}, b"error code: 1010", None)
                    return
                for f in proxy._fails:
                    if f[3] > 0 and f[0](self.path):
                        f[3] -= 1
                        extra = {"retry-after": str(f[2])} if f[2] is not None else {}
                        proxy.seen.append(Seen(self.command, self.path, headers, f[1]))
                        self._answer(f[1], {"content-type": "text/html", **extra}, b"<html>upstream away</html>", None)
                        return
                fwd = {k: v for k, v in headers.items() if k not in ("host", "connection", "content-length")}
                req = proxy._http.build_request(self.command, self.path, headers=fwd, content=body)
                res = proxy._http.send(req, stream=True)
                try:
                    data = res.read()
                finally:
                    res.close()
                cut = proxy._take_cut(self.path, headers)
                out = {
                    k: v
                    for k, v in res.headers.items()
                    if k not in ("transfer-encoding", "connection", "content-length")
                }
                proxy.seen.append(Seen(self.command, self.path, headers, res.status_code))
                self._answer(res.status_code, out, data, cut)

            def _answer(self, status: int, headers: Dict[str, str], data: bytes, cut: Optional[int]) -> None:
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                if cut is not None:
                    self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data if cut is None else data[:cut])
                self.wfile.flush()
                if cut is not None:
                    self.close_connection = True

            do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _forward

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def cut(self, match: Callable[[str, Dict[str, str]], bool], after: int, times: int = 1) -> None:
        self._cuts.append([match, after, times])

    def refuse(self, match: Optional[Callable[[Dict[str, str]], bool]]) -> None:
        self._refuse = match

    def fail(
        self, match: Callable[[str], bool], status: int, retry_after: Optional[int] = None, times: int = 1
    ) -> None:
        self._fails.append([match, status, retry_after, times])

    def _take_cut(self, path: str, headers: Dict[str, str]) -> Optional[int]:
        for c in self._cuts:
            if c[2] > 0 and c[0](path, headers):
                c[2] -= 1
                return int(c[1])
        return None

    def requests(self, path_part: str) -> List[Seen]:
        return [s for s in self.seen if path_part in s.path]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._http.close()


@pytest.fixture
def proxy(server_url: str) -> Iterator[FailingProxy]:
    p = FailingProxy(server_url)
    yield p
    p.close()


# Figures the issue asks for, printed at the end of the run ------------------------------

FIGURES: Dict[str, str] = {}


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if FIGURES:
        terminalreporter.section("figures")
        for name, value in FIGURES.items():
            terminalreporter.write_line(f"{name}: {value}")
