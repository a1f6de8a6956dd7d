"""Builds a molecules folder in the format BoltzGen reads, for the real-package tier.

BoltzGen loads a molecule as the pickled RDKit Mol <CODE>.pkl of its moldir, a folder or a
zip (boltzgen/data/mol.py:55-86, load_molecules). Its readers use each atom's "name"
property and "leaving_atom" flag (data/parse/schema.py:386-423, data/parse/mmcif.py:576-581)
and a conformer (schema.py:222-267, get_conformer: "Computed", else "Ideal", else the first).
This script builds those from the Chemical Component Dictionary that biotite ships, for the
codes BoltzGen always loads (its canonical amino acids, data/const.py:109-130, via
load_canonicals) plus every code given on the command line, and those that the specs and
structures given name: a spec's ccd values (one code or a list), a structure's residues,
the nucleotides of a spec's DNA or RNA, UNK for a protein's unknown letters.

usage: python mols.py OUTDIR (CODE | SPEC.yaml | STRUCTURE)...
"""

import pathlib
import pickle
import sys

import gemmi
import yaml
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


def spec_codes(data):
    """The CCD codes a design spec names, and the residues its polymers may take."""
    codes = set()
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "ccd":
                codes.update([value] if isinstance(value, str) else value)
            elif key == "dna":
                codes.update(["DA", "DC", "DG", "DT", "DN"])
            elif key == "rna":
                codes.update(["A", "C", "G", "U", "N"])
            elif key == "protein":
                codes.add("UNK")
            codes.update(spec_codes(value))
    elif isinstance(data, list):
        for item in data:
            codes.update(spec_codes(item))
    return codes


def arg_codes(arg):
    path = pathlib.Path(arg)
    if path.suffix == ".yaml" and path.is_file():
        return spec_codes(yaml.safe_load(path.read_text()))
    if path.suffix.lower() in (".cif", ".mmcif", ".pdb") and path.is_file():
        structure = gemmi.read_structure(str(path))
        return {res.name for model in structure for chain in model for res in chain}
    return {arg}


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    # Properties survive pickling only when RDKit is told to keep them.
    Chem.SetDefaultPickleProperties(Chem.PropertyPickleOptions.AllProps)
    codes = set(const.canonical_tokens)
    for arg in sys.argv[2:]:
        codes.update(c.upper() for c in arg_codes(arg))
    codes = sorted(codes)
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
