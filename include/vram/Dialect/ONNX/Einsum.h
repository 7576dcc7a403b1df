//===- Einsum.h - ONNX Einsum equations, parsed -----------------*- C++ -*-===//
//
// One parse of an Einsum equation serves shape inference, the lowering, the
// cost model and the gradient. Every dimension gets a label: the equation's
// letters, and for an ellipsis ("...") letters the equation does not use,
// aligned from the right across operands as numpy broadcasts them.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_DIALECT_ONNX_EINSUM_H
#define VRAM_DIALECT_ONNX_EINSUM_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <string>

namespace vram {

struct EinsumSpec {
  /// Labels of each operand's dims, and of the result's.
  llvm::SmallVector<std::string> inputs;
  std::string output;
  /// Every label's extent (the largest, where an ellipsis dim of 1
  /// broadcasts).
  std::map<char, int64_t> extents;

  /// Labels summed over: in some operand, not in the result.
  std::string reducedLabels() const;
  /// The result's shape.
  llvm::SmallVector<int64_t> outputShape() const;
  /// The equation with explicit labels only ("ab,bc->ac").
  std::string equation() const;
};

/// Parses `equation` for operands of the given shapes (static or not:
/// a dynamic dim is -1 and matches anything). Errors name the problem.
llvm::Expected<EinsumSpec>
parseEinsum(llvm::StringRef equation,
            llvm::ArrayRef<llvm::ArrayRef<int64_t>> operandShapes);

} // namespace vram

#endif // VRAM_DIALECT_ONNX_EINSUM_H
