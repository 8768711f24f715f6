// `-t memstats [--json]`: what headroom measured (peaks, durations, how) per edge, per job class and per family,
// heaviest first, read from .ninja_headroom without modifying it; then the per-user store's heaviest edges.
#include <algorithm>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "headroom/util/byte_size.h"
#include "headroom/estimator/estimator.h"
#include "headroom/history/history_store.h"
#include "headroom/history/user_store.h"
#include "headroom/tools/tool_cli.h"
#include "headroom/tools/tools.h"
#include "headroom/util/messages.h"

namespace headroom {

namespace {

struct EdgeRow {
  std::string output;
  std::string class_key;
  uint64_t peak = 0;       // largest completed peak among the recent runs (a killed run's if none completed)
  uint64_t last_peak = 0;
  int64_t last_duration_ms = 0;
  size_t runs = 0;
  size_t killed = 0;
  const char* method = "unknown";
  RiseCurve last_rise;  // how the last run's memory rose (unknown before history format v2)
};

const char* MethodName(PeakMethod method) {
  switch (method) {
    case PeakMethod::kCgroup:
      return "cgroup";
    case PeakMethod::kProcessTree:
      return "sampled";
    case PeakMethod::kRusage:
      return "rusage";
    case PeakMethod::kUnknown:
      break;
  }
  return "unknown";
}

std::vector<EdgeRow> EdgeRows(const HistoryStore& history) {
  std::vector<EdgeRow> rows;
  for (const auto& [output, edge] : history.edges()) {
    if (edge.recent.empty()) continue;
    EdgeRow row;
    row.output = output;
    row.class_key = history.ClassById(edge.class_id).key();
    row.runs = edge.recent.size();
    const HistoryRecord& last = edge.recent.back();
    row.last_peak = last.peak_bytes;
    row.last_duration_ms = last.duration_ms;
    row.method = MethodName(last.method);
    row.last_rise = last.rise;
    for (const HistoryRecord& record : edge.recent) {
      if (record.killed()) ++row.killed;
      row.peak = std::max(row.peak, record.peak_bytes);
    }
    rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end(), [](const EdgeRow& a, const EdgeRow& b) {
    return a.peak != b.peak ? a.peak > b.peak : a.output < b.output;
  });
  return rows;
}

std::vector<const ClassStats*> ClassRows(const HistoryStore& history) {
  std::vector<const ClassStats*> rows;
  for (const ClassStats& stats : history.classes()) {
    if (stats.completed() || stats.killed()) rows.push_back(&stats);
  }
  std::sort(rows.begin(), rows.end(), [](const ClassStats* a, const ClassStats* b) {
    return a->max_peak() != b->max_peak() ? a->max_peak() > b->max_peak() : a->key() < b->key();
  });
  return rows;
}

constexpr size_t kStoreEdgesShown = 20;

// The store's edges, heaviest first (at most kStoreEdgesShown): what a new build dir would start from.
std::vector<EdgeRow> StoreRows(const UserStore& store) {
  std::vector<EdgeRow> rows;
  for (const auto& [key, stored] : store.contents().edges) {
    const RecentRuns& runs = stored.history.recent;
    if (runs.empty()) continue;
    EdgeRow row;
    row.output = stored.output;
    row.runs = runs.size();
    row.last_peak = runs.back().peak_bytes;
    row.last_duration_ms = runs.back().duration_ms;
    row.method = MethodName(runs.back().method);
    row.last_rise = runs.back().rise;
    for (const HistoryRecord& record : runs) {
      if (record.killed()) ++row.killed;
      row.peak = std::max(row.peak, record.peak_bytes);
    }
    rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end(), [](const EdgeRow& a, const EdgeRow& b) {
    return a.peak != b.peak ? a.peak > b.peak : a.output < b.output;
  });
  if (rows.size() > kStoreEdgesShown) rows.resize(kStoreEdgesShown);
  return rows;
}

std::string TenthsOfSeconds(int64_t ms) { return fmt::format("{:.1f}s", static_cast<double>(ms) / 1000.0); }

// Where in its run the last run was still below 90 % of its peak ("at 45%"), or "-" without a curve.
std::string NinetyPercentAt(const RiseCurve& rise) {
  if (!rise.known()) return "-";
  return fmt::format("{:.0f}%", 100.0 * rise.below.back() / RiseCurve::kScale);
}

void PrintEdgeRows(const std::vector<EdgeRow>& edges) {
  // "<90% until": how far into the last run its memory stayed under 90 % of its peak (its rise curve).
  printf("  %10s  %10s  %9s  %11s  %4s  %6s  %-8s  %s\n", "peak", "last", "duration", "<90% until", "runs", "killed",
         "measured", "output");
  for (const EdgeRow& row : edges) {
    printf("  %10s  %10s  %9s  %11s  %4zu  %6zu  %-8s  %s\n", FormatBytes(row.peak).c_str(),
           FormatBytes(row.last_peak).c_str(), TenthsOfSeconds(row.last_duration_ms).c_str(),
           NinetyPercentAt(row.last_rise).c_str(), row.runs, row.killed, row.method, row.output.c_str());
  }
}

void PrintStoreText(const UserStore& store, const std::vector<EdgeRow>& rows) {
  printf("user store %s (%zu edges, %zu classes; heaviest %zu edges):\n", store.dir().c_str(), store.edge_count(),
         store.class_count(), rows.size());
  PrintEdgeRows(rows);
}

nlohmann::json EdgeJson(const EdgeRow& row) {
  nlohmann::json out = {{"output", row.output},
                        {"peak_bytes", row.peak},
                        {"last_peak_bytes", row.last_peak},
                        {"last_duration_ms", row.last_duration_ms},
                        {"last_rise", row.last_rise.Format()},
                        {"runs", row.runs},
                        {"killed_runs", row.killed},
                        {"measured_by", row.method}};
  if (!row.class_key.empty()) out["class"] = row.class_key;
  return out;
}

void PrintFamiliesText(const std::vector<FamilyStats>& families) {
  printf("families (%zu, heaviest first; a family is the classes that differ only in define values):\n",
         families.size());
  printf("  %10s  %10s  %9s  %5s  %7s  %s\n", "max", "p90", "mean dur", "jobs", "classes", "family");
  for (const FamilyStats& family : families) {
    printf("  %10s  %10s  %9s  %5llu  %7zu  %s\n", FormatBytes(family.max_peak).c_str(),
           FormatBytes(family.high_peak).c_str(), TenthsOfSeconds(family.mean_duration_ms).c_str(),
           static_cast<unsigned long long>(family.completed), family.classes, family.key.c_str());
  }
}

nlohmann::json FamiliesJson(const std::vector<FamilyStats>& families) {
  nlohmann::json out = nlohmann::json::array();
  for (const FamilyStats& family : families) {
    out.push_back({{"family", family.key},
                   {"max_peak_bytes", family.max_peak},
                   {"p90_peak_bytes", family.high_peak},  // the largest member class's p90
                   {"mean_duration_ms", family.mean_duration_ms},
                   {"completed_jobs", family.completed},
                   {"classes", family.classes}});
  }
  return out;
}

void PrintText(const std::vector<EdgeRow>& edges, const std::vector<const ClassStats*>& classes) {
  printf("edges (%zu, heaviest first):\n", edges.size());
  PrintEdgeRows(edges);
  printf("classes (%zu, heaviest first):\n", classes.size());
  printf("  %10s  %10s  %9s  %5s  %6s  %s\n", "max", "p90", "mean dur", "jobs", "killed", "class");
  for (const ClassStats* stats : classes) {
    printf("  %10s  %10s  %9s  %5llu  %6llu  %s\n", FormatBytes(stats->max_peak()).c_str(),
           FormatBytes(stats->PeakQuantile(0.9)).c_str(), TenthsOfSeconds(stats->MeanDurationMs()).c_str(),
           static_cast<unsigned long long>(stats->completed()), static_cast<unsigned long long>(stats->killed()),
           stats->key().c_str());
  }
}

void PrintJson(const std::vector<EdgeRow>& edges, const std::vector<const ClassStats*>& classes,
               const std::vector<FamilyStats>& families, const UserStore* store,
               const std::vector<EdgeRow>& store_rows) {
  nlohmann::json out;
  out["edges"] = nlohmann::json::array();
  for (const EdgeRow& row : edges) out["edges"].push_back(EdgeJson(row));
  out["classes"] = nlohmann::json::array();
  for (const ClassStats* stats : classes) {
    out["classes"].push_back({{"class", stats->key()},
                              {"max_peak_bytes", stats->max_peak()},
                              {"p90_peak_bytes", stats->PeakQuantile(0.9)},
                              {"mean_duration_ms", stats->MeanDurationMs()},
                              {"completed_jobs", stats->completed()},
                              {"killed_jobs", stats->killed()}});
  }
  out["families"] = FamiliesJson(families);
  if (store) {
    nlohmann::json heaviest = nlohmann::json::array();
    for (const EdgeRow& row : store_rows) heaviest.push_back(EdgeJson(row));
    out["user_store"] = {{"dir", store->dir()},
                         {"edges", store->edge_count()},
                         {"classes", store->class_count()},
                         {"heaviest_edges", heaviest}};
  }
  printf("%s\n", out.dump(2).c_str());
}

}  // namespace

int ToolMemStats(const ToolContext& context, const ToolArgs& args) {
  bool json = false;
  ToolCli cli("memstats",
              "show the peak memory and duration headroom measured, per edge, per job class and per family,\n"
              "then the per-user store's heaviest edges");
  cli.app().add_flag("--json", json, "one JSON object for machines");
  if (std::optional<int> exit_code = cli.Parse(args)) return *exit_code;
  const std::string path = context.build_dir.empty() ? std::string(HistoryStore::kFileName)
                                                     : context.build_dir + "/" + HistoryStore::kFileName;
  HistoryStore history;
  std::string warning = history.LoadForReading(path);
  if (!warning.empty()) Warning("{}", warning);
  std::vector<EdgeRow> edges = EdgeRows(history);
  std::vector<const ClassStats*> classes = ClassRows(history);
  // Families as the estimator groups them: what a class with no data of its own is sized from.
  const std::vector<FamilyStats> families = Estimator(&history, {}).Families();
  // The store is shown once it holds something: what a new build dir, or this one's unmeasured edges, start from.
  std::unique_ptr<UserStore> store;
  std::vector<EdgeRow> store_rows;
  if (!context.options->store_dir.empty()) {
    store = std::make_unique<UserStore>(context.options->store_dir, PathNormaliser::ForBuild(""));
    if (std::string warning = store->Load(); !warning.empty()) Warning("{}", warning);
    if (store->edge_count() == 0 && store->class_count() == 0) store.reset();
    if (store) store_rows = StoreRows(*store);
  }
  if (json) {
    PrintJson(edges, classes, families, store.get(), store_rows);
  } else {
    PrintText(edges, classes);
    PrintFamiliesText(families);
    if (store) PrintStoreText(*store, store_rows);
  }
  return 0;
}

}  // namespace headroom
