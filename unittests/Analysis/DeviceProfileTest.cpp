//===- DeviceProfileTest.cpp - device data, lookup, roofline --------------===//

#include "vram/Analysis/DeviceProfile.h"
#include "vram/Analysis/CostModel.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace vram;
using ::testing::HasSubstr;

namespace {

TEST(DeviceProfileTest, BuiltinProfilesParse) {
  llvm::ArrayRef<DeviceProfile> devices = getDeviceProfiles();
  EXPECT_GE(devices.size(), 9u);
  for (const DeviceProfile &device : devices) {
    SCOPED_TRACE(device.name);
    EXPECT_GT(device.memoryBytes, device.contextReserveBytes);
    EXPECT_GT(device.peakFlops.fp32, 0);
    EXPECT_GT(device.memoryBandwidth, 0);
    EXPECT_GT(device.hostLinkBandwidth, 0);
    EXPECT_FALSE(device.source.empty());
    // Tensor paths are never slower than the FP32 cores.
    for (Precision p : {Precision::TF32, Precision::FP16, Precision::BF16,
                        Precision::FP8, Precision::INT8})
      EXPECT_GE(getPeakFlops(device, p), device.peakFlops.fp32);
  }
}

TEST(DeviceProfileTest, LookupByNameAndAlias) {
  struct Case {
    const char *query;
    const char *name;
  } cases[] = {
      {"h200", "H200-SXM-141GB"},
      {"H200-141GB", "H200-SXM-141GB"},
      {"h100", "H100-SXM-80GB"},
      {"H100-80GB", "H100-SXM-80GB"},
      {"h100_sxm", "H100-SXM-80GB"},
      {"a100-40gb", "A100-SXM-40GB"},
      {"A100 80GB", "A100-SXM-80GB"},
      {"a100", "A100-SXM-80GB"},
      {"V100-16GB", "V100-SXM2-16GB"},
      {"v100-32gb", "V100-SXM2-32GB"},
      {"RTX4090", "RTX-4090"},
      {"rtx-4090", "RTX-4090"},
      {"l4", "L4"},
      {"T4", "T4"},
      {"tesla-t4", "T4"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.query);
    const DeviceProfile *device = lookupDeviceProfile(c.query);
    ASSERT_NE(device, nullptr);
    EXPECT_EQ(device->name, c.name);
  }
  EXPECT_EQ(lookupDeviceProfile("h300"), nullptr);
  EXPECT_EQ(lookupDeviceProfile(""), nullptr);
  EXPECT_EQ(lookupDeviceProfile("--"), nullptr);
}

TEST(DeviceProfileTest, DatasheetFigures) {
  const DeviceProfile *h100 = lookupDeviceProfile("h100");
  ASSERT_NE(h100, nullptr);
  // 80 GiB = 80 * 2^30.
  EXPECT_EQ(h100->memoryBytes, 85899345920u);
  // Dense BF16: the datasheet's 1979 TFLOPS with sparsity, halved.
  EXPECT_DOUBLE_EQ(h100->peakFlops.bf16, 989.5e12);
  EXPECT_DOUBLE_EQ(h100->memoryBandwidth, 3.35e12);
  // 80 GiB - 520 MiB reserve = 85899345920 - 545259520 = 85354086400.
  EXPECT_EQ(usableBytes(*h100), 85354086400u);

  const DeviceProfile *h200 = lookupDeviceProfile("h200");
  ASSERT_NE(h200, nullptr);
  // 141 GiB = 141 * 2^30.
  EXPECT_EQ(h200->memoryBytes, 151397597184u);
  EXPECT_DOUBLE_EQ(h200->memoryBandwidth, 4.8e12);
}

TEST(DeviceProfileTest, PrecisionOfElementTypes) {
  mlir::MLIRContext context;
  mlir::Builder b(&context);
  EXPECT_EQ(getPrecision(b.getF32Type()), Precision::FP32);
  EXPECT_EQ(getPrecision(b.getF32Type(), /*allowTF32=*/true), Precision::TF32);
  EXPECT_EQ(getPrecision(b.getF16Type()), Precision::FP16);
  EXPECT_EQ(getPrecision(b.getBF16Type()), Precision::BF16);
  EXPECT_EQ(getPrecision(b.getF64Type()), Precision::FP64);
  EXPECT_EQ(getPrecision(mlir::Float8E4M3FNType::get(&context)),
            Precision::FP8);
  EXPECT_EQ(getPrecision(b.getI8Type()), Precision::INT8);
  EXPECT_EQ(getPrecision(b.getI32Type()), Precision::FP32);
}

TEST(DeviceProfileTest, MissingPrecisionsFallBackToWiderPaths) {
  const DeviceProfile *a100 = lookupDeviceProfile("a100-40gb");
  const DeviceProfile *v100 = lookupDeviceProfile("v100");
  const DeviceProfile *l4 = lookupDeviceProfile("l4");
  ASSERT_TRUE(a100 && v100 && l4);
  // A100 has no FP8: FP16 tensor cores, 312 TFLOPS.
  EXPECT_DOUBLE_EQ(getPeakFlops(*a100, Precision::FP8), 312e12);
  // V100 has no BF16: FP32 cores, 15.7 TFLOPS.
  EXPECT_DOUBLE_EQ(getPeakFlops(*v100, Precision::BF16), 15.7e12);
  // L4's datasheet quotes no FP64: 30.3 TFLOPS / 64.
  EXPECT_DOUBLE_EQ(getPeakFlops(*l4, Precision::FP64), 30.3e12 / 64);
}

TEST(DeviceProfileTest, RooflineComputeBound) {
  mlir::MLIRContext context;
  const DeviceProfile *h100 = lookupDeviceProfile("h100");
  ASSERT_NE(h100, nullptr);
  // bf16 4096^3 matmul: 2 * 4096^3 = 137438953472 flops; 3 * 4096^2 * 2 =
  // 100663296 bytes. Compute 137438953472 / 989.5e12 = 1.389e-4 s exceeds
  // memory 100663296 / 3.35e12 = 3.0e-5 s.
  OpCost cost{137438953472.0, 100663296.0, 0};
  double seconds =
      estimateSeconds(cost, mlir::BFloat16Type::get(&context), *h100);
  EXPECT_DOUBLE_EQ(seconds, 137438953472.0 / 989.5e12);
  EXPECT_NEAR(seconds, 1.389e-4, 1e-7);
}

TEST(DeviceProfileTest, RooflineMemoryBound) {
  mlir::MLIRContext context;
  const DeviceProfile *h100 = lookupDeviceProfile("h100");
  ASSERT_NE(h100, nullptr);
  // f32 Relu on 2^28 elements: 268435456 flops, 2 * 2^30 = 2147483648 bytes.
  // Memory 2147483648 / 3.35e12 = 6.41e-4 s exceeds compute
  // 268435456 / 67e12 = 4.0e-6 s.
  OpCost cost{268435456.0, 2147483648.0, 0};
  double seconds =
      estimateSeconds(cost, mlir::Float32Type::get(&context), *h100);
  EXPECT_DOUBLE_EQ(seconds, 2147483648.0 / 3.35e12);
  EXPECT_NEAR(seconds, 6.410e-4, 1e-6);
  // 1 GiB over PCIe 5.0 x16 at 64e9 B/s: 1073741824 / 64e9 = 1.678e-2 s.
  EXPECT_DOUBLE_EQ(estimateHostTransferSeconds(1073741824.0, *h100),
                   1073741824.0 / 64e9);
}

//===----------------------------------------------------------------------===//
// Parse errors
//===----------------------------------------------------------------------===//

/// A valid one-device file, with `extra` appended to the device's members and
/// `reserve` as the text of its context_reserve_bytes.
std::string deviceFile(llvm::StringRef extra = "",
                       llvm::StringRef reserve = "1073741824") {
  return (llvm::Twine(R"({"schema_version": 1, "devices": [{
    "name": "Test-GPU", "aliases": ["tgpu"],
    "memory_bytes": 17179869184,
    "peak_flops": {"fp32": 1e13, "fp16": 1e14},
    "memory_bandwidth_bytes_per_s": 1e12,
    "host_link": "PCIe 4.0 x16", "host_link_bandwidth_bytes_per_s": 32e9,
    "copy_compute_overlap": true,
    "context_reserve_bytes": )") +
          reserve + R"(,
    "source": "unit test")" +
          extra + "}]}")
      .str();
}

