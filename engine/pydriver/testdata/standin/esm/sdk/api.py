"""Stand-in of esm.sdk.api: the protein and logits types ESMC takes and gives."""

from dataclasses import dataclass


@dataclass
class ESMProtein:
    sequence: str | None = None


@dataclass
class ESMProteinTensor:
    sequence: object = None

    def to(self, device):
        return self


@dataclass
class LogitsConfig:
    sequence: bool = False
    return_embeddings: bool = False
    return_hidden_states: bool = False
    ith_hidden_layer: int = -1


@dataclass
class ForwardTrackData:
    sequence: object = None


@dataclass
class LogitsOutput:
    logits: ForwardTrackData | None = None
    embeddings: object = None
    hidden_states: object = None
