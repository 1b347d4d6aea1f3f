/// LinearOperator: y = A x for 1-D vectors on one device, the thing every solver, preconditioner
/// and time integrator of this layer works on.
/// @file
/// The public products (apply, apply_dot, apply_dot_with, apply_dots) and diagonal(),
/// with_dtype() and make_vector() are non-virtual: they validate the operands (defined, 1-D, of
/// length cols() for x and rows() for y, the operator's dtype and device, y not overlapping x) and
/// throw UsageError naming the operator, the operand and the fix; then they call the private
/// virtuals that implementations override. Implementations may therefore assume valid operands.
///
/// Besides apply(), an operator may offer capabilities that solvers use when present:
///  - apply_dot(x, y): y = A x and returns x.y. Every operator has it (apply then ops::dot); the
///    assembled and stencil operators fuse it into one pass (ops_krylov.hpp), with the same bits.
///  - apply_dot_with(x, y, w) and apply_dots(x, y, w): y = A x and returns w.y (and y.y), what
///    BiCGSTAB needs after each of its products. Every operator has them (apply then ops::dot);
///    the assembled operators (local and distributed) fuse them into the product's pass.
///  - diagonal(): the diagonal of A as a vector (Jacobi preconditioning); has_diagonal() says
///    whether the operator can give it.
///  - with_dtype(dtype): the same operator computing in another dtype (mixed-precision
///    refinement); supports_dtype_cast() says whether it can.
///
/// Ranks live in the operator: partition() says how its vectors are split across ranks (local by
/// default; the distributed operators of runtime/ return their ranks and this rank's rows, the
/// composite ones their inner operator's). The solvers of this layer (Krylov, time integrators,
/// mixed-precision refinement) hold reductions() while they work on an operator's vectors, so on a
/// distributed operator every dot product and norm they take — ops::dot, nrm2 and the fused
/// Krylov kernels — is global over all ranks, bitwise the single-process value, with nothing in
/// the caller; the operator's own apply_dot, apply_dot_with and apply_dots return global dots
/// too. Code outside the solvers that reduces an operator's vectors holds reductions() too
/// (or uses runtime::DistributedVector).
///
/// Operators are immutable after construction; the const functions may be called from several
/// threads at once on distinct outputs. Operators are shared as OperatorPtr
/// (std::shared_ptr<const LinearOperator>) by the objects that keep them (solvers, preconditioners,
/// composite operators).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tenax/core/device.hpp"
#include "tenax/core/dtype.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/sharded_reduction.hpp"

namespace tenax::solvers {

/// Abstract y = A x with operand checks (see the file description). Implementations override
/// describe() and the private apply_impl(), and optionally the fused products, the diagonal and
/// the dtype cast. Not copyable; share it as an OperatorPtr.
class LinearOperator {
 public:
  /// For implementations: rows, cols >= 0; dtype f64 or f32 (UsageError otherwise).
  LinearOperator(std::int64_t rows, std::int64_t cols, DType dtype, Device device);
  LinearOperator(const LinearOperator&) = delete;
  LinearOperator& operator=(const LinearOperator&) = delete;
  virtual ~LinearOperator() = default;

  /// @name Shape and placement
  ///@{

  /// A is rows() x cols(), computing in dtype() on device(), all fixed at construction:
  /// operands are 1-D vectors of that dtype on that device (x: cols() elements, y: rows()).
  [[nodiscard]] std::int64_t rows() const noexcept { return rows_; }
  [[nodiscard]] std::int64_t cols() const noexcept { return cols_; }
  [[nodiscard]] DType dtype() const noexcept { return dtype_; }
  [[nodiscard]] Device device() const noexcept { return device_; }
  ///@}

  /// @name Distribution (see the file description)
  ///@{

  /// How the operator's vectors are split across ranks: ShardPartition::local(rows()) by default;
  /// a distributed operator returns its ranks and this rank's rows (range.count == rows()), which
  /// stay valid while the operator lives. Composite operators return their inner operator's.
  [[nodiscard]] virtual kernels::ShardPartition partition() const noexcept;
  /// While the returned object lives, this thread's reductions (ops::dot, nrm2, sum, max and the
  /// fused Krylov kernels) over the operator's vectors are global over partition(): collective,
  /// the same calls in the same order on every rank. Nothing changes for a local operator. Joins
  /// an active scope of the same partition (nested solvers); throws UsageError when one over
  /// another partition is active (kernels::GlobalReductions). Keep it on the stack:
  /// `const kernels::GlobalReductions global = a.reductions();`.
  [[nodiscard]] kernels::GlobalReductions reductions() const {
    return kernels::GlobalReductions(partition());
  }
  ///@}

