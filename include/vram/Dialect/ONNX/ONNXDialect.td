//===- ONNXDialect.td - the ONNX frontend dialect ----------*- tablegen -*-===//

#ifndef VRAM_DIALECT_ONNX_ONNXDIALECT_TD
#define VRAM_DIALECT_ONNX_ONNXDIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def ONNX_Dialect : Dialect {
  let name = "onnx";
  let summary = "ONNX operators with their ONNX semantics, one op per ONNX node";
  let description = [{
    The frontend dialect of vram-opt. Every op mirrors one ONNX operator with
    the signature ONNX gives it at opset 17: op names, operand order and
    attribute names are those of the ONNX specification, so a reader who
    knows ONNX can read the IR; the importer maps every other version of an
    operator (opsets 1-28) onto that form. An optional ONNX input that a node
    leaves out is a `none` value (from `onnx.NoValue`), so every operand keeps
    its ONNX position. The ops infer their own result types
    (ONNXInferShapesOpInterface) and fold shape computations. ONNX operators
    outside the supported set import as `onnx.Node`, which keeps the op type,
    attributes and result types, so the memory analysis still sees them.
  }];
  let cppNamespace = "::vram";
  let useDefaultTypePrinterParser = 1;
  // Folded shape computations become onnx.Constant.
  let hasConstantMaterializer = 1;
}

class ONNX_Type<string name, string typeMnemonic> :
    TypeDef<ONNX_Dialect, name> {
  let mnemonic = typeMnemonic;
}

def ONNX_StringType : ONNX_Type<"ONNXString", "string"> {
  let summary = "ONNX string element type";
}

#endif // VRAM_DIALECT_ONNX_ONNXDIALECT_TD
