"""chaperone's driver for the Python-API models (ESM C, SaProt, ESMFold2).

The Go binary embeds this file, writes it into a worker slot's folder and runs it in the
operator's interpreter. It imports the model package once, then serves requests from Go over
stdin/stdout until stdin closes, keeping every model it loaded resident between requests.

Wire format, both directions: a frame is a 4-byte big-endian length, that many bytes of a
JSON object (the header), then header["bytes"] bytes of payload (0 when absent). Payloads are
little-endian float32 arrays laid end to end in C order, as the header describes them.

Requests (Go -> driver), one at a time, each answered by events ending in "done" or "error":
  {"op": "embed", "model": MODEL, "pool": "mean"|"max"|"cls", "per_residue": bool,
   "sequences": [{"id", "sequence"}], "batches": [[index, ...], ...]}
      -> "progress" {"done", "total"} after each batch;
         "embedding" {"index", "length", "d_model"} + payload per_residue (if asked) then pooled
  {"op": "fold", "model": MODEL, "targets": [{"id", "chains": [{"id", "sequence", "a3m": path or
   null, "modifications": [{"position" (0-based), "ccd"}]}]}], "num_loops", "num_sampling_steps",
   "num_diffusion_samples", "seed", "format": "cif"|"pdb", "out_dir"}
      -> per sample, its structure written to out_dir/<target>.sample<k>.<format>, then
         "structure" {"target", "sample", "file", "tokens", "ptm", "iptm", "plddt"} + payload
         pae [tokens, tokens]; "target_failed" {"target", "message", "oom"} for a target the
         model failed on; "progress" {"done", "total"} after each target
MODEL is {"id", "loader": "esmc"|"saprot"|"esmfold2", "name": hub name, "fast": bool,
"bytes": estimated weight bytes}.
Events (driver -> Go): "ready" {"package", "version"} once at start; "loading" / "loaded"
{"model"}; "done" {"passes"}; "error" {"message", "traceback", "oom", "sequence"} when a
request failed (the driver lives on). Every event carries "loads" (models loaded since the
driver started) and "resident" (the model ids loaded now, least recently used first). A driver that cannot go on exits
with its traceback on stderr, which Go puts in the job's log.

Memory policy: models stay loaded, least recently used first out. Before a load on a GPU,
models are freed while the free memory is below the new model's estimated size; a load
that still runs out of memory frees the least recently used model and tries again, until
nothing else is loaded.
"""

import argparse
import collections
import contextlib
import faulthandler
import gc
import importlib
import json
import os
import struct
import sys
import time
import traceback

import numpy as np

try:
    import torch
except ImportError:  # the stand-in packages of chaperone's tests run on numpy alone
    torch = None


# ---- framing ---------------------------------------------------------------------------


def read_frame(stream):
    head = stream.read(4)
    if len(head) < 4:
        return None, b""
    (size,) = struct.unpack(">I", head)
    header = json.loads(stream.read(size))
    payload = stream.read(header.get("bytes", 0)) if header.get("bytes") else b""
    return header, payload


def write_frame(stream, header, arrays=()):
    blobs = [np.ascontiguousarray(a, dtype="<f4").tobytes() for a in arrays]
    header = dict(header, bytes=sum(len(b) for b in blobs))
    raw = json.dumps(header, allow_nan=True).encode()
    stream.write(struct.pack(">I", len(raw)) + raw)
    for b in blobs:
        stream.write(b)
    stream.flush()


# ---- tensors ---------------------------------------------------------------------------


def as_array(t):
    """A float32 numpy array of a torch tensor (any device, any dtype) or array-like."""
    if hasattr(t, "detach"):
        t = t.detach().float().cpu().numpy()
    return np.asarray(t, dtype=np.float32)


def cuda():
    return torch is not None and torch.cuda.is_available()


def inference(fast):
    """Gradient-free, and bf16 autocast on a GPU when fast."""
    stack = contextlib.ExitStack()
    if torch is not None:
        stack.enter_context(torch.no_grad())
        if fast and cuda():
            stack.enter_context(torch.autocast(device_type="cuda", dtype=torch.bfloat16))
    return stack


def is_oom(err):
    if isinstance(err, MemoryError):
        return True
    if torch is not None and isinstance(err, getattr(torch.cuda, "OutOfMemoryError", ())):
        return True
    return "out of memory" in str(err).lower()


# ---- models ----------------------------------------------------------------------------


class ESMCModel:
    """ESM C through esm.models.esmc.ESMC. embeddings: [B, L+2, d_model], row 0 <cls>, row
    L+1 <eos>, padding after."""

    def __init__(self, spec):
        from esm.models.esmc import ESMC

        if spec["fast"] or not cuda():
            # from_pretrained casts to bf16 on a GPU; on the CPU it stays fp32.
            self.model = ESMC.from_pretrained(spec["name"])
        else:
            self.model = ESMC.from_pretrained(spec["name"], device=torch.device("cpu"))
            self.model = self.model.to(torch.device("cuda"))
        self.model.eval()
        self.fast = spec["fast"]

    def hidden(self, seqs):
        # A batch goes through ESMC's own tokenizer and forward (what logits runs for one
        # protein): logits always autocasts to bf16 on a GPU, which fast=false must not.
        tokens = self.model._tokenize(seqs)
        with inference(self.fast):
            out = self.model(sequence_tokens=tokens)
        return out.embeddings


