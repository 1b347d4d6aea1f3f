// Test helpers: tensors from lists of values and back, in any dtype; reproducible random values
// and tensors; a bitwise comparison; and a memory resource that hands out host memory labelled as
// a CUDA device (to test checks and dispatch without a GPU).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "tenax/core/half.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax::testing {

// `value` as stored in `dtype` and read back (f64 -> f16/bf16 rounds through f32).
inline double round_to(DType dtype, double value) {
  switch (dtype) {
    case DType::f32:
      return static_cast<float>(value);
    case DType::f16:
      return half_bits_to_float(float_to_half_bits(static_cast<float>(value)));
    case DType::bf16:
      return bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(value)));
    case DType::i64:
      return static_cast<double>(static_cast<std::int64_t>(value));
    case DType::i32:
      return static_cast<double>(static_cast<std::int32_t>(value));
    case DType::u8:
      return static_cast<double>(static_cast<std::uint8_t>(value));
    default:
      return value;
  }
}

// The element accessors read and write host memory: a tensor on a device is a mistake of the
// test (a test body shared by the backends must copy to the CPU first, values_of does), refused
// here with an exception instead of a crash that would end the whole test program.
inline void require_host(const Tensor& t, const char* what) {
  if (!t.device().is_cpu()) {
    throw std::logic_error(std::string(what) + " reads host memory, but the tensor is on " +
                           to_string(t.device()) + ": copy it to the CPU first (values_of)");
  }
}

inline void set_value(const Tensor& t, std::int64_t i, double value) {
  require_host(t, "set_value");
  void* p = t.data();
  switch (t.dtype()) {
    case DType::f64:
      static_cast<double*>(p)[i] = value;
      break;
    case DType::f32:
      static_cast<float*>(p)[i] = static_cast<float>(value);
      break;
    case DType::f16:
      static_cast<Half*>(p)[i] = to_half(static_cast<float>(value));
      break;
    case DType::bf16:
      static_cast<BFloat16*>(p)[i] = to_bfloat16(static_cast<float>(value));
      break;
    case DType::i64:
      static_cast<std::int64_t*>(p)[i] = static_cast<std::int64_t>(value);
      break;
    case DType::i32:
      static_cast<std::int32_t*>(p)[i] = static_cast<std::int32_t>(value);
      break;
    case DType::u8:
      static_cast<std::uint8_t*>(p)[i] = static_cast<std::uint8_t>(value);
      break;
  }
}

inline double get_value(const Tensor& t, std::int64_t i) {
  require_host(t, "get_value");
  const void* p = t.data();
  switch (t.dtype()) {
    case DType::f64:
      return static_cast<const double*>(p)[i];
    case DType::f32:
      return static_cast<const float*>(p)[i];
    case DType::f16:
      return to_float(static_cast<const Half*>(p)[i]);
    case DType::bf16:
      return to_float(static_cast<const BFloat16*>(p)[i]);
    case DType::i64:
      return static_cast<double>(static_cast<const std::int64_t*>(p)[i]);
    case DType::i32:
      return static_cast<const std::int32_t*>(p)[i];
    case DType::u8:
      return static_cast<const std::uint8_t*>(p)[i];
  }
  return 0.0;
}

// A CPU tensor of `shape` holding `values` (row-major) rounded to `dtype`.
inline Tensor make_tensor(const Shape& shape, DType dtype, const std::vector<double>& values) {
  Tensor t = Tensor::empty(shape, dtype);
  for (std::size_t i = 0; i < values.size(); ++i) {
    set_value(t, static_cast<std::int64_t>(i), values[i]);
  }
  return t;
}

// A 1-D CPU tensor holding `values` rounded to `dtype`.
inline Tensor make_tensor(const std::vector<double>& values, DType dtype) {
  return make_tensor({static_cast<std::int64_t>(values.size())}, dtype, values);
}

// The elements of t (copied to the CPU first when needed) as doubles.
inline std::vector<double> values_of(const Tensor& t) {
  const Tensor host = t.to(Device::cpu());
  std::vector<double> out(static_cast<std::size_t>(host.numel()));
  for (std::int64_t i = 0; i < host.numel(); ++i)
    out[static_cast<std::size_t>(i)] = get_value(host, i);
  return out;
}

// The bits of a double, to compare results bit for bit (NaNs and signed zeros included).
inline std::uint64_t bits(double v) {
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// Whether two CPU tensors hold the same bytes.
inline bool same_bytes(const Tensor& a, const Tensor& b) {
  require_host(a, "same_bytes");
  require_host(b, "same_bytes");
  return a.nbytes() == b.nbytes() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

// n values uniform in [lo, hi), deterministic in the seed (std::mt19937_64).
inline std::vector<double> uniform_values(std::int64_t n, unsigned seed, double lo, double hi) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) x = dist(engine);
  return v;
}

// A CPU tensor of `shape` holding uniform_values(numel, seed, lo, hi) rounded to `dtype`.
inline Tensor uniform_tensor(const Shape& shape, DType dtype, unsigned seed, double lo, double hi) {
  return make_tensor(shape, dtype, uniform_values(shape.numel(), seed, lo, hi));
}

// A CPU i64 tensor of n indices uniform in [0, bound), deterministic in the seed
// (std::mt19937_64), e.g. class labels.
inline Tensor uniform_indices(std::int64_t n, std::int64_t bound, unsigned seed) {
  std::mt19937_64 engine(seed);
  std::uniform_int_distribution<std::int64_t> dist(0, bound - 1);
  Tensor t = Tensor::empty({n}, DType::i64);
  for (std::int64_t i = 0; i < n; ++i) t.data_as<std::int64_t>()[i] = dist(engine);
  return t;
}

// A CPU tensor of `shape` with values uniform in [low, high) drawn by ops::random_uniform
// (Philox, so deterministic in the seed).
inline Tensor philox_uniform(const Shape& shape, DType dtype, std::uint64_t seed, double low = -1.0,
                             double high = 1.0) {
  Tensor t = Tensor::empty(shape, dtype);
  ops::random_uniform(t, seed, 0, low, high);
  return t;
}

// Host memory that claims to live on cuda:0. Kernels must never run on it; it lets CPU-only
// builds test device checks and the dispatch to the CUDA backend.
class FakeCudaResource final : public MemoryResource {
 private:
  void* do_allocate(std::size_t bytes, StreamRef /*stream*/) override {
    return std::aligned_alloc(kAlignment, align_up(bytes, kAlignment));
  }
  void do_deallocate(void* ptr, std::size_t /*bytes*/, StreamRef /*stream*/) noexcept override {
    std::free(ptr);
  }
  [[nodiscard]] Device do_device() const noexcept override { return Device::cuda(0); }
};

inline Tensor fake_cuda_tensor(const Shape& shape, DType dtype) {
  return Tensor::empty(shape, dtype, std::make_shared<FakeCudaResource>());
}

}  // namespace tenax::testing
