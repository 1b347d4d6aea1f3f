/// Anomaly mode: every op checks what it produces for NaN and ±Inf, on the device, and the first
/// non-finite value stops the pass with a report that says where it came from.
/// @file
/// While a DetectAnomalyScope lives on a thread, each differentiable op of ops.hpp scans its
/// output after the forward computation, and each gradient an op's backward produces is scanned
/// before it is accumulated. One read of each tensor (ops::find_nonfinite), no host copy of the
/// data: the cost is a fraction of the op's own memory traffic, not the 1.5-3x of recording a
/// stack trace per op. The first bad tensor throws AnomalyDetected, whose report names
///  - the op and the tag of the TagScope(s) around it (the layer, or any user label),
///  - the pass (forward, or backward),
///  - the step, micro-batch and rank set with set_anomaly_context(),
///  - the output index: 0 in the forward pass (every op has one output); in the backward pass the
///    position of the input whose gradient went bad (linear: 0 x, 1 weight, 2 bias),
///  - the first bad element (flat index and value) and the NaN and Inf counts,
///  - whether the op created the bad value from finite inputs or passed on one it was given.
/// "Created" in the forward pass means all inputs were finite; in the backward pass it means the
/// gradient the op received was finite (its saved forward values were checked when made).
///
/// Outside anomaly mode nothing is scanned; a non-finite loss is still caught where the training
/// loop checks it, without the name of the op.
#pragma once

#include <cstdint>
#include <string>

#include "tenax/core/error.hpp"
#include "tenax/core/shape.hpp"

namespace tenax::train::autodiff {

/// The pass in which anomaly mode found a non-finite value.
enum class Pass {
  forward,  ///< in an op's output, after its forward computation
  backward  ///< in a gradient an op's backward closure produced for one of its inputs
};
/// "forward" or "backward" (static strings).
[[nodiscard]] const char* to_string(Pass pass) noexcept;

/// Where the program is, for reports: set by the training loop before each micro-batch.
struct AnomalyContext {
  std::int64_t step = -1;         ///< optimizer step (-1: not set)
  std::int64_t micro_batch = -1;  ///< index of the micro-batch within the step (-1: not set)
  int rank = 0;                   ///< rank of this process in a data-parallel run (0: single)
};

/// Where anomaly mode found the first non-finite value, and what it looked like; carried by
/// AnomalyDetected.
struct AnomalyReport {
  std::string op;             ///< "log", "linear", ...
  std::string tag;            ///< TagScope tags joined by '/', "" when none
  Pass pass = Pass::forward;  ///< the pass the bad tensor was produced in
  AnomalyContext context;     ///< the thread's anomaly_context() when the value was found
  /// Forward: 0 (the op's output). Backward: the position of the input whose gradient went bad,
  /// in the op's operand order.
  int output_index = 0;
  Shape shape;                    ///< of the bad tensor
  std::int64_t first_index = -1;  ///< flat index of the first NaN or ±Inf
  double first_value = 0;         ///< its value
  std::int64_t nan_count = 0;     ///< number of NaN elements in the bad tensor
  std::int64_t inf_count = 0;     ///< number of +Inf and -Inf elements in the bad tensor
  bool created = false;           ///< true: made from finite inputs; false: passed on

  /// One paragraph with every field, e.g. "anomaly in the forward pass of op log (tag
  /// fc1/head) at step 3, micro-batch 0, rank 0: output 0 of shape [4, 2] holds 1 NaN and
  /// 2 Inf values, the first at flat index 5 (-inf); the op created them from finite inputs".
  [[nodiscard]] std::string describe() const;
};

/// The error anomaly mode throws; fault class anomaly, so a Runner rolls back.
class AnomalyDetected : public AnomalyError {
 public:
  /// cause() is report.describe(); fix() depends on report.created (look at this op's inputs,
  /// or at the op that created the value earlier).
  explicit AnomalyDetected(AnomalyReport report);
  /// The report's fields, for programs that act on them.
  [[nodiscard]] const AnomalyReport& report() const noexcept { return report_; }

 private:
  AnomalyReport report_;
};

/// Turns anomaly mode on for this thread while it lives (nests).
class DetectAnomalyScope {
 public:
  DetectAnomalyScope();
  DetectAnomalyScope(const DetectAnomalyScope&) = delete;
  DetectAnomalyScope& operator=(const DetectAnomalyScope&) = delete;
  ~DetectAnomalyScope();
};
/// Whether a DetectAnomalyScope is alive on the calling thread.
[[nodiscard]] bool anomaly_mode();

/// The step, micro-batch and rank that reports on this thread name.
void set_anomaly_context(const AnomalyContext& context);
/// The context last set on this thread (all fields at their defaults until then).
[[nodiscard]] const AnomalyContext& anomaly_context();

/// Labels the ops issued while it lives (a layer name such as "fc1", or any user tag); nested
/// scopes join with '/'. Recorded in each tape node, so backward reports carry the tag too.
class TagScope {
 public:
  /// Appends `tag` to this thread's current tag (after a '/' when it is not empty); the
  /// destructor removes it again. Scopes must end in reverse order of creation.
  explicit TagScope(std::string tag);
  TagScope(const TagScope&) = delete;
  TagScope& operator=(const TagScope&) = delete;
  ~TagScope();
};
/// The tags of the TagScopes alive on this thread, outermost first, joined by '/'; "" when
/// none. The reference is valid until the next TagScope begins or ends on this thread.
[[nodiscard]] const std::string& current_tag();

}  // namespace tenax::train::autodiff
