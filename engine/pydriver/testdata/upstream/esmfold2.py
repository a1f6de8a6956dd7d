"""Build a small ESMFold2 with random weights and the chemical components it reads, for
chaperone's real-package tier (nothing is downloaded).

    python esmfold2.py DIR

DIR then holds what from_pretrained reads from a folder (esm/models/hub.py resolve_model_dir:
a folder with config.json) and what ESMFold2InputBuilder(ccd_cache=DIR) reads:
  config.json        esm's EsmFold2Config with every size shrunk and a two-layer ESM C
                     bundled as esmc_config, so no backbone is fetched
  model.safetensors  the model's state dict in esm's native key layout, which
                     _normalize_checkpoint_layout passes through and the load checks strictly
  ccd.pkl            {CCD code: RDKit Mol} for the 20 amino acids, UNK, SEP and MSE, from
                     biotite's bundled CCD (esm/models/esmfold2/conformers.py reads each Mol's
                     atom names, leaving-atom flags and an "Ideal" conformer)
Prints the model's parameter count and file sizes as JSON.

Sizes that must agree (a mismatch fails in the forward pass): lm_d_model and lm_num_layers
with the bundled ESM C; single_inputs_size = atom encoder output_dim // 2 + 67 (33 residue
types, 33 profile, 1 deletion channel) = the diffusion module's c_s_inputs; the diffusion
module's c_z = pairwise_hidden_size; an atom transformer's head width / 2 at least the rotary
pairs it places (16 by default, hence one head of 32).
"""

import json
import os
import pickle
import sys

import torch

AMINO_ACIDS = ["ALA", "ARG", "ASN", "ASP", "CYS", "GLN", "GLU", "GLY", "HIS", "ILE",
               "LEU", "LYS", "MET", "PHE", "PRO", "SER", "THR", "TRP", "TYR", "VAL"]
COMPONENTS = AMINO_ACIDS + ["UNK", "SEP", "MSE"]


def config():
    from esm.models.esmc import EsmcConfig
    from esm.models.esmfold2 import EsmFold2Config

    esmc = EsmcConfig(hidden_size=64, num_attention_heads=4, num_hidden_layers=2)
    pair, atoms = 16, 32
    inputs = atoms // 2 + 67
    return EsmFold2Config(
        type="release", hidden_size=16, pairwise_hidden_size=pair, single_inputs_size=inputs, sliding_window=32,
        folding_trunk_num_hidden_layers=1, parcae_num_coda_layers=1, num_loops=1, num_diffusion_samples=1,
        lm_d_model=esmc.hidden_size, lm_num_layers=esmc.num_hidden_layers, esmc_config=esmc,
        atom_encoder=dict(hidden_size=32, output_dim=atoms, num_hidden_layers=1, num_attention_heads=1),
        structure_head=dict(
            diffusion_module=dict(token_hidden_size=32, fourier_dim=16, token_num_blocks=1, token_num_heads=2,
                                  atom_encoder=dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=1),
                                  c_z=pair, c_s_inputs=inputs),
            distogram_bins=16, inference_num_steps=2),
        confidence_head=dict(num_hidden_layers=1, num_plddt_bins=10, num_pde_bins=8, num_pae_bins=8, distogram_bins=16),
        lm_encoder=dict(enabled=True, num_hidden_layers=1),
        parcae=dict(enabled=True),
        msa_encoder=dict(enabled=True, hidden_size=8, outer_hidden_size=4, num_hidden_layers=2,
                         num_attention_heads=2, head_width=4),
    )


def save_model(out):
    from safetensors.torch import save_file

    from esm.models.esmfold2 import EsmFold2Model

    torch.manual_seed(0)
    cfg = config()
    model = EsmFold2Model(cfg).eval()
    with torch.no_grad():
        # The confidence head starts these at zero, which makes every pLDDT exactly 0.5: a
        # little noise lets a test tell residues apart.
        for name, p in model.named_parameters():
            if name.endswith(("plddt_weight", "resolved_weight")):
                p.normal_(0.0, 0.5)
    # EsmFold2Model has no save_pretrained; its config has, and the state dict is the layout
    # the loader takes. safetensors refuses tensors that share storage, hence the copies.
    cfg.save_pretrained(out)
    save_file({k: v.detach().contiguous().clone() for k, v in model.state_dict().items()},
              os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    os.chmod(os.path.join(out, "model.safetensors"), 0o644)  # safetensors writes 0600
    return sum(p.numel() for p in model.parameters())


def component(code):
    """One CCD component as an RDKit Mol with what esm reads of it."""
    import biotite.structure as struc
    import biotite.structure.info as info
    from rdkit import Chem
    from rdkit.Geometry import Point3D

    residue = info.residue(code)
    atoms = info.get_from_ccd("chem_comp_atom", code)
    leaving = dict(zip(atoms["atom_id"].as_array(str), atoms["pdbx_leaving_atom_flag"].as_array(str)))
    mol = Chem.RWMol()
    for element, charge in zip(residue.element, residue.charge):
        atom = Chem.Atom(element.capitalize())
        atom.SetFormalCharge(int(charge))
        atom.SetNoImplicit(True)
        mol.AddAtom(atom)
    kinds = {struc.BondType.DOUBLE: Chem.BondType.DOUBLE, struc.BondType.TRIPLE: Chem.BondType.TRIPLE,
             struc.BondType.AROMATIC_DOUBLE: Chem.BondType.DOUBLE, struc.BondType.AROMATIC: Chem.BondType.AROMATIC}
    for a, b, kind in residue.bonds.as_array():
        mol.AddBond(int(a), int(b), kinds.get(struc.BondType(kind), Chem.BondType.SINGLE))
    mol = mol.GetMol()
    for atom, name in zip(mol.GetAtoms(), residue.atom_name):
        atom.SetProp("name", str(name))
        atom.SetProp("leaving_atom", "1" if leaving.get(str(name), "N").upper() == "Y" else "0")
    conformer = Chem.Conformer(mol.GetNumAtoms())
    for i, (x, y, z) in enumerate(residue.coord.astype(float)):
        conformer.SetAtomPosition(i, Point3D(x, y, z))
    conformer.SetProp("name", "Ideal")
    mol.AddConformer(conformer, assignId=True)
    return mol


def save_components(out):
    from rdkit import Chem

    # Without this RDKit pickles no atom or conformer property, and esm then finds no atom
    # names: every reference position silently becomes zero.
    Chem.SetDefaultPickleProperties(Chem.PropertyPickleOptions.AllProps)
    with open(os.path.join(out, "ccd.pkl"), "wb") as f:
        pickle.dump({code: component(code) for code in COMPONENTS}, f)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    params = save_model(out)
    save_components(out)
    sizes = {f: os.path.getsize(os.path.join(out, f)) for f in sorted(os.listdir(out))}
    print(json.dumps({"parameters": params, "bytes": sizes}))


if __name__ == "__main__":
    main()
