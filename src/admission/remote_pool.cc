// The remote pool's depth from distcc's host list or sccache-dist's scheduler, the slot ledger, and the local job cap.
#include "headroom/admission/remote_pool.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "headroom/estimator/exec_mode.h"

namespace headroom {
namespace {

constexpr size_t kDefaultRemoteLimit = 4;  // distcc(1): four jobs per host when a spec gives no /LIMIT
constexpr size_t kDefaultLocalLimit = 2;   // and two for localhost

std::optional<size_t> ParseCount(std::string_view digits) {
  size_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

// The host list's words, comments removed.
std::vector<std::string_view> HostWords(std::string_view text) {
  std::vector<std::string_view> words;
  size_t pos = 0;
  while (pos < text.size()) {
    char c = text[pos];
    if (c == '#') {
      pos = text.find('\n', pos);
      if (pos == std::string_view::npos) break;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++pos;
    } else {
      size_t end = pos;
      while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end])) && text[end] != '#') ++end;
      words.push_back(text.substr(pos, end - pos));
      pos = end;
    }
  }
  return words;
}

// "host:port/8,lzo" -> host "host:port", limit 8 (nullopt when absent or unreadable).
void SplitSpec(std::string_view spec, std::string_view* host, std::optional<size_t>* limit) {
  spec = spec.substr(0, spec.find(','));
  size_t slash = spec.find('/');
  *host = spec.substr(0, slash);
  *limit = slash == std::string_view::npos ? std::nullopt : ParseCount(spec.substr(slash + 1));
}

}  // namespace

DistccHosts ParseDistccHosts(std::string_view text) {
  DistccHosts hosts;
  size_t remote = 0;
  bool unknown = false;
  for (std::string_view word : HostWords(text)) {
    if (word.rfind("--localslots=", 0) == 0) {
      if (auto n = ParseCount(word.substr(13))) hosts.local_slots += *n;
      continue;
    }
    if (word.rfind("--", 0) == 0) continue;  // --randomize, --localslots_cpp=N
    if (word.rfind("+zeroconf", 0) == 0) {
      unknown = true;
      continue;
    }
    std::string_view host;
    std::optional<size_t> limit;
    SplitSpec(word, &host, &limit);
    if (host == "localhost") {
      hosts.local_slots += limit.value_or(kDefaultLocalLimit);
    } else if (!host.empty()) {
      remote += limit.value_or(kDefaultRemoteLimit);
      ++hosts.remote_hosts;
    }
  }
  if (!unknown && hosts.remote_hosts > 0) hosts.remote_slots = remote;
  return hosts;
}

std::optional<std::string> DistccHostsText(
    const std::function<const char*(const char*)>& env,
    const std::function<std::optional<std::string>(const std::string&)>& read_file) {
  if (const char* list = env("DISTCC_HOSTS")) return std::string(list);
  std::string dir;
  if (const char* distcc_dir = env("DISTCC_DIR"); distcc_dir && *distcc_dir) {
    dir = distcc_dir;
  } else if (const char* home = env("HOME"); home && *home) {
    dir = std::string(home) + "/.distcc";
  }
  if (!dir.empty()) {
    if (auto text = read_file(dir + "/hosts")) return text;
  }
  return read_file("/etc/distcc/hosts");
}

std::optional<size_t> RemoteDepthFromEnvironment(const std::function<bool()>& farm_job_wanted) {
  auto env = [](const char* name) -> const char* { return std::getenv(name); };
  auto read_file = [](const std::string& path) -> std::optional<std::string> {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  };
  if (std::optional<std::string> text = DistccHostsText(env, read_file)) {
    if (auto slots = ParseDistccHosts(*text).remote_slots) return slots;
  }
  if (LauncherSettingsFromEnvironment().sccache_dist && farm_job_wanted()) return SccacheDistDepth();
  return std::nullopt;
}

std::optional<size_t> ParseSccacheDistStatus(std::string_view status) {
  // {"SchedulerStatus":["http://host:port/",{"num_servers":1,"num_cpus":2,"in_progress":0}]}; any other answer
  // ("NotConnected", "Disabled") says nothing about the farm's size.
  size_t scheduler = status.find("\"SchedulerStatus\"");
  if (scheduler == std::string_view::npos) return std::nullopt;
  constexpr std::string_view kCpus = "\"num_cpus\"";
  size_t key = status.find(kCpus, scheduler);
  if (key == std::string_view::npos) return std::nullopt;
  size_t at = status.find_first_not_of(" \t\r\n:", key + kCpus.size());
  if (at == std::string_view::npos) return std::nullopt;
  size_t end = status.find_first_not_of("0123456789", at);
  std::optional<size_t> cpus = ParseCount(status.substr(at, end == std::string_view::npos ? end : end - at));
  if (!cpus || *cpus == 0) return std::nullopt;
  return cpus;
}

std::optional<size_t> SccacheDistDepth() {
  // The sccache client asks its local server, which asks the scheduler (both time out on their own; `timeout`
  // bounds a wedged server). It starts that server when none runs, as the build's first compile would.
  FILE* pipe = popen("timeout 10 sccache --dist-status 2>/dev/null </dev/null", "r");
  if (!pipe) return std::nullopt;
  std::string output;
  char buffer[512];
  while (size_t got = fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, got);
  pclose(pipe);
  return ParseSccacheDistStatus(output);
}

size_t LocalJobCap(size_t parallelism, size_t remote_depth, size_t cores) {
  if (remote_depth == 0) return parallelism;
  return std::max<size_t>(1, std::min(parallelism, cores + 2));
}

bool RemotePool::Take(uint64_t job) {
  if (!HasRoom() || !holders_.insert(job).second) return false;
  high_water_ = std::max(high_water_, holders_.size());
  return true;
}

bool RemotePool::Release(uint64_t job) { return holders_.erase(job) != 0; }

}  // namespace headroom