std::string parseError(llvm::StringRef json) {
  llvm::Expected<std::vector<DeviceProfile>> parsed = parseDeviceProfiles(json);
  if (parsed)
    return "<parsed>";
  return llvm::toString(parsed.takeError());
}

TEST(DeviceProfileParseTest, ValidFile) {
  llvm::Expected<std::vector<DeviceProfile>> parsed =
      parseDeviceProfiles(deviceFile());
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
  ASSERT_EQ(parsed->size(), 1u);
  const DeviceProfile &device = (*parsed)[0];
  EXPECT_EQ(device.name, "Test-GPU");
  EXPECT_EQ(device.memoryBytes, 17179869184u);
  EXPECT_DOUBLE_EQ(device.peakFlops.fp16, 1e14);
  EXPECT_EQ(device.peakFlops.bf16, 0); // absent: no fast path
  // 16 GiB - 1 GiB = 16106127360.
  EXPECT_EQ(usableBytes(device), 16106127360u);
  EXPECT_EQ(lookupDeviceProfile(*parsed, "TGPU"), &device);
}

TEST(DeviceProfileParseTest, InvalidJson) {
  EXPECT_THAT(parseError("{\"devices\": [}"),
              HasSubstr("device file is not valid JSON"));
  EXPECT_THAT(parseError(""), HasSubstr("not valid JSON"));
}

