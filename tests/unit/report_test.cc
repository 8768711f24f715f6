// Tests for the report module: the end-of-build summary, the Chrome trace and the HTML report,
// built from fixed timelines (one small build with memory decisions, one with 5,000 jobs, one
// without memory measurements).
#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "headroom/util/byte_size.h"
#include "headroom/report/build_outputs.h"
#include "headroom/report/decision_log.h"
#include "headroom/report/html_report.h"
#include "headroom/report/report_format.h"
#include "headroom/report/summary.h"
#include "headroom/report/trace_writer.h"
#include "headroom/status/status.h"
#include "fakes.h"

namespace headroom {
namespace {

TimelineJob Job(std::string output, int64_t start_ms, uint64_t estimate, std::string source = "edge history") {
  TimelineJob job;
  job.output = std::move(output);
  job.command = "cc -c " + job.output;
  job.rule = "cc";
  job.start_ms = start_ms;
  job.estimate_bytes = estimate;
  job.estimate_source = std::move(source);
  return job;
}

void Sample(BuildTimeline* timeline, int64_t t_ms, std::vector<JobUsage> jobs, uint64_t reserved, int waiting) {
  MemorySample sample;
  sample.t_ms = t_ms;
  sample.budget_bytes = 4 * kGiB;
  sample.reserved_bytes = reserved;
  sample.waiting = waiting;
  for (const JobUsage& usage : jobs) sample.used_bytes += usage.bytes;
  sample.machine_used_bytes = sample.used_bytes + 3 * kGiB;
  sample.running = static_cast<int>(jobs.size());
  sample.jobs = std::move(jobs);
  timeline->Sample(sample);
}

// A small build under a 4 GiB budget: big.o is OOM-killed once and requeued, link waits for memory.
BuildTimeline SmallBuild(bool keep_details = true, TimelineListener* listener = nullptr) {
  BuildTimeline timeline;
  timeline.set_keep_details(keep_details);
  timeline.set_listener(listener);
  BuildFacts& facts = timeline.facts();
  facts.targets = {"app"};
  facts.parallelism = 4;
  facts.budget_bytes = 4 * kGiB;
  facts.reserve_bytes = 512 * kMiB;
  facts.result = "succeeded";
  facts.duration_ms = 9000;
  const size_t big = timeline.JobStarted(Job("obj/big.o", 0, 2 * kGiB));
  const size_t small = timeline.JobStarted(Job("obj/small.o", 100, 256 * kMiB, "prior"));
  Sample(&timeline, 1000, {{big, 1 * kGiB}, {small, 200 * kMiB}}, 1 * kGiB, 1);
  timeline.Mark({1200, "wait", "app", "needs ~1.5 GiB, 0.8 GiB left after running jobs"});
  Sample(&timeline, 2000, {{big, 3 * kGiB}, {small, 250 * kMiB}}, 0, 1);
  timeline.JobFinished(small, 2500, 260 * kMiB, "cgroup", "ok", 0);
  timeline.JobFinished(big, 3000, 3 * kGiB + 512 * kMiB, "cgroup", "oom-killed", 137);
  timeline.Mark({3000, "oom", "obj/big.o", "the kernel's OOM killer ended it"});
  timeline.Mark({3000, "requeue", "obj/big.o", "retrying alone with 5.3 GiB"});
  TimelineJob retry = Job("obj/big.o", 3100, 5 * kGiB + 300 * kMiB);
  retry.waited_ms = 100;
  const size_t again = timeline.JobStarted(retry);
  Sample(&timeline, 4000, {{again, 3 * kGiB}}, 2 * kGiB, 1);
  timeline.JobFinished(again, 6000, 3 * kGiB + 600 * kMiB, "cgroup", "ok", 0);
  TimelineJob link = Job("app", 6100, 1536 * kMiB, "class history");
  link.rule = "link";
  link.waited_ms = 4900;
  const size_t linked = timeline.JobStarted(link);
  Sample(&timeline, 7000, {{linked, 1 * kGiB}}, 512 * kMiB, 0);
  timeline.JobFinished(linked, 9000, 1200 * kMiB, "cgroup", "ok", 0);
  return timeline;
}

MemoryDecisions SmallBuildDecisions() {
  MemoryDecisions decisions;
  decisions.jobs_waited = 1;
  decisions.wait_ms_total = 4900;
  decisions.oom_kills = 1;
  decisions.requeues = 1;
  decisions.budget_bytes = 4 * kGiB;
  return decisions;
}

// 5,000 jobs of 50-2000 ms over 16 lanes, sampled every 200 ms.
BuildTimeline HugeBuild() {
  BuildTimeline timeline;
  timeline.facts().parallelism = 16;
  timeline.facts().budget_bytes = 64 * kGiB;
  std::vector<std::pair<size_t, int64_t>> running;  // job, end
  int64_t now = 0;
  int started = 0;
  while (started < 5000 || !running.empty()) {
    for (auto it = running.begin(); it != running.end();) {
      if (it->second <= now) {
        timeline.JobFinished(it->first, it->second, (50 + it->first % 700) * kMiB, "cgroup",
                             it->first % 997 == 0 ? "failed" : "ok", 0);
        it = running.erase(it);
      } else {
        ++it;
      }
    }
    while (started < 5000 && running.size() < 16) {
      const size_t index = timeline.JobStarted(Job("obj/dir" + std::to_string(started % 40) + "/file" +
                                                       std::to_string(started) + ".o",
                                                   now, (60 + started % 650) * kMiB, started % 3 ? "edge history" : "prior"));
      running.emplace_back(index, now + 50 + (started * 7919) % 1950);
      ++started;
    }
    if (now % 200 == 0) {
      std::vector<JobUsage> usage;
      for (const auto& [job, end] : running) usage.push_back({job, (40 + job % 600) * kMiB});
      Sample(&timeline, now, usage, 1 * kGiB, 3);
    }
    if (now % 1000 == 0) timeline.Mark({now, "wait", "obj/x.o", "needs more"});
    now += 10;
  }
  timeline.facts().duration_ms = now;
  timeline.facts().result = "failed";
  timeline.facts().exit_code = 1;
  return timeline;
}

// ---- summary ----

TEST(SummaryTest, FixedTimelineReadsAsExpected) {
  const std::vector<std::string> lines = SummaryLines(SmallBuild(), SmallBuildDecisions());
  const std::vector<std::string> expected = {
      "the build's jobs peaked at 3.2 GiB together of the 4.0 GiB budget (81%)",
      "1 job waited for memory, 4.9s in all",
      "1 OOM kill, 1 requeue",
      "heaviest jobs:",
      "  3.6 GiB (estimated 5.3 GiB)  obj/big.o",
      "  3.5 GiB (estimated 2.0 GiB)  obj/big.o [oom-killed]",
      "  1.2 GiB (estimated 1.5 GiB)  app",
  };
  EXPECT_EQ(lines, expected);
}

TEST(SummaryTest, JobsHeldForACpuAreCountedBesideTheMemoryWaitsButPrintNothingAlone) {
  MemoryDecisions decisions = SmallBuildDecisions();
  decisions.cpu_waits = 3;
  EXPECT_EQ(SummaryLines(SmallBuild(), decisions)[1],
            "1 job waited for memory, 4.9s in all; 3 jobs held for a CPU beside long compiles");
  MemoryDecisions cpu_only;
  cpu_only.cpu_waits = 1;
  EXPECT_EQ(SummaryLines(SmallBuild(), cpu_only)[1],
            "no job had to wait for memory; 1 job held for a CPU beside long compiles");
  EXPECT_FALSE(SummaryWanted(cpu_only, false));  // logs stay ninja's when memory never mattered
  MemoryDecisions total;
  AddDecisions(&total, decisions);
  AddDecisions(&total, cpu_only);
  EXPECT_EQ(total.cpu_waits, 4);
}

TEST(SummaryTest, ScaleOutLineWhenTheBuildHadAFarm) {
  MemoryDecisions decisions = SmallBuildDecisions();
  decisions.remote_jobs = 12;
  decisions.remote_fallbacks = 1;
  decisions.local_jobs = 2;
  decisions.remote_most_at_once = 4;
  const std::vector<std::string> lines = SummaryLines(SmallBuild(), decisions);
  EXPECT_NE(std::find(lines.begin(), lines.end(),
                      "remote: 12 jobs ran on the farm (at most 4 at once), 1 fell back to a local compile, 2 local"),
            lines.end());
  MemoryDecisions farm_only;
  farm_only.remote_jobs = 3;
  EXPECT_TRUE(SummaryWanted(farm_only, false));  // a build with a farm says what ran where
  for (const std::string& line : SummaryLines(SmallBuild(), SmallBuildDecisions()))
    EXPECT_EQ(std::string::npos, line.find("remote:")) << line;  // no farm, no line
}

// Without a trace or report only the summary reads the timeline: commands and per-job sample shares are
// dropped (they grow with every job and tick), and the summary reads the same.
TEST(SummaryTest, TimelineWithoutDetailsKeepsWhatTheSummaryNeeds) {
  const BuildTimeline brief = SmallBuild(/*keep_details=*/false);
  EXPECT_EQ(SummaryLines(brief, SmallBuildDecisions()), SummaryLines(SmallBuild(), SmallBuildDecisions()));
  for (const TimelineJob& job : brief.jobs()) {
    EXPECT_TRUE(job.command.empty() && job.rule.empty() && job.class_key.empty()) << job.output;
  }
  for (const MemorySample& sample : brief.samples()) EXPECT_TRUE(sample.jobs.empty());
  EXPECT_FALSE(SmallBuild().jobs()[0].command.empty());
}

// What a listener is told, one line per event.
class EventRecorder : public TimelineListener {
 public:
  std::vector<std::string> events;
  void JobStarted(const TimelineJob& job) override {
    events.push_back("start " + job.output + " " + std::to_string(job.start_ms));
  }
  void JobFinished(const TimelineJob& job) override {
    events.push_back("end " + job.output + " " + std::to_string(job.end_ms) + " " + job.outcome);
  }
  void Sample(const MemorySample& sample) override {
    events.push_back("sample " + std::to_string(sample.t_ms) + " running " + std::to_string(sample.running));
  }
  void Mark(const TimelineMarker& marker) override {
    events.push_back(marker.kind + " " + marker.output + " " + std::to_string(marker.t_ms));
  }
};

TEST(TimelineTest, AListenerIsToldOfEveryEventWhateverTheTimelineKeeps) {
  const std::vector<std::string> expected = {
      "start obj/big.o 0",           "start obj/small.o 100",       "sample 1000 running 2", "wait app 1200",
      "sample 2000 running 2",       "end obj/small.o 2500 ok",     "end obj/big.o 3000 oom-killed",
      "oom obj/big.o 3000",          "requeue obj/big.o 3000",      "start obj/big.o 3100",
      "sample 4000 running 1",       "end obj/big.o 6000 ok",       "start app 6100",
      "sample 7000 running 1",       "end app 9000 ok"};
  for (bool keep_details : {true, false}) {
    EventRecorder recorder;
    const BuildTimeline timeline = SmallBuild(keep_details, &recorder);
    EXPECT_EQ(recorder.events, expected) << "keep_details " << keep_details;
    EXPECT_EQ(timeline.markers().size(), keep_details ? 3u : 0u);
  }
}

TEST(DecisionLogTest, LogsEachDecisionAndReadingsAtMostOnceASecond) {
  std::string dir_pattern = (std::filesystem::temp_directory_path() / "headroom-decisionlog-XXXXXX").string();
  const std::string dir = mkdtemp(dir_pattern.data());
  const std::string path = dir + "/sub/decisions.log";  // a missing directory on the way is made
  std::string error;
  {
    std::unique_ptr<DecisionLog> log = DecisionLog::Open(path, &error);
    ASSERT_TRUE(log) << error;
    BuildTimeline timeline = SmallBuild(/*keep_details=*/false, log.get());
    Sample(&timeline, 7500, {}, 0, 0);  // within a second of the reading at 7.0 s: not logged
    Sample(&timeline, 8000, {}, 0, 0);
    log->BuildEnded(timeline.facts(), SmallBuildDecisions(), 0);
  }
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    ASSERT_EQ(line[0], '[') << line;
    lines.push_back(line.substr(line.find("] [") + 2));  // past the wall-clock time: "[level] message"
  }
  std::filesystem::remove_all(dir);
  auto has = [&lines](const std::string& wanted) { return std::count(lines.begin(), lines.end(), wanted) == 1; };
  EXPECT_TRUE(has("[debug] +0.000s admit obj/big.o: expected ~2.0 GiB (edge history)")) << lines[0];
  EXPECT_TRUE(has("[debug] +3.100s admit obj/big.o: expected ~5.3 GiB (edge history), after waiting 0.1s"));
  EXPECT_TRUE(has("[info] +1.200s wait app: needs ~1.5 GiB, 0.8 GiB left after running jobs"));
  EXPECT_TRUE(has("[warning] +3.000s oom obj/big.o: the kernel's OOM killer ended it"));
  EXPECT_TRUE(has("[info] +3.000s requeue obj/big.o: retrying alone with 5.3 GiB"));
  EXPECT_TRUE(has("[debug] +3.000s end obj/big.o: oom-killed (exit 137), peak 3.5 GiB (cgroup), ran 3.0s"));
  EXPECT_TRUE(has("[debug] +9.000s end app: ok, peak 1.2 GiB (cgroup), ran 2.9s"));
  EXPECT_TRUE(has("[info] build succeeded (exit 0) after 9.0s: budget 4.0 GiB, reserve 0 B"));
  std::vector<std::string> readings;
  for (const std::string& line : lines) {
    if (line.find(" reading: ") != std::string::npos) readings.push_back(line.substr(8, line.find(' ', 8) - 8));
  }
  EXPECT_EQ(readings, (std::vector<std::string>{"+1.000s", "+2.000s", "+4.000s", "+7.000s", "+8.000s"}));
}

TEST(SummaryTest, QuietUnlessMemoryMatteredOrAsked) {
  MemoryDecisions nothing;
  nothing.budget_bytes = 8 * kGiB;
  EXPECT_FALSE(SummaryWanted(nothing, false));
  EXPECT_TRUE(SummaryWanted(nothing, true));
  EXPECT_TRUE(SummaryWanted(SmallBuildDecisions(), false));
  MemoryDecisions over_budget;
  over_budget.over_budget_starts = 1;
  EXPECT_TRUE(SummaryWanted(over_budget, false));
}

TEST(SummaryTest, PrintsEachLineWithTheHeadroomPrefix) {
  char* text = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&text, &size);
  PrintSummary(out, {"a", "  b"});
  fclose(out);
  EXPECT_EQ(std::string(text, size), "headroom: a\nheadroom:   b\n");
  free(text);
}

