// CLI11 for headroom's own `-t` tools (plan, history, memstats): a `--help` in ninja's style ("usage: ninja -t
// NAME ...", then the options) and errors as headroom's ("ninja: error: ..."), with the tools' exit codes.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace headroom {

// Thrown from an option's callback to stop the tool with "ninja: error: MESSAGE" and exit code 1: a value the
// option cannot take, worded as the tool's own errors are.
class ToolFlagError : public CLI::ParseError {
 public:
  explicit ToolFlagError(std::string message) : CLI::ParseError("ToolFlagError", std::move(message), 1) {}
};

// One tool's command line: its options are added to app(), then Parse runs them over the tool's arguments.
class ToolCli {
 public:
  ToolCli(const std::string& tool, std::string description);
  CLI::App& app() { return app_; }

  // Parses args (args[0] is the tool's name; options may follow operands; a long option may be abbreviated while
  // unambiguous, as getopt allowed). Returns the exit code to stop with: 0 after printing the help asked for
  // with -h/--help, 1 after an error (on stderr; the help follows on stdout); nullopt to carry on.
  std::optional<int> Parse(const std::vector<std::string>& args);

 private:
  CLI::App app_;
};

// Option callbacks for numbers: `text` read whole as a number, else ToolFlagError with `error`, in which "{}"
// stands for the text ("invalid --cores '{}': expected a number of CPUs").
double ParseNumberFlag(const std::string& text, bool (*valid)(double), const char* error);
long ParseIntegerFlag(const std::string& text, bool (*valid)(long), const char* error);

}  // namespace headroom
