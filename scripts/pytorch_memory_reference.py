#!/usr/bin/python3
"""Ground-truth memory numbers from PyTorch, to validate vram-opt's analysis against.

Run with Debian's interpreter (python3-torch 1.13 + python3-torchvision 0.14),
CPU only:

    /usr/bin/python3 scripts/pytorch_memory_reference.py [--out PATH]

For torchvision resnet50 and resnet18 at batch 64, fp32, 3x224x224 it measures

  (i)   parameter and buffer bytes, straight from the nn.Module;
  (ii)  peak live activation bytes of an eval-mode, no_grad forward, by tracking
        every tensor storage produced by an ATen op (TorchDispatchMode) and
        observing when it dies (weakref finalizers);
  (iii) bytes autograd keeps for backward in a train-mode forward, by recording
        every tensor handed to torch.autograd.graph.saved_tensors_hooks and
        de-duplicating by storage.

and writes test/models/pytorch_memory_reference.json. All numbers are counted
at the tensor-storage level (what a graph-level planner models); memory that
kernels allocate and free internally (oneDNN reorders, im2col scratch, etc.)
and allocator rounding/caching are invisible here by construction.

Everything is deterministic: fixed seed, fixed thread count, and CPython's
reference counting frees tensors at deterministic points.
"""

import argparse
import collections
import json
import os
import sys
import time
import weakref

import torch
import torchvision
from torch.utils._pytree import tree_flatten
from torch.utils._python_dispatch import TorchDispatchMode

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 64
INPUT_SHAPE = (BATCH, 3, 224, 224)
SEED = 0

DESCRIPTION = {
    "common": (
        "torchvision model with random init (seed 0), fp32, CPU, input shape "
        "[64,3,224,224]. 'Storage' means a torch storage (the underlying allocation); "
        "views share their base's storage and are counted once. Bytes are storage "
        "nbytes. Kernel-internal scratch memory and allocator overhead are NOT included."
    ),
    "trainable_parameter_bytes": "sum of numel*element_size over model.parameters() with requires_grad (count in trainable_parameter_count)",
    "bn_running_stats_bytes": "sum over BatchNorm running_mean and running_var buffers (fp32); count in bn_running_stats_count",
    "num_batches_tracked_bytes": "sum over BatchNorm num_batches_tracked buffers (int64 scalars, one per BN layer); kept separate because ONNX export drops them",
    "input_bytes": "bytes of the [64,3,224,224] fp32 input tensor",
    "inference.peak_live_bytes_including_input": (
        "eval mode + torch.no_grad(): maximum, over the sequence of ATen ops executed by the forward "
        "(as seen by a TorchDispatchMode), of the total bytes of live non-parameter, non-buffer storages, "
        "measured right after each op returns (so an op's inputs and outputs are both counted). "
        "The input tensor is live throughout and included. A storage becomes live when an op first returns a "
        "tensor on it and dies when the last Python-visible tensor on it is destroyed (weakref finalizer). "
        "In-place ops (torchvision uses ReLU(inplace=True) and `out += identity`) allocate nothing."
    ),
    "inference.peak_live_bytes_excluding_input": "the same peak minus input_bytes",
    "inference.peak_after_op": "index (0-based, in traced op order) and ATen name of the op after which the peak was first reached",
    "inference.total_allocated_bytes": "sum of bytes of every new non-parameter storage created during the forward (what memory would be needed with no reuse at all, excluding the input)",
    "inference.output_bytes": "bytes of the logits tensor",
    "training.saved_tensor_bytes_total": (
        "train mode, grad enabled, one forward only: every tensor passed to the pack hook of "
        "torch.autograd.graph.saved_tensors_hooks, de-duplicated by storage data_ptr, summing storage nbytes. "
        "This is everything autograd keeps alive for backward, regardless of category."
    ),
    "training.saved_activation_bytes": (
        "the part of saved_tensor_bytes_total whose storages are not parameters, not buffers and not the input: "
        "intermediate activations (conv/BN inputs, ReLU results, maxpool int64 indices, BN save_mean/save_invstd)"
    ),
    "training.saved_parameter_bytes": "the part whose storages are model parameters (e.g. conv weights saved for grad-input); these are alive anyway",
    "training.saved_buffer_bytes": "the part whose storages are module buffers (BN running_mean/var saved by native_batch_norm)",
    "training.saved_input_bytes": "the part whose storage is the model input (saved by the first conv)",
    "training.saved_activation_bytes_by_dtype": "saved_activation_bytes split by element dtype",
    "training.saved_activation_storages": "number of distinct activation storages saved",
    "training.pack_hook_calls": "number of pack-hook invocations (a storage saved by several ops is counted once in the byte totals)",
}


def storage_key(t):
    s = t.storage()
    return s.data_ptr(), s.nbytes()


def module_state_storages(model):
    params = {p.storage().data_ptr() for p in model.parameters()}
    buffers = {b.storage().data_ptr() for b in model.buffers() if b.numel() > 0}
    return params, buffers


