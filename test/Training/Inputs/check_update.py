"""Checks one optimizer step printed by `vram-run --print` against the
textbook update (PyTorch's SGD, SGD with momentum, Adam, AdamW and
clip_grad_norm_), computed in float64 from the same step's gradients
(`optimizer=none`) and parameters (`optimizer=sgd lr=0`, which returns them
unchanged). The optimizer state starts at zero, as vram-run generates it, and
the step count at 0 (so t = 1).

usage: check_update.py GRADS PARAMS STEP --rule=R [--lr= --momentum=
       --beta1= --beta2= --eps= --weight-decay= --clip-norm=]
"""
import argparse
import re
import sys

import numpy as np


def read_outputs(path):
    """name -> float64 array, from vram-run --print."""
    outputs, name, rows = {}, None, []
    header = re.compile(r"output \d+ '([^']+)': tensor<([^>]*)>")

    def flush():
        if name is not None:
            values = [float(v) for v in re.findall(r"[-+0-9.eEinfa]+",
                                                    " ".join(rows))]
            outputs[name] = np.array(values, dtype=np.float64)

    with open(path) as f:
        for line in f:
            match = header.match(line)
            if match:
                flush()
                name, rows = match.group(1), []
            elif name is not None and not line.startswith(("/", "note")):
                rows.append(line.replace("[", " ").replace("]", " ")
                            .replace(",", " "))
    flush()
    return outputs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("grads")
    parser.add_argument("params")
    parser.add_argument("step")
    parser.add_argument("--rule", required=True)
    parser.add_argument("--lr", type=float, default=1e-3)  # vram-train's
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--beta1", type=float, default=0.9)
    parser.add_argument("--beta2", type=float, default=0.999)
    parser.add_argument("--eps", type=float, default=1e-8)
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--clip-norm", type=float, default=0.0)
    args = parser.parse_args()
    grads = read_outputs(args.grads)
    params = read_outputs(args.params)
    step = read_outputs(args.step)

    names = [n[:-len(".grad")] for n in grads if n.endswith(".grad")]
    scale = 1.0
    if args.clip_norm > 0:
        norm = np.sqrt(sum(np.sum(grads[n + ".grad"] ** 2) for n in names))
        scale = min(1.0, args.clip_norm / (norm + 1e-6))
    expected = {}
    t = 1.0
    for n in names:
        g, p = grads[n + ".grad"] * scale, params[n]
        if args.weight_decay and args.rule != "adamw":
            g = g + args.weight_decay * p
        if args.rule == "sgd":
            expected[n] = p - args.lr * g
        elif args.rule == "momentum":
            v = g  # mu * 0 + g
            expected[n + ".momentum"] = v
            expected[n] = p - args.lr * v
        else:
            m = (1 - args.beta1) * g
            v = (1 - args.beta2) * g * g
            expected[n + ".exp_avg"], expected[n + ".exp_avg_sq"] = m, v
            update = (m / (1 - args.beta1 ** t)) / (
                np.sqrt(v / (1 - args.beta2 ** t)) + args.eps)
            if args.rule == "adamw":
                update = update + args.weight_decay * p
            expected[n] = p - args.lr * update
    if args.rule in ("adam", "adamw"):
        expected["step"] = np.array([t])

    failures = 0
    for name, want in expected.items():
        got = step.get(name)
        if got is None:
            print(f"missing result '{name}'")
            failures += 1
        elif not np.allclose(got, want, rtol=1e-5, atol=1e-7):
            worst = np.max(np.abs(got - want))
            print(f"'{name}' differs: max |difference| {worst:.3g}")
            failures += 1
    if not np.isclose(step["loss"], grads["loss"]).all():
        print("the loss differs from the gradient run's")
        failures += 1
    if failures:
        sys.exit(1)
    print(f"{len(expected)} updated tensors match the {args.rule} update")


if __name__ == "__main__":
    main()
