//===- CostModel.cpp - per-op flops, traffic and workspace ----------------===//
//
// External models of CostModelOpInterface for the onnx and vram dialects and
// for all linalg structured ops, and the default for every other op. The
// formulas and their constants are explained in docs/cost-model.md; keep the
// two in sync.
//
//===----------------------------------------------------------------------===//

#include "vram/Analysis/CostModel.h"
#include "vram/Dialect/ONNX/ONNXDialect.h"
#include "vram/Dialect/ONNX/ONNXOps.h"
#include "vram/Dialect/ONNX/TensorSize.h"
#include "vram/Dialect/Vram/VramOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/CastInterfaces.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "vram/Analysis/CostModelInterface.cpp.inc"

using namespace mlir;

namespace vram {

//===----------------------------------------------------------------------===//
// Shape helpers. Dynamic dimensions count as 1 throughout: the cost model
// must answer for every op, and estimateOpCost marks such costs incomplete.
//===----------------------------------------------------------------------===//

static double dimOrOne(int64_t dim) {
  return ShapedType::isDynamic(dim) ? 1.0 : double(dim);
}

static double product(ArrayRef<int64_t> dims) {
  double result = 1;
  for (int64_t dim : dims)
    result *= dimOrOne(dim);
  return result;
}

/// Elements of a ranked shaped type; 0 for `none` and non-shaped types (an
/// absent optional operand moves nothing), 1 for an unranked one.
static double numElements(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped)
    return 0;
  return shaped.hasRank() ? product(shaped.getShape()) : 1.0;
}

static double numElements(Value value) { return numElements(value.getType()); }

static ArrayRef<int64_t> shapeOf(Value value) {
  if (auto ranked = dyn_cast<RankedTensorType>(value.getType()))
    return ranked.getShape();
  if (auto memref = dyn_cast<MemRefType>(value.getType()))
    return memref.getShape();
  return {};
}

/// Bytes of a tensor or memref: the shared exact size when the shape is
/// static, else the same formula with dynamic dimensions as 1.
static double byteSize(Type type) {
  FailureOr<uint64_t> exact = getTensorByteSize(type);
  if (succeeded(exact))
    return double(*exact);
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped)
    return 0;
  FailureOr<uint64_t> bits = getElementStorageBits(shaped.getElementType());
  if (failed(bits))
    return 0;
  return std::ceil(numElements(type) * double(*bits) / 8.0);
}

static double byteSize(Value value) { return byteSize(value.getType()); }

static double sumBytes(ValueRange values) {
  double total = 0;
  for (Value value : values)
    total += byteSize(value);
  return total;
}

static double operandAndResultBytes(Operation *op) {
  return sumBytes(op->getOperands()) + sumBytes(op->getResults());
}

static bool hasStaticShapes(Operation *op) {
  auto isStatic = [](Type type) {
    auto shaped = dyn_cast<ShapedType>(type);
    return !shaped || shaped.hasStaticShape();
  };
  return llvm::all_of(op->getOperandTypes(), isStatic) &&
         llvm::all_of(op->getResultTypes(), isStatic);
}

static bool isAbsent(Value value) { return isa<NoneType>(value.getType()); }

static std::optional<SmallVector<int64_t>>
toInts(std::optional<ArrayAttr> attr) {
  if (!attr)
    return std::nullopt;
  SmallVector<int64_t> ints;
  for (Attribute element : *attr)
    if (auto integer = dyn_cast<IntegerAttr>(element))
      ints.push_back(integer.getInt());
  return ints;
}

static bool allEqual(std::optional<SmallVector<int64_t>> values,
                     int64_t expected) {
  return !values ||
         llvm::all_of(*values, [&](int64_t v) { return v == expected; });
}

