// The shared text of the history files: escaping and the fields of one measured run.
#include "headroom/history/history_text.h"

namespace headroom::history_text {

std::string Escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '\t') out += "\\t";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

bool Unescape(std::string_view text, std::string* out) {
  out->clear();
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      *out += text[i];
      continue;
    }
    if (++i == text.size()) return false;
    if (text[i] == '\\') *out += '\\';
    else if (text[i] == 't') *out += '\t';
    else if (text[i] == 'n') *out += '\n';
    else return false;
  }
  return true;
}

bool ParseRunFields(std::string_view* rest, HistoryRecord* record, bool with_rise) {
  std::string_view field, method, outcome;
  if (!NextField(rest, &field) || !ParseInt(field, &record->peak_bytes)) return false;
  if (!NextField(rest, &field) || !ParseInt(field, &record->duration_ms) || record->duration_ms < 0) return false;
  if (!NextField(rest, &method) || method.size() != 1 || !IsPeakMethod(method[0])) return false;
  if (!NextField(rest, &outcome) || outcome.size() != 1 || !IsOutcome(outcome[0])) return false;
  record->method = static_cast<PeakMethod>(method[0]);
  record->outcome = static_cast<JobOutcome>(outcome[0]);
  *record = ClampedToRecordable(*record);  // a file may hold any figure; arithmetic on it must not overflow
  if (!with_rise) return true;
  std::string_view rise;
  return NextField(rest, &rise) && RiseCurve::Parse(rise, &record->rise);
}

}  // namespace headroom::history_text
