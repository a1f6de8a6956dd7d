"""Runs BoltzGen's spec check on each spec given and says, one line per spec, whether it
accepted it: "ok PATH" or "refused PATH: ERROR". It calls what `boltzgen check` calls for
each of its specs (cli/boltzgen.py:1246-1253, check_design_spec), but goes on past a
refusal, where `boltzgen check` stops at the first; the tier uses it for specs that
BoltzGen must refuse, and the real command for those it must accept.

usage: python check.py MOLDIR OUTDIR SPEC...
"""

import argparse
import pathlib
import sys

from boltzgen.cli.boltzgen import check_design_spec
from boltzgen.data.mol import load_canonicals


def main():
    moldir, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    mols = load_canonicals(moldir=moldir)
    args = argparse.Namespace(output=out)
    for spec in sys.argv[3:]:
        try:
            check_design_spec(args, moldir, pathlib.Path(spec), mols)
        except Exception as e:  # noqa: BLE001 - any refusal is the answer
            print(f"refused {spec}: {type(e).__name__}: {e}".replace("\n", " "), flush=True)
        else:
            print(f"ok {spec}", flush=True)


if __name__ == "__main__":
    main()
