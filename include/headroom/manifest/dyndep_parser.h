// Dyndep files: `ninja_dyndep_version = 1` then one `build out | imp-outs : dyndep | imp-ins` per edge.
// The parser only records what each statement adds (DyndepFile); the scan module applies it to the graph.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "headroom/graph/graph.h"
#include "headroom/manifest/lexer.h"

namespace headroom {

class DiskInterface;

// What one dyndep statement adds to an edge.
struct Dyndeps {
  bool used = false;
  bool restat = false;
  std::vector<Node*> implicit_inputs;
  std::vector<Node*> implicit_outputs;
};

using DyndepFile = std::map<Edge*, Dyndeps>;

class DyndepParser {
 public:
  DyndepParser(State* state, DiskInterface* disk, DyndepFile* dyndep_file);
  // Reads and parses `filename`; a read failure is "loading 'file': reason".
  bool Load(const std::string& filename, std::string* err);
  // Parses `input` as the file "input" (tests).
  bool ParseTest(const std::string& input, std::string* err);
  // Parses `contents` (a NUL-terminated buffer) as `filename`.
  bool Parse(const std::string& filename, const std::string& contents, std::string* err);

 private:
  bool ParseDyndepVersion(std::string* err);
  bool ParseLet(std::string_view* key, LexedString* value, std::string* err);
  bool ParseEdge(std::string* err);
  // Reads the explicit output and returns the record of the edge that produces it.
  bool ParseEdgeOutput(Dyndeps** dyndeps, std::string* err);
  bool ParseRestatBinding(Dyndeps* dyndeps, std::string* err);
  bool ReadPathList(std::vector<LexedString>* list, std::string* err);
  // Evaluates, checks and canonicalises each path and appends its node to *nodes.
  bool AddNodes(const std::vector<LexedString>& paths, std::vector<Node*>* nodes, std::string* err);
  bool ExpectToken(Lexer::Token expected, std::string* err);

  State* state_;
  DiskInterface* disk_;
  DyndepFile* dyndep_file_;
  Lexer lexer_;
  // Dyndep files have no variables of their own; references evaluate to "".
  BindingEnv env_;
  std::string test_input_;
};

}  // namespace headroom
