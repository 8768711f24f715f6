// Byte-size parsing and formatting: "4G", "1.5GiB", "512M", "60%" for --mem-budget/--mem-reserve and the
// headroom_mem edge hint, and "4.2 GiB" for messages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace headroom {

// Parses a byte count: plain digits ("1048576"), or a number (decimals allowed) followed by K, M, G or T
// with an optional "i" and/or "B" ("4G", "4GiB", "4gb", "1.5 GiB", "512k"). Every suffix is binary (1024-based),
// as for memory sizes everywhere else (free -g, docker, cgroup files). Returns nullopt and sets *error to a
// message naming the input on garbage, negative numbers, empty input or overflow.
std::optional<uint64_t> ParseSize(std::string_view text, std::string* error);

// A budget is either an absolute size or a percentage of the machine/cgroup limit ("75%").
struct BudgetSpec {
  uint64_t bytes = 0;     // set when absolute.
  double fraction = 0.0;  // 0 < fraction <= 1 when given as "N%".
  bool is_fraction() const { return fraction > 0.0; }
  // Resolves against the effective limit; an absolute size wins as given.
  uint64_t Resolve(uint64_t limit_bytes) const;
};

// A budget written without a unit is bytes, so "12" is 12 bytes, almost surely meant as 12G. Below this a
// unitless budget is refused; with a unit ("1M") any size is taken as written.
inline constexpr uint64_t kMinUnitlessBudgetBytes = uint64_t{64} * 1024 * 1024;

// Accepts everything ParseSize accepts plus "N%" with 0 < N <= 100, but not a number without a unit below
// kMinUnitlessBudgetBytes.
std::optional<BudgetSpec> ParseBudget(std::string_view text, std::string* error);

// Human-readable size: "900 B", "512 MiB", "4.2 GiB", "6.0 GiB" (one decimal from GiB up). Used in every reason and message.
std::string FormatBytes(uint64_t bytes);

// bytes × factor, saturated at 0 and UINT64_MAX (a NaN gives 0): converting a double at or above 2^64 to an integer is
// undefined, and the factors come from configuration and history files.
uint64_t ScaleBytes(uint64_t bytes, double factor);

// Sums and differences of byte counts saturated at UINT64_MAX and 0: claims from other builds' ledger entries and
// history are trusted only this far.
inline uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
inline uint64_t SaturatingSub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

inline constexpr uint64_t kKiB = 1024;
inline constexpr uint64_t kMiB = 1024 * kKiB;
inline constexpr uint64_t kGiB = 1024 * kMiB;

}  // namespace headroom
