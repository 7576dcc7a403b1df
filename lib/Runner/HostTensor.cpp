//===- HostTensor.cpp - host tensors: types, generation, comparison -------===//

#include "vram/Runner/HostTensor.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace vram;

/// The semantics of the 8- and 4-bit float kinds, else null.
static const llvm::fltSemantics *getNarrowFloatSemantics(ElementKind kind) {
  switch (kind) {
  case ElementKind::F8E4M3FN:
    return &llvm::APFloat::Float8E4M3FN();
  case ElementKind::F8E4M3FNUZ:
    return &llvm::APFloat::Float8E4M3FNUZ();
  case ElementKind::F8E5M2:
    return &llvm::APFloat::Float8E5M2();
  case ElementKind::F8E5M2FNUZ:
    return &llvm::APFloat::Float8E5M2FNUZ();
  case ElementKind::F8E8M0FNU:
    return &llvm::APFloat::Float8E8M0FNU();
  case ElementKind::F4E2M1FN:
    return &llvm::APFloat::Float4E2M1FN();
  default:
    return nullptr;
  }
}

std::optional<ElementKind> vram::getElementKind(Type type) {
  if (isa<Float8E4M3FNType>(type))
    return ElementKind::F8E4M3FN;
  if (isa<Float8E4M3FNUZType>(type))
    return ElementKind::F8E4M3FNUZ;
  if (isa<Float8E5M2Type>(type))
    return ElementKind::F8E5M2;
  if (isa<Float8E5M2FNUZType>(type))
    return ElementKind::F8E5M2FNUZ;
  if (isa<Float8E8M0FNUType>(type))
    return ElementKind::F8E8M0FNU;
  if (isa<Float4E2M1FNType>(type))
    return ElementKind::F4E2M1FN;
  if (type.isF16())
    return ElementKind::F16;
  if (type.isBF16())
    return ElementKind::BF16;
  if (type.isF32())
    return ElementKind::F32;
  if (type.isF64())
    return ElementKind::F64;
  auto integer = dyn_cast<IntegerType>(type);
  if (!integer || integer.isSigned())
    return std::nullopt;
  bool isUnsigned = integer.isUnsigned();
  switch (integer.getWidth()) {
  case 1:
    return isUnsigned ? std::nullopt : std::optional(ElementKind::Bool);
  case 2:
    return isUnsigned ? ElementKind::U2 : ElementKind::I2;
  case 4:
    return isUnsigned ? ElementKind::U4 : ElementKind::I4;
  case 8:
    return isUnsigned ? ElementKind::U8 : ElementKind::I8;
  case 16:
    return isUnsigned ? ElementKind::U16 : ElementKind::I16;
  case 32:
    return isUnsigned ? ElementKind::U32 : ElementKind::I32;
  case 64:
    return isUnsigned ? ElementKind::U64 : ElementKind::I64;
  default:
    return std::nullopt;
  }
}

unsigned vram::getElementByteSize(ElementKind kind) {
  switch (kind) {
  case ElementKind::Bool:
  case ElementKind::I8:
  case ElementKind::U8:
  case ElementKind::F8E4M3FN:
  case ElementKind::F8E4M3FNUZ:
  case ElementKind::F8E5M2:
  case ElementKind::F8E5M2FNUZ:
  case ElementKind::F8E8M0FNU:
  case ElementKind::F4E2M1FN:
  case ElementKind::I4:
  case ElementKind::U4:
  case ElementKind::I2:
  case ElementKind::U2:
    return 1;
  case ElementKind::I16:
  case ElementKind::U16:
  case ElementKind::F16:
  case ElementKind::BF16:
    return 2;
  case ElementKind::I32:
  case ElementKind::U32:
  case ElementKind::F32:
    return 4;
  case ElementKind::I64:
  case ElementKind::U64:
  case ElementKind::F64:
    return 8;
  }
  llvm_unreachable("unknown element kind");
}

unsigned vram::getPackedBitWidth(ElementKind kind) {
  switch (kind) {
  case ElementKind::F4E2M1FN:
  case ElementKind::I4:
  case ElementKind::U4:
    return 4;
  case ElementKind::I2:
  case ElementKind::U2:
    return 2;
  default:
    return 8 * getElementByteSize(kind);
  }
}

