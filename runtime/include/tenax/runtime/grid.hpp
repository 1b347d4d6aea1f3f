/// Grid: a structured grid in 1, 2 or 3 dimensions spread over the ranks of a communicator, with a
/// boundary rule per axis and ghost rows that its halo exchange fills. The ranks live in the
/// data: a kernel run over a grid's fields (stencil.hpp) sees every neighbour within the ghost
/// width, whatever the number of ranks, so its result is the same bits on 1 rank or on 8.
/// @file
/// Layout. The ranks form a process grid over the axes (GridOptions::ranks, or chosen by the grid:
/// the split that exchanges the fewest ghost points, slabs of rows on a tie). Along each axis the
/// points go to the ranks in consecutive blocks, as evenly as they go (rank coordinate c of P
/// holds [n c / P, n (c + 1) / P)); rank r sits at coordinates ((r / P2) / P1, (r / P2) % P1,
/// r % P2). A *field* is one rank's part of a function on the grid, stored with its ghosts: a
/// contiguous row-major tensor whose first g + rows + g rows of axis 0 hold the block's rows and g
/// ghost rows on each side, followed by the ghost layers of the other split axes
/// (field_shape(); g the ghost width; kernels::GridGeometry gives the layout). Its owned rows
/// [g, g + rows) are a contiguous view (owned()), so the checkpoint stores exactly the owned
/// block (shard()) and a run resumes on another number of ranks or another split. Points are
/// indexed axis 0 first: a 2-D grid's field is [y][x].
///
/// Boundaries, per axis: periodic (wraps around), Dirichlet (a fixed value outside) or Neumann
/// (the mirror image about the boundary face: zero normal derivative). Along a split axis the
/// ghosts hold the rule's values (exchange() fills them from the ranks that own the points, or
/// from this rank, or with the Dirichlet value); along an axis held whole the kernel's
/// neighbourhood applies it (kernels/grid_kernel.hpp). A neighbour outside the grid along several
/// axes follows the rule of the highest axis first: the corner between two Dirichlet boundaries
/// reads the higher axis' value. The result of a kernel is the same bits on any number of ranks
/// and any split.
///
/// Contract: the constructor and every exchange, gather, scatter and field I/O call are
/// collective (every rank, the same order). Fields may live on any device the communicator
/// accepts (MPI stages GPU memory through the host; NCCL moves it directly). Not thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "tenax/core/device.hpp"
#include "tenax/core/dtype.hpp"
#include "tenax/core/shape.hpp"
#include "tenax/core/strided_view.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/io/shard_layout.hpp"
#include "tenax/io/state_file.hpp"
#include "tenax/kernels/grid_kernel.hpp"
#include "tenax/runtime/communicator.hpp"

namespace tenax::runtime {

using kernels::BoundaryKind;

/// The rule of one axis' two ends (see the file).
struct Boundary {
  BoundaryKind kind = BoundaryKind::periodic;  ///< the rule
  double value = 0.0;                          ///< what a Dirichlet boundary reads (finite)

  /// Wraps around.
  [[nodiscard]] static constexpr Boundary periodic() noexcept { return {}; }
  /// Reads `value` outside the grid.
  [[nodiscard]] static constexpr Boundary dirichlet(double value = 0.0) noexcept {
    return {BoundaryKind::dirichlet, value};
  }
  /// Mirrors about the boundary face.
  [[nodiscard]] static constexpr Boundary neumann() noexcept {
    return {BoundaryKind::neumann, 0.0};
  }

  /// Same rule and value.
  friend bool operator==(const Boundary&, const Boundary&) = default;
};

/// "periodic", "dirichlet(0.5)" or "neumann".
[[nodiscard]] std::string to_string(const Boundary& boundary);

/// What a Grid is: its points per axis, their boundaries and the ghost width.
struct GridOptions {
  /// Points along each axis, axis 0 first (1 to 3 axes, each >= 1; axis 0 at least one row per
  /// rank).
  std::vector<std::int64_t> extents;
  /// One rule per axis, or one for every axis.
  std::vector<Boundary> boundaries = {Boundary::periodic()};
  /// Neighbours a kernel may read on each side along each axis, in [0, 8] and at most every
  /// extent (0: point kernels only).
  int ghost_width = 1;
  /// Ranks along each axis (the process grid: their product is the communicator's size, each at
  /// most the axis' points), or empty: chosen by the grid (see the file).
  std::vector<int> ranks;
};

/// The grid of one job over the ranks of a communicator (see the file). Keeps a reference to the
/// communicator, which must outlive it.
class Grid {
 public:
  /// Collective: checks `options` (UsageError naming the value, the expectation and the fix) and
  /// that every rank was given the same (UsageError on every rank otherwise).
  Grid(Communicator& comm, GridOptions options);

