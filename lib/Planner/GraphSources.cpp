//===- GraphSources.cpp - Node-link JSON reader and graph generators ------===//

#include "vram/Planner/GraphSources.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <random>

using namespace vram::planner;
namespace json = llvm::json;

//===----------------------------------------------------------------------===//
// Node-link JSON
//===----------------------------------------------------------------------===//

namespace {
/// One node as both published flavours describe it.
struct Node {
  std::string name;
  double cost = 0;
  uint64_t bytes = 0;
  uint64_t parameterBytes = 0;
  bool isBackward = false;
};

llvm::Error malformed(const llvm::Twine &what) {
  return llvm::createStringError("malformed node-link graph: " + what);
}

llvm::Expected<int64_t> getInteger(const json::Object &object,
                                   llvm::StringRef key,
                                   const llvm::Twine &context) {
  if (std::optional<int64_t> value = object.getInteger(key))
    return *value;
  return malformed(context + " has no integer '" + key + "'");
}

llvm::Expected<uint64_t> getSize(const json::Object &object,
                                 llvm::StringRef key,
                                 const llvm::Twine &context) {
  llvm::Expected<int64_t> value = getInteger(object, key, context);
  if (value && *value < 0)
    return malformed(context + " has negative '" + key + "'");
  return value;
}

llvm::Expected<double> getNumber(const json::Object &object,
                                 llvm::StringRef key,
                                 const llvm::Twine &context) {
  if (std::optional<double> value = object.getNumber(key))
    return *value;
  return malformed(context + " has no number '" + key + "'");
}

/// Checkmate names nodes with strings, the layered generator with integers.
std::string nodeName(const json::Value *name, int64_t key) {
  if (name)
    if (std::optional<llvm::StringRef> text = name->getAsString())
      return text->str();
  return std::to_string(key);
}

/// Reads one node; returns its key (the id links refer to).
llvm::Expected<int64_t> readNode(const json::Value &value, size_t index,
                                 bool isCheckmate, Node &node) {
  std::string context = llvm::formatv("node {0}", index);
  const json::Object *object = value.getAsObject();
  if (!object)
    return malformed(context + " is not an object");
  llvm::Expected<int64_t> key =
      getInteger(*object, isCheckmate ? "id" : "name", context);
  if (!key)
    return key.takeError();
  node.name = nodeName(object->get("name"), *key);
  llvm::Expected<double> cost =
      getNumber(*object, isCheckmate ? "cost_cpu" : "duration", context);
  if (!cost)
    return cost.takeError();
  node.cost = *cost;
  llvm::Expected<uint64_t> bytes =
      getSize(*object, isCheckmate ? "cost_ram" : "out_cost", context);
  if (!bytes)
    return bytes.takeError();
  node.bytes = *bytes;
  if (isCheckmate) {
    std::optional<bool> backward = object->getBoolean("backward");
    if (!backward)
      return malformed(context + " has no boolean 'backward'");
    node.isBackward = *backward;
  } else {
    llvm::Expected<uint64_t> params = getSize(*object, "param_cost", context);
    if (!params)
      return params.takeError();
    node.parameterBytes = *params;
  }
  return *key;
}
} // namespace

