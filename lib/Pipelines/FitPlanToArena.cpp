//===- FitPlanToArena.cpp - the vram-fit-plan-to-arena pass ---------------===//
//
// Closes the gap between a plan's live bytes and the memory its lowered
// program allocates: plan, lower a copy to buffers as the GPU pipeline
// does, count the device bytes, and plan again under a lower budget while
// they exceed the one asked for.
//
//===----------------------------------------------------------------------===//

#include "vram/Analysis/DeviceProfile.h"
#include "vram/Dialect/ONNX/TensorSize.h"
#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Pipelines/Passes.h"
#include "vram/Planning/IRPlanning.h"
#include "vram/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SHA1.h"

#include <array>
#include <limits>

namespace vram {
#define GEN_PASS_DEF_FITPLANTOARENAPASS
#include "vram/Pipelines/Passes.h.inc"
} // namespace vram

using namespace mlir;

/// Bytes of a statically shaped memref in device memory (the default space),
/// 0 for anything else.
static uint64_t deviceBytes(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref || memref.getMemorySpace() || !memref.hasStaticShape())
    return 0;
  FailureOr<uint64_t> bytes = vram::getTensorByteSize(memref);
  return succeeded(bytes) ? *bytes : 0;
}

/// By function name, device bytes once lowered; none when the module does
/// not lower.
using LoweredBytes = std::optional<llvm::StringMap<uint64_t>>;

namespace {
/// Counts the lowered bytes of planned modules, each distinct module once:
/// the fit's two lines often make the very same plan for a target (the
/// drops chosen ahead lose to the replay's own plan), and lowering a large
/// training step takes seconds.
class LoweringCounter {
public:
  /// The device memory of each of `planned`'s functions lowered to buffers
  /// as vram-lower-to-gpu lowers them: every device allocation left after
  /// vram-static-arena (its arenas and the buffers that escape them,
  /// counted as live together) plus the device copies of the memref
  /// arguments, an upper bound on what the runtime counts while the
  /// function runs. None when the module does not lower (its diagnostics
  /// are swallowed).
  LoweredBytes count(ModuleOp planned);

private:
  using Digest = std::array<uint8_t, 20>;
  /// The SHA-1 of the module's text: equal for clones planned alike, unlike
  /// OperationFingerPrint, which hashes the ops' addresses.
  static Digest digestOf(ModuleOp planned);

  SmallVector<std::pair<Digest, LoweredBytes>> counted;
};
} // namespace

LoweringCounter::Digest LoweringCounter::digestOf(ModuleOp planned) {
  std::string text;
  llvm::raw_string_ostream os(text);
  planned.print(os, OpPrintingFlags().printGenericOpForm());
  return llvm::SHA1::hash(llvm::arrayRefFromStringRef(text));
}

LoweredBytes LoweringCounter::count(ModuleOp planned) {
  Digest digest = digestOf(planned);
  for (const auto &[seen, bytes] : counted)
    if (seen == digest)
      return bytes;
  OwningOpRef<ModuleOp> copy = planned.clone();
  MLIRContext *context = planned.getContext();
  LoweredBytes loweredBytes;
  {
    ScopedDiagnosticHandler quiet(context,
                                  [](Diagnostic &) { return success(); });
    PassManager pm(context, ModuleOp::getOperationName());
    vram::buildDeviceBufferPipeline(pm);
    if (succeeded(pm.run(*copy)))
      loweredBytes.emplace();
  }
  if (loweredBytes)
    copy->walk([&](func::FuncOp func) {
      uint64_t total = 0;
      for (Type argument : func.getArgumentTypes())
        total += deviceBytes(argument);
      func.walk([&](memref::AllocOp alloc) {
        total += deviceBytes(alloc.getType());
      });
      (*loweredBytes)[func.getName()] = total;
    });
  counted.push_back({digest, loweredBytes});
  return loweredBytes;
}

/// The functions of `planned` that have a plan.
static SmallVector<FunctionOpInterface> getPlannedFunctions(ModuleOp planned) {
  SmallVector<FunctionOpInterface> functions;
  planned.walk([&](FunctionOpInterface func) {
    if (func->hasAttr(vram::VramDialect::kPlannedPeakAttrName))
      functions.push_back(func);
  });
  return functions;
}

