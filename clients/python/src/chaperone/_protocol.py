"""The client's logic, written once for both clients.

Each operation is a generator that yields what it needs done and is sent what came of it:
a ``Call`` (one HTTP request, made once) is answered with an ``Answer`` or a ``Failure``;
a ``Pump`` (stream a body into a file) with the bytes written and the error that stopped
it; a ``Sleep`` with None; an ``Emit`` hands a value to the caller of an iterator.
``Client`` runs these generators with blocking I/O, ``AsyncClient`` with asyncio, so the
two behave alike by construction: retries, long polls, resumed downloads, followed logs
and paging are here, and nowhere else.
"""

from __future__ import annotations

import codecs
import json
import logging
import math
import os
import random
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Dict, Generator, List, Mapping, Optional, Tuple, TypeVar, Union
from urllib.parse import quote, urlencode, urlsplit

from ._errors import (
    ChaperoneError,
    NetworkError,
    NotFoundError,
    RangeNotSatisfiableError,
    ResultsNotReadyError,
    WaitTimeout,
    error_from_answer,
)
from ._types import TERMINAL, Results, parse_results

log = logging.getLogger("chaperone")

DEFAULT_URL = "http://127.0.0.1:8080"
#: Statuses after which another attempt may succeed.
RETRYABLE = frozenset((429, 502, 503, 504))
#: The longest hold a server grants (Prefer: wait=60).
MAX_HOLD = 60
#: Long polls one client holds open at once: a server holds that many for one client (its
#: address) and answers more at once, unheld; chaperone's default bound. Polls beyond it
#: wait in the client for a turn instead of turning into a busy loop.
MAX_HELD = 16
#: Connections one client opens at most, well under the 64 a server lets one client hold.
MAX_CONNECTIONS = 32
#: What the client calls itself after an edge's bot filter refused it (403, error 1010).
BROWSER_AGENT = "Mozilla/5.0 (compatible; {agent})"
#: Suffixes of the files a download keeps beside its destination until it completes.
PART, ETAG = ".part", ".part.etag"

T = TypeVar("T")


@dataclass
class Call:
    """One HTTP request. ``path`` is under the base URL (the API's links and artifact urls
    are such paths); ``hold`` is how long the server may hold the answer (Prefer: wait), so
    the read timeout grows by that much; ``stream`` leaves a success's body unread."""

    method: str
    path: str
    body: Optional[bytes] = None
    headers: Dict[str, str] = field(default_factory=dict)
    hold: float = 0.0
    stream: bool = False
    #: A 404 after a retry means an earlier attempt did it (a delete).
    gone_ok: bool = False


@dataclass
class Answer:
    status: int
    headers: Mapping[str, str]  # case-insensitive (httpx.Headers)
    body: bytes
    response: Any  # the httpx.Response; still open when streamed


@dataclass
class Failure:
    """No answer: the connection could not be made, or broke before the answer was whole."""

    error: BaseException


@dataclass
class Pump:
    """Stream the body of a streamed answer into sink (None: discard it), then close it."""

    answer: Answer
    sink: Optional[IO[bytes]]


@dataclass
class Sleep:
    seconds: float


@dataclass
class Emit:
    value: Any


Action = Union[Call, Pump, Sleep, Emit]
Op = Generator[Action, Any, T]


