//===- DeviceProfile.cpp - parse, look up and use GPU profiles ------------===//

#include "vram/Analysis/DeviceProfile.h"
#include "vram/Analysis/CostModel.h"
#include "vram/Support/ByteSize.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>

using namespace mlir;

namespace vram {

//===----------------------------------------------------------------------===//
// Precisions
//===----------------------------------------------------------------------===//

llvm::StringRef getPrecisionName(Precision precision) {
  switch (precision) {
  case Precision::FP64:
    return "fp64";
  case Precision::FP32:
    return "fp32";
  case Precision::TF32:
    return "tf32";
  case Precision::FP16:
    return "fp16";
  case Precision::BF16:
    return "bf16";
  case Precision::FP8:
    return "fp8";
  case Precision::INT8:
    return "int8";
  }
  llvm_unreachable("unknown precision");
}

std::optional<Precision> parsePrecisionName(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Precision>>(name)
      .Case("fp64", Precision::FP64)
      .Case("fp32", Precision::FP32)
      .Case("tf32", Precision::TF32)
      .Case("fp16", Precision::FP16)
      .Case("bf16", Precision::BF16)
      .Case("fp8", Precision::FP8)
      .Case("int8", Precision::INT8)
      .Default(std::nullopt);
}

Precision getPrecision(Type elementType, bool allowTF32) {
  if (elementType.isF64())
    return Precision::FP64;
  if (elementType.isF32())
    return allowTF32 ? Precision::TF32 : Precision::FP32;
  if (elementType.isF16())
    return Precision::FP16;
  if (elementType.isBF16())
    return Precision::BF16;
  if (isa<FloatTF32Type>(elementType))
    return Precision::TF32;
  if (auto floatType = dyn_cast<FloatType>(elementType))
    if (floatType.getWidth() <= 8)
      return Precision::FP8;
  if (auto intType = dyn_cast<IntegerType>(elementType))
    if (intType.getWidth() <= 8)
      return Precision::INT8;
  return Precision::FP32;
}

double PeakFlops::get(Precision precision) const {
  switch (precision) {
  case Precision::FP64:
    return fp64;
  case Precision::FP32:
    return fp32;
  case Precision::TF32:
    return tf32;
  case Precision::FP16:
    return fp16;
  case Precision::BF16:
    return bf16;
  case Precision::FP8:
    return fp8;
  case Precision::INT8:
    return int8;
  }
  llvm_unreachable("unknown precision");
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

/// The key used for name lookup: lower case, without '-', '_' and ' '.
static std::string normalizeDeviceName(llvm::StringRef name) {
  std::string key;
  for (char c : name)
    if (c != '-' && c != '_' && c != ' ')
      key.push_back(llvm::toLower(c));
  return key;
}

/// Reports the first member of `object` not in `known`: a misspelt field
/// would otherwise silently take its default.
static bool rejectUnknownFields(const llvm::json::Object &object,
                                llvm::ArrayRef<llvm::StringRef> known,
                                llvm::json::Path path) {
  for (const auto &member : object) {
    if (!llvm::is_contained(known, llvm::StringRef(member.first))) {
      path.field(member.first).report("unknown field");
      return false;
    }
  }
  return true;
}

static bool fromJSON(const llvm::json::Value &value, PeakFlops &peak,
                     llvm::json::Path path) {
  const llvm::json::Object *object = value.getAsObject();
  if (!object) {
    path.report("expected object");
    return false;
  }
  static const llvm::StringRef known[] = {"fp64", "fp32", "tf32", "fp16",
                                          "bf16", "fp8",  "int8"};
  if (!rejectUnknownFields(*object, known, path))
    return false;
  llvm::json::ObjectMapper mapper(value, path);
  if (!mapper || !mapper.map("fp32", peak.fp32) ||
      !mapper.mapOptional("fp64", peak.fp64) ||
      !mapper.mapOptional("tf32", peak.tf32) ||
      !mapper.mapOptional("fp16", peak.fp16) ||
      !mapper.mapOptional("bf16", peak.bf16) ||
      !mapper.mapOptional("fp8", peak.fp8) ||
      !mapper.mapOptional("int8", peak.int8))
    return false;
  if (peak.fp32 <= 0) {
    path.field("fp32").report("must be positive");
    return false;
  }
  for (Precision precision :
       {Precision::FP64, Precision::TF32, Precision::FP16, Precision::BF16,
        Precision::FP8, Precision::INT8}) {
    if (peak.get(precision) < 0) {
      path.field(getPrecisionName(precision)).report("must not be negative");
      return false;
    }
  }
  return true;
}

static bool fromJSON(const llvm::json::Value &value, DeviceProfile &device,
                     llvm::json::Path path) {
  const llvm::json::Object *object = value.getAsObject();
  if (!object) {
    path.report("expected object");
    return false;
  }
  static const llvm::StringRef known[] = {"name",
                                          "aliases",
                                          "memory_bytes",
                                          "peak_flops",
                                          "memory_bandwidth_bytes_per_s",
                                          "host_link",
                                          "host_link_bandwidth_bytes_per_s",
                                          "copy_compute_overlap",
                                          "context_reserve_bytes",
                                          "source",
                                          "notes"};
  if (!rejectUnknownFields(*object, known, path))
    return false;
  llvm::json::ObjectMapper mapper(value, path);
  if (!mapper.map("name", device.name) ||
      !mapper.mapOptional("aliases", device.aliases) ||
      !mapper.map("memory_bytes", device.memoryBytes) ||
      !mapper.map("peak_flops", device.peakFlops) ||
      !mapper.map("memory_bandwidth_bytes_per_s", device.memoryBandwidth) ||
      !mapper.map("host_link", device.hostLink) ||
      !mapper.map("host_link_bandwidth_bytes_per_s",
                  device.hostLinkBandwidth) ||
      !mapper.map("copy_compute_overlap", device.copiesOverlapCompute) ||
      !mapper.map("context_reserve_bytes", device.contextReserveBytes) ||
      !mapper.map("source", device.source) ||
      !mapper.mapOptional("notes", device.notes))
    return false;
  if (normalizeDeviceName(device.name).empty()) {
    path.field("name").report("must not be empty");
    return false;
  }
  if (device.memoryBytes == 0) {
    path.field("memory_bytes").report("must be positive");
    return false;
  }
  if (device.memoryBandwidth <= 0) {
    path.field("memory_bandwidth_bytes_per_s").report("must be positive");
    return false;
  }
  if (device.hostLinkBandwidth <= 0) {
    path.field("host_link_bandwidth_bytes_per_s").report("must be positive");
    return false;
  }
  if (device.contextReserveBytes >= device.memoryBytes) {
    path.field("context_reserve_bytes")
        .report("must be smaller than memory_bytes");
    return false;
  }
  if (device.source.empty()) {
    path.field("source").report("must name where the numbers come from");
    return false;
  }
  return true;
}

llvm::Expected<std::vector<DeviceProfile>>
parseDeviceProfiles(llvm::StringRef json) {
  llvm::Expected<llvm::json::Value> root = llvm::json::parse(json);
  if (!root)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "device file is not valid JSON: %s",
                                   llvm::toString(root.takeError()).c_str());

  llvm::json::Path::Root pathRoot("device file");
  llvm::json::Path path(pathRoot);
  const llvm::json::Object *top = root->getAsObject();
  std::vector<DeviceProfile> devices;
  int64_t schemaVersion = 0;
  bool ok = false;
  if (!top) {
    path.report("expected an object with \"schema_version\" and \"devices\"");
  } else {
    static const llvm::StringRef known[] = {"schema_version", "devices"};
    llvm::json::ObjectMapper mapper(*root, path);
    ok = rejectUnknownFields(*top, known, path) &&
         mapper.map("schema_version", schemaVersion) &&
         mapper.map("devices", devices);
    if (ok && schemaVersion != 1) {
      path.field("schema_version").report("unsupported version (expected 1)");
      ok = false;
    }
  }
  if (!ok)
    return pathRoot.getError();

  // Names and aliases must pick exactly one device.
  llvm::StringMap<size_t> owner;
  for (auto [index, device] : llvm::enumerate(devices)) {
    llvm::SmallVector<llvm::StringRef> names{device.name};
    names.append(device.aliases.begin(), device.aliases.end());
    for (llvm::StringRef name : names) {
      std::string key = normalizeDeviceName(name);
      if (key.empty())
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "device file: devices[%zu] (%s) has an empty alias", index,
            device.name.c_str());
      auto [it, inserted] = owner.try_emplace(key, index);
      if (!inserted && it->second != index)
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "device file: name or alias '%s' of devices[%zu] (%s) already "
            "names devices[%zu] (%s)",
            name.str().c_str(), index, device.name.c_str(), it->second,
            devices[it->second].name.c_str());
    }
  }
  return devices;
}

