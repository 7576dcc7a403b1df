//===- ONNXOps.cpp - verifiers of the ONNX frontend ops -------------------===//
//
// The verifiers check what ONNX's own checker and shape inference guarantee
// for a valid model, so that IR written by hand or by other passes is held to
// the same rules: operand ranks, attribute arity, channel and contraction
// dimensions, and result shapes where they follow from static operand shapes.
//
//===----------------------------------------------------------------------===//

#include "vram/Dialect/ONNX/ONNXOps.h"
#include "OpHelpers.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace vram;
using namespace vram::detail;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

/// Checks that a ranked result has the rank its op keeps, before any
/// per-dimension check indexes into it.
static LogicalResult verifyResultRank(Operation *op, RankedTensorType result,
                                      int64_t expected) {
  if (result && result.getRank() != expected)
    return op->emitOpError() << "result has rank " << result.getRank()
                             << ", expected " << expected;
  return success();
}

/// Checks the spatial result dims of a window op against its static input.
static LogicalResult verifyWindowResult(Operation *op, RankedTensorType input,
                                        RankedTensorType result,
                                        const WindowGeometry &window) {
  if (!result || window.kernel.empty())
    return success();
  for (unsigned i = 0; i < window.kernel.size(); ++i) {
    int64_t in = input.getDimSize(i + 2);
    if (ShapedType::isDynamic(in))
      continue;
    int64_t expected = windowOutputSize(window, i, in);
    if (expected < 1)
      return op->emitOpError()
             << "window of extent " << window.kernel[i]
             << " does not fit spatial dimension " << i << " of size " << in;
    int64_t actual = result.getDimSize(i + 2);
    if (!ShapedType::isDynamic(actual) && actual != expected)
      return op->emitOpError() << "result spatial dimension " << i << " is "
                               << actual << ", expected " << expected;
  }
  return success();
}

static bool staticMismatch(int64_t a, int64_t b) {
  return !ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b;
}

//===----------------------------------------------------------------------===//
// Constant
//===----------------------------------------------------------------------===//

LogicalResult ONNXConstantOp::verify() {
  auto valueType = cast<ShapedType>(getValue().getType());
  auto resultType = cast<TensorType>(getOutput().getType());
  if (valueType.getElementType() != resultType.getElementType())
    return emitOpError("value element type differs from the result's");
  if (resultType.hasRank() && valueType.getShape() != resultType.getShape())
    return emitOpError("value shape differs from the result's");
  return success();
}

OpFoldResult ONNXConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// Checks X/W ranks and the window geometry shared by Conv and ConvTranspose.
static LogicalResult verifyConvCommon(Operation *op, Value x, Value w, Value b,
                                      int64_t group, WindowGeometry &window,
                                      RankedTensorType &xType,
                                      RankedTensorType &wType) {
  xType = getRankedType(x);
  wType = getRankedType(w);
  if (group < 1)
    return op->emitOpError("group must be positive");
  if (!xType || !wType)
    return success();
  if (xType.getRank() < 3)
    return op->emitOpError("input X must have rank >= 3 (N x C x D1...)");
  if (wType.getRank() != xType.getRank())
    return op->emitOpError() << "weight W has rank " << wType.getRank()
                             << ", expected " << xType.getRank();
  if (failed(verifyWindowAttrs(op, xType.getRank() - 2, window)))
    return failure();
  if (window.kernel.empty())
    window.kernel.assign(wType.getShape().begin() + 2, wType.getShape().end());
  for (unsigned i = 0; i < window.kernel.size(); ++i)
    if (staticMismatch(window.kernel[i], wType.getDimSize(i + 2)))
      return op->emitOpError() << "kernel_shape disagrees with W dimension "
                               << i + 2;
  if (auto bType = getRankedType(b))
    if (bType.getRank() != 1)
      return op->emitOpError("bias B must be 1-d");
  return success();
}

