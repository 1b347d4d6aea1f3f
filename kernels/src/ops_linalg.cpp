// Checked front end of the linear-algebra ops: validate, then run the kernel of the device.
#include "tenax/kernels/ops_linalg.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tenax/kernels/checks.hpp"
#include "tenax/kernels/detail/linalg_kernels.hpp"
#include "tenax/kernels/ops_broadcast.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax::ops {
namespace {

using detail::check_defined;
using detail::check_f64_or_f32;
using detail::check_rank;
using detail::check_same_device;
using detail::check_spacing;

std::string str(std::int64_t v) { return std::to_string(v); }
std::string str(DType d) { return std::string(to_string(d)); }

void check_no_overlap(std::string_view op, std::string_view out_name, const Tensor& out,
                      std::string_view in_name, const Tensor& in) {
  TENAX_EXPECTS(!detail::overlaps(out, in), UsageError,
                std::string(op) + ": " + std::string(out_name) + " overlaps " +
                    std::string(in_name) + " in memory",
                "write the result to a separate tensor (e.g. Tensor::empty_like(" +
                    std::string(in_name) + "))");
}

std::string operand(std::string_view name, const Tensor& t, bool transposed) {
  if (!transposed) return std::string(name) + " has shape " + to_string(t.shape());
  return std::string(name) + "^T has shape [" + str(t.shape()[1]) + ", " + str(t.shape()[0]) +
         "] (" + std::string(name) + " is " + to_string(t.shape()) + ")";
}

bool is_half(DType d) { return d == DType::f16 || d == DType::bf16; }

void check_stencil_operands(std::string_view op, const Tensor& u, const Tensor& out, int rank,
                            std::string_view what) {
  detail::check_compatible(op, "u", u, "out", out);
  check_rank(op, "u", u, rank, what);
  check_f64_or_f32(op, "u", u);
  check_no_overlap(op, "out", out, "u", u);
}

}  // namespace

namespace {

// gemm's checks on the matrices of one product (2-D; for gemm_batched, its first product), named
// as `op` and the operands as a, b and c; the kernel's arguments.
kernels::GemmArgs checked_gemm(std::string_view op, const Tensor& a, const Tensor& b,
                               const Tensor& c, double alpha, double beta, Transpose transpose_a,
                               Transpose transpose_b) {
  check_rank(op, "a", a, 2, "a 2-D matrix [rows, cols]");
  check_rank(op, "b", b, 2, "a 2-D matrix [rows, cols]");
  check_rank(op, "c", c, 2, "a 2-D matrix [rows, cols]");
  check_same_device(op, "a", a, "b", b);
  check_same_device(op, "a", a, "c", c);
  detail::check_same_dtype(op, "a", a, "b", b);
  detail::check_floating(op, "a", a);
  const std::string name(op);
  const DType in = a.dtype();
  const bool c_ok = c.dtype() == in || (is_half(in) && c.dtype() == DType::f32);
  TENAX_EXPECTS(c_ok, UsageError, name + ": a and b are " + str(in) + " but c is " + str(c.dtype()),
                is_half(in) ? "make c " + str(in) + " or f32 (the product accumulates in f32)"
                            : "make c " + str(in) + ", the dtype of a and b");

  const bool ta = transpose_a == Transpose::yes;
  const bool tb = transpose_b == Transpose::yes;
  const std::int64_t m = a.shape()[ta ? 1 : 0];
  const std::int64_t k = a.shape()[ta ? 0 : 1];
  const std::int64_t kb = b.shape()[tb ? 1 : 0];
  const std::int64_t n = b.shape()[tb ? 0 : 1];
  TENAX_EXPECTS(k == kb, UsageError,
                name + ": " + operand("a", a, ta) + " but " + operand("b", b, tb) +
                    "; inner dimensions " + str(k) + " and " + str(kb) + " must match",
                "give op(a) as many columns as op(b) has rows (check the shapes, or pass "
                "Transpose::yes for an operand stored transposed)");
  TENAX_EXPECTS(c.shape()[0] == m && c.shape()[1] == n, UsageError,
                name + ": c has shape " + to_string(c.shape()) + " but op(a) * op(b) has shape [" +
                    str(m) + ", " + str(n) + "]",
                "allocate c as [" + str(m) + ", " + str(n) + "]");
  return kernels::GemmArgs{a, b, c, m, n, k, ta, tb, alpha, beta, Tensor()};
}

// gemm's and gemm_batched's checks of the operands as wholes: defined, c apart from a and b.
void check_gemm_operands(std::string_view op, const Tensor& a, const Tensor& b, const Tensor& c) {
  check_defined(op, "a", a);
  check_defined(op, "b", b);
  check_defined(op, "c", c);
  check_no_overlap(op, "c", c, "a", a);
  check_no_overlap(op, "c", c, "b", b);
}

// A product over k == 0 is C = beta * C (no sum to add, so a -0 or NaN of C stays as it is;
// beta == 0 writes zeros without reading C): done here for every backend and path alike.
void scale_by_beta(const Tensor& c, double beta) {
  if (beta == 0.0) {
    fill(c, 0.0);
  } else if (beta != 1.0) {
    scale(beta, c);
  }
}

// Matrix i of a [count, rows, cols] tensor.
Tensor matrix_of(const Tensor& batch, std::int64_t i) {
  const Shape& s = batch.shape();
  return batch.slice(i, i + 1).reshape(Shape{s[1], s[2]});
}

}  // namespace

