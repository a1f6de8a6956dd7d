"""Builds the chemical component dictionary (CCD) files Protenix and OpenDDE read, for the
components a set of input JSON files names, from the CCD that biotite ships: the
components.cif subset, and its RDKit pickle made by Protenix's own
scripts.gen_ccd_cache.precompute_ccd_mol (the tool's reader needs the columns
pdbx_leaving_atom_flag and pdbx_component_atom_id, which biotite 1.4's bundled CCD keeps).

Usage: python ccd.py COMMON_DIR INPUT.json...   (run with the protenix environment)
Writes COMMON_DIR/components.cif, components.cif.rdkit_mol.pkl, and the two files only
training reads (runner/inference.py, download_inference_cache, skips any that exist)."""

import json
import logging
import sys
from pathlib import Path

import biotite.structure.io.pdbx as pdbx
from biotite.structure.info.ccd import get_ccd, get_from_ccd

# The residues of every polymer kind the tools build chains from (json_parser.py: the
# 20 amino acids and UNK for X; DNA and RNA with their unknown N).
STANDARD = (
    "ALA ARG ASN ASP CYS GLN GLU GLY HIS ILE LEU LYS MET PHE PRO SER THR TRP TYR VAL UNK "
    "DA DC DG DT DN A C G U N"
).split()


def codes_of(entries):
    """The CCD codes the input entries name: ligands as CCD_<a>[_<b>...], ions, and
    modifications."""
    codes = set()
    for entry in entries:
        for seq in entry["sequences"]:
            for kind, body in seq.items():
                if kind == "ion":
                    codes.add(body["ion"])
                elif kind == "ligand" and body["ligand"].startswith("CCD_"):
                    codes.update(body["ligand"][4:].split("_"))
                for mod in body.get("modifications", []):
                    code = mod.get("ptmType") or mod.get("modificationType")
                    codes.add(code.removeprefix("CCD_"))
    return codes


def text_category(binary):
    """A category of biotite's binary CCD as a text one, keeping its absent values."""
    columns = {}
    for name, column in binary.items():
        mask = column.mask.array if column.mask is not None else None
        columns[name] = pdbx.CIFColumn(pdbx.CIFData(column.as_array(str)), None if mask is None else pdbx.CIFData(mask))
    return pdbx.CIFCategory(columns)


def main():
    common = Path(sys.argv[1])
    common.mkdir(parents=True, exist_ok=True)
    codes = set(STANDARD)
    for path in sys.argv[2:]:
        codes |= codes_of(json.loads(Path(path).read_text()))
    cif = pdbx.CIFFile()
    for code in sorted(codes):
        if get_from_ccd("chem_comp", code) is None:
            sys.exit(f"{code} is not in the CCD that biotite ships")
        block = pdbx.CIFBlock()
        for name in get_ccd().keys():
            category = get_from_ccd(name, code)
            if category is not None:  # an ion has no bonds
                block[name] = text_category(category)
        cif[code] = block
    cif_path = common / "components.cif"
    cif.write(str(cif_path))
    for name in ("clusters-by-entity-40.txt", "obsolete_release_date.csv"):
        (common / name).touch()
    logging.basicConfig(level=logging.INFO)
    from scripts.gen_ccd_cache import precompute_ccd_mol

    precompute_ccd_mol(cif_path, common / "components.cif.rdkit_mol.pkl", num_cpu=1)
    print(" ".join(sorted(codes)))


if __name__ == "__main__":
    main()
