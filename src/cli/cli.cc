// Top-level run: HEADROOM_FLAGS and MAX_JOBS, option parsing, -C, tools, and the
// load / regenerate / build cycle (restarted when the manifest rebuilt itself).
#include "headroom/cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <climits>
#include <ctime>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "headroom/admission/memory_controller.h"
#include "headroom/admission/remote_controller.h"
#include "headroom/cli/ninja_main.h"
#include "headroom/cli/options.h"
#include "headroom/exec/process_runner.h"
#include "headroom/memory/build_ledger.h"
#include "headroom/memory/job_meter.h"
#include "headroom/memory/memory_probe.h"
#include "headroom/report/build_outputs.h"
#include "headroom/report/decision_log.h"
#include "headroom/report/summary.h"
#include "headroom/report/timeline.h"
#include "headroom/status/status_printer.h"
#include "headroom/tools/tool.h"
#include "headroom/util/messages.h"
#include "headroom/util/shell_words.h"
#include "headroom/util/metrics.h"

namespace headroom {

namespace {

constexpr int kCycleLimit = 100;

// HEADROOM_FLAGS lets tools that run `ninja` with fixed arguments (PyTorch) pass headroom's
// options: they go first, so the real command line still wins. Quoted as on a shell command line.
std::optional<std::vector<std::string>> ArgumentsWithEnvironmentFlags(int argc, char** argv) {
  std::vector<std::string> args{argv[0]};
  if (const char* extra = getenv("HEADROOM_FLAGS")) {
    std::string error;
    std::optional<std::vector<std::string>> words = SplitShellWords(extra, &error);
    if (!words) {
      Error("invalid HEADROOM_FLAGS: {}", error);
      return std::nullopt;
    }
    args.insert(args.end(), words->begin(), words->end());
  }
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return args;
}

// MAX_JOBS (PyTorch's knob): unset, empty or "auto" keeps the default; a number caps -j.
bool ApplyMaxJobs(BuildConfig* config) {
  const char* value = getenv("MAX_JOBS");
  if (!value || !*value || strcmp(value, "auto") == 0) return true;
  char* end = nullptr;
  errno = 0;
  long jobs = strtol(value, &end, 10);
  if (*end != 0 || end == value || jobs < 0 || errno == ERANGE) {
    Error("invalid MAX_JOBS '{}': expected a number of jobs or 'auto'", value);
    return false;
  }
  if (jobs == 0) return true;  // like -j0: no cap from MAX_JOBS
  int cap = static_cast<int>(std::min<long>(jobs, INT_MAX));
  config->parallelism = config->parallelism_from_cli ? std::min(config->parallelism, cap) : cap;
  return true;
}

bool OpenLogsForTool(void* owner, bool recompact_only) {
  auto* pair = static_cast<std::pair<NinjaMain*, Status*>*>(owner);
  return pair->first->OpenBuildLog(pair->second, recompact_only) &&
         pair->first->OpenDepsLog(pair->second, recompact_only);
}

int RunTool(const Tool& tool, NinjaMain* ninja, const Options& options, const BuildConfig& config,
            Status* status) {
  std::pair<NinjaMain*, Status*> owner{ninja, status};
  ToolContext context;
  context.options = &options;
  context.config = &config;
  context.disk = &ninja->disk();
  context.state = &ninja->state();
  context.build_log = &ninja->build_log();
  context.deps_log = &ninja->deps_log();
  context.build_dir = ninja->build_dir();
  context.open_logs = OpenLogsForTool;
  context.owner = &owner;
  std::vector<std::string> args{tool.name};
  args.insert(args.end(), options.args.begin(), options.args.end());
  return tool.run(context, args);
}

// What the build's timeline knows before anything runs; the end is filled in by FinishBuild.
void RecordBuildFacts(const Options& options, const BuildConfig& config, BuildTimeline* timeline) {
  BuildFacts& facts = timeline->facts();
  facts.targets = options.args;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd)) facts.working_dir = cwd;
  facts.started_unix_s = static_cast<int64_t>(time(nullptr));
  facts.parallelism = config.parallelism;
  facts.memory_enabled = config.memory.enabled && !config.dry_run;
}

