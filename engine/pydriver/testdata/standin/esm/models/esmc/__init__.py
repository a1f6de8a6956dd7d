"""Stand-in of esm.models.esmc as esm 3.4 has it: EsmcModel (the encoder without its LM head)
and EsmcTokenizer, with the real names, keywords and shapes, on numpy. last_hidden_state is
[B, L+2, hidden_size] with <cls> at row 0 and <eos> after the last residue."""

from dataclasses import dataclass

import numpy as np

import _standin

# ESM C's sequence vocabulary (esm/models/esmc/tokenizer.py).
VOCAB = ["<cls>", "<pad>", "<eos>", "<unk>", "L", "A", "G", "V", "S", "E", "R", "T", "I", "D", "P", "K",
         "Q", "N", "F", "Y", "M", "H", "W", "C", "X", "B", "U", "Z", "O", ".", "-", "|", "<mask>"]

# repository -> (hidden_size, num_attention_heads, num_hidden_layers), as their configs say.
_MODELS = {"biohub/ESMC-300M": (960, 15, 30), "biohub/ESMC-600M": (1152, 18, 36), "biohub/ESMC-6B": (2560, 40, 80)}


@dataclass
class EsmcConfig:
    hidden_size: int = 2560
    num_attention_heads: int = 40
    num_hidden_layers: int = 80
    pad_token_id: int = 1


@dataclass
class EsmcOutput:
    last_hidden_state: object = None
    hidden_states: object = None
    sae_outputs: object = None
    attentions: object = None
    last_hidden_state_prenorm: object = None


class BatchEncoding(dict):
    def to(self, device):
        return self


class EsmcTokenizer:
    pad_token_id = 1

    def __init__(self, **kwargs):
        self.vocab = {t: i for i, t in enumerate(VOCAB)}

    def __call__(self, text, padding=False, return_tensors=None, **kwargs):
        texts = [text] if isinstance(text, str) else list(text)
        rows = [[0] + [self.vocab.get(c, 3) for c in s] + [2] for s in texts]
        width = max(len(r) for r in rows)
        ids = np.full((len(rows), width), self.pad_token_id, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = r
            mask[i, : len(r)] = 1
        return BatchEncoding(input_ids=ids, attention_mask=mask)


class EsmcModel:
    def __init__(self, config):
        self.config = config

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *, device=None, dtype=None, attn_implementation=None,
                        revision=None, cache_dir=None, token=None, local_files_only=False, force_download=False,
                        **config_overrides):
        if pretrained_model_name_or_path not in _MODELS:
            raise OSError(f"{pretrained_model_name_or_path} is not a local folder and is not a valid model identifier")
        model = cls(EsmcConfig(*_MODELS[pretrained_model_name_or_path]))
        _standin.load(model, pretrained_model_name_or_path)
        return model

    def eval(self):
        return self

    def forward(self, input_ids=None, attention_mask=None, sequence_id=None, output_hidden_states=None,
                output_attentions=None, return_dict=None, compute_sae=True, normalize_sae=False):
        tokens = np.asarray(input_ids)
        _standin.forward(["".join(VOCAB[t] for t in row[1:] if t > 3) for row in tokens])
        return EsmcOutput(last_hidden_state=_standin.value(tokens, self.config.hidden_size))

    __call__ = forward
