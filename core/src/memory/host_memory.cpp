#include "tenax/core/memory/host_memory.hpp"

#include <charconv>
#include <cstdio>
#include <string>

namespace tenax {

std::optional<std::size_t> parse_mem_available(std::string_view meminfo) {
  constexpr std::string_view kKey = "MemAvailable:";
  std::size_t at = meminfo.find(kKey);
  while (at != std::string_view::npos && at > 0 && meminfo[at - 1] != '\n') {
    at = meminfo.find(kKey, at + 1);
  }
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = meminfo.substr(at + kKey.size());
  rest = rest.substr(0, rest.find('\n'));
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  std::size_t kib = 0;
  const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), kib);
  if (error != std::errc{} || end == rest.data()) return std::nullopt;
  std::string_view unit(end, static_cast<std::size_t>(rest.data() + rest.size() - end));
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  while (!unit.empty() && (unit.back() == ' ' || unit.back() == '\r')) unit.remove_suffix(1);
  if (unit != "kB" || kib > (static_cast<std::size_t>(-1) >> 10)) return std::nullopt;
  return kib << 10;
}

std::optional<std::size_t> host_memory_available() {
  std::FILE* file = std::fopen("/proc/meminfo", "r");
  if (file == nullptr) return std::nullopt;
  std::string text(8192, '\0');
  const std::size_t got = std::fread(text.data(), 1, text.size(), file);
  std::fclose(file);
  text.resize(got);
  return parse_mem_available(text);
}

}  // namespace tenax
