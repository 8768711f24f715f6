// Unit tests of the `-t` tools' building blocks: option parsing, target lookup hints, JSON escaping,
// compdb's rspfile expansion, description display, the cleaner (against an in-memory disk) and tool output.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "headroom/manifest/manifest_parser.h"
#include "headroom/tools/cleaner.h"
#include "headroom/tools/tool_support.h"
#include "headroom/tools/tools.h"
#include "headroom/util/disk.h"

namespace headroom {
namespace {

// Files as a path -> mtime map; RemoveFile and Stat are what the tools use.
class MemoryDisk : public DiskInterface {
 public:
  TimeStamp Stat(const std::string& path, std::string*) const override {
    auto it = files.find(path);
    return it == files.end() ? 0 : it->second;
  }
  bool WriteFile(const std::string& path, const std::string&) override {
    files[path] = 1;
    return true;
  }
  bool MakeDir(const std::string&) override { return true; }
  ReadStatus ReadFile(const std::string& path, std::string* contents, std::string*) override {
    auto it = contents_.find(path);
    if (it == contents_.end()) return ReadStatus::kNotFound;
    *contents = it->second;
    return ReadStatus::kOkay;
  }
  int RemoveFile(const std::string& path) override {
    removed.push_back(path);
    return files.erase(path) ? 0 : 1;
  }

  std::map<std::string, TimeStamp> files;
  std::map<std::string, std::string> contents_;
  std::vector<std::string> removed;
};

class ToolsTest : public testing::Test {
 protected:
  void Parse(const std::string& manifest) {
    ManifestParser parser(&state_, &disk_, {});
    std::string err;
    ASSERT_TRUE(parser.ParseTest(manifest, &err)) << err;
  }
  ToolContext Context() {
    ToolContext context;
    context.options = &options_;
    context.config = &config_;
    context.state = &state_;
    context.disk = &disk_;
    return context;
  }
  Edge* EdgeOf(const std::string& path) { return state_.LookupNode(path)->in_edge; }
  void AddFiles(std::initializer_list<const char*> paths) {
    for (const char* path : paths) disk_.files[path] = 1;
  }

