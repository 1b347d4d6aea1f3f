// Checked front end of the fused Krylov ops: validate, then run the kernel of the device.
#include "tenax/kernels/ops_krylov.hpp"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "tenax/core/context.hpp"
#include "tenax/kernels/checks.hpp"
#include "tenax/kernels/detail/krylov_kernels.hpp"
#include "tenax/kernels/detail/reduce_bodies.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax::ops {
namespace {

using detail::check_f64_or_f32;
using detail::check_no_overlap;
using detail::check_rank;
using detail::check_spacing;
using detail::NamedTensor;

std::string str(std::int64_t v) { return std::to_string(v); }
std::string str(DType d) { return std::string(to_string(d)); }

// Every operand is defined and has the device, dtype (f64 or f32) and shape of the first.
void check_vectors(std::string_view op, std::initializer_list<NamedTensor> operands) {
  detail::check_all_compatible(op, operands);
  const NamedTensor& first = *operands.begin();
  check_f64_or_f32(op, first.first, *first.second);
}

void check_stencil(std::string_view op, const Tensor& p, const Tensor& q, int rank,
                   std::string_view what, double scale) {
  check_vectors(op, {{"p", &p}, {"q", &q}});
  check_rank(op, "p", p, rank, what);
  check_no_overlap(op, {"q", &q}, {{"p", &p}});
  detail::check_finite(op, "scale", scale);
}

// The operands of q = A p, as spmv_dot and spmv_dots take them.
void check_csr_product(std::string_view op, const CsrMatrix& a, const Tensor& p, const Tensor& q) {
  const std::string name(op);
  TENAX_EXPECTS(a.defined(), UsageError, name + ": a is an empty CsrMatrix with no storage",
                "construct it from row_ptr, col_idx and values (or CsrMatrix::from_dense)");
  detail::check_defined(op, "p", p);
  detail::check_defined(op, "q", q);
  detail::check_same_device(op, "a", a.values(), "p", p);
  detail::check_same_device(op, "a", a.values(), "q", q);
  TENAX_EXPECTS(
      p.dtype() == a.dtype() && q.dtype() == a.dtype(), UsageError,
      name + ": a is " + str(a.dtype()) + " but p is " + str(p.dtype()) + " and q is " +
          str(q.dtype()),
      "cast p and q to " + str(a.dtype()) + " with ops::cast (or build a with their dtype)");
  TENAX_EXPECTS(p.shape().rank() == 1 && p.numel() == a.cols(), UsageError,
                name + ": a is " + a.describe() + " but p has shape " + to_string(p.shape()),
                "pass p of shape [" + str(a.cols()) + "] (one entry per column of a)");
  TENAX_EXPECTS(q.shape().rank() == 1 && q.numel() == a.rows(), UsageError,
                name + ": a is " + a.describe() + " but q has shape " + to_string(q.shape()),
                "pass q of shape [" + str(a.rows()) + "] (one entry per row of a)");
  check_no_overlap(op, {"q", &q},
                   {{"p", &p},
                    {"a.values", &a.values()},
                    {"a.col_idx", &a.col_idx()},
                    {"a.row_ptr", &a.row_ptr()}});
}

}  // namespace

double spmv_dot(const CsrMatrix& a, const Tensor& p, const Tensor& q, std::int64_t pair) {
  check_csr_product("spmv_dot", a, p, q);
  TENAX_EXPECTS(pair >= 0 && pair <= a.cols() - a.rows(), UsageError,
                "spmv_dot: a is " + a.describe() + " but p.(A p) needs rows <= cols - pair (pair " +
                    str(pair) + ")",
                "pass a square matrix with pair 0 (or one with more columns than rows and a pair "
                "offset that keeps the paired columns inside it), or use ops::spmv and ops::dot");
  if (a.rows() == 0) return kernels::empty_reduction<1>().v[0];

  const kernels::SpmvDotArgs args{a, p, q, pair};
  return q.device().is_cpu() ? kernels::cpu::spmv_dot(args) : kernels::cuda::spmv_dot(args);
}

