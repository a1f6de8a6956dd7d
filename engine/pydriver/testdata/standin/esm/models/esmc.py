"""Stand-in of esm.models.esmc: ESMC with the real names, signatures and shapes, on numpy.
embeddings are [B, L+2, d_model] with <cls> at row 0 and <eos> after the last residue;
hidden_states are [n_layers, B, L+2, d_model] (one array viewed n_layers times)."""

from dataclasses import dataclass

import numpy as np

import _standin
from esm.sdk.api import ESMProtein, ESMProteinTensor, ForwardTrackData, LogitsConfig, LogitsOutput
from esm.tokenization import VOCAB, EsmSequenceTokenizer

# name -> (d_model, n_heads, n_layers), as esm/pretrained.py builds them.
_MODELS = {"esmc_300m": (960, 15, 30), "esmc_600m": (1152, 18, 36), "esmc_6b": (2560, 40, 80)}


@dataclass
class ESMCOutput:
    sequence_logits: object
    embeddings: object
    hidden_states: object


class ESMC:
    def __init__(self, d_model, n_heads, n_layers, tokenizer, use_flash_attn=True):
        self.d_model, self.n_heads, self.n_layers = d_model, n_heads, n_layers
        self.tokenizer = tokenizer

    @classmethod
    def from_pretrained(cls, model_name="esmc_600m", device=None):
        if model_name not in _MODELS:
            raise ValueError(f"Model {model_name} not found in local model registry.")
        model = cls(*_MODELS[model_name], tokenizer=EsmSequenceTokenizer())
        _standin.load(model, model_name)
        return model

    def eval(self):
        return self

    def to(self, *args, **kwargs):
        return self

    def float(self):
        return self

    @property
    def device(self):
        return "cpu"

    def _tokenize(self, sequence):
        rows = [self.tokenizer.encode(s, add_special_tokens=True) for s in sequence]
        width = max(len(r) for r in rows)
        out = np.full((len(rows), width), self.tokenizer.pad_token_id, dtype=np.int64)
        for i, r in enumerate(rows):
            out[i, : len(r)] = r
        return out

    def forward(self, sequence_tokens=None, sequence_id=None):
        tokens = np.asarray(sequence_tokens)
        _standin.forward(["".join(VOCAB[t] for t in row[1:] if t > 3) for row in tokens])
        x = _standin.value(tokens, self.d_model)
        return ESMCOutput(
            sequence_logits=np.zeros(tokens.shape + (64,), dtype=np.float32),
            embeddings=x,
            hidden_states=np.broadcast_to(x, (self.n_layers,) + x.shape),
        )

    __call__ = forward

    def encode(self, input: ESMProtein) -> ESMProteinTensor:
        return ESMProteinTensor(sequence=self._tokenize([input.sequence])[0])

    def logits(self, input, config: LogitsConfig = LogitsConfig()) -> LogitsOutput:
        tokens = np.asarray(input.sequence)
        if tokens.ndim == 1:
            tokens = tokens[None]
        out = self.forward(sequence_tokens=tokens)
        return LogitsOutput(
            logits=ForwardTrackData(sequence=out.sequence_logits if config.sequence else None),
            embeddings=out.embeddings if config.return_embeddings else None,
            hidden_states=out.hidden_states if config.return_hidden_states else None,
        )
