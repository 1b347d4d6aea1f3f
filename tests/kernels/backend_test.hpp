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
#include "kernels/usage_error.hpp"
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
  /// An op's _into form, `into(out)`, writes the out it is given with the bits `expected` (the
  /// allocating form's result) and nothing beside it: out is a slice of a larger tensor on the
  /// backend's device, with a sentinel row before and after it that must keep its bytes. On a GPU
  /// backend an out on the CPU is also refused (a UsageError naming the CPU), not written.
  template <class Into>
  void expect_into_writes_its_output_only(const std::string& what, const Tensor& expected,
                                          Into&& into) const {
    ASSERT_GE(expected.shape().rank(), 1) << what;
    const std::int64_t rows = expected.shape()[0];
    const Shape shape = expected.shape().with_leading(rows + 2);
    const Tensor whole = Tensor::empty(shape, expected.dtype(), device());
    ops::fill(whole,
              is_floating(expected.dtype()) ? std::numeric_limits<double>::quiet_NaN() : 77.0);
    const Tensor pristine = whole.to(Device::cpu());
    into(whole.slice(1, 1 + rows));
    EXPECT_TRUE(same(whole.slice(1, 1 + rows), expected))
        << what << ": out differs from the allocating form";
    EXPECT_TRUE(same(whole.slice(0, 1), pristine.slice(0, 1)) &&
                same(whole.slice(rows + 1, rows + 2), pristine.slice(rows + 1, rows + 2)))
        << what << " wrote outside its out";
    if (device().is_cuda()) {
      expect_contains(usage_error([&] { into(Tensor::empty(expected.shape(), expected.dtype())); }),
                      {"cpu"});
    }
  }
};

/// The name of an instance: its backend.
inline std::string backend_name(const ::testing::TestParamInfo<Device>& info) {
  return info.param.is_cuda() ? "cuda" : "cpu";
}

}  // namespace tenax::testing
