#!/usr/bin/env python3
"""Export the "model kit": current PyTorch 2.x ONNX exports, weights stripped.

The fixtures in test/models/ (scripts/export_models.py) come from Debian's
torch 1.13 at opset 13. What users bring today comes from torch 2.x, through
two different exporters, so this script exports a set of common models with
both of them and keeps the graphs (not the weights) in the repository:

    python3 scripts/export_kit.py                      # everything (~15-25 min on 2 cores)
    python3 scripts/export_kit.py --only gpt2_small    # some models; other manifest entries are kept
    python3 scripts/export_kit.py --exporters ts14,ts20
    python3 scripts/export_kit.py --readme-only        # re-render README.md from manifest.json

Use the `python3` that has PyPI torch 2.x, torchvision, onnx, onnxruntime and
onnxscript (not Debian's /usr/bin/python3, whose torch 1.13 has no dynamo
exporter). Only the CPU is used.

Models (torchvision code with random, seeded weights made to look trained by
trained_looking(), plus two transformers defined below in plain torch):
  resnet50_eval, resnet50_train, mobilenet_v2_eval, mobilenet_v2_train,
  efficientnet_b0_eval, efficientnet_b0_train, densenet121_eval, vgg16_eval
      input  `input`  float32[1,3,224,224], output `logits` float32[1,1000]
  gpt2_small       GPT-2-small-like decoder, TIED lm_head (as GPT-2),
      input  `input_ids` int64[1,512], output `logits` float32[1,512,50257]
  bert_base        BERT-base-like encoder (no pooler, no MLM head),
      input  `input_ids` int64[8,128], output `last_hidden_state` float32[8,128,768]
"*_train" models are exported in training mode (model.train(); for TorchScript
also training=TrainingMode.TRAINING and do_constant_folding=False), so
BatchNormalization and Dropout stay in the graph. Batch sizes are static (torch's
default: no dynamic_axes / dynamic_shapes).

Exporters, one output file each, written to test/models/kit/:
  <model>.ts14.onnx    torch.onnx.export(..., dynamo=False, opset_version=14)
  <model>.ts20.onnx    same at opset 20, the TorchScript exporter's maximum
                       (torch.onnx._constants.ONNX_TORCHSCRIPT_EXPORTER_MAX_OPSET)
  <model>.dynamo.onnx  torch.onnx.export(..., dynamo=True) at its default opset
An exporter that raises is recorded in manifest.json ("failures") and skipped.

Weights: every initializer whose data is >= 1024 bytes is turned into external
data (location "<file stem>.weights.bin", offsets/lengths as if all of them were
written back to back into that file) and its bytes are dropped; the .bin file is
never written. Smaller initializers stay inline. Tensors inside Constant nodes
(and any other tensor-valued attribute) are left untouched and reported in the
manifest ("large_constants", with whether they feed a shape input).
Load these models with onnx.load(path, load_external_data=False); the onnx
checker and onnxruntime refuse them because the weights file does not exist.

Before stripping, every export is checked with onnx.checker and run once in
onnxruntime (CPU) on the export's own seeded dummy inputs; only the output
shapes are recorded.

Outputs:
  test/models/kit/<model>.<exporter>.onnx
  test/models/kit/manifest.json   per file: exporter, opsets, IR version, size,
                                  sha256, op histogram, inputs/outputs, ORT
                                  output shapes, initializer/constant stats
  test/models/kit/README.md       the same, rendered for people (generated; do
                                  not edit by hand)
Everything is seeded; rerunning must reproduce the TorchScript exports byte for
byte (the manifest records sha256 so a rerun is easy to compare).
"""

import argparse
import collections
import contextlib
import gc
import hashlib
import io
import json
import math
import os
import sys
import time
import traceback
import warnings

import onnx
import onnx.checker
import onnx.numpy_helper
import onnxruntime as ort
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KIT = os.path.join(REPO, "test", "models", "kit")
SEED = 0
STRIP_THRESHOLD = 1024  # bytes of tensor data
TS_OPSETS = (14, 20)

warnings.filterwarnings("ignore")


# --------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------


def trained_looking(model):
    """Make the random init look trained (seeded, call after torch.manual_seed).

    Default init leaves many tensors constant (BN gamma=1, beta=0, mean=0,
    var=1; LayerNorm 1/0; VGG's and the classifiers' zero biases). Equal
    tensors of equal shape are deduplicated by both exporters and routed
    through Identity nodes (TorchScript) or shared, which no trained model
    would show (see scripts/export_models.py). So: BN gets distinct
    statistics as in export_models.py, and every other floating-point
    parameter that is constant gets small noise added.
    """
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)
                m.running_mean.normal_(0.0, 0.1)
                m.running_var.uniform_(0.5, 1.5)
        for _, p in sorted(model.named_parameters()):
            if p.is_floating_point() and p.numel() > 1 and bool((p == p.flatten()[0]).all()):
                p.add_(torch.randn_like(p) * 0.02)
    return model


