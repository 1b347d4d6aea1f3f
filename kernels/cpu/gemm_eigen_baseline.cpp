// Eigen's GEMM rows for baseline x86-64 (see gemm_eigen.hpp).
#define TENAX_EIGEN_GEMM_SUFFIX baseline
#include "gemm_eigen.hpp"
