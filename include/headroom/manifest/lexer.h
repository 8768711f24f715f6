// Tokeniser of the ninja manifest language (shared by build.ninja and dyndep files), plus LexedString,
// the allocation-free form of a value or path while one statement is being parsed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "headroom/graph/eval_env.h"

namespace headroom {

// A value or path as lexed: literal runs and variable names, all views into the manifest buffer.
// Lives only while its statement is parsed; ToEvalString() makes an owning copy when one must be kept.
class LexedString {
 public:
  struct Piece {
    std::string_view text;  // literal text, or the variable name
    bool is_variable;
  };

  void Clear() { pieces_.clear(); }
  bool empty() const { return pieces_.empty(); }
  const std::vector<Piece>& pieces() const { return pieces_; }

  // Adjacent literal views that touch in the buffer are merged, so a plain path is one piece.
  void AddText(std::string_view text);
  void AddVariable(std::string_view name) { pieces_.push_back({name, true}); }

  // Replaces *out with the value; variables are looked up in `env`.
  void Evaluate(Env* env, std::string* out) const;
  EvalString ToEvalString() const;
  // "[text][$var]" like EvalString::Serialize (tests).
  std::string Serialize() const;

 private:
  std::vector<Piece> pieces_;
};

// Reusable list of LexedStrings (the outputs/inputs of one build line) that keeps its storage between statements.
class LexedStringList {
 public:
  void Clear() { size_ = 0; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const LexedString& operator[](size_t i) const { return items_[i]; }
  // A cleared slot at the end of the list.
  LexedString* Append();
  // Drops the last slot (used when a read path turned out empty).
  void PopBack() { --size_; }

 private:
  std::vector<LexedString> items_;
  size_t size_ = 0;
};

class Lexer {
 public:
  enum class Token {
    kError,
    kBuild,
    kColon,
    kDefault,
    kEquals,
    kIdent,
    kInclude,
    kIndent,
    kNewline,
    kPipe,
    kPipe2,
    kPipeAt,
    kPool,
    kRule,
    kSubninja,
    kEof,
  };

  // How a token is named in "expected X, got Y" messages.
  static const char* TokenName(Token token);
  // Extra text appended to "expected X, got Y" (only ':' has one).
  static const char* TokenErrorHint(Token expected);

  Lexer() = default;
  // `input` must be followed by a NUL byte in memory (std::string guarantees it); an embedded NUL ends the file.
  Lexer(std::string_view filename, std::string_view input) { Start(filename, input); }
  void Start(std::string_view filename, std::string_view input);

  Token ReadToken();
  // Steps back to the start of the token just read.
  void UnreadToken() { ofs_ = last_token_; }
  // Consumes the next token if it is `token`; otherwise leaves it unread.
  bool PeekToken(Token token);

  // Reads [A-Za-z0-9_.-]+ (rule, pool and variable names); false (nothing consumed) if there is none.
  bool ReadIdent(std::string_view* out);
  // A path of a build/default/include line: stops before an unescaped space, ':', '|' or newline.
  bool ReadPath(LexedString* path, std::string* err) { return ReadEvalString(path, true, err); }
  // The right-hand side of `name = value`: runs to (and consumes) the end of line.
  bool ReadValue(LexedString* value, std::string* err) { return ReadEvalString(value, false, err); }

  // Formats ninja's "file:line: message\n<line>\n<spaces>^ near here" for the last token; returns false.
  bool Error(std::string_view message, std::string* err) const;
  // The message for a kError token: tabs get their own hint.
  std::string DescribeLastError() const;

  const std::string& filename() const { return filename_; }

 private:
  bool ReadEvalString(LexedString* out, bool path, std::string* err);
  // Skips spaces and $-newline continuations after a token.
  void EatWhitespace();

  std::string filename_;
  const char* input_ = nullptr;
  const char* ofs_ = nullptr;
  const char* last_token_ = nullptr;
};

}  // namespace headroom
