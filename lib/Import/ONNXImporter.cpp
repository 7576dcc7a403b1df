//===- ONNXImporter.cpp - ONNX models into the onnx dialect ---------------===//
//
// libonnx does the ONNX work (parse, check, convert the opset, infer shapes);
// this file maps the checked, shape-inferred graph one node to one op.
// ONNX reports errors by throwing; every exception is caught in importONNX
// and becomes one MLIR error, so callers never see one.
//
//===----------------------------------------------------------------------===//

#include "vram/Import/ONNXImporter.h"
#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "onnx/checker.h"
#include "onnx/defs/parser.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx/version_converter/convert.h"

#include <exception>
#include <mutex>

using namespace mlir;

namespace vram {
namespace {

/// An error detected by the importer itself; carried to the one place that
/// turns exceptions into diagnostics.
struct ImportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const llvm::Twine &message) {
  throw ImportError(message.str());
}

/// ONNX messages span several lines (parser context, stack of nodes); one
/// diagnostic line reads better.
std::string oneLine(llvm::StringRef message) {
  std::string result;
  for (char c : message.trim()) {
    if (c == '\n') {
      result += "; ";
      continue;
    }
    result += c;
  }
  return result;
}

bool isDefaultDomain(const std::string &domain) {
  return domain.empty() || domain == "ai.onnx";
}

int64_t defaultDomainOpset(const onnx::ModelProto &model) {
  for (const auto &opset : model.opset_import())
    if (isDefaultDomain(opset.domain()))
      return opset.version();
  return 0;
}

//===----------------------------------------------------------------------===//
// Model preparation with libonnx
//===----------------------------------------------------------------------===//

/// Teaches libonnx the one contrib operator the dialect models, Gelu in
/// com.microsoft (what exporters emit before opset 20 has Gelu), so that its
/// output gets a type and shape inference continues past it.
void registerContribSchemas() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto &domains = onnx::OpSchemaRegistry::DomainToVersionRange::Instance();
    if (!domains.Map().count("com.microsoft"))
      domains.AddDomainToVersion("com.microsoft", 1, 1);
    static onnx::OpSchema gelu =
        onnx::OpSchema()
            .SetName("Gelu")
            .SetDomain("com.microsoft")
            .SinceVersion(1)
            .SetDoc("Gaussian error linear unit (contrib)")
            .Input(0, "X", "input", "T")
            .Output(0, "Y", "output", "T")
            .TypeConstraint("T", {"tensor(float16)", "tensor(float)",
                                  "tensor(double)", "tensor(bfloat16)"},
                            "float tensors")
            .TypeAndShapeInferenceFunction(
                onnx::propagateShapeAndTypeFromFirstInput);
    onnx::OpSchemaRegistry::OpSchemaRegisterOnce registerGelu(gelu);
  });
}

onnx::ModelProto parseModel(llvm::StringRef bytes, bool isText) {
  onnx::ModelProto model;
  if (isText) {
    // The parser keeps a pointer into the text: it must outlive parsing.
    std::string text(bytes);
    onnx::OnnxParser parser(text.c_str());
    auto status = parser.Parse(model);
    if (!status.IsOK())
      fail("invalid ONNX text format: " + oneLine(status.ErrorMessage()));
    return model;
  }
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    fail("model file is larger than 2 GiB, the protobuf limit; weights "
         "belong in external data files");
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    fail("not a valid ONNX model: the protobuf is truncated or corrupt");
  if (!model.has_graph())
    fail("not a valid ONNX model: it has no graph");
  return model;
}

