/// Kernels of your own over a structured grid: a stencil or point update written once, as a
/// host-and-device functor, and run by the library over one rank's block of the grid, on the CPU
/// (the worker threads, vectorised) or on CUDA.
/// @file
/// A kernel is a functor with a TENAX_HD call operator (usually a template, see below) that takes
/// one *neighbourhood* per input field and one reference per output field:
/// ```
/// struct Heat {
///   double c;
///   template <class Field>
///   TENAX_HD void operator()(const Field& u, double& u_next) const {
///     u_next = u(0, 0) + c * (u(-1, 0) + u(1, 0) + u(0, -1) + u(0, 1) - 4 * u(0, 0));
///   }
/// };
/// ```
/// `u(d0, d1)` is the value of the input at the point offset by (d0, d1) from the one being
/// computed (axis 0 first; one offset per axis of the grid, each within the ghost width). The
/// offset's boundary rule is applied by the neighbourhood, never by the kernel: along the axes
/// split over the ranks (axis 0 always; axes 1 and 2 when split) the ghosts hold it (the grid's
/// halo exchange fills them), along the axes held whole the neighbourhood resolves it (periodic:
/// wraps around; Neumann: mirrors about the boundary face, so the point -1 reads 0 and n reads n -
/// 1; Dirichlet: reads the boundary's value). Points far from an edge get a neighbourhood of
/// another type that reads memory directly, so the bulk of the grid runs without boundary tests;
/// that is why the call operator is a template. Both types call the same operator, so every point's
/// arithmetic is the kernel's own expression, and the CPU result is the oracle for the GPU's (the
/// CUDA code is compiled with --fmad=false, so the same IEEE operations are rounded the same way).
///
/// A kernel that needs its point's coordinates (a coefficient that varies in space) takes a
/// GridPoint first: `operator()(const GridPoint& p, const Field& u, double& out)`, p[0] the row.
///
/// The kernel must be a pure function of its inputs: no state it writes, no reads outside the
/// ghost width, no output that is also an input (the outputs are separate arrays or buffers).
///
/// Devices: on the CPU the rows are split over CpuContext's threads (each chunk compiled a second
/// time for AVX2 where the CPU has it, the same bits); on CUDA the kernel runs in a CUDA grid on
/// the device's stream when the file that instantiates it is compiled by nvcc (a .cu file, or a
/// source with LANGUAGE CUDA), which includes tenax/kernels/cuda/grid_kernel.cuh from here.
/// Compiled by another compiler, a CUDA field is refused with a NotCompiledError saying so; a
/// CPU-only program needs no CUDA at all.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "tenax/core/context.hpp"
#include "tenax/core/device.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/host_device.hpp"
#include "tenax/kernels/detail/cpu_simd.hpp"

namespace tenax::kernels {

/// What a neighbour outside the grid along an axis reads.
enum class BoundaryKind : std::uint8_t {
  periodic,   ///< the point on the other side: -1 reads n - 1, n reads 0
  dirichlet,  ///< a fixed value (the boundary's `value`)
  neumann,    ///< the mirror image about the boundary face (zero normal derivative): -1 - k
              ///< reads k, n + k reads n - 1 - k
};

/// The most axes a grid has.
inline constexpr int kMaxGridDims = 3;

/// How one rank stores each field of a structured grid, as the kernels see it. The rank holds a
/// block of the grid: `extent[a]` consecutive points of axis a from global index `first[a]` (of
/// `whole[a]`). A field is a contiguous row-major array whose first
/// (ghost + extent[0] + ghost) * extent[1] * extent[2] elements are the block's rows with `ghost`
/// rows of axis 0 on each side (the absent axes of a 1-D or 2-D grid have extent 1): the
/// neighbours' rows or the boundary's. Each other axis a that is split over the ranks
/// (`split[a]`) has its ghost layers after that, from element side_offset(a): 2 ghost layers
/// (layer l < ghost holds index l - ghost along the axis, layer l >= ghost index
/// extent[a] + l - ghost), each over the stored range of the lower axes (their ghosts included,
/// so that corners are there: stored(b) points of axis b < a) and the block's points of the
/// higher axes. `kind`/`value` give the rule of every axis (the neighbourhood applies it along
/// the axes held whole; the ghosts hold it along the split ones). A plain value type, copied
/// into the device code.
struct GridGeometry {
  int dims = 1;                                     ///< axes of the grid, 1..3
  std::int64_t extent[kMaxGridDims] = {0, 1, 1};    ///< this rank's points along each axis
  int ghost = 1;                                    ///< ghost layers on each side of a split axis
  std::int64_t first[kMaxGridDims] = {};            ///< global index of the block's first point
  std::int64_t whole[kMaxGridDims] = {0, 1, 1};     ///< the grid's points along each axis
  bool split[kMaxGridDims] = {true, false, false};  ///< whether the axis has ghost layers
  BoundaryKind kind[kMaxGridDims] = {};             ///< the rule of each axis
  double value[kMaxGridDims] = {};                  ///< Dirichlet values per axis

