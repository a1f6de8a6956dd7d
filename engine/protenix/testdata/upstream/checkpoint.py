"""Writes a Protenix checkpoint of random weights for protenix-v2, in the form
runner/inference.py, load_checkpoint, loads strictly: {"model": state_dict}. The model is
Protenix's own, built from its own configs (loaders.py, protenix_configs); the weights are
PyTorch's initialisation with a fixed seed, so the predictions mean nothing.

Usage: python checkpoint.py OUT.pt"""

import sys

import torch

from loaders import protenix_configs


def main():
    from protenix.model.protenix import Protenix

    configs = protenix_configs()
    configs.triangle_multiplicative = "torch"
    configs.triangle_attention = "torch"
    torch.manual_seed(0)
    model = Protenix(configs)
    torch.save({"model": model.state_dict()}, sys.argv[1])
    print(sum(p.numel() for p in model.parameters()))


if __name__ == "__main__":
    main()
