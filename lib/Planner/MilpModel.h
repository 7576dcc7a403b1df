//===- MilpModel.h - A MILP in triplet form, handed to CBC in one call ----===//
//
// Internal to lib/Planner: shared by the Checkmate MILP and the relaxation
// that bounds it from below. CBC's headers stay out of the public interface.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_LIB_PLANNER_MILPMODEL_H
#define VRAM_LIB_PLANNER_MILPMODEL_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"

#include <Cbc_C_Interface.h>

#include <limits>
#include <memory>
#include <tuple>
#include <vector>

namespace vram::planner::detail {

/// Collects a MILP in triplet form and hands it to CBC in one call, which
/// is much faster than adding rows and columns one by one.
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
  void load(Cbc_Model *model) {
    llvm::sort(entries, [](const Entry &a, const Entry &b) {
      return std::tie(a.column, a.row) < std::tie(b.column, b.row);
    });
    std::vector<CoinBigIndex> starts(colLower.size() + 1);
    std::vector<int> rows;
    std::vector<double> values;
    rows.reserve(entries.size());
    values.reserve(entries.size());
    for (const Entry &e : entries) {
      ++starts[e.column + 1];
      rows.push_back(e.row);
      values.push_back(e.value);
    }
    for (size_t c = 0; c < colLower.size(); ++c)
      starts[c + 1] += starts[c];
    Cbc_loadProblem(model, colLower.size(), rowLower.size(), starts.data(),
                    rows.data(), values.data(), colLower.data(),
                    colUpper.data(), objective.data(), rowLower.data(),
                    rowUpper.data());
    for (size_t c = 0; c < integer.size(); ++c)
      if (integer[c])
        Cbc_setInteger(model, c);
  }

private:
  struct Entry {
    int column, row;
    double value;
  };
  std::vector<double> colLower, colUpper, objective, rowLower, rowUpper;
  std::vector<bool> integer;
  std::vector<Entry> entries;
};

/// CBC's tolerances are absolute, and op costs in seconds (around 1e-6)
/// fall below them: objectives go to CBC in units of the mean op's cost.
inline double solverCostUnit(double totalCost, size_t numOps) {
  return totalCost > 0 && numOps > 0 ? totalCost / numOps : 1.0;
}

constexpr double kNoLimit = std::numeric_limits<double>::infinity();

struct CbcDeleter {
  void operator()(Cbc_Model *model) const { Cbc_deleteModel(model); }
};
using CbcModelPtr = std::unique_ptr<Cbc_Model, CbcDeleter>;

/// Loads `milp` into a fresh CBC model and solves it quietly within
/// `seconds` of wall-clock time.
inline CbcModelPtr solveWithCbc(MilpModel &milp, double seconds) {
  CbcModelPtr model(Cbc_newModel());
  milp.load(model.get());
  Cbc_setLogLevel(model.get(), 0);
  Cbc_setParameter(model.get(), "timeMode", "elapsed");
  Cbc_setMaximumSeconds(model.get(), seconds);
  Cbc_solve(model.get());
  return model;
}

} // namespace vram::planner::detail

#endif // VRAM_LIB_PLANNER_MILPMODEL_H