  /// Elements of one row of axis 0 (extent[1] * extent[2]).
  [[nodiscard]] TENAX_HD std::int64_t row_elements() const { return extent[1] * extent[2]; }
  /// Points of `axis` in storage: the block's, and its ghosts when the axis is split.
  [[nodiscard]] TENAX_HD std::int64_t stored(int axis) const {
    return extent[axis] + (split[axis] ? 2 * ghost : 0);
  }
  /// Elements of the rows in storage (the block's and the ghost rows).
  [[nodiscard]] TENAX_HD std::int64_t row_storage() const { return stored(0) * row_elements(); }
  /// Elements of one ghost layer of axis 1 or 2 (see the struct).
  [[nodiscard]] TENAX_HD std::int64_t layer_elements(int axis) const {
    return axis == 1 ? stored(0) * extent[2] : stored(0) * stored(1);
  }
  /// Elements of the ghost layers of axis 1 or 2 (0 unless split).
  [[nodiscard]] TENAX_HD std::int64_t side_storage(int axis) const {
    return split[axis] ? 2 * std::int64_t{ghost} * layer_elements(axis) : 0;
  }
  /// Where the ghost layers of axis 1 or 2 start in a field's storage.
  [[nodiscard]] TENAX_HD std::int64_t side_offset(int axis) const {
    return row_storage() + (axis == 2 ? side_storage(1) : 0);
  }
  /// Elements of a field's storage.
  [[nodiscard]] TENAX_HD std::int64_t storage() const {
    return row_storage() + side_storage(1) + side_storage(2);
  }
};

/// The neighbourhood of a point far enough from the edges of axes 1 and 2 that every offset
/// within the ghost width is inside the array: reads memory directly. `kDims` is the grid's axes
/// when the sweep knows it at compile time (2: neighbours along axis 1 are adjacent elements, a
/// constant the compiler sees, so the interior run's loads along a row are plain vector loads and
/// not gathers), 3 otherwise (`line` says how far apart they are).
template <class T, int kDims = 3>
struct InteriorNeighbours {
  const T* center;    ///< the point itself
  std::int64_t row;   ///< elements between rows of axis 0
  std::int64_t line;  ///< elements between points of axis 1 (1 in a 2-D grid)

