// Tests for the dyndep file parser: version line, statements, implicit ins/outs, restat, and ninja's errors.
#include "headroom/manifest/dyndep_parser.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "headroom/manifest/manifest_parser.h"
#include "headroom/util/disk.h"

namespace headroom {
namespace {

class DyndepParserTest : public testing::Test {
 protected:
  void SetUp() override {
    ManifestParser parser(&state_, &disk_);
    std::string err;
    ASSERT_TRUE(parser.ParseTest("rule touch\n"
                                 "  command = touch $out\n"
                                 "build out otherout: touch\n",
                                 &err))
        << err;
  }

  void Parse(const std::string& input) {
    DyndepParser parser(&state_, &disk_, &dyndep_file_);
    std::string err;
    ASSERT_TRUE(parser.ParseTest(input, &err)) << err;
    EXPECT_EQ("", err);
  }

  // Each call starts from an empty DyndepFile so one test can check several inputs.
  std::string ParseError(const std::string& input) {
    dyndep_file_.clear();
    DyndepParser parser(&state_, &disk_, &dyndep_file_);
    std::string err;
    EXPECT_FALSE(parser.ParseTest(input, &err));
    return err;
  }

  Edge* OutEdge() { return state_.LookupNode("out")->in_edge; }

  const Dyndeps& OnlyEntry() {
    EXPECT_EQ(1u, dyndep_file_.size());
    auto it = dyndep_file_.find(OutEdge());
    EXPECT_NE(dyndep_file_.end(), it);
    return it->second;
  }

