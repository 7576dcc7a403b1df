//===- MemoryAnalysisBench.cpp - memory analysis time vs graph size -------===//
//
// Builds deep transformer-like graphs in the onnx dialect (pre-norm blocks:
// LayerNorm, Q/K/V projections, attention, output projection, residual,
// LayerNorm, MLP with Gelu, residual) of growing depth and times the memory
// analysis (liveness over the schedule, aliasing, timeline, peak) on each.
// Prints a table; the analysis should stay linear in the number of ops.
//
//===----------------------------------------------------------------------===//

#include "vram/Analysis/MemoryAnalysis.h"
#include "vram/Dialect/ONNX/ONNXOps.h"
#include "vram/Dialect/Vram/VramDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace mlir;

namespace {

/// Creates `onnx.<name>` generically: the bench needs shapes, not builders.
Value makeOp(OpBuilder &builder, StringRef name, Type resultType,
             ValueRange operands, unsigned extraResults = 0) {
  OperationState state(builder.getUnknownLoc(), ("onnx." + name).str());
  state.addOperands(operands);
  state.addTypes(resultType);
  for (unsigned i = 0; i < extraResults; ++i)
    state.addTypes(builder.getNoneType());
  return builder.create(state)->getResult(0);
}

/// A module with @main holding `layers` transformer blocks.
OwningOpRef<ModuleOp> buildTransformer(MLIRContext &context, unsigned layers,
                                       int64_t batch, int64_t seq,
                                       int64_t hidden, int64_t heads) {
  OpBuilder builder(&context);
  Location loc = builder.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  Type f32 = builder.getF32Type();
  auto act = RankedTensorType::get({batch, seq, hidden}, f32);
  auto mlpAct = RankedTensorType::get({batch, seq, 4 * hidden}, f32);
  auto headAct =
      RankedTensorType::get({batch, heads, seq, hidden / heads}, f32);
  auto scores = RankedTensorType::get({batch, heads, seq, seq}, f32);
  auto square = RankedTensorType::get({hidden, hidden}, f32);
  auto up = RankedTensorType::get({hidden, 4 * hidden}, f32);
  auto down = RankedTensorType::get({4 * hidden, hidden}, f32);
  auto vec = RankedTensorType::get({hidden}, f32);
  auto shape4 = RankedTensorType::get({4}, builder.getI64Type());
  auto shape3 = RankedTensorType::get({3}, builder.getI64Type());

  SmallVector<Type> argTypes{act};
  for (unsigned l = 0; l < layers; ++l)
    argTypes.append({vec, square, square, square, square, vec, up, down});
  builder.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(builder, loc, "main",
                                   builder.getFunctionType(argTypes, {act}));
  for (unsigned i = 1; i < argTypes.size(); ++i)
    vram::setParamKind(func, i, vram::ParamKind::Trainable);
  Block *body = func.addEntryBlock();
  builder.setInsertionPointToStart(body);
  Value none = vram::ONNXNoValueOp::create(builder, loc);
  auto constant = [&](RankedTensorType type, ArrayRef<int64_t> values) -> Value {
    return vram::ONNXConstantOp::create(
        builder, loc, type, DenseElementsAttr::get(type, values));
  };
  Value toHeads = constant(shape4, {batch, seq, heads, hidden / heads});
  Value toHidden = constant(shape3, {batch, seq, hidden});

  Value x = body->getArgument(0);
  auto headsOf = [&](Value v) {
    Value split = makeOp(builder, "Reshape",
                         RankedTensorType::get(
                             {batch, seq, heads, hidden / heads}, f32),
                         {v, toHeads});
    return makeOp(builder, "Transpose", headAct, {split});
  };
  for (unsigned l = 0; l < layers; ++l) {
    auto w = body->getArguments().slice(1 + 8 * l, 8);
    Value norm = makeOp(builder, "LayerNormalization", act, {x, w[0], none},
                        /*extraResults=*/2);
    Value q = headsOf(makeOp(builder, "MatMul", act, {norm, w[1]}));
    Value k = headsOf(makeOp(builder, "MatMul", act, {norm, w[2]}));
    Value v = headsOf(makeOp(builder, "MatMul", act, {norm, w[3]}));
    Value kT = makeOp(builder, "Transpose",
                      RankedTensorType::get({batch, heads, hidden / heads, seq},
                                            f32),
                      {k});
    Value s = makeOp(builder, "MatMul", scores, {q, kT});
    Value p = makeOp(builder, "Softmax", scores, {s});
    Value o = makeOp(builder, "MatMul", headAct, {p, v});
    Value merged = makeOp(builder, "Transpose",
                          RankedTensorType::get(
                              {batch, seq, heads, hidden / heads}, f32),
                          {o});
    Value flat = makeOp(builder, "Reshape", act, {merged, toHidden});
    Value proj = makeOp(builder, "MatMul", act, {flat, w[4]});
    Value residual = makeOp(builder, "Add", act, {x, proj});
    Value norm2 = makeOp(builder, "LayerNormalization", act,
                         {residual, w[5], none}, /*extraResults=*/2);
    Value hiddenUp = makeOp(builder, "MatMul", mlpAct, {norm2, w[6]});
    Value gelu = makeOp(builder, "Gelu", mlpAct, {hiddenUp});
    Value hiddenDown = makeOp(builder, "MatMul", act, {gelu, w[7]});
    x = makeOp(builder, "Add", act, {residual, hiddenDown});
  }
  func::ReturnOp::create(builder, loc, x);
  return module;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       start)
      .count();
}