TEST(SummaryTest, DecisionsAddUpOverPasses) {
  MemoryDecisions total;
  AddDecisions(&total, SmallBuildDecisions());
  AddDecisions(&total, SmallBuildDecisions());
  EXPECT_EQ(total.requeues, 2);
  EXPECT_EQ(total.wait_ms_total, 9800);
  EXPECT_EQ(total.budget_bytes, 4 * kGiB);
}

// ---- trace ----

std::vector<nlohmann::json> EventsOfPhase(const nlohmann::json& trace, const std::string& phase) {
  std::vector<nlohmann::json> events;
  for (const nlohmann::json& event : trace["traceEvents"]) {
    if (event["ph"] == phase) events.push_back(event);
  }
  return events;
}

TEST(TraceTest, IsValidJsonWithEveryJobOnceOnItsLane) {
  const BuildTimeline timeline = SmallBuild();
  const nlohmann::json trace = nlohmann::json::parse(TraceJson(timeline));
  const std::vector<nlohmann::json> jobs = EventsOfPhase(trace, "X");
  ASSERT_EQ(jobs.size(), timeline.jobs().size());
  std::multiset<std::pair<std::string, int64_t>> seen;
  for (const nlohmann::json& event : jobs) seen.insert({event["name"], event["ts"].get<int64_t>()});
  for (const TimelineJob& job : timeline.jobs()) {
    EXPECT_EQ(seen.count({job.output, job.start_ms * 1000}), 1u) << job.output;
  }
  const nlohmann::json& retry = jobs[2];
  EXPECT_EQ(retry["name"], "obj/big.o");
  EXPECT_EQ(retry["dur"], (6000 - 3100) * 1000);
  EXPECT_EQ(retry["tid"], timeline.jobs()[2].slot + 1);
  EXPECT_EQ(retry["args"]["outcome"], "ok");
  EXPECT_EQ(retry["args"]["command"], "cc -c obj/big.o");
  EXPECT_EQ(retry["args"]["peak bytes"], 3 * kGiB + 600 * kMiB);
  EXPECT_EQ(retry["args"]["estimate bytes"], 5 * kGiB + 300 * kMiB);
  EXPECT_EQ(retry["args"]["source"], "edge history");
  EXPECT_EQ(jobs[0]["args"]["outcome"], "oom-killed");
}

