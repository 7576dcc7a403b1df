#!/usr/bin/env bash
# gpu_check.sh - runs a model on the GPU and checks it against the CPU run.
#
# Usage: scripts/gpu_check.sh [model.onnx|model.mlir] [batch]
#        (default: examples/small_cnn.onnx at batch 1)
# Needs a CUDA GPU, its driver and the CUDA toolkit (ptxas); see docs/gpu.md.
#
# Steps: build vram-opt and libvram_cuda_runtime; import the model; wrap its
# @main in a harness that fills every input with the same deterministic
# values and prints every output; run the harness lowered for the CPU
# (vram-lower-to-cpu, the pipeline vram-run uses) and for the GPU
# (vram-lower-to-gpu) under mlir-runner; compare the outputs; print the
# runtime's measured peak device bytes and cuMemGetInfo against the arena.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
model=${1:-$root/examples/small_cnn.onnx}
batch=${2:-1}
build=${BUILD_DIR:-$root/build-gpu-check}
llvm=/usr/lib/llvm-22
export PATH=/usr/local/cuda/bin:$PATH
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake -G Ninja -S "$root" -B "$build" -DMLIR_DIR=$llvm/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT=$llvm/bin/lit -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build" vram-opt vram_cuda_runtime >/dev/null
opt=$build/bin/vram-opt

case "$model" in
  *.onnx | *.onnxtext) "$opt" "$model" --batch="$batch" -o "$work/model.mlir" ;;
  *) cp "$model" "$work/model.mlir" ;;
esac

# The harness: @main becomes @model; a new @main makes the inputs (value of
# element i: ((i * 7919) mod 1009) / 1009 - 0.5, exact in f32 on both
# sides) and prints the outputs.
python3 - "$work/model.mlir" "$work/harness.mlir" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
match = re.search(r"func\.func @main\((.*?)\)\s*->\s*\(?(.*?)\)?\s*(attributes|\{)",
                  text, re.S)
if not match:
    sys.exit("gpu_check: no @main with results in the model")
tensor = r"tensor<([0-9x]+)x(f32)>"
args = re.findall(tensor, match.group(1))
results = re.findall(tensor, match.group(2))
if len(args) != len(re.findall(r"%arg\d+\s*:", match.group(1))) or not results:
    sys.exit("gpu_check: every input and output must be a static f32 tensor")
text = text.replace("func.func @main(", "func.func @model(", 1)
body = []
for n, (shape, _) in enumerate(args):
    dims = [int(d) for d in shape.split("x")]
    ty = f"tensor<{shape}xf32>"
    rank = len(dims)
    ids = ", ".join(f"d{i}" for i in range(rank))
    iterators = ", ".join(['"parallel"'] * rank)
    lines = [f"  %e{n} = tensor.empty() : {ty}",
             f"  %a{n} = linalg.generic {{indexing_maps = [affine_map<({ids}) -> ({ids})>], "
             f"iterator_types = [{iterators}]}} outs(%e{n} : {ty}) {{",
             f"  ^bb0(%out{n}: f32):"]
    lines.append(f"    %lin{n}_0 = linalg.index 0 : index")
    for i in range(1, rank):
        lines += [f"    %idx{n}_{i} = linalg.index {i} : index",
                  f"    %dim{n}_{i} = arith.constant {dims[i]} : index",
                  f"    %mul{n}_{i} = arith.muli %lin{n}_{i-1}, %dim{n}_{i} : index",
                  f"    %lin{n}_{i} = arith.addi %mul{n}_{i}, %idx{n}_{i} : index"]
    last = f"%lin{n}_{rank-1}"
    lines += [f"    %i{n} = arith.index_cast {last} : index to i64",
              f"    %k{n} = arith.constant 7919 : i64",
              f"    %m{n} = arith.constant 1009 : i64",
              f"    %p{n} = arith.muli %i{n}, %k{n} : i64",
              f"    %r{n} = arith.remui %p{n}, %m{n} : i64",
              f"    %f{n} = arith.uitofp %r{n} : i64 to f32",
              f"    %s{n} = arith.constant 9.9108027e-04 : f32",
              f"    %h{n} = arith.constant 0.5 : f32",
              f"    %x{n} = arith.mulf %f{n}, %s{n} : f32",
              f"    %v{n} = arith.subf %x{n}, %h{n} : f32",
              f"    linalg.yield %v{n} : f32",
              f"  }} -> {ty}"]
    body += lines