/// Replaces `dim_param` with the values the user bound, on graph inputs and
/// outputs, so shape inference propagates them.
void bindDynamicDims(onnx::ModelProto &model, const ONNXImportOptions &options,
                     const llvm::StringSet<> &initializerNames) {
  onnx::GraphProto *graph = model.mutable_graph();
  llvm::StringMap<int64_t> bindings = options.dimBindings;
  // --batch binds the first input's leading dim; when that dim has a name,
  // every dim of that name (other inputs, outputs) gets the same value.
  if (options.batchSize) {
    for (auto &input : *graph->mutable_input()) {
      if (initializerNames.contains(input.name()))
        continue;
      if (!input.type().has_tensor_type() ||
          !input.type().tensor_type().has_shape() ||
          input.type().tensor_type().shape().dim_size() == 0)
        fail("--batch: the first input '" + input.name() +
             "' has no leading dimension to bind");
      auto *dim = input.mutable_type()
                      ->mutable_tensor_type()
                      ->mutable_shape()
                      ->mutable_dim(0);
      if (dim->has_dim_value() && dim->dim_value() != *options.batchSize)
        fail("--batch=" + llvm::Twine(*options.batchSize) + ": input '" +
             input.name() + "' has a static batch dimension of " +
             llvm::Twine(dim->dim_value()));
      if (dim->has_dim_param())
        bindings.try_emplace(dim->dim_param(), *options.batchSize);
      dim->set_dim_value(*options.batchSize);
      break;
    }
  }
  auto bindShape = [&](onnx::ValueInfoProto &value) {
    if (!value.type().has_tensor_type() ||
        !value.type().tensor_type().has_shape())
      return;
    auto *shape = value.mutable_type()->mutable_tensor_type()->mutable_shape();
    for (auto &dim : *shape->mutable_dim()) {
      if (!dim.has_dim_param())
        continue;
      auto it = bindings.find(dim.dim_param());
      if (it != bindings.end())
        dim.set_dim_value(it->second);
    }
  };
  for (auto &input : *graph->mutable_input())
    bindShape(input);
  for (auto &output : *graph->mutable_output())
    bindShape(output);
  // Intermediate annotations may hold stale symbolic dims: inference redoes
  // them from the bound inputs.
  graph->clear_value_info();
}

/// Every graph output must be produced by a node, an input or an
/// initializer. ONNX's version converter dereferences outputs before its
/// checker would say so, so this runs first.
void checkGraphOutputsDefined(const onnx::ModelProto &model) {
  llvm::StringSet<> defined;
  const onnx::GraphProto &graph = model.graph();
  for (const auto &input : graph.input())
    defined.insert(input.name());
  for (const auto &init : graph.initializer())
    defined.insert(init.name());
  for (const auto &node : graph.node())
    for (const std::string &output : node.output())
      defined.insert(output);
  for (const auto &output : graph.output())
    if (!defined.contains(output.name()))
      fail("invalid ONNX model: graph output '" + output.name() +
           "' is not produced by any node, input or initializer");
}

/// Operands whose values ONNX shape inference reads (shapes, axes, pads,
/// scales): an initializer there is data that determines shapes, never a
/// weight, so it is imported as a constant whatever its type.
bool isShapeOperand(const onnx::NodeProto &node, int index) {
  if (!isDefaultDomain(node.domain()))
    return false;
  const std::string &op = node.op_type();
  if (op == "Reshape" || op == "Expand" || op == "Tile")
    return index == 1;
  if (op == "Slice")
    return index >= 1;
  if (op == "Pad" || op == "Resize")
    return index >= 1;
  if (op == "Squeeze" || op == "Unsqueeze" || op == "ReduceSum" ||
      op == "Split" || op == "TopK")
    return index == 1;
  return op == "ConstantOfShape" || op == "Range";
}

/// Whether an initializer is read as a constant: a small, inline integer
/// tensor, or one that feeds only shape operands (Resize scales, ...). All
/// others are parameters.
bool isInlineConstant(const onnx::TensorProto &tensor,
                      const ONNXImportOptions &options, bool feedsShapes) {
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return false;
  bool isIndex = tensor.data_type() == onnx::TensorProto::INT64 ||
                 tensor.data_type() == onnx::TensorProto::INT32;
  if (!isIndex && !feedsShapes)
    return false;
  int64_t elements = 1;
  for (int64_t dim : tensor.dims())
    elements *= std::max<int64_t>(dim, 0);
  return elements <= options.maxConstantElements;
}

