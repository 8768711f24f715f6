// The HTML report page: header and build facts, then one card per question a user asks after a
// build — where did memory go, what ran when, what did headroom decide, which jobs were heavy or
// slow, and how good were the estimates.
#include "headroom/report/html_report.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <vector>

#include "headroom/util/byte_size.h"
#include "headroom/report/report_charts.h"
#include "headroom/report/report_format.h"
#include "headroom/report/report_page.h"

namespace headroom {

namespace {

constexpr size_t kTableRows = 10;
constexpr size_t kDecisionRows = 100;

std::string Fact(const std::string& label, const std::string& value, const std::string& detail = "") {
  return "<div class=\"fact\"><div class=\"label\">" + HtmlEscape(label) + "</div><div class=\"value\">" +
         HtmlEscape(value) + "</div><div class=\"detail\">" + HtmlEscape(detail) + "</div></div>\n";
}

std::string Card(const std::string& title, const std::string& note, const std::string& body) {
  std::string html = "<section class=\"card\">\n<h2>" + HtmlEscape(title) + "</h2>\n";
  if (!note.empty()) html += "<p class=\"note\">" + note + "</p>\n";
  return html + body + "</section>\n";
}

std::string Legend(const std::string& items) { return items.empty() ? "" : "<div class=\"legend\">" + items + "</div>\n"; }

std::string Empty(const std::string& why) { return "<div class=\"empty\">" + HtmlEscape(why) + "</div>\n"; }

std::string Targets(const BuildFacts& facts) {
  if (facts.targets.empty()) return "default targets";
  std::string text;
  for (const std::string& target : facts.targets) text += (text.empty() ? "" : " ") + target;
  return text;
}

std::string LocalDate(int64_t unix_s) {
  if (unix_s <= 0) return "";
  const time_t when = static_cast<time_t>(unix_s);
  tm local{};
  localtime_r(&when, &local);
  char text[64];
  strftime(text, sizeof text, "%Y-%m-%d %H:%M", &local);
  return text;
}

uint64_t BuildPeak(const BuildTimeline& timeline) {
  uint64_t peak = 0;
  for (const MemorySample& sample : timeline.samples()) peak = std::max(peak, sample.used_bytes);
  return peak;
}

int CountMarkers(const BuildTimeline& timeline, std::string_view kind) {
  return static_cast<int>(std::count_if(timeline.markers().begin(), timeline.markers().end(),
                                        [&](const TimelineMarker& marker) { return marker.kind == kind; }));
}

std::string Header(const BuildTimeline& timeline) {
  const BuildFacts& facts = timeline.facts();
  const std::string result = facts.result.empty() ? "unknown" : facts.result;
  std::string sub = "<code>" + HtmlEscape(Targets(facts)) + "</code>";
  if (std::string date = LocalDate(facts.started_unix_s); !date.empty()) sub += " &middot; " + date;
  if (!facts.working_dir.empty()) sub += " &middot; <code>" + HtmlEscape(facts.working_dir) + "</code>";
  std::string badge = result;
  if (result == "failed" && facts.exit_code != 0) badge += " (exit " + std::to_string(facts.exit_code) + ")";
  return "<header><div><div class=\"brand\">headroom</div><h1>Build report</h1><p class=\"sub\">" + sub +
         "</p></div><span class=\"badge " + HtmlEscape(result) + "\">" + HtmlEscape(badge) + "</span></header>\n";
}

std::string Facts(const BuildTimeline& timeline, int64_t span_ms) {
  const BuildFacts& facts = timeline.facts();
  const auto& jobs = timeline.jobs();
  const int failed = static_cast<int>(std::count_if(jobs.begin(), jobs.end(), [](const TimelineJob& job) {
    return job.outcome != "ok" && job.outcome != "oom-killed" && job.outcome != "safety-killed";
  }));
  const int requeued = CountMarkers(timeline, "requeue");
  std::string job_detail = failed ? std::to_string(failed) + " failed or stopped" : "all succeeded";
  if (jobs.empty()) job_detail = "nothing to do";
  if (requeued) job_detail += ", " + std::to_string(requeued) + " requeued";

  std::string html = "<div class=\"facts\">\n";
  html += Fact("Duration", FormatDuration(facts.duration_ms > 0 ? facts.duration_ms : span_ms));
  html += Fact("Jobs", std::to_string(jobs.size()), job_detail);
  html += Fact("Parallelism", facts.parallelism > 0 ? "-j" + std::to_string(facts.parallelism) : "—");
  if (!facts.memory_enabled) {
    html += Fact("Memory", "off", "--no-memory: not measured");
    return html + "</div>\n";
  }
  const uint64_t peak = BuildPeak(timeline);
  std::string peak_detail;
  if (facts.budget_bytes && peak)
    peak_detail = std::to_string(static_cast<int>(std::lround(static_cast<double>(peak) * 100.0 /
                                                              static_cast<double>(facts.budget_bytes)))) +
                  "% of the budget";
  html += Fact("Peak memory", peak ? FormatBytes(peak) : "—", peak_detail);
  html += Fact("Budget", facts.budget_bytes ? FormatBytes(facts.budget_bytes) : "—",
               facts.reserve_bytes ? FormatBytes(facts.reserve_bytes) + " kept in reserve" : "");
  int64_t waited_ms = 0;
  int waited_jobs = 0;
  for (const TimelineJob& job : jobs) {
    waited_ms += job.waited_ms;
    waited_jobs += job.waited_ms > 0;
  }
  html += Fact("Waited for memory", FormatDuration(waited_ms),
               std::to_string(waited_jobs) + (waited_jobs == 1 ? " job" : " jobs"));
  const int acted = CountMarkers(timeline, "freeze") + CountMarkers(timeline, "kill") +
                    CountMarkers(timeline, "oom") + requeued + CountMarkers(timeline, "over-budget");
  std::string acted_detail = std::to_string(CountMarkers(timeline, "freeze")) + " freezes, " +
                             std::to_string(CountMarkers(timeline, "kill") + CountMarkers(timeline, "oom")) +
                             " kills";
  html += Fact("Safety actions", std::to_string(acted), acted_detail);
  return html + "</div>\n";
}

std::string MemorySection(const BuildTimeline& timeline, int64_t span_ms) {
  const Chart chart = MemoryChart(timeline, span_ms);
  const std::string note =
      "What the build's jobs held, stacked by job (the heaviest on their own), sampled while they ran. The dashed "
      "band above is what running jobs were still expected to grow by; headroom admits a job only when its "
      "estimate fits under the budget.";
  if (chart.svg.empty()) {
    const char* why = timeline.facts().memory_enabled ? "No memory samples: no job ran long enough to be measured."
                                                      : "Memory was not measured in this build (--no-memory).";
    return Card("Memory over time", "", Empty(why));
  }
  return Card("Memory over time", note, Legend(chart.legend) + chart.svg);
}

std::string GanttSection(const BuildTimeline& timeline, int64_t span_ms) {
  const Chart chart = GanttChart(timeline, span_ms);
  if (chart.svg.empty()) return Card("Jobs by lane", "", Empty("No job ran."));
  std::string note = "Each row is one concurrency lane; each box one job, as long as it ran.";
  bool measured = std::any_of(timeline.jobs().begin(), timeline.jobs().end(),
                              [](const TimelineJob& job) { return job.peak_bytes > 0; });
  if (measured) note += " The box is filled up to the job's measured peak; the black tick marks its estimate (same scale for all jobs).";
  return Card("Jobs by lane", note, Legend(chart.legend) + chart.svg);
}

const char* DecisionName(std::string_view kind) {
  if (kind == "wait") return "waited for memory";
  if (kind == "over-budget") return "started alone, over budget";
  if (kind == "freeze") return "frozen";
  if (kind == "thaw") return "thawed";
  if (kind == "kill") return "killed to save the build";
  if (kind == "oom") return "killed by the kernel (OOM)";
  if (kind == "requeue") return "requeued";
  if (kind == "gave-up") return "gave up";
  if (kind == "remote-fallback") return "ran here, not on the farm";
  return "decision";
}

std::string DecisionsSection(const BuildTimeline& timeline, int64_t span_ms) {
  const Chart chart = DecisionStrip(timeline, span_ms);
  if (chart.svg.empty())
    return Card("Memory decisions", "", Empty("headroom never had to hold back, freeze or kill a job in this build."));
  std::string table = "<table><thead><tr><th class=\"num\">Time</th><th>Decision</th><th>Job</th><th>Why</th></tr></thead><tbody>\n";
  const auto& markers = timeline.markers();
  for (size_t i = 0; i < std::min(markers.size(), kDecisionRows); ++i) {
    const TimelineMarker& marker = markers[i];
    table += "<tr><td class=\"num\">" + FormatClock(marker.t_ms, true) + "</td><td><span class=\"pill\" style=\"background:" +
             MarkerColor(marker.kind) + "\">" + DecisionName(marker.kind) + "</span></td><td class=\"job\">" +
             HtmlEscape(marker.output) + "</td><td class=\"why\">" + HtmlEscape(marker.detail) + "</td></tr>\n";
  }
  table += "</tbody></table>\n";
  if (markers.size() > kDecisionRows)
    table += "<p class=\"more\">… and " + std::to_string(markers.size() - kDecisionRows) +
             " more; the --trace file has every one.</p>\n";
  return Card("Memory decisions", "Every time headroom held a job back or stepped in, in order.",
              Legend(chart.legend) + chart.svg + table);
}

std::string JobCell(const TimelineJob& job) {
  return "<td class=\"job\">" + HtmlEscape(job.output) + "<span class=\"rule\">" + HtmlEscape(job.rule) + "</span></td>";
}

std::string OutcomeCell(const TimelineJob& job) {
  return "<td><span class=\"pill\" style=\"background:" + std::string(OutcomeColor(job.outcome)) + "\">" +
         HtmlEscape(job.outcome) + "</span></td>";
}

std::string ErrorCell(const TimelineJob& job) {
  if (job.estimate_bytes == 0 || job.peak_bytes == 0) return "<td class=\"num\">—</td>";
  const double error = EstimateErrorPct(job.estimate_bytes, job.peak_bytes);
  // Underestimates are what hurt (jobs admitted that do not fit); overestimates only cost parallelism.
  const char* tone = std::fabs(error) <= 25 ? "close" : error < 0 ? "under" : "over";
  char text[32];
  snprintf(text, sizeof text, "%+.0f%%", error);
  return std::string("<td class=\"num ") + tone + "\">" + text + "</td>";
}

std::string Bytes(uint64_t bytes) { return bytes ? FormatBytes(bytes) : "—"; }

std::vector<const TimelineJob*> TopJobs(const BuildTimeline& timeline,
                                        bool (*before)(const TimelineJob*, const TimelineJob*)) {
  std::vector<const TimelineJob*> jobs;
  for (const TimelineJob& job : timeline.jobs()) jobs.push_back(&job);
  const size_t shown = std::min(kTableRows, jobs.size());
  std::partial_sort(jobs.begin(), jobs.begin() + static_cast<std::ptrdiff_t>(shown), jobs.end(), before);
  jobs.resize(shown);
  return jobs;
}

std::string HeaviestSection(const BuildTimeline& timeline) {
  auto heavier = [](const TimelineJob* a, const TimelineJob* b) { return a->peak_bytes > b->peak_bytes; };
  std::vector<const TimelineJob*> jobs = TopJobs(timeline, heavier);
  if (jobs.empty() || jobs.front()->peak_bytes == 0) return Card("Heaviest jobs", "", Empty("No job's memory was measured."));
  std::string table = "<table><thead><tr><th>Job</th><th class=\"num\">Peak</th><th class=\"num\">Estimate</th>"
                      "<th class=\"num\">Error</th><th>Outcome</th></tr></thead><tbody>\n";
  for (const TimelineJob* job : jobs) {
    if (job->peak_bytes == 0) break;
    table += "<tr>" + JobCell(*job) + "<td class=\"num\">" + Bytes(job->peak_bytes) + "</td><td class=\"num\">" +
             Bytes(job->estimate_bytes) + "</td>" + ErrorCell(*job) + OutcomeCell(*job) + "</tr>\n";
  }
  return Card("Heaviest jobs", "By measured peak of the whole process tree.", table + "</tbody></table>\n");
}

std::string SlowestSection(const BuildTimeline& timeline) {
  auto slower = [](const TimelineJob* a, const TimelineJob* b) {
    return a->end_ms - a->start_ms > b->end_ms - b->start_ms;
  };
  std::vector<const TimelineJob*> jobs = TopJobs(timeline, slower);
  if (jobs.empty()) return Card("Slowest jobs", "", Empty("No job ran."));
  std::string table = "<table><thead><tr><th>Job</th><th class=\"num\">Took</th><th class=\"num\">Started</th>"
                      "<th class=\"num\">Waited</th><th>Outcome</th></tr></thead><tbody>\n";
  for (const TimelineJob* job : jobs) {
    table += "<tr>" + JobCell(*job) + "<td class=\"num\">" + FormatDuration(job->end_ms - job->start_ms) +
             "</td><td class=\"num\">" + FormatClock(job->start_ms, true) + "</td><td class=\"num\">" +
             (job->waited_ms > 0 ? FormatDuration(job->waited_ms) : "—") + "</td>" + OutcomeCell(*job) + "</tr>\n";
  }
  return Card("Slowest jobs", "By wall time, from start to exit.", table + "</tbody></table>\n");
}

std::string EstimateStats(const std::vector<const TimelineJob*>& jobs) {
  std::vector<double> errors;
  int close = 0, under = 0;
  for (const TimelineJob* job : jobs) {
    const double error = EstimateErrorPct(job->estimate_bytes, job->peak_bytes);
    errors.push_back(std::fabs(error));
    close += std::fabs(error) <= 25;
    under += error < -25;
  }
  std::nth_element(errors.begin(), errors.begin() + static_cast<std::ptrdiff_t>(errors.size() / 2), errors.end());
  char median[32];
  snprintf(median, sizeof median, "%.0f%%", errors[errors.size() / 2]);
  const auto share = [&](int count) {
    return std::to_string(static_cast<int>(std::lround(count * 100.0 / static_cast<double>(jobs.size())))) + "%";
  };
  return "<div class=\"stats\">" + Fact("Within 25%", share(close), std::to_string(close) + " of " + std::to_string(jobs.size()) + " jobs") +
         Fact("Median error", median, "absolute") +
         Fact("Underestimated", share(under), std::to_string(under) + " jobs, estimate over 25% too low") + "</div>\n";
}

std::string EstimatesSection(const BuildTimeline& timeline) {
  std::vector<const TimelineJob*> jobs;
  for (const TimelineJob& job : timeline.jobs()) {
    if (job.estimate_bytes > 0 && job.peak_bytes > 0) jobs.push_back(&job);
  }
  if (jobs.empty()) return Card("Estimates vs measured", "", Empty("No job had both an estimate and a measured peak."));
  const Chart chart = EstimateScatter(timeline);
  // The misses that matter most are the large ones in bytes, not in percent of a tiny job.
  auto miss = [](const TimelineJob* job) {
    return std::fabs(static_cast<double>(job->estimate_bytes) - static_cast<double>(job->peak_bytes));
  };
  std::vector<const TimelineJob*> misses = jobs;
  const size_t shown = std::min(kTableRows, misses.size());
  std::partial_sort(misses.begin(), misses.begin() + static_cast<std::ptrdiff_t>(shown), misses.end(),
                    [&](const TimelineJob* a, const TimelineJob* b) { return miss(a) > miss(b); });
  misses.resize(shown);
  std::string table = "<table><thead><tr><th>Job (largest misses)</th><th class=\"num\">Estimate</th>"
                      "<th class=\"num\">Peak</th><th class=\"num\">Error</th><th>Source</th></tr></thead><tbody>\n";
  for (const TimelineJob* job : misses) {
    table += "<tr>" + JobCell(*job) + "<td class=\"num\">" + Bytes(job->estimate_bytes) + "</td><td class=\"num\">" +
             Bytes(job->peak_bytes) + "</td>" + ErrorCell(*job) + "<td>" + HtmlEscape(job->estimate_source) + "</td></tr>\n";
  }
  table += "</tbody></table>\n";
  std::string body = "<div class=\"scatter\"><div>" + Legend(chart.legend) + chart.svg + "</div><div>" +
                     EstimateStats(jobs) + table + "</div></div>\n";
  return Card("Estimates vs measured",
              "One dot per job: above the diagonal headroom expected more than the job used (it cost "
              "parallelism), below it less (the risky side). The shaded band is within 25%.",
              body);
}

}  // namespace

std::string ReportHtml(const BuildTimeline& timeline) {
  const int64_t span_ms = ReportSpanMs(timeline);
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>headroom build report: " +
      HtmlEscape(Targets(timeline.facts())) + "</title>\n<style>" + kReportStyle + "</style>\n</head>\n<body>\n<main>\n";
  html += Header(timeline);
  html += Facts(timeline, span_ms);
  html += MemorySection(timeline, span_ms);
  html += GanttSection(timeline, span_ms);
  html += DecisionsSection(timeline, span_ms);
  html += "<div class=\"cols\">\n" + HeaviestSection(timeline) + SlowestSection(timeline) + "</div>\n";
  html += EstimatesSection(timeline);
  html += "<footer>Generated by headroom " HEADROOM_VERSION ". Times are from the start of the build.</footer>\n";
  html += "</main>\n<div id=\"tip\"></div>\n<script>" + std::string(kReportScript) + "</script>\n</body>\n</html>\n";
  return html;
}

bool WriteReport(const BuildTimeline& timeline, const std::string& path, std::string* err) {
  return WriteOutputFile(path, ReportHtml(timeline), err);
}

}  // namespace headroom
