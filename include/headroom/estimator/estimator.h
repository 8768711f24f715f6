// Predicts a job's peak memory and duration from, best first: this edge's history, the user's headroom_mem
// hint, finished jobs of the same class, then of the same family (this build or earlier ones), and priors read
// from the command.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "headroom/estimator/priors.h"
#include "headroom/history/history_store.h"
#include "headroom/history/user_store.h"

namespace headroom {

enum class EstimateSource { kEdgeHistory, kUserHint, kClassHistory, kFamilyHistory, kPrior };
const char* EstimateSourceName(EstimateSource source);

// What the estimator needs to know about a job; no graph types, so it is testable on its own.
struct JobDescription {
  std::string_view output;           // first output path: the history key with command_hash.
  uint64_t command_hash = 0;         // the same hash ninja's log uses for the command.
  std::string_view command;
  std::string_view rule;
  std::string_view rspfile_content;  // $rspfile_content, for link inputs behind @file; may be empty.
  std::optional<std::string_view> mem_hint;  // value of the edge variable headroom_mem ("4G"), if set.
};

// Class and family keys, each kept once: every job of a class shares its key (a large build has thousands of
// edges per class, and a key holds the command's flags), so profiles and estimates hold views into a pool.
// Views stay valid for the pool's life: the set's nodes never move.
class KeyPool {
 public:
  std::string_view Intern(std::string_view key);
  size_t size() const { return keys_.size(); }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  std::unordered_set<std::string, Hash, std::equal_to<>> keys_;
};

struct Estimate {
  uint64_t peak_bytes = 0;
  int64_t duration_ms = 0;     // 0 = unknown (no history): priority falls back to edge counts.
  EstimateSource source = EstimateSource::kPrior;
  bool unknown_heavy = false;  // a heavy prior for a class never measured: admit one probe job first.
  // Measured with confidence: this edge's own completed runs, or a class with class_confident_samples
  // completed jobs. Admission trusts such estimates enough to skip staggering when memory is plentiful.
  bool confident = false;
  RiseCurve rise;              // how its memory rose in this edge's completed runs (unknown for other sources)
  std::string_view class_key;  // interned by the estimator (KeyPool): valid while it lives
  std::string_view family_key;
  std::string why;             // "edge history: max of 3 runs x1.10"; empty when Predict was asked not to say
};

// Whether Predict writes Estimate::why: a build only needs it for -d explain, and formatting it for every
// prediction of every waiting edge costs time and, kept per edge, memory.
enum class EstimateDetail { kFiguresOnly, kWithWhy };

// What the estimator reads from a job's command, which never changes during a build: parsed once per job
// and handed back to Predict, so re-predicting after the history learned something costs lookups only.
struct JobProfile {
  std::string_view class_key;   // interned by the estimator (KeyPool): valid while it lives
  std::string_view family_key;  // FamilyKeyOfClassKey(class_key), interned too
  Prior prior;
  uint64_t store_key = 0;  // the edge's key in the user store (UserStore::EdgeKey); 0 without a store
};

// What completed jobs of one family measured: the union of its classes (see FamilyKeyOfClassKey).
struct FamilyStats {
  std::string key;
  uint64_t completed = 0;       // completed jobs over all member classes
  size_t classes = 0;           // member classes with at least one completed job
  uint64_t high_peak = 0;       // the largest member class's class_quantile peak
  uint64_t max_peak = 0;
  int64_t mean_duration_ms = 0;
};

struct EstimatorConfig {
  PriorConstants priors;
  size_t edge_window = 4;                  // how many recent runs of the edge the max is taken over.
  double edge_margin = 1.10;               // polled peaks: polling misses short spikes.
  // One run measured exactly (cgroup): its peak is not in doubt, only how much the next run differs.
  double edge_exact_single_margin = 1.05;
  // With two or more completed runs measured exactly (cgroup), the margin follows their spread instead:
  // edge_spread_factor x (max/min - 1), at least edge_margin_floor, at most edge_margin.
  double edge_margin_floor = 1.03;
  double edge_spread_factor = 2.0;
  double killed_factor = 1.5;              // a killed job was still growing: it needs at least this much more.
  double class_quantile = 0.9;
  double class_margin = 1.15;              // class members differ more than reruns of one edge do.
  // Once a class has this many completed samples its p90 is measured, not guessed: a smaller margin.
  uint64_t class_confident_samples = 10;
  double class_confident_margin = 1.05;
  // A family (classes that differ only in defines) stands in for a class without data. Its members differ
  // more than one class's do: margin = family_margin_base + family_margin_spread / sqrt(completed jobs).
  double family_margin_base = 1.05;
  double family_margin_spread = 0.20;
  uint64_t heavy_threshold = 2 * kGiB;     // priors at or above this are "heavy": probe the class first.
  uint64_t minimum_estimate = 16 * kMiB;   // nothing is free: a shell alone costs a few MiB.
};

class Estimator {
 public:
  // `history` may be null (no learning); `sizes` may be empty (linkers then use the unknown-inputs prior).
  Estimator(HistoryStore* history, FileSizeFn sizes, EstimatorConfig config = {});

