// Memory priors read from a command line, used before anything was measured: nvcc by parallel device
// pipelines, C/C++ compilers by -O level, linkers by input size, a modest default for everything else.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "headroom/estimator/command_line.h"
#include "headroom/util/byte_size.h"

namespace headroom {

// Size of a file on disk, nullopt when it is missing (inputs of a link that are not built yet).
using FileSizeFn = std::function<std::optional<uint64_t>(const std::string& path)>;

// The figures priors are built from; docs/scheduling.md says where each comes from.
struct PriorConstants {
  // nvcc, per device pipeline (cicc then ptxas for one target), measured with nvcc 13 (table: docs/priors.md):
  // CUTLASS/CuTe translation units (flash-attn, vLLM, xformers kernels; recognised by a cutlass include path)
  // and everything else (CUB/Thrust-heavy code peaked at ~0.75 GiB per pipeline). The front end (cudafe++, the
  // host compiler) runs before the pipelines and is a floor for a single one.
  uint64_t nvcc_per_pipeline = 1 * kGiB;
  uint64_t nvcc_cutlass_per_pipeline = 6 * kGiB;
  uint64_t nvcc_front_end = 640 * kMiB;
  double nvcc_device_debug_factor = 1.5;   // -G keeps every variable alive and disables ptxas optimisation.
  uint64_t cxx_O0 = 512 * kMiB;            // ~p90 of ordinary C++ TUs (median 0.3 GiB, p95 0.8 GiB).
  uint64_t cxx_O2 = 768 * kMiB;
  uint64_t cxx_O3 = 1 * kGiB;
  double cxx_debug_info_factor = 1.25;     // -g: DWARF for every instantiated template.
  double linker_input_factor = 2.0;        // lld/gold/bfd hold inputs plus output: ~2x inputs.
  double lto_link_factor = 4.0;            // -flto links re-run codegen for the whole program.
  uint64_t linker_floor = 256 * kMiB;
  uint64_t linker_unknown_inputs = 1 * kGiB;  // inputs not on disk / hidden in a response file.
  uint64_t archiver = 128 * kMiB;
  uint64_t unknown_tool = 256 * kMiB;
};

struct Prior {
  uint64_t peak_bytes = 0;
  ToolFamily family = ToolFamily::kUnknown;
  std::string why;  // "nvcc: 2 pipelines x 4 GiB", for -d explain style output.
  // The step compiles in sccache's server (RunsInCompileServer): what the job's own processes show is its client,
  // so this prior stays the best figure there is for its memory, whatever is measured.
  bool runs_in_compile_server = false;
};

// Number of device pipelines nvcc runs at once: min(--threads (default 1; 0 = one per target), targets),
// targets = -gencode/--generate-code count, else the -arch/--gpu-architecture list ("sm_80,sm_90" = 2).
int NvccParallelPipelines(const CommandStep& nvcc);
// Number of device targets alone (1 when none is given).
int NvccTargetCount(const CommandStep& nvcc);
// Whether the TU is built on CUTLASS/CuTe (an include path or define naming cutlass): the heavy kind.
bool NvccUsesCutlass(const CommandStep& nvcc);

// The prior for a whole command: the largest prior over its steps (steps of `a && b` run one after another).
// `rspfile_content` (ninja's $rspfile_content, may be empty) supplies link inputs hidden behind @file.
// `sizes` may be empty; then linkers fall back to linker_unknown_inputs.
Prior PriorFromCommand(std::string_view command, std::string_view rspfile_content, const FileSizeFn& sizes,
                       const PriorConstants& constants = {});

}  // namespace headroom
