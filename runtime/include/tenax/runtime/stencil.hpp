/// Kernels of your own over a Grid's fields, and StencilSimulation: a whole explicit time-stepping
/// job (fields, step, checkpoint layout, out-of-memory backoff) around one such kernel.
/// @file
/// The kernel is a functor written once for the CPU and CUDA (kernels/grid_kernel.hpp says how):
/// one neighbourhood per input field, one reference per output. apply_stencil() checks the
/// fields against the grid and runs it; StencilSimulation<Kernel, N> is a Workload whose step is
/// `fields <- kernel(fields)` for N fields, so a reaction-diffusion or wave job is the kernel, the
/// initial values and the settings:
/// ```
/// tenax::runtime::Grid grid(job.comm(), {.extents = {n, n}});   // periodic, ghost width 1
/// tenax::runtime::StencilSimulation<GrayScott, 2> sim(grid, job.device(), {"u", "v"}, kernel);
/// sim.set_initial([](const std::int64_t* point, double* values) { ... });
/// job.run(sim);
/// ```
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tenax/core/context.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/profiler.hpp"
#include "tenax/core/state_dict.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/grid_kernel.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/grid.hpp"
#include "tenax/runtime/step_times.hpp"
#include "tenax/runtime/workload.hpp"

namespace tenax::runtime {

/// Runs `kernel` over rows [row_begin, row_end) of this rank's block of `grid` (rows counted from
/// its first; the whole block by default), reading `inputs` and writing `outputs`: fields of the
/// grid (Grid::make_field) of one floating dtype T on one device, inputs' ghost rows filled
/// (Grid::exchange), no output among the inputs. UsageError otherwise, naming the field. On CUDA
/// the kernel is queued on the device's stream (see grid_kernel.hpp).
template <class T, int N, int M, class Kernel>
void apply_stencil(const Grid& grid, const Kernel& kernel, const Tensor (&inputs)[N],
                   const Tensor (&outputs)[M], std::int64_t row_begin = 0,
                   std::int64_t row_end = -1) {
  if (row_end < 0) row_end = grid.rows();
  TENAX_EXPECTS(row_begin >= 0 && row_begin <= row_end && row_end <= grid.rows(), UsageError,
                "rows [" + std::to_string(row_begin) + ", " + std::to_string(row_end) +
                    ") of a rank holding " + std::to_string(grid.rows()),
                "give rows within [0, grid.rows()]");
  const T* in[N];
  T* out[M];
  const Device device = inputs[0].device();
  for (int k = 0; k < N; ++k) {
    grid.check_field(inputs[k], "input " + std::to_string(k));
    TENAX_EXPECTS(inputs[k].device() == device, UsageError,
                  "input " + std::to_string(k) + " is " + inputs[k].describe() + ", input 0 " +
                      inputs[0].describe(),
                  "keep every field of a kernel on one device");
    in[k] = inputs[k].template data_as<const T>();
  }
  for (int k = 0; k < M; ++k) {
    grid.check_field(outputs[k], "output " + std::to_string(k));
    TENAX_EXPECTS(outputs[k].device() == device, UsageError,
                  "output " + std::to_string(k) + " is " + outputs[k].describe() + ", input 0 " +
                      inputs[0].describe(),
                  "keep every field of a kernel on one device");
    out[k] = outputs[k].template data_as<T>();
    for (int i = 0; i < N; ++i) {
      TENAX_EXPECTS(
          outputs[k].buffer() != inputs[i].buffer(), UsageError,
          "output " + std::to_string(k) + " shares its storage with input " + std::to_string(i),
          "write a kernel's results into fields of their own (a point reads its "
          "neighbours' old values)");
    }
  }
  const profiling::Span span("stencil", grid.comm().step());
  kernels::run_grid_kernel<N, M, T>(device, grid.geometry(), row_begin, row_end, kernel, in, out,
                                    -std::int64_t{grid.ghost_width()});
}

/// A Workload advancing N fields of a grid by one kernel per step: fields <- kernel(fields), the
/// kernel taking the N fields' neighbourhoods and writing the N new values (in the fields'
/// order). T: the fields' dtype (double or float).
///
/// Steps: the ghost rows are exchanged (overlapped with the rows that do not need them) and the
/// kernel writes new fields, which replace the old. When memory runs out, the Runner halves the
/// micro-batch (rows) and the step updates the fields in place instead, a block of rows at a time
/// through two small buffers per field: the same bits, at most the fields and the buffers in
/// memory. The result does not depend on the micro-batch nor on the number of ranks.
///
/// State: each field under its name (this rank's block; a run resumes on another number of ranks
/// or another split) and the steps taken ("steps"). Not thread-safe; the grid, which must
/// outlive it, belongs to the job's communicator.
template <class Kernel, int N, class T = double>
class StencilSimulation : public Workload {
 public:
  /// Fields named `names` (each a state entry and an output dataset name: non-empty, distinct)
  /// on `device`, advanced by `kernel`. UsageError for names that break that.
  StencilSimulation(const Grid& grid, Device device, std::array<std::string, N> names,
                    Kernel kernel)
      : grid_(grid), device_(device), names_(std::move(names)), kernel_(std::move(kernel)) {
    static_assert(std::is_same_v<T, double> || std::is_same_v<T, float>,
                  "StencilSimulation's fields are double or float");
    for (int k = 0; k < N; ++k) {
      TENAX_EXPECTS(!names_[k].empty() && names_[k] != "steps", UsageError,
                    "field " + std::to_string(k) + " is named '" + names_[k] + "'",
                    "name every field (not 'steps', which the simulation keeps)");
      for (int i = 0; i < k; ++i) {
        TENAX_EXPECTS(names_[i] != names_[k], UsageError,
                      "two fields are named '" + names_[k] + "'", "give the fields distinct names");
      }
    }
  }

