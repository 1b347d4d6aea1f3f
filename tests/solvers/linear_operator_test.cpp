// Linear operators: each implementation against a dense reference, the fused apply_dot against
// apply + dot, diagonals, dtype casts, and the operand checks of the non-virtual front end.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "host_memory_limit.hpp"
#include "solvers/test_problems.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/solvers/callable_operator.hpp"
#include "tenax/solvers/csr_operator.hpp"
#include "tenax/solvers/laplacian_operator.hpp"
#include "tenax/solvers/poisson.hpp"
#include "tenax/solvers/scaled_shifted_operator.hpp"

namespace tenax::solvers {
namespace {

using testing::make_tensor;
using testing::random_vector;
using testing::values_of;

// A x by the textbook loop over the dense form of a CSR matrix.
std::vector<double> dense_product(const CsrMatrix& a, const Tensor& x) {
  const std::vector<double> d = values_of(a.to_dense());
  const std::vector<double> xv = values_of(x);
  std::vector<double> y(static_cast<std::size_t>(a.rows()), 0.0);
  for (std::size_t i = 0; i < y.size(); ++i) {
    for (std::size_t j = 0; j < xv.size(); ++j) y[i] += d[i * xv.size() + j] * xv[j];
  }
  return y;
}

void expect_near_vectors(const std::vector<double>& got, const std::vector<double>& want,
                         double tolerance) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tolerance * (1.0 + std::fabs(want[i]))) << "element " << i;
  }
}

template <class F>
std::string usage_error_of(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return std::string(e.what()) + " | fix: " + e.fix();
  }
  return "no UsageError";
}

TEST(PoissonCsr, MatchesTheStencilDefinitionIn2dAnd3d) {
  const CsrMatrix a2 = poisson_2d_csr(3, 4, 0.5, 0.25);
  const std::vector<double> d2 = values_of(a2.to_dense());
  // Row of grid point (y=1, x=1) = index 5: neighbours 1, 4, 6, 9.
  EXPECT_DOUBLE_EQ(d2[5 * 12 + 5], 2.0 * (4.0 + 16.0));
  EXPECT_DOUBLE_EQ(d2[5 * 12 + 4], -16.0);
  EXPECT_DOUBLE_EQ(d2[5 * 12 + 6], -16.0);
  EXPECT_DOUBLE_EQ(d2[5 * 12 + 1], -4.0);
  EXPECT_DOUBLE_EQ(d2[5 * 12 + 9], -4.0);
  // Corner (0, 0): only east and north neighbours.
  EXPECT_EQ(a2.nnz(), 12 * 5 - 2 * (3 + 4));
  const CsrMatrix a3 = poisson_3d_csr(2, 3, 4, 1.0, 0.5, 0.25);
  EXPECT_EQ(a3.rows(), 24);
  const std::vector<double> d3 = values_of(a3.to_dense());
  // (z=1, y=1, x=1) = index 12 + 4 + 1 = 17: z neighbour 5, y neighbours 13 and 21.
  EXPECT_DOUBLE_EQ(d3[17 * 24 + 17], 2.0 * (1.0 + 4.0 + 16.0));
  EXPECT_DOUBLE_EQ(d3[17 * 24 + 5], -1.0);
  EXPECT_DOUBLE_EQ(d3[17 * 24 + 13], -4.0);
  EXPECT_DOUBLE_EQ(d3[17 * 24 + 16], -16.0);
  for (std::int64_t i = 0; i < 24; ++i) {
    double row_sum = 0.0;
    for (std::int64_t j = 0; j < 24; ++j) row_sum += d3[i * 24 + j];
    EXPECT_GE(row_sum, -1e-12) << "row " << i << " of an M-matrix sums to >= 0";
  }
}

TEST(PoissonCsr, I32AndI64IndicesAndF32ValuesGiveTheSameMatrix) {
  const CsrMatrix a64 = poisson_2d_csr(5, 6, 0.2, 0.1, DType::f64, DType::i64);
  const CsrMatrix a32 = poisson_2d_csr(5, 6, 0.2, 0.1, DType::f64, DType::i32);
  const CsrMatrix f32 = poisson_2d_csr(5, 6, 0.2, 0.1, DType::f32, DType::i32);
  EXPECT_EQ(a32.index_dtype(), DType::i32);
  EXPECT_EQ(f32.dtype(), DType::f32);
  EXPECT_EQ(values_of(a64.to_dense()), values_of(a32.to_dense()));
  expect_near_vectors(values_of(f32.to_dense()), values_of(a64.to_dense()), 1e-6);
  EXPECT_NE(usage_error_of([] { (void)poisson_2d_csr(0, 3, 1.0, 1.0); }), "no UsageError");
  EXPECT_NE(usage_error_of([] { (void)poisson_2d_csr(3, 3, -1.0, 1.0); }), "no UsageError");
  EXPECT_NE(usage_error_of([] { (void)poisson_2d_csr(3, 3, 1.0, 1.0, DType::i32); }),
            "no UsageError");
}