  /// The communicator the grid is spread over.
  [[nodiscard]] Communicator& comm() const noexcept { return *comm_; }
  /// Axes, 1 to 3.
  [[nodiscard]] int dims() const noexcept { return static_cast<int>(extents_.size()); }
  /// Points along each axis.
  [[nodiscard]] const std::vector<std::int64_t>& extents() const noexcept { return extents_; }
  /// The rule of `axis` (UsageError for an axis the grid does not have).
  [[nodiscard]] const Boundary& boundary(int axis) const;
  /// Ghost rows on each side of this rank's rows.
  [[nodiscard]] int ghost_width() const noexcept { return ghost_; }

  /// The ranks along `axis` (1 for an axis held whole; UsageError for an axis the grid lacks).
  [[nodiscard]] int ranks_along(int axis) const;
  /// This rank's first point along `axis` (global index; 0 for an axis held whole).
  [[nodiscard]] std::int64_t first_index(int axis) const;
  /// This rank's first row of axis 0.
  [[nodiscard]] std::int64_t first_row() const noexcept { return first_row_of(comm_->rank()); }
  /// The rows this rank holds.
  [[nodiscard]] std::int64_t rows() const noexcept { return rows_of(comm_->rank()); }
  /// The first row of axis 0 of any rank's block.
  [[nodiscard]] std::int64_t first_row_of(int rank) const noexcept;
  /// The rows of any rank's block.
  [[nodiscard]] std::int64_t rows_of(int rank) const noexcept;

  /// The whole grid's shape.
  [[nodiscard]] Shape global_shape() const;
  /// This rank's points: its block's extents, [rows(), ...].
  [[nodiscard]] Shape owned_shape() const;
  /// A field's shape: [ghost + rows() + ghost (+ the rows that hold the ghost layers of the other
  /// split axes), the block's other extents].
  [[nodiscard]] Shape field_shape() const;
  /// What the kernels need to know of this rank's fields.
  [[nodiscard]] kernels::GridGeometry geometry() const;

  /// A new field of `dtype` on `device` (from its current memory resource), its owned points
  /// uninitialised and its ghosts zero. The first field of a dtype and device also makes the
  /// small buffer that exchange() packs a block's ghost layers in, so that an exchange takes no
  /// memory (it may run in a step's commit). Throws what allocation throws (OutOfMemoryError).
  [[nodiscard]] Tensor make_field(DType dtype, Device device = Device::cpu()) const;
  /// The owned rows of `field`: a contiguous view, what a checkpoint stores.
  [[nodiscard]] Tensor owned(const Tensor& field) const;
  /// UsageError unless `field` is a field of this grid (shape field_shape()), naming `what`.
  void check_field(const Tensor& field, const std::string& what) const;
  /// This rank's block of a field named `name` in a checkpoint's state (Workload::state_layout):
  /// rows of axis 0, and the block's range of every other split axis.
  [[nodiscard]] io::TensorShard shard(std::string name) const;

  /// Collective: fills the ghosts of `fields` along the split axes, axis 0 first (the boundary
  /// rules; points owned by other ranks are sent and received, this rank's copied, Dirichlet
  /// ghosts filled). Every field is a field of this grid (check_field).
  void exchange(std::initializer_list<Tensor> fields) const;
  /// The same for a vector of fields.
  void exchange(const std::vector<Tensor>& fields) const;
  /// exchange() in two halves, so that work not reading ghosts (the rows at least the ghost width
  /// from this rank's ends, when only axis 0 is split) runs between them: start_exchange() sends
  /// this rank's rows to the ranks that need them (buffered: it does not wait for them) and fills
  /// the ghost rows it can alone; finish_exchange() receives the rest, then exchanges the ghost
  /// layers of the other split axes in turn (each carries the lower axes' ghosts: the corners).
  /// Both with the same fields.
  void start_exchange(const std::vector<Tensor>& fields) const;
  /// The second half of exchange(): receives the ghost rows other ranks sent, then the other axes.
  void finish_exchange(const std::vector<Tensor>& fields) const;

  /// Collective: the whole of `field` (its owned points from every rank) as a CPU tensor of
  /// global_shape() on rank `root`; an undefined tensor on the other ranks. On one rank, a CPU
  /// field's owned rows themselves (a view: no second copy of the field).
  [[nodiscard]] Tensor gather(const Tensor& field, int root = 0) const;
  /// Collective: `whole` (global_shape(), on rank `root`; ignored elsewhere) into the owned
  /// points of every rank's `field`. UsageError on root for a `whole` of another shape or dtype.
  void scatter(const Tensor& whole, const Tensor& field, int root = 0) const;

  /// Collective: the largest owned value of `field` over every rank (NaN if any is NaN), the same
  /// on every rank. A floating field of this grid (UsageError otherwise).
  [[nodiscard]] double max(const Tensor& field) const;