  /// The value at offset d0 along axis 0 (1-D grids).
  [[nodiscard]] TENAX_HD T operator()(int d0) const { return center[d0 * row]; }
  /// The value at offset (d0, d1) (2-D grids).
  [[nodiscard]] TENAX_HD T operator()(int d0, int d1) const {
    return center[d0 * row + d1 * (kDims == 2 ? std::int64_t{1} : line)];
  }
  /// The value at offset (d0, d1, d2) (3-D grids).
  [[nodiscard]] TENAX_HD T operator()(int d0, int d1, int d2) const {
    return center[d0 * row + d1 * line + d2];
  }
};

/// Maps index `j` of an axis of `n` points to the point it reads under `kind`; false when it reads
/// the Dirichlet value instead. `j` is within one ghost width (<= n) of the axis.
[[nodiscard]] TENAX_HD inline bool resolve_boundary(std::int64_t& j, std::int64_t n,
                                                    BoundaryKind kind) {
  if (j >= 0 && j < n) return true;
  switch (kind) {
    case BoundaryKind::periodic:
      j = j < 0 ? j + n : j - n;
      return true;
    case BoundaryKind::neumann:
      j = j < 0 ? -1 - j : 2 * n - 1 - j;
      return true;
    case BoundaryKind::dirichlet:
    default:
      return false;
  }
}

/// The neighbourhood of a point near an edge of axis 1 or 2 (of the grid, or of this rank's block
/// along a split axis). A neighbour outside the grid along several axes follows the rule of the
/// highest of them first (so a corner between two Dirichlet boundaries reads the value of the
/// higher axis); the halo exchange fills the ghosts in the same order, which is why the result
/// does not depend on how the grid is split.
template <class T>
struct EdgeNeighbours {
  const T* field;                ///< the field's storage (element 0: ghost row 0)
  const GridGeometry* geometry;  ///< the block's geometry
  std::int64_t i0;               ///< the point's index along axis 0 (in this rank's block)
  std::int64_t i1;               ///< along axis 1
  std::int64_t i2;               ///< along axis 2

  /// The value at offset d0 along axis 0 (1-D grids).
  [[nodiscard]] TENAX_HD T operator()(int d0) const { return at(d0, i1, i2); }
  /// The value at offset (d0, d1), the boundary rule of axis 1 applied (2-D grids).
  [[nodiscard]] TENAX_HD T operator()(int d0, int d1) const { return at(d0, i1 + d1, i2); }
  /// The value at offset (d0, d1, d2), the rules of axes 1 and 2 applied (3-D grids).
  [[nodiscard]] TENAX_HD T operator()(int d0, int d1, int d2) const {
    return at(d0, i1 + d1, i2 + d2);
  }

 private:
  // Along split axis `a`, whether index j (this block's) is beyond the block, and so read from the
  // ghost layers; false with `dirichlet` set when it lies outside a Dirichlet boundary.
  [[nodiscard]] TENAX_HD bool beyond(int a, std::int64_t j, bool& dirichlet) const {
    const GridGeometry& g = *geometry;
    if (j >= 0 && j < g.extent[a]) return false;
    const std::int64_t global = g.first[a] + j;
    dirichlet = g.kind[a] == BoundaryKind::dirichlet && (global < 0 || global >= g.whole[a]);
    return !dirichlet;
  }

  [[nodiscard]] TENAX_HD T at(int d0, std::int64_t j1, std::int64_t j2) const {
    const GridGeometry& g = *geometry;
    // Axes from the highest down: an axis held whole applies its rule here; a split axis reads a
    // neighbour beyond the block from its ghost layers (which hold the lower axes' ghosts too).
    bool dirichlet = false;
    bool side2 = false;
    if (g.split[2]) {
      side2 = beyond(2, j2, dirichlet);
      if (dirichlet) return static_cast<T>(g.value[2]);
    } else if (!resolve_boundary(j2, g.extent[2], g.kind[2])) {
      return static_cast<T>(g.value[2]);
    }
    bool side1 = false;
    if (g.split[1]) {
      side1 = beyond(1, j1, dirichlet);
      if (dirichlet) return static_cast<T>(g.value[1]);
    } else if (!resolve_boundary(j1, g.extent[1], g.kind[1])) {
      return static_cast<T>(g.value[1]);
    }
    const std::int64_t j0 = i0 + d0 + g.ghost;  // storage row
    const std::int64_t s1 = j1 + (g.split[1] ? g.ghost : 0);
    if (side2) {
      const std::int64_t layer = j2 < 0 ? j2 + g.ghost : j2 - g.extent[2] + g.ghost;
      return field[g.side_offset(2) + layer * g.layer_elements(2) + j0 * g.stored(1) + s1];
    }
    if (side1) {
      const std::int64_t layer = j1 < 0 ? j1 + g.ghost : j1 - g.extent[1] + g.ghost;
      return field[g.side_offset(1) + layer * g.layer_elements(1) + j0 * g.extent[2] + j2];
    }
    return field[j0 * g.row_elements() + j1 * g.extent[2] + j2];
  }
};

/// The point a kernel computes, by its global index along each axis (axis 0 first; 0 for the
/// axes the grid lacks): the same on any number of ranks. A kernel that wants it takes it as its
/// first argument, before the neighbourhoods: `operator()(const GridPoint& p, const Field& u,
/// double& out)` (a coefficient that varies in space, a source term); one that does not is called
/// without it.
struct GridPoint {
  std::int64_t index[kMaxGridDims] = {};  ///< the global index along each axis

