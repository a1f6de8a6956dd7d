"""Reads the alignments the openfold3 engine wrote with OpenFold3's own code, for the
real-package tier, and prints what the model would be given.

usage: python read_msas.py CHECKPOINT WORK...

Each WORK is a run's folder as the engine left it. Its inputs/runner.yaml and
inputs/queries.json go through what `run_openfold predict --use_msa_server false
--use_templates false` does before the model runs (run_openfold.py:209-239): the runner
YAML into InferenceExperimentConfig, the query JSON into InferenceQuerySet, both into
InferenceExperimentRunner and its InferenceDataModule's prepare_data
(data_module.py:673-701); then each query is featurised by
InferenceDataset.create_all_features (single_datasets/inference.py:302-349), whose MSA
features come from the files the query names (create_msa_features, inference.py:230-245).

Every network connection is refused and counted: nothing of this may reach for a server.
A request made the way OpenFold3's ColabFold client makes them (requests) is refused and
counted first, so that a blocker that missed OpenFold3's way out would fail the run.

Prints one JSON object: {"network": [attempted connections], "works": {WORK: {query:
{"num_paired_seqs": n, "chains": {chain id: [row, ...]}}}}}, where a chain's rows are
the columns of its tokens in every row of the "msa" feature, decoded back to letters:
the query row, the n-1 paired rows, then the main rows and OpenFold3's padding (rows of
gaps) to the deepest chain's.
"""

import json
import socket
import sys
from pathlib import Path

attempts = []


def refuse(*args, **kwargs):
    attempts.append(repr(args[1:2] or args[:1]))
    raise OSError("read_msas.py: no network")


socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse

import numpy as np  # noqa: E402
import requests  # noqa: E402

from openfold3.core.config import config_utils  # noqa: E402
from openfold3.core.data.framework.single_datasets.inference import (  # noqa: E402
    InferenceDataset,
)
from openfold3.core.data.primitives.featurization.msa import (  # noqa: E402
    create_msa_token_mapper,
)
from openfold3.core.data.resources.residues import (  # noqa: E402
    STANDARD_RESIDUES_WITH_GAP_1,
)
from openfold3.entry_points.experiment_runner import (  # noqa: E402
    InferenceExperimentRunner,
)
from openfold3.entry_points.validator import InferenceExperimentConfig  # noqa: E402
from openfold3.projects.of3_all_atom.config.inference_query_format import (  # noqa: E402
    InferenceQuerySet,
)


def read(ckpt: Path, work: Path) -> dict:
    inputs = work / "inputs"
    config = InferenceExperimentConfig(
        inference_ckpt_path=ckpt, **config_utils.load_yaml(inputs / "runner.yaml")
    )
    # The engine's command line: one sample, no seeds, no server, no templates.
    runner = InferenceExperimentRunner(config, 1, None, False, False, None)
    runner.inference_query_set = InferenceQuerySet.from_json(inputs / "queries.json")
    data = runner.lightning_data_module
    data.prepare_data()
    dataset = InferenceDataset(data.inference_config)
    letters = np.array(STANDARD_RESIDUES_WITH_GAP_1)
    out = {}
    for name, query in data.inference_config.query_set.queries.items():
        features = dataset.create_all_features(query)
        atom_array = features["atom_array"]
        msa = letters[features["msa"].argmax(dim=-1).numpy()]
        chains = {}
        for chain in query.chains:
            if chain.molecule_type.name != "PROTEIN":
                continue
            for chain_id in chain.chain_ids:
                positions = create_msa_token_mapper(
                    atom_array, chain_id
                ).chain_token_positions
                chains[chain_id] = ["".join(row) for row in msa[:, positions]]
        out[name] = {
            "num_paired_seqs": int(features["num_paired_seqs"][0]),
            "chains": chains,
        }
    return out


def check_blocker() -> None:
    try:
        requests.get("https://api.colabfold.com/queue", timeout=5)
    except Exception:
        pass
    if not attempts:
        sys.exit("read_msas.py: a request got past the network blocker")
    attempts.clear()


check_blocker()
ckpt = Path(sys.argv[1])
works = {arg: read(ckpt, Path(arg)) for arg in sys.argv[2:]}
print(json.dumps({"network": attempts, "works": works}))
