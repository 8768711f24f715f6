// The HTML report's fixed parts: its stylesheet and tooltip script (kept apart from the page logic).
#pragma once

namespace headroom {

extern const char* const kReportStyle;
extern const char* const kReportScript;

}  // namespace headroom
