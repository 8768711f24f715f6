// `-t inputs` and `-t multi-inputs`: every input the targets need, transitively (validations and
// phony aliases excluded). inputs prints a sorted, shell-escaped, de-duplicated list by default; multi-inputs
// prints "target<delim>input" lines per target in dependency order.
#include <algorithm>
#include <cstdio>
#include <set>

#include "headroom/tools/tool_support.h"
#include "headroom/tools/tools.h"
#include "headroom/util/messages.h"
#include "headroom/util/path.h"

namespace headroom {

namespace {

// Inputs in dependency order: an input's own inputs come before it; each node once.
class InputsCollector {
 public:
  void VisitTarget(const Node* target) {
    if (target->in_edge) VisitInputsOf(*target->in_edge);
  }
  const std::vector<const Node*>& inputs() const { return inputs_; }

 private:
  void VisitInputsOf(const Edge& edge) {
    for (const Node* input : edge.inputs) {
      if (!seen_.insert(input).second) continue;
      if (input->in_edge) VisitInputsOf(*input->in_edge);
      // A phony output is only an alias: its own inputs are listed, not its name.
      if (!input->in_edge || !input->in_edge->is_phony()) inputs_.push_back(input);
    }
  }

  std::set<const Node*> seen_;
  std::vector<const Node*> inputs_;
};

void PrintInputsUsage() {
  printf(
      "Usage '-t inputs [options] [targets]\n"
      "\n"
      "List all inputs used for a set of targets, sorted in dependency order.\n"
      "Note that by default, results are shell escaped, and sorted alphabetically,\n"
      "and never include validation target paths.\n"
      "\n"
      "Options:\n"
      "  -h, --help          Print this message.\n"
      "  -0, --print0            Use \\0, instead of \\n as a line terminator.\n"
      "  -E, --no-shell-escape   Do not shell escape the result.\n"
      "  -d, --dependency-order  Sort results by dependency order.\n");
}

void PrintMultiInputsUsage() {
  printf(
      "Usage '-t multi-inputs [options] [targets]\n"
      "\n"
      "Print one or more sets of inputs required to build targets, sorted in dependency order.\n"
      "The tool works like inputs tool but with addition of the target for each line.\n"
      "The output will be a series of lines with the following elements:\n"
      "<target> <delimiter> <input> <terminator>\n"
      "Note that a given input may appear for several targets if it is used by more than one targets.\n"
      "Options:\n"
      "  -h, --help                   Print this message.\n"
      "  -d  --delimiter=DELIM        Use DELIM instead of TAB for field delimiter.\n"
      "  -0, --print0                 Use \\0, instead of \\n as a line terminator.\n");
}

void PrintTerminated(const std::string& line, char terminator) {
  fwrite(line.data(), 1, line.size(), stdout);
  putchar(terminator);
}

bool CollectOrReport(const ToolContext& context, const std::vector<std::string>& names, std::vector<Node*>* targets) {
  std::string err;
  if (CollectTargets(context, names, targets, &err)) return true;
  PrintError(err);
  return false;
}

}  // namespace

int ToolInputs(const ToolContext& context, const ToolArgs& args) {
  static const struct option kLongOptions[] = {{"help", no_argument, nullptr, 'h'},
                                               {"print0", no_argument, nullptr, '0'},
                                               {"no-shell-escape", no_argument, nullptr, 'E'},
                                               {"dependency-order", no_argument, nullptr, 'd'},
                                               {nullptr, 0, nullptr, 0}};
  char terminator = '\n';
  bool shell_escape = true;
  bool dependency_order = false;
  ToolOptionParser parser(args, "h0Ed", kLongOptions);
  for (int option; (option = parser.Next()) != -1;) {
    switch (option) {
      case '0': terminator = '\0'; break;
      case 'E': shell_escape = false; break;
      case 'd': dependency_order = true; break;
      default: PrintInputsUsage(); return 1;
    }
  }
  std::vector<Node*> targets;
  if (!CollectOrReport(context, parser.Operands(), &targets)) return 1;

  InputsCollector collector;
  for (const Node* target : targets) collector.VisitTarget(target);
  std::vector<std::string> lines;
  for (const Node* input : collector.inputs()) {
    std::string line;
    if (shell_escape)
      AppendShellEscaped(input->path, &line);
    else
      line = input->path;
    lines.push_back(std::move(line));
  }
  if (!dependency_order) {
    // Sorted as printed (escaped), so quoted names sort by their leading quote.
    std::sort(lines.begin(), lines.end());
    lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  }
  for (const std::string& line : lines) PrintTerminated(line, terminator);
  return 0;
}

int ToolMultiInputs(const ToolContext& context, const ToolArgs& args) {
  static const struct option kLongOptions[] = {{"delimiter", required_argument, nullptr, 'd'},
                                               {"help", no_argument, nullptr, 'h'},
                                               {"print0", no_argument, nullptr, '0'},
                                               {nullptr, 0, nullptr, 0}};
  char terminator = '\n';
  std::string delimiter = "\t";
  ToolOptionParser parser(args, "d:h0", kLongOptions);
  for (int option; (option = parser.Next()) != -1;) {
    switch (option) {
      case 'd': delimiter = parser.argument(); break;
      case '0': terminator = '\0'; break;
      default: PrintMultiInputsUsage(); return 1;
    }
  }
  std::vector<Node*> targets;
  if (!CollectOrReport(context, parser.Operands(), &targets)) return 1;

  for (const Node* target : targets) {
    InputsCollector collector;  // each target lists its full set, shared inputs included
    collector.VisitTarget(target);
    for (const Node* input : collector.inputs()) PrintTerminated(target->path + delimiter + input->path, terminator);
  }
  return 0;
}

}  // namespace headroom
