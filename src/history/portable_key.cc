// Normalises build-dir and temporary-dir prefixes out of outputs and class keys (see portable_key.h).
#include "headroom/history/portable_key.h"

#include <cstdlib>

#include "headroom/util/hashes.h"

namespace headroom {
namespace {

std::string WithoutTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// Characters that continue a path: a root found right after one is not the start of a path.
bool IsPathChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.' || c == '/' || c == '+' || c == '@';
}

bool EndsComponent(char c) { return c == '/' || !IsPathChar(c); }

// Whether a root found at `at` starts a path: the word it sits in ("-I/tmp", "x=/tmp") has no '/' before it,
// so "/home/tmp" is not under "/tmp".
bool StartsPath(const std::string& text, size_t at) {
  for (size_t i = at; i > 0 && IsPathChar(text[i - 1]); --i) {
    if (text[i - 1] == '/') return false;
  }
  return true;
}

constexpr uint64_t kEdgeKeySeed = 0x68656164726f6f6dull;  // "headroom"

}  // namespace

PathNormaliser::PathNormaliser(std::string build_root, std::vector<std::string> temp_roots)
    : build_root_(WithoutTrailingSlashes(std::move(build_root))) {
  for (std::string& root : temp_roots) {
    root = WithoutTrailingSlashes(std::move(root));
    if (root.size() < 2 || root[0] != '/') continue;  // "/" or relative: would match everything
    bool seen = false;
    for (const std::string& kept : temp_roots_) seen = seen || kept == root;
    if (!seen) temp_roots_.push_back(root);
  }
  if (build_root_.size() < 2) build_root_.clear();
}

PathNormaliser PathNormaliser::ForBuild(std::string build_root) {
  std::vector<std::string> roots;
  if (const char* tmpdir = std::getenv("TMPDIR"); tmpdir && *tmpdir) roots.emplace_back(tmpdir);
  roots.emplace_back("/tmp");
  roots.emplace_back("/var/tmp");
  return PathNormaliser(std::move(build_root), std::move(roots));
}

void PathNormaliser::ReplaceBuildRoot(std::string* text) const {
  if (build_root_.empty()) return;
  for (size_t at = text->find(build_root_); at != std::string::npos; at = text->find(build_root_, at + 1)) {
    const size_t end = at + build_root_.size();
    if (!StartsPath(*text, at)) continue;
    if (end < text->size() && !EndsComponent((*text)[end])) continue;  // "/b/build2" is not under "/b/build"
    text->replace(at, build_root_.size(), "@BUILD");
  }
}

void PathNormaliser::BlankTempComponents(std::string* text, const std::string& root) const {
  for (size_t at = text->find(root); at != std::string::npos; at = text->find(root, at + 1)) {
    const size_t slash = at + root.size();
    if (!StartsPath(*text, at)) continue;
    if (slash >= text->size() || (*text)[slash] != '/') continue;
    size_t end = slash + 1;
    while (end < text->size() && !EndsComponent((*text)[end])) ++end;
    // mkdtemp-style names put the random part last, after the name's last '-' or '_' (pip-install-k3j4h5;
    // tmpabc123 has neither: then the whole name is random).
    std::string_view component(text->data() + slash + 1, end - slash - 1);
    const size_t dash = component.find_last_of("-_");
    const size_t keep = dash == std::string_view::npos ? 0 : dash + 1;
    if (keep == component.size()) continue;
    text->replace(slash + 1 + keep, component.size() - keep, "*");
  }
}

std::string PathNormaliser::Text(std::string_view text) const {
  std::string out(text);
  ReplaceBuildRoot(&out);
  for (const std::string& root : temp_roots_) BlankTempComponents(&out, root);
  return out;
}

std::string PathNormaliser::Output(std::string_view output) const {
  if (!build_root_.empty() && output.size() > build_root_.size() + 1 &&
      output.substr(0, build_root_.size()) == build_root_ && output[build_root_.size()] == '/') {
    output.remove_prefix(build_root_.size() + 1);
  }
  return Text(output);
}

uint64_t PathNormaliser::EdgeKey(std::string_view output, std::string_view class_key) const {
  std::string joined = Output(output);
  joined += '\n';
  joined += Text(class_key);
  return RapidHashV1(joined.data(), joined.size(), kEdgeKeySeed);
}

}  // namespace headroom
