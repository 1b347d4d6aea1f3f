// ToyWorkload: a small deterministic Workload for in-process tests of the Runner's policies.
//
// The state is a vector x of `size` doubles (one work unit per element). Step s -> s + 1 sets
// x[i] <- toy_update(x[i], i, s + 1), processed in micro-batches of elements into a scratch
// buffer that replaces x only when the whole step is done, so the result does not depend on the
// micro-batch and a step that throws leaves the state as it was. step() stages the result in the
// scratch buffer; commit_step() swaps it in (and counts commits per step, so a test can prove no
// step was applied twice); discard_step() drops it. Hooks, keyed by the step being
// taken (counted from 1, as the Runner reports it) and the attempt (0 for the first call of
// step() for that step in this object), make a step throw OutOfMemoryError, DeviceFaultError,
// AnomalyError or OverflowError,
// raise a signal, write NaN into the result, or make check() report a problem.
#pragma once

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/core/state_dict.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/runtime/workload.hpp"

namespace tenax::runtime::test {

// The update of element `i` taken by step `step` (from 1).
[[nodiscard]] inline double toy_update(double x, std::int64_t i, std::int64_t step) {
  return 0.75 * x + 0.125 * static_cast<double>(i + 1) + 0.001 * static_cast<double>(step);
}

[[nodiscard]] inline double toy_initial(std::int64_t i) {
  return 1.0 + 0.5 * static_cast<double>(i);
}

// x after `steps` steps from the initial state, computed directly.
[[nodiscard]] inline std::vector<double> toy_expected(std::int64_t size, std::int64_t steps) {
  std::vector<double> x(static_cast<std::size_t>(size));
  for (std::int64_t i = 0; i < size; ++i) x[static_cast<std::size_t>(i)] = toy_initial(i);
  for (std::int64_t s = 1; s <= steps; ++s) {
    for (std::int64_t i = 0; i < size; ++i) {
      auto& value = x[static_cast<std::size_t>(i)];
      value = toy_update(value, i, s);
    }
  }
  return x;
}

class ToyWorkload : public Workload {
 public:
  // A hook gets (step being taken, attempt, micro_batch) and says whether to act.
  using Hook = std::function<bool(std::int64_t step, int attempt, std::int64_t micro_batch)>;

  // Calls of step() for one step after which the toy refuses (ends a runaway loop in a test).
  static constexpr int kMaxAttempts = 100;

  explicit ToyWorkload(std::int64_t size = 8) : size_(size) {}

  Hook oom;           // throw OutOfMemoryError after the first micro-batch
  Hook device_fault;  // throw DeviceFaultError before any work
  Hook anomaly;       // throw AnomalyError before any work (a non-finite loss, say)
  Hook overflow;      // throw OverflowError before any work (loss scale at its minimum)
  Hook nan;           // write NaN into x[0] after the step
  Hook sigterm;       // raise(SIGTERM) in the middle of the step, which then completes
  std::function<std::optional<std::string>(std::int64_t step)> problem;  // check() after step
  bool nan_at_init = false;  // init() writes NaN into x[2] (an initial file holding one)
  bool can_skip = false;     // skip_step() skips the step (else it refuses, as the default)

  void init() override {
    ++init_calls;
    x_ = Tensor::empty({size_}, DType::f64);
    double* x = x_.data_as<double>();
    for (std::int64_t i = 0; i < size_; ++i) x[i] = toy_initial(i);
    if (nan_at_init) x[2] = std::numeric_limits<double>::quiet_NaN();
    scratch_ = Tensor::empty_like(x_);
    step_ = 0;
    staged_ = -1;
  }

  [[nodiscard]] std::int64_t work_units() const override { return size_; }

