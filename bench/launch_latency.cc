// launch_latency: how long a job takes from ProcessRunner::Start to its exit when it runs in a cgroup (joined after
// birth on v1, born there on v2, or handed to a child prepared there ahead of time) or in none, optionally with a large
// heap in the launching process (the figures in docs/memory-observation.md, "Launch latency"). Needs root to make the
// cgroup.
//
//   launch_latency CGROUP_DIR|'' [HEAP_MIB] [JOBS] [prepared]
//
// Each job is `true`, started 50 ms after the last ended, so each cgroup move is isolated (moves close together
// share one RCU grace period and are fast: the case this measures is a build's usual one).
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "headroom/exec/prepared_launch.h"
#include "headroom/exec/process_runner.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: launch_latency CGROUP_DIR|'' [HEAP_MIB] [JOBS] [prepared]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const size_t heap_mib = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 0;
  const int jobs = argc > 3 ? std::atoi(argv[3]) : 40;
  const bool prepared = argc > 4 && std::string(argv[4]) == "prepared" && !dir.empty();
  if (!dir.empty() && mkdir(dir.c_str(), 0755) != 0) {
    std::perror(dir.c_str());
    return 1;
  }
  std::vector<char> heap(heap_mib << 20);
  auto runner = headroom::MakePosixProcessRunner();
  double total_ms = 0;
  std::unique_ptr<headroom::PreparedLaunch> launch;
  // As headroom does with a spare cgroup: the child joins during the gap before the job.
  auto prepare = [&] {
    std::string err;
    if (prepared && !(launch = headroom::PreparedLaunch::Start(dir, &err))) {
      std::fprintf(stderr, "launch_latency: %s\n", err.c_str());
      std::exit(1);
    }
  };
  prepare();
  usleep(50000);
  for (int i = 0; i < jobs; ++i) {
    headroom::JobStartOptions options;
    options.cgroup_dir = dir;
    options.prepared = launch.get();
    std::string err;
    const auto start = std::chrono::steady_clock::now();
    if (runner->Start("true", options, &err) < 0) {
      std::fprintf(stderr, "launch_latency: %s\n", err.c_str());
      return 1;
    }
    std::vector<headroom::JobExit> finished;
    while (finished.empty()) runner->Wait(-1, &finished);
    total_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    // The launcher keeps writing its memory, as headroom does.
    for (size_t k = 0; k < heap.size(); k += 4096) ++heap[k];
    prepare();
    usleep(50000);
  }
  launch.reset();
  if (!dir.empty()) rmdir(dir.c_str());
  std::printf("%s%s, heap %zu MiB: mean Start-to-exit of `true` %.2f ms over %d jobs\n",
              dir.empty() ? "no cgroup" : dir.c_str(), prepared ? " (prepared)" : "", heap_mib, total_ms / jobs, jobs);
  return 0;
}
