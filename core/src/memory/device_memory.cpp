#include "tenax/core/memory/device_memory.hpp"

#include <algorithm>
#include <bit>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "tenax/core/error.hpp"
#include "tenax/core/fault_injection.hpp"
#include "tenax/core/memory/cuda_memory.hpp"
#include "tenax/core/memory/fault_injecting_resource.hpp"
#include "tenax/core/memory/history_resource.hpp"
#include "tenax/core/memory/host_virtual_memory.hpp"
#include "tenax/core/memory/limiting_resource.hpp"
#include "tenax/core/memory/pool_resource.hpp"
#include "tenax/core/memory/resource_adaptor.hpp"
#include "tenax/core/text.hpp"

namespace tenax {
namespace {

constexpr std::string_view kByteSizeSyntax =
    "write a number with an optional unit: B; KB, MB, GB, TB (powers of 1000); KiB, MiB, GiB, "
    "TiB or K, M, G, T (powers of 1024), e.g. 2GiB, 512MiB, 1.5GB or 1073741824";

std::mutex registry_mutex;
// Never destroyed, like the CUDA contexts: a device pool destroyed by the static destructors at
// exit would unmap through a CUDA runtime that may have unloaded already (the program could
// print PASSED and exit non-zero). The operating system takes the pages back.
std::map<Device, std::shared_ptr<MemoryResource>>& registry() {
  static auto* const resources = new std::map<Device, std::shared_ptr<MemoryResource>>();
  return *resources;
}

// The stack of a device without virtual memory management: the driver's stream-ordered
// allocator (it caches on its own), under the limit when one is set. Said once per device (the
// registry keeps the resource built).
std::shared_ptr<MemoryResource> make_fallback_device_resource(Device device, std::size_t limit,
                                                              const std::string& why) {
  std::fprintf(stderr,
               "tenax: %s %s; its memory comes from cudaMallocAsync without tenax's pool (no "
               "fragmentation-free growth, no pool statistics)%s\n",
               to_string(device).c_str(), why.c_str(),
               limit > 0 ? ", under TENAX_MEMORY_LIMIT" : "");
  std::shared_ptr<MemoryResource> resource = cuda::make_device_resource(device);
  if (limit > 0) resource = std::make_shared<LimitingResource>(std::move(resource), limit);
  return resource;
}

std::shared_ptr<MemoryResource> make_pool(std::shared_ptr<VirtualMemory> arena) {
  PoolOptions options;
  options.capacity = memory_limit_from_environment();  // 0: the arena's physical memory
  if (options.capacity > 0) {
    // A small limit (a small GPU simulated on the CPU) must be usable to the last few percent,
    // so map in units of about 1/32 of it; the pool raises this to the arena's granularity
    // (2 MiB on CUDA).
    options.map_granule = std::clamp(std::bit_floor(options.capacity / 32), std::size_t{64} << 10,
                                     options.map_granule);
  }
  return std::make_shared<PoolResource>(std::move(arena), options);
}

}  // namespace

std::shared_ptr<MemoryResource> make_default_resource(Device device) {
  std::shared_ptr<MemoryResource> resource;
  if (device.is_cpu()) {
    resource = make_pool(std::make_shared<HostVirtualMemory>());
  } else if (cuda::supports_virtual_memory(device)) {
    try {
      resource = make_pool(cuda::make_virtual_memory(device));
    } catch (const OutOfMemoryError& e) {
      // Not even the capacity's worth of addresses was granted: the stream-ordered allocator
      // needs no reservation of its own.
      resource = make_fallback_device_resource(
          device, memory_limit_from_environment(),
          std::string("could not reserve the memory pool's address space (") + e.what() + ")");
    }
  } else {
    resource = make_fallback_device_resource(device, memory_limit_from_environment(),
                                             "does not support virtual memory management");
  }
  // A plan of its own: the resource counts its allocations itself, and a fresh read lets a
  // stack built later pick up a changed TENAX_FAULTS.
  auto plan = std::make_shared<const FaultPlan>(FaultPlan::from_environment());
  if (plan->has(FaultPoint::alloc)) {
    resource = std::make_shared<FaultInjectingResource>(std::move(resource), std::move(plan));
  }
  // On top, so that injected failures are in the history too.
  return std::make_shared<HistoryResource>(std::move(resource));
}

std::shared_ptr<MemoryResource> pinned_host_pool() {
  static std::mutex mutex;
  // Never destroyed: at exit the CUDA runtime may be torn down before static destructors run,
  // and unregistering host memory then fails; the process's exit returns the pages anyway.
  static auto* pool = new std::shared_ptr<MemoryResource>();
  std::lock_guard lock(mutex);
  if (*pool == nullptr) {
    std::shared_ptr<VirtualMemory> arena = cuda::make_pinned_virtual_memory();
    PoolOptions options;
    // Page-locked memory cannot be swapped or reclaimed: leave the other half to everything else.
    options.capacity = arena->physical_bytes() / 2;
    *pool = std::make_shared<PoolResource>(std::move(arena), options);
  }
  return *pool;
}

std::shared_ptr<MemoryResource> current_resource(Device device) {
  std::lock_guard lock(registry_mutex);
  auto& slot = registry()[device];
  if (!slot) slot = make_default_resource(device);
  return slot;
}

std::shared_ptr<MemoryResource> set_current_resource(Device device,
                                                     std::shared_ptr<MemoryResource> resource) {
  TENAX_EXPECTS(resource != nullptr, UsageError, "set_current_resource was given a null resource",
                "pass a constructed MemoryResource");
  TENAX_EXPECTS(resource->device() == device, UsageError,
                "set_current_resource: the resource serves " + to_string(resource->device()) +
                    " but was installed for " + to_string(device),
                "install a resource for the device it allocates on");
  std::lock_guard lock(registry_mutex);
  auto& slot = registry()[device];
  std::swap(slot, resource);
  return resource;
}

MemoryStats memory_stats(Device device) {
  const std::shared_ptr<MemoryResource> resource = current_resource(device);
  if (const PoolResource* pool = find_in_stack<PoolResource>(resource.get())) return pool->stats();
  MemoryStats stats;
  stats.device = device;
  return stats;
}

std::string memory_history_json(Device device) {
  const std::shared_ptr<MemoryResource> resource = current_resource(device);
  const auto* history = find_in_stack<HistoryResource>(resource.get());
  const auto* pool = find_in_stack<PoolResource>(resource.get());
  const auto escaped = [](const char* text) {
    std::string out;
    for (const char* c = text; *c != '\0'; ++c) {
      if (*c == '"' || *c == '\\') out += '\\';
      if (static_cast<unsigned char>(*c) >= 0x20) out += *c;
    }
    return out;
  };
  std::string out = "{\"device\":\"" + to_string(device) + "\"";
  char number[64];
  if (pool != nullptr) {
    const MemoryStats stats = pool->stats();
    std::snprintf(number, sizeof number, "%lld", static_cast<long long>(stats.capacity));
    out += ",\"stats\":{\"capacity\":" + std::string(number);
    out += ",\"allocated\":" + std::to_string(stats.allocated_bytes.current);
    out += ",\"reserved\":" + std::to_string(stats.reserved_bytes.current);
    out += ",\"largest_free_block\":" + std::to_string(stats.largest_free_block) + "}";
  }
  out += ",\"records\":[";
  if (history != nullptr) {
    bool first = true;
    for (const AllocationRecord& r : history->records()) {
      std::snprintf(number, sizeof number, "%.6f", r.seconds);
      out += std::string(first ? "" : ",") + "\n{\"kind\":\"" + to_string(r.kind) +
             "\",\"bytes\":" + std::to_string(r.bytes) +
             ",\"address\":" + std::to_string(r.address) + ",\"step\":" + std::to_string(r.step) +
             ",\"tag\":\"" + escaped(r.tag) + "\",\"seconds\":" + number +
             ",\"outstanding\":" + std::to_string(r.outstanding) + "}";
      first = false;
    }
  }
  out += "],\"total_records\":" + std::to_string(history != nullptr ? history->total() : 0);
  out += ",\"blocks\":[";
  if (pool != nullptr) {
    bool first = true;
    for (const PoolBlock& b : pool->block_map()) {
      out += std::string(first ? "" : ",") + "{\"offset\":" + std::to_string(b.offset) +
             ",\"size\":" + std::to_string(b.size) + ",\"free\":" + (b.free ? "true" : "false") +
             "}";
      first = false;
    }
  }
  return out + "]}\n";
}

std::string memory_summary(Device device) {
  const std::shared_ptr<MemoryResource> resource = current_resource(device);
  if (const PoolResource* pool = find_in_stack<PoolResource>(resource.get())) {
    return pool->memory_summary();
  }
  return "the memory resource of " + to_string(device) +
         " is not a tenax PoolResource; it keeps no statistics\n";
}

std::size_t empty_cache(Device device) { return current_resource(device)->release_cache(); }

std::size_t parse_byte_size(std::string_view text) {
  const std::string original(text);
  auto fail = [&]() -> std::size_t {
    throw UsageError("'" + original + "' is not a byte size", std::string(kByteSizeSyntax));
  };
  std::size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  const std::size_t number_begin = i;
  bool digits = false;
  bool dot = false;
  while (i < text.size()) {
    const char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits = true;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
    ++i;
  }
  if (!digits) return fail();
  const std::string number(text.substr(number_begin, i - number_begin));
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  std::size_t unit_end = text.size();
  while (unit_end > i && std::isspace(static_cast<unsigned char>(text[unit_end - 1]))) --unit_end;
  const std::string unit = lower(text.substr(i, unit_end - i));
  static const std::map<std::string, double> kUnits = {
      {"", 1.0},       {"b", 1.0},      {"kb", 1e3},     {"mb", 1e6},    {"gb", 1e9},
      {"tb", 1e12},    {"k", 0x1p10},   {"m", 0x1p20},   {"g", 0x1p30},  {"t", 0x1p40},
      {"kib", 0x1p10}, {"mib", 0x1p20}, {"gib", 0x1p30}, {"tib", 0x1p40}};
  const auto found = kUnits.find(unit);
  if (found == kUnits.end()) return fail();
  const double value = std::strtod(number.c_str(), nullptr) * found->second;
  // A fraction of a byte rounds up; nothing may overflow size_t.
  if (!std::isfinite(value) || value >= 0x1p63) return fail();
  return static_cast<std::size_t>(std::ceil(value));
}

std::size_t memory_limit_from_environment() {
  const char* value = std::getenv("TENAX_MEMORY_LIMIT");
  if (value == nullptr || *value == '\0') return 0;
  std::size_t limit = 0;
  try {
    limit = parse_byte_size(value);
  } catch (const UsageError& e) {
    throw UsageError("TENAX_MEMORY_LIMIT: " + e.cause(), e.fix());
  }
  TENAX_EXPECTS(limit > 0, UsageError, "TENAX_MEMORY_LIMIT is zero",
                "unset it to use all memory of the device, or give a positive size such as 2GiB");
  return limit;
}

}  // namespace tenax
