// Versions of the math libraries the kernels were linked against, for `tenax doctor`.
#pragma once

namespace tenax::kernels {

// cuBLAS version as major * 10000 + minor * 100 + patch (e.g. 130100 for 13.1.0), as reported
// by the loaded library; 0 in a build without CUDA. Needs no GPU. Never throws.
[[nodiscard]] int cublas_version() noexcept;

}  // namespace tenax::kernels
