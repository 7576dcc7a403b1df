//===- ONNXImporter.cpp - ONNX models into the onnx dialect ---------------===//
//
// libonnx parses (binary protobuf, text format) and checks the files its
// version knows (IR <= 8, opset <= 17). Everything else is ours, so that
// files of any IR version and opset up to kNewestKnownOpset import: graph
// validation, the mapping of each (operator, version) onto the dialect's one
// form per operator, and shape inference, which the ops do themselves
// (ONNXInferShapesOpInterface) while shape computations fold to constants.
// ONNX reports errors by throwing; every exception is caught in importONNX
// and becomes one MLIR error, so callers never see one.
//
//===----------------------------------------------------------------------===//

#include "vram/Import/ONNXImporter.h"
#include "GenericNodeTypes.h"
#include "OperatorVersions.h"
#include "vram/Dialect/ONNX/ONNXOps.h"
#include "vram/Dialect/ONNX/Patterns.h"
#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Support/PackedElements.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "onnx/checker.h"
#include "onnx/defs/parser.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"

#include <exception>
#include <limits>
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
    onnx::Common::Status status;
    try {
      status = parser.Parse(model);
    } catch (const std::logic_error &e) {
      // The parser converts literals with std::stof/stoll, whose exceptions
      // name only the function (invalid_argument, out_of_range).
      fail("invalid ONNX text format: [ParseError at position " +
           parser.GetCurrentPos() +
           "] Error context: " + parser.GetErrorContext() +
           " A number literal is malformed or out of range (" + e.what() +
           " failed).");
    }
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
/// outputs, so shape inference propagates them. Returns the static batch
/// size --batch replaced, if it replaced one.
std::optional<int64_t> bindDynamicDims(onnx::ModelProto &model,
                                       const ONNXImportOptions &options,
                                       const llvm::StringSet<> &initializerNames) {
  std::optional<int64_t> staticBatch;
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
      // A static batch (torch exports batch 1 unless told otherwise) is
      // re-bound too; the importer rewrites the shape constants that carry it.
      if (dim->has_dim_value() && dim->dim_value() != *options.batchSize)
        staticBatch = dim->dim_value();
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
  return staticBatch;
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

/// Operands whose values shape inference reads (shapes, axes, pads, scales)
/// or that set the op's behaviour (Clip's bounds, Dropout's ratio): an
/// initializer there is never a weight, so it is imported as a constant
/// whatever its type.
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
  if (op == "Squeeze" || op == "Unsqueeze" || llvm::StringRef(op).starts_with("Reduce") ||
      op == "Split" || op == "TopK")
    return index == 1;
  // Clip's bounds (ReLU6) and Dropout's ratio and mode are settings of the
  // op, not weights.
  if (op == "Clip" || op == "Dropout")
    return index >= 1;
  // The *Like generators read only their input's shape and type (dynamo
  // exports draw stochastic-depth masks from a placeholder initializer).
  return op == "ConstantOfShape" || op == "Range" ||
         op == "RandomUniformLike" || op == "RandomNormalLike" ||
         op == "EyeLike";
}

/// Whether an initializer name is one an exporter made up for a constant of
/// the traced program (the dynamo exporter's `val_12`, TorchScript's
/// `onnx::Mul_34`), not a module's parameter (`h.0.ln_1.weight`,
/// `logit_scale`).
bool isExporterConstantName(llvm::StringRef name) {
  if (name.starts_with("onnx::") || name.starts_with("_tensor_constant"))
    return true;
  return name.consume_front("val_") && !name.empty() &&
         llvm::all_of(name, llvm::isDigit);
}

/// Whether an initializer is read as a constant: a small, inline integer
/// tensor, a scalar float the exporter lifted from the program (attention's
/// 1/sqrt(d), a mask's fill value: weights would make it trainable and
/// backward would keep what it multiplies), or one that feeds only shape
/// operands (Resize scales, ...). All others are parameters.
bool isInlineConstant(const onnx::TensorProto &tensor,
                      const ONNXImportOptions &options, bool feedsShapes) {
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return false;
  int64_t elements = 1;
  for (int64_t dim : tensor.dims())
    elements *= std::max<int64_t>(dim, 0);
  bool isIndex = tensor.data_type() == onnx::TensorProto::INT64 ||
                 tensor.data_type() == onnx::TensorProto::INT32;
  bool isLiftedScalar =
      elements == 1 && isExporterConstantName(tensor.name());
  if (!isIndex && !feedsShapes && !isLiftedScalar)
    return false;
  return elements <= options.maxConstantElements;
}

/// The values some node reads at an operand that is not a shape operand.
llvm::StringSet<> getValuesReadAsData(const onnx::GraphProto &graph) {
  llvm::StringSet<> readAsData;
  for (const auto &node : graph.node())
    for (auto [index, input] : llvm::enumerate(node.input()))
      if (!isShapeOperand(node, index))
        readAsData.insert(input);
  return readAsData;
}

/// Gives the graph inputs that have values in `options` an initializer of
/// that value, when every node reads them where it needs a value to know
/// its result's shape (isShapeOperand): Resize's scales, ReduceSum's axes.
/// detachParameters then imports them as constants. They stay listed as
/// inputs, as initializers may be (IR < 4 requires it). Values for inputs
/// read as data are left alone: those stay arguments.
void bindInputValues(onnx::ModelProto &model,
                     const ONNXImportOptions &options) {
  if (options.inputValues.empty() && options.inputValuesDirectory.empty())
    return;
  onnx::GraphProto *graph = model.mutable_graph();
  llvm::StringSet<> readAsData = getValuesReadAsData(*graph);
  for (const auto &output : graph->output())
    readAsData.insert(output.name());
  llvm::StringSet<> initializers;
  for (const auto &init : graph->initializer())
    initializers.insert(init.name());
  unsigned dataInputIndex = 0;
  for (const auto &input : graph->input()) {
    if (initializers.contains(input.name()))
      continue;
    unsigned position = dataInputIndex++;
    std::string bytes;
    auto given = options.inputValues.find(input.name());
    if (given != options.inputValues.end()) {
      bytes = given->second;
    } else if (!options.inputValuesDirectory.empty()) {
      llvm::SmallString<256> path(options.inputValuesDirectory);
      llvm::sys::path::append(path, "input_" + llvm::Twine(position) + ".pb");
      if (auto buffer = llvm::MemoryBuffer::getFile(path))
        bytes = (*buffer)->getBuffer().str();
    }
    if (bytes.empty() || readAsData.contains(input.name()))
      continue;
    onnx::TensorProto tensor;
    if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
        !tensor.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
      fail("the value given for input '" + input.name() +
           "' is not a valid TensorProto");
    const auto &declared = input.type().tensor_type();
    bool sameShape = !declared.has_shape() ||
                     declared.shape().dim_size() == tensor.dims_size();
    for (int i = 0; sameShape && declared.has_shape() && i < tensor.dims_size();
         ++i)
      sameShape = !declared.shape().dim(i).has_dim_value() ||
                  declared.shape().dim(i).dim_value() == tensor.dims(i);
    if (tensor.data_type() != declared.elem_type() || !sameShape)
      fail("the value given for input '" + input.name() +
           "' does not have the input's type");
    tensor.set_name(input.name());
    *graph->add_initializer() = std::move(tensor);
  }
}

