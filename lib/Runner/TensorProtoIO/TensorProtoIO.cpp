//===- TensorProtoIO.cpp - TensorProto files and model initializers -------===//
//
// Built with exceptions (LLVM_REQUIRES_EH) because protobuf and libonnx may
// throw; nothing escapes: every failure is returned as an llvm::Error.
//
//===----------------------------------------------------------------------===//

#include "vram/Runner/TensorProtoIO.h"
#include "vram/Support/PackedElements.h"

#include "onnx/defs/parser.h"
#include "onnx/onnx_pb.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstring>
#include <exception>
#include <limits>

using namespace vram;

namespace {
using TP = onnx::TensorProto;

llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::optional<ElementKind> getKind(int32_t dataType) {
  switch (dataType) {
  case TP::BOOL:
    return ElementKind::Bool;
  case TP::INT8:
    return ElementKind::I8;
  case TP::INT16:
    return ElementKind::I16;
  case TP::INT32:
    return ElementKind::I32;
  case TP::INT64:
    return ElementKind::I64;
  case TP::UINT8:
    return ElementKind::U8;
  case TP::UINT16:
    return ElementKind::U16;
  case TP::UINT32:
    return ElementKind::U32;
  case TP::UINT64:
    return ElementKind::U64;
  case TP::FLOAT16:
    return ElementKind::F16;
  case TP::BFLOAT16:
    return ElementKind::BF16;
  case TP::FLOAT:
    return ElementKind::F32;
  case TP::DOUBLE:
    return ElementKind::F64;
  default:
    break;
  }
  // Types newer than libonnx 1.12's enum (ONNX 1.14 and later).
  switch (dataType) {
  case 17:
    return ElementKind::F8E4M3FN;
  case 18:
    return ElementKind::F8E4M3FNUZ;
  case 19:
    return ElementKind::F8E5M2;
  case 20:
    return ElementKind::F8E5M2FNUZ;
  case 21:
    return ElementKind::U4;
  case 22:
    return ElementKind::I4;
  case 23:
    return ElementKind::F4E2M1FN;
  case 24:
    return ElementKind::F8E8M0FNU;
  case 25:
    return ElementKind::U2;
  case 26:
    return ElementKind::I2;
  default:
    return std::nullopt;
  }
}

/// Copies the typed repeated field that holds the values of `kind` (ONNX
/// packs everything up to 32 bits in int32_data, f16/bf16 as their bits).
template <typename Field>
void copyTypedField(const Field &field, HostTensor &tensor) {
  unsigned width = getElementByteSize(tensor.kind);
  for (int i = 0; i < field.size(); ++i) {
    auto value = field.Get(i);
    // Little-endian host: the low `width` bytes are the element.
    std::memcpy(tensor.bytes.data() + i * width, &value, width);
  }
}

int64_t getTypedFieldSize(const TP &proto, ElementKind kind) {
  switch (kind) {
  case ElementKind::F32:
    return proto.float_data_size();
  case ElementKind::F64:
    return proto.double_data_size();
  case ElementKind::I64:
    return proto.int64_data_size();
  case ElementKind::U32:
  case ElementKind::U64:
    return proto.uint64_data_size();
  default:
    return proto.int32_data_size();
  }
}

void copyTypedData(const TP &proto, HostTensor &tensor) {
  switch (tensor.kind) {
  case ElementKind::F32:
    return copyTypedField(proto.float_data(), tensor);
  case ElementKind::F64:
    return copyTypedField(proto.double_data(), tensor);
  case ElementKind::I64:
    return copyTypedField(proto.int64_data(), tensor);
  case ElementKind::U32:
  case ElementKind::U64:
    return copyTypedField(proto.uint64_data(), tensor);
  default:
    return copyTypedField(proto.int32_data(), tensor);
  }
}

/// Whether the real path `path` lies below the real path `directory`.
bool isInside(llvm::StringRef path, llvm::StringRef directory) {
  if (!path.consume_front(directory) || path.empty())
    return false;
  return llvm::sys::path::is_separator(directory.back()) ||
         (llvm::sys::path::is_separator(path.front()) && path.size() > 1);
}

/// Reads `length` bytes at `offset` of the external data file of `proto`.
/// Returns false (and sets `missing`) when the file does not exist.
llvm::Expected<bool> readExternalData(const TP &proto,
                                      llvm::StringRef modelDirectory,
                                      HostTensor &tensor,
                                      std::string &missing) {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto &entry : proto.external_data()) {
    llvm::StringRef value = entry.value();
    if (entry.key() == "location")
      location = entry.value();
    else if (entry.key() == "offset" && value.getAsInteger(10, offset))
      return makeError("tensor '" + proto.name() +
                       "': bad external data offset '" + value + "'");
    else if (entry.key() == "length") {
      uint64_t parsed;
      if (value.getAsInteger(10, parsed))
        return makeError("tensor '" + proto.name() +
                         "': bad external data length '" + value + "'");
      length = parsed;
    }
  }
  if (location.empty())
    return makeError("tensor '" + proto.name() +
                     "' is external but names no location");
  // As ONNX's loader: the file lies in the model's directory or below it,
  // so a model cannot make the runner read the host's other files.
  auto escapes = [&](const llvm::Twine &why) {
    return makeError("tensor '" + proto.name() + "': external data location '" +
                     location + "' " + why);
  };
  if (llvm::sys::path::is_absolute(location))
    return escapes("is an absolute path; it must be relative to the model");
  for (llvm::StringRef component : llvm::make_range(
           llvm::sys::path::begin(location), llvm::sys::path::end(location)))
    if (component == "..")
      return escapes("leaves the model's directory");
  llvm::SmallString<256> path(modelDirectory);
  llvm::sys::path::append(path, location);
  if (!llvm::sys::fs::exists(path)) {
    missing = "external data file '" + path.str().str() + "' is missing";
    return false;
  }
  llvm::SmallString<256> realDirectory, realPath;
  if (llvm::sys::fs::real_path(modelDirectory.empty() ? "." : modelDirectory,
                               realDirectory) ||
      llvm::sys::fs::real_path(path, realPath) ||
      !isInside(realPath, realDirectory))
    return escapes("resolves outside the model's directory");
  if (!llvm::sys::fs::is_regular_file(realPath))
    return escapes("is not a regular file");
  uint64_t expected = tensor.bytes.size();
  if (length && *length != expected)
    return makeError("tensor '" + proto.name() + "': external data length " +
                     llvm::Twine(*length) + " does not match its " +
                     llvm::Twine(expected) + " bytes");
  auto buffer = llvm::MemoryBuffer::getFileSlice(path, expected, offset);
  if (!buffer)
    return makeError("tensor '" + proto.name() + "': cannot read '" + path +
                     "': " + buffer.getError().message());
  if ((*buffer)->getBufferSize() != expected)
    return makeError("tensor '" + proto.name() + "': '" + path +
                     "' ends before its data");
  std::memcpy(tensor.bytes.data(), (*buffer)->getBufferStart(), expected);
  return true;
}

