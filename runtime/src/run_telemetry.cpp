#include "run_telemetry.hpp"

#include <vector>

#include "tenax/core/memory/device_memory.hpp"
#include "tenax/core/profiler.hpp"
#include "tenax/runtime/run_events.hpp"

namespace tenax::runtime::detail {

void RunTelemetry::record(const std::string& trigger, std::int64_t step, EventLog& events,
                          const RunConsole& console) {
  if (every_seconds_ == 0) return;
  const profiling::Span span("telemetry");
  if (!readings_) readings_.emplace(workload_.device());
  const auto now = std::chrono::steady_clock::now();
  TelemetrySample sample;
  sample.trigger = trigger;
  sample.wall_seconds = std::chrono::duration<double>(now - started_at_).count();
  sample.step = step;
  const double interval = std::chrono::duration<double>(now - sampled_at_).count();
  if (interval_steps_ > 0) {
    const auto per_step = [&](double sum) { return sum / static_cast<double>(interval_steps_); };
    sample.steps_per_second = interval > 0 ? static_cast<double>(interval_steps_) / interval : 0;
    sample.step_seconds = per_step(interval_.seconds);
    sample.compute_seconds = per_step(interval_.compute_seconds);
    sample.slowest_compute_seconds = per_step(interval_.slowest_compute_seconds);
  }
  sample.rank = rank_;
  sample.slowest_rank = interval_.slowest_rank;
  sample.warm_up = !sampled_steps_;
  if (interval_steps_ > 0) sampled_steps_ = true;
  sample.host_resident_bytes = host_resident_bytes();
  sample.device = workload_.device();
  sample.pool = memory_stats(sample.device);
  sample.gpu = readings_->read();
  const std::vector<EventLog::Field> fields = telemetry_fields(sample);
  events.append(event::telemetry, fields, /*durable=*/false);
  for (const TelemetryWarning& warning : monitor_.observe(sample)) {
    events.append(
        event::warning,
        {{"step", step}, {"kind", warning.kind}, {"cause", warning.cause}, {"fix", warning.fix}});
    console.say("warning: %s -- fix: %s", warning.cause.c_str(), warning.fix.c_str());
  }
  sampled_at_ = now;
  interval_steps_ = 0;
  interval_ = {};
}

void RunTelemetry::after_step(const StepTimes& times, std::int64_t step, EventLog& events,
                              const RunConsole& console) {
  if (every_seconds_ == 0) return;
  ++interval_steps_;
  interval_.seconds += times.seconds;
  interval_.compute_seconds += times.compute_seconds;
  interval_.slowest_compute_seconds += times.slowest_compute_seconds;
  interval_.slowest_rank = times.slowest_rank;
  const double since =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - sampled_at_).count();
  if (since >= every_seconds_) record("interval", step, events, console);
}

}  // namespace tenax::runtime::detail
