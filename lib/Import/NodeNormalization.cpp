//===- NodeNormalization.cpp - operator versions onto the dialect --------===//
//
// Each ONNX operator has one form in the onnx dialect (its opset-17
// signature, kCanonicalOpset); GraphImporter maps every other version onto
// it here: attributes that later became inputs, changed defaults and
// semantics, and the re-binding of a static batch (--batch).
//
//===----------------------------------------------------------------------===//

#include "Importer.h"
#include "OperatorVersions.h"
#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace vram::importer {

static std::optional<Attribute>
takeAttribute(SmallVectorImpl<NamedAttribute> &attrs, llvm::StringRef name) {
  for (auto *it = attrs.begin(); it != attrs.end(); ++it)
    if (it->getName() == name) {
      Attribute value = it->getValue();
      attrs.erase(it);
      return value;
    }
  return std::nullopt;
}

static SmallVector<int64_t> intsOf(Attribute attr) {
  SmallVector<int64_t> values;
  for (Attribute a : cast<ArrayAttr>(attr))
    values.push_back(cast<IntegerAttr>(a).getInt());
  return values;
}

[[noreturn]] void failUnmodelled(const NodeContext &node,
                                 const llvm::Twine &what) {
  failAt(node.loc, node.getVersionedOp() + " " + what + " is not modelled");
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
    if (std::optional<Attribute> b =
            takeAttribute(node.attributes, "broadcast"))
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
    Type elementType =
        cast<TensorType>(node.operands[0].getType()).getElementType();
    node.operands.resize(3, noValue());
    for (auto [name, index] :
         {std::pair<llvm::StringRef, unsigned>{"min", 1}, {"max", 2}})
      if (std::optional<Attribute> bound = takeAttribute(node.attributes, name))
        node.operands[index] = constantScalar(
            elementType, cast<FloatAttr>(*bound).getValueAsDouble(), node.loc);
  }
  if (op == "Dropout" && version < 12) {
    takeAttribute(node.attributes, "is_test");
    std::optional<Attribute> ratio = takeAttribute(node.attributes, "ratio");
    node.operands.resize(2, noValue());
    if (ratio)
      node.operands[1] =
          constantScalar(builder.getF32Type(),
                         cast<FloatAttr>(*ratio).getValueAsDouble(), node.loc);
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
        failAt(node.loc, "num_outputs is " + llvm::Twine(count) +
                             " but the node has " +
                             llvm::Twine(node.outputs.size()) + " outputs");
      int64_t axis = 0;
      for (NamedAttribute attr : node.attributes)
        if (attr.getName() == "axis")
          axis = cast<IntegerAttr>(attr.getValue()).getInt();
      if (!type || axis < -type.getRank() || axis >= type.getRank() ||
          ShapedType::isDynamic(
              type.getDimSize(axis < 0 ? axis + type.getRank() : axis)))
        failAt(node.loc, "Split-18 with num_outputs needs the "
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
    for (auto [name, index] :
         {std::pair<llvm::StringRef, unsigned>{"starts", 1},
          {"ends", 2},
          {"axes", 3}})
      if (std::optional<Attribute> attr = takeAttribute(node.attributes, name))
        node.operands[index] = constantInts(intsOf(*attr), node.loc);
  }
  if (op == "ReduceMean" && version >= 18) {
    std::optional<Attribute> noop =
        takeAttribute(node.attributes, "noop_with_empty_axes");
    bool noopWhenEmpty = noop && cast<IntegerAttr>(*noop).getInt() != 0;
    if (node.operands.size() > 1 &&
        !isa<NoneType>(node.operands[1].getType())) {
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
      failAt(node.loc,
             "Pad-" + llvm::Twine(version) + " needs a 'pads' attribute");
    Type elementType =
        cast<TensorType>(node.operands[0].getType()).getElementType();
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
        failAt(node.loc, "Pad has " + llvm::Twine(pads.size()) + " pads for " +
                             llvm::Twine(axes.size()) + " axes");
      int64_t rank = type.getRank();
      SmallVector<int64_t> full(2 * rank, 0);
      for (auto [i, axis] : llvm::enumerate(axes)) {
        if (axis < -rank || axis >= rank)
          failAt(node.loc, "Pad axis " + llvm::Twine(axis) +
                               " is out of range for rank " +
                               llvm::Twine(rank));
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
  // A Reshape without its shape input is refused once built.
  if (node.operands.size() < 2)
    return;
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
  return ("--" + flagPrefix + "batch re-binds the exported batch " +
          llvm::Twine(rebinding->exported) + " to " +
          llvm::Twine(rebinding->requested) +
          "; a shape here (this node's, or a constant's it reads) carries the "
          "exported batch where the importer does not recognise it (it "
          "rewrites Reshape targets that lead with the batch, and splat "
          "constants): export with a dynamic batch (torch.onnx.export's "
          "dynamic_shapes or dynamic_axes) to use --" +
          flagPrefix + "batch")
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
    failAtProducer(output.name(),
                   "output '" + output.name() + "' has leading dimension " +
                       llvm::Twine(type.getDimSize(0)) + ", not the batch " +
                       llvm::Twine(rebinding->requested) + ": " +
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
    failAt(node.loc, "Resize with axes or an aspect-ratio "
                     "policy needs a static input shape");
  int64_t rank = type.getRank();
  SmallVector<int64_t> axes;
  if (axesAttr)
    for (int64_t axis : intsOf(*axesAttr)) {
      int64_t normalized = axis < 0 ? axis + rank : axis;
      if (normalized < 0 || normalized >= rank ||
          llvm::is_contained(axes, normalized))
        failAt(node.loc, "Resize axis " + llvm::Twine(axis) +
                             " is out of range for rank " + llvm::Twine(rank) +
                             " or repeated");
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
      failAt(node.loc, "Resize has " + llvm::Twine(given.size()) +
                           " roi values for " + llvm::Twine(axes.size()) +
                           " axes");
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
      failAt(node.loc, "Resize has " + llvm::Twine(given.size()) +
                           " sizes for " + llvm::Twine(axes.size()) + " axes");
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
        scale =
            policy == "not_larger" ? std::min(scale, s) : std::max(scale, s);
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
    failAt(node.loc, "Resize with axes needs constant scales or sizes");
  SmallVector<float> full(rank, 1.0f);
  SmallVector<float> given(scalesAttr.getValues<float>());
  if (given.size() != axes.size())
    failAt(node.loc, "Resize has " + llvm::Twine(given.size()) +
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
    failAt(node.loc, node.getVersionedOp() + " needs an input of known rank");
  int64_t rank = type.getRank();
  if (axis < -rank || axis >= rank)
    failAt(node.loc, "" + node.opType + " axis " + llvm::Twine(axis) +
                         " is out of range for rank " + llvm::Twine(rank));
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

} // namespace vram::importer
