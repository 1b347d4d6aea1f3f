#!/usr/bin/env python3
"""The peers' figures on the GPU that scripts/gpu-check.sh's rows are read against, measured in the
same run on the same device: PyTorch and CuPy doing what tenax's GPU benchmarks and programs do.

  copy        device-to-device copy of 2^26 doubles (bytes read + written per second): the
              hardware figure CG and the stencil steps are fractions of (bench_gpu BM_CudaCopy)
  h2d-*       host-to-device copy of 256 MiB from pageable and from pinned memory
  gemm-f32    torch.matmul 4096^3, f32 with TF32 off (bench_gpu BM_CudaGemmF32)
  gemm-f16    torch.matmul 4096^3, f16 in and out; gemm-f16-f32out: f16 in, f32 out, as
              tenax's (torch.mm out_dtype, where this PyTorch has it) (bench_gpu BM_CudaGemmF16)
  cg          CuPy's CG on the 5-point Poisson matrix of a 4096^2 grid in CSR, 200 iterations,
              f64 (poisson --operator csr --n 4096 --tol 0 --max-iters 200)
  train-*     PyTorch's optimizer step of train_mlp's model: 2 -> 256 -> 256 -> 2, tanh,
              cross-entropy, Adam, batch 1024 (f32; bf16 and f16 under CUDA autocast, f16 with
              a GradScaler) (gpu-check's train-f32/-bf16/-f16 rows)
  gpt-*       PyTorch's optimizer step of train_gpt's model (tests/examples/train_gpt_reference.py:
              GPT-2 pre-LayerNorm blocks, exact GELU): d 256, 4 layers, 4 heads, T 128, batch 32,
              vocabulary 256, mean cross-entropy, AdamW; f32 with TF32 off, bf16 and f16 under
              CUDA autocast (f16 with a GradScaler) (gpu-check's gpt-f32/-bf16/-f16 rows)
  malloc-async  cudaMallocAsync/cudaFreeAsync pair of 1 MiB and 64 MiB through CuPy's
              MemoryAsyncPool (bench_gpu BM_CudaPoolCachedPair; includes Python's call overhead,
              so it is an upper bound of the driver's time)

Each figure is the median of --repeats timed blocks after a warm-up, timed with CUDA events.
Prints one JSON line per figure. A peer that is missing (no CuPy, no GPU) prints an "error" line
and the others still run.

Usage: python3 bench/peers/gpu_anchors.py [--repeats 7]
"""
import argparse
import inspect
import json
import statistics
import sys
import time


def emit(**row):
    print(json.dumps(row), flush=True)


