#!/usr/bin/env python3
"""Exports current torchvision models and two small language-model blocks
with PyTorch's dynamo exporter and lists the ONNX operators each uses that
vram-opt's dialect does not model (scripts/make_node_tests.py's SUPPORTED).

    python3 scripts/survey_exports.py OUT_DIR [NAME ...]

Needs the PyPI torch 2.x, torchvision and onnx (the python3 first on PATH).
Weights are random (no download); each model is exported at batch 1 with
external data, so OUT_DIR/<name>.onnx holds only the graph. The 2026-12-04
survey (torch 2.15, opset 20) found Swin-T needing ScatterND, Equal, Not and
ConstantOfShape, MaxViT-T Einsum, and the Llama-style block Reciprocal; all
are modelled since.
"""

import collections
import math
import os
import re
import sys
import warnings


def supported_ops():
    text = open(os.path.join(os.path.dirname(__file__), "make_node_tests.py")).read()
    block = text.split("SUPPORTED = [", 1)[1].split("]", 1)[0]
    return set(re.findall(r'"(\w+)"', block))


def lm_blocks(torch):
    nn = torch.nn

    class Rotary(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.register_buffer(
                "inv", 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim)))

        def forward(self, x):
            t = torch.arange(x.shape[-2], dtype=torch.float32)
            emb = torch.cat([torch.outer(t, self.inv)] * 2, -1)
            x1, x2 = x.chunk(2, -1)
            return x * emb.cos() + torch.cat([-x2, x1], -1) * emb.sin()

    class LlamaBlock(nn.Module):
        """RMSNorm, rotary attention through SDPA, SwiGLU."""

        def __init__(self, d=128, heads=4):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(d, 3 * d, bias=False)
            self.out = nn.Linear(d, d, bias=False)
            self.norm1, self.norm2 = nn.RMSNorm(d), nn.RMSNorm(d)
            self.gate = nn.Linear(d, 4 * d, bias=False)
            self.up = nn.Linear(d, 4 * d, bias=False)
            self.down = nn.Linear(4 * d, d, bias=False)
            self.rotary = Rotary(d // heads)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.norm1(x)).split(d, -1)
            q, k, v = [y.view(b, t, self.heads, -1).transpose(1, 2) for y in (q, k, v)]
            a = nn.functional.scaled_dot_product_attention(
                self.rotary(q), self.rotary(k), v, is_causal=True)
            x = x + self.out(a.transpose(1, 2).reshape(b, t, d))
            y = self.norm2(x)
            return x + self.down(nn.functional.silu(self.gate(y)) * self.up(y))

    class GPT2Block(nn.Module):
        """Explicit masked attention and tanh GELU, as GPT-2's code writes it."""

        def __init__(self, d=128, heads=4, context=64):
            super().__init__()
            self.heads = heads
            self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.register_buffer(
                "mask", torch.tril(torch.ones(context, context)).view(1, 1, context, context))

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, -1)
            q, k, v = [y.view(b, t, self.heads, -1).transpose(1, 2) for y in (q, k, v)]
            att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
            att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf")).softmax(-1)
            x = x + self.out((att @ v).transpose(1, 2).reshape(b, t, d))
            return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x)), approximate="tanh"))

    def language_model(block):
        return lambda: nn.Sequential(nn.Embedding(1000, 128), block(), block(),
                                     nn.Linear(128, 1000))

    return {"llama_block": language_model(LlamaBlock),
            "gpt2_block": language_model(GPT2Block)}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out, only = sys.argv[1], set(sys.argv[2:])
    warnings.filterwarnings("ignore")
    import torch
    import torchvision
    import onnx

    m = torchvision.models
    vision = {
        "convnext_tiny": m.convnext_tiny, "vit_b_16": m.vit_b_16, "swin_t": m.swin_t,
        "maxvit_t": m.maxvit_t, "mobilenet_v3_small": m.mobilenet_v3_small,
        "regnet_y_400mf": m.regnet_y_400mf, "shufflenet_v2_x1_0": m.shufflenet_v2_x1_0,
        "efficientnet_v2_s": m.efficientnet_v2_s, "mnasnet0_5": m.mnasnet0_5,
        "googlenet": lambda: m.googlenet(aux_logits=False, init_weights=False),
        "resnext50_32x4d": m.resnext50_32x4d, "densenet121": m.densenet121,
        "deeplabv3_mobilenet": lambda: m.segmentation.deeplabv3_mobilenet_v3_large(
            weights=None, weights_backbone=None),
    }
    models = {name: (ctor, (torch.randn(1, 3, 224, 224),)) for name, ctor in vision.items()}
    for name, ctor in lm_blocks(torch).items():
        models[name] = (ctor, (torch.randint(0, 1000, (2, 64)),))
    supported = supported_ops()
    os.makedirs(out, exist_ok=True)
    for name, (ctor, args) in models.items():
        if only and name not in only:
            continue
        path = os.path.join(out, f"{name}.onnx")
        try:
            torch.onnx.export(ctor().eval(), args, path, dynamo=True, external_data=True)
        except Exception as e:  # an export failure is a survey result too
            print(f"{name}: export failed: {type(e).__name__}: {str(e)[:200]}")
            continue
        model = onnx.load(path, load_external_data=False)
        ops = collections.Counter(node.op_type for node in model.graph.node)
        missing = {op: n for op, n in sorted(ops.items()) if op not in supported}
        opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
        print(f"{name}: opset {opset}, {len(model.graph.node)} nodes, "
              f"not modelled: {missing or 'none'}")


if __name__ == "__main__":
    main()