/// Bytes of `rows * cols` elements of `elementType`, saturating; 0 when the
/// element type has no storage size.
static uint64_t bufferBytes(double elements, Type elementType) {
  FailureOr<uint64_t> bits = getElementStorageBits(elementType);
  if (failed(bits) || elements <= 0)
    return 0;
  double bytes = std::ceil(elements * double(*bits) / 8.0);
  if (bytes >= double(std::numeric_limits<uint64_t>::max()))
    return std::numeric_limits<uint64_t>::max();
  return uint64_t(bytes);
}

static Type elementTypeOf(Value value) {
  if (auto shaped = dyn_cast<ShapedType>(value.getType()))
    return shaped.getElementType();
  return value.getType();
}

//===----------------------------------------------------------------------===//
// onnx dialect
//===----------------------------------------------------------------------===//

/// Cost of one elementwise op doing `flopsPerElement` per output element and
/// reading/writing each operand and result once.
static OpCost elementwise(Operation *op, double flopsPerElement) {
  OpCost cost;
  cost.flops = flopsPerElement * numElements(op->getResult(0));
  cost.bytesAccessed = operandAndResultBytes(op);
  return cost;
}

/// A pure data-movement op: no arithmetic, every operand read, result written.
static OpCost dataMovement(Operation *op) {
  OpCost cost;
  cost.bytesAccessed = operandAndResultBytes(op);
  return cost;
}

/// Workspace of a GEMM-based (im2col) convolution: the column matrix of one
/// image, `rows x cols` elements, rebuilt for each image of the batch.
///
/// Why non-zero: the convolution algorithms libraries fall back on when no
/// implicit-GEMM kernel fits (cuDNN's *_ALGO_GEMM, and any im2col lowering)
/// materialise this matrix, and autotuning picks algorithms up to the
/// workspace it is allowed, so a plan that reserves nothing can fail or run
/// slowly. Implicit-GEMM kernels need 0 and FFT ones more; the column buffer
/// of one image is the middle estimate. A pointwise convolution (kernel 1,
/// stride 1, no padding) is a plain GEMM on the input and needs none.
static uint64_t im2colWorkspace(ArrayRef<int64_t> kernel,
                                std::optional<SmallVector<int64_t>> strides,
                                std::optional<SmallVector<int64_t>> pads,
                                double rows, double cols, Type elementType) {
  bool pointwise = llvm::all_of(kernel, [](int64_t k) { return k == 1; }) &&
                   allEqual(strides, 1) && allEqual(pads, 0);
  if (pointwise)
    return 0;
  return bufferBytes(rows * cols, elementType);
}

/// Element `index` of the integer-array attribute `name` of `op`, or `fill`
/// when the attribute or the element is absent.
static int64_t intAttrAt(Operation *op, StringRef name, size_t index,
                         int64_t fill) {
  auto values = op->getAttrOfType<ArrayAttr>(name);
  if (!values || index >= values.size())
    return fill;
  auto value = dyn_cast<IntegerAttr>(values[index]);
  return value ? value.getInt() : fill;
}