// Sizes are checked before anything is allocated, and the arrays come from the memory pool: an
// overflowing grid is a UsageError (it was std::length_error), a grid beyond the limit an
// OutOfMemoryError naming the matrix (it was std::bad_alloc outside the pool), and an entry
// count beyond i32 names the index dtype.
TEST(PoissonCsr, SizesAreCheckedAndTheArraysRespectTheMemoryLimit) {
  const std::string overflow =
      usage_error_of([] { (void)poisson_2d_csr(3037000000, 3037000000, 1.0, 1.0); });
  EXPECT_NE(overflow.find("poisson_2d_csr: the matrix"), std::string::npos) << overflow;
  EXPECT_NE(usage_error_of([] {
              (void)poisson_3d_csr(3000000, 3000000, 3000000, 1.0, 1.0, 1.0);
            }).find("below 2^63"),
            std::string::npos);
  const std::string index =
      usage_error_of([] { (void)poisson_2d_csr(21000, 21000, 1.0, 1.0, DType::f64, DType::i32); });
  EXPECT_NE(index.find("2204916000 entries do not fit the i32 index dtype"), std::string::npos)
      << index;
  const tenax::testing::HostMemoryLimit limit(std::size_t{32} << 20);
  try {
    (void)poisson_2d_csr(2000, 2000, 1.0, 1.0);
    FAIL() << "a 4 000 000-row matrix fit a 32 MiB pool";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(e.cause().find("poisson_2d_csr: the matrix of 4000000 rows and 19992000 entries"),
              std::string::npos)
        << e.cause();
  }
  EXPECT_EQ(poisson_2d_csr(100, 100, 1.0, 1.0).nnz(), 5 * 100 * 100 - 4 * 100);
}

TEST(CsrOperator, AppliesTheMatrixAndFusesTheDot) {
  const CsrMatrix a = testing::convection_diffusion(5, 3.0, 1.0);
  const OperatorPtr op = make_csr_operator(a);
  const Tensor x = random_vector(25, 1);
  const Tensor y = Tensor::empty({25}, DType::f64);
  op->apply(x, y);
  expect_near_vectors(values_of(y), dense_product(a, x), 1e-13);

  const Tensor q = Tensor::empty({25}, DType::f64);
  const double xq = op->apply_dot(x, q);
  EXPECT_EQ(values_of(q), values_of(y));
  EXPECT_EQ(xq, ops::dot(x, y)) << "the fused dot is bitwise ops::dot";
  EXPECT_EQ(op->describe(), a.describe());
}

TEST(LinearOperator, ApplyDotsFusedOrNotGiveTheBitsOfApplyAndDot) {
  // The CSR operator fuses both dots into its product; the stencil and callable operators take
  // the default (apply, then ops::dot). Both must give the bits of apply + ops::dot.
  const CsrMatrix a = testing::convection_diffusion(37, 3.0, 1.0);
  const std::int64_t n = a.rows();
  const OperatorPtr csr = make_csr_operator(a);
  const CallableOperator callable(
      n, n, DType::f64, Device::cpu(), [&](const Tensor& x, const Tensor& y) { csr->apply(x, y); },
      "csr in a function");
  const Laplacian2dOperator stencil(37, 37, 0.1, 0.2);
  const Tensor x = random_vector(n, 3);
  const Tensor w = random_vector(n, 4);
  for (const LinearOperator* op : {static_cast<const LinearOperator*>(csr.get()),
                                   static_cast<const LinearOperator*>(&callable),
                                   static_cast<const LinearOperator*>(&stencil)}) {
    SCOPED_TRACE(op->describe());
    const Tensor y = Tensor::empty({n}, DType::f64);
    op->apply(x, y);
    const Tensor q = Tensor::empty({n}, DType::f64);
    const LinearOperator::Dots dots = op->apply_dots(x, q, w);
    EXPECT_EQ(values_of(q), values_of(y));
    EXPECT_EQ(dots.wy, ops::dot(w, y));
    EXPECT_EQ(dots.yy, ops::dot(y, y));
    const Tensor q2 = Tensor::empty({n}, DType::f64);
    EXPECT_EQ(op->apply_dot_with(x, q2, w), ops::dot(w, y));
    EXPECT_EQ(op->apply_dots(x, q2, x).wy, op->apply_dot(x, q)) << "w may be x itself";
    // w must not be written: y may not overlap it.
    const std::string aliased = usage_error_of([&] { (void)op->apply_dots(x, w, w); });
    EXPECT_NE(aliased.find("y overlaps w"), std::string::npos) << aliased;
    const std::string short_w =
        usage_error_of([&] { (void)op->apply_dot_with(x, q, Tensor::empty({n - 1}, DType::f64)); });
    EXPECT_NE(short_w.find("apply_dots: w"), std::string::npos) << short_w;
  }
}