  /// The index along `axis`.
  [[nodiscard]] TENAX_HD std::int64_t operator[](int axis) const { return index[axis]; }
};

namespace detail {

/// X, whatever the index: to repeat a type over a pack of indices.
template <std::size_t, class X>
using Repeat = X;

/// Whether `Kernel` takes the GridPoint before its N neighbourhoods (of type A) and M outputs.
template <class Kernel, class A, class T, std::size_t... I, std::size_t... J>
TENAX_HD constexpr bool takes_point(std::index_sequence<I...>, std::index_sequence<J...>) {
  return std::is_invocable_v<const Kernel&, const GridPoint&, Repeat<I, const A&>...,
                             Repeat<J, T&>...>;
}

/// One sweep of a kernel over rows of a rank's block: N input fields (ghosted storage, as
/// GridGeometry says) and M outputs, output k's element (y, i1, i2) at
/// out[k][(y - out_row0) * row_elements + i1 * extent[2] + i2] (a ghosted field: out_row0 =
/// -ghost; a buffer of rows starting at row r: out_row0 = r).
template <class T, int N, int M, class Kernel>
struct GridSweep {
  GridGeometry geometry;
  const T* in[N];
  T* out[M];
  std::int64_t out_row0;
  Kernel kernel;
  /// Whether the CPU's interior runs ask for the cache lines ahead of them (see
  /// kPrefetchAboveBytes).
  bool prefetch = false;

  /// The storage index of point (y, i1, i2) of an input.
  [[nodiscard]] TENAX_HD std::int64_t input_index(std::int64_t y, std::int64_t i1,
                                                  std::int64_t i2) const {
    return (y + geometry.ghost) * geometry.row_elements() + i1 * geometry.extent[2] + i2;
  }
  [[nodiscard]] TENAX_HD std::int64_t output_index(std::int64_t y, std::int64_t i1,
                                                   std::int64_t i2) const {
    return (y - out_row0) * geometry.row_elements() + i1 * geometry.extent[2] + i2;
  }
  /// Whether every offset within the ghost width of (i1, i2) stays inside axes 1 and 2.
  [[nodiscard]] TENAX_HD bool interior(std::int64_t i1, std::int64_t i2) const {
    const std::int64_t g = geometry.ghost;
    const bool inside1 = geometry.dims < 2 || (i1 >= g && i1 + g < geometry.extent[1]);
    const bool inside2 = geometry.dims < 3 || (i2 >= g && i2 + g < geometry.extent[2]);
    return inside1 && inside2;
  }

  /// The GridPoint of local point (y, i1, i2).
  [[nodiscard]] TENAX_HD GridPoint global_point(std::int64_t y, std::int64_t i1,
                                                std::int64_t i2) const {
    return GridPoint{{geometry.first[0] + y, geometry.first[1] + i1, geometry.first[2] + i2}};
  }

