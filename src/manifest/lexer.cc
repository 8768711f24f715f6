// Hand-written tokeniser of the manifest language: tokens, identifiers, $-escapes, error positions.
// It works on pointers into one NUL-terminated buffer and never copies text (see LexedString).
#include "headroom/manifest/lexer.h"

#include <array>
#include <cstring>

namespace headroom {

namespace {

enum CharClass : unsigned char {
  kVarChar = 1,        // [A-Za-z0-9_.-]: names of rules, pools and ${braced} variables
  kSimpleVarChar = 2,  // [A-Za-z0-9_-]: names after a bare $
  kPathStop = 4,       // bytes that end a literal run of a value or path: $ space : | \r \n NUL
};

constexpr std::array<unsigned char, 256> MakeCharClasses() {
  std::array<unsigned char, 256> table{};
  for (int c = 0; c < 256; ++c) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (alnum || c == '_' || c == '-') table[c] |= kVarChar | kSimpleVarChar;
    if (c == '.') table[c] |= kVarChar;
  }
  for (unsigned char c : {'$', ' ', ':', '|', '\r', '\n', '\0'}) table[c] |= kPathStop;
  return table;
}

constexpr std::array<unsigned char, 256> kCharClasses = MakeCharClasses();

bool Is(char c, CharClass cls) { return kCharClasses[static_cast<unsigned char>(c)] & cls; }

const char* SkipSpaces(const char* p) {
  while (*p == ' ') ++p;
  return p;
}

const char* SkipClass(const char* p, CharClass cls) {
  while (Is(*p, cls)) ++p;
  return p;
}

// Keywords win only when the whole identifier matches.
Lexer::Token KeywordOrIdent(std::string_view word) {
  switch (word.size()) {
    case 4:
      if (word == "rule") return Lexer::Token::kRule;
      if (word == "pool") return Lexer::Token::kPool;
      break;
    case 5:
      if (word == "build") return Lexer::Token::kBuild;
      break;
    case 7:
      if (word == "default") return Lexer::Token::kDefault;
      if (word == "include") return Lexer::Token::kInclude;
      break;
    case 8:
      if (word == "subninja") return Lexer::Token::kSubninja;
      break;
  }
  return Lexer::Token::kIdent;
}

constexpr size_t kContextColumns = 72;

}  // namespace

void LexedString::AddText(std::string_view text) {
  if (!pieces_.empty() && !pieces_.back().is_variable) {
    std::string_view& last = pieces_.back().text;
    if (last.data() + last.size() == text.data()) {
      last = std::string_view(last.data(), last.size() + text.size());
      return;
    }
  }
  pieces_.push_back({text, false});
}

void LexedString::Evaluate(Env* env, std::string* out) const {
  out->clear();
  if (pieces_.size() == 1 && !pieces_[0].is_variable) {
    out->assign(pieces_[0].text);
    return;
  }
  std::string name;
  for (const Piece& piece : pieces_) {
    if (!piece.is_variable) {
      out->append(piece.text);
      continue;
    }
    name.assign(piece.text);
    out->append(env->LookupVariable(name));
  }
}

EvalString LexedString::ToEvalString() const {
  EvalString result;
  for (const Piece& piece : pieces_) {
    if (piece.is_variable)
      result.AddSpecial(piece.text);
    else
      result.AddText(piece.text);
  }
  return result;
}

std::string LexedString::Serialize() const { return ToEvalString().Serialize(); }

LexedString* LexedStringList::Append() {
  if (size_ == items_.size()) items_.emplace_back();
  LexedString* slot = &items_[size_++];
  slot->Clear();
  return slot;
}

const char* Lexer::TokenName(Token token) {
  switch (token) {
    case Token::kError: return "lexing error";
    case Token::kBuild: return "'build'";
    case Token::kColon: return "':'";
    case Token::kDefault: return "'default'";
    case Token::kEquals: return "'='";
    case Token::kIdent: return "identifier";
    case Token::kInclude: return "'include'";
    case Token::kIndent: return "indent";
    case Token::kNewline: return "newline";
    case Token::kPipe: return "'|'";
    case Token::kPipe2: return "'||'";
    case Token::kPipeAt: return "'|@'";
    case Token::kPool: return "'pool'";
    case Token::kRule: return "'rule'";
    case Token::kSubninja: return "'subninja'";
    case Token::kEof: return "eof";
  }
  return "";
}

const char* Lexer::TokenErrorHint(Token expected) {
  // A bare ':' cannot appear in a path, which surprises people writing Windows drive letters.
  return expected == Token::kColon ? " ($ also escapes ':')" : "";
}

void Lexer::Start(std::string_view filename, std::string_view input) {
  filename_ = filename;
  input_ = input.data();
  ofs_ = input_;
  last_token_ = nullptr;
}