class LiveStorageTracker(TorchDispatchMode):
    """Tracks live bytes of storages created by ATen ops, and their peak.

    A weakref finalizer per returned tensor maintains a per-storage count of
    live tensors; when it reaches zero the storage has been freed. With no
    autograd graph (no_grad), nothing outside Python holds tensors, so the
    finalizer fires exactly when the memory is released.
    """

    def __init__(self, ignore_ptrs):
        super().__init__()
        self.ignore = set(ignore_ptrs)
        self.refs = collections.Counter()
        self.size = {}
        self.live = 0
        self.peak = 0
        self.peak_op = None
        self.total_allocated = 0
        self.ops = 0

    def _release(self, ptr):
        self.refs[ptr] -= 1
        if self.refs[ptr] == 0:
            del self.refs[ptr]
            self.live -= self.size.pop(ptr)

    def track(self, t, count_as_allocation=True):
        ptr, nbytes = storage_key(t)
        if nbytes == 0 or ptr in self.ignore:
            return
        if ptr not in self.size:
            self.size[ptr] = nbytes
            self.live += nbytes
            if count_as_allocation:
                self.total_allocated += nbytes
        self.refs[ptr] += 1
        weakref.finalize(t, self._release, ptr)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                self.track(t)
        if self.live > self.peak:
            self.peak = self.live
            self.peak_op = {"index": self.ops, "op": str(func)}
        self.ops += 1
        return out


def make_model(arch):
    torch.manual_seed(SEED)
    return getattr(torchvision.models, arch)(weights=None)


def make_input():
    torch.manual_seed(SEED)
    return torch.randn(*INPUT_SHAPE)


def nbytes(t):
    return t.numel() * t.element_size()


def static_sizes(model):
    bufs = dict(model.named_buffers())
    running = [b for n, b in bufs.items() if n.endswith(("running_mean", "running_var"))]
    nbt = [b for n, b in bufs.items() if n.endswith("num_batches_tracked")]
    assert len(running) + len(nbt) == len(bufs), "unexpected buffer kinds"
    trainable = [p for p in model.parameters() if p.requires_grad]
    return {
        "trainable_parameter_count": sum(p.numel() for p in trainable),
        "trainable_parameter_bytes": sum(nbytes(p) for p in trainable),
        "bn_running_stats_count": sum(b.numel() for b in running),
        "bn_running_stats_bytes": sum(nbytes(b) for b in running),
        "num_batches_tracked_count": sum(b.numel() for b in nbt),
        "num_batches_tracked_bytes": sum(nbytes(b) for b in nbt),
    }


def inference_peak(model):
    model.eval()
    params, buffers = module_state_storages(model)
    x = make_input()
    tracker = LiveStorageTracker(params | buffers)
    # The input is live for the whole forward, but it is not an allocation of
    # the forward itself, so it is excluded from total_allocated_bytes.
    tracker.track(x, count_as_allocation=False)
    with torch.no_grad(), tracker:
        y = model(x)
    result = {
        "peak_live_bytes_including_input": tracker.peak,
        "peak_live_bytes_excluding_input": tracker.peak - nbytes(x),
        "peak_after_op": tracker.peak_op,
        "total_allocated_bytes": tracker.total_allocated,
        "output_bytes": nbytes(y),
        "aten_ops_traced": tracker.ops,
    }
    del y
    assert tracker.live == nbytes(x), "storages leaked past the forward"
    return result


def training_saved(model):
    model.train()
    params, buffers = module_state_storages(model)
    x = make_input()
    input_ptr = x.storage().data_ptr()
    saved = {}  # storage ptr -> (nbytes, dtype)
    calls = 0

    def pack(t):
        nonlocal calls
        calls += 1
        ptr, n = storage_key(t)
        saved.setdefault(ptr, (n, t.dtype))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = model(x)

    by_cat = collections.Counter()
    act_by_dtype = collections.Counter()
    act_storages = 0
    for ptr, (n, dtype) in saved.items():
        if ptr in params:
            by_cat["parameter"] += n
        elif ptr in buffers:
            by_cat["buffer"] += n
        elif ptr == input_ptr:
            by_cat["input"] += n
        else:
            by_cat["activation"] += n
            act_by_dtype[str(dtype).replace("torch.", "")] += n
            act_storages += 1
    del y
    return {
        "saved_tensor_bytes_total": sum(n for n, _ in saved.values()),
        "saved_activation_bytes": by_cat["activation"],
        "saved_parameter_bytes": by_cat["parameter"],
        "saved_buffer_bytes": by_cat["buffer"],
        "saved_input_bytes": by_cat["input"],
        "saved_activation_bytes_by_dtype": dict(sorted(act_by_dtype.items())),
        "saved_activation_storages": act_storages,
        "pack_hook_calls": calls,
    }


def mib(n):
    return f"{n / 2**20:,.1f} MiB"


def measure(arch):
    t0 = time.time()
    model = make_model(arch)
    res = {"input_bytes": nbytes(make_input()), **static_sizes(model)}
    res["inference"] = inference_peak(model)
    res["training"] = training_saved(make_model(arch))
    print(f"{arch} (batch {BATCH}, fp32) [{time.time() - t0:.0f}s]")
    for k, v in res.items():
        if isinstance(v, dict):
            for k2, v2 in v.items():
                print(f"  {k}.{k2}: {v2:,}" + (f" ({mib(v2)})" if "bytes" in k2 else "") if isinstance(v2, int) else f"  {k}.{k2}: {v2}")
        else:
            print(f"  {k}: {v:,}" + (f" ({mib(v)})" if "bytes" in k else ""))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "test/models/pytorch_memory_reference.json"))
    ap.add_argument("--models", nargs="+", default=["resnet50", "resnet18"])
    args = ap.parse_args()

    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}")
    report = {
        "generator": "scripts/pytorch_memory_reference.py",
        "torch_version": torch.__version__,
        "torchvision_version": torchvision.__version__,
        "device": "cpu",
        "dtype": "float32",
        "input_shape": list(INPUT_SHAPE),
        "description": DESCRIPTION,
        "models": {arch: measure(arch) for arch in args.models},
    }
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    print(f"wrote {os.path.relpath(args.out, REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