  /// What the operator is, for messages: "csr f64[64, 64] (nnz 288, i64 indices) on cpu".
  [[nodiscard]] virtual std::string describe() const = 0;

  /// y = A x. On a CUDA device the work is enqueued on the device's stream.
  void apply(const Tensor& x, const Tensor& y) const;
  /// y = A x and returns x.y (accumulated in f64 in the fixed order of ops::dot). The operator
  /// must be square (UsageError otherwise): CG's p.Ap.
  [[nodiscard]] double apply_dot(const Tensor& x, const Tensor& y) const;

  /// y = A x and returns w.y, each term and the sum as ops::dot forms them. w is a vector of the
  /// operator's range (rows() entries) that y must not overlap; it may be x itself.
  [[nodiscard]] double apply_dot_with(const Tensor& x, const Tensor& y, const Tensor& w) const;
  /// The two dot products apply_dots() returns with y = A x.
  struct Dots {
    double wy = 0.0;  ///< w.y
    double yy = 0.0;  ///< y.y
  };
  /// y = A x and returns {w.y, y.y}, each as ops::dot forms it; operands as apply_dot_with.
  [[nodiscard]] Dots apply_dots(const Tensor& x, const Tensor& y, const Tensor& w) const;

  /// A new, uninitialised vector of the operator's domain (cols() elements, its dtype and device).
  /// Solvers take their work vectors from here: an operator may place them where it applies them
  /// fastest (a distributed operator leaves room for its ghost entries around the vector, so
  /// applying it to such a vector copies nothing).
  [[nodiscard]] Tensor make_vector() const;

  /// Whether diagonal() is available.
  [[nodiscard]] virtual bool has_diagonal() const noexcept { return false; }
  /// A new vector holding the diagonal of A (rows() == cols() required). Throws UsageError when
  /// has_diagonal() is false, naming the fix.
  [[nodiscard]] Tensor diagonal() const;

  /// Whether with_dtype() is available.
  [[nodiscard]] virtual bool supports_dtype_cast() const noexcept { return false; }
  /// The same operator computing in `dtype` (f64 or f32) on the same device, as a new object:
  /// its values are copied (or rebuilt), never shared with `this`; a CSR operator shares only its
  /// immutable index arrays. Throws UsageError when supports_dtype_cast() is false or `dtype` is
  /// not f64 or f32.
  [[nodiscard]] std::shared_ptr<const LinearOperator> with_dtype(DType dtype) const;

  /// Validates one vector operand of this operator as apply() does: defined, 1-D, `length`
  /// elements, the operator's dtype and device. Throws UsageError that starts with `context`
  /// (e.g. "cg: b") and names the operator and the fix. Solvers use it for b and x.
  void check_vector(std::string_view context, const Tensor& t, std::int64_t length) const;

 private:
  virtual void apply_impl(const Tensor& x, const Tensor& y) const = 0;
  /// Default: apply_impl, then ops::dot(x, y).
  virtual double apply_dot_impl(const Tensor& x, const Tensor& y) const;
  /// Default: apply_impl, then ops::dot(w, y) and, when with_yy, ops::dot(y, y) (yy is 0
  /// otherwise). An override may compute yy always. Every rank of a distributed operator makes the
  /// same call, so the reductions it runs must not depend on the rank's data.
  virtual Dots apply_dots_impl(const Tensor& x, const Tensor& y, const Tensor& w,
                               bool with_yy) const;
  virtual Tensor diagonal_impl() const;
  /// Default: Tensor::empty({cols()}, dtype(), device()).
  virtual Tensor make_vector_impl() const;
  virtual std::shared_ptr<const LinearOperator> with_dtype_impl(DType dtype) const;

  Dots checked_apply_dots(const Tensor& x, const Tensor& y, const Tensor& w, bool with_yy) const;

  std::int64_t rows_;
  std::int64_t cols_;
  DType dtype_;
  Device device_;
};

/// How operators are held and passed: shared and immutable. Solvers, preconditioners and
/// composite operators keep the operators they are given alive through it.
using OperatorPtr = std::shared_ptr<const LinearOperator>;

}  // namespace tenax::solvers
