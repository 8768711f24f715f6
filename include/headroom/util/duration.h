// Durations written the way people write them on command lines ("5h30m", "90m", "45s") and back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace headroom {

// Parses hours, minutes and seconds, each a whole number followed by its unit, largest unit first, each at
// most once ("5h30m", "90m", "45s", "1h0m30s"). Returns milliseconds, or nullopt with *error saying why
// (empty, a number without a unit, an unknown or repeated unit, zero, or more than a year).
std::optional<int64_t> ParseDuration(std::string_view text, std::string* error);

// Milliseconds as the parser reads them, whole seconds ("5h30m", "1m05s", "45s"); below a second: "0.4s".
std::string DurationText(int64_t ms);

}  // namespace headroom
