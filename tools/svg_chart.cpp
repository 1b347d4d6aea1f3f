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
constexpr double kTickHeight = 7.0;  // a routine marker's tick

std::string number(double v) {
  char text[32];
  // A coordinate is always finite (every value on an axis is); 0 keeps the SVG valid if not.
  std::snprintf(text, sizeof text, "%.1f", std::isfinite(v) ? v : 0.0);
  return text;
}

constexpr double kMaxDouble = std::numeric_limits<double>::max();

// Where v lies on [lo, hi] as a fraction (0 at lo, 1 at hi), for any finite values with lo < hi:
// halved first, so that a span past the largest double (-1e308 to 1e308) does not overflow.
double fraction_of(double v, double lo, double hi) { return (v / 2 - lo / 2) / (hi / 2 - lo / 2); }

// An axis interval, finite with lo < hi.
struct Interval {
  double lo = 0.0;
  double hi = 1.0;
};

Interval clamped(double lo, double hi) {
  return {std::max(lo, -kMaxDouble), std::min(hi, kMaxDouble)};
}

// A span of values too narrow to draw apart (a constant series, or one point): the value c
// centred on [c - pad, c + pad], with a wider pad where this one is lost in c's magnitude.
Interval around(double c, double pad) {
  if (!(c - pad < c && c + pad > c)) pad = std::max(std::fabs(c) * 0.1, 1.0);
  return clamped(c - pad, c + pad);
}

// Whether [lo, hi] is too narrow for its magnitude to draw as a range (or empty).
bool degenerate(double lo, double hi) {
  const double half = hi / 2 - lo / 2;
  return !(half > 0.5e-12 * std::max(std::fabs(lo), std::fabs(hi)));
}

// A tick label with at most `digits` decimals (fixed) or significant digits (otherwise).
std::string tick_text(double v, bool fixed, int digits) {
  if (v == 0.0) return "0";
  char text[64];
  if (fixed) {
    std::snprintf(text, sizeof text, "%.*f", digits, v);
    // 1 and 0.5 rather than 1.0 and 0.50 (distinct ticks stay distinct).
    std::string out = text;
    if (out.find('.') != std::string::npos) {
      out.erase(out.find_last_not_of('0') + 1);
      if (out.back() == '.') out.pop_back();
    }
    return out;
  } else {
    std::snprintf(text, sizeof text, "%.*g", digits, v);
  }
  return text;
}

}  // namespace

AxisTicks axis_ticks(double lo, double hi, int count) {
  AxisTicks out;
  if (!std::isfinite(lo) || !std::isfinite(hi) || !(lo < hi) || count < 1) return out;
  const double raw = (hi / 2 - lo / 2) / count * 2;
  if (!(raw > 0.0) || !std::isfinite(raw)) return out;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 0.0;
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    if (magnitude * m >= raw) {
      step = magnitude * m;
      break;
    }
  }
  if (!(step > 0.0) || !std::isfinite(step)) return out;
  const double first = std::ceil(lo / step);
  if (!std::isfinite(first)) return out;
  // By index, not by adding up steps: a sum drifts, and past 2^53 steps it stops moving.
  for (int i = 0; i < 64; ++i) {
    double t = (first + i) * step;
    if (!std::isfinite(t) || t > hi + step * 1e-9) break;
    if (std::fabs(t) < step * 1e-9) t = 0.0;
    if (!out.values.empty() && t <= out.values.back()) continue;
    out.values.push_back(t);
  }
  // Labels: fixed decimals for everyday magnitudes (40000, 0.25), %g with as many significant
  // digits as the step needs otherwise (1.2e+06, 5e-05); more digits while two labels read alike.
  double largest = 0.0;
  for (const double t : out.values) largest = std::max(largest, std::fabs(t));
  const bool fixed = largest < 1e6 && step >= 1e-3;
  int digits = fixed ? std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)))
                     : static_cast<int>(std::floor(std::log10(std::max(largest, step))) -
                                        std::floor(std::log10(step))) +
                           1;
  digits = std::clamp(digits, fixed ? 0 : 1, 17);
  for (;; ++digits) {
    out.labels.clear();
    for (const double t : out.values) out.labels.push_back(tick_text(t, fixed, digits));
    bool distinct = true;
    for (std::size_t k = 1; k < out.labels.size(); ++k) {
      if (out.labels[k] == out.labels[k - 1]) distinct = false;
    }
    if (distinct || digits >= 17) break;
  }
  return out;
}

