// Loop nests split among threads (vram-parallelize-linalg-ops): both ops
// here have 64 x 2048 = 131,072 iterations, over the 65,536 below which a
// nest stays serial, and are split along their rows, each thread getting a
// contiguous range of them. Four threads on any machine, so that chunks
// really run apart; linalg.index inside a chunk must count from the
// chunk's first row, and each row's reduction stays on one thread.
// RUN: env OMP_NUM_THREADS=4 vram-run %s --print | FileCheck %s
// RUN: vram-opt %s --emit=llvm | FileCheck %s --check-prefix=LOWERED

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @main() -> tensor<64xf32> {
  // values[i, j] = i + j mod 3
  %empty = tensor.empty() : tensor<64x2048xf32>
  %values = linalg.generic {indexing_maps = [#id],
                            iterator_types = ["parallel", "parallel"]}
      outs(%empty : tensor<64x2048xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %c3 = arith.constant 3 : index
    %r = arith.remui %j, %c3 : index
    %s = arith.addi %i, %r : index
    %n = arith.index_cast %s : index to i64
    %f = arith.sitofp %n : i64 to f32
    linalg.yield %f : f32
  } -> tensor<64x2048xf32>
  %zero = arith.constant 0.0 : f32
  %sums_empty = tensor.empty() : tensor<64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%sums_empty : tensor<64xf32>)
      -> tensor<64xf32>
  %sums = linalg.generic {indexing_maps = [#id, #row],
                          iterator_types = ["parallel", "reduction"]}
      ins(%values : tensor<64x2048xf32>) outs(%acc : tensor<64xf32>) {
  ^bb0(%in: f32, %a: f32):
    %t = arith.addf %in, %a : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  return %sums : tensor<64xf32>
}

// Row i sums 2048 i and j mod 3 over j < 2048: 682 x (0 + 1 + 2) for
// j < 2046, then 0 + 1: 2048 i + 2047, exact in f32.
// CHECK:      output 0 'result0': tensor<64xf32>
// CHECK-NEXT: {{^}}[2047, 4095, 6143, 8191,
// CHECK-SAME: 126975, 129023, 131071]

// The LLVM dialect keeps the OpenMP ops (the JIT's translation to LLVM IR
// makes them libomp calls): one work-sharing loop per op, over its rows.
// LOWERED-COUNT-2: omp.loop_nest (%{{.*}}) : i64 = (%{{.*}}) to (%{{.*}}) step (%{{.*}})
// LOWERED-NOT: omp.loop_nest
