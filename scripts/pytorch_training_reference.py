#!/usr/bin/env python3
"""What PyTorch keeps and needs for one training step of the kit's models,
to compare vram-opt's training step with (bench/training/compare_pytorch.sh).

    python3 scripts/pytorch_training_reference.py [--out PATH] [--only NAME,...]

Use the `python3` with PyPI torch 2.x (the model definitions are
scripts/export_kit.py's). CPU only, fp32, seeded. For each model, with the
loss vram-train builds by default (cross-entropy: int64 labels over the last
axis for [batch, seq, classes] outputs, soft one-hot labels for [batch,
classes] ones):

  params            bytes of the trainable parameters (tied ones once)
  saved             bytes autograd keeps for backward in PyTorch eager:
                    every tensor handed to saved_tensors_hooks, de-duplicated
                    by storage, without parameters and the model's inputs
                    (vram-opt counts those in their own categories)
  largest_transient the largest tensor an op creates in the forward or
                    backward that is neither saved nor a parameter gradient
  needs_adamw       params + gradients + Adam's two moments + saved +
                    largest_transient: the issue's yardstick for what a
                    fused, in-place AdamW step needs (an upper bound: it
                    counts every gradient and every saved tensor at once)
  step_peak         PyTorch's own peak over one such step: the most bytes
                    live in the CPU allocator during forward, loss,
                    backward and torch.optim.AdamW(fused=True).step(), with
                    the parameters, Adam's state (made by a first step)
                    and the input live throughout, as the
                    profiler's memory timeline records them (with_stack,
                    torch.profiler._memory_profiler)
  saved_min_cut     (transformers) bytes the forward keeps for backward
                    under PyTorch 2.x's default partitioner (AOTAutograd's
                    min-cut rematerialization, as torch.compile uses): the
                    forward graph's extra outputs, one count per base
                    storage, without parameters and inputs

Models and batches (the Must-show of the training issue): GPT-2-small-like
b1 s512 and BERT-base-like b8 s128 (eval mode: the kit exports them without
dropout), ResNet-50, MobileNetV2, EfficientNet-B0 in training mode, b8.
Writes JSON (default bench/training/pytorch_training_reference.json).
"""
import argparse
import importlib.util
import json
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_kit():
    spec = importlib.util.spec_from_file_location(
        "export_kit", os.path.join(REPO, "scripts", "export_kit.py"))
    kit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kit)
    return {s["name"]: s for s in kit.SPECS}


def storage_key(t):
    return t.untyped_storage().data_ptr()


def storage_bytes(t):
    return t.untyped_storage().nbytes()


class LargestOutput(TorchDispatchMode):
    """Remembers every op output's storage and size."""

    def __init__(self):
        super().__init__()
        self.sizes = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.device.type == "cpu":
                key = storage_key(t)
                self.sizes[key] = max(self.sizes.get(key, 0), storage_bytes(t))
        return out


def build_model(spec, batch):
    torch.manual_seed(0)
    model = spec["build"]()
    if spec["training"]:
        model.train()
    else:
        model.eval()
    (x,) = spec["inputs"]()
    if x.dtype == torch.float32:
        x = torch.randn(batch, *x.shape[1:])
    return model, x


def default_loss(out):
    """The loss vram-train builds by default."""
    if out.dim() >= 3:  # [batch, seq, classes]: int64 labels, last axis
        labels = torch.randint(0, out.shape[-1], out.shape[:-1])
        return F.cross_entropy(out.reshape(-1, out.shape[-1]),
                               labels.reshape(-1))
    # [batch, classes]: soft one-hot labels
    target = F.one_hot(torch.randint(0, out.shape[1], (out.shape[0],)),
                       out.shape[1]).float()
    return F.cross_entropy(out, target)


def measure_step_peak(spec, batch):
    from torch.profiler import ProfilerActivity, profile
    from torch.profiler._memory_profiler import MemoryProfileTimeline

    model, x = build_model(spec, batch)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)

    def step():
        default_loss(model(x)).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    step()  # Adam's state exists from here on, as in a training loop
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True,
                 record_shapes=True, with_stack=True) as prof:
        step()
    timeline = MemoryProfileTimeline(prof._memory_profile())
    _, sizes = timeline._coalesce_timeline(torch.device("cpu"))
    return max(sum(categories) for categories in sizes)


