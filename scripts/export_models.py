#!/usr/bin/python3
"""Regenerate the reference ONNX fixtures used by vram-opt's tests and README demo.

Run with Debian's interpreter (it has python3-torch 1.13, python3-torchvision 0.14
and python3-onnx 1.12 from apt):

    /usr/bin/python3 scripts/export_models.py

Outputs (paths relative to the repository root):
  test/models/resnet18.onnx         torchvision resnet18, eval export, weights stripped
  test/models/resnet50_train.onnx   torchvision resnet50, training export (BN kept), weights stripped
  examples/small_cnn.onnx           tiny CNN for 3x32x32 inputs, weights inline
  examples/tiny_mlp.onnxtext        hand-written ONNX text-format 2-layer MLP

The ResNets are exported from real framework code so the fixtures have exactly
the node/initializer naming and attribute conventions of torch.onnx, but their
weights are deliberately not shipped: vram-opt only needs shapes and dtypes,
and the ~45 MB / ~100 MB of random floats would bloat the repository.
"""

import collections
import copy
import io
import os
import sys
import tempfile
import warnings

import onnx
import onnx.checker
import onnx.external_data_helper
import onnx.parser
import onnx.shape_inference
import torch
import torch.nn as nn
import torchvision

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPSET = 13
SEED = 0

# Training-mode export drops the in-place `num_batches_tracked += 1` update of
# every BatchNorm and warns once per layer; that buffer is irrelevant to the
# fixtures, so keep the output readable.
warnings.filterwarnings("ignore", message="ONNX Preprocess - Removing mutation")