TEST(DeviceProfileParseTest, WrongShape) {
  EXPECT_THAT(parseError("[]"), HasSubstr("expected an object"));
  EXPECT_THAT(parseError(R"({"schema_version": 1})"),
              HasSubstr("missing value"));
  EXPECT_THAT(parseError(R"({"schema_version": 2, "devices": []})"),
              HasSubstr("unsupported version"));
  EXPECT_THAT(parseError(R"({"schema_version": 1, "devices": [], "x": 1})"),
              HasSubstr("unknown field"));
}

TEST(DeviceProfileParseTest, ErrorsNameTheField) {
  // Misspelt field.
  std::string error = parseError(deviceFile(R"(, "memory_byte": 5)"));
  EXPECT_THAT(error, HasSubstr("unknown field"));
  EXPECT_THAT(error, HasSubstr("memory_byte"));
  // Wrong type.
  error = parseError(deviceFile("", "\"lots\""));
  EXPECT_THAT(error, HasSubstr("expected uint64_t"));
  EXPECT_THAT(error, HasSubstr("devices[0].context_reserve_bytes"));
  // Reserve larger than the memory.
  error = parseError(deviceFile("", "17179869184"));
  EXPECT_THAT(error, HasSubstr("must be smaller than memory_bytes"));
  // Unknown precision.
  std::string json = deviceFile();
  json.replace(json.find("\"fp16\""), 6, "\"fp4\"");
  EXPECT_THAT(parseError(json), HasSubstr("devices[0].peak_flops.fp4"));
  // Negative rate.
  json = deviceFile();
  json.replace(json.find("1e14"), 4, "-1e14");
  EXPECT_THAT(parseError(json), HasSubstr("must not be negative"));
}

TEST(DeviceProfileParseTest, DuplicateAliases) {
  std::string one = deviceFile();
  // Two copies of the device: "Test-GPU" then names devices[0] twice.
  std::string devices = one.substr(one.find('[') + 1);
  devices = devices.substr(0, devices.rfind(']'));
  std::string json =
      R"({"schema_version": 1, "devices": [)" + devices + ", " + devices + "]}";
  std::string error = parseError(json);
  EXPECT_THAT(error, HasSubstr("'Test-GPU' of devices[1]"));
  EXPECT_THAT(error, HasSubstr("already names devices[0]"));
}

} // namespace
