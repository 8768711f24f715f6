// `-t plan [-j N] [--mem-budget=SIZE] [--cores=N] [--dirty] [--deadline=D] [--json] [targets]`: the what-if
// planner. Replays the build of the targets from history and priors through the simulator (sim/planner.h) and prints
// the predicted wall time and peak, the jobs that can never fit the budget, the fastest -j here and on common CI
// machines, and whether the build fits a deadline.
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "headroom/history/history_store.h"
#include "headroom/history/user_store.h"
#include "headroom/logs/build_log.h"
#include "headroom/memory/memory_probe.h"
#include "headroom/scan/scan.h"
#include "headroom/sim/planner.h"
#include "headroom/tools/tool_cli.h"
#include "headroom/tools/tool_support.h"
#include "headroom/tools/tools.h"
#include "headroom/util/byte_size.h"
#include "headroom/util/duration.h"
#include "headroom/util/messages.h"

namespace headroom {
namespace {

using sim::PlanJob;
using sim::PlanReport;
using sim::PlanRequest;
using sim::PlanShape;
using sim::ShapeOutcome;
using sim::SweptShape;

struct PlanFlags {
  int jobs = 0;
  std::optional<BudgetSpec> budget;
  double cores = 0;
  double peak_at = sim::PlanRequest::kDefaultPeakAt;
  double load = 0;
  bool dirty = false;
  bool json = false;
  bool trace = false;
  int64_t deadline_ms = 0;  // --deadline; 0 = none
  std::vector<std::string> targets;
};

std::optional<BudgetSpec> ReadBudgetFlag(const std::string& text) {
  std::string error;
  std::optional<BudgetSpec> budget = ParseBudget(text, &error);
  if (!budget && error.find("without a unit") != std::string::npos) {
    throw ToolFlagError("invalid --mem-budget " + error);
  }
  if (!budget || (!budget->is_fraction() && budget->bytes == 0)) {
    throw ToolFlagError("invalid --mem-budget '" + text + "': expected a size like 12G or a percentage like 80%");
  }
  return budget;
}

// The tool's options; each value is checked as it is read (ToolFlagError names what is wrong with it).
void AddPlanFlags(CLI::App& app, PlanFlags* flags) {
  app.add_option_function<std::string>(
         "-j",
         [flags](const std::string& text) {
           const long jobs = ParseIntegerFlag(text, [](long n) { return n > 0; }, "invalid -j parameter '{}'");
           flags->jobs = static_cast<int>(std::min<long>(jobs, 4096));
         },
         "jobs to run at once [default: the build's -j]")
      ->type_name("N");
  app.add_option_function<std::string>(
         "--mem-budget", [flags](const std::string& text) { flags->budget = ReadBudgetFlag(text); },
         "memory budget, e.g. 16G or 80% [default: the build's, else what\nthis machine allows]")
      ->type_name("SIZE");
  app.add_option_function<std::string>(
         "--cores",
         [flags](const std::string& text) {
           flags->cores = ParseNumberFlag(text, [](double n) { return n > 0; },
                                          "invalid --cores '{}': expected a number of CPUs");
         },
         "CPUs the jobs share [default: this machine's]")
      ->type_name("N");
  app.add_option_function<std::string>(
         "--load",
         [flags](const std::string& text) {
           flags->load = ParseNumberFlag(text, [](double n) { return n >= 0; },
                                         "invalid --load '{}': expected a number of runnable tasks");
         },
         "runnable tasks from outside the build sharing the CPUs, e.g. the load\n"
         "average while nothing builds; the history is taken to be measured\nunder it too [default: 0]")
      ->type_name("N");
  app.add_option_function<std::string>(
         "--peak-at",
         [flags](const std::string& text) {
           flags->peak_at = ParseNumberFlag(text, [](double n) { return n > 0 && n <= 1; },
                                            "invalid --peak-at '{}': expected a share of the run, above 0 and at "
                                            "most 1");
         },
         "how far into its run a job without a rise curve peaks, 0..1\n[default: 0.75]")
      ->type_name("SHARE");
  app.add_option_function<std::string>(
         "--deadline",
         [flags](const std::string& text) {
           std::string error;
           const std::optional<int64_t> ms = ParseDuration(text, &error);
           if (!ms) {
             throw ToolFlagError("invalid --deadline '" + text + "': " + error +
                                 "; expected a duration like 5h30m, 90m or 45s");
           }
           flags->deadline_ms = *ms;
         },
         "whether the build at -j N ends within D (5h30m, 90m, 45s), and if not\n"
         "roughly how much of it a build with --deadline=D gets done")
      ->type_name("D");
  app.add_flag("--dirty", flags->dirty, "only what is out of date now [default: everything, as a clean\nbuild]");
  app.add_flag("--json", flags->json, "one JSON object for machines");
  app.add_flag("--trace", flags->trace, "the simulated build at -j N on stderr: each start, end, kill\nand wait");
  app.add_option("targets", flags->targets, "what to plan [default: the manifest's defaults]");
}

// Parses the tool's flags; returns an exit code when it should stop.
std::optional<int> ReadPlanFlags(const ToolArgs& args, PlanFlags* flags) {
  ToolCli cli("plan",
              "predict a build of the targets from history and priors (replayed through headroom's own admission\n"
              "code): wall time, peak memory, jobs that can never fit the budget, and the fastest -j here and on CI\n"
              "machines");
  AddPlanFlags(cli.app(), flags);
  return cli.Parse(args);
}

// The budget a build would have: the tool's flag, else the build's --mem-budget, else what this machine (or its
// cgroup) allows; a percentage is a share of that.
uint64_t ResolveBudget(const PlanFlags& flags, const MemoryConfig& memory) {
  uint64_t bytes = flags.budget ? flags.budget->bytes : memory.budget_bytes;
  double fraction = flags.budget ? flags.budget->fraction : memory.budget_fraction;
  if (bytes > 0 && fraction <= 0) return bytes;
  MemoryProbe probe(MemoryProbeOptions{});
  const uint64_t limit = probe.Read().limit_bytes;
  return fraction > 0 ? ScaleBytes(limit, fraction) : limit;
}

// The edges a build of `targets` would run, producers before consumers as the manifest lists them: every
// non-phony edge they need, or with `dirty_only` those whose outputs are out of date.
bool CollectEdges(const ToolContext& context, const std::vector<Node*>& targets, bool dirty_only,
                  std::vector<Edge*>* edges, std::string* err) {
  if (dirty_only) {
    DependencyScan scan(context.state, context.build_log, context.deps_log, context.disk);
    for (Node* target : targets) {
      std::vector<Node*> validations;
      if (!scan.RecomputeDirty(target, &validations, err)) return false;
    }
  }
  std::unordered_set<Edge*> seen;
  std::vector<Node*> stack(targets.begin(), targets.end());
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    Edge* edge = node->in_edge;
    if (!edge || !seen.insert(edge).second) continue;
    for (Node* input : edge->inputs) stack.push_back(input);
  }
  for (const std::unique_ptr<Edge>& owned : context.state->edges) {  // manifest order: the builder's tie-break
    Edge* edge = owned.get();
    if (!seen.count(edge) || edge->is_phony()) continue;
    bool dirty = !dirty_only || std::any_of(edge->outputs.begin(), edge->outputs.end(), [](Node* n) { return n->dirty; });
    if (dirty) edges->push_back(edge);
  }
  return true;
}

// The planned jobs an edge needs: through phony edges and jobs not in the plan, to the nearest planned ones.
std::vector<size_t> PlannedDeps(const Edge* edge, const std::unordered_map<const Edge*, size_t>& index) {
  std::vector<size_t> deps;
  std::unordered_set<const Edge*> seen;
  std::vector<const Node*> stack(edge->inputs.begin(), edge->inputs.end());
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    const Edge* producer = node->in_edge;
    if (!producer || !seen.insert(producer).second) continue;
    if (auto it = index.find(producer); it != index.end()) {
      deps.push_back(it->second);
    } else if (producer->is_phony()) {
      stack.insert(stack.end(), producer->inputs.begin(), producer->inputs.end());
    }
  }
  std::sort(deps.begin(), deps.end());
  return deps;
}

