// DistributedLaplacian2dOperator (distributed_laplacian.hpp).
#include "tenax/runtime/distributed_laplacian.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/kernels/detail/krylov_bodies.hpp"
#include "tenax/kernels/detail/stencil_bodies.hpp"
#include "tenax/kernels/ops.hpp"

namespace tenax::runtime {
namespace {

// The operator's scale: -1 makes the Laplacian positive definite, as Laplacian2dOperator does.
constexpr double kNegate = -1.0;

const kernels::ShardRange& checked(const kernels::ShardRange& range, std::int64_t ny,
                                   std::int64_t nx, double hy, double hx) {
  TENAX_EXPECTS(
      ny >= 1 && nx >= 1 && nx <= range.total && range.total / nx == ny && range.total % nx == 0,
      UsageError,
      "distributed laplacian: a [" + std::to_string(ny) + ", " + std::to_string(nx) +
          "] grid split as a vector of " + std::to_string(range.total) + " points",
      "pass ny, nx >= 1 and ranges of ny * nx points (kernels::block_aligned_range)");
  TENAX_EXPECTS(
      std::isfinite(hy) && hy > 0 && std::isfinite(hx) && hx > 0, UsageError,
      "distributed laplacian: spacings hy " + std::to_string(hy) + ", hx " + std::to_string(hx),
      "pass positive, finite grid spacings");
  return range;
}

// The points before and after [first, first + count) that the stencil reads: a row's worth on
// each side, clipped to the grid.
std::vector<std::int64_t> stencil_ghosts(const kernels::ShardRange& range, std::int64_t nx) {
  std::vector<std::int64_t> ghosts;
  if (range.count == 0) return ghosts;
  const std::int64_t end = range.first + range.count;
  for (std::int64_t g = std::max<std::int64_t>(0, range.first - nx); g < range.first; ++g) {
    ghosts.push_back(g);
  }
  for (std::int64_t g = end; g < std::min(range.total, end + nx); ++g) ghosts.push_back(g);
  return ghosts;
}

}  // namespace

DistributedLaplacian2dOperator::DistributedLaplacian2dOperator(Communicator& comm,
                                                               const kernels::ShardRange& range,
                                                               std::int64_t ny, std::int64_t nx,
                                                               double hy, double hx, DType dtype)
    : LinearOperator(range.count, range.count, dtype, Device::cpu()),
      comm_(&comm),
      gather_(comm),
      range_(checked(range, ny, nx, hy, hx)),
      ny_(ny),
      nx_(nx),
      hy_(hy),
      hx_(hx),
      lo_(std::max<std::int64_t>(0, range.first - nx)),
      halo_(comm, range, stencil_ghosts(range, nx), dtype, "distributed laplacian") {
  ghosts_ = Tensor::empty({halo_.ghost_count()}, dtype);
  extended_ = Tensor::empty({halo_.ghost_count() + range.count}, dtype);
}

std::string DistributedLaplacian2dOperator::describe() const {
  return "distributed -laplacian 5-point " + std::string(to_string(dtype())) + "[" +
         std::to_string(ny_) + ", " + std::to_string(nx_) + "] points [" +
         std::to_string(range_.first) + ", " + std::to_string(range_.first + range_.count) + ") (" +
         std::to_string(halo_.ghost_count()) + " ghosts) on rank " + std::to_string(comm_->rank()) +
         " of " + std::to_string(comm_->size());
}

template <class T>
void DistributedLaplacian2dOperator::apply_typed(const Tensor& x, const Tensor& y) const {
  halo_.exchange(x, ghosts_);
  if (range_.count == 0) return;
  const std::int64_t before = range_.first - lo_;
  const std::int64_t count = range_.count;
  const std::int64_t after = halo_.ghost_count() - before;
  ops::copy(extended_.slice(0, before), ghosts_.slice(0, before));
  ops::copy(extended_.slice(before, before + count), x);
  ops::copy(extended_.slice(before + count, before + count + after),
            ghosts_.slice(before, before + after));
  const T* p = extended_.data_as<const T>();
  T* q = y.data_as<T>();
  const kernels::Laplacian2dCoefficients<T> c = kernels::laplacian_coefficients<T>(hy_, hx_);
  const T scale = static_cast<T>(kNegate);
  const T zero = T(0);
  std::int64_t row = range_.first / nx_;
  std::int64_t column = range_.first % nx_;
  for (std::int64_t e = 0; e < count; ++e) {
    const std::int64_t k = before + e;  // the point's place in extended_
    const T west = column > 0 ? p[k - 1] : zero;
    const T east = column + 1 < nx_ ? p[k + 1] : zero;
    const T south = row > 0 ? p[k - nx_] : zero;
    const T north = row + 1 < ny_ ? p[k + nx_] : zero;
    q[e] = kernels::scaled_point(scale,
                                 kernels::laplacian_5pt_point(p[k], west, east, south, north, c));
    if (++column == nx_) {
      column = 0;
      ++row;
    }
  }
}

void DistributedLaplacian2dOperator::apply_impl(const Tensor& x, const Tensor& y) const {
  if (dtype() == DType::f64) {
    apply_typed<double>(x, y);
  } else {
    apply_typed<float>(x, y);
  }
}

double DistributedLaplacian2dOperator::apply_dot_impl(const Tensor& x, const Tensor& y) const {
  apply_impl(x, y);
  // The terms laplacian_5pt_dot sums (dot_term(p[i], q[i])) in the one reduction order; an
  // empty shard still takes part in the reduction across the ranks.
  return ops::dot(x, y);
}

Tensor DistributedLaplacian2dOperator::diagonal_impl() const {
  // The stencil's own rounding (stencil_bodies.hpp): computed in f64, stored in the dtype.
  const double cy = 1.0 / (hy_ * hy_);
  const double cx = 1.0 / (hx_ * hx_);
  Tensor diagonal = Tensor::empty({range_.count}, dtype());
  ops::fill(diagonal, 2.0 * (cy + cx));
  return diagonal;
}

}  // namespace tenax::runtime
