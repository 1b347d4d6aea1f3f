// Grid: the process grid and the partition of the axes, the ghosts' sources (the halo plan,
// computed once from the partition alone, so no rank asks another what it needs), gather/scatter
// and field files.
#include "tenax/runtime/grid.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "tenax/core/error.hpp"
#include "tenax/core/profiler.hpp"
#include "tenax/core/strided_view.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/kernels/ops_view.hpp"

namespace tenax::runtime {
namespace {

// 128-bit unsigned counts (a GNU extension, so -Wpedantic is told so).
__extension__ using Wide = unsigned __int128;

constexpr int kMaxGhostWidth = 8;
// Tags of the halo messages: kHaloTag + (field * 3 + axis) * (2 ghost) + ghost slot; of gathers
// and scatters.
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
  std::int64_t ranks[kernels::kMaxGridDims] = {};
};

// Ghost points a rank of a split exchanges per field (about: with the blocks' largest extents;
// a split axis' ghost layers cover the lower axes' ghosts too), the measure by which the grid
// chooses its split.
// (In 128 bits: a grid of 2^59 points has layers of up to 2^63 ghosts.)
Wide ghost_points(const std::vector<std::int64_t>& n, int g, const int (&p)[3]) {
  std::int64_t block[3] = {1, 1, 1};
  for (std::size_t a = 0; a < n.size(); ++a) block[a] = (n[a] + p[a] - 1) / p[a];
  Wide total = 0;
  for (int a = 0; a < 3; ++a) {
    if (p[a] == 1) continue;
    auto layer = static_cast<Wide>(2 * g);
    for (int b = 0; b < 3; ++b) {
      if (b != a) layer *= static_cast<std::uint64_t>(block[b] + (b < a && p[b] > 1 ? 2 * g : 0));
    }
    total += layer;
  }
  return total;
}

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
  // The process grid: given, or the split exchanging the fewest ghost points (slabs on a tie).
  const int world = comm.size();
  if (options.ranks.empty()) {
    bool found = false;
    Wide best = 0;
    // Splits in the order slabs first, then more ranks on the lower axes: the first of the
    // cheapest wins a tie. Only divisors are tried (a few hundred splits for any world).
    for (int p0 = world; p0 >= 1; --p0) {
      if (world % p0 != 0) continue;
      for (int p1 = world / p0; p1 >= 1; --p1) {
        if ((world / p0) % p1 != 0) continue;
        const int split[3] = {p0, p1, world / p0 / p1};
        bool fits = true;
        for (int a = 0; a < 3; ++a) {
          const std::int64_t points = a < d ? extents_[static_cast<std::size_t>(a)] : 1;
          fits = fits && points >= split[a];
        }
        if (!fits) continue;
        const Wide cost = ghost_points(extents_, ghost_, split);
        if (!found || cost < best) {
          found = true;
          best = cost;
          for (int a = 0; a < 3; ++a) ranks_[a] = split[a];
        }
      }
    }
    std::string points = std::to_string(extents_[0]);
    for (int a = 1; a < d; ++a)
      points += " x " + std::to_string(extents_[static_cast<std::size_t>(a)]);
    TENAX_EXPECTS(found, UsageError,
                  "a grid of " + points + " points on " + std::to_string(world) +
                      " ranks: no split gives every rank a point",
                  "use fewer ranks, or a grid with at least as many points as ranks");
  } else {
    TENAX_EXPECTS(options.ranks.size() == extents_.size(), UsageError,
                  std::to_string(options.ranks.size()) + " rank counts for a grid of " +
                      std::to_string(d) + " axes",
                  "give GridOptions::ranks one count per axis (their product the number of "
                  "ranks), or leave it empty to let the grid choose");
    std::int64_t product = 1;
    for (int axis = 0; axis < d; ++axis) {
      const int p = options.ranks[static_cast<std::size_t>(axis)];
      TENAX_EXPECTS(p >= 1 && p <= extents_[static_cast<std::size_t>(axis)], UsageError,
                    std::to_string(p) + " ranks along " + axis_name(axis) + " of " +
                        std::to_string(extents_[static_cast<std::size_t>(axis)]) + " points",
                    "give every axis between 1 rank and as many ranks as it has points");
      // Saturated at 2^40 (no communicator has that many ranks), so that it cannot overflow.
      constexpr std::int64_t kCap = std::int64_t{1} << 40;
      product = product > kCap / p ? kCap : product * p;
    }
    std::string given;
    for (const int p : options.ranks) given += (given.empty() ? "" : " x ") + std::to_string(p);
    TENAX_EXPECTS(product == world, UsageError,
                  "GridOptions::ranks " + given + " splits the grid over " +
                      std::to_string(product) + " ranks, the communicator has " +
                      std::to_string(world),
                  "give rank counts whose product is the number of ranks, or leave ranks empty");
    for (int axis = 0; axis < d; ++axis)
      ranks_[axis] = options.ranks[static_cast<std::size_t>(axis)];
  }

