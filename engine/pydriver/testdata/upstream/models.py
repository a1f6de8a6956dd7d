"""Build small ESM C and SaProt models with random weights, saved the way the real packages load
them, for chaperone's real-package tier (nothing is downloaded).

    python models.py esmc DIR WIDTH HEADS LAYERS [SEED]   an ESM C (esm's EsmcConfig and
        EsmcForMaskedLM, saved with its own save_pretrained: config.json and model.safetensors
        in the published layout, as from_pretrained reads biohub/ESMC-300M)
    python models.py saprot DIR WIDTH HEADS LAYERS [SEED] a SaProt (transformers' EsmConfig as
        SaProt's checkpoints configure it: rotary positions, 446 tokens, <pad> 1, <mask> 4;
        EsmForMaskedLM and EsmTokenizer saved with save_pretrained, vocab.txt included)

The catalog's width must be kept (960 for esmc-300m, 1280 for SaProt): chaperone checks every
vector against it. Layers and heads are what make the real models large, and they are few here.
"""

import itertools
import os
import sys

import torch

# SaProt's vocabulary: five specials, then every amino-acid letter or # (masked residue) paired
# with every Foldseek 3Di letter or # (masked structure), amino acid first.
SAPROT_RESIDUES = "ACDEFGHIKLMNPQRSTVWY#"
SAPROT_STRUCTURE = "pynwrqhgdlvtmfsaeikc#"
SAPROT_SPECIALS = ["<cls>", "<pad>", "<eos>", "<unk>", "<mask>"]


def esmc(out, width, heads, layers):
    from esm.models.esmc import EsmcConfig, EsmcForMaskedLM

    model = EsmcForMaskedLM(EsmcConfig(hidden_size=width, num_attention_heads=heads, num_hidden_layers=layers))
    model.save_pretrained(out)


def saprot(out, width, heads, layers):
    from transformers import EsmConfig, EsmForMaskedLM, EsmTokenizer

    vocab = SAPROT_SPECIALS + [a + s for a, s in itertools.product(SAPROT_RESIDUES, SAPROT_STRUCTURE)]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "vocab.txt"), "w") as f:
        f.write("\n".join(vocab) + "\n")
    EsmTokenizer(vocab_file=os.path.join(out, "vocab.txt")).save_pretrained(out)
    config = EsmConfig(vocab_size=len(vocab), hidden_size=width, num_attention_heads=heads, num_hidden_layers=layers,
                       intermediate_size=4 * width, position_embedding_type="rotary", pad_token_id=1, mask_token_id=4,
                       max_position_embeddings=1026, token_dropout=True, emb_layer_norm_before=False)
    EsmForMaskedLM(config).save_pretrained(out)


def main():
    kind, out, width, heads, layers = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
    torch.manual_seed(int(sys.argv[6]) if len(sys.argv) > 6 else 0)
    {"esmc": esmc, "saprot": saprot}[kind](out, width, heads, layers)


if __name__ == "__main__":
    main()