def randomize_batchnorm(model):
    """Give every BatchNorm distinct, trained-looking statistics.

    Freshly initialised BN layers all have gamma=1, beta=0, mean=0, var=1, so
    after Conv+BN folding every fused bias of a given width is the same zero
    vector; torch.onnx then deduplicates those initializers and routes them
    through Identity nodes, which no real trained model would contain.
    """
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)
                m.running_mean.normal_(0.0, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    return model


def export(model, dummy, training):
    """torch.onnx.export to an in-memory ModelProto with the fixtures' common settings."""
    buf = io.BytesIO()
    torch.onnx.export(
        model,
        dummy,
        buf,
        input_names=["input"],
        output_names=["logits"],
        dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
        opset_version=OPSET,
        training=torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL,
        # Constant folding is what fuses BatchNorm into Conv in eval exports;
        # the training fixture must keep BN as separate nodes.
        do_constant_folding=not training,
    )
    return onnx.load_from_string(buf.getvalue())


def strip_weights(model, location):
    """Move every initializer >= 1 KiB to an external file and then drop that file.

    write_external_data_tensors() both writes the raw bytes to <dir>/<location>
    and clears raw_data from the protos; writing into a throw-away directory
    leaves a graph that references a weights file which intentionally does not
    exist next to the .onnx.
    """
    onnx.external_data_helper.convert_model_to_external_data(
        model, all_tensors_to_one_file=True, location=location, size_threshold=1024
    )
    with tempfile.TemporaryDirectory() as tmp:
        onnx.external_data_helper.write_external_data_tensors(model, tmp)
    return model


def save(model, relpath):
    path = os.path.join(REPO, relpath)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.save_model(model, path)
    print(f"wrote {relpath} ({os.path.getsize(path):,} bytes)")
    return path


def op_histogram(model):
    return collections.Counter(n.op_type for n in model.graph.node)


def output_shape_at_batch1(model):
    """Output shape as computed by ONNX shape inference, not as declared by the exporter."""
    m = copy.deepcopy(model)
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 1  # also clears dim_param
    del m.graph.value_info[:]
    for out in m.graph.output:
        out.type.tensor_type.ClearField("shape")
    m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    return {
        o.name: [d.dim_value if d.HasField("dim_value") else d.dim_param for d in o.type.tensor_type.shape.dim]
        for o in m.graph.output
    }


def report(name, model):
    print(f"  {name}: {len(model.graph.node)} nodes, {len(model.graph.initializer)} initializers")
    for op, n in sorted(op_histogram(model).items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"    {op:20s} {n}")
    print(f"    shape-inferred output at batch 1: {output_shape_at_batch1(model)}")


def export_resnet(arch, relpath, training):
    torch.manual_seed(SEED)
    model = randomize_batchnorm(getattr(torchvision.models, arch)(weights=None))
    model.train(training)
    dummy = torch.randn(1, 3, 224, 224)
    proto = export(model, dummy, training)
    onnx.checker.check_model(proto)
    strip_weights(proto, os.path.splitext(os.path.basename(relpath))[0] + ".weights.bin")
    # No checker run after stripping: onnx.checker insists that external data
    # files exist, and the weights file is absent on purpose. The graph itself
    # was checked above and stripping only rewrites initializer storage.
    path = save(proto, relpath)
    assert os.path.getsize(path) < 512 * 1024, "weights were not stripped"
    assert not os.path.exists(os.path.join(os.path.dirname(path), os.path.basename(relpath)[:-5] + ".weights.bin"))
    return model, proto


def resnet18():
    _, proto = export_resnet("resnet18", "test/models/resnet18.onnx", training=False)
    report("resnet18", proto)


def resnet50_train():
    model, proto = export_resnet("resnet50", "test/models/resnet50_train.onnx", training=True)
    bns = [n for n in proto.graph.node if n.op_type == "BatchNormalization"]
    assert len(bns) == 53, len(bns)
    # Opset 13 resolves to BatchNormalization-9, whose training form has five
    # outputs (Y, running_mean, running_var, saved_mean, saved_var); only Y is
    # consumed, the other four are dangling values.
    n_out = collections.Counter(len(n.output) for n in bns)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    running = sum(b.numel() for n, b in model.named_buffers() if n.endswith(("running_mean", "running_var")))
    assert trainable == 25_557_032, trainable
    assert running == 53_120, running
    report("resnet50_train", proto)
    print(f"    BatchNormalization nodes: {len(bns)} (outputs per node: {dict(n_out)})")
    print(f"    trainable parameters: {trainable:,}")
    print(f"    BN running-stat elements (mean+var): {running:,}")


class SmallCNN(nn.Module):
    """Two Conv-BN-ReLU-MaxPool stages and a linear head, for 3x32x32 inputs."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(32),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)  # exported as GlobalAveragePool
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


def small_cnn():
    torch.manual_seed(SEED)
    model = randomize_batchnorm(SmallCNN()).eval()
    proto = export(model, torch.randn(1, 3, 32, 32), training=False)
    onnx.checker.check_model(proto)
    save(proto, "examples/small_cnn.onnx")
    report("small_cnn", proto)


# ONNX text format (onnx.parser, python3-onnx 1.12). The 1.12 parser only
# accepts initializers with explicit values ("<float[784,256] W1 = {...}>") and
# the checker rejects value-less tensors, so the weights are declared as graph
# inputs after X instead; their shapes are all a memory planner needs.
# onnx.printer does not exist in 1.12, hence the hand-written text.
TINY_MLP = """\
<
  ir_version: 8,
  opset_import: ["" : 13],
  producer_name: "vram-opt scripts/export_models.py",
  doc_string: "2-layer MLP 784-256-10. W1, b1, W2, b2 are graph inputs (not initializers) because the onnx 1.12 text format cannot declare an initializer without its values."
>
tiny_mlp (float[batch,784] X, float[784,256] W1, float[256] b1, float[256,10] W2, float[10] b2) => (float[batch,10] Y)
{
  H0 = MatMul(X, W1)
  H1 = Add(H0, b1)
  H = Relu(H1)
  Y0 = MatMul(H, W2)
  Y = Add(Y0, b2)
}
"""


def tiny_mlp():
    model = onnx.parser.parse_model(TINY_MLP)
    onnx.checker.check_model(model, full_check=True)
    path = os.path.join(REPO, "examples/tiny_mlp.onnxtext")
    with open(path, "w") as f:
        f.write(TINY_MLP)
    print(f"wrote examples/tiny_mlp.onnxtext ({os.path.getsize(path):,} bytes)")
    report("tiny_mlp", model)


def main():
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, onnx {onnx.__version__}")
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)  # exports are cheap; one thread removes any scheduling nondeterminism
    resnet18()
    resnet50_train()
    small_cnn()
    tiny_mlp()
    return 0


if __name__ == "__main__":
    sys.exit(main())
