//===- PlannerBench.cpp - Planner comparison and scaling tables -----------===//
//
// For every published benchmark graph and budgets of 90/70/50/30% of the
// unplanned peak plus the smallest the fast planner meets, prints the
// overhead (extra time / unplanned compute time) of each planner as a
// markdown table; then the fast planner's run time on generated transformer
// training graphs of growing size.
//
//===----------------------------------------------------------------------===//

#include "vram/Planner/GraphSources.h"
#include "vram/Planner/Planners.h"

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
                                   cl::desc("CBC time limit per solve"),
                                   cl::init(60));
static cl::opt<unsigned> milpMaxOps("milp-max-ops",
                                    cl::desc("Skip the MILP on larger graphs"),
                                    cl::init(400));

namespace {
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

/// A link moving the mean tensor in the mean op's time: offload pays off
/// for tensors idle for more than about two ops.
DeviceProfile offloadDevice(const PlanningGraph &graph) {
  uint64_t bytes = 0;
  for (const PlanTensor &tensor : graph.tensors())
    bytes += tensor.bytes;
  DeviceProfile device;
  device.hostLinkBytesPerTime = (double(bytes) / graph.numTensors()) /
                                (graph.totalCost() / graph.numOps());
  return device;
}

void benchGraph(llvm::StringRef path, double milpLimit, unsigned milpOps) {
  llvm::Expected<PlanningGraph> graph = readNodeLinkGraph(path);
  if (!graph) {
    llvm::errs() << llvm::toString(graph.takeError()) << "\n";
    return;
  }
  DeviceProfile device;
  DeviceProfile linked = offloadDevice(*graph);
  uint64_t unplanned = unplannedPeak(*graph);
  auto start = std::chrono::steady_clock::now();
  uint64_t smallest = smallestFastBudget(*graph, device);
  double bisectSeconds = secondsSince(start);
  llvm::Expected<Plan> chen = planChenSqrtN(*graph, device);

  std::string name = llvm::sys::path::stem(path).str();
  llvm::outs() << llvm::formatv(
      "\n### {0}\n{1} ops, unplanned peak {2:N} B, lower bound {3:N} B, "
      "fast planner's smallest {4:N} B ({5:P1}, found in {6:F1} ms)\n\n",
      name, graph->numOps(), unplanned, memoryLowerBound(*graph), smallest,
      double(smallest) / unplanned, 1000 * bisectSeconds);
  llvm::outs() << "| budget | fast | fast ms | fast+offload | MILP | MILP "
                  "status | MILP bound | gap | MILP s | sqrt(n) | keep-all |\n"
                  "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (double fraction : {0.9, 0.7, 0.5, 0.3, 0.0}) {
    uint64_t budget = fraction > 0 ? uint64_t(fraction * unplanned) : smallest;
    std::string label =
        fraction > 0
            ? llvm::formatv("{0:P0}", fraction).str()
            : llvm::formatv("min {0:P1}", double(smallest) / unplanned).str();
    start = std::chrono::steady_clock::now();
    llvm::Expected<Plan> fast = planFast(*graph, budget, device);
    double fastSeconds = secondsSince(start);
    llvm::Expected<Plan> offload = planFast(*graph, budget, linked);

    std::string milpCells = "skipped | - | - | - | -";
    if (graph->numOps() <= milpOps) {
      MilpOptions options;
      options.timeLimitSeconds = milpLimit;
      llvm::Expected<MilpResult> milp =
          planMilp(*graph, budget, device, options);
      if (!milp) {
        milpCells =
            "error: " + llvm::toString(milp.takeError()) + " | - | - | - | -";
      } else {
        double baseline = graph->totalCost();
        std::string bound =
            milp->status == MilpStatus::Infeasible
                ? "-"
                : llvm::formatv(
                      "{0:P1}",
                      std::max(0.0, milp->lowerBoundCost / baseline - 1))
                      .str();
        std::string gap = "-";
        if (milp->plan) {
          double cost = milp->plan->simulation.totalTime;
          gap = llvm::formatv("{0:P1}", (cost - milp->lowerBoundCost) / cost);
        }
        milpCells = llvm::formatv(
            "{0} | {1} | {2} | {3} | {4:F1}",
            milp->plan
                ? llvm::formatv("{0:P1}", milp->plan->simulation.overhead())
                      .str()
                : std::string("-"),
            stringifyMilpStatus(milp->status), bound, gap, milp->solveSeconds);
      }
    }
    llvm::outs() << llvm::formatv(
        "| {0} | {1} | {2:F2} | {3} | {4} | {5} | {6} |\n", label,
        describe(fast, budget, unplanned), 1000 * fastSeconds,
        describe(offload, budget, unplanned), milpCells,
        describe(chen, budget, unplanned),
        unplanned <= budget ? "0.0%" : "over (100%)");
    for (llvm::Expected<Plan> *plan : {&fast, &offload})
      if (!*plan)
        llvm::consumeError(plan->takeError());
  }
  if (!chen)
    llvm::consumeError(chen.takeError());
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
        DeviceProfile device = offload ? offloadDevice(graph) : DeviceProfile();
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

  std::vector<std::string> paths;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(graphsDir, ec), end;
       it != end && !ec; it.increment(ec))
    if (llvm::sys::path::extension(it->path()) == ".json")
      paths.push_back(it->path());
  if (ec || paths.empty()) {
    llvm::errs() << "no graphs in '" << graphsDir << "'\n";
    return 1;
  }
  llvm::sort(paths);
  llvm::outs() << llvm::formatv(
      "Overhead = (recompute + exposed copy time) / unplanned compute time. "
      "MILP: CBC, {0} s limit, recompute only. fast+offload: host link moving "
      "the mean tensor in the mean op time.\n",
      milpLimit);
  for (const std::string &path : paths)
    benchGraph(path, milpLimit, milpOps);

  // About 22 ops per layer: 1k, 10k and 100k ops.
  std::vector<unsigned> layers = {45, 455};
  if (!quick)
    layers.push_back(4545);
  benchScaling(layers);
  return 0;
}