  State state_;
  RealDiskInterface disk_;
  DyndepFile dyndep_file_;
};

constexpr char kVersion[] = "ninja_dyndep_version = 1\n";

TEST_F(DyndepParserTest, Empty) {
  EXPECT_EQ("input:1: expected 'ninja_dyndep_version = ...'\n", ParseError(""));
}

TEST_F(DyndepParserTest, Version1) {
  Parse("ninja_dyndep_version = 1\n");
  EXPECT_TRUE(dyndep_file_.empty());
}

TEST_F(DyndepParserTest, Version1Point0AndSuffixes) {
  Parse("ninja_dyndep_version = 1.0\n");
  Parse("ninja_dyndep_version = 1.0-extra\n");
  Parse("ninja_dyndep_version = 1-extra\n");
}

TEST_F(DyndepParserTest, VersionFromCommentedAndBlankPreamble) {
  Parse("# comment\n\nninja_dyndep_version = 1\n\nbuild out: dyndep\n");
  EXPECT_EQ(1u, dyndep_file_.size());
}

TEST_F(DyndepParserTest, VersionWithCrLf) {
  Parse("ninja_dyndep_version = 1\r\nbuild out: dyndep\r\n  restat = 1\r\n");
  EXPECT_TRUE(OnlyEntry().restat);
}

TEST_F(DyndepParserTest, UnsupportedVersions) {
  EXPECT_EQ("input:1: unsupported 'ninja_dyndep_version = 1.1'\nninja_dyndep_version = 1.1\n"
            "                          ^ near here",
            ParseError("ninja_dyndep_version = 1.1\n"));
  EXPECT_EQ("input:1: unsupported 'ninja_dyndep_version = 2'\nninja_dyndep_version = 2\n"
            "                        ^ near here",
            ParseError("ninja_dyndep_version = 2\n"));
  EXPECT_EQ("input:1: unsupported 'ninja_dyndep_version = x'\nninja_dyndep_version = x\n"
            "                        ^ near here",
            ParseError("ninja_dyndep_version = x\n"));
}

TEST_F(DyndepParserTest, VersionMustComeFirst) {
  EXPECT_EQ("input:1: expected 'ninja_dyndep_version = ...'\n", ParseError("build out: dyndep\n"));
  EXPECT_EQ("input:1: expected 'ninja_dyndep_version = ...'\nfoo = 1\n       ^ near here",
            ParseError("foo = 1\n"));
}

TEST_F(DyndepParserTest, VersionLineErrors) {
  EXPECT_EQ("input:1: expected '=', got newline\nninja_dyndep_version\n                    ^ near here",
            ParseError("ninja_dyndep_version\n"));
  EXPECT_EQ("input:1: unexpected EOF\nninja_dyndep_version = 1\n                        ^ near here",
            ParseError("ninja_dyndep_version = 1"));
}

TEST_F(DyndepParserTest, NoOtherVariablesAfterTheVersion) {
  EXPECT_EQ("input:2: unexpected identifier\n", ParseError(std::string(kVersion) + "foo = 1\n"));
  EXPECT_EQ("input:2: unexpected identifier\n", ParseError(std::string(kVersion) + kVersion));
}

TEST_F(DyndepParserTest, OtherStatementsAreUnexpected) {
  EXPECT_EQ("input:2: unexpected 'rule'\n", ParseError(std::string(kVersion) + "rule x\n"));
  EXPECT_EQ("input:2: unexpected 'default'\n", ParseError(std::string(kVersion) + "default out\n"));
  EXPECT_EQ("input:2: unexpected indent\n", ParseError(std::string(kVersion) + "  x = 1\n"));
}

TEST_F(DyndepParserTest, LexingErrors) {
  EXPECT_EQ("input:3: tabs are not allowed, use spaces\n",
            ParseError(std::string(kVersion) + "build out: dyndep\n\tfoo\n"));
  EXPECT_EQ("input:2: lexing error\n", ParseError(std::string(kVersion) + "# comment without newline"));
}

TEST_F(DyndepParserTest, BuildWithoutPath) {
  EXPECT_EQ("input:2: expected path\nbuild\n     ^ near here", ParseError(std::string(kVersion) + "build\n"));
}

TEST_F(DyndepParserTest, EmptyExplicitPath) {
  EXPECT_EQ("input:2: empty path\nbuild $x: dyndep\n        ^ near here",
            ParseError(std::string(kVersion) + "build $x: dyndep\n"));
}

TEST_F(DyndepParserTest, OutputWithoutBuildStatement) {
  EXPECT_EQ("input:2: no build statement exists for 'nope'\nbuild nope: dyndep\n          ^ near here",
            ParseError(std::string(kVersion) + "build nope: dyndep\n"));
}

TEST_F(DyndepParserTest, SourceFileHasNoBuildStatement) {
  ManifestParser manifest(&state_, &disk_);
  std::string err;
  ASSERT_TRUE(manifest.ParseTest("build other: touch in\n", &err)) << err;
  EXPECT_EQ("input:2: no build statement exists for 'in'\nbuild in: dyndep\n        ^ near here",
            ParseError(std::string(kVersion) + "build in: dyndep\n"));
}

TEST_F(DyndepParserTest, MultipleStatementsForOneEdge) {
  EXPECT_EQ("input:3: multiple statements for 'out'\nbuild out: dyndep\n         ^ near here",
            ParseError(std::string(kVersion) + "build out: dyndep\nbuild out: dyndep\n"));
}

TEST_F(DyndepParserTest, MultipleStatementsThroughAnotherOutputOfTheEdge) {
  EXPECT_EQ("input:3: multiple statements for 'otherout'\nbuild otherout: dyndep\n              ^ near here",
            ParseError(std::string(kVersion) + "build out: dyndep\nbuild otherout: dyndep\n"));
}

TEST_F(DyndepParserTest, ExplicitOutputsNotSupported) {
  EXPECT_EQ("input:2: explicit outputs not supported\nbuild out out2: dyndep\n              ^ near here",
            ParseError(std::string(kVersion) + "build out out2: dyndep\n"));
}

TEST_F(DyndepParserTest, MissingColon) {
  EXPECT_EQ("input:2: expected ':', got newline ($ also escapes ':')\nbuild out\n         ^ near here",
            ParseError(std::string(kVersion) + "build out\n"));
}

TEST_F(DyndepParserTest, WrongRuleName) {
  EXPECT_EQ("input:2: expected build command name 'dyndep'\nbuild out: dyndep2\n           ^ near here",
            ParseError(std::string(kVersion) + "build out: dyndep2\n"));
  EXPECT_EQ("input:2: expected build command name 'dyndep'\nbuild out: touch\n           ^ near here",
            ParseError(std::string(kVersion) + "build out: touch\n"));
}

TEST_F(DyndepParserTest, MissingRuleName) {
  EXPECT_EQ("input:2: expected build command name 'dyndep'\nbuild out: \n           ^ near here",
            ParseError(std::string(kVersion) + "build out: \n"));
}

TEST_F(DyndepParserTest, ExplicitInputsNotSupported) {
  EXPECT_EQ("input:2: explicit inputs not supported\nbuild out: dyndep x\n                   ^ near here",
            ParseError(std::string(kVersion) + "build out: dyndep x\n"));
}

TEST_F(DyndepParserTest, OrderOnlyInputsNotSupported) {
  EXPECT_EQ("input:2: order-only inputs not supported\nbuild out: dyndep | x || y\n"
            "                      ^ near here",
            ParseError(std::string(kVersion) + "build out: dyndep | x || y\n"));
  EXPECT_EQ("input:2: order-only inputs not supported\nbuild out: dyndep || y\n                  ^ near here",
            ParseError(std::string(kVersion) + "build out: dyndep || y\n"));
}

TEST_F(DyndepParserTest, ValidationsNotSupported) {
  EXPECT_EQ("input:2: expected newline, got '|@'\nbuild out: dyndep |@ y\n                  ^ near here",
            ParseError(std::string(kVersion) + "build out: dyndep |@ y\n"));
}

TEST_F(DyndepParserTest, OnlyRestatBinding) {
  EXPECT_EQ("input:3: binding is not 'restat'\n  foo = 1\n         ^ near here",
            ParseError(std::string(kVersion) + "build out: dyndep\n  foo = 1\n"));
}

TEST_F(DyndepParserTest, OnlyOneBinding) {
  EXPECT_EQ("input:4: unexpected indent\n",
            ParseError(std::string(kVersion) + "build out: dyndep\n  restat = 1\n  restat = 1\n"));
}

TEST_F(DyndepParserTest, EmptyImplicitPaths) {
  EXPECT_EQ("input:3: empty path\n", ParseError(std::string(kVersion) + "build out | $x: dyndep\n"));
  EXPECT_EQ("input:3: empty path\n", ParseError(std::string(kVersion) + "build out: dyndep | $x\n"));
}

TEST_F(DyndepParserTest, NoImplicit) {
  Parse(std::string(kVersion) + "build out: dyndep\n");
  const Dyndeps& dyndeps = OnlyEntry();
  EXPECT_FALSE(dyndeps.restat);
  EXPECT_FALSE(dyndeps.used);
  EXPECT_TRUE(dyndeps.implicit_inputs.empty());
  EXPECT_TRUE(dyndeps.implicit_outputs.empty());
}

TEST_F(DyndepParserTest, EmptyImplicitLists) {
  Parse(std::string(kVersion) + "build out | : dyndep |\n");
  const Dyndeps& dyndeps = OnlyEntry();
  EXPECT_TRUE(dyndeps.implicit_inputs.empty());
  EXPECT_TRUE(dyndeps.implicit_outputs.empty());
}

TEST_F(DyndepParserTest, ImplicitInputs) {
  Parse(std::string(kVersion) + "build out: dyndep | in1 ./in2\n");
  const Dyndeps& dyndeps = OnlyEntry();
  ASSERT_EQ(2u, dyndeps.implicit_inputs.size());
  EXPECT_EQ("in1", dyndeps.implicit_inputs[0]->path);
  EXPECT_EQ("in2", dyndeps.implicit_inputs[1]->path);
  EXPECT_TRUE(dyndeps.implicit_outputs.empty());
}

TEST_F(DyndepParserTest, ImplicitOutputs) {
  Parse(std::string(kVersion) + "build out | out.imp sub//x.mod: dyndep\n");
  const Dyndeps& dyndeps = OnlyEntry();
  ASSERT_EQ(2u, dyndeps.implicit_outputs.size());
  EXPECT_EQ("out.imp", dyndeps.implicit_outputs[0]->path);
  EXPECT_EQ("sub/x.mod", dyndeps.implicit_outputs[1]->path);
  // Nodes first named by a dyndep file are marked as such; the scan module wires them in.
  EXPECT_TRUE(dyndeps.implicit_outputs[0]->generated_by_dep_loader);
  EXPECT_EQ(nullptr, dyndeps.implicit_outputs[0]->in_edge);
}

TEST_F(DyndepParserTest, ImplicitInputsAndOutputsWithRestat) {
  Parse(std::string(kVersion) + "build out | out.imp: dyndep | in.imp\n  restat = 1\n");
  const Dyndeps& dyndeps = OnlyEntry();
  EXPECT_TRUE(dyndeps.restat);
  ASSERT_EQ(1u, dyndeps.implicit_inputs.size());
  ASSERT_EQ(1u, dyndeps.implicit_outputs.size());
  EXPECT_EQ("in.imp", dyndeps.implicit_inputs[0]->path);
  EXPECT_EQ("out.imp", dyndeps.implicit_outputs[0]->path);
}

TEST_F(DyndepParserTest, RestatIsANonEmptyString) {
  Parse(std::string(kVersion) + "build out: dyndep\n  restat = 0\n");
  EXPECT_TRUE(OnlyEntry().restat);
}

TEST_F(DyndepParserTest, EmptyRestatIsFalse) {
  Parse(std::string(kVersion) + "build out: dyndep\n  restat =\n");
  EXPECT_FALSE(OnlyEntry().restat);
}

TEST_F(DyndepParserTest, EscapedPaths) {
  Parse(std::string(kVersion) + "build out: dyndep | a$ b c$:d\n");
  const Dyndeps& dyndeps = OnlyEntry();
  ASSERT_EQ(2u, dyndeps.implicit_inputs.size());
  EXPECT_EQ("a b", dyndeps.implicit_inputs[0]->path);
  EXPECT_EQ("c:d", dyndeps.implicit_inputs[1]->path);
}

TEST_F(DyndepParserTest, OutputIsCanonicalised) {
  Parse(std::string(kVersion) + "build ./x/../out: dyndep\n");
  EXPECT_EQ(1u, dyndep_file_.count(OutEdge()));
}

TEST_F(DyndepParserTest, VariablesEvaluateToNothing) {
  Parse(std::string(kVersion) + "build out: dyndep | in$x\n");
  EXPECT_EQ("in", OnlyEntry().implicit_inputs[0]->path);
}

TEST_F(DyndepParserTest, StatementsForSeveralEdges) {
  ManifestParser manifest(&state_, &disk_);
  std::string err;
  ASSERT_TRUE(manifest.ParseTest("build out2: touch\n", &err)) << err;
  Parse(std::string(kVersion) + "build out: dyndep\nbuild out2: dyndep\n  restat = 1\n");
  ASSERT_EQ(2u, dyndep_file_.size());
  EXPECT_FALSE(dyndep_file_[OutEdge()].restat);
  EXPECT_TRUE(dyndep_file_[state_.LookupNode("out2")->in_edge].restat);
}

TEST_F(DyndepParserTest, LoadFromFile) {
  char path[] = "/tmp/headroom_dyndep_test.XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << kVersion << "build out: dyndep | from_file\n";
  DyndepParser parser(&state_, &disk_, &dyndep_file_);
  std::string err;
  EXPECT_TRUE(parser.Load(path, &err)) << err;
  EXPECT_EQ("from_file", OnlyEntry().implicit_inputs[0]->path);
  std::remove(path);
}

TEST_F(DyndepParserTest, LoadMissingFile) {
  DyndepParser parser(&state_, &disk_, &dyndep_file_);
  std::string err;
  EXPECT_FALSE(parser.Load("/nonexistent/dd", &err));
  EXPECT_EQ("loading '/nonexistent/dd': No such file or directory", err);
}

TEST_F(DyndepParserTest, ErrorsNameTheFile) {
  char path[] = "/tmp/headroom_dyndep_test.XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << "\n";
  DyndepParser parser(&state_, &disk_, &dyndep_file_);
  std::string err;
  EXPECT_FALSE(parser.Load(path, &err));
  EXPECT_EQ(std::string(path) + ":2: expected 'ninja_dyndep_version = ...'\n", err);
  std::remove(path);
}

}  // namespace
}  // namespace headroom
