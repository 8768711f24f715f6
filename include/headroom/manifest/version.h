// The ninja version headroom claims to be, and the `ninja_required_version` check against it.
#pragma once

#include <string>
#include <string_view>

namespace headroom {

// Printed by --version and compared with ninja_required_version; features of this version are implemented.
inline constexpr char kNinjaVersion[] = "1.13.2";

// "major.minor[.anything]" -> numbers, each read like atoi (garbage reads as 0; a missing minor is 0).
void ParseVersion(std::string_view version, int* major, int* minor);

// Newer major.minor than ours is fatal (exits 1); an older major only warns. The patch level is ignored.
void CheckNinjaVersion(const std::string& required_version);

}  // namespace headroom
