// Eigen's GEMM rows compiled for AVX-512 and FMA (kernels/CMakeLists.txt adds the flags to this
// file only); gemm.cpp calls them only where the CPU has them. Eigen's namespace is renamed first,
// as in gemm_eigen_avx2.cpp, so that no template instance here stands in for another build's.
#define Eigen tenax_eigen_avx512
#define TENAX_EIGEN_GEMM_SUFFIX avx512
#include "gemm_eigen.hpp"
