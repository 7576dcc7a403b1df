//===- ONNXOps.td - ONNX operators as MLIR ops -------------*- tablegen -*-===//
//
// Operand, result and attribute names follow the ONNX operator specification
// at opset 17 (the importer maps other versions onto it); optional inputs and
// outputs are `none` when absent.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_DIALECT_ONNX_ONNXOPS_TD
#define VRAM_DIALECT_ONNX_ONNXOPS_TD

include "vram/Dialect/ONNX/ONNXDialect.td"
include "vram/Dialect/ONNX/ONNXInterfaces.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ViewLikeInterface.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// An optional ONNX input or output: a tensor, or `none` when the node omits it.
def ONNX_TensorOrNone : AnyTypeOf<[AnyTensor, NoneType], "tensor or none">;

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

// Ops whose result reuses its input's storage: contiguous data reinterpreted
// with another shape. Runtimes (ONNX Runtime, PyTorch's view ops) do not copy
// here, and vram-opt's lowering maps them to tensor reshapes that bufferize
// to views, so the memory analysis counts the storage once.
def ONNX_ViewOf : DeclareOpInterfaceMethods<ViewLikeOpInterface,
                                            ["getViewSource"]>;

// Ops whose result types follow from their operands (all but the structural
// ones): the importer and `vram-onnx-infer-shapes` ask them.
def ONNX_InferShapes : DeclareOpInterfaceMethods<ONNX_InferShapesOpInterface>;

// Every op prints like a call: `onnx.Conv(%x, %w, %b) {attrs} : (types) -> types`.
class ONNX_Op<string mnemonic, list<Trait> traits = []> :
    Op<ONNX_Dialect, mnemonic, traits> {
  let assemblyFormat = [{
    `(` operands `)` attr-dict `:` functional-type(operands, results)
  }];
}

// Shape-preserving ops. Not SameOperandsAndResultType: through it ODS would
// infer the result type and reject a result that is only compatible with the
// operand (tensor<?x?xf32> for tensor<2x3xf32>), as ONNX shape inference
// leaves outputs it cannot compute (com.microsoft Gelu).
class ONNX_UnaryOp<string mnemonic, string what, list<Trait> traits = []> :
    ONNX_Op<mnemonic, !listconcat([Pure, SameOperandsAndResultElementType,
                                   SameOperandsAndResultShape, ONNX_InferShapes],
                                  traits)> {
  let summary = what;
  let arguments = (ins AnyTensor:$X);
  let results = (outs AnyTensor:$Y);
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::inferResultTypes(
        ::llvm::SmallVectorImpl<::mlir::Type> &resultTypes) {
      return inferSameTypeAsOperand(getX(), resultTypes);
    }
  }];
}

// Binary ops with multidirectional (numpy) broadcasting.
class ONNX_BroadcastBinaryOp<string mnemonic, string what,
                             list<Trait> traits = []> :
    ONNX_Op<mnemonic, !listconcat([Pure, ResultsBroadcastableShape,
                                   ONNX_InferShapes], traits)> {
  let summary = what;
  let arguments = (ins AnyTensor:$A, AnyTensor:$B);
  let results = (outs AnyTensor:$C);
  // Folds integer shape arithmetic (Shape -> Mul -> Reshape chains).
  let hasFolder = 1;
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::inferResultTypes(
        ::llvm::SmallVectorImpl<::mlir::Type> &resultTypes) {
      return inferBroadcastResult(getOperation(), getOperands(),
                                  /*elementType=*/nullptr, resultTypes);
    }
  }];
}

//===----------------------------------------------------------------------===//
// Structural ops
//===----------------------------------------------------------------------===//

def ONNXNoValueOp : ONNX_Op<"NoValue", [Pure]> {
  let summary = "the absent value of an optional ONNX input";
  let arguments = (ins);
  let results = (outs NoneType:$none);
  let assemblyFormat = "attr-dict";
  let builders = [OpBuilder<(ins), [{
    build($_builder, $_state, $_builder.getNoneType());
  }]>];
}

