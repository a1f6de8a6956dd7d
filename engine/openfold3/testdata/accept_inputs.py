"""Reads the inputs the openfold3 engine wrote with OpenFold3's own classes, for the
real-package tier.

usage: python accept_inputs.py CHECKPOINT WORK...

Each WORK is a run's folder as the engine left it. Its inputs/queries.json and
inputs/runner.yaml go through what `run_openfold predict` does with them
(run_openfold.py:209-239): the runner YAML into InferenceExperimentConfig, the query JSON
into InferenceQuerySet, both into InferenceExperimentRunner and its InferenceDataModule's
prepare_data (experiment_runner.py:619-860, data_module.py:654-690); then every query is
featurised by InferenceDataset.create_all_features (single_datasets/inference.py:296-345):
the structure and reference conformers from the CCD biotite ships and RDKit, the
alignment files, templates and pocket features, as the data loader would.

Prints "ok WORK" or "refused WORK: why" per folder.
"""

import sys
import traceback
from pathlib import Path

from openfold3.core.config import config_utils
from openfold3.core.data.framework.single_datasets.inference import InferenceDataset
from openfold3.entry_points.experiment_runner import InferenceExperimentRunner
from openfold3.entry_points.validator import InferenceExperimentConfig
from openfold3.projects.of3_all_atom.config.inference_query_format import (
    InferenceQuerySet,
)


def accept(ckpt: Path, work: Path) -> None:
    inputs = work / "inputs"
    config = InferenceExperimentConfig(
        inference_ckpt_path=ckpt, **config_utils.load_yaml(inputs / "runner.yaml")
    )
    runner = InferenceExperimentRunner(config, 1, None, False, False, None)
    runner.inference_query_set = InferenceQuerySet.from_json(inputs / "queries.json")
    data = runner.lightning_data_module
    data.prepare_data()
    dataset = InferenceDataset(data.inference_config)
    for name, query in data.inference_config.query_set.queries.items():
        features = dataset.create_all_features(query)
        if features["atom_array"] is None or len(features["atom_array"]) == 0:
            raise ValueError(f"query {name}: no atoms")


ckpt = Path(sys.argv[1])
for arg in sys.argv[2:]:
    try:
        accept(ckpt, Path(arg))
        print("ok", arg, flush=True)
    except Exception as e:
        traceback.print_exc()
        why = f"{type(e).__name__}: {e}".replace("\n", " ")
        print(f"refused {arg}: {why}", flush=True)