/// Turns every parameter initializer into a typed graph input, so neither
/// the checker nor shape inference looks at its data, which may live in an
/// external file that is absent. Returns what kind of parameter each is.
llvm::StringMap<ParamKind> detachParameters(onnx::ModelProto &model,
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
  llvm::StringSet<> readAsData = getValuesReadAsData(*graph);

  llvm::StringMap<ParamKind> parameters;
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
    // Only floats read as data are weights; an initializer too large to
    // inline that feeds only shape operands is state.
    bool trainable = isFloat && !statistics.contains(init.name()) &&
                     readAsData.contains(init.name());
    parameters[init.name()] =
        trainable ? ParamKind::Trainable : ParamKind::State;
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

/// Node names for messages: the name, or `<OpType>_<index>` for the many
/// exporters (and the text format) that leave nodes unnamed.
std::string getNodeName(const onnx::NodeProto &node, unsigned index) {
  return node.name().empty() ? node.op_type() + "_" + std::to_string(index)
                             : node.name();
}

/// What libonnx 1.12's checker would say for files it cannot check (IR 9+,
/// opset 18+): every value defined once, every use after its definition.
void validateGraph(const onnx::GraphProto &graph) {
  llvm::StringSet<> graphInputs;
  for (const auto &input : graph.input())
    if (!graphInputs.insert(input.name()).second)
      fail("invalid ONNX model: graph input '" + input.name() +
           "' is listed twice");
  llvm::StringSet<> defined = graphInputs;
  for (const auto &init : graph.initializer())
    defined.insert(init.name()); // IR < 4 lists initializers as inputs too.
  llvm::StringMap<unsigned> producerIndex;
  for (auto [index, node] : llvm::enumerate(graph.node()))
    for (const std::string &output : node.output())
      if (!output.empty() && !producerIndex.try_emplace(output, index).second)
        fail("invalid ONNX model: value '" + output +
             "' is produced by two nodes ('" +
             getNodeName(graph.node(producerIndex[output]),
                         producerIndex[output]) +
             "' and '" + getNodeName(node, index) + "')");
  for (auto [index, node] : llvm::enumerate(graph.node())) {
    for (const std::string &input : node.input()) {
      if (input.empty() || defined.contains(input))
        continue;
      auto producer = producerIndex.find(input);
      if (producer == producerIndex.end())
        fail("invalid ONNX model: node '" + getNodeName(node, index) +
             "' uses '" + input + "', which no input, initializer or node "
             "defines");
      fail("invalid ONNX model: nodes are not in topological order: node '" +
           getNodeName(node, index) + "' uses '" + input + "' before node '" +
           getNodeName(graph.node(producer->second), producer->second) +
           "' produces it");
    }
    for (const std::string &output : node.output()) {
      if (output.empty())
        continue;
      if (graphInputs.contains(output))
        fail("invalid ONNX model: node '" + getNodeName(node, index) +
             "' writes graph input '" + output + "'");
      defined.insert(output);
    }
    for (const auto &attr : node.attribute())
      if (attr.has_g() || attr.graphs_size() > 0)
        fail("node '" + getNodeName(node, index) + "' (" + node.op_type() +
             ") has a subgraph attribute '" + attr.name() +
             "'; control flow (If, Loop, Scan) is not supported");
  }
}

/// Fields that libonnx 1.12's schema does not know (later IR versions) are
/// skipped by the parser. Metadata (`metadata_props` of nodes, graphs and
/// values, IR 10) changes nothing; anything else might (a node's `overload`
/// selects a local function), so the first such place gets a warning.
void warnAboutUnknownFields(const onnx::ModelProto &model, Location loc) {
  // Field numbers of IR-10 `metadata_props`: NodeProto 9, GraphProto 16,
  // ValueInfoProto 4.
  auto firstUnknownField = [](const google::protobuf::Message &message,
                              int ignoredField) -> std::optional<int> {
    const auto &fields = message.GetReflection()->GetUnknownFields(message);
    for (int i = 0; i < fields.field_count(); ++i)
      if (fields.field(i).number() != ignoredField)
        return fields.field(i).number();
    return std::nullopt;
  };
  std::string where;
  std::optional<int> field = firstUnknownField(model, -1);
  if (field)
    where = "the model";
  else if ((field = firstUnknownField(model.graph(), 16)))
    where = "the graph";
  for (const auto &values : {model.graph().input(), model.graph().output(),
                             model.graph().value_info()})
    for (const auto &value : values)
      if (where.empty() && (field = firstUnknownField(value, 4)))
        where = "value '" + value.name() + "'";
  for (auto [index, node] : llvm::enumerate(model.graph().node())) {
    if (!where.empty())
      break;
    if ((field = firstUnknownField(node, 9))) {
      where = "node '" + getNodeName(node, index) + "'";
      continue;
    }
    for (const auto &attr : node.attribute())
      if (where.empty() && (field = firstUnknownField(attr, -1)))
        where = "attribute '" + attr.name() + "' of node '" +
                getNodeName(node, index) + "'";
  }
  if (!where.empty())
    emitWarning(loc) << where << " (IR version " << model.ir_version()
                     << ") has field " << *field
                     << ", which ONNX IR 8 does not define; it was skipped";
}

//===----------------------------------------------------------------------===//
// Types and tensor data
//===----------------------------------------------------------------------===//

/// A node on its way to an op: its operands, attributes and output names
/// after the mapping of its operator version onto the dialect's form.
struct NodeContext {
  Location loc = UnknownLoc();
  std::string name;
  std::string opType;
  /// The operator's since-version in this model (0 for generic nodes).
  int64_t version = 0;
  SmallVector<Value> operands;
  SmallVector<NamedAttribute> attributes;
  SmallVector<std::string> outputs;
};

/// --batch on an export whose batch is static: the size in the file and the
/// one asked for.
struct BatchRebinding {
  int64_t exported, requested;
};

class GraphImporter {
public:
  GraphImporter(MLIRContext *context, llvm::StringRef sourceName,
                const llvm::StringMap<ParamKind> &parameters,
                std::optional<BatchRebinding> rebinding)
      : context(context), builder(context), parameters(parameters),
        rebinding(rebinding),
        fileLoc(FileLineColLoc::get(context, sourceName, 0, 0)) {}

  OwningOpRef<ModuleOp> import(const onnx::ModelProto &model);

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
  ElementsAttr rebindSplatBatch(ElementsAttr value);
  void normalizeToCanonical(NodeContext &node);
  void normalizeResize(NodeContext &node);
  void rebindReshapeBatch(NodeContext &node);
  std::string rebindingAdvice() const;
  void checkOutputsFollowBatch(const onnx::GraphProto &graph,
                               ValueRange results);
  bool importLegacySoftmax(NodeContext &node);
  void attributeToInput(NodeContext &node, llvm::StringRef name,
                        unsigned operand);
  template <typename OpT>
  Value createInferred(Location loc, ValueRange operands,
                       std::optional<NamedAttribute> attribute);
  void inferTypes(Operation *op);
  void refineWithDeclaredType(Value result, llvm::StringRef name,
                              const NodeContext &node);
  SmallVector<Type> inferGenericTypes(const NodeContext &node,
                                      const onnx::NodeProto &proto);
  std::optional<SmallVector<Type>>
  inferWithLibONNX(const NodeContext &node, const onnx::NodeProto &proto);
  Value constantInts(ArrayRef<int64_t> values, Location loc);
  Value constantScalar(Type elementType, double value, Location loc);
  SmallVector<int64_t> requireConstantInts(Value value, const NodeContext &node,
                                           llvm::StringRef what);
  Value lookup(const std::string &name, llvm::StringRef nodeName);
  Value noValue();
  Location nodeLocation(const onnx::NodeProto &node, unsigned index);
  /// "node 'conv1': " for a value a node produces, else "".
  std::string producerPrefix(llvm::StringRef valueName) const;

  MLIRContext *context;
  OpBuilder builder;
  /// Graph inputs that were parameter initializers: trainable or state.
  const llvm::StringMap<ParamKind> &parameters;
  std::optional<BatchRebinding> rebinding;
  Location fileLoc;
  llvm::StringMap<Value> values;
  /// Types the file declares (value_info, graph outputs): they fill in what
  /// the ops' inference leaves open, and type operators the dialect lacks.
  llvm::StringMap<const onnx::TypeProto *> declaredTypes;
  llvm::StringMap<std::string> producers;
  /// Values some node or graph output reads.
  llvm::StringSet<> usedValues;
  llvm::StringMap<int64_t> opsetImports;
  Value noneValue;
  int64_t modelOpset = 0;
};

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
  value = rebindSplatBatch(value);
  auto op = ONNXConstantOp::create(builder, loc, value.getShapedType().clone(
                                                     value.getElementType()),
                                   value);
  values[node.output(0)] = op.getOutput();
}

