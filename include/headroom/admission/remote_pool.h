// The remote pool: how many jobs a compile farm takes at once (read from the engine's own configuration, e.g.
// distcc's host list, else a flag), a ledger of the slots remote-eligible jobs hold, and the local job cap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace headroom {

// What a distcc host list says (DISTCC_HOSTS or a hosts file; see distcc(1) "Host Specifications").
struct DistccHosts {
  std::optional<size_t> remote_slots;  // sum of the remote hosts' /LIMITs (4 when absent); unset when unknown
                                       // (+zeroconf) or when the list names no remote host
  size_t local_slots = 0;              // `localhost/N` entries (2 when absent) and --localslots=N, as distcc reads them
  size_t remote_hosts = 0;
};

// Reads a host list: whitespace-separated specs, '#' comments to the end of a line. `localhost` runs jobs here;
// HOST[:PORT][/LIMIT][,OPTIONS] and [USER]@HOST[/LIMIT] are remote; --randomize and --localslots_cpp are ignored.
DistccHosts ParseDistccHosts(std::string_view text);

// The host list distcc itself would use: $DISTCC_HOSTS, else $DISTCC_DIR/hosts (DISTCC_DIR defaults to
// $HOME/.distcc), else /etc/distcc/hosts. `env` returns nullptr for an unset variable; `read_file` returns
// nullopt for a missing file. nullopt when none exists.
std::optional<std::string> DistccHostsText(const std::function<const char*(const char*)>& env,
                                           const std::function<std::optional<std::string>(const std::string&)>& read_file);

// The farm's depth as the launchers' configuration states it, in this process's environment: distcc's host
// list, else, when sccache's config names a dist scheduler and `farm_job_wanted` says a job of this build would
// go to a farm, the CPUs the scheduler reports (SccacheDistDepth: a process, and up to its timeout, which a
// build of local jobs alone never pays). nullopt when nothing says.
std::optional<size_t> RemoteDepthFromEnvironment(const std::function<bool()>& farm_job_wanted);

// The farm's CPUs in the output of `sccache --dist-status` (its SchedulerStatus's num_cpus); nullopt when the
// scheduler is not connected or the text says nothing.
std::optional<size_t> ParseSccacheDistStatus(std::string_view status);

// Runs `sccache --dist-status` (about 0.1 s; it starts the sccache server if none runs) and parses it.
std::optional<size_t> SccacheDistDepth();

// How many local jobs may run at once. `-j` (parallelism) stays the bound on all jobs together; without a remote
// pool it is also the local bound, as in ninja. With one, -j is usually raised to the farm's size, so local jobs
// (links, archives, fallbacks) are held to what this machine's cores run well: ninja's own default, cores + 2.
size_t LocalJobCap(size_t parallelism, size_t remote_depth, size_t cores);

// Slots of the remote pool held by running remote-eligible jobs (by any job key the caller chooses).
class RemotePool {
 public:
  explicit RemotePool(size_t depth) : depth_(depth) {}

  size_t depth() const { return depth_; }
  size_t in_use() const { return holders_.size(); }
  size_t high_water() const { return high_water_; }
  bool HasRoom() const { return holders_.size() < depth_; }
  bool Holds(uint64_t job) const { return holders_.count(job) != 0; }

  // Takes a slot for `job`; false when the pool is full or the job holds one already.
  bool Take(uint64_t job);
  // Gives `job`'s slot back (the job ended, or fell back to a local compile); false when it held none.
  bool Release(uint64_t job);

 private:
  size_t depth_;
  size_t high_water_ = 0;
  std::set<uint64_t> holders_;
};

}  // namespace headroom
