#include "stop_signals.hpp"

#include <atomic>
#include <csignal>

namespace tenax::runtime::detail {
namespace {

constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGUSR1, SIGHUP};
constexpr int kCount = sizeof(kStopSignals) / sizeof(kStopSignals[0]);

std::atomic<int> pending_signal{0};
struct sigaction previous[kCount];

extern "C" void record_stop_signal(int signal_number) {
  int expected = 0;
  pending_signal.compare_exchange_strong(expected, signal_number);
}

}  // namespace

StopSignals::StopSignals() {
  pending_signal.store(0);
  struct sigaction action {};
  action.sa_handler = record_stop_signal;
  sigemptyset(&action.sa_mask);
  for (int i = 0; i < kCount; ++i) sigaction(kStopSignals[i], &action, &previous[i]);
}

StopSignals::~StopSignals() {
  for (int i = 0; i < kCount; ++i) sigaction(kStopSignals[i], &previous[i], nullptr);
}

int StopSignals::pending() noexcept { return pending_signal.load(); }

}  // namespace tenax::runtime::detail
