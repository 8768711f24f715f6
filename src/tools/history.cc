// `-t history export FILE | import FILE | path`: the per-user history store as one portable file, for CI
// caches (restore, import, build, export, save) and for moving figures between machines.
#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

#include "headroom/history/history_store.h"
#include "headroom/history/user_store.h"
#include "headroom/manifest/manifest_parser.h"
#include "headroom/tools/tool_cli.h"
#include "headroom/tools/tools.h"
#include "headroom/util/messages.h"

namespace headroom {
namespace {

UserStore OpenStore(const std::string& dir) {
  char cwd[PATH_MAX];
  return UserStore(dir, PathNormaliser::ForBuild(getcwd(cwd, sizeof cwd) ? cwd : ""));
}

// Where the build dir's history is: under the manifest's `builddir`, as a build, memstats and plan read it. The
// tool runs before any manifest is loaded (import and path need none), so export reads the manifest itself;
// without one here the current directory's file (if any) goes with the store.
bool BuildHistoryPath(const ToolContext& context, std::string* path) {
  *path = HistoryStore::kFileName;
  const std::string& manifest = context.options->input_file;
  if (access(manifest.c_str(), F_OK) != 0) return true;
  ManifestParser parser(context.state, context.disk);
  std::string err;
  if (!parser.Load(manifest, &err)) {
    Error("{}", err);
    return false;
  }
  const std::string build_dir = context.state->bindings.LookupVariable("builddir");
  if (!build_dir.empty()) *path = build_dir + "/" + HistoryStore::kFileName;
  return true;
}

int Export(const ToolContext& context, const std::string& store_dir, const std::string& file) {
  std::string history_path;
  if (!BuildHistoryPath(context, &history_path)) return 1;
  UserStore store = OpenStore(store_dir);
  if (std::string warning = store.Load(); !warning.empty()) Warning("{}", warning);
  // The build dir's own history (run with -C BUILD_DIR) travels too, even with the store turned off.
  HistoryStore history;
  if (std::string warning = history.LoadForReading(history_path); !warning.empty()) {
    Warning("{}", warning);
  }
  store.AddBuildHistory(history, static_cast<int64_t>(time(nullptr)));
  std::string error;
  if (!store.ExportTo(file, &error)) {
    Error("{}", error);
    return 1;
  }
  return 0;
}

int Import(const std::string& store_dir, const std::string& file) {
  UserStore store = OpenStore(store_dir);
  if (std::string warning = store.Load(); !warning.empty()) Warning("{}", warning);
  std::string error;
  if (!store.ImportFrom(file, static_cast<int64_t>(time(nullptr)), &error)) {
    Error("importing {}: {}", file, error);
    return 1;
  }
  return 0;
}

}  // namespace

int ToolHistory(const ToolContext& context, const ToolArgs& args) {
  ToolCli cli("history", "the per-user history store as one portable file, for CI caches and for moving figures\n"
                         "between machines (docs/history.md)");
  CLI::App& app = cli.app();
  app.require_subcommand(1);
  std::string file;
  CLI::App* export_command = app.add_subcommand(
      "export", "write the per-user store, plus this build dir's own history\n(under builddir), to FILE");
  export_command->add_option("FILE", file)->required();
  CLI::App* import_command = app.add_subcommand(
      "import", "merge FILE into the per-user store (newer entries\nwin; importing twice adds nothing)");
  import_command->add_option("FILE", file)->required();
  app.add_subcommand("path", "print the per-user store's directory");
  if (std::optional<int> exit_code = cli.Parse(args)) return *exit_code;

  const std::string& store_dir = context.options->store_dir;
  if (*export_command) return Export(context, store_dir, file);
  if (*import_command) return Import(store_dir, file);
  if (store_dir.empty()) {
    Error("the per-user history store is off (--no-store or HEADROOM_STORE=off)");
    return 1;
  }
  printf("%s\n", store_dir.c_str());  // `path`, the one command left
  return 0;
}

}  // namespace headroom
