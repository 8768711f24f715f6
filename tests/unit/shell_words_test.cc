// Tests for SplitShellWords, the quoting HEADROOM_FLAGS is read with.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "headroom/util/shell_words.h"

namespace headroom {
namespace {

using Words = std::vector<std::string>;

Words Split(std::string_view text) {
  std::string error;
  std::optional<Words> words = SplitShellWords(text, &error);
  EXPECT_TRUE(words) << text << ": " << error;
  return words.value_or(Words{});
}

TEST(ShellWordsTest, BlanksSeparateAndRunsOfThemCountOnce) {
  EXPECT_EQ(Split(""), Words{});
  EXPECT_EQ(Split("  \t\n "), Words{});
  EXPECT_EQ(Split(" -j4\t--mem-budget=8G \n-v "), (Words{"-j4", "--mem-budget=8G", "-v"}));
}

TEST(ShellWordsTest, QuotesAndBackslashesKeepBlanksInAWord) {
  EXPECT_EQ(Split("--trace='a b.json' x"), (Words{"--trace=a b.json", "x"}));
  EXPECT_EQ(Split("--trace=\"a b.json\""), Words{"--trace=a b.json"});
  EXPECT_EQ(Split("a\\ b c"), (Words{"a b", "c"}));
  EXPECT_EQ(Split("'it'\\''s'"), Words{"it's"});
  EXPECT_EQ(Split("'' \"\" x"), (Words{"", "", "x"}));
  EXPECT_EQ(Split("'a\\b' \"$x\""), (Words{"a\\b", "$x"}));  // no escapes in single quotes, no expansions
}

TEST(ShellWordsTest, InDoubleQuotesABackslashEscapesOnlyWhatTheShellsDoes) {
  EXPECT_EQ(Split(R"("a\"b" "c\\d" "e\$f" "g\h")"), (Words{"a\"b", "c\\d", "e$f", "g\\h"}));
  EXPECT_EQ(Split("\"a\\\nb\""), Words{"ab"});  // backslash-newline joins
  EXPECT_EQ(Split("a\\\nb"), Words{"ab"});
}

TEST(ShellWordsTest, AnUnterminatedQuoteOrATrailingBackslashIsAnError) {
  for (auto [text, message] : {std::pair{"'a", "unterminated single quote"},
                               std::pair{"x \"a\\\"", "unterminated double quote"},
                               std::pair{"a\\", "trailing backslash"}}) {
    std::string error;
    EXPECT_FALSE(SplitShellWords(text, &error)) << text;
    EXPECT_EQ(error, message) << text;
  }
}

}  // namespace
}  // namespace headroom
