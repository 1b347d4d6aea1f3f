// CUDA runtime hooks of a build without CUDA.
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/error.hpp"

namespace tenax::cuda {

bool compiled() noexcept { return false; }

const Availability& availability() noexcept {
  static const Availability info = [] {
    Availability a;
    a.reason = "this tenax was built without CUDA (TENAX_WITH_CUDA=OFF or no toolkit found)";
    a.fix = "rebuild with -DTENAX_WITH_CUDA=ON on a machine with the CUDA toolkit";
    return a;
  }();
  return info;
}

void require_device(Device /*device*/) {
  throw_not_compiled("the CUDA backend", "TENAX_WITH_CUDA");
}

void copy_bytes(void* /*dst*/, Device /*dst_device*/, const void* /*src*/, Device /*src_device*/,
                std::size_t /*bytes*/) {
  throw_not_compiled("copies to and from CUDA devices", "TENAX_WITH_CUDA");
}

DeviceProperties device_properties(int /*ordinal*/) {
  throw_not_compiled("CUDA device queries", "TENAX_WITH_CUDA");
}

bool is_sticky_status(int /*status*/) noexcept { return false; }

FaultClass classify_status(int status) noexcept {
  return status == 0 ? FaultClass::usage : FaultClass::not_compiled;
}

std::string status_name(int status) { return status == 0 ? "cudaSuccess" : "not compiled"; }

}  // namespace tenax::cuda
