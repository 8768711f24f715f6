// Tests for the build.ninja parser: statements, scoping, include/subninja (real temp files), edges and
// their counts, pools, defaults, required version, dyndep bindings, and ninja 1.13.2's exact error texts.
#include "headroom/manifest/manifest_parser.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "headroom/util/disk.h"

namespace headroom {
namespace {

class ManifestParserTest : public testing::Test {
 protected:
  void Parse(const std::string& input, ManifestParserOptions options = {}) {
    ManifestParser parser(&state_, &disk_, options);
    std::string err;
    ASSERT_TRUE(parser.ParseTest(input, &err)) << err;
    EXPECT_EQ("", err);
  }

  // Parses into a fresh State so one test can check several independent inputs.
  std::string ParseError(const std::string& input, ManifestParserOptions options = {}) {
    State state;
    ManifestParser parser(&state, &disk_, options);
    std::string err;
    EXPECT_FALSE(parser.ParseTest(input, &err));
    return err;
  }

  Edge* EdgeProducing(const std::string& path) {
    Node* node = state_.LookupNode(path);
    return node ? node->in_edge : nullptr;
  }

  std::vector<std::string> Paths(const std::vector<Node*>& nodes) {
    std::vector<std::string> paths;
    for (Node* node : nodes) paths.push_back(node->path);
    return paths;
  }

  State state_;
  RealDiskInterface disk_;
};

// Runs each test in a fresh temporary directory, because include/subninja paths are relative to the cwd.
class ManifestFilesTest : public ManifestParserTest {
 protected:
  void SetUp() override {
    old_cwd_ = std::filesystem::current_path();
    char dir_template[] = "/tmp/headroom_manifest_test.XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(dir_template));
    dir_ = dir_template;
    std::filesystem::current_path(dir_);
  }
  void TearDown() override {
    std::filesystem::current_path(old_cwd_);
    std::filesystem::remove_all(dir_);
  }

  void WriteFile(const std::string& path, const std::string& contents) {
    std::filesystem::path p(path);
    if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
    std::ofstream(path, std::ios::binary) << contents;
  }

  bool Load(const std::string& path, std::string* err, ManifestParserOptions options = {}) {
    ManifestParser parser(&state_, &disk_, options);
    return parser.Load(path, err);
  }

  void LoadOk(const std::string& path = "build.ninja") {
    std::string err;
    ASSERT_TRUE(Load(path, &err)) << err;
  }

