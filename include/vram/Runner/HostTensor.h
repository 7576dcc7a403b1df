//===- HostTensor.h - tensors in host memory for vram-run -------*- C++ -*-===//
//
// The values vram-run passes to and gets back from JIT-compiled code, and
// what it reads from ONNX TensorProto files: an element type, a shape and
// densely packed row-major bytes.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_RUNNER_HOSTTENSOR_H
#define VRAM_RUNNER_HOSTTENSOR_H

#include "mlir/IR/Types.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vram {

/// Element types vram-run can exchange with compiled code. Each is stored as
/// in memory on the host (bool as one byte, f16/bf16 as their 16 bits).
enum class ElementKind {
  Bool,
  I8,
  I16,
  I32,
  I64,
  U8,
  U16,
  U32,
  U64,
  F16,
  BF16,
  F32,
  F64,
  // 8- and 4-bit floats and 4- and 2-bit integers: one element per byte in
  // memory, as the compiled code stores them (ONNX files pack the 4- and
  // 2-bit ones).
  F8E4M3FN,
  F8E4M3FNUZ,
  F8E5M2,
  F8E5M2FNUZ,
  F8E8M0FNU,
  F4E2M1FN,
  I4,
  U4,
  I2,
  U2,
};

/// The kind for an MLIR element type as the onnx dialect spells it (i1,
/// signless iN, unsigned uiN, f16, bf16, f32, f64, f8E4M3FN, ...), or
/// nullopt.
std::optional<ElementKind> getElementKind(mlir::Type type);
/// Bytes per element.
unsigned getElementByteSize(ElementKind kind);
/// Bits per element in ONNX's packed storage (4 and 2 for the sub-byte
/// kinds, else 8 x bytes).
unsigned getPackedBitWidth(ElementKind kind);
/// MLIR spelling (`f32`, `ui8`, `i1`).
llvm::StringRef getElementKindName(ElementKind kind);
bool isFloatingPoint(ElementKind kind);

struct HostTensor {
  ElementKind kind = ElementKind::F32;
  llvm::SmallVector<int64_t> shape;
  /// Row-major, densely packed, little-endian as on the host.
  std::vector<uint8_t> bytes;

  HostTensor() = default;
  /// A zero-filled tensor.
  HostTensor(ElementKind kind, llvm::ArrayRef<int64_t> shape);

  int64_t getNumElements() const;
  /// Element `index` (row-major) converted to double; exact for every kind
  /// except 64-bit integers beyond 2^53.
  double getAsDouble(int64_t index) const;
  /// Element `index` of an integer or bool tensor, exactly.
  int64_t getAsInt(int64_t index) const;
  /// Element `index` as an unsigned value (for u64).
  uint64_t getAsUnsigned(int64_t index) const;
  /// Stores `value` into element `index`, rounding to the element type.
  void setFromDouble(int64_t index, double value);
  /// `tensor<2x3xf32>`.
  std::string getTypeString() const;
};

/// Fills `tensor` with values of the documented deterministic generator
/// (docs/execution.md, "Generated data"): splitmix64 seeded with
/// `seed * 2^32 + stream`; element k is the (k+1)-th draw z, mapped to
/// `low + (high - low) * (z >> 11) * 2^-53`, rounded to the element type.
void fillUniform(HostTensor &tensor, uint64_t seed, uint64_t stream,
                 double low, double high);

/// ONNX backend-test tolerances.
struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};

/// Where `actual` and `expected` disagree (numpy.testing.assert_allclose:
/// |actual - expected| <= atol + rtol * |expected|, NaN equal to NaN;
/// integers and bools exactly). Returns nullopt when they agree, else a
/// message with the max absolute and relative errors and the first
/// mismatching index. A kind or shape difference is a mismatch too.
std::optional<std::string> compareTensors(const HostTensor &actual,
                                          const HostTensor &expected,
                                          const Tolerance &tolerance);

/// Prints the type and every element, row-major, nested in brackets like
/// numpy (floats with 9 significant digits, enough to round-trip f32).
void printTensor(const HostTensor &tensor, llvm::raw_ostream &os);

} // namespace vram

#endif // VRAM_RUNNER_HOSTTENSOR_H
