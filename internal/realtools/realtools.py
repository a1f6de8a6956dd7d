#!/usr/bin/env python3
"""Install the pinned upstream tools for chaperone's real-package test tier.

Every tool of engine/pins/pins.json gets a virtual environment of its own under a cache folder
outside the repository ($CHAPERONE_REALTOOLS_DIR, else $XDG_CACHE_HOME/chaperone/realtools,
else ~/.cache/chaperone/realtools), named after the tool and a hash of its pin, so an
environment is reused while its pin is unchanged and made anew when it changes. uv installs
them: its cache keeps one copy of each downloaded file and hard-links it into every
environment, so the CUDA build of torch that PyPI serves for Linux (about 3 GB to download,
5.5 GB installed) is downloaded once and stored once for all of them.

    realtools.py install [TOOL ...]   make the environments that are missing (all by default)
    realtools.py where TOOL           print a complete environment's folder, or fail saying why

Only the standard library: this runs before anything is installed.
"""

import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
PINS = REPO / "engine" / "pins" / "pins.json"
# The uv release that installs the environments, installed into the cache folder when the
# machine has none.
UV_VERSION = "0.13.9"
# Part of every environment's hash: bump it when the way an environment is made changes.
LAYOUT = "1"
COMPLETE = ".complete"
# The fields of a pin that decide what is installed; the rest (its title, why) do not.
INSTALLED = ("package", "version", "extras", "requires_python", "ignore_requires_python", "constraints", "tier_packages")


def root():
    if d := os.environ.get("CHAPERONE_REALTOOLS_DIR"):
        return pathlib.Path(d)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(cache) / "chaperone" / "realtools"


def load_pins():
    pins = json.loads(PINS.read_text())
    return pins, {t["tool"]: t for t in pins["tools"]}


def env_dir(pins, pin):
    """The environment of one pin: its tool's name and a hash of everything that shapes it."""
    installed = {k: pin.get(k) for k in INSTALLED}
    shape = {"pin": installed, "torch": torch_release(pins, pin), "python": pins["tier_python"], "layout": LAYOUT}
    digest = hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:12]
    return root() / f"{pin['tool']}-{digest}"


def torch_release(pins, pin):
    """The pin's own torch when it names one (a release that needs a newer torch), else the file's."""
    return pin.get("torch") or pins["torch"]


def uv():
    """The uv command: the machine's when it has one, else a pinned one in the cache folder."""
    if path := shutil.which("uv"):
        return path
    venv = root() / ".uv"
    path = venv / "bin" / "uv"
    if not path.exists():
        run([sys.executable, "-m", "venv", str(venv)])
        run([str(venv / "bin" / "pip"), "install", "-q", f"uv=={UV_VERSION}"])
    return str(path)


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


def requirement(pin):
    extras = f"[{','.join(pin['extras'])}]" if pin["extras"] else ""
    return f"{pin['package']}{extras}=={pin['version']}"


def declared_requirements(python, pin):
    """The requirements the installed package declares, with its pinned extras chosen.

    For a package installed without its Python check (and so without its dependencies):
    its own metadata lists them, and uv installs them for the environment's Python.
    """
    script = "import importlib.metadata as m, json, sys; print(json.dumps(m.requires(sys.argv[1]) or []))"
    out = subprocess.run([python, "-c", script, pin["package"]], check=True, capture_output=True, text=True).stdout
    chosen = []
    for req in json.loads(out):
        spec, _, marker = req.partition(";")
        extras = re.findall(r"""extra\s*==\s*['"]([^'"]+)['"]""", marker)
        if extras and not set(extras) & set(pin["extras"]):
            continue
        # The extra has been chosen here; what else the marker says, uv evaluates.
        rest = re.sub(r"""(and\s+)?extra\s*==\s*['"][^'"]+['"]""", "", marker).strip()
        rest = re.sub(r"\s+and\s*$", "", rest).strip()
        chosen.append(spec.strip() + (f"; {rest}" if rest else ""))
    return chosen


def install(pins, pin):
    target = env_dir(pins, pin)
    if (target / COMPLETE).exists():
        print(f"{pin['tool']}: {target} (reused)", flush=True)
        return
    # An environment of an older pin of the same tool goes: only the current one is kept.
    for old in root().glob(f"{pin['tool']}-*"):
        if old != target:
            shutil.rmtree(old, ignore_errors=True)
    shutil.rmtree(target, ignore_errors=True)
    started = time.monotonic()
    env = dict(os.environ, UV_PYTHON_DOWNLOADS="never", UV_LINK_MODE="hardlink")
    tool = uv()
    run([tool, "venv", "-q", "-p", pins["tier_python"], str(target)], env=env)
    python = str(target / "bin" / "python")
    torch = f"torch=={torch_release(pins, pin)}"
    if pin.get("ignore_requires_python"):
        # uv has no --ignore-requires-python: the package alone is installed as for the
        # Python it asks for (it is pure Python), then what it declares for this one.
        wants = re.search(r">=\s*([0-9.]+)", pin["requires_python"]).group(1)
        run([tool, "pip", "install", "-q", "-p", python, "--no-deps", "--python-version", wants,
             f"{pin['package']}=={pin['version']}"], env=env)
        run([tool, "pip", "install", "-q", "-p", python, torch, *declared_requirements(python, pin),
             *pin.get("constraints", [])], env=env)
    else:
        run([tool, "pip", "install", "-q", "-p", python, requirement(pin), torch, *pin.get("constraints", [])], env=env)
    if pin.get("tier_packages"):
        # Test-only packages, for building the tier's inputs; never part of the guide.
        run([tool, "pip", "install", "-q", "-p", python, torch, *pin["tier_packages"]], env=env)
    (target / "pin.json").write_text(json.dumps(pin, indent=2) + "\n")
    (target / COMPLETE).write_text(f"{time.monotonic() - started:.0f} s\n")
    print(f"{pin['tool']}: {target} (installed in {time.monotonic() - started:.0f} s)", flush=True)


def main(argv):
    pins, by_tool = load_pins()
    if len(argv) >= 1 and argv[0] == "install":
        names = argv[1:] or list(by_tool)
        unknown = [n for n in names if n not in by_tool]
        if unknown:
            sys.exit(f"no pin for {', '.join(unknown)} in {PINS} (tools: {', '.join(by_tool)})")
        root().mkdir(parents=True, exist_ok=True)
        for name in names:
            install(pins, by_tool[name])
        return
    if len(argv) == 2 and argv[0] == "where":
        pin = by_tool.get(argv[1])
        if pin is None:
            sys.exit(f"no pin for {argv[1]} in {PINS}")
        target = env_dir(pins, pin)
        if not (target / COMPLETE).exists():
            sys.exit(f"{requirement(pin)} is not installed in {target}")
        print(target)
        return
    sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
