#!/usr/bin/env python3
"""Generates ONNX backend node tests for the supported ops at every opset.

Needs the PyPI onnx package (>= 1.16; written against 1.23), numpy, and
optionally onnxruntime (a second, per-opset-faithful reference). Debian's
python3-onnx (1.12) is too old: run this with a Python that has PyPI onnx.

    python3 scripts/make_node_tests.py OUT_DIR [--summary docs/node-tests-per-opset.md]

Every node test of `onnx.backend.test.case.node.collect_testcases()` whose
node is a supported op (and every function-expanded test whose nodes are all
supported ops) is re-targeted to every default-domain opset from --min-opset
(7) to the newest the onnx package knows. Per target opset T the first of
these that yields a valid model wins; each step starts from the nearest
opset already generated in the same direction (the case's own model first):

  original      T is the case's own opset: the case unchanged.
  same-schema   every node's operator has the same since-version at T as in
                the base model: the same nodes, only opset_import (and the
                IR version, the lowest T allows) change.
  converted     onnx.version_converter.convert_version(base, T).
  converted+frozen
                as above after turning the graph inputs that feed operands
                which are attributes at T (axes, split, pads, min/max, ...)
                into initializers; the test data drops those inputs.
  rewritten     for older targets where the converter has no adapter: such
                constant operands become the attributes of the older schema
                (Clip min/max, Pad pads/value, Split split, Slice starts/...;
                Split's num_outputs becomes the split the expected outputs
                give; Pad's axes fold into full pads; operands and attributes
                whose value is what the older op implies are dropped: Slice
                steps of 1, Dropout's seed and training_mode=0 at inference,
                Resize's empty roi, attributes at their default; Resize 11's
                required roi/scales get empty tensors).
  retargeted    the base's nodes unchanged under opset T although a schema
                changed (e.g. only types were added).

A generated model is kept when onnx.checker (full check, strict shape
inference) accepts it and, unless it is `original` or `same-schema` (the
case's node under the same schema: its outputs are the case's by
definition), its outputs match the case's expected outputs at the case's
tolerances (ONNX's backend runner: rtol 1e-3, atol 1e-7,
np.testing.assert_allclose, dtype and shape equal). onnxruntime is the judge
when it runs the model: it keeps one kernel per opset range, while
onnx.reference.ReferenceEvaluator implements only the newest semantics of
some ops (Softmax, Resize) and gets some old ones wrong
(BatchNormalization_9 applies momentum at inference). When onnxruntime
cannot run it, a `converted` model is kept if the reference evaluator
matches; `rewritten` and `retargeted` ones are not. Before opset 11 axis/axes
must be non-negative (the checker does not say so): such models are dropped.
Both evaluators' verdicts are recorded for every test.

Output: OUT_DIR/<case>_opset<T>/model.onnx + test_data_set_0/{input,output}_N.pb
(the layout of ONNX's backend test data and Debian's libonnx-testdata), and
OUT_DIR/manifest.json with every generated test's provenance and every
(case, opset) that could not be generated and why.
"""

from __future__ import annotations

import argparse
import collections
import copy
import hashlib
import io
import json
import os
import re
import shutil
import sys
import tarfile
import warnings

# Every supported operator of the onnx dialect (docs/import.md).
SUPPORTED = [
    "Conv", "ConvTranspose", "BatchNormalization", "LayerNormalization",
    "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Erf", "Gelu", "HardSigmoid",
    "HardSwish", "Clip", "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Reciprocal", "Neg",
    "Exp", "Log", "MatMul", "Gemm", "MaxPool", "AveragePool",
    "GlobalAveragePool", "Flatten", "Reshape", "Transpose", "Concat", "Split",
    "Slice", "Gather", "Softmax", "ReduceMean", "ReduceSum", "Dropout",
    "Identity", "Constant", "Shape", "Unsqueeze", "Squeeze", "Expand", "Cast",
    "Where", "Pad", "Resize", "Greater", "Equal", "ScatterElements",
    "ScatterND", "Einsum", "Cos", "Sin", "Abs", "Trilu",
    # Expanded at import into the ops above (lib/Dialect/ONNX/Expansion.cpp).
    "InstanceNormalization", "GroupNormalization", "RMSNormalization",
    "Attention", "LSTM", "GRU", "Min", "Max",
]

MIN_ONNX = (1, 16)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", help="directory to write (replaced)")
    parser.add_argument("--min-opset", type=int, default=7)
    parser.add_argument("--max-opset", type=int,
                        help="default: the newest opset of the onnx package")
    parser.add_argument("--ops", help="comma-separated subset of the ops")
    parser.add_argument("--no-expanded", action="store_true",
                        help="skip function-expanded multi-node tests")
    parser.add_argument("--no-onnxruntime", action="store_true",
                        help="validate with the reference evaluator only")
    parser.add_argument("--summary", help="write the Markdown count tables")
    parser.add_argument("--tarball",
                        help="also pack OUT_DIR into this .tar.xz "
                             "(reproducible: sorted, no owners or times)")
    parser.add_argument("--seed", type=int, default=0,
                        help="numpy seed for the test generators (several "
                             "draw random inputs without one)")
    parser.add_argument("--quiet", action="store_true")
    return parser.parse_args()


