"""The package as people install it: typed (mypy --strict), a wheel that requires httpx and
nothing else, installable from the source folder, and written for Python 3.9."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import zipfile
from email.parser import Parser
from importlib import metadata
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from .conftest import FIGURES, PACKAGE, REPO

SOURCES = sorted((PACKAGE / "src" / "chaperone").glob("*.py"))


def sh(*args: str, cwd: Path = PACKAGE, env: Optional[Dict[str, str]] = None) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def tree_state() -> str:
    return sh("git", "status", "--porcelain", "--ignored", "--", str(PACKAGE), cwd=REPO)


def test_mypy_strict_passes_on_the_package(tmp_path: Path) -> None:
    out = sh(sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path), "src/chaperone")
    assert "Success: no issues found" in out


def test_the_sources_are_python_3_9() -> None:
    for path in SOURCES:
        source = path.read_text()
        ast.parse(source, str(path), feature_version=(3, 9))  # no match, no X | Y outside annotations
        assert "from __future__ import annotations" in source, path.name


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    before = tree_state()
    out = tmp_path_factory.mktemp("dist")
    sh(sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), ".")
    assert tree_state() == before, "building wrote into the source folder"
    (found,) = out.glob("chaperone_client-*.whl")
    return found


def test_the_wheel_holds_the_typed_package_and_requires_httpx_alone(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        (meta_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = Parser().parsestr(z.read(meta_name).decode())
    assert "chaperone/py.typed" in names and "chaperone/__init__.py" in names
    assert not [n for n in names if "tests" in n.split("/")]
    requires = meta.get_all("Requires-Dist") or []
    assert [r for r in requires if "extra ==" not in r] == ["httpx>=0.23"]
    assert set(meta.get_all("Provides-Extra") or []) == {"numpy", "pandas", "parquet", "progress", "all"}
    assert meta["Requires-Python"] == ">=3.9"


def installed_size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def distribution_size(name: str) -> int:
    dist = metadata.distribution(name)
    return sum(
        Path(str(dist.locate_file(f))).stat().st_size
        for f in dist.files or []
        if Path(str(dist.locate_file(f))).is_file()
    )


def requirements_of(name: str, seen: List[str]) -> List[str]:
    for req in metadata.requires(name) or []:
        if "extra ==" in req:
            continue
        dep = req.split(";")[0].split("[")[0]
        for sep in "<>=!~ ":
            dep = dep.split(sep)[0]
        marker = req.split(";")[1] if ";" in req else ""
        if marker and "python_version" in marker and not eval_marker(marker):
            continue
        if dep.lower() not in (s.lower() for s in seen):
            seen.append(dep)
            requirements_of(dep, seen)
    return seen


def eval_marker(marker: str) -> bool:
    from packaging.markers import Marker

    return Marker(marker).evaluate()


def test_the_wheel_installs_and_imports_nothing_optional(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    sh(sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(target), str(wheel))
    # httpx from this environment; everything else of the package from where it was installed.
    probe = (
        "import sys, chaperone; print(chaperone.__file__); "
        "print(sorted(m for m in ('numpy', 'pandas', 'pyarrow', 'tqdm') if m in sys.modules))"
    )
    out = sh(sys.executable, "-c", probe, cwd=tmp_path, env={"PYTHONPATH": str(target)}).splitlines()
    assert out[0] == str(target / "chaperone" / "__init__.py") and out[1] == "[]"
    size = installed_size(target / "chaperone")
    sources = sum(p.stat().st_size for p in SOURCES)
    deps = requirements_of("httpx", [])
    deps_size = sum(distribution_size(d) for d in ["httpx", *deps])
    FIGURES["installed package"] = (
        f"{size / 1024:.0f} KiB with its bytecode ({sources / 1024:.0f} KiB of sources; wheel {wheel.stat().st_size / 1024:.0f} KiB)"
    )
    FIGURES["its required dependencies"] = f"httpx and {', '.join(deps)}: {deps_size / 1024 / 1024:.1f} MiB installed"


def test_pip_installs_the_source_folder(tmp_path: Path) -> None:
    before = tree_state()
    target = tmp_path / "site"
    sh(
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--no-build-isolation",
        "--target",
        str(target),
        str(PACKAGE),
    )
    assert (target / "chaperone" / "py.typed").exists()
    assert tree_state() == before, "installing wrote into the source folder"
