"""Stand-in of EsmForMaskedLM as SaProt's checkpoints configure it. hidden_states is a tuple
of num_hidden_layers + 1 arrays [B, L+2, hidden_size], the last after the final layer norm."""

from dataclasses import dataclass

import numpy as np

import _standin
from transformers.models.esm.tokenization_esm import AA, SPECIALS, STRUC

# SaProt's Hugging Face configs: hidden_size, num_hidden_layers.
_CONFIGS = {"westlake-repl/SaProt_650M_AF2": (1280, 33), "westlake-repl/SaProt_1.3B_AF2": (1280, 66)}


@dataclass
class EsmConfig:
    hidden_size: int
    num_hidden_layers: int
    vocab_size: int = 446
    pad_token_id: int = 1
    mask_token_id: int = 4


@dataclass
class MaskedLMOutput:
    loss: object = None
    logits: object = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None


class EsmForMaskedLM:
    def __init__(self, config):
        self.config = config

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, torch_dtype=None, **kwargs):
        if pretrained_model_name_or_path not in _CONFIGS:
            raise OSError(f"{pretrained_model_name_or_path} is not a local folder and is not a valid model identifier")
        model = cls(EsmConfig(*_CONFIGS[pretrained_model_name_or_path]))
        _standin.load(model, pretrained_model_name_or_path)
        return model

    def eval(self):
        return self

    def to(self, *args, **kwargs):
        return self

    def forward(self, input_ids=None, attention_mask=None, output_hidden_states=None, return_dict=None, **kwargs):
        ids = np.asarray(input_ids)
        vocab = SPECIALS + [a + s for a in AA for s in STRUC]
        _standin.forward(["".join(vocab[t][0] for t in row if t >= len(SPECIALS)) for row in ids])
        last = _standin.value(ids, self.config.hidden_size)
        hidden = None
        if output_hidden_states:
            hidden = (last,) * self.config.num_hidden_layers + (last,)
        return MaskedLMOutput(logits=np.zeros(ids.shape + (self.config.vocab_size,), dtype=np.float32), hidden_states=hidden)

    __call__ = forward
