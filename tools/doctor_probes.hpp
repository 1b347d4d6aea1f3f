// What `tenax doctor` needs from CUDA libraries, without CUDA headers. Implemented in
// tools/cuda/ when the CUDA backend is compiled in and by tools/stub/ otherwise (where every
// probe answers "not compiled" and the device probes throw NotCompiledError).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tenax::tools {

// A library's version as loaded at run time next to the one its headers had at build time.
struct LibraryProbe {
  bool compiled = false;       // false in a build without CUDA
  std::string version;         // loaded library, e.g. "13.1.0"
  std::string header_version;  // headers tenax was built with
  std::string path;            // file the library was loaded from, when known
  int version_code = 0;        // the two versions as comparable numbers (0 when unknown)
  int header_version_code = 0;
  std::string load_cause;  // why a library loaded at run time could not be (empty when it was)
  std::string load_fix;
};

[[nodiscard]] LibraryProbe probe_cuda_runtime();
[[nodiscard]] LibraryProbe probe_cublas();
// NCCL_VERSION_CODE of the nccl.h tenax was built with (0 in a build without CUDA). The NCCL
// loaded at run time is asked with dlopen/dlsym (doctor_checks_nccl.cpp), not through this.
[[nodiscard]] int nccl_build_version_code();

// Copies `bytes` of a pattern host -> device `ordinal` -> host and returns how many bytes came
// back different. Throws the tenax::Error of the CUDA failure's fault class.
[[nodiscard]] std::size_t copy_round_trip_mismatches(int ordinal, std::size_t bytes);

// Host<->device copy rates in GB/s (1e9 bytes per second) from pageable (malloc) and pinned
// (cudaHostAlloc) host buffers of `bytes` each.
struct Bandwidth {
  double pageable_to_device = 0;
  double pageable_to_host = 0;
  double pinned_to_device = 0;
  double pinned_to_host = 0;
};
[[nodiscard]] Bandwidth measure_bandwidth(int ordinal, std::size_t bytes);

// cudaDeviceCanAccessPeer for every ordered pair of the `count` visible devices:
// result[from][to] says whether device `from` can read and write device `to`'s memory directly
// (the diagonal is true). Throws the tenax::Error of the CUDA failure's fault class.
[[nodiscard]] std::vector<std::vector<bool>> peer_access_matrix(int count);

}  // namespace tenax::tools