/// A splat constant whose leading size is the exported batch (BERT's
/// token_type_ids, zeros of [batch, seq], traced as a constant) carries the
/// batch: it gets the requested size. Batch-1 exports need nothing: their
/// constants broadcast. Non-splat data is left alone: its rows may differ.
ElementsAttr GraphImporter::rebindSplatBatch(ElementsAttr value) {
  auto dense = dyn_cast<DenseElementsAttr>(value);
  auto type = dyn_cast<RankedTensorType>(value.getShapedType());
  if (!rebinding || rebinding->exported <= 1 || !dense || !dense.isSplat() ||
      !type || type.getRank() < 2 || type.getDimSize(0) != rebinding->exported)
    return value;
  SmallVector<int64_t> shape(type.getShape());
  shape.front() = rebinding->requested;
  return DenseElementsAttr::get(type.clone(shape),
                                dense.getSplatValue<Attribute>());
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

/// An error already reported as a diagnostic (by an op's shape inference).
struct ReportedError : std::runtime_error {
  ReportedError() : std::runtime_error("") {}
};

/// Placeholder type of a result before its op infers the real one.
Type placeholderType(MLIRContext *context) {
  return UnrankedTensorType::get(Float32Type::get(context));
}

Value GraphImporter::constantInts(ArrayRef<int64_t> values, Location loc) {
  return ONNXConstantOp::create(builder, loc, values);
}

Value GraphImporter::constantScalar(Type elementType, double value,
                                    Location loc) {
  auto type = RankedTensorType::get({}, elementType);
  Attribute attr =
      isa<FloatType>(elementType)
          ? Attribute(DenseElementsAttr::get(
                type, builder.getFloatAttr(elementType, value)))
          : Attribute(DenseElementsAttr::get(
                type, builder.getIntegerAttr(elementType, int64_t(value))));
  return ONNXConstantOp::create(builder, loc, type, cast<ElementsAttr>(attr));
}

SmallVector<int64_t> GraphImporter::requireConstantInts(Value value,
                                                        const NodeContext &node,
                                                        llvm::StringRef what) {
  std::optional<SmallVector<int64_t>> values = getConstantInts(value);
  if (!values)
    fail("node '" + node.name + "' (" + node.opType + "-" +
         llvm::Twine(node.version) + "): " + what +
         " must be a constant (it is computed at run time); this tool needs "
         "it to know the result's shape");
  return *values;
}

std::optional<Attribute> takeAttribute(SmallVectorImpl<NamedAttribute> &attrs,
                                       llvm::StringRef name) {
  for (auto *it = attrs.begin(); it != attrs.end(); ++it)
    if (it->getName() == name) {
      Attribute value = it->getValue();
      attrs.erase(it);
      return value;
    }
  return std::nullopt;
}

SmallVector<int64_t> intsOf(Attribute attr) {
  SmallVector<int64_t> values;
  for (Attribute a : cast<ArrayAttr>(attr))
    values.push_back(cast<IntegerAttr>(a).getInt());
  return values;
}

[[noreturn]] void failUnmodelled(const NodeContext &node,
                                 const llvm::Twine &what) {
  fail("node '" + node.name + "': " + node.opType + "-" +
       llvm::Twine(node.version) + " " + what + " is not modelled");
}

/// Moves an ONNX attribute that later versions made an input into that
/// input's position (`operand`), as an int64 constant.
void GraphImporter::attributeToInput(NodeContext &node, llvm::StringRef name,
                                     unsigned operand) {
  std::optional<Attribute> attr = takeAttribute(node.attributes, name);
  if (node.operands.size() <= operand)
    node.operands.resize(operand + 1, noValue());
  if (attr)
    node.operands[operand] = constantInts(intsOf(*attr), node.loc);
}

/// Maps the node's version onto the dialect's form of the operator: the
/// signature of the newest version up to opset 17 (the dialect's reference),
/// with newer versions' additions folded in or refused by name.
void GraphImporter::normalizeToCanonical(NodeContext &node) {
  llvm::StringRef op = node.opType;
  int64_t version = node.version;
  auto inputType = [&](unsigned i) {
    return i < node.operands.size()
               ? dyn_cast<RankedTensorType>(node.operands[i].getType())
               : RankedTensorType();
  };
  if ((op == "Add" || op == "Sub" || op == "Mul" || op == "Div" ||
       op == "Gemm" || op == "Pow") &&
      version < 7) {
    if (std::optional<Attribute> b = takeAttribute(node.attributes, "broadcast"))
      if (cast<IntegerAttr>(*b).getInt() != 0)
        failUnmodelled(node, "legacy broadcasting (broadcast = 1)");
  }
  if (op == "BatchNormalization" && version < 14) {
    takeAttribute(node.attributes, "is_test");
    takeAttribute(node.attributes, "consumed_inputs");
    if (std::optional<Attribute> spatial =
            takeAttribute(node.attributes, "spatial"))
      if (cast<IntegerAttr>(*spatial).getInt() != 1)
        failUnmodelled(node, "spatial = 0");
    // Before 14, training mode is having more outputs; saved_mean/saved_var
    // (outputs 3, 4) no longer exist and exporters leave them unused.
    for (unsigned i = 3; i < node.outputs.size(); ++i)
      if (!node.outputs[i].empty() && usedValues.contains(node.outputs[i]))
        failUnmodelled(node, "output '" + node.outputs[i] +
                                 "' (saved_mean / saved_var)");
    if (node.outputs.size() > 3)
      node.outputs.resize(3);
    if (node.outputs.size() > 1)
      node.attributes.push_back(
          builder.getNamedAttr("training_mode", builder.getI64IntegerAttr(1)));
  }
  if (op == "Clip" && version < 11) {
    Type elementType = cast<TensorType>(node.operands[0].getType())
                           .getElementType();
    node.operands.resize(3, noValue());
    for (auto [name, index] : {std::pair<llvm::StringRef, unsigned>{"min", 1},
                               {"max", 2}})
      if (std::optional<Attribute> bound = takeAttribute(node.attributes, name))
        node.operands[index] = constantScalar(
            elementType, cast<FloatAttr>(*bound).getValueAsDouble(), node.loc);
  }
  if (op == "Dropout" && version < 12) {
    takeAttribute(node.attributes, "is_test");
    std::optional<Attribute> ratio = takeAttribute(node.attributes, "ratio");
    node.operands.resize(2, noValue());
    if (ratio)
      node.operands[1] = constantScalar(
          builder.getF32Type(), cast<FloatAttr>(*ratio).getValueAsDouble(),
          node.loc);
  }
  if ((op == "Squeeze" || op == "Unsqueeze" || op == "Split" ||
       op == "ReduceSum") &&
      version < 13)
    attributeToInput(node, op == "Split" ? "split" : "axes", 1);
  if (op == "Split" && version >= 18) {
    if (std::optional<Attribute> parts =
            takeAttribute(node.attributes, "num_outputs")) {
      int64_t count = cast<IntegerAttr>(*parts).getInt();
      auto type = inputType(0);
      if (count != static_cast<int64_t>(node.outputs.size()))
        fail("node '" + node.name + "': num_outputs is " + llvm::Twine(count) +
             " but the node has " + llvm::Twine(node.outputs.size()) +
             " outputs");
      int64_t axis = 0;
      for (NamedAttribute attr : node.attributes)
        if (attr.getName() == "axis")
          axis = cast<IntegerAttr>(attr.getValue()).getInt();
      if (!type || axis < -type.getRank() || axis >= type.getRank() ||
          ShapedType::isDynamic(type.getDimSize(axis < 0 ? axis + type.getRank()
                                                         : axis)))
        fail("node '" + node.name + "': Split-18 with num_outputs needs the "
             "input's static extent along the axis");
      // ONNX 18: parts of ceil(extent / n), the last one smaller.
      int64_t extent = type.getDimSize(axis < 0 ? axis + type.getRank() : axis);
      int64_t chunk = llvm::divideCeil(extent, count);
      SmallVector<int64_t> sizes;
      for (int64_t i = 0, left = extent; i < count; ++i, left -= chunk)
        sizes.push_back(std::clamp<int64_t>(left, 0, chunk));
      node.operands.resize(2, noValue());
      node.operands[1] = constantInts(sizes, node.loc);
    }
  }
  if (op == "Slice" && version < 10) {
    node.operands.resize(5, noValue());
    for (auto [name, index] : {std::pair<llvm::StringRef, unsigned>{"starts", 1},
                               {"ends", 2},
                               {"axes", 3}})
      if (std::optional<Attribute> attr = takeAttribute(node.attributes, name))
        node.operands[index] = constantInts(intsOf(*attr), node.loc);
  }
  if (op == "ReduceMean" && version >= 18) {
    std::optional<Attribute> noop =
        takeAttribute(node.attributes, "noop_with_empty_axes");
    bool noopWhenEmpty = noop && cast<IntegerAttr>(*noop).getInt() != 0;
    if (node.operands.size() > 1 && !isa<NoneType>(node.operands[1].getType())) {
      SmallVector<int64_t> axes =
          requireConstantInts(node.operands[1], node, "the axes input");
      if (!axes.empty())
        node.attributes.push_back(
            builder.getNamedAttr("axes", builder.getI64ArrayAttr(axes)));
      else if (noopWhenEmpty)
        failUnmodelled(node, "noop_with_empty_axes = 1 with empty axes");
    } else if (noopWhenEmpty) {
      failUnmodelled(node, "noop_with_empty_axes = 1 without axes");
    }
    node.operands.resize(1);
  }
  if (op == "Pad" && version < 11) {
    std::optional<Attribute> pads = takeAttribute(node.attributes, "pads");
    std::optional<Attribute> value = takeAttribute(node.attributes, "value");
    if (!pads)
      fail("node '" + node.name + "': Pad-" + llvm::Twine(version) +
           " needs a 'pads' attribute");
    Type elementType = cast<TensorType>(node.operands[0].getType())
                           .getElementType();
    node.operands.resize(3, noValue());
    node.operands[1] = constantInts(intsOf(*pads), node.loc);
    if (value)
      node.operands[2] = constantScalar(
          elementType, cast<FloatAttr>(*value).getValueAsDouble(), node.loc);
  }
  if (op == "Pad" && version >= 18 && node.operands.size() > 3) {
    if (!isa<NoneType>(node.operands[3].getType())) {
      auto type = inputType(0);
      SmallVector<int64_t> axes =
          requireConstantInts(node.operands[3], node, "the axes input");
      SmallVector<int64_t> pads =
          requireConstantInts(node.operands[1], node, "the pads input");
      if (!type || pads.size() != 2 * axes.size())
        fail("node '" + node.name + "': Pad has " + llvm::Twine(pads.size()) +
             " pads for " + llvm::Twine(axes.size()) + " axes");
      int64_t rank = type.getRank();
      SmallVector<int64_t> full(2 * rank, 0);
      for (auto [i, axis] : llvm::enumerate(axes)) {
        if (axis < -rank || axis >= rank)
          fail("node '" + node.name + "': Pad axis " + llvm::Twine(axis) +
               " is out of range for rank " + llvm::Twine(rank));
        int64_t d = axis < 0 ? axis + rank : axis;
        full[d] = pads[i];
        full[d + rank] = pads[i + axes.size()];
      }
      node.operands[1] = constantInts(full, node.loc);
    }
    node.operands.resize(3);
  }
  if (op == "Resize")
    normalizeResize(node);
  if (op == "Reshape" && rebinding)
    rebindReshapeBatch(node);
}

/// A Reshape target that names the exported batch as its leading size, on
/// data whose leading dim is the re-bound batch ([1, -1], [1, 512, 12, 64]),
/// carries the batch: it gets the requested size.
void GraphImporter::rebindReshapeBatch(NodeContext &node) {
  auto data = dyn_cast<RankedTensorType>(node.operands[0].getType());
  if (!data || data.getRank() == 0 ||
      data.getDimSize(0) != rebinding->requested)
    return;
  std::optional<SmallVector<int64_t>> shape = getConstantInts(node.operands[1]);
  if (!shape || shape->empty() || shape->front() != rebinding->exported)
    return;
  shape->front() = rebinding->requested;
  node.operands[1] = constantInts(*shape, node.loc);
}

std::string GraphImporter::rebindingAdvice() const {
  return ("--batch re-binds the exported batch " +
          llvm::Twine(rebinding->exported) + " to " +
          llvm::Twine(rebinding->requested) +
          "; a shape here (this node's, or a constant's it reads) carries the "
          "exported batch where the importer does not recognise it (it "
          "rewrites Reshape targets that lead with the batch, and splat "
          "constants): export with a dynamic batch (torch.onnx.export's "
          "dynamic_shapes or dynamic_axes) to use --batch")
      .str();
}

/// Under --batch re-binding, an output the file declares with the exported
/// batch in front must come out with the requested one: one that kept the
/// exported size went through a node that baked the batch in (e.g. a Gather
/// of constant flat indices into a flattened tensor, as dynamo writes an
/// adaptive pooling), and would silently compute a batch of the wrong size.
void GraphImporter::checkOutputsFollowBatch(const onnx::GraphProto &graph,
                                            ValueRange results) {
  for (auto [output, result] : llvm::zip(graph.output(), results)) {
    const auto &dims = output.type().tensor_type().shape().dim();
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (dims.empty() || !dims[0].has_dim_value() ||
        dims[0].dim_value() != rebinding->exported || !type ||
        type.getRank() == 0 || type.getDimSize(0) == rebinding->requested)
      continue;
    fail(producerPrefix(output.name()) + "output '" + output.name() +
         "' has leading dimension " + llvm::Twine(type.getDimSize(0)) +
         ", not the batch " + llvm::Twine(rebinding->requested) + ": " +
         rebindingAdvice());
  }
}

/// Resize: version 10 has (X, scales) and asymmetric coordinates; 18 adds
/// antialias, axes and keep_aspect_ratio_policy, folded into full-rank
/// scales/sizes here.
void GraphImporter::normalizeResize(NodeContext &node) {
  if (node.version < 11) {
    // Resize-10 is Resize-11 with roi absent and asymmetric coordinates.
    // Nearest rounds down when upsampling and up when downsampling (ONNX's
    // Resize-10 test data, as onnxruntime's "simple" mode): one mode for
    // every axis, so scales on both sides of 1 are not modelled.
    Value scales = node.operands.size() > 1 ? node.operands[1] : noValue();
    node.operands = {node.operands[0], noValue(), scales, noValue()};
    node.attributes.push_back(builder.getNamedAttr(
        "coordinate_transformation_mode", builder.getStringAttr("asymmetric")));
    DenseFPElementsAttr scalesAttr;
    bool down = false, up = false;
    if (matchPattern(scales, m_Constant(&scalesAttr)))
      for (const APFloat &scale : scalesAttr.getValues<APFloat>()) {
        down |= scale.convertToDouble() < 1;
        up |= scale.convertToDouble() > 1;
      }
    bool nearest = llvm::none_of(node.attributes, [](NamedAttribute attr) {
      return attr.getName() == "mode" &&
             cast<StringAttr>(attr.getValue()).getValue() != "nearest";
    });
    if (nearest && down && up)
      failUnmodelled(node, "nearest with scales both below and above 1");
    node.attributes.push_back(builder.getNamedAttr(
        "nearest_mode", builder.getStringAttr(down ? "ceil" : "floor")));
    return;
  }
  if (node.version < 18)
    return;
  std::optional<Attribute> axesAttr = takeAttribute(node.attributes, "axes");
  std::optional<Attribute> policyAttr =
      takeAttribute(node.attributes, "keep_aspect_ratio_policy");
  llvm::StringRef policy =
      policyAttr ? cast<StringAttr>(*policyAttr).getValue() : "stretch";
  if (!axesAttr && policy == "stretch")
    return;
  auto type = dyn_cast<RankedTensorType>(node.operands[0].getType());
  if (!type || !type.hasStaticShape())
    fail("node '" + node.name + "': Resize with axes or an aspect-ratio "
         "policy needs a static input shape");
  int64_t rank = type.getRank();
  SmallVector<int64_t> axes;
  if (axesAttr)
    for (int64_t axis : intsOf(*axesAttr)) {
      int64_t normalized = axis < 0 ? axis + rank : axis;
      if (normalized < 0 || normalized >= rank ||
          llvm::is_contained(axes, normalized))
        fail("node '" + node.name + "': Resize axis " + llvm::Twine(axis) +
             " is out of range for rank " + llvm::Twine(rank) + " or repeated");
      axes.push_back(normalized);
    }
  else
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  node.operands.resize(4, noValue());
  // roi lists starts then ends of the listed axes; the others span [0, 1].
  DenseFPElementsAttr roiAttr;
  if (axesAttr && matchPattern(node.operands[1], m_Constant(&roiAttr)) &&
      roiAttr.getNumElements() != 0) {
    SmallVector<float> given;
    for (const APFloat &value : roiAttr.getValues<APFloat>())
      given.push_back(static_cast<float>(value.convertToDouble()));
    if (given.size() != 2 * axes.size())
      fail("node '" + node.name + "': Resize has " + llvm::Twine(given.size()) +
           " roi values for " + llvm::Twine(axes.size()) + " axes");
    SmallVector<float> full(rank, 0.0f);
    full.append(rank, 1.0f);
    for (auto [i, axis] : llvm::enumerate(axes)) {
      full[axis] = given[i];
      full[rank + axis] = given[axes.size() + i];
    }
    auto roiType = RankedTensorType::get({2 * rank}, builder.getF32Type());
    node.operands[1] = ONNXConstantOp::create(
        builder, node.loc, roiType,
        DenseElementsAttr::get(roiType, llvm::ArrayRef<float>(full)));
  }
  Value sizes = node.operands[3];
  if (!isa<NoneType>(sizes.getType())) {
    SmallVector<int64_t> given =
        requireConstantInts(sizes, node, "the sizes input");
    if (given.size() != axes.size())
      fail("node '" + node.name + "': Resize has " +
           llvm::Twine(given.size()) + " sizes for " +
           llvm::Twine(axes.size()) + " axes");
    SmallVector<int64_t> full(type.getShape());
    if (policy == "stretch") {
      for (auto [i, axis] : llvm::enumerate(axes))
        full[axis] = given[i];
    } else {
      // One scale for every listed axis, the largest that keeps the output
      // within (not_larger) or the smallest that covers (not_smaller) sizes.
      double scale = policy == "not_larger" ? 1e300 : 0;
      for (auto [i, axis] : llvm::enumerate(axes)) {
        double s = double(given[i]) / type.getDimSize(axis);
        scale = policy == "not_larger" ? std::min(scale, s) : std::max(scale, s);
      }
      for (int64_t axis : axes)
        full[axis] = static_cast<int64_t>(
            std::round(scale * double(type.getDimSize(axis))));
    }
    node.operands[3] = constantInts(full, node.loc);
    return;
  }
  DenseFPElementsAttr scalesAttr;
  if (!matchPattern(node.operands[2], m_Constant(&scalesAttr)))
    fail("node '" + node.name +
         "': Resize with axes needs constant scales or sizes");
  SmallVector<float> full(rank, 1.0f);
  SmallVector<float> given(scalesAttr.getValues<float>());
  if (given.size() != axes.size())
    fail("node '" + node.name + "': Resize has " + llvm::Twine(given.size()) +
         " scales for " + llvm::Twine(axes.size()) + " axes");
  for (auto [i, axis] : llvm::enumerate(axes))
    full[axis] = given[i];
  auto scalesType = RankedTensorType::get({rank}, builder.getF32Type());
  node.operands[2] = ONNXConstantOp::create(
      builder, node.loc, scalesType,
      DenseElementsAttr::get(scalesType, llvm::ArrayRef<float>(full)));
}

/// Softmax and LogSoftmax before 13 normalise over all dims from `axis` on,
/// flattened; from 13 on, over `axis` alone. Both agree when `axis` is the
/// last dim; otherwise the old meaning is Flatten -> (Log)Softmax -> Reshape.
bool GraphImporter::importLegacySoftmax(NodeContext &node) {
  auto type = dyn_cast<RankedTensorType>(node.operands[0].getType());
  int64_t axis = 1;
  for (NamedAttribute attr : node.attributes)
    if (attr.getName() == "axis")
      axis = cast<IntegerAttr>(attr.getValue()).getInt();
  if (!type)
    fail("node '" + node.name + "': " + node.opType + "-" +
         llvm::Twine(node.version) + " needs an input of known rank");
  int64_t rank = type.getRank();
  if (axis < -rank || axis >= rank)
    fail("node '" + node.name + "': " + node.opType + " axis " +
         llvm::Twine(axis) + " is out of range for rank " + llvm::Twine(rank));
  if ((axis < 0 ? axis + rank : axis) == rank - 1)
    return false;
  Value flat = createInferred<ONNXFlattenOp>(
      node.loc, node.operands[0],
      builder.getNamedAttr("axis", builder.getI64IntegerAttr(axis)));
  NamedAttribute lastAxis =
      builder.getNamedAttr("axis", builder.getI64IntegerAttr(-1));
  Value softmax =
      node.opType == "LogSoftmax"
          ? createInferred<ONNXLogSoftmaxOp>(node.loc, flat, lastAxis)
          : createInferred<ONNXSoftmaxOp>(node.loc, flat, lastAxis);
  Value shape = constantInts(type.getShape(), node.loc);
  values[node.outputs[0]] = createInferred<ONNXReshapeOp>(
      node.loc, ValueRange{softmax, shape}, std::nullopt);
  return true;
}

template <typename OpT>
Value GraphImporter::createInferred(Location loc, ValueRange operands,
                                    std::optional<NamedAttribute> attribute) {
  OperationState state(loc, OpT::getOperationName());
  state.addOperands(operands);
  state.addTypes(placeholderType(context));
  if (attribute)
    state.addAttribute(attribute->getName(), attribute->getValue());
  Operation *op = builder.create(state);
  inferTypes(op);
  return op->getResult(0);
}

/// Where the ops' inference leaves a dimension open (it depends on a value
/// known at run time, e.g. a Reshape target that is a graph input), the type
/// the file declares for the value fills it in, as ONNX's inference merges
/// with value_info. A declared static size that contradicts an inferred one
/// is an error, except under --batch re-binding, where the declarations
/// still name the exported batch.
void GraphImporter::refineWithDeclaredType(Value result, llvm::StringRef name,
                                           const NodeContext &node) {
  auto declaredIt = declaredTypes.find(name);
  if (declaredIt == declaredTypes.end() ||
      !declaredIt->second->has_tensor_type() ||
      !declaredIt->second->tensor_type().has_shape())
    return;
  auto inferred = cast<TensorType>(result.getType());
  const auto &dims = declaredIt->second->tensor_type().shape().dim();
  auto ranked = dyn_cast<RankedTensorType>(inferred);
  if (ranked && ranked.getRank() != dims.size())
    fail("node '" + node.name + "': output '" + name + "' is declared with " +
         llvm::Twine(dims.size()) + " dimensions but infers to " +
         llvm::Twine(ranked.getRank()));
  SmallVector<int64_t> shape;
  for (auto [i, dim] : llvm::enumerate(dims)) {
    int64_t ours = ranked ? ranked.getDimSize(i) : ShapedType::kDynamic;
    if (!dim.has_dim_value() || dim.dim_value() < 0) {
      shape.push_back(ours);
      continue;
    }
    if (!ShapedType::isDynamic(ours) && ours != dim.dim_value() && !rebinding)
      fail("node '" + node.name + "': output '" + name +
           "' is declared with dimension " + llvm::Twine(i) + " = " +
           llvm::Twine(dim.dim_value()) + " but infers to " +
           llvm::Twine(ours));
    shape.push_back(ShapedType::isDynamic(ours) ? dim.dim_value() : ours);
  }
  result.setType(RankedTensorType::get(shape, inferred.getElementType()));
}

void GraphImporter::inferTypes(Operation *op) {
  auto inference = cast<ONNXInferShapesOpInterface>(op);
  SmallVector<Type> types;
  // Under --batch re-binding, a shape that does not work out is most likely
  // one the exporter traced with the batch in it: say so with the error.
  std::optional<ScopedDiagnosticHandler> hint;
  if (rebinding)
    hint.emplace(context, [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error)
        diag.attachNote() << rebindingAdvice();
      return failure();
    });
  if (failed(inference.inferResultTypes(types)))
    throw ReportedError();
  for (auto [result, type] : llvm::zip(op->getResults(), types))
    result.setType(type);
}

