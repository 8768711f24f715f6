// ANSI-aware width, middle elision and escape stripping for the console output.
#include "headroom/status/ansi_text.h"

namespace headroom {
namespace {

constexpr char kEscape = '\x1b';

bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Length of the CSI sequence starting at `pos`, or 0 when none starts there.
// An unterminated sequence runs to the end of the text.
size_t CsiLengthAt(std::string_view text, size_t pos) {
  if (text[pos] != kEscape || pos + 1 >= text.size() || text[pos + 1] != '[') return 0;
  size_t end = pos + 2;
  while (end < text.size() && !IsAsciiLetter(text[end])) ++end;
  if (end < text.size()) ++end;  // the final letter belongs to the sequence
  return end - pos;
}

}  // namespace

size_t VisibleWidth(std::string_view text) {
  size_t width = 0;
  for (size_t pos = 0; pos < text.size();) {
    if (size_t csi = CsiLengthAt(text, pos)) {
      pos += csi;
    } else {
      ++width;
      ++pos;
    }
  }
  return width;
}

std::string ElideMiddle(std::string_view text, size_t width) {
  const size_t visible = VisibleWidth(text);
  if (visible <= width) return std::string(text);

  const std::string_view ellipsis = std::string_view("...").substr(0, width < 3 ? width : 3);
  const size_t keep_left = (width - ellipsis.size()) / 2;
  const size_t keep_right = width - ellipsis.size() - keep_left;
  const size_t right_starts_at = visible - keep_right;

  std::string result;
  result.reserve(text.size());
  bool ellipsis_written = false;
  size_t column = 0;
  for (size_t pos = 0; pos < text.size();) {
    // The dots go right after the last kept left column, before any escape that follows it.
    if (!ellipsis_written && column == keep_left) {
      result.append(ellipsis);
      ellipsis_written = true;
    }
    if (size_t csi = CsiLengthAt(text, pos)) {
      result.append(text.substr(pos, csi));
      pos += csi;
      continue;
    }
    if (column < keep_left || column >= right_starts_at) result.push_back(text[pos]);
    ++column;
    ++pos;
  }
  return result;
}

std::string StripAnsiEscapeCodes(std::string_view text) {
  std::string result;
  result.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    if (text[pos] != kEscape) {
      result.push_back(text[pos++]);
    } else if (size_t csi = CsiLengthAt(text, pos)) {
      pos += csi;
    } else {
      ++pos;  // a lone ESC: drop it, keep what follows
    }
  }
  return result;
}

}  // namespace headroom