void gemm(const Tensor& a, const Tensor& b, const Tensor& c, double alpha, double beta,
          Transpose transpose_a, Transpose transpose_b) {
  constexpr std::string_view op = "gemm";
  check_gemm_operands(op, a, b, c);
  const kernels::GemmArgs args = checked_gemm(op, a, b, c, alpha, beta, transpose_a, transpose_b);
  if (args.m == 0 || args.n == 0) return;
  if (args.k == 0) return scale_by_beta(c, beta);
  if (c.device().is_cpu()) {
    kernels::cpu::gemm(args);
  } else {
    kernels::cuda::gemm(args);
  }
}

bool gemm_rows_independent(DType dtype, Device device) {
  return device.is_cpu() && kernels::cpu::gemm_rows_independent(dtype);
}

void addmm(const Tensor& bias, const Tensor& a, const Tensor& b, const Tensor& c, double alpha,
           Transpose transpose_a, Transpose transpose_b) {
  constexpr std::string_view op = "addmm";
  check_gemm_operands(op, a, b, c);
  check_defined(op, "bias", bias);
  kernels::GemmArgs args = checked_gemm(op, a, b, c, alpha, 0.0, transpose_a, transpose_b);
  check_same_device(op, "c", c, "bias", bias);
  detail::check_same_dtype(op, "c", c, "bias", bias);
  TENAX_EXPECTS(
      bias.shape().rank() == 1 && bias.shape()[0] == args.n, UsageError,
      "addmm: bias has shape " + to_string(bias.shape()) + " but c has " + str(args.n) + " columns",
      "pass a bias of shape [" + str(args.n) + "], one value per column of c");
  check_no_overlap(op, "c", c, "bias", bias);
  if (args.m == 0 || args.n == 0) return;
  if (c.device().is_cpu() && args.k > 0) {
    args.bias = bias;
    kernels::cpu::gemm(args);
    return;
  }
  // On CUDA, and for k == 0 everywhere, the two steps: every row of c the bias (1 * bias: exact,
  // -0 and NaN kept), then the product added with beta = 1 (none when k == 0).
  fill(c, 1.0);
  broadcast_binary_into(BinaryOp::mul, c, bias.reshape(Shape{1, args.n}), c);
  if (args.k == 0) return;
  args.beta = 1.0;
  kernels::cuda::gemm(args);
}

