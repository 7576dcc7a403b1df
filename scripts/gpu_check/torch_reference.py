#!/usr/bin/env python3
"""PyTorch's figures for the steps scripts/gpu_check.sh runs, on the same GPU:
time per step (CUDA events, after warm-up) and the caching allocator's peak
(torch.cuda.max_memory_allocated), eager mode, fp32, cuDNN as PyTorch picks.

Usage: torch_reference.py   (needs torch and torchvision with a CUDA device)
"""
import torch
import torchvision


def measure(name, model, batch, train, repeat=10):
    device = torch.device("cuda")
    model = model.to(device).train(train)
    images = torch.randn(batch, 3, 224, 224, device=device)
    labels = torch.randint(0, 1000, (batch,), device=device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        if train:
            optimizer.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
        else:
            with torch.no_grad():
                model(images)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeat):
        step()
    end.record()
    torch.cuda.synchronize()
    seconds = start.elapsed_time(end) / 1000 / repeat
    peak = torch.cuda.max_memory_allocated()
    print(f"| {name} | {batch} | {'train' if train else 'eval'} | {seconds:.5f} | "
          f"{peak:,} | {peak - base:,} |")


def main():
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print("| model | batch | mode | s/step | peak allocated | peak above resident |")
    print("|---|---|---|---|---|---|")
    for name in ("resnet18", "resnet50", "mobilenet_v2", "vgg16", "densenet121",
                 "efficientnet_b0"):
        measure(name, getattr(torchvision.models, name)(), 1, False)
    measure("resnet18", torchvision.models.resnet18(), 8, True)
    measure("resnet50", torchvision.models.resnet50(), 8, True)


if __name__ == "__main__":
    main()