  Options options_;
  BuildConfig config_;
  State state_;
  MemoryDisk disk_;
};

TEST(ToolOptionParserTest, PermutesOptionsAfterOperandsAndStopsAtDoubleDash) {
  ToolOptionParser parser({"clean", "target", "-g", "--", "-r"}, "hgr");
  EXPECT_EQ('g', parser.Next());
  EXPECT_EQ(-1, parser.Next());
  EXPECT_EQ((std::vector<std::string>{"target", "-r"}), parser.Operands());
}

TEST(ToolOptionParserTest, StartsFreshForEveryParserAndReadsArguments) {
  ToolOptionParser first({"multi-inputs", "-d", ";", "x"}, "d:h0");
  EXPECT_EQ('d', first.Next());
  EXPECT_STREQ(";", first.argument());
  EXPECT_EQ(-1, first.Next());
  static const struct option kLong[] = {{"delimiter", required_argument, nullptr, 'd'}, {nullptr, 0, nullptr, 0}};
  ToolOptionParser second({"multi-inputs", "--delim=::", "y"}, "d:h0", kLong);
  EXPECT_EQ('d', second.Next());
  EXPECT_STREQ("::", second.argument());
  EXPECT_EQ(-1, second.Next());
  EXPECT_EQ(std::vector<std::string>{"y"}, second.Operands());
}

TEST(ToolSupportTest, JsonEscapesLikeCompdb) {
  std::string out;
  AppendJsonEscaped("a\"b\\c\b\f\n\r\t\x01\x1f\x7f/\xc3\xa9", &out);
  EXPECT_EQ("a\\\"b\\\\c\\b\\f\\n\\r\\t\\u0001\\u001f\x7f/\xc3\xa9", out);
}

TEST(ToolSupportTest, SpellcheckPicksFirstClosestWithinThreeEdits) {
  EXPECT_STREQ("rule", SpellcheckWord("rul", {"rule", "depth", "all"}));
  EXPECT_STREQ("deps", SpellcheckWord("lis", {"clean", "deps", "rules"}));
  EXPECT_EQ(nullptr, SpellcheckWord("bogus", {"rule", "depth", "all"}));
}

TEST_F(ToolsTest, CompdbExpandsOnlyRecognisedRspfileReferences) {
  Parse(
      "rule at\n  command = tool @$out.rsp --flag\n  rspfile = $out.rsp\n  rspfile_content = $in_newline\n"
      "rule ff\n  command = tool -f $out.rsp\n  rspfile = $out.rsp\n  rspfile_content = $in\n"
      "rule opt\n  command = tool --option-file=$out.rsp\n  rspfile = $out.rsp\n  rspfile_content = $in\n"
      "rule plain\n  command = tool $out.rsp\n  rspfile = $out.rsp\n  rspfile_content = $in\n"
      "rule twof\n  command = tool -f xx -f $out.rsp\n  rspfile = $out.rsp\n  rspfile_content = $in\n"
      "build a: at x y\nbuild b: ff x y\nbuild c: opt x\nbuild d: plain x\nbuild e: twof x\n");
  EXPECT_EQ("tool @a.rsp --flag", CompdbCommand(*EdgeOf("a"), false));
  EXPECT_EQ("tool x y --flag", CompdbCommand(*EdgeOf("a"), true));
  EXPECT_EQ("tool x y", CompdbCommand(*EdgeOf("b"), true));
  EXPECT_EQ("tool x", CompdbCommand(*EdgeOf("c"), true));
  EXPECT_EQ("tool d.rsp", CompdbCommand(*EdgeOf("d"), true));
  // Only the first "-f " in the command counts, as in ninja.
  EXPECT_EQ("tool -f xx -f e.rsp", CompdbCommand(*EdgeOf("e"), true));
}

TEST_F(ToolsTest, DescriptionsShowLiteralTextUnescapedAndVariablesBraced) {
  Parse("rule r\n  command = x\n  description = A $$ ${out} $in $: b$ c\n");
  const Rule* rule = state_.bindings.LookupRule("r");
  EXPECT_EQ("A $ ${out} ${in} : b c", rule->GetBinding("description")->Unparse());
}

TEST_F(ToolsTest, CollectTargetGivesNinjaHints) {
  Parse("rule r\n  command = x\nbuild out.o: r in.c\n");
  ToolContext context = Context();
  std::string err;
  EXPECT_EQ(nullptr, CollectTarget(context, "out.oo", &err));
  EXPECT_EQ("unknown target 'out.oo', did you mean 'out.o'?", err);
  EXPECT_EQ(nullptr, CollectTarget(context, "clean", &err));
  EXPECT_EQ("unknown target 'clean', did you mean 'ninja -t clean'?", err);
  EXPECT_EQ(nullptr, CollectTarget(context, "", &err));
  EXPECT_EQ("empty path", err);
  EXPECT_EQ(state_.LookupNode("out.o"), CollectTarget(context, "./in.c^", &err));
}

TEST_F(ToolsTest, CleanAllSkipsPhonyAndGeneratorOutputsButRemovesDepfilesAndRspfiles) {
  Parse(
      "rule cc\n  command = x\n  depfile = $out.d\n"
      "rule link\n  command = x\n  rspfile = $out.rsp\n  rspfile_content = $in\n"
      "rule gen\n  command = x\n  generator = 1\n"
      "build a.o: cc a.c\nbuild app: link a.o\nbuild build.ninja: gen\nbuild all: phony app\n");
  AddFiles({"a.o", "a.o.d", "app", "build.ninja", "all"});
  ToolContext context = Context();
  testing::internal::CaptureStdout();
  Cleaner cleaner(context);
  EXPECT_EQ(0, cleaner.CleanAll(false));
  EXPECT_EQ("Cleaning... 3 files.\n", testing::internal::GetCapturedStdout());
  EXPECT_EQ((std::vector<std::string>{"a.o", "a.o.d", "app", "app.rsp"}), disk_.removed);
  EXPECT_EQ((std::set<std::string>{"build.ninja", "all"}), [&] {
    std::set<std::string> left;
    for (const auto& [path, mtime] : disk_.files) left.insert(path);
    return left;
  }());
}

TEST_F(ToolsTest, CleanDryRunListsExistingFilesWithoutRemoving) {
  Parse("rule cc\n  command = x\n  depfile = $out.d\nbuild a.o: cc a.c\nbuild b.o: cc b.c\n");
  AddFiles({"a.o", "b.o.d"});
  config_.dry_run = true;
  ToolContext context = Context();
  testing::internal::CaptureStdout();
  Cleaner cleaner(context);
  EXPECT_EQ(0, cleaner.CleanAll(false));
  EXPECT_EQ("Cleaning...\nRemove a.o\nRemove b.o.d\n2 files.\n", testing::internal::GetCapturedStdout());
  EXPECT_TRUE(disk_.removed.empty());
}

TEST_F(ToolsTest, CleanTargetsWalksInputsAndReportsUnknownTargets) {
  Parse(
      "rule cc\n  command = x\nrule gen\n  command = x\n  generator = 1\n"
      "build gen.h: gen\nbuild a.o: cc a.c | gen.h\nbuild other.o: cc b.c\nbuild top: phony a.o\n");
  AddFiles({"gen.h", "a.o", "other.o", "top"});
  config_.verbosity = BuildConfig::Verbosity::kVerbose;
  ToolContext context = Context();
  testing::internal::CaptureStdout();
  Cleaner cleaner(context);
  EXPECT_EQ(1, cleaner.CleanTargets({"top", "nope"}));
  EXPECT_EQ("Cleaning...\nTarget top\nRemove a.o\nRemove gen.h\n2 files.\n", testing::internal::GetCapturedStdout());
}

TEST_F(ToolsTest, TargetsTreeIndentsAndDepthZeroIsUnlimited) {
  Parse("rule r\n  command = x\nbuild a: r b\nbuild b: r c\n");
  ToolContext context = Context();
  testing::internal::CaptureStdout();
  EXPECT_EQ(0, ToolTargets(context, {"targets", "depth", "0"}));
  EXPECT_EQ("a: r\n  b: r\n    c\n", testing::internal::GetCapturedStdout());
  testing::internal::CaptureStdout();
  EXPECT_EQ(0, ToolTargets(context, {"targets"}));
  EXPECT_EQ("a: r\n", testing::internal::GetCapturedStdout());
}

TEST_F(ToolsTest, InputsSkipPhonyAliasesAndSortEscapedNames) {
  Parse("rule r\n  command = x\nbuild p: phony z.c\nbuild x: r p b$ c.c\nbuild y: r x\n");
  ToolContext context = Context();
  testing::internal::CaptureStdout();
  EXPECT_EQ(0, ToolInputs(context, {"inputs", "y"}));
  EXPECT_EQ("'b c.c'\nx\nz.c\n", testing::internal::GetCapturedStdout());
}

}  // namespace
}  // namespace headroom
