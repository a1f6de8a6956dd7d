"""The blocking client against a real server: every call, and results as data."""

from __future__ import annotations

import pickle
import re
import sys
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest

import chaperone
from chaperone import Client, Embeddings, JobFailedError, NotFoundError, ResultsNotReadyError

from .conftest import BINDER_SPEC, HANGING_SPEC, SEQ, SLOW_SPEC, FailingProxy, pdb_target


def test_a_prediction_becomes_a_table_and_structures_by_target_and_sample(client: Client, tmp_path: Path) -> None:
    job = client.predict(SEQ, model="boltz2", name="fold", params={"diffusion_samples": 2})
    assert isinstance(job, chaperone.Job) and job.kind == "predict" and job.model == "boltz2"
    assert job.params["diffusion_samples"] == 2  # the accepted params, defaults filled in
    assert job.wait(progress=False) is job
    assert job.status == "succeeded" and job.results_ready and job.progress == 1 and job.finished

    res = job.results()
    assert isinstance(res, chaperone.PredictionResults) and res.job_id == job.id
    table = res.to_dataframe()
    assert table.columns[0] == "id"
    assert list(table["id"]) == ["target_1"] and table.loc[0, "samples"] == 2 and 0 <= table.loc[0, "plddt"] <= 1

    saved = job.download(tmp_path / "fold")
    run = tmp_path / "fold"
    assert saved.structures == {"target_1": {0: run / "target_1.cif", 1: run / "target_1_sample_1.cif"}}
    assert set(saved.files) == {a.path for a in res.artifacts}
    for a in res.artifacts:  # each file as the server serves it
        assert saved.files[a.path].read_bytes() == client.request("GET", a.url).content
    assert (run / "results.json").exists()
    assert not list(run.rglob("*.part*")), "partial files left behind"


def test_many_targets_make_one_job_and_a_failed_target_is_a_row_saying_why(client: Client) -> None:
    fasta = f">A|protein\n{SEQ}\n"
    job = client.predict(targets={"good": fasta, "skipped": fasta}, params={"use_msa_server": False}).wait(
        progress=False
    )
    table = job.results().to_dataframe().set_index("id")
    assert table.loc["good", "status"] == "ok" and table.loc["skipped", "status"] == "failed"
    assert "skipped" in table.loc["skipped", "error"] and table.loc["skipped", "error"]
    # The same targets as the JSON body's list.
    again = client.predict(targets=[{"name": "good", "content": fasta}], params={"use_msa_server": False})
    assert again.wait(progress=False).results().to_dataframe()["id"].tolist() == ["good"]


def test_a_job_whose_every_target_failed_raises_with_the_engines_words(client: Client) -> None:
    job = client.predict(targets={"crash1": f">A|protein\n{SEQ}\n"}, params={"use_msa_server": False})
    with pytest.raises(JobFailedError) as failed:
        job.wait(progress=False)
    assert failed.value.job is job and job.status == "failed" and job.error and job.error in str(failed.value)
    again = pickle.loads(pickle.dumps(failed.value))  # a pipeline's worker process hands it on
    assert str(again) == str(failed.value) and again.job.id == job.id and again.job.error == job.error
    assert job.wait(progress=False, raise_on_failure=False).status == "failed"
    with pytest.raises(ResultsNotReadyError, match="failed"):
        job.results()


def test_designs_become_a_ranked_table_with_a_column_per_metric(client: Client, tmp_path: Path) -> None:
    job = client.design("protein-anything", spec=BINDER_SPEC, params={"num_designs": 4, "budget": 3}).wait(
        progress=False
    )
    assert job.kind == "design" and job.protocol == "protein-anything"
    res = job.results()
    assert isinstance(res, chaperone.DesignResults)
    table = res.to_dataframe()
    assert list(table.columns[:4]) == ["id", "rank", "sequence", "file"]
    assert table["rank"].tolist() == [1, 2, 3] and "iptm" in table.columns
    assert table["iptm"].tolist() == [d["metrics"]["iptm"] for d in res.designs]
    saved = job.download(tmp_path / "designs")
    assert saved.structures == {d["id"]: {0: tmp_path / "designs" / d["file"]} for d in res.designs}


def test_rfd3_designs_are_unranked(client: Client) -> None:
    job = client.design("rfd3-binder", structure=pdb_target(40), contig="30,/0,A1-20", params={"num_designs": 2})
    res = job.wait(progress=False).results()
    assert isinstance(res, chaperone.DesignResults) and len(res.designs) == 2
    assert [d["rank"] for d in res.designs] == [None, None]


