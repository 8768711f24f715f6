// Shell-like splitting of build commands, wrapper/launcher peeling, tool-family detection and job class keys.
#include "headroom/estimator/command_line.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <set>

namespace headroom {
namespace {

struct Token {
  std::string text;
  bool is_operator = false;  // &&, ||, ;, |, & or a newline outside quotes.
};

bool IsOperatorChar(char c) { return c == '&' || c == '|' || c == ';' || c == '\n'; }

// A '&' right after '>' or '<' belongs to a redirection such as 2>&1, not to an operator.
bool IsRedirectionAmpersand(const std::string& word, char c) {
  return c == '&' && !word.empty() && (word.back() == '>' || word.back() == '<');
}

std::vector<Token> Tokenize(std::string_view command) {
  std::vector<Token> tokens;
  std::string word;
  bool in_word = false;  // distinguishes "" (an empty quoted word) from nothing.
  auto flush = [&] {
    if (in_word) tokens.push_back({word, false});
    word.clear();
    in_word = false;
  };
  for (size_t i = 0; i < command.size(); ++i) {
    char c = command[i];
    if (c == '\'') {
      size_t end = command.find('\'', i + 1);
      if (end == std::string_view::npos) end = command.size();
      word.append(command.substr(i + 1, end - i - 1));
      in_word = true;
      i = end;
    } else if (c == '"') {
      in_word = true;
      for (++i; i < command.size() && command[i] != '"'; ++i) {
        // Inside double quotes a backslash only escapes the characters the shell treats specially there.
        if (command[i] == '\\' && i + 1 < command.size() && std::string_view("\"\\$`").find(command[i + 1]) !=
                                                                 std::string_view::npos) {
          ++i;
        }
        word += command[i];
      }
    } else if (c == '\\' && i + 1 < command.size()) {
      if (command[i + 1] != '\n') word += command[i + 1];  // backslash-newline is a line continuation.
      in_word = true;
      ++i;
    } else if (IsOperatorChar(c) && !IsRedirectionAmpersand(word, c)) {
      flush();
      std::string op(1, c);
      if ((c == '&' || c == '|') && i + 1 < command.size() && command[i + 1] == c) op += command[++i];
      tokens.push_back({op, true});
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      flush();
    } else {
      word += c;
      in_word = true;
    }
  }
  flush();
  return tokens;
}

bool IsEnvAssignment(std::string_view word) {
  size_t eq = word.find('=');
  if (eq == std::string_view::npos || eq == 0) return false;
  if (!(std::isalpha(static_cast<unsigned char>(word[0])) || word[0] == '_')) return false;
  return std::all_of(word.begin(), word.begin() + eq,
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool IsOneOf(std::string_view word, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), word) != names.end();
}

// Compiler caches and distributors that run the next word as the real compiler.
bool IsLauncher(std::string_view tool) {
  return IsOneOf(tool, {"ccache", "sccache", "distcc", "icecc", "buildcache", "pump", "clcache", "cachecc1",
                        "firebuild", "ccache-swig"});
}

// Programs that run the rest of their arguments as a command after their own options.
bool IsRunner(std::string_view tool) { return IsOneOf(tool, {"env", "nice", "ionice", "nohup", "time", "command",
                                                             "exec", "stdbuf", "taskset", "timeout", "chrt"}); }

// Skips a runner's own options (and values of the few options that take one) and env assignments.
size_t SkipRunnerOptions(std::string_view runner, const std::vector<std::string>& words, size_t pos) {
  while (pos < words.size()) {
    const std::string& w = words[pos];
    if (w == "--") return pos + 1;
    if (IsEnvAssignment(w)) { ++pos; continue; }
    if (w.size() > 1 && w[0] == '-') {
      bool takes_value = (w == "-n" && (runner == "nice" || runner == "ionice")) ||
                         (w == "-c" && runner == "ionice") || (w == "-u" && runner == "env") ||
                         (w == "-s" && runner == "timeout") || (w == "-k" && runner == "timeout");
      pos += takes_value ? 2 : 1;
      continue;
    }
    // taskset MASK cmd / timeout DURATION cmd / chrt PRIO cmd: one positional before the command.
    if (IsOneOf(runner, {"taskset", "timeout", "chrt"}) &&
        std::isdigit(static_cast<unsigned char>(w[0]))) {
      ++pos;
      continue;
    }
    return pos;
  }
  return pos;
}

bool IsNoOpStep(std::string_view tool) {
  return IsOneOf(tool, {"cd", "true", ":", "pushd", "popd", "export", "set", "echo", "mkdir", "rm", "touch"});
}

std::string StripVersionSuffix(std::string_view name) {
  // "g++-12" -> "g++", "clang++-17.0" -> "clang++": a trailing -digits[.digits] is a version.
  std::string result(name);
  while (true) {
    size_t dash = result.rfind('-');
    if (dash == std::string::npos || dash + 1 == result.size()) return result;
    std::string_view tail = std::string_view(result).substr(dash + 1);
    bool is_version = std::isdigit(static_cast<unsigned char>(tail[0])) &&
                      std::all_of(tail.begin(), tail.end(),
                                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
    if (!is_version) return result;
    result.resize(dash);
  }
}

ToolFamily FamilyOfBareName(std::string_view name) {
  if (name == "nvcc") return ToolFamily::kNvcc;
  if (IsOneOf(name, {"gcc", "g++", "cc", "c++", "clang", "clang++", "icpx", "icx", "icc", "icpc", "nvc", "nvc++",
                     "hipcc", "mpicc", "mpicxx", "mpic++", "gfortran", "zig"})) {
    return ToolFamily::kCompiler;
  }
  if (IsOneOf(name, {"ld", "lld", "ld.lld", "ld.gold", "gold", "ld.bfd", "mold", "ld.mold", "ld64.lld", "lld-link",
                     "wasm-ld", "nvlink"})) {
    return ToolFamily::kLinker;
  }
  if (IsOneOf(name, {"ar", "ranlib", "llvm-ar", "gcc-ar", "llvm-ranlib", "gcc-ranlib"})) return ToolFamily::kArchiver;
  return ToolFamily::kUnknown;
}

// Compile-only switches: without one of them a compiler driver links.
bool HasCompileOnlySwitch(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return IsOneOf(a, {"-c", "-S", "-E", "-M", "-MM", "-fsyntax-only", "--compile", "-cubin", "-ptx", "-fatbin",
                       "--cubin", "--ptx", "--fatbin", "--preprocess", "-optix-ir", "-lto"});
  });
}

bool HasDeviceLinkSwitch(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(),
                     [](const std::string& a) { return a == "-dlink" || a == "--device-link"; });
}

