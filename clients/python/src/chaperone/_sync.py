"""The blocking client: ``Client`` and the ``Job`` it returns."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Literal, Mapping, Optional, Sequence, Union, overload

import httpx

from . import _protocol as p
from ._data import Download, Embeddings, embeddings_from_files
from ._errors import JobFailedError
from ._progress import ProgressArg, for_job, for_jobs
from ._types import (
    Catalog,
    DeletedJob,
    EmbeddingResults,
    Health,
    JobList,
    JobState,
    Results,
    SequencesArg,
    Target,
    build,
    parse_catalog,
)


class Client:
    """A client of one chaperone server (or any server of its API).

    ``base_url`` defaults to ``$CHAPERONE_URL``, else ``http://127.0.0.1:8080``;
    ``api_key`` to ``$CHAPERONE_API_KEY`` (sent as ``Authorization: Bearer``), else none,
    and the server then owns jobs by the caller's address. ``timeout`` bounds connecting and
    each read (waits add the time they ask the server to hold). Failed connections, 502 and
    504 are retried ``retries`` times with backoff; 429 and 503 are waited out as their
    Retry-After says, for up to ``patience`` seconds in all per call, then raised.
    ``headers`` are sent on every request; ``http_client`` replaces the client's own
    ``httpx.Client``. Use it as a context manager, or ``close()`` it.
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        *,
        api_key: Optional[str] = None,
        timeout: float = 30.0,
        retries: int = 4,
        patience: float = 600.0,
        user_agent: Optional[str] = None,
        headers: Optional[Mapping[str, str]] = None,
        http_client: Optional[httpx.Client] = None,
    ) -> None:
        self.config = p.Config.resolve(
            base_url,
            api_key,
            timeout=timeout,
            retries=retries,
            patience=patience,
            user_agent=user_agent,
            headers=headers,
        )
        self._own = http_client is None
        limits = httpx.Limits(max_connections=p.MAX_CONNECTIONS, max_keepalive_connections=p.MAX_CONNECTIONS)
        self._http = http_client or httpx.Client(timeout=timeout, limits=limits)
        self._held = threading.BoundedSemaphore(p.MAX_HELD)

    @property
    def base_url(self) -> str:
        return self.config.base_url

    def close(self) -> None:
        """Close the connections (not an ``http_client`` passed in)."""
        if self._own:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self.base_url!r})"

    # Running the protocol's operations with blocking I/O -------------------------------

    def _do(self, action: p.Action, opened: List[httpx.Response]) -> Any:
        if isinstance(action, p.Call):
            if action.hold:
                with self._held:
                    return self._call(action, opened)
            return self._call(action, opened)
        if isinstance(action, p.Pump):
            res = action.answer.response
            written, error = 0, None
            try:
                if action.sink is not None:
                    for chunk in res.iter_raw():
                        action.sink.write(chunk)
                        written += len(chunk)
            except httpx.TransportError as e:
                error = e
            finally:
                res.close()
                if action.sink is not None:
                    action.sink.flush()
            return written, error
        if isinstance(action, p.Sleep):
            time.sleep(action.seconds)
            return None
        raise TypeError(f"unexpected action {action!r}")

    def _call(self, call: p.Call, opened: List[httpx.Response]) -> Any:
        cfg = self.config
        headers = cfg.request_headers(call)
        req = self._http.build_request(
            call.method, cfg.url(call.path), content=call.body, headers=headers, timeout=cfg.timeout_for(call)
        )
        try:
            res = self._http.send(req, stream=True)
        except httpx.TransportError as e:
            return p.Failure(e)
        if call.stream and res.status_code < 400:
            opened.append(res)
            return p.Answer(res.status_code, res.headers, b"", res)
        try:
            body = res.read()
        except httpx.TransportError as e:
            return p.Failure(e)
        finally:
            res.close()
        return p.Answer(res.status_code, res.headers, body, res)

    def _iterate(self, op: p.Op[Any]) -> Iterator[Any]:
        opened: List[httpx.Response] = []
        try:
            action = next(op)
            while True:
                if isinstance(action, p.Emit):
                    yield action.value
                    action = next(op)
                else:
                    action = op.send(self._do(action, opened))
        except StopIteration:
            return
        finally:
            op.close()
            for res in opened:
                res.close()

    def _run(self, op: p.Op[p.T]) -> p.T:
        opened: List[httpx.Response] = []
        try:
            action = next(op)
            while True:
                action = op.send(self._do(action, opened))
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        finally:
            op.close()
            for res in opened:
                res.close()

    def _job(self, data: Mapping[str, Any]) -> Job:
        job = build(Job, data)
        job._client = self
        return job

    # The API ------------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        content: Optional[bytes] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> httpx.Response:
        """Make any call of the API with this client's address, key, retries and errors:
        for what has no method of its own. ``path`` is under the base URL (``/v1/...``).
        Returns the response of a success (body read); raises as every call does."""
        body = p.json_body(json) if json is not None else content
        call = p.Call(method, path, body=body, headers=dict(headers or {}))
        if content is not None and "Content-Type" not in call.headers:
            call.headers["Content-Type"] = "application/octet-stream"
        answer: p.Answer = self._run(p.send(self.config, call))
        return answer.response  # type: ignore[no-any-return]

    def health(self) -> Health:
        """``GET /v1/health``: whether the server is up, and its API version."""
        return build(Health, self._run(p.get_json(self.config, "/v1/health")))

    def models(self) -> Catalog:
        """``GET /v1/models``: every model and protocol, their params and limits, and which
        a worker can run now (``catalog.available()``)."""
        return parse_catalog(self._run(p.get_json(self.config, "/v1/models")))

    def openapi(self) -> Dict[str, Any]:
        """``GET /v1/openapi.json``: the server's OpenAPI document."""
        return self._run(p.get_json(self.config, "/v1/openapi.json"))

    def predict(
        self,
        sequence: Optional[str] = None,
        *,
        model: Optional[str] = None,
        name: Optional[str] = None,
        input: Optional[str] = None,
        targets: Union[Sequence[Target], Mapping[str, str], None] = None,
        params: Optional[Mapping[str, Any]] = None,
        idempotency_key: Optional[str] = None,
        wait: Optional[float] = None,
    ) -> Job:
        """``POST /v1/predictions``: predict structures. Give exactly one of ``sequence`` (a
        protein chain), ``input`` (FASTA or Boltz YAML) or ``targets`` (many inputs: a list
        of ``{"content": ..., "name": ...}``, or a mapping of name to content). ``model``
        defaults to the server's (boltz2); ``params`` as in ``models()``. ``wait`` holds
        the answer up to that many seconds (at most 60) in case the job ends by then.
        ``idempotency_key`` names this create (one is made when not given); retrying a
        create with the same key and body returns the first job instead of a second."""
        if isinstance(targets, Mapping):
            targets = [{"name": k, "content": v} for k, v in targets.items()]
        body = p.body_of(dict(model=model, name=name, sequence=sequence, input=input, targets=targets, params=params))
        return self._job(self._run(p.create(self.config, "/v1/predictions", body, idempotency_key, wait)))

    def design(
        self,
        protocol: str,
        *,
        model: Optional[str] = None,
        name: Optional[str] = None,
        spec: Optional[str] = None,
        structure: Optional[str] = None,
        contig: Optional[str] = None,
        params: Optional[Mapping[str, Any]] = None,
        idempotency_key: Optional[str] = None,
        wait: Optional[float] = None,
    ) -> Job:
        """``POST /v1/designs``: design binders or proteins. The ``protocol`` implies the
        model: the BoltzGen protocols take a YAML ``spec``, the ``rfd3-*`` ones a
        ``structure`` (PDB or mmCIF text) and a ``contig``. Otherwise as ``predict``."""
        body = p.body_of(
            dict(
                protocol=protocol, model=model, name=name, spec=spec, structure=structure, contig=contig, params=params
            )
        )
        return self._job(self._run(p.create(self.config, "/v1/designs", body, idempotency_key, wait)))

    def embed(
        self,
        sequence: Optional[str] = None,
        *,
        sequences: Optional[SequencesArg] = None,
        input: Optional[str] = None,
        model: Optional[str] = None,
        name: Optional[str] = None,
        params: Optional[Mapping[str, Any]] = None,
        idempotency_key: Optional[str] = None,
        wait: Optional[float] = None,
    ) -> Job:
        """``POST /v1/embeddings``: language-model embeddings. Give exactly one of
        ``sequence``, ``sequences`` (strings, or ``{"id": ..., "sequence": ...}``) or
        ``input`` (FASTA). ``params``: ``pool`` (mean, max, cls), ``format`` (npz,
        parquet), ``fast``. Otherwise as ``predict``."""
        body = p.body_of(
            dict(model=model, name=name, sequence=sequence, sequences=sequences, input=input, params=params)
        )
        return self._job(self._run(p.create(self.config, "/v1/embeddings", body, idempotency_key, wait)))

    def job(self, job_id: str) -> Job:
        """``GET /v1/jobs/{id}``: a job by its id."""
        return self._job(self._run(p.get_json(self.config, p.job_path(job_id))))

    def list_jobs(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> JobList[Job]:
        """``GET /v1/jobs``: one page of the caller's jobs, newest first; pass the page's
        ``next_cursor`` as ``cursor`` for the next. ``jobs()`` walks every page."""
        page = self._run(p.list_page(self.config, limit, cursor))
        return build(JobList, page, data=[self._job(j) for j in page.get("data") or []])

    def jobs(self, *, page_size: int = 100) -> Iterator[Job]:
        """Every job of the caller, newest first, fetched a page at a time."""
        for data in self._iterate(p.every_job(self.config, page_size)):
            yield self._job(data)

    def wait_all(
        self,
        jobs: Iterable[Job],
        *,
        timeout: Optional[float] = None,
        progress: ProgressArg = True,
        raise_on_failure: bool = False,
    ) -> List[Job]:
        """Wait until every job has ended and return them, updated. Each job is long-polled
        in turn; a job that ended while another was awaited answers at once, so this takes
        about as long as the slowest job. ``progress`` shows how many have finished.
        ``raise_on_failure`` raises JobFailedError for the first job that failed."""
        jobs = list(jobs)
        report = for_jobs(progress, len(jobs))
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            for job in jobs:
                left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
                job.wait(timeout=left, progress=False, raise_on_failure=raise_on_failure, poll=p.MAX_HOLD)
                report.update(job.to_dict())
        finally:
            report.close()
        return jobs


class Job(JobState):
    """A job, with the calls on it. Its fields are the API's (``id``, ``status``,
    ``progress``, ``error``, ...), as of the last answer; ``refresh()`` and ``wait()``
    update them in place."""

    _client: Client

    def refresh(self, *, wait: Optional[float] = None) -> Job:
        """Read the job's state again; with ``wait``, hold up to that many seconds (at most
        60) for it to end. Returns the job itself, updated."""
        cl = self._client
        headers, hold = {}, 0.0
        if wait:
            hold = float(min(p.MAX_HOLD, max(1, int(wait))))
            headers["Prefer"] = f"wait={int(hold)}"
        self._update(build(JobState, cl._run(p.get_json(cl.config, p.job_path(self.id), headers, hold))))
        return self

    def wait(
        self,
        *,
        timeout: Optional[float] = None,
        progress: ProgressArg = True,
        raise_on_failure: bool = True,
        poll: Optional[float] = None,
    ) -> Job:
        """Wait until the job ends, long-polling with ``Prefer: wait``, and return it.

        ``progress``: True shows a bar when tqdm is installed and a plain line per change
        otherwise, "plain" always lines, False nothing (all on stderr). ``timeout`` (seconds)
        raises WaitTimeout when the job runs longer; ``raise_on_failure`` raises
        JobFailedError when it ends failed or canceled. ``poll`` is the longest hold of one
        poll: 5 s while progress is shown, else 60 s (the server answers at once when the
        job ends either way)."""
        cl = self._client
        report = for_job(progress, self.id)
        hold = poll if poll is not None else (5.0 if progress else float(p.MAX_HOLD))
        try:
            final = cl._run(p.wait(cl.config, self.to_dict(), timeout, hold, report.update))
        finally:
            report.close()
        self._update(build(JobState, final))
        if raise_on_failure and self.status in ("failed", "canceled"):
            raise JobFailedError(self)
        return self

    def results(self) -> Results:
        """The results: ``PredictionResults`` (rows), ``DesignResults`` (designs) or
        ``EmbeddingResults`` (sequences), with their artifacts; ``.to_dataframe()`` makes a
        table of them. ResultsNotReadyError while the job has not succeeded."""
        cl = self._client
        return cl._run(p.results(cl.config, self.id))

    def download(
        self, dir: Union[str, Path], *, archive: bool = False, artifacts: Optional[Iterable[str]] = None
    ) -> Download:
        """Save the results under ``dir``: results.json and every artifact at its path (or
        only the artifact paths given), or with ``archive=True`` the whole zip as
        ``<dir>/<job id>.zip``. A download broken off resumes where it stopped (Range with
        If-Range), within this call and in a later call to the same folder. The
        ``Download`` returned lists the files and ``structures[target][sample]``."""
        cl, root = self._client, Path(dir)
        if archive:
            dest = root / f"{self.id}.zip"
            cl._run(p.download(cl.config, self.links.get("archive") or p.job_path(self.id, "archive"), dest))
            return Download(root, archive=dest)
        res, files = cl._run(
            p.download_results(cl.config, self.id, root, None if artifacts is None else list(artifacts))
        )
        return Download(root, res, files)

    def embeddings(self) -> Embeddings:
        """The vectors of an embedding job, keyed by sequence id: ``pooled`` and (npz only)
        ``per_residue`` numpy arrays; ``matrix()`` stacks the pooled ones. Read from the
        server into memory; ``download(dir).embeddings()`` keeps the files."""
        cl = self._client
        res = cl._run(p.results(cl.config, self.id))
        if not isinstance(res, EmbeddingResults):
            raise ValueError(f"job {self.id} is a {res.kind} job, not an embedding")
        blobs = {
            a.path: cl._run(p.fetch_bytes(cl.config, a.url))
            for a in res.artifacts
            if a.path in {s.file for s in res.sequences}
        }
        return embeddings_from_files(res, blobs.__getitem__)

    @overload
    def logs(self, *, follow: Literal[False] = ..., poll: float = ...) -> str: ...

    @overload
    def logs(self, *, follow: Literal[True], poll: float = ...) -> Iterator[str]: ...

    def logs(self, *, follow: bool = False, poll: float = 2.0) -> Union[str, Iterator[str]]:
        """The run log as text; with ``follow=True`` an iterator of the log's text as it
        grows, which ends once the job has ended and its log is read to the end (``poll``
        is the longest pause between reads)."""
        cl = self._client
        if follow:
            return cl._iterate(p.follow_logs(cl.config, self.id, poll))
        return cl._run(p.logs(cl.config, self.id))

    def cancel(self) -> Job:
        """Stop a queued or running job (it becomes ``canceled``); a job already canceled
        stays so. ConflictError for a job that already succeeded or failed."""
        cl = self._client
        self._update(build(JobState, cl._run(p.call_json(cl.config, "POST", p.job_path(self.id, "cancel")))))
        return self

    def delete(self) -> DeletedJob:
        """Delete the job and its data (a running job is stopped first); its id is 404
        afterwards."""
        cl = self._client
        data = cl._run(p.call_json(cl.config, "DELETE", p.job_path(self.id), gone_ok=True))
        return build(DeletedJob, data or {"object": "job", "id": self.id, "deleted": True})

    def __repr__(self) -> str:
        return f"Job(id={self.id!r}, kind={self.kind!r}, status={self.status!r}, model={self.model!r})"
