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
MODEL is {"id", "loader": "esmc"|"saprot"|"esmfold2", "name": hub repository, "folder":
the operator's weights folder or null, "backbone": ESMFold2's ESM C folder or null, "fast":
bool, "bytes": estimated weight bytes, "d_model": the catalog's width of an embedding model}.
Events (driver -> Go): "ready" {"package", "version"} once at start; "loading" / "loaded"
{"model"}; "done" {"passes"}; "error" {"message", "traceback", "oom", "sequence"} when a
request failed (the driver lives on). Every event carries "loads" (models loaded since the
driver started) and "resident" (the model ids loaded now, least recently used first). A driver that cannot go on exits
with its traceback on stderr, which Go puts in the job's log.

Memory policy: models stay loaded, least recently used first out. Before a load, models
are freed while the free memory (the GPU's, or the machine's on a CPU-only worker) is below
the new model's estimated size; a load that still runs out of memory frees the least
recently used model and tries again, until nothing else is loaded. Each forward pass logs
its peak memory (allocated GPU memory, or the process's peak resident set on the CPU).
"""

import argparse
import collections
import contextlib
import faulthandler
import gc
import importlib
import importlib.util
import json
import os
import struct
import sys
import time
import traceback

try:
    import numpy as np
except ImportError:  # the check says that the model package is not installed, if it is not
    np = None

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
    # torch's CPU allocator says "DefaultCPUAllocator: not enough memory" (or "can't
    # allocate memory"), its CUDA one "CUDA out of memory"; a failed mmap (safetensors
    # maps the weights' file) is ENOMEM, "Cannot allocate memory".
    text = str(err).lower()
    return any(s in text for s in ("out of memory", "not enough memory", "can't allocate memory", "cannot allocate memory"))


def available_memory():
    """Bytes a load may take now: free GPU memory on a GPU, else the machine's available
    memory (/proc/meminfo's MemAvailable); None when unknown."""
    if cuda():
        return torch.cuda.mem_get_info()[0]
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


class PeakMemory:
    """The peak memory of one stretch of work: allocated GPU memory on a GPU, else the
    process's peak resident set (VmHWM, reset through /proc/self/clear_refs)."""

    def __enter__(self):
        if cuda():
            torch.cuda.reset_peak_memory_stats()
        else:
            try:
                with open("/proc/self/clear_refs", "w") as f:
                    f.write("5")
            except OSError:
                pass
        return self

    def __exit__(self, *exc):
        self.bytes = None
        if cuda():
            self.bytes = torch.cuda.max_memory_allocated()
            return
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        self.bytes = int(line.split()[1]) * 1024
        except OSError:
            pass


def gigabytes(n):
    return "unknown" if n is None else f"{n / 1e9:.2f} GB"


# ---- models ----------------------------------------------------------------------------


def device():
    return torch.device("cuda") if cuda() else "cpu"


def weights_dtype(fast):
    """bf16 when fast (on a GPU), else fp32; None without torch (the tests' stand-ins)."""
    if torch is None:
        return None
    return torch.bfloat16 if fast else torch.float32


def source(spec):
    """Where from_pretrained reads a model: the operator's folder, else its hub repository."""
    return spec.get("folder") or spec["name"]


def check_width(spec, width):
    """A folder the operator named must hold the catalog's model: its width is what the
    catalog promises every client, and every vector is checked against it."""
    want = spec.get("d_model")
    if want and width != want:
        raise ValueError(f"{source(spec)} holds a model of width {width}, not {spec['id']}'s {want}: "
                         f"name a copy of {spec['name']} for {spec['id']}")


class ESMCModel:
    """ESM C through esm's EsmcModel (esm >= 3.4), the encoder without its LM head, asked for
    the last hidden state only: the deprecated ESMC wrapper stacks every layer's state and
    then concatenates a copy, which at esmc-6b's token budget is gigabytes for nothing.
    last_hidden_state is [B, L+2, hidden] (after the final LayerNorm, what ESMC's
    embeddings always were), <cls> first, <eos> after the last residue, padding after."""

    def __init__(self, spec):
        from esm.models.esmc import EsmcModel, EsmcTokenizer

        self.fast = spec["fast"] and cuda()
        # On a GPU, fast is bf16 weights and flash attention where flash-attn is installed
        # (esm falls back to sdpa without it); otherwise fp32 throughout.
        self.model = EsmcModel.from_pretrained(
            source(spec),
            device=device(),
            dtype=weights_dtype(self.fast),
            attn_implementation="flash_attention_2" if self.fast else "sdpa",
        ).eval()
        check_width(spec, self.model.config.hidden_size)
        self.tokenizer = EsmcTokenizer()

    def hidden(self, seqs):
        enc = self.tokenizer(seqs, return_tensors="pt", padding=True).to(device())
        with inference(self.fast):
            out = self.model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], output_hidden_states=False)
        return out.last_hidden_state


class SaProtModel:
    """SaProt through transformers' EsmModel (the checkpoint's EsmForMaskedLM without its LM
    head), sequence-only: every residue is written <aa># (structure token masked). The last
    hidden state, after ESM's final LayerNorm as SaProt uses it, is [B, L+2, hidden], <cls>
    first, <eos> after the last residue."""

    def __init__(self, spec):
        from transformers import EsmModel, EsmTokenizer

        self.fast = spec["fast"] and cuda()
        self.tokenizer = EsmTokenizer.from_pretrained(source(spec))
        self.model = EsmModel.from_pretrained(source(spec), add_pooling_layer=False,
                                              dtype=weights_dtype(self.fast))
        self.model = self.model.to(device()).eval()
        check_width(spec, self.model.config.hidden_size)

    def hidden(self, seqs):
        masked = ["".join(aa + "#" for aa in s) for s in seqs]
        enc = self.tokenizer(masked, return_tensors="pt", padding=True).to(device())
        with inference(self.fast):
            out = self.model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
        return out.last_hidden_state


class ESMFold2:
    """ESMFold2 through esm's EsmFold2Model (esm >= 3.4) and ESMFold2InputBuilder."""

    def __init__(self, spec):
        from esm.models.esmfold2 import ESMFold2InputBuilder, EsmFold2Model

        # fast on a GPU is upstream's default, the ESM C backbone in fp8 (ESMFold2 was trained
        # with it); otherwise the backbone is fp32. The trunk keeps its own weights' dtype and
        # esm's own bf16 autocast on a GPU. On the CPU only fp32 runs: esm's bf16 and fp8
        # backbones meet fp32 layers there without the autocast that reconciles them
        # (esm/models/esmfold2/layers.py:2292 refuses the mix).
        self.fast = spec["fast"] and cuda()
        precision = "fp8" if self.fast else "fp32"
        backbone = spec.get("backbone")
        self.model = EsmFold2Model.from_pretrained(
            source(spec),
            # The ESM C backbone comes from the operator's folder when one is named, else
            # from the repository the checkpoint's config names (downloaded on first use).
            load_esmc=not backbone,
            esmc_precision=precision,
            device="cpu",
        )
        if self.model.esmc is None:  # a checkpoint that bundles its backbone keeps it
            self.model.load_esmc(backbone, precision=precision)
        self.model = self.model.to(device()).eval()
        # The chemical components: ESMCFOLD_CCD_PATH when set, else ccd.pkl of the
        # operator's folder, else esm downloads the repository's.
        folder = spec.get("folder")
        ccd = folder if folder and os.path.exists(os.path.join(folder, "ccd.pkl")) else None
        self.builder = ESMFold2InputBuilder(ccd_cache=ccd)

    def fold(self, target, req):
        with inference(self.fast):
            res = self.builder.fold(
                self.model,
                fold_input(target),
                num_loops=req["num_loops"],
                num_sampling_steps=req["num_sampling_steps"],
                num_diffusion_samples=req["num_diffusion_samples"],
                seed=req["seed"],
                complex_id=target["id"],
            )
        return res if isinstance(res, list) else [res]


def fold_input(target):
    """ESMFold2's input of a fold request's target: each chain with its A3M, if any."""
    from esm.models.esmfold2 import MSA, Modification, ProteinInput, StructurePredictionInput

    chains = []
    for c in target["chains"]:
        kwargs = {}
        if c.get("a3m"):
            kwargs["msa"] = MSA.from_a3m(path=c["a3m"], remove_insertions=True)
        if c.get("modifications"):
            kwargs["modifications"] = [Modification(position=m["position"], ccd=m["ccd"]) for m in c["modifications"]]
        chains.append(ProteinInput(id=c["id"], sequence=c["sequence"], **kwargs))
    return StructurePredictionInput(sequences=chains)


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
        if held is not None and held[0]["fast"] == spec["fast"] and source(held[0]) == source(spec):
            self.resident.move_to_end(key)
            return held[1]
        if held is not None:
            self.free(key)
        self.make_room(spec)
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

    def make_room(self, spec):
        need = spec.get("bytes", 0)
        if not need:
            return
        while self.resident:
            free = available_memory()
            if free is None or free >= need:
                return
            lru = next(iter(self.resident))
            print(f"chaperone driver: {gigabytes(free)} free, {spec['id']} needs {gigabytes(need)}; freeing {lru}", file=sys.stderr)
            self.free(lru)

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
                started = time.monotonic()
                with PeakMemory() as peak:
                    hidden = as_array(model.hidden([seqs[i]["sequence"] for i in batch]))
                passes += 1
                longest = max(len(seqs[i]["sequence"]) for i in batch)
                print(f"chaperone driver: pass {passes}: {len(batch)} sequence(s) of up to {longest} residues "
                      f"in {time.monotonic() - started:.2f} s, peak memory {gigabytes(peak.bytes)}", file=sys.stderr)
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


# What the loaders import from each package: esm has both classes from 3.4 on.
NEEDS = {
    "esm": [("esm.models.esmc", "EsmcModel"), ("esm.models.esmc", "EsmcTokenizer"),
            ("esm.models.esmfold2", "EsmFold2Model"), ("esm.models.esmfold2", "ESMFold2InputBuilder")],
    "transformers": [("transformers", "EsmModel"), ("transformers", "EsmTokenizer")],
}


def missing(package):
    """The names the loaders need that the installed package lacks, as module.Name."""
    out = []
    for module, name in NEEDS.get(package, []):
        try:
            if not hasattr(importlib.import_module(module), name):
                out.append(f"{module}.{name}")
        except ImportError:
            out.append(f"{module}.{name}")
    return out


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
        # A package that is not there at all is said so, rather than as whatever of its
        # dependencies (numpy) failed to import first.
        if importlib.util.find_spec(args.package) is None:
            print(json.dumps({"package": args.package, "installed": False}))
            return
        print(json.dumps({"package": args.package, "installed": True, "version": version(args.package),
                          "missing": missing(args.package)}))
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