std::vector<PlanJob> DescribeJobs(const ToolContext& context, const std::vector<Edge*>& edges) {
  std::unordered_map<const Edge*, size_t> index;
  for (size_t i = 0; i < edges.size(); ++i) index[edges[i]] = i;
  std::vector<PlanJob> jobs(edges.size());
  std::vector<int64_t> mtimes_ms(edges.size(), 0);
  for (size_t i = 0; i < edges.size(); ++i) {
    const Edge* edge = edges[i];
    PlanJob& job = jobs[i];
    job.output = edge->outputs.empty() ? std::string() : edge->outputs[0]->path;
    job.command = edge->EvaluateCommand();
    job.rule = edge->rule->name();
    job.rspfile_content = edge->GetBinding("rspfile_content");
    if (std::string hint = edge->GetBinding("headroom_mem"); !hint.empty()) job.mem_hint = hint;
    job.command_hash = context.build_log ? context.build_log->HashCommand(edge->EvaluateCommand(true)) : 0;
    job.deps = PlannedDeps(edge, index);
    const BuildLogEntry* entry = context.build_log ? context.build_log->LookupByOutput(job.output) : nullptr;
    if (entry && entry->command_hash == job.command_hash && entry->end_time >= entry->start_time) {
      job.logged = PlanJob::Logged{entry->start_time, entry->end_time, -1};
      mtimes_ms[i] = entry->mtime > 0 ? entry->mtime / 1'000'000 : 0;
    }
  }
  sim::AssignLoggedBuilds(mtimes_ms, &jobs);
  return jobs;
}

