"""Measure the memory one ESM C forward pass takes, the driver's way or the old way, for
chaperone's memory benchmark of the real package.

    python memory.py native|wrapper MODEL_DIR SEQUENCES LENGTH

native is what the driver does: esm's EsmcModel (no LM head) asked for the last hidden state
only. wrapper is what the driver did before, through esm's deprecated ESMC: its forward asks
for every layer's hidden state, stacks them and concatenates a realigned copy
(esm/models/esmc/compatibility.py forward and _legacy_hidden_states). One batch of SEQUENCES
sequences of LENGTH residues runs on the CPU in fp32 in a fresh process; the answer, as
JSON, is the rise of the process's peak resident set during the pass over what it held
before (VmHWM, reset through /proc/self/clear_refs), and the shape of the model.
"""

import json
import sys
import warnings

import torch


def status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def main():
    way, model_dir, n, length = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    warnings.simplefilter("ignore")
    from esm.models.esmc import ESMC, EsmcForMaskedLM, EsmcModel, EsmcTokenizer

    seqs = ["ACDEFGHIKLMNPQRSTVWY"[i % 20] * length for i in range(n)]
    if way == "native":
        model = EsmcModel.from_pretrained(model_dir, device="cpu", dtype=torch.float32, attn_implementation="sdpa").eval()
        tokenizer = EsmcTokenizer()
        config = model.config

        def forward():
            enc = tokenizer(seqs, return_tensors="pt", padding=True)
            return model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], output_hidden_states=False).last_hidden_state
    else:
        model = ESMC(model=EsmcForMaskedLM.from_pretrained(model_dir, device="cpu", dtype=torch.float32)).eval()
        config = model.model.config

        def forward():
            return model(sequence_tokens=model._tokenize(seqs)).embeddings

    with torch.no_grad():
        held = status("VmRSS")
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        out = forward()
        peak = status("VmHWM")
    print(json.dumps({"way": way, "rise_bytes": peak - held, "tokens": n * (length + 2), "layers": config.num_hidden_layers,
                      "width": config.hidden_size, "output_bytes": out.numel() * out.element_size()}))


if __name__ == "__main__":
    main()