SpmvDots spmv_dots(const CsrMatrix& a, const Tensor& p, const Tensor& q, const Tensor& w) {
  constexpr std::string_view op = "spmv_dots";
  check_csr_product(op, a, p, q);
  check_vectors(op, {{"q", &q}, {"w", &w}});
  check_no_overlap(op, {"q", &q}, {{"w", &w}});
  if (a.rows() == 0) {
    const kernels::ReduceTerms<2> none = kernels::empty_reduction<2>();
    return {none.v[0], none.v[1]};
  }
  const kernels::SpmvDotsArgs args{a, p, q, w};
  return q.device().is_cpu() ? kernels::cpu::spmv_dots(args) : kernels::cuda::spmv_dots(args);
}

double laplacian_5pt_dot(const Tensor& p, const Tensor& q, double hy, double hx, double scale) {
  constexpr std::string_view op = "laplacian_5pt_dot";
  check_stencil(op, p, q, 2, "a 2-D grid [ny, nx]", scale);
  check_spacing(op, "hy", hy);
  check_spacing(op, "hx", hx);
  if (p.numel() == 0) return kernels::empty_reduction<1>().v[0];
  const kernels::StencilDotArgs args{{p, q, 1, p.shape()[0], p.shape()[1], 1.0, hy, hx}, scale};
  return q.device().is_cpu() ? kernels::cpu::laplacian_5pt_dot(args)
                             : kernels::cuda::laplacian_5pt_dot(args);
}

double laplacian_7pt_dot(const Tensor& p, const Tensor& q, double hz, double hy, double hx,
                         double scale) {
  constexpr std::string_view op = "laplacian_7pt_dot";
  check_stencil(op, p, q, 3, "a 3-D grid [nz, ny, nx]", scale);
  check_spacing(op, "hz", hz);
  check_spacing(op, "hy", hy);
  check_spacing(op, "hx", hx);
  if (p.numel() == 0) return kernels::empty_reduction<1>().v[0];
  const kernels::StencilDotArgs args{{p, q, p.shape()[0], p.shape()[1], p.shape()[2], hz, hy, hx},
                                     scale};
  return q.device().is_cpu() ? kernels::cpu::laplacian_7pt_dot(args)
                             : kernels::cuda::laplacian_7pt_dot(args);
}

double cg_update(double alpha, const Tensor& p, const Tensor& q, const Tensor& x, const Tensor& r) {
  constexpr std::string_view op = "cg_update";
  check_vectors(op, {{"p", &p}, {"q", &q}, {"x", &x}, {"r", &r}});
  check_no_overlap(op, {"x", &x}, {{"p", &p}, {"q", &q}, {"r", &r}});
  check_no_overlap(op, {"r", &r}, {{"p", &p}, {"q", &q}});
  if (r.numel() == 0) return kernels::empty_reduction<1>().v[0];
  const kernels::CgUpdateArgs args{alpha, p, q, x, r};
  return r.device().is_cpu() ? kernels::cpu::cg_update(args) : kernels::cuda::cg_update(args);
}

PcgDots pcg_jacobi_update(double alpha, const Tensor& p, const Tensor& q, const Tensor& x,
                          const Tensor& r, const Tensor& inv_diag, const Tensor& z) {
  constexpr std::string_view op = "pcg_jacobi_update";
  check_vectors(op,
                {{"p", &p}, {"q", &q}, {"x", &x}, {"r", &r}, {"inv_diag", &inv_diag}, {"z", &z}});
  check_no_overlap(op, {"x", &x},
                   {{"p", &p}, {"q", &q}, {"r", &r}, {"inv_diag", &inv_diag}, {"z", &z}});
  check_no_overlap(op, {"r", &r}, {{"p", &p}, {"q", &q}, {"inv_diag", &inv_diag}, {"z", &z}});
  check_no_overlap(op, {"z", &z}, {{"p", &p}, {"q", &q}, {"inv_diag", &inv_diag}});
  if (r.numel() == 0) {
    const kernels::ReduceTerms<2> none = kernels::empty_reduction<2>();
    return {none.v[0], none.v[1]};
  }
  const kernels::PcgJacobiArgs args{alpha, p, q, x, r, inv_diag, z};
  return r.device().is_cpu() ? kernels::cpu::pcg_jacobi_update(args)
                             : kernels::cuda::pcg_jacobi_update(args);
}

void xpay(const Tensor& z, double beta, const Tensor& p) {
  constexpr std::string_view op = "xpay";
  check_vectors(op, {{"z", &z}, {"p", &p}});
  check_no_overlap(op, {"p", &p}, {{"z", &z}});
  if (p.numel() == 0) return;
  const kernels::XpayArgs args{z, beta, p};
  if (p.device().is_cpu()) {
    kernels::cpu::xpay(args);
  } else {
    kernels::cuda::xpay(args);
  }
}

