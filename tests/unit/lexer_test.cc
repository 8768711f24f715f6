// Tests for the manifest lexer: tokens, keywords, $-escapes, continuations, comments, tabs, CRLF and
// the exact error layout ("file:line: msg", source line, caret) ninja 1.13.2 prints.
#include "headroom/manifest/lexer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace headroom {
namespace {

using Token = Lexer::Token;

// Reads tokens up to and including EOF (or an error).
std::vector<Token> Tokens(const std::string& input) {
  Lexer lexer("input", input);
  std::vector<Token> tokens;
  for (;;) {
    Token token = lexer.ReadToken();
    tokens.push_back(token);
    if (token == Token::kEof || token == Token::kError) return tokens;
  }
}

std::string ReadValue(const std::string& input, std::string* err = nullptr) {
  Lexer lexer("input", input);
  LexedString value;
  std::string local_err;
  bool ok = lexer.ReadValue(&value, &local_err);
  if (err) *err = local_err;
  EXPECT_EQ(err == nullptr, ok) << local_err;
  return value.Serialize();
}

TEST(LexerTest, Keywords) {
  EXPECT_EQ((std::vector<Token>{Token::kBuild, Token::kRule, Token::kPool, Token::kDefault, Token::kInclude,
                                Token::kSubninja, Token::kEof}),
            Tokens("build rule pool default include subninja"));
}

TEST(LexerTest, KeywordsMatchOnlyWholeWords) {
  EXPECT_EQ((std::vector<Token>{Token::kIdent, Token::kIdent, Token::kIdent, Token::kEof}),
            Tokens("buildx rule.d sub-ninja"));
}

TEST(LexerTest, Punctuation) {
  EXPECT_EQ((std::vector<Token>{Token::kEquals, Token::kColon, Token::kPipe, Token::kPipe2, Token::kPipeAt,
                                Token::kNewline, Token::kEof}),
            Tokens("= : | || |@\n"));
}

TEST(LexerTest, IndentAndNewlines) {
  EXPECT_EQ((std::vector<Token>{Token::kIdent, Token::kNewline, Token::kIndent, Token::kIdent, Token::kNewline,
                                Token::kEof}),
            Tokens("a\n  b\n"));
}

TEST(LexerTest, LineOfOnlySpacesIsANewlineNotAnIndent) {
  EXPECT_EQ((std::vector<Token>{Token::kNewline, Token::kNewline, Token::kEof}), Tokens("   \n  \r\n"));
}

TEST(LexerTest, CrLfIsANewline) {
  EXPECT_EQ((std::vector<Token>{Token::kIdent, Token::kNewline, Token::kIdent, Token::kEof}), Tokens("a\r\nb"));
}

TEST(LexerTest, CommentsAreSkippedIncludingIndentedOnes) {
  EXPECT_EQ((std::vector<Token>{Token::kIdent, Token::kNewline, Token::kIdent, Token::kEof}),
            Tokens("# comment\nfoo\n   # indented comment\nbar"));
}

TEST(LexerTest, CommentSwallowsItsNewline) {
  // After an identifier, "# x\n" is skipped as a whole, so the next token comes from the next line.
  EXPECT_EQ((std::vector<Token>{Token::kIdent, Token::kIndent, Token::kIdent, Token::kEof}),
            Tokens("name # x\n  cmd"));
}

TEST(LexerTest, CommentAtEofWithoutNewlineIsAnError) {
  Lexer lexer("input", "# no newline");
  EXPECT_EQ(Token::kError, lexer.ReadToken());
  EXPECT_EQ("lexing error", lexer.DescribeLastError());
}

TEST(LexerTest, IndentedCommentAtEofReadsAsIndent) {
  EXPECT_EQ((std::vector<Token>{Token::kIndent, Token::kError}), Tokens("  # no newline"));
}

TEST(LexerTest, TabAtTokenPositionIsDescribed) {
  Lexer lexer("input", "\tfoo = 1\n");
  EXPECT_EQ(Token::kError, lexer.ReadToken());
  EXPECT_EQ("tabs are not allowed, use spaces", lexer.DescribeLastError());
}

TEST(LexerTest, ReadIdentAllowsDotsAndDashes) {
  Lexer lexer("input", "foo.bar-baz_1 rest");
  std::string_view ident;
  ASSERT_TRUE(lexer.ReadIdent(&ident));
  EXPECT_EQ("foo.bar-baz_1", ident);
  ASSERT_TRUE(lexer.ReadIdent(&ident));
  EXPECT_EQ("rest", ident);
  EXPECT_FALSE(lexer.ReadIdent(&ident));
}

TEST(LexerTest, ReadIdentEatsContinuationsAfterTheName) {
  Lexer lexer("input", "foo $\n   = x");
  std::string_view ident;
  ASSERT_TRUE(lexer.ReadIdent(&ident));
  EXPECT_EQ(Token::kEquals, lexer.ReadToken());
}

TEST(LexerTest, ReadValueTextAndVariables) {
  EXPECT_EQ("[plain text ][$var][ ][$VaR][ ][$x]", ReadValue("plain text $var $VaR ${x}\n"));
}

TEST(LexerTest, SimpleVariableStopsAtDotButBracedOneDoesNot) {
  EXPECT_EQ("[$x][.dots ][$x.dots]", ReadValue("$x.dots ${x.dots}\n"));
}

TEST(LexerTest, SimpleVariableIncludesDashes) {
  EXPECT_EQ("[$a-b][ ][$-]", ReadValue("$a-b $-\n"));
}

TEST(LexerTest, Escapes) {
  EXPECT_EQ("[$ :x|y]", ReadValue("$$$ $:x|y\n"));
}

TEST(LexerTest, ValueKeepsColonsPipesHashesAndTabs) {
  EXPECT_EQ("[a:b|c # not a comment\t]", ReadValue("a:b|c # not a comment\t\n"));
}

TEST(LexerTest, ValueContinuationEatsLeadingSpacesOfNextLine) {
  EXPECT_EQ("[foo bar]", ReadValue("foo $\n    bar\n"));
  EXPECT_EQ("[foobar]", ReadValue("foo$\n    bar\n"));
  EXPECT_EQ("[foobar]", ReadValue("foo$\r\n    bar\r\n"));
}

TEST(LexerTest, ValueConsumesTheNewline) {
  Lexer lexer("input", "a b\nnext");
  LexedString value;
  std::string err;
  ASSERT_TRUE(lexer.ReadValue(&value, &err));
  EXPECT_EQ(Token::kIdent, lexer.ReadToken());
}

TEST(LexerTest, PathStopsAtSpaceColonPipeAndNewline) {
  Lexer lexer("input", "a$ b c:d|e\n");
  LexedString path;
  std::string err;
  ASSERT_TRUE(lexer.ReadPath(&path, &err));
  EXPECT_EQ("[a b]", path.Serialize());
  path.Clear();
  ASSERT_TRUE(lexer.ReadPath(&path, &err));
  EXPECT_EQ("[c]", path.Serialize());
  EXPECT_EQ(Token::kColon, lexer.ReadToken());
  path.Clear();
  ASSERT_TRUE(lexer.ReadPath(&path, &err));
  EXPECT_EQ("[d]", path.Serialize());
  EXPECT_EQ(Token::kPipe, lexer.ReadToken());
  path.Clear();
  ASSERT_TRUE(lexer.ReadPath(&path, &err));
  EXPECT_EQ("[e]", path.Serialize());
  path.Clear();
  ASSERT_TRUE(lexer.ReadPath(&path, &err));
  EXPECT_TRUE(path.empty());
  EXPECT_EQ(Token::kNewline, lexer.ReadToken());
}

TEST(LexerTest, PathKeepsTabsAsText) {
  Lexer lexer("input", "q\tz: r\n");
  LexedString path;
  std::string err;
  ASSERT_TRUE(lexer.ReadPath(&path, &err));
  EXPECT_EQ("[q\tz]", path.Serialize());
}

TEST(LexerTest, PathEscapedColon) {
  Lexer lexer("input", "c$:/foo$ bar\n");
  LexedString path;
  std::string err;
  ASSERT_TRUE(lexer.ReadPath(&path, &err));
  EXPECT_EQ("[c:/foo bar]", path.Serialize());
}

TEST(LexerTest, BadEscapeReportsPositionOfDollar) {
  std::string err;
  ReadValue("x $%x\n", &err);
  EXPECT_EQ("input:1: bad $-escape (literal $ must be written as $$)\n"
            "x $%x\n"
            "  ^ near here",
            err);
}

TEST(LexerTest, CaretAtNewerNinjaEscapeIsBadEscapeIn1_13) {
  std::string err;
  ReadValue("x $^ y\n", &err);
  EXPECT_EQ("input:1: bad $-escape (literal $ must be written as $$)\n"
            "x $^ y\n"
            "  ^ near here",
            err);
}

TEST(LexerTest, DollarAtEofIsBadEscape) {
  std::string err;
  ReadValue("x $", &err);
  EXPECT_EQ("input:1: bad $-escape (literal $ must be written as $$)\n"
            "x $\n"
            "  ^ near here",
            err);
}

TEST(LexerTest, UnclosedBraceIsBadEscape) {
  std::string err;
  ReadValue("${foo\n", &err);
  EXPECT_EQ("input:1: bad $-escape (literal $ must be written as $$)\n", err);
}

TEST(LexerTest, ValueWithoutNewlineIsUnexpectedEof) {
  std::string err;
  ReadValue("foo", &err);
  EXPECT_EQ("input:1: unexpected EOF\n"
            "foo\n"
            "   ^ near here",
            err);
}

TEST(LexerTest, LoneCarriageReturnIsLexingError) {
  std::string err;
  ReadValue("1\ry\n", &err);
  EXPECT_EQ("input:1: lexing error\n"
            "1\ry\n"
            " ^ near here",
            err);
}

TEST(LexerTest, ErrorLineNumbersCountNewlinesBeforeTheToken) {
  Lexer lexer("build.ninja", "a\nb\n  c $%\n");
  for (int i = 0; i < 4; ++i) lexer.ReadToken();  // a \n b \n
  EXPECT_EQ(Token::kIndent, lexer.ReadToken());
  LexedString value;
  std::string err;
  EXPECT_FALSE(lexer.ReadValue(&value, &err));
  EXPECT_EQ("build.ninja:3: bad $-escape (literal $ must be written as $$)\n"
            "  c $%\n"
            "    ^ near here",
            err);
}

TEST(LexerTest, ErrorAtColumnZeroHasNoContext) {
  Lexer lexer("input", "\tx\n");
  lexer.ReadToken();
  std::string err;
  lexer.Error(lexer.DescribeLastError(), &err);
  EXPECT_EQ("input:1: tabs are not allowed, use spaces\n", err);
}

TEST(LexerTest, ErrorContextTruncatesLongLines) {
  // A line of 72 or more bytes is cut to 72 and followed by "...".
  const std::string line = "x $%" + std::string(68, 'b');
  std::string err;
  ReadValue(line + "\n", &err);
  EXPECT_EQ("input:1: bad $-escape (literal $ must be written as $$)\n" + line + "...\n  ^ near here", err);

  const std::string shorter = "x $%" + std::string(67, 'b');
  ReadValue(shorter + "\n", &err);
  EXPECT_EQ("input:1: bad $-escape (literal $ must be written as $$)\n" + shorter + "\n  ^ near here", err);
}

TEST(LexerTest, ErrorBeyondColumn71HasNoContext) {
  std::string err;
  ReadValue(std::string(72, 'a') + "$%\n", &err);
  EXPECT_EQ("input:1: bad $-escape (literal $ must be written as $$)\n", err);
  ReadValue(std::string(71, 'a') + "$%\n", &err);
  EXPECT_EQ("input:1: bad $-escape (literal $ must be written as $$)\n" + std::string(71, 'a') +
                "$...\n" + std::string(71, ' ') + "^ near here",
            err);
}

TEST(LexerTest, PeekAndUnread) {
  Lexer lexer("input", "| x");
  EXPECT_FALSE(lexer.PeekToken(Token::kPipe2));
  EXPECT_TRUE(lexer.PeekToken(Token::kPipe));
  EXPECT_EQ(Token::kIdent, lexer.ReadToken());
  lexer.UnreadToken();
  EXPECT_EQ(Token::kIdent, lexer.ReadToken());
  EXPECT_EQ(Token::kEof, lexer.ReadToken());
  EXPECT_EQ(Token::kEof, lexer.ReadToken());  // reading past the end stays at EOF
}

TEST(LexerTest, EmbeddedNulEndsTheInput) {
  EXPECT_EQ((std::vector<Token>{Token::kIdent, Token::kEof}), Tokens(std::string("a\0b", 3)));
}

TEST(LexerTest, TokenNames) {
  EXPECT_STREQ("newline", Lexer::TokenName(Token::kNewline));
  EXPECT_STREQ("identifier", Lexer::TokenName(Token::kIdent));
  EXPECT_STREQ("'|@'", Lexer::TokenName(Token::kPipeAt));
  EXPECT_STREQ("eof", Lexer::TokenName(Token::kEof));
  EXPECT_STREQ(" ($ also escapes ':')", Lexer::TokenErrorHint(Token::kColon));
  EXPECT_STREQ("", Lexer::TokenErrorHint(Token::kEquals));
}

}  // namespace
}  // namespace headroom
