#include "tenax/solvers/poisson.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenax/core/error.hpp"

namespace tenax::solvers {
namespace {

// One axis of the grid: its extent, stride in the flattened index and coupling 1/h^2.
struct Axis {
  std::int64_t extent;
  std::int64_t stride;
  double coupling;
};

void check_grid(const char* op, const std::vector<Axis>& axes, const double* spacings,
                DType value_dtype, DType index_dtype) {
  for (std::size_t a = 0; a < axes.size(); ++a) {
    TENAX_EXPECTS(axes[a].extent >= 1, UsageError,
                  std::string(op) + ": a grid extent is " + std::to_string(axes[a].extent) +
                      " but must be at least 1",
                  "pass the number of interior points along each axis");
    TENAX_EXPECTS(std::isfinite(spacings[a]) && spacings[a] > 0.0, UsageError,
                  std::string(op) + ": a grid spacing is " + std::to_string(spacings[a]) +
                      " but must be positive and finite",
                  "pass the distance between neighbouring grid points");
  }
  TENAX_EXPECTS(value_dtype == DType::f64 || value_dtype == DType::f32, UsageError,
                std::string(op) + ": value dtype " + std::string(to_string(value_dtype)) +
                    " is not supported",
                "use DType::f64 or DType::f32");
  TENAX_EXPECTS(index_dtype == DType::i64 || index_dtype == DType::i32, UsageError,
                std::string(op) + ": index dtype " + std::string(to_string(index_dtype)) +
                    " is not supported",
                "use DType::i64 or DType::i32");
}

template <class T, class I>
CsrMatrix assemble(const std::vector<Axis>& axes, Device device) {
  std::int64_t n = 1;
  double diagonal = 0.0;
  for (const Axis& axis : axes) {
    n *= axis.extent;
    diagonal += 2.0 * axis.coupling;
  }
  const std::int64_t max_nnz = n * static_cast<std::int64_t>(1 + 2 * axes.size());
  TENAX_EXPECTS(
      max_nnz <= std::numeric_limits<I>::max(), UsageError,
      "poisson CSR: " + std::to_string(max_nnz) + " entries do not fit the i32 index dtype",
      "assemble with DType::i64 indices");

  std::vector<I> row_ptr{0};
  std::vector<I> col_idx;
  std::vector<T> values;
  row_ptr.reserve(static_cast<std::size_t>(n + 1));
  col_idx.reserve(static_cast<std::size_t>(max_nnz));
  values.reserve(static_cast<std::size_t>(max_nnz));
  const auto add = [&](std::int64_t col, double value) {
    col_idx.push_back(static_cast<I>(col));
    values.push_back(static_cast<T>(value));
  };
  // Axes are ordered slowest first, so the "minus" neighbours come in increasing column order
  // for a slow-to-fast walk and the "plus" neighbours for a fast-to-slow walk.
  for (std::int64_t i = 0; i < n; ++i) {
    for (const Axis& axis : axes) {
      if ((i / axis.stride) % axis.extent > 0) add(i - axis.stride, -axis.coupling);
    }
    add(i, diagonal);
    for (auto axis = axes.rbegin(); axis != axes.rend(); ++axis) {
      if ((i / axis->stride) % axis->extent + 1 < axis->extent) {
        add(i + axis->stride, -axis->coupling);
      }
    }
    row_ptr.push_back(static_cast<I>(col_idx.size()));
  }

  const auto to_tensor = [](const auto& v) {
    using V = typename std::decay_t<decltype(v)>::value_type;
    Tensor t = Tensor::empty({static_cast<std::int64_t>(v.size())}, dtype_of<V>);
    std::copy(v.begin(), v.end(), t.data_as<V>());
    return t;
  };
  return CsrMatrix(n, n, to_tensor(row_ptr), to_tensor(col_idx), to_tensor(values)).to(device);
}

CsrMatrix assemble(const std::vector<Axis>& axes, DType value_dtype, DType index_dtype,
                   Device device) {
  if (value_dtype == DType::f64) {
    return index_dtype == DType::i64 ? assemble<double, std::int64_t>(axes, device)
                                     : assemble<double, std::int32_t>(axes, device);
  }
  return index_dtype == DType::i64 ? assemble<float, std::int64_t>(axes, device)
                                   : assemble<float, std::int32_t>(axes, device);
}

}  // namespace

CsrMatrix poisson_2d_csr(std::int64_t ny, std::int64_t nx, double hy, double hx, DType value_dtype,
                         DType index_dtype, Device device) {
  const double spacings[] = {hy, hx};
  const std::vector<Axis> axes = {{ny, nx, 1.0 / (hy * hy)}, {nx, 1, 1.0 / (hx * hx)}};
  check_grid("poisson_2d_csr", axes, spacings, value_dtype, index_dtype);
  return assemble(axes, value_dtype, index_dtype, device);
}

CsrMatrix poisson_3d_csr(std::int64_t nz, std::int64_t ny, std::int64_t nx, double hz, double hy,
                         double hx, DType value_dtype, DType index_dtype, Device device) {
  const double spacings[] = {hz, hy, hx};
  const std::vector<Axis> axes = {
      {nz, ny * nx, 1.0 / (hz * hz)}, {ny, nx, 1.0 / (hy * hy)}, {nx, 1, 1.0 / (hx * hx)}};
  check_grid("poisson_3d_csr", axes, spacings, value_dtype, index_dtype);
  return assemble(axes, value_dtype, index_dtype, device);
}

}  // namespace tenax::solvers