/// Bytes of the temporaries the linalg lowering allocates for a convolution
/// (lib/Conversion/ONNXToLinalg/Conv.cpp), which live while it runs:
/// Conv convolves a zero-padded copy of X (none without padding);
/// ConvTranspose a zero-spread, padded copy of X with a flipped copy of W.
/// For a weight gradient (X^T with the batch as channels, dY as kernel) the
/// padded copy is several times one image's column matrix. Pads are
/// resolved as the lowering resolves them.
static uint64_t loweringTemporaryBytes(Operation *op, Value x, Value w,
                                       Value y, bool transposed) {
  ArrayRef<int64_t> xShape = shapeOf(x), wShape = shapeOf(w),
                    yShape = shapeOf(y);
  auto isStatic = [](ArrayRef<int64_t> shape) {
    return llvm::all_of(shape, [](int64_t dim) { return dim >= 0; });
  };
  if (xShape.size() < 3 || wShape.size() != xShape.size() ||
      yShape.size() != xShape.size() || !isStatic(xShape) ||
      !isStatic(wShape) || !isStatic(yShape))
    return 0;
  size_t rank = xShape.size() - 2;
  auto autoPadAttr = op->getAttrOfType<StringAttr>("auto_pad");
  StringRef autoPad = autoPadAttr ? autoPadAttr.getValue() : "NOTSET";
  double elements = double(xShape[0]) * double(xShape[1]);
  bool copies = transposed;
  for (size_t i = 0; i < rank; ++i) {
    int64_t in = xShape[2 + i], out = yShape[2 + i];
    int64_t stride = intAttrAt(op, "strides", i, 1);
    int64_t halo = intAttrAt(op, "dilations", i, 1) * (wShape[2 + i] - 1);
    int64_t padBegin = intAttrAt(op, "pads", i, 0);
    int64_t padEnd = intAttrAt(op, "pads", rank + i, 0);
    int64_t size;
    if (!transposed) {
      // Explicit pads, then what the last window still needs (all of the
      // padding under SAME and VALID).
      int64_t needed = (out - 1) * stride + halo + 1;
      size = std::max(autoPad == "NOTSET" ? in + padBegin + padEnd : in,
                      needed);
    } else {
      // X at the stride, with d(K-1) - pad zeros before and
      // d(K-1) - pad + output_padding after, where positive; pads follow
      // from the output shape under SAME or an output_shape attribute.
      int64_t outputPadding = intAttrAt(op, "output_padding", i, 0);
      int64_t total = stride * (in - 1) + outputPadding + halo + 1 - out;
      if (op->hasAttr("output_shape") || autoPad.starts_with("SAME")) {
        int64_t half = llvm::divideFloorSigned(total, 2);
        padBegin = autoPad == "SAME_UPPER" ? half : total - half;
      } else if (autoPad != "NOTSET") {
        padBegin = 0;
      }
      padEnd = total - padBegin;
      size = stride * (in - 1) + 1 + std::max<int64_t>(halo - padBegin, 0) +
             std::max<int64_t>(halo - padEnd + outputPadding, 0);
    }
    copies |= size != in;
    elements *= double(size);
  }
  if (!copies)
    return 0;
  Type elementType = elementTypeOf(x);
  uint64_t bytes = bufferBytes(elements, elementType);
  if (transposed)
    bytes += bufferBytes(numElements(w), elementType);
  return bytes;
}

static OpCost convCost(ONNXConvOp conv) {
  // X: [N, C, D1..Dn], W: [M, C/group, k1..kn], Y: [N, M, O1..On].
  // Every output element is a dot product of length C/group * k1*..*kn.
  ArrayRef<int64_t> wShape = shapeOf(conv.getW());
  ArrayRef<int64_t> xShape = shapeOf(conv.getX());
  ArrayRef<int64_t> yShape = shapeOf(conv.getY());
  OpCost cost;
  double outputs = numElements(conv.getY());
  double reduction = wShape.size() >= 2 ? product(wShape.drop_front()) : 1.0;
  cost.flops = 2 * outputs * reduction;
  if (!isAbsent(conv.getB()))
    cost.flops += outputs; // bias add
  cost.bytesAccessed = operandAndResultBytes(conv);
  if (wShape.size() >= 2 && xShape.size() >= 2 && yShape.size() >= 2) {
    // Column matrix of one image: (C * k1..kn) rows x (O1..On) columns.
    ArrayRef<int64_t> kernel = wShape.drop_front(2);
    double rows = dimOrOne(xShape[1]) * product(kernel);
    double cols = product(yShape.drop_front(2));
    cost.workspaceBytes = std::max(
        im2colWorkspace(kernel, toInts(conv.getStrides()),
                        toInts(conv.getPads()), rows, cols,
                        elementTypeOf(conv.getX())),
        loweringTemporaryBytes(conv, conv.getX(), conv.getW(), conv.getY(),
                               /*transposed=*/false));
  }
  return cost;
}

