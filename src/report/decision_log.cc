// The memory-decision log (--mem-log=FILE): timeline events as spdlog lines, one per decision, flushed as written;
// budget readings at most once a second.
#include "headroom/report/decision_log.h"

#include <spdlog/logger.h>
#include <spdlog/sinks/basic_file_sink.h>

#include "headroom/util/byte_size.h"

namespace headroom {
namespace {

// "+12.345s": build time, the clock every line of the log and of the trace share.
std::string At(int64_t ms) { return fmt::format("+{:.3f}s", static_cast<double>(ms) / 1000.0); }

std::string Duration(int64_t ms) { return fmt::format("{:.1f}s", static_cast<double>(ms) / 1000.0); }

// Out-of-memory outcomes are what a bug report is usually about: they stand out as warnings.
spdlog::level::level_enum MarkerLevel(const std::string& kind) {
  if (kind == "oom" || kind == "gave-up" || kind == "over-budget") return spdlog::level::warn;
  return spdlog::level::info;
}

}  // namespace

std::unique_ptr<DecisionLog> DecisionLog::Open(const std::string& path, std::string* error) {
  try {
    auto sink = std::make_shared<spdlog::sinks::basic_file_sink_st>(path, /*truncate=*/true);
    auto logger = std::make_shared<spdlog::logger>("memory-decisions", std::move(sink));
    logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");
    logger->set_level(spdlog::level::debug);
    logger->flush_on(spdlog::level::debug);  // every line: the log must survive the build being killed
    return std::unique_ptr<DecisionLog>(new DecisionLog(std::move(logger)));
  } catch (const spdlog::spdlog_ex& failure) {
    *error = failure.what();
    return nullptr;
  }
}

DecisionLog::DecisionLog(std::shared_ptr<spdlog::logger> logger) : logger_(std::move(logger)) {}

DecisionLog::~DecisionLog() = default;

void DecisionLog::BuildStarted(const BuildFacts& facts) {
  std::string targets;
  for (const std::string& target : facts.targets) targets += (targets.empty() ? "" : " ") + target;
  logger_->info("headroom {} memory-decision log: building {} in {}, -j{}, memory awareness {}", HEADROOM_VERSION,
                targets.empty() ? "the default targets" : targets, facts.working_dir, facts.parallelism,
                facts.memory_enabled ? "on" : "off (nothing below is decided by memory)");
}

void DecisionLog::BuildEnded(const BuildFacts& facts, const MemoryDecisions& decisions, int exit_code) {
  logger_->info("build {} (exit {}) after {}: budget {}, reserve {}", facts.result, exit_code,
                Duration(facts.duration_ms), FormatBytes(decisions.budget_bytes), FormatBytes(decisions.reserve_bytes));
  logger_->info("{} job(s) waited for memory ({} in all), {} freeze(s), {} kill(s) by headroom, {} OOM kill(s) by "
                "the kernel, {} requeue(s), {} start(s) over the budget",
                decisions.jobs_waited, Duration(decisions.wait_ms_total), decisions.freezes, decisions.safety_kills,
                decisions.oom_kills, decisions.requeues, decisions.over_budget_starts);
  if (!decisions.guard.empty()) logger_->info("{}", decisions.guard);
  if (!decisions.ledger.empty()) logger_->info("other headroom builds: {}", decisions.ledger);
  if (decisions.other_builds_most > 0) {
    logger_->info("other headroom builds: at most {} at once, owing at most {}", decisions.other_builds_most,
                  FormatBytes(decisions.others_owed_most));
  }
}

void DecisionLog::JobStarted(const TimelineJob& job) {
  std::string expected = job.estimate_bytes > 0
                             ? fmt::format("expected ~{} ({})", FormatBytes(job.estimate_bytes), job.estimate_source)
                             : std::string("no estimate");
  std::string waited = job.waited_ms > 0 ? ", after waiting " + Duration(job.waited_ms) : "";
  logger_->debug("{} admit {}: {}{}", At(job.start_ms), job.output, expected, waited);
}

void DecisionLog::JobFinished(const TimelineJob& job) {
  std::string peak = job.peak_bytes > 0 ? fmt::format("peak {} ({})", FormatBytes(job.peak_bytes), job.peak_method)
                                        : std::string("peak not measured");
  std::string exit = job.outcome == "ok" ? "" : fmt::format(" (exit {})", job.exit_code);
  logger_->debug("{} end {}: {}{}, {}, ran {}", At(job.end_ms), job.output, job.outcome, exit, peak,
                 Duration(job.end_ms - job.start_ms));
}

void DecisionLog::Sample(const MemorySample& sample) {
  if (last_sample_ms_ >= 0 && sample.t_ms - last_sample_ms_ < kSampleIntervalMs) return;
  last_sample_ms_ = sample.t_ms;
  logger_->debug("{} reading: budget {}, jobs use {} and may grow {} more, machine uses {}, pressure {:.1f}%, "
                 "{} running, {} waiting for memory",
                 At(sample.t_ms), FormatBytes(sample.budget_bytes), FormatBytes(sample.used_bytes),
                 FormatBytes(sample.reserved_bytes), FormatBytes(sample.machine_used_bytes), sample.pressure_pct,
                 sample.running, sample.waiting);
}

void DecisionLog::Mark(const TimelineMarker& marker) {
  logger_->log(MarkerLevel(marker.kind), "{} {} {}: {}", At(marker.t_ms), marker.kind, marker.output, marker.detail);
}

}  // namespace headroom
