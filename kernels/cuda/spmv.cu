// CUDA SpMV: one thread per row running spmv_row, the body the CPU backend runs, so each row is
// summed in storage order on both.
#include <cstdint>

#include "linalg_launch.cuh"
#include "tenax/kernels/detail/linalg_kernels.hpp"
#include "tenax/kernels/detail/spmv_body.hpp"

namespace tenax::kernels::cuda {
namespace {

template <class T, class I>
__global__ void spmv_kernel(const I* row_ptr, const I* col_idx, const T* values, const T* x,
                            T alpha, T beta, T* y, std::int64_t rows) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < rows;
       r += stride) {
    kernels::detail::spmv_row(row_ptr, col_idx, values, x, alpha, beta, y, r);
  }
}

template <class T, class I>
void launch(tenax::cuda::Context& context, const SpmvArgs& s) {
  const std::int64_t rows = s.a.rows();
  spmv_kernel<T, I><<<linalg_launch::grid_blocks(rows), linalg_launch::kBlockThreads, 0,
                      linalg_launch::stream_of(context)>>>(
      s.a.row_ptr().data_as<const I>(), s.a.col_idx().data_as<const I>(),
      s.a.values().data_as<const T>(), s.x.data_as<const T>(), static_cast<T>(s.alpha),
      static_cast<T>(s.beta), s.y.data_as<T>(), rows);
  linalg_launch::check_launch(context, "spmv kernel launch");
}

template <class T>
void launch_values(tenax::cuda::Context& context, const SpmvArgs& s) {
  if (s.a.index_dtype() == DType::i64) {
    launch<T, std::int64_t>(context, s);
  } else {
    launch<T, std::int32_t>(context, s);
  }
}

}  // namespace

void spmv(const SpmvArgs& args) {
  tenax::cuda::Context& context = tenax::cuda::context(args.y.device());
  context.activate();
  if (args.a.dtype() == DType::f64) {
    launch_values<double>(context, args);
  } else {
    launch_values<float>(context, args);
  }
}

}  // namespace tenax::kernels::cuda
