#!/usr/bin/env python3
"""Writes test/Import/Inputs/exporter-constants.dynamo.onnx: a module whose
dynamo export (torch 2.x, optimize=True) carries every kind of initializer
the importer must tell apart by the exporter's metadata:

  w.weight   a Linear weight, which the optimizer folds into its transpose
             (a folded value whose source is a PARAMETER: trainable)
  scale      a root-level parameter (no dot in its name)
  mask       a registered buffer (InputSpec.kind BUFFER: not trainable)
  cos table  computed from arange in forward, folded to an initializer
             from no parameter (folded_from without a PARAMETER target)

  python3 scripts/make_exporter_constants.py   (PyPI torch, onnx, onnxscript)
"""
import os

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test",
                   "Import", "Inputs", "exporter-constants.dynamo.onnx")


class Block(torch.nn.Module):

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Linear(8, 8, bias=False)
        self.scale = torch.nn.Parameter(torch.ones(8))
        self.register_buffer("mask", torch.tril(torch.ones(4, 4)))

    def forward(self, x):  # x: [2, 4, 8]
        positions = torch.arange(4, dtype=torch.float32)
        table = torch.cos(positions[:, None] * torch.arange(8) / 8.0)
        h = self.w(x * self.scale + table)
        return self.mask @ h


def main():
    torch.manual_seed(0)
    program = torch.onnx.export(Block().eval(), (torch.randn(2, 4, 8),),
                                dynamo=True)
    program.save(OUT)
    print("wrote", OUT, "with torch", torch.__version__)


if __name__ == "__main__":
    main()
