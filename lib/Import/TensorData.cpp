//===- TensorData.cpp - ONNX types, tensor data and attributes -----------===//
//
// GraphImporter's conversions of ONNX element and tensor types, of the
// initializer data it reads (small integer tables, Constant nodes) and of
// node attributes.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"
#include "vram/Dialect/ONNX/ONNXOps.h"
#include "vram/Dialect/ONNX/TensorSize.h"
#include "vram/Support/PackedElements.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace vram::importer {

Type GraphImporter::convertElementType(int32_t dataType,
                                       llvm::StringRef valueName) {
  // Complex values are only ever carried through (never computed on), so
  // the dialect's mapping leaves them out.
  if (dataType == onnx::TensorProto::COMPLEX64)
    return ComplexType::get(builder.getF32Type());
  if (dataType == onnx::TensorProto::COMPLEX128)
    return ComplexType::get(builder.getF64Type());
  if (Type type = getElementTypeForONNXDataType(context, dataType))
    return type;
  fail("value '" + valueName + "' has unsupported ONNX element type " +
       llvm::Twine(dataType));
}

/// Byte size of a tensor type, or failure when it does not fit in 64 bits.
/// Checked at import so no later analysis multiplies dims into an overflow.
void checkByteSize(TensorType type, llvm::StringRef valueName) {
  if (!type.hasRank())
    return;
  uint64_t elements = 1;
  for (int64_t dim : type.getShape()) {
    if (ShapedType::isDynamic(dim))
      return;
    bool overflow = false;
    elements = llvm::SaturatingMultiply(elements, static_cast<uint64_t>(dim),
                                        &overflow);
    if (overflow)
      fail("value '" + valueName + "' has more than 2^64 elements");
  }
  // Strings count their pointer, complex numbers both parts.
  FailureOr<uint64_t> bits = getElementStorageBits(type.getElementType());
  if (failed(bits))
    fail("value '" + valueName + "' has an element type with no byte size");
  bool overflow = false;
  uint64_t totalBits = llvm::SaturatingMultiply(elements, *bits, &overflow);
  if (overflow || totalBits / 8 > uint64_t(std::numeric_limits<int64_t>::max()))
    fail("value '" + valueName + "' of " + llvm::Twine(elements) +
         " elements is too large: its byte size overflows 64 bits");
}

TensorType GraphImporter::convertTensorType(const onnx::TypeProto &type,
                                            llvm::StringRef valueName) {
  if (!type.has_tensor_type())
    fail("value '" + valueName +
         "' is not a tensor (sequence, map and optional values are not "
         "supported)");
  const auto &tensorType = type.tensor_type();
  if (!tensorType.has_elem_type() || tensorType.elem_type() == 0)
    fail("ONNX shape inference could not determine the element type of '" +
         valueName + "'");
  Type elementType = convertElementType(tensorType.elem_type(), valueName);
  if (!tensorType.has_shape())
    return UnrankedTensorType::get(elementType);
  SmallVector<int64_t> shape;
  for (const auto &dim : tensorType.shape().dim()) {
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0)
        failAtProducer(
            valueName,
            "ONNX shape inference gives '" + valueName +
                "' a negative dimension (" + llvm::Twine(dim.dim_value()) +
                "): the operands' shapes are impossible for this op");
      shape.push_back(dim.dim_value());
    } else {
      shape.push_back(ShapedType::kDynamic);
    }
  }
  auto result = RankedTensorType::get(shape, elementType);
  checkByteSize(result, valueName);
  return result;
}

RankedTensorType GraphImporter::tensorTypeOf(const onnx::TensorProto &tensor) {
  SmallVector<int64_t> shape;
  for (int64_t dim : tensor.dims()) {
    if (dim < 0)
      fail("tensor '" + tensor.name() + "' has a negative dimension");
    shape.push_back(dim);
  }
  auto type = RankedTensorType::get(
      shape, convertElementType(tensor.data_type(), tensor.name()));
  checkByteSize(type, tensor.name());
  return type;
}