ToolFamily FamilyOfStep(const CommandStep& step) {
  ToolFamily family = ClassifyToolName(step.tool);
  if (family == ToolFamily::kNvcc) {
    bool compiles = HasCompileOnlySwitch(step.args) ||
                    std::any_of(step.args.begin(), step.args.end(), [](const std::string& a) {
                      return a.size() > 3 && a.compare(a.size() - 3, 3, ".cu") == 0;
                    });
    return (HasDeviceLinkSwitch(step.args) || !compiles) ? ToolFamily::kLinker : ToolFamily::kNvcc;
  }
  if (family == ToolFamily::kCompiler && !HasCompileOnlySwitch(step.args)) return ToolFamily::kLinker;
  return family;
}

// Flags whose value (separate word or attached) is a path: dropped from class keys, never inputs.
constexpr std::array kPathValueFlags = {
    "-o", "-MF", "-MT", "-MQ", "-I", "-isystem", "-iquote", "-idirafter", "-include", "-imacros", "-isysroot",
    "--sysroot", "-L", "-T", "-Map", "-rpath", "-rpath-link", "-soname", "-h", "--version-script", "--dynamic-list",
    "-plugin", "--output-file", "--include-path", "-odir", "--dependency-output", "--pre-include", "-ccbin",
    "--compiler-bindir", "--options-file", "--library-path", "-dependency-target-name", "-module-file",
    "--dependency-target-name", "-time", "--time"};

