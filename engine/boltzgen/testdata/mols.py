"""Builds a molecules folder in the format BoltzGen reads, for the real-package tier.

BoltzGen loads a molecule as the pickled RDKit Mol <CODE>.pkl of its moldir, a folder or a
zip (boltzgen/data/mol.py:55-86, load_molecules). Its readers use each atom's "name"
property and "leaving_atom" flag (data/parse/schema.py:386-423, data/parse/mmcif.py:576-581)
and a conformer (schema.py:222-267, get_conformer: "Computed", else "Ideal", else the first).
This script builds those from the Chemical Component Dictionary that biotite ships, for the
codes BoltzGen always loads (its canonical amino acids, data/const.py:109-130, via
load_canonicals) plus every code given on the command line.

usage: python mols.py OUTDIR CODE...
"""

import pathlib
import pickle
import sys

import biotite.structure.info as info
from biotite.interface import rdkit as biotite_rdkit
from rdkit import Chem

from boltzgen.data import const


def leaving_flags(code):
    column = info.get_from_ccd("chem_comp_atom", code, "pdbx_leaving_atom_flag")
    if column is None:
        return None
    return [flag == "Y" for flag in column.as_array(str)]


def molecule(code):
    atoms = info.residue(code)
    mol = biotite_rdkit.to_mol(atoms, explicit_hydrogen=True)
    flags = leaving_flags(code)
    for i, atom in enumerate(mol.GetAtoms()):
        atom.SetProp("name", str(atoms.atom_name[i]))
        if flags is not None and i < len(flags):
            atom.SetProp("leaving_atom", "1" if flags[i] else "0")
    for conformer in mol.GetConformers():
        conformer.SetProp("name", "Ideal")
    return mol


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    # Properties survive pickling only when RDKit is told to keep them.
    Chem.SetDefaultPickleProperties(Chem.PropertyPickleOptions.AllProps)
    codes = sorted(set(const.canonical_tokens) | {c.upper() for c in sys.argv[2:]})
    missing = []
    for code in codes:
        try:
            mol = molecule(code)
        except KeyError:
            missing.append(code)
            continue
        with open(out / f"{code}.pkl", "wb") as f:
            pickle.dump(mol, f)
    print(f"{len(codes) - len(missing)} molecules written to {out}")
    if missing:
        print("not in biotite's CCD: " + " ".join(missing))


if __name__ == "__main__":
    main()
