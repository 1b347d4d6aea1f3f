#include "detail/stencil_csr.hpp"

#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "tenax/core/checked_size.hpp"
#include "tenax/core/error.hpp"

namespace tenax::solvers::detail {
namespace {

template <class T, class I>
CsrMatrix assemble(const char* op, const std::vector<StencilAxis>& axes, double diagonal,
                   Device device) {
  // Every size is checked before anything is allocated, and the arrays are tensors from the
  // memory pool: a grid too large for the index type, for 64-bit sizes or for TENAX_MEMORY_LIMIT
  // is refused with its sizes instead of wrapping or reaching the kernel's OOM killer.
  constexpr std::string_view kSmallerGrid = "use a smaller grid";
  std::int64_t n = 1;
  for (const StencilAxis& axis : axes) {
    n = size_product(std::string(op) + ": the grid's points", {n, axis.extent}, kSmallerGrid);
  }
  // The diagonal, and two couplings for each pair of neighbours along each axis.
  std::int64_t nnz = n;
  for (const StencilAxis& axis : axes) {
    const std::int64_t pairs = (n / axis.extent) * (axis.extent - 1);
    nnz = size_sum(std::string(op) + ": the matrix entries", nnz,
                   size_product(std::string(op) + ": the matrix entries", {2, pairs}, kSmallerGrid),
                   kSmallerGrid);
  }
  TENAX_EXPECTS(nnz <= std::numeric_limits<I>::max(), UsageError,
                std::string(op) + ": " + std::to_string(nnz) + " entries do not fit the " +
                    std::string(to_string(dtype_of<I>)) + " index dtype",
                "assemble with DType::i64 indices");
  const std::int64_t bytes =
      size_sum(std::string(op) + ": the matrix bytes",
               size_product(std::string(op) + ": the matrix bytes",
                            {nnz, static_cast<std::int64_t>(sizeof(T) + sizeof(I))}, kSmallerGrid),
               size_product(std::string(op) + ": the matrix bytes",
                            {n + 1, static_cast<std::int64_t>(sizeof(I))}, kSmallerGrid),
               kSmallerGrid);

  Tensor row_ptr, col_idx, values;
  try {
    row_ptr = Tensor::empty({n + 1}, dtype_of<I>);
    col_idx = Tensor::empty({nnz}, dtype_of<I>);
    values = Tensor::empty({nnz}, dtype_of<T>);
  } catch (const OutOfMemoryError& e) {
    throw OutOfMemoryError(std::string(op) + ": the matrix of " + std::to_string(n) + " rows and " +
                               std::to_string(nnz) + " entries needs " + std::to_string(bytes) +
                               " bytes on the host: " + e.cause(),
                           "use a smaller grid, or raise TENAX_MEMORY_LIMIT where the machine "
                           "has the memory");
  }
  I* const row = row_ptr.data_as<I>();
  I* const col = col_idx.data_as<I>();
  T* const value = values.data_as<T>();
  std::int64_t written = 0;
  const auto add = [&](std::int64_t c, double v) {
    col[written] = static_cast<I>(c);
    value[written] = static_cast<T>(v);
    ++written;
  };
  row[0] = 0;
  // Axes are ordered slowest first, so the "minus" neighbours come in increasing column order
  // for a slow-to-fast walk and the "plus" neighbours for a fast-to-slow walk.
  for (std::int64_t i = 0; i < n; ++i) {
    for (const StencilAxis& axis : axes) {
      if ((i / axis.stride) % axis.extent > 0) add(i - axis.stride, axis.minus);
    }
    add(i, diagonal);
    for (auto axis = axes.rbegin(); axis != axes.rend(); ++axis) {
      if ((i / axis->stride) % axis->extent + 1 < axis->extent) add(i + axis->stride, axis->plus);
    }
    row[i + 1] = static_cast<I>(written);
  }
  return CsrMatrix(n, n, std::move(row_ptr), std::move(col_idx), std::move(values)).to(device);
}

}  // namespace

void expect_csr_dtypes(const char* op, DType value_dtype, DType index_dtype) {
  TENAX_EXPECTS(value_dtype == DType::f64 || value_dtype == DType::f32, UsageError,
                std::string(op) + ": value dtype " + std::string(to_string(value_dtype)) +
                    " is not supported",
                "use DType::f64 or DType::f32");
  TENAX_EXPECTS(index_dtype == DType::i64 || index_dtype == DType::i32, UsageError,
                std::string(op) + ": index dtype " + std::string(to_string(index_dtype)) +
                    " is not supported",
                "use DType::i64 or DType::i32");
}

CsrMatrix stencil_csr(const char* op, const std::vector<StencilAxis>& axes, double diagonal,
                      DType value_dtype, DType index_dtype, Device device) {
  if (value_dtype == DType::f64) {
    return index_dtype == DType::i64 ? assemble<double, std::int64_t>(op, axes, diagonal, device)
                                     : assemble<double, std::int32_t>(op, axes, diagonal, device);
  }
  return index_dtype == DType::i64 ? assemble<float, std::int64_t>(op, axes, diagonal, device)
                                   : assemble<float, std::int32_t>(op, axes, diagonal, device);
}

}  // namespace tenax::solvers::detail