def test_embeddings_are_numpy_arrays_keyed_by_sequence_id(client: Client, tmp_path: Path) -> None:
    job = client.embed(sequences=["MKV", {"id": "P1", "sequence": SEQ}], model="esmc-300m", params={"pool": "mean"})
    emb = job.wait(progress=False).embeddings()
    assert emb.ids == ["seq1", "P1"] and emb.d_model == 960 and emb.format == "npz" and emb.pool == "mean"
    assert emb.pooled["P1"].shape == (960,) and emb.pooled["P1"].dtype == np.float32
    assert emb.per_residue["P1"].shape == (len(SEQ), 960) and emb.per_residue["seq1"].shape == (3, 960)
    # Mean pooling: the pooled vector is the mean of the residues' vectors.
    np.testing.assert_allclose(emb.per_residue["P1"].mean(axis=0), emb.pooled["P1"], rtol=1e-5, atol=1e-6)
    assert emb.matrix().shape == (2, 960) and np.array_equal(emb.matrix()[1], emb.pooled["P1"])

    saved = job.download(tmp_path / "emb")
    for loaded in (saved.embeddings(), Embeddings.load(tmp_path / "emb")):
        assert loaded.ids == emb.ids
        for i in emb.ids:
            assert np.array_equal(loaded.pooled[i], emb.pooled[i]) and np.array_equal(
                loaded.per_residue[i], emb.per_residue[i]
            )


def test_parquet_embeddings_hold_the_same_pooled_vectors_and_no_per_residue_ones(client: Client) -> None:
    seqs = [{"id": "a", "sequence": "MKV"}, {"id": "b", "sequence": SEQ}]
    npz = client.embed(sequences=seqs, model="esmc-300m", params={"pool": "max"}).wait(progress=False).embeddings()
    pq = client.embed(sequences=seqs, model="esmc-300m", params={"pool": "max", "format": "parquet"})
    table = pq.wait(progress=False).embeddings()
    assert table.format == "parquet" and table.ids == ["a", "b"] and table.per_residue == {}
    for i in ("a", "b"):
        np.testing.assert_array_equal(table.pooled[i], npz.pooled[i])
        np.testing.assert_array_equal(npz.per_residue[i].max(axis=0), npz.pooled[i])  # max pooling
    assert pq.results().to_dataframe()["file"].tolist() == ["embeddings.parquet"] * 2