  template <int kDims, std::size_t... I, std::size_t... J>
  TENAX_HD void call_interior(std::index_sequence<I...> in_seq, std::index_sequence<J...> out_seq,
                              std::int64_t at, std::int64_t to, std::int64_t y, std::int64_t i1,
                              std::int64_t i2) const {
    const std::int64_t line = geometry.dims == 3 ? geometry.extent[2] : 1;
    using Near = InteriorNeighbours<T, kDims>;
    if constexpr (takes_point<Kernel, Near, T>(in_seq, out_seq)) {
      kernel(global_point(y, i1, i2), Near{in[I] + at, geometry.row_elements(), line}...,
             out[J][to]...);
    } else {
      kernel(Near{in[I] + at, geometry.row_elements(), line}..., out[J][to]...);
    }
  }

  /// Points [x_begin, x_end) of the line starting at storage index `at` (inputs) and `to`
  /// (outputs), every one of them interior: a branch-free loop over local copies of the kernel
  /// and the pointers (the outputs' stores then cannot alias them, so they stay in registers), the
  /// neighbours along the line adjacent elements (kDims 2) or `line` apart (kDims 3). The run is
  /// cut where the outputs reach a 64-byte boundary (when they all reach it at the same point):
  /// the vector stores after the cut then fill whole cache lines, which the CPU writes without
  /// reading them first (a 2-D row of a ghosted field starts one point after a line boundary).
  template <int kDims, std::size_t... I, std::size_t... J>
  void interior_run(std::index_sequence<I...> in_seq, std::index_sequence<J...> out_seq,
                    std::int64_t at, std::int64_t to, std::int64_t y, std::int64_t i1,
                    std::int64_t x_begin, std::int64_t x_end) const {
    const Kernel k = kernel;
    const std::int64_t row = geometry.row_elements();
    const std::int64_t line = kDims == 3 ? geometry.extent[2] : 1;
    const T* const src[N] = {in[I]...};
    T* const dst[M] = {out[J]...};
    using Near = InteriorNeighbours<T, kDims>;
    const std::int64_t lead = at + std::int64_t{geometry.ghost} * row;  // last row read
    const auto run = [&](std::int64_t x0, std::int64_t x1) {
      for (std::int64_t c0 = x0; c0 < x1; c0 += kRunChunk) {
        const std::int64_t c1 = std::min(x1, c0 + kRunChunk);
        if (prefetch && c0 + kPrefetchAhead < x1) {
          for (std::int64_t e = 0; e < c1 - c0; e += kLinePoints) {
            (__builtin_prefetch(src[I] + lead + c0 + kPrefetchAhead + e, 0, 3), ...);
            (__builtin_prefetch(dst[J] + to + c0 + kPrefetchAhead + e, 1, 3), ...);
          }
        }
        // Outputs never alias inputs (apply_stencil checks it; the in-place sweep writes
        // buffers): the loop carries no dependence, which lets the compiler vectorise it.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC ivdep
#endif
        for (std::int64_t x = c0; x < c1; ++x) {
          if constexpr (takes_point<Kernel, Near, T>(in_seq, out_seq)) {
            k(global_point(y, kDims == 3 ? i1 : x, kDims == 3 ? x : 0),
              Near{src[I] + at + x, row, line}..., dst[J][to + x]...);
          } else {
            k(Near{src[I] + at + x, row, line}..., dst[J][to + x]...);
          }
        }
      }
    };
    const std::int64_t cut = std::min(x_end, x_begin + points_to_cache_line(dst, to + x_begin));
    run(x_begin, cut);
    run(cut, x_end);
  }

  /// An interior run goes in chunks of this many points (512 bytes); where `prefetch` is set,
  /// each asks first for the cache lines kPrefetchAhead points further on: of the last input row
  /// it reads and of the outputs (a prefetch never faults and never changes a result; it stays
  /// within the run).
  static constexpr std::int64_t kRunChunk = std::max<std::int64_t>(1, 512 / sizeof(T));
  static constexpr std::int64_t kPrefetchAhead = std::max<std::int64_t>(1, 2048 / sizeof(T));
  static constexpr std::int64_t kLinePoints = std::max<std::int64_t>(1, 64 / sizeof(T));

