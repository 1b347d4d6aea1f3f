/// Tensor: a contiguous row-major array of one dtype on one device.
/// @file
/// A tensor is a view: a shared Buffer plus shape, dtype and an element offset. Copying a Tensor
/// copies the view, not the data. slice() along the first dimension is a view too (micro-batches
/// are views of the batch). Buffers return their storage to the resource they came from when the
/// last view goes away.
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

/// Storage owned by one allocation of a memory resource. Not copyable; tensors share it through
/// std::shared_ptr, and the storage goes back to the resource when the last owner lets go.
class Buffer {
 public:
  /// Allocates `bytes` bytes from `resource` on `stream`; the Buffer keeps the resource alive
  /// until it is destroyed. `resource` must not be null. Throws what the resource throws
  /// (OutOfMemoryError, ...). For 0 bytes nothing is allocated and data() is null.
  Buffer(std::shared_ptr<MemoryResource> resource, std::size_t bytes, StreamRef stream = {});
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();  ///< returns the storage to the resource, with the same size and stream

  /// Start of the storage, on device() (aligned to MemoryResource::kAlignment; null for 0 bytes).
  [[nodiscard]] void* data() const noexcept { return data_; }
  /// Bytes requested at construction.
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  /// The device of the resource the storage came from.
  [[nodiscard]] Device device() const noexcept { return device_; }
  /// The stream the storage was allocated on, and will be freed on.
  [[nodiscard]] StreamRef stream() const noexcept { return stream_; }

 private:
  std::shared_ptr<MemoryResource> resource_;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  Device device_;
  StreamRef stream_;
};

/// A view of `shape().numel()` contiguous row-major elements of dtype() in a shared Buffer,
/// starting offset() elements into it. Copies are cheap and share the storage; writes through
/// one view are seen by all. Const-ness of a Tensor does not make its elements read-only.
class Tensor {
 public:
  Tensor() = default;  ///< an undefined tensor: defined() is false

  /// A new tensor of `shape` and `dtype` on `device`, its storage uninitialised, from
  /// current_resource(device). Throws what the resource throws (OutOfMemoryError, ...).
  [[nodiscard]] static Tensor empty(const Shape& shape, DType dtype, Device device = Device::cpu());
  /// Like the overload taking a Device, from a given resource (UsageError when null); the
  /// tensor's device is the resource's device().
  [[nodiscard]] static Tensor empty(const Shape& shape, DType dtype,
                                    std::shared_ptr<MemoryResource> resource);
  /// Uninitialised storage of the same shape and dtype on the same device, from that device's
  /// current_resource() (not necessarily the resource `other` came from).
  [[nodiscard]] static Tensor empty_like(const Tensor& other);

  /// Whether the tensor has storage (made by empty() or a copy/view of such a tensor).
  [[nodiscard]] bool defined() const noexcept { return buffer_ != nullptr; }
  /// The extents; a scalar shape for an undefined tensor.
  [[nodiscard]] const Shape& shape() const noexcept { return shape_; }
  /// The element type (f32 for an undefined tensor).
  [[nodiscard]] DType dtype() const noexcept { return dtype_; }
  /// Where the elements live (the CPU for an undefined tensor).
  [[nodiscard]] Device device() const noexcept { return device_; }
  /// Number of elements, shape().numel().
  [[nodiscard]] std::int64_t numel() const noexcept { return shape_.numel(); }
  /// Bytes of the elements: numel() * size_of(dtype()) (not the buffer's size, for a view).
  [[nodiscard]] std::size_t nbytes() const noexcept {
    return static_cast<std::size_t>(numel()) * size_of(dtype_);
  }
  /// Position of the first element in the buffer, in elements (non-zero for slices).
  [[nodiscard]] std::int64_t offset() const noexcept { return offset_; }
  /// The shared storage; null for an undefined tensor.
  [[nodiscard]] const std::shared_ptr<Buffer>& buffer() const noexcept { return buffer_; }

  /// Address of the first element, on device() (a device pointer for CUDA tensors); null for an
  /// undefined tensor or one without elements.
  [[nodiscard]] void* data() const noexcept;
  /// data() as `T*`; throws UsageError when T (without const) does not match dtype(). T must be
  /// an element type (kHasDType), checked at compile time.
  template <class T>
  [[nodiscard]] T* data_as() const {
    static_assert(kHasDType<std::remove_const_t<T>>, "T is not a tensor element type");
    check_element_type(dtype_of<std::remove_const_t<T>>);
    return static_cast<T*>(data());
  }

  /// Rows [begin, end) of the first dimension, sharing storage. UsageError for an undefined or
  /// scalar tensor, or unless 0 <= begin <= end <= shape()[0].
  [[nodiscard]] Tensor slice(std::int64_t begin, std::int64_t end) const;
  /// The same elements under another shape with the same element count, sharing storage;
  /// UsageError when the counts differ.
  [[nodiscard]] Tensor reshape(const Shape& shape) const;
  /// A copy on `device` (same shape and dtype) from that device's current_resource(); *this
  /// (sharing storage) when already there, an undefined tensor for an undefined one. Synchronous
  /// (copy_bytes()); throws what allocation and copy throw.
  [[nodiscard]] Tensor to(Device device) const;
  /// A deep copy on the same device, from its current_resource(); synchronous; undefined stays so.
  [[nodiscard]] Tensor clone() const;

  /// `"f32[2, 3] on cpu"`, or `"undefined tensor"`, for messages.
  [[nodiscard]] std::string describe() const;

 private:
  void check_element_type(DType requested) const;

  std::shared_ptr<Buffer> buffer_;
  Shape shape_;
  DType dtype_ = DType::f32;
  Device device_;
  std::int64_t offset_ = 0;  ///< in elements
};

}  // namespace tenax
