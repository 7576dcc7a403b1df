"""Sums the activations saved for backward per transformer layer of a
vram-opt JSON report (tensors named after their ONNX node, `/h.<i>/...`)
and prints one line per layer: `layer <i>: <bytes> saved bytes in <n>
tensors`, then each tensor of the layer given with --list."""
import argparse
import collections
import json
import re
import sys

parser = argparse.ArgumentParser()
parser.add_argument("report")
parser.add_argument("--list", type=int, default=-1)
args = parser.parse_args()
with open(args.report) as f:
    report = json.load(f)
layers = collections.defaultdict(list)
for tensor in report["tensors"]:
    match = re.match(r"/h\.(\d+)/", tensor["name"])
    if tensor["category"] == "saved_activation" and match:
        layers[int(match.group(1))].append(tensor)
for layer in sorted(layers):
    tensors = layers[layer]
    print(f"layer {layer}: {sum(t['bytes'] for t in tensors)} saved bytes in {len(tensors)} tensors")
    if layer == args.list:
        for t in tensors:
            print(f"  {t['name']} {t['type']} {t['bytes']}")
