// Helpers shared by the `-t` tools: getopt-style option parsing, target lookup with ninja's
// error texts, spelling hints, JSON string encoding and the compdb command expansion.
#pragma once

#include <getopt.h>

#include <string>
#include <string_view>
#include <vector>

#include "headroom/tools/tool.h"

namespace headroom {

// Runs glibc getopt_long over a tool's arguments (args[0] = tool name, so getopt's own messages
// read "clean: invalid option -- 'z'" exactly as ninja's do). Options may follow operands.
class ToolOptionParser {
 public:
  ToolOptionParser(const std::vector<std::string>& args, const char* short_options,
                   const struct option* long_options = nullptr);
  // The next option character, '?' for an invalid one, -1 when options are exhausted.
  int Next();
  const char* argument() const { return optarg; }
  // The operands left after all options (in getopt's permuted order).
  std::vector<std::string> Operands() const;

 private:
  std::vector<std::string> storage_;
  std::vector<char*> argv_;
  const char* short_options_;
  const struct option* long_options_;
};

// Resolves one command-line target the way a build does: canonicalises, supports `path^`
// (first output built from path), and fails with ninja's "unknown target" hints.
Node* CollectTarget(const ToolContext& context, const std::string& name, std::string* err);
// All named targets, or the default targets when none are named.
bool CollectTargets(const ToolContext& context, const std::vector<std::string>& names, std::vector<Node*>* targets,
                    std::string* err);

// The closest word within ninja's spelling-hint distance, or null.
const char* SpellcheckWord(std::string_view word, const std::vector<const char*>& candidates);

// Appends `text` JSON-escaped (without the surrounding quotes) as compdb writes it.
void AppendJsonEscaped(std::string_view text, std::string* out);

// The command compdb reports for `edge`; with `expand_rspfile`, an `@rsp`, `-f rsp` or
// `--option-file=rsp` reference is replaced by the rspfile content (newlines become spaces).
std::string CompdbCommand(const Edge& edge, bool expand_rspfile);

}  // namespace headroom
