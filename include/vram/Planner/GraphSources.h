//===- GraphSources.h - Planning graphs from files and from generators ----===//
//
// Readers for the published rematerialization benchmark graphs (networkx
// node-link JSON, see shared/bench/checkmate-graphs/README.md) and
// generators of synthetic graphs for tests and benchmarks.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_PLANNER_GRAPHSOURCES_H
#define VRAM_PLANNER_GRAPHSOURCES_H

#include "vram/Planner/PlanningGraph.h"

namespace vram::planner {

/// Parses a node-link JSON graph in either published flavour:
///  - Checkmate: nodes {id, name, backward, cost_cpu, cost_ram}, links
///    {source, target}; ids are the schedule;
///  - random layered: nodes {name, out_cost, param_cost, duration}, links
///    {"0", "1"}; graph.order is the schedule.
/// Each node becomes one op with one output tensor; sinks are outputs.
llvm::Expected<PlanningGraph> parseNodeLinkGraph(llvm::StringRef json);
llvm::Expected<PlanningGraph> readNodeLinkGraph(llvm::StringRef path);

/// Forward chain of `depth` ops followed by its backward chain, the shape of
/// a plain MLP training step: backward op i reads forward output i and the
/// gradient from backward op i+1.
PlanningGraph makeTrainingChain(llvm::ArrayRef<uint64_t> activationBytes,
                                llvm::ArrayRef<double> forwardCosts);

/// A training step of a `layers`-deep transformer-like network: per layer
/// attention and MLP blocks with residual adds, then the mirrored backward
/// pass reading the saved activations. About 22 ops per layer.
PlanningGraph makeTransformerTrainingGraph(unsigned layers, uint64_t seed);

/// A random DAG of `numOps` ops with one output each, edges to random earlier
/// ops (at most `maxInputs` per op), random sizes and costs.
PlanningGraph makeRandomDag(unsigned numOps, unsigned maxInputs, uint64_t seed);

} // namespace vram::planner

#endif // VRAM_PLANNER_GRAPHSOURCES_H
