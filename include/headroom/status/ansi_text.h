// Text measured and cut the way a terminal shows it: ANSI CSI escapes are zero-width and never split.
// Used for eliding status lines to the terminal width and for stripping colour from job output.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace headroom {

// Columns `text` occupies: every byte counts as one column except CSI sequences (ESC '[' up to and
// including the next ASCII letter). A lone ESC not followed by '[' counts as a column, as in ninja.
size_t VisibleWidth(std::string_view text);

// Shortens `text` to `width` visible columns by replacing its middle with "..." (or as many dots as fit
// when width < 3). The left part keeps (width-3)/2 columns and the right part the rest. Every escape
// sequence is kept, in order, even those that sat in the removed middle, so colours stay balanced.
std::string ElideMiddle(std::string_view text, size_t width);

// Removes CSI sequences; a lone ESC is dropped but the byte after it is kept (ninja 1.13.2's rule).
std::string StripAnsiEscapeCodes(std::string_view text);

}  // namespace headroom