llvm::cl::list<unsigned>
    layerCounts("layers", llvm::cl::CommaSeparated,
                llvm::cl::desc("Transformer depths to measure"));
llvm::cl::opt<unsigned> repeats("repeats", llvm::cl::init(3),
                                llvm::cl::desc("Analyses per size (the "
                                               "fastest is reported)"));

} // namespace

int main(int argc, char **argv) {
  llvm::cl::ParseCommandLineOptions(argc, argv,
                                    "memory analysis time vs graph size\n");
  SmallVector<unsigned> depths(layerCounts.begin(), layerCounts.end());
  if (depths.empty())
    depths = {48, 96, 480, 960, 4800};
  MLIRContext context;
  context
      .loadDialect<vram::ONNXDialect, vram::VramDialect, func::FuncDialect>();
  context.disableMultithreading();

  llvm::outs() << "Memory analysis time, transformer blocks (batch 8, seq "
                  "2048, hidden 1024, 16 heads), best of "
               << repeats << "\n";
  llvm::outs() << llvm::format("%8s %10s %10s %12s %14s %16s\n", "layers",
                               "ops", "buffers", "analysis s", "us per op",
                               "peak GiB");
  for (unsigned layers : depths) {
    OwningOpRef<ModuleOp> module =
        buildTransformer(context, layers, 8, 2048, 1024, 16);
    auto main = module->lookupSymbol<func::FuncOp>("main");
    double best = 1e30;
    uint64_t peak = 0;
    size_t ops = 0, buffers = 0;
    for (unsigned r = 0; r < repeats; ++r) {
      auto start = std::chrono::steady_clock::now();
      vram::MemoryAnalysis analysis(main);
      best = std::min(best, secondsSince(start));
      if (!analysis.isValid()) {
        llvm::errs() << "error: analysis failed\n";
        return 1;
      }
      peak = analysis.getPeakBytes();
      ops = analysis.getSchedule().size();
      buffers = analysis.getBuffers().size();
    }
    llvm::outs() << llvm::format("%8u %10zu %10zu %12.4f %14.3f %16.2f\n",
                                 layers, ops, buffers, best, 1e6 * best / ops,
                                 peak / double(1ull << 30));
  }
  return 0;
}