/// Converts `proto`; `missing` is set (and the tensor left zero) when its
/// external data file is absent.
llvm::Expected<HostTensor> convertTensor(const TP &proto,
                                         llvm::StringRef modelDirectory,
                                         std::string &missing) {
  std::optional<ElementKind> kind = getKind(proto.data_type());
  if (!kind) {
    std::string typeName =
        TP::DataType_IsValid(proto.data_type())
            ? TP::DataType_Name(static_cast<TP::DataType>(proto.data_type()))
            : std::to_string(proto.data_type());
    return makeError("tensor '" + proto.name() +
                     "' has unsupported element type " + typeName);
  }
  llvm::SmallVector<int64_t> shape;
  uint64_t count = 1;
  for (int64_t dim : proto.dims()) {
    if (dim < 0 || (dim && count > std::numeric_limits<int32_t>::max() /
                                       static_cast<uint64_t>(dim)))
      return makeError("tensor '" + proto.name() + "' has a bad shape");
    count *= dim;
    shape.push_back(dim);
  }
  HostTensor tensor(*kind, shape);
  uint64_t byteSize = tensor.bytes.size();
  if (unsigned bits = getPackedBitWidth(*kind); bits < 8) {
    if (proto.data_location() == TP::EXTERNAL)
      return makeError("tensor '" + proto.name() +
                       "': packed 4- and 2-bit data in an external file is "
                       "not supported");
    std::string packed = getPackedBytes(proto);
    uint64_t needed = getPackedByteCount(count, bits);
    if (packed.size() != needed)
      return makeError(
          "tensor '" + proto.name() + "' holds " + llvm::Twine(packed.size()) +
          " bytes of packed data; its shape needs " + llvm::Twine(needed));
    unpackElements(packed, bits, count, tensor.bytes.data());
    return tensor;
  }
  if (proto.data_location() == TP::EXTERNAL) {
    llvm::Expected<bool> read =
        readExternalData(proto, modelDirectory, tensor, missing);
    if (!read)
      return read.takeError();
    return tensor;
  }
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != byteSize)
      return makeError("tensor '" + proto.name() + "' holds " +
                       llvm::Twine(proto.raw_data().size()) +
                       " bytes of raw data; its shape needs " +
                       llvm::Twine(byteSize));
    std::memcpy(tensor.bytes.data(), proto.raw_data().data(), byteSize);
    return tensor;
  }
  int64_t size = getTypedFieldSize(proto, *kind);
  if (static_cast<uint64_t>(size) != count)
    return makeError("tensor '" + proto.name() + "' holds " +
                     llvm::Twine(size) + " values; its shape needs " +
                     llvm::Twine(count));
  copyTypedData(proto, tensor);
  return tensor;
}
} // namespace