llvm::Expected<PlanningGraph>
vram::planner::parseNodeLinkGraph(llvm::StringRef text) {
  llvm::Expected<json::Value> root = json::parse(text);
  if (!root)
    return malformed("invalid JSON: " + llvm::toString(root.takeError()));
  const json::Object *object = root->getAsObject();
  if (!object)
    return malformed("top level is not an object");
  const json::Array *nodes = object->getArray("nodes");
  const json::Array *links = object->getArray("links");
  if (!nodes || !links)
    return malformed("missing 'nodes' or 'links' array");
  if (nodes->empty())
    return malformed("no nodes");
  const json::Object *firstNode = nodes->front().getAsObject();
  bool isCheckmate = firstNode && firstNode->get("cost_cpu");

  std::vector<Node> nodeList(nodes->size());
  llvm::DenseMap<int64_t, size_t> indexOfKey;
  std::vector<int64_t> keys;
  for (auto [index, value] : llvm::enumerate(*nodes)) {
    llvm::Expected<int64_t> key =
        readNode(value, index, isCheckmate, nodeList[index]);
    if (!key)
      return key.takeError();
    if (!indexOfKey.try_emplace(*key, index).second)
      return malformed(llvm::formatv("duplicate node id {0}", *key));
    keys.push_back(*key);
  }

  // The schedule: node ids for Checkmate, graph.order for layered graphs.
  std::vector<size_t> schedule;
  if (isCheckmate) {
    schedule.resize(keys.size());
    for (size_t i = 0; i < keys.size(); ++i)
      schedule[i] = i;
    llvm::sort(schedule, [&](size_t a, size_t b) { return keys[a] < keys[b]; });
  } else {
    const json::Object *graphAttrs = object->getObject("graph");
    const json::Array *order =
        graphAttrs ? graphAttrs->getArray("order") : nullptr;
    if (!order)
      return malformed("missing 'graph.order' (the schedule)");
    for (const json::Value &entry : *order) {
      std::optional<int64_t> key = entry.getAsInteger();
      auto it = key ? indexOfKey.find(*key) : indexOfKey.end();
      if (it == indexOfKey.end())
        return malformed("'graph.order' names an unknown node");
      schedule.push_back(it->second);
    }
    std::vector<bool> seen(nodeList.size());
    for (size_t index : schedule) {
      if (seen[index])
        return malformed("'graph.order' lists a node twice");
      seen[index] = true;
    }
    if (schedule.size() != nodeList.size())
      return malformed("'graph.order' does not list every node");
  }
  std::vector<OpId> opOfNode(nodeList.size());
  for (auto [position, index] : llvm::enumerate(schedule))
    opOfNode[index] = position;

  llvm::StringRef sourceKey = isCheckmate ? "source" : "0";
  llvm::StringRef targetKey = isCheckmate ? "target" : "1";
  std::vector<std::pair<size_t, size_t>> edges;
  std::vector<bool> hasConsumer(nodeList.size());
  for (auto [index, value] : llvm::enumerate(*links)) {
    std::string context = llvm::formatv("link {0}", index);
    const json::Object *link = value.getAsObject();
    if (!link)
      return malformed(context + " is not an object");
    llvm::Expected<int64_t> source = getInteger(*link, sourceKey, context);
    if (!source)
      return source.takeError();
    llvm::Expected<int64_t> target = getInteger(*link, targetKey, context);
    if (!target)
      return target.takeError();
    auto from = indexOfKey.find(*source), to = indexOfKey.find(*target);
    if (from == indexOfKey.end() || to == indexOfKey.end())
      return malformed(context + " refers to an unknown node");
    edges.push_back({from->second, to->second});
    hasConsumer[from->second] = true;
  }

  PlanningGraph graph;
  std::vector<TensorId> outputOf(nodeList.size());
  for (size_t index : schedule) {
    const Node &node = nodeList[index];
    OpId op = graph.addOp(node.name, node.cost, node.isBackward);
    TensorCategory category = !hasConsumer[index] ? TensorCategory::Output
                              : node.isBackward   ? TensorCategory::Gradient
                                                  : TensorCategory::Activation;
    outputOf[index] = graph.addTensor(node.name, node.bytes, category, op);
    if (node.parameterBytes > 0) {
      TensorId weights =
          graph.addTensor(node.name + ".params", node.parameterBytes,
                          TensorCategory::Parameter, std::nullopt);
      graph.addUse(op, weights);
    }
  }
  for (auto [from, to] : edges)
    graph.addUse(opOfNode[to], outputOf[from]);
  if (llvm::Error err = graph.verify())
    return malformed(llvm::toString(std::move(err)));
  return graph;
}

llvm::Expected<PlanningGraph>
vram::planner::readNodeLinkGraph(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError(buffer.getError(),
                                   "cannot read '" + path +
                                       "': " + buffer.getError().message());
  llvm::Expected<PlanningGraph> graph =
      parseNodeLinkGraph((*buffer)->getBuffer());
  if (!graph)
    return llvm::createStringError(path + ": " +
                                   llvm::toString(graph.takeError()));
  return graph;
}

//===----------------------------------------------------------------------===//
// Generators
//===----------------------------------------------------------------------===//

