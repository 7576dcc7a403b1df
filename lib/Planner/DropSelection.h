//===- DropSelection.h - drops chosen ahead of the replay ------*- C++ -*-===//
//
// Private to lib/Planner: picks, before the replay runs, which tensors to
// drop between two of their uses so that the schedule fits a budget
// (DropSelection.cpp), and hands them to the replay as options.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_LIB_PLANNER_DROPSELECTION_H
#define VRAM_LIB_PLANNER_DROPSELECTION_H

#include "Replay.h"

#include <memory>

namespace vram::planner {

/// How selectDrops builds and ranks its candidates. A greedy cover is
/// sensitive to both choices, and no one setting wins on every graph, so
/// the planner tries several.
struct DropRanking {
  /// Candidates go by (excess removed)^excessExponent per second of rerun:
  /// below 1 cheap reruns first, above 1 large removals first.
  double excessExponent = 1.0;
  /// Also weigh rebuilding a dropped tensor ahead of its next use, where
  /// its producer's inputs are all still resident (rebuildBefore).
  bool earlyReruns = false;
};

namespace drop_selection {
class DropSelector;
} // namespace drop_selection

/// Recompute decisions chosen ahead for one budget, under any ranking. What
/// every ranking starts from (the schedule's live bytes, the candidate drops
/// and their scores before any is taken, most of a selection's work) is
/// computed once, so trying several rankings costs little more than one.
class DropSelection {
public:
  /// `earlyReruns`: some ranking to be selected with will weigh them.
  /// `graph` must outlive the selection.
  DropSelection(const PlanningGraph &graph, const MachineModel &device,
                uint64_t budget, bool earlyReruns);
  ~DropSelection();

  /// Replay options for the budget whose `dropAfter`, `rebuildBefore` and
  /// `keepUntil` carry the drops `ranking` takes: tensors dropped in the gaps
  /// between their uses where the schedule's live bytes exceed the budget,
  /// each rebuilt from inputs kept resident for it or rebuilt too. None when
  /// it drops nothing: nothing exceeds the budget, nothing helps, or the graph
  /// has more ops than the selection handles in well under a second
  /// (DropSelection.cpp). Safe to call from several threads at once.
  std::optional<ReplayOptions> select(DropRanking ranking) const;

private:
  std::unique_ptr<drop_selection::DropSelector> start;
};

/// A selection under one ranking.
std::optional<ReplayOptions> selectDrops(const PlanningGraph &graph,
                                         const MachineModel &device,
                                         uint64_t budget,
                                         DropRanking ranking = {});

} // namespace vram::planner

#endif // VRAM_LIB_PLANNER_DROPSELECTION_H
