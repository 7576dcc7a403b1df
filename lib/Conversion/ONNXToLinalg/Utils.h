//===- Utils.h - helpers shared by the onnx-to-linalg patterns --*- C++ -*-===//
//
// Every pattern of vram-convert-onnx-to-linalg derives from
// ONNXToLinalgPattern (static shapes checked, errors name the op) and builds
// its IR with these helpers: numpy broadcasting as indexing maps,
// elementwise linalg.generic, tensor.empty / linalg.fill, scalar constants,
// ONNX Cast semantics between element types, constant operands, axes and
// view-like reshapes.
//
// Signedness: the type converter turns ONNX unsigned integers into signless
// ones, so the element types of the converted operands cannot tell `ui8`
// from `i8`. Helpers that care take the ORIGINAL onnx types (the op's own
// operand and result types), which still carry it.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_LIB_CONVERSION_ONNXTOLINALG_UTILS_H
#define VRAM_LIB_CONVERSION_ONNXTOLINALG_UTILS_H

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/DialectConversion.h"

#include <optional>

namespace vram {
namespace onnx_to_linalg {

//===----------------------------------------------------------------------===//
// Errors and static shapes
//===----------------------------------------------------------------------===//

/// Starts the error "'<op>' op cannot be lowered to linalg: " at `op`; the
/// caller streams the reason and returns it (it converts to failure). The
/// pass then adds its "cannot lower '<op>' to linalg (node '<name>')" error
/// for every op left unlowered.
mlir::InFlightDiagnostic emitLoweringError(mlir::Operation *op);

/// Checks that every tensor operand and result of `op` is ranked with a
/// static shape; otherwise emits a lowering error naming the value.
mlir::LogicalResult verifyStaticShapes(mlir::Operation *op);

/// Base of every onnx-to-linalg pattern: rejects dynamic shapes with a clear
/// error before `lower` runs, and converts types with the pass's converter.
template <typename OpTy>
class ONNXToLinalgPattern : public mlir::OpConversionPattern<OpTy> {
public:
  using Base = mlir::OpConversionPattern<OpTy>;
  using OpAdaptor = typename Base::OpAdaptor;

  ONNXToLinalgPattern(const mlir::TypeConverter &typeConverter,
                      mlir::MLIRContext *context)
      : Base(typeConverter, context) {}

  mlir::LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  mlir::ConversionPatternRewriter &rewriter) const final {
    if (mlir::failed(verifyStaticShapes(op)))
      return mlir::failure();
    return lower(op, adaptor, rewriter);
  }

protected:
  /// Rewrites `op`; shapes are static here. Return emitLoweringError(op)
  /// << reason for inputs that cannot be lowered, before creating any op.
  virtual mlir::LogicalResult
  lower(OpTy op, OpAdaptor adaptor,
        mlir::ConversionPatternRewriter &rewriter) const = 0;