class SaProtModel:
    """SaProt through transformers' EsmForMaskedLM, sequence-only: every residue is written
    <aa># (structure token masked). The last hidden state is [B, L+2, hidden], <cls> first,
    <eos> after the last residue."""

    def __init__(self, spec):
        from transformers import EsmForMaskedLM, EsmTokenizer

        kwargs = {}
        if spec["fast"] and cuda():
            kwargs["torch_dtype"] = torch.bfloat16
        self.tokenizer = EsmTokenizer.from_pretrained(spec["name"])
        self.model = EsmForMaskedLM.from_pretrained(spec["name"], **kwargs)
        if cuda():
            self.model = self.model.to(torch.device("cuda"))
        self.model.eval()
        self.fast = spec["fast"]

    def hidden(self, seqs):
        masked = ["".join(aa + "#" for aa in s) for s in seqs]
        enc = self.tokenizer(masked, return_tensors="pt", padding=True)
        if cuda():
            enc = enc.to(torch.device("cuda"))
        with inference(self.fast):
            out = self.model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], output_hidden_states=True)
        return out.hidden_states[-1]


class ESMFold2:
    """ESMFold2 through Biohub transformers' ESMFold2Model and esm's ESMFold2InputBuilder."""

    def __init__(self, spec):
        from esm.models.esmfold2 import ESMFold2InputBuilder

        try:
            from transformers.models.esmfold2.modeling_esmfold2 import ESMFold2Model as Model
        except ImportError:  # later transformers releases spell it EsmFold2Model
            from transformers.models.esmfold2.modeling_esmfold2 import EsmFold2Model as Model
        kwargs = {}
        if spec["fast"] and cuda():
            kwargs["torch_dtype"] = torch.bfloat16
        self.model = Model.from_pretrained(spec["name"], **kwargs)
        if cuda():
            self.model = self.model.cuda()
        self.model.eval()
        self.builder = ESMFold2InputBuilder()
        self.fast = spec["fast"]

    def fold(self, target, req):
        from esm.models.esmfold2 import MSA, Modification, ProteinInput, StructurePredictionInput

        chains = []
        for c in target["chains"]:
            kwargs = {}
            if c.get("a3m"):
                kwargs["msa"] = MSA.from_a3m(path=c["a3m"], remove_insertions=True)
            if c.get("modifications"):
                kwargs["modifications"] = [Modification(position=m["position"], ccd=m["ccd"]) for m in c["modifications"]]
            chains.append(ProteinInput(id=c["id"], sequence=c["sequence"], **kwargs))
        with inference(self.fast):
            res = self.builder.fold(
                self.model,
                StructurePredictionInput(sequences=chains),
                num_loops=req["num_loops"],
                num_sampling_steps=req["num_sampling_steps"],
                num_diffusion_samples=req["num_diffusion_samples"],
                seed=req["seed"],
                complex_id=target["id"],
            )
        return res if isinstance(res, list) else [res]


LOADERS = {"esmc": ESMCModel, "saprot": SaProtModel, "esmfold2": ESMFold2}


def scalar(t):
    """A float of a 0-d or one-element tensor; None for None or a value that is not finite."""
    if t is None:
        return None
    v = float(as_array(t).reshape(-1)[0])
    return v if np.isfinite(v) else None


# The last line on stderr of every request, before its "done" or "error" event: Go waits
# for it so that a job's log holds everything the driver printed for it.
FINISHED = "== chaperone driver: request finished =="


class SequenceFailed(Exception):
    def __init__(self, seq_id, cause):
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.seq_id = seq_id
        self.cause = cause


