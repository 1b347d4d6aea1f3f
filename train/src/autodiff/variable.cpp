#include <atomic>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "detail/anomaly_scan.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/strided_view.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_shape.hpp"
#include "tenax/kernels/ops_view.hpp"
#include "tenax/train/autodiff/anomaly.hpp"
#include "tenax/train/autodiff/grain.hpp"
#include "tenax/train/autodiff/variable.hpp"

namespace tenax::train::autodiff {
namespace {

struct Node {
  std::shared_ptr<Variable::Impl> output;
  Tape::Backward backward;
  const char* op = "";
  std::string tag;
  std::vector<Variable> inputs;
};

// A tape's generations are unique in the process, not per thread: a graph built on one thread
// then never matches another thread's tape (whose backward() would otherwise walk an empty tape,
// seed the loss's gradient and return, doubling the real backward's result). From 1, so that a
// default Impl (generation 0) never matches a live tape.
std::uint64_t next_generation() {
  static std::atomic<std::uint64_t> counter{1};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

struct ThreadTape {
  std::vector<Node> nodes;
  std::uint64_t generation = next_generation();
  int no_grad_depth = 0;
  // The node whose backward closure is running (for anomaly reports), nullptr otherwise.
  const Node* running = nullptr;

  void reset() {
    nodes.clear();
    generation = next_generation();
  }
};

ThreadTape& this_thread_tape() {
  thread_local ThreadTape tape;
  return tape;
}

const Variable::Impl& checked(const std::shared_ptr<Variable::Impl>& impl, const char* what) {
  TENAX_EXPECTS(impl != nullptr, UsageError,
                std::string("autodiff::Variable::") + what + ": the Variable is undefined",
                "create it with Variable::parameter() or Variable::constant(), or from an op");
  return *impl;
}

// Whether `t` is the only holder of its whole buffer (not a view, not shared).
bool sole_owner(const Tensor& t) {
  return t.defined() && t.buffer().use_count() == 1 && t.offset() == 0 &&
         t.nbytes() == t.buffer()->bytes();
}

// impl.grad += grad: in place where impl.grad's buffer is its own, else into a new tensor (the
// buffer is shared with another gradient: see Tape::accumulate_grad). The same bits either way:
// each element is the one sum grad + impl.grad.
void add_into_grad(Variable::Impl& impl, const Tensor& grad) {
  if (sole_owner(impl.grad)) {
    ops::axpby(1.0, grad, 1.0, impl.grad);
  } else {
    impl.grad = ops::add(impl.grad, grad);
  }
}

}  // namespace

Variable Variable::parameter(Tensor value) {
  TENAX_EXPECTS(value.defined(), UsageError,
                "autodiff::Variable::parameter: the value tensor is undefined",
                "pass an allocated tensor (e.g. Tensor::empty then ops::random_normal)");
  TENAX_EXPECTS(is_floating(value.dtype()), UsageError,
                "autodiff::Variable::parameter: the value " + value.describe() +
                    " is not of a floating dtype, so it has no gradient",
                "use an f64, f32, f16 or bf16 tensor, or Variable::constant for integer data");
  auto impl = std::make_shared<Impl>();
  impl->grad = Tensor::empty_like(value);
  ops::fill(impl->grad, 0.0);
  impl->value = std::move(value);
  impl->requires_grad = true;
  return Variable(std::move(impl));
}

Variable Variable::constant(Tensor value) {
  TENAX_EXPECTS(value.defined(), UsageError,
                "autodiff::Variable::constant: the value tensor is undefined",
                "pass an allocated tensor");
  auto impl = std::make_shared<Impl>();
  impl->value = std::move(value);
  return Variable(std::move(impl));
}

const Tensor& Variable::value() const { return checked(impl_, "value").value; }
bool Variable::requires_grad() const { return checked(impl_, "requires_grad").requires_grad; }
bool Variable::is_leaf() const { return checked(impl_, "is_leaf").leaf; }
const Tensor& Variable::grad() const {
  const Impl& impl = checked(impl_, "grad");
  TENAX_EXPECTS(!GrainScope::holds_gradient_of(*this), UsageError,
                "autodiff::Variable::grad: the gradient of " + impl.value.describe() +
                    " is still being combined grain by grain in the active GrainScope",
                "call GrainScope::finish_gradients() (or take_gradients()) before reading it");
  return impl.grad;
}

void Variable::zero_grad() const {
  (void)checked(impl_, "zero_grad");
  Impl& impl = *impl_;
  if (!impl.grad.defined()) return;
  if (!sole_owner(impl.grad)) impl.grad = Tensor::empty_like(impl.grad);  // not the sharers'
  ops::fill(impl.grad, 0.0);
}

std::size_t Tape::size() { return this_thread_tape().nodes.size(); }

void Tape::clear() { this_thread_tape().reset(); }

bool Tape::recording() { return this_thread_tape().no_grad_depth == 0; }

Variable Tape::record(const char* op, std::vector<Variable> inputs, Tensor value,
                      Backward backward) {
  ThreadTape& tape = this_thread_tape();
  auto impl = std::make_shared<Variable::Impl>();
  impl->value = std::move(value);
  impl->requires_grad = true;
  impl->leaf = false;
  impl->generation = tape.generation;
  tape.nodes.push_back(Node{impl, std::move(backward), op, current_tag(), std::move(inputs)});
  return Variable(std::move(impl));
}

namespace {

// Anomaly mode: a non-finite gradient of v names the node being run (or the seed).
void scan_if_anomaly_mode(const Variable& v, const Tensor& grad) {
  if (!anomaly_mode()) return;
  const Node* node = this_thread_tape().running;
  if (node != nullptr) {
    int index = 0;
    while (index < static_cast<int>(node->inputs.size()) && !(node->inputs[index] == v)) {
      ++index;
    }
    detail::scan_gradient(node->op, node->tag, index, grad, node->output->grad);
  } else {
    detail::scan_gradient("backward (seed)", current_tag(), 0, grad, Tensor());
  }
}

}  // namespace

void Tape::accumulate_grain_grad(const Variable& v, const Tensor& grad, std::int64_t grain) {
  if (!v.impl()->requires_grad) return;
  if (GrainScope::rows() == 0) {
    accumulate_grad(v, grad);
    return;
  }
  scan_if_anomaly_mode(v, grad);
  GrainScope::add_gradient(v, grad, grain);
}

void Tape::accumulate_grad(const Variable& v, Tensor&& grad) {
  Variable::Impl& impl = *v.impl();
  if (!impl.requires_grad || impl.grad.defined() || !sole_owner(grad)) {
    accumulate_grad(v, static_cast<const Tensor&>(grad));
    return;
  }
  scan_if_anomaly_mode(v, grad);
  if (impl.leaf) GrainScope::note_plain_gradient(v);
  impl.grad = std::move(grad);
}

void Tape::accumulate_grad(const Variable& v, const Tensor& grad) {
  Variable::Impl& impl = *v.impl();
  if (!impl.requires_grad) return;
  scan_if_anomaly_mode(v, grad);
  if (impl.leaf) GrainScope::note_plain_gradient(v);
  if (!impl.grad.defined()) {
    // Callers pass gradients that may be shared (add passes one gradient to both operands,
    // reshape a view of the gradient its node received). A leaf's gradient outlives the pass and
    // is written in place (unscaled, clipped, combined): it gets a copy of its own. A non-leaf's
    // is written only by add_into_grad below, which adds out of place where the buffer is shared:
    // it keeps the tensor itself (no copy, a pass over memory saved per op).
    impl.grad = impl.leaf ? grad.clone() : grad;
  } else {
    impl.zero_axis = -1;  // the known zeros are gone
    impl.zero_ranges.clear();
    add_into_grad(impl, grad);
  }
}

void Tape::accumulate_grad_range(const Variable& v, int axis, std::int64_t begin, std::int64_t end,
                                 const Tensor& grad) {
  Variable::Impl& impl = *v.impl();
  if (!impl.requires_grad) return;
  const std::int64_t n = impl.value.shape()[axis];
  const auto padded = [&] {
    return ops::pad(grad, axis, begin, n - end, ops::PadMode::constant, 0.0);
  };
  if (impl.leaf) {  // a leaf's gradient outlives the pass: no bookkeeping on it
    accumulate_grad(v, padded());
    return;
  }
  scan_if_anomaly_mode(v, grad);
  if (!impl.grad.defined()) {
    impl.grad = padded();
    impl.zero_axis = axis;
    impl.zero_ranges.clear();
    if (begin > 0) impl.zero_ranges.emplace_back(0, begin);
    if (end < n) impl.zero_ranges.emplace_back(end, n);
    return;
  }
  if (impl.zero_axis == axis) {
    for (auto range = impl.zero_ranges.begin(); range != impl.zero_ranges.end(); ++range) {
      const auto [first, last] = *range;
      if (begin < first || end > last) continue;
      ops::assign(StridedView(impl.grad).narrow(axis, begin, end), grad);
      impl.zero_ranges.erase(range);
      if (first < begin) impl.zero_ranges.emplace_back(first, begin);
      if (end < last) impl.zero_ranges.emplace_back(end, last);
      return;
    }
  }
  impl.zero_axis = -1;
  impl.zero_ranges.clear();
  add_into_grad(impl, padded());
}

NoGradScope::NoGradScope() { ++this_thread_tape().no_grad_depth; }
NoGradScope::~NoGradScope() { --this_thread_tape().no_grad_depth; }

void backward(const Variable& loss, double seed) {
  TENAX_EXPECTS(loss.defined(), UsageError, "autodiff::backward: the loss Variable is undefined",
                "pass the Variable returned by the loss op");
  const Variable::Impl& impl = *loss.impl();
  TENAX_EXPECTS(impl.value.numel() == 1, UsageError,
                "autodiff::backward: the loss has shape " + to_string(impl.value.shape()) + " (" +
                    std::to_string(impl.value.numel()) +
                    " elements), but backward needs a single-element loss",
                "reduce it first, e.g. with autodiff::sum or autodiff::mean");
  TENAX_EXPECTS(impl.requires_grad, UsageError,
                "autodiff::backward: the loss does not require grad (it was computed from "
                "constants only, or inside a NoGradScope)",
                "compute it from Variable::parameter leaves, outside any NoGradScope");
  TENAX_EXPECTS(std::isfinite(seed), UsageError,
                "autodiff::backward: the seed gradient is " + std::to_string(seed),
                "pass a finite seed (1, or the current loss scale)");
  ThreadTape& tape = this_thread_tape();
  TENAX_EXPECTS(impl.leaf || impl.generation == tape.generation, UsageError,
                "autodiff::backward: the loss's graph was already consumed by an earlier "
                "backward() or dropped by Tape::clear() (or it was built on another thread)",
                "run the forward pass again, then call backward() once on its loss");

  Tensor seed_grad = Tensor::empty_like(impl.value);
  ops::fill(seed_grad, seed);
  Tape::accumulate_grad(loss, seed_grad);

  // Move the nodes out first so that the tape is consumed even when a closure throws, and so
  // that ops run by closures (they run with recording off) cannot touch the list being walked.
  std::vector<Node> nodes = std::move(tape.nodes);
  tape.reset();
  NoGradScope no_grad;
  struct ClearRunning {
    ThreadTape& tape;
    ~ClearRunning() { tape.running = nullptr; }
  } clear_running{tape};
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    // Not reached from the loss (another output of the same forward pass): nothing to do.
    if (!it->output->grad.defined()) continue;
    tape.running = &*it;
    it->backward(it->output->grad);
  }
}

}  // namespace tenax::train::autodiff
