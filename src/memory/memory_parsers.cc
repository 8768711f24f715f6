// Parsers for meminfo, stat files, cgroup limits, PSI, /proc/self/cgroup and mountinfo.
#include "headroom/memory/memory_parsers.h"

#include <charconv>
#include <cstdlib>

namespace headroom {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view s, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (;;) {
    size_t end = s.find(separator, start);
    parts.push_back(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

std::vector<std::string_view> SplitWords(std::string_view s) {
  std::vector<std::string_view> words;
  for (std::string_view part : Split(s, ' ')) {
    if (!part.empty()) words.push_back(part);
  }
  return words;
}

std::optional<uint64_t> ToUint(std::string_view s) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return value;
}

// Calls visit(line) for each line; stops early when visit returns true.
template <typename Visit>
void ForEachLine(std::string_view text, Visit visit) {
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (visit(line)) return;
    if (end == std::string_view::npos) return;
    text.remove_prefix(end + 1);
  }
}

// Mountinfo escapes space, tab, newline and backslash as \ooo.
std::string UnescapeOctal(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      std::string_view digits = s.substr(i + 1, 3);
      if (digits.find_first_not_of("01234567") == std::string_view::npos) {
        out.push_back(static_cast<char>(std::strtol(std::string(digits).c_str(), nullptr, 8)));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

std::optional<PsiLine> ParsePsiFields(const std::vector<std::string_view>& words) {
  PsiLine line;
  bool have_total = false;
  for (size_t i = 1; i < words.size(); ++i) {
    std::string_view word = words[i];
    if (word.starts_with("avg10=")) {
      std::string value(word.substr(6));
      char* end = nullptr;
      line.avg10 = std::strtod(value.c_str(), &end);
      if (end == value.c_str()) return std::nullopt;
    } else if (word.starts_with("total=")) {
      auto total = ToUint(word.substr(6));
      if (!total) return std::nullopt;
      line.total_us = *total;
      have_total = true;
    }
  }
  if (!have_total) return std::nullopt;
  return line;
}

}  // namespace

std::optional<uint64_t> ParseMeminfoBytes(std::string_view text, std::string_view key) {
  std::optional<uint64_t> result;
  ForEachLine(text, [&](std::string_view line) {
    if (!line.starts_with(key) || line.size() <= key.size() || line[key.size()] != ':') return false;
    std::vector<std::string_view> words = SplitWords(line.substr(key.size() + 1));
    if (words.empty()) return true;
    auto value = ToUint(words[0]);
    if (!value) return true;
    bool in_kb = words.size() > 1 && words[1] == "kB";
    result = in_kb ? *value * 1024 : *value;
    return true;
  });
  return result;
}

std::optional<uint64_t> ParseKeyedValue(std::string_view text, std::string_view key) {
  std::optional<uint64_t> result;
  ForEachLine(text, [&](std::string_view line) {
    std::vector<std::string_view> words = SplitWords(line);
    if (words.size() != 2 || words[0] != key) return false;
    result = ToUint(words[1]);
    return true;
  });
  return result;
}

std::optional<uint64_t> ParseSingleNumber(std::string_view text) { return ToUint(Trim(text)); }

std::optional<uint64_t> ParseCgroupLimit(std::string_view text) {
  std::string_view value = Trim(text);
  if (value == "max") return kUnlimitedBytes;
  auto bytes = ToUint(value);
  if (!bytes) return std::nullopt;
  constexpr uint64_t kV1NoLimitThreshold = uint64_t{1} << 62;
  if (*bytes >= kV1NoLimitThreshold) return kUnlimitedBytes;
  return bytes;
}

std::optional<PsiSnapshot> ParsePsi(std::string_view text) {
  PsiSnapshot snapshot;
  bool have_some = false;
  bool malformed = false;
  ForEachLine(text, [&](std::string_view line) {
    std::vector<std::string_view> words = SplitWords(line);
    if (words.empty()) return false;
    if (words[0] != "some" && words[0] != "full") return false;
    auto parsed = ParsePsiFields(words);
    if (!parsed) {
      malformed = true;
      return true;
    }
    if (words[0] == "some") {
      snapshot.some = *parsed;
      have_some = true;
    } else {
      snapshot.full = *parsed;
    }
    return false;
  });
  if (malformed || !have_some) return std::nullopt;
  return snapshot;
}

std::vector<CgroupMembership> ParseProcSelfCgroup(std::string_view text) {
  std::vector<CgroupMembership> memberships;
  ForEachLine(text, [&](std::string_view line) {
    // The path may itself contain ':', so split only on the first two.
    size_t first = line.find(':');
    if (first == std::string_view::npos) return false;
    size_t second = line.find(':', first + 1);
    if (second == std::string_view::npos) return false;
    auto id = ToUint(line.substr(0, first));
    std::string_view path = line.substr(second + 1);
    if (!id || !path.starts_with('/')) return false;
    CgroupMembership membership;
    membership.hierarchy_id = static_cast<int>(*id);
    std::string_view controllers = line.substr(first + 1, second - first - 1);
    if (!controllers.empty()) {
      for (std::string_view controller : Split(controllers, ',')) membership.controllers.emplace_back(controller);
    }
    membership.path = std::string(path);
    memberships.push_back(std::move(membership));
    return false;
  });
  return memberships;
}

std::vector<CgroupMount> ParseCgroupMounts(std::string_view mountinfo) {
  std::vector<CgroupMount> mounts;
  ForEachLine(mountinfo, [&](std::string_view line) {
    std::vector<std::string_view> words = SplitWords(line);
    // id parent major:minor root mount_point options [optional fields...] - fstype source super_options
    size_t dash = 0;
    for (size_t i = 6; i < words.size(); ++i) {
      if (words[i] == "-") {
        dash = i;
        break;
      }
    }
    if (dash == 0 || dash + 1 >= words.size()) return false;
    std::string_view fstype = words[dash + 1];
    if (fstype != "cgroup" && fstype != "cgroup2") return false;
    CgroupMount mount;
    mount.root = UnescapeOctal(words[3]);
    mount.mount_point = UnescapeOctal(words[4]);
    mount.is_v2 = fstype == "cgroup2";
    if (dash + 3 < words.size()) {
      for (std::string_view option : Split(words[dash + 3], ',')) mount.super_options.emplace_back(option);
    }
    mounts.push_back(std::move(mount));
    return false;
  });
  return mounts;
}

}  // namespace headroom