def check_onnx_version():
    try:
        import onnx  # noqa: F401
    except ImportError:
        sys.exit("make_node_tests.py: the onnx Python package is missing "
                 f"(need PyPI onnx >= {'.'.join(map(str, MIN_ONNX))})")
    import onnx
    version = tuple(int(x) for x in re.findall(r"\d+", onnx.__version__)[:2])
    if version < MIN_ONNX:
        sys.exit(f"make_node_tests.py: onnx {onnx.__version__} is too old "
                 f"(need >= {'.'.join(map(str, MIN_ONNX))}; Debian's "
                 "python3-onnx is 1.12, use a PyPI onnx)")


check_onnx_version()

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import helper, numpy_helper, version_converter  # noqa: E402
from onnx.backend.test.runner import Runner  # noqa: E402
from onnx.defs import SchemaError  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

try:
    import onnxruntime
    onnxruntime.set_default_logger_severity(4)
except ImportError:
    onnxruntime = None

DEFAULT_DOMAINS = ("", "ai.onnx")


def one_line(text, limit=200):
    text = " ".join(str(text).split())
    # Converter assertions start with a build path; keep the message.
    text = re.sub(r"^/\S+:\d+: \w+: ", "", text)
    return text[:limit]


def default_opset(model):
    for opset in model.opset_import:
        if opset.domain in DEFAULT_DOMAINS:
            return opset.version
    return None


def since_version(op_type, opset):
    """The since-version of op_type's schema at opset, None if undefined."""
    try:
        schema = onnx.defs.get_schema(op_type, opset, "")
    except SchemaError:
        return None
    if schema.deprecated:
        return None
    return schema.since_version


def schema_inputs(op_type, opset):
    return [p.name for p in onnx.defs.get_schema(op_type, opset, "").inputs]


def node_ops(model):
    return [n.op_type for n in model.graph.node]


def set_opset(model, opset):
    """Sets the default-domain opset and the lowest IR version it allows."""
    for entry in model.opset_import:
        if entry.domain in DEFAULT_DOMAINS:
            entry.version = opset
    model.ir_version = helper.find_min_ir_version_for(
        [helper.make_opsetid("", opset)])
    if model.ir_version < 4 and len(model.graph.initializer):
        # Before IR 4 every initializer must also be a graph input, which
        # would make it a runtime input again: use Constant nodes instead.
        constants = [helper.make_node("Constant", [], [t.name], value=t)
                     for t in model.graph.initializer]
        del model.graph.initializer[:]
        nodes = constants + list(model.graph.node)
        del model.graph.node[:]
        model.graph.node.extend(nodes)
    return model


def to_array(value):
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    return value


class Test:
    """One model with its data set: inputs by graph-input position."""

    def __init__(self, model, inputs, outputs):
        self.model = model
        self.inputs = list(inputs)
        self.outputs = list(outputs)

    def copy(self):
        return Test(copy.deepcopy(self.model), self.inputs, self.outputs)

    def opset(self):
        return default_opset(self.model)

    def feeds(self):
        # np.asarray: onnxruntime refuses numpy scalars (0-d inputs).
        return {vi.name: np.asarray(to_array(v))
                for vi, v in zip(self.model.graph.input, self.inputs)}


def compare(test, actual, rtol, atol):
    expected = [to_array(o) for o in test.outputs]
    try:
        Runner.assert_similar_outputs(expected, list(actual), rtol, atol)
    except AssertionError as e:
        return one_line(e, 160)
    return None