  // Every rank must describe the same grid, or the halo plan of one is not the plan of another.
  GridRecord mine;
  mine.dims = d;
  for (int axis = 0; axis < d; ++axis) {
    mine.extents[axis] = extents_[static_cast<std::size_t>(axis)];
    mine.kinds[axis] = static_cast<std::int64_t>(boundaries_[static_cast<std::size_t>(axis)].kind);
    mine.values[axis] = boundaries_[static_cast<std::size_t>(axis)].value;
  }
  mine.ghost = ghost_;
  for (int axis = 0; axis < kernels::kMaxGridDims; ++axis) mine.ranks[axis] = ranks_[axis];
  if (comm.size() > 1) {
    std::vector<GridRecord> all(static_cast<std::size_t>(comm.size()));
    comm.all_gather_bytes(std::as_bytes(std::span(&mine, 1)),
                          std::as_writable_bytes(std::span(all)));
    for (int r = 0; r < comm.size(); ++r) {
      TENAX_EXPECTS(std::memcmp(&all[static_cast<std::size_t>(r)], &all[0], sizeof mine) == 0,
                    UsageError,
                    "rank " + std::to_string(r) +
                        " was given another grid than rank 0 (extents, "
                        "boundaries, ghost width or ranks per axis)",
                    "build the Grid from the same settings on every rank");
    }
  }

  // The halo plan of each split axis: what this rank receives and copies, and what it sends to
  // each other rank.
  for (int axis = 0; axis < d; ++axis) {
    if (axis > 0 && ranks_[axis] == 1) continue;
    AxisPlan& plan = plans_[axis];
    for (const Transfer& run : ghost_runs(comm.rank(), axis)) {
      (run.peer == comm.rank() || run.peer < 0 ? plan.locals : plan.receives).push_back(run);
    }
    for (int r = 0; r < comm.size(); ++r) {
      if (r == comm.rank()) continue;
      for (Transfer run : ghost_runs(r, axis)) {
        if (run.peer != comm.rank()) continue;
        run.peer = r;  // the receiver, for a send
        plan.sends.push_back(run);
      }
    }
  }
}

const Boundary& Grid::boundary(int axis) const {
  TENAX_EXPECTS(axis >= 0 && axis < dims(), UsageError,
                axis_name(axis) + " of a grid of " + std::to_string(dims()) + " axes",
                "ask for an axis in [0, dims())");
  return boundaries_[static_cast<std::size_t>(axis)];
}

int Grid::ranks_along(int axis) const {
  (void)boundary(axis);  // checks the axis
  return ranks_[axis];
}

int Grid::coordinate(int rank, int axis) const noexcept {
  // Row-major over the process grid: rank = (c0 P1 + c1) P2 + c2.
  if (axis == 2) return rank % ranks_[2];
  if (axis == 1) return rank / ranks_[2] % ranks_[1];
  return rank / (ranks_[1] * ranks_[2]);
}

int Grid::rank_at(int rank, int axis, int coordinate_along) const noexcept {
  int c[3] = {coordinate(rank, 0), coordinate(rank, 1), coordinate(rank, 2)};
  c[axis] = coordinate_along;
  return (c[0] * ranks_[1] + c[1]) * ranks_[2] + c[2];
}

std::int64_t Grid::first_of(int axis, int coordinate) const noexcept {
  const std::int64_t n = extents_[static_cast<std::size_t>(axis)];
  const std::int64_t size = ranks_[axis];
  // n * coordinate / size without overflowing 64 bits.
  return (n / size) * coordinate + (n % size) * coordinate / size;
}

std::int64_t Grid::first_index(int axis) const {
  (void)boundary(axis);
  return first_of(axis, coordinate(comm_->rank(), axis));
}

std::int64_t Grid::first_row_of(int rank) const noexcept {
  return first_of(0, coordinate(rank, 0));
}

std::int64_t Grid::rows_of(int rank) const noexcept {
  const int c = coordinate(rank, 0);
  return first_of(0, c + 1) - first_of(0, c);
}

