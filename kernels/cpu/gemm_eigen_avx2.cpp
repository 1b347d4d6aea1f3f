// Eigen's GEMM rows compiled for AVX2 and FMA (kernels/CMakeLists.txt adds -mavx2 -mfma to this
// file only); gemm.cpp calls them only where the CPU has both. Eigen's namespace is renamed
// first, so that none of its template instances here (AVX2 code) can stand in for the baseline
// ones elsewhere in the library, or the other way round.
#define Eigen tenax_eigen_avx2
#define TENAX_EIGEN_GEMM_SUFFIX avx2
#include "gemm_eigen.hpp"
