// ProcessGroupSampler: /proc scan by process group with cached classification, RSS from statm.
#include "headroom/memory/process_group_sampler.h"

#include <dirent.h>
#include <unistd.h>

#include <charconv>
#include <memory>

namespace headroom {

namespace {

std::optional<uint64_t> ParseUint(std::string_view s) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end == s.data()) return std::nullopt;
  return value;
}

std::optional<pid_t> PidFromName(const char* name) {
  std::string_view s(name);
  if (s.empty() || s.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  auto value = ParseUint(s);
  if (!value) return std::nullopt;
  return static_cast<pid_t>(*value);
}

}  // namespace

pid_t ParseStatProcessGroup(std::string_view stat) {
  // comm may contain spaces and parentheses; the last ')' ends it.
  size_t close = stat.rfind(')');
  if (close == std::string_view::npos) return -1;
  std::string_view rest = stat.substr(close + 1);
  // Fields after comm: state ppid pgrp.
  for (int field = 0; field < 3; ++field) {
    size_t start = rest.find_first_not_of(' ');
    if (start == std::string_view::npos) return -1;
    rest.remove_prefix(start);
    if (field == 2) {
      auto value = ParseUint(rest.substr(0, rest.find(' ')));
      return value ? static_cast<pid_t>(*value) : -1;
    }
    size_t end = rest.find(' ');
    if (end == std::string_view::npos) return -1;
    rest.remove_prefix(end);
  }
  return -1;
}

std::optional<uint64_t> ParseStatmResidentPages(std::string_view statm) {
  size_t first_space = statm.find(' ');
  if (first_space == std::string_view::npos) return std::nullopt;
  std::string_view rest = statm.substr(first_space + 1);
  return ParseUint(rest.substr(0, rest.find(' ')));
}

ProcessGroupSampler::ProcessGroupSampler(std::string proc_dir, int full_rescan_every)
    : proc_dir_(std::move(proc_dir)),
      full_rescan_every_(full_rescan_every < 1 ? 1 : full_rescan_every),
      page_size_(sysconf(_SC_PAGESIZE)) {}

void ProcessGroupSampler::Track(pid_t pgid) {
  groups_[pgid] = Group{};
  // The leader may have been classified before it called setpgid(): look at it again.
  processes_.erase(pgid);
}

void ProcessGroupSampler::Untrack(pid_t pgid) { groups_.erase(pgid); }

void ProcessGroupSampler::Classify(pid_t pid, Process& process) {
  std::string text, err;
  KernelFile stat(proc_dir_ + "/" + std::to_string(pid) + "/stat");
  process.pgid = stat.Read(&text, &err) ? ParseStatProcessGroup(text) : -1;
  if (groups_.count(process.pgid) != 0 && process.statm.empty()) {
    process.statm = KernelFile(proc_dir_ + "/" + std::to_string(pid) + "/statm");
  } else if (groups_.count(process.pgid) == 0) {
    process.statm = KernelFile();
  }
}

uint64_t ProcessGroupSampler::ResidentBytes(Process& process) {
  std::string text, err;
  // A process that exited since readdir reads as empty or fails: it holds nothing any more.
  if (!process.statm.Read(&text, &err)) return 0;
  auto pages = ParseStatmResidentPages(text);
  return pages ? *pages * static_cast<uint64_t>(page_size_) : 0;
}

void ProcessGroupSampler::Sample() {
  if (groups_.empty()) return;
  bool full_rescan = scan_count_ % static_cast<uint64_t>(full_rescan_every_) == 0;
  uint64_t scan = ++scan_count_;
  for (auto& [pgid, group] : groups_) {
    group.current_bytes = 0;
    group.processes = 0;
  }
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir(proc_dir_.c_str()), closedir);
  if (!dir) return;
  while (dirent* entry = readdir(dir.get())) {
    std::optional<pid_t> pid = PidFromName(entry->d_name);
    if (!pid) continue;
    auto [it, is_new] = processes_.try_emplace(*pid);
    Process& process = it->second;
    process.seen_in_scan = scan;
    if (is_new || full_rescan) Classify(*pid, process);
    auto group = groups_.find(process.pgid);
    if (group == groups_.end()) continue;
    group->second.current_bytes += ResidentBytes(process);
    group->second.processes += 1;
  }
  // Forget processes that are gone, so a reused pid is classified afresh.
  std::erase_if(processes_, [scan](const auto& entry) { return entry.second.seen_in_scan != scan; });
  for (auto& [pgid, group] : groups_) group.peak_bytes = std::max(group.peak_bytes, group.current_bytes);
}

uint64_t ProcessGroupSampler::CurrentBytes(pid_t pgid) const {
  auto it = groups_.find(pgid);
  return it == groups_.end() ? 0 : it->second.current_bytes;
}

uint64_t ProcessGroupSampler::PeakBytes(pid_t pgid) const {
  auto it = groups_.find(pgid);
  return it == groups_.end() ? 0 : it->second.peak_bytes;
}

size_t ProcessGroupSampler::ProcessCount(pid_t pgid) const {
  auto it = groups_.find(pgid);
  return it == groups_.end() ? 0 : it->second.processes;
}

}  // namespace headroom