/// The device memory of `planned` lowered as vram-lower-to-gpu lowers it:
/// the largest of `counter`'s counts over its planned functions, each of which
/// gets VramDialect::kLoweredPeakAttrName. When that exceeds `budgetBytes`
/// with the convolutions' library workspace, the same plan without it
/// (VramDialect::kNoLibraryWorkspaceAttrName, left on the functions when it
/// lowers to less): cuDNN's implicit GEMM needs none, the faster algorithms
/// a column matrix per convolution, which on small steps is a large part of
/// the budget.
static std::optional<uint64_t> lowerAndCount(ModuleOp planned,
                                             uint64_t budgetBytes,
                                             LoweringCounter &counter) {
  SmallVector<FunctionOpInterface> functions = getPlannedFunctions(planned);
  auto largest = [&](const llvm::StringMap<uint64_t> &loweredBytes) {
    uint64_t bytes = 0;
    for (FunctionOpInterface func : functions)
      bytes = std::max(bytes, loweredBytes.lookup(func.getName()));
    return bytes;
  };
  auto setWorkspace = [&](bool withWorkspace) {
    for (FunctionOpInterface func : functions)
      if (withWorkspace)
        func->removeAttr(vram::VramDialect::kNoLibraryWorkspaceAttrName);
      else
        func->setAttr(vram::VramDialect::kNoLibraryWorkspaceAttrName,
                      UnitAttr::get(planned.getContext()));
  };
  setWorkspace(true);
  LoweredBytes loweredBytes = counter.count(planned);
  if (!loweredBytes)
    return std::nullopt;
  if (largest(*loweredBytes) > budgetBytes) {
    setWorkspace(false);
    LoweredBytes without = counter.count(planned);
    if (without && largest(*without) < largest(*loweredBytes))
      loweredBytes = std::move(without);
    else
      setWorkspace(true);
  }
  Builder builder(planned.getContext());
  for (FunctionOpInterface func : functions)
    func->setAttr(
        vram::VramDialect::kLoweredPeakAttrName,
        builder.getI64IntegerAttr(loweredBytes->lookup(func.getName())));
  return largest(*loweredBytes);
}

