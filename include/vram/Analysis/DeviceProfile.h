//===- DeviceProfile.h - GPU memory, compute and bandwidth data -*- C++ -*-===//
//
// GPU profiles are data (data/devices.json, embedded at build time): the
// memory budget a device offers and the rates a roofline estimate needs.
// Fields and sources are documented in docs/cost-model.md.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_ANALYSIS_DEVICEPROFILE_H
#define VRAM_ANALYSIS_DEVICEPROFILE_H

#include "mlir/IR/Types.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vram {

struct OpCost;

/// The arithmetic precisions a datasheet quotes a peak rate for.
enum class Precision { FP64, FP32, TF32, FP16, BF16, FP8, INT8 };

/// The JSON key of `precision` in "peak_flops": "fp64", "fp32", ...
llvm::StringRef getPrecisionName(Precision precision);
std::optional<Precision> parsePrecisionName(llvm::StringRef name);

/// The precision whose peak applies to arithmetic on `elementType`: f64 FP64,
/// f32 FP32 (TF32 when `allowTF32`, as cuBLAS/cuDNN do when TF32 math is
/// enabled), f16 FP16, bf16 BF16, 8-bit and narrower floats FP8, integers of
/// at most 8 bits INT8; anything else FP32.
Precision getPrecision(mlir::Type elementType, bool allowTF32 = false);

/// Dense peak rates in operations per second (no structured sparsity); 0 when
/// the datasheet quotes none, i.e. the device has no fast path for it.
struct PeakFlops {
  double fp64 = 0, fp32 = 0, tf32 = 0, fp16 = 0, bf16 = 0, fp8 = 0, int8 = 0;

  double get(Precision precision) const;
};

struct DeviceProfile {
  /// Canonical name, e.g. "H100-SXM-80GB".
  std::string name;
  /// Other names it is looked up by, e.g. "h100", "h100-80gb".
  std::vector<std::string> aliases;
  /// Device memory capacity in bytes (datasheet "GB" read as GiB).
  uint64_t memoryBytes = 0;
  PeakFlops peakFlops;
  /// Device memory (HBM / GDDR) bandwidth, bytes per second.
  double memoryBandwidth = 0;
  /// The host link, e.g. "PCIe 5.0 x16".
  std::string hostLink;
  /// Host link bandwidth, bytes per second in one direction.
  double hostLinkBandwidth = 0;
  /// Whether host copies run concurrently with kernels (copy engines).
  bool copiesOverlapCompute = true;
  /// Memory that is gone before the model allocates anything: CUDA context,
  /// the local-memory (stack) reservation, cuBLAS/cuDNN handles.
  uint64_t contextReserveBytes = 0;
  /// Where the numbers come from.
  std::string source;
  /// Free-form remarks (optional).
  std::string notes;
};

/// The profiles built into the binary, from data/devices.json.
llvm::ArrayRef<DeviceProfile> getDeviceProfiles();

/// The built-in profile named `nameOrAlias`, ignoring case and the
/// separators '-', '_' and ' ' ("H100-80GB", "h100_80gb" and "h100 80gb"
/// are the same); null when there is none.
const DeviceProfile *lookupDeviceProfile(llvm::StringRef nameOrAlias);

/// lookupDeviceProfile, or an error "unknown device 'X'; known: A B ..."
/// naming every built-in profile.
llvm::Expected<const DeviceProfile &>
requireDeviceProfile(llvm::StringRef nameOrAlias);

/// The same lookup in `profiles`.
const DeviceProfile *lookupDeviceProfile(llvm::ArrayRef<DeviceProfile> profiles,
                                         llvm::StringRef nameOrAlias);

/// Parses and validates a device file (format in docs/cost-model.md). Errors
/// name the JSON path of the offending value, e.g.
/// "devices[2].memory_bytes: expected uint64_t".
llvm::Expected<std::vector<DeviceProfile>>
parseDeviceProfiles(llvm::StringRef json);

/// Peak rate for `precision` on `device`. A precision the device has no peak
/// for runs on the next wider path: FP8 and INT8 as FP16, FP16/BF16/TF32 as
/// FP32, FP64 at 1/64 of FP32 (the rate of parts without FP64 units).
double getPeakFlops(const DeviceProfile &device, Precision precision);

/// Roofline time of one op: max(flops / peak, bytes / memory bandwidth).
double estimateSeconds(const OpCost &cost, Precision precision,
                       const DeviceProfile &device);
/// The same with the precision of `elementType` (f32 as FP32, not TF32).
double estimateSeconds(const OpCost &cost, mlir::Type elementType,
                       const DeviceProfile &device);

/// Time to move `bytes` over the host link in one direction.
double estimateHostTransferSeconds(double bytes, const DeviceProfile &device);

/// Memory left for the program: capacity minus the context reserve.
uint64_t usableBytes(const DeviceProfile &device);

/// The bytes a plan for `device` must fit: `budget` (parseByteSize's
/// syntax, e.g. 16GB) when given, else the device's usable memory.
llvm::Expected<uint64_t> resolveBudget(llvm::StringRef budget,
                                       const DeviceProfile &device);

} // namespace vram

#endif // VRAM_ANALYSIS_DEVICEPROFILE_H