// A fresh estimator over the files a build reads (the build dir's .ninja_headroom and the per-user store): each
// simulated build teaches its own copy. Warnings are printed on the first load only.
sim::EstimatorFactory MakeEstimatorFactory(const ToolContext& context) {
  const std::string history_path = context.build_dir.empty() ? std::string(HistoryStore::kFileName)
                                                             : context.build_dir + "/" + HistoryStore::kFileName;
  const std::string store_dir = context.options->store_dir;
  char cwd[PATH_MAX];
  const std::string here = getcwd(cwd, sizeof cwd) ? cwd : "";
  auto warned = std::make_shared<bool>(false);
  return [history_path, store_dir, here, warned]() {
    sim::PlanEstimator out;
    out.history = std::make_unique<HistoryStore>();
    std::string warning = out.history->LoadForReading(history_path);
    if (!warning.empty() && !*warned) Warning("{}", warning);
    if (!store_dir.empty()) {
      out.store = std::make_unique<UserStore>(store_dir, PathNormaliser::ForBuild(here));
      warning = out.store->Load();
      if (!warning.empty() && !*warned) Warning("{}", warning);
      out.store->SeedClasses(out.history.get());
    }
    *warned = true;
    FileSizeFn sizes = [](const std::string& path) -> std::optional<uint64_t> {
      struct stat st;
      if (stat(path.c_str(), &st) != 0) return std::nullopt;
      return static_cast<uint64_t>(st.st_size);
    };
    out.estimator = std::make_unique<Estimator>(out.history.get(), sizes);
    out.estimator->set_user_store(out.store.get());
    return out;
  };
}

std::string WallText(int64_t ms) {
  const double s = static_cast<double>(ms) / 1000.0;
  if (s >= 3600) return fmt::format("{}h{:02}m", static_cast<int>(s / 3600), static_cast<int>(s / 60) % 60);
  if (s >= 600) return fmt::format("{}m{:02}s", static_cast<int>(s / 60), static_cast<int>(s) % 60);
  return fmt::format("{:.1f}s", s);
}

