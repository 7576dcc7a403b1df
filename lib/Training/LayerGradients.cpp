//===- LayerGradients.cpp - gradients of layers
//----------------------------===//
//
// Gemm, MatMul and Einsum; convolution and pooling; reductions;
// BatchNormalization and LayerNormalization.
//
//===----------------------------------------------------------------------===//
#include "GradientRules.h"

#include <numeric>

#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace vram::gradient_rules;

namespace vram {

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

static FailureOr<SmallVector<Value>> saveFor(ONNXGemmOp op, OpBuilder &,
                                             ArrayRef<bool> wanted) {
  return saveForBilinear(op.getA(), op.getB(), wanted);
}

static Gradients gradientOf(ONNXGemmOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool> wanted) {
  // Y = alpha A' B' + beta C with A' = A or A^T, B' = B or B^T.
  int64_t transA = op.getTransA(), transB = op.getTransB();
  double alpha = op.getAlpha().convertToDouble();
  Value a = op.getA(), b = op.getB();
  SmallVector<Value> grads(3);
  if (wanted[0]) {
    // dA' = alpha dY B'^T; dA = dA' or its transpose.
    grads[0] = transA ? ir.gemm(b, dY[0], transB, 1, alpha, a.getType())
                      : ir.gemm(dY[0], b, 0, 1 - transB, alpha, a.getType());
  }
  if (wanted[1]) {
    // dB' = alpha A'^T dY
    grads[1] = transB ? ir.gemm(dY[0], a, 1, transA, alpha, b.getType())
                      : ir.gemm(a, dY[0], 1 - transA, 0, alpha, b.getType());
  }
  if (wanted[2]) {
    Value dC = dY[0];
    double beta = op.getBeta().convertToDouble();
    if (beta != 1.0)
      dC = ir.mul(dC, ir.scalar(elementTypeOf(dC), beta));
    grads[2] = ir.sumTo(dC, op.getC().getType());
  }
  return grads;
}

static FailureOr<SmallVector<Value>> saveFor(ONNXMatMulOp op, OpBuilder &,
                                             ArrayRef<bool> wanted) {
  return saveForBilinear(op.getA(), op.getB(), wanted);
}

/// Whether `value`'s dimensions before the last two are all 1, so that one
/// matrix serves every batch row of a MatMul.
static bool hasUnitBatch(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  return type.hasStaticShape() &&
         llvm::all_of(type.getShape().drop_back(2),
                      [](int64_t size) { return size == 1; });
}

static Gradients gradientOf(ONNXMatMulOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool> wanted) {
  Value a = op.getA(), b = op.getB();
  if (rankOf(a) < 2 || rankOf(b) < 2)
    return op.emitOpError("gradient of MatMul with a 1-d operand is not "
                          "supported");
  auto swapLast = [&](Value value) {
    int64_t rank = rankOf(value);
    SmallVector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[rank - 1], perm[rank - 2]);
    return ir.transpose(value, perm);
  };
  SmallVector<Value> grads(2);
  auto aType = cast<RankedTensorType>(a.getType());
  if (hasUnitBatch(b) && aType.hasStaticShape()) {
    // A matrix shared by every row of A (a linear layer on [batch, seq, K]):
    // both gradients are GEMMs over A's rows flattened, dA = dY B^T and
    // dB = A^T dY, with the transposes in the GEMM's flags. No transposed
    // copy of B, and no per-row product B's size times the rows, summed
    // afterwards.
    auto bType = cast<RankedTensorType>(b.getType());
    int64_t k = bType.getDimSize(bType.getRank() - 2);
    int64_t n = bType.getDimSize(bType.getRank() - 1);
    int64_t rows = aType.getNumElements() / k;
    Value matrixB = ir.reshape(b, {k, n});
    Value rowsOfDY = ir.reshape(dY[0], {rows, n});
    if (wanted[0])
      grads[0] = ir.reshape(ir.gemm(rowsOfDY, matrixB, /*transA=*/0,
                                    /*transB=*/1, 1.0, aType.clone({rows, k})),
                            aType.getShape());
    if (wanted[1])
      grads[1] = ir.reshape(ir.gemm(ir.reshape(a, {rows, k}), rowsOfDY,
                                    /*transA=*/1, /*transB=*/0, 1.0,
                                    bType.clone({k, n})),
                            bType.getShape());
    return grads;
  }
  // Broadcast batch dimensions are summed back by sumTo.
  if (wanted[0])
    grads[0] = ir.sumTo(ir.matmul(dY[0], swapLast(b)), a.getType());
  if (wanted[1])
    grads[1] = ir.sumTo(ir.matmul(swapLast(a), dY[0]), b.getType());
  return grads;
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

namespace {
using Window = ConvWindow;
} // namespace

static LogicalResult getWindow(Operation *op, ArrayRef<int64_t> kernel,
                               Window &window) {
  auto autoPad = op->getAttrOfType<StringAttr>("auto_pad");
  if (autoPad && autoPad.getValue() != "NOTSET")
    return op->emitOpError("gradient needs explicit pads (auto_pad = "
                           "NOTSET)");
  size_t n = kernel.size();
  window.kernel.assign(kernel.begin(), kernel.end());
  auto ints = [&](StringRef name, int64_t fill, size_t size) {
    auto attr = op->getAttrOfType<ArrayAttr>(name);
    return intsOr(attr ? std::optional<ArrayAttr>(attr) : std::nullopt, size,
                  fill);
  };
  window.strides = ints("strides", 1, n);
  window.dilations = ints("dilations", 1, n);
  window.pads = ints("pads", 0, 2 * n);
  return success();
}

/// The output_padding that makes a ConvTranspose with `window` produce
/// `inputShape` from `outputShape` (both spatial): the rows a strided
/// forward window never reached.
static SmallVector<int64_t> outputPadding(const Window &window,
                                          ArrayRef<int64_t> inputShape,
                                          ArrayRef<int64_t> outputShape) {
  size_t n = window.kernel.size();
  SmallVector<int64_t> padding;
  for (size_t i = 0; i < n; ++i) {
    int64_t produced = window.strides[i] * (outputShape[i] - 1) +
                       (window.kernel[i] - 1) * window.dilations[i] + 1 -
                       window.pads[i] - window.pads[n + i];
    padding.push_back(inputShape[i] - produced);
  }
  return padding;
}

static FailureOr<SmallVector<Value>> saveFor(ONNXConvOp op, OpBuilder &,
                                             ArrayRef<bool> wanted) {
  // dB reads neither.
  return saveForBilinear(op.getX(), op.getW(), wanted);
}

/// The gradient of a convolution's weights, shaped `wShape`, from the
/// convolution's input `x` and the gradient `dY` of its output:
/// dW[m, c, k] = sum_{n, o} dY[n, m, o] X[n, g Cg + c, o s + k d - p]
/// for m in group g. It is a Conv with the batch as channels, stride the
/// forward dilation and dilation the forward stride. Its input is X with
/// channels of one group as the batch, [Cg, G x N, ...] (group g's N images
/// as channel block g); its weights dY^T, [M, N, ...] (M ordered by group);
/// group = G keeps block g with the filters of group g. The result is
/// [Cg, M, k]: dW with its first two dims swapped.
static Value convWeightGradient(IRBuilding &ir, Value x, Value dY,
                                const Window &window, int64_t group,
                                ArrayRef<int64_t> wShape) {
  SmallVector<int64_t> xShape = shapeOf(x), yShape = shapeOf(dY);
  size_t n = xShape.size() - 2;
  int64_t batch = xShape[0], groupChannels = xShape[1] / group;
  SmallVector<int64_t> swap(xShape.size());
  std::iota(swap.begin(), swap.end(), 0);
  std::swap(swap[0], swap[1]);
  SmallVector<int64_t> split{batch, group, groupChannels};
  split.append(xShape.begin() + 2, xShape.end());
  SmallVector<int64_t> toChannelsFirst{2, 1, 0};
  for (size_t i = 0; i < n; ++i)
    toChannelsFirst.push_back(3 + i);
  SmallVector<int64_t> merged{groupChannels, group * batch};
  merged.append(xShape.begin() + 2, xShape.end());
  Value xT =
      group == 1
          ? ir.transpose(x, swap)
          : ir.reshape(ir.transpose(ir.reshape(x, split), toChannelsFirst),
                       merged);
  Value dYT = ir.transpose(dY, swap);
  Window weightWindow;
  weightWindow.kernel.assign(yShape.begin() + 2, yShape.end());
  weightWindow.strides = window.dilations;
  weightWindow.dilations = window.strides;
  weightWindow.pads = window.pads;
  SmallVector<int64_t> sliceEnds, sliceAxes;
  for (size_t i = 0; i < n; ++i) {
    // End padding so the output is exactly the kernel; rows past the last
    // window (negative padding) are sliced off the input instead.
    int64_t end = (window.kernel[i] - 1) * window.dilations[i] +
                  (yShape[2 + i] - 1) * window.strides[i] + 1 - xShape[2 + i] -
                  window.pads[i];
    weightWindow.pads[n + i] = std::max<int64_t>(end, 0);
    if (end < 0) {
      sliceEnds.push_back(xShape[2 + i] + end);
      sliceAxes.push_back(2 + i);
    }
  }
  if (!sliceAxes.empty())
    xT = ir.slice(xT, SmallVector<int64_t>(sliceAxes.size(), 0), sliceEnds,
                  sliceAxes);
  SmallVector<int64_t> gShape(wShape);
  std::swap(gShape[0], gShape[1]);
  auto gType = RankedTensorType::get(gShape, elementTypeOf(dY));
  Value g = ir.conv(xT, dYT, weightWindow, group, gType);
  return ir.transpose(g, swap);
}

/// A bias's gradient: dY summed over the batch and the spatial dims.
static Value convBiasGradient(IRBuilding &ir, Value dY) {
  SmallVector<int64_t> axes{0};
  for (int64_t i = 2; i < rankOf(dY); ++i)
    axes.push_back(i);
  return ir.reduceSum(dY, axes, /*keepdims=*/false);
}

static Gradients gradientOf(ONNXConvOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool> wanted) {
  SmallVector<int64_t> xShape = shapeOf(op.getX()), wShape = shapeOf(op.getW());
  SmallVector<int64_t> yShape = shapeOf(op.getY());
  Window window;
  if (failed(getWindow(op, ArrayRef(wShape).drop_front(2), window)))
    return failure();
  SmallVector<Value> grads(3);
  if (wanted[0]) {
    // The transposed convolution with the same weights.
    grads[0] =
        ir.convTranspose(dY[0], op.getW(), window, op.getGroup(),
                         outputPadding(window, ArrayRef(xShape).drop_front(2),
                                       ArrayRef(yShape).drop_front(2)),
                         op.getX().getType());
  }
  if (wanted[1])
    grads[1] =
        convWeightGradient(ir, op.getX(), dY[0], window, op.getGroup(), wShape);
  if (wanted[2])
    grads[2] = convBiasGradient(ir, dY[0]);
  return grads;
}

static FailureOr<SmallVector<Value>>
saveFor(ONNXConvTransposeOp op, OpBuilder &, ArrayRef<bool> wanted) {
  return saveForBilinear(op.getX(), op.getW(), wanted);
}

static Gradients gradientOf(ONNXConvTransposeOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool> wanted) {
  // Y = ConvTranspose(X, W) is the input gradient of Z -> Conv(Z, W) with
  // the same window (Z shaped like Y), applied to X. So dX = Conv(dY, W),
  // and dW is that convolution's weight gradient with dY as its input and X
  // as its output's gradient: <dY, Conv^T_W X> = <Conv_W dY, X>.
  if (op.getOutputShape())
    return op.emitOpError("gradient needs explicit pads, not output_shape");
  SmallVector<int64_t> wShape = shapeOf(op.getW());
  Window window;
  if (failed(getWindow(op, ArrayRef(wShape).drop_front(2), window)))
    return failure();
  SmallVector<Value> grads(3);
  if (wanted[0])
    grads[0] =
        ir.conv(dY[0], op.getW(), window, op.getGroup(), op.getX().getType());
  if (wanted[1])
    grads[1] =
        convWeightGradient(ir, dY[0], op.getX(), window, op.getGroup(), wShape);
  if (wanted[2])
    grads[2] = convBiasGradient(ir, dY[0]);
  return grads;
}

namespace {
/// Where each of a MaxPool's maxima came from, kept compactly: the offset
/// k in its window (kh KW + kw; int8), as PyTorch's Inductor keeps it,
/// instead of ONNX's int64 flat index into X (PyTorch eager's form):
/// 1 byte per output element instead of 8. The flat index is the window's
/// origin (the flat position of kernel offset 0, perhaps in the padding:
/// arithmetic only) plus r = kh dh W + kw; with windows no wider than a
/// dilated row (KW <= dh W), kh = r / (dh W) and k = r - kh (dh W - KW).
/// 1-d and 2-d windows of at most 127 elements, undilated along the last
/// axis (every pool current models use); others keep the int64 indices.
/// The origins are a sum of small broadcast constants, built in forward and
/// read again by backward (constants live throughout: no second copy).
class WindowOffsets {
public:
  WindowOffsets(ONNXMaxPoolOp op) {
    xShape = shapeOf(op.getX());
    yShape = shapeOf(op.getY());
    size_t spatial = xShape.size() - 2;
    SmallVector<int64_t> kernel = intsOr(op.getKernelShape(), 0, 0);
    int64_t size = 1;
    for (int64_t k : kernel)
      size *= k;
    // The first origin term is a constant of N x C elements; past the
    // limit the int64 indices are kept.
    applies = (spatial == 1 || spatial == 2) && size <= 127 &&
              xShape[0] <= IRBuilding::kMaxListedElements /
                               std::max<int64_t>(xShape[1], 1) &&
              kernel.size() == spatial &&
              succeeded(getWindow(op, kernel, window)) &&
              window.dilations.back() == 1 &&
              (spatial == 1 || kernel[1] <= rowSpan());
  }