static OpCost convTransposeCost(ONNXConvTransposeOp conv) {
  // X: [N, C, D1..Dn], W: [C, M/group, k1..kn], Y: [N, M, O1..On].
  // Every input element is scattered, multiplied and accumulated into
  // M/group * k1*..*kn outputs.
  ArrayRef<int64_t> wShape = shapeOf(conv.getW());
  ArrayRef<int64_t> xShape = shapeOf(conv.getX());
  OpCost cost;
  double inputs = numElements(conv.getX());
  double fanOut = wShape.size() >= 2 ? product(wShape.drop_front()) : 1.0;
  cost.flops = 2 * inputs * fanOut;
  if (!isAbsent(conv.getB()))
    cost.flops += numElements(conv.getY()); // bias add
  cost.bytesAccessed = operandAndResultBytes(conv);
  if (wShape.size() >= 2 && xShape.size() >= 2) {
    // col2im: (M * k1..kn) rows x (D1..Dn) columns for one image.
    ArrayRef<int64_t> kernel = wShape.drop_front(2);
    double rows =
        dimOrOne(wShape[1]) * double(conv.getGroup()) * product(kernel);
    double cols = product(xShape.drop_front(2));
    cost.workspaceBytes = std::max(
        im2colWorkspace(kernel, toInts(conv.getStrides()),
                        toInts(conv.getPads()), rows, cols,
                        elementTypeOf(conv.getX())),
        loweringTemporaryBytes(conv, conv.getX(), conv.getW(), conv.getY(),
                               /*transposed=*/true));
  }
  return cost;
}

static OpCost matMulCost(ONNXMatMulOp matmul) {
  // numpy matmul: A [..., M, K] (or [K]), B [..., K, N] (or [K]). Each
  // element of Y, batch dimensions included after broadcasting, is a dot
  // product of length K, the last dimension of A in every case.
  ArrayRef<int64_t> aShape = shapeOf(matmul.getA());
  double k = aShape.empty() ? 1.0 : dimOrOne(aShape.back());
  OpCost cost;
  cost.flops = 2 * numElements(matmul.getY()) * k;
  cost.bytesAccessed = operandAndResultBytes(matmul);
  return cost;
}

static OpCost einsumCost(ONNXEinsumOp einsum) {
  // One multiply per extra operand and one add at every point of the
  // iteration space (every label's extent multiplied).
  OpCost cost = dataMovement(einsum);
  llvm::Expected<EinsumSpec> spec = einsum.getSpec();
  if (!spec) {
    llvm::consumeError(spec.takeError());
    return cost;
  }
  double points = 1;
  for (const auto &[label, extent] : spec->extents)
    points *= dimOrOne(extent);
  cost.flops = points * spec->inputs.size();
  return cost;
}

static OpCost gemmCost(ONNXGemmOp gemm) {
  // Y[M, N] = alpha * A'[M, K] B'[K, N] + beta * C.
  ArrayRef<int64_t> aShape = shapeOf(gemm.getA());
  double k = 1;
  if (aShape.size() == 2)
    k = dimOrOne(gemm.getTransA() ? aShape[0] : aShape[1]);
  double outputs = numElements(gemm.getY());
  OpCost cost;
  cost.flops = 2 * outputs * k;
  if (gemm.getAlpha().convertToDouble() != 1.0)
    cost.flops += outputs;
  if (!isAbsent(gemm.getC())) {
    cost.flops += outputs; // + C
    if (gemm.getBeta().convertToDouble() != 1.0)
      cost.flops += outputs;
  }
  cost.bytesAccessed = operandAndResultBytes(gemm);
  return cost;
}

/// Product of a pooling op's kernel_shape attribute.
static double kernelVolume(ArrayAttr kernelShape) {
  double volume = 1;
  for (Attribute dim : kernelShape)
    if (auto integer = dyn_cast<IntegerAttr>(dim))
      volume *= double(std::max<int64_t>(integer.getInt(), 1));
  return volume;
}

