// Helpers shared by the `-t` tools: option parsing, target lookup, spelling hints, JSON escaping
// and compdb's rspfile expansion.
#include "headroom/tools/tool_support.h"

#include <cstdio>

#include "headroom/logs/deps_log.h"
#include "headroom/util/messages.h"
#include "headroom/util/path.h"

namespace headroom {

ToolOptionParser::ToolOptionParser(const std::vector<std::string>& args, const char* short_options,
                                   const struct option* long_options)
    : storage_(args), short_options_(short_options), long_options_(long_options) {
  for (std::string& arg : storage_) argv_.push_back(arg.data());
  argv_.push_back(nullptr);
  // optind = 0 makes glibc forget any state left by the main command line's parse.
  optind = 0;
  opterr = 1;
}

int ToolOptionParser::Next() {
  static const struct option kNoLongOptions[] = {{nullptr, 0, nullptr, 0}};
  return getopt_long(static_cast<int>(argv_.size()) - 1, argv_.data(), short_options_,
                     long_options_ ? long_options_ : kNoLongOptions, nullptr);
}

std::vector<std::string> ToolOptionParser::Operands() const {
  std::vector<std::string> operands;
  for (size_t i = static_cast<size_t>(optind); i + 1 < argv_.size(); ++i) operands.emplace_back(argv_[i]);
  return operands;
}

namespace {

std::string UnknownTargetMessage(const ToolContext& context, const std::string& path) {
  std::string message = "unknown target '" + path + "'";
  if (path == "clean") return message + ", did you mean 'ninja -t clean'?";
  if (path == "help") return message + ", did you mean 'ninja -h'?";
  if (Node* suggestion = context.state->SpellcheckNode(path)) message += ", did you mean '" + suggestion->path + "'?";
  return message;
}

// `path^`: the first output of the first edge that uses `node`, or one whose recorded deps do.
Node* FirstDependentOutput(const ToolContext& context, Node* node, const std::string& path, std::string* err) {
  if (!node->out_edges.empty()) return node->out_edges[0]->outputs[0];
  Node* reverse = context.deps_log ? context.deps_log->GetFirstReverseDepsNode(node) : nullptr;
  if (!reverse) *err = "'" + path + "' has no out edge";
  return reverse;
}

}  // namespace

Node* CollectTarget(const ToolContext& context, const std::string& name, std::string* err) {
  std::string path = name;
  if (path.empty()) {
    *err = "empty path";
    return nullptr;
  }
  CanonicalizePath(&path, err);
  bool first_dependent = !path.empty() && path.back() == '^';
  if (first_dependent) path.pop_back();
  Node* node = context.state->LookupNode(path);
  if (!node) {
    *err = UnknownTargetMessage(context, path);
    return nullptr;
  }
  return first_dependent ? FirstDependentOutput(context, node, path, err) : node;
}

bool CollectTargets(const ToolContext& context, const std::vector<std::string>& names, std::vector<Node*>* targets,
                    std::string* err) {
  if (names.empty()) {
    *targets = context.state->DefaultNodes(err);
    return err->empty();
  }
  for (const std::string& name : names) {
    Node* node = CollectTarget(context, name, err);
    if (!node) return false;
    targets->push_back(node);
  }
  return true;
}

const char* SpellcheckWord(std::string_view word, const std::vector<const char*>& candidates) {
  constexpr int kMaxHintDistance = 3;
  int best = kMaxHintDistance + 1;
  const char* hint = nullptr;
  for (const char* candidate : candidates) {
    int distance = EditDistance(candidate, word, true, kMaxHintDistance);
    if (distance < best) {
      best = distance;
      hint = candidate;
    }
  }
  return hint;
}

void AppendJsonEscaped(std::string_view text, std::string* out) {
  for (unsigned char c : text) {
    switch (c) {
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      case '\\': out->append("\\\\"); break;
      case '"': out->append("\\\""); break;
      default:
        if (c < 0x20) {
          char escaped[8];
          snprintf(escaped, sizeof escaped, "\\u%04x", c);
          out->append(escaped);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
}

namespace {

// How the command names the rspfile at `index`: the length of the prefix to replace along with
// it ("@", "-f ", "--option-file="), or 0 when it is not a response-file reference. ninja only
// looks at the first "-f " / "--option-file=" in the whole command, and so do we.
size_t RspfileReferencePrefix(const std::string& command, size_t index) {
  static constexpr std::string_view kShortFlag = "-f ";
  static constexpr std::string_view kLongFlag = "--option-file=";
  if (command[index - 1] == '@') return 1;
  if (index >= kShortFlag.size() && command.find(kShortFlag) == index - kShortFlag.size()) return kShortFlag.size();
  if (index >= kLongFlag.size() && command.find(kLongFlag) == index - kLongFlag.size()) return kLongFlag.size();
  return 0;
}

}  // namespace

std::string CompdbCommand(const Edge& edge, bool expand_rspfile) {
  std::string command = edge.EvaluateCommand();
  if (!expand_rspfile) return command;
  const std::string rspfile = edge.GetUnescapedRspfile();
  if (rspfile.empty()) return command;
  const size_t index = command.find(rspfile);
  if (index == 0 || index == std::string::npos) return command;
  const size_t prefix = RspfileReferencePrefix(command, index);
  if (prefix == 0) return command;
  std::string content = edge.GetBinding("rspfile_content");
  for (char& c : content) {
    if (c == '\n') c = ' ';
  }
  command.replace(index - prefix, rspfile.size() + prefix, content);
  return command;
}

}  // namespace headroom