LogicalResult ONNXConvOp::verify() {
  WindowGeometry window{toInts(getKernelShape()), toInts(getStrides()),
                        toInts(getDilations()), toInts(getPads()),
                        getAutoPad()};
  RankedTensorType xType, wType;
  if (failed(verifyConvCommon(*this, getX(), getW(), getB(), getGroup(),
                              window, xType, wType)))
    return failure();
  if (!xType || !wType)
    return success();
  int64_t channels = xType.getDimSize(1), filters = wType.getDimSize(0);
  int64_t group = getGroup();
  if (!ShapedType::isDynamic(channels) &&
      !ShapedType::isDynamic(wType.getDimSize(1)) &&
      channels != wType.getDimSize(1) * group)
    return emitOpError() << "input has " << channels
                         << " channels but W expects " << wType.getDimSize(1)
                         << " x group " << group;
  if (!ShapedType::isDynamic(filters) && filters % group != 0)
    return emitOpError() << "W has " << filters
                         << " filters, not divisible by group " << group;
  if (auto bType = getRankedType(getB()))
    if (staticMismatch(bType.getDimSize(0), filters))
      return emitOpError() << "bias B has " << bType.getDimSize(0)
                           << " elements for " << filters << " filters";
  auto yType = getRankedType(getY());
  if (failed(verifyResultRank(*this, yType, xType.getRank())))
    return failure();
  if (yType && staticMismatch(yType.getDimSize(1), filters))
    return emitOpError() << "result has " << yType.getDimSize(1)
                         << " channels, expected " << filters;
  return verifyWindowResult(*this, xType, yType, window);
}

LogicalResult ONNXConvTransposeOp::verify() {
  WindowGeometry window{toInts(getKernelShape()), toInts(getStrides()),
                        toInts(getDilations()), toInts(getPads()),
                        getAutoPad()};
  RankedTensorType xType, wType;
  if (failed(verifyConvCommon(*this, getX(), getW(), getB(), getGroup(),
                              window, xType, wType)))
    return failure();
  if (!xType || !wType)
    return success();
  if (staticMismatch(xType.getDimSize(1), wType.getDimSize(0)))
    return emitOpError() << "input has " << xType.getDimSize(1)
                         << " channels but W has " << wType.getDimSize(0);
  auto yType = getRankedType(getY());
  if (failed(verifyResultRank(*this, yType, xType.getRank())))
    return failure();
  if (yType && !ShapedType::isDynamic(wType.getDimSize(1)) &&
      staticMismatch(yType.getDimSize(1), wType.getDimSize(1) * getGroup()))
    return emitOpError() << "result has " << yType.getDimSize(1)
                         << " channels, expected "
                         << wType.getDimSize(1) * getGroup();
  return success();
}

template <typename PoolOp>
static LogicalResult verifyPool(PoolOp op, WindowGeometry window) {
  auto xType = getRankedType(op.getX());
  if (!xType)
    return success();
  if (xType.getRank() < 3)
    return op.emitOpError("input X must have rank >= 3 (N x C x D1...)");
  if (static_cast<int64_t>(window.kernel.size()) != xType.getRank() - 2)
    return op.emitOpError() << "kernel_shape has " << window.kernel.size()
                            << " values, expected " << xType.getRank() - 2;
  if (failed(verifyWindowAttrs(op, xType.getRank() - 2, window)))
    return failure();
  auto yType = getRankedType(op.getY());
  if (failed(verifyResultRank(op, yType, xType.getRank())))
    return failure();
  if (yType && staticMismatch(yType.getDimSize(1), xType.getDimSize(1)))
    return op.emitOpError("pooling must keep the channel count");
  return verifyWindowResult(op, xType, yType, window);
}

LogicalResult ONNXMaxPoolOp::verify() {
  WindowGeometry window{toInts(getKernelShape()), toInts(getStrides()),
                        toInts(getDilations()), toInts(getPads()),
                        getAutoPad(), getCeilMode() != 0};
  return verifyPool(*this, std::move(window));
}