//===----------------------------------------------------------------------===//
// Built-in profiles and lookup
//===----------------------------------------------------------------------===//

// data/devices.json as a string literal, generated by CMake.
static constexpr llvm::StringLiteral kBuiltinDevicesJson =
#include "DevicesJson.inc"
    ;

llvm::ArrayRef<DeviceProfile> getDeviceProfiles() {
  static const std::vector<DeviceProfile> profiles = [] {
    llvm::Expected<std::vector<DeviceProfile>> parsed =
        parseDeviceProfiles(kBuiltinDevicesJson);
    // The file is part of the build and checked by the unit tests; reaching
    // this means the binary was built from a broken data/devices.json.
    if (!parsed)
      llvm::report_fatal_error(llvm::Twine("built-in data/devices.json: ") +
                               llvm::toString(parsed.takeError()));
    return std::move(*parsed);
  }();
  return profiles;
}

const DeviceProfile *lookupDeviceProfile(llvm::ArrayRef<DeviceProfile> profiles,
                                         llvm::StringRef nameOrAlias) {
  std::string key = normalizeDeviceName(nameOrAlias);
  if (key.empty())
    return nullptr;
  for (const DeviceProfile &device : profiles) {
    if (normalizeDeviceName(device.name) == key)
      return &device;
    for (const std::string &alias : device.aliases)
      if (normalizeDeviceName(alias) == key)
        return &device;
  }
  return nullptr;
}

