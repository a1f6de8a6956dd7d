"""Print, as JSON, the alignments Boltz-2 hands its model for targets that boltz predict has
processed, read by Boltz's own code the way its inference data module does before every
prediction (boltz/data/module/inferencev2.py: load_input, Boltz2Tokenizer, then the
featurizer's construct_paired_msa with max_seqs const.max_msa_seqs and no sampling).

    python msa.py PROCESSED_DIR TARGET ...

PROCESSED_DIR is boltz_results_<inputs>/processed. For each target, per protein chain:

    "read":   the chain's MSA object, as process_input parsed the alignment file
              (taxonomy and residues of each row, insertions left out), or null;
    "rows":   the chain's column of the paired MSA the model gets, one aligned sequence
              per row ("-" for a gap);
    "paired": per row, 1 when Boltz paired the row across chains, else 0.
"""

import json
import sys
from pathlib import Path

import numpy as np
from boltz.data import const
from boltz.data.feature.featurizerv2 import construct_paired_msa
from boltz.data.module.inferencev2 import load_input
from boltz.data.tokenize.boltz2 import Boltz2Tokenizer
from boltz.data.types import Record


def letters(token_ids):
    return "".join(const.prot_token_to_letter.get(const.tokens[int(t)], "?") for t in token_ids)


def optional(path):
    return path if path.exists() else None


def main():
    processed = Path(sys.argv[1])
    out = {}
    for target in sys.argv[2:]:
        record = Record.load(processed / "records" / f"{target}.json")
        data = load_input(
            record,
            processed / "structures",
            processed / "msa",
            constraints_dir=optional(processed / "constraints"),
            template_dir=optional(processed / "templates"),
            extra_mols_dir=optional(processed / "mols"),
        )
        tokenized = Boltz2Tokenizer().tokenize(data)
        msa, _, paired = construct_paired_msa(
            tokenized, np.random.default_rng(42), max_seqs=const.max_msa_seqs
        )
        msa, paired = msa.numpy(), paired.numpy()  # tokens x rows
        asym = tokenized.tokens["asym_id"]
        chains = {}
        for chain in data.structure.chains:
            if chain["mol_type"] != const.chain_type_ids["PROTEIN"]:
                continue
            tokens = np.where(asym == chain["asym_id"])[0]
            read = None
            if chain["asym_id"] in data.msa:
                m = data.msa[chain["asym_id"]]
                read = [
                    {"key": int(s["taxonomy"]), "sequence": letters(m.residues[s["res_start"]:s["res_end"]]["res_type"])}
                    for s in m.sequences
                ]
            chains[str(chain["name"])] = {
                "read": read,
                "rows": [letters(msa[tokens, r]) for r in range(msa.shape[1])],
                "paired": [int(paired[tokens[0], r]) for r in range(msa.shape[1])],
            }
        out[target] = chains
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