@dataclass(frozen=True)
class Config:
    """Where the server is, who the caller is, and how patient the client is."""

    base_url: str
    api_key: Optional[str]
    user_agent: str
    headers: Mapping[str, str]
    timeout: float
    #: Retries after a failed connection, a 502 or 504, or a 429/503 without Retry-After.
    retries: int
    #: Seconds of Retry-After one call waits out in all before it raises.
    patience: float
    backoff: float = 0.5
    max_backoff: float = 30.0

    @classmethod
    def resolve(
        cls,
        base_url: Optional[str],
        api_key: Optional[str],
        *,
        timeout: float,
        retries: int,
        patience: float,
        user_agent: Optional[str],
        headers: Optional[Mapping[str, str]],
    ) -> Config:
        from . import __version__

        url = (base_url or os.environ.get("CHAPERONE_URL") or DEFAULT_URL).rstrip("/")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
            raise ValueError(f"chaperone: server URL {url!r}: want http:// or https://, a host, and no query")
        key = api_key if api_key is not None else os.environ.get("CHAPERONE_API_KEY") or None
        if retries < 0 or patience < 0 or timeout <= 0:
            raise ValueError("chaperone: retries and patience must be ≥ 0, timeout > 0")
        agent = user_agent or f"chaperone-python/{__version__}"
        return cls(url, key, agent, dict(headers or {}), timeout, retries, patience)

    def timeout_for(self, call: Call) -> Any:
        import httpx

        # No bound on waiting for one of the client's connections: a queue of polls is no
        # failure.
        return httpx.Timeout(self.timeout, read=self.timeout + call.hold, pool=None)

    def url(self, path: str) -> str:
        return self.base_url + path

    def request_headers(self, call: Call) -> Dict[str, str]:
        h = {"User-Agent": self.user_agent, "Accept": "application/json, application/problem+json;q=0.9, */*;q=0.8"}
        if self.api_key:
            h["Authorization"] = "Bearer " + self.api_key
        if call.body is not None:
            h["Content-Type"] = "application/json"
        h.update(self.headers)
        h.update(call.headers)
        return h

    def backoff_delay(self, failures: int) -> float:
        """The delay before retry number failures (1-based), drawn from the upper half of a
        doubling step so that clients that failed together do not retry together."""
        d = min(self.backoff * 2.0 ** (failures - 1), self.max_backoff)
        return d / 2 + random.uniform(0, d / 2)


def job_path(job_id: str, *sub: str) -> str:
    """The escaped path of a job or of something under it; each segment is escaped on its
    own, so no id or artifact path can step outside the job."""
    segs = [quote(job_id, safe="")]
    for s in sub:
        segs.extend(quote(p, safe="") for p in s.split("/"))
    return "/v1/jobs/" + "/".join(segs)


