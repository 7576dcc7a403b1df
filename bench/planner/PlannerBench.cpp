//===- PlannerBench.cpp - Planner comparison and scaling tables -----------===//
//
// For every published benchmark graph (or, with --ir, the function @main of
// MLIR files such as the training steps vram-opt writes) and budgets of
// 90/70/50/30% of the unplanned peak plus the smallest the fast planner
// meets, prints the overhead (extra time / unplanned compute time) of each
// planner and the best proven lower bound on it (the MILP's bound or the
// interval-drop relaxation's) as a markdown table, and the peak that
// reordering alone reaches; then the fast planner's run time on generated
// transformer training graphs of growing size.
//
//===----------------------------------------------------------------------===//

#include "vram/Analysis/CostModel.h"
#include "vram/Analysis/DeviceProfile.h"
#include "vram/Dialect/ONNX/ONNXDialect.h"
#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Planner/GraphSources.h"
#include "vram/Planner/Planners.h"
#include "vram/Planner/Schedule.h"
#include "vram/Planning/IRPlanning.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace vram::planner;
namespace cl = llvm::cl;

static cl::opt<std::string> graphsDir("graphs",
                                      cl::desc("Directory of node-link graphs"),
                                      cl::init(VRAM_CHECKMATE_GRAPHS_DIR));
static cl::opt<bool> quick("quick",
                           cl::desc("MILP limited to 10 s and graphs of at "
                                    "most 100 ops; scaling up to 10k ops"));
static cl::opt<double> milpSeconds("milp-seconds",
                                   cl::desc("HiGHS time limit per solve"),
                                   cl::init(60));
static cl::opt<unsigned> milpMaxOps("milp-max-ops",
                                    cl::desc("Skip the MILP on larger graphs"),
                                    cl::init(400));
static cl::opt<bool>
    milpStart("milp-start", cl::init(true),
              cl::desc("Start HiGHS from the fast planner's plan"));
static cl::opt<std::string>
    graphFilter("filter",
                cl::desc("Only graphs whose file name contains this"));
static cl::opt<bool> noScaling("no-scaling",
                               cl::desc("Skip the scaling table"));
static cl::list<std::string>
    irFiles("ir", cl::desc("MLIR files whose @main to plan instead of the "
                           "node-link graphs (op times on --device)"));
static cl::list<double> budgetFractions(
    "fractions", cl::CommaSeparated,
    cl::desc("Budgets as fractions of the unplanned peak, 0 for the smallest "
             "the fast planner meets (default 0.9,0.8,0.7,0.5,0.3,0)"));
static cl::opt<bool> reorderedBound(
    "reordered-bound",
    cl::desc("Also bound the fast planner's plan on the memory order with the "
             "relaxation on that order (a second solve per budget)"));
static cl::opt<std::string> runsDir(
    "runs-dir",
    cl::desc("Write each fast plan's op runs (given order, recompute only) to "
             "DIR/GRAPH-FRACTION.runs, schedule positions separated by "
             "spaces, for cpsat_reference.py --hints"));
static cl::opt<std::string>
    irDevice("device", cl::desc("Device profile for --ir"), cl::init("H100"));

