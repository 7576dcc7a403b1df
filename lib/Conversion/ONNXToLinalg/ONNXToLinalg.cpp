//===- ONNXToLinalg.cpp - the vram-convert-onnx-to-linalg pass ------------===//

#include "vram/Conversion/ONNXToLinalg/ONNXToLinalg.h"
#include "vram/Conversion/Passes.h"
#include "vram/Dialect/ONNX/ONNXOps.h"
#include "vram/Dialect/Vram/VramOps.h"

#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Transforms/DialectConversion.h"

#define DEBUG_TYPE "vram-convert-onnx-to-linalg"

namespace vram {
#define GEN_PASS_DEF_CONVERTONNXTOLINALGPASS
#include "vram/Conversion/Passes.h.inc"
} // namespace vram

using namespace mlir;
using namespace vram;

ONNXToLinalgTypeConverter::ONNXToLinalgTypeConverter() {
  addConversion([](Type type) { return type; });
  addConversion([](IntegerType type) -> Type {
    if (type.isSignless())
      return type;
    return IntegerType::get(type.getContext(), type.getWidth());
  });
  addConversion([this](RankedTensorType type) -> Type {
    Type element = convertType(type.getElementType());
    return element ? type.clone(element) : Type();
  });
  // Unsigned and signless integers share their bits: a cast materializes
  // the type change where converted and unconverted values meet.
  auto materialize = [](OpBuilder &builder, Type type, ValueRange inputs,
                        Location loc) -> Value {
    return UnrealizedConversionCastOp::create(builder, loc, type, inputs)
        .getResult(0);
  };
  addSourceMaterialization(materialize);
  addTargetMaterialization(materialize);
}

namespace {
struct ConvertONNXToLinalgPass
    : public vram::impl::ConvertONNXToLinalgPassBase<ConvertONNXToLinalgPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    ONNXToLinalgTypeConverter typeConverter;
    RewritePatternSet patterns(context);
    populateElementwiseToLinalgPatterns(typeConverter, patterns);
    populateLinearAlgebraToLinalgPatterns(typeConverter, patterns);
    populateConvToLinalgPatterns(typeConverter, patterns);
    populatePoolToLinalgPatterns(typeConverter, patterns);
    populateNormalizationToLinalgPatterns(typeConverter, patterns);
    populateReductionToLinalgPatterns(typeConverter, patterns);
    populateDataMovementToLinalgPatterns(typeConverter, patterns);
    populatePadToLinalgPatterns(typeConverter, patterns);
    populateResizeToLinalgPatterns(typeConverter, patterns);
    populateScatterToLinalgPatterns(typeConverter, patterns);
    populateTrainingOpsToLinalgPatterns(typeConverter, patterns);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(
        patterns, typeConverter);
    populateReturnOpTypeConversionPattern(patterns, typeConverter);

    ConversionTarget target(*context);
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, scf::SCFDialect,
                           tensor::TensorDialect>();
    // onnx ops are not marked illegal: an illegal op that fails to lower
    // stops the conversion at the first one, whereas ops of unknown legality
    // are left in place and the conversion goes on, so one run reports every
    // op that cannot be lowered (below). Absent optional operands are dead
    // once their users are lowered, and erased below.
    target.addLegalOp<ONNXNoValueOp>();
    target.addIllegalOp<UpdateOp, IncrementOp, TensorParallelCopyOp>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp func) {
      return typeConverter.isSignatureLegal(func.getFunctionType());
    });
    target.addDynamicallyLegalOp<func::ReturnOp>(
        [&](func::ReturnOp op) { return typeConverter.isLegal(op); });

    // Patterns explain why they reject an op (emitLoweringError); every op
    // left over then gets the error naming it and its ONNX node, which is
    // all an op without a pattern (onnx.Node) gets.
    LogicalResult converted =
        applyPartialConversion(getOperation(), target, std::move(patterns));
    bool leftOver = false;
    getOperation().walk([&](Operation *op) {
      if (!isa<ONNXDialect>(op->getDialect()) || isa<ONNXNoValueOp>(op))
        return;
      leftOver = true;
      InFlightDiagnostic diag =
          op->emitError() << "cannot lower '" << op->getName() << "' to linalg";
      if (auto node = dyn_cast<ONNXNodeOp>(op)) {
        diag << ": ONNX operator '" << node.getOpType() << "'";
        if (!node.getDomain().empty())
          diag << " of domain '" << node.getDomain() << "'";
      }
      if (auto name = dyn_cast<NameLoc>(op->getLoc()))
        diag << " (node '" << name.getName().getValue() << "')";
    });
    if (failed(converted) || leftOver)
      return signalPassFailure();
    getOperation().walk([](ONNXNoValueOp op) {
      if (op->use_empty())
        op->erase();
    });
  }
};
} // namespace
