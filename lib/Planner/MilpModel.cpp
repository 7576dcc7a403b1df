//===- MilpModel.cpp - Solving a MilpModel with HiGHS's C API -------------===//
//
// HiGHS (highsbox on PyPI) replaced CBC: on the Checkmate MILP and on the
// interval-drop relaxation it proves optima and bounds where CBC ran out of
// time (docs/planner.md, "Exact solver"). The C API keeps the C++ ABI of the
// wheel's library out of the picture.
//
//===----------------------------------------------------------------------===//

#include "MilpModel.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

// The header declares a static function it never defines.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include <interfaces/highs_c_api.h>
#pragma GCC diagnostic pop

#include <memory>
#include <tuple>

using namespace vram::planner::detail;

namespace {
struct HighsDeleter {
  void operator()(void *highs) const { Highs_destroy(highs); }
};
} // namespace

MilpSolution MilpModel::solve(double seconds) {
  llvm::sort(entries, [](const Entry &a, const Entry &b) {
    return std::tie(a.column, a.row) < std::tie(b.column, b.row);
  });
  size_t numColumns = colLower.size();
  std::vector<HighsInt> starts(numColumns + 1), rows, integrality(numColumns);
  std::vector<double> values;
  rows.reserve(entries.size());
  values.reserve(entries.size());
  for (const Entry &e : entries) {
    ++starts[e.column + 1];
    rows.push_back(e.row);
    values.push_back(e.value);
  }
  for (size_t c = 0; c < numColumns; ++c) {
    starts[c + 1] += starts[c];
    integrality[c] =
        integer[c] ? kHighsVarTypeInteger : kHighsVarTypeContinuous;
  }
  std::unique_ptr<void, HighsDeleter> highs(Highs_create());
  Highs_setBoolOptionValue(highs.get(), "output_flag", false);
  Highs_setDoubleOptionValue(highs.get(), "time_limit", std::max(seconds, 0.0));
  if (!presolve)
    Highs_setStringOptionValue(highs.get(), "presolve", "off");
  Highs_passMip(highs.get(), numColumns, rowLower.size(), values.size(),
                kHighsMatrixFormatColwise, kHighsObjSenseMinimize, 0,
                objective.data(), colLower.data(), colUpper.data(),
                rowLower.data(), rowUpper.data(), starts.data(), rows.data(),
                values.data(), integrality.data());
  if (!start.empty()) {
    std::vector<HighsInt> startColumns;
    std::vector<double> startValues;
    for (auto [column, value] : start) {
      startColumns.push_back(column);
      startValues.push_back(value);
    }
    Highs_setSparseSolution(highs.get(), startColumns.size(),
                            startColumns.data(), startValues.data());
  }
  Highs_run(highs.get());

  MilpSolution solution;
  HighsInt modelStatus = Highs_getModelStatus(highs.get());
  if (modelStatus == kHighsModelStatusInfeasible) {
    solution.status = MilpSolution::Status::Infeasible;
    return solution;
  }
  // -inf when the time ran out before the root relaxation was solved.
  Highs_getDoubleInfoValue(highs.get(), "mip_dual_bound", &solution.bestBound);
  HighsInt primalStatus = kHighsSolutionStatusNone;
  Highs_getIntInfoValue(highs.get(), "primal_solution_status", &primalStatus);
  if (primalStatus != kHighsSolutionStatusFeasible)
    return solution;
  solution.objective = Highs_getObjectiveValue(highs.get());
  solution.status = modelStatus == kHighsModelStatusOptimal
                        ? MilpSolution::Status::Optimal
                        : MilpSolution::Status::Feasible;
  solution.values.resize(numColumns);
  Highs_getSolution(highs.get(), solution.values.data(), nullptr, nullptr,
                    nullptr);
  return solution;
}
