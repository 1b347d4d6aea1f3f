#include "svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace tenax::tools {
namespace {

constexpr int kLeft = 78;  // room for the y tick labels
constexpr int kRight = 16;
constexpr int kTop = 30;
constexpr int kBottom = 44;

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", v);
  return text;
}

// A tick label: short, with an SI-like exponent for large and small values.
std::string tick_label(double v) {
  char text[32];
  const double a = std::fabs(v);
  if (v == 0.0) return "0";
  if (a >= 1e5 || a < 1e-3) {
    std::snprintf(text, sizeof text, "%.2g", v);
  } else {
    std::snprintf(text, sizeof text, "%.4g", v);
  }
  return text;
}

// About `count` round ticks over [lo, hi] (1, 2 or 5 times a power of ten apart).
std::vector<double> linear_ticks(double lo, double hi, int count) {
  std::vector<double> ticks;
  const double span = hi - lo;
  if (!(span > 0.0) || !std::isfinite(span)) return {lo};
  const double raw = span / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    if (magnitude * m >= raw) {
      step = magnitude * m;
      break;
    }
  }
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
    if (ticks.size() > 50) break;
  }
  return ticks;
}

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  [[nodiscard]] bool empty() const { return lo > hi; }
};

}  // namespace

std::string escape_html(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::vector<std::pair<double, double>> thin_points(
    const std::vector<std::pair<double, double>>& points, std::size_t max_points) {
  if (points.size() <= max_points || max_points < 4) return points;
  const std::size_t buckets = max_points / 2;
  std::vector<std::pair<double, double>> out;
  out.reserve(max_points);
  const std::size_t n = points.size();
  for (std::size_t b = 0; b < buckets; ++b) {
    const std::size_t first = b * n / buckets;
    const std::size_t last = (b + 1) * n / buckets;
    if (first >= last) continue;
    std::size_t low = first;
    std::size_t high = first;
    for (std::size_t i = first; i < last; ++i) {
      if (points[i].second < points[low].second) low = i;
      if (points[i].second > points[high].second) high = i;
    }
    out.push_back(points[std::min(low, high)]);
    if (low != high) out.push_back(points[std::max(low, high)]);
  }
  return out;
}

std::string render_chart(const Chart& chart) {
  Range x_range;
  Range y_range;
  bool all_positive = true;
  for (const ChartSeries& series : chart.series) {
    for (const auto& segment : series.segments) {
      for (const auto& [x, y] : segment) {
        if (!std::isfinite(x) || !std::isfinite(y)) continue;
        x_range.add(x);
        y_range.add(y);
        if (!(y > 0.0)) all_positive = false;
      }
    }
  }
  std::string out = "<figure class=\"chart\" id=\"chart-" + escape_html(chart.id) + "\">\n";
  out += "<figcaption>" + escape_html(chart.title) + "</figcaption>\n";
  if (x_range.empty()) {
    out += "<p class=\"empty\">No values recorded.</p>\n</figure>\n";
    return out;
  }
  for (const ChartMarker& m : chart.markers) x_range.add(m.x);
  for (const double x : chart.x_span) x_range.add(x);
  for (const double y : chart.y_span) {
    y_range.add(y);
    if (!(y > 0.0)) all_positive = false;
  }
  const bool log_y = chart.log_y && all_positive && y_range.hi / y_range.lo > 20.0;
  double y_lo = log_y ? std::log10(y_range.lo) : y_range.lo;
  double y_hi = log_y ? std::log10(y_range.hi) : y_range.hi;
  if (log_y) {
    y_lo = std::floor(y_lo);
    y_hi = std::ceil(y_hi);
  } else if (y_hi - y_lo < 1e-12 * std::max(1.0, std::fabs(y_hi))) {
    const double pad = std::max(std::fabs(y_hi) * 0.05, 1e-12);
    y_lo -= pad;
    y_hi += pad;
  } else if (y_lo > 0.0 && y_lo < 0.25 * y_hi) {
    y_lo = 0.0;  // a quantity that starts near zero reads best from zero
  }
  double x_lo = x_range.lo;
  double x_hi = x_range.hi;
  if (x_hi == x_lo) {
    x_lo -= 0.5;
    x_hi += 0.5;
  }
  const double plot_w = chart.width - kLeft - kRight;
  const double plot_h = chart.height - kTop - kBottom;
  const auto px = [&](double x) { return kLeft + (x - x_lo) / (x_hi - x_lo) * plot_w; };
  const auto py = [&](double y) {
    const double v = log_y ? std::log10(y) : y;
    return kTop + plot_h - (v - y_lo) / (y_hi - y_lo) * plot_h;
  };

  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + std::to_string(chart.width) +
         " " + std::to_string(chart.height) + "\" role=\"img\" aria-label=\"" +
         escape_html(chart.title) + "\">\n";
  out += "<rect class=\"plot\" x=\"" + std::to_string(kLeft) + "\" y=\"" + std::to_string(kTop) +
         "\" width=\"" + number(plot_w) + "\" height=\"" + number(plot_h) + "\"/>\n";

  // Grid and tick labels.
  if (log_y) {
    for (double d = y_lo; d <= y_hi + 1e-9; d += 1.0) {
      const double y = kTop + plot_h - (d - y_lo) / (y_hi - y_lo) * plot_h;
      out += "<line class=\"grid\" x1=\"" + std::to_string(kLeft) + "\" x2=\"" +
             number(kLeft + plot_w) + "\" y1=\"" + number(y) + "\" y2=\"" + number(y) + "\"/>";
      out += "<text class=\"tick\" x=\"" + std::to_string(kLeft - 6) + "\" y=\"" + number(y + 4) +
             "\" text-anchor=\"end\">1e" + std::to_string(static_cast<int>(d)) + "</text>\n";
    }
  } else {
    for (const double t : linear_ticks(y_lo, y_hi, 5)) {
      const double y = py(t);
      out += "<line class=\"grid\" x1=\"" + std::to_string(kLeft) + "\" x2=\"" +
             number(kLeft + plot_w) + "\" y1=\"" + number(y) + "\" y2=\"" + number(y) + "\"/>";
      out += "<text class=\"tick\" x=\"" + std::to_string(kLeft - 6) + "\" y=\"" + number(y + 4) +
             "\" text-anchor=\"end\">" + tick_label(t) + "</text>\n";
    }
  }
  for (const double t : linear_ticks(x_lo, x_hi, 8)) {
    const double x = px(t);
    out += "<line class=\"grid\" x1=\"" + number(x) + "\" x2=\"" + number(x) + "\" y1=\"" +
           std::to_string(kTop) + "\" y2=\"" + number(kTop + plot_h) + "\"/>";
    out += "<text class=\"tick\" x=\"" + number(x) + "\" y=\"" + number(kTop + plot_h + 16) +
           "\" text-anchor=\"middle\">" + tick_label(t) + "</text>\n";
  }
  out += "<text class=\"axis\" x=\"" + number(kLeft + plot_w / 2) + "\" y=\"" +
         std::to_string(chart.height - 6) + "\" text-anchor=\"middle\">" +
         escape_html(chart.x_label) + "</text>\n";
  out += "<text class=\"axis\" transform=\"translate(14," + number(kTop + plot_h / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + escape_html(chart.y_label) +
         (log_y ? " (log)" : "") + "</text>\n";

  // Markers under the lines.
  for (const ChartMarker& m : chart.markers) {
    const double x = px(m.x);
    out += "<line class=\"marker marker-" + escape_html(m.kind) + "\" stroke=\"" +
           escape_html(m.colour) + "\" x1=\"" + number(x) + "\" x2=\"" + number(x) + "\" y1=\"" +
           std::to_string(kTop) + "\" y2=\"" + number(kTop + plot_h) + "\"><title>" +
           escape_html(m.title) + "</title></line>\n";
  }

  // The series.
  for (const ChartSeries& series : chart.series) {
    for (const auto& segment : series.segments) {
      std::vector<std::pair<double, double>> finite;
      finite.reserve(segment.size());
      for (const auto& p : segment) {
        if (std::isfinite(p.first) && std::isfinite(p.second) && (!log_y || p.second > 0.0)) {
          finite.push_back(p);
        }
      }
      const auto points = thin_points(finite, kMaxPointsPerSeries);
      if (points.empty()) continue;
      std::string coords;
      coords.reserve(points.size() * 16);
      for (const auto& [x, y] : points) coords += number(px(x)) + "," + number(py(y)) + " ";
      if (points.size() == 1) {
        out += "<circle class=\"series\" r=\"2.5\" fill=\"" + escape_html(series.colour) +
               "\" cx=\"" + number(px(points[0].first)) + "\" cy=\"" +
               number(py(points[0].second)) + "\"/>\n";
        continue;
      }
      out += "<polyline class=\"series\" fill=\"none\" stroke=\"" + escape_html(series.colour) +
             "\"" + (series.dashed ? " stroke-dasharray=\"5,3\"" : "") + " points=\"" + coords +
             "\"><title>" + escape_html(series.label) + "</title></polyline>\n";
    }
  }
  out += "</svg>\n";

  // The legend: the series, then the marker kinds this chart shows.
  out += "<div class=\"legend\">";
  for (const ChartSeries& series : chart.series) {
    out += "<span><i style=\"background:" + escape_html(series.colour) + "\"></i>" +
           escape_html(series.label) + "</span>";
  }
  out += "</div>\n</figure>\n";
  return out;
}

}  // namespace tenax::tools
