#include <cmath>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "detail/anomaly_scan.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/train/autodiff/anomaly.hpp"

namespace tenax::train::autodiff {
namespace {

struct ThreadAnomalyState {
  int depth = 0;
  AnomalyContext context;
  std::vector<std::size_t> tag_lengths;  // length of `tag` before each TagScope
  std::string tag;
};

ThreadAnomalyState& state() {
  thread_local ThreadAnomalyState s;
  return s;
}

std::string format_value(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream out;
  out << v;
  return out.str();
}

bool finite(const Tensor& t) { return ops::count_nonfinite(t) == 0; }

AnomalyReport make_report(const char* op, std::string tag, Pass pass, int output_index,
                          const Tensor& bad, const ops::NonfiniteReport& scan, bool created) {
  AnomalyReport report;
  report.op = op;
  report.tag = std::move(tag);
  report.pass = pass;
  report.context = state().context;
  report.output_index = output_index;
  report.shape = bad.shape();
  report.first_index = scan.first_index;
  report.first_value = scan.first_value;
  report.nan_count = scan.nan_count;
  report.inf_count = scan.inf_count;
  report.created = created;
  return report;
}

}  // namespace

const char* to_string(Pass pass) noexcept { return pass == Pass::forward ? "forward" : "backward"; }

std::string AnomalyReport::describe() const {
  std::ostringstream out;
  out << "anomaly in the " << to_string(pass) << " pass of op " << op;
  if (!tag.empty()) out << " (tag " << tag << ")";
  out << " at step " << context.step << ", micro-batch " << context.micro_batch << ", rank "
      << context.rank << ": ";
  if (pass == Pass::forward) {
    out << "output " << output_index;
  } else {
    out << "the gradient of input " << output_index;
  }
  out << " of shape " << to_string(shape) << " holds " << nan_count << " NaN and " << inf_count
      << " Inf values, the first at flat index " << first_index << " (" << format_value(first_value)
      << "); the op "
      << (created ? "created them from finite inputs"
                  : (pass == Pass::forward ? "passed on a non-finite input"
                                           : "passed on a non-finite incoming gradient"));
  return out.str();
}

AnomalyDetected::AnomalyDetected(AnomalyReport report)
    : AnomalyError(
          report.describe(),
          report.created
              ? "look at the inputs of this op where it is undefined or overflows (log "
                "or division of 0, exp of large values, f16 range), e.g. clamp them, "
                "add an epsilon, lower the learning rate or use bf16 or f32 as the training "
                "precision"
              : "the value came from earlier: the report of the op that created it "
                "names the cause (check the input data when no op did)"),
      report_(std::move(report)) {}

DetectAnomalyScope::DetectAnomalyScope() { ++state().depth; }
DetectAnomalyScope::~DetectAnomalyScope() { --state().depth; }
bool anomaly_mode() { return state().depth > 0; }

void set_anomaly_context(const AnomalyContext& context) { state().context = context; }
const AnomalyContext& anomaly_context() { return state().context; }

TagScope::TagScope(std::string tag) {
  ThreadAnomalyState& s = state();
  s.tag_lengths.push_back(s.tag.size());
  if (!s.tag.empty()) s.tag += '/';
  s.tag += tag;
}
TagScope::~TagScope() {
  ThreadAnomalyState& s = state();
  s.tag.resize(s.tag_lengths.back());
  s.tag_lengths.pop_back();
}
const std::string& current_tag() { return state().tag; }

namespace detail {

void scan_forward(const char* op, const std::vector<const Variable*>& inputs, const Tensor& value) {
  const ops::NonfiniteReport scan = ops::find_nonfinite(value);
  if (scan.first_index < 0) return;
  bool created = true;
  for (const Variable* v : inputs) {
    if (v != nullptr && v->defined() && !finite(v->value())) created = false;
  }
  throw AnomalyDetected(make_report(op, current_tag(), Pass::forward, 0, value, scan, created));
}

void scan_gradient(const char* op, const std::string& tag, int input_index, const Tensor& grad,
                   const Tensor& grad_output) {
  const ops::NonfiniteReport scan = ops::find_nonfinite(grad);
  if (scan.first_index < 0) return;
  const bool created = !grad_output.defined() || finite(grad_output);
  throw AnomalyDetected(make_report(op, tag, Pass::backward, input_index, grad, scan, created));
}

}  // namespace detail
}  // namespace tenax::train::autodiff
