"""Runs a tool's own input steps on an input JSON the engine wrote, target by target,
without a model: the preprocessing of `pred` (runner/batch_inference.py,
preprocess_input: the JSON checks and the alignment step, which must find every
alignment file and search nothing) and the inference dataset's loader and featurizer
(data/inference/infer_dataloader.py, InferenceDataset: json_to_feature, the MSA and
template featurizers) with the CCD files under $PROTENIX_ROOT_DIR or $OPENDDE_ROOT_DIR.

Usage: python loaders.py protenix|opendde INPUT.json OUT_DIR
Prints one JSON line per target: its name, the loader's error ("" when accepted), the
numbers of tokens, atoms and alignment rows it featurised, the number of paired rows among
them (prot_pair_num_alignments), and the featurised alignment by chain id: its rows in
one-letter code ("-" a gap), as the model reads them, paired rows first."""

import importlib
import json
import sys


def protenix_configs():
    """Protenix's configs for protenix-v2 as runner/batch_inference.py, get_default_runner,
    builds them (without the command line's overrides)."""
    from configs.configs_base import configs as configs_base
    from configs.configs_data import data_configs
    from configs.configs_inference import inference_configs
    from configs.configs_model_type import model_configs
    from ml_collections.config_dict import ConfigDict
    from protenix.config.config import parse_configs

    inference_configs["model_name"] = "protenix-v2"
    configs = parse_configs(
        configs={**configs_base, **{"data": data_configs}, **inference_configs},
        fill_required_with_null=True,
    )
    configs.update(ConfigDict(model_configs["protenix-v2"]))
    return configs


def protenix_dataset(input_json):
    from protenix.data.inference.infer_dataloader import InferenceDataset

    configs = protenix_configs()
    configs.use_msa = True
    configs.use_template = False
    configs.use_rna_msa = False
    configs.input_json_path = input_json
    return InferenceDataset(configs)


def opendde_dataset(input_json):
    from opendde.config.inference import build_inference_config
    from opendde.data.inference.infer_dataloader import InferenceDataset

    configs = build_inference_config(model_name="opendde_v1", fill_required_with_null=True)
    configs.use_msa = True
    configs.use_template = False
    configs.use_rna_msa = False
    configs.input_json_path = input_json
    return InferenceDataset(configs)


def msa_by_chain(tool, data, atom_array):
    """The rows of the featurised alignment ("msa", one residue index per token) restricted
    to each chain's tokens, decoded with the tool's MSA_PROTEIN_SEQ_TO_ID (letters that
    share an index, such as B and D, decode to the standard one)."""
    constants = importlib.import_module(f"{tool}.data.constants")
    letters = {
        index: letter
        for letter, index in constants.MSA_PROTEIN_SEQ_TO_ID.items()
        if letter in "ACDEFGHIKLMNPQRSTVWYX-"
    }
    feat = data["input_feature_dict"]
    msa, asym = feat["msa"].numpy(), feat["asym_id"].numpy()
    chain_of = dict(zip(atom_array.asym_id_int.tolist(), atom_array.chain_id.tolist()))
    return {
        chain_of[aid]: ["".join(letters.get(int(v), "?") for v in row) for row in msa[:, asym == aid]]
        for aid in sorted(set(asym.tolist()))
    }


def main():
    tool, input_json, out_dir = sys.argv[1:4]
    from runner.batch_inference import preprocess_input

    # With the engine's options: --use_msa and no --msa_server_mode.
    prepared = preprocess_input(input_json, out_dir=out_dir, use_msa=True)
    with open(prepared) as f:
        prepared_entries = json.load(f)
    dataset = (protenix_dataset if tool == "protenix" else opendde_dataset)(prepared)
    for i in range(len(dataset)):
        data, atom_array, error = dataset[i]
        result = {"name": data["sample_name"], "error": error, "prepared": prepared}
        if not error:
            result.update(
                tokens=int(data["N_token"].item()),
                atoms=int(data["N_atom"].item()),
                msa_rows=int(data["N_msa"].item()),
                paired_rows=int(data["input_feature_dict"]["prot_pair_num_alignments"].item()),
                msa=msa_by_chain(tool, data, atom_array),
            )
        print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
