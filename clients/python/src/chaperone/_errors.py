"""The exceptions of the client: one class per HTTP status the API documents."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Tuple, Type

if TYPE_CHECKING:
    from ._types import JobState


class ChaperoneError(Exception):
    """Everything the client raises derives from this."""

    _args: Tuple[Any, ...] = ()

    def __reduce__(self) -> Any:  # pickles with the arguments it was made with
        return (type(self), self._args or self.args)


class APIError(ChaperoneError):
    """An error answer of the API: an RFC 9457 problem.

    The fields are the problem's own: ``status`` (the HTTP status), ``type`` (a URI ending in
    ``/errors/<slug>``), ``title``, ``detail`` (what is wrong and how to fix it) and
    ``instance`` (the request's path). ``request_id`` names the server's log entry (quote it
    to the operator), ``retry_after`` is the wait in seconds the server asked for (429, 503),
    and ``problem`` is the whole body as sent. An answer that is not a problem (a proxy's
    error page) keeps its status, with the start of its body as the detail.
    """

    status: int = 0

    def __init__(
        self,
        status: int,
        *,
        type: str = "about:blank",
        title: str = "",
        detail: str = "",
        instance: str = "",
        request_id: Optional[str] = None,
        retry_after: Optional[float] = None,
        problem: Optional[Mapping[str, Any]] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.instance = instance
        self.request_id = request_id
        self.retry_after = retry_after
        self.problem: Dict[str, Any] = dict(problem or {})
        self.headers: Dict[str, str] = dict(headers or {})
        super().__init__(str(self))

    @property
    def slug(self) -> str:
        """The last segment of ``type``: ``not-found``, ``rate-limited``, ``at-capacity``, ..."""
        head, sep, tail = self.type.rpartition("/errors/")
        return tail if sep else ""

    def __str__(self) -> str:
        text = f"{self.status} {self.title}: {self.detail or self.title}"
        if self.instance:
            text += f" ({self.instance})"
        if self.retry_after is not None:
            text += f"; retry after {self.retry_after:g} s"
        if self.request_id:
            text += f"; request id {self.request_id}"
        return text

    def __reduce__(self) -> Any:  # exceptions with keyword arguments pickle this way
        return (_rebuild, (type(self), self.status, self.__dict__))


def _rebuild(cls: Type[APIError], status: int, state: Dict[str, Any]) -> APIError:
    err = cls.__new__(cls)
    Exception.__init__(err)
    err.__dict__.update(state)
    err.status = status
    return err


class BadRequestError(APIError):
    """400 ``invalid-input``: the request is wrong; the detail names the field and the fix."""

    status = 400


class UnauthorizedError(APIError):
    """401 ``unauthorized``: an API key was sent but is unknown, revoked or malformed."""

    status = 401


class ForbiddenError(APIError):
    """403: not an answer of the API but of a proxy in front of it. A body citing edge error
    1010 is bot filtering of the HTTP client: set ``user_agent`` on the client."""

    status = 403


class NotFoundError(APIError):
    """404 ``not-found``: no such job (unknown, deleted, evicted, or another owner's), or an
    artifact path the results do not list."""

    status = 404


class MethodNotAllowedError(APIError):
    """405 ``method-not-allowed``: the path does not take this method (``Allow`` lists those
    it takes)."""

    status = 405


class ConflictError(APIError):
    """409 ``conflict``: the job's state forbids it, such as canceling a finished job or
    downloading the archive of one that is not ready."""

    status = 409


class PreconditionFailedError(APIError):
    """412 ``precondition-failed``: ``If-Match`` or ``If-Unmodified-Since`` named another
    version of a download."""

    status = 412


class PayloadTooLargeError(APIError):
    """413 ``payload-too-large``: the request body is over the server's cap (8 MB by
    default)."""

    status = 413


class UnsupportedMediaTypeError(APIError):
    """415 ``unsupported-media-type``: a create's body was not sent as JSON."""

    status = 415


class RangeNotSatisfiableError(APIError):
    """416 ``range-not-satisfiable``: a byte range starts at or past the end of the file."""

    status = 416


class IdempotencyKeyReusedError(APIError):
    """422 ``idempotency-key-reused``: this Idempotency-Key already created a job from a
    different request body."""

    status = 422


class RateLimitedError(APIError):
    """429 ``rate-limited`` (a per-owner quota) or ``at-capacity`` (the queue is full) that
    outlasted the client's patience; ``retry_after`` says how long the server asked for."""

    status = 429


class InternalServerError(APIError):
    """500 ``internal``: the server failed; ``request_id`` names its log entry."""

    status = 500


class UnavailableError(APIError):
    """503 ``unavailable``: no live worker can run the model now (the detail says what is
    missing). Only creates answer it; reads and downloads keep working."""

    status = 503


#: The exception class of each status the API documents.
ERRORS: Dict[int, Type[APIError]] = {
    cls.status: cls
    for cls in (
        BadRequestError,
        UnauthorizedError,
        ForbiddenError,
        NotFoundError,
        MethodNotAllowedError,
        ConflictError,
        PreconditionFailedError,
        PayloadTooLargeError,
        UnsupportedMediaTypeError,
        RangeNotSatisfiableError,
        IdempotencyKeyReusedError,
        RateLimitedError,
        InternalServerError,
        UnavailableError,
    )
}


def _data(job: JobState) -> JobState:
    """The job's fields alone, without the client a Job calls through: what an exception
    keeps, so that it pickles (a pipeline's worker process hands it to its parent)."""
    from ._types import JobState, build

    return build(JobState, job.to_dict())


class NetworkError(ChaperoneError):
    """No complete answer on any attempt: the server could not be reached, or the connection
    broke before the answer was whole. ``__cause__`` is the last failure."""

    def __init__(self, method: str, url: str, attempts: int, reason: str) -> None:
        self._args = (method, url, attempts, reason)
        self.method, self.url, self.attempts, self.reason = method, url, attempts, reason
        tries = f" ({attempts} attempts)" if attempts > 1 else ""
        super().__init__(f"{method} {url}: {reason}{tries}")


class JobFailedError(ChaperoneError):
    """The job ended ``failed`` or ``canceled``; ``job`` is its final state, ``job.error``
    the engine's message."""

    def __init__(self, job: JobState) -> None:
        self._args = (_data(job),)
        self.job = job
        why = f": {job.error}" if job.error else ""
        super().__init__(f"job {job.id} {job.status}{why}")


class ResultsNotReadyError(ChaperoneError):
    """The results were asked for before the job succeeded; ``status`` is the job's status
    then. Wait for the job first."""

    def __init__(self, job_id: str, status: str) -> None:
        self._args = (job_id, status)
        self.job_id, self.status = job_id, status
        super().__init__(f"the results of job {job_id} are not ready: it is {status}")


class WaitTimeout(ChaperoneError, TimeoutError):
    """``wait(timeout=...)`` ran out before the job finished; ``job`` is its last state."""

    def __init__(self, job: JobState, timeout: float) -> None:
        self._args = (_data(job), timeout)
        self.job = job
        super().__init__(f"job {job.id} is still {job.status} after {timeout:g} s")


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """Seconds from a Retry-After header (a number of seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    from email.utils import parsedate_to_datetime
    from datetime import datetime, timezone

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max((when - datetime.now(timezone.utc)).total_seconds(), 0.0)


def error_from_answer(status: int, headers: Mapping[str, str], body: bytes, path: str) -> APIError:
    """The exception for an error answer, of the class of its status (``APIError`` itself
    for a status the API does not document)."""
    problem: Dict[str, Any] = {}
    ctype = headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype in ("application/problem+json", "application/json"):
        try:
            parsed = json.loads(body.decode("utf-8", "replace"))
            if isinstance(parsed, dict):
                problem = parsed
        except ValueError:
            pass
    detail = problem.get("detail")
    if not isinstance(detail, str):
        detail = "" if problem else body[:300].decode("utf-8", "replace").strip()
    title = problem.get("title")
    cls = ERRORS.get(status, APIError)
    return cls(
        status,
        type=str(problem.get("type") or "about:blank"),
        title=title if isinstance(title, str) and title else _reason(status),
        detail=detail,
        instance=str(problem.get("instance") or path),
        request_id=problem.get("request_id") or headers.get("x-request-id"),
        retry_after=parse_retry_after(headers.get("retry-after")),
        problem=problem,
        headers=headers,
    )


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"