class Driver:
    def __init__(self, out):
        self.out = out
        self.resident = collections.OrderedDict()  # model id -> (spec, model), LRU first
        self.loads = 0

    def send(self, event, arrays=(), **fields):
        fields.update(event=event, loads=self.loads, resident=list(self.resident))
        write_frame(self.out, fields, arrays)

    def model(self, spec):
        key = spec["id"]
        held = self.resident.get(key)
        if held is not None and held[0]["fast"] == spec["fast"]:
            self.resident.move_to_end(key)
            return held[1]
        if held is not None:
            self.free(key)
        self.make_room(spec.get("bytes", 0))
        self.send("loading", model=key)
        started = time.monotonic()
        while True:
            try:
                model = LOADERS[spec["loader"]](spec)
                break
            except Exception as err:
                if not is_oom(err) or not self.resident:
                    raise
                print(f"chaperone driver: out of memory loading {key}; freeing {next(iter(self.resident))}", file=sys.stderr)
                self.free(next(iter(self.resident)))
        self.loads += 1
        self.resident[key] = (spec, model)
        self.send("loaded", model=key, seconds=time.monotonic() - started)
        return model

    def make_room(self, need):
        if not need or not cuda():
            return
        while self.resident and torch.cuda.mem_get_info()[0] < need:
            self.free(next(iter(self.resident)))

    def free(self, key):
        del self.resident[key]
        gc.collect()
        if cuda():
            torch.cuda.empty_cache()

    def finish(self, passes):
        print(FINISHED, file=sys.stderr, flush=True)
        self.send("done", passes=passes)

    def embed(self, req, _payload):
        model = self.model(req["model"])
        seqs = req["sequences"]
        passes = done = 0
        for batch in req["batches"]:
            try:
                hidden = as_array(model.hidden([seqs[i]["sequence"] for i in batch]))
                passes += 1
                vectors = [(i, hidden[k]) for k, i in enumerate(batch)]
            except Exception as err:
                if len(batch) == 1:
                    raise SequenceFailed(seqs[batch[0]]["id"], err) from err
                # Find the sequence the batch failed on, or get through one at a time.
                print(f"chaperone driver: a batch of {len(batch)} failed ({err}); running its sequences one by one", file=sys.stderr)
                vectors = []
                for i in batch:
                    try:
                        vectors.append((i, as_array(model.hidden([seqs[i]["sequence"]]))[0]))
                        passes += 1
                    except Exception as one:
                        raise SequenceFailed(seqs[i]["id"], one) from one
            for i, rows in vectors:
                self.send_embedding(req, i, len(seqs[i]["sequence"]), rows)
            done += len(batch)
            self.send("progress", done=done, total=len(seqs))
        self.finish(passes)

    def send_embedding(self, req, index, length, rows):
        residues = rows[1 : length + 1]
        pool = req["pool"]
        if pool == "cls":
            pooled = rows[0]
        elif pool == "max":
            pooled = residues.max(axis=0)
        else:
            pooled = residues.mean(axis=0, dtype=np.float64)
        arrays = [residues, pooled] if req["per_residue"] else [pooled]
        self.send("embedding", arrays, index=index, length=length, d_model=int(rows.shape[-1]))

    def fold(self, req, _payload):
        model = self.model(req["model"])
        targets = req["targets"]
        for done, target in enumerate(targets):
            try:
                samples = model.fold(target, req)
                for k, res in enumerate(samples):
                    path = os.path.join(req["out_dir"], f"{target['id']}.sample{k}.{req['format']}")
                    if req["format"] == "pdb":
                        res.complex.to_protein_complex().to_pdb(path)
                    else:
                        with open(path, "w") as f:
                            f.write(res.complex.to_mmcif())
                    pae = as_array(res.pae)
                    pae = pae.reshape(pae.shape[-2:])
                    self.send("structure", [pae], target=target["id"], sample=k, file=path, tokens=int(pae.shape[-1]),
                              ptm=scalar(res.ptm), iptm=scalar(res.iptm), plddt=float(as_array(res.plddt).mean()))
            except Exception as err:
                traceback.print_exc()
                self.send("target_failed", target=target["id"], message=f"{type(err).__name__}: {err}", oom=is_oom(err))
            self.send("progress", done=done + 1, total=len(targets))
        self.finish(len(targets))

    def serve(self, stream):
        handlers = {"embed": self.embed, "fold": self.fold}
        while True:
            req, payload = read_frame(stream)
            if req is None:
                return
            try:
                handlers[req["op"]](req, payload)
            except Exception as err:
                traceback.print_exc()
                print(FINISHED, file=sys.stderr, flush=True)
                cause = err.cause if isinstance(err, SequenceFailed) else err
                self.send(
                    "error",
                    message=str(err) if isinstance(err, SequenceFailed) else f"{type(err).__name__}: {err}",
                    traceback=traceback.format_exc(),
                    oom=is_oom(cause),
                    sequence=getattr(err, "seq_id", None),
                )


def version(package):
    module = importlib.import_module(package)
    v = getattr(module, "__version__", None)
    if v is None:
        from importlib import metadata

        v = metadata.version(package)
    return str(v)


def main():
    # Positional arguments only: the interpreter is the operator's tool, and the driver's
    # command line is chaperone's own.
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", help="the model package to import: esm or transformers")
    parser.add_argument("mode", choices=["serve", "check", "once"],
                        help="serve stdin; check: print the package's version as JSON; once: serve the file REQUESTS into EVENTS")
    parser.add_argument("files", nargs="*", metavar="REQUESTS EVENTS")
    args = parser.parse_args()
    faulthandler.enable()  # a crash in native code still leaves the Python stack in the log
    if args.mode == "check":
        print(json.dumps({"package": args.package, "version": version(args.package)}))
        return
    if args.mode == "once":
        with open(args.files[0], "rb") as requests, open(args.files[1], "wb") as events:
            driver = Driver(events)
            driver.send("ready", package=args.package, version=version(args.package))
            driver.serve(requests)
        return
    # The protocol owns stdout; anything the model code prints goes to stderr, the log.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    driver = Driver(out)
    driver.send("ready", package=args.package, version=version(args.package))
    driver.serve(sys.stdin.buffer)


if __name__ == "__main__":
    main()