TEST(CsrOperator, DiagonalSumsDuplicatesAndIsZeroWhereMissing) {
  // Row 0 stores (0,0) twice; row 1 stores no diagonal entry.
  const Tensor row_ptr = make_tensor({0, 3, 4}, DType::i64);
  const Tensor col_idx = make_tensor({0, 1, 0, 0}, DType::i64);
  const Tensor values = make_tensor({2.0, 5.0, 1.5, 7.0}, DType::f64);
  const CsrOperator op(CsrMatrix(2, 2, row_ptr, col_idx, values));
  ASSERT_TRUE(op.has_diagonal());
  EXPECT_EQ(values_of(op.diagonal()), (std::vector<double>{3.5, 0.0}));
}

TEST(CsrOperator, WithDtypeCastsTheValues) {
  const OperatorPtr op = make_csr_operator(testing::poisson(4));
  const OperatorPtr op32 = op->with_dtype(DType::f32);
  EXPECT_EQ(op32->dtype(), DType::f32);
  const Tensor x = random_vector(16, 2);
  const Tensor y = Tensor::empty({16}, DType::f64);
  const Tensor y32 = Tensor::empty({16}, DType::f32);
  op->apply(x, y);
  op32->apply(ops::cast(x, DType::f32), y32);
  expect_near_vectors(values_of(y32), values_of(y), 1e-5);
  EXPECT_EQ(op->with_dtype(DType::f64)->dtype(), DType::f64);
}

TEST(LaplacianOperator, TwoDimensionalEqualsTheAssembledMatrix) {
  const std::int64_t ny = 6, nx = 7;
  const Laplacian2dOperator op(ny, nx, 0.3, 0.2);
  const CsrMatrix a = poisson_2d_csr(ny, nx, 0.3, 0.2);
  const Tensor x = random_vector(ny * nx, 3);
  const Tensor y = Tensor::empty({ny * nx}, DType::f64);
  op.apply(x, y);
  expect_near_vectors(values_of(y), dense_product(a, x), 1e-12);
  const Tensor q = Tensor::empty({ny * nx}, DType::f64);
  EXPECT_EQ(op.apply_dot(x, q), ops::dot(x, y));
  EXPECT_EQ(values_of(q), values_of(y));
  EXPECT_EQ(values_of(op.diagonal()), values_of(CsrOperator(a).diagonal()));
}

TEST(LaplacianOperator, ThreeDimensionalEqualsTheAssembledMatrix) {
  const Laplacian3dOperator op(3, 4, 5, 0.5, 0.25, 0.2);
  const CsrMatrix a = poisson_3d_csr(3, 4, 5, 0.5, 0.25, 0.2);
  const Tensor x = random_vector(60, 4);
  const Tensor y = Tensor::empty({60}, DType::f64);
  op.apply(x, y);
  expect_near_vectors(values_of(y), dense_product(a, x), 1e-12);
  EXPECT_EQ(values_of(op.diagonal()), values_of(CsrOperator(a).diagonal()));
  const OperatorPtr op32 = op.with_dtype(DType::f32);
  const Tensor y32 = Tensor::empty({60}, DType::f32);
  op32->apply(ops::cast(x, DType::f32), y32);
  expect_near_vectors(values_of(y32), values_of(y), 1e-5);
}

TEST(LaplacianOperator, RejectsEmptyGridsAndBadSpacings) {
  EXPECT_NE(usage_error_of([] { Laplacian2dOperator(0, 4, 1.0, 1.0); }), "no UsageError");
  EXPECT_NE(usage_error_of([] { Laplacian2dOperator(4, 4, 0.0, 1.0); }), "no UsageError");
  EXPECT_NE(usage_error_of([] { Laplacian3dOperator(2, 2, 2, 1.0, NAN, 1.0); }), "no UsageError");
  EXPECT_NE(usage_error_of([] { Laplacian2dOperator(4, 4, 1.0, 1.0, DType::f16); }),
            "no UsageError");
  // Point counts past 2^63 - 1 are named, not wrapped into a small grid.
  const std::string wide =
      usage_error_of([] { Laplacian2dOperator(6074001000, 6074001000, 1.0, 1.0); });
  EXPECT_NE(wide.find("the grid's points (6074001000 * 6074001000)"), std::string::npos) << wide;
  const std::string deep =
      usage_error_of([] { Laplacian3dOperator(3037000, 3037000, 3037000, 1.0, 1.0, 1.0); });
  EXPECT_NE(deep.find("Laplacian3dOperator: the grid's points"), std::string::npos) << deep;
}

