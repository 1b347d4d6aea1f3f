// The fixture of the kernel tests written once for every backend (Ginkgo's pattern): a family's
// bodies live in tests/kernels/<family>_cases.hpp as TEST_P of a fixture derived from this one,
// and are instantiated with Device::cpu() in <family>_test.cpp (the reference) and with
// Device::cuda(0) in a *_gpu_test.cpp (labelled gpu; each test skipped, with the reason, where no
// CUDA device is usable). Operands are made on the CPU and put on the backend's device; results
// are read back (values_of, same) and compared there.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <ostream>
#include <string>

#include "kernels/krylov_test_helpers.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/csr_matrix.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax {
/// A backend as GoogleTest prints a parameter ("cuda:0", not the Device's bytes); found by
/// argument-dependent lookup, so it lives in Device's namespace.
inline void PrintTo(const Device& device, std::ostream* os) { *os << to_string(device); }
}  // namespace tenax

namespace tenax::testing {

class BackendTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (device().is_cuda() && !cuda::availability().usable) {
      GTEST_SKIP() << "no usable CUDA device: " << cuda::availability().reason;
    }
  }
  /// The backend under test.
  [[nodiscard]] Device device() const { return GetParam(); }
  /// A tensor or matrix made on the CPU, on the backend's device.
  [[nodiscard]] Tensor put(const Tensor& cpu) const { return cpu.to(device()); }
  [[nodiscard]] CsrMatrix put(const CsrMatrix& cpu) const { return cpu.to(device()); }
  /// random_tensor (values uniform in [-1, 1) rounded to dtype) on the backend's device.
  [[nodiscard]] Tensor random(const Shape& shape, DType dtype, std::uint32_t seed) const {
    return put(random_tensor(shape, dtype, seed));
  }
  /// A tensor of NaNs on the backend's device (an output that must be written everywhere).
  [[nodiscard]] Tensor nans(const Shape& shape, DType dtype) const {
    Tensor t = Tensor::empty(shape, dtype, device());
    ops::fill(t, std::numeric_limits<double>::quiet_NaN());
    return t;
  }
  /// Element i (row-major) of a tensor on any device, as a double (copied to the CPU).
  [[nodiscard]] static double value_at(const Tensor& t, std::int64_t i) {
    return get_value(t.reshape({t.numel()}).slice(i, i + 1).to(Device::cpu()), 0);
  }
  /// Sets element i (row-major) of a tensor on any device to `value` rounded to its dtype.
  static void set_at(const Tensor& t, std::int64_t i, double value) {
    const Tensor one = Tensor::empty({1}, t.dtype());
    set_value(one, 0, value);
    ops::copy(t.reshape({t.numel()}).slice(i, i + 1), one);
  }
  /// The bit pattern of element i of an f16 or bf16 tensor on any device.
  [[nodiscard]] static std::uint16_t bits16_at(const Tensor& t, std::int64_t i) {
    const Tensor host = t.reshape({t.numel()}).slice(i, i + 1).to(Device::cpu());
    return *static_cast<const std::uint16_t*>(host.data());
  }
  /// Whether two tensors, on any devices, hold the same bytes.
  [[nodiscard]] static bool same(const Tensor& a, const Tensor& b) {
    return same_bytes(a.to(Device::cpu()), b.to(Device::cpu()));
  }
};

/// The name of an instance: its backend.
inline std::string backend_name(const ::testing::TestParamInfo<Device>& info) {
  return info.param.is_cuda() ? "cuda" : "cpu";
}

}  // namespace tenax::testing
