// Command-line priors: memory guesses per tool family before any measurement exists.
#include "headroom/estimator/priors.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include <fmt/format.h>

#include "headroom/estimator/exec_mode.h"
#include "headroom/util/byte_size.h"

namespace headroom {
namespace {

// Value of a flag given as "-f v", "-f=v" or (for single-letter short flags) "-fv"; empty when absent.
std::optional<std::string> FlagValue(const std::vector<std::string>& args, size_t* i,
                                     std::initializer_list<std::string_view> names, bool allow_glued) {
  const std::string& arg = args[*i];
  for (std::string_view name : names) {
    if (arg == name) {
      if (*i + 1 >= args.size()) return std::nullopt;
      return args[++*i];
    }
    if (arg.starts_with(name) && arg.size() > name.size()) {
      if (arg[name.size()] == '=') return arg.substr(name.size() + 1);
      if (allow_glued && name.size() == 2) return arg.substr(name.size());
    }
  }
  return std::nullopt;
}

int ArchListSize(std::string_view list) {
  if (list == "native") return 1;
  // "all" builds every supported architecture (~8 on CUDA 12); "all-major" the major ones (~4).
  if (list == "all") return 8;
  if (list == "all-major") return 4;
  return static_cast<int>(std::count(list.begin(), list.end(), ',')) + 1;
}

bool IsAllDigits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(c); });
}

bool HasArg(const CommandStep& step, std::initializer_list<std::string_view> names) {
  return std::any_of(step.args.begin(), step.args.end(), [&](const std::string& a) {
    return std::find(names.begin(), names.end(), a) != names.end();
  });
}

bool HasLto(const CommandStep& step) {
  return std::any_of(step.args.begin(), step.args.end(), [](const std::string& a) {
    return a.starts_with("-flto") || a.starts_with("--lto") || a.starts_with("-plugin-opt") || a == "-dlto";
  });
}

Prior NvccPrior(const CommandStep& step, const PriorConstants& c) {
  int pipelines = NvccParallelPipelines(step);
  bool cutlass = NvccUsesCutlass(step);
  uint64_t per_pipeline = cutlass ? c.nvcc_cutlass_per_pipeline : c.nvcc_per_pipeline;
  uint64_t pipelines_bytes = per_pipeline * static_cast<uint64_t>(pipelines);
  Prior prior{std::max(pipelines_bytes, c.nvcc_front_end), ToolFamily::kNvcc,
              fmt::format("nvcc: {} pipeline(s) x {}{}", pipelines, FormatBytes(per_pipeline),
                          cutlass ? " (CUTLASS)" : "")};
  if (pipelines_bytes < c.nvcc_front_end) prior.why += fmt::format(", front end {}", FormatBytes(c.nvcc_front_end));
  if (HasArg(step, {"-G", "--device-debug"})) {
    prior.peak_bytes = ScaleBytes(prior.peak_bytes, c.nvcc_device_debug_factor);
    prior.why += fmt::format(", x{} for -G", c.nvcc_device_debug_factor);
  }
  return prior;
}

Prior CompilerPrior(const CommandStep& step, const PriorConstants& c) {
  std::string level = "0";  // gcc and clang default to -O0.
  for (const std::string& arg : step.args) {
    if (arg.starts_with("-O")) level = arg.size() == 2 ? "1" : arg.substr(2);
  }
  uint64_t bytes = c.cxx_O2;
  if (level == "0" || level == "g") bytes = c.cxx_O0;
  if (level == "3" || level == "fast") bytes = c.cxx_O3;
  Prior prior{bytes, ToolFamily::kCompiler, fmt::format("{} -O{}: {}", step.tool, level, FormatBytes(bytes))};
  bool debug = std::any_of(step.args.begin(), step.args.end(), [](const std::string& a) {
    return a == "-g" || (a.starts_with("-g") && a.size() == 3 && std::isdigit(static_cast<unsigned char>(a[2])));
  });
  if (debug) {
    prior.peak_bytes = ScaleBytes(prior.peak_bytes, c.cxx_debug_info_factor);
    prior.why += fmt::format(", x{} for -g", c.cxx_debug_info_factor);
  }
  return prior;
}