def ONNXNodeOp : ONNX_Op<"Node"> {
  let summary = "an ONNX node whose operator has no dedicated op";
  let description = [{
    Keeps the node lossless: `op_type` and `domain` name the operator, every
    ONNX attribute stays an attribute, and results carry the types the
    importer found for them (shape rules for common operators, the file's
    value_info, or libonnx's inference up to opset 17). Analyses see sizes
    and liveness; lowering refuses it with an error that names the operator.
  }];
  let arguments = (ins StrAttr:$op_type, DefaultValuedStrAttr<StrAttr, "">:$domain,
                       Variadic<ONNX_TensorOrNone>:$inputs);
  let results = (outs Variadic<ONNX_TensorOrNone>:$outputs);
  let assemblyFormat = [{
    $op_type `(` $inputs `)` attr-dict `:` functional-type($inputs, results)
  }];
  // Integer shape arithmetic of operators without a dedicated op (Mod,
  // Min, Max, comparisons) folds like that of Add or Mul, so the shapes it
  // computes become static.
  let hasFolder = 1;
}

def ONNXConstantOp : ONNX_Op<"Constant", [Pure, ConstantLike]> {
  let summary = "a constant tensor";
  let description = [{
    The importer normalises every ONNX way of writing a constant (`value`,
    `value_float`, `value_ints`, ...) into one `value` attribute.
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs AnyTensor:$output);
  // A 1-d int64 constant: the shapes, axes and pads passes build.
  let builders = [OpBuilder<(ins "::llvm::ArrayRef<int64_t>":$values), [{
    auto type = ::mlir::RankedTensorType::get({int64_t(values.size())},
                                              $_builder.getI64Type());
    build($_builder, $_state, type,
          ::mlir::DenseIntElementsAttr::get(type, values));
  }]>];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def ONNXIdentityOp : ONNX_UnaryOp<"Identity", "identity", [ONNX_ViewOf]> {
  // Of a constant (shape computations: RotaryEmbedding's expansion passes
  // a head size through Identity); otherwise the op stays, one per node.
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise activations and math
//===----------------------------------------------------------------------===//

def ONNXReluOp : ONNX_UnaryOp<"Relu", "max(x, 0)">;
def ONNXSigmoidOp : ONNX_UnaryOp<"Sigmoid", "1 / (1 + exp(-x))">;
def ONNXTanhOp : ONNX_UnaryOp<"Tanh", "hyperbolic tangent">;
def ONNXErfOp : ONNX_UnaryOp<"Erf", "Gauss error function">;
def ONNXSqrtOp : ONNX_UnaryOp<"Sqrt", "square root">;
def ONNXReciprocalOp : ONNX_UnaryOp<"Reciprocal", "1 / x">;
def ONNXNegOp : ONNX_UnaryOp<"Neg", "negation">;
def ONNXExpOp : ONNX_UnaryOp<"Exp", "exponential">;
def ONNXLogOp : ONNX_UnaryOp<"Log", "natural logarithm">;
def ONNXCosOp : ONNX_UnaryOp<"Cos", "cosine">;
def ONNXSinOp : ONNX_UnaryOp<"Sin", "sine">;
def ONNXAbsOp : ONNX_UnaryOp<"Abs", "absolute value">;
def ONNXHardSwishOp : ONNX_UnaryOp<"HardSwish", "x * max(0, min(1, x/6 + 1/2))">;

def ONNXLeakyReluOp : ONNX_UnaryOp<"LeakyRelu", "x if x >= 0 else alpha * x"> {
  let arguments = (ins AnyTensor:$X, DefaultValuedAttr<F32Attr, "0.01">:$alpha);
}

def ONNXHardSigmoidOp : ONNX_UnaryOp<"HardSigmoid",
                                     "max(0, min(1, alpha * x + beta))"> {
  let arguments = (ins AnyTensor:$X, DefaultValuedAttr<F32Attr, "0.2">:$alpha,
                       DefaultValuedAttr<F32Attr, "0.5">:$beta);
}

// Not in the default domain before opset 20; exporters emit it in
// com.microsoft. Both import to this op.
def ONNXGeluOp : ONNX_UnaryOp<"Gelu", "Gaussian error linear unit"> {
  let arguments = (ins AnyTensor:$X,
                       DefaultValuedStrAttr<StrAttr, "none">:$approximate);
}

// In the default domain since opset 24; older exports write
// Mul(x, Sigmoid(x)) for nn.SiLU, which the importer fuses into this op.
def ONNXSwishOp : ONNX_UnaryOp<"Swish", "x * sigmoid(alpha * x)"> {
  let arguments = (ins AnyTensor:$X, DefaultValuedAttr<F32Attr, "1.0">:$alpha);
}

def ONNXClipOp : ONNX_Op<"Clip", [ONNX_InferShapes, Pure]> {
  let summary = "clamps to [min, max]; either bound may be absent";
  let arguments = (ins AnyTensor:$input, ONNX_TensorOrNone:$min,
                       ONNX_TensorOrNone:$max);
  let results = (outs AnyTensor:$output);
}

def ONNXTriluOp : ONNX_Op<"Trilu", [ONNX_InferShapes, Pure]> {
  let summary = "keeps the upper (or lower) triangle of the last two "
                "dimensions from diagonal k, zeroes the rest";
  let arguments = (ins AnyTensor:$input, ONNX_TensorOrNone:$k,
                       DefaultValuedAttr<I64Attr, "1">:$upper);
  let results = (outs AnyTensor:$output);
}

def ONNXAddOp : ONNX_BroadcastBinaryOp<"Add", "elementwise sum",
                                       [SameOperandsAndResultElementType]>;
def ONNXSubOp : ONNX_BroadcastBinaryOp<"Sub", "elementwise difference",
                                       [SameOperandsAndResultElementType]>;
def ONNXMulOp : ONNX_BroadcastBinaryOp<"Mul", "elementwise product",
                                       [SameOperandsAndResultElementType]>;
def ONNXDivOp : ONNX_BroadcastBinaryOp<"Div", "elementwise quotient",
                                       [SameOperandsAndResultElementType]>;

def ONNXPowOp : ONNX_Op<"Pow", [ONNX_InferShapes, Pure, ResultsBroadcastableShape]> {
  let summary = "X raised to the power Y; Y may have another element type";
  let arguments = (ins AnyTensor:$X, AnyTensor:$Y);
  let results = (outs AnyTensor:$Z);
}

def ONNXWhereOp : ONNX_Op<"Where", [ONNX_InferShapes, Pure, ResultsBroadcastableShape]> {
  let summary = "selects X where condition holds, else Y";
  let arguments = (ins AnyTensor:$condition, AnyTensor:$X, AnyTensor:$Y);
  let results = (outs AnyTensor:$output);
  let hasFolder = 1;
}

def ONNXCastOp : ONNX_Op<"Cast", [ONNX_InferShapes, Pure, SameOperandsAndResultShape]> {
  let summary = "converts to element type `to` (an ONNX TensorProto.DataType)";
  let description = [{
    Conversions to 8- and 4-bit floats round to nearest even and, with
    `saturate`, clamp what overflows to the largest finite value (else it
    becomes infinity, or NaN where there is none); to float8e8m0 they round
    by `round_mode` (up, down, nearest).
  }];
  let arguments = (ins AnyTensor:$input, I64Attr:$to,
                       DefaultValuedAttr<I64Attr, "1">:$saturate,
                       DefaultValuedStrAttr<StrAttr, "up">:$round_mode);
  let results = (outs AnyTensor:$output);
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Convolution, normalisation, pooling
//===----------------------------------------------------------------------===//

def ONNXConvOp : ONNX_Op<"Conv", [ONNX_InferShapes, Pure]> {
  let summary = "N-d convolution with groups, strides, pads and dilations";
  let arguments = (ins AnyTensor:$X, AnyTensor:$W, ONNX_TensorOrNone:$B,
                       DefaultValuedStrAttr<StrAttr, "NOTSET">:$auto_pad,
                       OptionalAttr<I64ArrayAttr>:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group,
                       OptionalAttr<I64ArrayAttr>:$kernel_shape,
                       OptionalAttr<I64ArrayAttr>:$pads,
                       OptionalAttr<I64ArrayAttr>:$strides);
  let results = (outs AnyTensor:$Y);
  let hasVerifier = 1;
}

def ONNXConvTransposeOp : ONNX_Op<"ConvTranspose", [ONNX_InferShapes, Pure]> {
  let summary = "N-d transposed convolution";
  let arguments = (ins AnyTensor:$X, AnyTensor:$W, ONNX_TensorOrNone:$B,
                       DefaultValuedStrAttr<StrAttr, "NOTSET">:$auto_pad,
                       OptionalAttr<I64ArrayAttr>:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group,
                       OptionalAttr<I64ArrayAttr>:$kernel_shape,
                       OptionalAttr<I64ArrayAttr>:$output_padding,
                       OptionalAttr<I64ArrayAttr>:$output_shape,
                       OptionalAttr<I64ArrayAttr>:$pads,
                       OptionalAttr<I64ArrayAttr>:$strides);
  let results = (outs AnyTensor:$Y);
  let hasVerifier = 1;
}

def ONNXBatchNormalizationOp : ONNX_Op<"BatchNormalization", [ONNX_InferShapes, Pure]> {
  let summary = "batch normalization; in training mode also updated statistics";
  let arguments = (ins AnyTensor:$X, AnyTensor:$scale, AnyTensor:$B,
                       AnyTensor:$input_mean, AnyTensor:$input_var,
                       DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon,
                       DefaultValuedAttr<F32Attr, "0.9">:$momentum,
                       DefaultValuedAttr<I64Attr, "0">:$training_mode);
  let results = (outs AnyTensor:$Y, ONNX_TensorOrNone:$running_mean,
                      ONNX_TensorOrNone:$running_var);
  let hasVerifier = 1;
}

def ONNXLayerNormalizationOp : ONNX_Op<"LayerNormalization", [ONNX_InferShapes, Pure]> {
  let summary = "normalization over the trailing dimensions from `axis`";
  let arguments = (ins AnyTensor:$X, AnyTensor:$Scale, ONNX_TensorOrNone:$B,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon,
                       DefaultValuedAttr<I64Attr, "1">:$stash_type);
  let results = (outs AnyTensor:$Y, ONNX_TensorOrNone:$Mean,
                      ONNX_TensorOrNone:$InvStdDev);
  let hasVerifier = 1;
}

def ONNXMaxPoolOp : ONNX_Op<"MaxPool", [ONNX_InferShapes, Pure]> {
  let summary = "max pooling; optionally the flat indices of the maxima";
  let arguments = (ins AnyTensor:$X,
                       DefaultValuedStrAttr<StrAttr, "NOTSET">:$auto_pad,
                       DefaultValuedAttr<I64Attr, "0">:$ceil_mode,
                       OptionalAttr<I64ArrayAttr>:$dilations,
                       I64ArrayAttr:$kernel_shape,
                       OptionalAttr<I64ArrayAttr>:$pads,
                       DefaultValuedAttr<I64Attr, "0">:$storage_order,
                       OptionalAttr<I64ArrayAttr>:$strides);
  let results = (outs AnyTensor:$Y, ONNX_TensorOrNone:$Indices);
  let hasVerifier = 1;
}

def ONNXAveragePoolOp : ONNX_Op<"AveragePool", [ONNX_InferShapes, Pure]> {
  let summary = "average pooling";
  let arguments = (ins AnyTensor:$X,
                       DefaultValuedStrAttr<StrAttr, "NOTSET">:$auto_pad,
                       DefaultValuedAttr<I64Attr, "0">:$ceil_mode,
                       DefaultValuedAttr<I64Attr, "0">:$count_include_pad,
                       OptionalAttr<I64ArrayAttr>:$dilations,
                       I64ArrayAttr:$kernel_shape,
                       OptionalAttr<I64ArrayAttr>:$pads,
                       OptionalAttr<I64ArrayAttr>:$strides);
  let results = (outs AnyTensor:$Y);
  let hasVerifier = 1;
}

def ONNXGlobalAveragePoolOp : ONNX_Op<"GlobalAveragePool", [ONNX_InferShapes, Pure]> {
  let summary = "mean over all spatial dimensions";
  let arguments = (ins AnyTensor:$X);
  let results = (outs AnyTensor:$Y);
}

def ONNXRandomUniformLikeOp : ONNX_Op<"RandomUniformLike", [ONNX_InferShapes]> {
  let summary = "uniform random values in [low, high) with the shape of "
                "`input`";
  let description = [{
    Not `Pure`: it draws random numbers (stochastic depth in training-mode
    exports draws its keep test with it). The draws come from the
    counter-based generator of Dropout's mask (docs/execution.md,
    "Generated data"): a pure function of the seed (the bits of the `seed`
    float; 0 when absent) and the shape, so a step recomputed or run twice
    draws the same values. Element type: `dtype` (a TensorProto.DataType, a
    float type) or the input's.
  }];
  let arguments = (ins AnyTensor:$input, OptionalAttr<I64Attr>:$dtype,
                       DefaultValuedAttr<F32Attr, "1.0">:$high,
                       DefaultValuedAttr<F32Attr, "0.0">:$low,
                       OptionalAttr<F32Attr>:$seed);
  let results = (outs AnyTensor:$output);
}

def ONNXDropoutOp : ONNX_Op<"Dropout", [ONNX_InferShapes]> {
  let summary = "random zeroing with probability `ratio` in training mode";
  let description = [{
    Not `Pure`: in training mode it draws random numbers.
  }];
  let arguments = (ins AnyTensor:$data, ONNX_TensorOrNone:$ratio,
                       ONNX_TensorOrNone:$training_mode,
                       OptionalAttr<I64Attr>:$seed);
  let results = (outs AnyTensor:$output, ONNX_TensorOrNone:$mask);
}

class ONNX_SoftmaxFamilyOp<string mnemonic, string summaryText>
    : ONNX_Op<mnemonic, [ONNX_InferShapes, Pure, SameOperandsAndResultElementType,
                         SameOperandsAndResultShape]> {
  let summary = summaryText;
  let arguments = (ins AnyTensor:$input, DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs AnyTensor:$output);
  let hasVerifier = 1;
}

def ONNXSoftmaxOp : ONNX_SoftmaxFamilyOp<"Softmax", "softmax along `axis`">;

def ONNXLogSoftmaxOp : ONNX_SoftmaxFamilyOp<"LogSoftmax",
    "log of the softmax along `axis`, computed without forming the softmax"> {
  let description = [{
    `x - max(x) - log(sum(exp(x - max(x))))`: finite wherever the inputs
    are, where `log(Softmax(x))` is `-inf` once `exp` underflows (logits
    about 100 apart in f32).
  }];
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def ONNXMatMulOp : ONNX_Op<"MatMul", [ONNX_InferShapes, Pure]> {
  let summary = "numpy matmul: batched, with broadcasting of batch dimensions";
  let arguments = (ins AnyTensor:$A, AnyTensor:$B);
  let results = (outs AnyTensor:$Y);
  let hasVerifier = 1;
}

def ONNXEinsumOp : ONNX_Op<"Einsum", [ONNX_InferShapes, Pure]> {
  let summary = "Einstein summation over labelled dimensions (numpy's einsum)";
  let arguments = (ins Variadic<AnyTensor>:$Inputs, StrAttr:$equation);
  let results = (outs AnyTensor:$Output);
  let extraClassDeclaration = [{
    /// The equation parsed against the operand shapes (ranked operands).
    ::llvm::Expected<::vram::EinsumSpec> getSpec();
  }];
}

def ONNXGemmOp : ONNX_Op<"Gemm", [ONNX_InferShapes, Pure]> {
  let summary = "alpha * A' B' + beta * C on 2-d operands";
  let arguments = (ins AnyTensor:$A, AnyTensor:$B, ONNX_TensorOrNone:$C,
                       DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F32Attr, "1.0">:$beta,
                       DefaultValuedAttr<I64Attr, "0">:$transA,
                       DefaultValuedAttr<I64Attr, "0">:$transB);
  let results = (outs AnyTensor:$Y);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def ONNXReduceMeanOp : ONNX_Op<"ReduceMean", [ONNX_InferShapes, Pure]> {
  let summary = "mean over `axes` (all when absent)";
  let arguments = (ins AnyTensor:$data, OptionalAttr<I64ArrayAttr>:$axes,
                       DefaultValuedAttr<I64Attr, "1">:$keepdims);
  let results = (outs AnyTensor:$reduced);
}

def ONNXReduceSumOp : ONNX_Op<"ReduceSum", [ONNX_InferShapes, Pure]> {
  let summary = "sum over the `axes` input (all when absent)";
  let arguments = (ins AnyTensor:$data, ONNX_TensorOrNone:$axes,
                       DefaultValuedAttr<I64Attr, "1">:$keepdims,
                       DefaultValuedAttr<I64Attr, "0">:$noop_with_empty_axes);
  let results = (outs AnyTensor:$reduced);
}

//===----------------------------------------------------------------------===//
// Shape manipulation and data movement
//===----------------------------------------------------------------------===//

def ONNXFlattenOp : ONNX_Op<"Flatten", [ONNX_InferShapes, Pure, ONNX_ViewOf]> {
  let summary = "reshapes to 2-d at `axis`";
  let arguments = (ins AnyTensor:$input, DefaultValuedAttr<I64Attr, "1">:$axis);
  let results = (outs AnyTensor:$output);
  let hasVerifier = 1;
}

def ONNXReshapeOp : ONNX_Op<"Reshape", [ONNX_InferShapes, Pure, ONNX_ViewOf]> {
  let summary = "reshapes `data` to the 1-d int64 `shape`";
  let arguments = (ins AnyTensor:$data, AnyTensor:$shape,
                       DefaultValuedAttr<I64Attr, "0">:$allowzero);
  let results = (outs AnyTensor:$reshaped);
  let hasVerifier = 1;
  let hasFolder = 1;
}

def ONNXTransposeOp : ONNX_Op<"Transpose", [ONNX_InferShapes, Pure]> {
  let summary = "permutes dimensions by `perm` (reverses them when absent)";
  let arguments = (ins AnyTensor:$data, OptionalAttr<I64ArrayAttr>:$perm);
  let results = (outs AnyTensor:$transposed);
  let hasVerifier = 1;
  let hasFolder = 1;
}

def ONNXConcatOp : ONNX_Op<"Concat", [ONNX_InferShapes, Pure]> {
  let summary = "concatenation along `axis`";
  let arguments = (ins Variadic<AnyTensor>:$inputs, I64Attr:$axis);
  let results = (outs AnyTensor:$concat_result);
  let hasVerifier = 1;
  let hasFolder = 1;
}

def ONNXSplitOp : ONNX_Op<"Split", [ONNX_InferShapes, Pure]> {
  let summary = "splits along `axis` into the sizes of `split` (equal when absent)";
  let arguments = (ins AnyTensor:$input, ONNX_TensorOrNone:$split,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Variadic<AnyTensor>:$outputs);
  let hasVerifier = 1;
}

def ONNXSliceOp : ONNX_Op<"Slice", [ONNX_InferShapes, Pure]> {
  let summary = "strided slice along `axes` (all axes when absent)";
  let arguments = (ins AnyTensor:$data, AnyTensor:$starts, AnyTensor:$ends,
                       ONNX_TensorOrNone:$axes, ONNX_TensorOrNone:$steps);
  let results = (outs AnyTensor:$output);
  let hasFolder = 1;
}

def ONNXGatherOp : ONNX_Op<"Gather", [ONNX_InferShapes, Pure]> {
  let summary = "gathers slices of `data` along `axis` at `indices`";
  let arguments = (ins AnyTensor:$data, AnyTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs AnyTensor:$output);
  let hasVerifier = 1;
  let hasFolder = 1;
}

def ONNXShapeOp : ONNX_Op<"Shape", [ONNX_InferShapes, Pure]> {
  let summary = "the shape of `data` (dims [start, end)) as a 1-d int64 tensor";
  let arguments = (ins AnyTensor:$data, OptionalAttr<I64Attr>:$end,
                       DefaultValuedAttr<I64Attr, "0">:$start);
  let results = (outs AnyTensor:$shape);
  let hasFolder = 1;
}

def ONNXUnsqueezeOp : ONNX_Op<"Unsqueeze", [ONNX_InferShapes, Pure, ONNX_ViewOf]> {
  let summary = "inserts unit dimensions at the `axes` input";
  let arguments = (ins AnyTensor:$data, AnyTensor:$axes);
  let results = (outs AnyTensor:$expanded);
  let hasVerifier = 1;
  let hasFolder = 1;
}

def ONNXSqueezeOp : ONNX_Op<"Squeeze", [ONNX_InferShapes, Pure, ONNX_ViewOf]> {
  let summary = "removes unit dimensions (those in `axes`, or all)";
  let arguments = (ins AnyTensor:$data, ONNX_TensorOrNone:$axes);
  let results = (outs AnyTensor:$squeezed);
  let hasVerifier = 1;
  let hasFolder = 1;
}

def ONNXExpandOp : ONNX_Op<"Expand", [ONNX_InferShapes, Pure]> {
  let summary = "broadcasts `input` to `shape`";
  let arguments = (ins AnyTensor:$input, AnyTensor:$shape);
  let results = (outs AnyTensor:$output);
}

def ONNXPadOp : ONNX_Op<"Pad", [ONNX_InferShapes, Pure]> {
  let summary = "pads with a constant, or by reflect / edge";
  let arguments = (ins AnyTensor:$data, AnyTensor:$pads,
                       ONNX_TensorOrNone:$constant_value,
                       DefaultValuedStrAttr<StrAttr, "constant">:$mode);
  let results = (outs AnyTensor:$output);
}

def ONNXResizeOp : ONNX_Op<"Resize", [ONNX_InferShapes, Pure]> {
  let summary = "resizes by `scales` or to `sizes` (nearest, linear, cubic)";
  let arguments = (ins AnyTensor:$X, ONNX_TensorOrNone:$roi,
                       ONNX_TensorOrNone:$scales, ONNX_TensorOrNone:$sizes,
                       DefaultValuedAttr<I64Attr, "0">:$antialias,
                       DefaultValuedStrAttr<StrAttr, "half_pixel">:$coordinate_transformation_mode,
                       DefaultValuedAttr<F32Attr, "-0.75">:$cubic_coeff_a,
                       DefaultValuedAttr<I64Attr, "0">:$exclude_outside,
                       DefaultValuedAttr<F32Attr, "0.0">:$extrapolation_value,
                       DefaultValuedStrAttr<StrAttr, "nearest">:$mode,
                       DefaultValuedStrAttr<StrAttr, "round_prefer_floor">:$nearest_mode);
  let results = (outs AnyTensor:$Y);
}

//===----------------------------------------------------------------------===//
// Ops the training step's gradients use (vram-train, docs/training.md)
//===----------------------------------------------------------------------===//

// Comparisons: broadcasting binary ops with an i1 result.
class ONNX_ComparisonOp<string mnemonic, string what> :
    ONNX_BroadcastBinaryOp<mnemonic, what> {
  let results = (outs TensorOf<[I1]>:$C);
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::inferResultTypes(
        ::llvm::SmallVectorImpl<::mlir::Type> &resultTypes) {
      return inferBroadcastResult(getOperation(), getOperands(),
                                  ::mlir::IntegerType::get(getContext(), 1),
                                  resultTypes);
    }
  }];
}

def ONNXGreaterOp : ONNX_ComparisonOp<"Greater", "elementwise A > B, as i1">;
// Stochastic depth's keep test in training-mode exports (rand < survival).
def ONNXLessOp : ONNX_ComparisonOp<"Less", "elementwise A < B, as i1">;
// Masks in exported attention (masked_fill(mask != 0, ...)).
def ONNXEqualOp : ONNX_ComparisonOp<"Equal", "elementwise A == B, as i1">;
def ONNXNotOp : ONNX_UnaryOp<"Not", "logical negation of i1"> {
  let hasFolder = 1; // of constant masks in shape computations
}

// ScatterND: slice_scatter / index_put as dynamo writes them (Swin's
// shifted-window mask, KV-cache updates).
def ONNXScatterNDOp : ONNX_Op<"ScatterND", [ONNX_InferShapes, Pure]> {
  let summary = "copies `data`, then writes (or with `reduction`, combines) "
                "each slice of `updates` at the index tuple `indices` gives";
  let arguments = (ins AnyTensor:$data, AnyTensor:$indices, AnyTensor:$updates,
                       DefaultValuedStrAttr<StrAttr, "none">:$reduction);
  let results = (outs AnyTensor:$output);
}

def ONNXScatterElementsOp : ONNX_Op<"ScatterElements", [ONNX_InferShapes, Pure]> {
  let summary = "copies `data`, then writes (or with `reduction`, combines) "
                "`updates` at the positions `indices` give along `axis`";
  let arguments = (ins AnyTensor:$data, AnyTensor:$indices, AnyTensor:$updates,
                       DefaultValuedAttr<I64Attr, "0">:$axis,
                       DefaultValuedStrAttr<StrAttr, "none">:$reduction);
  let results = (outs AnyTensor:$output);
  let extraClassDeclaration = [{
    /// Whether the output takes over `data`'s buffer instead of a copy:
    /// `data` is a tensor this op alone reads, computed by the program (not
    /// a caller's argument or a constant). Gradients of Gather and MaxPool
    /// scatter into zeros built for them, so they need one buffer, not two.
    /// The memory analysis and the lowering both follow this.
    bool updatesDataInPlace() {
      ::mlir::Operation *producer = getData().getDefiningOp();
      return producer && getData().hasOneUse() &&
             !producer->hasTrait<::mlir::OpTrait::ConstantLike>();
    }
  }];
}

#endif // VRAM_DIALECT_ONNX_ONNXOPS_TD