LogicalResult ONNXAveragePoolOp::verify() {
  WindowGeometry window{
      toInts(getKernelShape()), toInts(getStrides()), toInts(getDilations()),
      toInts(getPads()),        getAutoPad(),         getCeilMode() != 0};
  return verifyPool(*this, std::move(window));
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

LogicalResult ONNXBatchNormalizationOp::verify() {
  auto xType = getRankedType(getX());
  if (!xType)
    return success();
  if (xType.getRank() < 2)
    return emitOpError("input X must have rank >= 2 (N x C x ...)");
  int64_t channels = xType.getDimSize(1);
  for (auto [name, value] :
       {std::pair<StringRef, Value>{"scale", getScale()},
        {"B", getB()},
        {"input_mean", getInputMean()},
        {"input_var", getInputVar()}}) {
    auto type = getRankedType(value);
    if (!type)
      continue;
    if (type.getRank() != 1 || staticMismatch(type.getDimSize(0), channels))
      return emitOpError() << name << " must be 1-d with " << channels
                           << " elements (one per channel)";
  }
  if (getTrainingMode() == 0 &&
      !isa<NoneType>(getRunningMean().getType()))
    return emitOpError("running_mean is only produced in training mode");
  return success();
}

LogicalResult ONNXLayerNormalizationOp::verify() {
  auto xType = getRankedType(getX());
  if (!xType)
    return success();
  if (failed(normalizeAxis(*this, getAxis(), xType.getRank())))
    return failure();
  auto scaleType = getRankedType(getScale());
  if (scaleType && scaleType.getRank() > xType.getRank())
    return emitOpError("Scale has a higher rank than X");
  return success();
}

/// Softmax and LogSoftmax: `axis` names a dim of the input.
static LogicalResult verifySoftmaxAxis(Operation *op, Value input,
                                       int64_t axis) {
  auto type = getRankedType(input);
  if (!type)
    return success();
  return normalizeAxis(op, axis, type.getRank());
}

LogicalResult ONNXSoftmaxOp::verify() {
  return verifySoftmaxAxis(*this, getInput(), getAxis());
}

LogicalResult ONNXLogSoftmaxOp::verify() {
  return verifySoftmaxAxis(*this, getInput(), getAxis());
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult ONNXMatMulOp::verify() {
  auto aType = getRankedType(getA()), bType = getRankedType(getB());
  if (!aType || !bType)
    return success();
  if (aType.getRank() == 0 || bType.getRank() == 0)
    return emitOpError("operands of MatMul must have rank >= 1");
  int64_t k1 = aType.getDimSize(aType.getRank() - 1);
  int64_t k2 = bType.getDimSize(bType.getRank() == 1 ? 0 : bType.getRank() - 2);
  if (staticMismatch(k1, k2))
    return emitOpError() << "contraction dimensions differ: A has " << k1
                         << ", B has " << k2;
  // The dims before the matrices broadcast (numpy); a 1-d operand has none.
  SmallVector<int64_t> batch;
  if (!OpTrait::util::getBroadcastedShape(
          aType.getShape().drop_back(std::min<int64_t>(2, aType.getRank())),
          bType.getShape().drop_back(std::min<int64_t>(2, bType.getRank())),
          batch))
    return emitOpError("batch dimensions of A and B cannot be broadcast");
  return success();
}

LogicalResult ONNXGemmOp::verify() {
  auto aType = getRankedType(getA()), bType = getRankedType(getB());
  if (!aType || !bType)
    return success();
  if (aType.getRank() != 2 || bType.getRank() != 2)
    return emitOpError("A and B of Gemm must be 2-d");
  int64_t k1 = aType.getDimSize(getTransA() ? 0 : 1);
  int64_t k2 = bType.getDimSize(getTransB() ? 1 : 0);
  if (staticMismatch(k1, k2))
    return emitOpError() << "contraction dimensions differ: A has " << k1
                         << ", B has " << k2;
  if (auto cType = getRankedType(getC()))
    if (cType.getRank() > 2)
      return emitOpError("C of Gemm must have rank <= 2");
  return success();
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

LogicalResult ONNXFlattenOp::verify() {
  auto type = getRankedType(getInput());
  if (!type)
    return success();
  // Flatten's axis ranges over [-r, r]: it may split after the last dim.
  return normalizeAxis(*this, getAxis(), type.getRank(), /*allowRank=*/true);
}

LogicalResult ONNXReshapeOp::verify() {
  auto shapeType = getRankedType(getShape());
  if (shapeType && shapeType.getRank() != 1)
    return emitOpError("shape must be a 1-d tensor");
  auto dataType = getRankedType(getData());
  auto resultType = getRankedType(getReshaped());
  if (dataType && resultType && dataType.hasStaticShape() &&
      resultType.hasStaticShape() &&
      dataType.getNumElements() != resultType.getNumElements())
    return emitOpError() << "cannot reshape " << dataType.getNumElements()
                         << " elements into " << resultType.getNumElements();
  return success();
}

LogicalResult ONNXTransposeOp::verify() {
  auto dataType = getRankedType(getData());
  if (!dataType || !getPerm())
    return success();
  SmallVector<int64_t> perm = toInts(getPerm());
  if (static_cast<int64_t>(perm.size()) != dataType.getRank())
    return emitOpError() << "perm has " << perm.size() << " entries for rank "
                         << dataType.getRank();
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t p : perm)
    if (p < 0 || p >= dataType.getRank() || !seen.insert(p).second)
      return emitOpError("perm is not a permutation of the dimensions");
  auto resultType = getRankedType(getTransposed());
  if (failed(verifyResultRank(*this, resultType, dataType.getRank())))
    return failure();
  if (resultType)
    for (auto [i, p] : llvm::enumerate(perm))
      if (staticMismatch(resultType.getDimSize(i), dataType.getDimSize(p)))
        return emitOpError() << "result dimension " << i
                             << " does not match input dimension " << p;
  return success();
}

/// Checks that `parts`, laid end to end along `axis`, make up `whole`: equal
/// ranks, equal sizes off the axis, sizes along it adding up (Concat's
/// inputs and result, Split's outputs and input).
static LogicalResult verifyConcatenation(Operation *op, ValueRange parts,
                                         RankedTensorType whole, int64_t axis,
                                         StringRef partsName) {
  int64_t total = 0;
  for (Value part : parts) {
    auto type = getRankedType(part);
    if (!type) {
      total = ShapedType::kDynamic;
      continue;
    }
    if (type.getRank() != whole.getRank())
      return op->emitOpError() << partsName << " must all have rank "
                               << whole.getRank();
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (d != axis && staticMismatch(type.getDimSize(d), whole.getDimSize(d)))
        return op->emitOpError() << partsName << " differ in dimension " << d;
    if (ShapedType::isDynamic(type.getDimSize(axis)))
      total = ShapedType::kDynamic;
    else if (!ShapedType::isDynamic(total))
      total += type.getDimSize(axis);
  }
  if (staticMismatch(total, whole.getDimSize(axis)))
    return op->emitOpError() << partsName << " add up to " << total
                             << " along the axis, not "
                             << whole.getDimSize(axis);
  return success();
}

LogicalResult ONNXConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  auto resultType = getRankedType(getConcatResult());
  if (!resultType)
    return success();
  FailureOr<int64_t> axis = normalizeAxis(*this, getAxis(), resultType.getRank());
  if (failed(axis))
    return failure();
  return verifyConcatenation(*this, getInputs(), resultType, *axis, "inputs");
}

LogicalResult ONNXSplitOp::verify() {
  auto inputType = getRankedType(getInput());
  if (!inputType)
    return success();
  FailureOr<int64_t> axis = normalizeAxis(*this, getAxis(), inputType.getRank());
  if (failed(axis))
    return failure();
  return verifyConcatenation(*this, getOutputs(), inputType, *axis, "outputs");
}

LogicalResult ONNXGatherOp::verify() {
  auto dataType = getRankedType(getData());
  auto indicesType = getRankedType(getIndices());
  if (indicesType && !indicesType.getElementType().isInteger())
    return emitOpError("indices must be integers");
  if (!dataType)
    return success();
  if (dataType.getRank() == 0)
    return emitOpError("data must have rank >= 1");
  return normalizeAxis(*this, getAxis(), dataType.getRank());
}

/// Unsqueeze and Squeeze only add or drop unit dims: element counts agree.
static LogicalResult verifySameElementCount(Operation *op, Value in, Value out) {
  auto inType = getRankedType(in), outType = getRankedType(out);
  if (inType && outType && inType.hasStaticShape() &&
      outType.hasStaticShape() &&
      inType.getNumElements() != outType.getNumElements())
    return op->emitOpError("must not change the number of elements");
  return success();
}

LogicalResult ONNXUnsqueezeOp::verify() {
  auto inType = getRankedType(getData()), outType = getRankedType(getExpanded());
  if (inType && outType && outType.getRank() < inType.getRank())
    return emitOpError("result has a lower rank than the input");
  return verifySameElementCount(*this, getData(), getExpanded());
}

LogicalResult ONNXSqueezeOp::verify() {
  auto inType = getRankedType(getData()), outType = getRankedType(getSqueezed());
  if (inType && outType && outType.getRank() > inType.getRank())
    return emitOpError("result has a higher rank than the input");
  return verifySameElementCount(*this, getData(), getSqueezed());
}

//===----------------------------------------------------------------------===//
// Views: results that reuse their input's storage
//===----------------------------------------------------------------------===//

Value ONNXIdentityOp::getViewSource() { return getX(); }
Value ONNXFlattenOp::getViewSource() { return getInput(); }
Value ONNXReshapeOp::getViewSource() { return getData(); }
Value ONNXUnsqueezeOp::getViewSource() { return getData(); }
Value ONNXSqueezeOp::getViewSource() { return getData(); }

#include "vram/Dialect/ONNX/ONNXInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "vram/Dialect/ONNX/ONNXOps.cpp.inc"