def json_body(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def decode(answer: Answer, what: str) -> Any:
    try:
        return json.loads(answer.body.decode("utf-8"))
    except ValueError as e:
        raise ChaperoneError(f"{what}: the answer is not JSON: {answer.body[:200]!r}") from e


# Sending, with retries ---------------------------------------------------------------------


def send(cfg: Config, call: Call) -> Op[Answer]:
    """Make the call until it succeeds or cannot: a failed connection, 502 or 504 again after
    a backoff, up to ``retries`` times; a 429 or 503 again after the Retry-After the server
    named, for as long as those waits add up to no more than ``patience`` (they are not
    counted as retries). Every call of this client is safe to repeat: reads are, cancel is,
    a delete whose retry finds the job gone is done, and a create carries an Idempotency-Key
    that is the same on every attempt, so a retried create never makes a second job."""
    announced = 0.0
    failures = 0
    while True:
        outcome = yield call
        if isinstance(outcome, Failure):
            failures += 1
            if failures > cfg.retries:
                raise NetworkError(call.method, cfg.url(call.path), failures, _reason(outcome.error)) from outcome.error
            delay = cfg.backoff_delay(failures)
            log.info("%s %s: %s; retrying in %.1f s", call.method, call.path, _reason(outcome.error), delay)
        elif outcome.status < 400 or (outcome.status == 404 and call.gone_ok and failures + announced > 0):
            answer: Answer = outcome
            return answer
        else:
            err = error_from_answer(outcome.status, outcome.headers, outcome.body, urlsplit(cfg.url(call.path)).path)
            if outcome.status == 403 and b"1010" in outcome.body and "User-Agent" not in call.headers:
                # An edge in front of the server (Cloudflare error 1010) filters the HTTP
                # client, not the request: the interface's remedy is the identical request
                # with a browser-like User-Agent, once.
                call.headers["User-Agent"] = BROWSER_AGENT.format(agent=cfg.user_agent)
                log.info(
                    "%s %s: 403 from an edge's bot filter; again as %s",
                    call.method,
                    call.path,
                    call.headers["User-Agent"],
                )
                continue
            if outcome.status not in RETRYABLE:
                raise err
            if err.retry_after is not None:
                if announced + err.retry_after > cfg.patience:
                    raise err
                announced += err.retry_after
                delay = err.retry_after + random.uniform(0, err.retry_after / 10)
                log.warning(
                    "%s %s: %d %s; waiting %.1f s as the server asks (patience left %.0f s)",
                    call.method,
                    call.path,
                    err.status,
                    err.detail or err.title,
                    delay,
                    cfg.patience - announced,
                )
            else:
                failures += 1
                if failures > cfg.retries:
                    raise err
                delay = cfg.backoff_delay(failures)
                log.info("%s %s: %d; retrying in %.1f s", call.method, call.path, err.status, delay)
        yield Sleep(delay)


def _reason(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def get_json(cfg: Config, path: str, headers: Optional[Dict[str, str]] = None, hold: float = 0.0) -> Op[Any]:
    answer = yield from send(cfg, Call("GET", path, headers=dict(headers or {}), hold=hold))
    return decode(answer, "GET " + path)


def call_json(cfg: Config, method: str, path: str, **kw: Any) -> Op[Any]:
    answer = yield from send(cfg, Call(method, path, **kw))
    return decode(answer, f"{method} {path}") if answer.body else None


# Creating and waiting ----------------------------------------------------------------------


def body_of(fields: Mapping[str, Any]) -> Dict[str, Any]:
    """A create's JSON body: the fields given, None left out."""
    return {k: v for k, v in fields.items() if v is not None}


def create(cfg: Config, path: str, body: Mapping[str, Any], key: Optional[str], wait: Optional[float]) -> Op[Any]:
    headers = {"Idempotency-Key": key or "chaperone-py-" + uuid.uuid4().hex}
    hold = 0.0
    if wait:
        hold = float(min(MAX_HOLD, math.ceil(wait)))
        headers["Prefer"] = f"wait={int(hold)}"
    return (yield from call_json(cfg, "POST", path, body=json_body(body), headers=headers, hold=hold))


def wait(
    cfg: Config, job: Dict[str, Any], timeout: Optional[float], poll: float, report: Callable[[Dict[str, Any]], None]
) -> Op[Dict[str, Any]]:
    """Long-poll the job with Prefer: wait until it is terminal. ``poll`` is the longest
    hold asked for (at most 60 s); the server answers as soon as the job ends."""
    start = time.monotonic()
    report(job)
    quick = 0  # answers in a row that came back at once although the job runs on
    while job.get("status") not in TERMINAL:
        left = math.inf if timeout is None else timeout - (time.monotonic() - start)
        if left <= 0:
            from ._types import JobState, build

            raise WaitTimeout(build(JobState, job), timeout or 0.0)
        hold = int(max(1, min(poll, MAX_HOLD, left if math.isinf(left) else math.ceil(left))))
        asked = time.monotonic()
        answer = yield from send(cfg, Call("GET", job_path(job["id"]), headers={"Prefer": f"wait={hold}"}, hold=hold))
        job = decode(answer, "GET job")
        report(job)
        # A server under load may answer at once (Prefer is a preference): then pause, so
        # that the loop never spins.
        if job.get("status") not in TERMINAL and time.monotonic() - asked < min(hold, 1) / 2:
            quick += 1
            yield Sleep(min(hold, 0.5 * quick))
        else:
            quick = 0
    return job


# Listing ---------------------------------------------------------------------------------


def list_page(cfg: Config, limit: Optional[int], cursor: Optional[str]) -> Op[Any]:
    query = {k: v for k, v in (("limit", limit), ("cursor", cursor)) if v is not None}
    return (yield from get_json(cfg, "/v1/jobs" + ("?" + urlencode(query) if query else "")))


def every_job(cfg: Config, page_size: int) -> Op[None]:
    """Emit every job of the caller, newest first, a page at a time by cursor."""
    cursor: Optional[str] = None
    while True:
        page = yield from list_page(cfg, page_size, cursor)
        for j in page.get("data") or []:
            yield Emit(j)
        cursor = page.get("next_cursor")
        if not page.get("has_more") or not cursor:
            return


# Results, logs ---------------------------------------------------------------------------


def results(cfg: Config, job_id: str) -> Op[Results]:
    data = yield from get_json(cfg, job_path(job_id, "results"))
    if not data.get("ready"):
        raise ResultsNotReadyError(job_id, str(data.get("status")))
    return parse_results(data)


def logs(cfg: Config, job_id: str) -> Op[str]:
    answer = yield from send(cfg, Call("GET", job_path(job_id, "logs"), headers={"Accept": "text/plain"}))
    return answer.body.decode("utf-8", "replace")


def follow_logs(cfg: Config, job_id: str, poll: float) -> Op[None]:
    """Emit the log as it grows, a chunk of text at a time, until the job has ended and its
    log is read to the end. Each read asks only for the bytes past those already read
    (Range); between reads the job is long-polled for up to ``poll`` seconds, which returns
    at once when it ends."""
    offset = 0
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    ended = False
    while True:
        headers = {"Accept": "text/plain"}
        if offset:
            headers["Range"] = f"bytes={offset}-"
        try:
            answer = yield from send(cfg, Call("GET", job_path(job_id, "logs"), headers=headers))
            data = answer.body
            if answer.status == 200 and offset:  # the server sent the whole log again
                data = data[offset:]
        except RangeNotSatisfiableError:
            data = b""  # nothing new
        offset += len(data)
        text = decoder.decode(data, final=ended)
        if text:
            yield Emit(text)
        if ended:
            return
        hold = int(max(1, min(poll, MAX_HOLD)))
        job = yield from get_json(cfg, job_path(job_id), headers={"Prefer": f"wait={hold}"}, hold=hold)
        ended = job.get("status") in TERMINAL


# Downloads -------------------------------------------------------------------------------


def download(cfg: Config, path: str, dest: Path) -> Op[int]:
    """Save what path serves to the file dest and return its size.

    The bytes go to dest + ".part" as they arrive and the version's ETag to
    dest + ".part.etag"; dest appears, whole, only once the transfer is complete. When the
    connection breaks, the download resumes where it stopped with a Range request guarded
    by If-Range, so the server sends the rest only if the file is still the version half
    received (and the whole new version otherwise). That goes on while each attempt brings
    bytes; after ``retries`` attempts in a row that bring none it raises NetworkError and
    leaves the partial file, which a later download to the same dest resumes.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    part, tag_file = dest.with_name(dest.name + PART), dest.with_name(dest.name + ETAG)
    etag = tag_file.read_text().strip() if tag_file.exists() else ""
    fruitless = 0
    with open(part, "ab+") as f:
        have = f.seek(0, os.SEEK_END)

        def restart(new_tag: str) -> None:
            nonlocal have, etag
            f.truncate(0)
            have, etag = 0, new_tag if new_tag and not new_tag.startswith("W/") else ""
            if etag:
                tag_file.write_text(etag + "\n")
            elif tag_file.exists():
                tag_file.unlink()

        while True:
            headers = {"Accept": "*/*", "Accept-Encoding": "identity"}
            if have and etag:
                headers.update({"Range": f"bytes={have}-", "If-Range": etag})
            elif have:
                restart("")  # nothing proves the rest would be of the same version
            try:
                answer = yield from send(cfg, Call("GET", path, headers=headers, stream=True))
            except RangeNotSatisfiableError as e:
                if _unsatisfied_length(e.headers.get("content-range", "")) == have:
                    break  # nothing lies past what is held: complete
                restart("")
                continue
            except BaseException:
                if have == 0:  # nothing worth resuming: leave no litter
                    f.close()
                    part.unlink()
                raise
            expect: Optional[int] = None
            if answer.status == 206:
                first, total = _content_range(answer.headers.get("content-range", ""))
                if first != have:
                    yield Pump(answer, None)
                    restart("")
                    continue
                expect = total - first
            elif answer.status == 200:
                restart(answer.headers.get("etag", ""))
                length = answer.headers.get("content-length")
                expect = int(length) if length and length.isdigit() else None
            else:
                yield Pump(answer, None)
                raise ChaperoneError(f"GET {path}: unexpected status {answer.status}")
            written, error = yield Pump(answer, f)
            have += written
            if error is None and expect is not None and written != expect:
                error = EOFError(f"the transfer ended after {written} of {expect} bytes")
            if error is None:
                break
            fruitless = 0 if written else fruitless + 1
            if fruitless > cfg.retries:
                raise NetworkError(
                    "GET", cfg.url(path), fruitless, f"download cut short at {have} bytes: {_reason(error)}"
                ) from error
            log.info("GET %s: cut short at %d bytes (%s); resuming", path, have, _reason(error))
            if fruitless:
                yield Sleep(cfg.backoff_delay(fruitless))
    part.replace(dest)
    if tag_file.exists():
        tag_file.unlink()
    return have


def _content_range(value: str) -> Tuple[int, int]:
    """(first, total) of "bytes first-last/total"; (-1, -1) when it is not that."""
    try:
        unit, _, spec = value.partition(" ")
        rng, _, size = spec.partition("/")
        a, _, b = rng.partition("-")
        first, last, total = int(a), int(b), int(size)
        if unit == "bytes" and last == total - 1:
            return first, total
    except ValueError:
        pass
    return -1, -1


def _unsatisfied_length(value: str) -> int:
    """The length in the "bytes */length" of a 416; -1 when it is not that."""
    prefix = "bytes */"
    return int(value[len(prefix) :]) if value.startswith(prefix) and value[len(prefix) :].isdigit() else -1


def local_path(root: Path, artifact_path: str) -> Path:
    """Where an artifact goes under root: at its path, which must stay inside root."""
    parts = artifact_path.split("/")
    if (
        not artifact_path
        or artifact_path.startswith("/")
        or any(p in ("", ".", "..") for p in parts)
        or "\\" in artifact_path
    ):
        raise ChaperoneError(f"refusing the artifact path {artifact_path!r}: it would leave the download folder")
    return root.joinpath(*parts)


def download_results(
    cfg: Config, job_id: str, root: Path, only: Optional[List[str]]
) -> Op[Tuple[Results, Dict[str, Path]]]:
    """Save results.json and every artifact (or those in only) at its path under root."""
    res = yield from results(cfg, job_id)
    root.mkdir(parents=True, exist_ok=True)
    (root / "results.json").write_text(json.dumps(res.to_dict(), indent=2) + "\n")
    files: Dict[str, Path] = {}
    wanted = None if only is None else set(only)
    for a in res.artifacts:
        if wanted is not None and a.path not in wanted:
            continue
        dest = local_path(root, a.path)
        yield from download(cfg, a.url or job_path(job_id, "artifacts", a.path), dest)
        files[a.path] = dest
    if wanted is not None and wanted - set(files):
        raise NotFoundError(
            404, title="Not Found", detail=f"the results list no artifact {sorted(wanted - set(files))}"
        )
    return res, files


def fetch_bytes(cfg: Config, path: str) -> Op[bytes]:
    answer = yield from send(cfg, Call("GET", path, headers={"Accept": "*/*"}))
    return bytes(answer.body)