  /// The initial values: `initial(point, values)` is called once per owned point on the host,
  /// with the point's global index (dims() values, axis 0 first) and N values to fill. Call
  /// before Runner::run; a run without it starts from zeros.
  void set_initial(std::function<void(const std::int64_t* point, T* values)> initial) {
    initial_ = std::move(initial);
  }

  /// This rank's field k with its ghost rows (Grid::owned for its own points).
  [[nodiscard]] const Tensor& field(int k) const { return fields_.at(static_cast<std::size_t>(k)); }
  /// The field named `name`; UsageError for a name the simulation does not have.
  [[nodiscard]] const Tensor& field(const std::string& name) const {
    for (int k = 0; k < N; ++k) {
      if (names_[k] == name) return field(k);
    }
    throw UsageError("the simulation has no field '" + name + "'", "ask for one of its names");
  }
  /// The steps taken since the initial values.
  [[nodiscard]] std::int64_t steps() const noexcept { return steps_; }
  /// The grid.
  [[nodiscard]] const Grid& grid() const noexcept { return grid_; }
  /// The wall times of this process's last steps (StepTimes::kKept at most): from step() to the
  /// end of commit_step(), the agreement between them included.
  [[nodiscard]] const StepTimes& step_times() const noexcept { return step_times_; }

  /// Collective: writes every field whole to `path` (Grid's write_fields: one dataset per field
  /// at the grid's shape), with `attributes` and `metadata`.
  void write(const std::filesystem::path& path,
             const std::vector<std::pair<std::string, double>>& attributes = {},
             const io::FileMetadata& metadata = {}) const {
    std::vector<std::pair<std::string, Tensor>> named;
    for (int k = 0; k < N; ++k) named.emplace_back(names_[k], fields_[static_cast<std::size_t>(k)]);
    write_fields(grid_, path, named, attributes, metadata);
  }

  // The initial values, computed on the host a block of rows at a time: straight into the fields
  // on the CPU, through a staging block of at most kBlockBytes per field for a device (so the
  // start needs no second copy of the fields).
  void init() override {
    allocate();
    const kernels::GridGeometry g = grid_.geometry();
    const std::int64_t per_row = g.row_elements();
    const std::int64_t rows = grid_.rows();
    const std::int64_t block = device_.is_cpu()
                                   ? std::max<std::int64_t>(rows, 1)
                                   : std::max<std::int64_t>(1, kBlockBytes / (per_row * sizeof(T)));
    std::int64_t point[kernels::kMaxGridDims] = {};
    T values[N] = {};
    for (std::int64_t r0 = 0; r0 < rows; r0 += block) {
      const std::int64_t r1 = std::min(rows, r0 + block);
      std::vector<Tensor> host;
      for (int k = 0; k < N; ++k) {
        const Tensor rows_of_field =
            grid_.owned(fields_[static_cast<std::size_t>(k)]).slice(r0, r1);
        host.push_back(device_.is_cpu() ? rows_of_field
                                        : Tensor::empty(rows_of_field.shape(), dtype_of<T>));
      }
      for (std::int64_t y = r0; y < r1; ++y) {
        for (std::int64_t i = 0; i < per_row; ++i) {
          point[0] = g.first[0] + y;
          if (g.dims == 2) point[1] = g.first[1] + i;
          if (g.dims == 3) {
            point[1] = g.first[1] + i / g.extent[2];
            point[2] = g.first[2] + i % g.extent[2];
          }
          for (int k = 0; k < N; ++k) values[k] = T(0);
          if (initial_) initial_(point, values);
          for (int k = 0; k < N; ++k) {
            host[static_cast<std::size_t>(k)].template data_as<T>()[(y - r0) * per_row + i] =
                values[k];
          }
        }
      }
      if (!device_.is_cpu()) {
        for (int k = 0; k < N; ++k) {
          ops::copy(grid_.owned(fields_[static_cast<std::size_t>(k)]).slice(r0, r1),
                    host[static_cast<std::size_t>(k)].to(device_));
        }
      }
    }
    steps_ = 0;
  }

