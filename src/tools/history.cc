// `-t history export FILE | import FILE | path`: the per-user history store as one portable file, for CI
// caches (restore, import, build, export, save) and for moving figures between machines.
#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

#include "headroom/history/history_store.h"
#include "headroom/history/user_store.h"
#include "headroom/manifest/manifest_parser.h"
#include "headroom/tools/tools.h"
#include "headroom/util/messages.h"

namespace headroom {
namespace {

int Usage(bool asked) {
  printf("usage: ninja -t history export FILE | import FILE | path\n\n"
         "  export FILE  write the per-user store, plus this build dir's own history (under builddir), to FILE\n"
         "  import FILE  merge FILE into the per-user store (newer entries win; importing twice adds nothing)\n"
         "  path         print the per-user store's directory\n");
  return asked ? 0 : 1;
}

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
  if (args.size() == 2 && (args[1] == "-h" || args[1] == "--help")) return Usage(true);
  const std::string& store_dir = context.options->store_dir;
  if (args.size() == 2 && args[1] == "path") {
    if (store_dir.empty()) {
      Error("the per-user history store is off (--no-store or HEADROOM_STORE=off)");
      return 1;
    }
    printf("%s\n", store_dir.c_str());
    return 0;
  }
  if (args.size() != 3) return Usage(false);
  if (args[1] == "export") return Export(context, store_dir, args[2]);
  if (args[1] == "import") return Import(store_dir, args[2]);
  return Usage(false);
}

}  // namespace headroom
