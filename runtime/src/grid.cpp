// Grid: the partition of axis 0, the ghost rows' sources (the halo plan, computed once from the
// partition alone, so no rank asks another what it needs), gather/scatter and field files.
#include "tenax/runtime/grid.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "tenax/core/error.hpp"
#include "tenax/core/profiler.hpp"
#include "tenax/kernels/ops.hpp"

namespace tenax::runtime {
namespace {

constexpr int kMaxGhostWidth = 8;
// Tags of the halo messages: kHaloTag + field * (2 ghost) + ghost slot; of gathers and scatters.
constexpr int kHaloTag = 1 << 24;
constexpr int kGatherTag = (1 << 24) - 2;
constexpr int kScatterTag = (1 << 24) - 1;

std::string axis_name(int axis) { return "axis " + std::to_string(axis); }

// The record every rank compares at construction: the options, in plain bytes.
struct GridRecord {
  std::int64_t dims = 0;
  std::int64_t extents[kernels::kMaxGridDims] = {};
  std::int64_t ghost = 0;
  std::int64_t kinds[kernels::kMaxGridDims] = {};
  double values[kernels::kMaxGridDims] = {};
};

}  // namespace

std::string to_string(const Boundary& boundary) {
  switch (boundary.kind) {
    case BoundaryKind::periodic:
      return "periodic";
    case BoundaryKind::neumann:
      return "neumann";
    case BoundaryKind::dirichlet: {
      std::ostringstream text;
      text.precision(17);
      text << "dirichlet(" << boundary.value << ")";
      return text.str();
    }
  }
  return "unknown boundary";
}

Grid::Grid(Communicator& comm, GridOptions options)
    : comm_(&comm), extents_(std::move(options.extents)), ghost_(options.ghost_width) {
  const int d = static_cast<int>(extents_.size());
  TENAX_EXPECTS(d >= 1 && d <= kernels::kMaxGridDims, UsageError,
                "a grid of " + std::to_string(d) + " axes",
                "give GridOptions::extents 1, 2 or 3 extents (points per axis, axis 0 first)");
  std::int64_t points = 1;
  for (int axis = 0; axis < d; ++axis) {
    const std::int64_t n = extents_[static_cast<std::size_t>(axis)];
    TENAX_EXPECTS(n >= 1, UsageError,
                  "the grid's " + axis_name(axis) + " has " + std::to_string(n) + " points",
                  "give every axis at least one point");
    TENAX_EXPECTS(!__builtin_mul_overflow(points, n, &points) &&
                      points <= std::numeric_limits<std::int64_t>::max() / 16,
                  UsageError, "a grid of more than 2^59 points", "use a smaller grid");
  }
  TENAX_EXPECTS(ghost_ >= 0 && ghost_ <= kMaxGhostWidth, UsageError,
                "ghost width " + std::to_string(ghost_),
                "give GridOptions::ghost_width in [0, " + std::to_string(kMaxGhostWidth) +
                    "]: the neighbours a kernel reads on each side");
  const std::size_t rules = options.boundaries.size();
  TENAX_EXPECTS(rules == 1 || rules == extents_.size(), UsageError,
                std::to_string(rules) + " boundaries for a grid of " + std::to_string(d) + " axes",
                "give one boundary for every axis, or one per axis");
  for (int axis = 0; axis < d; ++axis) {
    const Boundary& b = options.boundaries[rules == 1 ? 0 : static_cast<std::size_t>(axis)];
    TENAX_EXPECTS(b.kind == BoundaryKind::periodic || b.kind == BoundaryKind::dirichlet ||
                      b.kind == BoundaryKind::neumann,
                  UsageError, "an unknown boundary kind on " + axis_name(axis),
                  "use Boundary::periodic(), dirichlet(value) or neumann()");
    TENAX_EXPECTS(
        b.kind != BoundaryKind::dirichlet || std::isfinite(b.value), UsageError,
        "a Dirichlet boundary of value " + std::to_string(b.value) + " on " + axis_name(axis),
        "give a finite boundary value");
    boundaries_.push_back(b.kind == BoundaryKind::dirichlet ? b : Boundary{b.kind, 0.0});
    TENAX_EXPECTS(extents_[static_cast<std::size_t>(axis)] >= ghost_, UsageError,
                  "ghost width " + std::to_string(ghost_) + " on " + axis_name(axis) + " of " +
                      std::to_string(extents_[static_cast<std::size_t>(axis)]) + " points",
                  "use a ghost width no larger than every axis");
  }
  TENAX_EXPECTS(extents_[0] >= comm.size(), UsageError,
                "a grid of " + std::to_string(extents_[0]) + " rows along axis 0 on " +
                    std::to_string(comm.size()) + " ranks",
                "give every rank at least one row: at least as many points along axis 0 as ranks");

  // Every rank must describe the same grid, or the halo plan of one is not the plan of another.
  GridRecord mine;
  mine.dims = d;
  for (int axis = 0; axis < d; ++axis) {
    mine.extents[axis] = extents_[static_cast<std::size_t>(axis)];
    mine.kinds[axis] = static_cast<std::int64_t>(boundaries_[static_cast<std::size_t>(axis)].kind);
    mine.values[axis] = boundaries_[static_cast<std::size_t>(axis)].value;
  }
  mine.ghost = ghost_;
  if (comm.size() > 1) {
    std::vector<GridRecord> all(static_cast<std::size_t>(comm.size()));
    comm.all_gather_bytes(std::as_bytes(std::span(&mine, 1)),
                          std::as_writable_bytes(std::span(all)));
    for (int r = 0; r < comm.size(); ++r) {
      TENAX_EXPECTS(std::memcmp(&all[static_cast<std::size_t>(r)], &all[0], sizeof mine) == 0,
                    UsageError,
                    "rank " + std::to_string(r) +
                        " was given another grid than rank 0 (extents, "
                        "boundaries or ghost width)",
                    "build the Grid from the same settings on every rank");
    }
  }

  // The halo plan: what this rank receives and copies, and what it sends to each other rank.
  for (const Transfer& run : ghost_runs(comm.rank())) {
    (run.peer == comm.rank() || run.peer < 0 ? locals_ : receives_).push_back(run);
  }
  for (int r = 0; r < comm.size(); ++r) {
    if (r == comm.rank()) continue;
    for (Transfer run : ghost_runs(r)) {
      if (run.peer != comm.rank()) continue;
      run.peer = r;  // the receiver, for a send
      sends_.push_back(run);
    }
  }
}

const Boundary& Grid::boundary(int axis) const {
  TENAX_EXPECTS(axis >= 0 && axis < dims(), UsageError,
                axis_name(axis) + " of a grid of " + std::to_string(dims()) + " axes",
                "ask for an axis in [0, dims())");
  return boundaries_[static_cast<std::size_t>(axis)];
}

std::int64_t Grid::first_row_of(int rank) const noexcept {
  const std::int64_t n = extents_[0];
  const std::int64_t size = comm_->size();
  // n * rank / size without overflowing 64 bits.
  return (n / size) * rank + (n % size) * rank / size;
}

Shape Grid::global_shape() const { return Shape(std::span<const std::int64_t>(extents_)); }

Shape Grid::owned_shape() const { return global_shape().with_leading(rows()); }

Shape Grid::field_shape() const {
  return global_shape().with_leading(rows() + 2 * std::int64_t{ghost_});
}

kernels::GridGeometry Grid::geometry() const {
  kernels::GridGeometry g;
  g.dims = dims();
  g.extent[0] = rows();
  for (int axis = 1; axis < dims(); ++axis)
    g.extent[axis] = extents_[static_cast<std::size_t>(axis)];
  g.ghost = ghost_;
  g.first_row = first_row();
  for (int axis = 0; axis < dims(); ++axis) {
    g.kind[axis] = boundaries_[static_cast<std::size_t>(axis)].kind;
    g.value[axis] = boundaries_[static_cast<std::size_t>(axis)].value;
  }
  return g;
}

Tensor Grid::make_field(DType dtype, Device device) const {
  Tensor field = Tensor::empty(field_shape(), dtype, device);
  if (ghost_ > 0) {
    ops::fill(field.slice(0, ghost_), 0.0);
    ops::fill(field.slice(ghost_ + rows(), 2 * ghost_ + rows()), 0.0);
  }
  return field;
}

void Grid::check_field(const Tensor& field, const std::string& what) const {
  TENAX_EXPECTS(field.defined() && field.shape() == field_shape(), UsageError,
                what + " is " + field.describe() + ", not a field of this rank of the grid " +
                    describe() + " (shape " + to_string(field_shape()) + ")",
                "make fields with Grid::make_field (a rank's rows with ghost width rows on each "
                "side)");
}

Tensor Grid::owned(const Tensor& field) const {
  check_field(field, "the field");
  return field.slice(ghost_, ghost_ + rows());
}

io::TensorShard Grid::shard(std::string name) const {
  return {std::move(name), 0, first_row(), first_row() + rows(), extents_[0]};
}

std::vector<Grid::Transfer> Grid::ghost_runs(int rank) const {
  const std::int64_t n = extents_[0];
  const std::int64_t first = first_row_of(rank);
  const std::int64_t rows = rows_of(rank);
  const Boundary& rule = boundaries_[0];
  // The owner of global row j.
  const auto owner = [&](std::int64_t j) {
    int lo = 0;
    int hi = comm_->size() - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (first_row_of(mid) <= j) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  };
  std::vector<Transfer> runs;
  for (std::int64_t slot = 0; slot < 2 * std::int64_t{ghost_}; ++slot) {
    std::int64_t j = slot < ghost_ ? first - ghost_ + slot : first + rows + (slot - ghost_);
    Transfer one;
    one.index = slot;
    one.slot = slot + (slot < ghost_ ? 0 : rows);  // storage row of the ghost
    one.count = 1;
    if (!kernels::resolve_boundary(j, n, rule.kind)) {
      one.peer = -1;
    } else {
      one.peer = owner(j);
      one.row = j - first_row_of(one.peer) + ghost_;  // storage row in the owner's field
    }
    // Joins the previous run when it continues it (same source, the next row).
    if (!runs.empty()) {
      Transfer& last = runs.back();
      if (last.peer == one.peer && last.slot + last.count == one.slot &&
          (one.peer < 0 || last.row + last.count == one.row)) {
        ++last.count;
        continue;
      }
    }
    runs.push_back(one);
  }
  return runs;
}

int Grid::tag(std::size_t field, std::int64_t ghost_index) const {
  return kHaloTag + static_cast<int>(field) * 2 * ghost_ + static_cast<int>(ghost_index);
}

void Grid::check_fields(const std::vector<Tensor>& fields) const {
  for (std::size_t k = 0; k < fields.size(); ++k) {
    check_field(fields[k], "field " + std::to_string(k) + " of the exchange");
  }
}

void Grid::start_exchange(const std::vector<Tensor>& fields) const {
  const profiling::Span span("halo.send", comm_->step());
  check_fields(fields);
  for (std::size_t k = 0; k < fields.size(); ++k) {
    const Tensor& field = fields[k];
    for (const Transfer& send : sends_) {
      // The receiver's ghost index (0 .. 2 ghost - 1) tells the messages of a pair apart.
      comm_->send(field.slice(send.row, send.row + send.count), send.peer, tag(k, send.index));
    }
    for (const Transfer& local : locals_) {
      const Tensor ghosts = field.slice(local.slot, local.slot + local.count);
      if (local.peer < 0) {
        ops::fill(ghosts, boundaries_[0].value);
      } else {
        ops::copy(ghosts, field.slice(local.row, local.row + local.count));
      }
    }
  }
}

void Grid::finish_exchange(const std::vector<Tensor>& fields) const {
  const profiling::Span span("halo.receive", comm_->step());
  for (std::size_t k = 0; k < fields.size(); ++k) {
    for (const Transfer& receive : receives_) {
      comm_->receive(fields[k].slice(receive.slot, receive.slot + receive.count), receive.peer,
                     tag(k, receive.index));
    }
  }
}

void Grid::exchange(const std::vector<Tensor>& fields) const {
  start_exchange(fields);
  finish_exchange(fields);
}

void Grid::exchange(std::initializer_list<Tensor> fields) const {
  exchange(std::vector<Tensor>(fields));
}

Tensor Grid::gather(const Tensor& field, int root) const {
  const Tensor mine = owned(field);
  TENAX_EXPECTS(root >= 0 && root < comm_->size(), UsageError,
                "gather to rank " + std::to_string(root) + " of " + std::to_string(comm_->size()),
                "give a root in [0, ranks)");
  // One rank holds the whole field: its owned rows are it (a view for a CPU field, no copy).
  if (comm_->size() == 1) return mine.to(Device::cpu());
  if (comm_->rank() != root) {
    comm_->send(mine, root, kGatherTag);
    return Tensor{};
  }
  Tensor whole = Tensor::empty(global_shape(), field.dtype());
  for (int r = 0; r < comm_->size(); ++r) {
    const Tensor rows = whole.slice(first_row_of(r), first_row_of(r) + rows_of(r));
    if (r == root) {
      ops::copy(rows, mine.to(Device::cpu()));
    } else {
      comm_->receive(rows, r, kGatherTag);
    }
  }
  return whole;
}

void Grid::scatter(const Tensor& whole, const Tensor& field, int root) const {
  const Tensor mine = owned(field);
  TENAX_EXPECTS(
      root >= 0 && root < comm_->size(), UsageError,
      "scatter from rank " + std::to_string(root) + " of " + std::to_string(comm_->size()),
      "give a root in [0, ranks)");
  if (comm_->rank() != root) {
    const Tensor part = Tensor::empty(owned_shape(), field.dtype());
    comm_->receive(part, root, kScatterTag);
    ops::copy(mine, part.to(field.device()));
    return;
  }
  TENAX_EXPECTS(
      whole.defined() && whole.shape() == global_shape() && whole.dtype() == field.dtype(),
      UsageError,
      "scatter of " + whole.describe() + " over the grid " + describe() + " of " +
          std::string(tenax::to_string(field.dtype())) + " fields",
      "give the whole field at the grid's global shape and the fields' dtype");
  const Tensor host = whole.to(Device::cpu());
  for (int r = 0; r < comm_->size(); ++r) {
    const Tensor rows = host.slice(first_row_of(r), first_row_of(r) + rows_of(r));
    if (r == root) {
      ops::copy(mine, rows.to(field.device()));
    } else {
      comm_->send(rows, r, kScatterTag);
    }
  }
}

double Grid::max(const Tensor& field) const {
  // Every rank holds a row at least (the constructor's check), so ops::max never sees nothing.
  // A NaN is carried beside the value: an all-reduce's max may drop it.
  const double mine = ops::max(owned(field));
  if (comm_->size() == 1) return mine;
  const Tensor both = Tensor::empty({2}, DType::f64);
  both.data_as<double>()[0] = std::isnan(mine) ? -std::numeric_limits<double>::infinity() : mine;
  both.data_as<double>()[1] = std::isnan(mine) ? 1.0 : 0.0;
  comm_->all_reduce(both, ReduceOp::max);
  return both.data_as<double>()[1] > 0 ? std::nan("") : both.data_as<double>()[0];
}

std::string Grid::describe() const {
  std::string text;
  for (std::size_t axis = 0; axis < extents_.size(); ++axis) {
    text += (axis > 0 ? " x " : "") + std::to_string(extents_[axis]);
  }
  bool same = true;
  for (const Boundary& b : boundaries_) same = same && b == boundaries_[0];
  if (same) {
    text += ", " + to_string(boundaries_[0]);
  } else {
    for (std::size_t axis = 0; axis < boundaries_.size(); ++axis) {
      text += std::string(axis == 0 ? ", " : " / ") + to_string(boundaries_[axis]);
    }
  }
  text += ", ghost width " + std::to_string(ghost_);
  if (comm_->size() > 1) text += ", rows split over " + std::to_string(comm_->size()) + " ranks";
  return text;
}

namespace {

// Rank 0's outcome, told to every rank (collective): the others raise IoError naming it.
void agree_on_outcome(Communicator& comm, const std::string& failure, const std::string& what) {
  if (comm.size() == 1) return;
  const Tensor flag = Tensor::empty({1}, DType::i32);
  flag.data_as<std::int32_t>()[0] = failure.empty() ? 0 : 1;
  comm.broadcast(flag, 0);
  TENAX_EXPECTS(flag.data_as<std::int32_t>()[0] == 0 || comm.rank() == 0, IoError,
                "rank 0 could not " + what + " (its message says why)",
                "see rank 0's error, fix it, and run again");
}

}  // namespace

void write_fields(const Grid& grid, const std::filesystem::path& path,
                  const std::vector<std::pair<std::string, Tensor>>& fields,
                  const std::vector<std::pair<std::string, double>>& attributes,
                  const io::FileMetadata& metadata) {
  std::vector<std::pair<std::string, Tensor>> whole;
  for (const auto& [name, field] : fields) whole.emplace_back(name, grid.gather(field));
  std::string failure;
  if (grid.comm().rank() == 0) {
    try {
      io::write_tensors_file(path, whole, attributes, metadata);
    } catch (const std::exception& e) {
      failure = e.what();
      agree_on_outcome(grid.comm(), failure, "write " + path.string());
      throw;
    }
  }
  agree_on_outcome(grid.comm(), failure, "write " + path.string());
}

void read_fields(const Grid& grid, const std::filesystem::path& path,
                 const std::vector<std::pair<std::string, Tensor>>& fields) {
  StateDict state;
  std::string failure;
  if (grid.comm().rank() == 0) {
    try {
      state = io::read_state_file(path);
      for (const auto& [name, field] : fields) {
        TENAX_EXPECTS(state.contains(name), IoError,
                      path.string() + " has no dataset '" + name + "'",
                      "read a file that write_fields wrote with that field");
        const Tensor& whole = state.tensor(name);
        TENAX_EXPECTS(whole.shape() == grid.global_shape() && whole.dtype() == field.dtype(),
                      IoError,
                      path.string() + " holds '" + name + "' as " + whole.describe() +
                          ", not as the grid's " + std::string(to_string(field.dtype())) +
                          to_string(grid.global_shape()),
                      "read fields written from a grid of the same extents and dtype");
      }
    } catch (const std::exception& e) {
      failure = e.what();
      agree_on_outcome(grid.comm(), failure, "read " + path.string());
      throw;
    }
  }
  agree_on_outcome(grid.comm(), failure, "read " + path.string());
  for (const auto& [name, field] : fields) {
    grid.scatter(grid.comm().rank() == 0 ? state.tensor(name) : Tensor{}, field);
  }
}

}  // namespace tenax::runtime
