// Parses build.ninja (and include/subninja files) into a State, with ninja 1.13.2's grammar,
// scoping, evaluation order and error texts.
#pragma once

#include <string>
#include <string_view>

#include "headroom/graph/graph.h"
#include "headroom/manifest/lexer.h"

namespace headroom {

class DiskInterface;

enum class PhonyCycleAction { kWarn, kError };

struct ManifestParserOptions {
  // -w phonycycle: kWarn drops the self-input of `build a: phony a` (with a warning); kError keeps it so
  // the scan reports the cycle.
  PhonyCycleAction phony_cycle_action = PhonyCycleAction::kWarn;
  // Suppresses the phony-cycle warning (tools that reload the manifest silently).
  bool quiet = false;
};

class ManifestParser {
 public:
  ManifestParser(State* state, DiskInterface* disk, ManifestParserOptions options = {});

  // Loads `filename`; on error *err holds ninja's "file:line: message\n<line>\n   ^ near here"
  // (or "loading 'file': reason" when the top file cannot be read).
  bool Load(const std::string& filename, std::string* err);
  // Parses `input` as if it were the file "input" (tests).
  bool ParseTest(const std::string& input, std::string* err);
  // Parses already-read `contents` (must be a NUL-terminated buffer such as a std::string) as `filename`.
  bool Parse(const std::string& filename, const std::string& contents, std::string* err);

 private:
  // One file (top, include or subninja) parsed into `env`.
  bool ParseFile(const std::string& filename, const std::string& contents, BindingEnv* env, std::string* err);
  bool ParseStatements(std::string* err);

  bool ParseLet(std::string_view* name, LexedString* value, std::string* err);
  bool ParseTopLevelLet(std::string* err);
  bool ParseRule(std::string* err);
  bool ParsePool(std::string* err);
  bool ParseDefault(std::string* err);
  bool ParseEdge(std::string* err);
  bool ParseFileInclude(bool new_scope, std::string* err);
  bool ExpectToken(Lexer::Token expected, std::string* err);

  // Pieces of ParseEdge.
  bool ReadPathList(LexedStringList* list, std::string* err);
  bool ReadEdgeBindings(BindingEnv** edge_env, std::string* err);
  bool ResolveEdgePool(Edge* edge, std::string* err);
  bool AddEdgeOutputs(Edge* edge, BindingEnv* env, std::string* err);
  bool AddEdgeInputs(Edge* edge, BindingEnv* env, std::string* err);
  void DropPhonySelfReference(Edge* edge);
  bool BindDyndep(Edge* edge, std::string* err);

  // Evaluates `path` in `env` and canonicalises it into path_; "empty path" errors at the lexer position.
  bool EvaluatePath(const LexedString& path, BindingEnv* env, std::string* err);

  State* state_;
  DiskInterface* disk_;
  ManifestParserOptions options_;

  // The file being parsed (null outside Parse); swapped while an include/subninja is parsed.
  Lexer* lexer_ = nullptr;
  BindingEnv* env_ = nullptr;

  // Scratch storage reused by every statement so parsing does not allocate per token.
  LexedStringList outs_;
  LexedStringList ins_;
  LexedStringList validations_;
  LexedString value_;
  std::string path_;
  std::string scratch_;
  std::string test_input_;
};

}  // namespace headroom
