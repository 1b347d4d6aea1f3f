// Sparse matrix-vector products written once for every backend (backend_test.hpp): the dense
// product for both index types and dtypes (small integers: every sum exact), beta = 0 not reading
// y, empty rows.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "kernels/backend_test.hpp"
#include "kernels/linalg_test_helpers.hpp"
#include "tenax/kernels/csr_matrix.hpp"
#include "tenax/kernels/ops_linalg.hpp"

namespace tenax::spmv_cases {

using testing::make_tensor;
using testing::naive_gemm;
using testing::random_integers;
using testing::values_of;

// A dense [rows, cols] matrix with about `density` of its entries nonzero small integers.
inline std::vector<double> sparse_dense(std::int64_t rows, std::int64_t cols, double density,
                                        std::uint32_t seed) {
  auto values = random_integers(rows * cols, 5, seed);
  std::mt19937 gen(seed + 1);
  std::bernoulli_distribution keep(density);
  for (double& v : values) {
    if (!keep(gen)) v = 0.0;
  }
  return values;
}

class SpmvKernels : public testing::BackendTest {};

TEST_P(SpmvKernels, MatchesTheDenseProductForBothIndexTypesAndDtypes) {
  std::uint32_t seed = 10;
  for (const auto& [rows, cols] :
       {std::pair<std::int64_t, std::int64_t>{1, 1}, {5, 7}, {40, 13}, {257, 300}}) {
    for (const DType dtype : {DType::f64, DType::f32}) {
      for (const DType index : {DType::i64, DType::i32}) {
        const auto dense = sparse_dense(rows, cols, 0.3, seed++);
        const auto x = random_integers(cols, 3, seed++);
        const auto y0 = random_integers(rows, 3, seed++);
        const CsrMatrix a =
            put(CsrMatrix::from_dense(make_tensor({rows, cols}, dtype, dense), index));
        const Tensor tx = put(make_tensor({cols}, dtype, x));
        const Tensor ty = put(make_tensor({rows}, dtype, y0));
        ops::spmv(a, tx, ty, 2.0, -1.0);
        // Small integers: every partial sum is exact in f32 too.
        const auto want = naive_gemm(dense, x, y0, rows, 1, cols, false, false, 2.0, -1.0);
        EXPECT_EQ(values_of(ty), want)
            << rows << "x" << cols << " " << to_string(dtype) << " " << to_string(index);
      }
    }
  }
}

TEST_P(SpmvKernels, BetaZeroDoesNotReadYAndEmptyRowsGiveZero) {
  const CsrMatrix a =
      put(CsrMatrix::from_dense(make_tensor({3, 2}, DType::f64, {1, 2, 0, 0, 3, 4})));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor y = put(make_tensor({3}, DType::f64, {nan, nan, nan}));
  ops::spmv(a, put(make_tensor({2}, DType::f64, {1, 1})), y);
  EXPECT_EQ(values_of(y), (std::vector<double>{3, 0, 7}));
}

}  // namespace tenax::spmv_cases