// Flags whose separate value matters for memory (kept in class keys, never inputs).
constexpr std::array kKeptValueFlags = {
    "-D", "-U", "-x", "-gencode", "--generate-code", "-arch", "--gpu-architecture", "-code", "--gpu-code",
    "--threads", "-Xcompiler", "--compiler-options", "-Xlinker", "--linker-options", "-Xptxas", "--ptxas-options",
    "-Xcudafe", "-Xnvlink", "--nvlink-options", "-Xarchive", "-Xclang", "-Xfatbin", "-m", "-z", "-e", "-u", "-l",
    "--library", "-target", "--target", "-mllvm", "-Xassembler", "-Xpreprocessor", "-maxrregcount",
    "--maxrregcount", "--default-stream", "-default-stream", "-rdc", "--relocatable-device-code", "--split-compile",
    "-split-compile", "-diag-suppress", "--diag-suppress", "-std", "--std", "-Werror", "-ftz", "-prec-div",
    "-prec-sqrt", "-fmad", "--use_fast_math", "--machine"};

bool Contains(const auto& list, std::string_view word) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

// Attached forms like -I/path, -o out.o, --output-file=x, -MFdep.d.
bool IsAttachedPathFlag(std::string_view arg) {
  for (std::string_view flag : kPathValueFlags) {
    if (arg.size() <= flag.size() || arg.substr(0, flag.size()) != flag) continue;
    if (flag.substr(0, 2) == "--") {
      if (arg[flag.size()] == '=') return true;
    } else if (flag.size() == 2 || arg[flag.size()] == '=') {
      // Single-letter flags take attached values ("-Ifoo"); longer single-dash ones only with '='.
      return flag != "-h" && flag != "-T";  // -h/-T prefix other flags (-hidden..., -Tdata); only separate.
    }
  }
  return false;
}

bool IsDependencySwitch(std::string_view arg) {
  return IsOneOf(arg, {"-MD", "-MMD", "-MP", "--generate-dependencies-with-compile",
                       "--generate-nonsystem-dependencies-with-compile", "-MG"});
}

// nvcc's "-t N" means threads; for ld "-t" is --trace with no value.
bool TakesSeparateValue(const CommandStep& step, std::string_view arg) {
  if (arg == "-t") return step.family == ToolFamily::kNvcc;
  if (arg == "-m" || arg == "-z" || arg == "-e" || arg == "-u" || arg == "-h" || arg == "-T") {
    return step.family == ToolFamily::kLinker && ClassifyToolName(step.tool) == ToolFamily::kLinker;
  }
  return Contains(kPathValueFlags, arg) || Contains(kKeptValueFlags, arg);
}

std::string ExtensionOf(std::string_view path) {
  std::string_view base = Basename(path);
  size_t dot = base.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return "<file>";
  return std::string(base.substr(dot));
}

bool LooksLikePath(std::string_view word) {
  return word.find('/') != std::string_view::npos || word.find('.') != std::string_view::npos;
}

int FamilyRank(ToolFamily family) {
  switch (family) {
    case ToolFamily::kNvcc: return 4;
    case ToolFamily::kLinker: return 3;
    case ToolFamily::kCompiler: return 2;
    case ToolFamily::kUnknown: return 1;
    case ToolFamily::kArchiver: return 0;
  }
  return 0;
}

void AppendSteps(std::string_view command, int depth, std::vector<CommandStep>* steps);

// CMake's `--launcher=` value is a ;-list ("ccache;distcc" for a chain); keeps the launchers' basenames.
void AppendLauncherList(std::string_view list, std::vector<std::string>* launchers) {
  while (!list.empty()) {
    size_t semi = list.find(';');
    std::string_view item = list.substr(0, semi);
    if (!item.empty()) launchers->emplace_back(Basename(item));
    list = semi == std::string_view::npos ? std::string_view() : list.substr(semi + 1);
  }
}

