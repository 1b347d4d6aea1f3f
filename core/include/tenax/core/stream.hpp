// A stream handle that public headers can pass around without including CUDA headers.
#pragma once

struct CUstream_st;  // the CUDA runtime's cudaStream_t is CUstream_st*

namespace tenax {

// The CUDA stream an allocation or kernel is ordered on; the default-constructed value is the
// legacy default stream on CUDA and means "no stream" on the CPU.
struct StreamRef {
  CUstream_st* handle = nullptr;
  friend constexpr bool operator==(StreamRef, StreamRef) = default;
};

}  // namespace tenax
