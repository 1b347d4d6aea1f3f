/// What `tenax doctor` asks of the cuBLAS that kernels/cuda loads at run time (CUDA builds only).
/// Not a public header. @file
#pragma once

#include <string>

namespace tenax::kernels::cuda {

struct CublasLoadReport {
  std::string path;   ///< the file loaded (empty when none)
  std::string cause;  ///< why none could be loaded (empty when loaded)
  std::string fix;
  int major = 0;
  int minor = 0;
  int patch = 0;
};

/// Loads cuBLAS if that was not done yet and reports the outcome; never throws.
[[nodiscard]] CublasLoadReport cublas_load_report() noexcept;

}  // namespace tenax::kernels::cuda
