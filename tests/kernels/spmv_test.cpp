#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "kernels/linalg_test_helpers.hpp"
#include "kernels/spmv_cases.hpp"
#include "tenax/core/context.hpp"
#include "tenax/kernels/csr_matrix.hpp"
#include "tenax/kernels/detail/linalg_kernels.hpp"
#include "tenax/kernels/ops_linalg.hpp"

namespace tenax {
namespace {

using testing::make_tensor;
using testing::random_reals;
using testing::values_of;

using spmv_cases::SpmvKernels;
// The bodies shared with the CUDA backend (spmv_cases.hpp), on the CPU.
INSTANTIATE_TEST_SUITE_P(Cpu, SpmvKernels, ::testing::Values(Device::cpu()), testing::backend_name);

template <class I>
Tensor index_tensor(const std::vector<std::int64_t>& values) {
  Tensor t = Tensor::empty({static_cast<std::int64_t>(values.size())}, dtype_of<I>);
  for (std::size_t i = 0; i < values.size(); ++i) t.data_as<I>()[i] = static_cast<I>(values[i]);
  return t;
}

TEST(CsrMatrix, FromDenseRoundTripsAndDescribesItself) {
  const std::vector<double> dense = {1, 0, 2, 0, 0, 0, 0, 3, 4};
  for (const DType index : {DType::i64, DType::i32}) {
    const CsrMatrix a = CsrMatrix::from_dense(make_tensor({3, 3}, DType::f64, dense), index);
    EXPECT_EQ(a.rows(), 3);
    EXPECT_EQ(a.cols(), 3);
    EXPECT_EQ(a.nnz(), 4);
    EXPECT_EQ(a.index_dtype(), index);
    EXPECT_EQ(values_of(a.to_dense()), dense);
    EXPECT_EQ(a.to(Device::cpu()).values().data(), a.values().data());
  }
  const CsrMatrix a = CsrMatrix::from_dense(make_tensor({3, 3}, DType::f32, dense));
  EXPECT_EQ(a.describe(), "csr f32[3, 3] (nnz 4, i64 indices) on cpu");
}

TEST(CsrMatrix, DuplicatesAndUnsortedColumnsAreAllowed) {
  const CsrMatrix a(2, 3, index_tensor<std::int32_t>({0, 3, 3}),
                    index_tensor<std::int32_t>({2, 0, 2}),
                    make_tensor({3}, DType::f64, {1.0, 2.0, 3.0}));
  EXPECT_EQ(values_of(a.to_dense()), (std::vector<double>{2, 0, 4, 0, 0, 0}));
}

std::string construction_error(const std::function<CsrMatrix()>& make) {
  try {
    (void)make();
  } catch (const UsageError& e) {
    EXPECT_FALSE(e.fix().empty());
    return e.cause() + " -- fix: " + e.fix();
  }
  ADD_FAILURE() << "expected a UsageError";
  return {};
}

TEST(CsrMatrix, ValidationRejectsMalformedStructureWithClearMessages) {
  using I = std::int64_t;
  const Tensor v3 = make_tensor({3}, DType::f64, {1, 2, 3});
  std::string m = construction_error([&] {
    return CsrMatrix(3, 3, index_tensor<I>({0, 2, 1, 3}), index_tensor<I>({0, 1, 2}), v3);
  });
  EXPECT_NE(m.find("row_ptr is not monotone: row_ptr[1] = 2 > row_ptr[2] = 1"), std::string::npos)
      << m;

  m = construction_error([&] {
    return CsrMatrix(3, 3, index_tensor<I>({0, 1, 2, 3}), index_tensor<I>({0, 3, 1}), v3);
  });
  EXPECT_NE(m.find("column index out of range: col_idx[1] = 3 (row 1) but the matrix has 3 "
                   "columns"),
            std::string::npos)
      << m;

  m = construction_error([&] {
    return CsrMatrix(3, 3, index_tensor<I>({0, 1, 2, 3}), index_tensor<I>({0, -1, 1}), v3);
  });
  EXPECT_NE(m.find("col_idx[1] = -1"), std::string::npos) << m;

  m = construction_error([&] {
    return CsrMatrix(3, 3, index_tensor<I>({0, 1, 3}), index_tensor<I>({0, 1, 2}), v3);
  });
  EXPECT_NE(m.find("row_ptr has 3 entries but a matrix with 3 rows needs rows + 1 = 4"),
            std::string::npos)
      << m;

  m = construction_error([&] {
    return CsrMatrix(3, 3, index_tensor<I>({0, 1, 2, 3}), index_tensor<I>({0, 1}), v3);
  });
  EXPECT_NE(m.find("col_idx has 2 entries but values has 3"), std::string::npos) << m;

  m = construction_error([&] {
    return CsrMatrix(3, 3, index_tensor<I>({0, 1, 2, 2}), index_tensor<I>({0, 1, 2}), v3);
  });
  EXPECT_NE(m.find("row_ptr[3] = 2 but col_idx and values have 3 entries"), std::string::npos) << m;

  m = construction_error([&] {
    return CsrMatrix(3, 3, index_tensor<I>({1, 1, 2, 3}), index_tensor<I>({0, 1, 2}), v3);
  });
  EXPECT_NE(m.find("row_ptr[0] is 1 but must be 0"), std::string::npos) << m;

  m = construction_error([&] {
    return CsrMatrix(3, 3, index_tensor<I>({0, 1, 2, 3}), index_tensor<std::int32_t>({0, 1, 2}),
                     v3);
  });
  EXPECT_NE(m.find("row_ptr is i64 but col_idx is i32"), std::string::npos) << m;

  m = construction_error([&] {
    return CsrMatrix(3, 3, index_tensor<I>({0, 1, 2, 3}), index_tensor<I>({0, 1, 2}),
                     make_tensor({3}, DType::f16, {1, 2, 3}));
  });
  EXPECT_NE(m.find("values is f16[3] on cpu but must be f64 or f32"), std::string::npos) << m;

  m = construction_error([&] {
    return CsrMatrix(3, 3, make_tensor({4}, DType::f32, {0, 1, 2, 3}), index_tensor<I>({0, 1, 2}),
                     v3);
  });
  EXPECT_NE(m.find("row_ptr is f32[4] on cpu but indices must be i32 or i64"), std::string::npos)
      << m;

  m = construction_error([&] {
    return CsrMatrix(-1, 3, index_tensor<I>({0}), index_tensor<I>({}),
                     make_tensor({0}, DType::f64, {}));
  });
  EXPECT_NE(m.find("rows = -1"), std::string::npos) << m;
}

TEST(Spmv, ResultDoesNotDependOnTheThreadCount) {
  const std::int64_t n = 20000;
  auto dense_row_values = random_reals(n * 3, DType::f64, 3);
  std::vector<std::int64_t> row_ptr(n + 1), cols(n * 3);
  for (std::int64_t r = 0; r < n; ++r) {
    row_ptr[r + 1] = 3 * (r + 1);
    for (int j = 0; j < 3; ++j) cols[3 * r + j] = (r * 7 + j * 13) % n;
  }
  const CsrMatrix a(n, n, index_tensor<std::int64_t>(row_ptr), index_tensor<std::int64_t>(cols),
                    make_tensor({n * 3}, DType::f64, dense_row_values));
  const Tensor x = make_tensor({n}, DType::f64, random_reals(n, DType::f64, 4));
  const Tensor y1 = Tensor::empty({n}, DType::f64);
  const Tensor y4 = Tensor::empty({n}, DType::f64);
  CpuContext one(1);
  CpuContext four(4);
  kernels::cpu::spmv(one, {a, x, y1, 1.0, 0.0});
  kernels::cpu::spmv(four, {a, x, y4, 1.0, 0.0});
  EXPECT_EQ(std::memcmp(y1.data(), y4.data(), y1.nbytes()), 0);
}

std::string spmv_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.cause() + " -- fix: " + e.fix();
  }
  ADD_FAILURE() << "expected a UsageError";
  return {};
}