  [[nodiscard]] std::int64_t work_units() const override {
    return std::max<std::int64_t>(1, grid_.rows());
  }

  // Takes what the step needs (memory) before anything changes: new fields, or for a micro-batch
  // smaller than this rank's rows two buffers of a block of rows per field.
  void step(std::int64_t, std::int64_t micro_batch) override {
    step_times_.start();
    staged_.reset();
    Staged staged;
    if (micro_batch >= grid_.rows()) {
      for (int k = 0; k < N; ++k) staged.next.push_back(grid_.make_field(dtype_of<T>, device_));
    } else {
      const std::int64_t per_row = grid_.geometry().row_elements();
      const std::int64_t cache_rows =
          std::max<std::int64_t>(1, kBlockBytes / std::max<std::int64_t>(1, per_row * sizeof(T)));
      staged.block_rows = std::clamp<std::int64_t>(std::min(micro_batch, cache_rows),
                                                   std::max(1, grid_.ghost_width()), grid_.rows());
      for (int k = 0; k < N; ++k) {
        staged.buffers.push_back(
            Tensor::empty(Shape{2, staged.block_rows, per_row}, dtype_of<T>, device_));
      }
    }
    staged_ = std::move(staged);
  }

  void commit_step() override {
    TENAX_EXPECTS(staged_.has_value(), UsageError, "commit_step() with no step staged",
                  "call step() before commit_step()");
    if (staged_->buffers.empty()) {
      sweep_into_new_fields();
    } else {
      grid_.exchange(fields_);
      sweep_in_place();
    }
    if (device_.is_cuda()) tenax::cuda::context(device_).synchronize();
    staged_.reset();
    ++steps_;
    step_times_.stop();
  }

  void discard_step() override { staged_.reset(); }

  [[nodiscard]] StateDict save_state() const override {
    StateDict state;
    for (int k = 0; k < N; ++k)
      state.set(names_[k], grid_.owned(fields_[static_cast<std::size_t>(k)]));
    state.set("steps", steps_);
    return state;
  }

  void load_state(const StateDict& state) override {
    allocate();
    for (int k = 0; k < N; ++k) {
      const Tensor& part = state.tensor(names_[k]);
      TENAX_EXPECTS(part.shape() == grid_.owned_shape() && part.dtype() == dtype_of<T>, UsageError,
                    "the checkpoint holds '" + names_[k] + "' as " + part.describe() +
                        " but this rank of the grid " + grid_.describe() + " holds " +
                        std::string(to_string(dtype_of<T>)) + to_string(grid_.owned_shape()),
                    "resume with the same grid and dtype, or use a new --run-dir");
      // A block of rows at a time: a device needs no second copy of a field to take it.
      const Tensor owned = grid_.owned(fields_[static_cast<std::size_t>(k)]);
      const std::int64_t per_row = std::max<std::int64_t>(1, grid_.geometry().row_elements());
      const std::int64_t block = std::max<std::int64_t>(1, kBlockBytes / (per_row * sizeof(T)));
      for (std::int64_t r0 = 0; r0 < grid_.rows(); r0 += block) {
        const std::int64_t r1 = std::min(grid_.rows(), r0 + block);
        ops::copy(owned.slice(r0, r1), part.slice(r0, r1).to(device_));
      }
    }
    steps_ = state.integer("steps");
    staged_.reset();
  }

  [[nodiscard]] StateLayout state_layout() const override {
    StateLayout layout;
    for (int k = 0; k < N; ++k) layout.shards.push_back(grid_.shard(names_[k]));
    return layout;
  }

  [[nodiscard]] Device device() const override { return device_; }

