#include "tenax/solvers/mixed_precision.hpp"

#include <cmath>
#include <string>
#include <utility>

#include "detail/residual.hpp"
#include "tenax/core/error.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/solvers/factory.hpp"
#include "tenax/solvers/stopping_criteria.hpp"

namespace tenax::solvers {
namespace {

OperatorPtr inner_operator(const OperatorPtr& a, OperatorPtr inner, DType dtype) {
  if (inner == nullptr) return a->dtype() == dtype ? a : a->with_dtype(dtype);
  TENAX_EXPECTS(inner->rows() == a->rows() && inner->cols() == a->cols() &&
                    inner->device() == a->device() && inner->dtype() == dtype,
                UsageError,
                "mixed-precision refinement: the inner operator " + inner->describe() +
                    " does not match " + a->describe() + " in size and device, or is not " +
                    std::string(to_string(dtype)),
                "build the inner operator with the same size and device, in the inner dtype");
  return inner;
}

}  // namespace

MixedPrecisionRefinement::MixedPrecisionRefinement(RefinementOptions options)
    : options_(std::move(options)),
      inner_solver_(make_solver(options_.inner_solver, options_.inner)) {
  validate(options_.outer);
  TENAX_EXPECTS(options_.inner_dtype == DType::f64 || options_.inner_dtype == DType::f32,
                UsageError,
                "mixed-precision refinement: inner dtype " +
                    std::string(to_string(options_.inner_dtype)) + " is not supported",
                "use DType::f32 (or DType::f64 for plain iterative refinement)");
}

MixedPrecisionRefinement::~MixedPrecisionRefinement() = default;

RefinementResult MixedPrecisionRefinement::solve(const OperatorPtr& a, const Tensor& b,
                                                 const Tensor& x, OperatorPtr inner) {
  TENAX_EXPECTS(a != nullptr && a->rows() == a->cols(), UsageError,
                "mixed-precision refinement needs a square operator",
                "pass the operator A of the system A x = b");
  a->check_vector("mixed-precision refinement: b", b, a->rows());
  a->check_vector("mixed-precision refinement: x", x, a->cols());
  const OperatorPtr a_inner = inner_operator(a, std::move(inner), options_.inner_dtype);

  const std::int64_t n = a->rows();
  const Tensor r = Tensor::empty({n}, a->dtype(), a->device());
  const Tensor d = Tensor::empty({n}, a->dtype(), a->device());
  const Tensor r_inner = Tensor::empty({n}, a_inner->dtype(), a->device());
  const Tensor d_inner = Tensor::empty({n}, a_inner->dtype(), a->device());
  const StoppingCriteria criteria = StoppingCriteria::from_options(options_.outer);

  // On a distributed operator the norms of b and of the residual are over every rank's shard.
  const kernels::GlobalReductions global = a->reductions();
  RefinementResult out;
  SolveResult& result = out.outer;
  const double rhs_norm = ops::nrm2(b);
  const double reference = rhs_norm > 0.0 ? rhs_norm : 1.0;
  for (std::int64_t k = 0;; ++k) {
    const double residual = std::sqrt(detail::compute_residual(*a, b, x, r));
    if (k == 0) result.initial_residual = residual;
    result.iterations = k;
    result.residual = residual;
    result.relative_residual = residual / reference;
    if (auto reason = criteria.evaluate({k, residual, result.initial_residual, rhs_norm})) {
      result.status = reason->status;
      if (reason->status != SolveStatus::converged) result.detail = reason->detail;
      if (reason->status == SolveStatus::non_finite) result.bad_iteration = k;
      return out;
    }

    ops::scale(1.0 / residual, r);
    ops::cast_into(r_inner, r);
    ops::fill(d_inner, 0.0);
    out.last_inner = inner_solver_->solve(a_inner, r_inner, d_inner);
    out.inner_iterations += out.last_inner.iterations;
    const SolveStatus inner_status = out.last_inner.status;
    const bool no_progress =
        inner_status == SolveStatus::breakdown && out.last_inner.iterations == 0;
    if (inner_status == SolveStatus::non_finite || no_progress) {
      result.status = inner_status;
      result.bad_iteration = k + 1;
      result.detail = "inner " + options_.inner_solver + " solve of outer iteration " +
                      std::to_string(k + 1) + ": " + out.last_inner.detail;
      return out;
    }
    ops::cast_into(d, d_inner);
    ops::axpby(residual, d, 1.0, x);
  }
}

}  // namespace tenax::solvers
