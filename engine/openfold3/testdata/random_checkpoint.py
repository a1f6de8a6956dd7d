"""Writes a checkpoint of OpenFold3's own model with random weights, for the real-package tier.

usage: python random_checkpoint.py OUT.pt

The model is built from OpenFold3's config as `run_openfold predict` builds it for the
engine's runner YAML (presets [predict]; entry_points/experiment_runner.py:150-158,
project_entry.py:100-106), so that predict's strict key check passes
(experiment_runner.py:750-784; a smaller model would change the keys or shapes). Its
state_dict is a "pretrained" checkpoint (checkpoint_loading_utils.py:54-65) and carries the
model's version_tensor. Weights follow OpenFold3's own initialisers (Linear's init kinds:
zeros, ones, gating, final), with the truncated normal drawn by torch instead of
scipy's truncnorm.rvs (initialization.py:48-59), which takes minutes for 368M numbers,
and torch.nn.Linear's own reset skipped for OpenFold3's Linear, which initialises again.
"""

import math
import sys

import torch
from scipy.stats import truncnorm

import openfold3.core.model.primitives.initialization as initialization
from openfold3.core.model.primitives.linear import Linear
from openfold3.projects.of3_all_atom.project_entry import ModelUpdate, OF3ProjectEntry

TRUNC_STD = truncnorm.std(a=-2, b=2, loc=0, scale=1)


def trunc_normal_init_(weights, scale=1.0, fan="fan_in"):
    # The scale of initialization.trunc_normal_init_: N(0, std), clamped at ±2 std.
    f = initialization._calculate_fan(weights.shape, fan)
    std = math.sqrt(scale / max(1, f)) / TRUNC_STD
    with torch.no_grad():
        weights.normal_(0, std).clamp_(-2 * std, 2 * std)


initialization.trunc_normal_init_ = trunc_normal_init_
torch_reset = torch.nn.Linear.reset_parameters


def reset_parameters(self):
    if not isinstance(self, Linear):
        torch_reset(self)


torch.nn.Linear.reset_parameters = reset_parameters

torch.manual_seed(0)
entry = OF3ProjectEntry()
config = entry.get_model_config_with_update(ModelUpdate(presets=["predict"]))
model = entry.runner(config).model
torch.save(model.state_dict(), sys.argv[1])
print(f"{sum(p.numel() for p in model.parameters())} parameters written to {sys.argv[1]}")
