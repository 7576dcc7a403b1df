//===- OperatorVersions.h - ONNX operator versions the importer models -*- C++ -*-===//
//
// An ONNX node's meaning depends on its operator's version: the newest
// since-version of the operator not above the model's opset. The importer
// maps every version it models onto the dialect's one form per operator.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_LIB_IMPORT_OPERATORVERSIONS_H
#define VRAM_LIB_IMPORT_OPERATORVERSIONS_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace vram {

/// The oldest default-domain opset the importer models.
constexpr int64_t kOldestModelledOpset = 7;
/// The newest opset whose operator versions the table below knows (ONNX
/// 1.23). Newer models are refused: an operator may have changed.
constexpr int64_t kNewestKnownOpset = 28;

/// The version (since-version) of default-domain operator `opType` in a
/// model of `opset`, for the operators the dialect models: 0 when the
/// operator does not exist yet at `opset`; nullopt for any other operator
/// (it imports as onnx.Node).
std::optional<int64_t> getModelledOperatorVersion(llvm::StringRef opType,
                                                  int64_t opset);

/// The opset at which libonnx 1.12 (opsets <= `libonnxOpset`) can infer a
/// node of default-domain operator `opType` in a model of `opset`: `opset`
/// itself up to `libonnxOpset`; above it `libonnxOpset`, when the operator's
/// signature has not changed since then (later versions only widened its
/// types); nullopt otherwise.
std::optional<int64_t> getSignatureEquivalentOpset(llvm::StringRef opType,
                                                   int64_t opset,
                                                   int64_t libonnxOpset);

} // namespace vram

#endif // VRAM_LIB_IMPORT_OPERATORVERSIONS_H