std::string JobList(const SweptShape& swept) {
  std::string list;
  for (const ShapeOutcome& run : swept.runs) list += (list.empty() ? "-j" : ",") + std::to_string(run.shape.jobs);
  return list;
}

// A budget as --mem-budget takes it: whole GiB or MiB ("16G", "1536M").
std::string BudgetFlag(uint64_t bytes) {
  if (bytes % kGiB == 0) return fmt::format("{}G", bytes / kGiB);
  return fmt::format("{}M", (bytes + kMiB / 2) / kMiB);
}

std::string CoresText(double cores) { return fmt::format("{:g} CPU{}", cores, cores == 1 ? "" : "s"); }

std::string OutcomeText(const ShapeOutcome& run, const std::vector<PlanJob>& jobs) {
  if (!run.completed) {
    std::string failed = run.failed.empty() ? "" : " (" + jobs[run.failed.front()].output + " cannot fit)";
    return "would FAIL after " + WallText(run.wall_ms) + failed;
  }
  std::string text = "wall " + WallText(run.wall_ms) + ", peak " + FormatBytes(run.peak_bytes);
  if (run.shape.budget > 0) {
    text += fmt::format(" ({:.0f}% of the budget)", 100.0 * static_cast<double>(run.peak_bytes) /
                                                         static_cast<double>(run.shape.budget));
  }
  if (run.oom_kills > 0) text += fmt::format(", {} OOM kill(s) and requeue(s)", run.oom_kills);
  return text;
}

// How a build at the requested shape meets a deadline: whether it ends in time, and if not roughly how much is
// done by then (progress taken as steady over the predicted wall: the share of the wall, of the jobs).
struct DeadlineVerdict {
  bool fits = false;
  double share_done = 1.0;
  size_t jobs_done = 0;
};

DeadlineVerdict JudgeDeadline(const ShapeOutcome& run, size_t jobs, int64_t deadline_ms) {
  DeadlineVerdict verdict;
  verdict.fits = run.completed && run.wall_ms <= deadline_ms;
  if (!verdict.fits && run.wall_ms > 0)
    verdict.share_done = std::min(1.0, static_cast<double>(deadline_ms) / static_cast<double>(run.wall_ms));
  verdict.jobs_done = static_cast<size_t>(std::floor(verdict.share_done * static_cast<double>(jobs)));
  return verdict;
}

void PrintDeadline(const ShapeOutcome& run, size_t jobs, int64_t deadline_ms) {
  const DeadlineVerdict verdict = JudgeDeadline(run, jobs, deadline_ms);
  if (verdict.fits) {
    printf("deadline %s: fits (predicted wall %s, %s to spare)\n", DurationText(deadline_ms).c_str(),
           WallText(run.wall_ms).c_str(), DurationText(deadline_ms - run.wall_ms).c_str());
  } else {
    printf("deadline %s: does not fit (predicted wall %s); a build with --deadline=%s gets about %.0f%% done "
           "(~%zu/%zu jobs), the next run the rest\n",
           DurationText(deadline_ms).c_str(), run.completed ? WallText(run.wall_ms).c_str() : "unknown: it fails",
           DurationText(deadline_ms).c_str(), 100.0 * verdict.share_done, verdict.jobs_done, jobs);
  }
}

