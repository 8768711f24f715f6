// Tests for lexical path canonicalisation and shell quoting.
#include "headroom/util/path.h"

#include <gtest/gtest.h>

namespace headroom {
namespace {

std::string Canon(std::string path) {
  std::string err;
  EXPECT_TRUE(CanonicalizePath(&path, &err)) << err;
  return path;
}

TEST(CanonicalizePath, DropsDotComponents) {
  EXPECT_EQ("foo.h", Canon("./foo.h"));
  EXPECT_EQ("foo/bar.h", Canon("./foo/./bar.h"));
  EXPECT_EQ("x/foo.h", Canon("./x/foo/../foo.h"));
  EXPECT_EQ("x/bar.h", Canon("./x/foo/../../x/bar.h"));
  EXPECT_EQ("foo", Canon("foo/"));
  EXPECT_EQ("foo", Canon("foo//"));
  EXPECT_EQ("foo/bar", Canon("foo//bar"));
}

TEST(CanonicalizePath, KeepsLeadingParentReferences) {
  EXPECT_EQ("../foo", Canon("../foo"));
  EXPECT_EQ("../../foo", Canon("../../foo"));
  EXPECT_EQ("../foo", Canon("a/../../foo"));
  EXPECT_EQ("../bar", Canon("../foo/../bar"));
}

TEST(CanonicalizePath, FoldsToDotWhenEverythingCancels) {
  EXPECT_EQ(".", Canon("foo/.."));
  EXPECT_EQ(".", Canon("./."));
  EXPECT_EQ(".", Canon("."));
}

TEST(CanonicalizePath, AbsolutePaths) {
  EXPECT_EQ("/usr/include/stdio.h", Canon("/usr/include/stdio.h"));
  EXPECT_EQ("/usr/include/stdio.h", Canon("/usr/local/../include//./stdio.h"));
  EXPECT_EQ("/", Canon("/.."));
  EXPECT_EQ("/", Canon("/"));
  EXPECT_EQ("/a", Canon("//a"));
}

TEST(CanonicalizePath, EmptyIsAnError) {
  std::string path, err;
  EXPECT_FALSE(CanonicalizePath(&path, &err));
  EXPECT_EQ("empty path", err);
}

TEST(ShellEscape, QuotesOnlyWhenNeeded) {
  std::string out;
  AppendShellEscaped("a/b-c_d+e.o", &out);
  EXPECT_EQ("a/b-c_d+e.o", out);
  out.clear();
  AppendShellEscaped("with space", &out);
  EXPECT_EQ("'with space'", out);
  out.clear();
  AppendShellEscaped("it's", &out);
  EXPECT_EQ("'it'\\''s'", out);
}

TEST(DirName, SplitsAtLastSlash) {
  EXPECT_EQ("a/b", DirName("a/b/c"));
  EXPECT_EQ("", DirName("c"));
  EXPECT_EQ("/", DirName("/c"));
  EXPECT_EQ("a", DirName("a//c"));
}

}  // namespace
}  // namespace headroom
