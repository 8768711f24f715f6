// Lexical path canonicalisation and POSIX shell quoting, as ninja applies them to manifest paths.
#include "headroom/util/path.h"

#include <vector>

namespace headroom {

namespace {

constexpr size_t kMaxPathComponents = 60;

bool IsShellSafe(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '+' ||
         c == '-' || c == '.' || c == '/';
}

}  // namespace

bool CanonicalizePath(std::string* path, std::string* err) {
  if (path->empty()) {
    *err = "empty path";
    return false;
  }
  const std::string& in = *path;
  const bool absolute = in[0] == '/';
  std::string out;
  out.reserve(in.size());
  // Start offsets in `out` of each kept component, so ".." can drop the last one.
  std::vector<size_t> starts;
  starts.reserve(kMaxPathComponents);
  if (absolute) out.push_back('/');
  size_t i = absolute ? 1 : 0;
  while (i < in.size()) {
    size_t end = in.find('/', i);
    if (end == std::string::npos) end = in.size();
    std::string_view part(in.data() + i, end - i);
    i = end + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!starts.empty()) {
        out.resize(starts.back());
        starts.pop_back();
        continue;
      }
      if (!absolute) {
        out.append("../");  // leading ".." of a relative path is kept.
      }
      continue;
    }
    starts.push_back(out.size());
    out.append(part);
    out.push_back('/');
  }
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  if (out.empty()) out = ".";
  *path = std::move(out);
  return true;
}

void AppendShellEscaped(std::string_view path, std::string* out) {
  bool safe = true;
  for (char c : path) {
    if (!IsShellSafe(c)) {
      safe = false;
      break;
    }
  }
  if (safe) {
    out->append(path);
    return;
  }
  out->push_back('\'');
  for (char c : path) {
    if (c == '\'')
      out->append("'\\''");
    else
      out->push_back(c);
  }
  out->push_back('\'');
}

std::string_view DirName(std::string_view path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string_view::npos) return {};
  while (slash > 0 && path[slash - 1] == '/') --slash;
  if (slash == 0) return path.substr(0, 1);
  return path.substr(0, slash);
}

}  // namespace headroom