TEST(TraceTest, HasMemoryCountersForEverySample) {
  const BuildTimeline timeline = SmallBuild();
  const nlohmann::json trace = nlohmann::json::parse(TraceJson(timeline));
  std::map<std::string, int> counters;
  for (const nlohmann::json& event : EventsOfPhase(trace, "C")) ++counters[event["name"].get<std::string>()];
  for (const char* name : {"memory used", "memory budget", "memory reserved", "memory pressure"})
    EXPECT_EQ(counters[name], 4) << name;
  const nlohmann::json first_used = EventsOfPhase(trace, "C")[0];
  EXPECT_EQ(first_used["name"], "memory used");
  EXPECT_EQ(first_used["ts"], 1000 * 1000);
  EXPECT_DOUBLE_EQ(first_used["args"]["MiB"].get<double>(), 1024 + 200);
}

TEST(TraceTest, MarkersAreInstantEventsOnTheDecisionsTrack) {
  const nlohmann::json trace = nlohmann::json::parse(TraceJson(SmallBuild()));
  const std::vector<nlohmann::json> instants = EventsOfPhase(trace, "i");
  ASSERT_EQ(instants.size(), 3u);
  EXPECT_EQ(instants[0]["name"], "wait: app");
  EXPECT_EQ(instants[0]["tid"], 0);
  EXPECT_EQ(instants[1]["args"]["kind"], "oom");
  std::set<std::string> thread_names;
  for (const nlohmann::json& event : EventsOfPhase(trace, "M")) {
    if (event["name"] == "thread_name") thread_names.insert(event["args"]["name"]);
  }
  EXPECT_TRUE(thread_names.count("headroom decisions"));
  EXPECT_TRUE(thread_names.count("lane 1"));
  EXPECT_TRUE(thread_names.count("lane 2"));
}

