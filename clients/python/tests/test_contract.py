"""The client's types and calls use the API's own names: every field of a type is a property
of its schema in api/openapi.json, and every property the schema requires is a field, so a
renamed or added field on either side fails here instead of drifting."""

from __future__ import annotations

import dataclasses
import inspect
import json
import typing
from typing import Any, Dict, Set

import pytest

import chaperone
from chaperone import _types

from .conftest import REPO

OPENAPI = json.loads((REPO / "api" / "openapi.json").read_text())
SCHEMAS: Dict[str, Any] = OPENAPI["components"]["schemas"]

# Each type of the client and the schema it stands for.
DATACLASSES = {
    _types.JobState: "Job",
    chaperone.JobList: "JobList",
    chaperone.DeletedJob: "DeletedJob",
    chaperone.Health: "Health",
    chaperone.Artifact: "Artifact",
    chaperone.EmbeddedSequence: "EmbeddedSequence",
    chaperone.PredictionResults: "PredictionResults",
    chaperone.DesignResults: "DesignResults",
    chaperone.EmbeddingResults: "EmbeddingResults",
    chaperone.Catalog: "Catalog",
    chaperone.CatalogModel: "CatalogModel",
    chaperone.CatalogProtocol: "CatalogProtocol",
}
TYPEDDICTS = {
    chaperone.PredictionRow: "PredictionRow",
    chaperone.Design: "Design",
    chaperone.Target: "Target",
    chaperone.PredictParams: "PredictParams",
    chaperone.BoltzGenParams: "BoltzGenParams",
    chaperone.RFD3Params: "RFD3Params",
    chaperone.EmbedParams: "EmbedParams",
}


def properties(schema: str) -> Set[str]:
    return set(SCHEMAS[schema].get("properties", {}))


def required(schema: str) -> Set[str]:
    return set(SCHEMAS[schema].get("required", []))


@pytest.mark.parametrize("cls", list(DATACLASSES), ids=lambda c: c.__name__)
def test_each_field_of_a_type_is_a_property_of_its_schema_and_none_required_is_missing(cls: Any) -> None:
    schema = DATACLASSES[cls]
    fields = {f.name for f in dataclasses.fields(cls)}
    assert fields - properties(schema) == set(), f"{cls.__name__} has fields {schema} lacks"
    assert required(schema) - fields == set(), f"{cls.__name__} lacks required fields of {schema}"


@pytest.mark.parametrize("cls", list(DATACLASSES), ids=lambda c: c.__name__)
def test_every_property_of_a_schema_has_a_field(cls: Any) -> None:
    # Optional properties too: what the API can send, the client can hold by name.
    schema = DATACLASSES[cls]
    assert properties(schema) - {f.name for f in dataclasses.fields(cls)} == set()


@pytest.mark.parametrize("td", list(TYPEDDICTS), ids=lambda t: t.__name__)
def test_each_key_of_a_typed_dict_is_its_schemas_and_the_other_way_round(td: Any) -> None:
    schema = TYPEDDICTS[td]
    assert set(typing.get_type_hints(td)) == properties(schema)
    if td.__total__:
        assert td.__required_keys__ == required(schema)


def test_the_job_subclasses_keep_the_jobs_fields_only() -> None:
    for cls in (chaperone.Job, chaperone.AsyncJob):
        assert {f.name for f in dataclasses.fields(cls)} == properties("Job")


@pytest.mark.parametrize(
    "method, schema",
    [("predict", "PredictRequest"), ("design", "DesignRequest"), ("embed", "EmbedRequest")],
)
def test_the_create_calls_take_the_request_bodys_fields(method: str, schema: str) -> None:
    for cls in (chaperone.Client, chaperone.AsyncClient):
        params = set(inspect.signature(getattr(cls, method)).parameters) - {"self"}
        # Besides the body's fields: the Idempotency-Key header and Prefer: wait.
        assert params - {"idempotency_key", "wait"} == properties(schema), f"{cls.__name__}.{method}"
        required_params = {
            n
            for n, p in inspect.signature(getattr(cls, method)).parameters.items()
            if p.default is inspect.Parameter.empty
        } - {"self"}
        assert required_params == required(schema), f"{cls.__name__}.{method}"


def documented_statuses() -> Set[int]:
    """Every error status of the API's paths; 405, which every path answers for a method it
    does not take; and the 403 of an edge in front of a server, which the interface names."""
    statuses = {403, 405}
    for ops in OPENAPI["paths"].values():
        for op in ops.values():
            if isinstance(op, dict):
                statuses |= {int(s) for s in op.get("responses", {}) if s.isdigit() and int(s) >= 400}
    return statuses


def test_there_is_one_error_class_per_documented_status() -> None:
    assert set(chaperone.ERRORS) == documented_statuses()
    for status, cls in chaperone.ERRORS.items():
        assert issubclass(cls, chaperone.APIError) and cls.status == status
    assert len(set(chaperone.ERRORS.values())) == len(chaperone.ERRORS)


def test_an_error_carries_every_field_of_a_problem() -> None:
    err = chaperone.NotFoundError(404)
    assert properties("Problem") <= set(vars(err))


def test_both_clients_offer_the_same_calls_with_the_same_arguments() -> None:
    def surface(cls: Any) -> Dict[str, Any]:
        return {
            name: list(inspect.signature(fn).parameters)
            for name, fn in inspect.getmembers(cls, callable)
            if not name.startswith("_")
        }

    sync, async_ = surface(chaperone.Client), surface(chaperone.AsyncClient)
    assert sync.pop("close") and async_.pop("aclose")
    assert sync == async_
    assert surface(chaperone.Job) == surface(chaperone.AsyncJob)