arg_values = ", ".join(f"%a{n}" for n in range(len(args)))
arg_types = ", ".join(f"tensor<{s}xf32>" for s, _ in args)
res_types = ", ".join(f"tensor<{s}xf32>" for s, _ in results)
res_values = ", ".join(f"%out_{k}" for k in range(len(results)))
body.append(f"  {res_values} = func.call @model({arg_values}) : ({arg_types}) -> ({res_types})")
for k, (shape, _) in enumerate(results):
    body += [f"  %b{k} = bufferization.to_buffer %out_{k} : tensor<{shape}xf32> to memref<{shape}xf32>",
             f"  %u{k} = memref.cast %b{k} : memref<{shape}xf32> to memref<*xf32>",
             f"  func.call @printMemrefF32(%u{k}) : (memref<*xf32>) -> ()"]
harness = ("  func.func private @printMemrefF32(memref<*xf32>)\n"
           "  func.func @main() {\n" + "\n".join(body) + "\n    return\n  }\n")
end = text.rstrip().rfind("}")
open(sys.argv[2], "w").write(text[:end] + harness + "}\n")
PY

runner_libs=$llvm/lib/libmlir_runner_utils.so,$llvm/lib/libmlir_c_runner_utils.so
"$opt" "$work/harness.mlir" --vram-lower-to-cpu -o "$work/cpu.mlir"
$llvm/bin/mlir-runner "$work/cpu.mlir" -e main -entry-point-result=void \
  --shared-libs=$runner_libs >"$work/cpu.out"
"$opt" "$work/harness.mlir" --vram-lower-to-gpu="format=fatbin" \
  --mlir-print-ir-after=vram-static-arena -o "$work/gpu.mlir" \
  2>"$work/gpu.arena"
VRAM_RUNTIME_REPORT=1 $llvm/bin/mlir-runner "$work/gpu.mlir" -e main \
  -entry-point-result=void \
  --shared-libs=$build/lib/libvram_cuda_runtime.so,$runner_libs \
  >"$work/gpu.out" 2>"$work/gpu.err" || { cat "$work/gpu.err"; exit 1; }

python3 - "$work/cpu.out" "$work/gpu.out" <<'PY'
import re, sys
def values(path):
    text = open(path).read()
    return [float(v) for v in re.findall(r"[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|nan|inf)",
            re.sub(r"Unranked Memref[^\n]*\n", "", text))]
cpu, gpu = values(sys.argv[1]), values(sys.argv[2])
if len(cpu) != len(gpu) or not cpu:
    sys.exit(f"gpu_check: FAIL: {len(cpu)} CPU values, {len(gpu)} GPU values")
worst = max(abs(c - g) / max(1.0, abs(c)) for c, g in zip(cpu, gpu))
print(f"gpu_check: {len(cpu)} output values, max relative difference {worst:.3e}")
sys.exit(0 if worst <= 1e-3 else "gpu_check: FAIL: GPU and CPU results differ")
PY
grep "vram_cuda_runtime:" "$work/gpu.err"
# The arenas vram-static-arena made (one per function with buffers to place).
arenas=$(grep -oE "memref.alloc\(\) \{alignment = [0-9]+ : i64\} : memref<[0-9]+xi8>" \
  "$work/gpu.arena" | grep -oE "<[0-9]+" | tr -d '<' | paste -sd' ' || true)
echo "gpu_check: arena bytes (vram-static-arena): ${arenas:-none}"
echo "gpu_check: PASS"
