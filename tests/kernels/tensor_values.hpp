// Test helpers: tensors from lists of values and back, in any dtype, and a memory resource that
// hands out host memory labelled as a CUDA device (to test checks and dispatch without a GPU).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "tenax/core/half.hpp"
#include "tenax/core/tensor.hpp"

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

inline void set_value(const Tensor& t, std::int64_t i, double value) {
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
