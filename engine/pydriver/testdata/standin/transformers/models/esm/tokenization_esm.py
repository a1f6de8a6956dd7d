"""Stand-in of EsmTokenizer with SaProt's vocabulary: 5 specials, then every amino-acid letter
or # followed by a Foldseek 3Di letter or # (SaProt's utils/constants.py)."""

import numpy as np

AA = "ACDEFGHIKLMNPQRSTVWY#"
STRUC = "pynwrqhgdlvtmfsaeikc#"
SPECIALS = ["<cls>", "<pad>", "<eos>", "<unk>", "<mask>"]


class BatchEncoding(dict):
    def to(self, device):
        return self


class EsmTokenizer:
    def __init__(self):
        self.vocab = {t: i for i, t in enumerate(SPECIALS + [a + s for a in AA for s in STRUC])}
        self.cls_token_id, self.pad_token_id, self.eos_token_id, self.unk_token_id, self.mask_token_id = 0, 1, 2, 3, 4

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, **kwargs):
        return cls()

    def tokenize(self, text):
        return [text[i : i + 2] for i in range(0, len(text), 2)]

    def __call__(self, text, padding=False, truncation=False, return_tensors=None, **kwargs):
        texts = [text] if isinstance(text, str) else list(text)
        rows = [[self.cls_token_id] + [self.vocab.get(t, self.unk_token_id) for t in self.tokenize(s)] + [self.eos_token_id] for s in texts]
        width = max(len(r) for r in rows)
        ids = np.full((len(rows), width), self.pad_token_id, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = r
            mask[i, : len(r)] = 1
        return BatchEncoding(input_ids=ids, attention_mask=mask)
