#include "tenax/solvers/ilu0_preconditioner.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <variant>
#include <vector>

#include "detail/float_dispatch.hpp"
#include "tenax/core/error.hpp"
#include "tenax/solvers/host_csr.hpp"

namespace tenax::solvers {
namespace {

const CsrMatrix& checked(const CsrMatrix& a) {
  TENAX_EXPECTS(a.defined(), UsageError, "ilu0: the matrix has no storage",
                "build the CsrMatrix before the preconditioner");
  TENAX_EXPECTS(a.device().is_cpu(), UsageError,
                "ilu0: " + a.describe() +
                    " is not on the CPU, and the ILU(0) triangular solves run on the CPU only",
                "use pc=jacobi on a GPU, or solve on the CPU");
  TENAX_EXPECTS(a.rows() == a.cols(), UsageError, "ilu0: " + a.describe() + " is not square",
                "factor a square matrix");
  return a;
}

// The factors L (unit diagonal, not stored) and U in one CSR pattern: each row sorted by column
// with duplicates merged, `diagonal[i]` the position of entry (i, i).
template <class T>
struct LuFactors {
  std::vector<std::int64_t> row_ptr;
  std::vector<std::int64_t> col_idx;
  std::vector<std::int64_t> diagonal;
  std::vector<T> values;
};

template <class T>
LuFactors<T> sorted_pattern(const HostCsr<T>& a, const std::string& name) {
  LuFactors<T> lu;
  lu.row_ptr.push_back(0);
  std::vector<std::int64_t> order;
  for (std::int64_t r = 0; r < a.rows; ++r) {
    order.resize(static_cast<std::size_t>(a.row_ptr[r + 1] - a.row_ptr[r]));
    std::iota(order.begin(), order.end(), a.row_ptr[r]);
    // Stable so that duplicates are summed in storage order, as ops::spmv does.
    std::stable_sort(order.begin(), order.end(),
                     [&](std::int64_t i, std::int64_t j) { return a.col_idx[i] < a.col_idx[j]; });
    std::int64_t diagonal = -1;
    for (const std::int64_t k : order) {
      const std::int64_t col = a.col_idx[k];
      const auto row_begin = static_cast<std::size_t>(lu.row_ptr.back());
      if (lu.col_idx.size() > row_begin && lu.col_idx.back() == col) {
        lu.values.back() += a.values[k];
        continue;
      }
      if (col == r) diagonal = static_cast<std::int64_t>(lu.col_idx.size());
      lu.col_idx.push_back(col);
      lu.values.push_back(a.values[k]);
    }
    TENAX_EXPECTS(diagonal >= 0, UsageError,
                  "ilu0: row " + std::to_string(r) + " of " + name +
                      " stores no diagonal entry, so ILU(0) has no pivot there",
                  "store the diagonal explicitly (even when it is 0 add it and shift the "
                  "matrix), or use pc=jacobi / pc=none");
    lu.diagonal.push_back(diagonal);
    lu.row_ptr.push_back(static_cast<std::int64_t>(lu.col_idx.size()));
  }
  return lu;
}

// IKJ ILU(0): for each row i, eliminate with the rows k < i it references, updating only the
// entries (i, j) present in the pattern.
template <class T>
void factor(LuFactors<T>& lu, std::int64_t n, const std::string& name) {
  std::vector<std::int64_t> position(static_cast<std::size_t>(n), -1);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t p = lu.row_ptr[i]; p < lu.row_ptr[i + 1]; ++p) position[lu.col_idx[p]] = p;
    for (std::int64_t p = lu.row_ptr[i]; p < lu.diagonal[i]; ++p) {
      const std::int64_t k = lu.col_idx[p];
      const T pivot = lu.values[lu.diagonal[k]];
      lu.values[p] /= pivot;
      const T l_ik = lu.values[p];
      for (std::int64_t q = lu.diagonal[k] + 1; q < lu.row_ptr[k + 1]; ++q) {
        const std::int64_t target = position[lu.col_idx[q]];
        if (target >= 0) lu.values[target] -= l_ik * lu.values[q];
      }
    }
    const T pivot = lu.values[lu.diagonal[i]];
    TENAX_EXPECTS(pivot != T(0) && std::isfinite(static_cast<double>(pivot)), UsageError,
                  "ilu0: the pivot of row " + std::to_string(i) + " of " + name + " is " +
                      std::to_string(static_cast<double>(pivot)) +
                      ", so the incomplete factorisation breaks down",
                  "use pc=jacobi, or reorder or diagonally shift the matrix");
    for (std::int64_t p = lu.row_ptr[i]; p < lu.row_ptr[i + 1]; ++p) position[lu.col_idx[p]] = -1;
  }
}

template <class T>
void solve(const LuFactors<T>& lu, const T* r, T* z, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    T sum = r[i];
    for (std::int64_t p = lu.row_ptr[i]; p < lu.diagonal[i]; ++p) {
      sum -= lu.values[p] * z[lu.col_idx[p]];
    }
    z[i] = sum;
  }
  for (std::int64_t i = n - 1; i >= 0; --i) {
    T sum = z[i];
    for (std::int64_t p = lu.diagonal[i] + 1; p < lu.row_ptr[i + 1]; ++p) {
      sum -= lu.values[p] * z[lu.col_idx[p]];
    }
    z[i] = sum / lu.values[lu.diagonal[i]];
  }
}

}  // namespace

struct Ilu0Preconditioner::Factors {
  std::variant<LuFactors<double>, LuFactors<float>> lu;
};

Ilu0Preconditioner::Ilu0Preconditioner(const CsrMatrix& a)
    : Preconditioner(checked(a).rows(), a.cols(), a.dtype(), a.device()), of_(a.describe()) {
  auto factors = std::make_unique<Factors>();
  detail::with_float_type(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    auto lu = sorted_pattern(read_host_csr<T>(a), of_);
    factor(lu, a.rows(), of_);
    factors->lu = std::move(lu);
  });
  factors_ = std::move(factors);
}

Ilu0Preconditioner::~Ilu0Preconditioner() = default;

std::string Ilu0Preconditioner::describe() const { return "ilu0 preconditioner of " + of_; }

void Ilu0Preconditioner::apply_impl(const Tensor& r, const Tensor& z) const {
  std::visit(
      [&](const auto& lu) {
        using T = typename std::decay_t<decltype(lu.values)>::value_type;
        solve(lu, r.data_as<const T>(), z.data_as<T>(), rows());
      },
      factors_->lu);
}

}  // namespace tenax::solvers
