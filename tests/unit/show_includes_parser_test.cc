// Tests for the `deps = msvc` output parser (ninja 1.13.2's rules; the e2e twin is tests/e2e/test_deps_msvc.py).
#include <gtest/gtest.h>

#include "headroom/logs/show_includes_parser.h"

namespace headroom {
namespace {

ShowIncludes Parse(std::string_view output, std::string_view prefix = "") {
  ShowIncludes result;
  std::string err;
  EXPECT_TRUE(ParseShowIncludes(output, prefix, &result, &err)) << err;
  return result;
}

TEST(ShowIncludesParserTest, IncludesLeaveTheOutputCanonicalSortedAndOnce) {
  ShowIncludes parsed = Parse("foo\r\nNote: including file:  b/../z.h\r\nNote: including file: a.h\r\n"
                              "Note: including file: ./z.h\r\nbar\r\n");
  EXPECT_EQ(parsed.output, "foo\nbar\n");
  EXPECT_EQ(parsed.includes, (std::vector<std::string>{"a.h", "z.h"}));
}

TEST(ShowIncludesParserTest, SourceEchoIsDroppedOnlyBeforeTheFirstInclude) {
  ShowIncludes parsed = Parse("src.cc\nwarning\nOTHER.CPP\nx.c++\ny.cxx\nz.c\nNote: including file: h.h\nlate.cc\n");
  EXPECT_EQ(parsed.output, "warning\nlate.cc\n");
  // A diagnostic naming a source file does not end in its extension.
  EXPECT_EQ(Parse("src\\cl_helper.cc(166) : fatal error C1075\n").output, "src\\cl_helper.cc(166) : fatal error C1075\n");
}

TEST(ShowIncludesParserTest, ToolchainHeadersAreNotDependencies) {
  ShowIncludes parsed = Parse("Note: including file: c:\\Program Files\\foo.h\r\n"
                              "Note: including file: d:\\Microsoft Visual Studio\\bar.h\r\n"
                              "Note: including file: path.h\r\n");
  EXPECT_EQ(parsed.output, "");
  EXPECT_EQ(parsed.includes, (std::vector<std::string>{"path.h"}));
}

TEST(ShowIncludesParserTest, APrefixWithoutAPathIsOutput) {
  EXPECT_EQ(Parse("Note: including file:\nNote: including file:   \nNote: including file:x.h\n").output,
            "Note: including file:\nNote: including file:   \nNote: including file:x.h\n");
}

TEST(ShowIncludesParserTest, CustomPrefixReplacesTheEnglishOne) {
  ShowIncludes parsed = Parse("Remarque : inclusion du fichier :  g.h\nNote: including file: h.h\n",
                              "Remarque : inclusion du fichier : ");
  EXPECT_EQ(parsed.output, "Note: including file: h.h\n");
  EXPECT_EQ(parsed.includes, (std::vector<std::string>{"g.h"}));
}

TEST(ShowIncludesParserTest, LinesEndAtCrLfOrCrOrLfAndAlwaysLeaveWithLf) {
  EXPECT_EQ(Parse("a\rb\r\r\nc\n\rd").output, "a\nb\n\nc\n\nd\n");
  EXPECT_EQ(Parse("").output, "");
}

}  // namespace
}  // namespace headroom