  /// "256 x 256, periodic, ghost width 1, rows split over 2 ranks" (or "..., split 2 x 2 over 4
  /// ranks" for blocks).
  [[nodiscard]] std::string describe() const;

 private:
  // Ghost layers [slot, slot + count) of a split axis (storage rows of axis 0; layers of the ghost
  // columns of axis 1) from points [from, from + count) of `peer`'s block along that axis (storage
  // rows for axis 0, owned columns for axis 1): a message, or a copy when the peer is this rank,
  // or the Dirichlet value (peer -1).
  struct Transfer {
    int peer = -1;
    std::int64_t index = 0;  // the first ghost's index among the rank's 2 ghost ghosts
    std::int64_t slot = 0;
    std::int64_t from = 0;
    std::int64_t count = 0;
  };
  // The halo plan of one split axis.
  struct AxisPlan {
    std::vector<Transfer> sends;     // this rank's points other ranks need (slot: theirs)
    std::vector<Transfer> receives;  // this rank's ghosts from other ranks
    std::vector<Transfer> locals;    // this rank's ghosts from itself, or Dirichlet (peer -1)
  };
  // The ghosts of `rank` along `axis`, in runs that one message or copy can move.
  [[nodiscard]] std::vector<Transfer> ghost_runs(int rank, int axis) const;
  [[nodiscard]] std::int64_t first_of(int axis, int coordinate) const noexcept;
  [[nodiscard]] int coordinate(int rank, int axis) const noexcept;
  // The rank at `rank`'s coordinates but `coordinate_along` on `axis`.
  [[nodiscard]] int rank_at(int rank, int axis, int coordinate_along) const noexcept;
  void check_fields(const std::vector<Tensor>& fields) const;
  [[nodiscard]] int tag(std::size_t field, int axis, std::int64_t ghost_index) const;
  void start_axis(int axis, const std::vector<Tensor>& fields) const;
  void finish_axis(int axis, const std::vector<Tensor>& fields) const;
  // A field's block rows with their ghost rows, as [g + rows + g, block's n1, n2].
  [[nodiscard]] Tensor stored_rows(const Tensor& field) const;
  // A field's ghost layers of split axis 1 or 2 (GridGeometry says their layout).
  [[nodiscard]] Tensor ghost_layers(const Tensor& field, int axis) const;
  void write_layers(const Tensor& field, int axis, std::int64_t from, std::int64_t count,
                    const StridedView& dst) const;
  // Elements of the largest message of ghost layers of axes 1 and 2 (0 when only axis 0 is split).
  [[nodiscard]] std::int64_t pack_elements() const;
  // A buffer for a message of `count` layers of `axis`: the scratch of the field's dtype and
  // device, or a new tensor for a field that make_field did not make.
  [[nodiscard]] Tensor pack_buffer(const Tensor& field, int axis, std::int64_t count) const;
  [[nodiscard]] Tensor ghosts_of(const Tensor& field, int axis, std::int64_t slot,
                                 std::int64_t count) const;
  // The block of `rank` in a whole field (global_shape()).
  [[nodiscard]] StridedView block_of(const Tensor& whole, int rank) const;

  Communicator* comm_;
  std::vector<std::int64_t> extents_;
  std::vector<Boundary> boundaries_;
  int ghost_ = 1;
  int ranks_[kernels::kMaxGridDims] = {1, 1, 1};  // the process grid
  AxisPlan plans_[kernels::kMaxGridDims];
  mutable std::vector<Tensor> scratch_;  // pack buffers, one per dtype and device of the fields
};

/// Collective: writes the named fields whole (each one dataset at the grid's global shape, e.g.
/// /u and /v of shape [n][n]) to `path` from rank 0, with `attributes` on each dataset and
/// `metadata` at the root: a file for h5py, h5dump or read_fields, the same bytes for any number
/// of ranks. The fields are gathered to rank 0 (its memory holds each whole field in turn).
/// Throws as io::write_state_file on rank 0 (the file is replaced whole or left as it was); the
/// other ranks then throw IoError too, naming rank 0's failure.
void write_fields(const Grid& grid, const std::filesystem::path& path,
                  const std::vector<std::pair<std::string, Tensor>>& fields,
                  const std::vector<std::pair<std::string, double>>& attributes = {},
                  const io::FileMetadata& metadata = {});

/// Collective: reads the named datasets of `path` (written by write_fields, from any number of
/// ranks) into the owned points of the fields. IoError on every rank when rank 0 cannot read the
/// file or a dataset is missing or of another shape or dtype than the grid's field.
void read_fields(const Grid& grid, const std::filesystem::path& path,
                 const std::vector<std::pair<std::string, Tensor>>& fields);

}  // namespace tenax::runtime