  // Parses the command: class key and prior. Callers keep it per job.
  JobProfile Profile(const JobDescription& job) const;
  // The estimate from a job's profile and the history as it is now: hash lookups, no parsing.
  Estimate Predict(const JobDescription& job, const JobProfile& profile,
                   EstimateDetail detail = EstimateDetail::kWithWhy) const;
  // Both in one, for callers that predict a job once.
  Estimate Predict(const JobDescription& job) const { return Predict(job, Profile(job)); }

  // Stores a finished or killed job in the history (file and memory), so later predictions of the same
  // edge and class in this build already use it. Returns false with *error when the file write failed.
  // `profile` saves re-parsing the command when the caller kept it.
  bool Learn(const JobDescription& job, const HistoryRecord& record, std::string* error,
             const JobProfile* profile = nullptr);

  // The per-user store: its edge figures stand in where the build dir has none for an edge, and Learn adds
  // to it. Its class figures reach the estimator through HistoryStore (UserStore::SeedClasses, run by the
  // store's EnsureLoaded before the first prediction when it was opened with LoadLazily). May be null.
  void set_user_store(UserStore* store) { user_store_ = store; }

  // A key kept in the estimator's pool (a profile's keys must outlive it), e.g. a class key per execution mode.
  std::string_view InternKey(std::string_view key) const { return keys_.Intern(key); }
  // Whether a job of this class has finished before (this build, earlier ones, or the user store's).
  bool KnowsClass(std::string_view class_key) const { return history_ && history_->FindClass(class_key); }

  // Counts Learn calls that changed the history: an estimate made at an older generation may be stale.
  uint64_t generation() const { return generation_; }

  // The families known from the history, largest first (for -t memstats).
  std::vector<FamilyStats> Families() const;

  // Whether any measurement exists: without one, every estimate is a prior with no duration.
  bool HasHistory() const {
    if (user_store_) user_store_->EnsureLoaded();  // asked before the first prediction, by the plan's priorities
    return history_ && (history_->edge_count() > 0 || history_->class_count() > 0 ||
                        (user_store_ && user_store_->edge_count() > 0));
  }

  const EstimatorConfig& config() const { return config_; }

 private:
  std::optional<Estimate> FromEdgeHistory(const JobDescription& job, const JobProfile& profile, bool why) const;
  std::optional<Estimate> FromHint(const JobDescription& job, bool why) const;
  std::optional<Estimate> FromClass(std::string_view class_key, bool why) const;
  std::optional<Estimate> FromFamily(std::string_view family_key, bool why) const;
  uint64_t Floor(uint64_t bytes) const;
  double EdgeMargin(const EdgeHistory& edge, size_t window_start) const;
  void SizeCompileServerJob(const Prior& prior, bool why, Estimate* estimate) const;
  // Family figures are derived from the history's classes, grouped when first needed and kept current by Learn.
  void IndexFamilies() const;
  void NoteClass(uint32_t class_id) const;
  void Refresh(FamilyStats& family) const;

  HistoryStore* history_;
  UserStore* user_store_ = nullptr;
  FileSizeFn sizes_;
  EstimatorConfig config_;
  uint64_t generation_ = 0;
  mutable KeyPool keys_;  // class and family keys of every profile made
  mutable bool families_indexed_ = false;
  mutable size_t classes_indexed_ = 0;                         // history classes grouped so far
  mutable std::unordered_map<std::string, size_t, HistoryStore::StringHash, std::equal_to<>>
      family_index_;  // family key -> families_ position
  mutable std::vector<FamilyStats> families_;
  mutable std::vector<std::vector<uint32_t>> family_members_;     // class ids, parallel to families_
};

}  // namespace headroom