// Turns the words of one step into a CommandStep, peeling runners, env assignments and launchers.
void AddStep(const std::vector<std::string>& words, int depth, std::vector<CommandStep>* steps) {
  size_t pos = 0;
  std::vector<std::string> launchers, assignments;
  while (pos < words.size()) {
    const std::string& word = words[pos];
    std::string_view tool = Basename(word);
    if (IsEnvAssignment(word)) {
      assignments.push_back(word);
      ++pos;
    } else if (IsRunner(tool) || IsLauncher(tool)) {
      if (IsLauncher(tool)) launchers.emplace_back(tool);
      size_t options_end = SkipRunnerOptions(tool, words, pos + 1);
      for (size_t i = pos + 1; i < options_end; ++i)
        if (IsEnvAssignment(words[i])) assignments.push_back(words[i]);
      pos = options_end;
    } else if (tool == "cmake" && pos + 2 < words.size() && words[pos + 1] == "-E" &&
               (words[pos + 2] == "__run_co_compile" || words[pos + 2] == "env")) {
      // CMake's own launchers: "cmake -E __run_co_compile --launcher=ccache ... -- cc ..." and
      // "cmake -E env [--unset=X] A=b cmd ...".
      auto dashes = std::find(words.begin() + pos + 3, words.end(), "--");
      for (auto it = words.begin() + static_cast<long>(pos) + 3; it < dashes; ++it)
        if (it->rfind("--launcher=", 0) == 0) AppendLauncherList(it->substr(11), &launchers);
      if (words[pos + 2] == "__run_co_compile" && dashes != words.end()) {
        pos = static_cast<size_t>(dashes - words.begin()) + 1;
      } else {
        pos += 3;
        while (pos < words.size() && (IsEnvAssignment(words[pos]) || words[pos].rfind("--unset=", 0) == 0)) {
          if (IsEnvAssignment(words[pos])) assignments.push_back(words[pos]);
          ++pos;
        }
      }
    } else {
      break;
    }
  }
  if (pos >= words.size()) return;
  std::string_view tool = Basename(words[pos]);
  bool is_shell = IsOneOf(tool, {"sh", "bash", "dash", "zsh"});
  if (is_shell && pos + 2 < words.size() && words[pos + 1] == "-c" && depth < 4) {
    AppendSteps(words[pos + 2], depth + 1, steps);
    return;
  }
  if (IsNoOpStep(tool)) return;
  CommandStep step;
  step.tool_path = words[pos];
  step.tool = std::string(tool);
  step.args.assign(words.begin() + static_cast<long>(pos) + 1, words.end());
  step.family = FamilyOfStep(step);
  step.launchers = std::move(launchers);
  step.assignments = std::move(assignments);
  steps->push_back(std::move(step));
}

void AppendSteps(std::string_view command, int depth, std::vector<CommandStep>* steps) {
  std::vector<std::string> words;
  for (Token& token : Tokenize(command)) {
    if (token.is_operator) {
      AddStep(words, depth, steps);
      words.clear();
    } else {
      words.push_back(std::move(token.text));
    }
  }
  AddStep(words, depth, steps);
}

}  // namespace

std::vector<std::string> SplitShellWords(std::string_view command) {
  std::vector<std::string> words;
  for (Token& token : Tokenize(command)) words.push_back(std::move(token.text));
  return words;
}

const char* ToolFamilyName(ToolFamily family) {
  switch (family) {
    case ToolFamily::kNvcc: return "nvcc";
    case ToolFamily::kCompiler: return "compiler";
    case ToolFamily::kLinker: return "linker";
    case ToolFamily::kArchiver: return "archiver";
    case ToolFamily::kUnknown: return "unknown";
  }
  return "unknown";
}

bool IsComputeBound(ToolFamily family) {
  return family == ToolFamily::kNvcc || family == ToolFamily::kCompiler || family == ToolFamily::kLinker;
}

std::string_view Basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

ToolFamily ClassifyToolName(std::string_view tool) {
  std::string name = StripVersionSuffix(tool);
  ToolFamily family = FamilyOfBareName(name);
  if (family != ToolFamily::kUnknown) return family;
  // Cross toolchains prefix the target triple: "x86_64-linux-gnu-g++", "aarch64-none-elf-ld.bfd".
  size_t dash = name.rfind('-');
  if (dash == std::string::npos) return ToolFamily::kUnknown;
  family = FamilyOfBareName(std::string_view(name).substr(dash + 1));
  if (family != ToolFamily::kUnknown) return family;
  // Two-part names after a triple: "x86_64-linux-gnu-gcc-ar".
  size_t previous = name.rfind('-', dash - 1);
  if (previous == std::string::npos) return ToolFamily::kUnknown;
  return FamilyOfBareName(std::string_view(name).substr(previous + 1));
}

