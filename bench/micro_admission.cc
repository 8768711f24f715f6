// bench/micro_admission.cc: Google Benchmark micro-benchmarks of the admission decision
// (AdmissionPolicy::Decide and PlanTick, include/headroom/admission/admission_policy.h) with ~64 running jobs.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "headroom/admission/admission_policy.h"

namespace {

using headroom::kGiB;
using headroom::kMiB;

std::vector<headroom::RunningJob> Running(int n) {
  std::vector<headroom::RunningJob> jobs;
  for (int i = 0; i < n; ++i) {
    headroom::RunningJob j;
    j.id = static_cast<uint64_t>(i);
    j.class_key = "cxx:obj/component" + std::to_string(i % 13);
    j.predicted_peak = (200 + (i * 37) % 900) * kMiB;
    j.rss = j.predicted_peak / 2;
    j.peak_rss = j.rss;
    j.started_ms = 1000 + i * 10;
    j.last_growth_ms = j.started_ms + 500;
    j.heavy = j.predicted_peak >= 2 * kGiB;
    jobs.push_back(j);
  }
  return jobs;
}

headroom::MemoryReading Reading() {
  headroom::MemoryReading r;
  r.taken_at_ms = 5000;
  r.limit_bytes = 128 * kGiB;
  r.available_bytes = 60 * kGiB;
  r.used_bytes = r.limit_bytes - r.available_bytes;
  r.pressure_some_pct = 1.0;
  r.pressure_known = true;
  return r;
}

void BM_AdmissionDecide(benchmark::State& st) {
  const auto running = Running(static_cast<int>(st.range(0)));
  const auto reading = Reading();
  headroom::AdmissionPolicy policy;
  headroom::Candidate c;
  c.id = 999;
  c.class_key = "cxx:obj/component3";
  c.predicted_peak = 700 * kMiB;
  c.ready_since_ms = 4000;
  for (auto _ : st) {
    auto d = policy.Decide(reading, running, c, 5000);
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_AdmissionDecide)->Arg(8)->Arg(64)->Arg(256);

// One scheduling pass over 128 ready candidates with 64 running and 16 free slots.
void BM_AdmissionPlanTick(benchmark::State& st) {
  const auto running = Running(64);
  const auto reading = Reading();
  headroom::AdmissionPolicy policy;
  std::vector<headroom::Candidate> ready;
  for (int i = 0; i < 128; ++i) {
    headroom::Candidate c;
    c.id = 1000 + static_cast<uint64_t>(i);
    c.class_key = "cxx:obj/component" + std::to_string(i % 13);
    c.predicted_peak = (100 + (i * 53) % 1500) * kMiB;
    c.ready_since_ms = 4000;
    ready.push_back(c);
  }
  for (auto _ : st) {
    auto r = policy.PlanTick(reading, running, ready, 16, 5000);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_AdmissionPlanTick);

}  // namespace
