// CUDA Laplacian stencils: one thread per grid point running the *_at bodies of
// stencil_bodies.hpp, the arithmetic the CPU backend runs.
#include <cstdint>

#include "linalg_launch.cuh"
#include "tenax/kernels/detail/linalg_kernels.hpp"
#include "tenax/kernels/detail/stencil_bodies.hpp"

namespace tenax::kernels::cuda {
namespace {

template <class T>
__global__ void laplacian_5pt_kernel(const T* u, T* out, std::int64_t ny, std::int64_t nx,
                                     Laplacian2dCoefficients<T> c) {
  const std::int64_t n = ny * nx;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = laplacian_5pt_at(u, ny, nx, i / nx, i % nx, c);
  }
}

template <class T>
__global__ void laplacian_5pt_update_kernel(const T* u, T* out, std::int64_t ny, std::int64_t nx,
                                            std::int64_t row_offset, std::int64_t rows,
                                            Laplacian2dCoefficients<T> c, T factor) {
  const std::int64_t n = rows * nx;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const std::int64_t y = row_offset + i / nx;
    const std::int64_t x = i % nx;
    out[i] = explicit_update_point(u[y * nx + x], laplacian_5pt_at(u, ny, nx, y, x, c), factor);
  }
}

template <class T>
__global__ void laplacian_7pt_kernel(const T* u, T* out, std::int64_t nz, std::int64_t ny,
                                     std::int64_t nx, Laplacian3dCoefficients<T> c) {
  const std::int64_t n = nz * ny * nx;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const std::int64_t x = i % nx;
    const std::int64_t row = i / nx;
    out[i] = laplacian_7pt_at(u, nz, ny, nx, row / ny, row % ny, x, c);
  }
}

template <class T>
void launch_5pt(tenax::cuda::Context& context, const StencilArgs& s) {
  laplacian_5pt_kernel<T>
      <<<linalg_launch::grid_blocks(s.ny * s.nx), linalg_launch::kBlockThreads, 0,
         linalg_launch::stream_of(context)>>>(s.u.data_as<const T>(), s.out.data_as<T>(), s.ny,
                                              s.nx, laplacian_coefficients<T>(s.hy, s.hx));
  linalg_launch::check_launch(context, "laplacian_5pt kernel launch");
}

template <class T>
void launch_5pt_update(tenax::cuda::Context& context, const StencilUpdateArgs& s) {
  laplacian_5pt_update_kernel<T>
      <<<linalg_launch::grid_blocks(s.rows * s.nx), linalg_launch::kBlockThreads, 0,
         linalg_launch::stream_of(context)>>>(
          s.u.data_as<const T>(), s.out.data_as<T>(), s.ny, s.nx, s.row_offset, s.rows,
          laplacian_coefficients<T>(s.hy, s.hx), static_cast<T>(s.c));
  linalg_launch::check_launch(context, "laplacian_5pt_update kernel launch");
}

template <class T>
void launch_7pt(tenax::cuda::Context& context, const StencilArgs& s) {
  laplacian_7pt_kernel<T><<<linalg_launch::grid_blocks(s.nz * s.ny * s.nx),
                            linalg_launch::kBlockThreads, 0, linalg_launch::stream_of(context)>>>(
      s.u.data_as<const T>(), s.out.data_as<T>(), s.nz, s.ny, s.nx,
      laplacian_coefficients<T>(s.hz, s.hy, s.hx));
  linalg_launch::check_launch(context, "laplacian_7pt kernel launch");
}

}  // namespace

void laplacian_5pt(const StencilArgs& args) {
  tenax::cuda::Context& context = tenax::cuda::context(args.out.device());
  context.activate();
  if (args.u.dtype() == DType::f64) {
    launch_5pt<double>(context, args);
  } else {
    launch_5pt<float>(context, args);
  }
}

void laplacian_5pt_update(const StencilUpdateArgs& args) {
  tenax::cuda::Context& context = tenax::cuda::context(args.out.device());
  context.activate();
  if (args.u.dtype() == DType::f64) {
    launch_5pt_update<double>(context, args);
  } else {
    launch_5pt_update<float>(context, args);
  }
}

void laplacian_7pt(const StencilArgs& args) {
  tenax::cuda::Context& context = tenax::cuda::context(args.out.device());
  context.activate();
  if (args.u.dtype() == DType::f64) {
    launch_7pt<double>(context, args);
  } else {
    launch_7pt<float>(context, args);
  }
}

}  // namespace tenax::kernels::cuda
