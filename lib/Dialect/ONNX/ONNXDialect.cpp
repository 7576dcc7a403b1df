//===- ONNXDialect.cpp - registration of the ONNX frontend dialect --------===//

#include "vram/Dialect/ONNX/ONNXDialect.h"
#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace vram;

#include "vram/Dialect/ONNX/ONNXDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "vram/Dialect/ONNX/ONNXTypes.cpp.inc"

void ONNXDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "vram/Dialect/ONNX/ONNXOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "vram/Dialect/ONNX/ONNXTypes.cpp.inc"
      >();
}

Operation *ONNXDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements)
    return nullptr;
  return ONNXConstantOp::create(builder, loc, type, elements);
}