def timed_ms(torch, fn, repeats, inner=1):
    """Median milliseconds of one call of fn, over `repeats` blocks of `inner` calls."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / inner)
    return statistics.median(times)


def copy_and_gemm(torch, repeats):
    n = 1 << 26
    src = torch.ones(n, dtype=torch.float64, device="cuda")
    dst = torch.empty_like(src)
    ms = timed_ms(torch, lambda: dst.copy_(src), repeats, inner=10)
    emit(peer="torch", figure="copy", elements=n, ms=ms, gbps=2 * 8 * n / ms / 1e6)
    # Host to device, 256 MiB, from pageable and from pinned memory (bench_gpu
    # BM_CudaHostToDevicePageable / Pinned).
    for pinned in (False, True):
        host = torch.ones(256 << 20, dtype=torch.uint8, pin_memory=pinned)
        ms = timed_ms(torch, lambda: host.to("cuda", non_blocking=pinned), repeats, inner=3)
        emit(peer="torch", figure="h2d-pinned" if pinned else "h2d-pageable", bytes=256 << 20,
             ms=ms, gbps=(256 << 20) / ms / 1e6)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    m = 4096
    for name, dtype in (("gemm-f32", torch.float32), ("gemm-f16", torch.float16)):
        a = torch.randn(m, m, device="cuda").to(dtype)
        b = torch.randn(m, m, device="cuda").to(dtype)
        c = torch.empty(m, m, device="cuda", dtype=dtype)
        ms = timed_ms(torch, lambda: torch.matmul(a, b, out=c), repeats, inner=10)
        emit(peer="torch", figure=name, n=m, ms=ms, tflops=2 * m**3 / ms / 1e9)
    # tenax's f16 GEMM writes f32 (f16 inputs, f32 accumulation and output): PyTorch's
    # out_dtype, where this version has it, is the same operation.
    a = torch.randn(m, m, device="cuda").half()
    b = torch.randn(m, m, device="cuda").half()
    try:
        ms = timed_ms(torch, lambda: torch.mm(a, b, out_dtype=torch.float32), repeats, inner=10)
        emit(peer="torch", figure="gemm-f16-f32out", n=m, ms=ms, tflops=2 * m**3 / ms / 1e9)
    except (TypeError, RuntimeError) as e:
        emit(peer="torch", figure="gemm-f16-f32out", error=f"{type(e).__name__}: {e}")


def cg(repeats):
    import cupy
    import cupyx.scipy.sparse as sparse
    import cupyx.scipy.sparse.linalg as linalg

    n = 4096
    one = sparse.identity(n, dtype=cupy.float64, format="csr")
    main = cupy.full(n, 2.0)
    off = cupy.full(n - 1, -1.0)
    t = sparse.diags([off, main, off], [-1, 0, 1], format="csr")
    a = (sparse.kron(one, t) + sparse.kron(t, one)).tocsr()
    a.sum_duplicates()
    b = cupy.ones(a.shape[0], dtype=cupy.float64)
    iterations = 200
    # CuPy follows SciPy's rename of tol to rtol.
    tolerance = "rtol" if "rtol" in inspect.signature(linalg.cg).parameters else "tol"
    times = []
    for _ in range(repeats + 1):
        cupy.cuda.runtime.deviceSynchronize()
        start = time.perf_counter()
        linalg.cg(a, b, **{tolerance: 0.0}, atol=0.0, maxiter=iterations)
        cupy.cuda.runtime.deviceSynchronize()
        times.append(time.perf_counter() - start)
    ms = statistics.median(times[1:]) * 1e3 / iterations
    emit(peer="cupy", figure="cg", n=n, nnz=int(a.nnz), iterations=iterations, ms_per_iteration=ms)


def malloc_async(repeats):
    import cupy

    pool = cupy.cuda.MemoryAsyncPool()
    for size in (1 << 20, 64 << 20):
        calls = 2000
        times = []
        for _ in range(repeats + 1):
            start = time.perf_counter()
            for _ in range(calls):
                p = pool.malloc(size)
                del p
            times.append(time.perf_counter() - start)
        us = statistics.median(times[1:]) * 1e6 / calls
        emit(peer="cupy", figure="malloc-async", bytes=size, us_per_pair=us)


def optimizer_step(torch, optimizer, precision, loss_of):
    """One optimizer step as a function: the loss (loss_of()) under CUDA autocast for bf16 and
    f16, its backward pass (through a GradScaler for f16) and the update."""
    scaler = torch.amp.GradScaler("cuda") if precision == "f16" else None
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}.get(precision)

    def step():
        optimizer.zero_grad(set_to_none=False)
        with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
            loss = loss_of()
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()

    return step


def train(torch, repeats):
    widths, batch, steps = [2, 256, 256, 2], 1024, 50
    for precision in ("f32", "bf16", "f16"):
        torch.manual_seed(0)
        layers = []
        for i in range(len(widths) - 1):
            layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
            if i + 2 < len(widths):
                layers.append(torch.nn.Tanh())
        model = torch.nn.Sequential(*layers).cuda()
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        x = torch.randn(batch, 2, device="cuda")
        y = torch.randint(0, 2, (batch,), device="cuda")
        loss_fn = torch.nn.CrossEntropyLoss()
        step = optimizer_step(torch, optimizer, precision, lambda: loss_fn(model(x), y))
        ms = timed_ms(torch, step, repeats, inner=steps)
        emit(peer="torch", figure=f"train-{precision}", widths=widths, batch=batch, ms_per_step=ms)


def gpt(torch, repeats):
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    # The reference model: tests/examples/ in the source tree, beside this script in a bundle.
    for folder in (os.path.join(here, "..", "..", "tests", "examples"), here):
        if os.path.exists(os.path.join(folder, "train_gpt_reference.py")):
            sys.path.insert(0, folder)
            break
    from train_gpt_reference import Gpt

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    layers, d, heads, t, batch = 4, 256, 4, 128, 32
    for precision in ("f32", "bf16", "f16"):
        torch.manual_seed(0)
        model = Gpt(layers, d, heads, t).cuda()
        params = list(model.parameters())
        groups = [{"params": [q for q in params if q.dim() >= 2], "weight_decay": 0.01},
                  {"params": [q for q in params if q.dim() < 2], "weight_decay": 0.0}]
        optimizer = torch.optim.AdamW(groups, lr=1e-3)
        window = torch.randint(0, 256, (batch, t + 1), device="cuda")

        def loss():
            logits = model(window[:, :t])
            return torch.nn.functional.cross_entropy(logits.float().reshape(-1, 256),
                                                     window[:, 1:].reshape(-1))

        ms = timed_ms(torch, optimizer_step(torch, optimizer, precision, loss), repeats, inner=10)
        emit(peer="torch", figure=f"gpt-{precision}", layers=layers, d_model=d, heads=heads,
             context=t, batch=batch, ms_per_step=ms)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    try:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA device")
        emit(peer="torch", version=torch.__version__, cuda=torch.version.cuda,
             device=torch.cuda.get_device_name(0))
    except Exception as e:  # noqa: BLE001 - reported, the other peers still run
        emit(peer="torch", error=f"{type(e).__name__}: {e}")
        torch = None
    for name, run in (("copy/gemm", lambda: copy_and_gemm(torch, args.repeats)),
                      ("train", lambda: train(torch, args.repeats)),
                      ("gpt", lambda: gpt(torch, args.repeats)),
                      ("cg", lambda: cg(args.repeats)),
                      ("malloc-async", lambda: malloc_async(args.repeats))):
        if torch is None and name in ("copy/gemm", "train", "gpt"):
            continue
        try:
            run()
        except Exception as e:  # noqa: BLE001
            emit(figure=name, error=f"{type(e).__name__}: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
