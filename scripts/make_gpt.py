#!/usr/bin/env python3
"""Build a GPT-shaped decoder (GPT-2/GPT-3 architecture) from a config, as an
ONNX graph without weights.

    python3 scripts/make_gpt.py                  # gpt3_175b -> test/models/kit/gpt3_175b.onnx
    python3 scripts/make_gpt.py --config tiny --output /tmp/tiny.onnx

Needs only the `onnx` package (no torch); the graph is written with the
Builder of scripts/make_llama7b.py, so every initializer is external data in a
file that does not exist (vram-opt never reads weights).

The architecture is GPT-2's, which GPT-3 keeps (Brown et al. 2020, Table 2.1:
"175B": 96 layers, d_model 12288, 96 heads of 128, context 2048): learned
position embeddings, pre-LayerNorm blocks with biases, fused QKV projection,
GELU (tanh) MLP of 4 d, final LayerNorm, LM head tied to the token embedding
(MatMul with the transposed embedding). Dense attention in every layer (GPT-3
alternates dense and locally banded patterns; the band changes no shape).
Opset 20 (LayerNormalization, Gelu), IR version 10, weights float16, logits
float16 (mixed-precision training casts them to f32 for the loss).

Parameters per layer: 12 d^2 + 13 d; in all: layers (12 d^2 + 13 d) +
vocab d + context d + 2 d. The script asserts the count and runs onnx's
checker and strict shape inference.
"""

import argparse
import math
import os
import sys
import tempfile

import onnx
import onnx.checker
import onnx.helper as oh
import onnx.shape_inference
from onnx import TensorProto

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_llama7b import Builder, Cfg, F16_MIN  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KIT = os.path.join(REPO, "test", "models", "kit")
OPSET = 20
IR_VERSION = 10
WDTYPE = TensorProto.FLOAT16
LN_EPS = 1e-5

CONFIGS = {
    # GPT-3 175B (Brown et al. 2020, Table 2.1), GPT-2's vocabulary.
    "gpt3_175b": dict(vocab=50257, d=12288, layers=96, heads=96, ffn=4 * 12288, seq=2048, batch=1),
    "tiny": dict(vocab=101, d=64, layers=2, heads=4, ffn=256, seq=16, batch=1),
}


def parameter_count(c):
    return c.layers * (12 * c.d * c.d + 13 * c.d) + c.vocab * c.d + c.seq * c.d + 2 * c.d


def layer_norm(b, x, scope, prefix):
    w = b.weight(f"{prefix}.weight", [b.c.d])
    bias = b.weight(f"{prefix}.bias", [b.c.d])
    return b.node("LayerNormalization", [x, w, bias], scope, axis=-1, epsilon=LN_EPS)


def linear(b, x, prefix, scope, n_in, n_out):
    y = b.node("MatMul", [x, b.weight(f"{prefix}.weight", [n_in, n_out])], scope)
    return b.node("Add", [y, b.weight(f"{prefix}.bias", [n_out])], scope)


def block(b, x, i, mask):
    c = b.c
    p, s = f"h.{i}", f"/h.{i}"
    h = layer_norm(b, x, f"{s}/ln_1", f"{p}.ln_1")
    a = f"{s}/attn"
    qkv = linear(b, h, f"{p}.attn.c_attn", f"{a}/c_attn", c.d, 3 * c.d)
    q, k, v = b.node("Split", [qkv, b.const(a, [c.d] * 3, TensorProto.INT64)], a, n_out=3, axis=-1)
    heads = b.const(a, [c.batch, c.seq, c.heads, c.head_dim], TensorProto.INT64)

    def split_heads(t, perm):
        return b.node("Transpose", [b.node("Reshape", [t, heads], a)], a, perm=perm)

    q, kt, v = split_heads(q, [0, 2, 1, 3]), split_heads(k, [0, 2, 3, 1]), split_heads(v, [0, 2, 1, 3])
    scores = b.node("MatMul", [q, kt], a)
    scores = b.node("Div", [scores, b.const(a, [math.sqrt(c.head_dim)], WDTYPE, [])], a)
    probs = b.node("Softmax", [b.node("Add", [scores, mask], a)], a, axis=-1)
    ctx = b.node("Transpose", [b.node("MatMul", [probs, v], a)], a, perm=[0, 2, 1, 3])
    ctx = b.node("Reshape", [ctx, b.const(a, [c.batch, c.seq, c.d], TensorProto.INT64)], a)
    x = b.node("Add", [x, linear(b, ctx, f"{p}.attn.c_proj", f"{a}/c_proj", c.d, c.d)], s)
    h = layer_norm(b, x, f"{s}/ln_2", f"{p}.ln_2")
    m = f"{s}/mlp"
    up = b.node("Gelu", [linear(b, h, f"{p}.mlp.c_fc", f"{m}/c_fc", c.d, c.ffn)], m, approximate="tanh")
    return b.node("Add", [x, linear(b, up, f"{p}.mlp.c_proj", f"{m}/c_proj", c.ffn, c.d)], s)


