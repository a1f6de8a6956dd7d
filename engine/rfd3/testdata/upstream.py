"""rc-foundry's own code, driven for the rfd3 engine's real-package tests (run with the
tier environment's Python; each subcommand prints one JSON document on stdout).

    upstream.py validate DIR...   in each work folder DIR, read spec.json as `rfd3 design
                                  inputs=spec.json prevalidate_inputs=True` does
                                  (rfd3.engine.process_input with validate=True), then
                                  build every specification as the run would
                                  (DesignInputSpecification.to_pipeline_input); per folder
                                  {"dir", "examples", "error"}
    upstream.py checkpoint JSON   where rfd3 looks for its default checkpoint "rfd3"
                                  (REGISTERED_CHECKPOINTS["rfd3"].get_default_path()) in
                                  each environment of the JSON list (objects of HOME,
                                  FOUNDRY_CHECKPOINT_DIRS, FOUNDRY_CHECKPOINTS_DIR); a
                                  list of paths
    upstream.py keys              every key of `rfd3 design`'s composed config with the
                                  type of its default: {"key": "int" | "float" | ...}
    upstream.py make-checkpoint OUT
                                  a checkpoint of random weights as rfd3 loads it
                                  (torch.load'ed dict with "model" and "train_cfg",
                                  foundry/inference_engines/base.py:133-138): rfd3's own
                                  training config with every size made small
"""

import json
import os
import pathlib
import sys
import traceback


def configs():
    import importlib.util

    return str(pathlib.Path(importlib.util.find_spec("rfd3").origin).parent / "configs")


def validate(dirs):
    from rfd3.engine import process_input
    from rfd3.inference.input_parsing import DesignInputSpecification

    out = []
    for d in dirs:
        os.chdir(d)
        result = {"dir": d, "examples": [], "error": ""}
        try:
            specs = process_input("spec.json", validate=True)
            for name, spec in specs.items():
                DesignInputSpecification.safe_init(**spec).to_pipeline_input(name)
                result["examples"].append(name)
        except Exception as e:  # the test reports rfd3's own words
            result["error"] = "".join(traceback.format_exception_only(e)).strip()
        out.append(result)
    return out


def checkpoint(envs):
    import importlib

    from foundry.inference_engines import checkpoint_registry

    paths = []
    for env in envs:
        # The registry reads the folders' variables when asked (checkpoint_registry.py:32-36)
        # and HOME when imported (:10): imported anew in each environment, it is as in a
        # process of its own, without importing torch again for each.
        os.environ.update(env)
        registry = importlib.reload(checkpoint_registry)
        paths.append(str(registry.REGISTERED_CHECKPOINTS["rfd3"].get_default_path()))
    return paths


def keys():
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=configs(), version_base="1.3"):
        # As rfd3/cli.py composes it when no inference_engine is given.
        cfg = compose(config_name="inference", overrides=["inference_engine=rfdiffusion3"])
    flat = {}

    def walk(node, prefix):
        for k, v in node.items():
            if isinstance(v, dict) and k not in ("specification", "hydra"):
                walk(v, prefix + k + ".")
            else:
                flat[prefix + k] = "mandatory" if v == "???" else type(v).__name__

    walk(OmegaConf.to_container(cfg), "")
    return flat


# The smallest sizes the network's shapes allow: the upcast splits c_token in three
# (rfd3_net.yaml n_split: 3), every head count divides its width.
SMALL = {
    "c_s": 32, "c_z": 16, "c_atom": 16, "c_atompair": 8,
    "token_initializer.n_pairformer_blocks": 1,
    "diffusion_module.c_token": 48, "diffusion_module.c_t_embed": 16,
    "diffusion_module.atom_attention_encoder.n_blocks": 1,
    "diffusion_module.diffusion_token_encoder.n_pairformer_blocks": 1,
    "diffusion_module.diffusion_transformer.n_block": 1,
    "diffusion_module.atom_attention_decoder.n_blocks": 1,
    "diffusion_module.upcast.cross_attention_block.c_model": 16,
    "diffusion_module.downcast.cross_attention_block.c_model": 16,
}


def make_checkpoint(out):
    import hydra
    import torch
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    work = str(pathlib.Path(out).parent)
    overrides = ["experiment=pretrain", "trainer.accelerator=cpu",
                 # Resolved by Hydra's runtime or the environment in training; fixed here.
                 f"paths.output_dir={work}", f"paths.work_dir={work}", f"paths.root_dir={work}",
                 f"paths.log_dir={work}"]
    overrides += [f"model.net.{k}={v}" for k, v in SMALL.items()]
    with initialize_config_dir(config_dir=configs(), version_base="1.3"):
        cfg = compose(config_name="train", overrides=overrides)
    # As foundry's BaseInferenceEngine builds the model (base.py:175-187).
    trainer = hydra.utils.instantiate(cfg.trainer, _convert_="partial", _recursive_=False)
    trainer.fabric.launch()
    trainer.initialize_or_update_trainer_state({"train_cfg": cfg})
    trainer.construct_model()
    model = trainer.state["model"]
    # Inference merges keys the training config lacks (trainer.seed, base.py:105-113), which
    # a struct config refuses.
    OmegaConf.set_struct(cfg, False)
    torch.save({"model": model.state_dict(), "train_cfg": cfg}, out)
    return {"path": out, "parameters": sum(p.numel() for p in model.parameters())}


def main(argv):
    cmd, args = argv[0], argv[1:]
    if cmd == "validate":
        result = validate(args)
    elif cmd == "checkpoint":
        result = checkpoint(json.loads(args[0]))
    elif cmd == "keys":
        result = keys()
    elif cmd == "make-checkpoint":
        result = make_checkpoint(args[0])
    else:
        sys.exit(__doc__)
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