llvm::StringRef vram::getElementKindName(ElementKind kind) {
  switch (kind) {
  case ElementKind::Bool:
    return "i1";
  case ElementKind::I8:
    return "i8";
  case ElementKind::I16:
    return "i16";
  case ElementKind::I32:
    return "i32";
  case ElementKind::I64:
    return "i64";
  case ElementKind::U8:
    return "ui8";
  case ElementKind::U16:
    return "ui16";
  case ElementKind::U32:
    return "ui32";
  case ElementKind::U64:
    return "ui64";
  case ElementKind::F16:
    return "f16";
  case ElementKind::BF16:
    return "bf16";
  case ElementKind::F32:
    return "f32";
  case ElementKind::F64:
    return "f64";
  case ElementKind::F8E4M3FN:
    return "f8E4M3FN";
  case ElementKind::F8E4M3FNUZ:
    return "f8E4M3FNUZ";
  case ElementKind::F8E5M2:
    return "f8E5M2";
  case ElementKind::F8E5M2FNUZ:
    return "f8E5M2FNUZ";
  case ElementKind::F8E8M0FNU:
    return "f8E8M0FNU";
  case ElementKind::F4E2M1FN:
    return "f4E2M1FN";
  case ElementKind::I4:
    return "i4";
  case ElementKind::U4:
    return "ui4";
  case ElementKind::I2:
    return "i2";
  case ElementKind::U2:
    return "ui2";
  }
  llvm_unreachable("unknown element kind");
}

bool vram::isFloatingPoint(ElementKind kind) {
  return kind == ElementKind::F16 || kind == ElementKind::BF16 ||
         kind == ElementKind::F32 || kind == ElementKind::F64 ||
         getNarrowFloatSemantics(kind);
}

HostTensor::HostTensor(ElementKind kind, llvm::ArrayRef<int64_t> shape)
    : kind(kind), shape(shape) {
  bytes.assign(getNumElements() * getElementByteSize(kind), 0);
}

int64_t HostTensor::getNumElements() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

template <typename T> static T load(const uint8_t *data, int64_t index) {
  T value;
  std::memcpy(&value, data + index * sizeof(T), sizeof(T));
  return value;
}

template <typename T>
static void store(uint8_t *data, int64_t index, T value) {
  std::memcpy(data + index * sizeof(T), &value, sizeof(T));
}

static const llvm::fltSemantics &getHalfSemantics(ElementKind kind) {
  return kind == ElementKind::F16 ? llvm::APFloat::IEEEhalf()
                                  : llvm::APFloat::BFloat();
}

int64_t HostTensor::getAsInt(int64_t index) const {
  const uint8_t *data = bytes.data();
  switch (kind) {
  case ElementKind::Bool:
    return load<uint8_t>(data, index) != 0;
  case ElementKind::I8:
    return load<int8_t>(data, index);
  case ElementKind::I16:
    return load<int16_t>(data, index);
  case ElementKind::I32:
    return load<int32_t>(data, index);
  case ElementKind::I64:
    return load<int64_t>(data, index);
  case ElementKind::U8:
    return load<uint8_t>(data, index);
  case ElementKind::U16:
    return load<uint16_t>(data, index);
  case ElementKind::U32:
    return load<uint32_t>(data, index);
  case ElementKind::U64:
    return static_cast<int64_t>(load<uint64_t>(data, index));
  case ElementKind::I4:
  case ElementKind::I2: {
    // The low bits hold the value (the compiled code's stores leave the
    // others unspecified): sign-extend them.
    unsigned width = getPackedBitWidth(kind);
    return llvm::SignExtend64(load<uint8_t>(data, index), width);
  }
  case ElementKind::U4:
  case ElementKind::U2:
    return load<uint8_t>(data, index) & ((1u << getPackedBitWidth(kind)) - 1);
  default:
    return static_cast<int64_t>(getAsDouble(index));
  }
}

uint64_t HostTensor::getAsUnsigned(int64_t index) const {
  if (kind == ElementKind::U64)
    return load<uint64_t>(bytes.data(), index);
  return static_cast<uint64_t>(getAsInt(index));
}