/// Result types of an operator the dialect does not model: shape rules for
/// the common ones, else what the file declares, else libonnx's inference
/// for the opsets it knows.
SmallVector<Type> GraphImporter::inferGenericTypes(const NodeContext &node,
                                                   const onnx::NodeProto &proto) {
  SmallVector<Type> types;
  std::optional<SmallVector<Type>> ruled = inferGenericNodeTypes(
      proto.op_type(), isDefaultDomain(proto.domain()), node.operands,
      node.attributes, node.outputs.size());
  if (ruled)
    return *ruled;
  if (std::optional<SmallVector<Type>> inferred = inferWithLibONNX(node, proto))
    return *inferred;
  bool complete = true;
  for (const std::string &output : node.outputs) {
    if (output.empty()) {
      types.push_back(builder.getNoneType());
      continue;
    }
    auto it = declaredTypes.find(output);
    if (it == declaredTypes.end() ||
        !it->second->tensor_type().has_shape()) {
      complete = false;
      break;
    }
    types.push_back(convertTensorType(*it->second, output));
  }
  if (complete)
    return types;
  fail("node '" + node.name + "': cannot infer the result types of " +
       proto.op_type() +
       (proto.domain().empty() ? "" : " (domain " + proto.domain() + ")") +
       " at opset " + llvm::Twine(modelOpset) +
       ": the operator is not supported and the file does not declare its "
       "outputs' shapes");
}

