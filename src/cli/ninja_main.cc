// Loading, log opening, manifest regeneration and target collection for one pass of a build.
#include "headroom/cli/ninja_main.h"

#include <errno.h>
#include <string.h>

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>

#include "headroom/admission/memory_controller.h"
#include "headroom/admission/remote_controller.h"
#include "headroom/admission/remote_pool.h"
#include "headroom/build/deadline.h"
#include "headroom/estimator/estimator.h"
#include "headroom/estimator/exec_mode.h"
#include "headroom/exec/jobserver.h"
#include "headroom/exec/jobserver_server.h"
#include "headroom/history/history_store.h"
#include "headroom/history/user_store.h"
#include "headroom/manifest/manifest_parser.h"
#include "headroom/memory/job_meter.h"
#include "headroom/memory/memory_probe.h"
#include "headroom/report/job_recorder.h"
#include "headroom/scan/content_hashes.h"
#include "headroom/status/status.h"
#include "headroom/util/messages.h"
#include "headroom/util/path.h"
#include "headroom/util/metrics.h"

namespace headroom {

NinjaMain::NinjaMain(const BuildConfig& config, const Clock* clock, ProcessRunner* runner,
                     Explanations* explanations)
    : config_(config), clock_(clock), runner_(runner), explanations_(explanations) {}

NinjaMain::~NinjaMain() {
  if (content_hashes_) {
    std::string err;
    if (!content_hashes_->Save(&err)) PrintWarning("saving content hashes: " + err);
  }
  // What this pass measured joins the per-user store for other build dirs (a pip install's next temp dir).
  if (!user_store_) return;
  std::string warning = user_store_->Flush(static_cast<int64_t>(time(nullptr)));
  if (!warning.empty() && status_) status_->Warning(warning);
}

// The per-user store: edge figures where the build dir has none, class figures seeded into the history.
void NinjaMain::OpenUserStore() {
  if (store_dir_.empty()) return;
  char cwd[PATH_MAX];
  user_store_ = std::make_unique<UserStore>(store_dir_, PathNormaliser::ForBuild(getcwd(cwd, sizeof cwd) ? cwd : ""));
  // Read when the first job is estimated: a build with nothing to do never pays for a large store.
  Status* status = status_;
  user_store_->LoadLazily(history_.get(), [status](const std::string& warning) { status->Warning(warning); });
}

MemoryController* NinjaMain::EnsureMemoryController() {
  if (!memory_.probe || !memory_.meter) return nullptr;
  if (memory_controller_) return memory_controller_.get();
  MemoryController::Parts parts{memory_.probe, memory_.meter, EnsureEstimator(true), &build_log_, status_, clock_};
  parts.ledger_dir = memory_.ledger_dir;
  memory_controller_ = std::make_unique<MemoryController>(parts, config_.memory, config_.explain);
  return memory_controller_.get();
}

Estimator* NinjaMain::EnsureEstimator(bool learns) {
  if (estimator_) return estimator_.get();
  history_ = std::make_unique<HistoryStore>();
  history_->set_keep_completed_runs(false);  // a build never estimates an edge again once it completed
  // Only the memory controller learns; --deadline alone (with --no-memory) reads, creating no file.
  const std::string path = LogPath(HistoryStore::kFileName);
  std::string warning = learns ? history_->Open(path) : history_->LoadForReading(path);
  if (!warning.empty()) status_->Warning(warning);
  OpenUserStore();
  // Linkers are estimated from the sizes of what they read.
  FileSizeFn sizes = [](const std::string& path) -> std::optional<uint64_t> {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return std::nullopt;
    return static_cast<uint64_t>(st.st_size);
  };
  estimator_ = std::make_unique<Estimator>(history_.get(), sizes);
  estimator_->set_user_store(user_store_.get());
  return estimator_.get();
}

std::unique_ptr<Deadline> NinjaMain::MakeDeadline() {
  if (config_.deadline_ms <= 0 || config_.dry_run) return nullptr;
  Estimator* estimator = EnsureEstimator(false);
  auto predict = [this, estimator](const Edge* edge) -> int64_t {
    if (edge->outputs.empty()) return -1;
    const std::string command = edge->EvaluateCommand();
    const std::string rspfile_content = edge->GetBinding("rspfile_content");
    JobDescription job;
    job.output = edge->outputs[0]->path;
    job.command_hash = build_log_.HashCommand(edge->EvaluateCommand(true));
    job.command = command;
    job.rule = edge->rule->name();
    job.rspfile_content = rspfile_content;
    const int64_t estimated =
        estimator->Predict(job, estimator->Profile(job), EstimateDetail::kFiguresOnly).duration_ms;
    if (estimated > 0) return estimated;
    // No history (e.g. --no-store on a build dir headroom never ran in): the last run ninja logged.
    for (const Node* output : edge->outputs)
      if (const BuildLogEntry* entry = build_log_.LookupByOutput(output->path))
        return entry->end_time - entry->start_time;
    return -1;
  };
  const int64_t started = run_started_ms_ >= 0 ? run_started_ms_ : clock_->NowMs();
  return std::make_unique<Deadline>(started + config_.deadline_ms, Deadline::DefaultGraceMs(config_.deadline_ms),
                                    predict);
}

JobController* NinjaMain::EnsureRemoteController(MemoryController* memory, const Plan& plan) {
  if (remote_controller_) return remote_controller_.get();
  const LauncherSettings launchers = LauncherSettingsFromEnvironment();
  // Asking a farm its size costs a process (sccache's, up to its timeout): only when a wanted job would go there.
  auto farm_job_wanted = [&plan, &launchers] {
    return plan.AnyWantedCommandEdge([&launchers](const Edge* edge) {
      ExecClass exec;
      std::string err;
      return ClassifyExecMode(edge->EvaluateCommand(), edge->GetBinding("headroom_exec"), launchers, &exec, &err) &&
             exec.mode == ExecMode::kRemote;
    });
  };
  size_t depth = config_.memory.remote_jobs;
  if (depth == 0) depth = RemoteDepthFromEnvironment(farm_job_wanted).value_or(0);
  if (depth == 0) return memory;  // no farm: exactly the memory controller
  RemoteConfig remote;
  remote.pool_depth = depth;
  // The CPUs this build may use (affinity and cgroup quota, as -j's default and the CPU cap count them).
  const long cores = config_.memory.cpus > 0 ? config_.memory.cpus : sysconf(_SC_NPROCESSORS_ONLN);
  remote.local_cap = LocalJobCap(static_cast<size_t>(config_.parallelism), depth, cores > 0 ? cores : 1);
  remote.launchers = launchers;
  remote.strict_remote = config_.memory.strict_remote;
  JobMeter* meter = memory_.meter;
  JobSizes sizes{[meter](JobId id) { return meter->CurrentBytes(id); }, [meter](JobId id) { return meter->PeakSoFar(id); }};
  remote_controller_ = std::make_unique<RemoteController>(memory, sizes, status_, remote);
  RemoteController* farm = remote_controller_.get();
  memory->set_exec_mode_hooks({[farm](const Edge* edge) { return farm->EstimatesRemote(edge); },
                               [farm](const Edge* edge) { return farm->RanRemote(edge); },
                               [farm](const Edge* edge) { return farm->ResidualFor(edge); },
                               [farm](const Edge* edge) { return farm->RunMode(edge); },
                               [farm](MemoryStatus* status) { farm->FillStatus(status); }});
  return farm;
}

bool NinjaMain::LoadManifest(const Options& options, Status* status) {
  ManifestParserOptions parser_options;
  if (options.phony_cycle_should_err) parser_options.phony_cycle_action = PhonyCycleAction::kError;
  ManifestParser parser(&state_, &disk_, parser_options);
  std::string err;
  bool loaded;
  {
    ScopedMetric metric = TimeScope(".ninja parse");
    loaded = parser.Load(options.input_file, &err);
  }
  if (!loaded) {
    status->Error(err);
    return false;
  }
  build_dir_ = state_.bindings.LookupVariable("builddir");
  store_dir_ = options.store_dir;
  return true;
}

bool NinjaMain::EnsureBuildDirExists(Status* status) {
  if (build_dir_.empty() || config_.dry_run) return true;
  if (!disk_.MakeDirs(build_dir_ + "/.") && errno != EEXIST) {
    status->Error("creating build directory " + build_dir_ + ": " + strerror(errno));
    return false;
  }
  return true;
}

std::string NinjaMain::LogPath(const char* name) const {
  return build_dir_.empty() ? std::string(name) : build_dir_ + "/" + name;
}

bool NinjaMain::OpenBuildLog(Status* status, bool recompact_only) {
  const std::string path = LogPath(".ninja_log");
  std::string err;
  LoadStatus loaded;
  {
    ScopedMetric metric = TimeScope(".ninja_log load");
    loaded = build_log_.Load(path, &err);
  }
  if (loaded == LoadStatus::kError) {
    status->Error("loading build log " + path + ": " + err);
    return false;
  }
  if (!err.empty()) {
    // A successful load may still carry a warning (an old version was discarded).
    status->Warning(err);
    err.clear();
  }
  if (recompact_only) {
    if (loaded == LoadStatus::kNotFound) return true;
    bool ok = build_log_.Recompact(path, *this, &err);
    if (!ok) status->Error("failed recompaction: " + err);
    return ok;
  }
  if (!config_.dry_run && !build_log_.OpenForWrite(path, *this, &err)) {
    status->Error("opening build log: " + err);
    return false;
  }
  return true;
}

bool NinjaMain::OpenDepsLog(Status* status, bool recompact_only) {
  const std::string path = LogPath(".ninja_deps");
  std::string err;
  LoadStatus loaded;
  {
    ScopedMetric metric = TimeScope(".ninja_deps load");
    loaded = deps_log_.Load(path, &state_, &err);
  }
  if (loaded == LoadStatus::kError) {
    status->Error("loading deps log " + path + ": " + err);
    return false;
  }
  if (!err.empty()) {
    status->Warning(err);
    err.clear();
  }
  if (recompact_only) {
    if (loaded == LoadStatus::kNotFound) return true;
    bool ok = deps_log_.Recompact(path, &err);
    if (!ok) status->Error("failed recompaction: " + err);
    return ok;
  }
  if (!config_.dry_run && !deps_log_.OpenForWrite(path, &err)) {
    status->Error("opening deps log: " + err);
    return false;
  }
  return true;
}

bool NinjaMain::IsPathDead(std::string_view path) const {
  Node* node = state_.LookupNode(path);
  if (node && node->in_edge) return false;
  // Outputs no longer in the manifest stay logged while the file exists: generators may still
  // want to know about them.
  std::string err;
  TimeStamp mtime = disk_.Stat(std::string(path), &err);
  if (mtime == -1) PrintError(err);
  return mtime == 0;
}

ContentHashes* NinjaMain::EnsureContentHashes() {
  if (!config_.content_hash) return nullptr;
  if (content_hashes_) return content_hashes_.get();
  content_hashes_ = std::make_unique<ContentHashes>(&state_, &disk_, &build_log_, &deps_log_, config_.dry_run);
  std::string warning;
  content_hashes_->Load(LogPath(HashLog::kFileName), &warning);
  if (!warning.empty()) PrintWarning(warning);
  return content_hashes_.get();
}

void NinjaMain::ConfigureBuilder(Builder* builder) {
  builder->set_runner(runner_);
  builder->set_content_hashes(EnsureContentHashes());
  if (build_log_.records_start_time()) builder->set_lock_file_path(LogPath(".ninja_lock"));
}

void NinjaMain::AttachJobController(Builder* builder) {
  // Only once there is work: a build with nothing to do never reads the history, probes memory or makes cgroups.
  if (MemoryController* memory = EnsureMemoryController()) {
    memory->set_timeline(timeline_);
    JobController* controller = EnsureRemoteController(memory, builder->plan());
    if (remote_controller_) remote_controller_->set_timeline(timeline_, clock_);
    builder->set_job_controller(controller);
    builder->set_edge_cost([memory](const Edge* edge) { return memory->EdgeCost(edge); });
  } else if (timeline_) {
    // No memory decisions to record, but the trace and report still show every job.
    if (!job_recorder_) job_recorder_ = std::make_unique<JobRecorder>(timeline_, clock_);
    builder->set_job_controller(job_recorder_.get());
  }
}

bool NinjaMain::RebuildManifest(const std::string& input_file, std::string* err, Status* status) {
  std::string path = input_file;
  if (path.empty()) {
    *err = "empty path";
    return false;
  }
  if (!CanonicalizePath(&path, err)) return false;
  Node* node = state_.LookupNode(path);
  if (!node) return false;

  Builder builder(&state_, config_, &build_log_, &deps_log_, &disk_, status, clock_, explanations_);
  ConfigureBuilder(&builder);
  if (!builder.AddTarget(node, err)) return false;
  if (builder.AlreadyUpToDate()) return false;  // nothing to do is not an error
  AttachJobController(&builder);
  if (builder.Build(err) != BuildResult::kSucceeded) return false;
  // A restat generator may have left the manifest untouched; then there is nothing to reload.
  if (!node->dirty) {
    state_.Reset();
    return false;
  }
  return true;
}

Node* NinjaMain::CollectTarget(const std::string& name, std::string* err) {
  std::string path = name;
  if (path.empty()) {
    *err = "empty path";
    return nullptr;
  }
  CanonicalizePath(&path, err);
  // "foo.cc^" names the first output built from foo.cc.
  bool first_dependent = false;
  if (!path.empty() && path.back() == '^') {
    path.pop_back();
    first_dependent = true;
  }
  Node* node = state_.LookupNode(path);
  if (!node) {
    *err = "unknown target '" + path + "'";
    if (path == "clean") {
      *err += ", did you mean 'ninja -t clean'?";
    } else if (path == "help") {
      *err += ", did you mean 'ninja -h'?";
    } else if (Node* suggestion = state_.SpellcheckNode(path)) {
      *err += ", did you mean '" + suggestion->path + "'?";
    }
    return nullptr;
  }
  if (!first_dependent) return node;
  if (node->out_edges.empty()) {
    Node* reverse = deps_log_.GetFirstReverseDepsNode(node);
    if (!reverse) {
      *err = "'" + path + "' has no out edge";
      return nullptr;
    }
    return reverse;
  }
  return node->out_edges[0]->outputs[0];
}

bool NinjaMain::CollectTargetsFromArgs(const std::vector<std::string>& args, std::vector<Node*>* targets,
                                       std::string* err) {
  if (args.empty()) {
    *targets = state_.DefaultNodes(err);
    return err->empty();
  }
  for (const std::string& arg : args) {
    Node* node = CollectTarget(arg, err);
    if (!node) return false;
    targets->push_back(node);
  }
  return true;
}

int NinjaMain::RunBuild(const std::vector<std::string>& args, Status* status) {
  std::string err;
  std::vector<Node*> targets;
  if (!CollectTargetsFromArgs(args, &targets, &err)) {
    status->Error(err);
    return 1;
  }

  // make's jobserver (ninja 1.13), for this build only, not for a manifest regeneration. Declared
  // before the builder so the builder hands its tokens back before the client closes.
  std::unique_ptr<JobserverClient> jobserver = SetUpJobserver(config_, getenv("MAKEFLAGS"), status);
  // headroom's own jobserver for the jobs (--jobserver), made below only when something will run; declared
  // before the builder, which closes its channels on the way out, and removed (fifos and directory) when
  // this function returns, however the build ended.
  std::unique_ptr<JobserverServer> server;
  Builder builder(&state_, config_, &build_log_, &deps_log_, &disk_, status, clock_, explanations_);
  ConfigureBuilder(&builder);
  if (jobserver) builder.set_jobserver(jobserver.get());
  for (Node* target : targets) {
    if (!builder.AddTarget(target, &err) && !err.empty()) {
      status->Error(err);
      return 1;
    }
  }
  if (builder.AlreadyUpToDate()) {
    if (config_.verbosity != BuildConfig::Verbosity::kNoStatusUpdate) status->Info("no work to do.");
    return 0;
  }
  if (config_.serve_jobserver != BuildConfig::ServeJobserver::kOff && !config_.dry_run) {
    const char* temp_dir = getenv("TMPDIR");
    std::string server_err;
    server = JobserverServer::Create(
        config_.serve_jobserver == BuildConfig::ServeJobserver::kPipe ? JobserverStyle::kPipe : JobserverStyle::kFifo,
        config_.parallelism, temp_dir && *temp_dir ? temp_dir : "/tmp", getenv("MAKEFLAGS"), &server_err);
    if (!server) status->Warning("jobserver: " + server_err + "; jobs run without one");
    if (server) {
      for (const char* name : {"CARGO_MAKEFLAGS", "MFLAGS"}) server->AlsoRewrite(name, getenv(name));
      builder.set_jobserver_server(server.get());
    }
  }
  AttachJobController(&builder);
  if (!status_) status_ = status;  // the history's warnings, when --deadline reads it without the memory features
  std::unique_ptr<Deadline> deadline = MakeDeadline();
  builder.set_deadline(deadline.get());
  BuildResult result = builder.Build(&err);
  if (result == BuildResult::kSucceeded) return 0;
  status->Info("build stopped: " + err + ".");
  if (result == BuildResult::kInterrupted) return 130;
  return builder.failure_exit_code();
}

void NinjaMain::DumpMetrics(std::FILE* out) const {
  ReportMetrics(out);
  // How full the path table is, as ninja reports its own: entries over slots.
  const size_t entries = state_.node_count(), buckets = state_.path_buckets();
  std::fprintf(out, "\npath->node hash load %.2f (%zu entries / %zu buckets)\n",
               buckets ? static_cast<double>(entries) / static_cast<double>(buckets) : 0.0, entries, buckets);
}

}  // namespace headroom
