//===- ByteSize.cpp - parsing and printing byte counts --------------------===//

#include "vram/Support/ByteSize.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

namespace vram {

namespace {
struct Unit {
  llvm::StringLiteral name;
  long double scale;
};
// Longest names first, so "GiB" is not read as "G" + "iB".
constexpr Unit kUnits[] = {
    {"kib", 1024.0L},        {"mib", 1048576.0L},
    {"gib", 1073741824.0L},  {"tib", 1099511627776.0L},
    {"pib", 1125899906842624.0L},
    {"kb", 1e3L},            {"mb", 1e6L},
    {"gb", 1e9L},            {"tb", 1e12L},
    {"pb", 1e15L},           {"b", 1.0L},
};
} // namespace

llvm::Expected<uint64_t> parseByteSize(llvm::StringRef text) {
  auto error = [&](const llvm::Twine &why) {
    return llvm::createStringError("invalid byte size '" + text + "': " + why);
  };
  llvm::StringRef trimmed = text.trim();
  std::string lower = trimmed.lower();
  long double scale = 1.0L;
  llvm::StringRef number = trimmed;
  for (const Unit &unit : kUnits) {
    if (llvm::StringRef(lower).ends_with(unit.name)) {
      scale = unit.scale;
      number = trimmed.drop_back(unit.name.size()).rtrim();
      break;
    }
  }
  if (number.empty())
    return error("no number");
  // Digits, one optional '.', an optional exponent: nothing else.
  std::string digits = number.str();
  char *end = nullptr;
  long double value = std::strtold(digits.c_str(), &end);
  if (end != digits.c_str() + digits.size() || !std::isfinite(value))
    return error("expected a number with an optional unit (GB, GiB, MB, "
                 "MiB, ...)");
  if (value < 0)
    return error("negative");
  long double bytes = std::floor(value * scale);
  if (bytes >= 18446744073709551616.0L)
    return error("more than 2^64 bytes");
  return static_cast<uint64_t>(bytes);
}

static std::string formatScaled(uint64_t bytes, double base,
                                llvm::ArrayRef<const char *> units) {
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= base && unit + 1 < units.size()) {
    value /= base;
    ++unit;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  if (unit == 0)
    os << bytes << " B";
  else
    os << llvm::format(value >= 100 ? "%.0f %s" : value >= 10 ? "%.1f %s"
                                                               : "%.2f %s",
                       value, units[unit]);
  return text;
}

std::string formatBinaryBytes(uint64_t bytes) {
  return formatScaled(bytes, 1024.0,
                      {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"});
}

std::string formatDecimalBytes(uint64_t bytes) {
  return formatScaled(bytes, 1000.0, {"B", "kB", "MB", "GB", "TB", "PB", "EB"});
}

std::string formatExactBytes(uint64_t bytes) {
  std::string digits = std::to_string(bytes);
  std::string text;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0)
      text += ',';
    text += digits[i];
  }
  return text;
}

/// `1.23 us`: seconds in the unit that keeps 1-3 digits before the point.
std::string formatSeconds(double seconds) {
  const char *unit = "s";
  double value = seconds;
  if (seconds < 1e-6) {
    value = seconds * 1e9;
    unit = "ns";
  } else if (seconds < 1e-3) {
    value = seconds * 1e6;
    unit = "us";
  } else if (seconds < 1) {
    value = seconds * 1e3;
    unit = "ms";
  }
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.3g %s", value, unit);
  return text;
}

} // namespace vram
