// Removing built files for `-t clean` and `-t cleandead`: which files go, in which order, and
// the "Cleaning... N files." report (verbose and dry runs list each "Remove path").
#pragma once

#include <set>
#include <string>
#include <vector>

#include "headroom/tools/tool.h"

namespace headroom {

class BuildLog;

class Cleaner {
 public:
  explicit Cleaner(const ToolContext& context);

  // Every output of every non-phony edge (generator outputs only with `include_generator_outputs`),
  // plus depfiles and rspfiles. Returns the exit status.
  int CleanAll(bool include_generator_outputs);
  // The named targets and, recursively, everything they are built from.
  int CleanTargets(const std::vector<std::string>& targets);
  // Every output of the edges using the named (top-level) rules.
  int CleanRules(const std::vector<std::string>& rules);
  // Logged outputs the manifest no longer mentions at all.
  int CleanDead(const BuildLog& build_log);

  int cleaned_files_count() const { return cleaned_files_count_; }

 private:
  bool IsVerbose() const;
  void PrintHeader();
  void PrintFooter();
  // Loads dyndep files that still exist so the outputs they add get cleaned too.
  void LoadDyndeps();
  void Remove(const std::string& path);
  void RemoveEdgeFiles(const Edge& edge);
  void CleanTarget(Node* target);
  void CleanRule(const std::string& rule_name);
  bool FileExists(const std::string& path) const;
  void Report(const std::string& path);

  const ToolContext& context_;
  std::set<std::string> removed_;
  std::set<const Node*> visited_targets_;
  int cleaned_files_count_ = 0;
  int status_ = 0;
};

}  // namespace headroom
