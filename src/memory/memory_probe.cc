// MemoryProbe: budget (tightest limit), availability (minus unreclaimable usage) and a short PSI window.
#include "headroom/memory/memory_probe.h"

#include <unistd.h>

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "headroom/memory/memory_parsers.h"

namespace headroom {

namespace {

class FallbackSteadyClock : public Clock {
 public:
  int64_t NowMs() const override { return steady_.NowMs(); }

 private:
  SteadyClock steady_;
};

}  // namespace

// One cgroup directory on the way from the own cgroup to the mount point.
struct MemoryProbe::LimitLevel {
  std::string dir;
  KernelFile max;    // v2 memory.max or v1 memory.limit_in_bytes
  KernelFile high;   // v2 memory.high; empty on v1
  KernelFile usage;  // v2 memory.current or v1 memory.usage_in_bytes
  KernelFile stat;   // memory.stat, for the reclaimable inactive file pages
  bool is_mount_point = false;
};

struct MemoryProbe::PressureSource {
  KernelFile file;
  PressureWindow window;
  bool machine_wide = false;  // /proc/pressure/memory: every task on the machine, whatever its cgroup
};

namespace {

// The machine's root cgroup, not a container's namespace root (whose PSI is its own): every cgroup but the real
// root has a cgroup.type file.
bool IsUnifiedRoot(const CgroupLayout& layout) {
  auto trimmed = [](std::string_view path) {
    while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
    return path;
  };
  return trimmed(layout.v2_dir) == trimmed(layout.v2_mount_point) &&
         access((layout.v2_dir + "/cgroup.type").c_str(), F_OK) != 0;
}

}  // namespace

MemoryProbe::MemoryProbe(MemoryProbeOptions options) : options_(std::move(options)) {
  if (options_.clock == nullptr) {
    own_clock_ = std::make_unique<FallbackSteadyClock>();
    options_.clock = own_clock_.get();
  }
  meminfo_ = KernelFile(options_.root + "/proc/meminfo");
  std::vector<std::string> discovery_warnings;
  layout_ = DiscoverCgroups(options_.root, &discovery_warnings);
  for (const std::string& warning : discovery_warnings) Warn(warning, warning);

  bool v2 = layout_.memory_version == CgroupVersion::kV2;
  if (layout_.memory_version != CgroupVersion::kNone) {
    for (const std::string& dir : DirsUpToMount(layout_.memory_dir, layout_.memory_mount_point)) {
      LimitLevel level;
      level.dir = dir;
      level.max = KernelFile(dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes"));
      if (v2) level.high = KernelFile(dir + "/memory.high");
      level.usage = KernelFile(dir + (v2 ? "/memory.current" : "/memory.usage_in_bytes"));
      level.stat = KernelFile(dir + "/memory.stat");
      level.is_mount_point = dir == layout_.memory_mount_point;
      levels_.push_back(std::move(level));
    }
  }
  // The cgroup's own pressure first (it sees stalls caused by our limit), then the whole machine's.
  auto add_pressure = [&](std::string path, bool machine_wide) {
    pressure_sources_.push_back({KernelFile(std::move(path)),
                                 PressureWindow(options_.pressure_window_ms, options_.pressure_min_span_ms),
                                 machine_wide});
  };
  // The unified tree's root cgroup has PSI files too on newer kernels (seen on 6.18): they count every task.
  if (!layout_.v2_dir.empty()) add_pressure(layout_.v2_dir + "/memory.pressure", IsUnifiedRoot(layout_));
  add_pressure(options_.root + "/proc/pressure/memory", true);
}

MemoryProbe::~MemoryProbe() = default;

MemoryReading MemoryProbe::Read() { return Read(options_.clock->NowMs()); }

MemoryReading MemoryProbe::Read(int64_t now_ms) {
  MemoryReading reading;
  reading.taken_at_ms = now_ms;
  ReadMeminfo(&reading);
  CgroupFigures cgroup = ReadCgroupLimits();
  reading.cgroup_max_bytes = cgroup.max_bytes;
  reading.cgroup_high_bytes = cgroup.high_bytes;

  uint64_t limit = reading.mem_total_bytes;
  if (cgroup.effective_limit != 0 && (limit == 0 || cgroup.effective_limit < limit)) {
    limit = cgroup.effective_limit;
    reading.from_cgroup = true;
  }
  reading.limit_bytes = limit;

  std::optional<uint64_t> available;
  if (reading.mem_available_bytes != 0) available = reading.mem_available_bytes;
  binding_dir_.clear();
  if (cgroup.have_available) {
    if (!available || cgroup.available <= *available) binding_dir_ = cgroup.binding_dir;
    available = available ? std::min(*available, cgroup.available) : cgroup.available;
    reading.cgroup_usage_bytes = cgroup.usage_at_binding;
  }
  if (available && limit != 0) {
    reading.available_bytes = std::min(*available, limit);
    reading.used_bytes = limit - reading.available_bytes;
  } else if (available) {
    reading.available_bytes = *available;
  }
  ReadPressure(now_ms, &reading);
  return reading;
}

std::string MemoryProbe::BindingCgroup() const {
  if (binding_dir_.empty()) return "";
  return CgroupPathInHierarchy(binding_dir_, layout_.memory_mount_point);
}

void MemoryProbe::ReadMeminfo(MemoryReading* reading) {
  std::string text, err;
  if (!meminfo_.Read(&text, &err)) {
    Warn("meminfo", fmt::format("memory: {}; the budget comes from cgroups only", err));
    return;
  }
  auto total = ParseMeminfoBytes(text, "MemTotal");
  auto available = ParseMeminfoBytes(text, "MemAvailable");
  if (!total || !available) {
    Warn("meminfo-format", fmt::format("memory: {} lacks MemTotal or MemAvailable", meminfo_.path()));
  }
  reading->mem_total_bytes = total.value_or(0);
  reading->mem_available_bytes = available.value_or(0);
}

MemoryProbe::CgroupFigures MemoryProbe::ReadCgroupLimits() {
  CgroupFigures figures;
  uint64_t tightest_max = kUnlimitedBytes;
  uint64_t tightest_high = kUnlimitedBytes;
  std::optional<uint64_t> tightest_headroom;
  std::string text, err;
  for (LimitLevel& level : levels_) {
    // The top of a hierarchy has no limit files (the real root cgroup): that is normal, not a problem.
    bool have_max = level.max.Read(&text, &err);
    if (!have_max && level.is_mount_point) continue;
    uint64_t level_max = kUnlimitedBytes;
    if (!have_max) {
      Warn("max:" + level.dir, fmt::format("memory: {}; treating {} as unlimited", err, level.dir));
    } else if (auto parsed = ParseCgroupLimit(text)) {
      level_max = *parsed;
    } else {
      Warn("max:" + level.dir, fmt::format("memory: cannot parse {}; treating it as unlimited", level.max.path()));
    }
    uint64_t level_high = kUnlimitedBytes;
    if (!level.high.empty() && level.high.Read(&text, &err)) {
      if (auto parsed = ParseCgroupLimit(text)) level_high = *parsed;
    }
    tightest_max = std::min(tightest_max, level_max);
    tightest_high = std::min(tightest_high, level_high);
    uint64_t level_limit = std::min(level_max, level_high);
    if (level_limit == kUnlimitedBytes) continue;
    // Siblings share an ancestor's limit, so each limited level's own usage counts against it.
    uint64_t headroom = 0, usage = 0;
    if (ReadLevelHeadroom(level, level_limit, &headroom, &usage) &&
        (!tightest_headroom || headroom < *tightest_headroom)) {
      tightest_headroom = headroom;
      figures.usage_at_binding = usage;
      figures.binding_dir = level.dir;
    }
  }
  if (tightest_max != kUnlimitedBytes) figures.max_bytes = tightest_max;
  if (tightest_high != kUnlimitedBytes) figures.high_bytes = tightest_high;
  uint64_t effective = std::min(tightest_max, tightest_high);
  if (effective != kUnlimitedBytes) figures.effective_limit = effective;
  if (tightest_headroom) {
    figures.available = *tightest_headroom;
    figures.have_available = true;
  }
  return figures;
}

bool MemoryProbe::ReadLevelHeadroom(LimitLevel& level, uint64_t level_limit, uint64_t* headroom,
                                    uint64_t* usage) {
  std::string text, err;
  std::optional<uint64_t> raw_usage;
  if (level.usage.Read(&text, &err)) raw_usage = ParseSingleNumber(text);
  if (!raw_usage) {
    Warn("usage:" + level.dir, fmt::format("memory: cannot read usage {}; using MemAvailable", level.usage.path()));
    return false;
  }
  // Inactive file pages are reclaimed before anything is OOM-killed, so they do not use up the budget.
  // v1 reports the hierarchical figure as total_inactive_file; v2's inactive_file is hierarchical.
  const char* key = layout_.memory_version == CgroupVersion::kV1 ? "total_inactive_file" : "inactive_file";
  std::optional<uint64_t> inactive_file;
  if (level.stat.Read(&text, &err)) inactive_file = ParseKeyedValue(text, key);
  if (!inactive_file) {
    Warn("stat:" + level.dir,
         fmt::format("memory: no {} in {}; counting page cache as used", key, level.stat.path()));
  }
  uint64_t unreclaimable = *raw_usage - std::min(*raw_usage, inactive_file.value_or(0));
  *usage = unreclaimable;
  *headroom = level_limit - std::min(level_limit, unreclaimable);
  return true;
}

// Where a cgroup's limit binds the build and the machine has that whole limit available besides what is in use,
// the build's jobs cannot make the machine short. Stalls the machine's PSI counts then happen in other cgroups at
// their own limits (on cgroup v1, /proc/pressure/memory is the only PSI there is): holding the build back helps
// nobody, and one container thrashing at its limit would stop admission in every build beside it. Stalls at the
// build's own limit show in its cgroup's PSI where there is one (v2), and as headroom below the reserve.
bool MemoryProbe::MachineHasRoomForTheLimit(const MemoryReading& reading) {
  return reading.from_cgroup && reading.mem_available_bytes >= reading.limit_bytes;
}

void MemoryProbe::ReadPressure(int64_t now_ms, MemoryReading* reading) {
  std::string text, err;
  for (PressureSource& source : pressure_sources_) {
    if (!source.file.Read(&text, &err)) {
      Warn("psi:" + source.file.path(), fmt::format("memory pressure: {}", err));
      continue;
    }
    auto snapshot = ParsePsi(text);
    if (!snapshot) {
      Warn("psi:" + source.file.path(), fmt::format("memory pressure: cannot parse {}", source.file.path()));
      continue;
    }
    // Both sources stall the build, so the worse one counts; the machine's only while the machine is short.
    PressureWindow::Percent percent = source.window.Add(now_ms, *snapshot);
    reading->pressure_known = true;
    if (source.machine_wide && MachineHasRoomForTheLimit(*reading)) continue;
    reading->pressure_some_pct = std::max(reading->pressure_some_pct, percent.some);
    reading->pressure_full_pct = std::max(reading->pressure_full_pct, percent.full);
  }
}

void MemoryProbe::Warn(const std::string& key, const std::string& message) {
  if (warned_.insert(key).second) warnings_.push_back(message);
}

std::vector<std::string> MemoryProbe::TakeWarnings() {
  std::vector<std::string> taken;
  taken.swap(warnings_);
  return taken;
}

}  // namespace headroom
