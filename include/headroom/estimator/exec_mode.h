// A job's execution mode: whether a distributed compiler in front of it (distcc, icecc, sccache-dist, ccache with
// CCACHE_PREFIX) can run it on a farm, or it runs on this machine. Pure: the caller supplies the launchers' settings.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "headroom/estimator/command_line.h"

namespace headroom {

enum class ExecMode {
  kLocal,   // runs here: links, archives, scripts, compiles with no distributing launcher, headroom_exec = local
  kRemote,  // may run on a farm; costs this machine only a residual (preprocessing, the launcher) unless it falls back
};

const char* ExecModeName(ExecMode mode);  // "local", "remote"

// What the launchers read from outside the command line (the build's environment and their config files).
struct LauncherSettings {
  std::string ccache_prefix;  // CCACHE_PREFIX of the environment, or ccache.conf's prefix_command
  bool sccache_dist = false;  // sccache has a dist scheduler configured (SccacheConfigHasScheduler)
};

// The launchers' settings of this process: CCACHE_PREFIX, and sccache's config file ($SCCACHE_CONF, else
// $XDG_CONFIG_HOME/sccache/config or ~/.config/sccache/config) naming a scheduler.
LauncherSettings LauncherSettingsFromEnvironment();

// True when an sccache config text (TOML) sets scheduler_url in its [dist] table.
bool SccacheConfigHasScheduler(std::string_view config_text);

struct ExecClass {
  ExecMode mode = ExecMode::kLocal;
  std::string engine;  // the distributing launcher of a remote job: "distcc", "icecc", "sccache-dist"; "" when local
  std::string why;     // one phrase for -d explain: "distcc launcher", "headroom_exec = local", "not a compile"
};

// Classifies a command. `headroom_exec` is the edge's binding of that name ("" when unset): "remote" or "local"
// wins over the command. Returns false and sets *err (ninja-style wording, no "ninja: error: " prefix) for any
// other value.
bool ClassifyExecMode(std::string_view command, std::string_view headroom_exec, const LauncherSettings& settings,
                      ExecClass* out, std::string* err);

// The key a job's history is kept under, per execution mode: a local job keeps its class or family key as it is
// (history written before scale-out stays valid), a remote one gets " @remote" appended, so a family's residual
// peaks on a farm and its local peaks (links of the same tool, fallbacks) never mix.
std::string ExecModeKey(std::string_view key, ExecMode mode);

// Whether `step` does its work in a compile server rather than in the job's own processes: sccache hands every
// C/C++ and nvcc compile to its server, a daemon that is no child of the job (its client only waits), so the job's
// process tree and cgroup hold only the client. Links and other tools sccache does not cache run in the client.
bool RunsInCompileServer(const CommandStep& step);

// History keys of jobs that run in a compile server get this suffix: what such a job measures (the client) never
// mixes with the same command's own compiles. CompileServerKey appends it, WithoutCompileServerKey drops it.
inline constexpr std::string_view kCompileServerKeySuffix = " @sccache-server";
std::string CompileServerKey(std::string_view key);
std::string_view WithoutCompileServerKey(std::string_view key);

// The same from already parsed steps (the estimator's ParseCommandSteps); the dominant step decides.
ExecClass ClassifyExecSteps(const std::vector<CommandStep>& steps, const LauncherSettings& settings);

}  // namespace headroom