  std::filesystem::path old_cwd_;
  std::filesystem::path dir_;
};

constexpr char kCatRule[] = "rule cat\n  command = cat $in > $out\n";

// ---- Basic statements -------------------------------------------------------------------------

TEST_F(ManifestParserTest, Empty) {
  Parse("");
  EXPECT_TRUE(state_.edges.empty());
}

TEST_F(ManifestParserTest, OnlyCommentsAndBlankLines) {
  Parse("# a comment\n\n   \n  # indented\n");
  EXPECT_TRUE(state_.edges.empty());
}

TEST_F(ManifestParserTest, RulesAndEdges) {
  Parse(std::string(kCatRule) +
        "\n"
        "build result: cat in_1.cc in-2.O\n");
  const Rule* rule = state_.bindings.LookupRule("cat");
  ASSERT_NE(nullptr, rule);
  EXPECT_EQ("cat", rule->name());
  EXPECT_EQ("[cat ][$in][ > ][$out]", rule->GetBinding("command")->Serialize());
  Edge* edge = EdgeProducing("result");
  ASSERT_NE(nullptr, edge);
  EXPECT_EQ(rule, edge->rule);
  EXPECT_EQ((std::vector<std::string>{"in_1.cc", "in-2.O"}), Paths(edge->inputs));
  EXPECT_EQ(0u, edge->id);
}

TEST_F(ManifestParserTest, AllReservedRuleBindings) {
  Parse("rule r\n"
        "  command = c\n"
        "  depfile = d\n"
        "  deps = gcc\n"
        "  dyndep = dd\n"
        "  description = desc\n"
        "  generator = 1\n"
        "  pool = console\n"
        "  restat = 1\n"
        "  rspfile = r.rsp\n"
        "  rspfile_content = $in\n"
        "  msvc_deps_prefix = Note: \n");
  const Rule* rule = state_.bindings.LookupRule("r");
  ASSERT_NE(nullptr, rule);
  EXPECT_EQ(11u, rule->bindings().size());
  EXPECT_EQ("[Note: ]", rule->GetBinding("msvc_deps_prefix")->Serialize());
}

TEST_F(ManifestParserTest, IndentedCommentsInsideBlocks) {
  Parse("  #indented comment\n"
        "rule cat\n"
        "  command = cat $in > $out\n"
        "  #generator = 1\n"
        "  restat = 1 # comment\n"
        "  #comment\n"
        "build result: cat in_1.cc in-2.O\n"
        "  #comment\n"
        "build other: cat in\n");
  const Rule* rule = state_.bindings.LookupRule("cat");
  EXPECT_EQ(nullptr, rule->GetBinding("generator"));
  EXPECT_EQ("[1 # comment]", rule->GetBinding("restat")->Serialize());
  EXPECT_TRUE(EdgeProducing("result")->GetBindingBool("restat"));
  EXPECT_FALSE(EdgeProducing("result")->GetBindingBool("generator"));
  EXPECT_EQ(2u, state_.edges.size());
}

TEST_F(ManifestParserTest, IndentedBlankLineEndsTheBlock) {
  EXPECT_EQ("input:4: unexpected indent\n", ParseError("rule cat\n"
                                                        "  command = cat\n"
                                                        "  \n"
                                                        "  depfile = x\n"));
}

TEST_F(ManifestParserTest, ResponseFiles) {
  Parse("rule cat_rsp\n"
        "  command = cat $rspfile > $out\n"
        "  rspfile = $rspfile\n"
        "  rspfile_content = $in\n"
        "\n"
        "build out: cat_rsp in\n"
        "  rspfile=out.rsp\n");
  const Rule* rule = state_.bindings.LookupRule("cat_rsp");
  EXPECT_EQ("[$rspfile]", rule->GetBinding("rspfile")->Serialize());
  EXPECT_EQ("[$in]", rule->GetBinding("rspfile_content")->Serialize());
  EXPECT_EQ("out.rsp", EdgeProducing("out")->GetUnescapedRspfile());
}

TEST_F(ManifestParserTest, InNewline) {
  Parse("rule cat_rsp\n"
        "  command = cat $in_newline > $out\n"
        "\n"
        "build out: cat_rsp in in2\n"
        "  rspfile=out.rsp\n");
  EXPECT_EQ("cat in\nin2 > out", EdgeProducing("out")->EvaluateCommand());
}

TEST_F(ManifestParserTest, TopLevelVariablesAreEvaluatedImmediately) {
  Parse("l = one-letter-test\n"
        "rule link\n"
        "  command = ld $l $extra $with_under -o $out $in\n"
        "\n"
        "extra = -pthread\n"
        "with_under = -under\n"
        "build a: link b c\n"
        "nested1 = 1\n"
        "nested2 = $nested1/2\n"
        "build supernested: link x\n"
        "  extra = $nested2/3\n"
        "nested1 = changed\n");
  EXPECT_EQ("ld one-letter-test -pthread -under -o a b c", EdgeProducing("a")->EvaluateCommand());
  EXPECT_EQ("1/2", state_.bindings.LookupVariable("nested2"));
  EXPECT_EQ("ld one-letter-test 1/2/3 -under -o supernested x", EdgeProducing("supernested")->EvaluateCommand());
}

TEST_F(ManifestParserTest, VariableRedefinitionAffectsOnlyLaterStatements) {
  Parse("x = 1\n"
        "y = $x\n"
        "x = 2\n"
        "z = $x$y\n");
  EXPECT_EQ("1", state_.bindings.LookupVariable("y"));
  EXPECT_EQ("21", state_.bindings.LookupVariable("z"));
}

TEST_F(ManifestParserTest, EdgeBindingsOverrideFileBindings) {
  Parse("foo = bar\n"
        "rule cmd\n"
        "  command = cmd $foo $in $out\n"
        "\n"
        "build inner: cmd a\n"
        "  foo = baz\n"
        "build outer: cmd b\n"
        "\n");
  EXPECT_EQ("cmd baz a inner", EdgeProducing("inner")->EvaluateCommand());
  EXPECT_EQ("cmd bar b outer", EdgeProducing("outer")->EvaluateCommand());
}

TEST_F(ManifestParserTest, EdgeBindingsAreEvaluatedInTheFileScope) {
  // `b` sees the file-level `a`, not the edge's own, and $out is still empty at parse time.
  Parse("a = file\n"
        "rule r\n"
        "  command = $b\n"
        "build o: r\n"
        "  a = edge\n"
        "  b = [$a] [$out]\n");
  EXPECT_EQ("[file] []", EdgeProducing("o")->EvaluateCommand());
}

TEST_F(ManifestParserTest, EdgeWithBindingsGetsItsOwnScope) {
  Parse("rule r\n"
        "  command = c\n"
        "build a: r\n"
        "build b: r\n"
        "  x = 1\n");
  EXPECT_EQ(&state_.bindings, EdgeProducing("a")->env);
  EXPECT_NE(&state_.bindings, EdgeProducing("b")->env);
  EXPECT_EQ(&state_.bindings, EdgeProducing("b")->env->parent());
  EXPECT_EQ("", state_.bindings.LookupVariable("x"));
}

TEST_F(ManifestParserTest, Continuation) {
  Parse("rule link\n"
        "  command = foo bar $\n"
        "    baz\n"
        "\n"
        "build a: link c $\n"
        " d e f\n");
  const Rule* rule = state_.bindings.LookupRule("link");
  EXPECT_EQ("[foo bar baz]", rule->GetBinding("command")->Serialize());
  EXPECT_EQ(4u, EdgeProducing("a")->inputs.size());
}

TEST_F(ManifestParserTest, ContinuationInsideBuildLineBeforeColon) {
  Parse("build $\n  a: phony\n");
  EXPECT_NE(nullptr, EdgeProducing("a"));
}

TEST_F(ManifestParserTest, BackslashesAreLiteral) {
  Parse("foo = bar\\baz\n"
        "foo2 = bar\\ baz\n");
  EXPECT_EQ("bar\\baz", state_.bindings.LookupVariable("foo"));
  EXPECT_EQ("bar\\ baz", state_.bindings.LookupVariable("foo2"));
}

TEST_F(ManifestParserTest, HashInsideValueIsNotAComment) {
  Parse("# this is a comment\n"
        "foo = not # a comment\n");
  EXPECT_EQ("not # a comment", state_.bindings.LookupVariable("foo"));
}

TEST_F(ManifestParserTest, LeadingSpacesOfValueAreStripped) {
  Parse("foo =    spaced  \n"
        "bar = $\n"
        "    continued\n");
  EXPECT_EQ("spaced  ", state_.bindings.LookupVariable("foo"));
  EXPECT_EQ("continued", state_.bindings.LookupVariable("bar"));
}

TEST_F(ManifestParserTest, Dollars) {
  Parse("rule foo\n"
        "  command = ${out}bar$$baz$$$\n"
        "blah\n"
        "x = $$dollar\n"
        "build $x: foo y\n");
  EXPECT_EQ("$dollar", state_.bindings.LookupVariable("x"));
  EXPECT_EQ("'$dollar'bar$baz$blah", EdgeProducing("$dollar")->EvaluateCommand());
}

TEST_F(ManifestParserTest, EscapedSpacesInPaths) {
  Parse("rule spaces\n"
        "  command = something\n"
        "build foo$ bar: spaces $$one two$$$ three\n");
  Edge* edge = EdgeProducing("foo bar");
  ASSERT_NE(nullptr, edge);
  EXPECT_EQ((std::vector<std::string>{"$one", "two$ three"}), Paths(edge->inputs));
  EXPECT_EQ("something", edge->EvaluateCommand());
}

TEST_F(ManifestParserTest, EscapedColonInPaths) {
  Parse("build c$:/foo: phony d$:x\n");
  Edge* edge = EdgeProducing("c:/foo");
  ASSERT_NE(nullptr, edge);
  EXPECT_EQ("d:x", edge->inputs[0]->path);
}

TEST_F(ManifestParserTest, VariableWithSpacesYieldsOnePath) {
  // Paths are split before evaluation.
  Parse("v = a b\n"
        "build $v: phony\n");
  EXPECT_NE(nullptr, EdgeProducing("a b"));
}

TEST_F(ManifestParserTest, TabInPathIsLiteral) {
  Parse("build q\tz: phony x\t\n");
  Edge* edge = EdgeProducing("q\tz");
  ASSERT_NE(nullptr, edge);
  EXPECT_EQ("x\t", edge->inputs[0]->path);
}

TEST_F(ManifestParserTest, CanonicalizesPaths) {
  Parse(std::string(kCatRule) +
        "build ./out.o: cat ./bar/baz/../foo.cc in//2 in/./3 /abs//x/../y\n");
  EXPECT_EQ(nullptr, state_.LookupNode("./out.o"));
  Edge* edge = EdgeProducing("out.o");
  ASSERT_NE(nullptr, edge);
  EXPECT_EQ((std::vector<std::string>{"bar/foo.cc", "in/2", "in/3", "/abs/y"}), Paths(edge->inputs));
}

TEST_F(ManifestParserTest, CanonicalizationKeepsLeadingParentDirectories) {
  Parse("build ../out: phony ../../src/a.c x/../../y\n");
  EXPECT_EQ((std::vector<std::string>{"../../src/a.c", "../y"}), Paths(EdgeProducing("../out")->inputs));
}

TEST_F(ManifestParserTest, AbsoluteAndRelativeSpellingsAreDifferentNodes) {
  Parse("build /w/a: phony\nbuild a: phony\n");
  EXPECT_NE(EdgeProducing("/w/a"), EdgeProducing("a"));
}

TEST_F(ManifestParserTest, PathVariables) {
  Parse(std::string(kCatRule) +
        "dir = out\n"
        "build $dir/exe: cat src\n");
  EXPECT_NE(nullptr, EdgeProducing("out/exe"));
  EXPECT_EQ(nullptr, state_.LookupNode("$dir/exe"));
}

TEST_F(ManifestParserTest, PathsSeeEdgeBindings) {
  Parse("build $dir/out: phony $dir/in\n"
        "  dir = gen\n");
  Edge* edge = EdgeProducing("gen/out");
  ASSERT_NE(nullptr, edge);
  EXPECT_EQ("gen/in", edge->inputs[0]->path);
}

TEST_F(ManifestParserTest, PathsDoNotSeeRuleBindings) {
  Parse("rule r\n"
        "  command = c\n"
        "  depfile = d\n"
        "build x$depfile: r\n");
  EXPECT_NE(nullptr, EdgeProducing("x"));
}

TEST_F(ManifestParserTest, ReservedWordsAsNames) {
  Parse("rule build\n"
        "  command = rule run $out\n"
        "build subninja: build include default foo.cc\n"
        "default subninja\n");
  Edge* edge = EdgeProducing("subninja");
  ASSERT_NE(nullptr, edge);
  EXPECT_EQ("build", edge->rule->name());
  EXPECT_EQ((std::vector<std::string>{"include", "default", "foo.cc"}), Paths(edge->inputs));
}

TEST_F(ManifestParserTest, KeywordPrefixedVariableNames) {
  Parse("buildx = 1\n"
        "rule.d = 2\n"
        "x.y = 3\n");
  EXPECT_EQ("1", state_.bindings.LookupVariable("buildx"));
  EXPECT_EQ("2", state_.bindings.LookupVariable("rule.d"));
  EXPECT_EQ("3", state_.bindings.LookupVariable("x.y"));
}

TEST_F(ManifestParserTest, DotsInRuleNames) {
  Parse("rule cc.d\n  command = x\nbuild o: cc.d\n");
  EXPECT_EQ("cc.d", EdgeProducing("o")->rule->name());
}

TEST_F(ManifestParserTest, Utf8) {
  Parse("rule utf8\n"
        "  command = true\n"
        "  description = compilaci\xC3\xB3\n"
        "build \xC3\xA9: utf8\n");
  EXPECT_EQ("compilaci\xC3\xB3", EdgeProducing("\xC3\xA9")->GetBinding("description"));
}

TEST_F(ManifestParserTest, CrLf) {
  Parse("# comment with crlf\r\n");
  Parse("foo = foo\nbar = bar\r\n");
  Parse("pool link_pool\r\n"
        "  depth = 15\r\n"
        "\r\n"
        "rule xyz\r\n"
        "  command = something$expand \r\n"
        "  description = YAY!\r\n"
        "build a: xyz b\r\n"
        "  x = 1\r\n");
  EXPECT_EQ("bar", state_.bindings.LookupVariable("bar"));
  EXPECT_EQ(15, state_.LookupPool("link_pool")->depth);
  EXPECT_EQ("something ", EdgeProducing("a")->EvaluateCommand());
  EXPECT_EQ("YAY!", EdgeProducing("a")->GetBinding("description"));
}

TEST_F(ManifestParserTest, CrLfContinuation) {
  Parse("y = $\r\n   z\r\n");
  EXPECT_EQ("z", state_.bindings.LookupVariable("y"));
}

// ---- Edges: outputs and input kinds -------------------------------------------------------------

TEST_F(ManifestParserTest, ImplicitInputs) {
  Parse(std::string(kCatRule) + "build foo: cat bar | baz\n");
  Edge* edge = EdgeProducing("foo");
  EXPECT_EQ(2u, edge->inputs.size());
  EXPECT_EQ(1, edge->implicit_deps);
  EXPECT_EQ(0, edge->order_only_deps);
  EXPECT_TRUE(edge->is_implicit(1));
  EXPECT_EQ("cat bar > foo", edge->EvaluateCommand());
}

TEST_F(ManifestParserTest, OrderOnlyInputs) {
  Parse(std::string(kCatRule) + "build foo: cat bar || baz\n");
  Edge* edge = EdgeProducing("foo");
  EXPECT_EQ(1, edge->order_only_deps);
  EXPECT_EQ(0, edge->implicit_deps);
  EXPECT_TRUE(edge->is_order_only(1));
}

TEST_F(ManifestParserTest, Validations) {
  Parse(std::string(kCatRule) + "build foo: cat bar |@ baz\n");
  Edge* edge = EdgeProducing("foo");
  EXPECT_EQ(1u, edge->inputs.size());
  ASSERT_EQ(1u, edge->validations.size());
  Node* baz = edge->validations[0];
  EXPECT_EQ("baz", baz->path);
  EXPECT_EQ((std::vector<Edge*>{edge}), baz->validation_out_edges);
  EXPECT_TRUE(baz->out_edges.empty());
  EXPECT_FALSE(baz->generated_by_dep_loader);
}

TEST_F(ManifestParserTest, AllInputKindsTogether) {
  Parse(std::string(kCatRule) + "build out: cat e1 e2 | i1 i2 i3 || o1 |@ v1 v2\n");
  Edge* edge = EdgeProducing("out");
  EXPECT_EQ((std::vector<std::string>{"e1", "e2", "i1", "i2", "i3", "o1"}), Paths(edge->inputs));
  EXPECT_EQ(3, edge->implicit_deps);
  EXPECT_EQ(1, edge->order_only_deps);
  EXPECT_EQ(2u, edge->explicit_input_count());
  EXPECT_EQ((std::vector<std::string>{"v1", "v2"}), Paths(edge->validations));
  EXPECT_EQ("cat e1 e2 > out", edge->EvaluateCommand());
}

TEST_F(ManifestParserTest, EmptyInputGroupsAreAllowed) {
  Parse(std::string(kCatRule) + "build a: cat | || |@\n");
  Edge* edge = EdgeProducing("a");
  EXPECT_TRUE(edge->inputs.empty());
  EXPECT_EQ(0, edge->implicit_deps);
  EXPECT_EQ(0, edge->order_only_deps);
}

TEST_F(ManifestParserTest, OrderOnlyWithoutImplicit) {
  Parse(std::string(kCatRule) + "build a: cat x || y z\n");
  Edge* edge = EdgeProducing("a");
  EXPECT_EQ(0, edge->implicit_deps);
  EXPECT_EQ(2, edge->order_only_deps);
}

TEST_F(ManifestParserTest, InputNodesRecordTheirOutEdges) {
  Parse(std::string(kCatRule) + "build a: cat x\nbuild b: cat x\n");
  Node* x = state_.LookupNode("x");
  ASSERT_NE(nullptr, x);
  EXPECT_EQ(2u, x->out_edges.size());
  EXPECT_FALSE(x->generated_by_dep_loader);
  EXPECT_EQ(nullptr, x->in_edge);
}

TEST_F(ManifestParserTest, ImplicitOutputs) {
  Parse(std::string(kCatRule) + "build foo | imp: cat bar\n");
  Edge* edge = EdgeProducing("imp");
  ASSERT_NE(nullptr, edge);
  EXPECT_EQ(edge, EdgeProducing("foo"));
  EXPECT_EQ(2u, edge->outputs.size());
  EXPECT_EQ(1, edge->implicit_outs);
  EXPECT_TRUE(edge->is_implicit_out(1));
  EXPECT_EQ("cat bar > foo", edge->EvaluateCommand());
}

TEST_F(ManifestParserTest, ImplicitOutputsEmptyList) {
  Parse(std::string(kCatRule) + "build foo | : cat bar\n");
  Edge* edge = EdgeProducing("foo");
  EXPECT_EQ(1u, edge->outputs.size());
  EXPECT_EQ(0, edge->implicit_outs);
}

TEST_F(ManifestParserTest, NoExplicitOutput) {
  Parse(std::string(kCatRule) + "build | imp : cat bar\n");
  Edge* edge = EdgeProducing("imp");
  ASSERT_NE(nullptr, edge);
  EXPECT_EQ(1, edge->implicit_outs);
  EXPECT_EQ("cat bar > ", edge->EvaluateCommand());
}

TEST_F(ManifestParserTest, MultipleOutputsWithDeps) {
  Parse("rule cc\n"
        "  command = foo\n"
        "  deps = gcc\n"
        "  depfile = bar\n"
        "build a.o b.o: cc c.cc\n");
  EXPECT_EQ(2u, EdgeProducing("a.o")->outputs.size());
}

TEST_F(ManifestParserTest, EdgeIdsFollowManifestOrder) {
  Parse("build a: phony\nbuild b: phony\nbuild c: phony\n");
  EXPECT_EQ(0u, EdgeProducing("a")->id);
  EXPECT_EQ(2u, EdgeProducing("c")->id);
}

TEST_F(ManifestParserTest, DuplicateOutputAcrossEdgesIsAnError) {
  EXPECT_EQ("input:5: multiple rules generate out1\n", ParseError(std::string(kCatRule) +
                                                                   "build out1 out2: cat in1\n"
                                                                   "build out1: cat in2\n"
                                                                   "build final out3: cat out1\n"));
}

TEST_F(ManifestParserTest, DuplicateOutputWithinOneEdgeIsAnError) {
  EXPECT_EQ("input:4: out is defined as an output multiple times\n",
            ParseError(std::string(kCatRule) + "build out out: cat in\n"));
}

TEST_F(ManifestParserTest, DuplicateImplicitOutputWithinOneEdgeIsAnError) {
  EXPECT_EQ("input:4: foo is defined as an output multiple times\n",
            ParseError(std::string(kCatRule) + "build foo baz | foo baq foo: cat bar\n"));
}

TEST_F(ManifestParserTest, DuplicateOutputAfterCanonicalisation) {
  EXPECT_EQ("input:3: multiple rules generate a\n", ParseError("build a: phony\nbuild ./a: phony\n"));
}

TEST_F(ManifestParserTest, DuplicateOutputReportedAfterEdgeBindings) {
  EXPECT_EQ("input:4: multiple rules generate a\n", ParseError("build a: phony\n"
                                                               "build a: phony\n"
                                                               "  x = 1\n"));
}

// ---- Phony self-reference (-w phonycycle) ---------------------------------------------------------

TEST_F(ManifestParserTest, PhonySelfReferenceIsDroppedWithWarning) {
  testing::internal::CaptureStderr();
  Parse("build a: phony a\n");
  EXPECT_EQ("ninja: warning: phony target 'a' names itself as an input; ignoring [-w phonycycle=warn]\n",
            testing::internal::GetCapturedStderr());
  Edge* edge = EdgeProducing("a");
  EXPECT_TRUE(edge->inputs.empty());
  // ninja leaves the edge among the node's out_edges, so `a` no longer counts as a root.
  std::string err;
  EXPECT_TRUE(state_.RootNodes(&err).empty());
  EXPECT_EQ("could not determine root nodes of build graph", err);
}

TEST_F(ManifestParserTest, PhonySelfReferenceQuietOption) {
  ManifestParserOptions options;
  options.quiet = true;
  testing::internal::CaptureStderr();
  Parse("build a: phony a\n", options);
  EXPECT_EQ("", testing::internal::GetCapturedStderr());
  EXPECT_TRUE(EdgeProducing("a")->inputs.empty());
}

TEST_F(ManifestParserTest, PhonySelfReferenceKeptWhenCyclesAreErrors) {
  ManifestParserOptions options;
  options.phony_cycle_action = PhonyCycleAction::kError;
  testing::internal::CaptureStderr();
  Parse("build a: phony a\n", options);
  EXPECT_EQ("", testing::internal::GetCapturedStderr());
  EXPECT_EQ((std::vector<std::string>{"a"}), Paths(EdgeProducing("a")->inputs));
}

TEST_F(ManifestParserTest, PhonySelfReferenceAmongOtherInputs) {
  testing::internal::CaptureStderr();
  Parse("build a: phony b a c\n");
  testing::internal::GetCapturedStderr();
  EXPECT_EQ((std::vector<std::string>{"b", "c"}), Paths(EdgeProducing("a")->inputs));
}

TEST_F(ManifestParserTest, PhonySelfReferenceInOrderOnlyKeepsCountsConsistent) {
  testing::internal::CaptureStderr();
  Parse("build a: phony b || a\n");
  testing::internal::GetCapturedStderr();
  Edge* edge = EdgeProducing("a");
  EXPECT_EQ((std::vector<std::string>{"b"}), Paths(edge->inputs));
  EXPECT_EQ(0, edge->order_only_deps);
}

TEST_F(ManifestParserTest, PhonySelfReferenceThroughImplicitInputIsKept) {
  // Only the CMake-style form (explicit, single output, no implicit deps) is tolerated.
  testing::internal::CaptureStderr();
  Parse("build a: phony | a\n");
  EXPECT_EQ("", testing::internal::GetCapturedStderr());
  EXPECT_EQ(1u, EdgeProducing("a")->inputs.size());
}

TEST_F(ManifestParserTest, NonPhonySelfReferenceIsKept) {
  Parse(std::string(kCatRule) + "build a: cat a\n");
  EXPECT_EQ(1u, EdgeProducing("a")->inputs.size());
}

// ---- Pools ------------------------------------------------------------------------------------------

TEST_F(ManifestParserTest, PoolsOnRulesAndEdges) {
  Parse("pool link\n"
        "  depth = 3\n"
        "rule r\n"
        "  command = r\n"
        "  pool = link\n"
        "rule plain\n"
        "  command = p\n"
        "build a: r\n"
        "build b: r\n"
        "  pool =\n"
        "build c: plain\n"
        "  pool = console\n"
        "build d: plain\n");
  EXPECT_EQ("link", EdgeProducing("a")->pool->name);
  EXPECT_EQ(3, EdgeProducing("a")->pool->depth);
  EXPECT_EQ(&State::kDefaultPool, EdgeProducing("b")->pool);
  EXPECT_EQ(&State::kConsolePool, EdgeProducing("c")->pool);
  EXPECT_TRUE(EdgeProducing("c")->use_console());
  EXPECT_EQ(&State::kDefaultPool, EdgeProducing("d")->pool);
}

TEST_F(ManifestParserTest, PoolIsAKeywordSoItCannotBeATopLevelVariable) {
  EXPECT_EQ("input:1: expected pool name\npool = p\n     ^ near here", ParseError("pool = p\n"));
}

TEST_F(ManifestParserTest, PoolFromVariableInEdgeBinding) {
  Parse("pool p\n"
        "  depth = 1\n"
        "name = p\n"
        "rule r\n"
        "  command = r\n"
        "build a: r\n"
        "  pool = $name\n");
  EXPECT_EQ("p", EdgeProducing("a")->pool->name);
}

TEST_F(ManifestParserTest, PoolDepthIsReadLikeAtol) {
  Parse("pool a\n  depth = abc\n"
        "pool b\n  depth = 7 jobs\n"
        "pool c\n  depth =\n"
        "pool d\n  depth = 1\n  depth = 2\n"
        "pool e\n  depth = 0\n");
  EXPECT_EQ(0, state_.LookupPool("a")->depth);
  EXPECT_EQ(7, state_.LookupPool("b")->depth);
  EXPECT_EQ(0, state_.LookupPool("c")->depth);
  EXPECT_EQ(2, state_.LookupPool("d")->depth);
  EXPECT_FALSE(state_.LookupPool("e")->is_limited());
}

TEST_F(ManifestParserTest, PoolDepthUsesVariables) {
  Parse("n = 5\npool p\n  depth = $n\n");
  EXPECT_EQ(5, state_.LookupPool("p")->depth);
}

TEST_F(ManifestParserTest, PoolErrors) {
  EXPECT_EQ("input:1: expected pool name\npool\n    ^ near here", ParseError("pool\n"));
  EXPECT_EQ("input:2: expected 'depth =' line\n", ParseError("pool foo\n"));
  EXPECT_EQ("input:3: duplicate pool 'foo'\npool foo\n        ^ near here",
            ParseError("pool foo\n  depth = 4\npool foo\n"));
  EXPECT_EQ("input:2: invalid pool depth\n  depth = -1\n            ^ near here",
            ParseError("pool bar\n  depth = -1\n"));
  EXPECT_EQ("input:2: unexpected variable 'bar'\n  bar = 1\n         ^ near here",
            ParseError("pool baz\n  bar = 1\n"));
}

TEST_F(ManifestParserTest, ConsolePoolCannotBeRedeclared) {
  EXPECT_EQ("input:1: duplicate pool 'console'\npool console\n            ^ near here",
            ParseError("pool console\n  depth = 1\n"));
}

TEST_F(ManifestParserTest, UnknownPool) {
  EXPECT_EQ("input:5: unknown pool name 'unnamed_pool'\n", ParseError("rule run\n"
                                                                      "  command = echo\n"
                                                                      "  pool = unnamed_pool\n"
                                                                      "build out: run in\n"));
}

// ---- Defaults ----------------------------------------------------------------------------------------

TEST_F(ManifestParserTest, NoDefaultsMeansRoots) {
  Parse(std::string(kCatRule) +
        "build a: cat foo\n"
        "build b: cat foo\n"
        "build c: cat foo\n"
        "build d: cat a\n");
  std::string err;
  EXPECT_EQ((std::vector<std::string>{"b", "c", "d"}), Paths(state_.DefaultNodes(&err)));
  EXPECT_EQ("", err);
}

TEST_F(ManifestParserTest, DefaultStatementsAccumulate) {
  Parse(std::string(kCatRule) +
        "build a: cat foo\n"
        "build b: cat foo\n"
        "build c: cat foo\n"
        "build d: cat foo\n"
        "third = c\n"
        "default a b\n"
        "default $third\n"
        "default ./d\n");
  std::string err;
  EXPECT_EQ((std::vector<std::string>{"a", "b", "c", "d"}), Paths(state_.DefaultNodes(&err)));
}

TEST_F(ManifestParserTest, DefaultOfASourceFileIsAllowed) {
  Parse(std::string(kCatRule) + "build a: cat src\ndefault src\n");
  EXPECT_EQ((std::vector<std::string>{"src"}), Paths(state_.defaults));
}

TEST_F(ManifestParserTest, DefaultErrors) {
  EXPECT_EQ("input:1: expected target name\ndefault\n       ^ near here", ParseError("default\n"));
  EXPECT_EQ("input:1: unknown target 'nonexistent'\ndefault nonexistent\n                   ^ near here",
            ParseError("default nonexistent\n"));
  EXPECT_EQ("input:1: empty path\ndefault $a\n          ^ near here", ParseError("default $a\n"));
}

TEST_F(ManifestParserTest, DefaultUnknownTargetPointsAfterIt) {
  EXPECT_EQ("input:4: unknown target 'q'\ndefault a c b q\n               ^ near here",
            ParseError(std::string(kCatRule) + "build a b c: cat x\ndefault a c b q\n"));
}

TEST_F(ManifestParserTest, DefaultTrailingColon) {
  EXPECT_EQ("input:4: expected newline, got ':'\ndefault b:\n         ^ near here",
            ParseError("rule r\n  command = r\nbuild b: r\ndefault b:\n"));
}

// ---- ninja_required_version -------------------------------------------------------------------------

TEST_F(ManifestParserTest, RequiredVersionSameOrOlderMinorIsAccepted) {
  testing::internal::CaptureStderr();
  Parse("ninja_required_version = 1.3\n"
        "ninja_required_version = 1.13\n"
        "ninja_required_version = 1.13.99\n");
  EXPECT_EQ("", testing::internal::GetCapturedStderr());
  EXPECT_EQ("1.13.99", state_.bindings.LookupVariable("ninja_required_version"));
}

TEST_F(ManifestParserTest, RequiredVersionOlderMajorWarns) {
  testing::internal::CaptureStderr();
  Parse("ninja_required_version = 0.1\n");
  EXPECT_EQ("ninja: warning: ninja executable version (1.13.2) greater than build file ninja_required_version "
            "(0.1); versions may be incompatible.\n",
            testing::internal::GetCapturedStderr());
}

TEST_F(ManifestParserTest, RequiredVersionNewerIsFatal) {
  EXPECT_EXIT(ParseError("ninja_required_version = 1.14\n"), testing::ExitedWithCode(1),
              "^ninja: fatal: ninja version \\(1\\.13\\.2\\) incompatible with build file "
              "ninja_required_version version \\(1\\.14\\)\\.\n$");
  EXPECT_EXIT(ParseError("ninja_required_version = 2.0\n"), testing::ExitedWithCode(1),
              "version \\(2\\.0\\)\\.");
}

TEST_F(ManifestParserTest, RequiredVersionIsCheckedBeforeLaterSyntaxErrors) {
  EXPECT_EXIT(ParseError("ninja_required_version = 1.99\nbuild\n"), testing::ExitedWithCode(1),
              "ninja: fatal: ninja version");
}

TEST_F(ManifestParserTest, RequiredVersionUsesVariables) {
  EXPECT_EXIT(ParseError("v = 7\nninja_required_version = $v.0\n"), testing::ExitedWithCode(1),
              "version \\(7\\.0\\)\\.");
}

// ---- dyndep binding -----------------------------------------------------------------------------------

TEST_F(ManifestParserTest, DyndepNotSpecified) {
  Parse(std::string(kCatRule) + "build result: cat in\n");
  EXPECT_EQ(nullptr, EdgeProducing("result")->dyndep);
}

TEST_F(ManifestParserTest, DyndepExplicitInput) {
  Parse("rule touch\n"
        "  command = touch $out\n"
        "build result: touch dd\n"
        "  dyndep = dd\n");
  Edge* edge = EdgeProducing("result");
  ASSERT_NE(nullptr, edge->dyndep);
  EXPECT_EQ("dd", edge->dyndep->path);
  EXPECT_TRUE(edge->dyndep->dyndep_pending);
}

TEST_F(ManifestParserTest, DyndepImplicitInput) {
  Parse("rule touch\n"
        "  command = touch $out\n"
        "build result: touch | dd\n"
        "  dyndep = dd\n");
  EXPECT_EQ(state_.LookupNode("dd"), EdgeProducing("result")->dyndep);
}

TEST_F(ManifestParserTest, DyndepOrderOnlyInput) {
  Parse("rule touch\n"
        "  command = touch $out\n"
        "build result: touch || dd\n"
        "  dyndep = dd\n");
  EXPECT_EQ(state_.LookupNode("dd"), EdgeProducing("result")->dyndep);
}

TEST_F(ManifestParserTest, DyndepFromRule) {
  Parse("rule touch\n"
        "  command = touch $out\n"
        "  dyndep = $in\n"
        "build result: touch dd\n");
  EXPECT_EQ(state_.LookupNode("dd"), EdgeProducing("result")->dyndep);
}

TEST_F(ManifestParserTest, DyndepPathIsCanonicalisedAndUnquoted) {
  Parse("build out: phony || gen/dd$ file\n"
        "  dyndep = ./gen/dd file\n");
  Edge* edge = EdgeProducing("out");
  ASSERT_NE(nullptr, edge->dyndep);
  EXPECT_EQ("gen/dd file", edge->dyndep->path);
}

TEST_F(ManifestParserTest, DyndepNotAnInput) {
  EXPECT_EQ("input:5: dyndep 'c' is not an input\n", ParseError("rule cc\n"
                                                                 "  command = x\n"
                                                                 "build a: cc b\n"
                                                                 "  dyndep = ./c\n"));
}

TEST_F(ManifestParserTest, DyndepThatIsAnOutputIsNotAnInput) {
  EXPECT_EQ("input:5: dyndep 'result' is not an input\n", ParseError("rule touch\n"
                                                                      "  command = touch $out\n"
                                                                      "  dyndep = $out\n"
                                                                      "build result: touch\n"));
}

TEST_F(ManifestParserTest, DyndepEdgeBindingCannotSeeOut) {
  // Edge bindings are evaluated at parse time, when $out is still empty: no dyndep at all.
  Parse("rule touch\n"
        "  command = touch $out\n"
        "build result: touch\n"
        "  dyndep = $out\n");
  EXPECT_EQ(nullptr, EdgeProducing("result")->dyndep);
}

// ---- Error messages -----------------------------------------------------------------------------------

TEST_F(ManifestParserTest, ErrorExpectedEquals) {
  EXPECT_EQ("input:1: expected '=', got eof\nsubn\n    ^ near here", ParseError("subn"));
  EXPECT_EQ("input:1: expected '=', got eof\nfoobar\n      ^ near here", ParseError("foobar"));
  EXPECT_EQ("input:1: expected '=', got identifier\nx 3\n  ^ near here", ParseError("x 3"));
  EXPECT_EQ("input:2: expected '=', got identifier\ny 2\n  ^ near here", ParseError("x = 3\ny 2"));
}

TEST_F(ManifestParserTest, ErrorUnexpectedEofInValue) {
  EXPECT_EQ("input:1: unexpected EOF\nx = 3\n     ^ near here", ParseError("x = 3"));
  EXPECT_EQ("input:1: unexpected EOF\nfoo =\n     ^ near here", ParseError("foo ="));
  EXPECT_EQ("input:4: unexpected EOF\n", ParseError("x = a$\n b$\n $\n"));
}

TEST_F(ManifestParserTest, ErrorBadEscapes) {
  EXPECT_EQ("input:1: bad $-escape (literal $ must be written as $$)\nx = $\n    ^ near here",
            ParseError("x = $"));
  EXPECT_EQ("input:2: bad $-escape (literal $ must be written as $$)\n $[\n ^ near here",
            ParseError("x = $\n $[\n"));
  EXPECT_EQ("input:2: bad $-escape (literal $ must be written as $$)\n  command = ${fafsd\n            ^ near here",
            ParseError("rule cat\n  command = ${fafsd\nfoo = bar\n"));
  EXPECT_EQ("input:3: bad $-escape (literal $ must be written as $$)\nbuild $.: cat foo\n      ^ near here",
            ParseError("rule cat\n  command = cat\nbuild $.: cat foo\n"));
}

TEST_F(ManifestParserTest, ErrorDollarCaretIsABadEscapeIn1_13) {
  EXPECT_EQ("input:3: bad $-escape (literal $ must be written as $$)\nbuild a: cc $^\n            ^ near here",
            ParseError("rule cc\n  command = x\nbuild a: cc $^\n"));
}

TEST_F(ManifestParserTest, ErrorBuildStatement) {
  EXPECT_EQ("input:1: expected path\nbuild\n     ^ near here", ParseError("build\n"));
  EXPECT_EQ("input:1: expected path\nbuild : cc\n      ^ near here", ParseError("build : cc\n"));
  EXPECT_EQ("input:1: unknown build rule 'y'\nbuild x: y z\n         ^ near here", ParseError("build x: y z\n"));
  EXPECT_EQ("input:1: expected build command name\nbuild x:: y z\n        ^ near here",
            ParseError("build x:: y z\n"));
  EXPECT_EQ("input:1: expected ':', got newline ($ also escapes ':')\nbuild x\n       ^ near here",
            ParseError("build x\n"));
}

TEST_F(ManifestParserTest, ErrorEscapedColonNeedsARealOne) {
  EXPECT_EQ("input:3: expected ':', got newline ($ also escapes ':')\nbuild $: cat foo\n                ^ near here",
            ParseError("rule cat\n  command = cat\nbuild $: cat foo\n"));
}

TEST_F(ManifestParserTest, ErrorExpectedNewlineAfterContinuation) {
  EXPECT_EQ("input:4: expected newline, got ':'\n :\n ^ near here",
            ParseError("rule cat\n  command = cat ok\nbuild x: cat $\n :\n"));
}

TEST_F(ManifestParserTest, ErrorExtraInputGroups) {
  EXPECT_EQ("input:3: expected newline, got '|'\nbuild a: cc b | | c\n                ^ near here",
            ParseError("rule cc\n  command = x\nbuild a: cc b | | c\n"));
  EXPECT_EQ("input:3: expected newline, got '||'\nbuild a: cc b || c || d\n                   ^ near here",
            ParseError("rule cc\n  command = x\nbuild a: cc b || c || d\n"));
  EXPECT_EQ("input:3: expected newline, got '|'\nbuild a: cc b |@ c | d\n                   ^ near here",
            ParseError("rule cc\n  command = x\nbuild a: cc b |@ c | d\n"));
}

TEST_F(ManifestParserTest, ErrorEdgeBindings) {
  EXPECT_EQ("input:4: expected variable name\n  = z\n  ^ near here",
            ParseError("rule cc\n  command = x\nbuild x: cc y\n  = z\n"));
  EXPECT_EQ("input:4: expected '=', got identifier\n  a b = 1\n    ^ near here",
            ParseError("rule cc\n  command = x\nbuild a: cc b\n  a b = 1\n"));
  EXPECT_EQ("input:5: expected '=', got newline\n  b\n   ^ near here",
            ParseError("rule cc\n  command = x\nbuild a: cc b\n  a = 1\n  b\n"));
  EXPECT_EQ("input:6: unexpected indent\n", ParseError("rule cc\n  command = x\nbuild a: cc b\n  x = 1\n\n  y = 2\n"));
}

TEST_F(ManifestParserTest, ErrorEmptyPaths) {
  EXPECT_EQ("input:4: empty path\n", ParseError("rule r\n  command = r\nbuild $a: r $c\n"));
  EXPECT_EQ("input:4: empty path\n", ParseError("rule r\n  command = r\nbuild a: r $c\n"));
  // Inputs are evaluated after the edge's bindings, so the reported line is past them.
  EXPECT_EQ("input:5: empty path\n", ParseError("rule r\n  command = r\nbuild a: r $c\n  y = 1\n\n"));
  EXPECT_EQ("input:2: empty path\n", ParseError("build a: phony |@ $v\n"));
}

TEST_F(ManifestParserTest, ErrorRuleStatement) {
  EXPECT_EQ("input:1: expected rule name\nrule\n    ^ near here", ParseError("rule\n"));
  EXPECT_EQ("input:1: expected rule name\nrule %foo\n     ^ near here", ParseError("rule %foo\n"));
  EXPECT_EQ("input:1: expected rule name\nrule $x\n     ^ near here", ParseError("rule $x\n"));
  EXPECT_EQ("input:2: expected 'command =' line\n", ParseError("rule cat\n"));
  EXPECT_EQ("input:3: expected 'command =' line\n", ParseError("rule cat\n  command =\n"));
  EXPECT_EQ("input:3: expected 'command =' line\n", ParseError("rule cc\n  description = x\n"));
  EXPECT_EQ("input:3: unexpected variable 'othervar'\n  othervar = bar\n                ^ near here",
            ParseError("rule cc\n  command = foo\n  othervar = bar\n"));
  EXPECT_EQ("input:3: unexpected variable 'depth'\n  depth = 1\n           ^ near here",
            ParseError("rule cc\n  command = foo\n  depth = 1\n"));
  EXPECT_EQ("input:3: expected variable name\n  && bar\n  ^ near here",
            ParseError("rule cc\n  command = foo\n  && bar"));
}

TEST_F(ManifestParserTest, ErrorDuplicateRule) {
  EXPECT_EQ("input:3: duplicate rule 'cat'\nrule cat\n        ^ near here",
            ParseError("rule cat\n  command = a\nrule cat\n  command = b\n"));
  EXPECT_EQ("input:1: duplicate rule 'phony'\nrule phony\n          ^ near here",
            ParseError("rule phony\n  command = a\n"));
}

TEST_F(ManifestParserTest, ErrorRspfileNeedsContent) {
  EXPECT_EQ("input:4: rspfile and rspfile_content need to be both specified\n",
            ParseError("rule cat\n  command = echo\n  rspfile = cat.rsp\n"));
  EXPECT_EQ("input:4: rspfile and rspfile_content need to be both specified\n",
            ParseError("rule cat\n  command = echo\n  rspfile_content = x\n"));
  // Checked before the command, and an empty value counts as absent.
  EXPECT_EQ("input:3: rspfile and rspfile_content need to be both specified\n",
            ParseError("rule cat\n  rspfile = a\n"));
  Parse("rule ok\n  command = echo\n  rspfile =\n");
}

TEST_F(ManifestParserTest, ErrorCommentAfterRuleNameEatsTheNewline) {
  EXPECT_EQ("input:2: expected newline, got indent\n", ParseError("rule cc # comment\n  command = x\n"));
}

TEST_F(ManifestParserTest, ErrorUnexpectedTokensAtTopLevel) {
  EXPECT_EQ("input:1: unexpected indent\n", ParseError(" x = 1\n"));
  EXPECT_EQ("input:1: unexpected '='\n", ParseError("= x\n"));
  EXPECT_EQ("input:1: unexpected ':'\n", ParseError(": x\n"));
  EXPECT_EQ("input:1: unexpected '|'\n", ParseError("| x\n"));
  EXPECT_EQ("input:2: unexpected indent\n", ParseError("x = 1\n  # comment at eof"));
}

TEST_F(ManifestParserTest, ErrorLexing) {
  EXPECT_EQ("input:2: lexing error\n", ParseError("x = 1\n# comment"));
  EXPECT_EQ("input:1: lexing error\nx = 1\ry\n     ^ near here", ParseError("x = 1\ry\n"));
}

TEST_F(ManifestParserTest, ErrorTabs) {
  EXPECT_EQ("input:1: tabs are not allowed, use spaces\n", ParseError("\tx = 1\n"));
  EXPECT_EQ("input:2: unexpected indent\n", ParseError("x = 1\n  \tfoo = 2\n"));
  EXPECT_EQ("input:4: tabs are not allowed, use spaces\n",
            ParseError("rule cc\n  command = x\nbuild a: cc\n\tfoo = 1\n"));
  EXPECT_EQ("input:1: unexpected EOF\ndefault\t\n        ^ near here", ParseError("default\t"));
}

TEST_F(ManifestParserTest, TabsInsideValuesAreLiteral) {
  Parse("x = 1\t\n");
  EXPECT_EQ("1\t", state_.bindings.LookupVariable("x"));
}

TEST_F(ManifestParserTest, ErrorLongLineContextIsTruncated) {
  const std::string input = "rule cc\n  command = x\nbuild a: cc $%x " + std::string(56, 'b') + "\n";
  EXPECT_EQ("input:3: bad $-escape (literal $ must be written as $$)\nbuild a: cc $%x " + std::string(56, 'b') +
                "...\n            ^ near here",
            ParseError(input));
}

TEST_F(ManifestParserTest, ErrorFarColumnHasNoContext) {
  const std::string input = "rule cc\n  command = x\nbuild " + std::string(61, 'a') + ": cc $%x\n";
  EXPECT_EQ("input:3: bad $-escape (literal $ must be written as $$)\n", ParseError(input));
}

TEST_F(ManifestParserTest, ErrorMissingIncludeInTestInput) {
  EXPECT_EQ("input:1: loading '': No such file or directory\ninclude\n       ^ near here",
            ParseError("include\n"));
  EXPECT_EQ("input:2: unexpected EOF\n", ParseError("include $\n"));
}

// ---- Files: include / subninja / Load -----------------------------------------------------------------

TEST_F(ManifestFilesTest, MissingManifest) {
  std::string err;
  EXPECT_FALSE(Load("build.ninja", &err));
  EXPECT_EQ("loading 'build.ninja': No such file or directory", err);
}

TEST_F(ManifestFilesTest, LoadUsesTheFileName) {
  WriteFile("my.ninja", "build\n");
  std::string err;
  EXPECT_FALSE(Load("my.ninja", &err));
  EXPECT_EQ("my.ninja:1: expected path\nbuild\n     ^ near here", err);
}

TEST_F(ManifestFilesTest, LoadingADirectory) {
  std::filesystem::create_directory("dir");
  WriteFile("build.ninja", "include dir\n");
  std::string err;
  EXPECT_FALSE(Load("build.ninja", &err));
  EXPECT_EQ("build.ninja:1: loading 'dir': Is a directory\ninclude dir\n           ^ near here", err);
  EXPECT_FALSE(Load("dir", &err));
  EXPECT_EQ("loading 'dir': Is a directory", err);
}

TEST_F(ManifestFilesTest, IncludeSharesTheScope) {
  WriteFile("build.ninja",
            "x = 1\n"
            "include inc.ninja\n"
            "build $y: phony\n");
  WriteFile("inc.ninja", "y = ${x}-out\nz = inc\n");
  LoadOk();
  EXPECT_NE(nullptr, EdgeProducing("1-out"));
  EXPECT_EQ("inc", state_.bindings.LookupVariable("z"));
}

TEST_F(ManifestFilesTest, IncludedRulesAreVisibleAndDuplicatesFail) {
  WriteFile("build.ninja",
            "include rules.ninja\n"
            "build out: cc in\n"
            "include rules.ninja\n");
  WriteFile("rules.ninja", "rule cc\n  command = cc $in\n");
  std::string err;
  EXPECT_FALSE(Load("build.ninja", &err));
  EXPECT_EQ("rules.ninja:1: duplicate rule 'cc'\nrule cc\n       ^ near here", err);
  EXPECT_NE(nullptr, EdgeProducing("out"));
}

TEST_F(ManifestFilesTest, SubninjaGetsAChildScope) {
  WriteFile("build.ninja",
            "x = top\n"
            "rule r\n"
            "  command = r $x\n"
            "subninja sub.ninja\n"
            "build top_out: r\n");
  WriteFile("sub.ninja",
            "x = sub\n"
            "rule private\n"
            "  command = p\n"
            "build sub_out: r\n"
            "build sub_out2: private\n");
  LoadOk();
  EXPECT_EQ("r sub", EdgeProducing("sub_out")->EvaluateCommand());
  EXPECT_EQ("r top", EdgeProducing("top_out")->EvaluateCommand());
  EXPECT_EQ("top", state_.bindings.LookupVariable("x"));
  EXPECT_EQ(nullptr, state_.bindings.LookupRule("private"));
  EXPECT_EQ(&state_.bindings, EdgeProducing("sub_out")->env->parent());
}

TEST_F(ManifestFilesTest, SubninjaRulesArePrivate) {
  WriteFile("build.ninja",
            "subninja sub.ninja\n"
            "build out: private\n");
  WriteFile("sub.ninja", "rule private\n  command = p\n");
  std::string err;
  EXPECT_FALSE(Load("build.ninja", &err));
  EXPECT_EQ("build.ninja:2: unknown build rule 'private'\nbuild out: private\n           ^ near here", err);
}

TEST_F(ManifestFilesTest, SubninjaMayRedefineAParentRule) {
  WriteFile("build.ninja",
            "rule cc\n  command = top\n"
            "subninja a.ninja\n"
            "subninja b.ninja\n"
            "build t: cc\n");
  WriteFile("a.ninja", "rule cc\n  command = a\nbuild a: cc\n");
  WriteFile("b.ninja", "rule cc\n  command = b\nbuild b: cc\n");
  LoadOk();
  EXPECT_EQ("a", EdgeProducing("a")->EvaluateCommand());
  EXPECT_EQ("b", EdgeProducing("b")->EvaluateCommand());
  EXPECT_EQ("top", EdgeProducing("t")->EvaluateCommand());
}

TEST_F(ManifestFilesTest, IncludeInsideSubninjaUsesTheSubninjaScope) {
  WriteFile("build.ninja", "subninja sub/s.ninja\n");
  // Paths are relative to the working directory, not to the including file.
  WriteFile("sub/s.ninja", "include sub/rules.ninja\nbuild o: local\n");
  WriteFile("sub/rules.ninja", "rule local\n  command = l $v\nv = sub-var\n");
  LoadOk();
  EXPECT_EQ("l sub-var", EdgeProducing("o")->EvaluateCommand());
  EXPECT_EQ(nullptr, state_.bindings.LookupRule("local"));
  EXPECT_EQ("", state_.bindings.LookupVariable("v"));
}

TEST_F(ManifestFilesTest, SubninjaInheritsBuilddirAndParentVariables) {
  WriteFile("build.ninja",
            "builddir = out\n"
            "cflags = -top\n"
            "rule cc\n  command = cc $cflags -o $out\n"
            "subninja sub.ninja\n");
  WriteFile("sub.ninja", "build $builddir/a.o: cc\n");
  LoadOk();
  EXPECT_EQ("cc -top -o out/a.o", EdgeProducing("out/a.o")->EvaluateCommand());
}

TEST_F(ManifestFilesTest, SubninjaPathFromVariable) {
  WriteFile("build.ninja", "d = gen\nsubninja $d/x.ninja\n");
  WriteFile("gen/x.ninja", "build from_sub: phony\n");
  LoadOk();
  EXPECT_NE(nullptr, EdgeProducing("from_sub"));
}

TEST_F(ManifestFilesTest, MissingSubninjaPointsAtTheStatement) {
  WriteFile("build.ninja", "x = 1\nsubninja foo.ninja\n");
  std::string err;
  EXPECT_FALSE(Load("build.ninja", &err));
  EXPECT_EQ("build.ninja:2: loading 'foo.ninja': No such file or directory\nsubninja foo.ninja\n"
            "                  ^ near here",
            err);
}

TEST_F(ManifestFilesTest, MissingIncludeInsideSubninjaNamesTheSubninja) {
  WriteFile("build.ninja", "subninja a.ninja\n");
  WriteFile("a.ninja", "\ninclude nope.ninja\n");
  std::string err;
  EXPECT_FALSE(Load("build.ninja", &err));
  EXPECT_EQ("a.ninja:2: loading 'nope.ninja': No such file or directory\ninclude nope.ninja\n"
            "                  ^ near here",
            err);
}

TEST_F(ManifestFilesTest, BrokenIncludeNamesTheIncludedFile) {
  WriteFile("build.ninja", "include include.ninja\n");
  WriteFile("include.ninja", "build\n");
  std::string err;
  EXPECT_FALSE(Load("build.ninja", &err));
  EXPECT_EQ("include.ninja:1: expected path\nbuild\n     ^ near here", err);
}

TEST_F(ManifestFilesTest, DuplicateOutputInSubninjaNamesTheSubninja) {
  WriteFile("build.ninja",
            "rule cat\n  command = cat $in > $out\n"
            "build out1 out2: cat in1\n"
            "subninja sub.ninja\n");
  WriteFile("sub.ninja", "build out1: cat in2\n");
  std::string err;
  EXPECT_FALSE(Load("build.ninja", &err));
  EXPECT_EQ("sub.ninja:2: multiple rules generate out1\n", err);
}

TEST_F(ManifestFilesTest, StatementAfterIncludeOnTheSameLineFails) {
  WriteFile("build.ninja", "include a.ninja b\n");
  WriteFile("a.ninja", "");
  std::string err;
  EXPECT_FALSE(Load("build.ninja", &err));
  EXPECT_EQ("build.ninja:1: expected newline, got identifier\ninclude a.ninja b\n                ^ near here", err);
}

TEST_F(ManifestFilesTest, PoolsAndDefaultsAreGlobal) {
  WriteFile("build.ninja",
            "subninja sub.ninja\n"
            "rule r\n  command = r\n  pool = p\n"
            "build top: r\n");
  WriteFile("sub.ninja", "pool p\n  depth = 2\nbuild s: phony\ndefault s\n");
  LoadOk();
  EXPECT_EQ("p", EdgeProducing("top")->pool->name);
  EXPECT_EQ((std::vector<std::string>{"s"}), Paths(state_.defaults));
}

}  // namespace
}  // namespace headroom
