// POSIX-shell-like word splitting with quotes and backslashes, no expansions (include/headroom/util/shell_words.h).
#include "headroom/util/shell_words.h"

namespace headroom {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\n'; }

// Inside double quotes a backslash escapes only these; before anything else it stays a backslash.
bool EscapableInDoubleQuotes(char c) { return c == '$' || c == '`' || c == '"' || c == '\\' || c == '\n'; }

}  // namespace

std::optional<std::vector<std::string>> SplitShellWords(std::string_view text, std::string* error) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;  // a word has begun (an empty quoted word counts)
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (IsBlank(c)) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '\'') {
      const size_t close = text.find('\'', i + 1);
      if (close == std::string_view::npos) {
        *error = "unterminated single quote";
        return std::nullopt;
      }
      word.append(text.substr(i + 1, close - i - 1));
      in_word = true;
      i = close;
    } else if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size() && EscapableInDoubleQuotes(text[i + 1])) {
          if (text[++i] != '\n') word += text[i];  // backslash-newline joins lines
        } else {
          word += text[i];
        }
      }
      if (i == text.size()) {
        *error = "unterminated double quote";
        return std::nullopt;
      }
      in_word = true;
    } else if (c == '\\') {
      if (i + 1 == text.size()) {
        *error = "trailing backslash";
        return std::nullopt;
      }
      if (text[++i] != '\n') {
        word += text[i];
        in_word = true;
      }
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

}  // namespace headroom
