"""The asyncio client against a real server: the same calls as the blocking one, awaited."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest

import chaperone
from chaperone import AsyncClient, JobFailedError, NotFoundError, ResultsNotReadyError

from .conftest import BINDER_SPEC, HANGING_SPEC, SEQ, SLOW_SPEC, FailingProxy, run


def test_a_prediction_design_and_embedding_run_to_their_results(server_url: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with AsyncClient(server_url) as c:
            fold, design, embed = await asyncio.gather(
                c.predict(SEQ, model="boltz2", params={"diffusion_samples": 2}),
                c.design("protein-anything", spec=BINDER_SPEC, params={"num_designs": 3, "budget": 2}),
                c.embed(sequences=[{"id": "P1", "sequence": SEQ}], model="esmc-300m"),
            )
            assert all(isinstance(j, chaperone.AsyncJob) for j in (fold, design, embed))
            assert await fold.wait(progress=False) is fold and fold.status == "succeeded"
            rows = (await fold.results()).to_dataframe()
            assert rows["id"].tolist() == ["target_1"] and rows.loc[0, "samples"] == 2
            saved = await fold.download(tmp_path / "fold")
            assert saved.structures == {
                "target_1": {0: tmp_path / "fold" / "target_1.cif", 1: tmp_path / "fold" / "target_1_sample_1.cif"}
            }

            await design.wait(progress=False)
            assert (await design.results()).to_dataframe()["rank"].tolist() == [1, 2]

            emb = await (await embed.wait(progress=False)).embeddings()
            assert emb.ids == ["P1"] and emb.per_residue["P1"].shape == (len(SEQ), 960)
            np.testing.assert_allclose(emb.per_residue["P1"].mean(axis=0), emb.pooled["P1"], rtol=1e-5, atol=1e-6)

            archive = await embed.download(tmp_path / "zip", archive=True)
            assert archive.archive == tmp_path / "zip" / f"{embed.id}.zip"
            assert archive.archive.read_bytes() == (await c.request("GET", f"/v1/jobs/{embed.id}/archive")).content

    run(main())


def test_a_failed_job_raises_with_the_engines_words(server_url: str) -> None:
    async def main() -> None:
        async with AsyncClient(server_url) as c:
            job = await c.predict(targets={"crash1": f">A|protein\n{SEQ}\n"}, params={"use_msa_server": False})
            with pytest.raises(JobFailedError) as failed:
                await job.wait(progress=False)
            assert job.status == "failed" and job.error and job.error in str(failed.value)
            with pytest.raises(ResultsNotReadyError):
                await job.results()

    run(main())


def test_logs_are_followed_as_they_grow(server_url: str) -> None:
    async def main() -> None:
        async with AsyncClient(server_url) as c:
            job = await c.design("protein-anything", spec=SLOW_SPEC, params={"num_designs": 20, "budget": 2})
            chunks = [text async for text in job.logs(follow=True, poll=1)]
            assert (await job.refresh()).status == "succeeded"
            assert len(chunks) >= 2 and "".join(chunks) == await job.logs()

    run(main())


def test_cancel_and_delete(server_url: str) -> None:
    async def main() -> None:
        async with AsyncClient(server_url) as c:
            job = await c.design("protein-anything", spec=HANGING_SPEC)
            assert (await job.cancel()).status == "canceled"
            assert (await job.wait(progress=False, raise_on_failure=False)).status == "canceled"
            assert (await job.delete()).deleted
            with pytest.raises(NotFoundError):
                await c.job(job.id)

    run(main())


def test_jobs_walks_every_page_past_a_hundred_jobs(
    server_url: str, paged_jobs: List[str], keys: Dict[str, str]
) -> None:
    async def main() -> None:
        async with AsyncClient(server_url, api_key=keys["paging"]) as c:
            assert [j.id async for j in c.jobs()] == paged_jobs
            assert [j.id async for j in c.jobs(page_size=30)] == paged_jobs
            first = await c.list_jobs(limit=100)
            assert first.has_more and len(first.data) == 100
            rest = await c.list_jobs(cursor=first.next_cursor, limit=100)
            assert not rest.has_more and rest.next_cursor is None
            assert [j.id for j in first.data + rest.data] == paged_jobs

    run(main())


def test_models_health_openapi_and_a_job_by_id(server_url: str) -> None:
    async def main() -> None:
        async with AsyncClient(server_url) as c:
            assert "esmc-300m" in (await c.models()).available("embed")
            assert (await c.health()).status == "ok"
            assert (await c.openapi())["info"]["version"] == "1.0.0"
            job = await c.embed("MKV", model="esmc-300m", name="found", wait=60)
            assert job.status == "succeeded"
            found = await c.job(job.id)
            assert found.name == "found" and (await found.refresh(wait=5)).status == "succeeded"

    run(main())


def test_idempotency_keys_and_a_lost_answer(proxy: FailingProxy, keys: Dict[str, str], server_url: str) -> None:
    async def main() -> None:
        async with AsyncClient(server_url) as c:
            a = await c.embed("MKV", model="esmc-300m", idempotency_key="pyclient-async-same")
            assert (await c.embed("MKV", model="esmc-300m", idempotency_key="pyclient-async-same")).id == a.id
            with pytest.raises(chaperone.IdempotencyKeyReusedError):
                await c.embed("MKVL", model="esmc-300m", idempotency_key="pyclient-async-same")
        proxy.cut(lambda path, h: path == "/v1/predictions", after=0)
        async with AsyncClient(proxy.url, api_key=keys["idempotency"]) as c:
            job = await c.predict(SEQ, name="async-once")
            posts = proxy.requests("/v1/predictions")
            assert [p.status for p in posts] == [202, 200]
            assert job.id in [j.id async for j in c.jobs()]
            assert [j.name async for j in c.jobs()].count("async-once") == 1

    run(main())


def test_wait_shows_progress_on_stderr(server_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    async def main() -> None:
        async with AsyncClient(server_url) as c:
            job = await c.embed("MKV", model="esmc-300m")
            await job.wait(progress="plain")
            assert capsys.readouterr().err.splitlines()[-1] == f"job {job.id[:12]}: succeeded 1/1"
            await job.wait(progress=False)
            assert capsys.readouterr().err == ""

    run(main())
