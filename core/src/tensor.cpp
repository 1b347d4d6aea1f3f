#include "tenax/core/tensor.hpp"

#include <optional>
#include <string>

#include "tenax/core/checked_size.hpp"
#include "tenax/core/copy.hpp"
#include "tenax/core/memory/device_memory.hpp"

namespace tenax {

Buffer::Buffer(std::shared_ptr<MemoryResource> resource, std::size_t bytes, StreamRef stream)
    : resource_(std::move(resource)), bytes_(bytes), device_(resource_->device()), stream_(stream) {
  data_ = resource_->allocate(bytes, stream);
}

Buffer::~Buffer() { resource_->deallocate(data_, bytes_, stream_); }

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  return empty(shape, dtype, current_resource(device));
}

Tensor Tensor::empty(const Shape& shape, DType dtype, std::shared_ptr<MemoryResource> resource) {
  TENAX_EXPECTS(resource != nullptr, UsageError, "Tensor::empty was given a null memory resource",
                "pass a resource or use the overload that takes a Device");
  const std::optional<std::int64_t> bytes =
      checked_multiply(shape.numel(), static_cast<std::int64_t>(size_of(dtype)));
  TENAX_EXPECTS(bytes.has_value(), UsageError,
                "Tensor::empty: " + to_string(shape) + " " + std::string(to_string(dtype)) +
                    " elements need more than 2^63 - 1 bytes",
                "use smaller extents or a narrower dtype");
  Tensor tensor;
  tensor.shape_ = shape;
  tensor.dtype_ = dtype;
  tensor.device_ = resource->device();
  tensor.buffer_ = std::make_shared<Buffer>(std::move(resource), static_cast<std::size_t>(*bytes));
  return tensor;
}

Tensor Tensor::empty_like(const Tensor& other) {
  return empty(other.shape(), other.dtype(), other.device());
}

void* Tensor::data() const noexcept {
  if (buffer_ == nullptr || buffer_->data() == nullptr) return nullptr;
  return static_cast<char*>(buffer_->data()) + offset_ * static_cast<std::int64_t>(size_of(dtype_));
}

void Tensor::check_element_type(DType requested) const {
  TENAX_EXPECTS(
      requested == dtype_, UsageError,
      "element access as " + std::string(to_string(requested)) + " on a tensor " + describe(),
      "use data_as<> with the tensor's own element type, or cast the tensor first");
}

Tensor Tensor::slice(std::int64_t begin, std::int64_t end) const {
  TENAX_EXPECTS(defined(), UsageError, "slice of an undefined tensor",
                "create the tensor before slicing it");
  const std::int64_t rows = shape_[0];
  TENAX_EXPECTS(0 <= begin && begin <= end && end <= rows, UsageError,
                "slice [" + std::to_string(begin) + ", " + std::to_string(end) +
                    ") is out of range for the first dimension of " + describe(),
                "pick 0 <= begin <= end <= " + std::to_string(rows));
  Tensor view = *this;
  view.shape_ = shape_.with_leading(end - begin);
  const std::int64_t row_elements = rows == 0 ? 0 : numel() / rows;
  view.offset_ = offset_ + begin * row_elements;
  return view;
}

Tensor Tensor::reshape(const Shape& shape) const {
  TENAX_EXPECTS(shape.numel() == numel(), UsageError,
                "reshape of " + describe() + " to " + to_string(shape) +
                    " changes the element count from " + std::to_string(numel()) + " to " +
                    std::to_string(shape.numel()),
                "pick a shape with the same number of elements");
  Tensor view = *this;
  view.shape_ = shape;
  return view;
}

Tensor Tensor::to(Device device) const {
  if (!defined()) return {};  // nothing to copy (its data() is null)
  if (device == device_) return *this;
  Tensor copy = empty(shape_, dtype_, device);
  copy_bytes(copy.data(), device, data(), device_, nbytes());
  return copy;
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  Tensor copy = empty(shape_, dtype_, device_);
  copy_bytes(copy.data(), device_, data(), device_, nbytes());
  return copy;
}

std::string Tensor::describe() const {
  if (!defined()) return "undefined tensor";
  return std::string(to_string(dtype_)) + to_string(shape_) + " on " + to_string(device_);
}

}  // namespace tenax
