"""Progress while waiting: a tqdm bar when tqdm is installed, plain lines otherwise (one per
change, no control characters, fit for logs), nothing when asked."""

from __future__ import annotations

import sys
from typing import IO, Any, Dict, Optional, Union

from ._types import TERMINAL

#: What ``progress=`` takes: True (a bar if tqdm is installed, else lines), False (nothing),
#: "tqdm" or "plain".
ProgressArg = Union[bool, str]


class Reporter:
    """Shows nothing."""

    def update(self, job: Dict[str, Any]) -> None:
        pass

    def close(self) -> None:
        pass


def _state(job: Dict[str, Any]) -> str:
    words = [str(job.get("status"))]
    if job.get("stage") and job.get("status") == "running":
        words.append(str(job["stage"]))
    if job.get("total"):
        words.append(f"{job.get('done', 0)}/{job['total']}")
    return " ".join(words)


class _Lines(Reporter):
    def __init__(self, label: str, stream: IO[str]) -> None:
        self.label, self.stream, self.last = label, stream, ""

    def update(self, job: Dict[str, Any]) -> None:
        line = _state(job)
        p = job.get("progress")
        if isinstance(p, (int, float)) and job.get("status") == "running":
            line += f" {int(p * 100)}%"
        if job.get("status") == "failed" and job.get("error"):
            line += f": {job['error']}"
        if line != self.last:
            self.last = line
            print(f"{self.label}: {line}", file=self.stream, flush=True)


class _Bar(Reporter):
    def __init__(self, tqdm: Any, label: str, stream: IO[str]) -> None:
        self.label = label
        self.bar = tqdm(
            total=100, desc=label + ":", file=stream, leave=True, bar_format="{desc} {percentage:3.0f}%|{bar}| [{elapsed}]"
        )

    def update(self, job: Dict[str, Any]) -> None:
        p = job.get("progress")
        n = 100 if job.get("status") == "succeeded" else int((p if isinstance(p, (int, float)) else 0) * 100)
        self.bar.set_description_str(f"{self.label}: {_state(job)}", refresh=False)
        self.bar.update(n - self.bar.n)

    def close(self) -> None:
        self.bar.close()


class _ManyLines(Reporter):
    def __init__(self, total: int, stream: IO[str]) -> None:
        self.total, self.stream, self.ended = total, stream, 0

    def update(self, job: Dict[str, Any]) -> None:
        if job.get("status") in TERMINAL:
            self.ended += 1
            print(
                f"chaperone: {self.ended}/{self.total} jobs finished (job {job.get('id')} {job.get('status')})",
                file=self.stream,
                flush=True,
            )


class _ManyBar(Reporter):
    def __init__(self, tqdm: Any, total: int, stream: IO[str]) -> None:
        self.bar = tqdm(total=total, desc="jobs", unit="job", file=stream)

    def update(self, job: Dict[str, Any]) -> None:
        if job.get("status") in TERMINAL:
            self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


def _tqdm(mode: ProgressArg) -> Optional[Any]:
    if mode not in (True, "tqdm"):
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        if mode == "tqdm":
            raise
        return None
    return tqdm


def _check(mode: ProgressArg) -> None:
    if mode not in (True, False, "tqdm", "plain"):
        raise ValueError(f"progress={mode!r}: want True, False, 'tqdm' or 'plain'")


def for_job(mode: ProgressArg, job_id: str, stream: Optional[IO[str]] = None) -> Reporter:
    """The reporter for waiting on one job."""
    _check(mode)
    out = stream or sys.stderr
    if mode is False:
        return Reporter()
    tqdm = _tqdm(mode)
    label = f"job {job_id[:12]}"
    return _Bar(tqdm, label, out) if tqdm else _Lines(label, out)


def for_jobs(mode: ProgressArg, total: int, stream: Optional[IO[str]] = None) -> Reporter:
    """The reporter for waiting on many jobs at once: how many have finished."""
    _check(mode)
    out = stream or sys.stderr
    if mode is False:
        return Reporter()
    tqdm = _tqdm(mode)
    return _ManyBar(tqdm, total, out) if tqdm else _ManyLines(total, out)