TEST(TraceTest, CommandsThatAreNotUtf8StillMakeValidJson) {
  BuildTimeline timeline;
  TimelineJob job = Job("out", 0, 0);
  job.command = "echo \xff\xfe";
  timeline.JobFinished(timeline.JobStarted(job), 10, 0, "", "ok", 0);
  EXPECT_NO_THROW(nlohmann::json::parse(TraceJson(timeline)));
}

// ---- report ----

// A small well-formedness check: every non-void element is closed, in order, and attributes are
// quoted; <style> and <script> bodies are skipped as raw text.
std::string CheckBalancedTags(const std::string& html) {
  static const std::set<std::string> kVoid = {"meta", "br", "hr", "img", "input", "link", "col", "wbr"};
  std::vector<std::string> open;
  size_t pos = 0;
  while ((pos = html.find('<', pos)) != std::string::npos) {
    if (html.compare(pos, 4, "<!--") == 0) {
      pos = html.find("-->", pos);
      continue;
    }
    const size_t end = html.find('>', pos);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(pos);
    std::string tag = html.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    if (tag.empty() || tag[0] == '!') continue;
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0) return "unbalanced quotes in <" + tag + ">";
    const bool closing = tag[0] == '/';
    const bool self_closing = tag.back() == '/';
    std::string name = tag.substr(closing ? 1 : 0);
    name = name.substr(0, name.find_first_of(" \n/"));
    if (closing) {
      if (open.empty() || open.back() != name) return "unexpected </" + name + ">";
      open.pop_back();
    } else if (!self_closing && !kVoid.count(name)) {
      open.push_back(name);
      if (name == "style" || name == "script") {
        pos = html.find("</" + name + ">", pos);
        if (pos == std::string::npos) return "unclosed <" + name + ">";
      }
    }
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  return "";
}

