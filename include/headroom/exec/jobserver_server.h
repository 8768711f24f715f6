// headroom's own jobserver (`--jobserver`, docs/jobserver.md): a private 0700 directory with one 0600 fifo
// per job, the MAKEFLAGS that names it, and the ledger of slots handed out. The builder decides when to
// offer; this file owns the OS side and the clean-up.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "headroom/exec/jobserver_slots.h"
#include "headroom/exec/process_runner.h"

namespace headroom {

// How a job is told about its channel. kFifo: `--jobserver-auth=fifo:PATH` (make 4.4's default; nvcc 13,
// ninja 1.13, cargo). kPipe: `--jobserver-auth=R,W` on a descriptor only that job inherits (make 4.3 and
// older, which stop on the fifo form; nvcc and PyPI's ninja accept it too).
enum class JobserverStyle { kFifo, kPipe };

class JobserverServer {
 public:
  // Makes the private directory under `temp_dir` (after removing ones left by killed builds). nullptr with
  // *error when it cannot. `parallelism` is the -j the jobs are told (`-jN` in MAKEFLAGS).
  static std::unique_ptr<JobserverServer> Create(JobserverStyle style, int parallelism, const std::string& temp_dir,
                                                 const char* inherited_makeflags, std::string* error);
  ~JobserverServer();  // every channel closed, every fifo and the directory removed
  JobserverServer(const JobserverServer&) = delete;
  JobserverServer& operator=(const JobserverServer&) = delete;

  // A channel for a job about to start; fills options->environment (and inherit_fd for kPipe). Hand it to
  // ledger().AddJob once the job has an id; dropping it removes its fifo. nullptr with *error on failure.
  std::unique_ptr<TokenChannel> OpenChannel(JobStartOptions* options, std::string* error);

  // Other variables a job's jobserver clients read, rewritten like MAKEFLAGS when headroom inherited them:
  // cargo, rustc and cc-rs read CARGO_MAKEFLAGS before MAKEFLAGS (then MFLAGS), so an inherited one would send
  // a job's cargo to the outer pool and past the slots headroom hands out. Nothing when `inherited` is null.
  void AlsoRewrite(const std::string& name, const char* inherited);

  SlotLedger& ledger() { return ledger_; }
  const std::string& directory() const { return directory_; }

 private:
  JobserverServer(JobserverStyle style, int parallelism, std::string directory, int directory_lock,
                  std::string base_makeflags);

  JobserverStyle style_;
  int parallelism_;
  std::string directory_;
  int directory_lock_;          // the directory, open and flocked while this server lives (-1: could not lock)
  std::string base_makeflags_;  // the inherited MAKEFLAGS without -j or jobserver words
  std::vector<std::pair<std::string, std::string>> also_rewritten_;  // name, inherited value stripped likewise
  uint64_t next_channel_ = 0;
  SlotLedger ledger_;
};

// The inherited MAKEFLAGS with its -j… and --jobserver-… words removed (they describe a pool the job must
// not use); what is left is kept for the job, make's single-letter word first as make writes it.
std::string StripJobserverWords(std::string_view makeflags);
// What a job gets: the stripped flags, then ` -jN --jobserver-auth=AUTH`.
std::string JobMakeflags(const std::string& stripped, int parallelism, const std::string& auth);
// A directory untouched for this long (a job's fifo made or removed in it touches it) may be stale.
inline constexpr int64_t kStaleJobserverDirAgeS = 600;
// Removes headroom-jobserver-<pid>-* directories under `temp_dir` left by a build killed by SIGKILL: this user's,
// whose pid does not run here, that no live server holds locked (a flock the server keeps for its lifetime, seen
// across pid namespaces: two containers sharing /tmp see each other's pids as dead), and untouched for
// kStaleJobserverDirAgeS (a directory a server has made but not yet locked, or one of an older headroom that
// took no lock). Returns how many were removed.
int RemoveStaleJobserverDirs(const std::string& temp_dir);

}  // namespace headroom
