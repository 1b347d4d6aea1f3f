#include "step_context.hpp"

namespace tenax::runtime::detail {
namespace {

// One per thread: the ranks of a threaded job each step on their own thread.
thread_local StepContext* current_context = nullptr;

}  // namespace

StepContext::Scope::Scope(StepContext& context, std::int64_t step) : previous_(current_context) {
  context.step_ = step;
  context.count_ = 0;
  context.dropped_ = 0;
  current_context = &context;
}

StepContext::Scope::~Scope() { current_context = previous_; }

StepContext* StepContext::current() noexcept { return current_context; }

void StepContext::notify(const StepNotice& notice) noexcept {
  if (count_ < notices_.size()) {
    notices_[count_++] = notice;
  } else {
    ++dropped_;
  }
}

}  // namespace tenax::runtime::detail

namespace tenax::runtime {

std::int64_t current_step() noexcept {
  const detail::StepContext* run = detail::StepContext::current();
  return run != nullptr ? run->step() : 0;
}

bool step_injects(FaultKind kind) {
  detail::StepContext* run = detail::StepContext::current();
  return run != nullptr && run->injects(kind);
}

void notify_step(const StepNotice& notice) noexcept {
  if (detail::StepContext* run = detail::StepContext::current()) run->notify(notice);
}

}  // namespace tenax::runtime