def test_a_helper_whose_optional_package_is_missing_says_how_to_install_it(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = client.embed("MKV", model="esmc-300m", wait=60)
    results = job.results()
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if it were not installed
    with pytest.raises(ImportError, match=r"pip install 'chaperone-client\[pandas\]'"):
        results.to_dataframe()
    monkeypatch.setitem(sys.modules, "numpy", None)
    with pytest.raises(ImportError, match=r"pip install 'chaperone-client\[numpy\]'"):
        job.embeddings()


def test_logs_followed_arrive_while_the_job_runs_and_add_up_to_the_whole_log(client: Client) -> None:
    job = client.design("protein-anything", spec=SLOW_SPEC, params={"num_designs": 20, "budget": 2})
    chunks = list(job.logs(follow=True, poll=1))
    assert job.refresh().status == "succeeded"
    assert len(chunks) >= 2, "the log came in one piece: it was not followed as it grew"
    assert "".join(chunks) == job.logs()


def test_cancel_stops_a_job_and_delete_removes_it(client: Client) -> None:
    job = client.design("protein-anything", spec=HANGING_SPEC)
    with pytest.raises(chaperone.WaitTimeout) as late:
        job.wait(timeout=1, progress=False)
    assert late.value.job.id == job.id and not late.value.job.finished
    assert job.cancel() is job and job.status == "canceled"
    assert job.cancel().status == "canceled"  # canceling again changes nothing
    with pytest.raises(JobFailedError, match="canceled"):
        job.wait(progress=False)
    with pytest.raises(ResultsNotReadyError):
        job.results()
    deleted = job.delete()
    assert deleted.deleted and deleted.id == job.id
    with pytest.raises(NotFoundError):
        client.job(job.id)
    with pytest.raises(NotFoundError):
        job.refresh()


def test_a_job_is_found_by_its_id_and_refresh_holds_until_it_ends(client: Client) -> None:
    job = client.embed("MKV", model="esmc-300m", name="by-id")
    found = client.job(job.id)
    assert found.id == job.id and found.name == "by-id" and found.kind == "embed"
    assert found.refresh(wait=60).status == "succeeded"  # Prefer: wait answers when it ends


def test_a_create_may_hold_its_answer_until_the_job_ends(client: Client) -> None:
    job = client.embed("MKV", model="esmc-300m", wait=60)
    assert job.status == "succeeded"


def test_jobs_walks_every_page_past_a_hundred_jobs(
    server_url: str, paged_jobs: List[str], keys: Dict[str, str]
) -> None:
    with Client(server_url, api_key=keys["paging"]) as c:
        assert [j.id for j in c.jobs()] == paged_jobs  # pages of 100: two of them
        assert [j.id for j in c.jobs(page_size=25)] == paged_jobs  # five
        first = c.list_jobs(limit=50)
        assert first.object == "list" and first.has_more and first.next_cursor
        second = c.list_jobs(limit=50, cursor=first.next_cursor)
        assert [j.id for j in first.data + second.data] == paged_jobs[:100]
        assert all(isinstance(j, chaperone.Job) for j in second.data)


def test_models_say_what_a_worker_can_run_now(client: Client) -> None:
    catalog = client.models()
    assert catalog.object == "catalog" and catalog.limits["list_max"] == 100
    assert catalog.model("boltz2").available and catalog.model("boltz2").params["diffusion_samples"]["max"] == 5
    assert {"boltz2", "boltzgen", "rfd3", "esmc-300m"} <= set(catalog.available())
    assert "esmc-300m" in catalog.available("embed") and "boltz2" not in catalog.available("embed")
    offline = catalog.model("protenix-v2")
    assert not offline.available and offline.unavailable_reason
    assert {p.id for p in catalog.protocols} >= {"protein-anything", "rfd3-binder"}
    with pytest.raises(KeyError):
        catalog.model("alphafold9")


def test_health_and_the_openapi_document(client: Client) -> None:
    health = client.health()
    assert health.status == "ok" and health.api_version == "1.0.0"
    assert client.openapi()["openapi"].startswith("3.1")


def test_the_address_and_key_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, server_url: str, keys: Dict[str, str]
) -> None:
    assert Client().base_url == "http://127.0.0.1:8080"
    monkeypatch.setenv("CHAPERONE_URL", server_url + "/")
    monkeypatch.setenv("CHAPERONE_API_KEY", keys["listing"])
    with Client() as c:
        assert c.base_url == server_url
        job = c.embed("MKV", model="esmc-300m")
        assert job.id in [j.id for j in c.jobs()]  # the key's job
    with Client(api_key="") as keyless:  # an empty key sends none: the caller's address owns
        assert job.id not in [j.id for j in keyless.jobs()]
        with pytest.raises(NotFoundError):
            keyless.job(job.id)
    with pytest.raises(ValueError, match="http"):
        Client("ftp://example.org")


def test_a_create_repeated_with_its_idempotency_key_returns_the_first_job(client: Client) -> None:
    first = client.embed("MKV", model="esmc-300m", idempotency_key="pyclient-same-create")
    assert client.embed("MKV", model="esmc-300m", idempotency_key="pyclient-same-create").id == first.id
    with pytest.raises(chaperone.IdempotencyKeyReusedError):
        client.embed("MKVL", model="esmc-300m", idempotency_key="pyclient-same-create")


def test_a_create_whose_answer_was_lost_is_sent_again_without_making_a_second_job(
    proxy: FailingProxy, keys: Dict[str, str]
) -> None:
    proxy.cut(lambda path, h: path == "/v1/embeddings", after=0)
    with Client(proxy.url, api_key=keys["idempotency"]) as c:
        job = c.embed("MKV", model="esmc-300m", name="once")
        posts = proxy.requests("/v1/embeddings")
        assert len(posts) == 2 and posts[0].status == 202 and posts[1].status == 200  # the second is a replay
        assert [j.id for j in c.jobs() if j.name == "once"] == [job.id]


def plain(text: str) -> bool:
    return not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text)


def test_wait_shows_lines_a_bar_or_nothing(
    client: Client, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    job = client.design("protein-anything", spec=SLOW_SPEC, params={"num_designs": 10, "budget": 2})
    job.wait(progress="plain", poll=1)
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1] == f"job {job.id[:12]}: succeeded 10/10" and plain("\n".join(lines))
    assert any("running designing" in line for line in lines), lines

    job.wait(progress=False)
    assert capsys.readouterr().err == ""

    job.wait()  # tqdm is installed here: a bar
    err = capsys.readouterr().err
    assert "100%" in err and f"job {job.id[:12]}" in err and "\r" in err

    monkeypatch.setitem(sys.modules, "tqdm", None)  # as if it were not installed
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    job.wait()
    assert capsys.readouterr().err == f"job {job.id[:12]}: succeeded 10/10\n"
    with pytest.raises(ImportError):
        job.wait(progress="tqdm")
