#include "injected_faults.hpp"

#include <cstdlib>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "tenax/core/copy.hpp"
#include "tenax/kernels/ops.hpp"

namespace tenax::runtime::detail {
namespace {

bool first_attempt() {
  const char* restarts = std::getenv("TENAX_RESTART_COUNT");
  return restarts == nullptr || std::string_view(restarts).empty() ||
         std::string_view(restarts) == "0";
}

bool ends_process(FaultKind kind) {
  return kind == FaultKind::kill || kind == FaultKind::device || kind == FaultKind::comm ||
         kind == FaultKind::hang;
}

// The plan, less its kill items when the process must not end itself (a restarted attempt).
FaultPlan without_process_ending_faults(const FaultPlan& plan, bool may_end_process) {
  if (may_end_process) return plan;
  std::vector<FaultSpec> kept;
  for (const FaultSpec& spec : plan.faults()) {
    if (spec.kind != FaultKind::kill) kept.push_back(spec);
  }
  return FaultPlan(std::move(kept));
}

}  // namespace

InjectedFaults::InjectedFaults(const FaultPlan* plan, int rank)
    : plan_((plan != nullptr ? *plan : process_fault_plan()).for_rank(rank)),
      checkpoint_plan_(without_process_ending_faults(plan_, first_attempt())),
      may_end_process_(first_attempt()) {}

bool InjectedFaults::fires(FaultKind kind, std::int64_t step_number) {
  for (const FaultSpec& spec : plan_.faults()) {
    if (spec.kind != kind || spec.point != FaultPoint::step) continue;
    if (static_cast<std::uint64_t>(step_number) != spec.first) continue;
    if (ends_process(kind) && !may_end_process_) continue;
    std::uint64_t& times = fired_[&spec];
    if (times >= spec.count) continue;
    ++times;
    return true;
  }
  return false;
}

void InjectedFaults::poison(const StateDict& state, double value) {
  for (const auto& [name, entry] : state.entries()) {
    const Tensor* tensor = std::get_if<Tensor>(&entry);
    if (tensor != nullptr && is_floating(tensor->dtype()) && tensor->numel() > 0) {
      ops::fill(tensor->reshape({tensor->numel()}).slice(0, 1), value);
      return;
    }
  }
}

std::string InjectedFaults::flip_bit(const StateDict& state) {
  for (const auto& [name, entry] : state.entries()) {
    const Tensor* tensor = std::get_if<Tensor>(&entry);
    if (tensor == nullptr || !is_floating(tensor->dtype()) || tensor->numel() == 0) continue;
    const std::int64_t index = tensor->numel() / 2;
    const std::size_t width = size_of(tensor->dtype());
    auto* element = static_cast<unsigned char*>(tensor->data()) + index * width;
    unsigned char bytes[8] = {};
    copy_bytes(bytes, Device::cpu(), element, tensor->device(), width);
    bytes[0] ^= 1u << 3;  // little-endian: the lowest byte holds the lowest mantissa bits
    copy_bytes(element, tensor->device(), bytes, Device::cpu(), width);
    return "bit 3 of element " + std::to_string(index) + " of state tensor '" + name + "'";
  }
  return {};
}

}  // namespace tenax::runtime::detail
