// Tests for .ninja_deps v4: byte-exact records against files ninja 1.13.2 wrote, change-only appends,
// lazy creation, bad headers, recovery from every truncation point and corrupt records, recompaction.
#include "headroom/logs/deps_log.h"
#include "temp_dir.h"
#include "file_helpers.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace headroom {
namespace {

using test_files::ReadBytes;
using test_files::WriteBytes;
using test_files::Literal;

namespace fs = std::filesystem;

// ninja 1.13.2 after building `x.o: q.c src/ab.h longer_name.hh` (paths padded by 1, 0 and 2 NULs)
// and rebuilding after src/ab.h left the depfile: 4 path records, then 2 deps records for x.o.
const std::string kNinjaDeps(
    "\x23\x20\x6e\x69\x6e\x6a\x61\x64\x65\x70\x73\x0a\x04\x00\x00\x00"
    "\x08\x00\x00\x00\x78\x2e\x6f\x00\xff\xff\xff\xff\x08\x00\x00\x00"
    "\x71\x2e\x63\x00\xfe\xff\xff\xff\x0c\x00\x00\x00\x73\x72\x63\x2f"
    "\x61\x62\x2e\x68\xfd\xff\xff\xff\x14\x00\x00\x00\x6c\x6f\x6e\x67"
    "\x65\x72\x5f\x6e\x61\x6d\x65\x2e\x68\x68\x00\x00\xfc\xff\xff\xff"
    "\x18\x00\x00\x80\x00\x00\x00\x00\x0c\xca\xd1\x07\x89\x7e\xed\x18"
    "\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00\x14\x00\x00\x80"
    "\x00\x00\x00\x00\xad\xab\xee\x09\x89\x7e\xed\x18\x01\x00\x00\x00"
    "\x03\x00\x00\x00",
    132);
constexpr TimeStamp kFirstMtime = 0x18ed7e8907d1ca0c;
constexpr TimeStamp kSecondMtime = 0x18ed7e8909eeabad;
// Offsets of the records in kNinjaDeps (each record starts with its size field).
const size_t kRecordStarts[] = {16, 28, 40, 56, 80, 108, 132};

// ninja 1.13.2 after building `a.o: a.c h.h` and `b.o: b.c h.h` (one deps record each, shared input).
const std::string kNinjaTwoObjects(
    "\x23\x20\x6e\x69\x6e\x6a\x61\x64\x65\x70\x73\x0a\x04\x00\x00\x00"
    "\x08\x00\x00\x00\x61\x2e\x6f\x00\xff\xff\xff\xff\x08\x00\x00\x00"
    "\x61\x2e\x63\x00\xfe\xff\xff\xff\x08\x00\x00\x00\x68\x2e\x68\x00"
    "\xfd\xff\xff\xff\x14\x00\x00\x80\x00\x00\x00\x00\x1d\x83\xa1\x09"
    "\xdd\x7d\xed\x18\x01\x00\x00\x00\x02\x00\x00\x00\x08\x00\x00\x00"
    "\x62\x2e\x6f\x00\xfc\xff\xff\xff\x08\x00\x00\x00\x62\x2e\x63\x00"
    "\xfb\xff\xff\xff\x14\x00\x00\x80\x03\x00\x00\x00\x1d\x83\xa1\x09"
    "\xdd\x7d\xed\x18\x04\x00\x00\x00\x02\x00\x00\x00",
    124);
constexpr TimeStamp kTwoObjectsMtime = 0x18ed7ddd09a1831d;

const char kBadHeaderWarning[] = "ninja: warning: bad deps log signature or version; starting over\n";
const char kRecoveringWarning[] = "ninja: warning: premature end of file; recovering\n";

LoadStatus LoadCapturing(DepsLog* log, const std::string& path, State* state, std::string* warnings) {
  std::string err;
  testing::internal::CaptureStderr();
  LoadStatus status = log->Load(path, state, &err);
  *warnings = testing::internal::GetCapturedStderr();
  EXPECT_EQ("", err);
  return status;
}

std::vector<std::string> Paths(const std::vector<Node*>& nodes) {
  std::vector<std::string> paths;
  for (const Node* node : nodes) paths.push_back(node->path);
  return paths;
}

using Strings = std::vector<std::string>;

TEST(DepsLogLoad, ReadsWhatNinjaWrote) {
  TempDir dir{"deps_log"};
  const std::string path = dir.File(".ninja_deps");
  WriteBytes(path, kNinjaDeps);
  State state;
  DepsLog log;
  std::string warnings;
  ASSERT_EQ(LoadStatus::kSuccess, LoadCapturing(&log, path, &state, &warnings));
  EXPECT_EQ("", warnings);
  EXPECT_EQ((Strings{"x.o", "q.c", "src/ab.h", "longer_name.hh"}), Paths(log.nodes()));
  Node* out = state.LookupNode("x.o");
  ASSERT_TRUE(out);
  EXPECT_EQ(0, out->deps_log_id);
  EXPECT_EQ(3, state.LookupNode("longer_name.hh")->deps_log_id);
  const DepsLog::Deps* deps = log.GetDeps(out);
  ASSERT_TRUE(deps);
  EXPECT_EQ(kSecondMtime, deps->mtime);  // the later record wins.
  EXPECT_EQ((Strings{"q.c", "longer_name.hh"}), Paths(deps->nodes));
  EXPECT_EQ(nullptr, log.GetDeps(state.LookupNode("q.c")));
  EXPECT_EQ(ReadBytes(path), kNinjaDeps);  // loading never rewrites a good file.
}

TEST(DepsLogLoad, MissingFileIsNotFound) {
  TempDir dir{"deps_log"};
  State state;
  DepsLog log;
  std::string warnings;
  EXPECT_EQ(LoadStatus::kNotFound, LoadCapturing(&log, dir.File("none"), &state, &warnings));
}

TEST(DepsLogWrite, RecordsAreByteIdenticalToNinja) {
  TempDir dir{"deps_log"};
  const std::string path = dir.File(".ninja_deps");
  State state;
  DepsLog log;
  std::string err;
  ASSERT_TRUE(log.OpenForWrite(path, &err));
  Node* out = state.GetNode("x.o");
  Node* q = state.GetNode("q.c");
  Node* ab = state.GetNode("src/ab.h");
  Node* longer = state.GetNode("longer_name.hh");
  ASSERT_TRUE(log.RecordDeps(out, kFirstMtime, {q, ab, longer}));
  ASSERT_TRUE(log.RecordDeps(out, kSecondMtime, {q, longer}));
  log.Close();
  EXPECT_EQ(kNinjaDeps, ReadBytes(path));
}

TEST(DepsLogWrite, SharedInputsGetOneIdLikeNinja) {
  TempDir dir{"deps_log"};
  const std::string path = dir.File(".ninja_deps");
  State state;
  DepsLog log;
  std::string err;
  ASSERT_TRUE(log.OpenForWrite(path, &err));
  Node* h = state.GetNode("h.h");
  ASSERT_TRUE(log.RecordDeps(state.GetNode("a.o"), kTwoObjectsMtime, {state.GetNode("a.c"), h}));
  ASSERT_TRUE(log.RecordDeps(state.GetNode("b.o"), kTwoObjectsMtime, {state.GetNode("b.c"), h}));
  EXPECT_EQ(kNinjaTwoObjects, ReadBytes(path));
}

TEST(DepsLogWrite, AppendsOnlyWhenDepsChange) {
  TempDir dir{"deps_log"};
  const std::string path = dir.File(".ninja_deps");
  WriteBytes(path, kNinjaDeps);
  State state;
  DepsLog log;
  std::string warnings, err;
  LoadCapturing(&log, path, &state, &warnings);
  ASSERT_TRUE(log.OpenForWrite(path, &err));
  Node* out = state.LookupNode("x.o");
  Node* q = state.LookupNode("q.c");
  Node* longer = state.LookupNode("longer_name.hh");
  ASSERT_TRUE(log.RecordDeps(out, kSecondMtime, {q, longer}));
  EXPECT_EQ(kNinjaDeps, ReadBytes(path)) << "identical deps must not be appended";

  ASSERT_TRUE(log.RecordDeps(out, kSecondMtime + 1, {q, longer}));  // new mtime
  EXPECT_EQ(kNinjaDeps.size() + 4 + 20, ReadBytes(path).size());
  ASSERT_TRUE(log.RecordDeps(out, kSecondMtime + 1, {longer, q}));  // order matters
  EXPECT_EQ(kNinjaDeps.size() + 2 * (4 + 20), ReadBytes(path).size());
  Node* fresh = state.GetNode("new.h");
  ASSERT_TRUE(log.RecordDeps(out, kSecondMtime + 1, {longer, q, fresh}));  // new path record + deps
  const std::string bytes = ReadBytes(path);
  ASSERT_EQ(kNinjaDeps.size() + 2 * (4 + 20) + (4 + 8 + 4) + (4 + 24), bytes.size());
  // The new path continues the id sequence: id 4, checksum ~4.
  EXPECT_EQ(std::string("\x0c\x00\x00\x00new.h\0\0\0\xfb\xff\xff\xff", 16), bytes.substr(kNinjaDeps.size() + 48, 16));
  EXPECT_EQ(4, fresh->deps_log_id);

  State reread_state;
  DepsLog reread;
  LoadCapturing(&reread, path, &reread_state, &warnings);
  EXPECT_EQ("", warnings);
  const DepsLog::Deps* deps = reread.GetDeps(reread_state.LookupNode("x.o"));
  ASSERT_TRUE(deps);
  EXPECT_EQ(kSecondMtime + 1, deps->mtime);
  EXPECT_EQ((Strings{"longer_name.hh", "q.c", "new.h"}), Paths(deps->nodes));
}

TEST(DepsLogWrite, FileAppearsWithTheFirstRecordOnly) {
  TempDir dir{"deps_log"};
  const std::string path = dir.File(".ninja_deps");
  State state;
  std::string err;
  {
    DepsLog log;
    ASSERT_TRUE(log.OpenForWrite(path, &err));
    log.Close();
    EXPECT_FALSE(fs::exists(path));
  }
  EXPECT_FALSE(fs::exists(path));
  DepsLog log;
  ASSERT_TRUE(log.OpenForWrite(path, &err));
  ASSERT_TRUE(log.RecordDeps(state.GetNode("o"), 1, {}));
  EXPECT_EQ(std::string("# ninjadeps\n\x04\0\0\0"
                        "\x08\0\0\0o\0\0\0\xff\xff\xff\xff"
                        "\x0c\0\0\x80\0\0\0\0\x01\0\0\0\0\0\0\0",
                        16 + 12 + 16),
            ReadBytes(path));
}

TEST(DepsLogWrite, RecordTooLargeFails) {
  State state;
  DepsLog log;
  EXPECT_FALSE(log.RecordDeps(state.GetNode(std::string(DepsLog::kMaxRecordSize, 'a')), 1, {}));
  std::vector<Node*> many(DepsLog::kMaxRecordSize / 4, state.GetNode("h"));
  EXPECT_FALSE(log.RecordDeps(state.GetNode("o"), 1, many));
}

TEST(DepsLogLoad, BadSignatureOrVersionStartsOver) {
  std::string v3 = kNinjaDeps, v5 = kNinjaDeps, magic = kNinjaDeps;
  v3[12] = 3;
  v5[12] = 5;
  magic[0] = 'X';
  for (const std::string& contents : {std::string(), kNinjaDeps.substr(0, 5), kNinjaDeps.substr(0, 15), v3, v5, magic}) {
    TempDir dir{"deps_log"};
    const std::string path = dir.File(".ninja_deps");
    WriteBytes(path, contents);
    State state;
    DepsLog log;
    std::string warnings;
    EXPECT_EQ(LoadStatus::kSuccess, LoadCapturing(&log, path, &state, &warnings));
    EXPECT_EQ(kBadHeaderWarning, warnings) << contents.size();
    EXPECT_FALSE(fs::exists(path));
    EXPECT_TRUE(log.nodes().empty());
  }
}

// Truncating a real log anywhere must load a prefix of it, cut the file back to a record boundary, and
// leave a log that reloads silently and accepts appends.
TEST(DepsLogLoad, RecoversFromTruncationAtEveryOffset) {
  const std::vector<std::string> all_paths = {"x.o", "q.c", "src/ab.h", "longer_name.hh"};
  for (size_t size = 16; size < kNinjaDeps.size(); ++size) {
    SCOPED_TRACE(size);
    TempDir dir{"deps_log"};
    const std::string path = dir.File(".ninja_deps");
    WriteBytes(path, kNinjaDeps.substr(0, size));
    State state;
    DepsLog log;
    std::string warnings;
    ASSERT_EQ(LoadStatus::kSuccess, LoadCapturing(&log, path, &state, &warnings));
    const bool on_boundary = std::find(std::begin(kRecordStarts), std::end(kRecordStarts), size) != std::end(kRecordStarts);
    EXPECT_EQ(on_boundary ? "" : kRecoveringWarning, warnings);
    const size_t kept = ReadBytes(path).size();
    EXPECT_LE(kept, size);
    EXPECT_TRUE(std::find(std::begin(kRecordStarts), std::end(kRecordStarts), kept) != std::end(kRecordStarts));
    EXPECT_EQ(kNinjaDeps.substr(0, kept), ReadBytes(path));

    const std::vector<std::string> loaded = Paths(log.nodes());
    ASSERT_LE(loaded.size(), all_paths.size());
    EXPECT_EQ(std::vector<std::string>(all_paths.begin(), all_paths.begin() + loaded.size()), loaded);
    if (const DepsLog::Deps* deps = log.GetDeps(state.GetNode("x.o"))) {
      EXPECT_TRUE(deps->mtime == kFirstMtime || deps->mtime == kSecondMtime);
    }

    std::string err;
    ASSERT_TRUE(log.OpenForWrite(path, &err));
    ASSERT_TRUE(log.RecordDeps(state.GetNode("y.o"), 7, {state.GetNode("q.c")}));
    log.Close();
    State reread_state;
    DepsLog reread;
    LoadCapturing(&reread, path, &reread_state, &warnings);
    EXPECT_EQ("", warnings);
    const DepsLog::Deps* deps = reread.GetDeps(reread_state.GetNode("y.o"));
    ASSERT_TRUE(deps);
    EXPECT_EQ((Strings{"q.c"}), Paths(deps->nodes));
  }
}

struct Corruption {
  const char* what;
  size_t offset;
  std::string bytes;
  size_t kept_size;  // where the file is cut: the start of the bad record.
};

TEST(DepsLogLoad, CorruptRecordIsCutWithEverythingAfterIt) {
  const Corruption cases[] = {
      {"path checksum", 36, std::string("\x00\x00\x00\x00", 4), 28},
      {"path size beyond the file", 28, std::string("\x00\x01\x00\x00", 4), 28},
      {"path size over the maximum", 16, std::string("\xff\xff\x7f\x00", 4), 16},
      {"path size not a multiple of 4", 16, std::string("\x05\x00\x00\x00", 4), 16},
      {"empty path", 16, std::string("\x04\x00\x00\x00", 4), 16},
      {"deps size too small", 80, std::string("\x08\x00\x00\x80", 4), 80},
      {"deps size not a multiple of 4", 80, std::string("\x13\x00\x00\x80", 4), 80},
      {"deps output id unknown", 84, std::string("\x63\x00\x00\x00", 4), 80},
      {"deps output id negative", 84, std::string("\xff\xff\xff\xff", 4), 80},
      {"deps input id unknown", 96, std::string("\x04\x00\x00\x00", 4), 80},
  };
  for (const Corruption& c : cases) {
    SCOPED_TRACE(c.what);
    TempDir dir{"deps_log"};
    const std::string path = dir.File(".ninja_deps");
    std::string contents = kNinjaDeps;
    contents.replace(c.offset, c.bytes.size(), c.bytes);
    WriteBytes(path, contents);
    State state;
    DepsLog log;
    std::string warnings;
    ASSERT_EQ(LoadStatus::kSuccess, LoadCapturing(&log, path, &state, &warnings));
    EXPECT_EQ(kRecoveringWarning, warnings);
    EXPECT_EQ(kNinjaDeps.substr(0, c.kept_size), ReadBytes(path));
    // A second load is clean: unlike ninja 1.13.2, the bad record itself is not kept.
    State again_state;
    DepsLog again;
    LoadCapturing(&again, path, &again_state, &warnings);
    EXPECT_EQ("", warnings);
  }
}

TEST(DepsLogQuery, FirstReverseDepsNode) {
  TempDir dir{"deps_log"};
  const std::string path = dir.File(".ninja_deps");
  WriteBytes(path, kNinjaTwoObjects);
  State state;
  DepsLog log;
  std::string warnings;
  LoadCapturing(&log, path, &state, &warnings);
  EXPECT_EQ(state.LookupNode("a.o"), log.GetFirstReverseDepsNode(state.LookupNode("h.h")));
  EXPECT_EQ(state.LookupNode("b.o"), log.GetFirstReverseDepsNode(state.LookupNode("b.c")));
  EXPECT_EQ(nullptr, log.GetFirstReverseDepsNode(state.LookupNode("a.o")));
  EXPECT_EQ(nullptr, log.GetFirstReverseDepsNode(state.GetNode("unknown")));
}

TEST(DepsLogRecompact, LivenessFollowsTheDepsBinding) {
  State state;
  Rule with_deps("cc"), without_deps("stamp");
  with_deps.AddBinding("command", Literal("cc"));
  with_deps.AddBinding("deps", Literal("gcc"));
  without_deps.AddBinding("command", Literal("touch"));
  std::string err;
  ASSERT_TRUE(state.AddOut(state.AddEdge(&with_deps), "rule_deps.o", &err));
  ASSERT_TRUE(state.AddOut(state.AddEdge(&without_deps), "no_deps.o", &err));
  Edge* edge_binding = state.AddEdge(&without_deps);
  edge_binding->env = state.NewScope(&state.bindings);
  edge_binding->env->AddBinding("deps", "gcc");
  ASSERT_TRUE(state.AddOut(edge_binding, "edge_deps.o", &err));
  EXPECT_TRUE(DepsLog::IsDepsEntryLiveFor(state.LookupNode("rule_deps.o")));
  EXPECT_TRUE(DepsLog::IsDepsEntryLiveFor(state.LookupNode("edge_deps.o")));
  EXPECT_FALSE(DepsLog::IsDepsEntryLiveFor(state.LookupNode("no_deps.o")));
  EXPECT_FALSE(DepsLog::IsDepsEntryLiveFor(state.GetNode("orphan.o")));
}

TEST(DepsLogRecompact, BloatedLogKeepsOnlyLiveEntriesWithFreshIds) {
  TempDir dir{"deps_log"};
  const std::string path = dir.File(".ninja_deps");
  {
    State state;
    DepsLog log;
    std::string err;
    ASSERT_TRUE(log.OpenForWrite(path, &err));
    Node* dead = state.GetNode("dead.o");
    Node* live = state.GetNode("live.o");
    Node* header = state.GetNode("h.h");
    // 1001 records for 2 outputs: over both thresholds.
    for (int i = 0; i <= 1000; ++i) ASSERT_TRUE(log.RecordDeps(i % 2 ? live : dead, i, {header}));
  }

  State state;
  Rule cc("cc");
  cc.AddBinding("command", Literal("cc"));
  cc.AddBinding("deps", Literal("gcc"));
  std::string err;
  ASSERT_TRUE(state.AddOut(state.AddEdge(&cc), "live.o", &err));
  DepsLog log;
  std::string warnings;
  LoadCapturing(&log, path, &state, &warnings);
  ASSERT_TRUE(log.needs_recompaction());
  ASSERT_TRUE(log.OpenForWrite(path, &err)) << err;
  EXPECT_FALSE(fs::exists(path + ".recompact"));
  EXPECT_FALSE(log.needs_recompaction());
  // dead.o (id 0) is gone: live.o becomes id 0, h.h id 1.
  EXPECT_EQ(std::string("# ninjadeps\n\x04\0\0\0"
                        "\x0c\0\0\0live.o\0\0\xff\xff\xff\xff"
                        "\x08\0\0\0h.h\0\xfe\xff\xff\xff"
                        "\x10\0\0\x80\0\0\0\0\xe7\x03\0\0\0\0\0\0\x01\0\0\0",
                        16 + 16 + 12 + 20),
            ReadBytes(path));
  EXPECT_EQ(0, state.LookupNode("live.o")->deps_log_id);
  EXPECT_EQ(1, state.LookupNode("h.h")->deps_log_id);
  EXPECT_EQ(-1, state.LookupNode("dead.o")->deps_log_id);
  EXPECT_EQ(nullptr, log.GetDeps(state.LookupNode("dead.o")));
  ASSERT_TRUE(log.GetDeps(state.LookupNode("live.o")));
  EXPECT_EQ(999, log.GetDeps(state.LookupNode("live.o"))->mtime);

  // Appends after recompaction continue the new numbering.
  ASSERT_TRUE(log.RecordDeps(state.GetNode("new.o"), 5, {state.LookupNode("h.h")}));
  log.Close();
  State reread_state;
  DepsLog reread;
  LoadCapturing(&reread, path, &reread_state, &warnings);
  EXPECT_EQ("", warnings);
  EXPECT_EQ((Strings{"live.o", "h.h", "new.o"}), Paths(reread.nodes()));
}

TEST(DepsLogRecompact, NotNeededBelowTheThresholds) {
  TempDir dir{"deps_log"};
  const std::string path = dir.File(".ninja_deps");
  {
    State state;
    DepsLog log;
    std::string err;
    ASSERT_TRUE(log.OpenForWrite(path, &err));
    for (int i = 0; i < 1000; ++i) ASSERT_TRUE(log.RecordDeps(state.GetNode("o"), i, {}));
  }
  State state;
  DepsLog log;
  std::string warnings;
  LoadCapturing(&log, path, &state, &warnings);
  EXPECT_FALSE(log.needs_recompaction());
}

TEST(DepsLogRecompact, EmptyResultStillHasAHeader) {
  TempDir dir{"deps_log"};
  const std::string path = dir.File(".ninja_deps");
  WriteBytes(path, kNinjaTwoObjects);
  State state;
  DepsLog log;
  std::string warnings, err;
  LoadCapturing(&log, path, &state, &warnings);
  ASSERT_TRUE(log.Recompact(path, &err)) << err;  // no edges at all: everything is dead.
  EXPECT_EQ(std::string("# ninjadeps\n\x04\0\0\0", 16), ReadBytes(path));
  EXPECT_TRUE(log.nodes().empty());
}

}  // namespace
}  // namespace headroom
