/// Grid: a structured grid in 1, 2 or 3 dimensions spread over the ranks of a communicator, with a
/// boundary rule per axis and ghost rows that its halo exchange fills. The ranks live in the
/// data: a kernel run over a grid's fields (stencil.hpp) sees every neighbour within the ghost
/// width, whatever the number of ranks, so its result is the same bits on 1 rank or on 8.
/// @file
/// Layout. Axis 0 is split over the ranks in consecutive rows, as evenly as they go (rank r holds
/// rows [n0 r / R, n0 (r + 1) / R)); every rank holds all points of the other axes. A *field* is
/// one rank's part of a function on the grid, stored with its ghost rows: a contiguous row-major
/// tensor of shape [g + rows + g, n1, n2] (dimensions as the grid has; g the ghost width), whose
/// owned rows [g, g + rows) are a contiguous view (owned()), so the checkpoint stores exactly the
/// owned rows (shard()) and a run resumes on another number of ranks. Points are indexed axis 0
/// first: a 2-D grid's field is [y][x].
///
/// Boundaries, per axis: periodic (wraps around), Dirichlet (a fixed value outside) or Neumann
/// (the mirror image about the boundary face: zero normal derivative). Along axis 0 the ghost
/// rows hold the rule's values (exchange() fills them from the ranks that own the rows, or from
/// this rank, or with the Dirichlet value); along the other axes the kernel's neighbourhood
/// applies it (kernels/grid_kernel.hpp).
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

  /// This rank's first row of axis 0.
  [[nodiscard]] std::int64_t first_row() const noexcept { return first_row_of(comm_->rank()); }
  /// The rows this rank holds.
  [[nodiscard]] std::int64_t rows() const noexcept { return rows_of(comm_->rank()); }
  /// The first row of any rank.
  [[nodiscard]] std::int64_t first_row_of(int rank) const noexcept;
  /// The rows of any rank.
  [[nodiscard]] std::int64_t rows_of(int rank) const noexcept {
    return first_row_of(rank + 1) - first_row_of(rank);
  }

  /// The whole grid's shape.
  [[nodiscard]] Shape global_shape() const;
  /// This rank's points: [rows(), n1, n2].
  [[nodiscard]] Shape owned_shape() const;
  /// A field's shape: [ghost + rows() + ghost, n1, n2].
  [[nodiscard]] Shape field_shape() const;
  /// What the kernels need to know of this rank's fields.
  [[nodiscard]] kernels::GridGeometry geometry() const;

  /// A new field of `dtype` on `device` (from its current memory resource), its owned points
  /// uninitialised and its ghost rows zero. Throws what allocation throws (OutOfMemoryError).
  [[nodiscard]] Tensor make_field(DType dtype, Device device = Device::cpu()) const;
  /// The owned rows of `field`: a contiguous view, what a checkpoint stores.
  [[nodiscard]] Tensor owned(const Tensor& field) const;
  /// UsageError unless `field` is a field of this grid (shape field_shape()), naming `what`.
  void check_field(const Tensor& field, const std::string& what) const;
  /// This rank's slab of a field named `name` in a checkpoint's state (Workload::state_layout).
  [[nodiscard]] io::TensorShard shard(std::string name) const;

  /// Collective: fills the ghost rows of `fields` (axis 0's boundary rule; rows owned by other
  /// ranks are sent and received, this rank's copied, Dirichlet rows filled). Every field is a
  /// field of this grid (check_field).
  void exchange(std::initializer_list<Tensor> fields) const;
  /// The same for a vector of fields.
  void exchange(const std::vector<Tensor>& fields) const;
  /// exchange() in two halves, so that work not reading ghost rows (the rows at least the ghost
  /// width from this rank's ends) runs between them: start_exchange() sends this rank's rows to
  /// the ranks that need them (buffered: it does not wait for them) and fills the ghosts it can
  /// alone; finish_exchange() receives the rest. Both with the same fields.
  void start_exchange(const std::vector<Tensor>& fields) const;
  /// The second half of exchange(): receives the ghost rows other ranks sent.
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

  /// "256 x 256, periodic, ghost width 1, rows split over 2 ranks".
  [[nodiscard]] std::string describe() const;

 private:
  // Ghost rows [slot, slot + count) of a field's storage from rows [row, row + count) of
  // `peer`'s storage (a message, or a copy when the peer is this rank), or the Dirichlet value
  // (peer -1).
  struct Transfer {
    int peer = -1;
    std::int64_t index = 0;  // the first ghost's index among the rank's 2 ghost ghosts
    std::int64_t slot = 0;
    std::int64_t row = 0;
    std::int64_t count = 0;
  };
  // The ghost rows of `rank`, in runs that one message or copy can move.
  [[nodiscard]] std::vector<Transfer> ghost_runs(int rank) const;
  void check_fields(const std::vector<Tensor>& fields) const;
  [[nodiscard]] int tag(std::size_t field, std::int64_t ghost_index) const;

  Communicator* comm_;
  std::vector<std::int64_t> extents_;
  std::vector<Boundary> boundaries_;
  int ghost_ = 1;
  std::vector<Transfer> sends_;     // this rank's rows other ranks need (slot: theirs)
  std::vector<Transfer> receives_;  // this rank's ghosts from other ranks
  std::vector<Transfer> locals_;    // this rank's ghosts from itself, or Dirichlet (peer -1)
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