def run_reference(test, rtol, atol):
    """'match', or a reason ('mismatch: ...', 'cannot run: ...')."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            actual = ReferenceEvaluator(test.model).run(None, test.feeds())
    except Exception as e:  # noqa: BLE001 - any failure means "cannot run"
        return "cannot run: " + one_line(f"{type(e).__name__}: {e}")
    mismatch = compare(test, actual, rtol, atol)
    return "match" if mismatch is None else "mismatch: " + mismatch


def run_onnxruntime(test, rtol, atol):
    if onnxruntime is None:
        return "cannot run: onnxruntime not installed"
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 4
    options.graph_optimization_level = (
        onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL)
    try:
        session = onnxruntime.InferenceSession(
            test.model.SerializeToString(), options,
            providers=["CPUExecutionProvider"])
        actual = session.run(None, test.feeds())
    except Exception as e:  # noqa: BLE001
        return "cannot run: " + one_line(f"{type(e).__name__}: {e}")
    mismatch = compare(test, actual, rtol, atol)
    return "match" if mismatch is None else "mismatch: " + mismatch


def check(test):
    try:
        onnx.checker.check_model(test.model, full_check=True)
    except Exception as e:  # noqa: BLE001
        return one_line(f"checker: {e}")
    return None


def negative_axes(test):
    """Before opset 11 axis/axes had to be in [0, rank): the checker does
    not say so, and onnxruntime accepts negative ones."""
    if test.opset() >= 11:
        return None
    values = constant_values(test)
    for node in test.model.graph.node:
        for a in node.attribute:
            if a.name in ("axis", "axes") and (
                    a.i < 0 if a.type == onnx.AttributeProto.INT
                    else any(v < 0 for v in a.ints)):
                return f"{node.op_type} {a.name} < 0 needs opset 11"
        schema = onnx.defs.get_schema(node.op_type, test.opset(), "")
        for formal, name in zip([p.name for p in schema.inputs], node.input):
            if formal == "axes" and name in values and \
                    (np.asarray(values[name]) < 0).any():
                return f"{node.op_type} axes < 0 needs opset 11"
    return None


def validate(test, method, rtol, atol, use_ort):
    """(accepted, reason, validators) for a candidate model."""
    error = check(test)
    if error:
        return False, error, {}
    if method not in ("original", "same-schema"):
        error = negative_axes(test)
        if error:
            return False, error, {}
    validators = {"reference": run_reference(test, rtol, atol)}
    validators["onnxruntime"] = (run_onnxruntime(test, rtol, atol) if use_ort
                                 else "cannot run: disabled")
    if method in ("original", "same-schema"):
        return True, None, validators
    # onnxruntime keeps one kernel per opset range, so it is the judge when
    # it runs the model; the reference evaluator implements only the newest
    # semantics of some ops (Softmax, Resize) and has bugs in old ones
    # (BatchNormalization_9 applies momentum at inference).
    ort, ref = validators["onnxruntime"], validators["reference"]
    if ort.startswith("mismatch"):
        return False, "onnxruntime " + ort, validators
    if ort == "match":
        return True, None, validators
    if method in ("retargeted", "rewritten"):
        return False, ("schema changed and onnxruntime cannot check the old "
                       "semantics: " + ort), validators
    if ref == "match":
        return True, None, validators
    return False, f"reference {ref}; onnxruntime {ort}", validators


def freeze_vanishing_inputs(test, target):
    """Turns graph inputs that feed operands missing at `target` into
    initializers. Returns (test, frozen names) or None if nothing to do."""
    graph_inputs = {vi.name: i for i, vi in enumerate(test.model.graph.input)}
    source = test.opset()
    frozen = set()
    for node in test.model.graph.node:
        try:
            old = schema_inputs(node.op_type, source)
            new = schema_inputs(node.op_type, target)
        except SchemaError:
            continue
        for position, name in enumerate(node.input):
            if not name or name not in graph_inputs:
                continue
            if old[min(position, len(old) - 1)] not in new:
                frozen.add(name)
    if not frozen:
        return None
    result = test.copy()
    keep_inputs, keep_values = [], []
    for vi, value in zip(test.model.graph.input, test.inputs):
        if vi.name in frozen:
            if isinstance(value, onnx.TensorProto):
                tensor = copy.deepcopy(value)
                tensor.name = vi.name
            else:
                tensor = numpy_helper.from_array(np.asarray(value), vi.name)
            result.model.graph.initializer.append(tensor)
        else:
            keep_inputs.append(copy.deepcopy(vi))
            keep_values.append(value)
    del result.model.graph.input[:]
    result.model.graph.input.extend(keep_inputs)
    result.inputs = keep_values
    return result, sorted(frozen)


# Operands that became attributes under another name in older opsets.
ATTRIBUTE_FOR_INPUT = {("Pad", "constant_value"): "value"}
# Operands an older schema lacks that can go when their value is the one the
# older operator implies.
DROPPABLE_INPUT = {
    ("Slice", "steps"): lambda v: bool(np.all(np.asarray(v) == 1)),
    ("Dropout", "training_mode"): lambda v: not bool(np.asarray(v).any()),
    ("Resize", "roi"): lambda v: np.asarray(v).size == 0,
}
# Attributes an older schema lacks whose value is the behaviour the older
# operator has (checked by onnxruntime's kernel for that opset).
DROPPABLE_ATTRIBUTE = {
    ("Resize", "coordinate_transformation_mode"): b"asymmetric",
}
# Operands required (not optional) by an older schema that newer tests omit:
# the value that means "not given".
REQUIRED_DEFAULT = {
    ("Resize", "roi"): np.zeros(0, np.float32),
    ("Resize", "scales"): np.zeros(0, np.float32),
}


class CannotRewrite(Exception):
    pass


def constant_values(test):
    """name -> numpy value of graph inputs (from the data set), initializers
    and Constant nodes (`value` only)."""
    values = {vi.name: to_array(v)
              for vi, v in zip(test.model.graph.input, test.inputs)}
    for t in test.model.graph.initializer:
        values[t.name] = numpy_helper.to_array(t)
    for node in test.model.graph.node:
        if node.op_type == "Constant" and node.attribute and \
                node.attribute[0].name == "value":
            values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return values


def make_attribute(name, attr_type, value):
    value = np.asarray(value)
    types = onnx.defs.OpSchema.AttrType
    if attr_type == types.INTS:
        return helper.make_attribute(name, [int(v) for v in value.ravel()])
    if attr_type == types.FLOATS:
        return helper.make_attribute(name, [float(v) for v in value.ravel()])
    if value.size != 1:
        raise CannotRewrite(f"{name}: {value.size} values for one attribute")
    if attr_type == types.INT:
        return helper.make_attribute(name, int(value.ravel()[0]))
    if attr_type == types.FLOAT:
        return helper.make_attribute(name, float(value.ravel()[0]))
    raise CannotRewrite(f"{name}: attribute type {attr_type}")


def pad_axes_to_full_pads(test, node, values):
    """Pad 18's axes folded into full-rank pads (Pad 2..13 have no axes)."""
    data, pads, axes = node.input[0], node.input[1], node.input[3]
    if pads not in values or axes not in values:
        raise CannotRewrite("Pad pads/axes are not constants")
    rank = next((len(vi.type.tensor_type.shape.dim)
                 for vi in test.model.graph.input if vi.name == data), None)
    if rank is None:
        raise CannotRewrite("Pad data is not a graph input")
    given = np.asarray(values[pads]).ravel()
    full = np.zeros(2 * rank, np.int64)
    axes_list = [int(a) % rank for a in np.asarray(values[axes]).ravel()]
    for i, axis in enumerate(axes_list):
        full[axis] = given[i]
        full[axis + rank] = given[len(axes_list) + i]
    name = pads + "_full"
    test.model.graph.initializer.append(numpy_helper.from_array(full, name))
    values[name] = full
    node.input[1] = name
    del node.input[3]
    return True


