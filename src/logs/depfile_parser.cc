// Depfile (Makefile subset) parser: a hand-written lexer with ninja's escaping rules, unescaping in place.
// Each lexer step picks the longest matching token, ties going to the earlier rule, as ninja's generated lexer does.
#include "headroom/logs/depfile_parser.h"

#include <algorithm>
#include <cstring>

namespace headroom {
namespace {

// Bytes that make up plain file-name text; anything else (space, tab, lone '$', '#', '|', ...) ends a name.
bool IsPlainByte(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80) return true;
  return strchr("+?\"'&,/_:.~(){}%=@[]!-", c) != nullptr && c != '\0';
}

// After `\:`, whitespace or the end of input means the colon ends a target rather than being escaped.
bool IsColonTerminator(const char* p, const char* end) {
  return p == end || *p == '\0' || *p == ' ' || *p == '\t' || *p == '\r' || *p == '\n';
}

// Lexes one file name starting at *in, writing its unescaped bytes at *out (out never passes in).
// Advances *in past the name and its terminator; sets *newline when a line ended here.
class NameLexer {
 public:
  NameLexer(char* in, char* end) : in_(in), end_(end) {}

  char* in() const { return in_; }

  // Returns the unescaped name as [out, returned end).
  char* Lex(char* out, bool* newline) {
    out_ = out;
    while (in_ < end_) {
      if (!Step(newline)) break;
    }
    return out_;
  }

 private:
  void Emit(const char* from, size_t count) {
    memmove(out_, from, count);  // from >= out_: unescaping only ever shrinks.
    out_ += count;
  }
  void EmitRepeated(char c, size_t count) {
    memset(out_, c, count);
    out_ += count;
  }

  // Consumes one token; false when the token ends the current name.
  bool Step(bool* newline) {
    const char c = *in_;
    if (c == '\\') return StepBackslashes(newline);
    if (c == '$' && in_ + 1 < end_ && in_[1] == '$') {
      in_ += 2;
      EmitRepeated('$', 1);
      return true;
    }
    if (IsPlainByte(static_cast<unsigned char>(c))) {
      char* start = in_;
      while (in_ < end_ && IsPlainByte(static_cast<unsigned char>(*in_))) ++in_;
      Emit(start, in_ - start);
      return true;
    }
    if (c == '\n' || (c == '\r' && in_ + 1 < end_ && in_[1] == '\n')) {
      in_ += c == '\r' ? 2 : 1;
      *newline = true;
      return false;
    }
    ++in_;  // NUL, whitespace or any other separator byte is swallowed and ends the name.
    return false;
  }

  bool StepBackslashes(bool* newline) {
    char* start = in_;
    char* after = in_;
    while (after < end_ && *after == '\\') ++after;
    const size_t count = after - start;
    const char next = after < end_ ? *after : '\0';

    if (next == ' ') {
      in_ = after + 1;
      if (count % 2 == 1) {  // 2N+1 backslashes + space: N backslashes and a literal space.
        EmitRepeated('\\', count / 2);
        EmitRepeated(' ', 1);
        return true;
      }
      EmitRepeated('\\', count);  // 2N backslashes + space: kept, and the space ends the name.
      return false;
    }
    if (next == '#') {  // escaped hash: one backslash dropped, the others kept.
      in_ = after + 1;
      EmitRepeated('\\', count - 1);
      EmitRepeated('#', 1);
      return true;
    }
    if (next == ':') {
      if (IsColonTerminator(after + 1, end_)) {
        // "\:" then whitespace/end: literal text ending in ':' (so it marks a target); the
        // terminating byte is consumed with it.
        Emit(start, count + 1);
        in_ = std::min(after + 2, end_);
        if (after + 1 < end_ && after[1] == '\n') *newline = true;
        return false;
      }
      in_ = after + 1;  // escaped colon inside a name (e.g. a drive letter): one backslash dropped.
      EmitRepeated('\\', count - 1);
      EmitRepeated(':', 1);
      return true;
    }
    const bool at_line_end = next == '\0' || next == '\n' || next == '\r';
    if (!at_line_end) {  // other backslashes are literal, together with the byte after them.
      in_ = after + 1;
      Emit(start, count + 1);
      return true;
    }
    if (count >= 2) {  // the last backslash stands in as the "any byte" of a literal run.
      in_ = after;
      Emit(start, count);
      return true;
    }
    // A single backslash before a newline continues the line, which ends the name.
    if (next == '\n') {
      in_ = after + 1;
      return false;
    }
    if (next == '\r' && after + 1 < end_ && after[1] == '\n') {
      in_ = after + 2;
      return false;
    }
    ++in_;  // a lone backslash before NUL, end or a bare '\r' is swallowed.
    return false;
  }

  char* in_;
  char* const end_;
  char* out_ = nullptr;
};

}  // namespace

bool DepfileParser::Parse(std::string* content, std::string* err) {
  outs.clear();
  ins.clear();
  char* in = content->data();
  char* const end = in + content->size();
  char* out = in;

  bool have_target = false;
  bool parsing_targets = true;  // until a rule's ':' is seen, names on a line are targets.
  bool poisoned_input = false;  // a rule's target that was an input earlier: it may not have inputs.
  bool is_empty = true;
  while (in < end) {
    bool have_newline = false;
    NameLexer lexer(in, end);
    char* name = out;
    out = lexer.Lex(out, &have_newline);
    in = lexer.in();
    size_t length = out - name;

    const bool is_dependency = !parsing_targets;
    if (length > 0 && name[length - 1] == ':') {
      --length;
      parsing_targets = false;
      have_target = true;
    }
    if (length > 0) {
      is_empty = false;
      const std::string_view piece(name, length);
      if (std::find(ins.begin(), ins.end(), piece) == ins.end()) {
        if (is_dependency) {
          if (poisoned_input) {
            *err = "inputs may not also have inputs";
            return false;
          }
          ins.push_back(piece);
        } else if (std::find(outs.begin(), outs.end(), piece) == outs.end()) {
          outs.push_back(piece);
        }
      } else if (!is_dependency) {
        // -MP style `header.h:` rules are fine as long as they stay empty.
        poisoned_input = true;
      }
    }
    if (have_newline) {
      parsing_targets = true;
      poisoned_input = false;
    }
  }
  if (!have_target && !is_empty) {
    *err = "expected ':' in depfile";
    return false;
  }
  return true;
}

}  // namespace headroom