void gemm_batched(const Tensor& a, const Tensor& b, const Tensor& c, double alpha, double beta,
                  Transpose transpose_a, Transpose transpose_b) {
  constexpr std::string_view op = "gemm_batched";
  check_gemm_operands(op, a, b, c);
  const auto what = "a batch of matrices [count, rows, cols]";
  check_rank(op, "a", a, 3, what);
  check_rank(op, "b", b, 3, what);
  check_rank(op, "c", c, 3, what);
  const std::int64_t count = a.shape()[0];
  TENAX_EXPECTS(b.shape()[0] == count && c.shape()[0] == count, UsageError,
                "gemm_batched: a holds " + str(count) + " matrices, b " + str(b.shape()[0]) +
                    " and c " + str(c.shape()[0]),
                "give a, b and c the same leading extent, one matrix per product");
  if (count == 0) return;
  const kernels::GemmArgs first = checked_gemm(
      op, matrix_of(a, 0), matrix_of(b, 0), matrix_of(c, 0), alpha, beta, transpose_a, transpose_b);
  if (first.m == 0 || first.n == 0) return;
  if (first.k == 0) return scale_by_beta(c, beta);
  std::vector<kernels::GemmArgs> products(static_cast<std::size_t>(count), first);
  for (std::int64_t i = 1; i < count; ++i) {
    kernels::GemmArgs& product = products[static_cast<std::size_t>(i)];
    product.a = matrix_of(a, i);
    product.b = matrix_of(b, i);
    product.c = matrix_of(c, i);
  }
  if (c.device().is_cpu()) {
    kernels::cpu::gemm_batched(products);
  } else {
    for (const kernels::GemmArgs& product : products) kernels::cuda::gemm(product);
  }
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_defined("matmul", "a", a);
  return matmul(a, b, a.dtype());
}

Tensor matmul(const Tensor& a, const Tensor& b, DType out_dtype) {
  constexpr std::string_view op = "matmul";
  check_defined(op, "a", a);
  check_defined(op, "b", b);
  check_rank(op, "a", a, 2, "a 2-D matrix [rows, cols]");
  check_rank(op, "b", b, 2, "a 2-D matrix [rows, cols]");
  TENAX_EXPECTS(a.shape()[1] == b.shape()[0], UsageError,
                "matmul: a has shape " + to_string(a.shape()) + " but b has shape " +
                    to_string(b.shape()) + "; inner dimensions " + str(a.shape()[1]) + " and " +
                    str(b.shape()[0]) + " must match",
                "give a as many columns as b has rows");
  Tensor c = Tensor::empty({a.shape()[0], b.shape()[1]}, out_dtype, a.device());
  gemm(a, b, c);
  return c;
}

void spmv(const CsrMatrix& a, const Tensor& x, const Tensor& y, double alpha, double beta) {
  constexpr std::string_view op = "spmv";
  TENAX_EXPECTS(a.defined(), UsageError, "spmv: a is an empty CsrMatrix with no storage",
                "construct it from row_ptr, col_idx and values (or CsrMatrix::from_dense)");
  check_defined(op, "x", x);
  check_defined(op, "y", y);
  check_same_device(op, "a", a.values(), "x", x);
  check_same_device(op, "a", a.values(), "y", y);
  TENAX_EXPECTS(x.dtype() == a.dtype() && y.dtype() == a.dtype(), UsageError,
                "spmv: a is " + str(a.dtype()) + " but x is " + str(x.dtype()) + " and y is " +
                    str(y.dtype()),
                "cast x and y to " + str(a.dtype()) +
                    " with ops::cast (or build a with their "
                    "dtype)");
  TENAX_EXPECTS(x.shape().rank() == 1 && x.numel() == a.cols(), UsageError,
                "spmv: a is " + a.describe() + " but x has shape " + to_string(x.shape()),
                "pass x of shape [" + str(a.cols()) + "] (one entry per column of a)");
  TENAX_EXPECTS(y.shape().rank() == 1 && y.numel() == a.rows(), UsageError,
                "spmv: a is " + a.describe() + " but y has shape " + to_string(y.shape()),
                "pass y of shape [" + str(a.rows()) + "] (one entry per row of a)");
  check_no_overlap(op, "y", y, "x", x);
  check_no_overlap(op, "y", y, "a.values", a.values());
  check_no_overlap(op, "y", y, "a.col_idx", a.col_idx());
  check_no_overlap(op, "y", y, "a.row_ptr", a.row_ptr());
  if (a.rows() == 0) return;

  kernels::SpmvArgs args{a, x, y, alpha, beta};
  if (y.device().is_cpu()) {
    kernels::cpu::spmv(args);
  } else {
    kernels::cuda::spmv(args);
  }
}