namespace {
/// The MILP column's legend.
std::string describeMilp(double seconds) {
  return llvm::formatv("MILP: HiGHS, {0} s limit, {1}recompute only.", seconds,
                       milpStart ? "started from the fast plan, " : "")
      .str();
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// "12.3%" for a plan within budget, "over (peak%)" for a baseline that is
/// not, "-" when there is no plan.
std::string describe(llvm::Expected<Plan> &plan, uint64_t budget,
                     uint64_t unplanned) {
  if (!plan)
    return "-";
  const SimulationResult &sim = plan->simulation;
  if (sim.peakBytes > budget)
    return llvm::formatv("over ({0:P0})", double(sim.peakBytes) / unplanned);
  return llvm::formatv("{0:P1}", sim.overhead());
}

/// " bound | gap |" of the fast planner's plan on an order chosen for memory
/// against the relaxation on that order.
std::string reorderedBoundCells(const PlanningGraph &reordered, uint64_t budget,
                                double milpLimit,
                                llvm::Expected<Plan> &fastReordered) {
  if (budget < memoryLowerBound(reordered))
    return " infeasible (an op alone touches more) | - |";
  MilpOptions options;
  options.timeLimitSeconds = milpLimit;
  llvm::Expected<RecomputeBound> relaxed =
      recomputeLowerBound(reordered, budget, options);
  if (!relaxed)
    return " error: " + llvm::toString(relaxed.takeError()) + " | - |";
  if (relaxed->infeasible)
    return " infeasible | - |";
  double bound = relaxed->extraCost / reordered.totalCost();
  std::string gap = "-";
  if (fastReordered && fastReordered->simulation.peakBytes <= budget)
    gap = llvm::formatv(
        "{0:P1}", (1 + fastReordered->simulation.overhead()) / (1 + bound) - 1);
  return llvm::formatv(" {0:P1}{1} | {2} |", bound,
                       relaxed->exact ? "" : " (bound)", gap);
}

/// A link moving the mean tensor in the mean op's time: offload pays off
/// for tensors idle for more than about two ops.
MachineModel offloadDevice(const PlanningGraph &graph) {
  uint64_t bytes = 0;
  for (const PlanTensor &tensor : graph.tensors())
    bytes += tensor.bytes;
  MachineModel device;
  device.hostLinkBytesPerTime = (double(bytes) / graph.numTensors()) /
                                (graph.totalCost() / graph.numOps());
  return device;
}

/// The best proven lower bound on the recompute-only overhead at a budget:
/// the MILP's optimum or the solver's best bound on it, or the interval-drop
/// relaxation's, whichever is larger; or a proof that nothing fits.
struct Bound {
  bool infeasible = false;
  double overhead = 0;
  std::string source;
};

/// Writes `runs` as one line of op indices.
void writeRuns(const std::string &path, llvm::ArrayRef<OpId> runs) {
  std::error_code error;
  llvm::raw_fd_ostream out(path, error);
  if (error) {
    llvm::errs() << "cannot write " << path << ": " << error.message() << "\n";
    return;
  }
  llvm::interleave(runs, out, " ");
  out << "\n";
}

/// One graph's table. `device` plans recompute only; `linked` has a host
/// link for the fast+offload column.
void benchGraph(llvm::StringRef name, const PlanningGraph &graph,
                const MachineModel &device, const MachineModel &linked,
                double milpLimit, unsigned milpOps) {
  uint64_t unplanned = unplannedPeak(graph);
  uint64_t lowest = memoryLowerBound(graph);
  double baseline = graph.totalCost();
  auto start = std::chrono::steady_clock::now();
  uint64_t smallest = smallestFastBudget(graph, device);
  double bisectSeconds = secondsSince(start);
  llvm::Expected<Plan> chen = planChenSqrtN(graph, device);
  start = std::chrono::steady_clock::now();
  PlanningGraph reordered = reorderGraph(graph, orderForMemory(graph));
  // The orders vram-plan's allow-reorder plans besides the given one.
  std::vector<PlanningGraph> reorderings;
  for (const std::vector<OpId> &order : ordersForMemory(graph))
    reorderings.push_back(reorderGraph(graph, order));
  double reorderSeconds = secondsSince(start);
  uint64_t reorderedPeak = unplannedPeak(reordered);
  std::optional<uint64_t> ceiling = recomputeOnlyCeiling(graph);

  llvm::outs() << llvm::formatv(
      "\n#### {0}\n{1} ops, unplanned peak {2:N} B, lower bound {3:N} B "
      "({4:P1}), fast planner's smallest {5:N} B ({6:P1}, found in {7:F1} "
      "ms)",
      name, graph.numOps(), unplanned, lowest, double(lowest) / unplanned,
      smallest, double(smallest) / unplanned, 1000 * bisectSeconds);
  // Above the unplanned peak it says nothing: the schedule itself is a plan.
  if (ceiling && *ceiling < unplanned)
    llvm::outs() << llvm::formatv(", recompute-only plans exist from {0:N} B "
                                  "({1:P1}, every input rebuilt from nothing)",
                                  *ceiling, double(*ceiling) / unplanned);
  llvm::outs() << llvm::formatv(
      "\n\nMemory order (reordering alone, no plan): unplanned peak "
      "{0:N} B, {1:P1} of the given order's (ordered in {2:F1} ms)\n\n",
      reorderedPeak, double(reorderedPeak) / unplanned, 1000 * reorderSeconds);
  llvm::outs() << "| budget | fast | fast ms | fast, reordered | "
                  "fast+offload | MILP | MILP status | MILP s | relax. | "
                  "relax. s | bound | fast gap | sqrt(n) | keep-all |"
               << (reorderedBound ? " bound, reordered | gap, reordered |" : "")
               << "\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
               << (reorderedBound ? "---|---|" : "") << "\n";
  std::vector<double> fractions =
      budgetFractions.empty()
          ? std::vector<double>{0.9, 0.8, 0.7, 0.5, 0.3, 0.0}
          : std::vector<double>(budgetFractions.begin(), budgetFractions.end());
  for (double fraction : fractions) {
    uint64_t budget = fraction > 0 ? uint64_t(fraction * unplanned) : smallest;
    std::string label =
        fraction > 0
            ? llvm::formatv("{0:P0}", fraction).str()
            : llvm::formatv("min {0:P1}", double(smallest) / unplanned).str();
    start = std::chrono::steady_clock::now();
    llvm::Expected<Plan> fast = planFast(graph, budget, device);
    double fastSeconds = secondsSince(start);
    if (fast && !runsDir.empty())
      writeRuns(
          llvm::formatv("{0}/{1}-{2}.runs", runsDir.getValue(), name, fraction)
              .str(),
          fast->opOrder());
    // The cheapest fast plan over those orders, and its order's graph.
    llvm::Expected<Plan> fastReordered =
        llvm::createStringError("no order chosen for memory");
    const PlanningGraph *bestOrder = nullptr;
    for (const PlanningGraph &order : reorderings) {
      llvm::Expected<Plan> plan = planFast(order, budget, device);
      if (plan && plan->simulation.peakBytes <= budget &&
          (!bestOrder || plan->simulation.overhead() <
                             fastReordered->simulation.overhead())) {
        llvm::consumeError(fastReordered.takeError());
        fastReordered = std::move(plan);
        bestOrder = &order;
      } else if (!plan) {
        llvm::consumeError(plan.takeError());
      }
    }
    llvm::Expected<Plan> offload = planFast(graph, budget, linked);

    Bound bound;
    std::string relaxCells = "- | -";
    if (budget < lowest) {
      // Some op alone touches more than the budget.
      bound.infeasible = true;
      bound.source = "an op alone touches more";
    } else {
      MilpOptions options;
      options.timeLimitSeconds = milpLimit;
      llvm::Expected<RecomputeBound> relaxed =
          recomputeLowerBound(graph, budget, options);
      if (!relaxed) {
        relaxCells = "error: " + llvm::toString(relaxed.takeError()) + " | -";
      } else {
        bound.infeasible = relaxed->infeasible;
        bound.overhead = relaxed->extraCost / baseline;
        bound.source = "relaxation";
        relaxCells = llvm::formatv(
            "{0}{1} | {2:F1}",
            relaxed->infeasible ? std::string("infeasible")
                                : llvm::formatv("{0:P1}", bound.overhead).str(),
            relaxed->exact || relaxed->infeasible ? "" : " (bound)",
            relaxed->solveSeconds);
      }
    }

    std::string milpCells = "skipped | - | -";
    if (bound.infeasible)
      milpCells = "- | not run | -";
    else if (graph.numOps() <= milpOps) {
      MilpOptions options;
      options.timeLimitSeconds = milpLimit;
      if (fast && milpStart)
        options.startRuns = fast->opOrder();
      llvm::Expected<MilpResult> milp =
          planMilp(graph, budget, device, options);
      if (!milp) {
        milpCells = "error: " + llvm::toString(milp.takeError()) + " | - | -";
      } else {
        if (milp->status == MilpStatus::Infeasible) {
          bound.infeasible = true;
          bound.source = "MILP";
        } else {
          double milpBound = std::max(0.0, milp->lowerBoundCost / baseline - 1);
          if (milpBound > bound.overhead) {
            bound.overhead = milpBound;
            bound.source = milp->status == MilpStatus::Optimal ? "MILP optimum"
                                                               : "MILP bound";
          }
        }
        milpCells = llvm::formatv(
            "{0} | {1} | {2:F1}",
            milp->plan
                ? llvm::formatv("{0:P1}", milp->plan->simulation.overhead())
                      .str()
                : std::string("-"),
            stringifyMilpStatus(milp->status), milp->solveSeconds);
      }
    }

    // The gap compares total times, as a MILP gap does: fast / bound - 1.
    std::string boundCell = "-", gapCell = "-";
    if (bound.infeasible) {
      boundCell = "infeasible (" + bound.source + ")";
    } else if (!bound.source.empty()) {
      boundCell =
          llvm::formatv("{0:P1} ({1})", bound.overhead, bound.source).str();
      if (fast && fast->simulation.peakBytes <= budget)
        gapCell = llvm::formatv(
            "{0:P1}",
            (1 + fast->simulation.overhead()) / (1 + bound.overhead) - 1);
    }
    llvm::outs() << llvm::formatv(
        "| {0} | {1} | {2:F2} | {3} | {4} | {5} | {6} | {7} | {8} | {9} | "
        "{10} |",
        label,
        !fast && ceiling && budget >= *ceiling
            ? std::string("- (a plan exists)")
            : describe(fast, budget, unplanned),
        1000 * fastSeconds, describe(fastReordered, budget, unplanned),
        describe(offload, budget, unplanned), milpCells, relaxCells, boundCell,
        gapCell, describe(chen, budget, unplanned),
        unplanned <= budget ? "0.0%" : "over (100%)");
    if (reorderedBound)
      llvm::outs() << (bestOrder ? reorderedBoundCells(*bestOrder, budget,
                                                       milpLimit, fastReordered)
                                 : std::string(" - | - |"));
    llvm::outs() << "\n";
    for (llvm::Expected<Plan> *plan : {&fast, &fastReordered, &offload})
      if (!*plan)
        llvm::consumeError(plan->takeError());
  }
  if (!chen)
    llvm::consumeError(chen.takeError());
  // A full run takes many minutes: show each graph as soon as it is done.
  llvm::outs().flush();
}

void benchNodeLinkGraph(llvm::StringRef path, double milpLimit,
                        unsigned milpOps) {
  llvm::Expected<PlanningGraph> graph = readNodeLinkGraph(path);
  if (!graph) {
    llvm::errs() << llvm::toString(graph.takeError()) << "\n";
    return;
  }
  benchGraph(llvm::sys::path::stem(path), *graph, MachineModel(),
             offloadDevice(*graph), milpLimit, milpOps);
}

/// The planner's graph of @main in an MLIR file, as vram-plan builds it (op
/// times in seconds on `profile`), in the file's op order.
bool benchIRFile(llvm::StringRef path, const vram::DeviceProfile &profile,
                 double milpLimit, unsigned milpOps) {
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  registry.insert<vram::ONNXDialect, vram::VramDialect>();
  vram::registerCostModelExternalModels(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(path, &context);
  if (!module)
    return false;
  auto main = module->lookupSymbol<mlir::func::FuncOp>("main");
  if (!main) {
    llvm::errs() << path << ": no func.func @main\n";
    return false;
  }
  vram::MemoryAnalysis analysis(main);
  if (!analysis.isValid()) {
    llvm::errs() << path << ": the memory analysis failed\n";
    return false;
  }
  mlir::Block &body = main.getFunctionBody().front();
  vram::IRPlanningGraph planning = vram::buildPlanningGraph(
      analysis, body, vram::getPlannedOps(body), profile);
  benchGraph(llvm::sys::path::stem(path), planning.graph,
             vram::getPlannerDevice(profile, /*allowOffload=*/false),
             vram::getPlannerDevice(profile, /*allowOffload=*/true), milpLimit,
             milpOps);
  return true;
}

void benchScaling(llvm::ArrayRef<unsigned> layerCounts) {
  llvm::outs() << "\n### Fast planner scaling: transformer training graphs\n\n"
                  "| ops | budget | overhead | recompute | exposed copy | "
                  "plan ms |\n|---|---|---|---|---|---|\n";
  for (unsigned layers : layerCounts) {
    PlanningGraph graph = makeTransformerTrainingGraph(layers, layers);
    uint64_t unplanned = unplannedPeak(graph);
    for (double fraction : {0.5, 0.3}) {
      for (bool offload : {false, true}) {
        MachineModel device = offload ? offloadDevice(graph) : MachineModel();
        auto start = std::chrono::steady_clock::now();
        llvm::Expected<Plan> plan =
            planFast(graph, uint64_t(fraction * unplanned), device);
        double seconds = secondsSince(start);
        if (!plan) {
          llvm::outs() << llvm::formatv("| {0} | {1:P0} | {2} |\n",
                                        graph.numOps(), fraction,
                                        llvm::toString(plan.takeError()));
          continue;
        }
        const SimulationResult &sim = plan->simulation;
        llvm::outs() << llvm::formatv(
            "| {0} | {1:P0}{2} | {3:P1} | {4:P1} | {5:P1} | {6:F1} |\n",
            graph.numOps(), fraction, offload ? " +offload" : "",
            sim.overhead(), sim.recomputeTime / sim.baselineTime,
            sim.exposedTransferTime / sim.baselineTime, 1000 * seconds);
      }
    }
  }
}
} // namespace

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv, "vram-opt planner benchmark\n");
  double milpLimit = quick ? std::min<double>(milpSeconds, 10) : milpSeconds;
  unsigned milpOps = quick ? std::min<unsigned>(milpMaxOps, 100) : milpMaxOps;
  if (!runsDir.empty())
    if (std::error_code error = llvm::sys::fs::create_directories(runsDir)) {
      llvm::errs() << "error: --runs-dir: cannot create '" << runsDir
                   << "': " << error.message() << "\n";
      return 1;
    }

