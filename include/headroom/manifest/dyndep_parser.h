// Dyndep files: `ninja_dyndep_version = 1` then one `build out | imp-outs : dyndep | imp-ins` per edge.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "headroom/graph/graph.h"

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
  bool Load(const std::string& filename, std::string* err);
  bool ParseTest(const std::string& input, std::string* err);

 private:
  State* state_;
  DiskInterface* disk_;
  DyndepFile* dyndep_file_;
};

}  // namespace headroom