size_t Count(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++count;
  return count;
}

TEST(ReportTest, SmallBuildIsWellFormedWithChartsAndTables) {
  const std::string html = ReportHtml(SmallBuild());
  EXPECT_EQ(CheckBalancedTags(html), "");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(Count(html, "<svg"), 4u);  // memory, lanes, decisions, estimates
  for (const char* section : {"Memory over time", "Jobs by lane", "Memory decisions", "Heaviest jobs",
                              "Slowest jobs", "Estimates vs measured"})
    EXPECT_NE(html.find(section), std::string::npos) << section;
  EXPECT_NE(html.find("budget 4.0 GiB"), std::string::npos);
  EXPECT_NE(html.find("class=\"reserve\""), std::string::npos);
  EXPECT_NE(html.find("killed by the kernel (OOM)"), std::string::npos);
  EXPECT_NE(html.find("+28%"), std::string::npos);   // link estimated 1.5 GiB, used 1.2 GiB
  EXPECT_NE(html.find("-43%"), std::string::npos);   // big.o's first estimate of 2 GiB against 3.5 GiB
  EXPECT_NE(html.find(">0:04<"), std::string::npos);  // a m:ss time axis label
}

TEST(ReportTest, IsSelfContained) {
  const std::string html = ReportHtml(SmallBuild());
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  // The only URL is the SVG namespace, which is a name, not something fetched.
  EXPECT_EQ(Count(html, "http"), Count(html, "xmlns=\"http://www.w3.org/2000/svg\""));
}

