// Fallback detection for remote jobs and the launcher exit codes that mean "farm unreachable".
#include "headroom/admission/remote_fallback.h"

#include <algorithm>
#include <array>

#include "headroom/util/byte_size.h"

namespace headroom {
namespace {

// distcc(1) EXIT CODES that report the farm or the transport: 100 general failure, 102 bind failed, 103 connect
// failed, 105 out of memory, 106 bad host spec, 107 I/O error, 108 truncated, 109 protocol error, 110 compiler
// missing on the remote host, 113 network access denied, 114 in use, 116 no hosts and fallbacks disabled,
// 118 timeout, 119 GSS-API. Left out: 101 bad arguments, 104 compiler crashed, 111 recursion, 112 privileges,
// 115 no such file, 120 preprocessing asked for.
constexpr std::array<int, 14> kDistccInfrastructureExits = {100, 102, 103, 105, 106, 107, 108,
                                                            109, 110, 113, 114, 116, 118, 119};

}  // namespace

uint64_t FallbackThresholdBytes(uint64_t residual_estimate_bytes) {
  return std::max(2 * residual_estimate_bytes, residual_estimate_bytes + 64 * kMiB);
}

bool LooksLikeLocalFallback(uint64_t tree_bytes, uint64_t residual_estimate_bytes) {
  return tree_bytes > FallbackThresholdBytes(residual_estimate_bytes);
}

bool LauncherReportedLocalRun(std::string_view engine, std::string_view output) {
  if (engine != "distcc") return false;
  size_t warning = output.find("failed to distribute");
  return warning != std::string_view::npos && output.find("running locally instead", warning) != std::string_view::npos;
}

bool IsInfrastructureExit(std::string_view engine, int exit_code) {
  if (engine != "distcc") return false;
  return std::find(kDistccInfrastructureExits.begin(), kDistccInfrastructureExits.end(), exit_code) !=
         kDistccInfrastructureExits.end();
}

std::vector<std::pair<std::string, std::string>> LocalRetryEnvironment(std::string_view engine) {
  if (engine == "distcc") return {{"DISTCC_HOSTS", "localhost"}};
  return {};
}

}  // namespace headroom
