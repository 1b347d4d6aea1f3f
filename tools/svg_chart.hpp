// Line charts as inline SVG for the run report: no script, no external file, readable in any
// browser years later and printable. Each chart has a title, axis labels, one or more series
// (each a list of segments, so that a rollback or a restart breaks the line instead of drawing
// back over it), vertical markers for events (or a row of small ticks along the bottom axis for
// routine ones), and a legend.
//
// The axes hold any finite values: a constant series is centred, values are padded off the plot's
// border, tick labels are distinct and short, and non-finite values are left out (nothing in the
// SVG is ever NaN or infinite).
//
// Long runs are thinned to at most kMaxPointsPerSeries points per series by keeping, for each of
// kMaxPointsPerSeries / 2 buckets of x, the lowest and the highest point: spikes survive.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace tenax::tools {

inline constexpr std::size_t kMaxPointsPerSeries = 2000;

struct ChartSeries {
  std::string label;
  std::string colour;                                            // a CSS colour
  std::vector<std::vector<std::pair<double, double>>> segments;  // (x, y) points, x ascending
  bool dashed = false;
};

struct ChartMarker {
  double x = 0.0;
  std::string kind;    // CSS class suffix: marker-<kind>
  std::string colour;  // a CSS colour
  std::string title;   // shown on hover (an SVG <title>)
  // A short faint tick along the bottom axis instead of a full-height line: for routine events
  // that come often (checkpoints), so that they do not hide the ones that changed the run.
  bool tick = false;
};

struct Chart {
  std::string id;  // the element id ("chart-<id>")
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<ChartSeries> series;
  std::vector<ChartMarker> markers;
  bool log_y = false;  // used only when every y is positive
  // Values the axes must span besides the points and markers: charts drawn as lanes of one
  // quantity (a chart per rank) pass the extremes of all lanes, so that they share one scale.
  std::vector<double> x_span;
  std::vector<double> y_span;
  int width = 1180;
  int height = 280;
};

// The <figure> holding the chart's SVG; a chart with no points says so instead.
[[nodiscard]] std::string render_chart(const Chart& chart);

// Round tick values over [lo, hi] (about `count` of them, 1, 2 or 5 times a power of ten apart)
// and their labels: as short as they can be while no two are the same. Empty when lo and hi are
// not finite or lo >= hi.
struct AxisTicks {
  std::vector<double> values;
  std::vector<std::string> labels;
};
[[nodiscard]] AxisTicks axis_ticks(double lo, double hi, int count);

// Text made safe inside HTML and SVG (&, <, >, " and ').
[[nodiscard]] std::string escape_html(const std::string& text);

// x thinned to at most `max_points` points, keeping the lowest and highest y of each bucket of x
// in x order; shorter inputs are returned as they are.
[[nodiscard]] std::vector<std::pair<double, double>> thin_points(
    const std::vector<std::pair<double, double>>& points, std::size_t max_points);

}  // namespace tenax::tools