  /// Points from dst[k] + offset until every output is at a 64-byte boundary; 0 when they are
  /// not all the same distance from one.
  [[nodiscard]] static std::int64_t points_to_cache_line(T* const (&dst)[M], std::int64_t offset) {
    constexpr std::uintptr_t kLine = 64;
    if constexpr (kLine % sizeof(T) != 0) {
      return 0;
    } else {
      const auto bytes_to_line = [&](const T* p) {
        return (kLine - reinterpret_cast<std::uintptr_t>(p + offset) % kLine) % kLine;
      };
      const std::uintptr_t bytes = bytes_to_line(dst[0]);
      for (int k = 1; k < M; ++k) {
        if (bytes_to_line(dst[k]) != bytes) return 0;
      }
      return bytes % sizeof(T) == 0 ? static_cast<std::int64_t>(bytes / sizeof(T)) : 0;
    }
  }

  template <std::size_t... I, std::size_t... J>
  TENAX_HD void call_edge(std::index_sequence<I...> in_seq, std::index_sequence<J...> out_seq,
                          std::int64_t y, std::int64_t i1, std::int64_t i2, std::int64_t to) const {
    if constexpr (takes_point<Kernel, EdgeNeighbours<T>, T>(in_seq, out_seq)) {
      kernel(global_point(y, i1, i2), EdgeNeighbours<T>{in[I], &geometry, y, i1, i2}...,
             out[J][to]...);
    } else {
      kernel(EdgeNeighbours<T>{in[I], &geometry, y, i1, i2}..., out[J][to]...);
    }
  }

  /// The point (y, i1, i2), with the neighbourhood its position calls for.
  TENAX_HD void point(std::int64_t y, std::int64_t i1, std::int64_t i2) const {
    if (interior(i1, i2)) {
      if (geometry.dims == 2) {
        call_interior<2>(std::make_index_sequence<N>{}, std::make_index_sequence<M>{},
                         input_index(y, i1, i2), output_index(y, i1, i2), y, i1, i2);
      } else {
        call_interior<3>(std::make_index_sequence<N>{}, std::make_index_sequence<M>{},
                         input_index(y, i1, i2), output_index(y, i1, i2), y, i1, i2);
      }
    } else {
      call_edge(std::make_index_sequence<N>{}, std::make_index_sequence<M>{}, y, i1, i2,
                output_index(y, i1, i2));
    }
  }

