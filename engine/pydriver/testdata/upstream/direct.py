"""Compare an embedding job's files with direct calls of the same model, one sequence at a time,
the way each model's own documentation computes embeddings, for chaperone's real-package tier.

    python direct.py KIND MODEL_DIR SEQUENCES_JSON [POOL FORMAT JOB_DIR]...

KIND is esmc (esm's ESMC client: encode, then logits with return_embeddings, as esm's README
shows) or saprot (EsmForMaskedLM with SaProt's <aa># tokens, the last of hidden_states, as
SaProt's README shows). JOB_DIR holds the job's downloaded files: <id>.npz per sequence
(format npz) or embeddings.parquet (format parquet). Prints one JSON object per job, in order,
as a list: the largest absolute difference of the per-residue and pooled vectors, and what
SaProt's tokenizer made of the sequences. The model runs once per sequence for all jobs.
"""

import json
import os
import sys

import numpy as np
import torch


def esmc_direct(model_dir):
    from esm.models.esmc import ESMC, EsmcForMaskedLM
    from esm.sdk.api import ESMProtein, LogitsConfig

    client = ESMC(model=EsmcForMaskedLM.from_pretrained(model_dir, device="cpu")).eval()

    def embed(seq):
        with torch.no_grad():
            out = client.logits(client.encode(ESMProtein(sequence=seq)), LogitsConfig(sequence=True, return_embeddings=True))
        return out.embeddings[0].float().numpy()

    return embed, {}


def saprot_direct(model_dir):
    from transformers import EsmForMaskedLM, EsmTokenizer

    tokenizer = EsmTokenizer.from_pretrained(model_dir)
    model = EsmForMaskedLM.from_pretrained(model_dir).eval()
    facts = {"tokenizer": type(tokenizer).__name__, "M#E#": tokenizer.tokenize("M#E#")}

    def embed(seq):
        text = "".join(aa + "#" for aa in seq)
        tokens = tokenizer.tokenize(text)
        if tokens != [aa + "#" for aa in seq]:
            facts.setdefault("split_wrong", []).append(seq)
        enc = tokenizer(text, return_tensors="pt")
        with torch.no_grad():
            out = model(**enc, output_hidden_states=True)
        return out.hidden_states[-1][0].float().numpy()

    return embed, facts


def pooled(rows, pool):
    residues = rows[1:-1]
    if pool == "cls":
        return rows[0]
    if pool == "max":
        return residues.max(axis=0)
    return residues.mean(axis=0, dtype=np.float64).astype(np.float32)


def compare(direct, seqs, pool, fmt, job_dir):
    if fmt == "parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(os.path.join(job_dir, "embeddings.parquet")).to_pylist()
        got = {r["id"]: (r["length"], None, np.asarray(r["pooled"], dtype=np.float32)) for r in table}
    else:
        got = {}
        for s in seqs:
            with np.load(os.path.join(job_dir, s["id"] + ".npz")) as z:
                got[s["id"]] = (len(str(z["sequence"])), z["per_residue"], z["pooled"])
    diff = {"per_residue": 0.0, "pooled": 0.0}
    for s in seqs:
        rows = direct[s["id"]]
        length, per_residue, vector = got[s["id"]]
        assert length == len(s["sequence"]), (s["id"], length)
        if per_residue is not None:
            assert per_residue.shape == rows[1:-1].shape, (s["id"], per_residue.shape, rows.shape)
            diff["per_residue"] = max(diff["per_residue"], float(np.abs(per_residue - rows[1:-1]).max()))
        assert vector.shape == (rows.shape[1],), (s["id"], vector.shape)
        diff["pooled"] = max(diff["pooled"], float(np.abs(vector - pooled(rows, pool)).max()))
    return diff


def main():
    kind, model_dir, seqs_file, jobs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    with open(seqs_file) as f:
        seqs = json.load(f)
    embed, facts = {"esmc": esmc_direct, "saprot": saprot_direct}[kind](model_dir)
    direct = {}
    for s in seqs:
        direct[s["id"]] = embed(s["sequence"])
        assert direct[s["id"]].shape[0] == len(s["sequence"]) + 2, (s["id"], direct[s["id"]].shape)
    out = []
    for i in range(0, len(jobs), 3):
        pool, fmt, job_dir = jobs[i : i + 3]
        out.append({"max_abs_diff": compare(direct, seqs, pool, fmt, job_dir), "sequences": len(seqs), **facts})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
