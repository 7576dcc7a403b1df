//===- StaticArena.cpp - Place a function's static buffers in one arena ---===//
//
// Lifetimes come from vram::MemoryAnalysis, placement from the VramArena
// packer; this file decides which allocs may move into the arena and
// rewrites them into views. See docs/arena.md.
//
//===----------------------------------------------------------------------===//

#include "vram/Analysis/MemoryAnalysis.h"
#include "vram/Arena/ArenaPacker.h"
#include "vram/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#define DEBUG_TYPE "vram-static-arena"

namespace vram {
#define GEN_PASS_DEF_STATICARENAPASS
#include "vram/Transforms/Passes.h.inc"
} // namespace vram

using namespace mlir;

namespace {

/// An alloc that moves into the arena.
struct PlacedAlloc {
  memref::AllocOp alloc;
  uint64_t bytes = 0;
  uint64_t alignment = 1;
  unsigned begin = 0, end = 0;
};

/// Allocs a view of an i8 arena can replace: memref.view makes static-shape,
/// identity-layout memrefs only, and element sizes must be whole bytes of a
/// fixed size.
bool canBeView(memref::AllocOp alloc, const DataLayout &layout) {
  MemRefType type = alloc.getType();
  return type.hasStaticShape() && type.getLayout().isIdentity() &&
         !layout.getTypeSize(type.getElementType()).isScalable();
}

/// Bytes the memref occupies once lowered: elements x the data layout's size
/// of the element type (what the LLVM lowering allocates; i1 and i4 take a
/// byte each), or failure when that overflows 64 bits.
FailureOr<uint64_t> getAllocBytes(MemRefType type, const DataLayout &layout) {
  uint64_t bytes = layout.getTypeSize(type.getElementType()).getFixedValue();
  for (int64_t dim : type.getShape()) {
    if (dim != 0 && bytes > UINT64_MAX / static_cast<uint64_t>(dim))
      return failure();
    bytes *= dim;
  }
  return bytes;
}

/// Why the storage of `alloc` must stay a separate allocation, or null when
/// it may live in the arena. Collects the memref.deallocs the arena's own
/// dealloc replaces.
const char *findEscape(memref::AllocOp alloc, Block &body,
                       SmallVectorImpl<memref::DeallocOp> &deallocs) {
  Value root = alloc.getResult();
  SmallVector<Value> worklist{root};
  llvm::SmallPtrSet<Value, 8> aliases{root};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (auto dealloc = dyn_cast<memref::DeallocOp>(user)) {
        if (value != root || dealloc->getBlock() != &body)
          return "it is freed through a view or inside a region";
        deallocs.push_back(dealloc);
        continue;
      }
      // A returned buffer belongs to the caller; a yielded one flows into a
      // result the analysis may not see as an alias, so its lifetime would
      // be unknown.
      if (user->hasTrait<OpTrait::IsTerminator>())
        return "it is returned or yielded";
      if (hasEffect<MemoryEffects::Free>(user, value))
        return "an op other than memref.dealloc frees it";
      for (OpResult result : user->getResults()) {
        if (vram::getAliasedOperand(result) == value) {
          if (aliases.insert(result).second)
            worklist.push_back(result);
        } else if (isa<TensorType>(result.getType())) {
          // The tensor's uses would read the storage after the memref's last
          // use, unseen by liveness.
          return "it is read back as a tensor";
        }
      }
    }
  }
  return nullptr;
}

struct StaticArenaPass
    : public vram::impl::StaticArenaPassBase<StaticArenaPass> {
  using StaticArenaPassBase::StaticArenaPassBase;

  void runOnOperation() override;

private:
  LogicalResult placeInArena(FunctionOpInterface func,
                             MutableArrayRef<PlacedAlloc> allocs);
};

