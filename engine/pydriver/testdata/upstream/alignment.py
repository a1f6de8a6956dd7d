"""Show how esm's own ESMFold2 input builder reads the alignments chaperone hands ESMFold2,
for chaperone's real-package tier.

    python alignment.py DRIVER CCD_DIR TARGETS

DRIVER is chaperone's driver.py, whose fold_input turns each target of a fold request into
ESMFold2's input, as a fold does; CCD_DIR holds the ccd.pkl ESMFold2InputBuilder reads;
TARGETS is a JSON list of fold-request targets (their chains name A3M files). For each
target esm's ESMFold2InputBuilder.prepare_input builds the model's features, and the MSA
feature is printed, as JSON, read back chain by chain: for each chain id, every row of the
MSA as letters over the chain's columns ('-' a gap) and its deletion counts (the number of
insertions before each column, from the deletion_value feature, pi/2 arctan(n/3)).
"""

import contextlib
import importlib.util
import json
import math
import sys

from esm.models.esmfold2 import ESMFold2InputBuilder
from esm.models.esmfold2.constants import MSA_GAP_TOKEN_ID
from esm.models.esmfold2.paired_msa import protein_letter_to_res_type


def load_driver(path):
    spec = importlib.util.spec_from_file_location("driver", path)
    driver = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(driver)
    return driver


def main():
    # esm says what it loads on stdout, which holds the answer alone.
    with contextlib.redirect_stdout(sys.stderr):
        out = read(sys.argv[1:])
    print(json.dumps(out))


def read(args):
    driver = load_driver(args[0])
    builder = ESMFold2InputBuilder(ccd_cache=args[1])
    with open(args[2]) as f:
        targets = json.load(f)
    letters = {v: k for k, v in protein_letter_to_res_type().items()}
    letters[MSA_GAP_TOKEN_ID] = "-"
    out = {}
    for target in targets:
        features, chain_infos = builder.prepare_input(driver.fold_input(target), seed=0)
        msa = features["msa"][0].numpy()
        deletions = features["deletion_value"][0].numpy()
        asym = features["asym_id"][0].numpy()
        chains = {}
        for info in chain_infos:
            cols = asym == info.asym_id
            chains[info.chain_id] = {
                "rows": ["".join(letters.get(int(t), "?") for t in row[cols]) for row in msa],
                "deletions": [[round(3 * math.tan(float(v) * 2 / math.pi)) for v in row[cols]] for row in deletions],
            }
        out[target["id"]] = {"depth": int(msa.shape[0]), "chains": chains}
    return out


if __name__ == "__main__":
    main()
