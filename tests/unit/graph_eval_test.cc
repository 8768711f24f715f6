// Tests for evaluating edge bindings on manifests built by the parser: $in/$out quoting, $in_newline,
// rule variable nesting and cycles, scope lookup order (including ninja's #1516 quirk), rspfile hashing.
#include <gtest/gtest.h>

#include "headroom/graph/graph.h"
#include "headroom/manifest/manifest_parser.h"
#include "headroom/util/disk.h"

namespace headroom {
namespace {

class GraphEvalTest : public testing::Test {
 protected:
  void Parse(const std::string& input) {
    ManifestParser parser(&state_, &disk_);
    std::string err;
    ASSERT_TRUE(parser.ParseTest(input, &err)) << err;
  }

  Edge* EdgeProducing(const std::string& path) {
    Node* node = state_.LookupNode(path);
    return node ? node->in_edge : nullptr;
  }

  std::string Command(const std::string& out) { return EdgeProducing(out)->EvaluateCommand(); }

  State state_;
  RealDiskInterface disk_;
};

TEST_F(GraphEvalTest, InAndOutArePlainWhenSafe) {
  Parse("rule r\n  command = cc $in -o $out\nbuild dir/a.o: r src/a_b+c-d.cc other.cc\n");
  EXPECT_EQ("cc src/a_b+c-d.cc other.cc -o dir/a.o", Command("dir/a.o"));
}

TEST_F(GraphEvalTest, PathsWithSpacesAreSingleQuoted) {
  Parse("rule r\n  command = cp $in $out\nbuild out$ file: r in$ file plain\n");
  EXPECT_EQ("cp 'in file' plain 'out file'", Command("out file"));
}

TEST_F(GraphEvalTest, EmbeddedSingleQuoteIsEscaped) {
  Parse("rule r\n  command = cat $in\nbuild o: r it's\n");
  EXPECT_EQ("cat 'it'\\''s'", Command("o"));
}

TEST_F(GraphEvalTest, ShellMetacharactersAreQuoted) {
  Parse("rule r\n  command = cat $in\nbuild o: r a$$b c*d e;f\n");
  EXPECT_EQ("cat 'a$b' 'c*d' 'e;f'", Command("o"));
}

TEST_F(GraphEvalTest, InNewlineSeparatesExplicitInputsByNewlines) {
  Parse("rule r\n  command = x\n  rspfile = $out.rsp\n  rspfile_content = $in_newline\n"
        "build o: r a b$ c | imp || order\n");
  EXPECT_EQ("a\n'b c'", EdgeProducing("o")->GetBinding("rspfile_content"));
}

TEST_F(GraphEvalTest, InExcludesImplicitAndOrderOnlyInputs) {
  Parse("rule r\n  command = [$in] [$out]\nbuild o | o.imp: r a | b || c |@ v\n");
  EXPECT_EQ("[a] [o]", Command("o"));
}

TEST_F(GraphEvalTest, EmptyInAndOut) {
  Parse("rule r\n  command = [$in] [$out]\nbuild | imp: r\n");
  EXPECT_EQ("[] []", Command("imp"));
}

TEST_F(GraphEvalTest, RuleVariablesReferToEachOther) {
  Parse("rule r\n"
        "  command = $description run\n"
        "  description = building $out from $in\n"
        "build o: r i\n");
  EXPECT_EQ("building o from i run", Command("o"));
}

TEST_F(GraphEvalTest, RuleVariablesSeeEdgeBindings) {
  Parse("rule r\n  command = cc $flags $in\nbuild o: r i\n  flags = -O2\n");
  EXPECT_EQ("cc -O2 i", Command("o"));
}

TEST_F(GraphEvalTest, EdgeBindingBeatsRuleBinding) {
  Parse("rule r\n"
        "  command = c\n"
        "  description = rule\n"
        "build a: r\n"
        "  description = edge $out\n");
  EXPECT_EQ("edge ", EdgeProducing("a")->GetBinding("description"));
}

TEST_F(GraphEvalTest, RuleBindingBeatsFileBindingForEdgesWithBindings) {
  Parse("description = FILE\n"
        "rule r\n"
        "  command = c\n"
        "  description = RULE $out\n"
        "build b: r\n"
        "  x = 1\n");
  EXPECT_EQ("RULE b", EdgeProducing("b")->GetBinding("description"));
}

TEST_F(GraphEvalTest, FileBindingBeatsRuleBindingForBindinglessEdges) {
  // ninja #1516: a binding-less edge's scope *is* the file scope, consulted before the rule.
  Parse("description = FILE-$out\n"
        "rule r\n"
        "  command = echo\n"
        "  description = RULE $out\n"
        "build a: r\n"
        "build b: r\n"
        "  x = 1\n");
  EXPECT_EQ("FILE-", EdgeProducing("a")->GetBinding("description"));
  EXPECT_EQ("RULE b", EdgeProducing("b")->GetBinding("description"));
}

TEST_F(GraphEvalTest, FileVariablesFillInWhatTheRuleLacks) {
  Parse("cflags = -Wall\n"
        "rule r\n  command = cc $cflags\n"
        "build a: r\n"
        "build b: r\n  unrelated = 1\n");
  EXPECT_EQ("cc -Wall", Command("a"));
  EXPECT_EQ("cc -Wall", Command("b"));
}

TEST_F(GraphEvalTest, FileVariableUsedByRuleIsTheValueAtTheEnd) {
  // Rule bindings are evaluated lazily, so they see the file scope as it is after parsing.
  Parse("flags = early\n"
        "rule r\n  command = cc $flags\n"
        "build a: r\n"
        "flags = late\n");
  EXPECT_EQ("cc late", Command("a"));
}

TEST_F(GraphEvalTest, UnknownVariablesAreEmpty) {
  Parse("rule r\n  command = a${nothing}b $nothing_either\nbuild o: r\n");
  EXPECT_EQ("ab ", Command("o"));
}

TEST_F(GraphEvalTest, RuleBindingsAreNotVisibleAsFileVariables) {
  Parse("rule r\n  command = c\n  depfile = d.d\nx = [$depfile]\n");
  EXPECT_EQ("[]", state_.bindings.LookupVariable("x"));
}

TEST_F(GraphEvalTest, CycleInRuleVariablesIsFatal) {
  Parse("rule r\n"
        "  command = $description x\n"
        "  description = $command\n"
        "build o: r\n");
  EXPECT_EXIT(EdgeProducing("o")->GetBinding("description"), testing::ExitedWithCode(1),
              "^ninja: fatal: cycle in rule variables: description -> command -> description\n$");
  EXPECT_EXIT(EdgeProducing("o")->EvaluateCommand(), testing::ExitedWithCode(1),
              "cycle in rule variables: command -> description -> command");
}

TEST_F(GraphEvalTest, SelfReferenceInRuleVariableIsFatal) {
  Parse("rule r\n  command = $command\nbuild o: r\n");
  EXPECT_EXIT(EdgeProducing("o")->EvaluateCommand(), testing::ExitedWithCode(1),
              "cycle in rule variables: command -> command");
}

TEST_F(GraphEvalTest, LongerCycleListsEveryStep) {
  Parse("rule r\n"
        "  command = $depfile\n"
        "  depfile = $description\n"
        "  description = $command\n"
        "build o: r\n");
  EXPECT_EXIT(EdgeProducing("o")->GetBinding("description"), testing::ExitedWithCode(1),
              "cycle in rule variables: description -> command -> depfile -> description");
}

TEST_F(GraphEvalTest, EdgeBindingBreaksWhatWouldBeARuleCycle) {
  Parse("rule r\n"
        "  command = $description\n"
        "  description = $command\n"
        "build o: r\n"
        "  description = edge\n");
  EXPECT_EQ("edge", Command("o"));
}

TEST_F(GraphEvalTest, RspfileContentIsPartOfTheHashedCommand) {
  Parse("rule r\n"
        "  command = link @$out.rsp\n"
        "  rspfile = $out.rsp\n"
        "  rspfile_content = $in\n"
        "build o: r a b\n");
  Edge* edge = EdgeProducing("o");
  EXPECT_EQ("link @o.rsp", edge->EvaluateCommand());
  EXPECT_EQ("link @o.rsp;rspfile=a b", edge->EvaluateCommand(true));
  EXPECT_EQ("o.rsp", edge->GetUnescapedRspfile());
}

TEST_F(GraphEvalTest, NoRspfileMeansNoSuffix) {
  Parse("rule r\n  command = c\nbuild o: r a\n");
  EXPECT_EQ("c", EdgeProducing("o")->EvaluateCommand(true));
}

TEST_F(GraphEvalTest, DepfileAndRspfileAreNotShellQuoted) {
  Parse("rule r\n"
        "  command = c $out\n"
        "  depfile = $out.d\n"
        "  rspfile = $out.rsp\n"
        "  rspfile_content = x\n"
        "build my$ out: r\n");
  Edge* edge = EdgeProducing("my out");
  EXPECT_EQ("c 'my out'", edge->EvaluateCommand());
  EXPECT_EQ("my out.d", edge->GetUnescapedDepfile());
  EXPECT_EQ("my out.rsp", edge->GetUnescapedRspfile());
  EXPECT_EQ("'my out'.d", edge->GetBinding("depfile"));
}

TEST_F(GraphEvalTest, BooleanBindingsAreNonEmptyStrings) {
  Parse("rule r\n  command = c\n  restat = 0\n  generator =\nbuild o: r\n");
  EXPECT_TRUE(EdgeProducing("o")->GetBindingBool("restat"));
  EXPECT_FALSE(EdgeProducing("o")->GetBindingBool("generator"));
}

TEST_F(GraphEvalTest, PhonyEdges) {
  Parse("build all: phony a b\n");
  Edge* edge = EdgeProducing("all");
  EXPECT_TRUE(edge->is_phony());
  EXPECT_EQ("", edge->EvaluateCommand());
}

TEST_F(GraphEvalTest, DollarEscapesSurviveEvaluation) {
  Parse("rule r\n  command = echo $$HOME $ x$:y\nbuild o: r\n");
  EXPECT_EQ("echo $HOME  x:y", Command("o"));
}

TEST_F(GraphEvalTest, AbandonedGraphStaysValidAndLeavesTheStateEmpty) {
  Parse("rule cc\n  command = cc $in -o $out\nbuild out.o: cc in.c\n");
  Edge* edge = EdgeProducing("out.o");
  Node* input = state_.LookupNode("in.c");
  state_.AbandonGraphAtExit();
  EXPECT_EQ(state_.node_count(), 0u);
  EXPECT_TRUE(state_.edges.empty());
  EXPECT_EQ(state_.LookupNode("in.c"), nullptr);
  // What the caller still points at lives on until the process exits.
  EXPECT_EQ(input->path, "in.c");
  EXPECT_EQ(edge->outputs[0]->path, "out.o");
  EXPECT_EQ(edge->EvaluateCommand(), "cc in.c -o out.o");
  // The emptied State takes a new graph.
  Parse("rule link\n  command = ld $in\nbuild b: link b.o\n");
  EXPECT_EQ(state_.node_count(), 2u);
}

}  // namespace
}  // namespace headroom