def rewrite_inputs_to_attributes(base, target):
    """The base's nodes rewritten for an older schema at `target` where
    operands became attributes: a constant operand (graph input frozen from
    the data set, initializer or Constant) moves to the attribute of the same
    name (Pad's constant_value to value), and Split's num_outputs (18)
    becomes the explicit split the expected outputs' shapes give. What the
    version converter lacks adapters for (Clip 11->10, Split 18->17, ...)."""
    test = base.copy()
    values = constant_values(base)
    expected = {vi.name: to_array(v)
                for vi, v in zip(base.model.graph.output, base.outputs)}
    changed = False
    extra_initializers = []
    for node in test.model.graph.node:
        old = onnx.defs.get_schema(node.op_type, base.opset(), "")
        new = onnx.defs.get_schema(node.op_type, target, "")
        if old.since_version == new.since_version:
            continue
        old_names = [p.name for p in old.inputs]
        new_names = [p.name for p in new.inputs]
        attributes = {a.name: a for a in node.attribute}
        if "num_outputs" in attributes and "num_outputs" not in new.attributes:
            axis = attributes["axis"].i if "axis" in attributes else 0
            try:
                sizes = [expected[o].shape[axis] for o in node.output]
            except KeyError as e:
                raise CannotRewrite(f"num_outputs: output {e} is not a graph "
                                    "output") from None
            node.attribute.remove(attributes.pop("num_outputs"))
            if "split" in new_names:
                name = node.name + "_split" if node.name else "split_sizes"
                extra_initializers.append(numpy_helper.from_array(
                    np.array(sizes, dtype=np.int64), name))
                while len(node.input) < 2:
                    node.input.append("")
                node.input[1] = name
            else:
                node.attribute.append(helper.make_attribute("split", sizes))
            changed = True
        if node.op_type == "Pad" and len(node.input) > 3 and node.input[3] \
                and "axes" not in new_names:
            changed |= pad_axes_to_full_pads(test, node, values)
        if node.op_type == "Dropout" and "seed" in attributes and \
                "seed" not in new.attributes:
            training = node.input[2] if len(node.input) > 2 else ""
            if training and (training not in values
                             or np.asarray(values[training]).any()):
                raise CannotRewrite("Dropout in training mode needs seed")
            # Only training mode draws from the seed.
            node.attribute.remove(attributes.pop("seed"))
            changed = True
        for name, attribute in list(attributes.items()):
            if name in new.attributes:
                continue
            value = helper.get_attribute_value(attribute)
            implied = DROPPABLE_ATTRIBUTE.get((node.op_type, name))
            old_default = old.attributes[name].default_value
            is_default = old_default.name and \
                helper.get_attribute_value(old_default) == value
            if value == implied or is_default:
                node.attribute.remove(attributes.pop(name))
                changed = True
        kept = collections.defaultdict(list)
        for position, name in enumerate(node.input):
            formal = old_names[min(position, len(old_names) - 1)]
            if formal in new_names:
                kept[formal].append(name)
                continue
            if not name:
                continue
            droppable = DROPPABLE_INPUT.get((node.op_type, formal))
            if droppable and name in values and droppable(values[name]):
                changed = True
                continue
            attribute = ATTRIBUTE_FOR_INPUT.get((node.op_type, formal), formal)
            if attribute not in new.attributes:
                raise CannotRewrite(f"{node.op_type} input '{formal}' has no "
                                    f"attribute at opset {target}")
            if name not in values:
                raise CannotRewrite(f"{node.op_type} input '{formal}' is "
                                    "computed, not a constant")
            node.attribute.append(make_attribute(
                attribute, new.attributes[attribute].type, values[name]))
            changed = True
        inputs = []
        for parameter in new.inputs:
            formal = parameter.name
            given = [n for n in kept.get(formal, []) if n]
            default = REQUIRED_DEFAULT.get((node.op_type, formal))
            if not given and default is not None and parameter.option == \
                    onnx.defs.OpSchema.FormalParameterOption.Single:
                name = f"{node.name or node.op_type}_{formal}_none"
                extra_initializers.append(
                    numpy_helper.from_array(default, name))
                kept[formal] = [name]
                changed = True
            inputs.extend(kept.get(formal, [""]))
        while inputs and not inputs[-1]:
            inputs.pop()
        del node.input[:]
        node.input.extend(inputs)
    if not changed:
        raise CannotRewrite("no operand to turn into an attribute")
    # Drop graph inputs and initializers nothing reads any more.
    used = {i for n in test.model.graph.node for i in n.input}
    used |= {o.name for o in test.model.graph.output}
    keep_inputs, keep_values = [], []
    for vi, value in zip(test.model.graph.input, test.inputs):
        if vi.name in used:
            keep_inputs.append(copy.deepcopy(vi))
            keep_values.append(value)
    del test.model.graph.input[:]
    test.model.graph.input.extend(keep_inputs)
    test.inputs = keep_values
    initializers = [t for t in test.model.graph.initializer if t.name in used]
    initializers += extra_initializers
    del test.model.graph.initializer[:]
    test.model.graph.initializer.extend(initializers)
    set_opset(test.model, target)
    return test