double HostTensor::getAsDouble(int64_t index) const {
  const uint8_t *data = bytes.data();
  switch (kind) {
  case ElementKind::F16:
  case ElementKind::BF16: {
    llvm::APFloat value(getHalfSemantics(kind),
                        llvm::APInt(16, load<uint16_t>(data, index)));
    bool losesInfo;
    value.convert(llvm::APFloat::IEEEdouble(),
                  llvm::APFloat::rmNearestTiesToEven, &losesInfo);
    return value.convertToDouble();
  }
  case ElementKind::F32:
    return load<float>(data, index);
  case ElementKind::F64:
    return load<double>(data, index);
  case ElementKind::U64:
    return static_cast<double>(load<uint64_t>(data, index));
  default:
    if (const llvm::fltSemantics *semantics = getNarrowFloatSemantics(kind)) {
      unsigned width = getPackedBitWidth(kind);
      uint64_t code = load<uint8_t>(data, index) & ((1u << width) - 1);
      return llvm::APFloat(*semantics, llvm::APInt(width, code))
          .convertToDouble();
    }
    return static_cast<double>(getAsInt(index));
  }
}

void HostTensor::setFromDouble(int64_t index, double value) {
  uint8_t *data = bytes.data();
  switch (kind) {
  case ElementKind::F16:
  case ElementKind::BF16: {
    llvm::APFloat half(value);
    bool losesInfo;
    half.convert(getHalfSemantics(kind), llvm::APFloat::rmNearestTiesToEven,
                 &losesInfo);
    store<uint16_t>(data, index,
                    half.bitcastToAPInt().getZExtValue() & 0xffff);
    return;
  }
  case ElementKind::F32:
    return store<float>(data, index, static_cast<float>(value));
  case ElementKind::F64:
    return store<double>(data, index, value);
  case ElementKind::Bool:
    return store<uint8_t>(data, index, value != 0);
  case ElementKind::I8:
    return store<int8_t>(data, index, static_cast<int8_t>(value));
  case ElementKind::I16:
    return store<int16_t>(data, index, static_cast<int16_t>(value));
  case ElementKind::I32:
    return store<int32_t>(data, index, static_cast<int32_t>(value));
  case ElementKind::I64:
    return store<int64_t>(data, index, static_cast<int64_t>(value));
  case ElementKind::U8:
    return store<uint8_t>(data, index, static_cast<uint8_t>(value));
  case ElementKind::U16:
    return store<uint16_t>(data, index, static_cast<uint16_t>(value));
  case ElementKind::U32:
    return store<uint32_t>(data, index, static_cast<uint32_t>(value));
  case ElementKind::U64:
    return store<uint64_t>(data, index, static_cast<uint64_t>(value));
  case ElementKind::I4:
  case ElementKind::U4:
  case ElementKind::I2:
  case ElementKind::U2:
    return store<uint8_t>(data, index,
                          static_cast<uint8_t>(static_cast<int64_t>(value)) &
                              ((1u << getPackedBitWidth(kind)) - 1));
  case ElementKind::F8E4M3FN:
  case ElementKind::F8E4M3FNUZ:
  case ElementKind::F8E5M2:
  case ElementKind::F8E5M2FNUZ:
  case ElementKind::F8E8M0FNU:
  case ElementKind::F4E2M1FN: {
    llvm::APFloat narrow(value);
    bool losesInfo;
    narrow.convert(*getNarrowFloatSemantics(kind),
                   llvm::APFloat::rmNearestTiesToEven, &losesInfo);
    return store<uint8_t>(data, index, narrow.bitcastToAPInt().getZExtValue());
  }
  }
}

std::string HostTensor::getTypeString() const {
  std::string text = "tensor<";
  for (int64_t dim : shape)
    text += std::to_string(dim) + "x";
  return text + getElementKindName(kind).str() + ">";
}