  /// The converted (signless) type of an onnx tensor type.
  mlir::RankedTensorType convertTensorType(mlir::Type type) const {
    return mlir::cast<mlir::RankedTensorType>(
        this->getTypeConverter()->convertType(type));
  }
};

//===----------------------------------------------------------------------===//
// Tensors and scalars
//===----------------------------------------------------------------------===//

/// tensor.empty of `type` (static shape).
mlir::Value createEmptyTensor(mlir::OpBuilder &builder, mlir::Location loc,
                              mlir::RankedTensorType type);

/// tensor.empty of `type` filled with `value` by linalg.fill.
mlir::Value createFilledTensor(mlir::OpBuilder &builder, mlir::Location loc,
                               mlir::RankedTensorType type, mlir::Value value);

/// The accumulator of a reduction or contraction: zeros of `type`.
mlir::Value createZeroTensor(mlir::OpBuilder &builder, mlir::Location loc,
                             mlir::RankedTensorType type);

/// The only element of `tensor`, a ranked tensor of one element (rank 0 or
/// every dimension 1), read at run time.
mlir::Value extractOnlyElement(mlir::OpBuilder &builder, mlir::Location loc,
                               mlir::Value tensor);

/// arith.constant `value` of a signless-integer, index or float
/// `elementType`; integers take `value` truncated toward zero.
mlir::Value createScalarConstant(mlir::OpBuilder &builder, mlir::Location loc,
                                 mlir::Type elementType, double value);

/// Whether `type` (an onnx element or tensor type) is an unsigned integer
/// or bool, i.e. zero-extends.
bool isUnsignedOrBool(mlir::Type type);

/// How a conversion to an 8- or 4-bit float treats values the format
/// cannot hold (ONNX Cast's `saturate` and `round_mode`): `mode` is
/// "nearest" (ties to even), "up" or "down".
struct NarrowFloatRounding {
  bool saturate = true;
  llvm::StringRef mode = "nearest";
};

/// Converts the scalar `value` from onnx element type `from` to onnx element
/// type `to` with ONNX Cast semantics: float to integer truncates toward
/// zero (to 4- and 2-bit integers, out-of-range values become 0), anything
/// to bool is `!= 0`, integers extend by the signedness of `from`, f16 and
/// bf16 convert through f32, 8- and 4-bit floats through f32 with
/// `rounding`. The result is signless.
mlir::Value convertScalar(mlir::OpBuilder &builder, mlir::Location loc,
                          mlir::Value value, mlir::Type from, mlir::Type to,
                          const NarrowFloatRounding &rounding = {});

/// Whether `type` (or its element type) is an 8- or 4-bit float, which LLVM
/// cannot compute on: NarrowFloat.cpp converts them.
bool isNarrowFloat(mlir::Type type);

/// The f32 value of an 8- or 4-bit float scalar.
mlir::Value decodeNarrowFloat(mlir::OpBuilder &builder, mlir::Location loc,
                              mlir::Value value);

/// An f32 scalar as the 8- or 4-bit float `target`: rounded by
/// `rounding.mode`, with ONNX's rules for NaN, infinity, overflow
/// (`rounding.saturate`) and signs the format lacks.
mlir::Value encodeNarrowFloat(mlir::OpBuilder &builder, mlir::Location loc,
                              mlir::Value value, mlir::FloatType target,
                              const NarrowFloatRounding &rounding);

//===----------------------------------------------------------------------===//
// linalg.generic
//===----------------------------------------------------------------------===//

/// The indexing map that reads an operand of shape `operandShape` at each
/// point of the iteration space `resultShape` under numpy broadcasting:
/// trailing dimensions align, size-1 operand dimensions read index 0.
mlir::AffineMap getBroadcastIndexingMap(mlir::MLIRContext *context,
                                        llvm::ArrayRef<int64_t> operandShape,
                                        llvm::ArrayRef<int64_t> resultShape);

/// Computes one scalar of the result from the scalars of the inputs.
using ScalarBodyBuilder = llvm::function_ref<mlir::Value(
    mlir::OpBuilder &, mlir::Location, mlir::ValueRange)>;

/// A parallel linalg.generic producing `resultType` from `inputs`, each read
/// with its broadcasting map; the body gets one scalar per input. Nothing is
/// materialised for broadcasting.
mlir::Value buildElementwiseGeneric(mlir::OpBuilder &builder,
                                    mlir::Location loc,
                                    mlir::RankedTensorType resultType,
                                    mlir::ValueRange inputs,
                                    ScalarBodyBuilder bodyBuilder);

/// A parallel linalg.generic producing `resultType` from `inputs` read with
/// `inputMaps` (one per input, over the result's dimensions); the body may
/// use linalg.index and tensor.extract for reads the maps cannot express.
mlir::Value buildParallelGeneric(mlir::OpBuilder &builder, mlir::Location loc,
                                 mlir::RankedTensorType resultType,
                                 mlir::ValueRange inputs,
                                 llvm::ArrayRef<mlir::AffineMap> inputMaps,
                                 ScalarBodyBuilder bodyBuilder);

/// `count` parallel iterator types.
llvm::SmallVector<mlir::utils::IteratorType>
getParallelIterators(unsigned count);

//===----------------------------------------------------------------------===//
// Constant operands and axes
//===----------------------------------------------------------------------===//

/// The integer elements of `value` if it is a constant (onnx.Constant,
/// arith.constant, through unrealized casts), sign-extended (ONNX shape,
/// axes and index inputs are int64 or int32).
std::optional<llvm::SmallVector<int64_t>>
getConstantIntValues(mlir::Value value);

/// The elements of a constant float tensor, as doubles.
std::optional<llvm::SmallVector<double>>
getConstantFloatValues(mlir::Value value);

/// The integer elements of the constant `original` (an onnx operand) or of
/// its converted value `converted`, whichever is visibly constant.
std::optional<llvm::SmallVector<int64_t>>
getConstantIntValues(mlir::Value original, mlir::Value converted);

/// An index element (any integer type) as an index into an axis of
/// `extent` elements: a negative one counts from the end, as ONNX allows,
/// and one still out of range is clamped to the axis. ONNX makes such an
/// index an error; constant ones are refused at compile time
/// (checkConstantIndices) and vram-run checks its index inputs, so the
/// clamp only keeps an index computed at run time from addressing memory
/// outside the tensor.
mlir::Value wrapIndex(mlir::OpBuilder &b, mlir::Location loc, mlir::Value index,
                      int64_t extent);

/// An axis of the data an index addresses, and its size.
struct IndexedAxis {
  int64_t axis, extent;
};

/// Gather's and the scatters' indices, when constant (`original` and
/// `converted` as for getConstantIntValues), must lie in [-extent, extent)
/// of the axis they address: ONNX makes any other an error, which is
/// reported at `op` rather than read or written out of bounds. Element i
/// addresses axes[i % axes.size()] (one axis for Gather and ScatterElements;
/// one per tuple component for ScatterND).
mlir::LogicalResult checkConstantIndices(mlir::Operation *op,
                                         mlir::Value original,
                                         mlir::Value converted,
                                         llvm::ArrayRef<IndexedAxis> axes);

/// `axis` in [-rank, rank) made non-negative; a lowering error at `op`
/// otherwise.
mlir::FailureOr<int64_t> normalizeAxis(mlir::Operation *op, int64_t axis,
                                       int64_t rank);

/// Every axis normalised; duplicates and out-of-range axes are errors.
mlir::FailureOr<llvm::SmallVector<int64_t>>
normalizeAxes(mlir::Operation *op, llvm::ArrayRef<int64_t> axes, int64_t rank);

/// `values` as index attributes (static offsets, sizes, pads).
llvm::SmallVector<mlir::OpFoldResult>
indexAttrs(mlir::OpBuilder &builder, llvm::ArrayRef<int64_t> values);

//===----------------------------------------------------------------------===//
// Reshapes
//===----------------------------------------------------------------------===//

/// `value` reshaped to `resultType` (same element count) as ops that
/// bufferize to views of the same storage: tensor.collapse_shape and/or
/// tensor.expand_shape; returns `value` when the shapes already agree.
mlir::Value reshapeTensor(mlir::OpBuilder &builder, mlir::Location loc,
                          mlir::Value value, mlir::RankedTensorType resultType);

} // namespace onnx_to_linalg
} // namespace vram

#endif // VRAM_LIB_CONVERSION_ONNXTOLINALG_UTILS_H
