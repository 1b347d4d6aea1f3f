// Eigen's GEMM on row ranges (gemm.cpp splits C into them), compiled once per instruction set:
// gemm_eigen_baseline.cpp for baseline x86-64, gemm_eigen_avx2.cpp with -mavx2 -mfma and
// gemm_eigen_avx512.cpp with AVX-512 (F, DQ, VL, BW) and FMA, chosen at run time. The AVX2 and
// AVX-512 files rename the Eigen namespace before including Eigen, so that their template
// instances never merge with another build's in the same library.
#pragma once

#include <cstdint>

#include "tenax/kernels/detail/linalg_kernels.hpp"

namespace tenax::kernels::cpu {

void eigen_gemm_rows_baseline(const float* a, const float* b, float* c_panel, const GemmArgs& g,
                              float alpha, float beta, std::int64_t r0, std::int64_t r1);
void eigen_gemm_rows_baseline(const double* a, const double* b, double* c_panel, const GemmArgs& g,
                              double alpha, double beta, std::int64_t r0, std::int64_t r1);
void eigen_gemm_rows_avx2(const float* a, const float* b, float* c_panel, const GemmArgs& g,
                          float alpha, float beta, std::int64_t r0, std::int64_t r1);
void eigen_gemm_rows_avx2(const double* a, const double* b, double* c_panel, const GemmArgs& g,
                          double alpha, double beta, std::int64_t r0, std::int64_t r1);
void eigen_gemm_rows_avx512(const float* a, const float* b, float* c_panel, const GemmArgs& g,
                            float alpha, float beta, std::int64_t r0, std::int64_t r1);
void eigen_gemm_rows_avx512(const double* a, const double* b, double* c_panel, const GemmArgs& g,
                            double alpha, double beta, std::int64_t r0, std::int64_t r1);

}  // namespace tenax::kernels::cpu

// The definitions, for the two .cpp files only (each sets TENAX_EIGEN_GEMM_SUFFIX first).
#ifdef TENAX_EIGEN_GEMM_SUFFIX
#include <Eigen/Core>

namespace tenax::kernels::cpu {
namespace {

template <class T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ConstMap = Eigen::Map<const RowMatrix<T>>;
template <class T>
using Map = Eigen::Map<RowMatrix<T>>;

template <class C, class A, class B, class T>
void product(C&& c, const A& a, const B& b, T alpha, T beta) {
  if (beta == T(0)) {
    c.noalias() = alpha * a * b;
  } else {
    if (beta != T(1)) c *= beta;
    c.noalias() += alpha * a * b;
  }
}

// Rows [r0, r1) of C = alpha op(A) op(B) + beta C with Eigen; c_panel points at row r0 of C.
template <class T>
void eigen_rows(const T* a, const T* b, T* c_panel, const GemmArgs& g, T alpha, T beta,
                std::int64_t r0, std::int64_t r1) {
  const std::int64_t rows = r1 - r0;
  Map<T> c(c_panel, rows, g.n);
  const ConstMap<T> b_stored(b, g.transpose_b ? g.n : g.k, g.transpose_b ? g.k : g.n);
  auto with_a = [&](const auto& op_a) {
    if (g.transpose_b) {
      product(c, op_a, b_stored.transpose(), alpha, beta);
    } else {
      product(c, op_a, b_stored, alpha, beta);
    }
  };
  if (g.transpose_a) {
    const ConstMap<T> a_stored(a, g.k, g.m);
    with_a(a_stored.middleCols(r0, rows).transpose());
  } else {
    with_a(ConstMap<T>(a + r0 * g.k, rows, g.k));
  }
}

}  // namespace

#define TENAX_EIGEN_GEMM_CONCAT(a, b) a##b
#define TENAX_EIGEN_GEMM_NAME(a, b) TENAX_EIGEN_GEMM_CONCAT(a, b)
void TENAX_EIGEN_GEMM_NAME(eigen_gemm_rows_,
                           TENAX_EIGEN_GEMM_SUFFIX)(const float* a, const float* b, float* c_panel,
                                                    const GemmArgs& g, float alpha, float beta,
                                                    std::int64_t r0, std::int64_t r1) {
  eigen_rows(a, b, c_panel, g, alpha, beta, r0, r1);
}
void TENAX_EIGEN_GEMM_NAME(eigen_gemm_rows_,
                           TENAX_EIGEN_GEMM_SUFFIX)(const double* a, const double* b,
                                                    double* c_panel, const GemmArgs& g,
                                                    double alpha, double beta, std::int64_t r0,
                                                    std::int64_t r1) {
  eigen_rows(a, b, c_panel, g, alpha, beta, r0, r1);
}

}  // namespace tenax::kernels::cpu
#endif
