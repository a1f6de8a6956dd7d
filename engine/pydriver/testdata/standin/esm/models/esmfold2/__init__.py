"""Stand-in of esm.models.esmfold2 as esm 3.4 has it: EsmFold2Model, the input types and
ESMFold2InputBuilder.fold with the real signatures. Sample k of a fold of N residues (all chains) scores:
  ptm   = 0.5 + 0.1 * ((2k + 1) % 5)
  iptm  = 0.4 + 0.05 k with two chains or more, else None
  plddt = per residue i: 0.5 + 0.01 (i % 40) + 0.02 k, plus 0.1 when any chain has an MSA
  pae   = [N, N]: |i - j| / 4 + k
and its structure is one CA atom per residue on a line along x. It says on stderr what alignment
each chain reads: "standin: chain A reads N rows, the first SEQ" or "standin: chain A reads no
alignment"."""

from dataclasses import dataclass, field
import sys

import numpy as np

import _standin


@dataclass
class Modification:
    position: int  # zero-indexed
    ccd: str


class MSA:
    def __init__(self, sequences):
        self.sequences = sequences

    @classmethod
    def from_a3m(cls, path, remove_insertions=False):
        seqs = []
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith(">"):
                    seqs.append("".join(c for c in line if not c.islower()) if remove_insertions else line)
        if not seqs:
            raise ValueError(f"{path}: an alignment without sequences")
        return cls(seqs)


@dataclass
class ProteinInput:
    id: str
    sequence: str
    msa: MSA | None = None
    modifications: list = field(default_factory=list)


@dataclass
class StructurePredictionInput:
    sequences: list


_THREE = {"A": "ALA", "C": "CYS", "D": "ASP", "E": "GLU", "F": "PHE", "G": "GLY", "H": "HIS", "I": "ILE", "K": "LYS",
          "L": "LEU", "M": "MET", "N": "ASN", "P": "PRO", "Q": "GLN", "R": "ARG", "S": "SER", "T": "THR", "V": "VAL",
          "W": "TRP", "Y": "TYR"}


class ProteinComplex:
    def __init__(self, atoms):
        self.atoms = atoms

    def to_pdb(self, path):
        with open(path, "w") as f:
            for n, (chain, res, name, x) in enumerate(self.atoms, 1):
                f.write(f"ATOM  {n:5d}  CA  {name:3s} {chain:1s}{res:4d}    {x:8.3f}{0:8.3f}{0:8.3f}  1.00 50.00           C\n")
            f.write("END\n")


class MolecularComplex:
    def __init__(self, id, chains):
        self.id = id
        self.atoms = []
        x = 0.0
        for c in chains:
            for i, aa in enumerate(c.sequence, 1):
                self.atoms.append((c.id, i, _THREE.get(aa, "UNK"), x))
                x += 3.8

    def to_mmcif(self):
        lines = [f"data_{self.id}", "loop_", "_atom_site.group_PDB", "_atom_site.id", "_atom_site.type_symbol",
                 "_atom_site.label_atom_id", "_atom_site.label_comp_id", "_atom_site.label_asym_id", "_atom_site.label_seq_id",
                 "_atom_site.Cartn_x", "_atom_site.Cartn_y", "_atom_site.Cartn_z"]
        for n, (chain, res, name, x) in enumerate(self.atoms, 1):
            lines.append(f"ATOM {n} C CA {name} {chain} {res} {x:.3f} 0.000 0.000")
        return "\n".join(lines) + "\n"

    def to_protein_complex(self):
        return ProteinComplex(self.atoms)


@dataclass
class MolecularComplexResult:
    complex: MolecularComplex
    plddt: object
    ptm: object
    iptm: object
    pae: object
    distogram: object = None


_NAMES = ("biohub/ESMFold2", "biohub/ESMFold2-Fast")


class EsmFold2Model:
    def __init__(self, name):
        self.name = name
        self.esmc = None

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *, load_esmc=True, esmc_precision="fp8", config=None,
                        device="cpu", dtype=None, **kwargs):
        if pretrained_model_name_or_path not in _NAMES:
            raise OSError(f"{pretrained_model_name_or_path} is not a valid model identifier")
        model = cls(pretrained_model_name_or_path)
        _standin.load(model, pretrained_model_name_or_path)
        if load_esmc:
            model.esmc = "biohub/ESMC-6B"
        return model

    def load_esmc(self, esmc_model_path, precision="fp8"):
        self.esmc = esmc_model_path

    def eval(self):
        return self

    def to(self, *args, **kwargs):
        return self


class ESMFold2InputBuilder:
    def __init__(self, ccd_cache=None):
        self.ccd_cache = ccd_cache

    def fold(self, model, input, *, num_loops=20, num_sampling_steps=200, num_diffusion_samples=1, seed=None,
             noise_scale=None, step_scale=None, max_inference_sigma=None, lm_mask_pct=None, lm_dropout=0.3,
             early_exit=None, msa_max_depth=1024, msa_column_mask_rate=0.1, msa_subsample_at_inference=None,
             include_embeddings=False, complex_id="pred"):
        chains = input.sequences
        _standin.forward([c.sequence for c in chains])
        print(f"standin: fold seed {seed}", file=sys.stderr, flush=True)
        for c in chains:
            said = f"reads {len(c.msa.sequences)} rows, the first {c.msa.sequences[0]}" if c.msa else "reads no alignment"
            print(f"standin: chain {c.id} {said}", file=sys.stderr, flush=True)
        n = sum(len(c.sequence) for c in chains)
        msa = any(c.msa is not None for c in chains)
        idx = np.arange(n)
        results = []
        for k in range(num_diffusion_samples):
            plddt = 0.5 + 0.01 * (idx % 40) + 0.02 * k + (0.1 if msa else 0.0)
            results.append(MolecularComplexResult(
                complex=MolecularComplex(complex_id, chains),
                plddt=plddt.astype(np.float32),
                ptm=np.float32(0.5 + 0.1 * ((2 * k + 1) % 5)),
                iptm=np.float32(0.4 + 0.05 * k) if len(chains) > 1 else None,
                pae=(np.abs(idx[:, None] - idx[None, :]) / 4.0 + k).astype(np.float32)[None],
            ))
        return results[0] if num_diffusion_samples == 1 else results