Shape Grid::global_shape() const { return Shape(std::span<const std::int64_t>(extents_)); }

Shape Grid::owned_shape() const {
  std::vector<std::int64_t> shape = extents_;
  for (int axis = 0; axis < dims(); ++axis) {
    const int c = coordinate(comm_->rank(), axis);
    shape[static_cast<std::size_t>(axis)] = first_of(axis, c + 1) - first_of(axis, c);
  }
  return Shape(std::span<const std::int64_t>(shape));
}

Shape Grid::field_shape() const {
  const kernels::GridGeometry g = geometry();
  const std::int64_t per_row = g.row_elements();
  // The ghost layers of split axes 1 and 2 take whole rows after the block's (the last partly).
  const std::int64_t side_rows = (g.storage() - g.row_storage() + per_row - 1) / per_row;
  return owned_shape().with_leading(g.stored(0) + side_rows);
}

kernels::GridGeometry Grid::geometry() const {
  kernels::GridGeometry g;
  g.dims = dims();
  const Shape owned = owned_shape();
  g.ghost = ghost_;
  for (int axis = 0; axis < dims(); ++axis) {
    g.extent[axis] = owned[axis];
    g.whole[axis] = extents_[static_cast<std::size_t>(axis)];
    g.first[axis] = first_of(axis, coordinate(comm_->rank(), axis));
    g.split[axis] = axis == 0 || ranks_[axis] > 1;
    g.kind[axis] = boundaries_[static_cast<std::size_t>(axis)].kind;
    g.value[axis] = boundaries_[static_cast<std::size_t>(axis)].value;
  }
  return g;
}

Tensor Grid::make_field(DType dtype, Device device) const {
  Tensor field = Tensor::empty(field_shape(), dtype, device);
  // The scratch the exchange packs ghost layers in, once per dtype and device.
  const std::int64_t pack = pack_elements();
  const bool have = std::any_of(scratch_.begin(), scratch_.end(), [&](const Tensor& t) {
    return t.dtype() == dtype && t.device() == device;
  });
  if (pack > 0 && !have) scratch_.push_back(Tensor::empty({pack}, dtype, device));
  if (ghost_ > 0) {
    ops::fill(field.slice(0, ghost_), 0.0);
    ops::fill(field.slice(ghost_ + rows(), field.shape()[0]), 0.0);
  }
  return field;
}

void Grid::check_field(const Tensor& field, const std::string& what) const {
  TENAX_EXPECTS(field.defined() && field.shape() == field_shape(), UsageError,
                what + " is " + field.describe() + ", not a field of this rank of the grid " +
                    describe() + " (shape " + to_string(field_shape()) + ")",
                "make fields with Grid::make_field (a rank's block with its ghosts)");
}

Tensor Grid::owned(const Tensor& field) const {
  check_field(field, "the field");
  return field.slice(ghost_, ghost_ + rows());
}

io::TensorShard Grid::shard(std::string name) const {
  io::TensorShard shard{std::move(name), 0, first_row(), first_row() + rows(), extents_[0]};
  for (int axis = 1; axis < dims(); ++axis) {
    if (ranks_[axis] == 1) continue;
    const std::int64_t first = first_index(axis);
    shard.more.push_back(
        {axis, first, first + owned_shape()[axis], extents_[static_cast<std::size_t>(axis)]});
  }
  return shard;
}

Tensor Grid::stored_rows(const Tensor& field) const {
  const kernels::GridGeometry g = geometry();
  return field.reshape({field.numel()})
      .slice(0, g.row_storage())
      .reshape({g.stored(0), g.extent[1], g.extent[2]});
}

Tensor Grid::ghost_layers(const Tensor& field, int axis) const {
  const kernels::GridGeometry g = geometry();
  const std::int64_t begin = g.side_offset(axis);
  return field.reshape({field.numel()})
      .slice(begin, begin + g.side_storage(axis))
      .reshape({2 * std::int64_t{ghost_}, g.stored(0), axis == 1 ? g.extent[2] : g.stored(1)});
}

