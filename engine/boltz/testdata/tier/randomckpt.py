"""Write a Boltz-2 checkpoint with random weights, as small as `boltz predict` can load.

    python randomckpt.py OUT.ckpt

boltz predict loads its checkpoint strictly (boltz/main.py, Boltz2.load_from_checkpoint
with strict=True) and replaces the trunk's pairformer and MSA module arguments with its own
(PairformerArgsV2: 64 blocks of 16 heads; MSAModuleArgs: msa_s 64, 4 blocks, pairwise heads
4 of width 32), so those parts keep Boltz's sizes; everything else is the smallest size the
modules take. on_load_checkpoint reads training_args by attribute (max_lr, weight_decay,
diffusion_multiplicity, recycling_steps), so it is an OmegaConf node, and the file has the
keys Lightning reads: state_dict, hyper_parameters and pytorch-lightning_version.
"""

import sys
from dataclasses import asdict

import pytorch_lightning
import torch
from omegaconf import OmegaConf

from boltz.main import Boltz2DiffusionParams, BoltzSteeringParams, MSAModuleArgs, PairformerArgsV2
from boltz.model.models.boltz2 import Boltz2


def hyper_parameters() -> dict:
    small = {"atom_encoder_depth": 1, "atom_encoder_heads": 1}
    return {
        "atom_s": 16,
        "atom_z": 8,
        "token_s": 16,  # the trunk's 16 attention heads need a multiple of 16
        "token_z": 16,
        "num_bins": 64,  # the confidence heads count contacts over 64 distogram bins
        "atom_feature_dim": 388,  # what Boltz2Featurizer makes of an atom
        "training_args": OmegaConf.create(
            {"max_lr": 1e-3, "base_lr": 0.0, "weight_decay": 0.0, "diffusion_multiplicity": 1, "recycling_steps": 0}
        ),
        "validation_args": {},
        "embedder_args": dict(small),
        "msa_args": asdict(MSAModuleArgs()),
        "pairformer_args": asdict(PairformerArgsV2()),
        "score_model_args": {
            **small,
            "sigma_data": 16,
            "dim_fourier": 16,
            "token_transformer_depth": 1,
            "token_transformer_heads": 1,
            "atom_decoder_depth": 1,
            "atom_decoder_heads": 1,
            "conditioning_transition_layers": 1,
        },
        "diffusion_process_args": asdict(Boltz2DiffusionParams()),
        "diffusion_loss_args": {},
        "confidence_model_args": {
            "num_dist_bins": 64,
            "pairformer_args": {"num_blocks": 1, "num_heads": 1, "v2": True},
            "confidence_args": {},
        },
        "confidence_prediction": True,
        "alpha_pae": 1.0,  # without it Boltz computes no PAE, pTM or ipTM
        "validate_structure": False,
        "steering_args": asdict(BoltzSteeringParams()),
        "predict_args": {},
    }


def main() -> None:
    torch.manual_seed(0)
    hp = hyper_parameters()
    model = Boltz2(**hp)
    torch.save(
        {"state_dict": model.state_dict(), "hyper_parameters": hp, "pytorch-lightning_version": pytorch_lightning.__version__},
        sys.argv[1],
    )


if __name__ == "__main__":
    main()
