//===- CollectivesAbi.h - the functions per-rank programs call --*- C++ -*-===//
//
// The collectives' entry points, as lib/Conversion/Collectives calls them
// (`llvm.emit_c_interface`: each buffer a pointer to an unranked memref,
// then the group: its size and stride, RankGroup in MpiWorld.h). Both
// runtimes (VramCollectives.cpp on MPI, VramCollectivesNccl.cpp on NCCL)
// define them with this macro, over their own templates allReduce<T>,
// allGather<T> and reduceScatter<T>; `suffix` names the element type
// as the pass does.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_RUNTIME_COLLECTIVESABI_H
#define VRAM_RUNTIME_COLLECTIVESABI_H

#include "MemRef.h"

#include <cstdint>

#define VRAM_DEFINE_COLLECTIVES(suffix, T)                                     \
  extern "C" void _mlir_ciface_vramCollectiveAllReduceAverage_##suffix(        \
      vram::runtime::UnrankedMemRef *buffer, int64_t size, int64_t stride) {   \
    allReduce<T>(buffer, {size, stride}, /*average=*/true);                    \
  }                                                                            \
  extern "C" void _mlir_ciface_vramCollectiveAllReduceSum_##suffix(            \
      vram::runtime::UnrankedMemRef *buffer, int64_t size, int64_t stride) {   \
    allReduce<T>(buffer, {size, stride}, /*average=*/false);                   \
  }                                                                            \
  extern "C" void _mlir_ciface_vramCollectiveAllGather_##suffix(               \
      vram::runtime::UnrankedMemRef *input,                                    \
      vram::runtime::UnrankedMemRef *output, int64_t size, int64_t stride) {   \
    allGather<T>(input, output, {size, stride});                               \
  }                                                                            \
  extern "C" void _mlir_ciface_vramCollectiveReduceScatterAverage_##suffix(    \
      vram::runtime::UnrankedMemRef *input,                                    \
      vram::runtime::UnrankedMemRef *output, int64_t size, int64_t stride) {   \
    reduceScatter<T>(input, output, {size, stride}, /*average=*/true);         \
  }                                                                            \
  extern "C" void _mlir_ciface_vramCollectiveReduceScatterSum_##suffix(        \
      vram::runtime::UnrankedMemRef *input,                                    \
      vram::runtime::UnrankedMemRef *output, int64_t size, int64_t stride) {   \
    reduceScatter<T>(input, output, {size, stride}, /*average=*/false);        \
  }

#endif // VRAM_RUNTIME_COLLECTIVESABI_H
