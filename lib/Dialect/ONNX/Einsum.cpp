//===- Einsum.cpp - ONNX Einsum equations, parsed -------------------------===//

#include "vram/Dialect/ONNX/Einsum.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>

using namespace vram;

static llvm::Error einsumError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "equation " + message);
}

std::string EinsumSpec::reducedLabels() const {
  std::string reduced;
  for (const std::string &input : inputs)
    for (char label : input)
      if (!llvm::is_contained(output, label) &&
          !llvm::is_contained(reduced, label))
        reduced.push_back(label);
  return reduced;
}

llvm::SmallVector<int64_t> EinsumSpec::outputShape() const {
  llvm::SmallVector<int64_t> shape;
  for (char label : output)
    shape.push_back(extents.at(label));
  return shape;
}

std::string EinsumSpec::equation() const {
  return llvm::join(inputs, ",") + "->" + output;
}

llvm::Expected<EinsumSpec>
vram::parseEinsum(llvm::StringRef equation,
                  llvm::ArrayRef<llvm::ArrayRef<int64_t>> operandShapes) {
  std::string text;
  for (char c : equation)
    if (c != ' ')
      text.push_back(c);
  llvm::StringRef rest(text);
  auto [lhs, rhs] = rest.split("->");
  bool explicitOutput = rest.contains("->");
  llvm::SmallVector<llvm::StringRef> terms;
  lhs.split(terms, ',');
  if (terms.size() != operandShapes.size())
    return einsumError("'" + equation + "' has " + llvm::Twine(terms.size()) +
                       " operand terms for " +
                       llvm::Twine(operandShapes.size()) + " operands");
  auto isLabel = [](char c) { return llvm::isAlpha(c); };
  for (char c : text)
    if (!isLabel(c) && !llvm::is_contained(llvm::StringRef(",->."), c))
      return einsumError("'" + equation + "' has the character '" +
                         llvm::Twine(c) + "'; labels are letters");
  // Letters the equation leaves free name the ellipsis dims.
  std::string spare;
  for (char c = 'a'; c <= 'z'; ++c)
    for (char letter : {c, char(c - 'a' + 'A')})
      if (!llvm::is_contained(text, letter))
        spare.push_back(letter);

  EinsumSpec spec;
  size_t ellipsisRank = 0;
  llvm::SmallVector<std::pair<std::string, std::string>> parts; // before, after
  for (auto [term, shape] : llvm::zip(terms, operandShapes)) {
    auto [before, after] = term.split("...");
    bool hasEllipsis = term.contains("...");
    if (!llvm::all_of(before, isLabel) || !llvm::all_of(after, isLabel))
      return einsumError("'" + equation + "': term '" + term +
                         "' is malformed");
    size_t letters = before.size() + after.size();
    if (letters > shape.size() || (!hasEllipsis && letters != shape.size()))
      return einsumError("'" + equation + "': term '" + term + "' has " +
                         llvm::Twine(letters) +
                         " labels for an operand of rank " +
                         llvm::Twine(shape.size()));
    ellipsisRank = std::max(ellipsisRank, shape.size() - letters);
    parts.push_back({before.str(), after.str()});
  }
  if (ellipsisRank > spare.size())
    return einsumError("'" + equation +
                       "' needs more labels than there are "
                       "letters");
  std::string ellipsis = spare.substr(0, ellipsisRank);
  for (auto [part, shape] : llvm::zip(parts, operandShapes)) {
    size_t own = shape.size() - part.first.size() - part.second.size();
    std::string labels =
        part.first + ellipsis.substr(ellipsisRank - own) + part.second;
    for (auto [label, extent] : llvm::zip(labels, shape)) {
      auto [it, inserted] = spec.extents.insert({label, extent});
      if (inserted || it->second == extent || extent < 0)
        continue;
      bool broadcasts = llvm::is_contained(ellipsis, label);
      if (it->second < 0 || (broadcasts && it->second == 1)) {
        it->second = extent;
        continue;
      }
      if (broadcasts && extent == 1)
        continue;
      return einsumError("'" + equation + "': label '" + llvm::Twine(label) +
                         "' has sizes " + llvm::Twine(it->second) + " and " +
                         llvm::Twine(extent));
    }
    spec.inputs.push_back(labels);
  }
  if (explicitOutput) {
    auto [before, after] = rhs.split("...");
    if (!llvm::all_of(before, isLabel) || !llvm::all_of(after, isLabel))
      return einsumError("'" + equation + "': result '" + rhs +
                         "' is malformed");
    spec.output =
        before.str() + (rhs.contains("...") ? ellipsis : "") + after.str();
  } else {
    // numpy's implicit mode: the ellipsis, then the letters used once, in
    // alphabetical order.
    std::string once;
    for (auto &[label, extent] : spec.extents)
      if (!llvm::is_contained(ellipsis, label) && llvm::count(lhs, label) == 1)
        once.push_back(label);
    llvm::sort(once);
    spec.output = ellipsis + once;
  }
  for (auto [i, label] : llvm::enumerate(spec.output))
    if (!spec.extents.count(label) || spec.output.find(label) != i)
      return einsumError("'" + equation + "': result label '" +
                         llvm::Twine(label) +
                         "' is not an operand's or repeats");
  return spec;
}
