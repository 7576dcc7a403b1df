//===- OperatorVersions.cpp - ONNX operator versions the importer models --===//

#include "OperatorVersions.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"

namespace vram {
namespace {
struct OperatorHistory {
  llvm::StringRef name;
  std::initializer_list<int64_t> sinceVersions;
};
} // namespace

/// Every since-version of each operator the dialect models, from ONNX 1.23's
/// schema registry (`onnx.defs.get_all_schemas_with_history()`, opsets 1-28).
/// Versions from opset 19 on that only widen type constraints (float8,
/// int4, ...) keep the operator's meaning; the importer maps the versions
/// that changed a signature (NodeNormalization.cpp, normalizeToCanonical).
static const OperatorHistory kHistories[] = {
    {"Abs", {1, 6, 13}},
    {"Add", {1, 6, 7, 13, 14}},
    {"AveragePool", {1, 7, 10, 11, 19, 22}},
    {"BatchNormalization", {1, 6, 7, 9, 14, 15}},
    {"Cast", {1, 6, 9, 13, 19, 21, 23, 24, 25, 28}},
    {"Clip", {1, 6, 11, 12, 13}},
    {"Concat", {1, 4, 11, 13}},
    {"Constant", {1, 9, 11, 12, 13, 19, 21, 23, 24, 25}},
    {"Conv", {1, 11, 22}},
    {"Cos", {7, 22}},
    {"ConvTranspose", {1, 11, 22}},
    {"Div", {1, 6, 7, 13, 14}},
    {"Dropout", {1, 6, 7, 10, 12, 13, 22}},
    {"Einsum", {12}},
    {"Equal", {1, 7, 11, 13, 19}},
    {"Erf", {9, 13}},
    {"Exp", {1, 6, 13}},
    {"Expand", {8, 13}},
    {"Flatten", {1, 9, 11, 13, 21, 23, 24, 25}},
    {"Gather", {1, 11, 13}},
    {"Gelu", {20}},
    {"Gemm", {1, 6, 7, 9, 11, 13}},
    {"GlobalAveragePool", {1, 22}},
    {"Greater", {1, 7, 9, 13}},
    {"HardSigmoid", {1, 6, 22}},
    {"HardSwish", {14, 22}},
    {"Identity", {1, 13, 14, 16, 19, 21, 23, 24, 25}},
    {"LayerNormalization", {17}},
    {"LeakyRelu", {1, 6, 16}},
    {"Less", {1, 7, 9, 13}},
    {"Log", {1, 6, 13}},
    {"LogSoftmax", {1, 11, 13}},
    {"MatMul", {1, 9, 13}},
    {"MaxPool", {1, 8, 10, 11, 12, 22}},
    {"Mul", {1, 6, 7, 13, 14}},
    {"Neg", {1, 6, 13}},
    {"Not", {1}},
    {"Pad", {1, 2, 11, 13, 18, 19, 21, 23, 24, 25}},
    {"Pow", {1, 7, 12, 13, 15}},
    {"RandomUniformLike", {1, 22}},
    {"Reciprocal", {1, 6, 13}},
    {"ReduceMean", {1, 11, 13, 18}},
    {"ReduceSum", {1, 11, 13}},
    {"Relu", {1, 6, 13, 14}},
    {"Reshape", {1, 5, 13, 14, 19, 21, 23, 24, 25}},
    {"Resize", {10, 11, 13, 18, 19}},
    {"ScatterElements", {11, 13, 16, 18}},
    {"ScatterND", {11, 13, 16, 18}},
    {"Shape", {1, 13, 15, 19, 21, 23, 24, 25}},
    {"Sigmoid", {1, 6, 13}},
    {"Sin", {7, 22}},
    {"Slice", {1, 10, 11, 13}},
    {"Softmax", {1, 11, 13}},
    {"Split", {1, 2, 11, 13, 18}},
    {"Sqrt", {1, 6, 13}},
    {"Squeeze", {1, 11, 13, 21, 23, 24, 25}},
    {"Sub", {1, 6, 7, 13, 14}},
    {"Swish", {24}},
    {"Tanh", {1, 6, 13}},
    {"Transpose", {1, 13, 21, 23, 24, 25}},
    {"Trilu", {14}},
    {"Unsqueeze", {1, 11, 13, 21, 23, 24, 25}},
    {"Where", {9, 16}},
};

/// The since-versions of every default-domain operator that changed its
/// signature (a version that only widened type constraints is left out).
static const OperatorHistory kSignatureHistories[] = {
#include "SignatureVersions.inc"
};

/// The version of `opType` at `opset` in `histories` (0 before the first),
/// nullopt when the operator is not there.
static std::optional<int64_t>
findVersion(llvm::ArrayRef<OperatorHistory> histories, llvm::StringRef opType,
            int64_t opset) {
  for (const OperatorHistory &history : histories) {
    if (history.name != opType)
      continue;
    int64_t version = 0;
    for (int64_t since : history.sinceVersions)
      if (since <= opset)
        version = since;
    return version;
  }
  return std::nullopt;
}

std::optional<int64_t> getModelledOperatorVersion(llvm::StringRef opType,
                                                  int64_t opset) {
  return findVersion(kHistories, opType, opset);
}

std::optional<int64_t> getSignatureEquivalentOpset(llvm::StringRef opType,
                                                   int64_t opset,
                                                   int64_t libonnxOpset) {
  if (opset <= libonnxOpset)
    return opset;
  std::optional<int64_t> atOpset =
      findVersion(kSignatureHistories, opType, opset);
  std::optional<int64_t> atLibonnx =
      findVersion(kSignatureHistories, opType, libonnxOpset);
  if (!atOpset || *atOpset == 0 || atOpset != atLibonnx)
    return std::nullopt;
  return libonnxOpset;
}

} // namespace vram