  bool appliesToOp() const { return applies; }

  /// The constants whose sum is the flat index of each window's origin,
  /// shaped like Y once added: (n C + c) |image|, then per spatial axis
  /// (o stride - pad) times that axis's stride in X.
  SmallVector<Value> buildOriginTerms(IRBuilding &ir) {
    size_t rank = xShape.size(), spatial = rank - 2;
    SmallVector<int64_t> axisStride(rank, 1);
    for (size_t d = rank - 1; d > 0; --d)
      axisStride[d - 1] = axisStride[d] * xShape[d];
    SmallVector<int64_t> shape(rank, 1), values;
    shape[0] = xShape[0];
    shape[1] = xShape[1];
    for (int64_t nc = 0; nc < xShape[0] * xShape[1]; ++nc)
      values.push_back(nc * axisStride[1]);
    SmallVector<Value> terms{ir.int64s(shape, values)};
    for (size_t i = 0; i < spatial; ++i) {
      SmallVector<int64_t> axisShape(rank, 1), axisValues;
      axisShape[2 + i] = yShape[2 + i];
      for (int64_t o = 0; o < yShape[2 + i]; ++o)
        axisValues.push_back((o * window.strides[i] - window.pads[i]) *
                             axisStride[2 + i]);
      terms.push_back(ir.int64s(axisShape, axisValues));
    }
    return terms;
  }

