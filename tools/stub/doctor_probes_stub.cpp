// CUDA library probes of `tenax doctor` in a build without CUDA.
#include "doctor_probes.hpp"
#include "tenax/core/error.hpp"

namespace tenax::tools {

LibraryProbe probe_cuda_runtime() { return {}; }
LibraryProbe probe_cublas() { return {}; }
int nccl_build_version_code() { return 0; }

std::size_t copy_round_trip_mismatches(int /*ordinal*/, std::size_t /*bytes*/) {
  throw_not_compiled("the CUDA transfer check", "TENAX_WITH_CUDA");
}

Bandwidth measure_bandwidth(int /*ordinal*/, std::size_t /*bytes*/) {
  throw_not_compiled("the CUDA bandwidth check", "TENAX_WITH_CUDA");
}

std::vector<std::vector<bool>> peer_access_matrix(int /*count*/) {
  throw_not_compiled("the CUDA peer access check", "TENAX_WITH_CUDA");
}

}  // namespace tenax::tools
