"""Downloads that a broken connection interrupts resume where they stopped, within the call
and in a later one, and never splice two versions of a file."""

from __future__ import annotations

from pathlib import Path

import pytest

import chaperone
from chaperone import AsyncClient, Client

from .conftest import SEQ, FailingProxy, run


@pytest.fixture(scope="module")
def finished_job(server_url: str) -> str:
    """A prediction with a few samples: an archive of some kilobytes."""
    with Client(server_url) as c:
        return c.predict(SEQ, model="boltz2", params={"diffusion_samples": 3}).wait(progress=False).id


def archive_requests(proxy: FailingProxy, job_id: str) -> list:
    return proxy.requests(f"/v1/jobs/{job_id}/archive")


def test_an_archive_cut_short_resumes_with_a_range_in_the_same_call(
    proxy: FailingProxy, finished_job: str, tmp_path: Path
) -> None:
    whole = Client(proxy.upstream).request("GET", f"/v1/jobs/{finished_job}/archive")
    assert len(whole.content) > 2000
    proxy.cut(lambda path, h: path.endswith("/archive"), after=1000)
    with Client(proxy.url) as c:
        saved = c.job(finished_job).download(tmp_path, archive=True)
    assert saved.archive == tmp_path / f"{finished_job}.zip" and saved.archive.read_bytes() == whole.content
    first, second = archive_requests(proxy, finished_job)
    assert first.range is None and second.range == "bytes=1000-" and second.status == 206
    assert second.if_range == whole.headers["etag"]  # only the same version may be continued
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{finished_job}.zip"]


def test_an_interrupted_download_is_resumed_by_the_next_call(
    proxy: FailingProxy, finished_job: str, tmp_path: Path
) -> None:
    whole = Client(proxy.upstream).request("GET", f"/v1/jobs/{finished_job}/archive").content
    # The connection breaks after 1500 bytes, and again at once when the client resumes: a
    # client that does not retry an attempt that brought nothing gives up.
    proxy.cut(lambda path, h: path.endswith("/archive") and "range" not in h, after=1500)
    proxy.cut(lambda path, h: path.endswith("/archive") and "range" in h, after=0)
    with Client(proxy.url, retries=0) as impatient:
        with pytest.raises(chaperone.NetworkError, match="1500"):
            impatient.job(finished_job).download(tmp_path, archive=True)
    part = tmp_path / f"{finished_job}.zip.part"
    assert part.read_bytes() == whole[:1500] and not (tmp_path / f"{finished_job}.zip").exists()

    async def later() -> None:  # another run, with the other client
        async with AsyncClient(proxy.url) as c:
            saved = await (await c.job(finished_job)).download(tmp_path, archive=True)
            assert saved.archive is not None and saved.archive.read_bytes() == whole

    run(later())
    assert archive_requests(proxy, finished_job)[-1].range == "bytes=1500-"
    assert not part.exists() and not (tmp_path / f"{finished_job}.zip.part.etag").exists()


def test_every_artifact_resumes_as_well(proxy: FailingProxy, finished_job: str, tmp_path: Path) -> None:
    proxy.cut(lambda path, h: path.endswith(".cif") and "range" not in h, after=10, times=3)
    with Client(proxy.url) as c:
        saved = c.job(finished_job).download(tmp_path)
    with Client(proxy.upstream) as direct:
        for path, local in saved.files.items():
            assert local.read_bytes() == direct.request("GET", f"/v1/jobs/{finished_job}/artifacts/{path}").content
    cifs = [s for s in proxy.seen if s.path.endswith(".cif")]
    assert [s.range for s in cifs if s.range] == ["bytes=10-"] * 3  # three samples, each resumed
    assert sorted(saved.structures["target_1"]) == [0, 1, 2]


def test_a_partial_file_of_another_version_is_started_over(
    proxy: FailingProxy, finished_job: str, tmp_path: Path
) -> None:
    whole = Client(proxy.upstream).request("GET", f"/v1/jobs/{finished_job}/archive").content
    dest = tmp_path / f"{finished_job}.zip"
    Path(str(dest) + ".part").write_bytes(b"x" * 700)  # left by a download of another version
    Path(str(dest) + ".part.etag").write_text('"another-version"\n')
    with Client(proxy.url) as c:
        c.job(finished_job).download(tmp_path, archive=True)
    assert dest.read_bytes() == whole
    asked = archive_requests(proxy, finished_job)[-1]
    assert asked.range == "bytes=700-" and asked.if_range == '"another-version"' and asked.status == 200


def test_only_the_artifacts_asked_for(client: Client, finished_job: str, tmp_path: Path) -> None:
    saved = client.job(finished_job).download(tmp_path, artifacts=["target_1.cif"])
    assert list(saved.files) == ["target_1.cif"] and saved.structures == {"target_1": {0: tmp_path / "target_1.cif"}}
    with pytest.raises(chaperone.NotFoundError, match="nothing.cif"):
        client.job(finished_job).download(tmp_path, artifacts=["nothing.cif"])


def test_the_archive_of_a_job_not_finished_is_a_conflict_and_leaves_nothing(client: Client, tmp_path: Path) -> None:
    job = client.predict(targets={"slow1": f">A|protein\n{SEQ}\n"}, params={"use_msa_server": False})
    try:
        with pytest.raises(chaperone.ConflictError):
            job.download(tmp_path, archive=True)
        assert list(tmp_path.iterdir()) == []
    finally:
        job.cancel()
