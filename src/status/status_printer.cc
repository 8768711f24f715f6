// StatusPrinter: ninja 1.13.2's console protocol (status lines, job output, FAILED, explain) and the
// memory field headroom adds on smart terminals.
#include "headroom/status/status_printer.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "headroom/graph/graph.h"
#include "headroom/scan/explanations.h"
#include "headroom/status/ansi_text.h"

namespace headroom {
namespace {

constexpr const char* kDefaultStatusFormat = "[%f/%t] ";
constexpr const char* kRed = "\x1b[31m";
constexpr const char* kResetColor = "\x1b[0m";

// ninja reports the offending byte with %c, so a trailing '%' shows up as a NUL in the message; the
// default handler therefore writes the message with its length rather than as a C string.
void WriteFatalAndExit(const std::string& message) {
  fflush(stdout);
  std::string line = "ninja: fatal: " + message + "\n";
  fwrite(line.data(), 1, line.size(), stderr);
  fflush(stderr);
  _exit(1);
}

std::string Printf(const char* format, double value) {
  char buffer[64];
  snprintf(buffer, sizeof(buffer), format, value);
  return buffer;
}

// Rates print "?" until known; the arithmetic is ninja's, so 0/0 comes out as its "-nan".
std::string FormatRate(double rate) { return rate == -1 ? "?" : Printf("%.1f", rate); }

std::string FormatPercent(int percent) {
  char buffer[32];
  snprintf(buffer, sizeof(buffer), "%3i%%", percent);
  return buffer;
}

// "mm:ss", or "h:mm:ss" when `with_hours`; seconds are truncated.
std::string FormatDuration(double seconds, bool with_hours) {
  const int total = static_cast<int>(seconds);
  char buffer[32];
  if (with_hours) {
    snprintf(buffer, sizeof(buffer), "%d:%02d:%02d", total / 3600, total / 60 % 60, total % 60);
  } else {
    snprintf(buffer, sizeof(buffer), "%02d:%02d", total / 60, total % 60);
  }
  return buffer;
}

// Compact binary sizes for the memory field: "850M", "5.1G", "1.2T"; "?" when unknown.
std::string FormatCompactBytes(uint64_t bytes) {
  constexpr double kMiB = 1024.0 * 1024.0;
  constexpr double kGiB = kMiB * 1024.0;
  constexpr double kTiB = kGiB * 1024.0;
  if (bytes == 0) return "?";
  if (bytes >= kTiB) return Printf("%.1fT", bytes / kTiB);
  if (bytes >= kGiB) return Printf("%.1fG", bytes / kGiB);
  return Printf("%.0fM", bytes / kMiB);
}

}  // namespace

ConsoleSetup ConsoleSetup::FromEnvironment() {
  ConsoleSetup setup;
  setup.line = LinePrinter::OptionsForStdout();
  setup.err = stderr;
  const char* format = getenv("NINJA_STATUS");
  setup.status_format = format ? format : kDefaultStatusFormat;
  setup.fatal = WriteFatalAndExit;
  return setup;
}

StatusPrinter::StatusPrinter(const BuildConfig& config, ConsoleSetup setup, const Explanations* explanations)
    : config_(config),
      printer_(setup.line),
      err_(setup.err),
      out_(setup.line.out),
      status_format_(std::move(setup.status_format)),
      fatal_(setup.fatal ? std::move(setup.fatal) : WriteFatalAndExit),
      explanations_(explanations),
      current_rate_(config.parallelism) {
  // Overprinting only makes sense for the normal display; -v lines must stay whole.
  if (config_.verbosity != BuildConfig::Verbosity::kNormal) printer_.set_smart_terminal(false);
}

void StatusPrinter::PlanHasTotalEdges(int total) {
  total_edges_ = total;
  unpredictable_edges_remaining_ = std::max(0, total - finished_edges_ - predictable_edges_remaining_);
}

void StatusPrinter::EdgeAddedToPlan(const Edge* edge, int64_t previous_duration_ms) {
  ++total_edges_;
  if (previous_duration_ms < 0) {
    ++unpredictable_edges_remaining_;
    return;
  }
  predicted_duration_ms_[edge] = previous_duration_ms;
  ++predictable_edges_total_;
  ++predictable_edges_remaining_;
  predictable_time_total_ms_ += previous_duration_ms;
  predictable_time_remaining_ms_ += previous_duration_ms;
}

void StatusPrinter::EdgeRemovedFromPlan(const Edge* edge) {
  --total_edges_;
  ForgetPrediction(edge, /*finished=*/false);
}

// An edge that finished stays part of the "previous average"; one removed from the plan leaves it.
void StatusPrinter::ForgetPrediction(const Edge* edge, bool finished) {
  auto it = predicted_duration_ms_.find(edge);
  if (it == predicted_duration_ms_.end()) {
    if (unpredictable_edges_remaining_ > 0) --unpredictable_edges_remaining_;
    return;
  }
  --predictable_edges_remaining_;
  predictable_time_remaining_ms_ -= it->second;
  if (!finished) {
    --predictable_edges_total_;
    predictable_time_total_ms_ -= it->second;
  }
  predicted_duration_ms_.erase(it);
}

void StatusPrinter::BuildStarted() {
  started_edges_ = 0;
  finished_edges_ = 0;
  running_edges_ = 0;
}

void StatusPrinter::BuildEdgeStarted(const Edge* edge, int64_t start_time_ms) {
  ++started_edges_;
  ++running_edges_;
  time_ms_ = start_time_ms;
  // Plain output only reports finished edges, except console jobs, which announce themselves
  // before taking over the terminal.
  if (edge->use_console() || printer_.is_smart_terminal()) PrintStatus(edge);
  if (edge->use_console()) printer_.SetConsoleLocked(true);
}

void StatusPrinter::BuildEdgeFinished(Edge* edge, int64_t start_time_ms, int64_t end_time_ms, bool success,
                                      int exit_code, const std::string& output) {
  time_ms_ = end_time_ms;
  ++finished_edges_;
  run_time_ms_ += end_time_ms - start_time_ms;
  ForgetPrediction(edge, /*finished=*/true);

  if (edge->use_console()) printer_.SetConsoleLocked(false);
  if (!edge->use_console()) PrintStatus(edge);
  --running_edges_;  // after the status line, so %r still counts the edge that just finished

  if (!success) PrintFailure(edge, exit_code);
  if (!output.empty()) PrintJobOutput(output);
}

void StatusPrinter::PrintFailure(const Edge* edge, int exit_code) {
  std::string outputs;
  for (const Node* node : edge->outputs) outputs += node->path + " ";
  const std::string failed = "FAILED: [code=" + std::to_string(exit_code) + "] ";
  if (printer_.supports_color()) {
    printer_.PrintOnNewLine(kRed + failed + kResetColor + outputs + "\n");
  } else {
    printer_.PrintOnNewLine(failed + outputs + "\n");
  }
  printer_.PrintOnNewLine(edge->EvaluateCommand() + "\n");
}

void StatusPrinter::PrintJobOutput(const std::string& output) {
  // Jobs write into a pipe, so tools told to force colour do; keep it only where it can be shown.
  printer_.PrintOnNewLine(printer_.supports_color() ? output : StripAnsiEscapeCodes(output));
}

void StatusPrinter::BuildFinished() {
  printer_.SetConsoleLocked(false);
  printer_.PrintOnNewLine("");
}

void StatusPrinter::PrintStatus(const Edge* edge) {
  // ninja 1.13 repeats the explanations with every status line of the edge (start and finish on a
  // smart terminal, finish only when piped), and even under --quiet.
  PrintExplanations(edge);

  if (config_.verbosity == BuildConfig::Verbosity::kQuiet ||
      config_.verbosity == BuildConfig::Verbosity::kNoStatusUpdate) {
    return;
  }

  RecalculateProgressPrediction();
  const bool verbose = config_.verbosity == BuildConfig::Verbosity::kVerbose;
  std::string text = edge->GetBinding("description");
  if (text.empty() || verbose) text = edge->EvaluateCommand();
  text = FormatProgressStatus(status_format_) + text;

  if (verbose) {
    printer_.Print(text, LinePrinter::LineType::kFull);
    return;
  }
  printer_.Print(text, LinePrinter::LineType::kElide, MemoryTail());
  last_status_line_ = std::move(text);
}

void StatusPrinter::PrintExplanations(const Edge* edge) {
  if (!explanations_) return;
  std::vector<std::string> lines;
  explanations_->LookupAndAppend(edge, &lines);
  for (const Node* output : edge->outputs) explanations_->LookupAndAppend(output, &lines);
  if (lines.empty()) return;

  printer_.PrintOnNewLine("");  // don't append the first explanation to a status line
  for (const std::string& line : lines) {
    std::string bytes = "ninja explain: " + line + "\n";
    fwrite(bytes.data(), 1, bytes.size(), err_);
  }
  fflush(err_);
}

// Predicts what fraction of the build's run time is done (for %P and the ETA). Finished edges give
// the current average; remaining edges that ran before contribute their previous durations, unless
// this run is more than 10x faster or slower than the previous one (e.g. ccache hits then, none now),
// which is only judged once 15 s have passed and 5% of the edges finished.
void StatusPrinter::RecalculateProgressPrediction() {
  predicted_fraction_done_ = 0.0;

  bool use_previous = predictable_edges_remaining_ > 0 && predictable_time_remaining_ms_ > 0;
  if (use_previous && total_edges_ > 0 && finished_edges_ > 0 && time_ms_ >= 15000 &&
      static_cast<double>(finished_edges_) / total_edges_ >= 0.05) {
    const double current_average = static_cast<double>(run_time_ms_) / finished_edges_;
    const double previous_average = static_cast<double>(predictable_time_total_ms_) / predictable_edges_total_;
    const double ratio =
        std::max(current_average, previous_average) / std::min(current_average, previous_average);
    use_previous = ratio < 10;
  }

  const int edges_with_known_time = finished_edges_ + (use_previous ? predictable_edges_remaining_ : 0);
  if (edges_with_known_time == 0) return;
  const int edges_with_unknown_time =
      use_previous ? unpredictable_edges_remaining_ : total_edges_ - finished_edges_;

  const int64_t known_time_ms = run_time_ms_ + (use_previous ? predictable_time_remaining_ms_ : 0);
  const double average_ms = static_cast<double>(known_time_ms) / edges_with_known_time;
  // Edges never seen before are assumed to take the average of the known ones.
  double remaining_ms = average_ms * edges_with_unknown_time;
  if (use_previous) remaining_ms += predictable_time_remaining_ms_;
  const double total_ms = run_time_ms_ + remaining_ms;
  if (total_ms == 0.0) return;
  predicted_fraction_done_ = run_time_ms_ / total_ms;
}

void StatusPrinter::SlidingRate::Update(int finished_edges, int64_t time_ms) {
  if (finished_edges == last_update_) return;  // one sample per finished-edge count
  last_update_ = finished_edges;
  if (times_.size() == window_) times_.pop_front();
  times_.push_back(time_ms);
  if (times_.back() != times_.front()) rate_ = times_.size() / ((times_.back() - times_.front()) / 1e3);
}

std::string StatusPrinter::FormatProgressStatus(const std::string& format) {
  const double elapsed_s = time_ms_ / 1e3;
  double eta_s = -1;  // unknown, shown as "?"
  if (predicted_fraction_done_ != 0.0) eta_s = (time_ms_ / predicted_fraction_done_ - time_ms_) / 1e3;
  // Elapsed and ETA share one clock style so they line up once either reaches an hour.
  const bool with_hours = elapsed_s >= 3600 || eta_s >= 3600;

  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out.push_back(format[i]);
      continue;
    }
    // Past the end ninja reads the string's terminating NUL, and reports that as the placeholder.
    ++i;
    const char placeholder = i < format.size() ? format[i] : '\0';
    switch (placeholder) {
      case '%': out.push_back('%'); break;
      case 's': out += std::to_string(started_edges_); break;
      case 't': out += std::to_string(total_edges_); break;
      case 'r': out += std::to_string(running_edges_); break;
      case 'u': out += std::to_string(total_edges_ - started_edges_); break;
      case 'f': out += std::to_string(finished_edges_); break;
      case 'o': out += FormatRate(finished_edges_ / (time_ms_ / 1e3)); break;
      case 'c':
        current_rate_.Update(finished_edges_, time_ms_);
        out += FormatRate(current_rate_.rate());
        break;
      case 'p': out += FormatPercent(total_edges_ ? 100 * finished_edges_ / total_edges_ : 0); break;
      case 'e': out += Printf("%.3f", elapsed_s); break;
      case 'w': out += FormatDuration(elapsed_s, with_hours); break;
      case 'E': out += eta_s < 0 ? "?" : Printf("%.3f", eta_s); break;
      case 'W': out += eta_s < 0 ? "?" : FormatDuration(eta_s, with_hours); break;
      case 'P': out += FormatPercent(static_cast<int>(100 * predicted_fraction_done_)); break;
      // headroom's additions; real ninja rejects these letters.
      case 'm': out += FormatCompactBytes(memory_.used_bytes); break;
      case 'M': out += FormatCompactBytes(memory_.budget_bytes); break;
      case 'q': out += std::to_string(memory_.jobs_waiting_for_memory); break;
      default:
        fatal_(std::string("unknown placeholder '%") + placeholder + "' in $NINJA_STATUS");
        return out;
    }
  }
  return out;
}