const DeviceProfile *lookupDeviceProfile(llvm::StringRef nameOrAlias) {
  return lookupDeviceProfile(getDeviceProfiles(), nameOrAlias);
}

llvm::Expected<const DeviceProfile &>
requireDeviceProfile(llvm::StringRef nameOrAlias) {
  if (const DeviceProfile *profile = lookupDeviceProfile(nameOrAlias))
    return *profile;
  std::string message = "unknown device '" + nameOrAlias.str() + "'; known:";
  for (const DeviceProfile &known : getDeviceProfiles())
    message += " " + known.name;
  return llvm::createStringError(message);
}

//===----------------------------------------------------------------------===//
// Estimates
//===----------------------------------------------------------------------===//

double getPeakFlops(const DeviceProfile &device, Precision precision) {
  const PeakFlops &peak = device.peakFlops;
  // Walk to the next wider path until the datasheet quotes a rate; FP32 is
  // always present (the parser requires it).
  while (peak.get(precision) <= 0) {
    switch (precision) {
    case Precision::FP8:
    case Precision::INT8:
      precision = Precision::FP16;
      break;
    case Precision::FP16:
    case Precision::BF16:
    case Precision::TF32:
      precision = Precision::FP32;
      break;
    case Precision::FP64:
      return peak.fp32 / 64;
    case Precision::FP32:
      return 0; // only for profiles built by hand without fp32
    }
  }
  return peak.get(precision);
}

double estimateSeconds(const OpCost &cost, Precision precision,
                       const DeviceProfile &device) {
  double peak = getPeakFlops(device, precision);
  double computeSeconds = cost.flops > 0 && peak > 0 ? cost.flops / peak : 0;
  double memorySeconds = cost.bytesAccessed > 0 && device.memoryBandwidth > 0
                             ? cost.bytesAccessed / device.memoryBandwidth
                             : 0;
  return std::max(computeSeconds, memorySeconds);
}

double estimateSeconds(const OpCost &cost, Type elementType,
                       const DeviceProfile &device) {
  return estimateSeconds(cost, getPrecision(elementType), device);
}

double estimateHostTransferSeconds(double bytes, const DeviceProfile &device) {
  if (bytes <= 0 || device.hostLinkBandwidth <= 0)
    return 0;
  return bytes / device.hostLinkBandwidth;
}

uint64_t usableBytes(const DeviceProfile &device) {
  return device.memoryBytes > device.contextReserveBytes
             ? device.memoryBytes - device.contextReserveBytes
             : 0;
}

llvm::Expected<uint64_t> resolveBudget(llvm::StringRef budget,
                                       const DeviceProfile &device) {
  if (budget.empty())
    return usableBytes(device);
  return parseByteSize(budget);
}

} // namespace vram