/// Turns every parameter initializer into a typed graph input, so neither
/// the checker nor shape inference looks at its data, which may live in an
/// external file that is absent. Returns what kind of parameter each is.
llvm::StringMap<std::string> detachParameters(onnx::ModelProto &model,
                                              const ONNXImportOptions &options) {
  onnx::GraphProto *graph = model.mutable_graph();
  // Running statistics are state, not trainable parameters: ONNX has no
  // flag for that, but BatchNormalization's inputs 3 and 4 say it.
  llvm::StringSet<> statistics;
  for (const auto &node : graph->node())
    if (isDefaultDomain(node.domain()) &&
        node.op_type() == "BatchNormalization")
      for (int i = 3; i < std::min(node.input_size(), 5); ++i)
        statistics.insert(node.input(i));
  llvm::StringSet<> graphInputs;
  for (const auto &input : graph->input())
    graphInputs.insert(input.name());
  // Initializers read by some operand that is not a shape operand.
  llvm::StringSet<> readAsData;
  for (const auto &node : graph->node())
    for (auto [index, input] : llvm::enumerate(node.input()))
      if (!isShapeOperand(node, index))
        readAsData.insert(input);

  llvm::StringMap<std::string> parameters;
  google::protobuf::RepeatedPtrField<onnx::TensorProto> constants;
  for (auto &init : *graph->mutable_initializer()) {
    if (isInlineConstant(init, options, !readAsData.contains(init.name()))) {
      *constants.Add() = std::move(init);
      continue;
    }
    bool isFloat = init.data_type() == onnx::TensorProto::FLOAT ||
                   init.data_type() == onnx::TensorProto::DOUBLE ||
                   init.data_type() == onnx::TensorProto::FLOAT16 ||
                   init.data_type() == onnx::TensorProto::BFLOAT16;
    parameters[init.name()] =
        isFloat && !statistics.contains(init.name()) ? "trainable" : "state";
    if (graphInputs.contains(init.name()))
      continue; // IR version < 4 lists initializers as inputs too.
    onnx::ValueInfoProto *input = graph->add_input();
    input->set_name(init.name());
    auto *tensorType = input->mutable_type()->mutable_tensor_type();
    tensorType->set_elem_type(init.data_type());
    auto *shape = tensorType->mutable_shape();
    for (int64_t dim : init.dims())
      shape->add_dim()->set_dim_value(dim);
  }
  graph->mutable_initializer()->Swap(&constants);
  return parameters;
}

/// Before opset 14, BatchNormalization signalled training mode by having
/// more than one output, and could return saved_mean/saved_var (outputs 3
/// and 4), which later opsets dropped. Exporters (torch.onnx in training
/// mode) emit those outputs unused; dropping them lets ONNX's version
/// converter move the node to opset 14+. Returns the nodes in training mode.
llvm::StringSet<> prepareLegacyBatchNorm(onnx::ModelProto &model) {
  llvm::StringSet<> trainingOutputs;
  if (defaultDomainOpset(model) >= 14)
    return trainingOutputs;
  onnx::GraphProto *graph = model.mutable_graph();
  llvm::StringSet<> used;
  for (const auto &node : graph->node())
    for (const std::string &input : node.input())
      used.insert(input);
  for (const auto &output : graph->output())
    used.insert(output.name());
  for (auto &node : *graph->mutable_node()) {
    if (!isDefaultDomain(node.domain()) ||
        node.op_type() != "BatchNormalization")
      continue;
    while (node.output_size() > 3 &&
           !used.contains(node.output(node.output_size() - 1)))
      node.mutable_output()->RemoveLast();
    if (node.output_size() > 1)
      trainingOutputs.insert(node.output(0));
  }
  return trainingOutputs;
}