llvm::Expected<HostTensor> vram::readTensorProtoFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return makeError("cannot read '" + path +
                     "': " + buffer.getError().message());
  try {
    TP proto;
    llvm::StringRef bytes = (*buffer)->getBuffer();
    if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
        !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
      return makeError("'" + path +
                       "' is not a valid TensorProto (truncated or corrupt)");
    std::string missing;
    llvm::Expected<HostTensor> tensor =
        convertTensor(proto, llvm::sys::path::parent_path(path), missing);
    if (!tensor)
      return makeError("'" + path + "': " + toString(tensor.takeError()));
    if (!missing.empty())
      return makeError("'" + path + "': " + missing);
    return tensor;
  } catch (const std::exception &e) {
    return makeError("'" + path + "': " + e.what());
  }
}

namespace {
/// Parses the model in `path` (`.onnx` or `.onnxtext`) into `model`.
llvm::Error parseModelFile(llvm::StringRef path, onnx::ModelProto &model) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return makeError("cannot read '" + path +
                     "': " + buffer.getError().message());
  llvm::StringRef bytes = (*buffer)->getBuffer();
  if (path.ends_with(".onnxtext")) {
    // The parser keeps a pointer into the text: it must outlive parsing.
    std::string text(bytes);
    onnx::OnnxParser parser(text.c_str());
    auto status = parser.Parse(model);
    if (!status.IsOK())
      return makeError("'" + path + "': invalid ONNX text format");
  } else if (bytes.size() >
                 static_cast<size_t>(std::numeric_limits<int>::max()) ||
             !model.ParseFromArray(bytes.data(),
                                   static_cast<int>(bytes.size()))) {
    return makeError("'" + path + "' is not a valid ONNX model");
  }
  return llvm::Error::success();
}
} // namespace

llvm::Expected<ModelInitializers>
vram::readModelInitializers(llvm::StringRef path) {
  try {
    onnx::ModelProto model;
    if (llvm::Error error = parseModelFile(path, model))
      return std::move(error);
    ModelInitializers result;
    llvm::StringRef directory = llvm::sys::path::parent_path(path);
    for (const TP &init : model.graph().initializer()) {
      std::string missing;
      llvm::Expected<HostTensor> tensor =
          convertTensor(init, directory, missing);
      if (!tensor)
        return makeError("'" + path + "': " + toString(tensor.takeError()));
      if (missing.empty())
        result.tensors[init.name()] = std::move(*tensor);
      else
        result.missing[init.name()] = missing;
    }
    for (const auto &input : model.graph().input())
      if (!result.tensors.contains(input.name()) &&
          !result.missing.contains(input.name()))
        result.inputNames.push_back(input.name());
    return result;
  } catch (const std::exception &e) {
    return makeError("'" + path + "': " + e.what());
  }
}