/// Per-output-element flops of Resize: each output interpolates 2 (linear) or
/// 4 (cubic) input elements along every resized axis, a weight multiply and
/// an add each; nearest copies.
static double resizeFlopsPerElement(ONNXResizeOp resize) {
  StringRef mode = resize.getMode();
  double taps = mode == "linear" ? 2 : mode == "cubic" ? 4 : 0;
  if (taps == 0)
    return 0;
  ArrayRef<int64_t> in = shapeOf(resize.getX());
  ArrayRef<int64_t> out = shapeOf(resize.getY());
  double contributing = 1;
  if (in.size() == out.size())
    for (auto [i, o] : llvm::zip(in, out))
      if (i != o)
        contributing *= taps;
  return 2 * contributing;
}

static OpCost computeONNXCost(Operation *op) {
  return llvm::TypeSwitch<Operation *, OpCost>(op)
      // Views: a reshape of a dense row-major buffer is the same buffer, so
      // nothing is computed or moved. Constants and absent values are data,
      // not kernels.
      .Case<ONNXReshapeOp, ONNXFlattenOp, ONNXSqueezeOp, ONNXUnsqueezeOp,
            ONNXIdentityOp, ONNXConstantOp, ONNXNoValueOp>(
          [](Operation *) { return OpCost(); })
      .Case([](ONNXConvOp conv) { return convCost(conv); })
      .Case([](ONNXConvTransposeOp conv) { return convTransposeCost(conv); })
      .Case([](ONNXMatMulOp matmul) { return matMulCost(matmul); })
      .Case([](ONNXEinsumOp einsum) { return einsumCost(einsum); })
      .Case([](ONNXGemmOp gemm) { return gemmCost(gemm); })
      .Case([](ONNXBatchNormalizationOp bn) {
        // Inference: y = x * a + b with per-channel a, b folded from scale,
        // bias, mean, var (per-channel work is negligible): 2 per element.
        // Training adds the batch mean (1) and variance (sub, mul, add: 3).
        OpCost cost = dataMovement(bn);
        cost.flops = (bn.getTrainingMode() ? 6 : 2) * numElements(bn.getX());
        return cost;
      })
      .Case([](ONNXLayerNormalizationOp ln) {
        // mean 1, variance 3 (sub, mul, add), normalise 2 (sub, mul by the
        // per-row inverse std-dev), scale 1, bias 1 when present.
        OpCost cost = dataMovement(ln);
        cost.flops = (isAbsent(ln.getB()) ? 7 : 8) * numElements(ln.getX());
        return cost;
      })
      .Case<ONNXSoftmaxOp, ONNXLogSoftmaxOp>([](auto softmax) {
        // Numerically stable: max 1, subtract 1, exp, sum 1, then divide 1
        // (Softmax) or subtract the row's log-sum 1 (LogSoftmax; one log per
        // row, not counted).
        return elementwise(softmax, 4 + kTranscendentalFlops);
      })
      .Case([](ONNXMaxPoolOp pool) {
        // One comparison per window element per output.
        OpCost cost = dataMovement(pool);
        cost.flops =
            kernelVolume(pool.getKernelShape()) * numElements(pool.getY());
        return cost;
      })
      .Case([](ONNXAveragePoolOp pool) {
        // window - 1 adds and one scale per output.
        OpCost cost = dataMovement(pool);
        cost.flops =
            kernelVolume(pool.getKernelShape()) * numElements(pool.getY());
        return cost;
      })
      .Case<ONNXGlobalAveragePoolOp, ONNXReduceMeanOp, ONNXReduceSumOp>(
          [](Operation *reduce) {
            // One add per input element (the mean's final scale replaces
            // the first add of each output).
            OpCost cost = dataMovement(reduce);
            cost.flops = numElements(reduce->getOperand(0));
            return cost;
          })
      .Case([](ONNXDropoutOp dropout) {
        // Without training_mode it is the identity (a copy). Otherwise one
        // compare of a random number against the ratio and one scale per
        // element; the integer work of the random generator is not counted.
        OpCost cost = dataMovement(dropout);
        if (!isAbsent(dropout.getTrainingMode()))
          cost.flops = 2 * numElements(dropout.getData());
        return cost;
      })
      // Elementwise, 1 per output element.
      .Case<ONNXReluOp, ONNXNegOp, ONNXAbsOp, ONNXTriluOp, ONNXAddOp, ONNXSubOp,
            ONNXMulOp, ONNXDivOp, ONNXReciprocalOp, ONNXWhereOp, ONNXCastOp>(
          [](Operation *op) { return elementwise(op, 1); })
      .Case(
          [](ONNXLeakyReluOp op) { return elementwise(op, 2); }) // mul, select
      .Case([](ONNXHardSigmoidOp op) {
        return elementwise(op, 4); // fma 2, min, max
      })
      .Case([](ONNXHardSwishOp op) {
        return elementwise(op, 5); // x * hard_sigmoid(x)
      })
      .Case([](ONNXClipOp clip) {
        // One min or max per bound present; none is a copy.
        double bounds = (isAbsent(clip.getMin()) ? 0 : 1) +
                        (isAbsent(clip.getMax()) ? 0 : 1);
        OpCost cost = elementwise(clip, bounds);
        return cost;
      })
      .Case<ONNXExpOp, ONNXLogOp, ONNXCosOp, ONNXSinOp, ONNXTanhOp, ONNXErfOp>(
          [](Operation *op) { return elementwise(op, kTranscendentalFlops); })
      .Case([](ONNXSqrtOp op) { return elementwise(op, kSqrtFlops); })
      .Case([](ONNXSigmoidOp op) {
        return elementwise(op, kTranscendentalFlops + 2); // exp, add, divide
      })
      .Case([](ONNXSwishOp swish) {
        // x * sigmoid(alpha x): the sigmoid and two multiplies.
        return elementwise(swish, kTranscendentalFlops + 4);
      })
      .Case([](ONNXGeluOp gelu) {
        // none: 0.5 x (1 + erf(x / sqrt 2)): erf + 4.
        // tanh: 0.5 x (1 + tanh(c (x + 0.044715 x^3))): tanh + 8.
        double extra = gelu.getApproximate() == "tanh" ? 8 : 4;
        return elementwise(gelu, kTranscendentalFlops + extra);
      })
      .Case([](ONNXPowOp op) {
        return elementwise(op, 2 * kTranscendentalFlops + 1); // exp(y log x)
      })
      .Case([](ONNXResizeOp resize) {
        return elementwise(resize, resizeFlopsPerElement(resize));
      })
      // Reads only the part of `data` it returns, plus the small index
      // operands.
      .Case([](ONNXSliceOp slice) {
        OpCost cost;
        cost.bytesAccessed = 2 * byteSize(slice.getOutput()) +
                             sumBytes(slice->getOperands().drop_front());
        return cost;
      })
      .Case([](ONNXGatherOp gather) {
        OpCost cost;
        cost.bytesAccessed =
            2 * byteSize(gather.getOutput()) + byteSize(gather.getIndices());
        return cost;
      })
      // Reads only metadata; writes a tiny int64 tensor.
      .Case([](ONNXShapeOp shape) {
        OpCost cost;
        cost.bytesAccessed = byteSize(shape.getShape());
        return cost;
      })
      .Case<ONNXTransposeOp, ONNXConcatOp, ONNXSplitOp, ONNXExpandOp,
            ONNXPadOp>([](Operation *op) { return dataMovement(op); })
      // An onnx op added to the dialect without a formula here: the same
      // default as for ops of other dialects.
      .Default([](Operation *op) {
        OpCost cost;
        cost.flops = 0;
        for (Value result : op->getResults())
          cost.flops += numElements(result);
        cost.bytesAccessed = operandAndResultBytes(op);
        return cost;
      });
}