void bicgstab_direction(double beta, double omega, const Tensor& r, const Tensor& v,
                        const Tensor& p, const Tensor& inv_diag, const Tensor& p_hat) {
  constexpr std::string_view op = "bicgstab_direction";
  TENAX_EXPECTS(inv_diag.defined() == p_hat.defined(), UsageError,
                "bicgstab_direction: inv_diag and p_hat must be given together",
                "pass both (Jacobi preconditioning) or neither");
  check_vectors(op, {{"r", &r}, {"v", &v}, {"p", &p}});
  check_no_overlap(op, {"p", &p}, {{"r", &r}, {"v", &v}});
  if (inv_diag.defined()) {
    check_vectors(op, {{"p", &p}, {"inv_diag", &inv_diag}, {"p_hat", &p_hat}});
    check_no_overlap(op, {"p_hat", &p_hat},
                     {{"r", &r}, {"v", &v}, {"p", &p}, {"inv_diag", &inv_diag}});
    check_no_overlap(op, {"p", &p}, {{"inv_diag", &inv_diag}});
  }
  if (p.numel() == 0) return;
  const kernels::BicgstabDirectionArgs args{beta, omega, r, v, p, inv_diag, p_hat};
  if (p.device().is_cpu()) {
    kernels::cpu::bicgstab_direction(args);
  } else {
    kernels::cuda::bicgstab_direction(args);
  }
}

namespace {
// r -= alpha v [, z = inv_diag r], checked as `op` names its operands (z is `z_name`).
PcgDots checked_residual_update(std::string_view op, std::string_view z_name, double alpha,
                                const Tensor& v, const Tensor& r, const Tensor& inv_diag,
                                const Tensor& z) {
  TENAX_EXPECTS(
      inv_diag.defined() == z.defined(), UsageError,
      std::string(op) + ": inv_diag and " + std::string(z_name) + " must be given together",
      "pass both (Jacobi preconditioning) or neither");
  check_vectors(op, {{"v", &v}, {"r", &r}});
  check_no_overlap(op, {"r", &r}, {{"v", &v}});
  if (inv_diag.defined()) {
    check_vectors(op, {{"r", &r}, {"inv_diag", &inv_diag}, {z_name, &z}});
    check_no_overlap(op, {z_name, &z}, {{"v", &v}, {"r", &r}, {"inv_diag", &inv_diag}});
    check_no_overlap(op, {"r", &r}, {{"inv_diag", &inv_diag}});
  }
  if (r.numel() == 0) {
    // As many terms as the kernel folds: on a rank with no elements the reduction is still
    // collective, and its record must have every rank's size.
    if (inv_diag.defined()) {
      const kernels::ReduceTerms<2> none = kernels::empty_reduction<2>();
      return {none.v[0], none.v[1]};
    }
    const double none = kernels::empty_reduction<1>().v[0];
    return {none, none};
  }
  const kernels::ResidualUpdateArgs args{alpha, v, r, inv_diag, z};
  return r.device().is_cpu() ? kernels::cpu::residual_update(args)
                             : kernels::cuda::residual_update(args);
}
}  // namespace

double bicgstab_residual(double alpha, const Tensor& v, const Tensor& r, const Tensor& inv_diag,
                         const Tensor& s_hat) {
  return checked_residual_update("bicgstab_residual", "s_hat", alpha, v, r, inv_diag, s_hat).rr;
}

PcgDots cg_residual(double alpha, const Tensor& q, const Tensor& r, const Tensor& inv_diag,
                    const Tensor& z) {
  return checked_residual_update("cg_residual", "z", alpha, q, r, inv_diag, z);
}

void cg_advance(double alpha, const Tensor& p, double beta, const Tensor& z, const Tensor& x) {
  constexpr std::string_view op = "cg_advance";
  check_vectors(op, {{"p", &p}, {"z", &z}, {"x", &x}});
  check_no_overlap(op, {"x", &x}, {{"p", &p}, {"z", &z}});
  check_no_overlap(op, {"p", &p}, {{"z", &z}});
  if (p.numel() == 0) return;
  const kernels::CgAdvanceArgs args{alpha, p, beta, z, x};
  if (p.device().is_cpu()) {
    kernels::cpu::cg_advance(args);
  } else {
    kernels::cuda::cg_advance(args);
  }
}

