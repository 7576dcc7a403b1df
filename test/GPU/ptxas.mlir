// ptxas (CUDA 13) accepts the PTX for sm_90 and sm_80 (small_cnn and
// ResNet-18 at batch 1 too), and the pipeline makes
// a cubin and a fatbin itself when ptxas is on PATH.
// REQUIRES: ptxas
// RUN: vram-opt %S/lower-to-gpu.mlir --vram-lower-to-gpu="binary-file=%t.ptx" -o /dev/null
// RUN: %ptxas -arch=sm_90 %t.ptx -o %t.cubin
// RUN: vram-opt %S/lower-to-gpu.mlir --vram-lower-to-gpu="chip=sm_80 binary-file=%t80.ptx" -o /dev/null
// RUN: %ptxas -arch=sm_80 %t80.ptx -o %t80.cubin
// Whole models (test/GPU/models.test makes the same PTX):
// RUN: vram-opt %examples/small_cnn.onnx --batch=1 --vram-lower-to-gpu="binary-file=%t.cnn.ptx" -o /dev/null
// RUN: %ptxas -arch=sm_90 %t.cnn.ptx -o %t.cnn.cubin
// RUN: vram-opt %models/resnet18.onnx --batch=1 --vram-lower-to-gpu="binary-file=%t.r18.ptx" -o /dev/null
// RUN: %ptxas -arch=sm_90 %t.r18.ptx -o %t.r18.cubin
// RUN: env PATH=/usr/local/cuda/bin:%PATH% vram-opt %S/lower-to-gpu.mlir --vram-lower-to-gpu="format=bin" | FileCheck %s --check-prefix=BIN
// RUN: env PATH=/usr/local/cuda/bin:%PATH% vram-opt %S/lower-to-gpu.mlir --vram-lower-to-gpu="format=fatbin" | FileCheck %s --check-prefix=FATBIN

// A cubin is an ELF file; a fatbinary starts with the magic 0xBA55ED50
// (little-endian: 50 ED 55 BA, printed as "P\EDU\BA").
// BIN: gpu.binary @vram_kernels [#gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx80">, properties = {{.*}}, bin = "\7FELF
// FATBIN: gpu.binary @vram_kernels [#gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx80">, properties = {{.*}}, "P\EDU\BA