class GPT2Block(nn.Module):
    def __init__(self, d, heads, mlp, n_ctx):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(d, eps=1e-5)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d, eps=1e-5)
        self.c_fc = nn.Linear(d, mlp)
        self.mlp_proj = nn.Linear(mlp, d)
        self.act = nn.GELU(approximate="tanh")  # GPT-2's "gelu_new"
        self.drop = nn.Dropout(0.1)
        # HF GPT-2 style: a bool lower-triangular buffer of the full context, sliced to T.
        self.register_buffer(
            "causal", torch.tril(torch.ones(n_ctx, n_ctx, dtype=torch.bool)).view(1, 1, n_ctx, n_ctx), persistent=False
        )

    def attn(self, x):
        B, T, C = x.shape
        hd = C // self.heads
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.heads, hd).transpose(1, 2)
        k = k.view(B, T, self.heads, hd).transpose(1, 2)
        v = v.view(B, T, self.heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(~self.causal[:, :, :T, :T], torch.finfo(att.dtype).min)
        att = self.drop(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.drop(self.c_proj(y))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.drop(self.mlp_proj(self.act(self.c_fc(self.ln_2(x)))))


class GPT2Small(nn.Module):
    """GPT-2 small: 12 layers, d 768, 12 heads, MLP 3072 (tanh GELU), pre-LN,
    learned positions (n_ctx 1024, as GPT-2), vocab 50257, lm_head tied to wte
    (124,439,808 parameters, exactly GPT-2 small)."""

    def __init__(self, vocab=50257, n_ctx=1024, d=768, layers=12, heads=12, mlp=3072):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(n_ctx, d)
        self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList([GPT2Block(d, heads, mlp, n_ctx) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d, eps=1e-5)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied

    def forward(self, input_ids):
        T = input_ids.shape[1]
        pos = torch.arange(T, dtype=torch.long, device=input_ids.device).unsqueeze(0)
        x = self.drop(self.wte(input_ids) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class BertLayer(nn.Module):
    def __init__(self, d, heads, mlp):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(d, d)
        self.key = nn.Linear(d, d)
        self.value = nn.Linear(d, d)
        self.attn_out = nn.Linear(d, d)
        self.attn_ln = nn.LayerNorm(d, eps=1e-12)
        self.intermediate = nn.Linear(d, mlp)
        self.act = nn.GELU()  # exact (erf) GELU, as BERT
        self.output = nn.Linear(mlp, d)
        self.out_ln = nn.LayerNorm(d, eps=1e-12)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        B, T, C = x.shape
        hd = C // self.heads

        def split(t):
            return t.view(B, T, self.heads, hd).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        att = self.drop(F.softmax((q @ k.transpose(-2, -1)) / math.sqrt(hd), dim=-1))
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = self.attn_ln(x + self.drop(self.attn_out(y)))  # post-LN
        return self.out_ln(x + self.drop(self.output(self.act(self.intermediate(x)))))


class BertBase(nn.Module):
    """BERT-base encoder: word (30522) + learned position (512) + token-type (2,
    all type 0) embeddings, embedding LayerNorm, 12 post-LN layers, d 768,
    12 heads, MLP 3072 (erf GELU); no attention mask (no padding), no pooler,
    no MLM head: the output is the last hidden state."""

    def __init__(self, vocab=30522, max_pos=512, d=768, layers=12, heads=12, mlp=3072):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, d)
        self.position_embeddings = nn.Embedding(max_pos, d)
        self.token_type_embeddings = nn.Embedding(2, d)
        self.emb_ln = nn.LayerNorm(d, eps=1e-12)
        self.drop = nn.Dropout(0.1)
        self.layer = nn.ModuleList([BertLayer(d, heads, mlp) for _ in range(layers)])

    def forward(self, input_ids):
        T = input_ids.shape[1]
        pos = torch.arange(T, dtype=torch.long, device=input_ids.device).unsqueeze(0)
        types = torch.zeros_like(input_ids)
        x = self.word_embeddings(input_ids) + self.position_embeddings(pos) + self.token_type_embeddings(types)
        x = self.drop(self.emb_ln(x))
        for layer in self.layer:
            x = layer(x)
        return x


def image_input():
    return (torch.randn(1, 3, 224, 224),)


def torchvision_spec(name, arch, training):
    def build():
        torch.manual_seed(SEED)
        return trained_looking(getattr(torchvision.models, arch)(weights=None))

    return dict(
        name=name,
        build=build,
        inputs=image_input,
        training=training,
        input_names=["input"],
        output_names=["logits"],
        description=f"torchvision `{arch}(weights=None)`, "
        + ("`model.train()`: training-mode export" if training else "`model.eval()`"),
    )


SPECS = [
    torchvision_spec("resnet50_eval", "resnet50", False),
    torchvision_spec("resnet50_train", "resnet50", True),
    torchvision_spec("mobilenet_v2_eval", "mobilenet_v2", False),
    torchvision_spec("mobilenet_v2_train", "mobilenet_v2", True),
    torchvision_spec("efficientnet_b0_eval", "efficientnet_b0", False),
    torchvision_spec("efficientnet_b0_train", "efficientnet_b0", True),
    torchvision_spec("densenet121_eval", "densenet121", False),
    torchvision_spec("vgg16_eval", "vgg16", False),
    dict(
        name="gpt2_small",
        build=lambda: (torch.manual_seed(SEED), trained_looking(GPT2Small()))[1],
        inputs=lambda: (torch.randint(0, 50257, (1, 512), dtype=torch.int64),),
        training=False,
        input_names=["input_ids"],
        output_names=["logits"],
        description="GPT-2-small-like decoder defined in this script (`GPT2Small`): 12 pre-LN layers, "
        "d_model 768, 12 heads, MLP 3072 with tanh GELU, learned positions (n_ctx 1024), causal mask "
        "(bool tril buffer + masked_fill), vocab 50257, **lm_head tied to wte**; `model.eval()`, "
        "batch 1, seq 512",
    ),
    dict(
        name="bert_base",
        build=lambda: (torch.manual_seed(SEED), trained_looking(BertBase()))[1],
        inputs=lambda: (torch.randint(0, 30522, (8, 128), dtype=torch.int64),),
        training=False,
        input_names=["input_ids"],
        output_names=["last_hidden_state"],
        description="BERT-base-like encoder defined in this script (`BertBase`): word/position/token-type "
        "embeddings + LayerNorm, 12 post-LN layers, d 768, 12 heads, MLP 3072 with erf GELU, no attention "
        "mask, **output = last hidden state** (no pooler, no MLM head); `model.eval()`, batch 8, seq 128",
    ),
]


# --------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------


@contextlib.contextmanager
def quiet():
    """Swallow the exporters' progress chatter (stdout and stderr, Python level)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        yield out, err


def export_torchscript(model, args, spec, opset):
    buf = io.BytesIO()
    training = spec["training"]
    torch.onnx.export(
        model,
        args,
        buf,
        dynamo=False,
        opset_version=opset,
        input_names=spec["input_names"],
        output_names=spec["output_names"],
        training=torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL,
        do_constant_folding=not training,
    )
    return onnx.load_from_string(buf.getvalue())


def export_dynamo(model, args, spec):
    # The dynamo exporter has no `training` argument: it traces the module in
    # whatever mode it is in (model.train() for the *_train specs).
    prog = torch.onnx.export(
        model,
        args,
        dynamo=True,
        input_names=spec["input_names"],
        output_names=spec["output_names"],
        verbose=False,
    )
    return prog.model_proto


EXPORTERS = {
    "ts14": ("torchscript", lambda m, a, s: export_torchscript(m, a, s, 14), 14),
    "ts20": ("torchscript", lambda m, a, s: export_torchscript(m, a, s, 20), 20),
    "dynamo": ("dynamo", export_dynamo, None),
}


# --------------------------------------------------------------------------
# Inspection and stripping
# --------------------------------------------------------------------------

DTYPE = {v: k.lower() for k, v in onnx.TensorProto.DataType.items()}

# (op_type, input index) pairs whose input is a shape / index list, not data.
SHAPE_INPUTS = {
    ("Reshape", 1), ("Expand", 1), ("Tile", 1), ("ConstantOfShape", 0), ("Range", 0), ("Range", 1),
    ("Range", 2), ("Squeeze", 1), ("Unsqueeze", 1), ("Pad", 1), ("Resize", 1), ("Resize", 2),
    ("Resize", 3), ("TopK", 1), ("ReduceMean", 1), ("ReduceSum", 1), ("ReduceMax", 1),
    ("ReduceMin", 1), ("ReduceProd", 1), ("ReduceL2", 1), ("Split", 1), ("OneHot", 1),
} | {("Slice", i) for i in (1, 2, 3, 4)}


def tensor_nbytes(t):
    n = math.prod(t.dims)
    if t.data_type == onnx.TensorProto.STRING:
        return sum(len(s) for s in t.string_data)
    return n * onnx.helper.tensor_dtype_to_np_dtype(t.data_type).itemsize


def shape_of(vi):
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tt.shape.dim]


def io_desc(vis):
    return [{"name": v.name, "dtype": DTYPE.get(v.type.tensor_type.elem_type, "?"), "shape": shape_of(v)} for v in vis]


def all_graphs(graph):
    yield graph
    for n in graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from all_graphs(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for g in a.graphs:
                    yield from all_graphs(g)


def op_key(node):
    return node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}"


def inspect_model(model):
    """Facts about a (stripped or not) ModelProto that do not depend on tensor values."""
    graphs = list(all_graphs(model.graph))
    hist = collections.Counter(op_key(n) for g in graphs for n in g.node)
    consumers = collections.defaultdict(list)
    for g in graphs:
        for n in g.node:
            for i, name in enumerate(n.input):
                if name:
                    consumers[name].append((n.op_type, i))
    large_constants = []
    for g in graphs:
        for n in g.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.TENSOR:
                    t = a.t
                elif n.op_type == "Constant" and a.type in (onnx.AttributeProto.FLOATS, onnx.AttributeProto.INTS):
                    t = onnx.helper.make_tensor("", onnx.TensorProto.FLOAT if a.floats else onnx.TensorProto.INT64,
                                                [len(a.floats) or len(a.ints)], list(a.floats or a.ints))
                else:
                    continue
                nbytes = tensor_nbytes(t)
                if nbytes < STRIP_THRESHOLD:
                    continue
                outs = [o for o in n.output if o]
                cons = sorted({f"{op}[{i}]" for o in outs for op, i in consumers[o]})
                large_constants.append(
                    {
                        "node": n.name,
                        "op": op_key(n),
                        "attribute": a.name,
                        "dtype": DTYPE[t.data_type],
                        "shape": list(t.dims),
                        "bytes": nbytes,
                        "consumers": cons,
                        "feeds_shape_input": any((op, i) in SHAPE_INPUTS for o in outs for op, i in consumers[o]),
                    }
                )
    inits = [t for g in graphs for t in g.initializer]
    external = [t for t in inits if t.data_location == onnx.TensorProto.EXTERNAL]
    dim_params = set()
    for g in graphs:
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            for d in (shape_of(vi) or []):
                if isinstance(d, str):
                    dim_params.add(d)
    no_shape = sum(1 for g in graphs for vi in g.value_info if shape_of(vi) is None)
    # How training-relevant ops were emitted: BatchNormalization outputs and
    # training_mode attribute, Dropout with/without a training_mode input.
    training_ops = {}
    for g in graphs:
        for n in g.node:
            if n.op_type == "BatchNormalization":
                tm = next((a.i for a in n.attribute if a.name == "training_mode"), 0)
                key = f"BatchNormalization outputs={len(n.output)} training_mode={tm}"
            elif n.op_type == "Dropout":
                key = f"Dropout training_mode input={'yes' if len(n.input) > 2 and n.input[2] else 'no'}"
            else:
                continue
            training_ops[key] = training_ops.get(key, 0) + 1
    return {
        "ir_version": model.ir_version,
        "opset_imports": {(o.domain or "ai.onnx"): o.version for o in model.opset_import},
        "producer": f"{model.producer_name} {model.producer_version}".strip(),
        "nodes": sum(hist.values()),
        "op_histogram": dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))),
        "inputs": io_desc(model.graph.input),
        "outputs": io_desc(model.graph.output),
        "initializers": {
            "count": len(inits),
            "external": len(external),
            "inline": len(inits) - len(external),
            "elements": sum(math.prod(t.dims) for t in inits),
            "external_bytes": sum(tensor_nbytes(t) for t in external),
            "dtypes": dict(collections.Counter(DTYPE[t.data_type] for t in inits)),
        },
        "large_constants": large_constants,
        "training_ops": dict(sorted(training_ops.items())),
        "nodes_with_metadata_props": sum(1 for g in graphs for n in g.node if len(n.metadata_props)),
        "value_info": sum(len(g.value_info) for g in graphs),
        "value_info_without_shape": no_shape,
        "dim_params": sorted(dim_params),
        "functions": [f"{f.domain}::{f.name}" for f in model.functions],
        "subgraphs": len(graphs) - 1,
    }


def strip_weights(model, location):
    """Turn every initializer with >= STRIP_THRESHOLD bytes into external data
    that points at `location` and drop its bytes. Offsets are laid out as
    onnx.external_data_helper would write them (back to back, one file); the
    file itself is never written."""
    offset = 0
    for g in all_graphs(model.graph):
        for t in g.initializer:
            if t.data_location == onnx.TensorProto.EXTERNAL or tensor_nbytes(t) < STRIP_THRESHOLD:
                continue
            raw = t.raw_data if t.HasField("raw_data") else onnx.numpy_helper.to_array(t).tobytes()
            length = len(raw)
            for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
                t.ClearField(field)
            del t.external_data[:]
            t.data_location = onnx.TensorProto.EXTERNAL
            for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
                e = t.external_data.add()
                e.key, e.value = k, v
            offset += length
    return model


def ort_output_shapes(model, args):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    feeds = {i.name: a.numpy() for i, a in zip(sess.get_inputs(), args)}
    outs = sess.run(None, feeds)
    return {o.name: list(v.shape) for o, v in zip(sess.get_outputs(), outs)}


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def first_line(exc):
    msg = f"{type(exc).__name__}: {exc}".strip()
    lines = [l for l in msg.splitlines() if l.strip()]
    return "\n".join(lines[:6])[:1500]


def run_one(spec, exp_key, model, args, counts):
    exporter, fn, opset = EXPORTERS[exp_key]
    fname = f"{spec['name']}.{exp_key}.onnx"
    path = os.path.join(KIT, fname)
    t0 = time.time()
    torch.manual_seed(SEED)  # dynamo may run the model; dropout/stochastic depth draw from here
    try:
        with quiet():
            proto = fn(model, args, spec)
    except Exception as e:  # noqa: BLE001 - record and move on
        print(f"  {fname}: EXPORT FAILED after {time.time() - t0:.0f}s: {first_line(e)}", flush=True)
        traceback.print_exc(limit=3, file=sys.stdout)
        if os.path.exists(path):
            os.remove(path)
        return None, {"model": spec["name"], "exporter": exp_key, "error": first_line(e)}
    t_export = time.time() - t0
    entry = {
        "file": fname,
        "model": spec["name"],
        "exporter": exporter,
        "exporter_key": exp_key,
        "requested_opset": opset,
        "training_mode": spec["training"],
    }
    if exporter == "torchscript":
        entry["export_call"] = (
            f"torch.onnx.export(model, args, f, dynamo=False, opset_version={opset}, "
            f"input_names={spec['input_names']}, output_names={spec['output_names']}, "
            + ("training=TrainingMode.TRAINING, do_constant_folding=False)" if spec["training"]
               else "training=TrainingMode.EVAL, do_constant_folding=True)")
        )
    else:
        entry["export_call"] = (
            f"torch.onnx.export(model, args, dynamo=True, input_names={spec['input_names']}, "
            f"output_names={spec['output_names']}).model_proto"
        )
    try:
        onnx.checker.check_model(proto)
        entry["checker"] = "ok"
    except Exception as e:  # noqa: BLE001
        entry["checker"] = first_line(e)
    try:
        entry["ort_output_shapes"] = ort_output_shapes(proto, args)
    except Exception as e:  # noqa: BLE001
        entry["ort_output_shapes"] = None
        entry["ort_error"] = first_line(e)
    strip_weights(proto, fname[: -len(".onnx")] + ".weights.bin")
    onnx.save_model(proto, path)
    entry.update(inspect_model(proto))
    entry["size_bytes"] = os.path.getsize(path)
    entry["sha256"] = sha256(path)
    entry["model_parameters"] = counts["parameters"]
    entry["model_buffers"] = counts["buffers"]
    del proto
    gc.collect()
    print(
        f"  {fname}: {entry['size_bytes']:,} B, IR {entry['ir_version']}, opsets {entry['opset_imports']}, "
        f"{entry['nodes']} nodes, ort {entry['ort_output_shapes'] or entry.get('ort_error')}, "
        f"export {t_export:.0f}s",
        flush=True,
    )
    return entry, None


def environment():
    return {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "onnx": onnx.__version__,
        "onnxruntime": ort.__version__,
        "onnxscript": __import__("onnxscript").__version__,
        "torchscript_max_opset": getattr(torch.onnx._constants, "ONNX_TORCHSCRIPT_EXPORTER_MAX_OPSET", None),
    }


def load_manifest():
    path = os.path.join(KIT, "manifest.json")
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {"files": [], "failures": [], "models": {}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", help="model names (default: all)")
    ap.add_argument("--exporters", default="ts14,ts20,dynamo", help="comma list of ts14,ts20,dynamo")
    ap.add_argument("--readme-only", action="store_true")
    opts = ap.parse_args()

    os.makedirs(KIT, exist_ok=True)
    manifest = load_manifest()
    if opts.readme_only:
        write_readme(manifest)
        return 0

    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)
    env = environment()
    print(env, flush=True)
    exps = [e for e in opts.exporters.split(",") if e]
    names = set(opts.only or [s["name"] for s in SPECS])
    unknown = names - {s["name"] for s in SPECS}
    if unknown:
        ap.error(f"unknown models: {sorted(unknown)}")

    files = {e["file"]: e for e in manifest["files"]}
    failures = {(f["model"], f["exporter"]): f for f in manifest["failures"]}
    for spec in SPECS:
        if spec["name"] not in names:
            continue
        print(f"{spec['name']}:", flush=True)
        model = spec["build"]()
        model.train(spec["training"])
        torch.manual_seed(SEED + 1)
        args = spec["inputs"]()
        counts = {
            "parameters": sum(p.numel() for p in model.parameters()),
            "buffers": sum(b.numel() for b in model.buffers()),
        }
        manifest["models"][spec["name"]] = {
            "description": spec["description"],
            "inputs": [{"name": n, "dtype": str(a.dtype).replace("torch.", ""), "shape": list(a.shape)}
                       for n, a in zip(spec["input_names"], args)],
            "training_mode": spec["training"],
            **counts,
        }
        for exp_key in exps:
            fname = f"{spec['name']}.{exp_key}.onnx"
            entry, failure = run_one(spec, exp_key, model, args, counts)
            files.pop(fname, None)
            failures.pop((spec["name"], exp_key), None)
            if entry:
                files[fname] = entry
            else:
                failures[(spec["name"], exp_key)] = failure
        del model
        gc.collect()

    order = {s["name"]: i for i, s in enumerate(SPECS)}
    ekey = {k: i for i, k in enumerate(EXPORTERS)}
    manifest["environment"] = env
    manifest["strip_threshold_bytes"] = STRIP_THRESHOLD
    manifest["models"] = dict(sorted(manifest["models"].items(), key=lambda kv: order.get(kv[0], 99)))
    manifest["files"] = sorted(files.values(), key=lambda e: (order.get(e["model"], 99), ekey[e["exporter_key"]]))
    manifest["failures"] = sorted(failures.values(), key=lambda f: (order.get(f["model"], 99), ekey[f["exporter"]]))
    with open(os.path.join(KIT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=False)
        f.write("\n")
    write_readme(manifest)
    total = sum(e["size_bytes"] for e in manifest["files"])
    print(f"{len(manifest['files'])} files, {total:,} bytes; {len(manifest['failures'])} failures")
    return 0


# --------------------------------------------------------------------------
# README
# --------------------------------------------------------------------------


def fmt_shape(s):
    return "?" if s is None else "[" + ",".join(str(d) for d in s) + "]"


def fmt_io(ios):
    return ", ".join(f"`{i['name']}` {i['dtype']}{fmt_shape(i['shape'])}" for i in ios)


def fmt_size(n):
    return f"{n / 1024:.1f} KiB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.2f} MiB"


def write_findings(w, manifest):
    """What an importer has to expect from these exports. The numbers come from
    the manifest; the explanations were checked against torch 2.15 /
    onnxscript 0.7 (re-check them after an upgrade)."""
    files = {e["file"]: e for e in manifest["files"]}
    models = manifest["models"]

    def get(name, key):
        return files.get(name, {}).get(key)

    w("## Things to know (checked with the versions above)")
    w("")
    # 1. training mode under the two exporters
    rows = []
    for name in models:
        if not models[name]["training_mode"]:
            continue
        cells = []
        for k in EXPORTERS:
            e = files.get(f"{name}.{k}.onnx")
            if e is None:
                cells.append(f"{k}: failed")
                continue
            tr = e["training_ops"]
            bn = sum(v for t, v in tr.items() if t.startswith("BatchNormalization") and "training_mode=1" in t)
            rnd = e["op_histogram"].get("RandomUniformLike", 0)
            drop = e["op_histogram"].get("Dropout", 0)
            cells.append(f"{k}: {bn} training BN, {drop} Dropout, {rnd} RandomUniformLike")
        rows.append(f"`{name}` ({'; '.join(cells)})")
    if rows:
        w("- **The dynamo exporter drops BatchNorm's training mode.** onnxscript's torchlib translation of")
        w("  `aten::_native_batch_norm_legit_functional` forces `training = False` (a workaround noted in its source:")
        w("  onnxruntime only ran training-mode BatchNormalization below opset 14), so a `model.train()` export")
        w("  gets inference BatchNormalization, which the default optimizer (`optimize=True`) then folds into the")
        w("  preceding Conv: the `*_train.dynamo.onnx` graphs have no BatchNormalization and no running-stat")
        w("  initializers, i.e. they are eval graphs for BN purposes, while dropout stays stochastic (a `Dropout` with")
        w("  a `training_mode` input, or `RandomUniformLike`/`Less`/`Cast`/`Div`/`Mul` for `native_dropout` and")
        w("  torchvision's StochasticDepth). The TorchScript training exports keep BatchNormalization with")
        w("  `training_mode=1`, `momentum=0.9` and **3 outputs** (Y, running_mean, running_var; only Y is consumed,")
        w("  the other two are dangling). Per model: " + "; ".join(rows) + ".")
    # 2. big constants
    big = [e for e in files.values() if e["large_constants"]]
    if big:
        parts = []
        for e in big:
            lc = e["large_constants"]
            shapes = collections.Counter(f"{c['dtype']}{fmt_shape(c['shape'])}" for c in lc)
            parts.append(f"`{e['file']}`: {len(lc)} ({sum(c['bytes'] for c in lc):,} bytes: "
                         + ", ".join(f"{n} x {s}" for s, n in shapes.items()) + ")"
                         + (", some feed a shape input" if any(c["feeds_shape_input"] for c in lc) else ""))
        w("- **Large tensors inside `Constant` nodes** (kept, not stripped): only the TorchScript exporter makes")
        w("  them. It turns non-persistent buffers and trace-time constants into `Constant` nodes, already sliced")
        w("  and constant-folded: GPT-2's per-layer causal-mask buffers become 12 bool[1,1,512,512] Constants")
        w("  (inverted, one per layer), which is why the GPT-2 TorchScript files are ~3 MiB; `torch.arange` /")
        w("  `zeros_like` positions and token types become int64 Constants feeding `Gather`. None feeds a shape")
        w("  input. The dynamo exporter keeps buffers as initializers (GPT-2: 12 x bool[1,1,1024,1024], stripped)")
        w("  and slices / inverts them at run time (`Slice`, `Not`). Per file: " + "; ".join(parts) + ".")
    # 3. tied embedding
    ts = get("gpt2_small.ts20.onnx", "initializers")
    dy = get("gpt2_small.dynamo.onnx", "initializers")
    if ts and dy and "gpt2_small" in models:
        w(f"- **Tied GPT-2 head.** TorchScript constant-folds `Transpose(wte)` for the `lm_head` MatMul into a second")
        w(f"  initializer (`onnx::MatMul_*`, float[768,50257]): initializer elements {ts['elements']:,} vs "
          f"{models['gpt2_small']['parameters']:,} PyTorch parameters. Dynamo keeps one tensor (`lm_head.weight`)")
        w("  that feeds both the embedding `Gather` and a run-time `Transpose` -> `MatMul` (its initializer elements,")
        w(f"  {dy['elements']:,}, include the 12 causal-mask buffers, 12,582,912 bools).")
    # 4. dynamo file layout
    dyn = [e for e in files.values() if e["exporter"] == "dynamo"]
    ts_all = [e for e in files.values() if e["exporter"] == "torchscript"]
    if dyn:
        w(f"- **Dynamo files** are IR version {'/'.join(str(v) for v in sorted({e['ir_version'] for e in dyn}))}, opset "
          f"{'/'.join(str(v) for v in sorted({e['opset_imports'].get('ai.onnx') for e in dyn}))} (the exporter's default), "
          "carry `value_info` for every intermediate "
          "value (TorchScript files: none), and have `metadata_props` on nearly every node (namespace, fx node, "
          "class hierarchy, and a stack trace with absolute source paths of the exporting machine and line numbers "
          "in `export_kit.py`), about 3/4 of their bytes. Reruns are byte-identical, but editing the model code in")
        w("  `export_kit.py` or running from another checkout path changes the dynamo files. Reshape shapes and")
        w("  ReduceMean axes are small int64 **initializers** (shared by many nodes) where TorchScript uses")
        w("  `Constant` nodes; GlobalAveragePool becomes `ReduceMean`, Flatten becomes `Reshape`; eval-mode")
        w("  BatchNorm is folded into Conv (bias initializers named `<conv>.weight_bias`), as TorchScript's constant")
        w("  folding does (DenseNet's pre-activation BN cannot be folded by either).")
    if ts_all:
        irs = sorted({(e["opset_imports"].get("ai.onnx"), e["ir_version"]) for e in ts_all})
        w("- **TorchScript at opset 14 vs 20**: " + ", ".join(f"opset {o} -> IR version {i}" for o, i in irs)
          + ". The CNN graphs are identical apart from the opset, IR version and external-data file name;")
        w("  for the transformers opset 20 emits `LayerNormalization` (opset 17+) and `Gelu`")
        w("  (opset 20) where opset 14 spells out ReduceMean/Sub/Pow/Add/Sqrt/Div/Mul and the erf or tanh GELU.")
    domains = sorted({d for e in files.values() for d in e["opset_imports"] if d != "ai.onnx"})
    dims = sorted({d for e in files.values() for d in e["dim_params"]})
    fns = sorted({f for e in files.values() for f in e["functions"]})
    w(f"- Domains other than the default: {domains or 'none'}. Symbolic dims: {dims or 'none (all static)'}. "
      f"Local functions: {fns or 'none'}. Subgraphs: {sum(e['subgraphs'] for e in files.values()) or 'none'}.")
    fails = manifest["failures"]
    w(f"- Exporter failures: {len(fails) or 'none'}" + (" (listed above)." if fails else "."))
    w("")


def write_readme(manifest):
    env = manifest.get("environment", {})
    files = manifest["files"]
    total = sum(e["size_bytes"] for e in files)
    L = []
    w = L.append
    w("# Model kit: PyTorch 2.x ONNX exports, weights stripped")
    w("")
    w("**Generated by `scripts/export_kit.py` (do not edit by hand; `--readme-only` re-renders it from")
    w("`manifest.json`).** `llama7b.onnx` is the exception: it comes from `scripts/make_llama7b.py`, which")
    w("writes the last section of this file and the `llama7b` entry of `manifest.json`.")
    w("")
    w(f"Exported with torch {env.get('torch')}, torchvision {env.get('torchvision')}, onnx {env.get('onnx')}, "
      f"onnxscript {env.get('onnxscript')}; output shapes from onnxruntime {env.get('onnxruntime')} (CPU). "
      f"The TorchScript exporter's highest opset in this torch is {env.get('torchscript_max_opset')} "
      "(`torch.onnx._constants.ONNX_TORCHSCRIPT_EXPORTER_MAX_OPSET`).")
    w("")
    w("Each model is exported three ways: `*.ts14.onnx` / `*.ts20.onnx` = TorchScript exporter")
    w("(`torch.onnx.export(..., dynamo=False, opset_version=14/20)`), `*.dynamo.onnx` = dynamo exporter")
    w("(`torch.onnx.export(..., dynamo=True)`, its default opset and IR version, `optimize=True` default).")
    w("Batch dimensions are static (no `dynamic_axes` / `dynamic_shapes`). `*_train` models are exported from")
    w("`model.train()` (TorchScript: `training=TrainingMode.TRAINING, do_constant_folding=False`; dynamo has no")
    w("`training` argument and traces the module in train mode).")
    w("")
    w(f"**Weights are absent on purpose.** Every initializer with >= {manifest.get('strip_threshold_bytes', 1024)} bytes "
      "of data is external data pointing at `<file stem>.weights.bin` (offsets as if written back to back), a file")
    w("that is never written. Smaller initializers are inline. Tensors in `Constant` nodes are left as exported")
    w("(see *large constants*). Load with `onnx.load(path, load_external_data=False)`; `onnx.checker` and")
    w("onnxruntime reject the stripped files (missing weights file). Every export passed `onnx.checker` and ran in")
    w("onnxruntime before stripping, on seeded random inputs; the *ORT output shapes* below are from that run.")
    w("")
    w(f"{len(files)} exported files, {total:,} bytes in all ({fmt_size(total)}); plus `llama7b.onnx` (last section).")
    w("")
    w("## Summary")
    w("")
    w("| file | exporter | opset | IR | size | nodes | initializers (ext/inline) | value_info | ORT output shapes |")
    w("|---|---|---|---|---|---|---|---|---|")
    for e in files:
        op = e["opset_imports"].get("ai.onnx")
        others = ", ".join(f"{d} {v}" for d, v in e["opset_imports"].items() if d != "ai.onnx")
        ort_s = ("; ".join(f"`{k}` {fmt_shape(v)}" for k, v in e["ort_output_shapes"].items())
                 if e["ort_output_shapes"] else "ORT failed (see below)")
        w(f"| `{e['file']}` | {e['exporter']} | {op}{' (+' + others + ')' if others else ''} | {e['ir_version']} | "
          f"{fmt_size(e['size_bytes'])} | {e['nodes']} | {e['initializers']['count']} "
          f"({e['initializers']['external']}/{e['initializers']['inline']}) | {e['value_info']} | {ort_s} |")
    w("")
    if manifest["failures"]:
        w("## Exporter failures")
        w("")
        for f in manifest["failures"]:
            w(f"- `{f['model']}` with `{f['exporter']}`:")
            w("")
            w("  ```")
            for line in f["error"].splitlines():
                w("  " + line)
            w("  ```")
        w("")
    write_findings(w, manifest)
    w("## Op types per exporter (union over all files, node counts summed)")
    w("")
    by_exp = collections.defaultdict(collections.Counter)
    for e in files:
        by_exp[e["exporter_key"]].update(e["op_histogram"])
    for k, c in by_exp.items():
        w(f"- **{k}** ({len(c)} op types): " + ", ".join(f"{op} {n}" for op, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))))
    w("")
    w("## Models")
    w("")
    for name, m in manifest["models"].items():
        w(f"### `{name}`")
        w("")
        w(f"{m['description']}. Inputs: " + ", ".join(f"`{i['name']}` {i['dtype']}{fmt_shape(i['shape'])}" for i in m["inputs"])
          + f". PyTorch parameters: {m['parameters']:,} elements; buffers: {m['buffers']:,} elements.")
        w("")
        for e in [e for e in files if e["model"] == name]:
            ini = e["initializers"]
            w(f"#### `{e['file']}` ({fmt_size(e['size_bytes'])})")
            w("")
            w(f"- exporter: {e['exporter']} (`{e['export_call']}`), producer `{e['producer']}`")
            w(f"- opset imports: " + ", ".join(f"{d} {v}" for d, v in e["opset_imports"].items()) + f"; IR version {e['ir_version']}")
            w(f"- inputs: {fmt_io(e['inputs'])}")
            w(f"- outputs: {fmt_io(e['outputs'])}")
            if e["ort_output_shapes"]:
                w("- ORT output shapes (full weights, before stripping): "
                  + ", ".join(f"`{k}` {fmt_shape(v)}" for k, v in e["ort_output_shapes"].items()))
            else:
                w(f"- ORT failed before stripping: `{e.get('ort_error', '').splitlines()[0] if e.get('ort_error') else ''}`")
            w(f"- initializers: {ini['count']} ({ini['external']} external = {ini['external_bytes']:,} bytes, "
              f"{ini['inline']} inline), {ini['elements']:,} elements, dtypes {ini['dtypes']}")
            w(f"- value_info: {e['value_info']} entries" + (f" ({e['value_info_without_shape']} without shape)" if e["value_info_without_shape"] else "")
              + (f"; symbolic dims: {e['dim_params']}" if e["dim_params"] else "; no symbolic dims")
              + (f"; local functions: {e['functions']}" if e["functions"] else "")
              + (f"; subgraphs: {e['subgraphs']}" if e["subgraphs"] else ""))
            if e["training_ops"]:
                w("- training-relevant ops: " + ", ".join(f"{k}: {v}" for k, v in e["training_ops"].items()))
            if e["nodes_with_metadata_props"]:
                w(f"- {e['nodes_with_metadata_props']} nodes carry metadata_props (dynamo: namespace, fx node, "
                  "stack trace with absolute source paths)")
            if e["large_constants"]:
                lc = e["large_constants"]
                w(f"- large constants (tensor attributes >= {manifest.get('strip_threshold_bytes', 1024)} bytes, kept inline): "
                  f"{len(lc)}, {sum(c['bytes'] for c in lc):,} bytes; "
                  + "; ".join(f"`{c['node']}` {c['dtype']}{fmt_shape(c['shape'])} -> {', '.join(c['consumers'])}"
                              + (" (shape input)" if c["feeds_shape_input"] else "") for c in lc[:8])
                  + ("; ..." if len(lc) > 8 else ""))
            w(f"- nodes: {e['nodes']}: " + ", ".join(f"{op} {n}" for op, n in e["op_histogram"].items()))
            w(f"- sha256 `{e['sha256']}`")
            w("")
    path = os.path.join(KIT, "README.md")
    hand = ""
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
        marker = "<!-- BEGIN make_llama7b.py section"
        if marker in old:
            hand = old[old.index(marker):]
    with open(path, "w") as f:
        f.write("\n".join(L).rstrip("\n") + "\n")
        if hand:
            f.write("\n" + hand)


if __name__ == "__main__":
    sys.exit(main())