  void step(std::int64_t step, std::int64_t micro_batch) override {
    const std::int64_t taking = step + 1;
    const int attempt = attempts[taking]++;
    micro_batches[taking].push_back(micro_batch);
    if (attempt >= kMaxAttempts) {
      throw UsageError("toy workload was asked for step " + std::to_string(taking) + " " +
                           std::to_string(attempt + 1) + " times",
                       "the runner is looping on this step");
    }
    if (step != step_) {
      throw UsageError("toy workload asked for step " + std::to_string(step) +
                           " while its state is at step " + std::to_string(step_),
                       "the runner lost track of the step");
    }
    if (micro_batch < 1 || micro_batch > size_) {
      throw UsageError("toy workload got micro_batch " + std::to_string(micro_batch),
                       "pass a micro-batch in [1, work_units()]");
    }
    if (device_fault && device_fault(taking, attempt, micro_batch)) {
      throw DeviceFaultError("toy device fault at step " + std::to_string(taking),
                             "none: the test asked for it");
    }
    if (anomaly && anomaly(taking, attempt, micro_batch)) {
      throw AnomalyError("toy non-finite loss at step " + std::to_string(taking),
                         "none: the test asked for it");
    }
    if (overflow && overflow(taking, attempt, micro_batch)) {
      throw OverflowError(
          "toy overflow at the minimum loss scale at step " + std::to_string(taking),
          "none: the test asked for it");
    }
    const double* x = x_.data_as<double>();
    double* next = scratch_.data_as<double>();
    for (std::int64_t begin = 0; begin < size_; begin += micro_batch) {
      if (begin > 0 && oom && oom(taking, attempt, micro_batch)) {
        throw OutOfMemoryError("toy out-of-memory at step " + std::to_string(taking),
                               "none: the test asked for it");
      }
      if (begin > 0 && sigterm && sigterm(taking, attempt, micro_batch)) std::raise(SIGTERM);
      const std::int64_t end = std::min(size_, begin + micro_batch);
      for (std::int64_t i = begin; i < end; ++i) next[i] = toy_update(x[i], i, taking);
    }
    if (micro_batch >= size_) {
      // One micro-batch: the hooks above had no boundary to fire at.
      if (oom && oom(taking, attempt, micro_batch)) {
        throw OutOfMemoryError("toy out-of-memory at step " + std::to_string(taking),
                               "none: the test asked for it");
      }
      if (sigterm && sigterm(taking, attempt, micro_batch)) std::raise(SIGTERM);
    }
    staged_ = taking;  // the result waits in scratch_ until commit_step()
    staged_attempt_ = attempt;
    staged_micro_batch_ = micro_batch;
  }

  void commit_step() override {
    if (staged_ != step_ + 1) {
      throw UsageError("toy workload asked to commit with no step staged (state at step " +
                           std::to_string(step_) + ")",
                       "the runner committed a step twice or without computing it");
    }
    std::swap(x_, scratch_);  // only now does the state change
    step_ = staged_;
    staged_ = -1;
    ++completions[step_];
    ++commits[step_];
    if (nan && nan(step_, staged_attempt_, staged_micro_batch_)) {
      x_.data_as<double>()[0] = std::numeric_limits<double>::quiet_NaN();
    }
  }

  void discard_step() override {
    if (staged_ >= 0) ++discards[staged_];
    staged_ = -1;
  }

  // Skips step `step` + 1 for good when can_skip: x stays, the next step is the one after.
  [[nodiscard]] bool skip_step(std::int64_t step) override {
    if (!can_skip) return false;
    if (step != step_) {
      throw UsageError("toy workload asked to skip step " + std::to_string(step + 1) +
                           " while its state is at step " + std::to_string(step_),
                       "the runner lost track of the step");
    }
    skipped.push_back(step + 1);
    step_ = step + 1;
    staged_ = -1;
    return true;
  }
  [[nodiscard]] std::string describe_step(std::int64_t step) const override {
    return "the toy inputs of step " + std::to_string(step + 1);
  }

  [[nodiscard]] StateDict save_state() const override {
    StateDict state;
    state.set("x", x_);  // a view of the live state
    state.set("step", step_);
    return state;
  }

  void load_state(const StateDict& state) override {
    ++loads;
    x_ = state.tensor("x").clone();
    scratch_ = Tensor::empty_like(x_);
    step_ = state.integer("step");
    staged_ = -1;
  }

  [[nodiscard]] std::optional<std::string> check() const override {
    if (problem) return problem(step_);
    return std::nullopt;
  }

  // step_metrics() after each committed step (none when unset).
  std::function<std::vector<StepMetric>(std::int64_t step)> metrics;
  [[nodiscard]] std::vector<StepMetric> step_metrics() const override {
    if (metrics) return metrics(step_);
    return {};
  }

  [[nodiscard]] std::vector<double> values() const {
    const double* x = x_.data_as<double>();
    return {x, x + size_};
  }
  [[nodiscard]] std::int64_t state_step() const noexcept { return step_; }
  // finished() is true from this step of the state on (-1: never).
  std::int64_t finish_at = -1;
  [[nodiscard]] bool finished() const override { return finish_at >= 0 && step_ >= finish_at; }

  std::vector<std::int64_t> skipped;  // the steps skip_step() skipped
  int init_calls = 0;
  int loads = 0;
  std::map<std::int64_t, int> attempts;     // calls of step() per step taken
  std::map<std::int64_t, int> completions;  // steps committed, per step taken
  std::map<std::int64_t, int> commits;      // commit_step() calls, per step taken
  std::map<std::int64_t, int> discards;     // staged results dropped, per step taken
  std::map<std::int64_t, std::vector<std::int64_t>> micro_batches;  // per call, per step

 private:
  std::int64_t size_;
  Tensor x_;
  Tensor scratch_;
  std::int64_t step_ = 0;
  std::int64_t staged_ = -1;  // the step whose result waits in scratch_, -1: none
  int staged_attempt_ = 0;
  std::int64_t staged_micro_batch_ = 0;
};

}  // namespace tenax::runtime::test
