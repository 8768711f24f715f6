// Execution-mode classification: which distributing launcher (if any) can run a job's dominant step remotely.
#include "headroom/estimator/exec_mode.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace headroom {
namespace {

// Launchers that ship C/C++ compiles to their own daemons (distcc's pump mode included).
bool IsCppDistributor(std::string_view launcher) {
  return launcher == "distcc" || launcher == "pump" || launcher == "icecc";
}

std::string EngineOf(std::string_view launcher) {
  if (launcher == "pump") return "distcc";
  if (launcher == "sccache") return "sccache-dist";
  return std::string(launcher);
}

// The value of NAME=value among a step's peeled assignments (the last one wins, as in the shell); "" if absent.
std::string AssignedValue(const std::vector<std::string>& assignments, std::string_view name) {
  std::string value;
  for (const std::string& assignment : assignments) {
    if (assignment.size() > name.size() && assignment.compare(0, name.size(), name) == 0 &&
        assignment[name.size()] == '=')
      value = assignment.substr(name.size() + 1);
  }
  return value;
}

// ccache runs CCACHE_PREFIX's command in front of the compiler on a miss: "distcc" or "icecc" (a path, or a
// command with options, allowed) makes the compile distributable.
std::string DistributorOfPrefix(std::string_view prefix) {
  std::vector<std::string> words = SplitShellWords(prefix);
  for (const std::string& word : words) {
    std::string_view tool = Basename(word);
    if (IsCppDistributor(tool)) return EngineOf(tool);
  }
  return "";
}

bool IsDistributableCompile(const CommandStep& step) {
  if (step.family != ToolFamily::kCompiler && step.family != ToolFamily::kNvcc) return false;
  // Preprocessing only (-E) has nothing to ship.
  return std::find(step.args.begin(), step.args.end(), "-E") == step.args.end();
}

// The engine that can run `step` remotely, or "" when none of its launchers can.
std::string EngineForStep(const CommandStep& step, const LauncherSettings& settings) {
  for (const std::string& launcher : step.launchers) {
    if (IsCppDistributor(launcher)) {
      if (step.family == ToolFamily::kCompiler) return EngineOf(launcher);
      continue;  // distcc and icecc do not ship nvcc
    }
    if (launcher == "sccache" && settings.sccache_dist) return EngineOf(launcher);  // C, C++ and nvcc (0.9+)
    if (launcher == "ccache" && step.family == ToolFamily::kCompiler) {
      std::string prefix = AssignedValue(step.assignments, "CCACHE_PREFIX");
      if (prefix.empty()) prefix = settings.ccache_prefix;
      if (std::string engine = DistributorOfPrefix(prefix); !engine.empty()) return engine;
    }
  }
  return "";
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

}  // namespace

const char* ExecModeName(ExecMode mode) { return mode == ExecMode::kRemote ? "remote" : "local"; }

bool RunsInCompileServer(const CommandStep& step) {
  if (step.family != ToolFamily::kCompiler && step.family != ToolFamily::kNvcc) return false;
  return std::find(step.launchers.begin(), step.launchers.end(), "sccache") != step.launchers.end();
}

std::string CompileServerKey(std::string_view key) {
  std::string result(key);
  result += kCompileServerKeySuffix;
  return result;
}

std::string_view WithoutCompileServerKey(std::string_view key) {
  if (key.ends_with(kCompileServerKeySuffix)) key.remove_suffix(kCompileServerKeySuffix.size());
  return key;
}

std::string ExecModeKey(std::string_view key, ExecMode mode) {
  std::string result(key);
  if (mode == ExecMode::kRemote) result += " @remote";
  return result;
}

bool SccacheConfigHasScheduler(std::string_view config_text) {
  bool in_dist = false;
  while (!config_text.empty()) {
    size_t newline = config_text.find('\n');
    std::string_view line = Trim(config_text.substr(0, newline));
    config_text = newline == std::string_view::npos ? std::string_view() : config_text.substr(newline + 1);
    if (line.empty() || line.front() == '#') continue;
    if (line.front() == '[') {
      in_dist = line == "[dist]";
      continue;
    }
    if (!in_dist || line.rfind("scheduler_url", 0) != 0) continue;
    std::string_view rest = Trim(line.substr(13));
    if (rest.empty() || rest.front() != '=') continue;
    std::string_view value = Trim(rest.substr(1));
    if (value.size() > 2) return true;  // a quoted, non-empty URL
  }
  return false;
}

LauncherSettings LauncherSettingsFromEnvironment() {
  LauncherSettings settings;
  if (const char* prefix = std::getenv("CCACHE_PREFIX")) settings.ccache_prefix = prefix;
  std::string config_path;
  if (const char* conf = std::getenv("SCCACHE_CONF"); conf && *conf) {
    config_path = conf;
  } else if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg) {
    config_path = std::string(xdg) + "/sccache/config";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    config_path = std::string(home) + "/.config/sccache/config";
  }
  if (!config_path.empty()) settings.sccache_dist = SccacheConfigHasScheduler(ReadWholeFile(config_path));
  return settings;
}

ExecClass ClassifyExecSteps(const std::vector<CommandStep>& steps, const LauncherSettings& settings) {
  ExecClass result;
  if (steps.empty()) {
    result.why = "no command";
    return result;
  }
  const CommandStep& dominant = steps[DominantStep(steps)];
  if (!IsDistributableCompile(dominant)) {
    result.why = std::string("not a compile (") + ToolFamilyName(dominant.family) + ")";
    return result;
  }
  result.engine = EngineForStep(dominant, settings);
  if (result.engine.empty()) {
    result.why = "no distributing launcher";
    return result;
  }
  result.mode = ExecMode::kRemote;
  result.why = result.engine + " launcher";
  return result;
}

bool ClassifyExecMode(std::string_view command, std::string_view headroom_exec, const LauncherSettings& settings,
                      ExecClass* out, std::string* err) {
  if (headroom_exec == "remote" || headroom_exec == "local") {
    *out = ExecClass{};
    out->mode = headroom_exec == "remote" ? ExecMode::kRemote : ExecMode::kLocal;
    if (out->mode == ExecMode::kRemote) out->engine = ClassifyExecSteps(ParseCommandSteps(command), settings).engine;
    out->why = "headroom_exec = " + std::string(headroom_exec);
    return true;
  }
  if (!headroom_exec.empty()) {
    *err = "unknown headroom_exec value '" + std::string(headroom_exec) + "' (expected 'remote' or 'local')";
    return false;
  }
  *out = ClassifyExecSteps(ParseCommandSteps(command), settings);
  return true;
}

}  // namespace headroom