/// Converts to kCanonicalOpset when ONNX has adapters for the whole model.
/// When it does not, the model is imported at its own opset and nodes whose
/// signature differs from the canonical one import as generic `onnx.Node`;
/// `warning` says why.
onnx::ModelProto convertOpset(const onnx::ModelProto &model,
                              std::string &warning) {
  int64_t opset = defaultDomainOpset(model);
  if (opset == 0 || opset == kCanonicalOpset)
    return model;
  try {
    return onnx::version_conversion::ConvertVersion(model, kCanonicalOpset);
  } catch (const std::exception &e) {
    warning = "cannot convert opset " + std::to_string(opset) + " to " +
              std::to_string(kCanonicalOpset) + " (" + oneLine(e.what()) +
              "); nodes whose operator changed since import as onnx.Node";
    return model;
  }
}

/// The converter keeps legacy training-mode BatchNormalization nodes as
/// they were; opset 14+ says training mode with an attribute.
void markTrainingBatchNorm(onnx::ModelProto &model,
                           const llvm::StringSet<> &trainingOutputs) {
  if (defaultDomainOpset(model) < 14)
    return;
  for (auto &node : *model.mutable_graph()->mutable_node()) {
    if (node.op_type() != "BatchNormalization" || node.output_size() == 0 ||
        !trainingOutputs.contains(node.output(0)))
      continue;
    onnx::AttributeProto *attr = node.add_attribute();
    attr->set_name("training_mode");
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(1);
  }
}

//===----------------------------------------------------------------------===//
// Types and tensor data
//===----------------------------------------------------------------------===//

class GraphImporter {
public:
  GraphImporter(MLIRContext *context, llvm::StringRef sourceName,
                const llvm::StringMap<std::string> &parameters)
      : context(context), builder(context), parameters(parameters),
        fileLoc(FileLineColLoc::get(context, sourceName, 0, 0)) {}

  OwningOpRef<ModuleOp> import(const onnx::ModelProto &model,
                               int64_t sourceOpset);

private:
  Type convertElementType(int32_t dataType, llvm::StringRef valueName);
  TensorType convertTensorType(const onnx::TypeProto &type,
                               llvm::StringRef valueName);
  RankedTensorType tensorTypeOf(const onnx::TensorProto &tensor);
  DenseElementsAttr readTensorData(const onnx::TensorProto &tensor,
                                   RankedTensorType type);
  NamedAttribute convertAttribute(const onnx::AttributeProto &attr,
                                  llvm::StringRef nodeName);
  void importNode(const onnx::NodeProto &node, unsigned index);
  void importConstantNode(const onnx::NodeProto &node, Location loc);
  Value lookup(const std::string &name, llvm::StringRef nodeName);
  Value noValue();
  Location nodeLocation(const onnx::NodeProto &node, unsigned index);
  /// "node 'conv1': " for a value a node produces, else "".
  std::string producerPrefix(llvm::StringRef valueName) const;

  MLIRContext *context;
  OpBuilder builder;
  /// Graph inputs that were parameter initializers: "trainable" or "state".
  const llvm::StringMap<std::string> &parameters;
  Location fileLoc;
  llvm::StringMap<Value> values;
  llvm::StringMap<const onnx::TypeProto *> inferredTypes;
  llvm::StringMap<std::string> producers;
  Value noneValue;
  int64_t modelOpset = 0;
};