TEST(Spmv, ErrorsNameTheOperandsAndTheFix) {
  const CsrMatrix a = CsrMatrix::from_dense(make_tensor({3, 2}, DType::f64, {1, 2, 0, 0, 3, 4}));
  const Tensor x = Tensor::empty({2}, DType::f64);
  const Tensor y = Tensor::empty({3}, DType::f64);
  std::string m = spmv_error([&] { ops::spmv(a, Tensor::empty({3}, DType::f64), y); });
  EXPECT_NE(m.find("spmv: a is csr f64[3, 2] (nnz 4, i64 indices) on cpu but x has shape [3]"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("pass x of shape [2]"), std::string::npos) << m;
  m = spmv_error([&] { ops::spmv(a, x, Tensor::empty({2}, DType::f64)); });
  EXPECT_NE(m.find("but y has shape [2]"), std::string::npos) << m;
  m = spmv_error([&] { ops::spmv(a, Tensor::empty({2}, DType::f32), y); });
  EXPECT_NE(m.find("spmv: a is f64 but x is f32 and y is f64"), std::string::npos) << m;
  m = spmv_error([&] { ops::spmv(CsrMatrix(), x, y); });
  EXPECT_NE(m.find("empty CsrMatrix"), std::string::npos) << m;
  const Tensor xy = Tensor::empty({3}, DType::f64);
  const CsrMatrix square =
      CsrMatrix::from_dense(make_tensor({3, 3}, DType::f64, {1, 0, 0, 0, 1, 0, 0, 0, 1}));
  m = spmv_error([&] { ops::spmv(square, xy, xy); });
  EXPECT_NE(m.find("spmv: y overlaps x"), std::string::npos) << m;
}

}  // namespace
}  // namespace tenax
