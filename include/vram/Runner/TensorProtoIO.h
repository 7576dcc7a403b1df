//===- TensorProtoIO.h - ONNX tensor data for vram-run ----------*- C++ -*-===//
//
// Reads tensor values stored the ONNX way: TensorProto files (the backend
// tests' input_N.pb / output_N.pb) and a model's initializers, inline or in
// external data files. ONNX and protobuf stay behind this interface (they
// need exceptions; every exception becomes an llvm::Error here).
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_RUNNER_TENSORPROTOIO_H
#define VRAM_RUNNER_TENSORPROTOIO_H

#include "vram/Runner/HostTensor.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace vram {

/// Parses a serialized onnx.TensorProto file. Unsupported element types
/// (string, complex, float8, 4-bit), truncated files and data whose size
/// does not match the dims are errors naming the file.
llvm::Expected<HostTensor> readTensorProtoFile(llvm::StringRef path);

/// The initializers of a model, by name, and its data inputs.
struct ModelInitializers {
  llvm::StringMap<HostTensor> tensors;
  /// The graph inputs that are not initializers, in order: the inputs
  /// backend test data numbers (input_N.pb).
  std::vector<std::string> inputNames;
  /// Initializers whose data the model does not hold (their external data
  /// file is missing), with the reason: callers may generate values.
  llvm::StringMap<std::string> missing;
};

/// Reads every initializer and the input names of the model in `path`
/// (`.onnx` or `.onnxtext`).
/// External data is read relative to the model's directory.
llvm::Expected<ModelInitializers> readModelInitializers(llvm::StringRef path);

} // namespace vram

#endif // VRAM_RUNNER_TENSORPROTOIO_H