BicgstabDots bicgstab_update(double alpha, const Tensor& p_hat, double omega, const Tensor& s_hat,
                             const Tensor& t, const Tensor& r_hat, const Tensor& x,
                             const Tensor& r) {
  constexpr std::string_view op = "bicgstab_update";
  check_vectors(op, {{"p_hat", &p_hat}, {"t", &t}, {"r_hat", &r_hat}, {"x", &x}, {"r", &r}});
  if (s_hat.defined()) check_vectors(op, {{"r", &r}, {"s_hat", &s_hat}});
  check_no_overlap(op, {"x", &x},
                   {{"p_hat", &p_hat}, {"s_hat", &s_hat}, {"t", &t}, {"r_hat", &r_hat}, {"r", &r}});
  check_no_overlap(op, {"r", &r},
                   {{"p_hat", &p_hat}, {"s_hat", &s_hat}, {"t", &t}, {"r_hat", &r_hat}});
  if (r.numel() == 0) {
    const kernels::ReduceTerms<2> none = kernels::empty_reduction<2>();
    return {none.v[0], none.v[1]};
  }
  const kernels::BicgstabUpdateArgs args{alpha, omega, p_hat, s_hat, t, r_hat, x, r};
  return r.device().is_cpu() ? kernels::cpu::bicgstab_update(args)
                             : kernels::cuda::bicgstab_update(args);
}

namespace {

// basis [K, n] and w [n]: one device, one dtype (f64 or f32), w apart from the basis.
void check_basis(std::string_view op, const Tensor& basis, const Tensor& w, std::size_t terms,
                 std::string_view terms_name) {
  const std::string name(op);
  detail::check_defined(op, "basis", basis);
  detail::check_defined(op, "w", w);
  check_f64_or_f32(op, "basis", basis);
  TENAX_EXPECTS(basis.shape().rank() == 2, UsageError,
                name + ": basis has shape " + to_string(basis.shape()) +
                    " but must be [K, n] (one basis vector per row)",
                "pass basis.slice(0, K) of a [rows, n] basis tensor");
  TENAX_EXPECTS(w.shape().rank() == 1 && w.numel() == basis.shape()[1], UsageError,
                name + ": basis has shape " + to_string(basis.shape()) + " but w has shape " +
                    to_string(w.shape()),
                "pass w of shape [" + str(basis.shape()[1]) + "] (the length of a basis row)");
  detail::check_same_device(op, "basis", basis, "w", w);
  TENAX_EXPECTS(w.dtype() == basis.dtype(), UsageError,
                name + ": basis is " + str(basis.dtype()) + " but w is " + str(w.dtype()),
                "cast w to " + str(basis.dtype()) + " with ops::cast");
  TENAX_EXPECTS(terms == static_cast<std::size_t>(basis.shape()[0]), UsageError,
                name + ": " + std::string(terms_name) + " has " + std::to_string(terms) +
                    " entries but the basis has " + str(basis.shape()[0]) + " rows",
                "pass one entry per basis row");
  check_no_overlap(op, {"w", &w}, {{"basis", &basis}});
}

Tensor basis_row(const Tensor& basis, std::int64_t k) {
  return basis.slice(k, k + 1).reshape({basis.shape()[1]});
}

}  // namespace

void basis_dots(const Tensor& basis, const Tensor& w, std::span<double> out) {
  check_basis("basis_dots", basis, w, out.size(), "out");
  if (out.empty()) return;
  if (!w.device().is_cpu()) {
    for (std::size_t k = 0; k < out.size(); ++k) {
      out[k] = dot(w, basis_row(basis, static_cast<std::int64_t>(k)));
    }
    return;
  }
  kernels::cpu::basis_dots(CpuContext::instance(), {basis, w}, out);
}

double basis_subtract(const Tensor& basis, std::span<const double> h, const Tensor& w) {
  check_basis("basis_subtract", basis, w, h.size(), "h");
  if (w.numel() == 0) return kernels::empty_reduction<1>().v[0];
  if (!w.device().is_cpu()) {
    for (std::size_t k = 0; k < h.size(); ++k) {
      axpby(-h[k], basis_row(basis, static_cast<std::int64_t>(k)), 1.0, w);
    }
    return dot(w, w);
  }
  return kernels::cpu::basis_subtract(CpuContext::instance(), {basis, w}, h);
}

}  // namespace tenax::ops