/// Appends `value` to `bytes` as `width` little-endian bytes, the layout of
/// ONNX raw_data and of DenseElementsAttr's raw buffer.
static void appendLittleEndian(std::vector<char> &bytes, uint64_t value,
                               unsigned width) {
  for (unsigned i = 0; i < width; ++i)
    bytes.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

DenseElementsAttr GraphImporter::readTensorData(const onnx::TensorProto &tensor,
                                                RankedTensorType type) {
  using TP = onnx::TensorProto;
  llvm::StringRef name = tensor.name();
  int64_t elements = type.getNumElements();
  Type elementType = type.getElementType();
  if (tensor.data_location() == TP::EXTERNAL)
    fail("tensor '" + name + "' keeps its data in an external file");
  if (isa<ONNXStringType>(elementType)) {
    if (tensor.string_data_size() != elements)
      fail("string tensor '" + name + "' has the wrong number of elements");
    SmallVector<StringRef> strings(tensor.string_data().begin(),
                                   tensor.string_data().end());
    return DenseStringElementsAttr::get(type, strings);
  }
  if (isa<ComplexType>(elementType))
    fail("complex constant '" + name + "' is not supported");
  unsigned width = llvm::divideCeil(elementType.getIntOrFloatBitWidth(), 8);

  // Bool is one byte per element in ONNX; MLIR wants APInts of width 1.
  auto boolsFromBytes = [&](auto &&bytes) {
    SmallVector<bool> bits;
    for (auto b : bytes)
      bits.push_back(b != 0);
    return DenseElementsAttr::get(type, llvm::ArrayRef<bool>(bits));
  };

  std::vector<char> raw;
  unsigned bits = elementType.getIntOrFloatBitWidth();
  if (bits < 8 && !elementType.isInteger(1)) {
    // 4- and 2-bit elements are packed; MLIR keeps one per byte.
    std::string packed = getPackedBytes(tensor);
    uint64_t needed = getPackedByteCount(elements, bits);
    if (packed.size() != needed)
      fail("tensor '" + name + "' has " + llvm::Twine(packed.size()) +
           " bytes of packed data, its shape needs " + llvm::Twine(needed));
    raw.resize(elements);
    unpackElements(packed, bits, elements, raw.data());
    return DenseElementsAttr::getFromRawBuffer(type, raw);
  }
  if (tensor.has_raw_data()) {
    const std::string &data = tensor.raw_data();
    if (static_cast<int64_t>(data.size()) != elements * int64_t(width))
      fail("tensor '" + name + "' has " + llvm::Twine(data.size()) +
           " bytes of data, its shape needs " +
           llvm::Twine(elements * int64_t(width)));
    if (elementType.isInteger(1))
      return boolsFromBytes(data);
    raw.assign(data.begin(), data.end());
  } else {
    auto checkCount = [&](int count) {
      if (count != elements)
        fail("tensor '" + name + "' has " + llvm::Twine(count) +
             " values, its shape needs " + llvm::Twine(elements));
    };
    switch (tensor.data_type()) {
    case TP::FLOAT:
      checkCount(tensor.float_data_size());
      for (float f : tensor.float_data())
        appendLittleEndian(raw, llvm::bit_cast<uint32_t>(f), 4);
      break;
    case TP::DOUBLE:
      checkCount(tensor.double_data_size());
      for (double d : tensor.double_data())
        appendLittleEndian(raw, llvm::bit_cast<uint64_t>(d), 8);
      break;
    case TP::INT64:
      checkCount(tensor.int64_data_size());
      for (int64_t v : tensor.int64_data())
        appendLittleEndian(raw, static_cast<uint64_t>(v), 8);
      break;
    case TP::UINT32:
    case TP::UINT64:
      checkCount(tensor.uint64_data_size());
      for (uint64_t v : tensor.uint64_data())
        appendLittleEndian(raw, v, width);
      break;
    case TP::BOOL:
      checkCount(tensor.int32_data_size());
      return boolsFromBytes(tensor.int32_data());
    default:
      // int32, int16, int8, uint16, uint8, and the bits of float16/bfloat16.
      checkCount(tensor.int32_data_size());
      for (int32_t v : tensor.int32_data())
        appendLittleEndian(raw, static_cast<uint32_t>(v), width);
      break;
    }
  }
  return DenseElementsAttr::getFromRawBuffer(type, raw);
}

NamedAttribute GraphImporter::convertAttribute(const onnx::AttributeProto &attr,
                                               Location nodeLoc) {
  using AP = onnx::AttributeProto;
  auto name = builder.getStringAttr(attr.name());
  switch (attr.type()) {
  case AP::INT:
    return {name, builder.getI64IntegerAttr(attr.i())};
  case AP::FLOAT:
    return {name, builder.getF32FloatAttr(attr.f())};
  case AP::STRING:
    return {name, builder.getStringAttr(attr.s())};
  case AP::INTS:
    return {name, builder.getI64ArrayAttr(SmallVector<int64_t>(
                      attr.ints().begin(), attr.ints().end()))};
  case AP::FLOATS:
    return {name, builder.getF32ArrayAttr(SmallVector<float>(
                      attr.floats().begin(), attr.floats().end()))};
  case AP::STRINGS: {
    SmallVector<StringRef> strings(attr.strings().begin(),
                                   attr.strings().end());
    return {name, builder.getStrArrayAttr(strings)};
  }
  case AP::TENSOR:
    return {name, readTensorData(attr.t(), tensorTypeOf(attr.t()))};
  default:
    failAt(nodeLoc,
           "attribute '" + attr.name() +
               "' holds a graph, sparse tensor or type; not supported");
  }
}

} // namespace vram::importer
