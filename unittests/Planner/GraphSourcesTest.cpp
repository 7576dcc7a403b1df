//===- GraphSourcesTest.cpp - Node-link reader and graph generators -------===//

#include "vram/Planner/GraphSources.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

using namespace vram::planner;

namespace {
std::string graphPath(llvm::StringRef file) {
  llvm::SmallString<256> path(VRAM_CHECKMATE_GRAPHS_DIR);
  llvm::sys::path::append(path, file);
  return std::string(path);
}

size_t countUses(const PlanningGraph &graph) {
  size_t uses = 0;
  for (const PlanTensor &tensor : graph.tensors())
    uses += tensor.consumers.size();
  return uses;
}

TEST(GraphSourcesTest, ReadsCheckmateGraph) {
  llvm::Expected<PlanningGraph> graph =
      readNodeLinkGraph(graphPath("VGG16_b256_224x224_train.json"));
  ASSERT_TRUE(static_cast<bool>(graph)) << llvm::toString(graph.takeError());
  EXPECT_EQ(graph->numOps(), 45u);
  EXPECT_EQ(graph->numTensors(), 45u);
  EXPECT_EQ(countUses(*graph), 87u);
  const PlanOp &first = graph->op(0);
  EXPECT_EQ(first.name, "block1_conv1");
  EXPECT_DOUBLE_EQ(first.cost, 385);
  EXPECT_FALSE(first.isBackward);
  EXPECT_EQ(graph->tensor(0).bytes, 3288334336u);
  EXPECT_TRUE(graph->op(44).isBackward);
  EXPECT_EQ(graph->tensor(44).category, TensorCategory::Output);
}

TEST(GraphSourcesTest, ReadsLayeredGraphInItsOrder) {
  llvm::Expected<PlanningGraph> graph = readNodeLinkGraph(
      graphPath("random_layered_n100_w0.27_nlv0.75_ed0.2_scd0.14.json"));
  ASSERT_TRUE(static_cast<bool>(graph)) << llvm::toString(graph.takeError());
  EXPECT_EQ(graph->numOps(), 100u);
  EXPECT_EQ(countUses(*graph), 236u);
  // graph.order starts 0, 3, 2, 9.
  EXPECT_EQ(graph->op(1).name, "3");
  EXPECT_EQ(graph->op(3).name, "9");
}

struct BadInput {
  const char *name;
  const char *json;
  const char *error;
};

// Names the case in test listings instead of dumping its bytes.
void PrintTo(const BadInput &input, std::ostream *os) { *os << input.name; }

class MalformedGraphTest : public testing::TestWithParam<BadInput> {};

TEST_P(MalformedGraphTest, ReportsTheProblem) {
  llvm::Expected<PlanningGraph> graph = parseNodeLinkGraph(GetParam().json);
  ASSERT_FALSE(static_cast<bool>(graph));
  EXPECT_EQ(llvm::toString(graph.takeError()),
            std::string("malformed node-link graph: ") + GetParam().error);
}

constexpr const char *kNode0 =
    R"({"id": 0, "name": "a", "backward": false, "cost_cpu": 1, "cost_ram": 8})";
constexpr const char *kNode1 =
    R"({"id": 1, "name": "b", "backward": true, "cost_cpu": 2, "cost_ram": 8})";

std::string checkmate(const std::string &nodes, const std::string &links) {
  return R"({"nodes": [)" + nodes + R"(], "links": [)" + links + "]}";
}

const std::string kBackwardLink = checkmate(std::string(kNode0) + "," + kNode1,
                                            R"({"source": 1, "target": 0})");
const std::string kUnknownNode =
    checkmate(kNode0, R"({"source": 0, "target": 7})");
const std::string kNoCost =
    checkmate(R"({"id": 0, "backward": false, "cost_cpu": 1})", "");
const std::string kNegativeSize = checkmate(
    R"({"id": 0, "backward": false, "cost_cpu": 1, "cost_ram": -4})", "");
const std::string kDuplicateId =
    checkmate(std::string(kNode0) + "," + kNode0, "");

INSTANTIATE_TEST_SUITE_P(
    Inputs, MalformedGraphTest,
    testing::Values(
        BadInput{"InvalidJson", "{",
                 "invalid JSON: [1:1, byte=1]: Expected object key"},
        BadInput{"NotAnObject", "[]", "top level is not an object"},
        BadInput{"NoLinks", R"({"nodes": []})",
                 "missing 'nodes' or 'links' array"},
        BadInput{"NoSize", kNoCost.c_str(), "node 0 has no integer 'cost_ram'"},
        BadInput{"NegativeSize", kNegativeSize.c_str(),
                 "node 0 has negative 'cost_ram'"},
        BadInput{"DuplicateId", kDuplicateId.c_str(), "duplicate node id 0"},
        BadInput{"UnknownNode", kUnknownNode.c_str(),
                 "link 0 refers to an unknown node"},
        BadInput{"NotTopological", kBackwardLink.c_str(),
                 "schedule is not topological: op 'a' reads 'b' before or "
                 "while op 'b' produces it"},
        BadInput{"NoOrder",
                 R"({"nodes": [{"name": 0, "out_cost": 1, "param_cost": 0,
                    "duration": 1}], "links": []})",
                 "missing 'graph.order' (the schedule)"}),
    [](const testing::TestParamInfo<BadInput> &info) {
      return std::string(info.param.name);
    });

TEST(GraphSourcesTest, TransformerHasExpectedShape) {
  PlanningGraph graph = makeTransformerTrainingGraph(3, 0);
  EXPECT_FALSE(static_cast<bool>(graph.verify()));
  // Embedding, 12 forward ops per layer, loss, loss gradient, 10 backward
  // ops per layer, embedding gradient.
  EXPECT_EQ(graph.numOps(), 1 + 12 * 3 + 2 + 10 * 3 + 1);
}
} // namespace