std::vector<CommandStep> ParseCommandSteps(std::string_view command) {
  std::vector<CommandStep> steps;
  AppendSteps(command, 0, &steps);
  return steps;
}

std::vector<std::string> FlagsWithoutFiles(const CommandStep& step) {
  std::vector<std::string> flags;
  std::set<std::string> input_extensions;
  for (size_t i = 0; i < step.args.size(); ++i) {
    const std::string& arg = step.args[i];
    if (arg.size() > 1 && arg[0] == '@') {
      flags.push_back("@rsp");
    } else if (TakesSeparateValue(step, arg)) {
      bool drop = Contains(kPathValueFlags, arg);
      if (!drop) flags.push_back(arg);
      if (i + 1 < step.args.size() && !drop) flags.push_back(step.args[i + 1]);
      ++i;
    } else if (IsDependencySwitch(arg) || IsAttachedPathFlag(arg)) {
      continue;
    } else if (arg.size() > 1 && arg[0] == '-') {
      flags.push_back(arg);
    } else if (LooksLikePath(arg)) {
      input_extensions.insert(ExtensionOf(arg));
    } else {
      flags.push_back(arg);  // a bare word such as a subcommand ("cmake -E copy").
    }
  }
  for (const std::string& extension : input_extensions) flags.push_back(extension);
  return flags;
}

std::vector<std::string> InputFiles(const CommandStep& step) {
  std::vector<std::string> inputs;
  for (size_t i = 0; i < step.args.size(); ++i) {
    const std::string& arg = step.args[i];
    if (TakesSeparateValue(step, arg)) {
      ++i;
    } else if (!arg.empty() && arg[0] != '-' && arg[0] != '@') {
      inputs.push_back(arg);
    }
  }
  return inputs;
}

size_t DominantStep(const std::vector<CommandStep>& steps) {
  size_t best = 0;
  for (size_t i = 1; i < steps.size(); ++i) {
    if (FamilyRank(steps[i].family) >= FamilyRank(steps[best].family)) best = i;
  }
  return best;
}

std::string JobClassKey(std::string_view rule, std::string_view command) {
  std::vector<CommandStep> steps = ParseCommandSteps(command);
  std::string key(rule);
  if (steps.empty()) return key + " <no-op>";
  const CommandStep& step = steps[DominantStep(steps)];
  key += ' ';
  key += StripVersionSuffix(step.tool);
  for (const std::string& flag : FlagsWithoutFiles(step)) {
    key += ' ';
    key += flag;
  }
  return key;
}

namespace {

// "-DNAME=VALUE" -> "-DNAME"; "--define-macro=NAME=VALUE" -> "--define-macro=NAME"; anything else unchanged.
std::string_view WithoutDefineValue(std::string_view word, size_t name_start) {
  size_t eq = word.find('=', name_start);
  return eq == std::string_view::npos ? word : word.substr(0, eq);
}

}  // namespace

std::string FamilyKeyOfClassKey(std::string_view class_key) {
  std::string family;
  family.reserve(class_key.size());
  bool value_follows = false;  // the previous word was a bare -D or --define-macro
  size_t start = 0;
  for (int index = 0; start <= class_key.size(); ++index) {
    size_t end = class_key.find(' ', start);
    if (end == std::string_view::npos) end = class_key.size();
    std::string_view word = class_key.substr(start, end - start);
    start = end + 1;
    // The rule and the tool (the first two words) are never flags, whatever they are called.
    if (value_follows) {
      word = WithoutDefineValue(word, 0);
      value_follows = false;
    } else if (index >= 2 && (word == "-D" || word == "--define-macro")) {
      value_follows = true;
    } else if (index >= 2 && word.starts_with("-D")) {
      word = WithoutDefineValue(word, 2);
    } else if (index >= 2 && word.starts_with("--define-macro=")) {
      word = WithoutDefineValue(word, std::string_view("--define-macro=").size());
    }
    if (index > 0) family += ' ';
    family.append(word);
  }
  return family;
}

}  // namespace headroom
