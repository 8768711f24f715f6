// Owns what every launch path builds the same way: a job's `/bin/sh -c` argv, its environment (headroom's with the
// job's overrides), and whether a child may run on headroom's memory (not in sanitized builds).
#pragma once

#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace headroom::exec_internal {

inline constexpr const char* kShell = "/bin/sh";

struct ShellArgv {
  explicit ShellArgv(const std::string& command)
      : argv{const_cast<char*>(kShell), const_cast<char*>("-c"), const_cast<char*>(command.c_str()), nullptr} {}
  char* argv[4];
};

// The job's environment: headroom's, with `overrides` ("NAME=value") replacing or adding to it. Pointers into
// `environ` and into `overrides`; valid while both are.
class JobEnvironment {
 public:
  explicit JobEnvironment(const std::vector<std::string>& overrides) {
    if (overrides.empty()) return;
    for (char** entry = environ; *entry; ++entry) {
      if (!Overridden(*entry, overrides)) pointers_.push_back(*entry);
    }
    for (const std::string& assignment : overrides) pointers_.push_back(const_cast<char*>(assignment.c_str()));
    pointers_.push_back(nullptr);
  }
  char** envp() { return pointers_.empty() ? environ : pointers_.data(); }

 private:
  static bool Overridden(const char* entry, const std::vector<std::string>& overrides) {
    for (const std::string& assignment : overrides) {
      size_t name_length = assignment.find('=');
      if (name_length == std::string::npos) continue;
      if (std::strncmp(entry, assignment.c_str(), name_length + 1) == 0) return true;
    }
    return false;
  }
  std::vector<char*> pointers_;
};

// Sanitizer runtimes intercept sigaction and friends and keep state in memory a child would share with headroom, so
// sanitized builds never run a child on headroom's memory: they fork, or do without what needs it.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kShareMemoryWithChild = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
inline constexpr bool kShareMemoryWithChild = false;
#else
inline constexpr bool kShareMemoryWithChild = true;
#endif
#else
inline constexpr bool kShareMemoryWithChild = true;
#endif

}  // namespace headroom::exec_internal