  /// Every point of the lines [begin, end) (a line: the points of one (y, i1) pair along the last
  /// axis; in a 1-D grid a line is a point, in a 2-D grid a row): the edge points with the edge
  /// neighbourhood, the run between them in a branch-free loop.
  void lines(std::int64_t begin, std::int64_t end) const {
    const std::int64_t g = geometry.ghost;
    const int last = geometry.dims - 1;
    const std::int64_t lines_per_row = geometry.dims == 3 ? geometry.extent[1] : 1;
    const std::int64_t n = last == 0 ? 1 : geometry.extent[last];
    for (std::int64_t l = begin; l < end; ++l) {
      const std::int64_t y = l / lines_per_row;
      const std::int64_t i1 = geometry.dims == 3 ? l % lines_per_row : 0;
      if (last == 0) {
        point(y, 0, 0);
        continue;
      }
      // A 3-D line near the edge of axis 1, or a line too short for an interior run.
      const bool edge_line = geometry.dims == 3 && (i1 < g || i1 + g >= geometry.extent[1]);
      if (edge_line || n <= 2 * g) {
        for (std::int64_t x = 0; x < n; ++x) {
          geometry.dims == 3 ? point(y, i1, x) : point(y, x, 0);
        }
        continue;
      }
      for (std::int64_t x = 0; x < g; ++x) geometry.dims == 3 ? point(y, i1, x) : point(y, x, 0);
      const std::int64_t at = geometry.dims == 3 ? input_index(y, i1, 0) : input_index(y, 0, 0);
      const std::int64_t to = geometry.dims == 3 ? output_index(y, i1, 0) : output_index(y, 0, 0);
      if (geometry.dims == 2) {
        interior_run<2>(std::make_index_sequence<N>{}, std::make_index_sequence<M>{}, at, to, y, i1,
                        g, n - g);
      } else {
        interior_run<3>(std::make_index_sequence<N>{}, std::make_index_sequence<M>{}, at, to, y, i1,
                        g, n - g);
      }
      for (std::int64_t x = n - g; x < n; ++x) {
        geometry.dims == 3 ? point(y, i1, x) : point(y, x, 0);
      }
    }
  }
};

// The CPU copies of a sweep: a baseline one and, on x86-64, one for AVX2 and (under GCC) one for
// AVX-512 chosen at run time (the same bits: lane-wise IEEE operations, no contraction; AVX-512
// has fused multiply-adds, so its copy is compiled with contraction off whatever the including
// program's setting, and clang, which contracts each expression as it is written, gets no such
// copy). All are flattened (the kernel inlined) and, under GCC, vectorised with the dynamic cost
// model whatever the including program's level (-O2's very cheap model refuses the interior run's
// loop: its trip count is not known), so a test built at -O1 checks the vectorised code a program
// runs. The AVX-512 copy uses 512-bit vectors: a store then fills a whole cache line, which
// Intel's CPUs write without first reading it (with the runs cut at line boundaries, 1.54 -> 1.17
// ms per 1024-squared Gray-Scott step on one core of a Xeon, bench/RESULTS.md).
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDA_ARCH__)
#define TENAX_GRID_SWEEP_ATTRIBUTES \
  flatten, optimize("-ftree-vectorize", "-fvect-cost-model=dynamic")
#elif defined(__GNUC__) && !defined(__CUDA_ARCH__)
#define TENAX_GRID_SWEEP_ATTRIBUTES flatten
#endif

#if defined(TENAX_GRID_SWEEP_ATTRIBUTES)
template <class Sweep>
__attribute__((TENAX_GRID_SWEEP_ATTRIBUTES)) void sweep_lines_baseline(const Sweep& sweep,
                                                                       std::int64_t begin,
                                                                       std::int64_t end) {
  sweep.lines(begin, end);
}
#if defined(__x86_64__)
template <class Sweep>
__attribute__((target("avx2"), TENAX_GRID_SWEEP_ATTRIBUTES)) void sweep_lines_avx2(
    const Sweep& sweep, std::int64_t begin, std::int64_t end) {
  sweep.lines(begin, end);
}
#if !defined(__clang__)
#define TENAX_GRID_SWEEP_AVX512 1
template <class Sweep>
__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,prefer-vector-width=512"), flatten,
               optimize("-ftree-vectorize", "-fvect-cost-model=dynamic", "-ffp-contract=off"))) void
sweep_lines_avx512(const Sweep& sweep, std::int64_t begin, std::int64_t end) {
  sweep.lines(begin, end);
}
#endif
#endif
#endif

/// The fields' bytes (inputs and outputs together) above which a CPU sweep asks for the cache
/// lines ahead of its interior runs. The hardware prefetchers alone leave a core below its
/// streaming rate on a large grid, and the hints cost time where the fields stay in the caches: on
/// a 2-core Xeon, a 4096-squared Gray-Scott step (512 MiB of fields) took 16.3 ms with them and
/// 20.5 ms without, a 1024-squared one (32 MiB) 0.75 and 0.68 ms (bench/RESULTS.md).
inline constexpr double kPrefetchAboveBytes = 64.0 * 1024 * 1024;

