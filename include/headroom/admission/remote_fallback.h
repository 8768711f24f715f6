// Telling that a remote-eligible job is compiling here after all (its launcher fell back), and which launcher exit
// codes are infrastructure failures (farm unreachable) to retry locally rather than compile errors. Pure logic.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace headroom {

// The process-tree size above which a remote job is taken to be compiling locally: twice its residual estimate,
// and at least 64 MiB above it, so a preprocessor's normal spread is not mistaken for a fallback. Measured on
// 127.0.0.1 (docs/scale-out.md): a `distcc g++` job whose compile ran on the daemon peaked at 42 MiB here, the
// same compile run locally at ~300 MiB.
uint64_t FallbackThresholdBytes(uint64_t residual_estimate_bytes);

// True when a remote-eligible job's tree (its latest sample or its peak so far) has outgrown its residual.
bool LooksLikeLocalFallback(uint64_t tree_bytes, uint64_t residual_estimate_bytes);

// True when the job's output shows its launcher ran it here: distcc prints "Warning: failed to distribute X to
// HOST, running locally instead", or "failed to distribute, running locally instead" when it gave up before
// picking a host (its default verbosity), when it falls back. This catches fallbacks too small
// to tell by memory (a light TU compiled locally stays under the threshold).
bool LauncherReportedLocalRun(std::string_view engine, std::string_view output);

// True when `exit_code` of a job run through `engine` ("distcc", ...) reports the farm, not the source: distcc's
// own codes for connection, protocol, host-list, busy and timeout failures (distcc(1) "EXIT CODES"), which it
// returns instead of compiling locally when DISTCC_FALLBACK=0 or every host failed. Bad arguments, a missing
// source and recursion are the user's to fix and stay failures; so does any code of an unknown engine.
bool IsInfrastructureExit(std::string_view engine, int exit_code);

// Environment assignments that make `engine` compile on this machine, for the local retry of an infrastructure
// failure (distcc: DISTCC_HOSTS=localhost). Empty for an engine with no such switch.
std::vector<std::pair<std::string, std::string>> LocalRetryEnvironment(std::string_view engine);

}  // namespace headroom
