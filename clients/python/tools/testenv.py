"""Make the Python client's test environment and print its interpreter's path.

The environment lives outside the repository, under
~/.cache/chaperone/pyclient-<hash of requirements-test.txt>, so that it is made once per
set of pins and reused by every later run (a changed pin makes a new one). It is made
with the python3 that runs this script, from PyPI, and marked complete only once every
pin installed, so that a run cut short is made again rather than trusted.

    python3 clients/python/tools/testenv.py            # make it if needed, print the path
    go test ./e2e -run TestPythonClient                # then the client's tests
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PINS = HERE.parent / "requirements-test.txt"


def env_dir() -> Path:
    digest = hashlib.sha256(PINS.read_bytes()).hexdigest()[:16]
    return Path.home() / ".cache" / "chaperone" / f"pyclient-{digest}"


def main() -> int:
    if sys.version_info < (3, 9):
        sys.exit(f"testenv.py: Python 3.9 or later is needed, not {sys.version.split()[0]}")
    env = env_dir()
    python = env / "bin" / "python"
    if (env / ".complete").exists():
        print(python)
        return 0
    shutil.rmtree(env, ignore_errors=True)
    env.parent.mkdir(parents=True, exist_ok=True)
    quiet = {"stdout": sys.stderr}  # the path alone goes to standard output
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True, **quiet)
    pip = [str(python), "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "install", "--no-deps", "-r", str(PINS)], check=True, **quiet)
    subprocess.run([*pip, "check"], check=True, **quiet)  # the pins are the whole set
    (env / ".complete").write_text(PINS.read_text())
    print(python)
    return 0


if __name__ == "__main__":
    os.umask(0o022)
    raise SystemExit(main())
