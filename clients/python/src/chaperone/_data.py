"""Results as data: tables as pandas DataFrames, embeddings as numpy arrays, downloaded
structures by target and sample. numpy, pandas and pyarrow are optional: each is imported
only by the helper that needs it."""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Union

from ._types import Design, EmbeddingResults, Results, parse_results

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pandas as pd

    Vector = npt.NDArray[np.float32]


def _missing(module: str, extra: str) -> ImportError:
    return ImportError(f"this needs {module}: pip install 'chaperone-client[{extra}]'")


def rows_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """A DataFrame of one row per item, ``id`` first and the other columns in the order
    they first appear."""
    try:
        import pandas as pd
    except ImportError as e:
        raise _missing("pandas", "pandas") from e
    rows = [dict(r) for r in rows]
    columns: Dict[str, None] = {"id": None}
    for r in rows:
        columns.update(dict.fromkeys(r))
    return pd.DataFrame(rows, columns=list(columns))


def designs_frame(designs: Iterable[Design]) -> pd.DataFrame:
    """A DataFrame of one row per design, its metrics spread into columns (a metric whose
    name is taken by a design field gets the prefix ``metrics.``)."""
    flat = []
    for d in designs:
        row: Dict[str, Any] = {k: v for k, v in d.items() if k != "metrics"}
        for k, v in (d.get("metrics") or {}).items():
            row["metrics." + k if k in row else k] = v
        flat.append(row)
    return rows_frame(flat)


@dataclass
class Embeddings:
    """The vectors of an embedding job, keyed by sequence id.

    ``pooled[id]`` has shape ``(d_model,)``; ``per_residue[id]`` shape ``(length, d_model)``
    (row i is residue i), present for the npz format only: parquet holds pooled vectors.
    ``ids`` keeps the order of the request.
    """

    ids: List[str]
    pooled: Dict[str, Vector]
    per_residue: Dict[str, Vector]
    model: str
    pool: str
    format: str
    d_model: int

    def matrix(self) -> Vector:
        """The pooled vectors stacked in ``ids`` order: shape ``(len(ids), d_model)``."""
        try:
            import numpy as np
        except ImportError as e:
            raise _missing("numpy", "numpy") from e
        return np.stack([self.pooled[i] for i in self.ids]) if self.ids else np.zeros((0, self.d_model), np.float32)

    @classmethod
    def load(cls, folder: Union[str, Path]) -> Embeddings:
        """The embeddings of a job downloaded into folder (``job.download(folder)``), read
        from its results.json and files, with no server."""
        root = Path(folder)
        res = parse_results(json.loads((root / "results.json").read_text()))
        if not isinstance(res, EmbeddingResults):
            raise ValueError(f"{root}: the results are of a {res.kind} job, not of embeddings")
        return embeddings_from_files(res, lambda path: (root / path).read_bytes())


def embeddings_from_files(res: EmbeddingResults, read: Any) -> Embeddings:
    """Read the vectors of res from its files; read(path) gives a file's bytes."""
    try:
        import numpy as np
    except ImportError as e:
        raise _missing("numpy", "numpy") from e
    ids = [s.id for s in res.sequences]
    pooled: Dict[str, Any] = {}
    per_residue: Dict[str, Any] = {}
    if res.format == "parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as e:
            raise _missing("pyarrow", "parquet") from e
        for file in dict.fromkeys(s.file for s in res.sequences):
            table = pq.read_table(io.BytesIO(read(file)))
            column = table.column("pooled").combine_chunks()
            values = np.asarray(column.flatten(), dtype=np.float32).reshape(len(table), -1)
            for sid, vec in zip(table.column("id").to_pylist(), values):
                pooled[sid] = vec
    else:
        for s in res.sequences:
            with np.load(io.BytesIO(read(s.file))) as z:
                pooled[s.id] = np.asarray(z["pooled"])
                per_residue[s.id] = np.asarray(z["per_residue"])
    missing = [i for i in ids if i not in pooled]
    if missing:
        raise ValueError(f"the embedding files hold no vector for {missing}")
    return Embeddings(ids, pooled, per_residue, res.model, res.pool, res.format, res.d_model)


_SAMPLE = re.compile(r"(?P<target>.+)_sample_(?P<k>[0-9]+)")


def structures_by_target(res: Results, files: Mapping[str, Path]) -> Dict[str, Dict[int, Path]]:
    """The downloaded structure files, ``{target: {sample: path}}``: sample 0 is the best
    (``<target>.cif``), k the further samples (``<target>_sample_<k>.cif``). A design's
    structure is sample 0 of the design's id."""
    out: Dict[str, Dict[int, Path]] = {}
    for a in res.artifacts:
        if a.type != "structure" or a.path not in files:
            continue
        samples = out.setdefault(a.target, {})
        stem = a.path.rsplit("/", 1)[-1].split(".", 1)[0]
        m = _SAMPLE.fullmatch(stem)
        k = int(m.group("k")) if m and m.group("target") == a.target else 0
        while k in samples:  # a layout of another server: keep every file
            k += 1
        samples[k] = files[a.path]
    return out


@dataclass
class Download:
    """What ``download`` saved: the folder, the results (also saved as results.json), each
    artifact's local path by its path in the results, and the archive when that was asked
    for instead."""

    dir: Path
    results: Optional[Results] = None
    files: Dict[str, Path] = field(default_factory=dict)
    archive: Optional[Path] = None

    @property
    def structures(self) -> Dict[str, Dict[int, Path]]:
        """The structure files by target and sample: ``structures["lig1"][0]`` is the best
        model of target lig1."""
        return structures_by_target(self.results, self.files) if self.results else {}

    def embeddings(self) -> Embeddings:
        """The embeddings read from the downloaded files."""
        if not isinstance(self.results, EmbeddingResults):
            raise ValueError("this download holds no embedding results")
        return embeddings_from_files(self.results, lambda path: self.files[path].read_bytes())
