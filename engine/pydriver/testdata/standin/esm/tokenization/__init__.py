"""Stand-in of esm.tokenization: the ESM C sequence vocabulary (esm/utils/constants/esm3.py)."""

VOCAB = ["<cls>", "<pad>", "<eos>", "<unk>", "L", "A", "G", "V", "S", "E", "R", "T", "I", "D", "P", "K",
         "Q", "N", "F", "Y", "M", "H", "W", "C", "X", "B", "U", "Z", "O", ".", "-", "|", "<mask>"]


class EsmSequenceTokenizer:
    cls_token_id = 0
    pad_token_id = 1
    eos_token_id = 2
    unk_token_id = 3
    mask_token_id = 32

    def __init__(self):
        self.vocab = {t: i for i, t in enumerate(VOCAB)}

    def encode(self, sequence, add_special_tokens=True):
        ids = [self.vocab.get(c, self.unk_token_id) for c in sequence]
        if add_special_tokens:
            ids = [self.cls_token_id] + ids + [self.eos_token_id]
        return ids
