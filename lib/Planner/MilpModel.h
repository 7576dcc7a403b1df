//===- MilpModel.h - A MILP in triplet form, solved by HiGHS --------------===//
//
// Internal to lib/Planner: shared by the Checkmate MILP and the relaxation
// that bounds it from below. The solver stays out of the public interface;
// only MilpModel.cpp sees its headers.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_LIB_PLANNER_MILPMODEL_H
#define VRAM_LIB_PLANNER_MILPMODEL_H

#include "llvm/ADT/ArrayRef.h"

#include <limits>
#include <vector>

namespace vram::planner::detail {

constexpr double kNoLimit = std::numeric_limits<double>::infinity();

/// Solver tolerances are absolute, and op costs in seconds (around 1e-6)
/// fall below them: objectives go to the solver in units of the mean op's
/// cost.
inline double solverCostUnit(double totalCost, size_t numOps) {
  return totalCost > 0 && numOps > 0 ? totalCost / numOps : 1.0;
}

/// What a solve ended with. `bestBound` is the solver's proven lower bound
/// on the optimum (within its relative gap of `objective` when Optimal);
/// `values` is the best solution found, empty for NoSolution and Infeasible.
struct MilpSolution {
  enum class Status { Optimal, Feasible, NoSolution, Infeasible };
  Status status = Status::NoSolution;
  double objective = 0;
  double bestBound = 0;
  std::vector<double> values;
};

/// Collects a minimisation MILP in triplet form and hands it to the solver
/// in one call, which is much faster than adding rows and columns one by one.
class MilpModel {
public:
  int addColumn(double lower, double upper, double cost, bool isInteger) {
    colLower.push_back(lower);
    colUpper.push_back(upper);
    objective.push_back(cost);
    integer.push_back(isInteger);
    return colLower.size() - 1;
  }
  int addBinary(double cost = 0) { return addColumn(0, 1, cost, true); }
  void fix(int column, double value) {
    colLower[column] = colUpper[column] = value;
  }
  void addRow(llvm::ArrayRef<std::pair<int, double>> terms, double lower,
              double upper) {
    int row = rowLower.size();
    rowLower.push_back(lower);
    rowUpper.push_back(upper);
    for (auto [column, coefficient] : terms)
      entries.push_back({column, row, coefficient});
  }

  /// Solves quietly within `seconds` of wall-clock time, with HiGHS.
  MilpSolution solve(double seconds);

  /// Solves without HiGHS's presolve (see MilpPlanner.cpp).
  void disablePresolve() { presolve = false; }

  /// Values of some integer columns that, with the others completed by the
  /// solver, make a solution to start from. A start that cannot be
  /// completed is ignored.
  void setStart(std::vector<std::pair<int, double>> values) {
    start = std::move(values);
  }

private:
  struct Entry {
    int column, row;
    double value;
  };
  std::vector<double> colLower, colUpper, objective, rowLower, rowUpper;
  std::vector<bool> integer;
  std::vector<Entry> entries;
  bool presolve = true;
  std::vector<std::pair<int, double>> start;
};

} // namespace vram::planner::detail

#endif // VRAM_LIB_PLANNER_MILPMODEL_H
