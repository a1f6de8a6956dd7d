"""The Python blocks of chaperone's README and of the client's own run as written, in order,
in a fresh interpreter, against a server that has the models they use."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest

from .conftest import PACKAGE, REPO


def python_blocks(readme: Path) -> List[str]:
    return re.findall(r"^```python\n(.*?)^```", readme.read_text(), re.S | re.M)


READMES = {"chaperone": REPO / "README.md", "client": PACKAGE / "README.md"}
# What each README's blocks leave behind when they ran, in the folder they ran in.
LEFT = {
    "chaperone": ["run1/target_1.cif", "run1/target_1_sample_1.cif", "run1/results.json"],
    "client": ["fold1/target_1.cif", "screen/results.json", "embeddings.png"],
}


@pytest.mark.parametrize("name", list(READMES))
def test_the_python_blocks_of_a_readme_run_as_written(
    name: str, server_url: str, keys: Dict[str, str], tmp_path: Path
) -> None:
    blocks = python_blocks(READMES[name])
    assert blocks, f"{READMES[name]} has no Python block"
    script = tmp_path / "readme.py"
    script.write_text("\n\n".join(blocks))
    env = {**os.environ, "CHAPERONE_URL": server_url, "CHAPERONE_API_KEY": keys["readme"], "MPLBACKEND": "Agg"}
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{READMES[name]}'s Python blocks failed:\n{done.stdout}\n{done.stderr}"
    for path in LEFT[name]:
        assert (tmp_path / path).is_file(), f"{path} was not written:\n{done.stdout}"
    if name == "client":
        assert (tmp_path / "embeddings.png").read_bytes().startswith(b"\x89PNG")