PlanningGraph
vram::planner::makeTrainingChain(llvm::ArrayRef<uint64_t> activationBytes,
                                 llvm::ArrayRef<double> forwardCosts) {
  assert(activationBytes.size() == forwardCosts.size() &&
         !activationBytes.empty() && "one size and one cost per layer");
  size_t depth = activationBytes.size();
  PlanningGraph graph;
  std::vector<TensorId> activations;
  for (size_t i = 0; i < depth; ++i) {
    std::string name = llvm::formatv("f{0}", i);
    OpId op = graph.addOp(name, forwardCosts[i]);
    if (i > 0)
      graph.addUse(op, activations.back());
    activations.push_back(graph.addTensor(name, activationBytes[i],
                                          TensorCategory::Activation, op));
  }
  // Backward op i reads its layer's output and the gradient from above; a
  // backward op costs twice its forward op, as for a linear layer.
  std::optional<TensorId> gradient;
  for (size_t i = depth; i-- > 0;) {
    std::string name = llvm::formatv("b{0}", i);
    OpId op = graph.addOp(name, 2 * forwardCosts[i], /*isBackward=*/true);
    graph.addUse(op, activations[i]);
    if (gradient)
      graph.addUse(op, *gradient);
    gradient = graph.addTensor(
        name, activationBytes[i],
        i == 0 ? TensorCategory::Output : TensorCategory::Gradient, op);
  }
  return graph;
}

namespace {
/// Builds the transformer graph. Sizes are half-precision element counts;
/// costs are microseconds on a device doing 400 TFLOP/s in matrix products
/// and moving 3 TB/s in element-wise ops.
class TransformerBuilder {
public:
  explicit TransformerBuilder(uint64_t seed) : rng(seed) {}

  PlanningGraph build(unsigned layers) {
    TensorId tokens = graph.addTensor("tokens", batch * seq * 8,
                                      TensorCategory::Input, std::nullopt);
    TensorId x = matmul("embed", {tokens}, 1);
    std::vector<Layer> saved;
    for (unsigned l = 0; l < layers; ++l) {
      Layer layer;
      layer.x = x;
      layer.ln1 = elementwise("ln1", {x}, width(1));
      layer.qkv = matmul("qkv", {layer.ln1}, 3);
      TensorId scores = attention("scores", {layer.qkv}, scoreElements());
      layer.probs = elementwise("softmax", {scores}, scoreElements());
      layer.ctx = attention("context", {layer.probs, layer.qkv}, width(1));
      TensorId proj = matmul("proj", {layer.ctx}, 1);
      layer.res1 = elementwise("add1", {x, proj}, width(1));
      layer.ln2 = elementwise("ln2", {layer.res1}, width(1));
      layer.fc1 = matmul("fc1", {layer.ln2}, 4);
      layer.act = elementwise("gelu", {layer.fc1}, width(4));
      TensorId fc2 = matmul("fc2", {layer.act}, 1, /*inMultiple=*/4);
      x = elementwise("add2", {layer.res1, fc2}, width(1));
      saved.push_back(layer);
    }
    TensorId loss = elementwise("loss", {x}, batch * seq);
    backward = true;
    TensorId grad = elementwise("loss.grad", {loss, x}, width(1));
    for (unsigned l = layers; l-- > 0;) {
      const Layer &layer = saved[l];
      TensorId gAct = matmul("fc2.grad", {grad, layer.act}, 4);
      TensorId gFc1 = elementwise("gelu.grad", {gAct, layer.fc1}, width(4));
      TensorId gLn2 = matmul("fc1.grad", {gFc1, layer.ln2}, 1, 4);
      TensorId gRes1 =
          elementwise("ln2.grad", {gLn2, layer.res1, grad}, width(1));
      TensorId gCtx = matmul("proj.grad", {gRes1, layer.ctx}, 1);
      // One op, two gradients: exercises multi-output recomputation.
      auto [gProbs, gV] =
          addOp("context.grad", {gCtx, layer.probs, layer.qkv},
                {scoreElements(), width(1)}, 2 * attentionCost());
      TensorId gScores =
          elementwise("softmax.grad", {gProbs, layer.probs}, scoreElements());
      TensorId gQkv =
          attention("scores.grad", {gScores, layer.qkv, gV}, width(3));
      TensorId gLn1 = matmul("qkv.grad", {gQkv, layer.ln1}, 1, 3);
      grad = elementwise("ln1.grad", {gLn1, layer.x, gRes1}, width(1));
    }
    // The embedding gradient is the step's result.
    addOp("embed.grad", {grad, tokens}, {width(1)}, matmulCost(1, 1),
          TensorCategory::Output);
    return std::move(graph);
  }

private:
  struct Layer {
    TensorId x, ln1, qkv, probs, ctx, res1, ln2, fc1, act;
  };