namespace {
/// The interface on `OpT`, answered by a function of the whole op.
template <typename OpT, OpCost (*computeCost)(Operation *)>
struct ComputedCostModel : public CostModelOpInterface::ExternalModel<
                               ComputedCostModel<OpT, computeCost>, OpT> {
  double getFlops(Operation *op) const { return computeCost(op).flops; }
  double getBytesAccessed(Operation *op) const {
    return computeCost(op).bytesAccessed;
  }
  uint64_t getWorkspaceBytes(Operation *op) const {
    return computeCost(op).workspaceBytes;
  }
};
} // namespace

template <typename OpT> static void attachONNXCostModel(MLIRContext *context) {
  // onnx.Node is an operator the frontend does not know: claiming a model for
  // it would hide that its cost is a guess, so it keeps the default.
  if constexpr (!std::is_same_v<OpT, ONNXNodeOp>)
    OpT::template attachInterface<ComputedCostModel<OpT, computeONNXCost>>(
        *context);
}

template <typename... OpTs>
static void attachONNXCostModels(MLIRContext *context) {
  (attachONNXCostModel<OpTs>(context), ...);
}

//===----------------------------------------------------------------------===//
// vram dialect
//===----------------------------------------------------------------------===//

/// Floating-point operations per element of each update rule, a multiply-add
/// counting as 2: sgd one, momentum two, Adam two per moment, the square
/// root, two divisions, an add and the final multiply-add; decay one more.
static double getUpdateFlopsPerElement(UpdateOp op) {
  double flops = 0;
  switch (op.getRule()) {
  case UpdateRule::SGD:
    flops = 2;
    break;
  case UpdateRule::Momentum:
    flops = 4;
    break;
  case UpdateRule::Adam:
  case UpdateRule::AdamW:
    flops = 2 + 3 + kSqrtFlops + 2 + 1 + 2;
    break;
  }
  if (op.getWeightDecay().convertToDouble() != 0)
    flops += 2;
  // Accumulating: the add, the mean's scaling and the selects.
  if (op.getAccumulate() > 1)
    flops += 2 + op.getInits().size();
  return flops;
}

