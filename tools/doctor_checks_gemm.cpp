// The doctor's GEMM check: the same product through the ops front end on a CUDA device and on
// the CPU backend (the reference), compared element by element.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "doctor.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/ops.hpp"

namespace tenax::tools {

namespace {

constexpr std::int64_t kSize = 128;

template <typename T>
Tensor pattern(std::int64_t rows, std::int64_t cols, std::uint32_t seed) {
  Tensor t = Tensor::empty({rows, cols}, dtype_of<T>);
  T* values = t.data_as<T>();
  std::uint32_t state = seed;
  for (std::int64_t i = 0; i < rows * cols; ++i) {
    state = state * 1664525u + 1013904223u;  // values in [-1, 1): sums stay well conditioned
    values[i] = static_cast<T>(static_cast<double>(state >> 8) / double(1u << 23) - 1.0);
  }
  return t;
}

// Largest |device - cpu| relative to the largest |cpu| entry.
template <typename T>
double relative_error(Device device) {
  const Tensor a = pattern<T>(kSize, kSize, 1);
  const Tensor b = pattern<T>(kSize, kSize, 2);
  const Tensor expected = ops::matmul(a, b);
  const Tensor on_device = ops::matmul(a.to(device), b.to(device));
  cuda::context(device).synchronize();  // the product runs on the device's own stream
  const Tensor actual = on_device.to(Device::cpu());
  const T* e = expected.data_as<T>();
  const T* g = actual.data_as<T>();
  double worst = 0;
  double scale = 0;
  for (std::int64_t i = 0; i < kSize * kSize; ++i) {
    const double diff = std::abs(static_cast<double>(g[i]) - static_cast<double>(e[i]));
    worst = std::isnan(diff) ? INFINITY : std::max(worst, diff);
    scale = std::max(scale, std::abs(static_cast<double>(e[i])));
  }
  return worst / std::max(scale, 1e-300);
}

}  // namespace

Finding gemm_check(int ordinal) {
  const std::string name = fmt::format("gemm:cuda:{}", ordinal);
  const Device device = Device::cuda(ordinal);
  try {
    // Bounds: k * unit roundoff, with room for a different summation order on the device.
    const double f64 = relative_error<double>(device);
    const double f32 = relative_error<float>(device);
    const std::string detail = fmt::format(
        "{0}x{0} matmul on the device matches the CPU backend: relative error f64 {1:.1e}, f32 "
        "{2:.1e}",
        kSize, f64, f32);
    if (f64 <= 1e-12 && f32 <= 1e-4) return ok(name, detail);
    return problem(name,
                   fmt::format("the device's {0}x{0} matmul differs from the CPU backend's: "
                               "relative error f64 {1:.1e} (limit 1e-12), f32 {2:.1e} (limit "
                               "1e-4)",
                               kSize, f64, f32),
                   "do not trust results from this device: check nvidia-smi -q -d ECC and "
                   "clocks, and run the CUDA samples' matrixMul; if they fail too, have the GPU "
                   "serviced",
                   detail);
  } catch (const Error& e) {
    if (e.fault_class() == FaultClass::not_compiled) {
      return skip(name, "the kernel layer has no CUDA GEMM in this build: " + e.cause());
    }
    return problem(name, "the device GEMM failed: " + e.cause(), e.fix());
  }
}

}  // namespace tenax::tools
