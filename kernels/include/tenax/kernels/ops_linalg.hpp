/// Dense and sparse linear algebra and grid stencils: the checked ops of tenax::ops.
/// @file
/// Every op validates its arguments first and throws UsageError naming the op, the operands and
/// the fix (e.g. "gemm: a has shape [3, 4] but b has shape [5, 2]; inner dimensions 4 and 5 must
/// match"); then it runs on the device of its tensors: the CPU backend (Eigen, and the worker
/// pool of CpuContext) or the CUDA backend (cuBLAS and kernels launched on the device's stream,
/// asynchronously). Outputs must not overlap inputs. A build without CUDA throws
/// NotCompiledError for CUDA tensors. Safe to call from several threads on distinct outputs.
#pragma once

#include <cstdint>

#include "tenax/core/tensor.hpp"
#include "tenax/kernels/csr_matrix.hpp"

namespace tenax::ops {

/// Whether gemm uses an operand as stored or transposed.
enum class Transpose : bool {
  no = false,  ///< op(X) = X
  yes = true   ///< op(X) = X^T (the stored [r, c] tensor is used as [c, r])
};

/// C = alpha * op(A) * op(B) + beta * C for 2-D contiguous row-major tensors on one device, where
/// op(X) is X or X^T. op(A) is [m, k], op(B) is [k, n], C is [m, n].
///
/// Dtypes: A and B share one floating dtype. f64 and f32 compute and store in that dtype. f16
/// and bf16 inputs are multiplied with f32 accumulation (on the CPU the inputs are converted to
/// f32 exactly, then multiplied as f32; on CUDA cublasGemmEx with CUBLAS_COMPUTE_32F); C may be
/// f32 (result stored unrounded) or the input dtype (rounded once, at the end). alpha and beta
/// are used in f64 for f64 and in f32 otherwise.
///
/// With beta == 0, C is only written (it may hold NaN on entry), as in BLAS. k == 0 gives
/// C = beta * C; m == 0 or n == 0 does nothing. UsageError for operands that are not 2-D, on
/// different devices, of other dtypes, of shapes that do not match, or a C that overlaps A or B.
void gemm(const Tensor& a, const Tensor& b, const Tensor& c, double alpha = 1.0, double beta = 0.0,
          Transpose transpose_a = Transpose::no, Transpose transpose_b = Transpose::no);

/// Whether gemm and addmm give each row of C the same bits however many rows the product has
/// (each row computed from its own row of op(A) by a fixed sequence of operations), for
/// operands of `dtype` on `device`: true for bf16 on a CPU with AMX tiles, false elsewhere (the
/// other paths choose their blocking from the product's sizes). Where true, a caller may
/// multiply the rows of several independent batches in one product and get each batch's bits.
[[nodiscard]] bool gemm_rows_independent(DType dtype, Device device);

/// C = bias + alpha * op(A) * op(B), the bias [n] added to every row of C (PyTorch's addmm with
/// beta 1): a Linear layer's forward pass in one product. A, B, C, alpha and the transposes as
/// gemm's; bias has C's dtype and device. The bits are those of filling every row of C with bias,
/// then gemm(a, b, c, alpha, 1.0, ...); on AMX the bias is added as the product writes C (no
/// second pass over C). UsageError as gemm's, and for a bias that is undefined, not of shape
/// [n], of another dtype or device than C, or overlapping C.
void addmm(const Tensor& bias, const Tensor& a, const Tensor& b, const Tensor& c,
           double alpha = 1.0, Transpose transpose_a = Transpose::no,
           Transpose transpose_b = Transpose::no);

/// gemm on each matrix of a batch: C[i] = alpha * op(A[i]) * op(B[i]) + beta * C[i] for a, b and
/// c of shape [count, rows, cols] (contiguous row-major, one leading extent), with gemm's dtypes,
/// transposes and rules for every product (each has the bits gemm gives it). On the CPU the
/// products are spread over the worker threads, one thread each, where they are small (the heads of
/// an attention: gemm alone would run each on one thread in turn); larger ones run one after the
/// other, each on every thread. UsageError as gemm's (for the first product), for operands that
/// are not 3-D or of different counts, or a c that overlaps a or b.
void gemm_batched(const Tensor& a, const Tensor& b, const Tensor& c, double alpha = 1.0,
                  double beta = 0.0, Transpose transpose_a = Transpose::no,
                  Transpose transpose_b = Transpose::no);

/// A * B (2-D, inner dimensions equal) as a new tensor on their device; the result has the dtype
/// of A and B (f16/bf16 results are accumulated in f32 and rounded once). gemm with alpha 1 and
/// beta 0.
[[nodiscard]] Tensor matmul(const Tensor& a, const Tensor& b);
/// A * B with an explicit result dtype: that of A and B, or f32 for f16/bf16 inputs.
[[nodiscard]] Tensor matmul(const Tensor& a, const Tensor& b, DType out_dtype);

/// y = alpha * A * x + beta * y for a CSR matrix A [rows, cols], x [cols], y [rows], all on one
/// device with one dtype (f64 or f32; the matrix's index dtype may be i32 or i64). Each row sums
/// its entries in storage order on every backend, so the CPU and CUDA results have the same bits.
/// With beta == 0, y is only written. y must not overlap x or the matrix's tensors; UsageError
/// for an undefined matrix or operands that do not match it.
void spmv(const CsrMatrix& a, const Tensor& x, const Tensor& y, double alpha = 1.0,
          double beta = 0.0);

/// out = discrete Laplacian of u on a 2-D grid [ny, nx] (5-point stencil) with Dirichlet-zero
/// boundaries (neighbours outside the grid count as 0), with spacing hy between rows and hx
/// between columns:
/// ```
/// out[y][x] = (u[y][x-1] + u[y][x+1]) / hx^2 + (u[y-1][x] + u[y+1][x]) / hy^2
///             - 2 (1/hx^2 + 1/hy^2) u[y][x]
/// ```
/// u and out have one shape and dtype (f64 or f32) and one device, and do not overlap; spacings
/// must be positive and finite (UsageError otherwise). This overload uses the spacing h along
/// both axes: laplacian_5pt(u, out, h, h).
void laplacian_5pt(const Tensor& u, const Tensor& out, double h = 1.0);
/// laplacian_5pt with spacing hy between rows and hx between columns (see the overload above).
void laplacian_5pt(const Tensor& u, const Tensor& out, double hy, double hx);

/// The explicit (forward Euler, FTCS) update of the heat equation on rows of a 2-D grid, in one
/// pass: out[r][x] = c * L(u)[row_offset + r][x] + u[row_offset + r][x] for the out.rows rows
/// starting at row_offset of u, with L the 5-point Laplacian above (neighbours outside u count as
/// 0) and c = alpha dt. Bitwise what laplacian_5pt into a scratch grid followed by
/// axpby(c, scratch, 1, out) computes for those rows. u is [m, nx], out [k, nx] with
/// row_offset + k <= m (u may be a block of a larger grid with a halo row on each side that is
/// read but not updated), one dtype (f64 or f32) and device, out not overlapping u. UsageError
/// for other operands, a non-finite c or spacings that are not positive and finite.
void laplacian_5pt_update(const Tensor& u, const Tensor& out, std::int64_t row_offset, double c,
                          double hy, double hx);

/// The 3-D analogue of laplacian_5pt on [nz, ny, nx] (7-point stencil), adding
/// (u[z-1] + u[z+1]) / hz^2 - 2 u[z][y][x] / hz^2; the same checks. This overload uses the
/// spacing h along all three axes: laplacian_7pt(u, out, h, h, h).
void laplacian_7pt(const Tensor& u, const Tensor& out, double h = 1.0);
/// laplacian_7pt with spacings hz, hy and hx between neighbours along z, y and x.
void laplacian_7pt(const Tensor& u, const Tensor& out, double hz, double hy, double hx);

}  // namespace tenax::ops
