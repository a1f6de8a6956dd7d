"""The asyncio client: ``AsyncClient`` and the ``AsyncJob`` it returns. Same calls and
behaviour as ``Client``, to be awaited; they share their logic (``_protocol``)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import (
    Any,
    AsyncIterator,
    Awaitable,
    Dict,
    Iterable,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Union,
    overload,
)

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


class AsyncClient:
    """The asyncio twin of ``Client``: the same arguments, calls and errors, each call a
    coroutine (``jobs()`` and ``logs(follow=True)`` async iterators). ``wait_all`` waits
    on many jobs concurrently. Use it as an async context manager, or ``await aclose()``."""

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
        http_client: Optional[httpx.AsyncClient] = None,
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
        self._http = http_client or httpx.AsyncClient(timeout=timeout, limits=limits)
        self._held: Optional[asyncio.Semaphore] = None  # made in the event loop that uses it

    @property
    def base_url(self) -> str:
        return self.config.base_url

    async def aclose(self) -> None:
        """Close the connections (not an ``http_client`` passed in)."""
        if self._own:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncClient({self.base_url!r})"

    # Running the protocol's operations with asyncio -------------------------------------

    async def _do(self, action: p.Action, opened: List[httpx.Response]) -> Any:
        if isinstance(action, p.Call):
            if action.hold:
                if self._held is None:
                    self._held = asyncio.Semaphore(p.MAX_HELD)
                async with self._held:
                    return await self._call(action, opened)
            return await self._call(action, opened)
        if isinstance(action, p.Pump):
            res = action.answer.response
            written, error = 0, None
            try:
                if action.sink is not None:
                    async for chunk in res.aiter_raw():
                        action.sink.write(chunk)
                        written += len(chunk)
            except httpx.TransportError as e:
                error = e
            finally:
                await res.aclose()
                if action.sink is not None:
                    action.sink.flush()
            return written, error
        if isinstance(action, p.Sleep):
            await asyncio.sleep(action.seconds)
            return None
        raise TypeError(f"unexpected action {action!r}")

    async def _call(self, call: p.Call, opened: List[httpx.Response]) -> Any:
        cfg = self.config
        headers = cfg.request_headers(call)
        req = self._http.build_request(
            call.method, cfg.url(call.path), content=call.body, headers=headers, timeout=cfg.timeout_for(call)
        )
        try:
            res = await self._http.send(req, stream=True)
        except httpx.TransportError as e:
            return p.Failure(e)
        if call.stream and res.status_code < 400:
            opened.append(res)
            return p.Answer(res.status_code, res.headers, b"", res)
        try:
            body = await res.aread()
        except httpx.TransportError as e:
            return p.Failure(e)
        finally:
            await res.aclose()
        return p.Answer(res.status_code, res.headers, body, res)

    async def _iterate(self, op: p.Op[Any]) -> AsyncIterator[Any]:
        opened: List[httpx.Response] = []
        try:
            action = next(op)
            while True:
                if isinstance(action, p.Emit):
                    yield action.value
                    action = next(op)
                else:
                    action = op.send(await self._do(action, opened))
        except StopIteration:
            return
        finally:
            op.close()
            for res in opened:
                await res.aclose()

    async def _run(self, op: p.Op[p.T]) -> p.T:
        opened: List[httpx.Response] = []
        try:
            action = next(op)
            while True:
                action = op.send(await self._do(action, opened))
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        finally:
            op.close()
            for res in opened:
                await res.aclose()

    def _job(self, data: Mapping[str, Any]) -> AsyncJob:
        job = build(AsyncJob, data)
        job._client = self
        return job

    # The API ------------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        content: Optional[bytes] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> httpx.Response:
        """As ``Client.request``."""
        body = p.json_body(json) if json is not None else content
        call = p.Call(method, path, body=body, headers=dict(headers or {}))
        if content is not None and "Content-Type" not in call.headers:
            call.headers["Content-Type"] = "application/octet-stream"
        answer: p.Answer = await self._run(p.send(self.config, call))
        return answer.response  # type: ignore[no-any-return]

    async def health(self) -> Health:
        """As ``Client.health``."""
        return build(Health, await self._run(p.get_json(self.config, "/v1/health")))

    async def models(self) -> Catalog:
        """As ``Client.models``."""
        return parse_catalog(await self._run(p.get_json(self.config, "/v1/models")))

    async def openapi(self) -> Dict[str, Any]:
        """As ``Client.openapi``."""
        return await self._run(p.get_json(self.config, "/v1/openapi.json"))

    async def predict(
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
    ) -> AsyncJob:
        """As ``Client.predict``."""
        if isinstance(targets, Mapping):
            targets = [{"name": k, "content": v} for k, v in targets.items()]
        body = p.body_of(dict(model=model, name=name, sequence=sequence, input=input, targets=targets, params=params))
        return self._job(await self._run(p.create(self.config, "/v1/predictions", body, idempotency_key, wait)))

    async def design(
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
    ) -> AsyncJob:
        """As ``Client.design``."""
        body = p.body_of(
            dict(
                protocol=protocol, model=model, name=name, spec=spec, structure=structure, contig=contig, params=params
            )
        )
        return self._job(await self._run(p.create(self.config, "/v1/designs", body, idempotency_key, wait)))

    async def embed(
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
    ) -> AsyncJob:
        """As ``Client.embed``."""
        body = p.body_of(
            dict(model=model, name=name, sequence=sequence, sequences=sequences, input=input, params=params)
        )
        return self._job(await self._run(p.create(self.config, "/v1/embeddings", body, idempotency_key, wait)))

    async def job(self, job_id: str) -> AsyncJob:
        """As ``Client.job``."""
        return self._job(await self._run(p.get_json(self.config, p.job_path(job_id))))

    async def list_jobs(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> JobList[AsyncJob]:
        """As ``Client.list_jobs``."""
        page = await self._run(p.list_page(self.config, limit, cursor))
        return build(JobList, page, data=[self._job(j) for j in page.get("data") or []])

    async def jobs(self, *, page_size: int = 100) -> AsyncIterator[AsyncJob]:
        """As ``Client.jobs``: ``async for job in client.jobs()``."""
        async for data in self._iterate(p.every_job(self.config, page_size)):
            yield self._job(data)

    async def wait_all(
        self,
        jobs: Iterable[AsyncJob],
        *,
        timeout: Optional[float] = None,
        progress: ProgressArg = True,
        raise_on_failure: bool = False,
    ) -> List[AsyncJob]:
        """Wait on the jobs concurrently until all have ended, and return them, updated:
        one long poll per job, up to 16 at once (as many as a server holds for one client;
        every long poll of this client shares them). Otherwise as ``Client.wait_all``."""
        jobs = list(jobs)
        report = for_jobs(progress, len(jobs))

        async def one(job: AsyncJob) -> None:
            await job.wait(timeout=timeout, progress=False, raise_on_failure=raise_on_failure, poll=p.MAX_HOLD)
            report.update(job.to_dict())

        try:
            await asyncio.gather(*(one(j) for j in jobs))
        finally:
            report.close()
        return jobs


class AsyncJob(JobState):
    """A job, with the calls on it to be awaited; as ``Job``."""

    _client: AsyncClient

    async def refresh(self, *, wait: Optional[float] = None) -> AsyncJob:
        """As ``Job.refresh``."""
        cl = self._client
        headers, hold = {}, 0.0
        if wait:
            hold = float(min(p.MAX_HOLD, max(1, int(wait))))
            headers["Prefer"] = f"wait={int(hold)}"
        self._update(build(JobState, await cl._run(p.get_json(cl.config, p.job_path(self.id), headers, hold))))
        return self

    async def wait(
        self,
        *,
        timeout: Optional[float] = None,
        progress: ProgressArg = True,
        raise_on_failure: bool = True,
        poll: Optional[float] = None,
    ) -> AsyncJob:
        """As ``Job.wait``."""
        cl = self._client
        report = for_job(progress, self.id)
        hold = poll if poll is not None else (5.0 if progress else float(p.MAX_HOLD))
        try:
            final = await cl._run(p.wait(cl.config, self.to_dict(), timeout, hold, report.update))
        finally:
            report.close()
        self._update(build(JobState, final))
        if raise_on_failure and self.status in ("failed", "canceled"):
            raise JobFailedError(self)
        return self

    async def results(self) -> Results:
        """As ``Job.results``."""
        cl = self._client
        return await cl._run(p.results(cl.config, self.id))

    async def download(
        self, dir: Union[str, Path], *, archive: bool = False, artifacts: Optional[Iterable[str]] = None
    ) -> Download:
        """As ``Job.download``."""
        cl, root = self._client, Path(dir)
        if archive:
            dest = root / f"{self.id}.zip"
            await cl._run(p.download(cl.config, self.links.get("archive") or p.job_path(self.id, "archive"), dest))
            return Download(root, archive=dest)
        res, files = await cl._run(
            p.download_results(cl.config, self.id, root, None if artifacts is None else list(artifacts))
        )
        return Download(root, res, files)

    async def embeddings(self) -> Embeddings:
        """As ``Job.embeddings``."""
        cl = self._client
        res = await cl._run(p.results(cl.config, self.id))
        if not isinstance(res, EmbeddingResults):
            raise ValueError(f"job {self.id} is a {res.kind} job, not an embedding")
        wanted = {s.file for s in res.sequences}
        blobs = {a.path: await cl._run(p.fetch_bytes(cl.config, a.url)) for a in res.artifacts if a.path in wanted}
        return embeddings_from_files(res, blobs.__getitem__)

    @overload
    def logs(self, *, follow: Literal[False] = ..., poll: float = ...) -> Awaitable[str]: ...

    @overload
    def logs(self, *, follow: Literal[True], poll: float = ...) -> AsyncIterator[str]: ...

    def logs(self, *, follow: bool = False, poll: float = 2.0) -> Union[Awaitable[str], AsyncIterator[str]]:
        """As ``Job.logs``: ``await job.logs()``, or ``async for text in
        job.logs(follow=True)``."""
        cl = self._client
        if follow:
            return cl._iterate(p.follow_logs(cl.config, self.id, poll))
        return cl._run(p.logs(cl.config, self.id))

    async def cancel(self) -> AsyncJob:
        """As ``Job.cancel``."""
        cl = self._client
        self._update(build(JobState, await cl._run(p.call_json(cl.config, "POST", p.job_path(self.id, "cancel")))))
        return self

    async def delete(self) -> DeletedJob:
        """As ``Job.delete``."""
        cl = self._client
        data = await cl._run(p.call_json(cl.config, "DELETE", p.job_path(self.id), gone_ok=True))
        return build(DeletedJob, data or {"object": "job", "id": self.id, "deleted": True})

    def __repr__(self) -> str:
        return f"AsyncJob(id={self.id!r}, kind={self.kind!r}, status={self.status!r}, model={self.model!r})"
