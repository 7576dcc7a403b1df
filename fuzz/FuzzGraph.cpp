//===- FuzzGraph.cpp - libFuzzer target: the planner's graph reader -------===//
//
// Any byte string as a node-link graph (Checkmate's JSON, or the random
// layered graphs'); a graph the reader accepts is planned by the fast
// planner at 70% of its unplanned peak, recompute only and with a host
// link, and every plan is simulated again from its steps. Each may refuse;
// none may crash, hang or exceed its budget.
//
//===----------------------------------------------------------------------===//

#include "vram/Planner/GraphSources.h"
#include "vram/Planner/Planners.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <cstdlib>

using namespace vram::planner;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<PlanningGraph> graph = parseNodeLinkGraph(
      llvm::StringRef(reinterpret_cast<const char *>(data), size));
  if (!graph) {
    llvm::consumeError(graph.takeError());
    return 0;
  }
  uint64_t budget = unplannedPeak(*graph) / 10 * 7;
  for (double link : {0.0, 1.0}) {
    MachineModel device;
    device.hostLinkBytesPerTime = link;
    llvm::Expected<Plan> plan = planFast(*graph, budget, device);
    if (!plan) {
      llvm::consumeError(plan.takeError());
      continue;
    }
    // A plan over its budget is a planner bug: make it a finding.
    if (plan->simulation.peakBytes > budget)
      abort();
  }
  return 0;
}