// The run's memory counters over every pass (a manifest regeneration, then the build).
void CollectDecisions(const NinjaMain& ninja, MemoryDecisions* total) {
  if (MemoryController* memory = ninja.memory_controller()) AddDecisions(total, memory->decisions());
  if (RemoteController* remote = ninja.remote_controller()) {
    MemoryDecisions scale_out;
    scale_out.remote_jobs = static_cast<int>(remote->counts().remote);
    scale_out.remote_fallbacks = static_cast<int>(remote->counts().fell_back);
    scale_out.local_jobs = static_cast<int>(remote->counts().local);
    scale_out.remote_most_at_once = static_cast<int>(remote->counts().most_at_once);
    AddDecisions(total, scale_out);
  }
}

// A tool is the last thing the process does: its graph is left for the exit to reclaim (as ninja does).
int RunLastTool(const Tool& tool, NinjaMain* ninja, const Options& options, const BuildConfig& config,
                StatusPrinter* status) {
  const int exit_code = RunTool(tool, ninja, options, config, status);
  ninja->state().AbandonGraphAtExit();
  return exit_code;
}

// The machine-wide build ledger's directory: HEADROOM_LEDGER_DIR when set (empty turns the ledger off, e.g. for a
// build that must not see or be seen by the others), else the default (docs/build-ledger.md).
static std::string LedgerDir() {
  const char* dir = getenv("HEADROOM_LEDGER_DIR");
  return dir ? dir : DefaultLedgerDir();
}

// The load / regenerate / build cycle (restarted when the manifest rebuilt itself), or a tool that
// needs the manifest or logs. Returns the exit code.
int RunPasses(const Options& options, const BuildConfig& config, const Tool* tool, const Clock* clock,
              ProcessRunner* runner, Explanations* explain, MemoryProbe* probe, JobMeter* meter,
              BuildTimeline* timeline, MemoryDecisions* decisions, StatusPrinter* status_printer) {
  StatusPrinter& status = *status_printer;
  const int64_t started_ms = clock->NowMs();  // --deadline counts from here, across regenerations
  for (int cycle = 1; cycle <= kCycleLimit; ++cycle) {
    NinjaMain ninja(config, clock, runner, explain);
    ninja.set_run_started_ms(started_ms);
    if (probe) ninja.set_memory_services(MemoryServices{probe, meter, LedgerDir()}, &status);
    ninja.set_timeline(timeline);
    if (!ninja.LoadManifest(options, &status)) return 1;
    if (tool && tool->phase == Tool::Phase::kAfterLoad) return RunLastTool(*tool, &ninja, options, config, &status);
    if (!ninja.EnsureBuildDirExists(&status)) return 1;
    if (!ninja.OpenBuildLog(&status) || !ninja.OpenDepsLog(&status)) return 1;
    if (tool && tool->phase == Tool::Phase::kAfterLogs) return RunLastTool(*tool, &ninja, options, config, &status);

    std::string err;
    if (ninja.RebuildManifest(options.input_file, &err, &status)) {
      CollectDecisions(ninja, decisions);
      // A dry run "regenerates" forever without changing anything; stop here.
      if (config.dry_run) return 0;
      // Restarting closes both logs the way ninja's teardown does, which leaves them on disk.
      ninja.build_log().Close();
      ninja.deps_log().CloseCreatingFile();
      continue;
    }
    if (!err.empty()) {
      CollectDecisions(ninja, decisions);
      status.Error("rebuilding '" + options.input_file + "': " + err);
      return 1;
    }
    const int exit_code = ninja.RunBuild(options.args, &status);
    if (config.stats) ninja.DumpMetrics(stdout);
    // One controller served both the regeneration check and the build: its counters cover both.
    CollectDecisions(ninja, decisions);
    return exit_code;
  }
  status.Error(fmt::format("manifest '{}' still dirty after {} tries, perhaps system time is not set",
                           options.input_file, kCycleLimit));
  return 1;
}

}  // namespace