void PrintText(const PlanReport& report, const std::vector<PlanJob>& jobs, bool dirty) {
  printf("plan: %zu jobs (%s)\n", jobs.size(), dirty ? "what is out of date now" : "a clean build of the targets");
  printf("figures: %zu measured, %zu estimated from similar jobs, %zu priors; durations: %zu measured", report.measured,
         report.estimated, report.priors, report.durations_known);
  if (report.durations_known < jobs.size()) {
    printf(", %zu unknown (each taken as %s)", jobs.size() - report.durations_known,
           WallText(report.default_duration_ms).c_str());
  }
  printf("\n");
  const ShapeOutcome& asked = report.requested;
  printf("predicted at -j%d, budget %s, %s: %s\n", asked.shape.jobs, FormatBytes(asked.shape.budget).c_str(),
         CoresText(asked.shape.cores).c_str(), OutcomeText(asked, jobs).c_str());
  if (!report.cannot_fit.empty()) {
    printf("cannot fit the %s budget at all (%zu):\n", FormatBytes(asked.shape.budget).c_str(), report.cannot_fit.size());
    for (size_t i : report.cannot_fit) {
      printf("  %10s  %s\n", FormatBytes(report.figures[i].peak_bytes).c_str(), jobs[i].output.c_str());
    }
  }
  const SweptShape& here = report.this_machine;
  printf("swept %s on %s with %s:", JobList(here).c_str(), CoresText(here.machine.cores).c_str(),
         FormatBytes(here.machine.budget).c_str());
  if (here.best) {
    const ShapeOutcome& best = here.runs[*here.best];
    printf(" fastest -j%d, %s\n", best.shape.jobs, OutcomeText(best, jobs).c_str());
  } else {
    printf(" no -j completes\n");
  }
  printf("other machines (-j swept over 1 .. 2 x CPUs + 2):\n");
  for (const SweptShape& other : report.others) {
    printf("  %-22s", other.machine.name.c_str());
    if (other.best) {
      const ShapeOutcome& best = other.runs[*other.best];
      printf(" -j%-3d %s\n", best.shape.jobs, OutcomeText(best, jobs).c_str());
    } else {
      printf(" %s\n", OutcomeText(other.runs.back(), jobs).c_str());
    }
  }
  if (here.best) {
    const ShapeOutcome& best = here.runs[*here.best];
    printf("recommendation: -j%d --mem-budget=%s (%s", best.shape.jobs, BudgetFlag(best.shape.budget).c_str(),
           WallText(best.wall_ms).c_str());
    // Worth saying only when the asked -j is measurably slower (the fewest -j within 2 % is recommended).
    if (asked.completed && best.shape.jobs != asked.shape.jobs &&
        static_cast<double>(asked.wall_ms) > 1.01 * static_cast<double>(best.wall_ms)) {
      printf(" against %s at -j%d", WallText(asked.wall_ms).c_str(), asked.shape.jobs);
    } else if (best.shape.jobs < asked.shape.jobs) {
      printf("; -j%d is no faster", asked.shape.jobs);
    }
    printf(")\n");
  } else {
    printf("recommendation: a larger --mem-budget: %zu job(s) cannot fit %s\n", report.cannot_fit.size(),
           FormatBytes(here.machine.budget).c_str());
  }
}

nlohmann::json OutcomeJson(const ShapeOutcome& run, const std::vector<PlanJob>& jobs) {
  nlohmann::json failed = nlohmann::json::array();
  for (size_t i : run.failed) failed.push_back(jobs[i].output);
  return {{"jobs", run.shape.jobs},       {"budget_bytes", run.shape.budget}, {"cores", run.shape.cores},
          {"completed", run.completed},   {"wall_ms", run.wall_ms},           {"peak_bytes", run.peak_bytes},
          {"oom_kills", run.oom_kills},   {"failed", failed}};
}

nlohmann::json SweepJson(const SweptShape& swept, const std::vector<PlanJob>& jobs) {
  nlohmann::json runs = nlohmann::json::array();
  for (const ShapeOutcome& run : swept.runs) runs.push_back(OutcomeJson(run, jobs));
  nlohmann::json out = {{"name", swept.machine.name}, {"cores", swept.machine.cores},
                        {"budget_bytes", swept.machine.budget}, {"runs", runs}};
  out["best"] = swept.best ? OutcomeJson(swept.runs[*swept.best], jobs) : nlohmann::json();
  return out;
}

