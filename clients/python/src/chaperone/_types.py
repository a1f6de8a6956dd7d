"""The API's objects as Python types. Field names are the API's own (api/openapi.json), so
that ``job.status`` here is ``status`` there; a test holds the two together."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, Generic, List, Literal, Mapping, Optional, Type, TypedDict, TypeVar, Union

Kind = Literal["predict", "design", "embed"]
Status = Literal["queued", "running", "succeeded", "failed", "canceled"]

#: The statuses a job does not leave.
TERMINAL = frozenset(("succeeded", "failed", "canceled"))

T = TypeVar("T")


def build(cls: Type[T], data: Mapping[str, Any], /, **override: Any) -> T:
    """An instance of the dataclass cls from a JSON object: each field from the key of its
    name, None where the server left it out (another server of this API may), unknown keys
    ignored. The object as sent stays readable as ``to_dict()``."""
    values = {f.name: data.get(f.name) for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    values.update(override)
    obj = cls(**values)
    object.__setattr__(obj, "_raw", dict(data))
    return obj


class _Raw:
    _raw: Dict[str, Any]

    def to_dict(self) -> Dict[str, Any]:
        """The object exactly as the server sent it, unknown fields included."""
        return dict(getattr(self, "_raw", {}))


# Request bodies' parts -----------------------------------------------------------------


class Target(TypedDict, total=False):
    """One input of a prediction with many targets: ``content`` (FASTA or YAML, required)
    and ``name`` (the target's id in the results)."""

    content: str
    name: str


class PredictParams(TypedDict, total=False):
    """``params`` of a prediction; omitted keys take the model's defaults (``models()``)."""

    use_msa_server: bool
    fast: bool
    recycling_steps: int
    sampling_steps: int
    diffusion_samples: int
    output_format: str
    seed: int
    write_pae: bool


class BoltzGenParams(TypedDict, total=False):
    """``params`` of a BoltzGen design (the six protocols that take a ``spec``)."""

    num_designs: int
    budget: int
    fast: bool


class RFD3Params(TypedDict, total=False):
    """``params`` of an RFdiffusion3 design (the ``rfd3-*`` protocols)."""

    num_designs: int
    num_timesteps: int
    seed: int


class EmbedParams(TypedDict, total=False):
    """``params`` of an embedding: ``pool`` (mean, max, cls), ``format`` (npz, parquet),
    ``fast``."""

    pool: str
    format: str
    fast: bool


class SequenceEntry(TypedDict, total=False):
    """An item of ``sequences`` when it names its sequence: ``{"id": ..., "sequence": ...}``."""

    id: str
    sequence: str


# Jobs ------------------------------------------------------------------------------------


@dataclass
class JobState(_Raw):
    """A job as the API describes it. ``Job`` and ``AsyncJob`` add the calls on it."""

    object: str
    id: str
    kind: str
    status: str
    name: str
    model: Optional[str]
    protocol: Optional[str]
    progress: Optional[float]
    stage: Optional[str]
    done: int
    total: int
    params: Dict[str, Any]
    error: Optional[str]
    created_at: Optional[str]
    started_at: Optional[str]
    finished_at: Optional[str]
    results_ready: bool
    links: Dict[str, str]
    #: Only on some answers: what a succeeded job delivered of what it was asked for.
    partial: Optional[Dict[str, Any]] = None
    #: Only on a queued job no worker has a free slot for: why it waits.
    queue: Optional[Dict[str, Any]] = None
    waiting_for_device: Optional[bool] = None
    #: Only on a create's answer: the caveats the job was accepted with.
    warnings: Optional[List[str]] = None

    @property
    def finished(self) -> bool:
        """Whether the job is in a terminal status (succeeded, failed or canceled)."""
        return self.status in TERMINAL

    def _update(self, other: JobState) -> None:
        for f in dataclasses.fields(JobState):
            setattr(self, f.name, getattr(other, f.name))
        self._raw = other.to_dict()


J = TypeVar("J", bound=JobState)


@dataclass
class JobList(Generic[J], _Raw):
    """One page of ``GET /v1/jobs``: ``data`` (the jobs, newest first), ``has_more`` and
    ``next_cursor`` (pass it as ``cursor`` for the next page)."""

    object: str
    data: List[J]
    has_more: bool
    next_cursor: Optional[str]


@dataclass
class DeletedJob(_Raw):
    """The answer to a delete."""

    object: str
    id: str
    deleted: bool


@dataclass
class Health(_Raw):
    """``GET /v1/health``: liveness and the API version."""

    status: str
    service: str
    api_version: str
    version: str
    ready: Optional[bool] = None


# Results ---------------------------------------------------------------------------------


@dataclass
class Artifact(_Raw):
    """A file of the results: its ``path`` in the results (and under a download folder),
    the ``target`` it belongs to, its ``type`` (structure, confidence, pae, affinity,
    embedding, table, metrics, log) and its ``url`` (a path under the server's address)."""

    path: str
    target: str
    type: str
    url: str


class PredictionRow(TypedDict, total=False):
    """One target of a prediction. ``status`` is ``ok`` or ``failed`` (then ``error`` says
    why); the scores are 0..1; affinity fields appear on boltz2 affinity runs."""

    id: str
    status: str
    error: str
    n_chains: int
    n_residues: int
    samples: int
    msa: bool
    plddt: Optional[float]
    ptm: Optional[float]
    iptm: Optional[float]
    runtime_s: float
    complex_plddt: Optional[float]
    complex_iplddt: Optional[float]
    complex_pde: Optional[float]
    complex_ipde: Optional[float]
    confidence_score: Optional[float]
    affinity_pred_value: Optional[float]
    affinity_probability_binary: Optional[float]
    affinity_pred_value1: Optional[float]
    affinity_probability_binary1: Optional[float]
    affinity_pred_value2: Optional[float]
    affinity_probability_binary2: Optional[float]
    # runtime_s split between the structure and the affinity predictions
    structure_runtime_s: float
    affinity_runtime_s: float


class Design(TypedDict):
    """One design: ``rank`` (1-based for BoltzGen, None for rfd3), the designed chain's
    ``sequence``, the artifact path of its structure (``file``) and its ``metrics``."""

    id: str
    rank: Optional[int]
    sequence: str
    file: str
    metrics: Dict[str, Any]


@dataclass
class EmbeddedSequence(_Raw):
    """One embedded sequence: its ``id``, ``length`` and the artifact ``file`` holding it."""

    id: str
    length: int
    file: str


@dataclass
class Results(_Raw):
    """What a job produced; ``PredictionResults``, ``DesignResults`` or
    ``EmbeddingResults`` by its kind."""

    object: str
    job_id: str
    kind: str
    ready: bool
    artifacts: List[Artifact]
    archive_url: str

    def artifact(self, path: str) -> Artifact:
        """The artifact at ``path``; KeyError if the results list none there."""
        for a in self.artifacts:
            if a.path == path:
                return a
        raise KeyError(path)

    def to_dataframe(self) -> Any:
        """The results' table as a pandas DataFrame (needs pandas)."""
        raise NotImplementedError


@dataclass
class PredictionResults(Results):
    """A prediction's results: one row per target."""

    rows: List[PredictionRow]

    def to_dataframe(self) -> Any:
        """One row per target, the columns the rows' fields (``id`` first)."""
        from ._data import rows_frame

        return rows_frame(self.rows)


@dataclass
class DesignResults(Results):
    """A design's results: the designs, best first where they are ranked."""

    designs: List[Design]

    def to_dataframe(self) -> Any:
        """One row per design: ``id``, ``rank``, ``sequence``, ``file``, then each metric as
        a column of its own."""
        from ._data import designs_frame

        return designs_frame(self.designs)


@dataclass
class EmbeddingResults(Results):
    """An embedding's results: the model, pooling, file format and width, and one entry per
    sequence. ``Job.embeddings()`` reads the vectors themselves."""

    model: str
    pool: str
    format: str
    d_model: int
    sequences: List[EmbeddedSequence]

    def to_dataframe(self) -> Any:
        """One row per sequence: ``id``, ``length``, ``file``."""
        from ._data import rows_frame

        return rows_frame([s.to_dict() for s in self.sequences])


def parse_results(data: Mapping[str, Any]) -> Results:
    """The typed results of a ready results answer."""
    artifacts = [build(Artifact, a) for a in data.get("artifacts") or []]
    kind = data.get("kind")
    if kind == "predict":
        return build(PredictionResults, data, artifacts=artifacts, rows=list(data.get("rows") or []))
    if kind == "design":
        return build(DesignResults, data, artifacts=artifacts, designs=list(data.get("designs") or []))
    if kind == "embed":
        seqs = [build(EmbeddedSequence, s) for s in data.get("sequences") or []]
        return build(EmbeddingResults, data, artifacts=artifacts, sequences=seqs)
    return build(Results, data, artifacts=artifacts)


# The catalog -------------------------------------------------------------------------------


@dataclass
class CatalogModel(_Raw):
    """A model the server knows: whether a worker can run it now (``available``, else
    ``unavailable_reason``), its limits, capabilities and ``params`` (each with its type,
    default and range or choices)."""

    id: str
    kind: str
    name: str
    available: bool
    unavailable_reason: Optional[str]
    max_residues: Optional[int]
    measured_wall: Optional[int]
    capabilities: Dict[str, bool]
    fast: Optional[str]
    params: Dict[str, Dict[str, Any]]
    max_tokens: Optional[int] = None
    d_model: Optional[int] = None


@dataclass
class CatalogProtocol(_Raw):
    """A design protocol: the model it runs on and the request fields it requires."""

    id: str
    model: str
    requires: List[str]
    description: str
    params: Optional[Dict[str, Dict[str, Any]]] = None


@dataclass
class Catalog(_Raw):
    """``GET /v1/models``: models, protocols, limits, and the alignment server in use."""

    object: str
    api_version: str
    models: List[CatalogModel]
    protocols: List[CatalogProtocol]
    limits: Dict[str, Any]
    msa_server: Optional[str]
    #: Where and how alignments are searched: ``server URL`` or ``local DATABASES``,
    #: with the modes (the server's alignment stage searches ahead of the workers).
    msa_search: Optional[str] = None

    def model(self, id: str) -> CatalogModel:
        """The model of that id; KeyError if the server has none."""
        for m in self.models:
            if m.id == id:
                return m
        raise KeyError(id)

    def available(self, kind: Optional[str] = None) -> List[str]:
        """Ids of the models a worker can run now, of one kind if given."""
        return [m.id for m in self.models if m.available and kind in (None, m.kind)]


def parse_catalog(data: Mapping[str, Any]) -> Catalog:
    return build(
        Catalog,
        data,
        models=[build(CatalogModel, m) for m in data.get("models") or []],
        protocols=[build(CatalogProtocol, p) for p in data.get("protocols") or []],
        limits=dict(data.get("limits") or {}),
    )


JSONBody = Dict[str, Any]
SequencesArg = List[Union[str, SequenceEntry, Mapping[str, str]]]