TEST(ReportTest, EscapesWhatTheBuildNamed) {
  BuildTimeline timeline;
  TimelineJob job = Job("out<script>alert(1)</script>&\"", 0, 0);
  timeline.JobFinished(timeline.JobStarted(job), 10, 0, "", "failed", 1);
  const std::string html = ReportHtml(timeline);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_NE(html.find("out&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;"), std::string::npos);
  EXPECT_EQ(CheckBalancedTags(html), "");
}

TEST(ReportTest, OneJobWithoutMemoryStillReads) {
  BuildTimeline timeline;
  timeline.facts().memory_enabled = false;
  timeline.facts().result = "succeeded";
  timeline.JobFinished(timeline.JobStarted(Job("only", 0, 0, "")), 40, 0, "", "ok", 0);
  const std::string html = ReportHtml(timeline);
  EXPECT_EQ(CheckBalancedTags(html), "");
  EXPECT_NE(html.find("Memory was not measured in this build (--no-memory)."), std::string::npos);
  EXPECT_EQ(Count(html, "<svg"), 1u);  // just the lanes
  EXPECT_NE(html.find("only"), std::string::npos);
}

TEST(ReportTest, EmptyBuildStillReads) {
  BuildTimeline timeline;
  const std::string html = ReportHtml(timeline);
  EXPECT_EQ(CheckBalancedTags(html), "");
  EXPECT_NE(html.find("No job ran."), std::string::npos);
}