Type GraphImporter::convertElementType(int32_t dataType,
                                       llvm::StringRef valueName) {
  using TP = onnx::TensorProto;
  auto intType = [&](unsigned width, bool isUnsigned) -> Type {
    return IntegerType::get(context, width,
                            isUnsigned ? IntegerType::Unsigned
                                       : IntegerType::Signless);
  };
  switch (dataType) {
  case TP::FLOAT:
    return builder.getF32Type();
  case TP::DOUBLE:
    return builder.getF64Type();
  case TP::FLOAT16:
    return builder.getF16Type();
  case TP::BFLOAT16:
    return builder.getBF16Type();
  case TP::BOOL:
    return builder.getI1Type();
  case TP::INT8:
    return intType(8, false);
  case TP::INT16:
    return intType(16, false);
  case TP::INT32:
    return intType(32, false);
  case TP::INT64:
    return intType(64, false);
  case TP::UINT8:
    return intType(8, true);
  case TP::UINT16:
    return intType(16, true);
  case TP::UINT32:
    return intType(32, true);
  case TP::UINT64:
    return intType(64, true);
  case TP::COMPLEX64:
    return ComplexType::get(builder.getF32Type());
  case TP::COMPLEX128:
    return ComplexType::get(builder.getF64Type());
  case TP::STRING:
    return ONNXStringType::get(context);
  default:
    fail("value '" + valueName + "' has unsupported ONNX element type " +
         llvm::Twine(dataType));
  }
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
  unsigned bits = isa<ONNXStringType>(type.getElementType())
                      ? 64
                      : type.getElementTypeBitWidth();
  bool overflow = false;
  uint64_t totalBits = llvm::SaturatingMultiply(elements, uint64_t(bits), &overflow);
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
        fail(producerPrefix(valueName) + "ONNX shape inference gives '" +
             valueName +
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
void appendLittleEndian(std::vector<char> &bytes, uint64_t value,
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

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

NamedAttribute GraphImporter::convertAttribute(const onnx::AttributeProto &attr,
                                               llvm::StringRef nodeName) {
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
    return {name, builder.getI64ArrayAttr(
                      SmallVector<int64_t>(attr.ints().begin(),
                                           attr.ints().end()))};
  case AP::FLOATS:
    return {name, builder.getF32ArrayAttr(
                      SmallVector<float>(attr.floats().begin(),
                                         attr.floats().end()))};
  case AP::STRINGS: {
    SmallVector<StringRef> strings(attr.strings().begin(),
                                   attr.strings().end());
    return {name, builder.getStrArrayAttr(strings)};
  }
  case AP::TENSOR:
    return {name, readTensorData(attr.t(), tensorTypeOf(attr.t()))};
  default:
    fail("node '" + nodeName + "': attribute '" + attr.name() +
         "' holds a graph, sparse tensor or type; not supported");
  }
}

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

std::string GraphImporter::producerPrefix(llvm::StringRef valueName) const {
  auto it = producers.find(valueName);
  return it == producers.end() ? "" : "node '" + it->second + "': ";
}

/// A node's name, or `<OpType>_<index>` for the many exporters (and the text
/// format) that leave nodes unnamed: locations and errors need a name.
std::string getNodeName(const onnx::NodeProto &node, unsigned index) {
  return node.name().empty() ? node.op_type() + "_" + std::to_string(index)
                             : node.name();
}

Location GraphImporter::nodeLocation(const onnx::NodeProto &node,
                                     unsigned index) {
  return NameLoc::get(builder.getStringAttr(getNodeName(node, index)),
                      fileLoc);
}

Value GraphImporter::noValue() {
  if (!noneValue) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(builder.getInsertionBlock());
    noneValue = ONNXNoValueOp::create(builder, fileLoc);
  }
  return noneValue;
}

Value GraphImporter::lookup(const std::string &name, llvm::StringRef nodeName) {
  if (name.empty())
    return noValue();
  auto it = values.find(name);
  if (it == values.end())
    fail("node '" + nodeName + "' uses '" + name + "', which is not defined");
  return it->second;
}

/// ONNX writes a constant in several attribute forms; the op keeps one.
void GraphImporter::importConstantNode(const onnx::NodeProto &node,
                                       Location loc) {
  if (node.attribute_size() != 1 || node.output_size() != 1)
    fail("Constant node '" + node.name() + "' must have one attribute");
  const onnx::AttributeProto &attr = node.attribute(0);
  ElementsAttr value;
  const std::string &kind = attr.name();
  if (kind == "value") {
    value = readTensorData(attr.t(), tensorTypeOf(attr.t()));
  } else if (kind == "value_float") {
    value = DenseElementsAttr::get(
        RankedTensorType::get({}, builder.getF32Type()), attr.f());
  } else if (kind == "value_floats") {
    SmallVector<float> floats(attr.floats().begin(), attr.floats().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({int64_t(floats.size())}, builder.getF32Type()),
        llvm::ArrayRef(floats));
  } else if (kind == "value_int") {
    value = DenseElementsAttr::get(
        RankedTensorType::get({}, builder.getI64Type()), attr.i());
  } else if (kind == "value_ints") {
    SmallVector<int64_t> ints(attr.ints().begin(), attr.ints().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({int64_t(ints.size())}, builder.getI64Type()),
        llvm::ArrayRef(ints));
  } else if (kind == "value_string" || kind == "value_strings") {
    SmallVector<StringRef> strings;
    if (kind == "value_string")
      strings.push_back(attr.s());
    else
      strings.assign(attr.strings().begin(), attr.strings().end());
    auto shape = kind == "value_string"
                     ? SmallVector<int64_t>{}
                     : SmallVector<int64_t>{int64_t(strings.size())};
    value = DenseStringElementsAttr::get(
        RankedTensorType::get(shape, ONNXStringType::get(context)), strings);
  } else {
    fail("Constant node '" + node.name() + "': attribute '" + kind +
         "' is not supported");
  }
  auto op = ONNXConstantOp::create(builder, loc, value.getShapedType().clone(
                                                     value.getElementType()),
                                   value);
  values[node.output(0)] = op.getOutput();
}

/// Number of operands or results a dedicated op has: the ONNX formal
/// parameter count, or the node's own count when the last one is variadic.
unsigned formalCount(const std::vector<onnx::OpSchema::FormalParameter> &params,
                     int actual) {
  if (params.empty() ||
      params.back().GetOption() == onnx::OpSchema::Variadic)
    return actual;
  return std::max<unsigned>(params.size(), actual);
}

void GraphImporter::importNode(const onnx::NodeProto &node, unsigned index) {
  Location loc = nodeLocation(node, index);
  std::string nodeName = getNodeName(node, index);
  if (isDefaultDomain(node.domain()) && node.op_type() == "Constant")
    return importConstantNode(node, loc);

  // A dedicated op exists when the dialect has `onnx.<OpType>` and the
  // node's schema is the one the dialect models (the canonical opset's).
  const onnx::OpSchema *schema = nullptr;
  std::optional<RegisteredOperationName> dedicated;
  bool isMicrosoftGelu =
      node.domain() == "com.microsoft" && node.op_type() == "Gelu";
  if (isDefaultDomain(node.domain()) || isMicrosoftGelu) {
    dedicated = RegisteredOperationName::lookup("onnx." + node.op_type(),
                                                context);
    schema = onnx::OpSchemaRegistry::Schema(node.op_type(), modelOpset,
                                            node.domain());
    const onnx::OpSchema *canonical = onnx::OpSchemaRegistry::Schema(
        node.op_type(), kCanonicalOpset, node.domain());
    if (schema && canonical &&
        schema->SinceVersion() != canonical->SinceVersion())
      dedicated.reset();
    if (node.op_type() == "NoValue" || node.op_type() == "Node")
      dedicated.reset();
  }

  SmallVector<Value> operands;
  for (const std::string &input : node.input())
    operands.push_back(lookup(input, nodeName));
  SmallVector<Type> resultTypes;
  for (const std::string &output : node.output()) {
    if (output.empty()) {
      resultTypes.push_back(builder.getNoneType());
      continue;
    }
    auto it = inferredTypes.find(output);
    if (it == inferredTypes.end())
      fail("ONNX shape inference could not determine the type of '" + output +
           "' (output of node '" + nodeName + "', " + node.op_type() + ")");
    resultTypes.push_back(convertTensorType(*it->second, output));
  }

  SmallVector<NamedAttribute> attributes;
  for (const auto &attr : node.attribute())
    attributes.push_back(convertAttribute(attr, nodeName));

  if (dedicated && schema) {
    unsigned numOperands = formalCount(schema->inputs(), node.input_size());
    while (operands.size() < numOperands)
      operands.push_back(noValue());
    unsigned numResults = formalCount(schema->outputs(), node.output_size());
    resultTypes.resize(numResults, builder.getNoneType());
  }

  OperationState state(loc, dedicated ? dedicated->getStringRef()
                                      : ONNXNodeOp::getOperationName());
  if (!dedicated) {
    attributes.push_back(builder.getNamedAttr(
        "op_type", builder.getStringAttr(node.op_type())));
    if (!node.domain().empty())
      attributes.push_back(builder.getNamedAttr(
          "domain", builder.getStringAttr(node.domain())));
  }
  state.addOperands(operands);
  state.addTypes(resultTypes);
  state.addAttributes(attributes);
  Operation *op = builder.create(state);
  for (auto [name, result] : llvm::zip(node.output(), op->getResults()))
    if (!name.empty())
      values[name] = result;
}

OwningOpRef<ModuleOp> GraphImporter::import(const onnx::ModelProto &model,
                                            int64_t sourceOpset) {
  const onnx::GraphProto &graph = model.graph();
  modelOpset = defaultDomainOpset(model);
  for (const auto &info : graph.input())
    inferredTypes[info.name()] = &info.type();
  for (const auto &info : graph.value_info())
    inferredTypes[info.name()] = &info.type();
  for (const auto &info : graph.output())
    inferredTypes[info.name()] = &info.type();
  for (auto [index, node] : llvm::enumerate(graph.node()))
    for (const std::string &output : node.output())
      producers[output] = getNodeName(node, index);

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  SmallVector<NamedAttribute> moduleAttrs{
      builder.getNamedAttr("onnx.opset", builder.getI64IntegerAttr(modelOpset)),
      builder.getNamedAttr("onnx.source_opset",
                           builder.getI64IntegerAttr(sourceOpset)),
      builder.getNamedAttr("onnx.ir_version",
                           builder.getI64IntegerAttr(model.ir_version()))};
  if (!model.producer_name().empty())
    moduleAttrs.push_back(builder.getNamedAttr(
        "onnx.producer",
        builder.getStringAttr(model.producer_name() + " " +
                              model.producer_version())));
  for (NamedAttribute attr : moduleAttrs)
    (*module)->setAttr(attr.getName(), attr.getValue());

  // Arguments: the graph inputs, with the parameters detachParameters
  // appended after the model's own inputs.
  struct Argument {
    std::string name;
    Type type;
  };
  SmallVector<Argument> arguments;
  for (const auto &input : graph.input())
    arguments.push_back(
        {input.name(), convertTensorType(input.type(), input.name())});
  for (const auto &input : graph.input()) {
    const auto &tensorType = input.type().tensor_type();
    for (auto [i, dim] : llvm::enumerate(tensorType.shape().dim())) {
      if (dim.has_dim_value())
        continue;
      std::string dimName =
          dim.has_dim_param() ? " ('" + dim.dim_param() + "')" : "";
      fail("input '" + input.name() + "' dimension " + llvm::Twine(i) +
           dimName +
           " is dynamic; bind it with --dim NAME=VALUE (by its ONNX "
           "dim_param) or --batch=N");
    }
  }

  SmallVector<Type> resultTypes;
  for (const auto &output : graph.output()) {
    auto it = inferredTypes.find(output.name());
    resultTypes.push_back(convertTensorType(*it->second, output.name()));
  }
  SmallVector<Type> argumentTypes;
  for (const Argument &arg : arguments)
    argumentTypes.push_back(arg.type);

  builder.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(
      builder, fileLoc, "main",
      builder.getFunctionType(argumentTypes, resultTypes));
  for (auto [i, arg] : llvm::enumerate(arguments)) {
    func.setArgAttr(i, "onnx.name", builder.getStringAttr(arg.name));
    auto param = parameters.find(arg.name);
    if (param != parameters.end())
      func.setArgAttr(i, "vram.param", builder.getStringAttr(param->second));
  }
  for (auto [i, output] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, "onnx.name", builder.getStringAttr(output.name()));

  Block *body = func.addEntryBlock();
  builder.setInsertionPointToStart(body);
  for (auto [arg, value] : llvm::zip(arguments, body->getArguments()))
    values[arg.name] = value;
  for (const onnx::TensorProto &init : graph.initializer()) {
    RankedTensorType type = tensorTypeOf(init);
    auto op = ONNXConstantOp::create(
        builder, NameLoc::get(builder.getStringAttr(init.name()), fileLoc),
        type, readTensorData(init, type));
    values[init.name()] = op.getOutput();
  }
  for (auto [index, node] : llvm::enumerate(graph.node()))
    importNode(node, index);

  SmallVector<Value> results;
  for (const auto &output : graph.output())
    results.push_back(lookup(output.name(), "<graph outputs>"));
  func::ReturnOp::create(builder, fileLoc, results);
  return module;
}

} // namespace

