//===- ByteSize.h - parsing and printing byte counts ------------*- C++ -*-===//
//
// Budgets are written as users write them: `16GB` (SI, 16e9), `16GiB`
// (binary, 16 * 2^30), `1.5TB`, `512MiB`, `16e9`, `4096`. Reports print
// binary units for reading and the exact count for checking, and
// durations (plan overheads) in the unit that suits them.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_SUPPORT_BYTESIZE_H
#define VRAM_SUPPORT_BYTESIZE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace vram {

/// Parses a byte count with an optional unit: B, kB/KB, MB, GB, TB, PB (SI,
/// powers of 1000) or KiB, MiB, GiB, TiB, PiB (powers of 1024); case of the
/// `b` is ignored, a space before the unit is allowed. Fractions round down
/// to whole bytes. Errors name what is wrong.
llvm::Expected<uint64_t> parseByteSize(llvm::StringRef text);

/// `1.50 GiB`: three significant digits in the largest binary unit <= bytes.
std::string formatBinaryBytes(uint64_t bytes);

/// `1.61 GB`: the same in SI units.
std::string formatDecimalBytes(uint64_t bytes);

/// `1,610,612,736`: the exact count with thousands separators.
std::string formatExactBytes(uint64_t bytes);

/// `1.23 us`: seconds in the unit that keeps 1-3 digits before the point.
std::string formatSeconds(double seconds);

} // namespace vram

#endif // VRAM_SUPPORT_BYTESIZE_H
