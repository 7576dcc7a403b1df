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
#include "Importer.h"
#include "OperatorVersions.h"
#include "vram/Dialect/ONNX/ONNXOps.h"
#include "vram/Dialect/ONNX/Patterns.h"
#include "vram/Dialect/Vram/VramDialect.h"

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
#include "llvm/Support/MemoryBuffer.h"

#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"

#include <exception>

using namespace mlir;

namespace vram::importer {

void GraphImporter::failAtProducer(llvm::StringRef valueName,
                                   const llvm::Twine &message) const {
  auto it = producers.find(valueName);
  failAt(it == producers.end() ? fileLoc : it->second, message);
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
static unsigned
formalCount(const std::vector<onnx::OpSchema::FormalParameter> &params,
            int actual) {
  if (params.empty() ||
      params.back().GetOption() == onnx::OpSchema::Variadic)
    return actual;
  return std::max<unsigned>(params.size(), actual);
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
    failAt(
        node.loc,
        node.getVersionedOp() + ": " + what +
            " must be a constant (it is computed at run time); this tool needs "
            "it to know the result's shape");
  return *values;
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
    failAt(node.loc, "output '" + name + "' is declared with " +
                         llvm::Twine(dims.size()) +
                         " dimensions but infers to " +
                         llvm::Twine(ranked.getRank()));
  SmallVector<int64_t> shape;
  for (auto [i, dim] : llvm::enumerate(dims)) {
    int64_t ours = ranked ? ranked.getDimSize(i) : ShapedType::kDynamic;
    if (!dim.has_dim_value() || dim.dim_value() < 0) {
      shape.push_back(ours);
      continue;
    }
    if (!ShapedType::isDynamic(ours) && ours != dim.dim_value() && !rebinding)
      failAt(node.loc, "output '" + name + "' is declared with dimension " +
                           llvm::Twine(i) + " = " +
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
  failAt(
      node.loc,
      "cannot infer the result types of " + proto.op_type() +
          (proto.domain().empty() ? "" : " (domain " + proto.domain() + ")") +
          " at opset " + llvm::Twine(modelOpset) +
          ": the operator is not supported and the file does not declare its "
          "outputs' shapes");
}

/// libonnx 1.12's shape inference for one node, on the types the importer
/// computed for its inputs (constants included, for data-dependent shapes).
/// A default-domain node of a model newer than libonnx is inferred at
/// libonnx's newest opset when its operator's signature is still that one.
std::optional<SmallVector<Type>>
GraphImporter::inferWithLibONNX(const NodeContext &node,
                                const onnx::NodeProto &proto) {
  std::optional<int64_t> inferenceOpset =
      isDefaultDomain(proto.domain())
          ? getSignatureEquivalentOpset(proto.op_type(), modelOpset,
                                        kCanonicalOpset)
          : std::optional<int64_t>(modelOpset);
  if (!inferenceOpset || *inferenceOpset > kCanonicalOpset)
    return std::nullopt;
  onnx::ModelProto model;
  model.set_ir_version(8);
  for (const auto &opset : opsetImports) {
    auto *entry = model.add_opset_import();
    entry->set_domain(opset.first().str());
    entry->set_version(opset.first().empty() ? *inferenceOpset : opset.second);
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
      failAt(node.loc, node.getVersionedOp() + " has an attribute '" +
                           attr.name() + "' that is not modelled");
    if (attr.type() != *expected)
      failAt(node.loc,
             "attribute '" + attr.name() + "' of " + node.getVersionedOp() +
                 " must be " +
                 onnx::AttributeProto::AttributeType_Name(*expected) +
                 ", not " +
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
      failAt(node.loc, "operator " + proto.op_type() +
                           " does not exist at opset " +
                           llvm::Twine(modelOpset));
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
    node.attributes.push_back(convertAttribute(attr, node.loc));

  if (dedicated) {
    if (node.operands.empty() || isa<NoneType>(node.operands[0].getType()))
      failAt(node.loc, node.getVersionedOp() + " needs its first input");
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
      for (auto [index, input] : llvm::enumerate(canonical->inputs()))
        if (input.GetOption() == onnx::OpSchema::Single &&
            index < node.operands.size() &&
            isa<NoneType>(node.operands[index].getType()))
          failAt(node.loc, node.getVersionedOp() + " needs its input " +
                               llvm::Twine(index) + " ('" + input.GetName() +
                               "')");
      unsigned numResults =
          formalCount(canonical->outputs(), node.outputs.size());
      node.outputs.resize(numResults);
      for (const auto &[name, attr] : canonical->attributes())
        if (attr.required &&
            llvm::none_of(node.attributes, [&](NamedAttribute a) {
              return a.getName() == name;
            }))
          failAt(node.loc,
                 node.getVersionedOp() + " needs the attribute '" + name + "'");
    }
    // Every attribute must be one the op defines: an attribute ONNX added in
    // a version the mapping does not know would otherwise be ignored.
    for (NamedAttribute attr : node.attributes)
      if (!llvm::is_contained(dedicated->getAttributeNames(), attr.getName()))
        failAt(node.loc, node.getVersionedOp() + " has an attribute '" +
                             attr.getName().getValue() +
                             "' that is not modelled");
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
      producers.insert_or_assign(output, nodeLocation(node, index));
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
           dimName + " is dynamic; bind it with --" + flagPrefix +
           "dim NAME=VALUE (by its ONNX dim_param) or --" + flagPrefix +
           "batch=N");
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

} // namespace vram::importer

namespace vram {
using namespace importer;

bool isONNXFileName(llvm::StringRef path) {
  return path.ends_with(".onnx") || path.ends_with(".onnxtext");
}

bool looksLikeONNXText(llvm::StringRef bytes) {
  bytes = bytes.ltrim();
  return bytes.starts_with("<") || bytes.starts_with("#");
}

llvm::Error bindDimensionFlags(ONNXImportOptions &options,
                               std::optional<int64_t> batch,
                               llvm::ArrayRef<std::string> dims) {
  std::string flag = "--" + options.flagPrefix;
  for (llvm::StringRef binding : dims) {
    auto [name, value] = binding.split('=');
    int64_t size;
    if (name.empty() || value.getAsInteger(10, size) || size <= 0)
      return llvm::createStringError(
          flag + "dim expects name=value with a positive integer value, got '" +
          binding + "'");
    options.dimBindings[name] = size;
  }
  if (batch) {
    if (*batch <= 0)
      return llvm::createStringError(flag + "batch expects a positive integer");
    options.batchSize = *batch;
  }
  return llvm::Error::success();
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
    llvm::StringSet<> exporterConstants = getExporterConstants(model.graph());
    std::optional<int64_t> staticBatch =
        bindDynamicDims(model, options, initializerNames);
    warnAboutUnknownFields(model, fileLoc);
    llvm::StringMap<ParamKind> parameters =
        detachParameters(model, options, exporterConstants);
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
                                  : std::nullopt,
                      options.flagPrefix)
            .import(model);
    if (failed(verify(*importedModule)))
      return nullptr;
    RewritePatternSet patterns(context);
    populateGenericNodeExpansionPatterns(patterns);
    if (options.fuseDecomposedOps)
      populateDecomposedOpFusionPatterns(patterns);
    // Only the expansions and fusions: the IR keeps one op per remaining
    // node, in order.
    GreedyRewriteConfig config;
    config.enableFolding(false)
        .enableConstantCSE(false)
        .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(*importedModule, std::move(patterns),
                                     config)))
      return nullptr;
    return importedModule;
  } catch (const ReportedError &) {
    // The op's shape inference has emitted the error.
  } catch (const NodeError &e) {
    emitError(e.loc) << oneLine(e.what());
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
