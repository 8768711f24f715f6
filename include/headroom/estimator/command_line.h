// Reads a build command line the way the estimator needs it: shell-like splitting, peeling off `cd x &&`,
// env assignments and launchers (ccache, sccache, distcc...), recognising the tool family, and the job class key.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace headroom {

// Splits a /bin/sh command into words, honouring '...' and "..." quoting and backslash escapes.
// Control operators (&&, ||, ;, |, &) become words of their own so callers can split steps.
// Not a shell: no expansion, redirections stay attached to words; good enough to read flags.
std::vector<std::string> SplitShellWords(std::string_view command);

enum class ToolFamily {
  kNvcc,       // CUDA compiler driver: memory scales with parallel device pipelines.
  kCompiler,   // gcc/clang-like driver compiling (-c, -S, -E).
  kLinker,     // ld/lld/gold/mold, or a compiler driver / nvcc -dlink producing a binary.
  kArchiver,   // ar/ranlib: light.
  kUnknown,    // anything else (scripts, code generators, cmake -E ...).
};

const char* ToolFamilyName(ToolFamily family);
// Compilers, nvcc and linkers keep a CPU busy for their whole run; scripts and unknown tools may not.
bool IsComputeBound(ToolFamily family);

// One step of a command (the part between && / ; / ||), with wrappers removed.
struct CommandStep {
  std::string tool_path;          // as written, e.g. "/usr/local/cuda/bin/nvcc".
  std::string tool;               // basename, e.g. "nvcc", "x86_64-linux-gnu-g++-12".
  std::vector<std::string> args;  // arguments after the tool.
  ToolFamily family = ToolFamily::kUnknown;
  // What was peeled off in front of the tool, in order: launcher basenames ("ccache", "distcc"; CMake's
  // `__run_co_compile --launcher=X` gives X) and NAME=value assignments (CCACHE_PREFIX=distcc). The execution
  // mode (exec_mode.h) reads them; estimates do not.
  std::vector<std::string> launchers;
  std::vector<std::string> assignments;
};

// Every step of the command in order; `cd`, `true`, `:` and similar no-op steps are dropped.
std::vector<CommandStep> ParseCommandSteps(std::string_view command);

// The basename of a path ("/usr/bin/g++-12" -> "g++-12").
std::string_view Basename(std::string_view path);

// Family of a tool name alone (without looking at -c / -dlink); handles target prefixes and version
// suffixes: "x86_64-linux-gnu-g++-12" and "clang++-17" are compilers, "ld.lld" a linker.
ToolFamily ClassifyToolName(std::string_view tool);

// Flags of `step` with file names removed: positional inputs, the values of -o, -MF, -MT, -MQ, -I, -isystem,
// -iquote, -idirafter, -include and dependency-file switches are dropped; inputs are replaced by their
// extensions (".cu") so a .cu and a .cpp compiled by the same driver stay apart. Defines, -gencode/-arch
// sets, -O levels and --threads are kept: they decide memory.
std::vector<std::string> FlagsWithoutFiles(const CommandStep& step);

// Positional (non-flag) arguments that name input files, for linkers' input-size lookups.
std::vector<std::string> InputFiles(const CommandStep& step);

// The job class: rule name + tool + FlagsWithoutFiles of the heaviest step, joined with spaces.
// Jobs of one class are expected to need similar memory (e.g. all flash-attn kernels with one -gencode set).
std::string JobClassKey(std::string_view rule, std::string_view command);

// The job family: a class key without the values of its defines ("-DVARIANT=3" -> "-DVARIANT"; also "-D NAME=1"
// and --define-macro). Translation units generated from one template (flash-attn's kernels, a benchmark's
// variants) differ only in file names and define values, so one measured member tells about the others. A define
// that is present or not (-DMOE_FULL) still splits families: it often switches whole kernels on. Include paths
// and file names are already absent from class keys.
std::string FamilyKeyOfClassKey(std::string_view class_key);

// Index of the step that dominates memory (nvcc > linker > compiler > others; ties: the last one).
size_t DominantStep(const std::vector<CommandStep>& steps);

}  // namespace headroom
