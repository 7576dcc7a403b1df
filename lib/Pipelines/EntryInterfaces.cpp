//===- EntryInterfaces.cpp - how callers call the entry function ----------===//
//
// vram-emit-c-interface (upstream's C interface, for a C caller ahead of
// time: the GPU path) and vram-pack-entry-arguments (one pointer to an array
// of argument and result pointers: the CPU path's JIT).
//
//===----------------------------------------------------------------------===//

#include "vram/Pipelines/Passes.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace vram {
#define GEN_PASS_DEF_EMITCINTERFACEPASS
#define GEN_PASS_DEF_PACKENTRYARGUMENTSPASS
#include "vram/Pipelines/Passes.h.inc"
} // namespace vram

using namespace mlir;

/// The entry function `@name` of `module` with a body, or null after an
/// error saying it is missing.
static func::FuncOp lookupEntry(ModuleOp module, llvm::StringRef name) {
  auto func = module.lookupSymbol<func::FuncOp>(name);
  if (func && !func.isExternal())
    return func;
  module.emitError() << "entry function '@" << name
                     << "' not found (or has no body)";
  return nullptr;
}

namespace {
struct EmitCInterfacePass
    : public vram::impl::EmitCInterfacePassBase<EmitCInterfacePass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = lookupEntry(getOperation(), entry);
    if (!func)
      return signalPassFailure();
    func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                  UnitAttr::get(&getContext()));
    // The frontend's annotations of arguments and results (vram.param,
    // ...) are for the analyses, not the C caller; without them the host
    // code reads without the vram dialect.
    auto annotationsOf = [](DictionaryAttr attrs) {
      SmallVector<StringAttr> names;
      if (attrs)
        for (NamedAttribute attr : attrs)
          if (attr.getName().strref().starts_with("vram."))
            names.push_back(attr.getName());
      return names;
    };
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
      for (StringAttr name : annotationsOf(func.getArgAttrDict(i)))
        func.removeArgAttr(i, name);
    for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
      for (StringAttr name : annotationsOf(func.getResultAttrDict(i)))
        func.removeResultAttr(i, name);
  }
};

struct PackEntryArgumentsPass
    : public vram::impl::PackEntryArgumentsPassBase<PackEntryArgumentsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = lookupEntry(getOperation(), entry);
    if (!func)
      return signalPassFailure();
    FunctionType type = func.getFunctionType();
    auto isMemRef = llvm::IsaPred<BaseMemRefType>;
    if (llvm::none_of(type.getInputs(), isMemRef) &&
        llvm::none_of(type.getResults(), isMemRef))
      return;
    // The types the values have once lowered: what the pointers point to.
    LLVMTypeConverter converter(&getContext());
    auto getLoweredType = [&](Value value) -> Type {
      Type lowered = converter.convertType(value.getType());
      if (!lowered)
        func.emitError() << "the entry's " << value.getType()
                         << " has no LLVM type to pass it as";
      return lowered;
    };

    MLIRContext *context = &getContext();
    auto pointer = LLVM::LLVMPointerType::get(context);
    Block &body = func.getBody().front();
    BlockArgument array = body.addArgument(pointer, func.getLoc());
    // The pointer in slot `index` of the array.
    auto loadSlot = [&](OpBuilder &builder, Location loc, int64_t index) {
      Value slot = LLVM::GEPOp::create(builder, loc, pointer, pointer, array,
                                       ArrayRef<LLVM::GEPArg>{index});
      return LLVM::LoadOp::create(builder, loc, pointer, slot).getResult();
    };

    OpBuilder builder = OpBuilder::atBlockBegin(&body);
    unsigned numArguments = type.getNumInputs();
    for (BlockArgument argument : body.getArguments().drop_back()) {
      Type lowered = getLoweredType(argument);
      if (!lowered)
        return signalPassFailure();
      Location loc = argument.getLoc();
      Value value =
          LLVM::LoadOp::create(builder, loc, lowered,
                               loadSlot(builder, loc, argument.getArgNumber()));
      argument.replaceAllUsesWith(UnrealizedConversionCastOp::create(
                                      builder, loc, argument.getType(), value)
                                      .getResult(0));
    }
    WalkResult walk = func.walk([&](func::ReturnOp ret) {
      builder.setInsertionPoint(ret);
      for (auto [index, result] : llvm::enumerate(ret.getOperands())) {
        Type lowered = getLoweredType(result);
        if (!lowered)
          return WalkResult::interrupt();
        Location loc = ret.getLoc();
        Value value =
            UnrealizedConversionCastOp::create(builder, loc, lowered, result)
                .getResult(0);
        LLVM::StoreOp::create(builder, loc, value,
                              loadSlot(builder, loc, numArguments + index));
      }
      ret->setOperands({});
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();

    body.eraseArguments(0, numArguments);
    // The attributes described values that are now behind the pointer.
    func.setAllArgAttrs(ArrayRef<DictionaryAttr>{});
    func.setAllResultAttrs(ArrayRef<DictionaryAttr>{});
    func.setFunctionType(FunctionType::get(context, {pointer}, {}));
  }
};
} // namespace
