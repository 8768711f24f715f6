// Byte-size parsing ("4G", "1.5GiB", "60%") and formatting ("4.2 GiB").
#include "headroom/util/byte_size.h"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace headroom {
namespace {

std::string_view Trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

// Splits "1.5GiB" into the number "1.5" and the rest "GiB"; false when there is no well-formed number.
bool SplitNumber(std::string_view text, double* number, std::string_view* rest) {
  size_t pos = 0;
  bool seen_digit = false, seen_dot = false;
  for (; pos < text.size(); ++pos) {
    char c = text[pos];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      seen_digit = true;
    } else if (c == '.' && !seen_dot) {
      seen_dot = true;
    } else {
      break;
    }
  }
  if (!seen_digit) return false;
  // std::from_chars for double is missing in some libstdc++ builds; strtod on a bounded copy is enough here.
  std::string digits(text.substr(0, pos));
  *number = std::strtod(digits.c_str(), nullptr);
  *rest = Trim(text.substr(pos));
  return true;
}

// Maps "", "b", "k", "kb", "kib", "ki", ... (case-insensitive) to a multiplier; 0 for an unknown unit.
uint64_t UnitMultiplier(std::string_view unit) {
  std::string lower;
  for (char c : unit) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.empty() || lower == "b") return 1;
  static constexpr std::string_view kLetters = "kmgt";
  size_t power = kLetters.find(lower[0]);
  if (power == std::string_view::npos) return 0;
  std::string_view tail = std::string_view(lower).substr(1);
  if (!(tail.empty() || tail == "b" || tail == "i" || tail == "ib")) return 0;
  uint64_t multiplier = 1;
  for (size_t i = 0; i <= power; ++i) multiplier *= 1024;
  return multiplier;
}

}  // namespace

std::optional<uint64_t> ParseSize(std::string_view text, std::string* error) {
  std::string_view trimmed = Trim(text);
  double number = 0;
  std::string_view unit;
  if (!SplitNumber(trimmed, &number, &unit)) {
    *error = fmt::format("invalid size '{}': expected a number such as 4G, 512MiB or 1073741824", text);
    return std::nullopt;
  }
  uint64_t multiplier = UnitMultiplier(unit);
  if (multiplier == 0) {
    *error = fmt::format("invalid size '{}': unknown unit '{}' (use K, M, G or T, optionally with i/B)", text, unit);
    return std::nullopt;
  }
  double bytes = number * static_cast<double>(multiplier);
  if (!std::isfinite(bytes) || bytes >= 18e18) {
    *error = fmt::format("invalid size '{}': too large", text);
    return std::nullopt;
  }
  return static_cast<uint64_t>(std::llround(bytes));
}

std::optional<BudgetSpec> ParseBudget(std::string_view text, std::string* error) {
  std::string_view trimmed = Trim(text);
  if (!trimmed.empty() && trimmed.back() == '%') {
    double percent = 0;
    std::string_view rest;
    if (!SplitNumber(Trim(trimmed.substr(0, trimmed.size() - 1)), &percent, &rest) || !rest.empty() ||
        percent <= 0.0 || percent > 100.0) {
      *error = fmt::format("invalid budget '{}': a percentage must be in (0, 100]", text);
      return std::nullopt;
    }
    BudgetSpec spec;
    spec.fraction = percent / 100.0;
    return spec;
  }
  std::optional<uint64_t> bytes = ParseSize(text, error);
  if (!bytes) return std::nullopt;
  const bool unitless = std::isdigit(static_cast<unsigned char>(trimmed.back())) || trimmed.back() == '.';
  if (unitless && *bytes < kMinUnitlessBudgetBytes) {
    *error = fmt::format("'{}': a number without a unit is bytes, and {} bytes is below the {} floor for a budget "
                         "in bytes (write {}G for gigabytes)", trimmed, *bytes, FormatBytes(kMinUnitlessBudgetBytes),
                         trimmed);
    return std::nullopt;
  }
  BudgetSpec spec;
  spec.bytes = *bytes;
  return spec;
}

uint64_t BudgetSpec::Resolve(uint64_t limit_bytes) const {
  if (is_fraction()) return ScaleBytes(limit_bytes, fraction);
  return bytes;
}

std::string FormatBytes(uint64_t bytes) {
  if (bytes < kKiB) return fmt::format("{} B", bytes);
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / kKiB;
  int unit = 0;
  while (value >= 1024.0 && unit < 3) {
    value /= 1024.0;
    ++unit;
  }
  // KiB and MiB read best whole ("512 MiB"); GiB and up need the decimal ("4.2 GiB", "6.0 GiB").
  if (unit < 2) return fmt::format("{:.0f} {}", value, kUnits[unit]);
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

uint64_t ScaleBytes(uint64_t bytes, double factor) {
  const double scaled = static_cast<double>(bytes) * factor;
  if (!(scaled > 0)) return 0;
  if (scaled >= 18446744073709551616.0) return UINT64_MAX;  // 2^64
  return static_cast<uint64_t>(scaled);
}

}  // namespace headroom
