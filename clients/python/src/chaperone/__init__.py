"""A Python client of chaperone, and of any server of its API: structure predictions,
designs and embeddings as asynchronous jobs (submit, wait, download).

    from chaperone import Client

    client = Client()  # $CHAPERONE_URL (default http://127.0.0.1:8080), $CHAPERONE_API_KEY
    job = client.predict(sequence="MKTAYIAKQRQISFVKSHFSRQ", model="boltz2").wait()
    print(job.results().to_dataframe())
    files = job.download("run1")

``AsyncClient`` has the same calls, to be awaited.
"""

from __future__ import annotations

__version__ = "0.1.0"

from ._async import AsyncClient, AsyncJob
from ._data import Download, Embeddings
from ._errors import (
    ERRORS,
    APIError,
    BadRequestError,
    ChaperoneError,
    ConflictError,
    ForbiddenError,
    IdempotencyKeyReusedError,
    InternalServerError,
    JobFailedError,
    MethodNotAllowedError,
    NetworkError,
    NotFoundError,
    PayloadTooLargeError,
    PreconditionFailedError,
    RangeNotSatisfiableError,
    RateLimitedError,
    ResultsNotReadyError,
    UnauthorizedError,
    UnavailableError,
    UnsupportedMediaTypeError,
    WaitTimeout,
)
from ._sync import Client, Job
from ._types import (
    TERMINAL,
    Artifact,
    BoltzGenParams,
    Catalog,
    CatalogModel,
    CatalogProtocol,
    DeletedJob,
    Design,
    DesignResults,
    EmbeddedSequence,
    EmbeddingResults,
    EmbedParams,
    Health,
    JobList,
    JobState,
    PredictionResults,
    PredictionRow,
    PredictParams,
    RFD3Params,
    Results,
    SequenceEntry,
    Target,
)

__all__ = [
    "__version__",
    "Client",
    "Job",
    "AsyncClient",
    "AsyncJob",
    "Download",
    "Embeddings",
    "ERRORS",
    "APIError",
    "BadRequestError",
    "ChaperoneError",
    "ConflictError",
    "ForbiddenError",
    "IdempotencyKeyReusedError",
    "InternalServerError",
    "JobFailedError",
    "MethodNotAllowedError",
    "NetworkError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PreconditionFailedError",
    "RangeNotSatisfiableError",
    "RateLimitedError",
    "ResultsNotReadyError",
    "UnauthorizedError",
    "UnavailableError",
    "UnsupportedMediaTypeError",
    "WaitTimeout",
    "TERMINAL",
    "Artifact",
    "BoltzGenParams",
    "Catalog",
    "CatalogModel",
    "CatalogProtocol",
    "DeletedJob",
    "Design",
    "DesignResults",
    "EmbeddedSequence",
    "EmbeddingResults",
    "EmbedParams",
    "Health",
    "JobList",
    "JobState",
    "PredictionResults",
    "PredictionRow",
    "PredictParams",
    "RFD3Params",
    "Results",
    "SequenceEntry",
    "Target",
]
