// Chrome trace-event JSON for --trace: complete events ("X") for jobs, one thread per lane, counter
// events ("C") for memory, instant events ("i") for headroom's decisions on their own track.
#include "headroom/report/trace_writer.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "headroom/util/byte_size.h"
#include "headroom/report/report_format.h"

namespace headroom {

namespace {

using nlohmann::json;

constexpr int kPid = 1;
constexpr int kDecisionsTid = 0;  // lanes are drawn below the decisions track, from tid 1

int64_t Micros(int64_t ms) { return ms * 1000; }

double Mebibytes(uint64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(kMiB); }

json Metadata(const char* what, int tid, const std::string& name) {
  return json{{"name", what}, {"ph", "M"}, {"pid", kPid}, {"tid", tid}, {"args", {{"name", name}}}};
}

json SortIndex(int tid) {
  return json{{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", kPid}, {"tid", tid}, {"args", {{"sort_index", tid}}}};
}

int64_t TimelineEnd(const BuildTimeline& timeline) {
  int64_t end = timeline.facts().duration_ms;
  for (const TimelineJob& job : timeline.jobs()) end = std::max({end, job.start_ms, job.end_ms});
  for (const MemorySample& sample : timeline.samples()) end = std::max(end, sample.t_ms);
  return end;
}

json JobEvent(const TimelineJob& job, int64_t timeline_end) {
  // A job the recorder never saw end (it should not happen) is drawn to the end of the build.
  const int64_t end = job.end_ms >= 0 ? job.end_ms : timeline_end;
  json args = {{"command", job.command},
               {"outcome", job.outcome},
               {"exit code", job.exit_code},
               {"peak", job.peak_bytes ? FormatBytes(job.peak_bytes) : "not measured"},
               {"peak bytes", job.peak_bytes},
               {"peak method", job.peak_method},
               {"estimate", job.estimate_bytes ? FormatBytes(job.estimate_bytes) : "none"},
               {"estimate bytes", job.estimate_bytes},
               {"source", job.estimate_source},
               {"class", job.class_key},
               {"waited for memory ms", job.waited_ms}};
  if (!job.exec_mode.empty()) args["ran"] = job.exec_mode;  // with a compile farm: remote, fell back or local
  return json{{"name", job.output},  {"cat", job.rule.empty() ? "job" : job.rule},
              {"ph", "X"},           {"ts", Micros(job.start_ms)},
              {"dur", Micros(std::max<int64_t>(0, end - job.start_ms))},
              {"pid", kPid},         {"tid", job.slot + 1},
              {"args", args}};
}

json Counter(const char* name, int64_t t_ms, const char* unit, double value) {
  return json{{"name", name}, {"ph", "C"}, {"ts", Micros(t_ms)}, {"pid", kPid}, {"args", {{unit, value}}}};
}

void AddCounters(const MemorySample& sample, json* events) {
  // One counter per quantity: chrome://tracing stacks the args of a single counter, which would
  // add the budget on top of the usage.
  events->push_back(Counter("memory used", sample.t_ms, "MiB", Mebibytes(sample.used_bytes)));
  events->push_back(Counter("memory budget", sample.t_ms, "MiB", Mebibytes(sample.budget_bytes)));
  events->push_back(Counter("memory reserved", sample.t_ms, "MiB", Mebibytes(sample.reserved_bytes)));
  events->push_back(Counter("machine memory used", sample.t_ms, "MiB", Mebibytes(sample.machine_used_bytes)));
  events->push_back(Counter("memory pressure", sample.t_ms, "%", sample.pressure_pct));
  events->push_back(Counter("jobs running", sample.t_ms, "jobs", sample.running));
  events->push_back(Counter("jobs waiting for memory", sample.t_ms, "jobs", sample.waiting));
}

json MarkerEvent(const TimelineMarker& marker) {
  return json{{"name", marker.kind + ": " + marker.output},
              {"cat", "decision"},
              {"ph", "i"},
              {"s", "t"},
              {"ts", Micros(marker.t_ms)},
              {"pid", kPid},
              {"tid", kDecisionsTid},
              {"args", {{"kind", marker.kind}, {"job", marker.output}, {"detail", marker.detail}}}};
}

json BuildMetadata(const BuildTimeline& timeline) {
  const BuildFacts& facts = timeline.facts();
  return json{{"tool", "headroom"},
              {"targets", facts.targets},
              {"working directory", facts.working_dir},
              {"result", facts.result},
              {"exit code", facts.exit_code},
              {"duration ms", facts.duration_ms},
              {"parallelism", facts.parallelism},
              {"memory aware", facts.memory_enabled},
              {"budget bytes", facts.budget_bytes},
              {"reserve bytes", facts.reserve_bytes}};
}

}  // namespace

std::string TraceJson(const BuildTimeline& timeline) {
  json events = json::array();
  events.push_back(Metadata("process_name", kDecisionsTid, "headroom build"));
  events.push_back(Metadata("thread_name", kDecisionsTid, "headroom decisions"));
  events.push_back(SortIndex(kDecisionsTid));
  int lanes = 0;
  for (const TimelineJob& job : timeline.jobs()) lanes = std::max(lanes, job.slot + 1);
  for (int lane = 0; lane < lanes; ++lane) {
    events.push_back(Metadata("thread_name", lane + 1, "lane " + std::to_string(lane + 1)));
    events.push_back(SortIndex(lane + 1));
  }
  const int64_t end = TimelineEnd(timeline);
  for (const TimelineJob& job : timeline.jobs()) events.push_back(JobEvent(job, end));
  for (const MemorySample& sample : timeline.samples()) AddCounters(sample, &events);
  for (const TimelineMarker& marker : timeline.markers()) events.push_back(MarkerEvent(marker));
  json trace = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}, {"otherData", BuildMetadata(timeline)}};
  // Commands and paths may hold bytes that are not UTF-8; replace them rather than fail the dump.
  return trace.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

bool WriteTrace(const BuildTimeline& timeline, const std::string& path, std::string* err) {
  return WriteOutputFile(path, TraceJson(timeline), err);
}

}  // namespace headroom
