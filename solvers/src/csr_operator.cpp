#include "tenax/solvers/csr_operator.hpp"
#include "tenax/solvers/host_csr.hpp"

#include <algorithm>
#include <utility>

#include "detail/float_dispatch.hpp"
#include "tenax/core/error.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_krylov.hpp"
#include "tenax/kernels/ops_linalg.hpp"

namespace tenax::solvers {
namespace {

const CsrMatrix& checked(const CsrMatrix& matrix) {
  TENAX_EXPECTS(matrix.defined(), UsageError, "CsrOperator: the matrix has no storage",
                "build the CsrMatrix from row_ptr, col_idx and values (or CsrMatrix::from_dense, "
                "or poisson_2d_csr)");
  return matrix;
}

}  // namespace

CsrOperator::CsrOperator(CsrMatrix matrix)
    : LinearOperator(checked(matrix).rows(), matrix.cols(), matrix.dtype(), matrix.device()),
      matrix_(matrix.compacted()) {}

std::string CsrOperator::describe() const { return matrix_.describe(); }

void CsrOperator::apply_impl(const Tensor& x, const Tensor& y) const { ops::spmv(matrix_, x, y); }

double CsrOperator::apply_dot_impl(const Tensor& x, const Tensor& y) const {
  return ops::spmv_dot(matrix_, x, y);
}

LinearOperator::Dots CsrOperator::apply_dots_impl(const Tensor& x, const Tensor& y, const Tensor& w,
                                                  bool /*with_yy*/) const {
  const ops::SpmvDots dots = ops::spmv_dots(matrix_, x, y, w);
  return {dots.wq, dots.qq};
}

Tensor CsrOperator::diagonal_impl() const { return csr_diagonal(matrix_); }

Tensor csr_diagonal(const CsrMatrix& matrix, std::int64_t column_offset) {
  TENAX_EXPECTS(
      column_offset >= 0 && column_offset <= matrix.cols(), UsageError,
      "csr_diagonal: column offset " + std::to_string(column_offset) + " of a " + matrix.describe(),
      "pass an offset in [0, cols]");
  return detail::with_float_type(matrix.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const HostCsr<T> host = read_host_csr<T>(matrix);
    const std::int64_t rows = std::min(matrix.rows(), matrix.cols() - column_offset);
    Tensor diagonal = Tensor::empty({rows}, matrix.dtype());
    T* d = diagonal.data_as<T>();
    for (std::int64_t r = 0; r < rows; ++r) {
      T sum = T(0);
      for (std::int64_t j = host.row_ptr[r]; j < host.row_ptr[r + 1]; ++j) {
        if (host.col_idx[j] == r + column_offset) sum += host.values[j];
      }
      d[r] = sum;
    }
    return diagonal.to(matrix.device());
  });
}

std::shared_ptr<const LinearOperator> CsrOperator::with_dtype_impl(DType dtype) const {
  Tensor values =
      dtype == matrix_.dtype() ? matrix_.values().clone() : ops::cast(matrix_.values(), dtype);
  return make_csr_operator(CsrMatrix(matrix_.rows(), matrix_.cols(), matrix_.row_ptr(),
                                     matrix_.col_idx(), std::move(values)));
}

OperatorPtr make_csr_operator(CsrMatrix matrix) {
  return std::make_shared<const CsrOperator>(std::move(matrix));
}

}  // namespace tenax::solvers
