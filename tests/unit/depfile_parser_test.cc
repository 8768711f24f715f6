// Tests for the depfile parser: the gcc/clang Makefile subset with ninja's escaping rules, error texts,
// multi-rule files and in-place unescaping.
#include "headroom/logs/depfile_parser.h"

#include <gtest/gtest.h>

namespace headroom {
namespace {

using Strings = std::vector<std::string>;

class DepfileParserTest : public testing::Test {
 protected:
  bool Parse(const std::string& input, std::string* err) {
    content_ = input;
    return parser_.Parse(&content_, err);
  }
  void ParseOk(const std::string& input) {
    std::string err;
    ASSERT_TRUE(Parse(input, &err)) << err;
    ASSERT_EQ("", err);
  }
  Strings outs() const { return Strings(parser_.outs.begin(), parser_.outs.end()); }
  Strings ins() const { return Strings(parser_.ins.begin(), parser_.ins.end()); }

  std::string content_;
  DepfileParser parser_;
};

TEST_F(DepfileParserTest, Basic) {
  ParseOk("build/ninja.o: ninja.cc ninja.h eval_env.h manifest_parser.h\n");
  EXPECT_EQ(Strings{"build/ninja.o"}, outs());
  EXPECT_EQ((Strings{"ninja.cc", "ninja.h", "eval_env.h", "manifest_parser.h"}), ins());
}

TEST_F(DepfileParserTest, EarlyNewlineAndWhitespace) {
  ParseOk(" \\\n  out: in\n");
  EXPECT_EQ(Strings{"out"}, outs());
  EXPECT_EQ(Strings{"in"}, ins());
}

TEST_F(DepfileParserTest, Continuation) {
  ParseOk("foo.o: \\\n  bar.h baz.h\n");
  EXPECT_EQ(Strings{"foo.o"}, outs());
  EXPECT_EQ((Strings{"bar.h", "baz.h"}), ins());
}

TEST_F(DepfileParserTest, WindowsDrivePaths) {
  ParseOk("foo.o: //?/c:/bar.h\n");
  EXPECT_EQ(Strings{"foo.o"}, outs());
  EXPECT_EQ(Strings{"//?/c:/bar.h"}, ins());
}

TEST_F(DepfileParserTest, AmpersandsAndQuotes) {
  ParseOk("foo&bar.o foo'bar.o foo\"bar.o: foo&bar.h foo'bar.h foo\"bar.h\n");
  EXPECT_EQ((Strings{"foo&bar.o", "foo'bar.o", "foo\"bar.o"}), outs());
  EXPECT_EQ((Strings{"foo&bar.h", "foo'bar.h", "foo\"bar.h"}), ins());
}

TEST_F(DepfileParserTest, CarriageReturnContinuation) {
  ParseOk("foo.o: \\\r\n  bar.h baz.h\r\n");
  EXPECT_EQ(Strings{"foo.o"}, outs());
  EXPECT_EQ((Strings{"bar.h", "baz.h"}), ins());
}

TEST_F(DepfileParserTest, BackSlashesAreLiteral) {
  ParseOk(
      "Project\\Dir\\Build\\Release8\\Foo\\Foo.res : \\\n"
      "  Dir\\Library\\Foo.rc \\\n"
      "  Dir\\Library\\Version\\Bar.h \\\n"
      "  Dir\\Library\\Foo.ico \\\n"
      "  Project\\Thing\\Bar.tlb \\\n");
  EXPECT_EQ(Strings{"Project\\Dir\\Build\\Release8\\Foo\\Foo.res"}, outs());
  EXPECT_EQ((Strings{"Dir\\Library\\Foo.rc", "Dir\\Library\\Version\\Bar.h", "Dir\\Library\\Foo.ico",
                     "Project\\Thing\\Bar.tlb"}),
            ins());
}

TEST_F(DepfileParserTest, EscapedSpaces) {
  ParseOk("a\\ bc\\ def:   a\\ b c d");
  EXPECT_EQ(Strings{"a bc def"}, outs());
  EXPECT_EQ((Strings{"a b", "c", "d"}), ins());
}

TEST_F(DepfileParserTest, MultipleBackslashesBeforeSpaceAndHash) {
  // 2N+1 backslashes + space = N backslashes + space; 2N + space = 2N and the name ends;
  // a backslash before '#' is dropped, other backslashes kept.
  ParseOk("a\\ b\\#c.h: \\\\\\\\\\  \\\\\\\\ \\\\share\\info\\\\#1");
  EXPECT_EQ(Strings{"a b#c.h"}, outs());
  EXPECT_EQ((Strings{"\\\\ ", "\\\\\\\\", "\\\\share\\info\\#1"}), ins());
}

TEST_F(DepfileParserTest, Escapes) {
  // $$ and \# are unescaped; other backslashes stay; "\\:" at the end is literal and marks the target.
  ParseOk("\\!\\@\\#$$\\%\\^\\&\\[\\]\\\\:");
  EXPECT_EQ(Strings{"\\!\\@#$\\%\\^\\&\\[\\]\\\\"}, outs());
  EXPECT_TRUE(ins().empty());
}

TEST_F(DepfileParserTest, EscapedColons) {
  ParseOk(
      "c\\:\\gcc\\x86_64-w64-mingw32\\include\\stddef.o: \\\n"
      " c:\\gcc\\x86_64-w64-mingw32\\include\\stddef.h \n");
  EXPECT_EQ(Strings{"c:\\gcc\\x86_64-w64-mingw32\\include\\stddef.o"}, outs());
  EXPECT_EQ(Strings{"c:\\gcc\\x86_64-w64-mingw32\\include\\stddef.h"}, ins());
}

TEST_F(DepfileParserTest, EscapedColonFollowedByWhitespaceEndsTheTarget) {
  ParseOk("foo1\\: x\nfoo1\\:\nfoo1\\:\r\nfoo1\\:\t\nfoo1\\:");
  EXPECT_EQ(Strings{"foo1\\"}, outs());
  EXPECT_EQ(Strings{"x"}, ins());
}

TEST_F(DepfileParserTest, SpecialChars) {
  ParseOk(
      "C:/Program\\ Files\\ (x86)/Microsoft\\ crtdefs.h: \\\n"
      " en@quot.header~ t+t-x!=1 \\\n"
      " openldap/slapd.d/cn=config/cn=schema/cn={0}core.ldif\\\n"
      " Fu\303\244ball\\\n"
      " a[1]b@2%c");
  EXPECT_EQ(Strings{"C:/Program Files (x86)/Microsoft crtdefs.h"}, outs());
  EXPECT_EQ((Strings{"en@quot.header~", "t+t-x!=1", "openldap/slapd.d/cn=config/cn=schema/cn={0}core.ldif",
                     "Fu\303\244ball", "a[1]b@2%c"}),
            ins());
}

TEST_F(DepfileParserTest, DollarsAndOddCharacters) {
  ParseOk("out: a$$b c,d e?f g~h (i) {j}\n");
  EXPECT_EQ((Strings{"a$b", "c,d", "e?f", "g~h", "(i)", "{j}"}), ins());
}

TEST_F(DepfileParserTest, LoneDollarAndUnlistedBytesSeparateNames) {
  ParseOk("out: a$b c|d e;f\n");
  EXPECT_EQ((Strings{"a", "b", "c", "d", "e", "f"}), ins());
}

TEST_F(DepfileParserTest, UnifyMultipleOutputs) {
  ParseOk("foo foo: x y z");  // a repeated target counts once.
  EXPECT_EQ(Strings{"foo"}, outs());
  EXPECT_EQ((Strings{"x", "y", "z"}), ins());
}

TEST_F(DepfileParserTest, MultipleDifferentOutputs) {
  ParseOk("foo bar: x y z");
  EXPECT_EQ((Strings{"foo", "bar"}), outs());
  EXPECT_EQ((Strings{"x", "y", "z"}), ins());
}

TEST_F(DepfileParserTest, MultipleEmptyRules) {
  ParseOk("foo: x\nfoo: \nfoo:\n");
  EXPECT_EQ(Strings{"foo"}, outs());
  EXPECT_EQ(Strings{"x"}, ins());
}

TEST_F(DepfileParserTest, UnifyMultipleRulesLF) {
  ParseOk("foo: x\nfoo: y\nfoo \\\nfoo: z\n");
  EXPECT_EQ(Strings{"foo"}, outs());
  EXPECT_EQ((Strings{"x", "y", "z"}), ins());
}

TEST_F(DepfileParserTest, UnifyMultipleRulesCRLF) {
  ParseOk("foo: x\r\nfoo: y\r\nfoo \\\r\nfoo: z\r\n");
  EXPECT_EQ(Strings{"foo"}, outs());
  EXPECT_EQ((Strings{"x", "y", "z"}), ins());
}

TEST_F(DepfileParserTest, UnifyMixedRulesLF) {
  ParseOk("foo: x\\\n     y\nfoo \\\nfoo: z\n");
  EXPECT_EQ(Strings{"foo"}, outs());
  EXPECT_EQ((Strings{"x", "y", "z"}), ins());
}

TEST_F(DepfileParserTest, UnifyMixedRulesCRLF) {
  ParseOk("foo: x\\\r\n     y\r\nfoo \\\r\nfoo: z\r\n");
  EXPECT_EQ(Strings{"foo"}, outs());
  EXPECT_EQ((Strings{"x", "y", "z"}), ins());
}

TEST_F(DepfileParserTest, IndentedRulesLF) {
  ParseOk(" foo: x\n foo: y\n foo: z\n");
  EXPECT_EQ(Strings{"foo"}, outs());
  EXPECT_EQ((Strings{"x", "y", "z"}), ins());
}

TEST_F(DepfileParserTest, IndentedRulesCRLF) {
  ParseOk(" foo: x\r\n foo: y\r\n foo: z\r\n");
  EXPECT_EQ(Strings{"foo"}, outs());
  EXPECT_EQ((Strings{"x", "y", "z"}), ins());
}

TEST_F(DepfileParserTest, TolerateMP) {
  ParseOk("foo: x y z\nx:\ny:\nz:\n");  // gcc -MP: empty rules for every header.
  EXPECT_EQ(Strings{"foo"}, outs());
  EXPECT_EQ((Strings{"x", "y", "z"}), ins());
}

TEST_F(DepfileParserTest, MultipleRulesTolerateMP) {
  ParseOk("foo: x\nx:\nfoo: y\ny:\nfoo: z\nz:\n");
  EXPECT_EQ(Strings{"foo"}, outs());
  EXPECT_EQ((Strings{"x", "y", "z"}), ins());
}

TEST_F(DepfileParserTest, MultipleRulesDifferentOutputs) {
  ParseOk("foo: x y\nbar: y z\n");  // y is listed once.
  EXPECT_EQ((Strings{"foo", "bar"}), outs());
  EXPECT_EQ((Strings{"x", "y", "z"}), ins());
}

TEST_F(DepfileParserTest, TabsSeparateLikeSpaces) {
  ParseOk("foo:\tx\ty\t\\\n\tz\n");
  EXPECT_EQ(Strings{"foo"}, outs());
  EXPECT_EQ((Strings{"x", "y", "z"}), ins());
}

TEST_F(DepfileParserTest, BuggyMP) {
  std::string err;
  EXPECT_FALSE(Parse("foo: x y z\nx: alsoin\ny:\nz:\n", &err));
  EXPECT_EQ("inputs may not also have inputs", err);
}

TEST_F(DepfileParserTest, EmptyFile) {
  ParseOk("");
  EXPECT_TRUE(outs().empty());
  EXPECT_TRUE(ins().empty());
}

TEST_F(DepfileParserTest, EmptyLines) {
  ParseOk("\n\n\r\n  \n");
  EXPECT_TRUE(outs().empty());
  EXPECT_TRUE(ins().empty());
}

TEST_F(DepfileParserTest, MissingColon) {
  std::string err;
  EXPECT_FALSE(Parse("foo.o foo.c\n", &err));
  EXPECT_EQ("expected ':' in depfile", err);
}

TEST_F(DepfileParserTest, ColonWithoutSpaceIsPartOfTheName) {
  std::string err;
  EXPECT_FALSE(Parse("foo.o:foo.c\n", &err));  // gcc always writes ": ", so this is one name.
  EXPECT_EQ("expected ':' in depfile", err);
}

TEST_F(DepfileParserTest, SeparateColon) {
  ParseOk("foo.o : foo.c foo.h\n");
  EXPECT_EQ(Strings{"foo.o"}, outs());
  EXPECT_EQ((Strings{"foo.c", "foo.h"}), ins());
}

TEST_F(DepfileParserTest, NoTrailingNewline) {
  ParseOk("foo.o: foo.c");
  EXPECT_EQ(Strings{"foo.o"}, outs());
  EXPECT_EQ(Strings{"foo.c"}, ins());
}

TEST_F(DepfileParserTest, TrailingBackslashAtEndOfFile) {
  ParseOk("foo.o: foo.c \\");
  EXPECT_EQ(Strings{"foo.c"}, ins());
}

TEST_F(DepfileParserTest, DoubleBackslashBeforeNewlineIsLiteral) {
  ParseOk("foo.o: a\\\\\nb: \n");  // "\\" at a line end: kept, and the newline ends the rule.
  EXPECT_EQ((Strings{"foo.o", "b"}), outs());
  EXPECT_EQ(Strings{"a\\\\"}, ins());
}

TEST_F(DepfileParserTest, UnescapesInPlace) {
  ParseOk("a\\ b.o: c$$d.h\n");
  ASSERT_EQ(1u, parser_.outs.size());
  // The views point into the caller's buffer, which was rewritten.
  EXPECT_GE(parser_.outs[0].data(), content_.data());
  EXPECT_LT(parser_.outs[0].data(), content_.data() + content_.size());
  EXPECT_EQ("a b.o", parser_.outs[0]);
  EXPECT_EQ("c$d.h", parser_.ins[0]);
}

TEST_F(DepfileParserTest, ReparseClearsPreviousResults) {
  ParseOk("a: b\n");
  ParseOk("c: d\n");
  EXPECT_EQ(Strings{"c"}, outs());
  EXPECT_EQ(Strings{"d"}, ins());
}

TEST_F(DepfileParserTest, GccStyleOutputWithManyHeaders) {
  ParseOk(
      "obj/foo.o: ../src/foo.cc /usr/include/stdc-predef.h \\\n"
      " ../include/foo.h /usr/include/c++/12/string \\\n"
      " /usr/include/x86_64-linux-gnu/c++/12/bits/c++config.h\n"
      "../include/foo.h:\n"
      "/usr/include/c++/12/string:\n");
  EXPECT_EQ(Strings{"obj/foo.o"}, outs());
  EXPECT_EQ(5u, ins().size());
  EXPECT_EQ("/usr/include/x86_64-linux-gnu/c++/12/bits/c++config.h", ins().back());
}

// Random mixes of the bytes the lexer treats specially: parsing must terminate, and every name must be a
// non-empty view inside the buffer (the in-place rewrite never runs ahead of the input).
TEST_F(DepfileParserTest, RandomInputStaysInsideTheBuffer) {
  const std::string alphabet("ab:\\ \t\r\n$#\0", 11);
  uint32_t seed = 12345;
  for (int round = 0; round < 20000; ++round) {
    std::string input;
    const int length = round % 24;
    for (int i = 0; i < length; ++i) {
      seed = seed * 1103515245 + 12345;
      input += alphabet[(seed >> 16) % alphabet.size()];
    }
    std::string err;
    content_ = input;
    if (!parser_.Parse(&content_, &err)) continue;
    for (const auto* names : {&parser_.outs, &parser_.ins}) {
      for (std::string_view name : *names) {
        EXPECT_FALSE(name.empty());
        EXPECT_GE(name.data(), content_.data());
        EXPECT_LE(name.data() + name.size(), content_.data() + content_.size());
      }
    }
  }
}

}  // namespace
}  // namespace headroom