  /// int64 flat indices -> int8 offsets (in forward).
  Value encode(IRBuilding &ir, Value indices, ValueRange originTerms) {
    Value r = ir.sub(indices, sum(ir, originTerms));
    if (xShape.size() == 4) {
      // Named in order: the order in which C++ evaluates arguments is up to
      // the compiler, and the ops' order is the schedule.
      Value span = scalar(ir, rowSpan());
      Value skipped = scalar(ir, rowSpan() - window.kernel[1]);
      r = ir.sub(r, ir.mul(ir.div(r, span), skipped));
    }
    return ir.cast(r, ir.getBuilder().getI8Type());
  }

  /// int8 offsets -> int64 flat indices (in backward).
  Value decode(IRBuilding &ir, Value offsets, ValueRange originTerms) {
    Value k = ir.cast(offsets, ir.getBuilder().getI64Type());
    if (xShape.size() == 4) {
      Value width = scalar(ir, window.kernel[1]);
      Value skipped = scalar(ir, rowSpan() - window.kernel[1]);
      k = ir.add(k, ir.mul(ir.div(k, width), skipped));
    }
    return ir.add(k, sum(ir, originTerms));
  }

private:
  int64_t rowSpan() const { return window.dilations[0] * xShape.back(); }
  static Value scalar(IRBuilding &ir, int64_t value) {
    return ir.scalar(ir.getBuilder().getI64Type(), double(value));
  }
  static Value sum(IRBuilding &ir, ValueRange terms) {
    Value total = terms.front();
    for (Value term : terms.drop_front())
      total = ir.add(total, term);
    return total;
  }

