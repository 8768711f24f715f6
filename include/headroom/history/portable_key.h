// Edge identity that survives a new directory: outputs relative to the build root, temporary-directory names
// with their random part blanked, so one kernel built under two pip temp dirs is one edge in the user store.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

class PathNormaliser {
 public:
  // `build_root`: the absolute directory relative paths start from (ninja's working directory).
  // `temp_roots`: absolute temporary-directory roots ("/tmp"); trailing slashes are ignored.
  PathNormaliser(std::string build_root, std::vector<std::string> temp_roots);
  // The roots a real build uses: $TMPDIR, /tmp and /var/tmp.
  static PathNormaliser ForBuild(std::string build_root);

  // Every path in `text` rewritten: the build root becomes "@BUILD", and the first component under a
  // temp root keeps its non-random prefix ("/tmp/pip-install-k3j4h5/x" -> "/tmp/pip-install-*/x").
  std::string Text(std::string_view text) const;
  // An output path: relative when it lies under the build root, then as Text.
  std::string Output(std::string_view output) const;
  // The user store's key of an edge: its output and its class key (rule, tool and flags without file
  // names), both normalised. The command hash is no use across directories: commands name absolute
  // sources and include paths that change with every temp dir.
  uint64_t EdgeKey(std::string_view output, std::string_view class_key) const;

 private:
  void ReplaceBuildRoot(std::string* text) const;
  void BlankTempComponents(std::string* text, const std::string& root) const;

  std::string build_root_;
  std::vector<std::string> temp_roots_;
};

}  // namespace headroom