Lexer::Token Lexer::ReadToken() {
  const char* p = ofs_;
  const char* start;
  Token token;
  for (;;) {
    start = p;
    const char* after_spaces = SkipSpaces(p);
    if (*after_spaces == '#') {
      // A comment needs its newline; without one the spaces (if any) form an indent, the '#' an error.
      const char* end = after_spaces;
      while (*end != '\n' && *end != '\0') ++end;
      if (*end == '\n') {
        p = end + 1;
        continue;
      }
    }
    if (*after_spaces == '\n') {
      p = after_spaces + 1;
      token = Token::kNewline;
      break;
    }
    if (after_spaces[0] == '\r' && after_spaces[1] == '\n') {
      p = after_spaces + 2;
      token = Token::kNewline;
      break;
    }
    if (after_spaces != p) {
      p = after_spaces;
      token = Token::kIndent;
      break;
    }
    const char c = *p;
    if (Is(c, kVarChar)) {
      const char* end = SkipClass(p, kVarChar);
      token = KeywordOrIdent(std::string_view(p, end - p));
      p = end;
    } else if (c == '=') {
      token = Token::kEquals;
      ++p;
    } else if (c == ':') {
      token = Token::kColon;
      ++p;
    } else if (c == '|') {
      if (p[1] == '@') {
        token = Token::kPipeAt;
        p += 2;
      } else if (p[1] == '|') {
        token = Token::kPipe2;
        p += 2;
      } else {
        token = Token::kPipe;
        ++p;
      }
    } else if (c == '\0') {
      token = Token::kEof;  // stay on the NUL so reading again is harmless
    } else {
      token = Token::kError;
      ++p;
    }
    break;
  }
  last_token_ = start;
  ofs_ = p;
  if (token != Token::kNewline && token != Token::kEof) EatWhitespace();
  return token;
}

bool Lexer::PeekToken(Token token) {
  if (ReadToken() == token) return true;
  UnreadToken();
  return false;
}

void Lexer::EatWhitespace() {
  const char* p = ofs_;
  for (;;) {
    if (*p == ' ') {
      p = SkipSpaces(p);
    } else if (p[0] == '$' && p[1] == '\n') {
      p += 2;
    } else if (p[0] == '$' && p[1] == '\r' && p[2] == '\n') {
      p += 3;
    } else {
      break;
    }
  }
  ofs_ = p;
}

bool Lexer::ReadIdent(std::string_view* out) {
  const char* start = ofs_;
  const char* end = SkipClass(start, kVarChar);
  last_token_ = start;
  if (end == start) return false;
  *out = std::string_view(start, end - start);
  ofs_ = end;
  EatWhitespace();
  return true;
}

bool Lexer::ReadEvalString(LexedString* out, bool path, std::string* err) {
  const char* p = ofs_;
  const char* start;
  for (;;) {
    start = p;
    const char c = *p;
    if (!Is(c, kPathStop)) {
      // Tabs and other bytes are ordinary text here.
      p = start + 1;
      while (!Is(*p, kPathStop)) ++p;
      out->AddText(std::string_view(start, p - start));
      continue;
    }
    if (c == '\n' || (c == '\r' && p[1] == '\n')) {
      // A path leaves the newline for the statement parser; a value consumes it.
      if (!path) p += (c == '\n') ? 1 : 2;
      break;
    }
    if (c == ' ' || c == ':' || c == '|') {
      if (path) break;
      out->AddText(std::string_view(p, 1));
      ++p;
      continue;
    }
    if (c == '$') {
      const char next = p[1];
      if (next == '$' || next == ' ' || next == ':') {
        out->AddText(std::string_view(p + 1, 1));  // the escaped byte itself, still inside the buffer
        p += 2;
        continue;
      }
      if (next == '\n' || (next == '\r' && p[2] == '\n')) {
        // Line continuation: the next line's indentation is not part of the value.
        p = SkipSpaces(p + (next == '\n' ? 2 : 3));
        continue;
      }
      if (next == '{') {
        const char* name_end = SkipClass(p + 2, kVarChar);
        if (name_end != p + 2 && *name_end == '}') {
          out->AddVariable(std::string_view(p + 2, name_end - (p + 2)));
          p = name_end + 1;
          continue;
        }
      } else if (Is(next, kSimpleVarChar)) {
        const char* name_end = SkipClass(p + 1, kSimpleVarChar);
        out->AddVariable(std::string_view(p + 1, name_end - (p + 1)));
        p = name_end;
        continue;
      }
      last_token_ = start;
      return Error("bad $-escape (literal $ must be written as $$)", err);
    }
    last_token_ = start;
    if (c == '\0') return Error("unexpected EOF", err);
    return Error(DescribeLastError(), err);  // a lone '\r'
  }
  last_token_ = start;
  ofs_ = p;
  if (path) EatWhitespace();
  return true;
}

bool Lexer::Error(std::string_view message, std::string* err) const {
  // Line numbers are only needed on failure, so they are counted here rather than while lexing.
  int line = 1;
  const char* line_start = input_;
  for (const char* p = input_; p < last_token_; ++p) {
    if (*p == '\n') {
      ++line;
      line_start = p + 1;
    }
  }
  const size_t column = last_token_ ? static_cast<size_t>(last_token_ - line_start) : 0;

  err->assign(filename_).append(":").append(std::to_string(line)).append(": ");
  err->append(message).append("\n");
  // Context only for errors on a short prefix of the line, as ninja prints it.
  if (column > 0 && column < kContextColumns) {
    size_t length = 0;
    while (length < kContextColumns && line_start[length] != '\0' && line_start[length] != '\n') ++length;
    err->append(line_start, length);
    if (length == kContextColumns) err->append("...");
    err->append("\n").append(column, ' ').append("^ near here");
  }
  return false;
}

std::string Lexer::DescribeLastError() const {
  if (last_token_ && *last_token_ == '\t') return "tabs are not allowed, use spaces";
  return "lexing error";
}

}  // namespace headroom