def drop_empty_axes(model):
    """The converter turns an empty `axes` operand (Reduce* 13/18: reduce
    every axis unless noop_with_empty_axes) into an empty `axes` attribute,
    which checkers before onnx 1.13 reject; the absent attribute means the
    same (every axis)."""
    for node in model.graph.node:
        for a in list(node.attribute):
            if a.name == "axes" and a.type == onnx.AttributeProto.INTS and \
                    not a.ints:
                noop = [b.i for b in node.attribute
                        if b.name == "noop_with_empty_axes"]
                if noop and noop[0]:
                    raise CannotRewrite("empty axes with noop_with_empty_axes")
                node.attribute.remove(a)


def convert(test, target):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = version_converter.convert_version(test.model, target)
    drop_empty_axes(model)
    result = Test(model, test.inputs, test.outputs)
    set_opset(result.model, target)
    return result


def candidates(base, original, target):
    """Yields (method, detail, make) attempts in order of preference; make
    is None where the attempt is the base retargeted as it is."""
    ops = set(node_ops(base.model))
    if all(since_version(op, target) == since_version(op, base.opset())
           for op in ops):
        yield "same-schema", None, None
        return
    for source in ([base, original] if base is not original else [base]):
        yield "converted", source.opset(), lambda s=source: convert(s, target)
        frozen = freeze_vanishing_inputs(source, target)
        if frozen:
            yield ("converted+frozen", (source.opset(), frozen[1]),
                   lambda f=frozen[0]: convert(f, target))
    if target < base.opset():
        yield ("rewritten", base.opset(),
               lambda: rewrite_inputs_to_attributes(base, target))
    yield "retargeted", None, None


def generate_case(case, subject, lo, hi, use_ort):
    """Returns ({opset: (Test, provenance)}, {opset: reason})."""
    inputs, outputs = case.data_sets[0]
    original = Test(case.model, inputs, outputs)
    source = original.opset()
    generated, failed = {}, {}
    if source is None:
        return generated, {lo: "no default-domain opset_import"}
    ok, reason, validators = validate(original, "original", case.rtol,
                                      case.atol, use_ort)
    if ok:
        generated[source] = (original, {"method": "original",
                                        "validators": validators})
    else:
        failed[source] = "the case itself: " + reason
    # Walk away from the case's opset one step at a time, also through
    # opsets outside [lo, hi] on the way (dropped at the end).
    for targets in (range(source - 1, min(lo, source) - 1, -1),
                    range(source + 1, max(hi, source) + 1)):
        base = original
        for target in targets:
            missing = [op for op in sorted(set(node_ops(base.model)))
                       if since_version(op, target) is None]
            if missing:
                failed[target] = "not defined at this opset: " + ", ".join(missing)
                continue
            reasons = []
            for method, detail, make in candidates(base, original, target):
                if make is None:
                    test = base.copy()
                    set_opset(test.model, target)
                else:
                    try:
                        test = make()
                    except Exception as e:  # noqa: BLE001
                        reasons.append(f"{method}: {one_line(e)}")
                        continue
                ok, reason, validators = validate(test, method, case.rtol,
                                                  case.atol, use_ort)
                if ok:
                    provenance = {"method": method, "from_opset": base.opset(),
                                  "validators": validators}
                    if method == "converted":
                        provenance["from_opset"] = detail
                    if method == "converted+frozen":
                        provenance["from_opset"] = detail[0]
                        provenance["frozen_inputs"] = detail[1]
                    if method == "rewritten":
                        provenance["from_opset"] = detail
                    generated[target] = (test, provenance)
                    base = test
                    break
                reasons.append(f"{method}: {reason}")
            else:
                failed[target] = " | ".join(reasons)

    def inside(items):
        return {o: v for o, v in items.items() if lo <= o <= hi}
    return inside(generated), inside(failed)