def measure(name, spec, batch):
    model, x = build_model(spec, batch)
    params = {storage_key(p): p for p in model.parameters()}
    param_bytes = sum(storage_bytes(p) for p in params.values())
    excluded = set(params) | {storage_key(x)}

    saved = {}

    def pack(t):
        key = storage_key(t)
        if key not in excluded:
            saved[key] = storage_bytes(t)
        return t

    tracker = LargestOutput()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), tracker:
        default_loss(model(x)).backward()
    grads = {storage_key(p.grad) for p in model.parameters() if p.grad is not None}
    transient = max(b for k, b in tracker.sizes.items()
                    if k not in saved and k not in grads and k not in excluded)
    saved_bytes = sum(saved.values())
    return dict(
        batch=batch,
        params=param_bytes,
        saved=saved_bytes,
        largest_transient=transient,
        needs_adamw=4 * param_bytes + saved_bytes + transient,
        step_peak=measure_step_peak(spec, batch),
    )


VIEW_OPS = {"t", "view", "_unsafe_view", "permute", "transpose", "expand",
            "slice", "unsqueeze", "squeeze", "alias", "select", "as_strided",
            "reshape", "split", "split_with_sizes", "unbind"}


def view_base(node):
    """The node whose storage `node` views (through getitem of splits too)."""
    while node.op == "call_function":
        name = getattr(node.target, "__name__", str(node.target))
        base_name = name.split(".")[0]
        if base_name in VIEW_OPS or name == "getitem":
            node = node.args[0]
        else:
            break
    return node


def min_cut_saved(spec, batch):
    """Saved bytes under AOTAutograd's min-cut partitioner."""
    from functorch.compile import (make_boxed_func,
                                   min_cut_rematerialization_partition)
    torch.manual_seed(0)
    model = spec["build"]().eval()
    (x,) = spec["inputs"]()

    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, ids, labels):
            out = self.model(ids)
            return F.cross_entropy(out.reshape(-1, out.shape[-1]),
                                   labels.reshape(-1))

    result = {}

    def forward_compiler(gm, example_inputs):
        output = next(n for n in gm.graph.nodes if n.op == "output")
        bases = {}
        for node in output.args[0][1:]:  # the loss, then what backward reads
            if not isinstance(node, torch.fx.Node):
                continue
            base = view_base(node)
            if base.op == "placeholder":
                continue
            val = base.meta.get("val")
            if isinstance(val, torch.Tensor):
                bases[base] = val.untyped_storage().nbytes()
        result["saved"] = sum(bases.values())
        return make_boxed_func(gm.forward)

    # torch.compile's AOTAutograd path (which handles GPT-2's tied head)
    # with the min-cut partitioner, its default.
    from torch._dynamo.backends.common import aot_autograd
    backend = aot_autograd(
        fw_compiler=forward_compiler,
        bw_compiler=lambda gm, _: make_boxed_func(gm.forward),
        partition_fn=min_cut_rematerialization_partition)
    compiled = torch.compile(Step(), backend=backend, fullgraph=True,
                             dynamic=False)
    with torch.no_grad():
        out = model(x)
    labels = torch.randint(0, out.shape[-1], out.shape[:-1])
    compiled(x, labels).backward()
    return result["saved"]


MODELS = [("gpt2_small", 1), ("bert_base", 8), ("resnet50_train", 8),
          ("mobilenet_v2_train", 8), ("efficientnet_b0_train", 8)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.path.join(
        REPO, "bench", "training", "pytorch_training_reference.json"))
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    torch.set_num_threads(2)
    specs = load_kit()
    only = set(filter(None, args.only.split(",")))
    results = {"torch": torch.__version__, "models": {}}
    for name, batch in MODELS:
        if only and name not in only:
            continue
        results["models"][name] = measure(name, specs[name], batch)
        if name in ("gpt2_small", "bert_base"):
            results["models"][name]["saved_min_cut"] = min_cut_saved(
                specs[name], batch)
        print(name, results["models"][name], file=sys.stderr)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