namespace {
/// A planned copy of the module, with vram-plan's report when print-plan is
/// on.
struct PlannedModule {
  OwningOpRef<ModuleOp> module;
  std::string report;
};

struct FitPlanToArenaPass
    : public vram::impl::FitPlanToArenaPassBase<FitPlanToArenaPass> {
  using Base::Base;

  /// What this run lowered so far.
  LoweringCounter lowering;

  /// Plans a copy of the module under `target` bytes (vram-plan and
  /// vram-verify-plan) with `planner`; diagnostics go to the caller's
  /// handler. When no plan meets `target`, `unmet` (if given) gets
  /// vram-plan's numbers.
  FailureOr<PlannedModule>
  planUnder(uint64_t target,
            std::optional<vram::UnmetBudgetError> *unmet = nullptr,
            StringRef planner = "fast") {
    PlannedModule planned{getOperation().clone(), ""};
    vram::PlanPassOptions plan;
    plan.budget = std::to_string(target);
    plan.planner = planner.str();
    plan.device = device;
    plan.allowOffload = allowOffload;
    plan.allowReorder = allowReorder;
    plan.maxOverhead = maxOverhead;
    plan.printPlan = printPlan;
    vram::VerifyPlanPassOptions verify;
    verify.budget = plan.budget;
    PassManager pm(&getContext(), ModuleOp::getOperationName());
    llvm::raw_string_ostream report(planned.report);
    pm.addPass(vram::createPlanPass(plan, report));
    pm.addPass(vram::createVerifyPlanPass(verify));
    if (succeeded(pm.run(*planned.module)))
      return planned;
    if (unmet)
      planned.module->walk([&](FunctionOpInterface func) {
        if (!*unmet)
          *unmet = vram::readUnmetBudget(func);
      });
    return failure();
  }

  /// Plans quietly under `target`; the plan, or none.
  FailureOr<PlannedModule>
  planQuietly(uint64_t target,
              std::optional<vram::UnmetBudgetError> *unmet = nullptr,
              StringRef planner = "fast") {
    ScopedDiagnosticHandler quiet(&getContext(),
                                  [](Diagnostic &) { return success(); });
    return planUnder(target, unmet, planner);
  }

  /// The smallest budget whose lowered program the fit meets for sure: the
  /// planner's smallest live-byte budget `smallest`, raised to the device
  /// bytes of its plan once lowered (fitToArena falls back to that plan).
  uint64_t smallestLoweredBudget(uint64_t smallest) {
    FailureOr<PlannedModule> floorPlan = planQuietly(smallest);
    if (failed(floorPlan))
      return smallest;
    std::optional<uint64_t> bytes =
        lowerAndCount(*floorPlan->module, /*budgetBytes=*/smallest, lowering);
    return std::max(smallest, bytes.value_or(0));
  }

  /// The planner's smallest live-byte budget, from its error for a budget
  /// of one byte.
  std::optional<vram::UnmetBudgetError> plannerFloor() {
    std::optional<vram::UnmetBudgetError> unmet;
    (void)planQuietly(1, &unmet);
    return unmet;
  }

  /// Reports that `budgetBytes` cannot be met, naming the smallest budget
  /// the lowered program meets (see smallestLoweredBudget; `floorLowered`:
  /// the device bytes of the plan for the planner's smallest budget, when
  /// the caller lowered it already).
  void emitUnmet(uint64_t budgetBytes, vram::UnmetBudgetError unmet,
                 std::optional<uint64_t> floorLowered = std::nullopt) {
    uint64_t liveBytes = unmet.smallestBudget;
    unmet.budget = budgetBytes;
    unmet.smallestBudget = floorLowered ? std::max(liveBytes, *floorLowered)
                                        : smallestLoweredBudget(liveBytes);
    InFlightDiagnostic error =
        getOperation().emitError()
        << llvm::toString(llvm::make_error<vram::UnmetBudgetError>(unmet));
    if (unmet.smallestBudget > liveBytes)
      error.attachNote()
          << "the plan for the smallest budget the planner meets in live "
             "bytes, "
          << vram::formatBudget(liveBytes)
          << ", needs the larger one once lowered: its arena packs holes "
             "between the buffers";
  }

  /// The time `planned`'s plans add to its functions' compute time: what
  /// two plans for one module are compared by.
  static double addedSeconds(ModuleOp planned) {
    double seconds = 0;
    planned.walk([&](FunctionOpInterface func) {
      if (std::optional<vram::PlanSummary> summary =
              vram::readPlanSummary(func))
        seconds += summary->recomputeSeconds + summary->exposedCopySeconds;
    });
    return seconds;
  }

  /// The largest live-byte peak of `planned`'s planned functions.
  static uint64_t plannedPeak(ModuleOp planned) {
    uint64_t peak = 0;
    planned.walk([&](FunctionOpInterface func) {
      if (auto bytes = func->getAttrOfType<IntegerAttr>(
              vram::VramDialect::kPlannedPeakAttrName))
        peak = std::max(peak, bytes.getValue().getZExtValue());
    });
    return peak;
  }

  /// How one line of the fit ended.
  struct LineEnd {
    /// The target of the plan left in `planned` when it fits.
    std::optional<uint64_t> fitted;
    /// That plan's module does not lower to buffers here: kept unchecked.
    bool unlowerable = false;
    /// How many plans were lowered.
    unsigned lowered = 0;
  };

  /// One line of the fit: lowers `planned` (made with `planner` for the
  /// budget) and, while the program exceeds `budgetBytes`, plans with
  /// `planner` under lower targets, `attempts` plans in all.
  LineEnd fitLine(FailureOr<PlannedModule> &planned, uint64_t budgetBytes,
                  StringRef planner) {
    // Targets below the budget: the highest whose lowered program was seen
    // to exceed the budget, and the highest no plan was found for.
    uint64_t target = budgetBytes, tooHigh = budgetBytes, tooLow = 0;
    LineEnd end;
    for (unsigned attempt = 1;; ++attempt) {
      uint64_t excess = 0;
      if (succeeded(planned)) {
        std::optional<uint64_t> bytes =
            lowerAndCount(*planned->module, budgetBytes, lowering);
        ++end.lowered;
        if (!bytes || *bytes <= budgetBytes) {
          end.fitted = target;
          end.unlowerable = !bytes;
          return end;
        }
        excess = *bytes - budgetBytes;
        tooHigh = target;
        // The next target is lower by the excess; a plan often peaks below
        // its target, and a target still above that peak gives the same
        // plan, so then it is the peak that is lowered by the excess.
        uint64_t peak = plannedPeak(*planned->module);
        if (tooHigh - std::min(tooHigh, excess) >= peak)
          tooHigh = peak;
      } else {
        tooLow = target;
      }
      if (attempt >= std::max(1u, unsigned(attempts)))
        return end;
      // Plan for less by the excess (the holes scale with what the arena
      // packs, so that usually fits), or halfway to a target known to fail.
      target = excess && tooHigh - excess > tooLow
                   ? tooHigh - excess
                   : tooLow + (tooHigh - tooLow) / 2;
      planned = planQuietly(target, nullptr, planner);
    }
  }

  /// Plans again under lower targets until `planned`'s lowered program
  /// fits `budgetBytes`, and returns the target of the plan it leaves
  /// there; last of all the planner's smallest budget, so every budget the
  /// error of emitUnmet names is met. A module that does not lower keeps its
  /// plan, with a warning.
  FailureOr<uint64_t> fitToArena(FailureOr<PlannedModule> &planned,
                                 uint64_t budgetBytes) {
    auto unchecked = [&](uint64_t target) {
      getOperation().emitWarning()
          << "the planned program does not lower to buffers here, so its "
             "arena was not checked against the budget";
      return target;
    };
    LineEnd drops = fitLine(planned, budgetBytes, "fast");
    if (drops.unlowerable)
      return unchecked(*drops.fitted);
    if (drops.fitted && drops.lowered == 1)
      return *drops.fitted;
    // The drops chosen ahead make the cheaper plans in live bytes, but
    // their arena can pack with more holes (ResNet-50's momentum step at
    // half its peak: 19.6 MB over the plan's live bytes, the replay's own
    // plan 5.3 MB), and lower targets can cost them much more. Where their
    // first plan missed, the replay's own plans compete.
    FailureOr<PlannedModule> replayPlanned =
        planQuietly(budgetBytes, nullptr, "fast-replay");
    LineEnd replay = fitLine(replayPlanned, budgetBytes, "fast-replay");
    if (replay.fitted && !replay.unlowerable &&
        (!drops.fitted || addedSeconds(*replayPlanned->module) <
                              addedSeconds(*planned->module))) {
      planned = std::move(replayPlanned);
      return *replay.fitted;
    }
    if (drops.fitted)
      return *drops.fitted;

    std::optional<vram::UnmetBudgetError> floor = plannerFloor();
    if (!floor)
      return getOperation().emitError()
             << "budget of " << vram::formatBudget(budgetBytes)
             << " is met by the plan's live bytes but not by the lowered "
                "program, and the planner names no smallest budget";
    // Planned and lowered even where a target at or below it was lowered
    // already: the plan for a target is not the plan whose peak that target
    // is, and the error must name the lowered bytes of the very plan a rerun
    // at the named budget ends with.
    planned = planQuietly(floor->smallestBudget);
    if (failed(planned) && maxOverhead >= 0) {
      // The planner meets that budget, just not within the cap: naming it
      // would name a budget the same command refuses again.
      getOperation().emitError()
          << "budget of " << vram::formatBudget(budgetBytes)
          << " cannot be met within max-overhead "
          << llvm::formatv("{0:P1}", double(maxOverhead)).str()
          << ": the plans whose lowered program fits it add more to the "
             "compute time (without the cap the planner meets live bytes "
             "down to "
          << vram::formatBudget(floor->smallestBudget) << ")";
      return failure();
    }
    std::optional<uint64_t> bytes;
    if (succeeded(planned)) {
      bytes = lowerAndCount(*planned->module, budgetBytes, lowering);
      if (!bytes)
        return unchecked(floor->smallestBudget);
      if (*bytes <= budgetBytes)
        return floor->smallestBudget;
    }
    emitUnmet(budgetBytes, *floor, bytes);
    return failure();
  }

  void runOnOperation() override {
    lowering = LoweringCounter();
    ModuleOp module = getOperation();
    llvm::Expected<const vram::DeviceProfile &> profile =
        vram::requireDeviceProfile(device);
    if (!profile) {
      module.emitError() << llvm::toString(profile.takeError());
      return signalPassFailure();
    }
    llvm::Expected<uint64_t> resolved = vram::resolveBudget(budget, *profile);
    if (!resolved) {
      module.emitError() << "budget: " << llvm::toString(resolved.takeError());
      return signalPassFailure();
    }
    uint64_t budgetBytes = *resolved;

    // The first plan is vram-plan's own. With the arena checked, a budget
    // no plan meets is reported with the smallest budget the lowered
    // program meets; other errors are vram-plan's, planned again aloud.
    std::optional<vram::UnmetBudgetError> unmet;
    FailureOr<PlannedModule> planned =
        checkArena ? planQuietly(budgetBytes, &unmet) : planUnder(budgetBytes);
    if (failed(planned)) {
      if (unmet)
        emitUnmet(budgetBytes, *unmet);
      else if (checkArena)
        (void)planUnder(budgetBytes);
      return signalPassFailure();
    }
    uint64_t target = budgetBytes;
    if (checkArena) {
      FailureOr<uint64_t> fitted = fitToArena(planned, budgetBytes);
      if (failed(fitted))
        return signalPassFailure();
      target = *fitted;
    }

    if (printPlan) {
      llvm::outs() << planned->report;
      if (target != budgetBytes)
        llvm::outs() << "  planned under " << vram::formatBudget(target)
                     << " so that the lowered program, whose arena packs "
                        "holes between its buffers, fits the budget of "
                     << vram::formatBudget(budgetBytes) << "\n";
    }
    // The budget asked for, which the planned peak and the lowered program
    // both meet, is what reports and vram-verify-plan check.
    planned->module->walk([&](FunctionOpInterface func) {
      if (func->hasAttr(vram::VramDialect::kBudgetAttrName))
        func->setAttr(vram::VramDialect::kBudgetAttrName,
                      Builder(&getContext()).getI64IntegerAttr(budgetBytes));
    });
    module.getBodyRegion().takeBody(planned->module->getBodyRegion());
  }
};
} // namespace
