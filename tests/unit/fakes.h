// Test doubles for the engine's OS seams: an in-memory file system, a scripted process runner and
// a manual clock, so whole builds run inside unit tests.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "headroom/exec/process_runner.h"
#include "headroom/status/status.h"
#include "headroom/util/clock.h"
#include "headroom/util/disk.h"

namespace headroom::fakes {

// Files with contents and mtimes; the "current time" advances by one on every write.
class VirtualFileSystem : public DiskInterface {
 public:
  struct Entry {
    TimeStamp mtime;
    std::string contents;
  };

  void Create(const std::string& path, const std::string& contents = "") {
    files_[path] = Entry{++now_, contents};
  }
  void Tick() { ++now_; }
  TimeStamp now() const { return now_; }

  TimeStamp Stat(const std::string& path, std::string* err) const override {
    stats_.push_back(path);
    auto it = files_.find(path);
    if (it != files_.end()) return it->second.mtime;
    if (dirs_.count(path)) return 1;
    return 0;
  }
  bool WriteFile(const std::string& path, const std::string& contents) override {
    Create(path, contents);
    return true;
  }
  bool MakeDir(const std::string& path) override {
    dirs_made_.push_back(path);
    dirs_.insert(path);
    return true;
  }
  ReadStatus ReadFile(const std::string& path, std::string* contents, std::string* err) override {
    files_read_.push_back(path);
    auto it = files_.find(path);
    if (it == files_.end()) {
      *err = "No such file or directory";
      return ReadStatus::kNotFound;
    }
    *contents = it->second.contents;
    return ReadStatus::kOkay;
  }
  int RemoveFile(const std::string& path) override {
    if (files_.erase(path) == 0) return 1;
    files_removed_.insert(path);
    return 0;
  }

  bool Exists(const std::string& path) const { return files_.count(path) > 0; }
  const std::string& Contents(const std::string& path) { return files_.at(path).contents; }

  std::map<std::string, Entry> files_;
  std::set<std::string> dirs_;
  std::vector<std::string> dirs_made_;
  std::vector<std::string> files_read_;
  std::set<std::string> files_removed_;
  mutable std::vector<std::string> stats_;

 private:
  TimeStamp now_ = 1;
};

// Runs a tiny command language against the VirtualFileSystem. Jobs finish one per Wait call,
// oldest first, so tests can observe how many ran at once.
//   touch A B   create/refresh files       fail        exit 1
//   exit N      exit N                      echo TEXT   output "TEXT\n"
//   keep        produce nothing (restat)    anything else: succeed without effects
class FakeProcessRunner : public ProcessRunner {
 public:
  explicit FakeProcessRunner(VirtualFileSystem* fs) : fs_(fs) {}

  JobId Start(const std::string& command, const JobStartOptions& options, std::string* err) override {
    commands_run.push_back(command);
    environments.push_back(options.environment);
    JobId id = next_id_++;
    active_.push_back({id, command});
    max_running = std::max(max_running, active_.size());
    return id;
  }

  WaitResult Wait(int timeout_ms, std::vector<JobExit>* finished) override {
    if (interrupt_after_starts >= 0 && static_cast<int>(commands_run.size()) >= interrupt_after_starts) {
      interrupted_signal_ = 2;
      return WaitResult::kInterrupted;
    }
    if (active_.empty()) {
      if (on_idle_wait) on_idle_wait();  // the builder polls with nothing running (JobController::IdleRetryMs)
      return WaitResult::kTimeout;
    }
    auto [id, command] = finish_newest_first ? active_.back() : active_.front();
    if (finish_newest_first) {
      active_.pop_back();
    } else {
      active_.pop_front();
    }
    finished->push_back(Execute(id, command));
    return WaitResult::kJobsFinished;
  }

  pid_t PidOf(JobId id) const override { return 1000 + id; }
  pid_t ProcessGroupOf(JobId id) const override { return 1000 + id; }
  bool SignalJob(JobId id, int sig) override {
    signals.push_back({id, sig});
    return true;
  }
  void AbortAll(int sig) override {
    aborted_with = sig;
    active_.clear();
  }
  size_t running_count() const override { return active_.size(); }
  int interrupt_signal() const override { return interrupted_signal_; }

  std::vector<std::string> commands_run;
  std::vector<std::vector<std::string>> environments;  // each start's JobStartOptions::environment
  std::vector<std::pair<JobId, int>> signals;
  size_t max_running = 0;
  int aborted_with = 0;
  int interrupt_after_starts = -1;  // >= 0: report an interrupt once this many jobs started
  std::function<void()> on_idle_wait;  // called by each Wait while nothing runs
  bool finish_newest_first = false;  // each Wait finishes the job started last (the first one runs to the end)

 private:
  JobExit Execute(JobId id, const std::string& command) {
    JobExit exit;
    exit.id = id;
    exit.exited_normally = true;
    std::istringstream words(command);
    std::string verb;
    words >> verb;
    if (verb == "touch") {
      std::string path;
      while (words >> path) fs_->Create(path);
    } else if (verb == "fail") {
      exit.exit_code = 1;
    } else if (verb == "exit") {
      words >> exit.exit_code;
    } else if (verb == "echo") {
      std::string rest;
      std::getline(words, rest);
      exit.output = rest.substr(rest.find_first_not_of(' ')) + "\n";
    }
    return exit;
  }

  VirtualFileSystem* fs_;
  std::deque<std::pair<JobId, std::string>> active_;
  JobId next_id_ = 1;
  int interrupted_signal_ = 0;
};

// The fake runner with a hook on each finished job's exit, where a test adds what a real runner would report
// (measurements, kills, scripted exit codes and output).
class AdjustingRunner : public FakeProcessRunner {
 public:
  using FakeProcessRunner::FakeProcessRunner;

  WaitResult Wait(int timeout_ms, std::vector<JobExit>* finished) override {
    size_t before = finished->size();
    WaitResult result = FakeProcessRunner::Wait(timeout_ms, finished);
    for (size_t i = before; i < finished->size(); ++i) Adjust(&(*finished)[i]);
    return result;
  }

 protected:
  virtual void Adjust(JobExit* exit) = 0;
  const std::string& CommandOf(const JobExit& exit) const { return commands_run[static_cast<size_t>(exit.id) - 1]; }
};

class ManualClock : public Clock {
 public:
  int64_t NowMs() const override { return now_ms; }
  int64_t now_ms = 0;
};

// A Status that shows nothing; a test derives from it and overrides only what it watches.
class NullStatus : public Status {
 public:
  void PlanHasTotalEdges(int) override {}
  void BuildEdgeStarted(const Edge*, int64_t) override {}
  void BuildEdgeFinished(Edge*, int64_t, int64_t, bool, int, const std::string&) override {}
  void BuildStarted() override {}
  void BuildFinished() override {}
  void Info(const std::string&) override {}
  void Warning(const std::string&) override {}
  void Error(const std::string&) override {}
};

}  // namespace headroom::fakes