 private:
  // Bytes of a block buffer of the in-place sweep: two per field stay in a server's last-level
  // cache between their computation and their copy.
  static constexpr std::int64_t kBlockBytes = std::int64_t{1} << 20;

  struct Staged {
    std::vector<Tensor> next;     // new fields (the fast path)
    std::vector<Tensor> buffers;  // per field [2, block_rows, row elements] (in place)
    std::int64_t block_rows = 0;
  };

  void allocate() {
    if (!fields_.empty()) return;
    for (int k = 0; k < N; ++k) fields_.push_back(grid_.make_field(dtype_of<T>, device_));
  }

  template <std::size_t... I>
  void run(std::index_sequence<I...>, const std::vector<Tensor>& out, std::int64_t begin,
           std::int64_t end) const {
    const Tensor inputs[N] = {fields_[I]...};
    const Tensor outputs[N] = {out[I]...};
    apply_stencil<T>(grid_, kernel_, inputs, outputs, begin, end);
  }

  // The fast path: rows that read no ghost row run while the halo messages travel (unless another
  // axis is split: every row then reads ghost layers, which come last).
  void sweep_into_new_fields() {
    const std::vector<Tensor>& next = staged_->next;
    const std::int64_t rows = grid_.rows();
    const std::int64_t g = grid_.ghost_width();
    const auto all = std::make_index_sequence<N>{};
    bool blocks = false;
    for (int axis = 1; axis < grid_.dims(); ++axis) blocks = blocks || grid_.ranks_along(axis) > 1;
    if (blocks) {
      grid_.exchange(fields_);
      run(all, next, 0, rows);
      fields_ = next;
      return;
    }
    grid_.start_exchange(fields_);
    if (rows > 2 * g) run(all, next, g, rows - g);
    grid_.finish_exchange(fields_);
    if (rows > 2 * g) {
      run(all, next, 0, g);
      run(all, next, rows - g, rows);
    } else {
      run(all, next, 0, rows);
    }
    fields_ = next;
  }

  // In place, a block of rows at a time: a block's new rows go to a buffer and are copied into
  // the fields one block later, once the next block (which reads this one's last rows as
  // neighbours) has been computed from the old values. Blocks hold at least the ghost width.
  void sweep_in_place() {
    const std::int64_t rows = grid_.rows();
    const std::int64_t block_rows = staged_->block_rows;
    const std::int64_t g = grid_.ghost_width();
    const kernels::GridGeometry geometry = grid_.geometry();
    std::int64_t pending_begin = -1;
    std::int64_t pending_end = -1;
    int pending_half = 0;
    for (std::int64_t r0 = 0, block = 0; r0 < rows; r0 += block_rows, ++block) {
      const std::int64_t r1 = std::min(rows, r0 + block_rows);
      const int half = static_cast<int>(block % 2);
      const T* in[N];
      T* out[N];
      for (int k = 0; k < N; ++k) {
        in[k] = fields_[static_cast<std::size_t>(k)].template data_as<const T>();
        out[k] = staged_->buffers[static_cast<std::size_t>(k)]
                     .slice(half, half + 1)
                     .template data_as<T>();
      }
      kernels::run_grid_kernel<N, N, T>(device_, geometry, r0, r1, kernel_, in, out, r0);
      if (pending_begin >= 0) copy_block(pending_half, pending_begin, pending_end);
      pending_begin = r0;
      pending_end = r1;
      pending_half = half;
    }
    if (pending_begin >= 0) copy_block(pending_half, pending_begin, pending_end);
    (void)g;
  }

  void copy_block(int half, std::int64_t begin, std::int64_t end) {
    const std::int64_t g = grid_.ghost_width();
    for (int k = 0; k < N; ++k) {
      const Tensor& field = fields_[static_cast<std::size_t>(k)];
      const Tensor buffer =
          staged_->buffers[static_cast<std::size_t>(k)]
              .slice(half, half + 1)
              .reshape(Shape{staged_->block_rows, grid_.geometry().row_elements()})
              .slice(0, end - begin);
      ops::copy(field.slice(g + begin, g + end).reshape(buffer.shape()), buffer);
    }
  }

  const Grid& grid_;
  Device device_;
  std::array<std::string, N> names_;
  Kernel kernel_;
  std::function<void(const std::int64_t*, T*)> initial_;
  std::vector<Tensor> fields_;
  std::optional<Staged> staged_;
  std::int64_t steps_ = 0;
  StepTimes step_times_;
};

}  // namespace tenax::runtime
