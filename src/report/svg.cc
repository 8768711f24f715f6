// The report's SVG writer and its shared time axis.
#include "headroom/report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "headroom/report/report_format.h"

namespace headroom {

std::string Num(double value) {
  if (!std::isfinite(value)) value = 0;
  char text[32];
  snprintf(text, sizeof text, "%.1f", value);
  std::string number = text;
  if (number.size() > 2 && number.compare(number.size() - 2, 2, ".0") == 0) number.resize(number.size() - 2);
  if (number == "-0") number = "0";
  return number;
}

std::string Tip(std::string_view text) { return "data-tip=\"" + HtmlEscape(text) + "\""; }

Svg::Svg(double width, double height, std::string_view label) {
  out_ = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" viewBox=\"0 0 " + Num(width) + " " +
         Num(height) + "\" role=\"img\" aria-label=\"" + HtmlEscape(label) + "\">\n";
}

void Svg::Rect(double x, double y, double width, double height, std::string_view attrs) {
  out_ += "<rect x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" width=\"" + Num(std::max(0.0, width)) +
          "\" height=\"" + Num(std::max(0.0, height)) + "\" ";
  out_ += attrs;
  out_ += "/>\n";
  ++elements_;
}

void Svg::Line(double x1, double y1, double x2, double y2, std::string_view attrs) {
  out_ += "<line x1=\"" + Num(x1) + "\" y1=\"" + Num(y1) + "\" x2=\"" + Num(x2) + "\" y2=\"" + Num(y2) + "\" ";
  out_ += attrs;
  out_ += "/>\n";
  ++elements_;
}

void Svg::Circle(double cx, double cy, double r, std::string_view attrs) {
  out_ += "<circle cx=\"" + Num(cx) + "\" cy=\"" + Num(cy) + "\" r=\"" + Num(r) + "\" ";
  out_ += attrs;
  out_ += "/>\n";
  ++elements_;
}

void Svg::Points(const std::vector<Point>& points) {
  out_ += "points=\"";
  for (size_t i = 0; i < points.size(); ++i) {
    if (i) out_ += ' ';
    out_ += Num(points[i].x) + "," + Num(points[i].y);
  }
  out_ += "\" ";
}

void Svg::Polygon(const std::vector<Point>& points, std::string_view attrs) {
  out_ += "<polygon ";
  Points(points);
  out_ += attrs;
  out_ += "/>\n";
  ++elements_;
}

void Svg::Polyline(const std::vector<Point>& points, std::string_view attrs) {
  out_ += "<polyline ";
  Points(points);
  out_ += attrs;
  out_ += "/>\n";
  ++elements_;
}

void Svg::Text(double x, double y, std::string_view text, std::string_view attrs) {
  out_ += "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" ";
  out_ += attrs;
  out_ += ">" + HtmlEscape(text) + "</text>\n";
  ++elements_;
}

void Svg::Raw(std::string_view markup, int elements) {
  out_ += markup;
  elements_ += elements;
}

std::string Svg::Finish() { return out_ + "</svg>\n"; }

void DrawTimeAxis(Svg* svg, const TimeScale& scale, double top, double bottom, bool labels) {
  constexpr int kTargetTicks = 8;
  const int64_t step = TimeTickStep(scale.span_ms, kTargetTicks);
  const bool tenths = step < 1000;
  for (int64_t t = 0; t <= scale.span_ms; t += step) {
    const double x = scale.X(t);
    svg->Line(x, top, x, bottom, "class=\"grid\"");
    if (labels) svg->Text(x, bottom + 16, FormatClock(t, tenths), "class=\"axis\" text-anchor=\"middle\"");
  }
}

}  // namespace headroom
