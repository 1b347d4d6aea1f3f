#include "tenax/core/memory/memory_stats.hpp"

#include <cstdio>
#include <string>

namespace tenax {

std::string format_bytes(std::size_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 5) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.2f %s", value, kUnits[unit]);
  return text;
}

namespace {

std::string cell(const std::string& text, int width) {
  std::string out = text;
  if (static_cast<int>(out.size()) < width) out.insert(0, width - out.size(), ' ');
  return out;
}

std::string row(const std::string& name, const std::string& current, const std::string& peak,
                const std::string& total) {
  std::string line = "| " + name;
  line.resize(26, ' ');
  return line + "|" + cell(current, 13) + " |" + cell(peak, 13) + " |" + cell(total, 13) + " |\n";
}

std::string bytes_row(const std::string& name, const StatCounter& c) {
  return row(name, format_bytes(static_cast<std::size_t>(c.current)),
             format_bytes(static_cast<std::size_t>(c.peak)),
             format_bytes(static_cast<std::size_t>(c.total)));
}

std::string count_row(const std::string& name, const StatCounter& c) {
  return row(name, std::to_string(c.current), std::to_string(c.peak), std::to_string(c.total));
}

}  // namespace

std::string format_memory_summary(const MemoryStats& s) {
  const std::string rule(71, '-');
  std::string out;
  out += "|" + std::string(71, '=') + "|\n";
  std::string title = "| tenax memory summary: " + to_string(s.device) + ", capacity " +
                      format_bytes(s.capacity) + ", address space " + format_bytes(s.address_space);
  title.resize(72, ' ');
  out += title + "|\n";
  out += "|" + rule + "|\n";
  out += row("Metric", "Current", "Peak", "Total");
  out += "|" + rule + "|\n";
  out += bytes_row("Allocated memory", s.allocated_bytes);
  out += bytes_row("Requested memory", s.requested_bytes);
  out += bytes_row("Reserved memory", s.reserved_bytes);
  out += count_row("Active blocks", s.active_blocks);
  out += "|" + rule + "|\n";
  out += row("Reserved, unallocated", format_bytes(s.reserved_unallocated), "-", "-");
  out += row("Free blocks", std::to_string(s.free_blocks), "-", "-");
  out += row("Largest free block", format_bytes(s.largest_free_block), "-", "-");
  char fragmentation[32];
  std::snprintf(fragmentation, sizeof fragmentation, "%.3f", s.fragmentation);
  out += row("Fragmentation", fragmentation, "-", "-");
  out += "|" + rule + "|\n";
  std::string events = "| cache hits " + std::to_string(s.cache_hits) + ", ladder retries " +
                       std::to_string(s.retries) + ", OOMs " + std::to_string(s.ooms) +
                       ", released " + format_bytes(s.released_bytes);
  events.resize(72, ' ');
  out += events + "|\n";
  out += "|" + std::string(71, '=') + "|\n";
  return out;
}

}  // namespace tenax
