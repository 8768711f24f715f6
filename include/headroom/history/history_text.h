// The text both history files are written in (the build dir's .ninja_headroom and the per-user store): tab-
// separated fields, escaped names, integers, and the fields of one measured run.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

#include "headroom/history/history_store.h"

namespace headroom::history_text {

// Escapes \, TAB and newline, so a name can be the last field of a line.
std::string Escape(std::string_view text);
// Decodes `text` into *out; false on a bad escape.
bool Unescape(std::string_view text, std::string* out);

// Splits off the next tab-separated field; false when there is none.
inline bool NextField(std::string_view* rest, std::string_view* field) {
  if (rest->empty()) return false;
  size_t tab = rest->find('\t');
  *field = rest->substr(0, tab);
  rest->remove_prefix(tab == std::string_view::npos ? rest->size() : tab + 1);
  return true;
}

// The whole of `text` as an integer in `base`; false for anything else (empty, a sign, trailing bytes).
template <typename Int>
bool ParseInt(std::string_view text, Int* value, int base = 10) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value, base);
  return ec == std::errc() && end == text.data() + text.size();
}

inline bool IsPeakMethod(char c) { return c == 'u' || c == 'c' || c == 't' || c == 'r'; }
inline bool IsOutcome(char c) { return c == 'c' || c == 'o' || c == 's'; }

// Reads "<peak bytes> TAB <duration ms> TAB <method> TAB <outcome>", and with `with_rise` (format v2 on) "TAB
// <rise curve>" (RiseCurve::Format), from the front of *rest into *record, leaving what follows (after a tab) in
// *rest; false when a field is missing or malformed.
bool ParseRunFields(std::string_view* rest, HistoryRecord* record, bool with_rise);

}  // namespace headroom::history_text
