"""Stand-in of Biohub transformers' ESMFold2Model (see _standin)."""

import _standin

_NAMES = ("biohub/ESMFold2", "biohub/ESMFold2-Fast")


class ESMFold2Model:
    def __init__(self, name):
        self.name = name

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, torch_dtype=None, **kwargs):
        if pretrained_model_name_or_path not in _NAMES:
            raise OSError(f"{pretrained_model_name_or_path} is not a valid model identifier")
        model = cls(pretrained_model_name_or_path)
        _standin.load(model, pretrained_model_name_or_path)
        return model

    def eval(self):
        return self

    def cuda(self):
        return self

    def to(self, *args, **kwargs):
        return self