/// libonnx 1.12's shape inference for one node, on the types the importer
/// computed for its inputs (constants included, for data-dependent shapes).
std::optional<SmallVector<Type>>
GraphImporter::inferWithLibONNX(const NodeContext &node,
                                const onnx::NodeProto &proto) {
  if (modelOpset > kCanonicalOpset)
    return std::nullopt;
  onnx::ModelProto model;
  model.set_ir_version(8);
  for (const auto &opset : opsetImports) {
    auto *entry = model.add_opset_import();
    entry->set_domain(opset.first().str());
    entry->set_version(opset.second);
  }
  onnx::GraphProto *graph = model.mutable_graph();
  *graph->add_node() = proto;
  for (auto [input, value] : llvm::zip(proto.input(), node.operands)) {
    if (input.empty())
      continue;
    // Constant inputs travel with their values: inference reads them (TopK's
    // k, a Tile's repeats).
    DenseIntElementsAttr constant;
    if (matchPattern(value, m_Constant(&constant)) &&
        constant.getElementType().isInteger(64) &&
        constant.getNumElements() <= 1024) {
      onnx::TensorProto *init = graph->add_initializer();
      init->set_name(input);
      init->set_data_type(onnx::TensorProto::INT64);
      for (int64_t dim : constant.getType().getShape())
        init->add_dims(dim);
      for (const APInt &v : constant.getValues<APInt>())
        init->add_int64_data(v.getSExtValue());
    }
    auto type = dyn_cast<RankedTensorType>(value.getType());
    std::optional<int64_t> code =
        type ? getONNXDataType(type.getElementType()) : std::nullopt;
    if (!code)
      return std::nullopt;
    onnx::ValueInfoProto *info = graph->add_input();
    info->set_name(input);
    auto *tensorType = info->mutable_type()->mutable_tensor_type();
    tensorType->set_elem_type(*code);
    auto *shape = tensorType->mutable_shape();
    for (int64_t dim : type.getShape())
      if (!ShapedType::isDynamic(dim))
        shape->add_dim()->set_dim_value(dim);
      else
        shape->add_dim();
  }
  try {
    onnx::ShapeInferenceOptions options(/*check_type=*/false,
                                        /*strict_mode=*/0,
                                        /*data_prop=*/true);
    onnx::shape_inference::InferShapes(
        model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception &) {
    return std::nullopt;
  }
  llvm::StringMap<const onnx::TypeProto *> inferred;
  for (const auto &info : graph->value_info())
    inferred[info.name()] = &info.type();
  SmallVector<Type> types;
  for (const std::string &output : node.outputs) {
    if (output.empty()) {
      types.push_back(builder.getNoneType());
      continue;
    }
    auto it = inferred.find(output);
    if (it == inferred.end() || !it->second->has_tensor_type() ||
        !it->second->tensor_type().elem_type())
      return std::nullopt;
    types.push_back(convertTensorType(*it->second, output));
  }
  return types;
}

/// The ONNX type an attribute of a modelled operator must have: the opset-17
/// schema's, and for the attributes of other versions that the mapping
/// reads, their specification's (an attribute never changes type across
/// versions). nullopt for an attribute no version the importer maps has.
std::optional<onnx::AttributeProto::AttributeType>
getExpectedAttributeType(const onnx::OpSchema *canonical,
                         llvm::StringRef name) {
  using AP = onnx::AttributeProto;
  if (canonical) {
    auto it = canonical->attributes().find(name.str());
    if (it != canonical->attributes().end())
      return it->second.type;
  }
  static const std::pair<llvm::StringRef, AP::AttributeType> otherVersions[] = {
      {"broadcast", AP::INT},
      {"is_test", AP::INT},
      {"consumed_inputs", AP::INTS},
      {"spatial", AP::INT},
      {"min", AP::FLOAT},
      {"max", AP::FLOAT},
      {"ratio", AP::FLOAT},
      {"saturate", AP::INT},
      {"split", AP::INTS},
      {"axes", AP::INTS},
      {"num_outputs", AP::INT},
      {"starts", AP::INTS},
      {"ends", AP::INTS},
      {"noop_with_empty_axes", AP::INT},
      {"pads", AP::INTS},
      {"value", AP::FLOAT},
      {"mode", AP::STRING},
      {"antialias", AP::INT},
      {"keep_aspect_ratio_policy", AP::STRING},
      {"dilations", AP::INTS},
      {"approximate", AP::STRING},
      {"alpha", AP::FLOAT},
      {"round_mode", AP::STRING}};
  for (auto [attrName, type] : otherVersions)
    if (attrName == name)
      return type;
  return std::nullopt;
}

/// Checks every attribute of a node of a modelled operator against the type
/// its signature gives it, before the mapping reads any.
void checkAttributeTypes(const onnx::NodeProto &proto,
                         const NodeContext &node,
                         const onnx::OpSchema *canonical) {
  for (const auto &attr : proto.attribute()) {
    std::optional<onnx::AttributeProto::AttributeType> expected =
        getExpectedAttributeType(canonical, attr.name());
    if (!expected)
      fail("node '" + node.name + "': " + node.opType + "-" +
           llvm::Twine(node.version) + " has an attribute '" + attr.name() +
           "' that is not modelled");
    if (attr.type() != *expected)
      fail("node '" + node.name + "': attribute '" + attr.name() + "' of " +
           node.opType + "-" + llvm::Twine(node.version) + " must be " +
           onnx::AttributeProto::AttributeType_Name(*expected) + ", not " +
           onnx::AttributeProto::AttributeType_Name(attr.type()));
  }
}

void GraphImporter::importNode(const onnx::NodeProto &proto, unsigned index) {
  NodeContext node;
  node.loc = nodeLocation(proto, index);
  node.name = getNodeName(proto, index);
  node.opType = proto.op_type();
  if (isDefaultDomain(proto.domain()) && proto.op_type() == "Constant")
    return importConstantNode(proto, node.loc);

  // A dedicated op exists for the operators the dialect models, at every
  // version of them the importer maps (OperatorVersions.cpp).
  bool isMicrosoftGelu =
      proto.domain() == "com.microsoft" && proto.op_type() == "Gelu";
  std::optional<RegisteredOperationName> dedicated;
  if (isDefaultDomain(proto.domain())) {
    std::optional<int64_t> version =
        getModelledOperatorVersion(proto.op_type(), modelOpset);
    if (version && *version == 0)
      fail("node '" + node.name + "': operator " + proto.op_type() +
           " does not exist at opset " + llvm::Twine(modelOpset));
    if (version) {
      node.version = *version;
      dedicated = RegisteredOperationName::lookup("onnx." + proto.op_type(),
                                                  context);
    }
  } else if (isMicrosoftGelu) {
    node.version = 1;
    dedicated = RegisteredOperationName::lookup("onnx.Gelu", context);
  }

  const onnx::OpSchema *canonical =
      dedicated ? onnx::OpSchemaRegistry::Schema(
                      node.opType, kCanonicalOpset,
                      isMicrosoftGelu ? "com.microsoft" : "")
                : nullptr;
  if (dedicated)
    checkAttributeTypes(proto, node, canonical);
  for (const std::string &input : proto.input())
    node.operands.push_back(lookup(input, node.name));
  for (const std::string &output : proto.output())
    node.outputs.push_back(output);
  for (const auto &attr : proto.attribute())
    node.attributes.push_back(convertAttribute(attr, node.name));

  if (dedicated) {
    if (node.operands.empty() || isa<NoneType>(node.operands[0].getType()))
      fail("node '" + node.name + "': " + node.opType + "-" +
           llvm::Twine(node.version) + " needs its first input");
    if ((node.opType == "Softmax" || node.opType == "LogSoftmax") &&
        node.version < 13 && importLegacySoftmax(node))
      return;
    normalizeToCanonical(node);
    // Operands and results keep their ONNX positions: absent optional ones
    // are `none` up to the canonical (opset-17) signature's length.
    if (canonical) {
      unsigned numOperands =
          formalCount(canonical->inputs(), node.operands.size());
      while (node.operands.size() < numOperands)
        node.operands.push_back(noValue());
      unsigned numResults =
          formalCount(canonical->outputs(), node.outputs.size());
      node.outputs.resize(numResults);
      for (const auto &[name, attr] : canonical->attributes())
        if (attr.required &&
            llvm::none_of(node.attributes, [&](NamedAttribute a) {
              return a.getName() == name;
            }))
          fail("node '" + node.name + "': " + node.opType + "-" +
               llvm::Twine(node.version) + " needs the attribute '" + name +
               "'");
    }
    // Every attribute must be one the op defines: an attribute ONNX added in
    // a version the mapping does not know would otherwise be ignored.
    for (NamedAttribute attr : node.attributes)
      if (!llvm::is_contained(dedicated->getAttributeNames(), attr.getName()))
        fail("node '" + node.name + "': " + node.opType + "-" +
             llvm::Twine(node.version) + " has an attribute '" +
             attr.getName().getValue() + "' that is not modelled");
  }

  SmallVector<NamedAttribute> attributes = node.attributes;
  if (!dedicated) {
    attributes.push_back(builder.getNamedAttr(
        "op_type", builder.getStringAttr(proto.op_type())));
    if (!proto.domain().empty())
      attributes.push_back(builder.getNamedAttr(
          "domain", builder.getStringAttr(proto.domain())));
  }
  SmallVector<Type> resultTypes;
  if (dedicated)
    for (const std::string &output : node.outputs)
      resultTypes.push_back(output.empty() ? Type(builder.getNoneType())
                                           : placeholderType(context));
  else
    resultTypes = inferGenericTypes(node, proto);

  OperationState state(node.loc, dedicated ? dedicated->getStringRef()
                                           : ONNXNodeOp::getOperationName());
  state.addOperands(node.operands);
  state.addTypes(resultTypes);
  state.addAttributes(attributes);
  Operation *op = builder.create(state);
  if (dedicated) {
    inferTypes(op);
    for (auto [name, result] : llvm::zip(node.outputs, op->getResults())) {
      if (name.empty())
        continue;
      refineWithDeclaredType(result, name, node);
      checkByteSize(cast<TensorType>(result.getType()), name);
    }
  }
  SmallVector<Value> results(op->getResults());

  // Shape computations fold to constants, so that the ops they feed
  // (Reshape, Expand, ...) get static shapes.
  SmallVector<OpFoldResult> folded;
  if (op->getNumResults() > 0 && succeeded(op->fold(folded)) &&
      folded.size() == op->getNumResults() &&
      llvm::all_of(folded, [](OpFoldResult r) {
        return isa_and_present<ElementsAttr>(dyn_cast<Attribute>(r));
      })) {
    for (auto [result, value] : llvm::zip(results, folded))
      result = ONNXConstantOp::create(builder, node.loc, result.getType(),
                                      cast<ElementsAttr>(cast<Attribute>(value)));
    op->erase();
  }
  for (auto [name, result] : llvm::zip(node.outputs, results))
    if (!name.empty())
      values[name] = result;
}

OwningOpRef<ModuleOp> GraphImporter::import(const onnx::ModelProto &model) {
  const onnx::GraphProto &graph = model.graph();
  modelOpset = defaultDomainOpset(model);
  for (const auto &opset : model.opset_import())
    opsetImports[isDefaultDomain(opset.domain()) ? "" : opset.domain()] =
        opset.version();
  for (const auto &info : graph.value_info())
    declaredTypes[info.name()] = &info.type();
  for (const auto &info : graph.output())
    declaredTypes[info.name()] = &info.type();
  for (auto [index, node] : llvm::enumerate(graph.node())) {
    for (const std::string &output : node.output())
      producers[output] = getNodeName(node, index);
    for (const std::string &input : node.input())
      usedValues.insert(input);
  }
  for (const auto &output : graph.output())
    usedValues.insert(output.name());

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  SmallVector<NamedAttribute> moduleAttrs{
      builder.getNamedAttr("onnx.opset", builder.getI64IntegerAttr(modelOpset)),
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
  // appended after the model's own inputs. The initializers left are
  // constants; an input of the same name (IR < 4 lists every initializer
  // as an input, and bound input values stay listed) is that constant.
  struct Argument {
    std::string name;
    Type type;
  };
  llvm::StringSet<> constantNames;
  for (const onnx::TensorProto &init : graph.initializer())
    constantNames.insert(init.name());
  SmallVector<Argument> arguments;
  for (const auto &input : graph.input())
    if (!constantNames.contains(input.name()))
      arguments.push_back(
          {input.name(), convertTensorType(input.type(), input.name())});
  for (const auto &input : graph.input()) {
    if (constantNames.contains(input.name()))
      continue;
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

  SmallVector<Type> argumentTypes;
  for (const Argument &arg : arguments)
    argumentTypes.push_back(arg.type);

  builder.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(
      builder, fileLoc, "main",
      builder.getFunctionType(argumentTypes, {}));
  for (auto [i, arg] : llvm::enumerate(arguments)) {
    func.setArgAttr(i, "onnx.name", builder.getStringAttr(arg.name));
    auto param = parameters.find(arg.name);
    if (param != parameters.end())
      setParamKind(func, i, param->second);
  }
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

  // Result types are what the ops inferred, not what the file declares.
  SmallVector<Value> results;
  for (const auto &output : graph.output())
    results.push_back(lookup(output.name(), "<graph outputs>"));
  if (rebinding)
    checkOutputsFollowBatch(graph, results);
  func::ReturnOp::create(builder, fileLoc, results);
  func.setFunctionType(
      builder.getFunctionType(argumentTypes, ValueRange(results).getTypes()));
  for (auto [i, output] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, "onnx.name", builder.getStringAttr(output.name()));
  return module;
}

} // namespace

bool isONNXFileName(llvm::StringRef path) {
  return path.ends_with(".onnx") || path.ends_with(".onnxtext");
}

bool looksLikeONNXText(llvm::StringRef bytes) {
  bytes = bytes.ltrim();
  return bytes.starts_with("<") || bytes.starts_with("#");
}

bool addDimBinding(llvm::StringRef binding, ONNXImportOptions &options) {
  auto [name, value] = binding.split('=');
  int64_t size;
  if (name.empty() || value.getAsInteger(10, size) || size <= 0)
    return false;
  options.dimBindings[name] = size;
  return true;
}

OwningOpRef<ModuleOp> importONNX(llvm::StringRef bytes, bool isText,
                                 llvm::StringRef sourceName,
                                 MLIRContext *context,
                                 const ONNXImportOptions &options) {
  context->loadDialect<ONNXDialect, VramDialect, func::FuncDialect>();
  Location fileLoc = FileLineColLoc::get(context, sourceName, 0, 0);
  try {
    registerContribSchemas();
    onnx::ModelProto model = parseModel(bytes, isText);
    checkGraphOutputsDefined(model);
    bindInputValues(model, options);
    llvm::StringSet<> initializerNames;
    for (const auto &init : model.graph().initializer())
      initializerNames.insert(init.name());
    std::optional<int64_t> staticBatch =
        bindDynamicDims(model, options, initializerNames);
    warnAboutUnknownFields(model, fileLoc);
    llvm::StringMap<ParamKind> parameters = detachParameters(model, options);
    int64_t opset = defaultDomainOpset(model);
    if (opset > kNewestKnownOpset)
      fail("model uses opset " + llvm::Twine(opset) +
           "; this tool knows operator versions up to opset " +
           llvm::Twine(kNewestKnownOpset) +
           ", so an operator may have changed in ways it does not model");
    // libonnx checks what it knows; the importer's own validation covers
    // every file.
    if (model.ir_version() <= onnx::IR_VERSION &&
        opset <= kCanonicalOpset)
      onnx::checker::check_model(model);
    validateGraph(model.graph());
    OwningOpRef<ModuleOp> importedModule =
        GraphImporter(context, sourceName, parameters,
                      staticBatch ? std::optional<BatchRebinding>(
                                        {*staticBatch, *options.batchSize})
                                  : std::nullopt)
            .import(model);
    if (failed(verify(*importedModule)))
      return nullptr;
    if (options.fuseDecomposedOps) {
      RewritePatternSet patterns(context);
      populateDecomposedOpFusionPatterns(patterns);
      // Only the fusions: the IR keeps one op per remaining node, in order.
      GreedyRewriteConfig config;
      config.enableFolding(false)
          .enableConstantCSE(false)
          .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
      if (failed(applyPatternsGreedily(*importedModule, std::move(patterns),
                                       config)))
        return nullptr;
    }
    return importedModule;
  } catch (const ReportedError &) {
    // The op's shape inference has emitted the error.
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