void laplacian_5pt(const Tensor& u, const Tensor& out, double h) { laplacian_5pt(u, out, h, h); }

void laplacian_5pt(const Tensor& u, const Tensor& out, double hy, double hx) {
  constexpr std::string_view op = "laplacian_5pt";
  check_stencil_operands(op, u, out, 2, "a 2-D grid [ny, nx]");
  check_spacing(op, "hy", hy);
  check_spacing(op, "hx", hx);
  if (u.numel() == 0) return;
  kernels::StencilArgs args{u, out, 1, u.shape()[0], u.shape()[1], 1.0, hy, hx};
  if (u.device().is_cpu()) {
    kernels::cpu::laplacian_5pt(args);
  } else {
    kernels::cuda::laplacian_5pt(args);
  }
}

void laplacian_5pt_update(const Tensor& u, const Tensor& out, std::int64_t row_offset, double c,
                          double hy, double hx) {
  constexpr std::string_view op = "laplacian_5pt_update";
  check_defined(op, "u", u);
  check_defined(op, "out", out);
  check_rank(op, "u", u, 2, "a 2-D grid [ny, nx]");
  check_rank(op, "out", out, 2, "rows of a 2-D grid [rows, nx]");
  check_same_device(op, "u", u, "out", out);
  detail::check_same_dtype(op, "u", u, "out", out);
  check_f64_or_f32(op, "u", u);
  check_no_overlap(op, "out", out, "u", u);
  check_spacing(op, "hy", hy);
  check_spacing(op, "hx", hx);
  TENAX_EXPECTS(out.shape()[1] == u.shape()[1], UsageError,
                "laplacian_5pt_update: out has shape " + to_string(out.shape()) +
                    " but u has shape " + to_string(u.shape()) + "; rows must be equally long",
                "give out as many columns as u");
  TENAX_EXPECTS(row_offset >= 0 && row_offset + out.shape()[0] <= u.shape()[0], UsageError,
                "laplacian_5pt_update: rows " + std::to_string(row_offset) + " to " +
                    std::to_string(row_offset + out.shape()[0]) + " are not rows of u " +
                    to_string(u.shape()),
                "choose 0 <= row_offset and row_offset + out rows <= u rows");
  TENAX_EXPECTS(std::isfinite(c), UsageError,
                "laplacian_5pt_update: c = " + std::to_string(c) + " is not finite",
                "pass c = alpha * dt, a finite number");
  if (out.numel() == 0) return;
  kernels::StencilUpdateArgs args{
      u, out, u.shape()[0], u.shape()[1], row_offset, out.shape()[0], c, hy, hx};
  if (u.device().is_cpu()) {
    kernels::cpu::laplacian_5pt_update(args);
  } else {
    kernels::cuda::laplacian_5pt_update(args);
  }
}

void laplacian_7pt(const Tensor& u, const Tensor& out, double h) { laplacian_7pt(u, out, h, h, h); }

void laplacian_7pt(const Tensor& u, const Tensor& out, double hz, double hy, double hx) {
  constexpr std::string_view op = "laplacian_7pt";
  check_stencil_operands(op, u, out, 3, "a 3-D grid [nz, ny, nx]");
  check_spacing(op, "hz", hz);
  check_spacing(op, "hy", hy);
  check_spacing(op, "hx", hx);
  if (u.numel() == 0) return;
  kernels::StencilArgs args{u, out, u.shape()[0], u.shape()[1], u.shape()[2], hz, hy, hx};
  if (u.device().is_cpu()) {
    kernels::cpu::laplacian_7pt(args);
  } else {
    kernels::cuda::laplacian_7pt(args);
  }
}

}  // namespace tenax::ops