void PrintJson(const PlanReport& report, const std::vector<PlanJob>& jobs, bool dirty, int64_t deadline_ms) {
  nlohmann::json cannot_fit = nlohmann::json::array();
  for (size_t i : report.cannot_fit) {
    cannot_fit.push_back({{"output", jobs[i].output}, {"peak_bytes", report.figures[i].peak_bytes}});
  }
  nlohmann::json per_job = nlohmann::json::array();
  for (size_t i = 0; i < jobs.size(); ++i) {
    const sim::JobFigures& f = report.figures[i];
    per_job.push_back({{"output", jobs[i].output},
                       {"peak_bytes", f.peak_bytes},
                       {"peak_from", sim::FigureSourceName(f.peak_source)},
                       {"duration_ms", f.duration_ms},
                       {"duration_known", f.duration_known},
                       {"uncontended_duration_ms", f.solo_duration_ms}});
  }
  nlohmann::json others = nlohmann::json::array();
  for (const SweptShape& other : report.others) others.push_back(SweepJson(other, jobs));
  nlohmann::json out = {
      {"scope", dirty ? "dirty" : "clean"},
      {"jobs", jobs.size()},
      {"figures",
       {{"measured", report.measured}, {"estimated", report.estimated}, {"prior", report.priors},
        {"durations_measured", report.durations_known},
        {"durations_unknown", jobs.size() - report.durations_known},
        {"unknown_duration_ms", report.default_duration_ms}}},
      {"requested", OutcomeJson(report.requested, jobs)},
      {"cannot_fit", cannot_fit},
      {"this_machine", SweepJson(report.this_machine, jobs)},
      {"other_machines", others},
      {"simulation_tick_ms", report.tick_ms},
      {"per_job", per_job}};
  out["recommendation"] =
      report.this_machine.best ? OutcomeJson(report.this_machine.runs[*report.this_machine.best], jobs) : nlohmann::json();
  if (deadline_ms > 0) {
    const DeadlineVerdict verdict = JudgeDeadline(report.requested, jobs.size(), deadline_ms);
    out["deadline"] = {{"deadline_ms", deadline_ms}, {"fits", verdict.fits}, {"share_done", verdict.share_done},
                       {"jobs_done", verdict.jobs_done}};
  }
  printf("%s\n", out.dump(2).c_str());
}

}  // namespace

int ToolPlan(const ToolContext& context, const ToolArgs& args) {
  PlanFlags flags;
  if (std::optional<int> exit_code = ReadPlanFlags(args, &flags)) return *exit_code;
  std::vector<Node*> targets;
  std::string err;
  if (!CollectTargets(context, flags.targets, &targets, &err)) {
    Error("{}", err);
    return 1;
  }
  std::vector<Edge*> edges;
  if (!CollectEdges(context, targets, flags.dirty, &edges, &err)) {
    Error("{}", err);
    return 1;
  }
  const std::vector<PlanJob> jobs = DescribeJobs(context, edges);
  PlanRequest request;
  // The CPUs a build here may use, as the build reads them (cli/options.h UsableCpus: the affinity mask, the
  // cgroup's CPU quota, HEADROOM_TEST_CPUS).
  const double here = std::max(1, context.config->memory.cpus);
  request.requested = {"this machine", flags.cores > 0 ? flags.cores : here,
                       ResolveBudget(flags, context.config->memory),
                       flags.jobs > 0 ? flags.jobs : context.config->parallelism};
  request.requested.other_load = flags.load;
  request.measured_on_cores = here;
  request.measured_other_load = flags.load;
  // The build guard needs per-job cgroups, which need root here: a guarded build bets bolder on guesses.
  request.guarded = geteuid() == 0;
  request.reserve_bytes = context.config->memory.reserve_bytes;
  request.other_machines = sim::CommonCiShapes();
  request.peak_at = flags.peak_at;
  if (flags.trace) request.trace = stderr;
  const PlanReport report = sim::PlanBuild(jobs, request, MakeEstimatorFactory(context));
  if (flags.json) {
    PrintJson(report, jobs, flags.dirty, flags.deadline_ms);
  } else {
    PrintText(report, jobs, flags.dirty);
    if (flags.deadline_ms > 0) PrintDeadline(report.requested, jobs.size(), flags.deadline_ms);
  }
  return 0;
}

}  // namespace headroom
