// GrainScope (grain.hpp): grain rows, the per-grain loss sums, and the per-parameter gradient
// trees over the global grain index.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/train/autodiff/grain.hpp"

namespace tenax::train::autodiff {
namespace {

// A parameter's tree while grains arrive: the LeafStream's nodes and their values.
struct OpenTree {
  GrainScope::GradientTree tree;
  kernels::LeafStream stream;
  std::int64_t last_grain = -1;
};

struct GrainState {
  std::int64_t grain_rows = 0;
  std::int64_t row_offset = 0;
  double loss_sum = 0;
  std::vector<double> grain_losses;
  std::vector<OpenTree> trees;
  std::int64_t plain_gradients = 0;
};

GrainState& state() {
  thread_local GrainState s;
  return s;
}

// left += right, as the tree's combine: IEEE addition commutes, so this is left + right.
void add_into(const Tensor& left, const Tensor& right) { ops::axpby(1.0, right, 1.0, left); }

}  // namespace

GrainScope::GrainScope(std::int64_t rows) {
  GrainState& s = state();
  TENAX_EXPECTS(rows >= 1, UsageError,
                "autodiff::GrainScope: grain of " + std::to_string(rows) + " rows",
                "use a grain of at least one row (e.g. the smallest micro-batch you will run)");
  TENAX_EXPECTS(s.grain_rows == 0, UsageError,
                "autodiff::GrainScope: a scope of " + std::to_string(s.grain_rows) +
                    " rows is already active on this thread",
                "end the outer scope first; grain scopes do not nest");
  s = GrainState{};
  s.grain_rows = rows;
}

GrainScope::~GrainScope() { state() = GrainState{}; }

std::int64_t GrainScope::rows() noexcept { return state().grain_rows; }

std::int64_t GrainScope::row_offset() noexcept {
  const GrainState& s = state();
  return s.grain_rows > 0 ? s.row_offset : 0;
}

void GrainScope::set_row_offset(std::int64_t row) {
  GrainState& s = state();
  TENAX_EXPECTS(s.grain_rows > 0 && row >= 0 && row % s.grain_rows == 0, UsageError,
                "autodiff::GrainScope::set_row_offset(" + std::to_string(row) +
                    ") with grains of " + std::to_string(s.grain_rows) + " rows",
                "start every micro-batch at a whole grain, inside a GrainScope");
  s.row_offset = row;
}

std::int64_t GrainScope::grain_index(std::int64_t local_row) noexcept {
  const GrainState& s = state();
  return s.grain_rows > 0 ? (s.row_offset + local_row) / s.grain_rows : 0;
}

double GrainScope::loss_sum() noexcept { return state().loss_sum; }

const std::vector<double>& GrainScope::grain_losses() noexcept { return state().grain_losses; }

void GrainScope::add_loss(double grain_sum) noexcept {
  GrainState& s = state();
  if (s.grain_rows == 0) return;
  s.loss_sum += grain_sum;
  s.grain_losses.push_back(grain_sum);
}

void GrainScope::add_gradient(const Variable& parameter, const Tensor& gradient,
                              std::int64_t grain) {
  GrainState& s = state();
  auto it = std::find_if(s.trees.begin(), s.trees.end(), [&](const OpenTree& t) {
    return t.tree.parameter.impl() == parameter.impl();
  });
  if (it == s.trees.end()) {
    s.trees.push_back(OpenTree{});
    it = std::prev(s.trees.end());
    it->tree.parameter = parameter;
    it->tree.first_grain = grain;
  }
  OpenTree& open = *it;
  TENAX_EXPECTS(open.last_grain < 0 || grain == open.last_grain + 1, UsageError,
                "autodiff::GrainScope: a gradient of grain " + std::to_string(grain) +
                    " arrived after grain " + std::to_string(open.last_grain) +
                    " for the same parameter " + parameter.value().describe(),
                grain <= open.last_grain
                    ? "call GrainScope::set_row_offset(first row) before each micro-batch; a "
                      "parameter used by two grain-wise ops in one forward pass is not supported "
                      "inside a GrainScope (its grains would arrive twice)"
                    : "run the grains of a batch in order without gaps (Trainer does)");
  open.last_grain = grain;
  open.tree.end_grain = grain + 1;
  std::vector<Tensor>& values = open.tree.values;
  const int merges = open.stream.push(grain);
  if (merges == 0) {
    values.push_back(gradient.clone());
  } else {
    // The new leaf is a right child: it goes straight into its left sibling, then complete
    // parents keep merging with theirs.
    add_into(values.back(), gradient);
    for (int k = 1; k < merges; ++k) {
      const Tensor right = values.back();
      values.pop_back();
      add_into(values.back(), right);
    }
  }
  open.tree.nodes = open.stream.nodes();
}

void GrainScope::note_plain_gradient(const Variable& /*parameter*/) noexcept {
  GrainState& s = state();
  if (s.grain_rows > 0) ++s.plain_gradients;
}

std::int64_t GrainScope::plain_gradients() noexcept { return state().plain_gradients; }

std::vector<GrainScope::GradientTree> GrainScope::take_gradients() {
  std::vector<GradientTree> out;
  for (OpenTree& t : state().trees) out.push_back(std::move(t.tree));
  state().trees.clear();
  return out;
}

Tensor GrainScope::fold(const GradientTree& tree) {
  TENAX_EXPECTS(!tree.values.empty(), UsageError,
                "autodiff::GrainScope::fold: a gradient tree without values",
                "fold only the trees of parameters that received a gradient");
  Tensor total = tree.values.back().clone();
  for (auto it = tree.values.rbegin() + 1; it != tree.values.rend(); ++it) {
    // total = node + total: the node is the left sibling of an ancestor of what total holds.
    add_into(total, *it);
  }
  return total;
}

bool GrainScope::holds_gradient_of(const Variable& parameter) noexcept {
  for (const OpenTree& t : state().trees) {
    if (t.tree.parameter.impl() == parameter.impl()) return true;
  }
  return false;
}

void GrainScope::finish_gradients() {
  const std::vector<GradientTree> trees = take_gradients();
  // The trees are handed to accumulate_grad outside the scope's bookkeeping of plain gradients.
  const std::int64_t plain = state().plain_gradients;
  for (const GradientTree& tree : trees) Tape::accumulate_grad(tree.parameter, fold(tree));
  state().plain_gradients = plain;
}

}  // namespace tenax::train::autodiff