/// One step of splitmix64 (Steele, Lea, Flood 2014): advances `state` by the
/// golden-ratio increment and returns the mixed value.
static uint64_t splitmix64(uint64_t &state) {
  state += 0x9E3779B97F4A7C15ull;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void vram::fillUniform(HostTensor &tensor, uint64_t seed, uint64_t stream,
                       double low, double high) {
  uint64_t state = (seed << 32) + stream;
  for (int64_t i = 0, e = tensor.getNumElements(); i < e; ++i) {
    // 53 random bits: exactly representable, uniform in [0, 1).
    double unit = static_cast<double>(splitmix64(state) >> 11) * 0x1p-53;
    tensor.setFromDouble(i, low + (high - low) * unit);
  }
}

/// Row-major multi-index of `index` in `shape`, as `[i, j, k]`.
static std::string formatIndex(llvm::ArrayRef<int64_t> shape, int64_t index) {
  llvm::SmallVector<int64_t> position(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    position[d] = shape[d] ? index % shape[d] : 0;
    index = shape[d] ? index / shape[d] : 0;
  }
  std::string text = "[";
  for (auto [i, p] : llvm::enumerate(position))
    text += (i ? ", " : "") + std::to_string(p);
  return text + "]";
}

std::optional<std::string> vram::compareTensors(const HostTensor &actual,
                                                const HostTensor &expected,
                                                const Tolerance &tolerance) {
  if (actual.kind != expected.kind || actual.shape != expected.shape)
    return "got " + actual.getTypeString() + ", expected " +
           expected.getTypeString();
  bool isFloat = isFloatingPoint(actual.kind);
  double maxAbs = 0, maxRel = 0;
  int64_t mismatches = 0;
  std::optional<int64_t> first;
  for (int64_t i = 0, e = actual.getNumElements(); i < e; ++i) {
    bool equal;
    if (!isFloat) {
      equal = actual.getAsUnsigned(i) == expected.getAsUnsigned(i);
      double diff = std::fabs(actual.getAsDouble(i) - expected.getAsDouble(i));
      maxAbs = std::max(maxAbs, diff);
    } else {
      double a = actual.getAsDouble(i), b = expected.getAsDouble(i);
      if (std::isnan(a) || std::isnan(b)) {
        equal = std::isnan(a) && std::isnan(b);
      } else if (std::isinf(a) || std::isinf(b)) {
        equal = a == b;
      } else {
        double diff = std::fabs(a - b);
        equal = diff <= tolerance.atol + tolerance.rtol * std::fabs(b);
        maxAbs = std::max(maxAbs, diff);
        if (b != 0)
          maxRel = std::max(maxRel, diff / std::fabs(b));
      }
    }
    if (!equal) {
      ++mismatches;
      if (!first)
        first = i;
    }
  }
  if (!first)
    return std::nullopt;
  std::string message;
  llvm::raw_string_ostream os(message);
  os << mismatches << " of " << actual.getNumElements()
     << " elements differ; max abs error " << llvm::format("%.6g", maxAbs);
  if (isFloat)
    os << ", max rel error " << llvm::format("%.6g", maxRel) << " (rtol "
       << llvm::format("%g", tolerance.rtol) << ", atol "
       << llvm::format("%g", tolerance.atol) << ")";
  os << "; first at " << formatIndex(actual.shape, *first) << ": got ";
  if (isFloat)
    os << llvm::format("%.9g", actual.getAsDouble(*first)) << ", expected "
       << llvm::format("%.9g", expected.getAsDouble(*first));
  else
    os << actual.getAsInt(*first) << ", expected "
       << expected.getAsInt(*first);
  return message;
}

void vram::printTensor(const HostTensor &tensor, llvm::raw_ostream &os) {
  os << tensor.getTypeString() << "\n";
  int64_t rank = tensor.shape.size();
  auto printElement = [&](int64_t i) {
    if (isFloatingPoint(tensor.kind))
      os << llvm::format("%.9g", tensor.getAsDouble(i));
    else if (tensor.kind == ElementKind::U64)
      os << tensor.getAsUnsigned(i);
    else
      os << tensor.getAsInt(i);
  };
  if (rank == 0) {
    printElement(0);
    os << "\n";
    return;
  }
  // Opens a bracket at every dimension whose index wraps to 0 and closes it
  // when it reaches its end: numpy's nesting, one innermost row per line.
  int64_t count = tensor.getNumElements();
  for (int64_t i = 0; i < count; ++i) {
    int64_t opened = 0;
    for (int64_t d = rank - 1, stride = 1; d >= 0; stride *= tensor.shape[d--])
      if (i % (stride * tensor.shape[d]) == 0)
        ++opened;
    if (i)
      os << (opened ? "\n" : ", ");
    os.indent(opened ? rank - opened : 0);
    for (int64_t k = 0; k < opened; ++k)
      os << "[";
    printElement(i);
    int64_t closed = 0;
    for (int64_t d = rank - 1, stride = 1; d >= 0; stride *= tensor.shape[d--])
      if ((i + 1) % (stride * tensor.shape[d]) == 0)
        ++closed;
    for (int64_t k = 0; k < closed; ++k)
      os << "]";
  }
  if (count == 0) {
    for (int64_t k = 0; k < rank; ++k)
      os << "[";
    for (int64_t k = 0; k < rank; ++k)
      os << "]";
  }
  os << "\n";
}
