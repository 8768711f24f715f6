// `-t restat [outputs]`: refreshes the mtimes in ./.ninja_log from disk without loading the
// manifest (CMake and Meson run it after regenerating, sometimes from inside a running build).
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <string_view>

#include "headroom/logs/build_log.h"
#include "headroom/tools/tool_support.h"
#include "headroom/tools/tools.h"
#include "headroom/util/disk.h"
#include "headroom/util/messages.h"

namespace headroom {

namespace {

constexpr const char* kLogPath = ".ninja_log";

// A log this build cannot read is thrown away. Unlike a build, ninja's restat does that silently,
// so the header is checked here before BuildLog::Load (which would warn) sees the file.
bool HasUnreadableHeader(const char* path) {
  FILE* file = fopen(path, "r");
  if (!file) return false;
  char line[64];
  const bool complete_line = fgets(line, sizeof line, file) && std::string_view(line).find('\n') != std::string_view::npos;
  fclose(file);
  if (!complete_line) return false;  // no complete line: an empty, valid log
  static constexpr std::string_view kSignature = "# ninja log v";
  if (std::string_view(line).substr(0, kSignature.size()) != kSignature) return true;
  const long version = strtol(line + kSignature.size(), nullptr, 10);
  return version < BuildLog::kOldestReadableVersion || version > BuildLog::kCurrentVersion;
}

// What a recompaction triggered by reopening the log may drop: with no manifest loaded, an entry
// is dead when its file is gone.
class OutputsOnDisk : public BuildLog::Liveness {
 public:
  OutputsOnDisk(const State& state, const DiskInterface& disk) : state_(state), disk_(disk) {}
  bool IsPathDead(std::string_view path) const override {
    const Node* node = state_.LookupNode(path);
    if (node && node->in_edge) return false;
    std::string err;
    TimeStamp mtime = disk_.Stat(std::string(path), &err);
    if (mtime == -1) PrintError(err);
    return mtime == 0;
  }

 private:
  const State& state_;
  const DiskInterface& disk_;
};

}  // namespace

int ToolRestat(const ToolContext& context, const ToolArgs& args) {
  ToolOptionParser parser(args, "h");
  if (parser.Next() != -1) {
    printf("usage: ninja -t restat [outputs]\n");
    return 1;
  }
  const std::vector<std::string> outputs = parser.Operands();

  if (HasUnreadableHeader(kLogPath)) {
    unlink(kLogPath);
    return 0;
  }
  BuildLog build_log;
  std::string err;
  LoadStatus status = build_log.Load(kLogPath, &err);
  if (status == LoadStatus::kError) {
    Error("loading build log {}: {}", kLogPath, err);
    return 1;
  }
  if (status == LoadStatus::kNotFound) return 0;  // nothing recorded, nothing to restat
  if (!err.empty()) {
    PrintWarning(err);
    err.clear();
  }
  if (!build_log.Restat(kLogPath, *context.disk, outputs, &err)) {
    PrintError("failed recompaction: " + err);
    return 1;
  }
  if (context.config->dry_run) return 0;
  // Reopening recompacts a bloated log, as ninja's restat does.
  OutputsOnDisk liveness(*context.state, *context.disk);
  if (!build_log.OpenForWrite(kLogPath, liveness, &err)) {
    PrintError("opening build log: " + err);
    return 1;
  }
  return 0;
}

}  // namespace headroom