  static uint64_t width(uint64_t multiple) {
    return multiple * batch * seq * model;
  }
  static uint64_t scoreElements() { return batch * heads * seq * seq; }
  double jitter() { return std::uniform_real_distribution<>(0.9, 1.1)(rng); }
  double matmulCost(uint64_t outMultiple, uint64_t inMultiple) {
    double flops =
        2.0 * batch * seq * (inMultiple * model) * (outMultiple * model);
    // Backward products compute two gradients (input and weights).
    return jitter() * flops / 4e8 * (backward ? 2 : 1);
  }
  double attentionCost() {
    return jitter() * 2.0 * batch * seq * seq * model / 4e8;
  }

  TensorId matmul(llvm::StringRef name, llvm::ArrayRef<TensorId> inputs,
                  uint64_t outMultiple, uint64_t inMultiple = 1) {
    TensorId weights =
        graph.addTensor(llvm::formatv("{0}{1}.w", name, ops).str(),
                        2 * inMultiple * outMultiple * model * model,
                        TensorCategory::Parameter, std::nullopt);
    llvm::SmallVector<TensorId> withWeights(inputs);
    withWeights.push_back(weights);
    return addOp(name, withWeights, {width(outMultiple)},
                 matmulCost(outMultiple, inMultiple))
        .first;
  }
  TensorId attention(llvm::StringRef name, llvm::ArrayRef<TensorId> inputs,
                     uint64_t elements) {
    return addOp(name, inputs, {elements}, attentionCost() * (backward ? 2 : 1))
        .first;
  }
  TensorId elementwise(llvm::StringRef name, llvm::ArrayRef<TensorId> inputs,
                       uint64_t elements) {
    // Reads every input of the same size and writes the output once.
    double bytesMoved = 2.0 * elements * (inputs.size() + 1);
    return addOp(name, inputs, {elements}, jitter() * bytesMoved / 3e6).first;
  }
  /// Returns the first and last outputs.
  std::pair<TensorId, TensorId>
  addOp(llvm::StringRef name, llvm::ArrayRef<TensorId> inputs,
        llvm::ArrayRef<uint64_t> outputElements, double cost,
        std::optional<TensorCategory> category = std::nullopt) {
    std::string opName = llvm::formatv("{0}{1}", name, ops++);
    OpId id = graph.addOp(opName, cost, backward);
    for (TensorId input : inputs)
      graph.addUse(id, input);
    TensorCategory outputCategory = category.value_or(
        backward ? TensorCategory::Gradient : TensorCategory::Activation);
    assert(!outputElements.empty() && "every op has an output");
    std::pair<TensorId, TensorId> ends;
    for (auto [index, elements] : llvm::enumerate(outputElements)) {
      ends.second =
          graph.addTensor(llvm::formatv("{0}.{1}", opName, index).str(),
                          2 * elements, outputCategory, id);
      if (index == 0)
        ends.first = ends.second;
    }
    return ends;
  }

  static constexpr uint64_t batch = 4, seq = 1024, model = 1024, heads = 16;
  std::mt19937_64 rng;
  PlanningGraph graph;
  bool backward = false;
  unsigned ops = 0;
};
} // namespace

PlanningGraph vram::planner::makeTransformerTrainingGraph(unsigned layers,
                                                          uint64_t seed) {
  return TransformerBuilder(seed).build(layers);
}

PlanningGraph vram::planner::makeRandomDag(unsigned numOps, unsigned maxInputs,
                                           uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](unsigned low, unsigned high) {
    return std::uniform_int_distribution<unsigned>(low, high)(rng);
  };
  PlanningGraph graph;
  std::vector<TensorId> outputs;
  for (unsigned i = 0; i < numOps; ++i) {
    std::string name = llvm::formatv("n{0}", i);
    OpId op = graph.addOp(name, uniform(1, 10));
    // Always read the previous op so the graph is one connected chain with
    // random skip edges, like a network with residual connections.
    if (i > 0)
      graph.addUse(op, outputs.back());
    for (unsigned extra = i > 1 ? uniform(0, maxInputs - 1) : 0; extra > 0;
         --extra)
      graph.addUse(op, outputs[uniform(0, i - 1)]);
    outputs.push_back(graph.addTensor(
        name, uniform(1, 100),
        i + 1 == numOps ? TensorCategory::Output : TensorCategory::Activation,
        op));
  }
  return graph;
}
