#!/usr/bin/python3
"""Reference logits and training-step gradients of test/models/resnet18.onnx.

For test/Execution/resnet18.test (logits, batch 1) and
test/Training/resnet18-step.test (--train: loss and gradients, batch 2).

Independent of vram-opt: reads the ONNX graph with python3-onnx and evaluates
it node by node with PyTorch's functional ops in float64. The weights the
model does not ship (its external data file is absent on purpose) and the
input are generated exactly as vram-run generates them (docs/execution.md,
"Generated data"), so both sides see bit-identical float32 values:

  splitmix64, state = seed * 2^32 + stream (mod 2^64), stream = the argument
  index of @main (graph inputs first, then parameters in initializer order);
  element k is draw k+1 mapped to low + (high - low) * (z >> 11) * 2^-53,
  rounded to float32.
  ranges: data inputs [-1, 1]; trainable parameters of rank >= 2
  +-sqrt(3 / fan_in), fan_in = elements / leading dim; rank <= 1 [-1, 1];
  state (running statistics) [0.5, 1.5].

Writes the 1000 logits (batch 1) as a TensorProto named
"logits seed=<seed>". With --train, the training step of
`vram-train{loss=cross-entropy optimizer=none frozen=...}` instead: the loss
-sum(t log softmax(logits)) / N against the generated labels (the step's
last data argument, stream = 1 + number of initializers, range [-1, 1]) and
the gradient of every parameter not in --frozen, by torch.autograd in
float64, written as output_0.pb (loss), output_1.pb, ... in argument order
into --output-dir. Run with Debian's /usr/bin/python3 (python3-onnx,
python3-torch, python3-numpy).
"""

import argparse
import math
import os

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn.functional as F

GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def splitmix64_uniform(count, seed, stream, low, high):
    """The first `count` values of vram-run's generator, as float64."""
    with np.errstate(over="ignore"):
        start = np.uint64(((seed << 32) + stream) % 2**64)
        steps = np.arange(1, count + 1, dtype=np.uint64)
        z = start + steps * GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    unit = (z >> np.uint64(11)).astype(np.float64) * 2.0**-53
    return low + (high - low) * unit


def parameter_range(dims, kind):
    if kind == "state":
        return 0.5, 1.5
    if len(dims) < 2 or dims[0] == 0:
        return -1.0, 1.0
    fan_in = max(int(np.prod(dims[1:])), 1)
    bound = math.sqrt(3.0 / fan_in)
    return -bound, bound


def generate(dims, seed, stream, low, high):
    count = int(np.prod(dims)) if dims else 1
    values = splitmix64_uniform(count, seed, stream, low, high)
    return values.astype(np.float32).reshape(dims)


def has_inline_data(init):
    return init.data_location != onnx.TensorProto.EXTERNAL


def build_values(model, seed, batch):
    """Graph inputs and initializers as float64 torch tensors."""
    graph = model.graph
    initializer_names = {init.name for init in graph.initializer}
    # BatchNormalization running statistics are "state"; ResNet-18 (BN
    # folded) has none, but the rule is the importer's.
    statistics = {n.input[i] for n in graph.node
                  if n.op_type == "BatchNormalization" for i in (3, 4)
                  if len(n.input) > i}
    values = {}
    index = 0
    for graph_input in graph.input:
        if graph_input.name in initializer_names:
            continue  # IR < 4 would list it here; ResNet-18 does not.
        dims = [d.dim_value if d.HasField("dim_value") else batch
                for d in graph_input.type.tensor_type.shape.dim]
        values[graph_input.name] = generate(dims, seed, index, -1.0, 1.0)
        index += 1
    for init in graph.initializer:
        dims = list(init.dims)
        if has_inline_data(init):
            values[init.name] = onnx.numpy_helper.to_array(init)
        else:
            kind = "state" if init.name in statistics else "trainable"
            low, high = parameter_range(dims, kind)
            values[init.name] = generate(dims, seed, index, low, high)
        index += 1
    return {k: torch.from_numpy(np.asarray(v, dtype=np.float64))
            for k, v in values.items()}


