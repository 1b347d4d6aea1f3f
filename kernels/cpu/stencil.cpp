// CPU Laplacian stencils: grid rows split over the CpuContext's workers. Rows on a y or z
// boundary use the *_at bodies (with the zero-boundary tests); interior rows gather their
// neighbours directly and call the same *_point arithmetic, a branch-free loop the compiler can
// vectorise; each chunk runs as an AVX2 copy where the CPU has it (four f64 lanes, the same bits:
// lane-wise IEEE operations).
#include <algorithm>
#include <cstdint>

#include "for_each.hpp"
#include "prefetch.hpp"
#include "tenax/core/context.hpp"
#include "tenax/kernels/detail/linalg_kernels.hpp"
#include "tenax/kernels/detail/stencil_bodies.hpp"

namespace tenax::kernels::cpu {
namespace {

// Points of a row between two prefetch hints: two cache lines of f64.
constexpr std::int64_t kRun = 16;
// The output is asked for twice as far ahead as the row above (4 KiB for f64): heat2d 4096^2 ran
// 8.8-11.5 ms per step so against 10.7-11.5 ms at the same distance, and 13.5-14.7 ms without
// the write hint (2-vCPU Xeon VM, bench/RESULTS.md).
constexpr std::int64_t kWriteAhead = 2;

// Grid points per chunk below which rows are not worth a worker thread.
constexpr std::int64_t kMinPointsPerChunk = std::int64_t{1} << 15;

std::int64_t min_rows_per_chunk(std::int64_t nx) {
  return std::max<std::int64_t>(1, kMinPointsPerChunk / std::max<std::int64_t>(nx, 1));
}

template <class T>
void laplacian_5pt_typed(CpuContext& context, const StencilArgs& s) {
  const T* u = s.u.data_as<const T>();
  T* out = s.out.data_as<T>();
  const std::int64_t ny = s.ny;
  const std::int64_t nx = s.nx;
  const auto c = laplacian_coefficients<T>(s.hy, s.hx);
  context.parallel_for(0, ny, min_rows_per_chunk(nx), [&](std::int64_t y0, std::int64_t y1) {
    detail::call_best([&]() __attribute__((always_inline)) {
      for (std::int64_t y = y0; y < y1; ++y) {
        T* row_out = out + y * nx;
        if (y == 0 || y + 1 == ny || nx < 3) {
          for (std::int64_t x = 0; x < nx; ++x) row_out[x] = laplacian_5pt_at(u, ny, nx, y, x, c);
          continue;
        }
        const T* row = u + y * nx;
        const T* south = row - nx;
        const T* north = row + nx;
        row_out[0] = laplacian_5pt_at(u, ny, nx, y, std::int64_t{0}, c);
        for (std::int64_t x = 1; x + 1 < nx; ++x) {
          row_out[x] = laplacian_5pt_point(row[x], row[x - 1], row[x + 1], south[x], north[x], c);
        }
        row_out[nx - 1] = laplacian_5pt_at(u, ny, nx, y, nx - 1, c);
      }
    });
  });
}

template <class T>
void laplacian_5pt_update_typed(CpuContext& context, const StencilUpdateArgs& s) {
  const T* u = s.u.data_as<const T>();
  T* out = s.out.data_as<T>();
  const std::int64_t ny = s.ny;
  const std::int64_t nx = s.nx;
  const auto c = laplacian_coefficients<T>(s.hy, s.hx);
  const auto factor = static_cast<T>(s.c);
  context.parallel_for(0, s.rows, min_rows_per_chunk(nx), [&](std::int64_t r0, std::int64_t r1) {
    detail::call_best([&]() __attribute__((always_inline)) {
      for (std::int64_t r = r0; r < r1; ++r) {
        const std::int64_t y = s.row_offset + r;
        const T* __restrict row = u + y * nx;
        T* __restrict row_out = out + r * nx;
        if (y == 0 || y + 1 == ny || nx < 3) {
          for (std::int64_t x = 0; x < nx; ++x) {
            row_out[x] =
                explicit_update_point(row[x], laplacian_5pt_at(u, ny, nx, y, x, c), factor);
          }
          continue;
        }
        const T* __restrict south = row - nx;
        const T* __restrict north = row + nx;
        row_out[0] = explicit_update_point(
            row[0], laplacian_5pt_at(u, ny, nx, y, std::int64_t{0}, c), factor);
        // In runs of kRun points, asking ahead for the row above (the only one not yet read by
        // the rows before) and for the output (prefetch.hpp).
        for (std::int64_t x0 = 1; x0 + 1 < nx; x0 += kRun) {
          prefetch_range<0>(north, x0 + kPrefetchAhead<T>, kRun, nx);
          prefetch_range<1>(row_out, x0 + kWriteAhead * kPrefetchAhead<T>, kRun, nx);
          const std::int64_t x1 = std::min(x0 + kRun, nx - 1);
          for (std::int64_t x = x0; x < x1; ++x) {
            row_out[x] = explicit_update_point(
                row[x], laplacian_5pt_point(row[x], row[x - 1], row[x + 1], south[x], north[x], c),
                factor);
          }
        }
        row_out[nx - 1] =
            explicit_update_point(row[nx - 1], laplacian_5pt_at(u, ny, nx, y, nx - 1, c), factor);
      }
    });
  });
}

template <class T>
void laplacian_7pt_typed(CpuContext& context, const StencilArgs& s) {
  const T* u = s.u.data_as<const T>();
  T* out = s.out.data_as<T>();
  const std::int64_t nz = s.nz;
  const std::int64_t ny = s.ny;
  const std::int64_t nx = s.nx;
  const std::int64_t plane = ny * nx;
  const auto c = laplacian_coefficients<T>(s.hz, s.hy, s.hx);
  // Rows of all planes, r = z * ny + y.
  context.parallel_for(0, nz * ny, min_rows_per_chunk(nx), [&](std::int64_t r0, std::int64_t r1) {
    detail::call_best([&]() __attribute__((always_inline)) {
      for (std::int64_t r = r0; r < r1; ++r) {
        const std::int64_t z = r / ny;
        const std::int64_t y = r % ny;
        T* row_out = out + r * nx;
        if (z == 0 || z + 1 == nz || y == 0 || y + 1 == ny || nx < 3) {
          for (std::int64_t x = 0; x < nx; ++x) {
            row_out[x] = laplacian_7pt_at(u, nz, ny, nx, z, y, x, c);
          }
          continue;
        }
        const T* row = u + r * nx;
        const T* south = row - nx;
        const T* north = row + nx;
        const T* below = row - plane;
        const T* above = row + plane;
        row_out[0] = laplacian_7pt_at(u, nz, ny, nx, z, y, std::int64_t{0}, c);
        for (std::int64_t x = 1; x + 1 < nx; ++x) {
          row_out[x] = laplacian_7pt_point(row[x], row[x - 1], row[x + 1], south[x], north[x],
                                           below[x], above[x], c);
        }
        row_out[nx - 1] = laplacian_7pt_at(u, nz, ny, nx, z, y, nx - 1, c);
      }
    });
  });
}

}  // namespace

void laplacian_5pt(CpuContext& context, const StencilArgs& args) {
  if (args.u.dtype() == DType::f64) {
    laplacian_5pt_typed<double>(context, args);
  } else {
    laplacian_5pt_typed<float>(context, args);
  }
}

void laplacian_7pt(CpuContext& context, const StencilArgs& args) {
  if (args.u.dtype() == DType::f64) {
    laplacian_7pt_typed<double>(context, args);
  } else {
    laplacian_7pt_typed<float>(context, args);
  }
}

void laplacian_5pt_update(CpuContext& context, const StencilUpdateArgs& args) {
  if (args.u.dtype() == DType::f64) {
    laplacian_5pt_update_typed<double>(context, args);
  } else {
    laplacian_5pt_update_typed<float>(context, args);
  }
}

void laplacian_5pt(const StencilArgs& args) { laplacian_5pt(CpuContext::instance(), args); }
void laplacian_5pt_update(const StencilUpdateArgs& args) {
  laplacian_5pt_update(CpuContext::instance(), args);
}
void laplacian_7pt(const StencilArgs& args) { laplacian_7pt(CpuContext::instance(), args); }

}  // namespace tenax::kernels::cpu
