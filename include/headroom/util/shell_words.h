// Splitting a string into words the way a POSIX shell does for quoting (no expansions): used for
// HEADROOM_FLAGS, which users write as they would write the options on a command line.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

// Splits `text` at unquoted blanks (space, tab, newline). Single quotes keep everything up to the next
// single quote; double quotes keep everything but a backslash before one of $ ` " \ or a newline; a backslash
// outside quotes keeps the next character. '' and "" make an empty word. Returns nullopt with *error set for
// an unterminated quote or a trailing backslash.
std::optional<std::vector<std::string>> SplitShellWords(std::string_view text, std::string* error);

}  // namespace headroom
