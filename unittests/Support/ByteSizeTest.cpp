//===- ByteSizeTest.cpp - budgets as users write them ---------------------===//

#include "vram/Support/ByteSize.h"

#include "gtest/gtest.h"

using namespace vram;

namespace {

uint64_t parse(llvm::StringRef text) {
  llvm::Expected<uint64_t> bytes = parseByteSize(text);
  EXPECT_TRUE(static_cast<bool>(bytes)) << text.str();
  if (!bytes) {
    llvm::consumeError(bytes.takeError());
    return 0;
  }
  return *bytes;
}

std::string parseError(llvm::StringRef text) {
  llvm::Expected<uint64_t> bytes = parseByteSize(text);
  EXPECT_FALSE(static_cast<bool>(bytes)) << text.str();
  return bytes ? "" : llvm::toString(bytes.takeError());
}

TEST(ByteSize, SIUnitsArePowersOfTen) {
  EXPECT_EQ(parse("16GB"), 16'000'000'000u);
  EXPECT_EQ(parse("1.5TB"), 1'500'000'000'000u);
  EXPECT_EQ(parse("512MB"), 512'000'000u);
  EXPECT_EQ(parse("4kB"), 4'000u);
}

TEST(ByteSize, BinaryUnitsArePowersOfTwo) {
  EXPECT_EQ(parse("16GiB"), 16ull << 30);
  EXPECT_EQ(parse("512MiB"), 512ull << 20);
  EXPECT_EQ(parse("1.5KiB"), 1536u);
  EXPECT_EQ(parse("2TiB"), 2ull << 40);
}

TEST(ByteSize, PlainNumbersAndExponents) {
  EXPECT_EQ(parse("16e9"), 16'000'000'000u);
  EXPECT_EQ(parse("4096"), 4096u);
  EXPECT_EQ(parse("100B"), 100u);
  EXPECT_EQ(parse(" 8 GiB "), 8ull << 30);
  EXPECT_EQ(parse("16gb"), 16'000'000'000u);
  // Fractions of a byte round down.
  EXPECT_EQ(parse("1.9"), 1u);
}

TEST(ByteSize, ErrorsSayWhatIsWrong) {
  EXPECT_NE(parseError("").find("no number"), std::string::npos);
  EXPECT_NE(parseError("GB").find("no number"), std::string::npos);
  EXPECT_NE(parseError("12 parsecs").find("expected a number"),
            std::string::npos);
  EXPECT_NE(parseError("-1GB").find("negative"), std::string::npos);
  EXPECT_NE(parseError("1e30").find("2^64"), std::string::npos);
  EXPECT_NE(parseError("1..5GB").find("expected a number"), std::string::npos);
}

TEST(ByteSize, Formatting) {
  EXPECT_EQ(formatBinaryBytes(0), "0 B");
  EXPECT_EQ(formatBinaryBytes(1023), "1023 B");
  EXPECT_EQ(formatBinaryBytes(1024), "1.00 KiB");
  EXPECT_EQ(formatBinaryBytes(16ull << 30), "16.0 GiB");
  EXPECT_EQ(formatBinaryBytes(757540512), "722 MiB");
  EXPECT_EQ(formatDecimalBytes(16'000'000'000u), "16.0 GB");
  EXPECT_EQ(formatExactBytes(1234567), "1,234,567");
  EXPECT_EQ(formatExactBytes(999), "999");
}

} // namespace
