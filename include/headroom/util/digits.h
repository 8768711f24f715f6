// ParseDigits: strict, fast conversion of the plain digit strings the log files hold (no sign, spaces or prefix).
// Inline because the log readers call it for every field of every line.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace headroom {

namespace digits_detail {
// Digit values by byte, -1 for non-digits. A table, because hash digits are random: branching on
// "0-9 or a-f" mispredicted about every other character.
inline constexpr std::array<int8_t, 256> kDigitValue = [] {
  std::array<int8_t, 256> table{};
  table.fill(-1);
  for (int c = '0'; c <= '9'; ++c) table[c] = static_cast<int8_t>(c - '0');
  for (int c = 'a'; c <= 'f'; ++c) table[c] = static_cast<int8_t>(c - 'a' + 10);
  for (int c = 'A'; c <= 'F'; ++c) table[c] = static_cast<int8_t>(c - 'A' + 10);
  return table;
}();
}  // namespace digits_detail

// The value of `text` when it is 1..max_digits digits of `base` (10 or 16) and nothing else; false
// otherwise. Callers pick max_digits so the value cannot overflow (19 decimal or 16 hex digits at most).
inline bool ParseDigits(std::string_view text, int base, size_t max_digits, uint64_t* value) {
  if (text.empty() || text.size() > max_digits) return false;
  uint64_t result = 0;
  for (char c : text) {
    const int digit = digits_detail::kDigitValue[static_cast<unsigned char>(c)];
    if (digit < 0 || digit >= base) return false;
    result = result * static_cast<uint64_t>(base) + static_cast<uint64_t>(digit);
  }
  *value = result;
  return true;
}

}  // namespace headroom
