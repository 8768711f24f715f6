// `-d explain`: why each node or edge is dirty. 1.13 prints them just before the edge's command runs,
// so they are recorded per item during the scan and fetched by the status printer.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

namespace headroom {

class Explanations {
 public:
  template <typename... Args>
  void Record(const void* item, fmt::format_string<Args...> format, Args&&... args) {
    map_[item].push_back(fmt::format(format, std::forward<Args>(args)...));
  }
  // Appends the explanations of `item` to *out.
  void LookupAndAppend(const void* item, std::vector<std::string>* out) const {
    auto it = map_.find(item);
    if (it != map_.end()) out->insert(out->end(), it->second.begin(), it->second.end());
  }

 private:
  std::unordered_map<const void*, std::vector<std::string>> map_;
};

// Records only when explaining is on; the scan holds one of these and pays nothing otherwise.
class OptionalExplanations {
 public:
  explicit OptionalExplanations(Explanations* explanations) : explanations_(explanations) {}
  template <typename... Args>
  void Record(const void* item, fmt::format_string<Args...> format, Args&&... args) {
    if (explanations_) explanations_->Record(item, format, std::forward<Args>(args)...);
  }
  Explanations* get() const { return explanations_; }

 private:
  Explanations* explanations_;
};

}  // namespace headroom
