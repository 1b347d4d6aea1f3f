// CPU SpMV: rows split over the CpuContext's workers; each row is summed in storage order and
// stored as detail::spmv_row (the body the CUDA backend runs) stores it, so both give the same
// bits.
#include <algorithm>
#include <cstdint>

#include "csr_rows.hpp"
#include "for_each.hpp"
#include "tenax/core/context.hpp"
#include "tenax/kernels/detail/linalg_kernels.hpp"

namespace tenax::kernels::cpu {
namespace {

// Stored entries per chunk below which a row range is not worth a worker thread.
constexpr std::int64_t kMinEntriesPerChunk = std::int64_t{1} << 15;

template <class T, class I>
void spmv_typed(CpuContext& context, const SpmvArgs& s) {
  const T* x = s.x.data_as<const T>();
  T* y = s.y.data_as<T>();
  const auto alpha = static_cast<T>(s.alpha);
  const auto beta = static_cast<T>(s.beta);
  const std::int64_t rows = s.a.rows();
  // Rows per chunk from the average row length, so that small matrices stay on one thread.
  const std::int64_t per_row = std::max<std::int64_t>(1, (s.a.nnz() + rows - 1) / rows);
  const std::int64_t min_chunk = std::max<std::int64_t>(1, kMinEntriesPerChunk / per_row);
  with_csr_rows<T, I>(s.a, [&](const auto& entries) {
    context.parallel_for(0, rows, min_chunk, [&](std::int64_t begin, std::int64_t end) {
      detail::call_best([&]() __attribute__((always_inline)) {
        // The same final expression as detail::spmv_row, the CUDA backend's body.
        const auto store = [&](std::int64_t r, T sum) {
          y[r] = beta == T(0) ? alpha * sum : alpha * sum + beta * y[r];
        };
        std::int64_t r = begin;
        // Groups of four from a multiple of four, where the compact index describes their shape.
        for (; r < end && r % 4 != 0; ++r) store(r, entries.row_sum(x, r));
        for (; r + 4 <= end; r += 4) {
          T sums[4];
          entries.four_row_sums(x, r, sums);
          for (int k = 0; k < 4; ++k) store(r + k, sums[k]);
        }
        for (; r < end; ++r) store(r, entries.row_sum(x, r));
      });
    });
  });
}

template <class T>
void spmv_values(CpuContext& context, const SpmvArgs& s) {
  if (s.a.index_dtype() == DType::i64) {
    spmv_typed<T, std::int64_t>(context, s);
  } else {
    spmv_typed<T, std::int32_t>(context, s);
  }
}

}  // namespace

void spmv(CpuContext& context, const SpmvArgs& args) {
  if (args.a.dtype() == DType::f64) {
    spmv_values<double>(context, args);
  } else {
    spmv_values<float>(context, args);
  }
}

void spmv(const SpmvArgs& args) { spmv(CpuContext::instance(), args); }

}  // namespace tenax::kernels::cpu