/// Lines per CPU chunk below which a worker thread is not worth waking: ~32 Ki points.
[[nodiscard]] inline std::int64_t min_lines_per_chunk(std::int64_t points_per_line) {
  return std::max<std::int64_t>(
      1, (std::int64_t{1} << 15) / std::max<std::int64_t>(points_per_line, 1));
}

/// The sweep over rows [row_begin, row_end) on the CPU's threads.
template <class Sweep>
void sweep_on_cpu(const Sweep& sweep, std::int64_t row_begin, std::int64_t row_end) {
  const GridGeometry& g = sweep.geometry;
  const std::int64_t lines_per_row = g.dims == 3 ? g.extent[1] : 1;
  const std::int64_t points_per_line = g.dims == 1 ? 1 : g.extent[g.dims - 1];
  CpuContext::instance().parallel_for(row_begin * lines_per_row, row_end * lines_per_row,
                                      min_lines_per_chunk(points_per_line),
                                      [&sweep](std::int64_t begin, std::int64_t end) {
#if defined(TENAX_GRID_SWEEP_AVX512)
                                        if (cpu::cpu_simd().avx512) {
                                          sweep_lines_avx512(sweep, begin, end);
                                          return;
                                        }
#endif
#if defined(TENAX_GRID_SWEEP_ATTRIBUTES) && defined(__x86_64__)
                                        if (cpu::cpu_simd().avx2) {
                                          sweep_lines_avx2(sweep, begin, end);
                                          return;
                                        }
#endif
#if defined(TENAX_GRID_SWEEP_ATTRIBUTES)
                                        sweep_lines_baseline(sweep, begin, end);
#else
                                        sweep.lines(begin, end);
#endif
                                      });
}

}  // namespace detail
}  // namespace tenax::kernels

#if defined(__CUDACC__)
#include "tenax/kernels/cuda/grid_kernel.cuh"
#endif

namespace tenax::kernels {

/// Runs `kernel` over the points of rows [row_begin, row_end) of this rank's block (rows counted
/// from the block's first, 0 <= row_begin <= row_end <= geometry.extent[0]), reading the N
/// inputs (ghosted fields, as GridGeometry describes, ghost rows filled) and writing the M
/// outputs (see detail::GridSweep for `out_row0`). All pointers are on `device`. On the CPU it
/// returns when done; on CUDA the work is queued on the device's stream (synchronize it, or
/// enqueue what reads the outputs on that stream, as tenax's ops do). This is the engine behind
/// runtime::apply_stencil, which checks the fields against a Grid first; call that.
template <int N, int M, class T, class Kernel>
void run_grid_kernel(Device device, const GridGeometry& geometry, std::int64_t row_begin,
                     std::int64_t row_end, const Kernel& kernel, const T* const (&in)[N],
                     T* const (&out)[M], std::int64_t out_row0) {
  static_assert(N >= 1 && M >= 1, "a grid kernel reads one field at least and writes one");
  detail::GridSweep<T, N, M, Kernel> sweep{geometry, {}, {}, out_row0, kernel};
  for (int k = 0; k < N; ++k) sweep.in[k] = in[k];
  for (int k = 0; k < M; ++k) sweep.out[k] = out[k];
  if (row_end <= row_begin) return;
  if (device.is_cpu()) {
    sweep.prefetch =
        static_cast<double>(geometry.storage()) * (N + M) * sizeof(T) > detail::kPrefetchAboveBytes;
    detail::sweep_on_cpu(sweep, row_begin, row_end);
    return;
  }
#if defined(__CUDACC__)
  cuda::detail::sweep_on_cuda(device, sweep, row_begin, row_end);
#else
  throw NotCompiledError(
      "a grid kernel was asked to run on " + to_string(device) +
          " from a file not compiled by nvcc, so no CUDA code of the kernel exists",
      "compile the file that calls apply_stencil (or the example) with nvcc: name it .cu, or set "
      "its LANGUAGE to CUDA in CMake; or run with --device cpu");
#endif
}

}  // namespace tenax::kernels
