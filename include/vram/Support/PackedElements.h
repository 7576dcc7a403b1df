//===- PackedElements.h - ONNX's 4- and 2-bit element packing ---*- C++ -*-===//
//
// ONNX stores INT4, UINT4 and FLOAT4E2M1 elements two to a byte and INT2 and
// UINT2 four to a byte, the first element in the lowest bits. MLIR's dense
// attributes and the compiled code keep one element per byte; the importer
// and the runner unpack with these.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_SUPPORT_PACKEDELEMENTS_H
#define VRAM_SUPPORT_PACKEDELEMENTS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MathExtras.h"

#include <cstdint>
#include <string>

namespace vram {

/// Bytes that `count` packed elements of `bits` bits take.
inline uint64_t getPackedByteCount(uint64_t count, unsigned bits) {
  return llvm::divideCeil(count * bits, 8);
}

/// The packed bytes of an onnx::TensorProto (a template, so this header
/// needs no ONNX): its raw_data, or one byte per int32_data entry.
template <typename TensorProto>
std::string getPackedBytes(const TensorProto &tensor) {
  std::string packed = tensor.raw_data();
  if (!tensor.has_raw_data())
    for (int32_t byte : tensor.int32_data())
      packed.push_back(static_cast<char>(byte));
  return packed;
}

/// Writes element i of `packed` (elements of `bits` bits, 1, 2 or 4) to
/// `out[i]`, in its low bits, for i < count. `packed` must hold
/// getPackedByteCount(count, bits) bytes.
template <typename Byte>
void unpackElements(llvm::StringRef packed, unsigned bits, uint64_t count,
                    Byte *out) {
  unsigned perByte = 8 / bits;
  for (uint64_t i = 0; i < count; ++i)
    out[i] = static_cast<Byte>(
        (static_cast<uint8_t>(packed[i / perByte]) >> (bits * (i % perByte))) &
        ((1u << bits) - 1));
}

} // namespace vram

#endif // VRAM_SUPPORT_PACKEDELEMENTS_H
