#!/usr/bin/python3
"""PyTorch's CPU step time for the MLPs of bench/train_bench.cpp, the peer of BM_TrainStep.

One optimizer step = zero_grad, forward, cross-entropy (mean), backward, Adam(lr=1e-3), on the
same shapes as the tenax benchmark: "small" 2 -> 64 -> 64 -> 2 (tanh, batch 256) and "wide"
64 -> 512 -> 512 -> 10 (tanh, batch 512). Precisions: f32, and bf16 through CPU autocast (the
GEMMs in bf16, master weights f32), which is what PyTorch offers on the CPU (its CPU autocast
has no f16). Each configuration also runs under torch.autograd.set_detect_anomaly(True), the
overhead that tenax's anomaly mode is compared with. Prints one line per configuration with the
median of --repeats timed blocks of --steps steps, after a warm-up block.

Usage: /usr/bin/python3 bench/peers/torch_mlp.py [--threads 2] [--steps 50] [--repeats 7]
Needs python3-torch (Debian: apt-get install -y python3-torch).
"""
import argparse
import statistics
import time

import torch

MODELS = {"small": ([2, 64, 64, 2], 256), "wide": ([64, 512, 512, 10], 512)}


def make_model(widths):
    layers = []
    for i in range(len(widths) - 1):
        layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            layers.append(torch.nn.Tanh())
    return torch.nn.Sequential(*layers)


def block_seconds(model, optimizer, x, y, steps, precision):
    loss_fn = torch.nn.CrossEntropyLoss()
    start = time.perf_counter()
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=False)
        if precision == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out = model(x)
            loss = loss_fn(out.float(), y)
        else:
            loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
    return (time.perf_counter() - start) / steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for name, (widths, batch) in MODELS.items():
        for precision in ("f32", "bf16"):
            for anomaly in (False, True):
                torch.manual_seed(0)
                model = make_model(widths)
                optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
                x = torch.rand(batch, widths[0]) * 2 - 1
                y = torch.arange(batch) % widths[-1]
                with torch.autograd.set_detect_anomaly(anomaly):
                    block_seconds(model, optimizer, x, y, args.steps, precision)  # warm-up
                    times = [block_seconds(model, optimizer, x, y, args.steps, precision)
                             for _ in range(args.repeats)]
                label = f"{name} {precision}{' anomaly' if anomaly else ''}"
                print(f"{label:22s} {statistics.median(times) * 1e3:9.3f} ms/step "
                      f"(min {min(times) * 1e3:.3f}, max {max(times) * 1e3:.3f})")


if __name__ == "__main__":
    main()
