//===- ModelPreparation.cpp - check and rewrite a ModelProto -------------===//
//
// Before any op is built, libonnx parses the model and this file checks and
// rewrites it: user-bound dimensions and input values, parameters detached
// from their (never read) data, the checks libonnx 1.12 cannot make on newer
// files.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "onnx/checker.h"
#include "onnx/defs/parser.h"

#include <mutex>

using namespace mlir;

namespace vram::importer {

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
            .TypeConstraint("T",
                            {"tensor(float16)", "tensor(float)",
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
std::optional<int64_t>
bindDynamicDims(onnx::ModelProto &model, const ONNXImportOptions &options,
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
        fail("--" + options.flagPrefix + "batch: the first input '" +
             input.name() + "' has no leading dimension to bind");
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
static bool isShapeOperand(const onnx::NodeProto &node, int index) {
  if (!isDefaultDomain(node.domain()))
    return false;
  const std::string &op = node.op_type();
  if (op == "Reshape" || op == "Expand" || op == "Tile")
    return index == 1;
  if (op == "Slice")
    return index >= 1;
  if (op == "Pad" || op == "Resize")
    return index >= 1;
  if (op == "Squeeze" || op == "Unsqueeze" ||
      llvm::StringRef(op).starts_with("Reduce") || op == "Split" ||
      op == "TopK")
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
static bool isExporterConstantName(llvm::StringRef name) {
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
static bool isInlineConstant(const onnx::TensorProto &tensor,
                             const ONNXImportOptions &options,
                             bool feedsShapes) {
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return false;
  int64_t elements = 1;
  for (int64_t dim : tensor.dims())
    elements *= std::max<int64_t>(dim, 0);
  bool isIndex = tensor.data_type() == onnx::TensorProto::INT64 ||
                 tensor.data_type() == onnx::TensorProto::INT32;
  bool isLiftedScalar = elements == 1 && isExporterConstantName(tensor.name());
  if (!isIndex && !feedsShapes && !isLiftedScalar)
    return false;
  return elements <= options.maxConstantElements;
}

/// The values some node reads at an operand that is not a shape operand.
static llvm::StringSet<> getValuesReadAsData(const onnx::GraphProto &graph) {
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

/// Field numbers of IR-10 `metadata_props`, which libonnx 1.12's schema
/// lacks: its parser keeps the entries as unknown fields.
static constexpr int kNodeMetadataField = 9, kGraphMetadataField = 16,
                     kValueMetadataField = 4;

/// The `metadata_props` entries of `message` (kept as unknown field
/// `field`), by key.
static llvm::StringMap<std::string>
getMetadata(const google::protobuf::Message &message, int field) {
  llvm::StringMap<std::string> entries;
  const auto &fields = message.GetReflection()->GetUnknownFields(message);
  for (int i = 0; i < fields.field_count(); ++i) {
    onnx::StringStringEntryProto entry;
    if (fields.field(i).number() == field &&
        fields.field(i).type() ==
            google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED &&
        entry.ParseFromString(fields.field(i).length_delimited()))
      entries[entry.key()] = entry.value();
  }
  return entries;
}

/// The initializers that the dynamo exporter's metadata says are not
/// parameters of the PyTorch module: buffers and constant tensors
/// (`pkg.torch.export.graph_signature.InputSpec.kind`), and values its
/// optimizer computed by constant folding from no parameter
/// (`pkg.onnxscript.optimizer.folded_from`, checked against the PARAMETER
/// targets of the graph's `pkg.torch.export.ExportedProgram.graph_signature`):
/// a causal mask, rotary cos/sin tables, Swin's shifted-window masks. A
/// transposed weight the optimizer folded stays a parameter. Read before
/// bindDynamicDims drops the value annotations; empty for other exporters.
llvm::StringSet<> getExporterConstants(const onnx::GraphProto &graph) {
  llvm::StringSet<> constants;
  llvm::StringMap<std::string> graphMetadata =
      getMetadata(graph, kGraphMetadataField);
  auto signature =
      graphMetadata.find("pkg.torch.export.ExportedProgram.graph_signature");
  if (signature == graphMetadata.end())
    return constants;
  // Lines "p_w: PARAMETER target='w'".
  llvm::StringSet<> parameterTargets;
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(signature->second).split(lines, '\n');
  for (llvm::StringRef line : lines) {
    auto [kind, target] = line.split(" target='");
    if (kind.ends_with(": PARAMETER") && target.consume_back("'"))
      parameterTargets.insert(target);
  }
  for (const auto &value : graph.value_info()) {
    llvm::StringMap<std::string> metadata =
        getMetadata(value, kValueMetadataField);
    auto kind =
        metadata.find("pkg.torch.export.graph_signature.InputSpec.kind");
    if (kind != metadata.end() && kind->second != "PARAMETER")
      constants.insert(value.name());
    auto sources = metadata.find("pkg.onnxscript.optimizer.folded_from");
    if (sources == metadata.end())
      continue;
    // A Python list of names: "['a', 'b']".
    llvm::SmallVector<llvm::StringRef> names;
    llvm::StringRef(sources->second).trim("[]").split(names, ", ");
    if (llvm::none_of(names, [&](llvm::StringRef name) {
          return parameterTargets.contains(name.trim("'"));
        }))
      constants.insert(value.name());
  }
  return constants;
}

/// Turns every parameter initializer into a typed graph input, so neither
/// the checker nor shape inference looks at its data, which may live in an
/// external file that is absent. Returns what kind of parameter each is.
llvm::StringMap<ParamKind>
detachParameters(onnx::ModelProto &model, const ONNXImportOptions &options,
                 const llvm::StringSet<> &exporterConstants) {
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
    // inline that feeds only shape operands, or one the exporter says is no
    // parameter, is state.
    bool trainable = isFloat && !statistics.contains(init.name()) &&
                     !exporterConstants.contains(init.name()) &&
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
             "' uses '" + input +
             "', which no input, initializer or node "
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
  else if ((field = firstUnknownField(model.graph(), kGraphMetadataField)))
    where = "the graph";
  for (const auto &values : {model.graph().input(), model.graph().output(),
                             model.graph().value_info()})
    for (const auto &value : values)
      if (where.empty() &&
          (field = firstUnknownField(value, kValueMetadataField)))
        where = "value '" + value.name() + "'";
  for (auto [index, node] : llvm::enumerate(model.graph().node())) {
    if (!where.empty())
      break;
    if ((field = firstUnknownField(node, kNodeMetadataField))) {
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

} // namespace vram::importer
