//===- Importer.h - the ONNX importer's parts, across its files -*- C++ -*-===//
//
// Private to lib/Import. The importer's steps, a file each:
// ModelPreparation.cpp checks and rewrites the ModelProto with libonnx
// (binding dimensions and input values, detaching parameters);
// TensorData.cpp converts types, tensor data and attributes;
// NodeNormalization.cpp maps each operator version onto the dialect's form;
// ONNXImporter.cpp builds the function op by op and is the public entry.
// Errors are exceptions until importONNX turns each into one diagnostic.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_LIB_IMPORT_IMPORTER_H
#define VRAM_LIB_IMPORT_IMPORTER_H

#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Import/ONNXImporter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include "onnx/defs/schema.h"

#include <stdexcept>

namespace vram::importer {
using namespace mlir;

/// An error detected by the importer itself; carried to the one place that
/// turns exceptions into diagnostics.
struct ImportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void fail(const llvm::Twine &message) {
  throw ImportError(message.str());
}

/// An error about one node, reported at the node's location, as the ops'
/// own errors are: `file: node 'name': error: message`.
struct NodeError : ImportError {
  NodeError(Location loc, const std::string &message)
      : ImportError(message), loc(loc) {}
  Location loc;
};

[[noreturn]] inline void failAt(Location nodeLoc, const llvm::Twine &message) {
  throw NodeError(nodeLoc, message.str());
}

/// An ONNX message (parser context, stack of nodes) on one line.
std::string oneLine(llvm::StringRef message);
bool isDefaultDomain(const std::string &domain);
/// The model's opset of the default domain; 0 when it imports none.
int64_t defaultDomainOpset(const onnx::ModelProto &model);

//===----------------------------------------------------------------------===//
// Model preparation with libonnx (ModelPreparation.cpp, which documents each)
//===----------------------------------------------------------------------===//

void registerContribSchemas();
onnx::ModelProto parseModel(llvm::StringRef bytes, bool isText);
void checkGraphOutputsDefined(const onnx::ModelProto &model);
void bindInputValues(onnx::ModelProto &model, const ONNXImportOptions &options);
std::optional<int64_t>
bindDynamicDims(onnx::ModelProto &model, const ONNXImportOptions &options,
                const llvm::StringSet<> &initializerNames);
void warnAboutUnknownFields(const onnx::ModelProto &model, Location loc);
llvm::StringSet<> getExporterConstants(const onnx::GraphProto &graph);
llvm::StringMap<ParamKind>
detachParameters(onnx::ModelProto &model, const ONNXImportOptions &options,
                 const llvm::StringSet<> &exporterConstants);
void validateGraph(const onnx::GraphProto &graph);
std::string getNodeName(const onnx::NodeProto &node, unsigned index);

//===----------------------------------------------------------------------===//
// The graph importer
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

  /// The operator and its version as errors name it: "Reshape-19".
  std::string getVersionedOp() const {
    return opType + "-" + std::to_string(version);
  }
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
                std::optional<BatchRebinding> rebinding,
                llvm::StringRef flagPrefix)
      : context(context), builder(context), parameters(parameters),
        rebinding(rebinding), flagPrefix(flagPrefix),
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
                                  Location nodeLoc);
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
  /// Fails with `message` at the node that produces `valueName`, or at the
  /// file when no node does (a graph input).
  [[noreturn]] void failAtProducer(llvm::StringRef valueName,
                                   const llvm::Twine &message) const;

  MLIRContext *context;
  OpBuilder builder;
  /// Graph inputs that were parameter initializers: trainable or state.
  const llvm::StringMap<ParamKind> &parameters;
  std::optional<BatchRebinding> rebinding;
  /// ONNXImportOptions::flagPrefix.
  std::string flagPrefix;
  Location fileLoc;
  llvm::StringMap<Value> values;
  /// Types the file declares (value_info, graph outputs): they fill in what
  /// the ops' inference leaves open, and type operators the dialect lacks.
  llvm::StringMap<const onnx::TypeProto *> declaredTypes;
  /// The location of the node that produces each value.
  llvm::StringMap<Location> producers;
  /// Values some node or graph output reads.
  llvm::StringSet<> usedValues;
  llvm::StringMap<int64_t> opsetImports;
  Value noneValue;
  int64_t modelOpset = 0;
};

/// An error already reported as a diagnostic (by an op's shape inference).
struct ReportedError : std::runtime_error {
  ReportedError() : std::runtime_error("") {}
};

/// Placeholder type of a result before its op infers the real one.
inline Type placeholderType(MLIRContext *context) {
  return UnrankedTensorType::get(Float32Type::get(context));
}

/// Fails, naming `valueName`, when a tensor of `type` has more than 2^64
/// bytes (TensorData.cpp).
void checkByteSize(TensorType type, llvm::StringRef valueName);

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

} // namespace vram::importer

#endif // VRAM_LIB_IMPORT_IMPORTER_H
