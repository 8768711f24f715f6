// Option parsing with glibc getopt_long (ninja's own permutation and messages), the -d/-w
// sub-options, headroom's memory options, HEADROOM_FLAGS and MAX_JOBS.
#include "headroom/cli/options.h"

#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <climits>
#include <cmath>
#include <fstream>

#include "headroom/admission/admission_policy.h"
#include "headroom/history/user_store.h"
#include "headroom/manifest/version.h"
#include "headroom/util/byte_size.h"
#include "headroom/util/duration.h"
#include "headroom/util/messages.h"
#include "headroom/util/test_cpus.h"

namespace headroom {

namespace {


enum LongOption {
  kOptVersion = 256,
  kOptQuiet,
  kOptMemBudget,
  kOptMemReserve,
  kOptNoMemory,
  kOptTrace,
  kOptReport,
  kOptMemLog,
  kOptStore,
  kOptNoStore,
  kOptJobserver,
  kOptRemoteJobs,
  kOptStrictRemote,
  kOptHeadroomVersion,
  kOptDeadline,
  kOptContentHash,
};

const option kLongOptions[] = {
    {"help", no_argument, nullptr, 'h'},
    {"version", no_argument, nullptr, kOptVersion},
    {"verbose", no_argument, nullptr, 'v'},
    {"quiet", no_argument, nullptr, kOptQuiet},
    {"mem-budget", required_argument, nullptr, kOptMemBudget},
    {"mem-reserve", required_argument, nullptr, kOptMemReserve},
    {"no-memory", no_argument, nullptr, kOptNoMemory},
    {"trace", required_argument, nullptr, kOptTrace},
    {"report", required_argument, nullptr, kOptReport},
    {"mem-log", required_argument, nullptr, kOptMemLog},
    {"store", required_argument, nullptr, kOptStore},
    {"no-store", no_argument, nullptr, kOptNoStore},
    {"jobserver", optional_argument, nullptr, kOptJobserver},
    {"remote-jobs", required_argument, nullptr, kOptRemoteJobs},
    {"strict-remote", no_argument, nullptr, kOptStrictRemote},
    {"headroom-version", no_argument, nullptr, kOptHeadroomVersion},
    {"deadline", required_argument, nullptr, kOptDeadline},
    {"content-hash", no_argument, nullptr, kOptContentHash},
    {nullptr, 0, nullptr, 0},
};

// -d MODE. Returns false when the caller should exit (list or unknown).
bool DebugEnable(const std::string& name, BuildConfig* config, int* exit_code) {
  if (name == "list") {
    printf(
        "debugging modes:\n"
        "  stats        print operation counts/timing info\n"
        "  explain      explain what caused a command to execute\n"
        "  keepdepfile  don't delete depfiles after they're read by ninja\n"
        "  keeprsp      don't delete @response files on success\n"
        "multiple modes can be enabled via -d FOO -d BAR\n");
    *exit_code = 1;
    return false;
  }
  if (name == "stats") {
    config->stats = true;
  } else if (name == "explain") {
    config->explain = true;
  } else if (name == "keepdepfile") {
    config->keep_depfile = true;
  } else if (name == "keeprsp") {
    config->keep_rsp = true;
  } else if (name == "nostatcache") {
    // Windows-only in ninja; accepted and ignored here.
  } else {
    const char* suggestion = nullptr;
    for (const char* known : {"stats", "explain", "keepdepfile", "keeprsp", "nostatcache"}) {
      if (EditDistance(name, known, true, 3) <= 3) {
        suggestion = known;
        break;
      }
    }
    if (suggestion)
      Error("unknown debug setting '{}', did you mean '{}'?", name, suggestion);
    else
      Error("unknown debug setting '{}'", name);
    *exit_code = 1;
    return false;
  }
  return true;
}

// -w FLAG. Returns false when the caller should exit.
bool WarningEnable(const std::string& name, Options* options, int* exit_code) {
  if (name == "list") {
    printf(
        "warning flags:\n"
        "  phonycycle={err,warn}  phony build statement references itself\n");
    *exit_code = 1;
    return false;
  }
  if (name == "phonycycle=err") {
    options->phony_cycle_should_err = true;
  } else if (name == "phonycycle=warn") {
    options->phony_cycle_should_err = false;
  } else if (name == "dupbuild=err" || name == "dupbuild=warn") {
    Warning("deprecated warning 'dupbuild'");
  } else if (name == "depfilemulti=err" || name == "depfilemulti=warn") {
    Warning("deprecated warning 'depfilemulti'");
  } else {
    const char* suggestion = nullptr;
    for (const char* known : {"phonycycle=err", "phonycycle=warn"}) {
      if (EditDistance(name, known, true, 3) <= 3) {
        suggestion = known;
        break;
      }
    }
    if (suggestion)
      Error("unknown warning flag '{}', did you mean '{}'?", name, suggestion);
    else
      Error("unknown warning flag '{}'", name);
    *exit_code = 1;
    return false;
  }
  return true;
}

bool ApplyMemBudget(const std::string& value, const char* source, BuildConfig* config) {
  std::string err;
  std::optional<BudgetSpec> budget = ParseBudget(value, &err);
  if (!budget && err.find("without a unit") != std::string::npos) {
    Error("invalid {} {}", source, err);
    return false;
  }
  if (!budget || (!budget->is_fraction() && budget->bytes == 0)) {
    Error("invalid {} '{}': expected a size like 12G or a percentage like 80%", source, value);
    return false;
  }
  config->memory.budget_bytes = budget->bytes;
  config->memory.budget_fraction = budget->fraction;
  return true;
}

bool ApplyMemReserve(const std::string& value, const char* source, BuildConfig* config) {
  std::string err;
  std::optional<uint64_t> bytes = ParseSize(value, &err);
  if (!bytes) {
    Error("invalid {} '{}': expected a size like 512M or 2G", source, value);
    return false;
  }
  if (*bytes == 0) {  // 0 stands for "the default" inside: refused rather than silently meaning that
    Error("invalid {} '{}': the reserve must be above 0 (leave the option out for the default)", source, value);
    return false;
  }
  config->memory.reserve_bytes = *bytes;
  return true;
}

bool ApplyRemoteJobs(const std::string& value, BuildConfig* config) {
  char* end = nullptr;
  errno = 0;
  long jobs = strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != 0 || jobs < 1 || errno == ERANGE) {
    Error("invalid --remote-jobs '{}': expected a number of remote slots of at least 1", value);
    return false;
  }
  config->memory.remote_jobs = static_cast<size_t>(jobs);
  return true;
}

bool ApplyDeadline(const std::string& value, BuildConfig* config) {
  std::string err;
  std::optional<int64_t> ms = ParseDuration(value, &err);
  if (!ms) {
    Error("invalid --deadline '{}': {}; expected a duration like 5h30m, 90m or 45s", value, err);
    return false;
  }
  config->deadline_ms = *ms;
  return true;
}

int CpuQuotaFromCgroup() {
  // cgroup v2 cpu.max ("max 100000" or "200000 100000"), then v1 cfs quota/period.
  std::ifstream v2("/sys/fs/cgroup/cpu.max");
  std::string quota_text;
  long long period = 0;
  if (v2 >> quota_text >> period && quota_text != "max" && period > 0) {
    long long quota = atoll(quota_text.c_str());
    if (quota > 0) return static_cast<int>(std::ceil(static_cast<double>(quota) / period));
  }
  std::ifstream quota_file("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
  std::ifstream period_file("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  long long quota = -1;
  if (quota_file >> quota && period_file >> period && quota > 0 && period > 0)
    return static_cast<int>(std::ceil(static_cast<double>(quota) / period));
  return -1;
}

}  // namespace

int UsableCpus() {
  if (const int test_cpus = TestCpusOverride(); test_cpus > 0) return test_cpus;
  int processors = 0;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) processors = CPU_COUNT(&set);
  if (processors <= 0) processors = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  int quota = CpuQuotaFromCgroup();
  if (quota > 0 && quota < processors) processors = quota;
  return std::max(processors, 0);
}

int GuessParallelism(int processors) {
  switch (processors) {
    case 0:
    case 1:
      return 2;
    case 2:
      return 3;
    default:
      return processors + 2;
  }
}

void PrintUsage(const BuildConfig& config) {
  fprintf(stderr,
          "usage: ninja [options] [targets...]\n"
          "\n"
          "if targets are unspecified, builds the 'default' target (see manual).\n"
          "\n"
          "options:\n"
          "  --version      print ninja version (\"%s\")\n"
          "  -v, --verbose  show all command lines while building\n"
          "  --quiet        don't show progress status, just command output\n"
          "\n"
          "  -C DIR   change to DIR before doing anything else\n"
          "  -f FILE  specify input build file [default=build.ninja]\n"
          "\n"
          "  -j N     run N jobs in parallel (0 means infinity) [default=%d on this system]\n"
          "  -k N     keep going until N jobs fail (0 means infinity) [default=1]\n"
          "  -l N     do not start new jobs if the load average is greater than N\n"
          "  -n       dry run (don't run commands but act like they succeeded)\n"
          "\n"
          "  -d MODE  enable debugging (use '-d list' to list modes)\n"
          "  -t TOOL  run a subtool (use '-t list' to list subtools)\n"
          "    terminates toplevel options; further flags are passed to the tool\n"
          "  -w FLAG  adjust warnings (use '-w list' to list warnings)\n"
          "\n"
          "headroom (memory-aware scheduling):\n"
          "  --mem-budget=SIZE|N%%  memory the build may use [default: what the machine/cgroup allows]\n"
          "  --mem-reserve=SIZE     memory always kept free\n"
          "                         [default: %s]\n"
          "  --no-memory            schedule by -j only, exactly like ninja\n"
          "  --trace=FILE           write a Chrome trace of jobs and memory\n"
          "  --report=FILE.html     write an HTML report of the build\n"
          "  --mem-log=FILE         write a debug log of memory decisions (admit, wait and why,\n"
          "                         freeze, kill, requeue, budget readings) to attach to a bug\n"
          "                         report [default: off]\n"
          "  --store=DIR            per-user history store shared by all build dirs\n"
          "                         [default: $HEADROOM_STORE, else $XDG_CACHE_HOME/headroom,\n"
          "                         else ~/.cache/headroom]\n"
          "  --no-store             use and keep history in the build dir only\n"
          "                         (also HEADROOM_STORE=off)\n"
          "  --jobserver[=fifo|pipe]\n"
          "                         serve a GNU make jobserver to the jobs (nvcc --jobserver,\n"
          "                         make, ninja, cargo), slots weighted by memory; `pipe` for\n"
          "                         GNU make 4.3 and older [default: off; fifo when given]\n"
          "  --remote-jobs=N        slots of the compile farm behind distcc/icecc/sccache-dist\n"
          "                         launchers [default: distcc's host list, else sccache-dist's\n"
          "                         scheduler, if any]\n"
          "  --strict-remote        a launcher's farm failure (distcc's network exit codes) fails\n"
          "                         the job instead of retrying it locally [default: retry]\n"
          "  --deadline=DURATION    start no job predicted to end after DURATION (5h30m, 90m,\n"
          "                         45s) from now; stop there with logs intact, exit status 75;\n"
          "                         the next run resumes (docs/deadline.md)\n"
          "  --content-hash         an input whose mtime changed but whose content did not\n"
          "                         leaves what it builds clean (a cached build dir on a\n"
          "                         fresh checkout); hashes kept in .headroom_hashes\n"
          "  --headroom-version     print headroom's own version (--version prints ninja's)\n",
          kNinjaVersion, config.parallelism, DescribeDefaultReserve(";\n                         ").c_str());
}

std::optional<int> ReadFlags(int argc, char** argv, Options* options, BuildConfig* config) {
  config->memory.cpus = UsableCpus();  // read once: the affinity mask and the cgroup's CPU quota
  config->parallelism = GuessParallelism(config->memory.cpus);
  // getopt prints its own errors prefixed with argv[0]; ninja's users see "ninja: ...".
  char program_name[] = "ninja";
  argv[0] = program_name;
  optind = 1;
  int opt;
  int exit_code = 0;
  std::string store_flag;
  bool no_store = false;
  while (!options->has_tool &&
         (opt = getopt_long(argc, argv, "d:f:j:k:l:nt:vw:C:h", kLongOptions, nullptr)) != -1) {
    switch (opt) {
      case 'd':
        if (!DebugEnable(optarg, config, &exit_code)) return exit_code;
        break;
      case 'f':
        options->input_file = optarg;
        break;
      case 'j': {
        char* end;
        long value = strtol(optarg, &end, 10);
        if (*end != 0 || value < 0) Fatal("invalid -j parameter");
        // -j0 means "as many as possible".
        config->parallelism = value > 0 ? static_cast<int>(std::min<long>(value, INT_MAX)) : INT_MAX;
        config->parallelism_from_cli = true;
        break;
      }
      case 'k': {
        char* end;
        long value = strtol(optarg, &end, 10);
        if (*end != 0) Fatal("-k parameter not numeric; did you mean -k 0?");
        // Zero or negative: never stop for failures.
        config->failures_allowed = value > 0 ? static_cast<int>(std::min<long>(value, INT_MAX)) : INT_MAX;
        break;
      }
      case 'l': {
        char* end;
        double value = strtod(optarg, &end);
        if (end == optarg) Fatal("-l parameter not numeric: did you mean -l 0.0?");
        config->max_load_average = value;
        break;
      }
      case 'n':
        config->dry_run = true;
        break;
      case 't':
        options->tool = optarg;
        options->has_tool = true;
        break;
      case 'v':
        config->verbosity = BuildConfig::Verbosity::kVerbose;
        break;
      case kOptQuiet:
        config->verbosity = BuildConfig::Verbosity::kNoStatusUpdate;
        break;
      case 'w':
        if (!WarningEnable(optarg, options, &exit_code)) return exit_code;
        break;
      case 'C':
        options->working_dir = optarg;
        break;
      case kOptVersion:
        printf("%s\n", kNinjaVersion);
        return 0;
      case kOptHeadroomVersion:  // bug reports name this; --version must stay ninja's for CMake and PyTorch
        printf("headroom %s\n", HEADROOM_VERSION);
        return 0;
      case kOptMemBudget:
        if (!ApplyMemBudget(optarg, "--mem-budget", config)) return 1;
        break;
      case kOptMemReserve:
        if (!ApplyMemReserve(optarg, "--mem-reserve", config)) return 1;
        break;
      case kOptNoMemory:
        config->memory.enabled = false;
        break;
      case kOptDeadline:
        if (!ApplyDeadline(optarg, config)) return 1;
        break;
      case kOptRemoteJobs:
        if (!ApplyRemoteJobs(optarg, config)) return 1;
        break;
      case kOptStrictRemote:
        config->memory.strict_remote = true;
        break;
      case kOptContentHash:
        config->content_hash = true;
        break;
      case kOptTrace:
        options->trace_path = optarg;
        break;
      case kOptReport:
        options->report_path = optarg;
        break;
      case kOptMemLog:
        options->mem_log_path = optarg;
        break;
      case kOptStore:
        store_flag = optarg;
        break;
      case kOptNoStore:
        no_store = true;
        break;
      case kOptJobserver:
        if (!optarg || strcmp(optarg, "fifo") == 0) {
          config->serve_jobserver = BuildConfig::ServeJobserver::kFifo;
        } else if (strcmp(optarg, "pipe") == 0) {
          config->serve_jobserver = BuildConfig::ServeJobserver::kPipe;
        } else if (strcmp(optarg, "off") == 0) {
          config->serve_jobserver = BuildConfig::ServeJobserver::kOff;
        } else {
          Error("invalid --jobserver '{}': expected fifo, pipe or off", optarg);
          return 1;
        }
        break;
      case 'h':
      default:
        PrintUsage(*config);
        return 1;
    }
  }
  for (int i = optind; i < argc; ++i) options->args.emplace_back(argv[i]);
  // Resolved before -C changes directory, so a relative --store names what the user meant.
  options->store_dir = ResolveUserStoreDir(store_flag.empty() ? nullptr : store_flag.c_str(), no_store);
  return std::nullopt;
}

}  // namespace headroom
