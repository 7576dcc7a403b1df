#!/usr/bin/env python3
"""Wraps a model's @main in a harness for scripts/gpu_check.sh.

Usage: harness.py MODEL.mlir HARNESS.mlir [--repeat N] [--gpu] [--print-limit N]

@main becomes @model. The new @main (returns i32 0, so it can be a
program's C main) makes every input with the same deterministic values on
both targets, calls @model once and prints what it returned, then calls it
--repeat more times and prints the mean seconds per call. Printing and the
clock are harness_support.c's; it prints, line by line:
  result K / values N / N values       (a result of at most --print-limit
                                         elements)
  result K / checksum SUM SUMSQ         (a larger one; f64 sums)
  seconds-per-call S
  device-bytes-before B / device-bytes-peak P   (--gpu: the CUDA runtime's
      counters before the first call and at its peak during that call)
Input element i (row-major) of an f32 input is u * gain + shift, where
u = ((i * 7919) mod 1009) / 1009 - 0.5 and gain and shift depend on the
shape (input_range); of an i64 input, (i * 7919) mod 10 (labels, tokens).
"""
import argparse
import math
import re
import sys



def parse_tensor(text):
    """(dims, element type, whether in host memory) of a static tensor type,
    or of a planned step's host argument or result (!vram.host<tensor<..>>)."""
    match = re.fullmatch(r"(!vram\.host<)?tensor<((?:\d+x)*)(f32|i64)>(?(1)>)", text.strip())
    if not match:
        return None
    dims = [int(d) for d in match.group(2).split("x") if d]
    return dims, match.group(3), match.group(1) is not None


def value_type(dims, elem, host):
    return f"!vram.host<{tensor_type(dims, elem)}>" if host else tensor_type(dims, elem)


