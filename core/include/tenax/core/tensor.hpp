// Tensor: a contiguous row-major array of one dtype on one device.
//
// A tensor is a view: a shared Buffer plus shape, dtype and an element offset. Copying a Tensor
// copies the view, not the data. slice() along the first dimension is a view too (micro-batches
// are views of the batch). Buffers return their storage to the resource they came from when the
// last view goes away.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tenax/core/device.hpp"
#include "tenax/core/dtype.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/memory_resource.hpp"
#include "tenax/core/shape.hpp"

namespace tenax {

// Storage owned by one allocation of a memory resource. Not copyable.
class Buffer {
 public:
  Buffer(std::shared_ptr<MemoryResource> resource, std::size_t bytes, StreamRef stream = {});
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  [[nodiscard]] void* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  [[nodiscard]] Device device() const noexcept { return device_; }
  [[nodiscard]] StreamRef stream() const noexcept { return stream_; }

 private:
  std::shared_ptr<MemoryResource> resource_;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  Device device_;
  StreamRef stream_;
};

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor: defined() is false

  // Uninitialised storage from current_resource(device).
  [[nodiscard]] static Tensor empty(const Shape& shape, DType dtype, Device device = Device::cpu());
  // Uninitialised storage from a given resource.
  [[nodiscard]] static Tensor empty(const Shape& shape, DType dtype,
                                    std::shared_ptr<MemoryResource> resource);
  [[nodiscard]] static Tensor empty_like(const Tensor& other);

  [[nodiscard]] bool defined() const noexcept { return buffer_ != nullptr; }
  [[nodiscard]] const Shape& shape() const noexcept { return shape_; }
  [[nodiscard]] DType dtype() const noexcept { return dtype_; }
  [[nodiscard]] Device device() const noexcept { return device_; }
  [[nodiscard]] std::int64_t numel() const noexcept { return shape_.numel(); }
  [[nodiscard]] std::size_t nbytes() const noexcept {
    return static_cast<std::size_t>(numel()) * size_of(dtype_);
  }
  [[nodiscard]] std::int64_t offset() const noexcept { return offset_; }
  [[nodiscard]] const std::shared_ptr<Buffer>& buffer() const noexcept { return buffer_; }

  [[nodiscard]] void* data() const noexcept;
  // Typed pointer; throws UsageError when T does not match dtype().
  template <class T>
  [[nodiscard]] T* data_as() const {
    static_assert(kHasDType<std::remove_const_t<T>>, "T is not a tensor element type");
    check_element_type(dtype_of<std::remove_const_t<T>>);
    return static_cast<T*>(data());
  }

  // Rows [begin, end) of the first dimension, sharing storage.
  [[nodiscard]] Tensor slice(std::int64_t begin, std::int64_t end) const;
  // The same elements under another shape with the same element count, sharing storage.
  [[nodiscard]] Tensor reshape(const Shape& shape) const;
  // A copy on `device` (same dtype). Returns *this when already there.
  [[nodiscard]] Tensor to(Device device) const;
  // A deep copy on the same device.
  [[nodiscard]] Tensor clone() const;

  // "f32[2, 3] on cpu"
  [[nodiscard]] std::string describe() const;

 private:
  void check_element_type(DType requested) const;

  std::shared_ptr<Buffer> buffer_;
  Shape shape_;
  DType dtype_ = DType::f32;
  Device device_;
  std::int64_t offset_ = 0;  // in elements
};

}  // namespace tenax
