"""What the stand-in esm and transformers packages share: the deterministic values chaperone's
Go tests check, the count of live models (to run out of memory on purpose), and the
sequences that make a model misbehave.

Every hidden state is value(token, position, k) for token id, position in the tokenized
sequence (0 is <cls>), and feature k. A sequence starting with FAIL makes the forward pass
raise, MEMWALL makes it run out of memory, HANG makes it never return, CRASH kills the
interpreter with SIGSEGV. STANDIN_MAX_RESIDENT (default unlimited) is how many models fit in
"GPU memory" at once; a load beyond it raises the CUDA out-of-memory error. STANDIN_LOAD_SECONDS
(default 0) is how long a load takes.
"""

import os
import signal
import sys
import time
import weakref

import numpy as np

_live = weakref.WeakSet()


def value(tokens, d_model):
    """Hidden states [B, L, d_model] of token ids [B, L]."""
    tokens = np.asarray(tokens, dtype=np.int64)
    pos = np.arange(tokens.shape[1], dtype=np.int64)[None, :, None]
    k = np.arange(d_model, dtype=np.int64)[None, None, :]
    return (((tokens[:, :, None] * 31 + pos * 7 + k * 3) % 97) / 97.0 - 0.5).astype(np.float32)


def load(model, name):
    limit = int(os.environ.get("STANDIN_MAX_RESIDENT", "0"))
    if limit and len(_live) >= limit:
        raise RuntimeError(f"CUDA out of memory. Tried to allocate 2.00 GiB (stand-in: {len(_live)} models resident)")
    print(f"standin: loading {name}", file=sys.stderr, flush=True)
    time.sleep(float(os.environ.get("STANDIN_LOAD_SECONDS", "0")))
    _live.add(model)


def forward(sequences):
    """Misbehave as a sequence asks; otherwise note the pass."""
    for s in sequences:
        if s.startswith("FAIL"):
            raise ValueError("stand-in: the model refused a sequence starting with FAIL")
        if s.startswith("MEMWALL"):
            raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 GiB")
        if s.startswith("HANG"):
            print("standin: hanging", file=sys.stderr, flush=True)
            while True:
                time.sleep(3600)
        if s.startswith("CRASH"):
            os.kill(os.getpid(), signal.SIGSEGV)
    print(f"standin: forward pass of {len(sequences)} sequence(s)", file=sys.stderr, flush=True)
    print("standin: a line on stdout", flush=True)  # as model code does; the driver's stdout is not its own
