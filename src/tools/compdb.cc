// `-t compdb [-x] [rules]` and `-t compdb-targets [-x] targets`: a JSON compilation database
// (directory = the working directory, file = first input, output = first output).
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <cstdio>
#include <set>

#include "headroom/tools/tool_support.h"
#include "headroom/tools/tools.h"
#include "headroom/util/messages.h"

namespace headroom {

namespace {

std::string WorkingDirectory() {
  std::string buffer(1024, '\0');
  while (!getcwd(buffer.data(), buffer.size())) {
    if (errno != ERANGE) Fatal(fmt::format("cannot determine working directory: {}", strerror(errno)));
    buffer.resize(buffer.size() * 2);
  }
  buffer.resize(strlen(buffer.c_str()));
  return buffer;
}

// Writes "[", the entries separated by ",", and "\n]\n", in the layout ninja uses.
class CompdbWriter {
 public:
  explicit CompdbWriter(bool expand_rspfile) : directory_(WorkingDirectory()), expand_rspfile_(expand_rspfile) {
    putchar('[');
  }
  ~CompdbWriter() { puts("\n]"); }

  void Add(const Edge& edge) {
    std::string entry = first_ ? "" : ",";
    first_ = false;
    entry += "\n  {\n    \"directory\": \"";
    AppendJsonEscaped(directory_, &entry);
    entry += "\",\n    \"command\": \"";
    AppendJsonEscaped(CompdbCommand(edge, expand_rspfile_), &entry);
    entry += "\",\n    \"file\": \"";
    AppendJsonEscaped(edge.inputs[0]->path, &entry);
    entry += "\",\n    \"output\": \"";
    AppendJsonEscaped(edge.outputs[0]->path, &entry);
    entry += "\"\n  }";
    fwrite(entry.data(), 1, entry.size(), stdout);
  }

 private:
  const std::string directory_;
  const bool expand_rspfile_;
  bool first_ = true;
};

void PrintCompdbUsage() {
  printf(
      "usage: ninja -t compdb [options] [rules]\n"
      "\n"
      "options:\n"
      "  -x     expand @rspfile style response file invocations\n");
}

void PrintCompdbTargetsUsage() {
  printf(
      "usage: ninja -t compdb [-hx] target [targets]\n"
      "\n"
      "options:\n"
      "  -h     display this help message\n"
      "  -x     expand @rspfile style response file invocations\n");
}

// Parses -x; false (after printing the usage) on -h or an invalid option.
bool ParseExpandOption(const ToolArgs& args, void (*usage)(), bool* expand, std::vector<std::string>* operands) {
  ToolOptionParser parser(args, "hx");
  for (int option; (option = parser.Next()) != -1;) {
    if (option != 'x') {
      usage();
      return false;
    }
    *expand = true;
  }
  *operands = parser.Operands();
  return true;
}

// Edges needed for `node`, inputs' edges first, each once; phony and input-less edges left out.
void CollectCompileEdges(const Node* node, std::set<const Edge*>* visited, std::vector<const Edge*>* edges) {
  const Edge* edge = node->in_edge;
  if (!edge || !visited->insert(edge).second) return;
  for (const Node* input : edge->inputs) CollectCompileEdges(input, visited, edges);
  if (!edge->is_phony() && !edge->inputs.empty()) edges->push_back(edge);
}

}  // namespace

int ToolCompilationDatabase(const ToolContext& context, const ToolArgs& args) {
  bool expand = false;
  std::vector<std::string> rules;
  if (!ParseExpandOption(args, PrintCompdbUsage, &expand, &rules)) return 1;
  CompdbWriter writer(expand);
  for (const auto& edge : context.state->edges) {
    if (edge->inputs.empty()) continue;
    if (rules.empty()) {
      writer.Add(*edge);
      continue;
    }
    // One entry per matching name: a rule named twice is listed twice, as ninja does.
    for (const std::string& rule : rules) {
      if (edge->rule->name() == rule) writer.Add(*edge);
    }
  }
  return 0;
}

int ToolCompilationDatabaseForTargets(const ToolContext& context, const ToolArgs& args) {
  bool expand = false;
  std::vector<std::string> names;
  if (!ParseExpandOption(args, PrintCompdbTargetsUsage, &expand, &names)) return 1;
  if (names.empty()) {
    PrintError("compdb-targets expects the name of at least one target");
    PrintCompdbTargetsUsage();
    return 1;
  }
  std::vector<const Node*> targets;
  for (const std::string& name : names) {
    std::string err;
    const Node* node = CollectTarget(context, name, &err);
    if (!node) Fatal(err);
    if (!node->in_edge)
      Fatal(fmt::format("'{}' is not a target (i.e. it is not an output of any `build` statement)", node->path));
    targets.push_back(node);
  }
  std::set<const Edge*> visited;
  std::vector<const Edge*> edges;
  for (const Node* target : targets) CollectCompileEdges(target, &visited, &edges);
  CompdbWriter writer(expand);
  for (const Edge* edge : edges) writer.Add(*edge);
  return 0;
}

}  // namespace headroom