namespace {

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
  // The y axis: the values' span padded by a twentieth on each side, so that no value sits on the
  // plot's border; a span too narrow to draw centred on its value; a quantity that starts near
  // zero from zero; a log axis padded alike in decades.
  constexpr double kPad = 0.05;
  Interval y_axis;
  if (log_y) {
    const double lo = std::log10(y_range.lo);
    const double hi = std::log10(y_range.hi);
    y_axis = {lo - kPad * (hi - lo), hi + kPad * (hi - lo)};
  } else if (degenerate(y_range.lo, y_range.hi)) {
    const double c = y_range.lo / 2 + y_range.hi / 2;
    y_axis = around(c, c == 0.0 ? 1.0 : std::fabs(c) * 0.1);
  } else if (y_range.lo > 0.0 && y_range.lo < 0.25 * y_range.hi) {
    y_axis = clamped(0.0, y_range.hi + kPad * y_range.hi);
  } else {
    const double pad = (y_range.hi / 2 - y_range.lo / 2) * 2 * kPad;
    y_axis = clamped(y_range.lo - pad, y_range.hi + pad);
  }
  // The x axis spans the steps (or times) as they are; one x is centred on a step either side.
  const Interval x_axis = degenerate(x_range.lo, x_range.hi)
                              ? around(x_range.lo / 2 + x_range.hi / 2, 0.5)
                              : Interval{x_range.lo, x_range.hi};
  const double plot_w = chart.width - kLeft - kRight;
  const double plot_h = chart.height - kTop - kBottom;
  const double plot_bottom = kTop + plot_h;
  const auto px = [&](double x) { return kLeft + fraction_of(x, x_axis.lo, x_axis.hi) * plot_w; };
  // y of a value already on the axis's scale (log10 of it on a log axis).
  const auto py_scaled = [&](double v) {
    return plot_bottom - fraction_of(v, y_axis.lo, y_axis.hi) * plot_h;
  };
  const auto py = [&](double y) { return py_scaled(log_y ? std::log10(y) : y); };

  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + std::to_string(chart.width) +
         " " + std::to_string(chart.height) + "\" role=\"img\" aria-label=\"" +
         escape_html(chart.title) + "\">\n";
  out += "<rect class=\"plot\" x=\"" + std::to_string(kLeft) + "\" y=\"" + std::to_string(kTop) +
         "\" width=\"" + number(plot_w) + "\" height=\"" + number(plot_h) + "\"/>\n";

  // Grid and tick labels.
  const auto y_tick = [&](double v, const std::string& label) {
    const double y = py_scaled(v);
    out += "<line class=\"grid\" x1=\"" + std::to_string(kLeft) + "\" x2=\"" +
           number(kLeft + plot_w) + "\" y1=\"" + number(y) + "\" y2=\"" + number(y) + "\"/>";
    out += "<text class=\"tick\" x=\"" + std::to_string(kLeft - 6) + "\" y=\"" + number(y + 4) +
           "\" text-anchor=\"end\">" + escape_html(label) + "</text>\n";
  };
  if (log_y) {
    // Whole decades, at most about eight of them labelled.
    const double first = std::ceil(y_axis.lo);
    const double last = std::floor(y_axis.hi);
    const double every = std::max(1.0, std::ceil((last - first) / 8.0));
    for (double d = first; d <= last; d += every) {
      y_tick(d, "1e" + std::to_string(static_cast<int>(d)));
    }
  } else {
    const AxisTicks ticks = axis_ticks(y_axis.lo, y_axis.hi, 5);
    for (std::size_t k = 0; k < ticks.values.size(); ++k) y_tick(ticks.values[k], ticks.labels[k]);
  }
  const AxisTicks x_ticks = axis_ticks(x_axis.lo, x_axis.hi, 8);
  for (std::size_t k = 0; k < x_ticks.values.size(); ++k) {
    const double x = px(x_ticks.values[k]);
    out += "<line class=\"grid\" x1=\"" + number(x) + "\" x2=\"" + number(x) + "\" y1=\"" +
           std::to_string(kTop) + "\" y2=\"" + number(plot_bottom) + "\"/>";
    out += "<text class=\"tick\" x=\"" + number(x) + "\" y=\"" + number(plot_bottom + 16) +
           "\" text-anchor=\"middle\">" + escape_html(x_ticks.labels[k]) + "</text>\n";
  }
  out += "<text class=\"axis\" x=\"" + number(kLeft + plot_w / 2) + "\" y=\"" +
         std::to_string(chart.height - 6) + "\" text-anchor=\"middle\">" +
         escape_html(chart.x_label) + "</text>\n";
  out += "<text class=\"axis\" transform=\"translate(14," + number(kTop + plot_h / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + escape_html(chart.y_label) +
         (log_y ? " (log)" : "") + "</text>\n";

  // Markers under the lines: routine ones as a row of short ticks rising from the x axis, the
  // others across the whole plot.
  for (const bool ticks : {true, false}) {
    for (const ChartMarker& m : chart.markers) {
      if (m.tick != ticks || !std::isfinite(m.x)) continue;
      const double x = px(m.x);
      out += std::string("<line class=\"") + (m.tick ? "marker-tick" : "marker") + " marker-" +
             escape_html(m.kind) + "\" stroke=\"" + escape_html(m.colour) + "\" x1=\"" + number(x) +
             "\" x2=\"" + number(x) + "\" y1=\"" +
             number(m.tick ? plot_bottom - kTickHeight : kTop) + "\" y2=\"" + number(plot_bottom) +
             "\"><title>" + escape_html(m.title) + "</title></line>\n";
    }
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