def write_tensor(path, value, name):
    if isinstance(value, onnx.TensorProto):
        tensor = copy.deepcopy(value)
        tensor.name = name
    else:
        tensor = numpy_helper.from_array(np.asarray(value), name)
    with open(path, "wb") as f:
        f.write(tensor.SerializeToString())


def write_test(directory, test):
    os.makedirs(os.path.join(directory, "test_data_set_0"))
    with open(os.path.join(directory, "model.onnx"), "wb") as f:
        f.write(test.model.SerializeToString())
    data = os.path.join(directory, "test_data_set_0")
    for j, (vi, value) in enumerate(zip(test.model.graph.input, test.inputs)):
        write_tensor(os.path.join(data, f"input_{j}.pb"), value, vi.name)
    for j, (vi, value) in enumerate(zip(test.model.graph.output, test.outputs)):
        write_tensor(os.path.join(data, f"output_{j}.pb"), value, vi.name)


def is_tensor_model(model):
    return all(vi.type.HasField("tensor_type")
               for vi in list(model.graph.input) + list(model.graph.output))


def draws_random_numbers(case):
    """Whether the case's expected outputs are a random draw: Dropout in
    training mode with a nonzero ratio. ONNX leaves the generator to the
    runtime (the seed attribute only makes a runtime repeat itself), and
    these cases hold numpy's draws, which no runtime reproduces
    (onnxruntime skips them too)."""
    for node in case.model.graph.node:
        if node.op_type != "Dropout" or len(node.input) < 3:
            continue
        names = [i.name for i in case.model.graph.input]
        for inputs, _ in case.data_sets:
            values = dict(zip(names, inputs))
            ratio = values.get(node.input[1], 0.5)
            training = values.get(node.input[2], False)
            if bool(np.asarray(training)) and float(np.asarray(ratio)) > 0:
                return True
    return False


def select_cases(ops, expanded):
    """[(case, subject op, kind)]: single-node tests of the ops, and
    function-expanded tests whose nodes are all supported ops."""
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    by_name = {c.name: c for c in cases}
    selected = []
    for case in cases:
        model_ops = node_ops(case.model)
        domains = {n.domain for n in case.model.graph.node}
        if not domains <= set(DEFAULT_DOMAINS) or not model_ops:
            continue
        if len(model_ops) == 1 and "_expanded" not in case.name:
            if model_ops[0] in ops:
                selected.append((case, model_ops[0], "node"))
        elif expanded and set(model_ops) <= set(SUPPORTED):
            base = re.sub(r"_expanded(_ver\d+)?$", "", case.name)
            parent = by_name.get(base)
            subject = node_ops(parent.model)[0] if parent else base
            if subject in ops or (subject not in SUPPORTED
                                  and ops == set(SUPPORTED)):
                selected.append((case, subject, "expanded"))
    return selected


