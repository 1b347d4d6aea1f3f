#include "tenax/core/profiler.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/core/regular_file.hpp"

namespace tenax::profiling {
namespace {

struct Event {
  const char* name;
  std::int64_t begin_ns;
  std::int64_t end_ns;
  std::int64_t step;
  std::uint32_t thread;
};

std::atomic<bool> recording{false};
std::mutex mutex;
std::vector<Event> events;   // guarded by mutex
std::size_t capacity = 0;    // guarded by mutex
std::uint64_t dropped = 0;   // guarded by mutex
std::int64_t origin_ns = 0;  // guarded by mutex (set before recording starts)
std::atomic<std::uint32_t> next_thread{0};

std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A small number per thread, in order of first use: the trace's track.
std::uint32_t thread_index() noexcept {
  thread_local const std::uint32_t index = next_thread.fetch_add(1, std::memory_order_relaxed);
  return index;
}

// A span name as a JSON string body (names are literals of this code base, but escape anyway).
void append_escaped(std::string& out, const char* text) {
  for (const char* c = text; *c != '\0'; ++c) {
    if (*c == '"' || *c == '\\') out += '\\';
    if (static_cast<unsigned char>(*c) < 0x20) continue;
    out += *c;
  }
}

void append_microseconds(std::string& out, std::int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%lld.%03lld", static_cast<long long>(ns / 1000),
                static_cast<long long>(ns % 1000));
  out += text;
}

}  // namespace

bool enabled() noexcept { return recording.load(std::memory_order_relaxed); }

bool start(std::size_t max_events) {
  TENAX_EXPECTS(max_events >= 1, UsageError, "profiling::start with room for 0 spans",
                "give max_events of at least 1");
  std::lock_guard lock(mutex);
  if (recording.load(std::memory_order_relaxed)) return false;
  events.clear();
  events.reserve(std::min<std::size_t>(max_events, 65536));
  capacity = max_events;
  dropped = 0;
  origin_ns = now_ns();
  recording.store(true, std::memory_order_release);
  return true;
}

void discard() noexcept {
  std::lock_guard lock(mutex);
  recording.store(false, std::memory_order_release);
  std::vector<Event>().swap(events);
  dropped = 0;
}

std::size_t stop_and_write(const std::filesystem::path& path, int rank) {
  std::vector<Event> taken;
  std::uint64_t lost = 0;
  std::int64_t origin = 0;
  {
    std::lock_guard lock(mutex);
    if (!recording.load(std::memory_order_relaxed)) return 0;
    recording.store(false, std::memory_order_release);
    taken.swap(events);
    lost = dropped;
    origin = origin_ns;
  }
  std::string out;
  out.reserve(taken.size() * 110 + 512);
  out += "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"tenax\",\"dropped_spans\":";
  out += std::to_string(lost);
  out += "},\"traceEvents\":[\n";
  out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + std::to_string(rank) +
         ",\"tid\":0,\"args\":{\"name\":\"rank " + std::to_string(rank) + "\"}}";
  for (const Event& e : taken) {
    out += ",\n{\"name\":\"";
    append_escaped(out, e.name);
    out += "\",\"cat\":\"tenax\",\"ph\":\"X\",\"ts\":";
    append_microseconds(out, e.begin_ns - origin);
    out += ",\"dur\":";
    append_microseconds(out, e.end_ns - e.begin_ns);
    out += ",\"pid\":" + std::to_string(rank) + ",\"tid\":" + std::to_string(e.thread);
    if (e.step >= 0) out += ",\"args\":{\"step\":" + std::to_string(e.step) + "}";
    out += "}";
  }
  out += "\n]}\n";

  // Replaced whole (a temporary renamed over it), and only a regular file: a device, FIFO or
  // symbolic link given as the profile is refused, never replaced.
  replace_file_contents(path, "--profile", out);
  return taken.size();
}

Span::Span(const char* name, std::int64_t step) noexcept : name_(name), step_(step) {
  if (recording.load(std::memory_order_relaxed)) begin_ns_ = now_ns();
}

Span::~Span() {
  if (begin_ns_ < 0) return;
  const std::int64_t end = now_ns();
  const std::uint32_t thread = thread_index();
  std::lock_guard lock(mutex);
  if (!recording.load(std::memory_order_relaxed)) return;
  if (events.size() >= capacity) {
    ++dropped;
    return;
  }
  try {
    events.push_back({name_, begin_ns_, end, step_, thread});
  } catch (const std::bad_alloc&) {
    ++dropped;  // no memory for the record: the span is lost, never the run
  }
}

}  // namespace tenax::profiling
