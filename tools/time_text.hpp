// Times, durations and medians as `tenax report` and `tenax watch` show them, written once.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <ctime>
#include <string>
#include <vector>

namespace tenax::tools {

// Seconds since the epoch in UTC with a strftime `format` ("-" for no time).
inline std::string utc_text(double seconds, const char* format = "%Y-%m-%d %H:%M:%S UTC") {
  if (!(seconds > 0.0)) return "-";
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[48];
  std::strftime(text, sizeof text, format, &tm);
  return text;
}

// A duration in the unit that reads best: us, ms, s, min or h ("-" for negative or not finite).
inline std::string duration_text(double s) {
  if (!std::isfinite(s) || s < 0) return "-";
  if (s > 0 && s < 1e-3) return fmt::format("{:.3g} us", s * 1e6);
  if (s > 0 && s < 1.0) return fmt::format("{:.3g} ms", s * 1e3);
  if (s < 120.0) return fmt::format("{:.3g} s", s);
  if (s < 7200.0) return fmt::format("{:.1f} min", s / 60.0);
  return fmt::format("{:.2f} h", s / 3600.0);
}

// The median (the upper one of an even count); 0 for none.
inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace tenax::tools
