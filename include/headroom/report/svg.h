// Svg: a minimal SVG writer for the HTML report's charts (rects, lines, paths, text), counting the
// elements it emits so charts can stay within a size a browser draws quickly; plus a time scale.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

struct Point {
  double x = 0, y = 0;
};

class Svg {
 public:
  // A responsive chart: drawn in a width x height coordinate space, scaled to the page's width.
  Svg(double width, double height, std::string_view label);

  // `attrs` is written as is (e.g. `class="bar" data-tip="..."`); callers escape what they put in it.
  void Rect(double x, double y, double width, double height, std::string_view attrs);
  void Line(double x1, double y1, double x2, double y2, std::string_view attrs);
  void Circle(double cx, double cy, double r, std::string_view attrs);
  void Polygon(const std::vector<Point>& points, std::string_view attrs);
  void Polyline(const std::vector<Point>& points, std::string_view attrs);
  void Text(double x, double y, std::string_view text, std::string_view attrs);
  void Raw(std::string_view markup, int elements = 1);

  int elements() const { return elements_; }
  std::string Finish();

 private:
  void Points(const std::vector<Point>& points);
  std::string out_;
  int elements_ = 0;
};

// Coordinates as the SVG text writes them: at most one decimal.
std::string Num(double value);
// A data-tip attribute (the report's hover tooltip); lines separated by '\n'.
std::string Tip(std::string_view text);

// Maps build time (ms) to x between `left` and `left + width`.
struct TimeScale {
  double left = 0, width = 0;
  int64_t span_ms = 1;
  double X(int64_t ms) const { return left + width * static_cast<double>(ms) / static_cast<double>(span_ms); }
};

// Vertical grid lines and "m:ss" labels under `bottom` for a time axis.
void DrawTimeAxis(Svg* svg, const TimeScale& scale, double top, double bottom, bool labels);

}  // namespace headroom