TEST(ReportTest, FiveThousandJobsStayWithinBounds) {
  const BuildTimeline timeline = HugeBuild();
  ASSERT_EQ(timeline.jobs().size(), 5000u);
  const std::string html = ReportHtml(timeline);
  EXPECT_EQ(CheckBalancedTags(html), "");
  const size_t elements = Count(html, "<rect") + Count(html, "<line") + Count(html, "<circle") +
                          Count(html, "<polygon") + Count(html, "<polyline") + Count(html, "<text");
  EXPECT_LT(elements, 25000u);
  EXPECT_LT(html.size(), 6u * 1024 * 1024);
  // The decisions table stops at 100 rows and says how many more there are.
  EXPECT_NE(html.find("more; the --trace file has every one"), std::string::npos);
  EXPECT_LE(Count(html, "class=\"point\""), static_cast<size_t>(1500));
}

// ---- writing the files ----

class CollectingStatus : public fakes::NullStatus {
 public:
  void Info(const std::string& message) override { infos.push_back(message); }
  void Warning(const std::string& message) override { warnings.push_back(message); }
  void Error(const std::string& message) override { errors.push_back(message); }
  std::vector<std::string> infos, warnings, errors;
};

TEST(BuildOutputsTest, UnwritableFilesAreReportedAsErrors) {
  BuildTimeline timeline = SmallBuild();
  CollectingStatus status;
  BuildOutputs outputs{"/nonexistent-dir/trace.json", "/nonexistent-dir/report.html", false};
  FILE* out = fopen("/dev/null", "w");
  FinishBuild(&timeline, MemoryDecisions{}, outputs, 130, 9000, &status, out);
  fclose(out);
  ASSERT_EQ(status.errors.size(), 2u);
  EXPECT_EQ(status.errors[0], "writing trace '/nonexistent-dir/trace.json': No such file or directory");
  EXPECT_EQ(status.errors[1], "writing report '/nonexistent-dir/report.html': No such file or directory");
  EXPECT_EQ(timeline.facts().result, "interrupted");
}

TEST(BuildOutputsTest, WritesBothFilesAndRecordsHowTheBuildEnded) {
  BuildTimeline timeline = SmallBuild();
  CollectingStatus status;
  const std::string dir = ::testing::TempDir();
  BuildOutputs outputs{dir + "/report_test_trace.json", dir + "/report_test.html", false};
  FILE* out = fopen("/dev/null", "w");
  FinishBuild(&timeline, SmallBuildDecisions(), outputs, 2, 9100, &status, out);
  fclose(out);
  EXPECT_TRUE(status.errors.empty());
  EXPECT_EQ(timeline.facts().result, "failed");
  EXPECT_EQ(timeline.facts().exit_code, 2);
  FILE* trace = fopen(outputs.trace_path.c_str(), "r");
  ASSERT_NE(trace, nullptr);
  EXPECT_NO_THROW(nlohmann::json::parse(trace));
  fclose(trace);
}

// ---- formatting ----

TEST(ReportFormatTest, TimesAndSizes) {
  EXPECT_EQ(FormatDuration(250), "250ms");
  EXPECT_EQ(FormatDuration(3400), "3.4s");
  EXPECT_EQ(FormatDuration(72'000), "1m12s");
  EXPECT_EQ(FormatDuration(3'720'000), "1h02m");
  EXPECT_EQ(FormatClock(65'000), "1:05");
  EXPECT_EQ(FormatClock(3'661'000), "1:01:01");
  EXPECT_EQ(FormatClock(1'500, true), "0:01.5");
  EXPECT_EQ(FormatInUnit(3 * kGiB / 2, kGiB), "1.5");
  EXPECT_EQ(FormatInUnit(2 * kGiB, kGiB), "2");
  EXPECT_EQ(AxisUnit(512 * kMiB), kMiB);
  EXPECT_EQ(EstimateErrorPct(150, 100), 50.0);
  EXPECT_EQ(HtmlEscape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
}

TEST(ReportFormatTest, NiceTicksCoverTheRange) {
  EXPECT_EQ(NiceTicks(4.3, 5), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(NiceTicks(950, 4), (std::vector<double>{0, 500, 1000}));
  EXPECT_EQ(TimeTickStep(10'000, 8), 2000);
  EXPECT_EQ(TimeTickStep(600'000, 8), 120'000);
}

}  // namespace
}  // namespace headroom
