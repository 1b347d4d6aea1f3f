#include "tenax/solvers/manufactured.hpp"

#include <cmath>
#include <new>
#include <string>
#include <utility>

#include "tenax/core/checked_size.hpp"
#include "tenax/core/error.hpp"
#include "tenax/kernels/ops.hpp"

namespace tenax::solvers {
namespace {

// u and f = -Δu at grid point `index` (x fastest) of the n^dim grid of spacing h.
struct PointValues {
  double u = 1.0;
  double f = 0.0;
};

PointValues manufactured_at(int dim, std::int64_t index, std::int64_t n, double h) {
  double g[3];
  double a[3];
  for (int axis = 0; axis < dim; ++axis) {
    const double t = h * static_cast<double>(index % n + 1);
    index /= n;
    g[axis] = t * (1.0 - t) * std::exp(t);
    a[axis] = t * (t + 3.0) * std::exp(t);
  }
  PointValues m;
  for (int axis = 0; axis < dim; ++axis) {
    m.u *= g[axis];
    double term = a[axis];
    for (int other = 0; other < dim; ++other) {
      if (other != axis) term *= g[other];
    }
    m.f += term;
  }
  return m;
}

}  // namespace

ManufacturedSolution manufactured_poisson(int dim, std::int64_t n, DType dtype, Device device) {
  TENAX_EXPECTS(dim == 2 || dim == 3, UsageError,
                "manufactured_poisson: dim is " + std::to_string(dim) + " but must be 2 or 3",
                "pass 2 for the unit square or 3 for the unit cube");
  TENAX_EXPECTS(n >= 1, UsageError,
                "manufactured_poisson: n is " + std::to_string(n) + " but must be at least 1",
                "pass the number of interior grid points per side");
  TENAX_EXPECTS(
      dtype == DType::f64 || dtype == DType::f32, UsageError,
      "manufactured_poisson: dtype " + std::string(to_string(dtype)) + " is not supported",
      "use DType::f64 or DType::f32");
  const std::string grid = " (n " + std::to_string(n) + ", dim " + std::to_string(dim) + ")";
  const std::int64_t points = dim == 2
                                  ? size_product("manufactured_poisson: the grid's points" + grid,
                                                 {n, n}, "use a smaller n")
                                  : size_product("manufactured_poisson: the grid's points" + grid,
                                                 {n, n, n}, "use a smaller n");
  // u and f in f64, checked before anything is allocated.
  const std::int64_t bytes = size_product("manufactured_poisson: the bytes of u and f" + grid,
                                          {points, 2 * 8}, "use a smaller n");
  const auto refused = [&](const std::string& why, std::string fix) {
    return OutOfMemoryError("manufactured_poisson: the solution and right-hand side of " +
                                std::to_string(points) + " points need " + std::to_string(bytes) +
                                " bytes on the host" + why,
                            std::move(fix));
  };
  constexpr const char* kFix =
      "use a smaller n, or raise TENAX_MEMORY_LIMIT where the machine has the memory";
  // u outside the memory pool (a host reference), f in it: f is b, or is rounded into b.
  ManufacturedSolution out;
  Tensor f;
  try {
    out.solution.resize(static_cast<std::size_t>(points));
    f = Tensor::empty({points}, DType::f64);
  } catch (const std::bad_alloc&) {
    throw refused(", more than it can allocate", "use a smaller n");
  } catch (const OutOfMemoryError& e) {
    throw refused(": " + e.cause(), kFix);
  }
  const double h = 1.0 / static_cast<double>(n + 1);
  double* const f_values = f.data_as<double>();
  for (std::int64_t k = 0; k < points; ++k) {
    const PointValues m = manufactured_at(dim, k, n, h);
    out.solution[static_cast<std::size_t>(k)] = m.u;
    f_values[k] = m.f;
  }
  try {
    out.rhs = (dtype == DType::f64 ? f : ops::cast(f, dtype)).to(device);
  } catch (const OutOfMemoryError& e) {
    throw refused(" (b in " + std::string(to_string(dtype)) + " on " + to_string(device) +
                      " besides): " + e.cause(),
                  kFix);
  }
  return out;
}

ManufacturedSolution manufactured_ones(const LinearOperator& a) {
  ManufacturedSolution out;
  out.solution.assign(static_cast<std::size_t>(a.cols()), 1.0);
  const Tensor ones = Tensor::empty({a.cols()}, a.dtype(), a.device());
  ops::fill(ones, 1.0);
  out.rhs = Tensor::empty({a.rows()}, a.dtype(), a.device());
  a.apply(ones, out.rhs);
  return out;
}

}  // namespace tenax::solvers
