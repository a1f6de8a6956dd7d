"""Errors as the real servers give them: one exception class per status, carrying the
problem; 429 waited out as Retry-After says, within the caller's patience."""

from __future__ import annotations

import asyncio
import logging
import pickle
import socket
import threading
from typing import Any, Callable, Dict, Type

import pytest

import chaperone
from chaperone import APIError, AsyncClient, Client

from .conftest import SEQ, FailingProxy, Records, run

NO_SUCH_JOB = "0123456789abcdef0123456789abcdef"


def problem_of(err: APIError, status: int, slug: str, cls: Type[APIError]) -> None:
    assert type(err) is cls and err.status == status and err.slug == slug, err
    assert err.type.endswith("/errors/" + slug) and err.title and err.detail and err.instance.startswith("/")
    assert err.problem["status"] == status and err.problem["detail"] == err.detail
    assert str(status) in str(err) and err.detail in str(err)
    again = pickle.loads(pickle.dumps(err))  # across processes, as pipelines pass them
    assert type(again) is cls and again.detail == err.detail and again.status == status


def test_each_error_status_of_the_server_is_its_own_class(client: Client, tmp_path: Any) -> None:
    with pytest.raises(chaperone.BadRequestError) as e400:
        client.predict(SEQ, model="alphafold9")
    problem_of(e400.value, 400, "invalid-input", chaperone.BadRequestError)
    assert "boltz2" in e400.value.detail  # the valid models

    with pytest.raises(chaperone.UnauthorizedError) as e401:
        Client(client.base_url, api_key="chp_live_" + "x" * 32).list_jobs()
    problem_of(e401.value, 401, "unauthorized", chaperone.UnauthorizedError)

    with pytest.raises(chaperone.NotFoundError) as e404:
        client.job(NO_SUCH_JOB)
    problem_of(e404.value, 404, "not-found", chaperone.NotFoundError)
    assert e404.value.instance == f"/v1/jobs/{NO_SUCH_JOB}"

    with pytest.raises(chaperone.MethodNotAllowedError) as e405:
        client.request("PATCH", "/v1/jobs")
    problem_of(e405.value, 405, "method-not-allowed", chaperone.MethodNotAllowedError)
    assert "GET" in e405.value.headers["allow"]

    done = client.embed("MKV", model="esmc-300m", wait=60)
    with pytest.raises(chaperone.ConflictError) as e409:
        done.cancel()
    problem_of(e409.value, 409, "conflict", chaperone.ConflictError)
    assert "succeeded" in e409.value.detail

    with pytest.raises(chaperone.PreconditionFailedError) as e412:
        client.request("GET", f"/v1/jobs/{done.id}/archive", headers={"If-Match": '"another-version"'})
    problem_of(e412.value, 412, "precondition-failed", chaperone.PreconditionFailedError)

    with pytest.raises(chaperone.PayloadTooLargeError) as e413:
        client.predict("A" * (9 << 20))
    problem_of(e413.value, 413, "payload-too-large", chaperone.PayloadTooLargeError)

    with pytest.raises(chaperone.UnsupportedMediaTypeError) as e415:
        client.request(
            "POST",
            "/v1/embeddings",
            content=b"sequence=MKV",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
    problem_of(e415.value, 415, "unsupported-media-type", chaperone.UnsupportedMediaTypeError)

    with pytest.raises(chaperone.RangeNotSatisfiableError) as e416:
        client.request("GET", f"/v1/jobs/{done.id}/logs", headers={"Range": "bytes=100000000-"})
    problem_of(e416.value, 416, "range-not-satisfiable", chaperone.RangeNotSatisfiableError)

    client.embed("MKV", model="esmc-300m", idempotency_key="pyclient-errors-422")
    with pytest.raises(chaperone.IdempotencyKeyReusedError) as e422:
        client.embed("MKVL", model="esmc-300m", idempotency_key="pyclient-errors-422")
    problem_of(e422.value, 422, "idempotency-key-reused", chaperone.IdempotencyKeyReusedError)

    # No worker offers protenix-v2 here: 503, with a Retry-After of 300 s, more than this
    # caller's patience, so it is raised at once.
    with pytest.raises(chaperone.UnavailableError) as e503:
        Client(client.base_url, patience=60).predict(SEQ, model="protenix-v2")
    problem_of(e503.value, 503, "unavailable", chaperone.UnavailableError)
    assert e503.value.retry_after == 300 and "protenix-v2" in e503.value.detail


def test_a_server_failure_is_a_500_naming_its_log_entry(broken_url: str) -> None:
    with pytest.raises(chaperone.InternalServerError) as e500:
        Client(broken_url).list_jobs()
    problem_of(e500.value, 500, "internal", chaperone.InternalServerError)
    assert e500.value.request_id and e500.value.request_id in str(e500.value)

    async def main() -> None:
        async with AsyncClient(broken_url) as c:
            with pytest.raises(chaperone.InternalServerError):
                await c.job(NO_SUCH_JOB)

    run(main())


def test_the_async_client_raises_the_same_classes(server_url: str) -> None:
    async def main() -> None:
        async with AsyncClient(server_url) as c:
            with pytest.raises(chaperone.BadRequestError):
                await c.design("protein-everything", spec="x: 1")
            with pytest.raises(chaperone.NotFoundError):
                await c.job(NO_SUCH_JOB)
            with pytest.raises(chaperone.MethodNotAllowedError):
                await c.request("PUT", "/v1/models")
        async with AsyncClient(server_url, api_key="chp_live_" + "y" * 32) as c:
            with pytest.raises(chaperone.UnauthorizedError):
                await c.list_jobs()

    run(main())


def waiting_on_429(record: logging.LogRecord) -> bool:
    return record.levelno == logging.WARNING and " 429 " in record.getMessage()


def test_a_create_over_the_quota_waits_out_retry_after_and_then_succeeds(
    limited_url: str, client_log: Callable[[Any], Records]
) -> None:
    log = client_log(waiting_on_429)
    with Client(limited_url, patience=120) as c:
        # A finished job teaches the server how long jobs take, so its Retry-After is its
        # shortest (5 s) rather than the 30 s it says with no history.
        c.predict(SEQ, name="ok").wait(progress=False)
        blocker = c.predict(SEQ, name="hang")  # the one active job an owner may have
        created: Dict[str, chaperone.Job] = {}
        creating = threading.Thread(target=lambda: created.update(job=c.predict(SEQ, name="ok")))
        creating.start()
        assert log.event.wait(60), "the create was not refused with a 429"
        blocker.cancel()  # the quota frees; the waiting create goes through when it retries
        creating.join(120)
        assert not creating.is_alive() and created["job"].wait(progress=False).status == "succeeded"
        assert [r for r in log.records if waiting_on_429(r)], "no wait was announced"


def test_a_429_outlasting_the_patience_is_raised_with_its_retry_after(limited_url: str) -> None:
    with Client(limited_url, patience=0) as c:
        blocker = c.predict(SEQ, name="hang")
        try:
            with pytest.raises(chaperone.RateLimitedError) as e429:
                c.predict(SEQ, name="ok")
        finally:
            blocker.cancel()
    problem_of(e429.value, 429, "rate-limited", chaperone.RateLimitedError)
    assert e429.value.retry_after is not None and e429.value.retry_after >= 1


def test_the_async_client_waits_out_a_429_too(limited_url: str, client_log: Callable[[Any], Records]) -> None:
    async def main() -> None:
        announced = asyncio.Event()  # the client logs from the event loop's own thread
        client_log(lambda r: waiting_on_429(r) and (announced.set() or True))
        async with AsyncClient(limited_url, patience=120) as c:
            await (await c.predict(SEQ, name="ok")).wait(progress=False)
            blocker = await c.predict(SEQ, name="hang")
            creating = asyncio.ensure_future(c.predict(SEQ, name="ok"))
            await asyncio.wait([creating, asyncio.ensure_future(announced.wait())], return_when=asyncio.FIRST_COMPLETED)
            assert announced.is_set() and not creating.done(), "the create did not wait out a 429"
            await blocker.cancel()
            job = await asyncio.wait_for(creating, 120)
            assert (await job.wait(progress=False)).status == "succeeded"

    run(main())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_server_that_cannot_be_reached_is_a_network_error_after_the_retries(
    client_log: Callable[[Any], Records],
) -> None:
    log = client_log(lambda r: "retrying" in r.getMessage())
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(chaperone.NetworkError) as e:
        Client(url, retries=2).health()
    assert e.value.attempts == 3 and url in str(e.value) and e.value.__cause__ is not None
    assert str(pickle.loads(pickle.dumps(e.value))) == str(e.value)
    assert len([r for r in log.records if "retrying" in r.getMessage()]) == 2

    async def main() -> None:
        async with AsyncClient(url, retries=0) as c:
            with pytest.raises(chaperone.NetworkError):
                await c.models()

    run(main())


def test_an_edges_bot_filter_is_passed_as_the_interface_says(proxy: FailingProxy) -> None:
    # An edge that refuses HTTP clients which do not look like browsers (403, error 1010):
    # the client repeats the request with a browser-like User-Agent.
    proxy.refuse(lambda h: not h.get("user-agent", "").startswith("Mozilla/"))
    with Client(proxy.url) as c:
        assert c.health().status == "ok"
    agents = [s.user_agent for s in proxy.requests("/v1/health")]
    assert agents == [
        "chaperone-python/" + chaperone.__version__,
        f"Mozilla/5.0 (compatible; chaperone-python/{chaperone.__version__})",
    ]
    # An edge that refuses every client: 403 is raised, with what the edge said.
    proxy.refuse(lambda h: True)
    with pytest.raises(chaperone.ForbiddenError) as e403:
        Client(proxy.url).health()
    assert e403.value.status == 403 and "1010" in e403.value.detail and e403.value.slug == ""


def test_a_key_that_is_not_valid_is_401_on_every_job_call(server_url: str) -> None:
    bad = Client(server_url, api_key="not-a-key")
    for call in (lambda: bad.job(NO_SUCH_JOB), lambda: bad.embed("MKV"), lambda: next(bad.jobs())):
        with pytest.raises(chaperone.UnauthorizedError):
            call()
    assert bad.models().object == "catalog"  # discovery needs no key and ignores a bad one


def test_a_proxys_503_is_waited_out_and_its_502_and_504_retried(
    proxy: FailingProxy, client_log: Callable[[Any], Records]
) -> None:
    log = client_log(lambda r: "waiting" in r.getMessage() or "retrying" in r.getMessage())
    proxy.fail(lambda path: path == "/v1/embeddings", 503, retry_after=1)
    proxy.fail(lambda path: path == "/v1/embeddings", 502)
    proxy.fail(lambda path: path.startswith("/v1/jobs/"), 504)
    with Client(proxy.url, patience=5) as c:
        job = c.embed("MKV", model="esmc-300m")
        assert job.wait(progress=False).status == "succeeded"
    creates = proxy.requests("/v1/embeddings")
    assert [s.status for s in creates] == [503, 502, 202]
    assert {s.user_agent for s in creates} == {c.config.user_agent}
    assert [r.levelname for r in log.records] == ["WARNING", "INFO", "INFO"]  # the announced wait, two retries
    # A proxy's error page is no problem document: its status and its words are kept.
    proxy.fail(lambda path: path == "/v1/health", 502, times=10)
    with pytest.raises(APIError) as e:
        Client(proxy.url, retries=1).health()
    assert type(e.value) is APIError and e.value.status == 502 and "upstream away" in e.value.detail