Prior LinkerPrior(const CommandStep& step, std::string_view rspfile_content, const FileSizeFn& sizes,
                  const PriorConstants& c) {
  CommandStep with_rsp = step;
  for (std::string& word : SplitShellWords(rspfile_content)) with_rsp.args.push_back(std::move(word));
  uint64_t total = 0;
  int found = 0;
  if (sizes) {
    for (const std::string& input : InputFiles(with_rsp)) {
      if (std::optional<uint64_t> size = sizes(input)) {
        total += *size;
        ++found;
      }
    }
  }
  double factor = HasLto(with_rsp) ? c.lto_link_factor : c.linker_input_factor;
  if (found == 0) {
    return {c.linker_unknown_inputs, ToolFamily::kLinker,
            fmt::format("link with no input sizes known: {}", FormatBytes(c.linker_unknown_inputs))};
  }
  uint64_t bytes = std::max(ScaleBytes(total, factor), c.linker_floor);
  return {bytes, ToolFamily::kLinker,
          fmt::format("link: {} x {} inputs ({}), floor {}", factor, found, FormatBytes(total),
                      FormatBytes(c.linker_floor))};
}

Prior StepPrior(const CommandStep& step, std::string_view rspfile_content, const FileSizeFn& sizes,
                const PriorConstants& c) {
  switch (step.family) {
    case ToolFamily::kNvcc: return NvccPrior(step, c);
    case ToolFamily::kCompiler: return CompilerPrior(step, c);
    case ToolFamily::kLinker: return LinkerPrior(step, rspfile_content, sizes, c);
    case ToolFamily::kArchiver: return {c.archiver, ToolFamily::kArchiver, "archiver"};
    case ToolFamily::kUnknown: break;
  }
  return {c.unknown_tool, ToolFamily::kUnknown, fmt::format("unknown tool '{}'", step.tool)};
}

}  // namespace

int NvccTargetCount(const CommandStep& nvcc) {
  int gencodes = 0, arch_list = 0;
  for (size_t i = 0; i < nvcc.args.size(); ++i) {
    if (FlagValue(nvcc.args, &i, {"-gencode", "--generate-code"}, false)) {
      ++gencodes;
    } else if (std::optional<std::string> list = FlagValue(nvcc.args, &i, {"-arch", "--gpu-architecture"}, false)) {
      arch_list = std::max(arch_list, ArchListSize(*list));
    }
  }
  if (gencodes > 0) return gencodes;
  return std::max(arch_list, 1);
}

bool NvccUsesCutlass(const CommandStep& nvcc) {
  return std::any_of(nvcc.args.begin(), nvcc.args.end(), [](const std::string& arg) {
    std::string lower(arg);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
    return lower.find("cutlass") != std::string::npos;
  });
}

int NvccParallelPipelines(const CommandStep& nvcc) {
  int threads = 1;  // nvcc compiles targets one after another unless told otherwise.
  for (size_t i = 0; i < nvcc.args.size(); ++i) {
    const std::string& arg = nvcc.args[i];
    std::optional<std::string> value = FlagValue(nvcc.args, &i, {"--threads", "-t"}, false);
    if (!value && arg.starts_with("-t") && IsAllDigits(std::string_view(arg).substr(2))) value = arg.substr(2);
    if (value && IsAllDigits(*value)) threads = std::atoi(value->c_str());
  }
  int targets = NvccTargetCount(nvcc);
  if (threads <= 0) return targets;  // --threads 0: one thread per target (bounded by the CPU count).
  return std::min(threads, targets);
}

Prior PriorFromCommand(std::string_view command, std::string_view rspfile_content, const FileSizeFn& sizes,
                       const PriorConstants& constants) {
  Prior best{constants.unknown_tool, ToolFamily::kUnknown, "no command"};
  bool any = false;
  for (const CommandStep& step : ParseCommandSteps(command)) {
    Prior prior = StepPrior(step, rspfile_content, sizes, constants);
    prior.runs_in_compile_server = RunsInCompileServer(step);
    if (!any || prior.peak_bytes > best.peak_bytes) best = std::move(prior);
    any = true;
  }
  return best;
}

}  // namespace headroom
