//===- Patterns.h - rewrite patterns on the onnx dialect --------*- C++ -*-===//

#ifndef VRAM_DIALECT_ONNX_PATTERNS_H
#define VRAM_DIALECT_ONNX_PATTERNS_H

#include "mlir/IR/PatternMatch.h"

namespace vram {

/// Patterns that rebuild the fused ops older exporters spell out in
/// elementwise ops (opset < 17 has no LayerNormalization, opset < 20 no
/// Gelu): `x * 0.5 * (1 + erf(x / sqrt(2)))` becomes onnx.Gelu and
/// `(x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) * gamma + beta` over
/// trailing axes becomes onnx.LayerNormalization; MatMul by a transposed 2-d
/// weight becomes Gemm(transB = 1) on views. Runtimes fuse these too (ONNX
/// Runtime's graph optimizations, PyTorch's linear); without it the same
/// model holds one more activation-sized temporary per chain (or a copy of
/// the weight) than its newer export or its framework.
void populateDecomposedOpFusionPatterns(mlir::RewritePatternSet &patterns);

/// Patterns that spell operators the dialect has no op for (onnx.Node) in
/// ops it models, exactly: Instance- and GroupNormalization as
/// LayerNormalization over the spatial axes and the affine map,
/// RMSNormalization, 4-d Attention, LSTM and GRU unrolled over their
/// sequence, Min and Max as chains of Where (lib/Dialect/ONNX/Expansion.cpp
/// says which forms; the others stay onnx.Node).
/// The importer applies them to every model: the expansion is what training
/// differentiates and lowering runs.
void populateGenericNodeExpansionPatterns(mlir::RewritePatternSet &patterns);

} // namespace vram

#endif // VRAM_DIALECT_ONNX_PATTERNS_H