void StaticArenaPass::runOnOperation() {
  FunctionOpInterface func = getOperation();
  if (func.isExternal())
    return;
  if (!llvm::isPowerOf2_64(alignment)) {
    func.emitError() << "vram-static-arena: alignment "
                     << static_cast<uint64_t>(alignment)
                     << " is not a power of two";
    return signalPassFailure();
  }
  Block &entry = func.getFunctionBody().front();
  DataLayout layout = DataLayout::closest(func);
  SmallVector<memref::AllocOp> allocs;
  for (auto alloc : entry.getOps<memref::AllocOp>())
    if (canBeView(alloc, layout))
      allocs.push_back(alloc);
  if (allocs.empty())
    return;
  if (!llvm::hasSingleElement(func.getFunctionBody())) {
    func.emitError("vram-static-arena needs a single-block function body: "
                   "lifetimes are positions in its op order");
    return signalPassFailure();
  }

  SmallVector<PlacedAlloc> placed;
  SmallVector<memref::DeallocOp> deallocs;
  for (memref::AllocOp alloc : allocs) {
    size_t deallocsBefore = deallocs.size();
    if (const char *reason = findEscape(alloc, entry, deallocs)) {
      LLVM_DEBUG(llvm::dbgs() << "keeping " << alloc << ": " << reason << "\n");
      deallocs.truncate(deallocsBefore);
      ++numEscaping;
      continue;
    }
    FailureOr<uint64_t> bytes = getAllocBytes(alloc.getType(), layout);
    if (failed(bytes)) {
      alloc.emitOpError("size in bytes overflows 64 bits");
      return signalPassFailure();
    }
    PlacedAlloc buffer;
    buffer.alloc = alloc;
    buffer.bytes = *bytes;
    buffer.alignment =
        std::max<uint64_t>(alignment, alloc.getAlignment().value_or(1));
    placed.push_back(buffer);
  }
  if (placed.empty())
    return;

  // Without its deallocs a buffer's last use is its last real use: the
  // memory analysis would otherwise keep it live until the dealloc, which
  // may sit anywhere after it. The arena's own dealloc replaces them.
  for (memref::DeallocOp dealloc : deallocs)
    dealloc.erase();
  vram::MemoryAnalysis analysis(func);
  if (!analysis.isValid()) {
    for (const vram::UnsizedValue &unsized : analysis.getUnsizedValues())
      emitError(unsized.value.getLoc())
          << "vram-static-arena needs every buffer's size: "
          << unsized.reason;
    return signalPassFailure();
  }
  llvm::DenseMap<Operation *, unsigned> pointOf;
  for (auto [point, op] : llvm::enumerate(analysis.getSchedule()))
    pointOf[op] = point;
  for (PlacedAlloc &buffer : placed) {
    Value root = buffer.alloc.getResult();
    // Storage is undefined until the first op touches it: an alloc hoisted
    // to the top of the function does not make its buffer live there.
    buffer.begin = pointOf.lookup(buffer.alloc);
    unsigned firstUse = UINT_MAX;
    for (Operation *user : root.getUsers())
      firstUse = std::min(firstUse, pointOf.lookup(entry.findAncestorOpInBlock(*user)));
    if (firstUse != UINT_MAX)
      buffer.begin = firstUse;
    buffer.end = analysis.getBuffer(root).end;
  }
  if (failed(placeInArena(func, placed)))
    signalPassFailure();
}

/// Packs the allocs of each memory space into one arena and rewrites them
/// into views of it.
LogicalResult
StaticArenaPass::placeInArena(FunctionOpInterface func,
                              MutableArrayRef<PlacedAlloc> allocs) {
  llvm::MapVector<Attribute, SmallVector<PlacedAlloc *>> bySpace;
  for (PlacedAlloc &alloc : allocs)
    bySpace[alloc.alloc.getType().getMemorySpace()].push_back(&alloc);

  Block &entry = func.getFunctionBody().front();
  OpBuilder builder(func.getContext());
  for (auto &[memorySpace, group] : bySpace) {
    std::vector<vram::arena::ArenaBuffer> buffers;
    uint64_t arenaAlignment = 1;
    for (PlacedAlloc *alloc : group) {
      buffers.push_back(
          {alloc->bytes, alloc->alignment, alloc->begin, alloc->end});
      arenaAlignment = std::max(arenaAlignment, alloc->alignment);
    }
    if (llvm::Error error = vram::arena::validateBuffers(buffers))
      return func.emitError() << "vram-static-arena: "
                              << llvm::toString(std::move(error));
    vram::arena::PackOptions options;
    options.localSearchRounds = searchRounds;
    vram::arena::PackResult result = vram::arena::packArena(buffers, options);
    // The packer is checked independently of how it placed the buffers.
    if (llvm::Error error =
            vram::arena::verifyPlacement(buffers, result.placement))
      return func.emitError() << "vram-static-arena: internal error: "
                              << llvm::toString(std::move(error));
    uint64_t arenaSize = result.placement.arenaSize;
    if (arenaSize > static_cast<uint64_t>(INT64_MAX))
      return func.emitError() << "vram-static-arena: the arena's "
                              << arenaSize << " bytes overflow an index";

    builder.setInsertionPointToStart(&entry);
    auto arenaType = MemRefType::get({static_cast<int64_t>(arenaSize)},
                                     builder.getI8Type(), MemRefLayoutAttrInterface(),
                                     memorySpace);
    Value arena = memref::AllocOp::create(
        builder, func.getLoc(), arenaType,
        builder.getI64IntegerAttr(static_cast<int64_t>(arenaAlignment)));
    for (auto [alloc, offset] : llvm::zip(group, result.placement.offsets)) {
      memref::AllocOp op = alloc->alloc;
      builder.setInsertionPoint(op);
      Value byteShift = arith::ConstantIndexOp::create(
          builder, op.getLoc(), static_cast<int64_t>(offset));
      Value view = memref::ViewOp::create(builder, op.getLoc(), op.getType(),
                                          arena, byteShift, ValueRange());
      op.replaceAllUsesWith(view);
      op.erase();
    }
    if (freeArena) {
      builder.setInsertionPoint(entry.getTerminator());
      memref::DeallocOp::create(builder, func.getLoc(), arena);
    }

    numPlaced += group.size();
    arenaBytes += arenaSize;
    lowerBoundBytes += result.lowerBound;
    naiveBytes += result.naiveSize;
    if (printStats) {
      InFlightDiagnostic remark = func.emitRemark();
      remark << "arena " << arenaSize << " bytes";
      if (memorySpace)
        remark << " in memory space " << memorySpace;
      remark << " for " << group.size() << " buffers; max-live lower bound "
             << result.lowerBound << " bytes (ratio "
             << llvm::formatv("{0:F3}", result.ratio()).str() << "), "
             << result.naiveSize << " bytes without reuse; placed by "
             << result.method;
    }
  }
  return success();
}

} // namespace