def split_top_level(text):
    """Splits a signature list at the commas outside <>, (), {} and quotes."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "<({[":
            depth += 1
        elif not quoted and ch in ">)}]":
            depth -= 1
        elif not quoted and depth == 0 and ch == ",":
            parts.append(text[start:i])
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:])
    return parts


def strip_attrs(entry):
    return re.sub(r"\{.*\}", "", entry, flags=re.S).strip()


class Emitter:
    def __init__(self):
        self.lines, self.count = [], 0

    def fresh(self, stem):
        self.count += 1
        return f"%{stem}{self.count}"

    def emit(self, line):
        self.lines.append("    " + line)

    def const(self, value, ty):
        name = self.fresh("c")
        self.emit(f"{name} = arith.constant {value} : {ty}")
        return name


def tensor_type(dims, elem):
    return "tensor<" + "".join(f"{d}x" for d in dims) + elem + ">"


def input_range(dims):
    """(gain, shift) for an f32 input: values u in [-0.5, 0.5) become
    u * gain + shift. Weights (rank >= 2) get He-uniform variance for their
    fan-in, 2 / fan_in, so activations neither vanish nor overflow through
    deep networks; vectors (biases, norm scales, running variances) lie in
    [0.5, 1.5), positive like a variance must be; scalars stay as they are."""
    if len(dims) >= 2:
        fan_in = 1
        for d in dims[1:]:
            fan_in *= d
        return math.sqrt(24.0 / fan_in), 0.0
    return 1.0, (1.0 if len(dims) == 1 else 0.0)


def make_input(e, dims, elem):
    """A tensor whose element i (row-major) is the documented pattern."""
    ty = tensor_type(dims, elem)
    rank = len(dims)
    ids = ", ".join(f"d{i}" for i in range(rank))
    iterators = ", ".join(['"parallel"'] * rank)
    empty = e.fresh("empty")
    e.emit(f"{empty} = tensor.empty() : {ty}")
    value = e.fresh("input")
    e.emit(f"{value} = linalg.generic {{indexing_maps = [affine_map<({ids}) -> ({ids})>], "
           f"iterator_types = [{iterators}]}} outs({empty} : {ty}) {{")
    e.emit(f"^bb0(%out: {elem}):")
    linear = e.const(0, "index")
    for i in range(rank):
        idx, dim, mul, add = (e.fresh(s) for s in ("idx", "dim", "mul", "lin"))
        e.emit(f"  {idx} = linalg.index {i} : index")
        e.emit(f"  {dim} = arith.constant {dims[i]} : index")
        e.emit(f"  {mul} = arith.muli {linear}, {dim} : index")
        e.emit(f"  {add} = arith.addi {mul}, {idx} : index")
        linear = add
    i64, mult, prod, rem = (e.fresh(s) for s in ("i", "k", "p", "r"))
    e.emit(f"  {i64} = arith.index_cast {linear} : index to i64")
    e.emit(f"  {mult} = arith.constant 7919 : i64")
    e.emit(f"  {prod} = arith.muli {i64}, {mult} : i64")
    if elem == "i64":
        modulus = e.fresh("m")
        e.emit(f"  {modulus} = arith.constant 10 : i64")
        e.emit(f"  {rem} = arith.remui {prod}, {modulus} : i64")
        e.emit(f"  linalg.yield {rem} : i64")
    else:
        gain, shift = input_range(dims)
        modulus, flt, scale, half, scaled, centred, factor, spread, offset, val = (
            e.fresh(s) for s in ("m", "f", "s", "h", "x", "c", "g", "w", "o", "v"))
        e.emit(f"  {modulus} = arith.constant 1009 : i64")
        e.emit(f"  {rem} = arith.remui {prod}, {modulus} : i64")
        e.emit(f"  {flt} = arith.uitofp {rem} : i64 to f32")
        e.emit(f"  {scale} = arith.constant 9.9108027e-04 : f32")
        e.emit(f"  {half} = arith.constant 0.5 : f32")
        e.emit(f"  {scaled} = arith.mulf {flt}, {scale} : f32")
        e.emit(f"  {centred} = arith.subf {scaled}, {half} : f32")
        e.emit(f"  {factor} = arith.constant {gain:.8e} : f32")
        e.emit(f"  {spread} = arith.mulf {centred}, {factor} : f32")
        e.emit(f"  {offset} = arith.constant {shift:.1f} : f32")
        e.emit(f"  {val} = arith.addf {spread}, {offset} : f32")
        e.emit(f"  linalg.yield {val} : f32")
    e.emit(f"}} -> {ty}")
    return value


def print_result(e, value, dims, elem, print_limit):
    ty = tensor_type(dims, elem)
    elements = 1
    for d in dims:
        elements *= d
    if elem != "f32":
        sys.exit(f"gpu_harness: results must be f32 tensors, got {ty}")
    if elements <= print_limit:
        buf, cast = e.fresh("buf"), e.fresh("unranked")
        e.emit(f"{buf} = bufferization.to_buffer {value} : {ty} to {memref_type(dims)}")
        e.emit(f"{cast} = memref.cast {buf} : {memref_type(dims)} to memref<*xf32>")
        e.emit(f"func.call @vramCheckPrintF32({cast}) : (memref<*xf32>) -> ()")
        return
    # Larger results: sum and sum of squares in a function of their own,
    # whose result the GPU pipeline copies back to the host like any other
    # (a scalar read in @main would read device memory).
    checksum = f"@checksum{len(HELPERS)}"
    HELPERS.append(checksum_function(checksum, dims, elements))
    sums, buf, cast = e.fresh("sums"), e.fresh("buf"), e.fresh("unranked")
    e.emit(f"{sums} = func.call {checksum}({value}) : ({ty}) -> tensor<2xf64>")
    e.emit(f"{buf} = bufferization.to_buffer {sums} : tensor<2xf64> to memref<2xf64>")
    e.emit(f"{cast} = memref.cast {buf} : memref<2xf64> to memref<*xf64>")
    e.emit(f"func.call @vramCheckPrintChecksum({cast}) : (memref<*xf64>) -> ()")


HELPERS = []


def checksum_function(name, dims, elements):
    ty = tensor_type(dims, "f32")
    reassociation = "[[" + ", ".join(str(i) for i in range(len(dims))) + "]]"
    return f"""func.func {name}(%value: {ty}) -> tensor<2xf64> {{
    %flat = tensor.collapse_shape %value {reassociation} : {ty} into tensor<{elements}xf32>
    %zero = arith.constant 0.0 : f64
    %init = tensor.from_elements %zero : tensor<f64>
    %sums:2 = linalg.generic {{indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>,
        affine_map<(d0) -> ()>], iterator_types = ["reduction"]}}
        ins(%flat : tensor<{elements}xf32>) outs(%init, %init : tensor<f64>, tensor<f64>) {{
    ^bb0(%x: f32, %s: f64, %q: f64):
      %wide = arith.extf %x : f32 to f64
      %square = arith.mulf %wide, %wide : f64
      %sum = arith.addf %s, %wide : f64
      %sumsq = arith.addf %q, %square : f64
      linalg.yield %sum, %sumsq : f64, f64
    }} -> (tensor<f64>, tensor<f64>)
    %sum = tensor.expand_shape %sums#0 [] output_shape [1] : tensor<f64> into tensor<1xf64>
    %sumsq = tensor.expand_shape %sums#1 [] output_shape [1] : tensor<f64> into tensor<1xf64>
    %both = tensor.concat dim(0) %sum, %sumsq : (tensor<1xf64>, tensor<1xf64>) -> tensor<2xf64>
    return %both : tensor<2xf64>
  }}"""


def memref_type(dims):
    return "memref<" + "".join(f"{d}x" for d in dims) + "f32>"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("harness")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--gpu", action="store_true")
    parser.add_argument("--print-limit", type=int, default=4096,
                        help="print results up to this many elements in full")
    args = parser.parse_args()

    text = open(args.model).read()
    match = re.search(r"func\.func @main\((.*?)\)\s*->\s*(.*?)\s*(?:attributes\s*\{[^\n]*\}\s*)?\{\n",
                      text, re.S)
    if not match:
        sys.exit("gpu_harness: no @main with results in the model")
    arg_entries = [strip_attrs(re.sub(r"^\s*%arg\d+\s*:", "", a))
                   for a in split_top_level(match.group(1))]
    results_text = match.group(2).strip()
    if results_text.startswith("("):
        results_text = results_text[1:-1]
    result_entries = [strip_attrs(r) for r in split_top_level(results_text)]
    inputs = [parse_tensor(a) for a in arg_entries]
    results = [parse_tensor(r) for r in result_entries]
    if None in inputs or None in results or not results:
        sys.exit("gpu_harness: every input must be a static f32 or i64 tensor and "
                 "every result a static f32 tensor")
    text = text.replace("func.func @main(", "func.func @model(", 1)

    e = Emitter()
    values = []
    for dims, elem, host in inputs:
        value = make_input(e, dims, elem)
        if host:
            # What the caller of a planned step does: its copy of the
            # argument lives in (pinned) host memory.
            offloaded = e.fresh("host")
            e.emit(f"{offloaded} = vram.offload {value} : {tensor_type(dims, elem)} -> "
                   f"{value_type(dims, elem, True)}")
            value = offloaded
        values.append(value)
    arg_types = ", ".join(value_type(*i) for i in inputs)
    res_types = ", ".join(value_type(*r) for r in results)
    call = f"func.call @model({', '.join(values)}) : ({arg_types}) -> ({res_types})"
    if args.gpu:
        e.emit("%bytes_before = func.call @vramRuntimeDeviceBytesInUse() : () -> i64")
        e.emit("func.call @vramRuntimeResetPeakDeviceBytes() : () -> ()")
    e.emit(f"%first:{len(results)} = {call}")
    if args.gpu:
        e.emit("%peak = func.call @vramRuntimePeakDeviceBytes() : () -> i64")
    for k, (dims, elem, host) in enumerate(results):
        index = e.const(k, "i64")
        e.emit(f"func.call @vramCheckBeginResult({index}) : (i64) -> ()")
        value = f"%first#{k}"
        if host:
            # Through a function: what it returns is copied to the caller's
            # (host) memory on the GPU, where @main could not read it.
            fetch = f"@from_host{len(HELPERS)}"
            HELPERS.append(
                f"func.func {fetch}(%value: {value_type(dims, elem, True)}) -> {tensor_type(dims, elem)} {{\n"
                f"    %device = vram.prefetch %value : {value_type(dims, elem, True)} -> {tensor_type(dims, elem)}\n"
                f"    return %device : {tensor_type(dims, elem)}\n  }}")
            value = e.fresh("device")
            e.emit(f"{value} = func.call {fetch}(%first#{k}) : ({value_type(dims, elem, True)}) -> "
                   f"{tensor_type(dims, elem)}")
        print_result(e, value, dims, elem, args.print_limit)
    e.emit("%start = func.call @vramCheckClock() : () -> f64")
    # Unrolled: the GPU pipeline wants every allocation that is not freed
    # (the results the calls return) in the entry block.
    for _ in range(args.repeat):
        e.emit(f"{e.fresh('again')}:{len(results)} = {call}")
    e.emit("%end = func.call @vramCheckClock() : () -> f64")
    e.emit("%elapsed = arith.subf %end, %start : f64")
    e.emit(f"%calls = arith.constant {max(args.repeat, 1)}.0 : f64")
    e.emit("%mean = arith.divf %elapsed, %calls : f64")
    e.emit("func.call @vramCheckPrintSeconds(%mean) : (f64) -> ()")
    if args.gpu:
        e.emit("func.call @vramCheckPrintDeviceBytes(%bytes_before, %peak) : (i64, i64) -> ()")
    e.emit("%zero = arith.constant 0 : i32")
    e.emit("return %zero : i32")

    declarations = [
        "func.func private @vramCheckPrintF32(memref<*xf32>)",
        "func.func private @vramCheckPrintChecksum(memref<*xf64>)",
        "func.func private @vramCheckBeginResult(i64)",
        "func.func private @vramCheckPrintSeconds(f64)",
        "func.func private @vramCheckClock() -> f64",
    ]
    if args.gpu:
        declarations += [
            "func.func private @vramRuntimeDeviceBytesInUse() -> i64",
            "func.func private @vramRuntimePeakDeviceBytes() -> i64",
            "func.func private @vramRuntimeResetPeakDeviceBytes()",
            "func.func private @vramCheckPrintDeviceBytes(i64, i64)",
        ]
    harness = "".join(f"  {d}\n" for d in declarations + HELPERS)
    harness += "  func.func @main() -> i32 {\n" + "\n".join(e.lines) + "\n  }\n"
    end = text.rstrip().rfind("}")
    open(args.harness, "w").write(text[:end] + harness + "}\n")


if __name__ == "__main__":
    main()
