//===- IRBuilding.h - builds onnx ops with their result types ---*- C++ -*-===//
//
// The training step is built from onnx ops with static shapes; this computes
// each result type (broadcasting, reductions, transposes) so that the rules
// in Gradients.cpp read like the math.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_TRAINING_IRBUILDING_H
#define VRAM_TRAINING_IRBUILDING_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace vram {

/// Window attributes of a Conv / ConvTranspose / pool, defaults filled in.
struct ConvWindow {
  llvm::SmallVector<int64_t> kernel, strides, dilations, pads;
};

class IRBuilding {
public:
  IRBuilding(mlir::OpBuilder &builder, mlir::Location loc)
      : builder(builder), loc(loc) {}

  mlir::OpBuilder &getBuilder() { return builder; }
  mlir::Location getLoc() { return loc; }

  /// A rank-0 constant, broadcast by every ONNX binary op.
  mlir::Value scalar(mlir::Type elementType, double value);
  mlir::Value splat(mlir::RankedTensorType type, double value);
  /// A 1-d int64 constant (shapes, axes, pads).
  mlir::Value int64s(llvm::ArrayRef<int64_t> values);
  /// An int64 constant of `shape` holding `values` (row-major).
  mlir::Value int64s(llvm::ArrayRef<int64_t> shape,
                     llvm::ArrayRef<int64_t> values);
  /// The most elements a rule lists for such a constant: its values are
  /// built in host memory first, and a batch no GPU holds (2^24 images)
  /// must not exhaust it.
  static constexpr int64_t kMaxListedElements = int64_t(1) << 24;
  /// A float constant of `type` holding `values` (row-major), rounded to
  /// its element type.
  mlir::Value floats(mlir::RankedTensorType type,
                     llvm::ArrayRef<double> values);
  /// Zeros of `type`, materialised by Expand so that they are a buffer of
  /// the step (allocated where used) and not a constant of the program.
  mlir::Value zeros(mlir::RankedTensorType type);

  mlir::Value add(mlir::Value a, mlir::Value b);
  mlir::Value sub(mlir::Value a, mlir::Value b);
  mlir::Value mul(mlir::Value a, mlir::Value b);
  mlir::Value div(mlir::Value a, mlir::Value b);
  mlir::Value pow(mlir::Value a, mlir::Value b);
  mlir::Value equal(mlir::Value a, mlir::Value b);
  mlir::Value greater(mlir::Value a, mlir::Value b);
  mlir::Value where(mlir::Value condition, mlir::Value a, mlir::Value b);
  mlir::Value neg(mlir::Value x);
  mlir::Value exp(mlir::Value x);
  mlir::Value log(mlir::Value x);
  mlir::Value erf(mlir::Value x);
  mlir::Value cos(mlir::Value x);
  mlir::Value sin(mlir::Value x);
  /// Trilu of `x` with `k` (a value or none).
  mlir::Value trilu(mlir::Value x, mlir::Value k, bool upper);
  mlir::Value tanh(mlir::Value x);
  mlir::Value sigmoid(mlir::Value x);
  mlir::Value sqrt(mlir::Value x);
  mlir::Value softmax(mlir::Value x, int64_t axis);
  /// log(softmax(x)) without forming the softmax: finite where the softmax
  /// underflows.
  mlir::Value logSoftmax(mlir::Value x, int64_t axis);
  /// Converts to `elementType`; returns `x` when it has it already.
  mlir::Value cast(mlir::Value x, mlir::Type elementType);

  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<int64_t> shape);
  mlir::Value transpose(mlir::Value x, llvm::ArrayRef<int64_t> perm);
  mlir::Value expand(mlir::Value x, llvm::ArrayRef<int64_t> shape);
  mlir::Value slice(mlir::Value x, llvm::ArrayRef<int64_t> starts,
                    llvm::ArrayRef<int64_t> ends, llvm::ArrayRef<int64_t> axes);
  mlir::Value pad(mlir::Value x, llvm::ArrayRef<int64_t> pads,
                  mlir::Type resultType);
  mlir::Value concat(mlir::ValueRange parts, int64_t axis,
                     mlir::Type resultType);
  /// Gather along `axis` (ONNX's: indices select whole slices).
  mlir::Value gather(mlir::Value data, mlir::Value indices, int64_t axis);
  /// Einsum of `inputs` by `equation` (explicit labels), of `resultType`.
  mlir::Value einsum(llvm::StringRef equation, mlir::ValueRange inputs,
                     mlir::Type resultType);
  mlir::Value scatterAdd(mlir::Value data, mlir::Value indices,
                         mlir::Value updates, int64_t axis);
  /// ScatterND with reduction none: `updates` overwrite `data` at the index
  /// tuples of `indices`.
  mlir::Value scatterND(mlir::Value data, mlir::Value indices,
                        mlir::Value updates);

  mlir::Value reduceSum(mlir::Value x, llvm::ArrayRef<int64_t> axes,
                        bool keepdims);
  mlir::Value reduceMean(mlir::Value x, llvm::ArrayRef<int64_t> axes,
                         bool keepdims);
  /// Sums a broadcast gradient back to the shape of `target`; `grad` itself
  /// when the shapes match.
  mlir::Value sumTo(mlir::Value grad, mlir::Type target);

  mlir::Value gemm(mlir::Value a, mlir::Value b, int64_t transA,
                   int64_t transB, double alpha, mlir::Type resultType);
  mlir::Value matmul(mlir::Value a, mlir::Value b);
  mlir::Value conv(mlir::Value x, mlir::Value w, const ConvWindow &window,
                   int64_t group, mlir::Type resultType);
  mlir::Value convTranspose(mlir::Value x, mlir::Value w,
                            const ConvWindow &window, int64_t group,
                            llvm::ArrayRef<int64_t> outputPadding,
                            mlir::Type resultType);

private:
  template <typename OpT>
  mlir::Value create(mlir::Type type, mlir::ValueRange operands,
                     llvm::ArrayRef<mlir::NamedAttribute> attributes = {});
  template <typename OpT> mlir::Value broadcast(mlir::Value a, mlir::Value b);
  template <typename OpT> mlir::Value unary(mlir::Value x);
  /// Softmax or LogSoftmax of `x` along `axis`.
  template <typename OpT>
  mlir::Value normalizeAlong(mlir::Value x, int64_t axis);
  template <typename OpT>
  mlir::Value reduce(mlir::Value x, llvm::ArrayRef<int64_t> axes,
                     bool keepdims);
  mlir::Value none();

  mlir::OpBuilder &builder;
  mlir::Location loc;
};

} // namespace vram

#endif // VRAM_TRAINING_IRBUILDING_H
