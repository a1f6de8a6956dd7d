"""Write a Boltz-2 molecule folder (the mols/ that Boltz unpacks from mols.tar) for the
real-package tests: one pickled RDKit molecule per CCD code, built from the chemical
component dictionary that biotite ships.

    python mols.py OUT_DIR CODE[:noconf] ...

What Boltz reads from a pickle (boltz/data/parse/schema.py, boltz/data/feature/featurizerv2.py):
every atom's "name" (the CCD atom id, which const.ref_atoms uses for the canonical
residues), "leaving_atom" (read as an int for modified residues), and at least one
conformer, which schema.get_conformer picks by the name "Computed", then "Ideal", then any.
A code written CODE:noconf gets no conformer at all, for tests of what Boltz does with a
molecule it cannot featurize.
"""

import pickle
import sys
from pathlib import Path

import biotite.structure.info as info
import numpy as np
from biotite.structure import BondType
from rdkit import Chem
from rdkit.Geometry import Point3D

ORDERS = {
    BondType.SINGLE: Chem.BondType.SINGLE,
    BondType.DOUBLE: Chem.BondType.DOUBLE,
    BondType.TRIPLE: Chem.BondType.TRIPLE,
    BondType.QUADRUPLE: Chem.BondType.QUADRUPLE,
    BondType.AROMATIC_SINGLE: Chem.BondType.SINGLE,
    BondType.AROMATIC_DOUBLE: Chem.BondType.DOUBLE,
    BondType.AROMATIC_TRIPLE: Chem.BondType.TRIPLE,
    BondType.AROMATIC: Chem.BondType.AROMATIC,
}


def molecule(code: str, conformer: bool) -> Chem.Mol:
    residue = info.residue(code)
    leaving = info.get_from_ccd("chem_comp_atom", code, "pdbx_leaving_atom_flag").as_array()
    table = Chem.GetPeriodicTable()
    mol = Chem.RWMol()
    for i in range(residue.array_length()):
        atom = Chem.Atom(table.GetAtomicNumber(residue.element[i].capitalize()))
        atom.SetFormalCharge(int(residue.charge[i]))
        atom.SetNoImplicit(True)  # the CCD lists every hydrogen
        atom.SetProp("name", str(residue.atom_name[i]))
        atom.SetProp("leaving_atom", "1" if leaving[i] == "Y" else "0")
        mol.AddAtom(atom)
    for i, j, kind in residue.bonds.as_array():
        mol.AddBond(int(i), int(j), ORDERS.get(BondType(kind), Chem.BondType.SINGLE))
    mol = mol.GetMol()
    try:
        Chem.SanitizeMol(mol)
    except Exception:  # noqa: BLE001 - metal complexes such as haem break valence rules
        Chem.SanitizeMol(mol, Chem.SanitizeFlags.SANITIZE_ALL ^ Chem.SanitizeFlags.SANITIZE_PROPERTIES)
    if conformer:
        conf = Chem.Conformer(mol.GetNumAtoms())
        for i, (x, y, z) in enumerate(np.nan_to_num(residue.coord)):
            conf.SetAtomPosition(i, Point3D(float(x), float(y), float(z)))
        conf.SetProp("name", "Ideal")
        mol.AddConformer(conf, assignId=True)
    return mol


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    # Boltz pickles with every property (main.py sets the same before it writes molecules).
    Chem.SetDefaultPickleProperties(Chem.PropertyPickleOptions.AllProps)
    for arg in sys.argv[2:]:
        code, _, flag = arg.partition(":")
        with (out / f"{code}.pkl").open("wb") as f:
            pickle.dump(molecule(code, conformer=flag != "noconf"), f)


if __name__ == "__main__":
    main()
