// One pass of "load the manifest, open the logs, maybe regenerate, build" — what ninja's main does.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "headroom/build/build_config.h"
#include "headroom/build/builder.h"
#include "headroom/build/deadline.h"
#include "headroom/cli/options.h"
#include "headroom/graph/graph.h"
#include "headroom/logs/build_log.h"
#include "headroom/logs/deps_log.h"
#include "headroom/scan/explanations.h"
#include "headroom/util/clock.h"
#include "headroom/util/disk.h"

namespace headroom {

class Status;
class ProcessRunner;
class MemoryProbe;
class JobMeter;
class HistoryStore;
class UserStore;
class Estimator;
class MemoryController;
class RemoteController;
class BuildTimeline;
class JobRecorder;
class ContentHashes;

// Process-wide memory observers, shared by every pass of the regeneration loop.
struct MemoryServices {
  MemoryProbe* probe = nullptr;
  JobMeter* meter = nullptr;
  std::string ledger_dir;  // the machine-wide build ledger (build_ledger.h); "" for none
};

class NinjaMain : public BuildLog::Liveness {
 public:
  NinjaMain(const BuildConfig& config, const Clock* clock, ProcessRunner* runner, Explanations* explanations);

  bool LoadManifest(const Options& options, Status* status);
  bool EnsureBuildDirExists(Status* status);
  bool OpenBuildLog(Status* status, bool recompact_only = false);
  bool OpenDepsLog(Status* status, bool recompact_only = false);

  // Builds the manifest first when it is an output. true: it changed, start over.
  // false with *err: regeneration failed.
  bool RebuildManifest(const std::string& input_file, std::string* err, Status* status);
  // Builds the targets named in `args` (or the defaults). Returns the exit code.
  int RunBuild(const std::vector<std::string>& args, Status* status);
  // The -d stats report: the metrics table, then how full the path table is.
  void DumpMetrics(std::FILE* out) const;

  bool IsPathDead(std::string_view path) const override;

  State& state() { return state_; }
  BuildLog& build_log() { return build_log_; }
  DepsLog& deps_log() { return deps_log_; }
  DiskInterface& disk() { return disk_; }
  const std::string& build_dir() const { return build_dir_; }
  // Turns memory-aware scheduling on for the builds this pass runs.
  void set_memory_services(const MemoryServices& services, Status* status) {
    memory_ = services;
    status_ = status;
  }
  MemoryController* memory_controller() const { return memory_controller_.get(); }
  // The scale-out layer over it, when the build has a remote pool (docs/scale-out.md); nullable.
  RemoteController* remote_controller() const { return remote_controller_.get(); }
  // Records the builds this pass runs (jobs, memory, decisions) for --trace/--report; nullable.
  void set_timeline(BuildTimeline* timeline) { timeline_ = timeline; }
  // When the run began on the clock: --deadline counts from there (a manifest regeneration included).
  void set_run_started_ms(int64_t ms) { run_started_ms_ = ms; }
  ~NinjaMain() override;

 private:
  Node* CollectTarget(const std::string& name, std::string* err);
  bool CollectTargetsFromArgs(const std::vector<std::string>& args, std::vector<Node*>* targets, std::string* err);
  void ConfigureBuilder(Builder* builder);
  // --content-hash: the records, read at the first build of this pass.
  ContentHashes* EnsureContentHashes();
  // The memory controller (or the trace's job recorder), attached once the build has work to do.
  void AttachJobController(Builder* builder);
  MemoryController* EnsureMemoryController();
  // The history and the estimator over it (for the memory controller and --deadline's predictions).
  // `learns`: the history file is opened for appending (else only read).
  Estimator* EnsureEstimator(bool learns);
  // --deadline: predictions from the estimator, else the log's last run; null without the option.
  std::unique_ptr<Deadline> MakeDeadline();
  // Wraps the memory controller when a remote pool is known (--remote-jobs or distcc's host list).
  JobController* EnsureRemoteController(MemoryController* memory, const Plan& plan);
  void OpenUserStore();
  std::string LogPath(const char* name) const;

  const BuildConfig& config_;
  const Clock* clock_;
  ProcessRunner* runner_;
  Explanations* explanations_;
  MemoryServices memory_;
  Status* status_ = nullptr;
  std::unique_ptr<HistoryStore> history_;
  std::string store_dir_;                  // Options::store_dir
  std::unique_ptr<UserStore> user_store_;  // written back when this pass ends
  std::unique_ptr<Estimator> estimator_;
  std::unique_ptr<MemoryController> memory_controller_;
  std::unique_ptr<RemoteController> remote_controller_;
  BuildTimeline* timeline_ = nullptr;
  std::unique_ptr<JobRecorder> job_recorder_;  // with --no-memory, when a timeline is wanted
  std::unique_ptr<ContentHashes> content_hashes_;  // --content-hash; written back when this pass ends
  State state_;
  RealDiskInterface disk_;
  BuildLog build_log_;
  DepsLog deps_log_;
  std::string build_dir_;
  int64_t run_started_ms_ = -1;  // -1: when this pass's build begins
};

}  // namespace headroom
