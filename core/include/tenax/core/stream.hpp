/// A stream handle that public headers can pass around without including CUDA headers. @file
#pragma once

struct CUstream_st;  ///< the CUDA runtime's cudaStream_t is CUstream_st*

namespace tenax {

/// The CUDA stream an allocation or kernel is ordered on: a non-owning handle, copied by value.
/// The default value (a null handle) names no particular stream. On the CPU it is the only value
/// used. The CUDA device resource (cuda::make_device_resource) orders a null StreamRef on the
/// device context's stream (cuda::Context::stream()); PoolResource treats it as one stream like
/// any other. Handed to the CUDA runtime as is, a null handle is the legacy default stream.
struct StreamRef {
  CUstream_st* handle = nullptr;  ///< the `cudaStream_t`; not owned, never destroyed through this
  /// Same stream: equal handles.
  friend constexpr bool operator==(StreamRef, StreamRef) = default;
};

}  // namespace tenax