def attributes(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def symmetric_padding(pads):
    half = len(pads) // 2
    if list(pads[:half]) != list(pads[half:]):
        raise SystemExit("asymmetric padding is not needed for ResNet-18")
    return list(pads[:half])


def evaluate(model, values):
    for node in model.graph.node:
        a = attributes(node)
        x = [values[name] for name in node.input if name]
        if node.op_type == "Conv":
            y = F.conv2d(x[0], x[1], x[2] if len(x) > 2 else None,
                         stride=a.get("strides", [1, 1]),
                         padding=symmetric_padding(a.get("pads", [0] * 4)),
                         dilation=a.get("dilations", [1, 1]),
                         groups=a.get("group", 1))
        elif node.op_type == "Relu":
            y = torch.relu(x[0])
        elif node.op_type == "MaxPool":
            y = F.max_pool2d(x[0], a["kernel_shape"],
                             stride=a.get("strides", [1, 1]),
                             padding=symmetric_padding(a.get("pads", [0] * 4)),
                             ceil_mode=bool(a.get("ceil_mode", 0)))
        elif node.op_type == "Add":
            y = x[0] + x[1]
        elif node.op_type == "GlobalAveragePool":
            y = x[0].mean(dim=(2, 3), keepdim=True)
        elif node.op_type == "Flatten":
            axis = a.get("axis", 1)
            y = x[0].reshape(int(np.prod(x[0].shape[:axis])), -1)
        elif node.op_type == "Gemm":
            lhs = x[0].T if a.get("transA", 0) else x[0]
            rhs = x[1].T if a.get("transB", 0) else x[1]
            y = a.get("alpha", 1.0) * lhs @ rhs
            if len(x) > 2:
                y = y + a.get("beta", 1.0) * x[2]
        else:
            raise SystemExit(f"op {node.op_type} is not in ResNet-18")
        values[node.output[0]] = y
    return [values[output.name] for output in model.graph.output]


def write_tensor(path, array, name):
    tensor = onnx.numpy_helper.from_array(array.astype(np.float32), name=name)
    with open(path, "wb") as f:
        f.write(tensor.SerializeToString())


def training_step(model, values, seed, frozen, output_dir):
    """Loss and gradients of the non-frozen parameters, as vram-train builds
    them (cross-entropy with soft labels, optimizer=none)."""
    initializers = [init.name for init in model.graph.initializer]
    trainable = [name for name in initializers if name not in frozen]
    for name in trainable:
        values[name].requires_grad_(True)
    (logits,) = evaluate(model, dict(values))
    labels = torch.from_numpy(generate(list(logits.shape), seed,
                                       1 + len(initializers), -1.0, 1.0)
                              .astype(np.float64))
    loss = -(labels * torch.log_softmax(logits, dim=1)).sum() / logits.shape[0]
    gradients = torch.autograd.grad(loss, [values[n] for n in trainable])
    os.makedirs(output_dir, exist_ok=True)
    write_tensor(os.path.join(output_dir, "output_0.pb"),
                 loss.detach().numpy(), "loss")
    for index, (name, grad) in enumerate(zip(trainable, gradients), start=1):
        write_tensor(os.path.join(output_dir, f"output_{index}.pb"),
                     grad.numpy(), name + ".grad")
    print(f"{output_dir}: loss {loss.item():.9g}, {len(trainable)} gradients, "
          f"largest |grad| {max(g.abs().max().item() for g in gradients):.6g}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="test/models/resnet18.onnx")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default="test/models/resnet18_reference.pb")
    parser.add_argument("--train", action="store_true",
                        help="write the training step's loss and gradients")
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--frozen", default="",
                        help="comma-separated parameters without gradient")
    parser.add_argument("--output-dir",
                        default="test/models/resnet18_step_reference")
    args = parser.parse_args()

    model = onnx.load(args.model, load_external_data=False)
    if args.train:
        values = build_values(model, args.seed, batch=args.batch or 2)
        frozen = set(filter(None, args.frozen.split(",")))
        training_step(model, values, args.seed, frozen, args.output_dir)
        return
    values = build_values(model, args.seed, batch=args.batch or 1)
    (logits,) = evaluate(model, values)
    logits = logits.numpy().astype(np.float32)
    tensor = onnx.numpy_helper.from_array(logits, name=f"logits seed={args.seed}")
    with open(args.output, "wb") as f:
        f.write(tensor.SerializeToString())
    print(f"{args.output}: logits {list(logits.shape)}, "
          f"min {logits.min():.6g}, max {logits.max():.6g}, "
          f"argmax {int(logits.argmax())}")


if __name__ == "__main__":
    main()