bool isONNXFileName(llvm::StringRef path) {
  return path.ends_with(".onnx") || path.ends_with(".onnxtext");
}

OwningOpRef<ModuleOp> importONNX(llvm::StringRef bytes, bool isText,
                                 llvm::StringRef sourceName,
                                 MLIRContext *context,
                                 const ONNXImportOptions &options) {
  context->loadDialect<ONNXDialect, func::FuncDialect>();
  Location fileLoc = FileLineColLoc::get(context, sourceName, 0, 0);
  try {
    registerContribSchemas();
    onnx::ModelProto model = parseModel(bytes, isText);
    checkGraphOutputsDefined(model);
    llvm::StringSet<> initializerNames;
    for (const auto &init : model.graph().initializer())
      initializerNames.insert(init.name());
    bindDynamicDims(model, options, initializerNames);
    llvm::StringMap<std::string> parameters = detachParameters(model, options);
    onnx::checker::check_model(model);
    int64_t sourceOpset = defaultDomainOpset(model);
    if (sourceOpset > kCanonicalOpset)
      fail("model uses opset " + llvm::Twine(sourceOpset) +
           "; the ONNX library this tool is built with supports up to " +
           llvm::Twine(kCanonicalOpset));
    llvm::StringSet<> trainingBatchNorms = prepareLegacyBatchNorm(model);
    std::string conversionWarning;
    model = convertOpset(model, conversionWarning);
    if (!conversionWarning.empty())
      emitWarning(fileLoc) << conversionWarning;
    markTrainingBatchNorm(model, trainingBatchNorms);
    onnx::ShapeInferenceOptions inference(/*check_type=*/true,
                                          /*strict_mode=*/1,
                                          /*data_prop=*/true);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                       inference);
    OwningOpRef<ModuleOp> module =
        GraphImporter(context, sourceName, parameters).import(model, sourceOpset);
    if (failed(verify(*module)))
      return nullptr;
    return module;
  } catch (const onnx::checker::ValidationError &e) {
    emitError(fileLoc) << "invalid ONNX model: " << oneLine(e.what());
  } catch (const onnx::InferenceError &e) {
    emitError(fileLoc) << "ONNX shape inference failed: " << oneLine(e.what());
  } catch (const std::exception &e) {
    emitError(fileLoc) << oneLine(e.what());
  }
  return nullptr;
}

OwningOpRef<ModuleOp> importONNXFile(llvm::StringRef path,
                                     MLIRContext *context,
                                     const ONNXImportOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/false);
  if (!buffer) {
    emitError(FileLineColLoc::get(context, path, 0, 0))
        << "cannot open '" << path << "': " << buffer.getError().message();
    return nullptr;
  }
  return importONNX((*buffer)->getBuffer(), path.ends_with(".onnxtext"), path,
                    context, options);
}

} // namespace vram