TEST(CallableOperator, CallsTheFunctionWithValidatedOperands) {
  int calls = 0;
  const CallableOperator op(
      3, 3, DType::f64, Device::cpu(),
      [&](const Tensor& x, const Tensor& y) {
        ++calls;
        ops::copy(y, x);
        ops::scale(2.0, y);
      },
      "double");
  const Tensor x = make_tensor({1.0, 2.0, 3.0}, DType::f64);
  const Tensor y = Tensor::empty({3}, DType::f64);
  EXPECT_EQ(op.apply_dot(x, y), 28.0);
  EXPECT_EQ(values_of(y), (std::vector<double>{2.0, 4.0, 6.0}));
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(op.has_diagonal());
  EXPECT_FALSE(op.supports_dtype_cast());
  const std::string no_diagonal = usage_error_of([&] { (void)op.diagonal(); });
  EXPECT_NE(no_diagonal.find("callable 'double'"), std::string::npos) << no_diagonal;
  EXPECT_NE(no_diagonal.find("CsrOperator"), std::string::npos) << no_diagonal;
  EXPECT_NE(usage_error_of([&] { (void)op.with_dtype(DType::f32); }), "no UsageError");
  EXPECT_NE(usage_error_of([] { CallableOperator(2, 2, DType::f64, Device::cpu(), {}); }),
            "no UsageError");
}

TEST(ScaledShiftedOperator, AppliesAlphaAPlusBetaIAndShiftsTheDiagonal) {
  const CsrMatrix a = testing::poisson(4);
  const OperatorPtr shifted = scale_and_shift(make_csr_operator(a), 0.5, -3.0);
  const Tensor x = random_vector(16, 5);
  const Tensor y = Tensor::empty({16}, DType::f64);
  shifted->apply(x, y);
  std::vector<double> want = dense_product(a, x);
  const std::vector<double> xv = values_of(x);
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = 0.5 * want[i] - 3.0 * xv[i];
  expect_near_vectors(values_of(y), want, 1e-13);
  const double diagonal = 0.5 * 4.0 * 25.0 - 3.0;  // 0.5 * 4/h^2 - 3 with h = 1/5
  for (const double d : values_of(shifted->diagonal())) EXPECT_NEAR(d, diagonal, 1e-12);
  EXPECT_EQ(shifted->with_dtype(DType::f32)->dtype(), DType::f32);
  EXPECT_NE(shifted->describe().find("csr"), std::string::npos);
}

TEST(LinearOperator, ApplyNamesTheOperatorTheOperandAndTheFix) {
  const Laplacian2dOperator op(4, 4, 1.0, 1.0);
  const Tensor y = Tensor::empty({16}, DType::f64);

  const std::string wrong_dtype =
      usage_error_of([&] { op.apply(Tensor::empty({16}, DType::f32), y); });
  EXPECT_NE(wrong_dtype.find("-laplacian 5-point"), std::string::npos) << wrong_dtype;
  EXPECT_NE(wrong_dtype.find("x"), std::string::npos) << wrong_dtype;
  EXPECT_NE(wrong_dtype.find("ops::cast"), std::string::npos) << wrong_dtype;

  const std::string wrong_shape = usage_error_of([&] {
    op.apply(Tensor::empty({4, 4}, DType::f64), y);
  });
  EXPECT_NE(wrong_shape.find("reshape({16})"), std::string::npos) << wrong_shape;

  const std::string wrong_length =
      usage_error_of([&] { op.apply(Tensor::empty({15}, DType::f64), y); });
  EXPECT_NE(wrong_length.find("f64[16]"), std::string::npos) << wrong_length;

  const std::string wrong_device =
      usage_error_of([&] { op.apply(tenax::testing::fake_cuda_tensor({16}, DType::f64), y); });
  EXPECT_NE(wrong_device.find("cuda:0"), std::string::npos) << wrong_device;
  EXPECT_NE(wrong_device.find("to(cpu)"), std::string::npos) << wrong_device;

  const std::string undefined = usage_error_of([&] { op.apply(Tensor(), y); });
  EXPECT_NE(undefined.find("undefined"), std::string::npos) << undefined;

  const Tensor xy = Tensor::empty({16}, DType::f64);
  const std::string aliased = usage_error_of([&] { op.apply(xy, xy); });
  EXPECT_NE(aliased.find("overlaps"), std::string::npos) << aliased;
}

}  // namespace
}  // namespace tenax::solvers