bool StatusPrinter::FormatUsesMemoryPlaceholders() const {
  for (size_t i = 0; i + 1 < status_format_.size(); ++i) {
    if (status_format_[i] != '%') continue;
    const char placeholder = status_format_[++i];
    if (placeholder == 'm' || placeholder == 'M' || placeholder == 'q') return true;
  }
  return false;
}

std::string StatusPrinter::MemoryTail() const {
  // Piped logs must stay byte-identical to ninja's, so the field exists only on a smart terminal.
  if (!printer_.is_smart_terminal() || !config_.memory.enabled || !memory_known_) return "";
  if (FormatUsesMemoryPlaceholders()) return "";  // the user placed it already
  std::string tail = " [mem " + FormatCompactBytes(memory_.used_bytes);
  if (memory_.budget_bytes) tail += "/" + FormatCompactBytes(memory_.budget_bytes);
  if (memory_.jobs_waiting_for_memory > 0) tail += ", " + std::to_string(memory_.jobs_waiting_for_memory) + " waiting";
  if (memory_.remote_slots > 0) {
    tail += ", remote " + std::to_string(memory_.remote_running) + "/" + std::to_string(memory_.remote_slots);
  }
  return tail + "]";
}

void StatusPrinter::UpdateMemory(const MemoryStatus& memory) {
  const std::string before = MemoryTail();
  memory_ = memory;
  memory_known_ = memory.used_bytes != 0 || memory.budget_bytes != 0;
  const std::string after = MemoryTail();
  // Refresh the line in place, but only while it is still the last thing on screen.
  if (after != before && printer_.status_line_showing() && !last_status_line_.empty()) {
    printer_.Print(last_status_line_, LinePrinter::LineType::kElide, after);
  }
}

void StatusPrinter::Info(const std::string& message) {
  std::string line = "ninja: " + message + "\n";
  fwrite(line.data(), 1, line.size(), out_);
  fflush(out_);
}

void StatusPrinter::Warning(const std::string& message) {
  fflush(out_);  // earlier stdout first, so the two streams read in order on one terminal
  std::string line = "ninja: warning: " + message + "\n";
  fwrite(line.data(), 1, line.size(), err_);
  fflush(err_);
}

void StatusPrinter::Error(const std::string& message) {
  fflush(out_);
  std::string line = "ninja: error: " + message + "\n";
  fwrite(line.data(), 1, line.size(), err_);
  fflush(err_);
}

}  // namespace headroom