int RunCli(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  std::optional<std::vector<std::string>> arguments = ArgumentsWithEnvironmentFlags(argc, argv);
  if (!arguments) return 1;
  std::vector<std::string>& arg_storage = *arguments;
  std::vector<char*> arg_pointers;
  for (std::string& arg : arg_storage) arg_pointers.push_back(arg.data());
  arg_pointers.push_back(nullptr);

  BuildConfig config;
  Options options;
  if (std::optional<int> exit_code =
          ReadFlags(static_cast<int>(arg_storage.size()), arg_pointers.data(), &options, &config)) {
    return *exit_code;
  }
  if (!ApplyMaxJobs(&config)) return 1;
  if (config.stats) EnableMetrics();

  const Tool* tool = nullptr;
  if (options.has_tool) {
    int exit_code = 0;
    tool = ChooseTool(options.tool, &exit_code);
    if (!tool) return exit_code;
  }

  Explanations explanations;
  Explanations* explain = config.explain ? &explanations : nullptr;
  StatusPrinter status(config, ConsoleSetup::FromEnvironment(), explain);

  if (!options.working_dir.empty()) {
    // The odd quotes let Emacs follow the directory change; tools print nothing so their output
    // can be piped.
    if (!tool && config.verbosity != BuildConfig::Verbosity::kNoStatusUpdate)
      status.Info("Entering directory `" + options.working_dir + "'");
    if (chdir(options.working_dir.c_str()) < 0)
      Fatal(fmt::format("chdir to '{}' - {}", options.working_dir, strerror(errno)));
  }

  SteadyClock clock;
  if (tool && tool->phase == Tool::Phase::kAfterFlags) {
    NinjaMain ninja(config, &clock, nullptr, explain);
    return RunTool(*tool, &ninja, options, config, &status);
  }

  std::unique_ptr<ProcessRunner> runner = config.dry_run ? nullptr : MakePosixProcessRunner();
  // Memory observation is set up once per process: cgroup discovery and the per-build cgroup.
  std::unique_ptr<MemoryProbe> probe;
  std::unique_ptr<JobMeter> meter;
  if (config.memory.enabled && !config.dry_run && !tool) {
    MemoryProbeOptions probe_options;
    probe_options.clock = &clock;
    probe = std::make_unique<MemoryProbe>(probe_options);
    meter = std::make_unique<JobMeter>(probe->layout());
  }
  // The timeline spans every pass of the loop below; the summary, trace and report are made from it.
  BuildTimeline timeline;
  timeline.set_origin_ms(clock.NowMs());
  RecordBuildFacts(options, config, &timeline);
  MemoryDecisions decisions;
  BuildOutputs outputs{options.trace_path, options.report_path,
                       // -v on a terminal shows the summary too; piped logs stay exactly ninja's.
                       config.verbosity == BuildConfig::Verbosity::kVerbose && status.printer().is_smart_terminal()};
  timeline.set_keep_details(outputs.wanted());
  const bool records = !tool && !config.dry_run;
  std::unique_ptr<DecisionLog> decision_log;
  if (records && !options.mem_log_path.empty()) {
    std::string error;
    decision_log = DecisionLog::Open(options.mem_log_path, &error);
    if (!decision_log) {
      Error("--mem-log: {}", error);
      return 1;
    }
    decision_log->BuildStarted(timeline.facts());
    timeline.set_listener(decision_log.get());
  }
  const int exit_code = RunPasses(options, config, tool, &clock, runner.get(), explain, probe.get(), meter.get(),
                                  records && (outputs.wanted() || config.memory.enabled) ? &timeline : nullptr,
                                  &decisions, &status);
  if (records) {
    if (decisions.budget_bytes) timeline.facts().reserve_bytes = decisions.reserve_bytes;
    FinishBuild(&timeline, decisions, outputs, exit_code, timeline.Elapsed(clock.NowMs()), &status, stdout);
    if (decision_log) decision_log->BuildEnded(timeline.facts(), decisions, exit_code);
  }
  return exit_code;
}

}  // namespace headroom
