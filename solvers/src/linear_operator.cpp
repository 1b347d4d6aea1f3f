#include "tenax/solvers/linear_operator.hpp"

#include <string>

#include "tenax/core/error.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax::solvers {
namespace {

std::string str(std::int64_t v) { return std::to_string(v); }
std::string str(DType d) { return std::string(to_string(d)); }

bool overlaps(const Tensor& a, const Tensor& b) {
  if (a.nbytes() == 0 || b.nbytes() == 0 || a.device() != b.device()) return false;
  const auto* a0 = static_cast<const unsigned char*>(a.data());
  const auto* b0 = static_cast<const unsigned char*>(b.data());
  return a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

}  // namespace

LinearOperator::LinearOperator(std::int64_t rows, std::int64_t cols, DType dtype, Device device)
    : rows_(rows), cols_(cols), dtype_(dtype), device_(device) {
  TENAX_EXPECTS(rows >= 0 && cols >= 0, UsageError,
                "a linear operator was given the size " + str(rows) + " x " + str(cols),
                "give it non-negative numbers of rows and columns");
  TENAX_EXPECTS(dtype == DType::f64 || dtype == DType::f32, UsageError,
                "a linear operator was given the dtype " + str(dtype) +
                    " but operators compute in f64 or f32",
                "build the operator with DType::f64 or DType::f32");
}

void LinearOperator::check_vector(std::string_view context, const Tensor& t,
                                  std::int64_t length) const {
  // Runs on every apply of every solver iteration: the messages below are only built on failure.
  if (t.defined() && t.shape().rank() == 1 && t.numel() == length && t.dtype() == dtype_ &&
      t.device() == device_) [[likely]] {
    return;
  }
  const std::string where = std::string(context) + " of " + describe();
  const std::string wanted = str(dtype_) + "[" + str(length) + "] on " + to_string(device_);
  TENAX_EXPECTS(t.defined(), UsageError, where + " is an undefined tensor",
                "pass a tensor " + wanted + " (Tensor::empty({" + str(length) +
                    "}, DType::" + str(dtype_) + ", device))");
  TENAX_EXPECTS(t.shape().rank() == 1 && t.numel() == length, UsageError,
                where + " is " + t.describe() + " but must be " + wanted,
                t.numel() == length
                    ? "pass a 1-D view: t.reshape({" + str(length) + "}) shares the storage"
                    : "pass a vector of " + str(length) + " elements");
  TENAX_EXPECTS(t.dtype() == dtype_, UsageError,
                where + " is " + t.describe() + " but the operator computes in " + str(dtype_),
                "cast it with ops::cast(t, DType::" + str(dtype_) + "), or build the operator in " +
                    str(t.dtype()));
  TENAX_EXPECTS(
      t.device() == device_, UsageError,
      where + " is on " + to_string(t.device()) + " but the operator is on " + to_string(device_),
      "move it with t.to(" + to_string(device_) + "), or build the operator there");
}

kernels::ShardPartition LinearOperator::partition() const noexcept {
  return kernels::ShardPartition::local(rows_);
}

void LinearOperator::apply(const Tensor& x, const Tensor& y) const {
  check_vector("apply: x", x, cols_);
  check_vector("apply: y", y, rows_);
  TENAX_EXPECTS(!overlaps(x, y), UsageError, "apply of " + describe() + ": y overlaps x in memory",
                "write A x into a separate vector (Tensor::empty_like(x))");
  apply_impl(x, y);
}

double LinearOperator::apply_dot(const Tensor& x, const Tensor& y) const {
  check_vector("apply_dot: x", x, cols_);
  check_vector("apply_dot: y", y, rows_);
  TENAX_EXPECTS(rows_ == cols_, UsageError,
                "apply_dot of " + describe() + ": x.(A x) needs a square operator",
                "use apply() and a separate ops::dot for rectangular operators");
  TENAX_EXPECTS(!overlaps(x, y), UsageError,
                "apply_dot of " + describe() + ": y overlaps x in memory",
                "write A x into a separate vector (Tensor::empty_like(x))");
  const kernels::GlobalReductions global = reductions();  // x.y over every rank's shard
  return apply_dot_impl(x, y);
}

double LinearOperator::apply_dot_impl(const Tensor& x, const Tensor& y) const {
  apply_impl(x, y);
  return ops::dot(x, y);
}

LinearOperator::Dots LinearOperator::checked_apply_dots(const Tensor& x, const Tensor& y,
                                                        const Tensor& w, bool with_yy) const {
  check_vector("apply_dots: x", x, cols_);
  check_vector("apply_dots: y", y, rows_);
  check_vector("apply_dots: w", w, rows_);
  TENAX_EXPECTS(!overlaps(x, y), UsageError,
                "apply_dots of " + describe() + ": y overlaps x in memory",
                "write A x into a separate vector (Tensor::empty_like(x))");
  TENAX_EXPECTS(!overlaps(w, y), UsageError,
                "apply_dots of " + describe() + ": y overlaps w in memory",
                "write A x into a vector apart from w (Tensor::empty_like(w))");
  const kernels::GlobalReductions global = reductions();  // the dots over every rank's shard
  return apply_dots_impl(x, y, w, with_yy);
}

double LinearOperator::apply_dot_with(const Tensor& x, const Tensor& y, const Tensor& w) const {
  return checked_apply_dots(x, y, w, false).wy;
}

LinearOperator::Dots LinearOperator::apply_dots(const Tensor& x, const Tensor& y,
                                                const Tensor& w) const {
  return checked_apply_dots(x, y, w, true);
}

LinearOperator::Dots LinearOperator::apply_dots_impl(const Tensor& x, const Tensor& y,
                                                     const Tensor& w, bool with_yy) const {
  apply_impl(x, y);
  Dots dots;
  dots.wy = ops::dot(w, y);
  if (with_yy) dots.yy = ops::dot(y, y);
  return dots;
}

Tensor LinearOperator::diagonal() const {
  TENAX_EXPECTS(has_diagonal(), UsageError, describe() + " cannot provide its diagonal",
                "use a preconditioner that needs no diagonal ('none'), or assemble the operator "
                "as a CSR matrix (CsrOperator)");
  TENAX_EXPECTS(rows_ == cols_, UsageError,
                describe() + " is not square, so it has no diagonal to invert",
                "use a preconditioner that needs no diagonal ('none')");
  return diagonal_impl();
}

Tensor LinearOperator::diagonal_impl() const { return {}; }

Tensor LinearOperator::make_vector() const { return make_vector_impl(); }

Tensor LinearOperator::make_vector_impl() const { return Tensor::empty({cols_}, dtype_, device_); }

std::shared_ptr<const LinearOperator> LinearOperator::with_dtype(DType dtype) const {
  TENAX_EXPECTS(supports_dtype_cast(), UsageError,
                describe() + " cannot make a copy of itself in " + str(dtype),
                "build the " + str(dtype) +
                    " operator yourself and pass it explicitly (e.g. as the inner operator of "
                    "mixed-precision refinement)");
  TENAX_EXPECTS(dtype == DType::f64 || dtype == DType::f32, UsageError,
                describe() + ": with_dtype(" + str(dtype) + ") asks for an unsupported dtype",
                "use DType::f64 or DType::f32");
  return with_dtype_impl(dtype);
}

std::shared_ptr<const LinearOperator> LinearOperator::with_dtype_impl(DType /*dtype*/) const {
  return nullptr;
}

}  // namespace tenax::solvers