std::vector<Grid::Transfer> Grid::ghost_runs(int rank, int axis) const {
  const std::int64_t n = extents_[static_cast<std::size_t>(axis)];
  const int mine = coordinate(rank, axis);
  const std::int64_t first = first_of(axis, mine);
  const std::int64_t count = first_of(axis, mine + 1) - first;
  const Boundary& rule = boundaries_[static_cast<std::size_t>(axis)];
  // The coordinate along the axis of the owner of global index j.
  const auto owner = [&](std::int64_t j) {
    int lo = 0;
    int hi = ranks_[axis] - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (first_of(axis, mid) <= j) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  };
  // Storage rows of axis 0 count the ghost rows; along axes 1 and 2 the block's own points.
  const std::int64_t shift = axis == 0 ? ghost_ : 0;
  std::vector<Transfer> runs;
  for (std::int64_t slot = 0; slot < 2 * std::int64_t{ghost_}; ++slot) {
    std::int64_t j = slot < ghost_ ? first - ghost_ + slot : first + count + (slot - ghost_);
    Transfer one;
    one.index = slot;
    one.slot = axis == 0 ? slot + (slot < ghost_ ? 0 : count) : slot;
    one.count = 1;
    if (!kernels::resolve_boundary(j, n, rule.kind)) {
      one.peer = -1;
    } else {
      const int c = owner(j);
      one.peer = rank_at(rank, axis, c);
      one.from = j - first_of(axis, c) + shift;
    }
    // Joins the previous run when it continues it (same source, the next point).
    if (!runs.empty()) {
      Transfer& last = runs.back();
      if (last.peer == one.peer && last.slot + last.count == one.slot &&
          (one.peer < 0 || last.from + last.count == one.from)) {
        ++last.count;
        continue;
      }
    }
    runs.push_back(one);
  }
  return runs;
}

int Grid::tag(std::size_t field, int axis, std::int64_t ghost_index) const {
  return kHaloTag + (static_cast<int>(field) * kernels::kMaxGridDims + axis) * 2 * ghost_ +
         static_cast<int>(ghost_index);
}

void Grid::check_fields(const std::vector<Tensor>& fields) const {
  for (std::size_t k = 0; k < fields.size(); ++k) {
    check_field(fields[k], "field " + std::to_string(k) + " of the exchange");
  }
}

// Writes points [from, from + count) of this rank's block along `axis` (1 or 2) into `dst` as the
// ghost layers of another block hold them: along axis 1 over every stored row (the ghost rows
// too: the corners), [count, stored rows, n2]; along axis 2 over every stored row and stored
// point of axis 1 (the ghost layers of a split axis 1 too), [count, stored rows, stored points
// of axis 1].
void Grid::write_layers(const Tensor& field, int axis, std::int64_t from, std::int64_t count,
                        const StridedView& dst) const {
  const StridedView rows = StridedView(stored_rows(field)).narrow(axis, from, from + count);
  if (axis == 1) {
    ops::assign(dst, rows.permute({1, 0, 2}));
    return;
  }
  const kernels::GridGeometry g = geometry();
  if (!g.split[1]) {
    ops::assign(dst, rows.permute({2, 0, 1}));
    return;
  }
  const std::int64_t e1 = g.extent[1];
  ops::assign(dst.narrow(2, ghost_, ghost_ + e1), rows.permute({2, 0, 1}));
  // The ghost layers of axis 1, [2 g, stored rows, n2] -> [count, stored rows, 2 g].
  const StridedView columns =
      StridedView(ghost_layers(field, 1)).narrow(2, from, from + count).permute({2, 1, 0});
  ops::assign(dst.narrow(2, 0, ghost_), columns.narrow(2, 0, ghost_));
  ops::assign(dst.narrow(2, ghost_ + e1, g.stored(1)), columns.narrow(2, ghost_, 2 * ghost_));
}

// The ghost layers [slot, slot + count) of `axis` of a field: storage rows of axis 0, layers of
// the ghost storage of axes 1 and 2.
Tensor Grid::ghosts_of(const Tensor& field, int axis, std::int64_t slot, std::int64_t count) const {
  return axis == 0 ? field.slice(slot, slot + count)
                   : ghost_layers(field, axis).slice(slot, slot + count);
}

std::int64_t Grid::pack_elements() const {
  const kernels::GridGeometry g = geometry();
  std::int64_t largest = 0;
  for (int axis = 1; axis < dims(); ++axis) {
    for (const Transfer& send : plans_[axis].sends) {
      largest = std::max(largest, send.count * g.layer_elements(axis));
    }
  }
  return largest;
}

