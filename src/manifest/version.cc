// Version parsing and the ninja_required_version compatibility check.
#include "headroom/manifest/version.h"

#include <cstdlib>

#include "headroom/util/messages.h"

namespace headroom {

void ParseVersion(std::string_view version, int* major, int* minor) {
  const size_t dot = version.find('.');
  // atoi semantics (leading digits only) need NUL-terminated copies.
  *major = std::atoi(std::string(version.substr(0, dot)).c_str());
  *minor = 0;
  if (dot == std::string_view::npos) return;
  std::string_view rest = version.substr(dot + 1);
  *minor = std::atoi(std::string(rest.substr(0, rest.find('.'))).c_str());
}

void CheckNinjaVersion(const std::string& required_version) {
  int our_major, our_minor, file_major, file_minor;
  ParseVersion(kNinjaVersion, &our_major, &our_minor);
  ParseVersion(required_version, &file_major, &file_minor);
  if (our_major > file_major) {
    Warning("ninja executable version ({}) greater than build file ninja_required_version ({}); "
            "versions may be incompatible.",
            kNinjaVersion, required_version);
  } else if (our_major < file_major || (our_major == file_major && our_minor < file_minor)) {
    Fatal(fmt::format("ninja version ({}) incompatible with build file ninja_required_version version ({}).",
                      kNinjaVersion, required_version));
  }
}

}  // namespace headroom