def summarize(manifest, path):
    lo, hi = manifest["min_opset"], manifest["max_opset"]
    opsets = list(range(lo, hi + 1))
    counts = collections.defaultdict(collections.Counter)
    na = collections.defaultdict(set)
    cases = collections.defaultdict(set)
    for t in manifest["tests"]:
        key = (t["kind"], t["op"])
        counts[key][t["opset"]] += 1
        cases[key].add(t["case"])
    for f in manifest["not_generated"]:
        key = (f["kind"], f["op"])
        cases[key].add(f["case"])
        if f["reason"].startswith("not defined at this opset"):
            na[key].add(f["opset"])

    def row(label, key):
        cells = []
        for opset in opsets:
            n = counts[key][opset]
            undefined = opset in na[key] and n == 0
            cells.append("·" if undefined else str(n))
        return f"| {label} | {len(cases[key])} | " + " | ".join(cells) + \
            f" | {sum(counts[key].values())} |"

    header = ("| op | cases | " + " | ".join(str(o) for o in opsets) +
              " | total |\n|" + " --- |" * (len(opsets) + 3))
    lines = [
        "# ONNX node tests per operator and opset",
        "",
        "Written by `scripts/make_node_tests.py --summary` "
        f"(onnx {manifest['onnx_version']}"
        + (f", onnxruntime {manifest['onnxruntime_version']}"
           if manifest.get("onnxruntime_version") else "")
        + f", numpy {manifest['numpy_version']}, opsets {lo}..{hi}).",
        "",
        "The node tests of `onnx.backend.test.case.node.collect_testcases()` "
        "for every supported operator, each re-targeted to every opset where "
        "that gives a valid test with the case's expected outputs (the "
        "script's docstring says how, and how each model is validated). "
        "Fixtures: `test/Execution/Inputs/onnx-node-tests-opsets.tar.xz` "
        "(layout of ONNX's backend test data; `manifest.json` holds every "
        "test's provenance and every (case, opset) not generated with its "
        "reason). Harness: `test/Execution/onnx-node-tests-opsets.test` "
        "imports each with vram-opt and runs it with vram-run; its minimum "
        "counts per op and opset (generated / imported / passed) are in "
        "`test/Execution/Inputs/onnx-node-tests-opsets.expected`.",
        "",
        "Cells count generated tests; `·`: the operator is not defined at "
        "that opset; `0`: it is, but none of its tests carries there "
        "(listed below). Pass counts: the measured section at the end.",
        "",
        "## Single-node tests of the supported operators",
        "",
        header,
    ]
    total = collections.Counter()
    node_keys = sorted(k for k in cases if k[0] == "node")
    for key in node_keys:
        lines.append(row(key[1], key))
        total.update(counts[key])
    lines.append("| **total** | " + str(sum(len(cases[k]) for k in node_keys))
                 + " | " + " | ".join(str(total[o]) for o in opsets) +
                 f" | **{sum(total.values())}** |")
    missing_ops = [op for op in manifest["ops"] if ("node", op) not in cases]
    exp_keys = sorted(k for k in cases if k[0] == "expanded")
    if exp_keys:
        lines += ["", "## Function-expanded tests whose nodes are all "
                  "supported operators", "",
                  "Keyed by the function they expand; counted apart from the "
                  "single-node tests above.", "", header]
        etotal = collections.Counter()
        for key in exp_keys:
            lines.append(row(key[1], key))
            etotal.update(counts[key])
        lines.append("| **total** | " +
                     str(sum(len(cases[k]) for k in exp_keys)) + " | " +
                     " | ".join(str(etotal[o]) for o in opsets) +
                     f" | **{sum(etotal.values())}** |")

    lines += ["", "## Nothing generated", ""]
    if missing_ops:
        lines.append("Supported operators without any node test in onnx "
                     f"{manifest['onnx_version']}: " + ", ".join(missing_ops)
                     + ".")
        lines.append("")
    lines.append("Operator and opset where the operator is defined but no "
                 "test could be generated, with the opsets and the "
                 "first reason given:")
    lines.append("")
    reasons = collections.defaultdict(list)
    for f in manifest["not_generated"]:
        reasons[(f["kind"], f["op"], f["opset"])].append(f["reason"])
    if not any(counts[key][o] == 0 and o not in na[key]
               for key in node_keys for o in opsets):
        lines.append("- single-node tests: none; every supported operator "
                     "has tests at every opset where it is defined.")
    for key in node_keys + exp_keys:
        zero = [o for o in opsets if counts[key][o] == 0 and o not in na[key]]
        if not zero:
            continue
        sample = next((r for o in zero for r in reasons[(key[0], key[1], o)]),
                      "")
        label = key[1] + (" (expanded)" if key[0] == "expanded" else "")
        lines.append(f"- {label}: opsets {compress(zero)} "
                     f"- e.g. {one_line(sample, 240)}")
    lines += ["", "Operators not defined at some opsets of the range "
              "(nothing to generate there):", ""]
    for key in node_keys:
        undefined = sorted(o for o in na[key] if counts[key][o] == 0)
        if undefined:
            lines.append(f"- {key[1]}: {compress(undefined)}")
    lines += ["", "## Cases not carried to every opset where their operator "
              "exists", "",
              "Per operator: the (case, opset) pairs missing, by reason "
              "(`manifest.json` has each one).", "",
              "| op | missing pairs | reasons |", "| --- | --- | --- |"]
    for key in node_keys + exp_keys:
        kinds_here = collections.Counter(
            reason_kind(f["reason"]) for f in manifest["not_generated"]
            if (f["kind"], f["op"]) == key
            and not f["reason"].startswith("not defined"))
        if kinds_here:
            label = key[1] + (" (expanded)" if key[0] == "expanded" else "")
            lines.append(f"| {label} | {sum(kinds_here.values())} | " +
                         "; ".join(f"{k}: {n}" for k, n in
                                   kinds_here.most_common()) + " |")
    lines += ["", "## Why (case, opset) pairs were not generated", "",
              "| reason | pairs |", "| --- | --- |"]
    kinds = collections.Counter(reason_kind(f["reason"])
                                for f in manifest["not_generated"])
    for reason, n in kinds.most_common():
        lines.append(f"| {reason} | {n} |")
    methods = collections.Counter(t["method"] for t in manifest["tests"])
    lines += ["", "## How the tests were generated", "",
              "| method | tests |", "| --- | --- |"]
    for method, n in methods.most_common():
        lines.append(f"| {method} | {n} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def reason_kind(reason):
    if reason.startswith("not defined"):
        return "operator not defined at the opset"
    if reason.startswith("the case itself"):
        return "the case fails at its own opset"
    if reason.startswith("random draw"):
        return "random draw (numpy's numbers, not specified by ONNX)"
    parts = reason.split(" | ")
    last = parts[-1]
    if "checker" in last:
        return "checker rejects the model (types or attributes not allowed)"
    if "mismatch" in last:
        return "outputs differ from the case's (semantics changed)"
    if "needs opset 11" in last:
        return "negative axis/axes (allowed from opset 11)"
    if "onnxruntime cannot check" in last:
        return "schema changed, no per-opset evaluator could confirm"
    return "other: " + one_line(last, 80)


def compress(values):
    out, start, prev = [], None, None
    for v in values + [None]:
        if start is None:
            start = prev = v
        elif v == prev + 1:
            prev = v
        else:
            out.append(str(start) if start == prev else f"{start}-{prev}")
            start = prev = v
    return ", ".join(out)


def pack(directory, tarball):
    """A reproducible .tar.xz of directory's contents under its basename.
    Neighbouring entries (one case at every opset) repeat the same data, so
    xz with a large dictionary stores it about once."""
    root = os.path.basename(os.path.normpath(directory))
    paths = []
    for parent, dirs, files in os.walk(directory):
        dirs.sort()
        for name in sorted(files):
            paths.append(os.path.join(parent, name))
    paths.sort()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in paths:
            info = tarfile.TarInfo(
                os.path.join(root, os.path.relpath(path, directory)))
            info.size = os.path.getsize(path)
            info.mode = 0o644
            with open(path, "rb") as f:
                tar.addfile(info, f)
    import lzma
    with open(tarball, "wb") as f:
        f.write(lzma.compress(buffer.getvalue(), preset=9 | lzma.PRESET_EXTREME))


def main():
    args = parse_args()
    lo = args.min_opset
    hi = args.max_opset or onnx.defs.onnx_opset_version()
    ops = set(args.ops.split(",")) if args.ops else set(SUPPORTED)
    np.random.seed(args.seed)
    selected = select_cases(ops, not args.no_expanded)

    if os.path.exists(args.output):
        shutil.rmtree(args.output)
    os.makedirs(args.output)
    manifest = {
        "generator": "scripts/make_node_tests.py",
        "onnx_version": onnx.__version__,
        "onnxruntime_version": (onnxruntime.__version__
                                if onnxruntime and not args.no_onnxruntime
                                else None),
        "numpy_version": np.__version__,
        "ops": [op for op in SUPPORTED if op in ops],
        "min_opset": lo,
        "max_opset": hi,
        "rtol": 1e-3,
        "atol": 1e-7,
        "tests": [],
        "not_generated": [],
    }
    for index, (case, subject, kind) in enumerate(selected):
        if not is_tensor_model(case.model):
            manifest["not_generated"].append(
                {"case": case.name, "op": subject, "kind": kind,
                 "opset": None, "reason": "non-tensor inputs or outputs"})
            continue
        if draws_random_numbers(case):
            manifest["not_generated"].append(
                {"case": case.name, "op": subject, "kind": kind,
                 "opset": None, "reason": "random draw: expected outputs are "
                 "numpy's random numbers, which ONNX does not specify"})
            continue
        generated, failed = generate_case(case, subject, lo, hi,
                                          not args.no_onnxruntime)
        for opset, (test, provenance) in sorted(generated.items()):
            name = f"{case.name}_opset{opset}"
            write_test(os.path.join(args.output, name), test)
            initializers = hashlib.sha256()
            for t in test.model.graph.initializer:
                initializers.update(t.SerializeToString())
            manifest["tests"].append(dict(
                name=name, case=case.name, op=subject, kind=kind,
                opset=opset, source_opset=default_opset(case.model),
                ops=sorted(set(node_ops(test.model))),
                initializers_sha256=initializers.hexdigest()[:16],
                rtol=case.rtol, atol=case.atol, **provenance))
        for opset, reason in sorted(failed.items()):
            manifest["not_generated"].append(
                {"case": case.name, "op": subject, "kind": kind,
                 "opset": opset, "reason": reason})
        if not args.quiet:
            print(f"[{index + 1}/{len(selected)}] {case.name}: "
                  f"{len(generated)} opsets", file=sys.stderr)
    with open(os.path.join(args.output, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    if args.summary:
        summarize(manifest, args.summary)
    if args.tarball:
        pack(args.output, args.tarball)
    per_kind = collections.Counter(t["kind"] for t in manifest["tests"])
    print(f"onnx {onnx.__version__}, opsets {lo}..{hi}: "
          f"{len(selected)} cases, {len(manifest['tests'])} tests "
          f"({per_kind['node']} single-node, {per_kind['expanded']} expanded) "
          f"in {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