Tensor Grid::pack_buffer(const Tensor& field, int axis, std::int64_t count) const {
  const kernels::GridGeometry g = geometry();
  const Shape shape{count, g.stored(0), axis == 1 ? g.extent[2] : g.stored(1)};
  for (const Tensor& scratch : scratch_) {
    if (scratch.dtype() == field.dtype() && scratch.device() == field.device() &&
        scratch.numel() >= shape.numel()) {
      return scratch.slice(0, shape.numel()).reshape(shape);
    }
  }
  return Tensor::empty(shape, field.dtype(), field.device());
}

// Sends this rank's points of `axis` that others need and fills the ghosts it can alone. Rows of
// axis 0 are contiguous; the layers of axes 1 and 2 are packed into the grid's scratch (made with
// the fields, so an exchange in a step's commit takes no memory; a send copies its bytes).
void Grid::start_axis(int axis, const std::vector<Tensor>& fields) const {
  const AxisPlan& plan = plans_[axis];
  for (std::size_t k = 0; k < fields.size(); ++k) {
    const Tensor& field = fields[k];
    for (const Transfer& send : plan.sends) {
      Tensor message;
      if (axis == 0) {
        message = field.slice(send.from, send.from + send.count);
      } else {
        message = pack_buffer(field, axis, send.count);
        write_layers(field, axis, send.from, send.count, StridedView(message));
      }
      // The receiver's ghost index (0 .. 2 ghost - 1) tells the messages of a pair apart.
      comm_->send(message, send.peer, tag(k, axis, send.index));
    }
    for (const Transfer& local : plan.locals) {
      const Tensor ghosts = ghosts_of(field, axis, local.slot, local.count);
      if (local.peer < 0) {
        ops::fill(ghosts, boundaries_[static_cast<std::size_t>(axis)].value);
      } else if (axis == 0) {
        ops::copy(ghosts, field.slice(local.from, local.from + local.count));
      } else {
        write_layers(field, axis, local.from, local.count, StridedView(ghosts));
      }
    }
  }
}

void Grid::finish_axis(int axis, const std::vector<Tensor>& fields) const {
  for (std::size_t k = 0; k < fields.size(); ++k) {
    for (const Transfer& receive : plans_[axis].receives) {
      comm_->receive(ghosts_of(fields[k], axis, receive.slot, receive.count), receive.peer,
                     tag(k, axis, receive.index));
    }
  }
}

void Grid::start_exchange(const std::vector<Tensor>& fields) const {
  const profiling::Span span("halo.send", comm_->step());
  check_fields(fields);
  start_axis(0, fields);
}

void Grid::finish_exchange(const std::vector<Tensor>& fields) const {
  const profiling::Span span("halo.receive", comm_->step());
  finish_axis(0, fields);
  // Each split axis after the lower ones: its layers carry their ghosts (the corners).
  for (int axis = 1; axis < dims(); ++axis) {
    if (ranks_[axis] == 1) continue;
    start_axis(axis, fields);
    finish_axis(axis, fields);
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
    const StridedView block = block_of(whole, r);
    if (r != root && block.is_contiguous()) {  // rows of whole rows: straight into place
      comm_->receive(block.as_tensor(), r, kGatherTag);
      continue;
    }
    const Tensor part =
        r == root ? mine.to(Device::cpu()) : Tensor::empty(block.shape(), field.dtype());
    if (r != root) comm_->receive(part, r, kGatherTag);
    ops::assign(block, part);
  }
  return whole;
}

StridedView Grid::block_of(const Tensor& whole, int rank) const {
  StridedView block =
      StridedView(whole).narrow(0, first_row_of(rank), first_row_of(rank) + rows_of(rank));
  for (int axis = 1; axis < dims(); ++axis) {
    if (ranks_[axis] == 1) continue;
    const int c = coordinate(rank, axis);
    block = block.narrow(axis, first_of(axis, c), first_of(axis, c + 1));
  }
  return block;
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
    const StridedView block = block_of(host, r);
    const Tensor part = block.is_contiguous() ? block.as_tensor() : ops::contiguous(block);
    if (r == root) {
      ops::copy(mine, part.to(field.device()));
    } else {
      comm_->send(part, r, kScatterTag);
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
  if (ranks_[1] > 1 || ranks_[2] > 1) {
    text += ", split " + std::to_string(ranks_[0]);
    for (int axis = 1; axis < dims(); ++axis) text += " x " + std::to_string(ranks_[axis]);
    text += " over " + std::to_string(comm_->size()) + " ranks";
  } else if (comm_->size() > 1) {
    text += ", rows split over " + std::to_string(comm_->size()) + " ranks";
  }
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