  SmallVector<int64_t> xShape, yShape;
  Window window;
  bool applies = false;
};
} // namespace

static FailureOr<SmallVector<Value>>
saveFor(ONNXMaxPoolOp op, OpBuilder &builder, ArrayRef<bool>) {
  if (op.getStorageOrder() != 0)
    return op.emitOpError("gradient needs storage_order = 0");
  // Where each maximum came from; X itself is not needed.
  if (isa<NoneType>(op.getIndices().getType()))
    op.getIndices().setType(cast<RankedTensorType>(op.getY().getType())
                                .clone(builder.getI64Type()));
  WindowOffsets offsets(op);
  if (!offsets.appliesToOp())
    return SmallVector<Value>{op.getIndices()};
  IRBuilding ir(builder, op.getLoc());
  SmallVector<Value> saved{Value()};
  llvm::append_range(saved, offsets.buildOriginTerms(ir));
  saved[0] = offsets.encode(ir, op.getIndices(), ArrayRef(saved).drop_front());
  return saved;
}

static Gradients gradientOf(ONNXMaxPoolOp op, IRBuilding &ir, ValueRange saved,
                            ValueRange dY, ArrayRef<bool>) {
  // Saved: the int64 indices, or the int8 offsets and the origin terms.
  Value indices = saved[0];
  if (saved.size() > 1)
    indices = WindowOffsets(op).decode(ir, indices, saved.drop_front());
  // Overlapping windows can pick one element twice: scatter-add.
  auto xType = cast<RankedTensorType>(op.getX().getType());
  int64_t count = xType.getNumElements();
  int64_t outCount = cast<RankedTensorType>(dY[0].getType()).getNumElements();
  auto flatType = RankedTensorType::get({count}, xType.getElementType());
  Value updates = ir.reshape(dY[0], {outCount});
  Value flatIndices = ir.reshape(indices, {outCount});
  Value flat =
      ir.scatterAdd(ir.zeros(flatType), flatIndices, updates, /*axis=*/0);
  return SmallVector<Value>{ir.reshape(flat, xType.getShape())};
}

static Gradients gradientOf(ONNXAveragePoolOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool>) {
  SmallVector<int64_t> kernel = intsOr(op.getKernelShape(), 0, 0);
  Window window;
  if (failed(getWindow(op, kernel, window)))
    return failure();
  bool padded = llvm::any_of(window.pads, [](int64_t p) { return p != 0; });
  if (op.getCeilMode() != 0 || (padded && op.getCountIncludePad() == 0))
    return op.emitOpError("gradient is supported without ceil_mode, and "
                          "with padding only when count_include_pad = 1");
  // Every window spreads its gradient evenly: a depthwise ConvTranspose with
  // a constant 1/k kernel.
  SmallVector<int64_t> xShape = shapeOf(op.getX());
  int64_t channels = xShape[1];
  int64_t size = 1;
  for (int64_t k : kernel)
    size *= k;
  SmallVector<int64_t> wShape{channels, 1};
  wShape.append(kernel.begin(), kernel.end());
  Type type = elementTypeOf(dY[0]);
  Value weights = ir.splat(RankedTensorType::get(wShape, type), 1.0 / size);
  return SmallVector<Value>{ir.convTranspose(
      dY[0], weights, window, channels,
      outputPadding(window, ArrayRef(xShape).drop_front(2),
                    ArrayRef(shapeOf(op.getY())).drop_front(2)),
      op.getX().getType())};
}

static Gradients gradientOf(ONNXGlobalAveragePoolOp op, IRBuilding &ir,
                            ValueRange, ValueRange dY, ArrayRef<bool>) {
  SmallVector<int64_t> xShape = shapeOf(op.getX());
  int64_t size = 1;
  for (int64_t d : ArrayRef(xShape).drop_front(2))
    size *= d;
  Value scaled = ir.mul(dY[0], ir.scalar(elementTypeOf(dY[0]), 1.0 / size));
  return SmallVector<Value>{ir.expand(scaled, xShape)};
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Broadcasts a reduction's gradient back over the reduced axes.
static Value unreduce(IRBuilding &ir, Value dY, Value input,
                      ArrayRef<int64_t> axes, double scale) {
  SmallVector<int64_t> shape = shapeOf(input);
  SmallVector<int64_t> kept(shape);
  for (int64_t axis : axes)
    kept[axis] = 1;
  Value grad = ir.reshape(dY, kept);
  if (scale != 1.0)
    grad = ir.mul(grad, ir.scalar(elementTypeOf(dY), scale));
  return ir.expand(grad, shape);
}

static SmallVector<int64_t>
reducedAxes(std::optional<SmallVector<int64_t>> axes, int64_t rank) {
  SmallVector<int64_t> result;
  if (!axes || axes->empty()) {
    result.resize(rank);
    std::iota(result.begin(), result.end(), 0);
    return result;
  }
  for (int64_t axis : *axes)
    result.push_back(normalizeAxis(axis, rank));
  return result;
}

static Gradients gradientOf(ONNXReduceMeanOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool>) {
  int64_t rank = rankOf(op.getData());
  std::optional<SmallVector<int64_t>> attrAxes;
  if (op.getAxes())
    attrAxes = intsOr(op.getAxes(), 0, 0);
  SmallVector<int64_t> axes = reducedAxes(attrAxes, rank);
  SmallVector<int64_t> shape = shapeOf(op.getData());
  int64_t count = 1;
  for (int64_t axis : axes)
    count *= shape[axis];
  return SmallVector<Value>{
      unreduce(ir, dY[0], op.getData(), axes, 1.0 / count)};
}

static Gradients gradientOf(ONNXReduceSumOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool>) {
  int64_t rank = rankOf(op.getData());
  bool hasAxes = !isa<NoneType>(op.getAxes().getType());
  std::optional<SmallVector<int64_t>> axes;
  if (hasAxes) {
    axes = getConstantInts(op.getAxes());
    if (!axes)
      return op.emitOpError("gradient needs constant axes");
  }
  SmallVector<Value> grads(2);
  if ((!axes || axes->empty()) && op.getNoopWithEmptyAxes()) {
    grads[0] = dY[0];
    return grads;
  }
  grads[0] = unreduce(ir, dY[0], op.getData(), reducedAxes(axes, rank), 1.0);
  return grads;
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// Axes of X that BatchNormalization reduces: all but the channel axis.
static SmallVector<int64_t> batchNormAxes(int64_t rank) {
  SmallVector<int64_t> axes{0};
  for (int64_t axis = 2; axis < rank; ++axis)
    axes.push_back(axis);
  return axes;
}

/// Shape [1, C, 1, ...]: per-channel values broadcast against X.
static SmallVector<int64_t> channelShape(ArrayRef<int64_t> xShape) {
  SmallVector<int64_t> shape(xShape.size(), 1);
  shape[1] = xShape[1];
  return shape;
}

static FailureOr<SmallVector<Value>>
saveFor(ONNXBatchNormalizationOp op, OpBuilder &builder, ArrayRef<bool>) {
  // Training mode: the input and the batch statistics (mean and 1/std per
  // channel, as PyTorch's save_mean / save_invstd). ONNX's op does not
  // output them, so they are computed next to it.
  // Scale is read too: a parameter, but in mixed precision its half copy.
  if (op.getTrainingMode() == 0)
    return SmallVector<Value>{op.getX(), op.getScale(), op.getInputMean(),
                              op.getInputVar()};
  IRBuilding ir(builder, op.getLoc());
  Value x = op.getX();
  SmallVector<int64_t> axes = batchNormAxes(rankOf(x));
  Value mean = ir.reduceMean(x, axes, /*keepdims=*/true);
  Value centered = ir.sub(x, mean);
  Value var = ir.reduceMean(ir.mul(centered, centered), axes, true);
  Type type = elementTypeOf(x);
  Value std =
      ir.sqrt(ir.add(var, ir.scalar(type, op.getEpsilon().convertToDouble())));
  Value invStd = ir.div(ir.scalar(type, 1.0), std);
  return SmallVector<Value>{x, op.getScale(), mean, invStd};
}

static Gradients gradientOf(ONNXBatchNormalizationOp op, IRBuilding &ir,
                            ValueRange saved, ValueRange dY,
                            ArrayRef<bool> wanted) {
  Value x = saved[0];
  SmallVector<int64_t> xShape = shapeOf(x);
  SmallVector<int64_t> axes = batchNormAxes(xShape.size());
  SmallVector<int64_t> perChannel = channelShape(xShape);
  Type type = elementTypeOf(x);
  bool training = op.getTrainingMode() != 0;
  Value mean, invStd;
  if (training) {
    mean = saved[2];
    invStd = saved[3];
  } else {
    mean = ir.reshape(op.getInputMean(), perChannel);
    Value epsilon = ir.scalar(type, op.getEpsilon().convertToDouble());
    Value std =
        ir.sqrt(ir.add(ir.reshape(op.getInputVar(), perChannel), epsilon));
    invStd = ir.div(ir.scalar(type, 1.0), std);
  }
  int64_t channels = xShape[1];
  Value xHat = ir.mul(ir.sub(x, mean), invStd);
  Value dBeta = ir.reduceSum(dY[0], axes, /*keepdims=*/true);
  Value dGamma = ir.reduceSum(ir.mul(dY[0], xHat), axes, true);
  SmallVector<Value> grads(5);
  if (wanted[1])
    grads[1] = ir.reshape(dGamma, {channels});
  if (wanted[2])
    grads[2] = ir.reshape(dBeta, {channels});
  if (wanted[0]) {
    Value gain = ir.mul(ir.reshape(op.getScale(), perChannel), invStd);
    if (training) {
      // dX = gamma invstd / m (m dY - sum dY - xhat sum(dY xhat)), with m
      // the elements per channel: the batch statistics depend on X too.
      double m = double(cast<RankedTensorType>(x.getType()).getNumElements()) /
                 channels;
      Value gammaTerm = ir.mul(xHat, dGamma);
      Value inner =
          ir.sub(ir.sub(ir.mul(dY[0], ir.scalar(type, m)), dBeta), gammaTerm);
      grads[0] = ir.mul(inner, ir.mul(gain, ir.scalar(type, 1.0 / m)));
    } else {
      grads[0] = ir.mul(dY[0], gain);
    }
  }
  return grads;
}

static FailureOr<SmallVector<Value>>
saveFor(ONNXLayerNormalizationOp op, OpBuilder &builder, ArrayRef<bool>) {
  // The input and the statistics the op already computes: expose its
  // optional Mean and InvStdDev outputs.
  auto xType = cast<RankedTensorType>(op.getX().getType());
  int64_t axis = normalizeAxis(op.getAxis(), xType.getRank());
  SmallVector<int64_t> statShape(xType.getShape());
  for (int64_t i = axis; i < xType.getRank(); ++i)
    statShape[i] = 1;
  Type statType =
      op.getStashType() == 1 ? builder.getF32Type() : xType.getElementType();
  for (Value stat : {op.getMean(), op.getInvStdDev()})
    if (isa<NoneType>(stat.getType()))
      stat.setType(RankedTensorType::get(statShape, statType));
  return SmallVector<Value>{op.getX(), op.getMean(), op.getInvStdDev(),
                            op.getScale()};
}

static Gradients gradientOf(ONNXLayerNormalizationOp op, IRBuilding &ir,
                            ValueRange saved, ValueRange dY,
                            ArrayRef<bool> wanted) {
  Value x = saved[0];
  Type type = elementTypeOf(x);
  int64_t rank = rankOf(x);
  int64_t axis = normalizeAxis(op.getAxis(), rank);
  SmallVector<int64_t> axes;
  for (int64_t i = axis; i < rank; ++i)
    axes.push_back(i);
  Value mean = ir.cast(saved[1], type), invStd = ir.cast(saved[2], type);
  Value xHat = ir.mul(ir.sub(x, mean), invStd);
  SmallVector<Value> grads(3);
  if (wanted[1])
    grads[1] = ir.sumTo(ir.mul(dY[0], xHat), op.getScale().getType());
  if (wanted[2])
    grads[2] = ir.sumTo(dY[0], op.getB().getType());
  if (wanted[0]) {
    // dX = invstd (g - mean(g) - xhat mean(g xhat)), g = dY Scale
    Value g = ir.mul(dY[0], op.getScale());
    Value meanG = ir.reduceMean(g, axes, /*keepdims=*/true);
    Value meanGX = ir.reduceMean(ir.mul(g, xHat), axes, true);
    Value meanGXTerm = ir.mul(xHat, meanGX);
    grads[0] = ir.mul(invStd, ir.sub(ir.sub(g, meanG), meanGXTerm));
  }
  return grads;
}

void gradient_rules::attachLayerGradients(MLIRContext *context) {
  attachGradientModels<
      ONNXGemmOp, ONNXMatMulOp, ONNXConvOp, ONNXConvTransposeOp, ONNXMaxPoolOp,
      ONNXAveragePoolOp, ONNXGlobalAveragePoolOp, ONNXReduceMeanOp,
      ONNXReduceSumOp, ONNXBatchNormalizationOp, ONNXLayerNormalizationOp>(
      context);
}

} // namespace vram
