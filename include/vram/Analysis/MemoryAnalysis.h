//===- MemoryAnalysis.h - live bytes over a function's schedule -*- C++ -*-===//
//
// The schedule is the order of ops in the function's body. Values that share
// storage (views, non-copying reshapes, destination-passing results and
// their inits) form one buffer; a buffer is live from the op that allocates
// it to the last use of any of its aliases. Program point i is "while op i
// runs": its operands and its results are live. Arguments are owned by the
// caller and live at every point; returned buffers live to the end.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_ANALYSIS_MEMORYANALYSIS_H
#define VRAM_ANALYSIS_MEMORYANALYSIS_H

#include "vram/Analysis/MemoryCategory.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

namespace vram {

/// Storage shared by a value and all its aliases, or the scratch memory
/// (workspace) one op needs while it runs.
struct Buffer {
  /// The value that allocates the storage: a block argument or the result of
  /// an op that does not alias an operand. Null for a workspace.
  mlir::Value root;
  /// The op a workspace belongs to (its cost model declares the bytes).
  mlir::Operation *workspaceOf = nullptr;
  uint64_t bytes = 0;
  MemoryCategory category = MemoryCategory::Activation;
  /// Live at program points [begin, end], both inclusive.
  unsigned begin = 0, end = 0;
};

/// A value whose size the analysis cannot know.
struct UnsizedValue {
  mlir::Value value;
  std::string reason;
};

class MemoryAnalysis {
public:
  /// Analyses the body of `op`, a function with a single-block body. The
  /// analysis is always constructed; check `isValid()` before reading it.
  explicit MemoryAnalysis(mlir::Operation *op);

  /// False when the function has no single-block body or some value has no
  /// static size (see getUnsizedValues()).
  bool isValid() const { return valid; }
  llvm::ArrayRef<UnsizedValue> getUnsizedValues() const { return unsized; }

  /// The ops of the body in execution order, without the terminator: program
  /// point i is schedule[i].
  llvm::ArrayRef<mlir::Operation *> getSchedule() const { return schedule; }
  llvm::ArrayRef<Buffer> getBuffers() const { return buffers; }
  /// The buffer `value` lives in; `value` must belong to the analysed
  /// function.
  const Buffer &getBuffer(mlir::Value value) const {
    auto it = bufferOf.find(value);
    assert(it != bufferOf.end() && "value outside the analysed function");
    return buffers[it->second];
  }

  /// Live bytes by category at every program point (none without ops: the
  /// peak is then what the arguments and constants hold).
  llvm::ArrayRef<CategoryBytes> getTimeline() const { return timeline; }
  uint64_t getLiveBytes(unsigned point) const;
  uint64_t getPeakBytes() const { return peakBytes; }
  unsigned getPeakPoint() const { return peakPoint; }
  mlir::Operation *getPeakOp() const {
    return schedule.empty() ? nullptr : schedule[peakPoint];
  }
  /// Bytes of all buffers of each category, live or not at the peak.
  const CategoryBytes &getTotals() const { return totals; }
  /// Indices of the buffers live at `point`.
  llvm::SmallVector<unsigned> getLiveBuffers(unsigned point) const;

private:
  void computeBuffers(mlir::Block &body);
  void addWorkspaces();
  void computeTimeline();

  bool valid = false;
  std::vector<mlir::Operation *> schedule;
  std::vector<Buffer> buffers;
  llvm::DenseMap<mlir::Value, unsigned> bufferOf;
  std::vector<CategoryBytes> timeline;
  std::vector<UnsizedValue> unsized;
  CategoryBytes totals{};
  uint64_t peakBytes = 0;
  unsigned peakPoint = 0;
};

/// Reports why `analysis` of `func` is not valid: an error at each of the
/// first few values it could not size (at most three, so a huge model does
/// not flood the terminal), or at `func` when its body is not one block.
void emitAnalysisErrors(const MemoryAnalysis &analysis, mlir::Operation *func);

/// The operand whose storage `result` shares, or null when `result` is a
/// fresh allocation. Views (ViewLikeOpInterface), ops whose bufferization
/// makes the result an equivalent alias of an operand
/// (BufferizableOpInterface: reshapes, casts, slices, destination-passing
/// ops), and other destination-passing ops alias.
mlir::Value getAliasedOperand(mlir::OpResult result);

/// Whether `result` is a view of the storage it shares with `source` (the
/// same bytes under another shape, or a part of them: ViewLikeOpInterface,
/// a rank's `shard.all_slice`) rather than a new value written in place.
bool isViewOf(mlir::OpResult result, mlir::Value source);

/// Gives the backward ops that allocate the storage of `value` (through
/// views and in-place updates, such as the scatter of a Gather's gradient
/// into zeros) the category `gradient`.
void markGradientStorage(mlir::Value value);

/// Calls `fn` on every op that uses the storage of `value`: its users and,
/// through their results aliasing it (getAliasedOperand), theirs, unless
/// `fn` returns false for the user. An op writing that storage in place
/// must come after all of them.
void forEachStorageUser(mlir::Value value,
                        llvm::function_ref<bool(mlir::Operation *)> fn);

/// A short name for reports: the ONNX name of an argument, or the node name
/// (location) of the producing op with the result number when it has several.
std::string getValueName(mlir::Value value);

/// The name of what a buffer holds: its root value's name, or
/// "workspace of <op name>".
std::string getBufferName(const Buffer &buffer);

/// The type of what a buffer holds, as text ("workspace" for a workspace).
std::string getBufferTypeString(const Buffer &buffer);

/// The node name an op was imported from (its NameLoc), or its op name.
std::string getOpName(mlir::Operation *op);

} // namespace vram

#endif // VRAM_ANALYSIS_MEMORYANALYSIS_H
