//===- CollectiveBufferization.h - shard collectives to runtime calls -*- C++
//-*-===//
//
// One-shot bufferization of the `shard` collectives a per-rank program holds
// (vram-parallelize): each becomes a call of the collective runtime on the
// buffers: runtime/VramCollectives.cpp (MPI, host memory) on CPU,
// runtime/VramCollectivesNccl.cpp (NCCL, device memory) on GPU.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_CONVERSION_COLLECTIVES_COLLECTIVEBUFFERIZATION_H
#define VRAM_CONVERSION_COLLECTIVES_COLLECTIVEBUFFERIZATION_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace vram {

/// Attaches BufferizableOpInterface to shard.all_reduce, all_gather,
/// reduce_scatter and all_slice.
void registerCollectiveBufferizationExternalModels(
    mlir::DialectRegistry &registry);

} // namespace vram

#endif // VRAM_CONVERSION_COLLECTIVES_COLLECTIVEBUFFERIZATION_H