  if (!irFiles.empty()) {
    llvm::Expected<const vram::DeviceProfile &> profile =
        vram::requireDeviceProfile(irDevice);
    if (!profile) {
      llvm::errs() << llvm::toString(profile.takeError()) << "\n";
      return 1;
    }
    llvm::outs() << llvm::formatv(
        "Overhead = (recompute + exposed copy time) / unplanned compute time "
        "on {0}. {1} relax.: "
        "interval-drop relaxation (same limit). bound: the larger proven lower "
        "bound on the recompute-only overhead. fast gap: (1 + fast) / (1 + "
        "bound) - 1; \"- (a plan exists)\": no fast plan at a budget the "
        "plan rebuilding every input from nothing meets. fast, reordered: "
        "the cheapest fast plan on the orders "
        "chosen for memory (ordersForMemory, as vram-plan's allow-reorder "
        "plans them; the bounds hold for the given order only, bound, "
        "reordered for the plan's order). fast+offload: the device's host "
        "link.\n",
        profile->name, describeMilp(milpLimit));
    for (const std::string &path : irFiles)
      if (!benchIRFile(path, *profile, milpLimit, milpOps))
        return 1;
    return 0;
  }

  std::vector<std::string> paths;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(graphsDir, ec), end;
       it != end && !ec; it.increment(ec))
    if (llvm::sys::path::extension(it->path()) == ".json" &&
        llvm::sys::path::filename(it->path()).contains(graphFilter))
      paths.push_back(it->path());
  if (ec || paths.empty()) {
    llvm::errs() << "no graphs in '" << graphsDir << "'\n";
    return 1;
  }
  llvm::sort(paths);
  llvm::outs() << llvm::formatv(
      "Overhead = (recompute + exposed copy time) / unplanned compute time. "
      "{0} relax.: interval-drop "
      "relaxation (same limit). bound: the larger proven lower bound on the "
      "recompute-only overhead. fast gap: (1 + fast) / (1 + bound) - 1; "
      "\"- (a plan exists)\": no fast plan at a budget the plan rebuilding "
      "every input from nothing meets. fast, reordered: the cheapest fast plan "
      "on the orders chosen for "
      "memory (ordersForMemory; the bounds hold for the given order only, "
      "bound, reordered for the plan's order). "
      "fast+offload: host link moving the mean tensor in the mean op time.\n",
      describeMilp(milpLimit));
  for (const std::string &path : paths)
    benchNodeLinkGraph(path, milpLimit, milpOps);

  if (noScaling)
    return 0;
  // About 22 ops per layer: 1k, 10k and 100k ops.
  std::vector<unsigned> layers = {45, 455};
  if (!quick)
    layers.push_back(4545);
  benchScaling(layers);
  return 0;
}
