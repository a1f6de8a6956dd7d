"""Waiting on a hundred jobs at once: one long poll per job, no busy loop, with both clients,
within the long polls a server holds for one client. The times go to the run's figures."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Any, Dict, List

import httpx

import chaperone
from chaperone import AsyncClient, Client

from .conftest import FIGURES, run

N = 100


def finished(jobs: List[Any]) -> float:
    """The time.time() at which the last of the jobs ended, by the server's clock."""
    return max(datetime.fromisoformat(j.finished_at.replace("Z", "+00:00")).timestamp() for j in jobs)


class Count:
    """The requests an httpx client made, how many were open at once at most, and the polls
    the server answered without holding them (no Preference-Applied: it holds only so many
    for one client, and answers more at once)."""

    def __init__(self) -> None:
        self.paths: List[str] = []
        self.open = self.most_open = self.unheld = 0

    def request(self, request: httpx.Request) -> None:
        self.paths.append(request.url.path)
        self.open += 1
        self.most_open = max(self.most_open, self.open)

    def response(self, response: httpx.Response) -> None:
        self.open -= 1
        if response.request.url.path.startswith("/v1/jobs/") and "preference-applied" not in response.headers:
            self.unheld += 1

    def polled_once_each(self, polls: List[str], jobs: List[Any]) -> None:
        """Every job was polled, and again only after an answer the server did not hold:
        the client never polls in a loop."""
        assert set(polls) == {f"/v1/jobs/{j.id}" for j in jobs}
        assert len(jobs) <= len(polls) <= len(jobs) + self.unheld


def figure(name: str, created: float, took: float, jobs: List[Any], ended: float, count: Count, polls: int) -> None:
    FIGURES[name] = (
        f"{took:.2f} s for {N} jobs created in {created:.2f} s ({ended - (time.time() - took):+.2f} s from the start of the wait to the "
        f"last job's end, by the server's clock), {polls} polls ({count.unheld} not held), at most {count.most_open} open at once"
    )


def test_a_client_waits_on_a_hundred_jobs_with_one_poll_each(server_url: str, keys: Dict[str, str]) -> None:
    count = Count()
    http = httpx.Client(event_hooks={"request": [count.request], "response": [count.response]})
    with Client(server_url, api_key=keys["many"], http_client=http) as c:
        began = time.monotonic()
        jobs = [c.embed("MKTAYIAK" + "A" * i, model="esmc-300m", name=f"many-{i}") for i in range(N)]
        created = time.monotonic() - began
        creates = len(count.paths)
        start = time.monotonic()
        assert c.wait_all(jobs, progress=False) == jobs
        took = time.monotonic() - start
    http.close()
    assert [j.status for j in jobs] == ["succeeded"] * N
    polls = count.paths[creates:]
    count.polled_once_each(polls, jobs)
    assert count.unheld == 0  # one poll at a time is always held: once per job, until it ended
    figure("wait_all on 100 jobs, Client", created, took, jobs, finished(jobs), count, len(polls))


def test_an_async_client_waits_on_a_hundred_jobs_at_once(server_url: str, keys: Dict[str, str]) -> None:
    count = Count()

    async def on_request(r: httpx.Request) -> None:
        count.request(r)

    async def on_response(r: httpx.Response) -> None:
        count.response(r)

    async def main() -> List[chaperone.AsyncJob]:
        http = httpx.AsyncClient(
            event_hooks={"request": [on_request], "response": [on_response]}, limits=httpx.Limits(max_connections=32)
        )
        async with AsyncClient(server_url, api_key=keys["async-many"], http_client=http) as c:
            began = time.monotonic()
            jobs = list(
                await asyncio.gather(
                    *(c.embed("MKTAYIAK" + "A" * i, model="esmc-300m", name=f"amany-{i}") for i in range(N))
                )
            )
            created = time.monotonic() - began
            creates = len(count.paths)
            count.most_open = 0
            start = time.monotonic()
            assert await c.wait_all(jobs, progress=False) == jobs
            took = time.monotonic() - start
        await http.aclose()
        polls = count.paths[creates:]
        count.polled_once_each(polls, jobs)
        assert count.most_open <= 16  # the long polls a server holds for one client
        figure("wait_all on 100 jobs, AsyncClient", created, took, jobs, finished(jobs), count, len(polls))
        return jobs

    assert [j.status for j in run(main())] == ["succeeded"] * N


def test_wait_all_reports_how_many_have_finished(client: Client, capsys: Any) -> None:
    jobs = [client.embed("MKV", model="esmc-300m") for _ in range(3)]
    client.wait_all(jobs, progress="plain")
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" (")[0] for line in lines] == [f"chaperone: {k}/3 jobs finished" for k in (1, 2, 3)]
    failing = client.predict(targets={"crash1": ">A|protein\nMKV\n"}, params={"use_msa_server": False})
    try:
        client.wait_all([failing], progress=False, raise_on_failure=True)
        raise AssertionError("a failed job did not raise")
    except chaperone.JobFailedError as e:
        assert e.job is failing