static OpCost computeVramCost(Operation *op) {
  OpCost cost;
  TypeSwitch<Operation *>(op)
      // A copy does no arithmetic; on the device side it reads or writes the
      // tensor once. Its duration is set by the host link, not by this
      // roofline: see estimateHostTransferSeconds.
      .Case<OffloadOp, PrefetchOp>([&](auto copy) {
        cost.bytesAccessed = double(copy.getTransferBytes());
      })
      // Reads the gradient and each init once and writes each init once.
      .Case([&](UpdateOp update) {
        Value gradient = update.getGradient();
        cost.flops = getUpdateFlopsPerElement(update) * numElements(gradient);
        cost.bytesAccessed =
            byteSize(gradient) * double(1 + 2 * update.getInits().size());
      })
      .Case([&](IncrementOp) {
        cost.flops = 1;
        cost.bytesAccessed = 8;
      });
  return cost;
}

template <typename... OpTs>
static void attachVramCostModels(MLIRContext *context) {
  (OpTs::template attachInterface<ComputedCostModel<OpTs, computeVramCost>>(
       *context),
   ...);
}

//===----------------------------------------------------------------------===//
// linalg structured ops
//===----------------------------------------------------------------------===//

/// Flops of one payload op for one iteration. Only arith and math compute;
/// constants and casts (arith.extf in a mixed-precision matmul) are free, so
/// that a multiply-add counts 2 whatever the operand precisions.
static double payloadOpFlops(Operation *op) {
  StringRef dialect = op->getDialect() ? op->getDialect()->getNamespace() : "";
  if (dialect == "arith") {
    if (isa<CastOpInterface>(op) || op->hasTrait<OpTrait::ConstantLike>())
      return 0;
    return 1;
  }
  if (dialect == "math") {
    StringRef name = op->getName().stripDialect();
    return llvm::StringSwitch<double>(name)
        .Cases({"sqrt", "rsqrt"}, kSqrtFlops)
        .Case("fma", 2)
        .Case("powf", 2 * kTranscendentalFlops + 1)
        .Cases({"exp",   "exp2",  "expm1", "log",   "log2",  "log10",
                "log1p", "tanh",  "erf",   "erfc",  "sin",   "cos",
                "tan",   "asin",  "acos",  "atan",  "atan2", "sinh",
                "cosh",  "asinh", "acosh", "atanh", "cbrt"},
               kTranscendentalFlops)
        .Default(1);
  }
  return 0;
}

