"""Stand-in of EsmModel as SaProt's checkpoints configure it: last_hidden_state is
[B, L+2, hidden_size], after the final layer norm."""

from dataclasses import dataclass

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
class BaseModelOutputWithPoolingAndCrossAttentions:
    last_hidden_state: object = None
    pooler_output: object = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None


class EsmModel:
    def __init__(self, config, add_pooling_layer=True):
        self.config = config

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *model_args, add_pooling_layer=True, dtype=None, **kwargs):
        if pretrained_model_name_or_path not in _CONFIGS:
            raise OSError(f"{pretrained_model_name_or_path} is not a local folder and is not a valid model identifier")
        model = cls(EsmConfig(*_CONFIGS[pretrained_model_name_or_path]), add_pooling_layer=add_pooling_layer)
        _standin.load(model, pretrained_model_name_or_path)
        return model

    def eval(self):
        return self

    def to(self, *args, **kwargs):
        return self

    def forward(self, input_ids=None, attention_mask=None, **kwargs):
        vocab = SPECIALS + [a + s for a in AA for s in STRUC]
        _standin.forward(["".join(vocab[t][0] for t in row if t >= len(SPECIALS)) for row in input_ids])
        return BaseModelOutputWithPoolingAndCrossAttentions(last_hidden_state=_standin.value(input_ids, self.config.hidden_size))

    __call__ = forward
