// MemoryProbe: the build's memory budget and pressure, re-read cheaply during the build from
// /proc/meminfo, the own cgroup and its ancestors (v1, v2, hybrid, namespaced), and PSI.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "headroom/memory/cgroup_layout.h"
#include "headroom/memory/kernel_file.h"
#include "headroom/memory/pressure_window.h"
#include "headroom/memory/reading.h"
#include "headroom/util/clock.h"

namespace headroom {

struct MemoryProbeOptions {
  std::string root;                     // prefix for every path read; "" is the real system
  const Clock* clock = nullptr;         // used by Read(); not owned; nullptr means a steady clock
  int64_t pressure_window_ms = 2000;    // the short PSI window
  int64_t pressure_min_span_ms = 100;   // reads closer together than this reuse the last PSI figure
};

class MemoryProbe {
 public:
  // Discovers the cgroup layout once and opens the files later reads need. Never fails: whatever
  // cannot be found becomes a warning and the probe uses the next source.
  explicit MemoryProbe(MemoryProbeOptions options);
  ~MemoryProbe();

  MemoryReading Read();
  MemoryReading Read(int64_t now_ms);

  const CgroupLayout& layout() const { return layout_; }
  // The cgroup whose limit bound the last Read()'s available figure, as a path inside the memory hierarchy
  // ("/box"; the layout's mount point is "/"), or "" when the machine's MemAvailable bound it. Builds whose jobs
  // live below it share that memory with this one (BuildLedger: their reservations count here).
  std::string BindingCgroup() const;
  // Warnings collected so far (each problem once per probe); the caller prints them.
  std::vector<std::string> TakeWarnings();

 private:
  struct LimitLevel;
  struct PressureSource;
  struct CgroupFigures {
    uint64_t max_bytes = 0;
    uint64_t high_bytes = 0;
    uint64_t effective_limit = 0;   // tightest of max and high over all levels
    uint64_t available = 0;         // tightest (limit - usage) over limited levels
    uint64_t usage_at_binding = 0;
    bool have_available = false;
    std::string binding_dir;        // the level whose headroom is the tightest

  };

  void ReadMeminfo(MemoryReading* reading);
  CgroupFigures ReadCgroupLimits();
  bool ReadLevelHeadroom(LimitLevel& level, uint64_t level_limit, uint64_t* headroom, uint64_t* usage);
  static bool MachineHasRoomForTheLimit(const MemoryReading& reading);
  void ReadPressure(int64_t now_ms, MemoryReading* reading);
  void Warn(const std::string& key, const std::string& message);

  MemoryProbeOptions options_;
  std::unique_ptr<Clock> own_clock_;
  CgroupLayout layout_;
  KernelFile meminfo_;
  std::vector<LimitLevel> levels_;
  std::string binding_dir_;  // the last Read()'s binding level; "" when the machine bound it
  std::vector<PressureSource> pressure_sources_;
  std::set<std::string> warned_;
  std::vector<std::string> warnings_;
};

}  // namespace headroom