static OpCost computeLinalgCost(linalg::LinalgOp linalgOp) {
  // Iteration domain x payload work: a matmul's domain is M x N x K and its
  // payload a mulf and an addf, so 2*M*N*K.
  double iterations = product(linalgOp.getStaticLoopRanges());
  double perIteration = 0;
  linalgOp.getBlock()->walk(
      [&](Operation *inner) { perIteration += payloadOpFlops(inner); });
  OpCost cost;
  cost.flops = iterations * std::max(perIteration, 1.0);
  // Inputs are read, inits written, and read too when the payload uses their
  // value (accumulators); scalar operands (linalg.fill's value) are free.
  for (OpOperand *input : linalgOp.getDpsInputOperands())
    cost.bytesAccessed += byteSize(input->get());
  for (OpOperand &init : linalgOp.getDpsInitsMutable()) {
    double bytes = byteSize(init.get());
    cost.bytesAccessed += bytes;
    if (linalgOp.payloadUsesValueFromOperand(&init))
      cost.bytesAccessed += bytes;
  }
  return cost;
}

namespace {
template <typename OpT>
struct LinalgCostModel
    : public CostModelOpInterface::ExternalModel<LinalgCostModel<OpT>, OpT> {
  double getFlops(Operation *op) const {
    return computeLinalgCost(cast<linalg::LinalgOp>(op)).flops;
  }
  double getBytesAccessed(Operation *op) const {
    return computeLinalgCost(cast<linalg::LinalgOp>(op)).bytesAccessed;
  }
};
} // namespace

template <typename... OpTs>
static void attachLinalgCostModels(MLIRContext *context) {
  (OpTs::template attachInterface<LinalgCostModel<OpTs>>(*context), ...);
}

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

OpCost estimateOpCost(Operation *op) {
  OpCost cost;
  if (auto model = dyn_cast<CostModelOpInterface>(op)) {
    cost.flops = model.getFlops();
    cost.bytesAccessed = model.getBytesAccessed();
    cost.workspaceBytes = model.getWorkspaceBytes();
  } else if (!op->hasTrait<OpTrait::IsTerminator>()) {
    for (Value result : op->getResults())
      cost.flops += numElements(result);
    cost.bytesAccessed = operandAndResultBytes(op);
  }
  cost.complete = hasStaticShapes(op);
  return cost;
}

bool hasCostModel(Operation *op) { return isa<CostModelOpInterface>(op); }

void registerCostModelExternalModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, ONNXDialect *) {
    attachONNXCostModels<
#define GET_OP_LIST
#include "vram/Dialect/ONNX/ONNXOps.cpp.inc"
        >(context);
  });
  registry.addExtension(+[](MLIRContext *context, VramDialect *) {
    attachVramCostModels<OffloadOp, PrefetchOp, UpdateOp, IncrementOp>(context);
  });
  registry.addExtension(+[](MLIRContext *context, linalg::LinalgDialect *) {
    attachLinalgCostModels<
#define GET_OP_LIST
#include "mlir/Dialect/Linalg/IR/LinalgStructuredOps.cpp.inc"
        >(context);
  });
}

} // namespace vram