def build(name):
    c = Cfg(**CONFIGS[name])
    b = Builder(c, weights=f"{name}.weights.bin", dtype=WDTYPE)
    wte = b.weight("wte.weight", [c.vocab, c.d])
    x = b.node("Add", [b.node("Gather", [wte, "input_ids"], "/wte"), b.weight("wpe.weight", [c.seq, c.d])], "/embed")
    s = "/causal_mask"
    full = b.node("ConstantOfShape", [b.const(s, [c.seq, c.seq], TensorProto.INT64)], s,
                  value=oh.make_tensor("value", WDTYPE, [1], [F16_MIN]))
    mask = b.node("Trilu", [full, b.const(s, [1], TensorProto.INT64, [])], s, upper=1)
    for i in range(c.layers):
        x = block(b, x, i, mask)
    x = layer_norm(b, x, "/ln_f", "ln_f")
    # The LM head is the token embedding (tied), transposed.
    head = b.node("Transpose", [wte], "/lm_head", perm=[1, 0])
    b.nodes.append(oh.make_node("MatMul", [x, head], ["logits"], name="/lm_head/MatMul"))
    graph = oh.make_graph(
        b.nodes, name,
        [oh.make_tensor_value_info("input_ids", TensorProto.INT64, [c.batch, c.seq])],
        [oh.make_tensor_value_info("logits", WDTYPE, [c.batch, c.seq, c.vocab])],
        initializer=b.inits)
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", OPSET)], ir_version=IR_VERSION,
                          producer_name="vram-opt scripts/make_gpt.py",
                          doc_string=f"{name}: GPT-shaped decoder {CONFIGS[name]}, no weights: every initializer "
                          f"is external data in {b.weights}, which does not exist.")
    return c, model, b.weights


def check(c, model, weights):
    params = sum(math.prod(t.dims) for t in model.graph.initializer)
    assert params == parameter_count(c), (params, parameter_count(c))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        onnx.save_model(model, path)
        with open(os.path.join(tmp, weights), "wb") as f:
            f.truncate(params * 4)  # sparse: the checker wants the file to exist
        onnx.checker.check_model(path, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    out = inferred.graph.output[0].type.tensor_type
    assert [d.dim_value for d in out.shape.dim] == [c.batch, c.seq, c.vocab]
    return params


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", choices=sorted(CONFIGS), default="gpt3_175b")
    parser.add_argument("--output", help="default: test/models/kit/<config>.onnx")
    parser.add_argument("--float32", action="store_true",
                        help="float32 weights and logits (tests that compare steps to f32 rounding)")
    args = parser.parse_args()
    if args.float32:
        global WDTYPE
        WDTYPE = TensorProto.FLOAT
    c, model, weights = build(args.config)
    params = check(c, model, weights)
    out = args.output or os.path.join(KIT, f"{args.config}.onnx")
    onnx.save_model(model, out)
    print(f"wrote {os.path.relpath(out, REPO)} ({os.path.getsize(out):,} bytes): {len(model.graph.node)} nodes, "
          f"{params:,} parameters ({args.config}: {CONFIGS[args.config]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
