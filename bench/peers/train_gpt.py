#!/usr/bin/python3
"""train_gpt's step time against the same model in PyTorch on the CPU, and the attention and
LayerNorm layers against PyTorch's.

The model is examples/train_gpt.cpp's (GPT-2 pre-LayerNorm blocks, exact GELU, learned position
embeddings, a head without bias); PyTorch runs tests/examples/train_gpt_reference.py's rendering
of it, with AdamW as train_gpt's defaults. Sizes (the issue's): d 256, 4 layers, 4 heads, T 128,
batch 32, vocabulary 256. One optimizer step = forward, mean cross-entropy over every position,
backward, AdamW.

 - tenax: `train_gpt --steps W+N` per precision (f32, bf16, f16), each step's seconds read from
   its event log (`"event":"step"` lines: the whole step as the Runner times it, without
   checkpoints or validation: --checkpoint-every 0, --eval-every 0, --val-fraction 0); the
   median of the last N.
 - PyTorch 1.13: the same model and batch shapes, f32, and bf16 through CPU autocast (its CPU
   autocast has no f16: that row has no peer); the median of N timed steps after W.
 - The bf16 product of the MLP's first Linear ([B T, d] x [d, 4d] to bf16), forward only: tenax
   through `bench_layers` (BM_MatmulBf16), PyTorch's torch.matmul in bf16.
 - Layers: forward + backward of causal self-attention (batch 32, T 128, d 256, 4 heads: the
   qkv and proj Linears included) and of LayerNorm over [32, 128, 256], from the scalar
   sum(layer(x) * g) on both sides (the same graph), tenax through `bench_layers` (Google
   Benchmark, bench/layers_bench.cpp: the median of 5 repetitions), PyTorch here (the median of
   10 runs after 3).

Both use --threads threads (TENAX_NUM_THREADS / torch.set_num_threads). Prints a Markdown table.

Usage: bench/peers/train_gpt.py [--build build] [--steps 6] [--warmup 2] [--threads 2]
                                [--precisions f32,bf16,f16] [--quick]
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SIZES = dict(layers=4, d_model=256, heads=4, context=128, batch=32)
TEXT = "/usr/share/games/fortunes/songs-poems"


def tenax_steps(build, precision, steps, warmup, threads, sizes):
    with tempfile.TemporaryDirectory() as run_dir:
        command = [str(build / "bin" / "train_gpt"), "--device", "cpu", "--progress", "quiet",
                   "--run-dir", run_dir, "--steps", str(warmup + steps), "--checkpoint-every",
                   "0", "--eval-every", "0", "--val-fraction", "0", "--precision", precision,
                   "--data", TEXT,
                   "--layers", str(sizes["layers"]), "--d-model", str(sizes["d_model"]),
                   "--heads", str(sizes["heads"]), "--context", str(sizes["context"]),
                   "--batch", str(sizes["batch"])]
        env = dict(os.environ, TENAX_NUM_THREADS=str(threads))
        subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        seconds = []
        with open(Path(run_dir) / "events.jsonl") as log:
            for line in log:
                event = json.loads(line)
                if event.get("event") == "step":
                    seconds.append(event["seconds"])
        return seconds[warmup:]


def torch_steps(precision, steps, warmup, sizes):
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, str(ROOT / "tests" / "examples"))
    from train_gpt_reference import Gpt
    torch.manual_seed(0)
    t, b = sizes["context"], sizes["batch"]
    model = Gpt(sizes["layers"], sizes["d_model"], sizes["heads"], t)
    params = list(model.parameters())
    groups = [{"params": [q for q in params if q.dim() >= 2], "weight_decay": 0.01},
              {"params": [q for q in params if q.dim() < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=1e-3)
    window = torch.randint(0, 256, (b, t + 1))
    seconds = []
    for k in range(warmup + steps):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        if precision == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = model(window[:, :t])
        else:
            logits = model(window[:, :t])
        loss = F.cross_entropy(logits.float().reshape(-1, 256), window[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        seconds.append(time.perf_counter() - start)
    return seconds[warmup:]


def torch_layers(steps, warmup, sizes):
    import torch
    sys.path.insert(0, str(ROOT / "tests" / "examples"))
    from train_gpt_reference import Attention
    b, t, d = sizes["batch"], sizes["context"], sizes["d_model"]
    out = {}
    attention = Attention(d, sizes["heads"])
    norm = torch.nn.LayerNorm(d, eps=1e-5)
    for name, layer in (("attention", attention), ("layer_norm", norm)):
        x = torch.randn(b, t, d, requires_grad=True)
        g = torch.randn(b, t, d)
        times = []
        for k in range(warmup + steps):
            start = time.perf_counter()
            (layer(x) * g).sum().backward()
            times.append(time.perf_counter() - start)
        out[name] = statistics.median(times[warmup:])
    # The bf16 product of the MLP's first Linear: x [B T, d] times the weight [4d, d] transposed.
    x = torch.randn(b * t, d).to(torch.bfloat16)
    w = torch.randn(4 * d, d).to(torch.bfloat16)
    times = []
    with torch.no_grad():
        for k in range(warmup + steps):
            start = time.perf_counter()
            torch.matmul(x, w.t())
            times.append(time.perf_counter() - start)
    out["matmul_bf16"] = statistics.median(times[warmup:])
    return out


def tenax_layers(build, threads, sizes):
    binary = build / "bin" / "bench_layers"
    env = dict(os.environ, TENAX_NUM_THREADS=str(threads))
    result = subprocess.run([str(binary), "--benchmark_format=json",
                             "--benchmark_repetitions=5",
                             "--benchmark_report_aggregates_only=true"],
                            check=True, env=env, capture_output=True, text=True)
    out = {}
    for bench in json.loads(result.stdout)["benchmarks"]:
        if bench.get("aggregate_name") != "median":
            continue
        name = bench["run_name"].split("/")[0]
        unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[bench["time_unit"]]
        key = {"BM_AttentionForwardBackward": "attention",
               "BM_LayerNormForwardBackward": "layer_norm",
               "BM_MatmulBf16": "matmul_bf16"}.get(name)
        if key:
            out[key] = bench["real_time"] * unit
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--precisions", default="f32,bf16,f16")
    p.add_argument("--quick", action="store_true", help="d 64, T 32, one step: checks the harness")
    a = p.parse_args()
    import torch
    torch.set_num_threads(a.threads)
    sizes = dict(SIZES)
    if a.quick:
        sizes.update(d_model=64, context=32, batch=8)
        a.steps, a.warmup = 1, 1
    build = Path(a.build)
    print(f"train_gpt step, d {sizes['d_model']}, {sizes['layers']} layers, {sizes['heads']} "
          f"heads, T {sizes['context']}, batch {sizes['batch']}; {a.threads} threads; median of "
          f"{a.steps} steps after {a.warmup}; torch {torch.__version__}\n")
    print("| precision | tenax s/step | PyTorch s/step | tenax speed-up |")
    print("|---|---|---|---|")
    for precision in a.precisions.split(","):
        ours = statistics.median(tenax_steps(build, precision, a.steps, a.warmup, a.threads,
                                             sizes))
        if precision == "f16":
            print(f"| f16 | {ours:.3f} | no peer: PyTorch's CPU autocast has no f16 | - |")
            continue
        theirs = statistics.median(torch_steps(precision, a.steps, a.warmup, sizes))
        print(f"| {precision} | {ours:.3f} | {theirs:.3f} | {theirs / ours:.2f}x |")
    if not a.quick:
        ours = tenax_layers(build, a.threads, sizes)
        theirs = torch_layers(10, 3, sizes)
        print("\n| layer (forward + backward, f32) | tenax ms | PyTorch ms | tenax speed-up |")
        print("|---|---|---|---|")
        for name in ("attention", "layer_norm"):
            if name in ours:
                print(f"| {name} | {ours[name] * 1e3:.2f} | {theirs[name] * 1e3:.2f} | "
                      f"{theirs[name] / ours[name]:.2f}x |")
        if "matmul_bf16" in ours:
            b, t, d = sizes["batch"], sizes["context"], sizes["d_model"]
            print(f"\n| bf16 product [{b * t}, {d}] x [{d}, {4 * d}] | tenax ms | PyTorch ms | "
                  "tenax speed-up |")
            print("|---|---|---|---|")
            print(f"| forward | {ours['matmul_bf16'] * 1e3:.3f} | "
                  f"{theirs['matmul_bf16'] * 1e3:.3f} | "
                  f"{theirs['matmul_bf16'] / ours['matmul_bf16']:.2f}x |")


if __name__ == "__main__":
    main()
