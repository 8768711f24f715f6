// Tests for .headroom_history: round trips, append-only records, compaction, damage recovery, load speed.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "headroom/history/history_store.h"

namespace headroom {
namespace {

namespace fs = std::filesystem;

class HistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("headroom_history_test_{}_{}", ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                       static_cast<long>(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / HistoryStore::kFileName).string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string ReadFile() const {
    std::ifstream in(path_, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  void WriteFile(const std::string& text) const { std::ofstream(path_, std::ios::binary) << text; }

  static HistoryRecord Rec(uint64_t peak, int64_t ms = 100, JobOutcome outcome = JobOutcome::kCompleted) {
    return {peak, ms, PeakMethod::kProcessTree, outcome};
  }

  fs::path dir_;
  std::string path_;
};

TEST_F(HistoryTest, MissingFileStartsEmptyAndWritesAHeader) {
  HistoryStore store;
  EXPECT_EQ(store.Open(path_), "");
  EXPECT_EQ(store.edge_count(), 0u);
  store.Close();
  EXPECT_EQ(ReadFile(), "# headroom history v2\n");
}

TEST_F(HistoryTest, ARunsRiseCurveSurvivesAReload) {
  std::string error;
  HistoryRecord ramp = Rec(1000, 800);
  ramp.rise.below = {10, 40, 90, 120};
  {
    HistoryStore store;
    ASSERT_EQ(store.Open(path_), "");
    ASSERT_TRUE(store.Record("ramp.o", 1, "K", ramp, &error)) << error;
    ASSERT_TRUE(store.Record("flat.o", 2, "K", Rec(10), &error)) << error;
  }
  EXPECT_NE(ReadFile().find("\t10/40/90/120\tramp.o\n"), std::string::npos) << ReadFile();
  EXPECT_NE(ReadFile().find("\t-\tflat.o\n"), std::string::npos) << ReadFile();
  HistoryStore store;
  ASSERT_EQ(store.Open(path_), "");
  EXPECT_EQ(store.FindEdge("ramp.o", 1)->recent[0].rise, ramp.rise);
  EXPECT_FALSE(store.FindEdge("flat.o", 2)->recent[0].rise.known());
}

TEST_F(HistoryTest, AVersion1FileIsReadAndRewrittenAsVersion2WithoutAWarning) {
  WriteFile("# headroom history v1\nC\t0\tK\nE\t0\t0000000000000001\t100\t5\tc\tc\ta.o\n");
  std::string error;
  {
    HistoryStore store;
    ASSERT_EQ(store.Open(path_), "") << "an older format is no damage";
    const EdgeHistory* a = store.FindEdge("a.o", 1);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->recent[0].peak_bytes, 100u);
    EXPECT_FALSE(a->recent[0].rise.known());
    HistoryRecord later = Rec(120, 6);
    later.rise.below = {1, 2, 3, 4};
    ASSERT_TRUE(store.Record("a.o", 1, "K", later, &error)) << error;
  }
  EXPECT_EQ(ReadFile().substr(0, 22), "# headroom history v2\n");
  HistoryStore store;
  ASSERT_EQ(store.Open(path_), "");
  const EdgeHistory* a = store.FindEdge("a.o", 1);
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->recent.size(), 2u) << ReadFile();
  EXPECT_EQ(a->recent[1].rise.Format(), "1/2/3/4");
}

TEST_F(HistoryTest, ABadRiseCurveIsDamage) {
  for (const char* bad : {"1/2/3", "9/8/7/6", "x", ""}) {
    WriteFile(fmt::format("# headroom history v2\nC\t0\tK\nE\t0\t0000000000000001\t100\t5\tc\tc\t{}\ta.o\n", bad));
    HistoryStore store;
    EXPECT_NE(store.LoadForReading(path_).find("corrupt at line 3"), std::string::npos) << bad;
    EXPECT_EQ(store.edge_count(), 0u) << bad;
  }
}

TEST_F(HistoryTest, RecordsSurviveAReloadWithEscapedNames) {
  std::string error;
  {
    HistoryStore store;
    ASSERT_EQ(store.Open(path_), "");
    ASSERT_TRUE(store.Record("obj/a\tb.o", 0xabcdef, "CXX g++ -O2", Rec(100, 7), &error)) << error;
    ASSERT_TRUE(store.Record("obj/c.o", 0x1, "CXX g++ -O2", Rec(300, 9, JobOutcome::kOomKilled), &error));
    ASSERT_TRUE(store.Record("k.o", 0x2, "CUDA nvcc\n-gencode", Rec(5000), &error));
  }
  HistoryStore store;
  ASSERT_EQ(store.Open(path_), "");
  const EdgeHistory* a = store.FindEdge("obj/a\tb.o", 0xabcdef);
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->recent.size(), 1u);
  EXPECT_EQ(a->recent[0].peak_bytes, 100u);
  EXPECT_EQ(a->recent[0].duration_ms, 7);
  EXPECT_EQ(a->recent[0].method, PeakMethod::kProcessTree);
  EXPECT_EQ(store.FindEdge("obj/c.o", 0x1)->recent[0].outcome, JobOutcome::kOomKilled);
  EXPECT_EQ(store.FindEdge("obj/a\tb.o", 0x999), nullptr);  // other command: no history.
  const ClassStats* cxx = store.FindClass("CXX g++ -O2");
  ASSERT_NE(cxx, nullptr);
  EXPECT_EQ(cxx->completed(), 1u);
  EXPECT_EQ(cxx->killed(), 1u);
  ASSERT_NE(store.FindClass("CUDA nvcc\n-gencode"), nullptr);
  EXPECT_EQ(store.FindClass("CUDA nvcc\n-gencode")->max_peak(), 5000u);
}

TEST_F(HistoryTest, KeepsOnlyTheLastFewRunsPerEdgeAndClassAggregates) {
  HistoryStore store;
  std::string error;
  for (uint64_t i = 1; i <= 20; ++i) ASSERT_TRUE(store.Record("a.o", 1, "K", Rec(i * 10, i), &error));
  const EdgeHistory* edge = store.FindEdge("a.o", 1);
  ASSERT_NE(edge, nullptr);
  ASSERT_EQ(edge->recent.size(), HistoryStore::kRecentPerEdge);
  EXPECT_EQ(edge->recent.front().peak_bytes, 130u);
  EXPECT_EQ(edge->recent.back().peak_bytes, 200u);
  const ClassStats* stats = store.FindClass("K");
  EXPECT_EQ(stats->completed(), 20u);
  EXPECT_EQ(stats->max_peak(), 200u);
  EXPECT_EQ(stats->PeakQuantile(0.9), 180u);
  EXPECT_EQ(stats->PeakQuantile(0.5), 100u);
  EXPECT_EQ(stats->MeanDurationMs(), 10);
  // A new command hash starts the edge afresh.
  ASSERT_TRUE(store.Record("a.o", 2, "K", Rec(1), &error));
  EXPECT_EQ(store.FindEdge("a.o", 1), nullptr);
  EXPECT_EQ(store.FindEdge("a.o", 2)->recent.size(), 1u);
}

// A build keeps in memory only what it may estimate again: a killed run (its requeue). Completed runs still
// reach the file and their class, and the next build reads them back.
TEST_F(HistoryTest, WithoutKeepingCompletedRunsABuildHoldsOnlyKillsAndClasses) {
  std::string error;
  {
    HistoryStore store;
    store.set_keep_completed_runs(false);
    ASSERT_EQ(store.Open(path_), "");
    ASSERT_TRUE(store.Record("done.o", 1, "K", Rec(100, 7), &error)) << error;
    ASSERT_TRUE(store.Record("killed.o", 2, "K", Rec(300, 9, JobOutcome::kSafetyKilled), &error)) << error;
    EXPECT_EQ(store.FindEdge("done.o", 1), nullptr);
    EXPECT_EQ(store.edge_count(), 1u);
    ASSERT_NE(store.FindEdge("killed.o", 2), nullptr);
    EXPECT_EQ(store.FindEdge("killed.o", 2)->recent.back().outcome, JobOutcome::kSafetyKilled);
    ASSERT_NE(store.FindClass("K"), nullptr);
    EXPECT_EQ(store.FindClass("K")->completed(), 1u);
    EXPECT_EQ(store.FindClass("K")->killed(), 1u);
    EXPECT_EQ(store.FindClass("K")->max_peak(), 100u);
  }
  HistoryStore next;
  ASSERT_EQ(next.Open(path_), "");
  ASSERT_NE(next.FindEdge("done.o", 1), nullptr);
  EXPECT_EQ(next.FindEdge("done.o", 1)->recent.back().peak_bytes, 100u);
  EXPECT_EQ(next.FindEdge("killed.o", 2)->recent.size(), 1u);
  EXPECT_EQ(next.FindClass("K")->completed(), 1u);
}

TEST(RecentRunsTest, ReadsLikeAVectorFromTheFirstRunToTheLastFew) {
  RecentRuns runs;
  EXPECT_TRUE(runs.empty());
  EXPECT_EQ(runs.begin(), runs.end());
  for (uint64_t i = 1; i <= 11; ++i) {
    runs.Add({i, static_cast<int64_t>(i), PeakMethod::kCgroup, JobOutcome::kCompleted});
    ASSERT_EQ(runs.size(), std::min<size_t>(i, RecentRuns::kCapacity));
    EXPECT_EQ(runs.back().peak_bytes, i);
    EXPECT_EQ(runs.front().peak_bytes, i <= RecentRuns::kCapacity ? 1 : i - RecentRuns::kCapacity + 1);
  }
  uint64_t expected = 11 - RecentRuns::kCapacity + 1;
  for (const HistoryRecord& record : runs) EXPECT_EQ(record.peak_bytes, expected++);
  runs.clear();  // a new command
  EXPECT_TRUE(runs.empty());
  runs.Add({42, 1, PeakMethod::kRusage, JobOutcome::kOomKilled});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].peak_bytes, 42u);
  EXPECT_EQ(runs[0].outcome, JobOutcome::kOomKilled);
}

// Names are kept in shared blocks; one longer than a block, and many small ones, read back intact.
TEST_F(HistoryTest, LongAndManyNamesSurviveAReload) {
  const std::string long_name = "obj/" + std::string(70 * 1024, 'x') + ".o";
  std::string error;
  {
    HistoryStore store;
    ASSERT_EQ(store.Open(path_), "");
    for (int i = 0; i < 3000; ++i) {
      ASSERT_TRUE(store.Record(fmt::format("obj/dir{}/file{}.o", i % 7, i), 1, "K", Rec(i), &error));
      if (i == 1500) ASSERT_TRUE(store.Record(long_name, 2, "K", Rec(7), &error));
    }
  }
  HistoryStore store;
  ASSERT_EQ(store.Open(path_), "");
  EXPECT_EQ(store.edge_count(), 3001u);
  ASSERT_NE(store.FindEdge(long_name, 2), nullptr);
  EXPECT_EQ(store.FindEdge(long_name, 2)->recent[0].peak_bytes, 7u);
  for (int i = 0; i < 3000; ++i) {
    const EdgeHistory* edge = store.FindEdge(fmt::format("obj/dir{}/file{}.o", i % 7, i), 1);
    ASSERT_NE(edge, nullptr) << i;
    EXPECT_EQ(edge->recent[0].peak_bytes, static_cast<uint64_t>(i));
  }
  EXPECT_EQ(store.edges()[1501].first, long_name);
}

// Record lines written by hand: the fast reader takes headroom's own spelling, the general one the rest,
// and both refuse the same damage.
TEST_F(HistoryTest, RecordLinesOutsideHeadroomsSpellingStillReadTheSame) {
  WriteFile("# headroom history v1\nC\t0\tK\n"
            "E\t0\t00000000000000abc\t100\t5\tc\tc\ta.o\n"       // 17 hex digits with a leading zero
            "E\t00000000000\t1\t00000000000000000000200\t6\tt\to\tb.o\n"  // long zero-padded numbers
            "E\t0\tAbC\t300\t7\tr\ts\tc\\td.o\n");                // upper-case hex, an escaped name
  HistoryStore store;
  ASSERT_EQ(store.LoadForReading(path_), "");
  ASSERT_NE(store.FindEdge("a.o", 0xabc), nullptr);
  EXPECT_EQ(store.FindEdge("a.o", 0xabc)->recent[0].peak_bytes, 100u);
  ASSERT_NE(store.FindEdge("b.o", 1), nullptr);
  EXPECT_EQ(store.FindEdge("b.o", 1)->recent[0].peak_bytes, 200u);
  EXPECT_EQ(store.FindEdge("b.o", 1)->recent[0].outcome, JobOutcome::kOomKilled);
  ASSERT_NE(store.FindEdge("c\td.o", 0xabc), nullptr);
  EXPECT_EQ(store.FindEdge("c\td.o", 0xabc)->recent[0].method, PeakMethod::kRusage);
  for (const char* bad : {"E\t0\t1\t99999999999999999999\t5\tc\tc\tx.o\n",  // peak beyond 64 bits
                          "E\t0\t1\t100\t-5\tc\tc\tx.o\n",                   // negative duration
                          "E\t0\t1\t100\t5\tcc\tc\tx.o\n",                   // two-letter method
                          "E\t0\t1\t100\t5\tc\tc\t\n",                       // no name
                          "E\t1\t1\t100\t5\tc\tc\tx.o\n"}) {                 // unknown class
    WriteFile(std::string("# headroom history v1\nC\t0\tK\n") + bad);
    HistoryStore damaged;
    EXPECT_NE(damaged.LoadForReading(path_).find("corrupt at line 3"), std::string::npos) << bad;
    EXPECT_EQ(damaged.edge_count(), 0u) << bad;
  }
}

// Figures at the edge of their types (a damaged or hostile file, or an imported one) are clamped as they are
// read, so the class's duration sum and the estimator's scaling never overflow (UB the sanitizer stage reports).
TEST_F(HistoryTest, ExtremeFiguresAreClampedAsTheyAreRead) {
  WriteFile("# headroom history v1\nC\t0\tK\n"
            "E\t0\t1\t18446744073709551615\t9223372036854775807\tc\tc\ta.o\n"
            "E\t0\t2\t18446744073709551614\t9223372036854775806\tc\tc\tb.o\n"
            "E\t0\t3\t100\t9223372036854775807\tc\tc\tc.o\n");
  HistoryStore store;
  ASSERT_EQ(store.LoadForReading(path_), "");
  ASSERT_NE(store.FindEdge("a.o", 1), nullptr);
  EXPECT_EQ(store.FindEdge("a.o", 1)->recent[0].peak_bytes, kMaxRecordedPeakBytes);
  EXPECT_EQ(store.FindEdge("a.o", 1)->recent[0].duration_ms, kMaxRecordedDurationMs);
  const ClassStats* stats = store.FindClass("K");
  ASSERT_NE(stats, nullptr);
  EXPECT_EQ(stats->max_peak(), kMaxRecordedPeakBytes);
  EXPECT_EQ(stats->MeanDurationMs(), kMaxRecordedDurationMs);
}

TEST(ClassStatsTest, RawExtremeFiguresNeitherWrapNorOverflowTheSum) {
  ClassStats stats("K");
  for (int i = 0; i < 3; ++i) {
    stats.Add({std::numeric_limits<uint64_t>::max(), std::numeric_limits<int64_t>::max(), PeakMethod::kCgroup,
               JobOutcome::kCompleted});
  }
  stats.Add({1, -5, PeakMethod::kCgroup, JobOutcome::kCompleted});  // a negative duration counts as 0
  EXPECT_EQ(stats.max_peak(), kMaxRecordedPeakBytes);
  EXPECT_EQ(stats.MeanDurationMs(), 3 * kMaxRecordedDurationMs / 4);
}

TEST_F(HistoryTest, ExtremeFiguresAreWrittenClamped) {
  std::string error;
  {
    HistoryStore store;
    ASSERT_EQ(store.Open(path_), "");
    ASSERT_TRUE(store.Record("a.o", 1, "K", {std::numeric_limits<uint64_t>::max(), 7, PeakMethod::kCgroup},
                             &error));
  }
  EXPECT_NE(ReadFile().find(fmt::format("\t{}\t7\t", kMaxRecordedPeakBytes)), std::string::npos) << ReadFile();
}

TEST_F(HistoryTest, CompactsABloatedFileOnOpen) {
  std::string error;
  {
    HistoryStore store;
    ASSERT_EQ(store.Open(path_), "");
    for (int i = 0; i < 2000; ++i) ASSERT_TRUE(store.Record(fmt::format("e{}.o", i % 10), 1, "K", Rec(i), &error));
    EXPECT_EQ(store.records_in_file(), 2000u);
  }
  HistoryStore store;
  ASSERT_EQ(store.Open(path_), "");
  EXPECT_EQ(store.records_in_file(), 80u);  // 10 edges x 8 recent runs.
  EXPECT_FALSE(fs::exists(path_ + ".tmp"));
  ASSERT_TRUE(store.Record("new.o", 1, "K2", Rec(1), &error));
  store.Close();
  HistoryStore reloaded;
  ASSERT_EQ(reloaded.Open(path_), "");
  EXPECT_EQ(reloaded.edge_count(), 11u);
  EXPECT_EQ(reloaded.FindEdge("e3.o", 1)->recent.back().peak_bytes, 1993u);
  EXPECT_NE(reloaded.FindClass("K2"), nullptr);
}

// Compaction writes an exclusive temp file of its own: a symlink planted under the fixed name an older
// headroom used (.ninja_headroom.tmp) or a pid-named one is never written through.
TEST_F(HistoryTest, CompactionNeverWritesThroughAPlantedSymlink) {
  const fs::path victim = dir_ / "victim";
  std::ofstream(victim) << "untouched\n";
  fs::create_symlink(victim, path_ + ".tmp");
  WriteFile("# headroom history v2\nC\t0\tK\nE\t0\t1\t100\t5\tc\tc\t-\ta.o\nQ\n");  // damaged: rewritten
  HistoryStore store;
  EXPECT_NE(store.Open(path_).find("corrupt"), std::string::npos);
  store.Close();
  std::ifstream in(victim);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "untouched");
  EXPECT_EQ(ReadFile().rfind("# headroom history v2\n", 0), 0u);
  EXPECT_EQ(ReadFile().find("Q"), std::string::npos);
}

// Two processes compacting one build dir's bloated history at once always leave one whole, valid file.
TEST_F(HistoryTest, TwoProcessesCompactingAtOnceLeaveAValidFile) {
  std::string text = "# headroom history v2\nC\t0\tK\n";
  for (int i = 0; i < 4000; ++i) text += fmt::format("E\t0\t1\t{}\t5\tc\tc\t-\to{}.o\n", 100 + i, i % 100);
  for (int round = 0; round < 5; ++round) {
    WriteFile(text);
    pid_t children[2];
    for (pid_t& child : children) {
      child = fork();
      if (child == 0) {
        HistoryStore store;
        _exit(store.Open(path_).empty() ? 0 : 1);
      }
    }
    for (pid_t child : children) {
      int status = 0;
      ASSERT_EQ(waitpid(child, &status, 0), child);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    HistoryStore reader;
    EXPECT_EQ(reader.LoadForReading(path_), "");
    EXPECT_EQ(reader.edge_count(), 100u);
  }
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
  }
}

TEST_F(HistoryTest, ForeignFileIsReportedOnceAndReplaced) {
  WriteFile("# ninja log v7\n1\t2\t3\tfoo\tabc\n");
  HistoryStore store;
  std::string warning = store.Open(path_);
  EXPECT_NE(warning.find("not a headroom history file"), std::string::npos) << warning;
  store.Close();
  EXPECT_EQ(ReadFile(), "# headroom history v2\n");
  HistoryStore again;
  EXPECT_EQ(again.Open(path_), "");  // reported once: the rebuilt file is clean.
}

TEST_F(HistoryTest, NewerVersionIsReportedAndReplaced) {
  WriteFile("# headroom history v9\nwhatever\n");
  HistoryStore store;
  EXPECT_NE(store.Open(path_).find("unsupported version"), std::string::npos);
}

TEST_F(HistoryTest, TruncatedLastRecordKeepsTheRest) {
  std::string error;
  {
    HistoryStore store;
    ASSERT_EQ(store.Open(path_), "");
    ASSERT_TRUE(store.Record("a.o", 1, "K", Rec(10), &error));
    ASSERT_TRUE(store.Record("b.o", 1, "K", Rec(20), &error));
  }
  std::string text = ReadFile();
  WriteFile(text.substr(0, text.size() - 3));  // cut into b.o's record.
  HistoryStore store;
  std::string warning = store.Open(path_);
  EXPECT_NE(warning.find("truncated"), std::string::npos) << warning;
  EXPECT_NE(store.FindEdge("a.o", 1), nullptr);
  EXPECT_EQ(store.FindEdge("b.o", 1), nullptr);
  ASSERT_TRUE(store.Record("c.o", 1, "K", Rec(30), &error));
  store.Close();
  HistoryStore reloaded;
  EXPECT_EQ(reloaded.Open(path_), "");
  EXPECT_NE(reloaded.FindEdge("c.o", 1), nullptr);
}

TEST_F(HistoryTest, CorruptLinesInTheMiddleAreDetectedNeverACrash) {
  const std::string header = "# headroom history v1\nC\t0\tK\nE\t0\t1\t10\t5\tt\tc\ta.o\n";
  for (const std::string& bad : {std::string("E\t7\t1\t10\t5\tt\tc\tb.o\n"),     // unknown class id
                                 std::string("E\t0\tzz\t10\t5\tt\tc\tb.o\n"),    // bad hash
                                 std::string("E\t0\t1\t-3\t5\tt\tc\tb.o\n"),     // negative peak
                                 std::string("E\t0\t1\t10\t5\tq\tc\tb.o\n"),     // bad method
                                 std::string("C\t5\tX\n"),                       // non-dense class id
                                 std::string("X\tgarbage\n"), std::string("\n"),
                                 std::string("E\t0\t1\t99999999999999999999999\t5\tt\tc\tb.o\n"),
                                 std::string("\x01\x02\xff\n")}) {
    WriteFile(header + bad + "E\t0\t1\t20\t5\tt\tc\tc.o\n");
    HistoryStore store;
    std::string warning = store.Open(path_);
    EXPECT_NE(warning.find("corrupt at line 4"), std::string::npos) << bad << " -> " << warning;
    EXPECT_NE(store.FindEdge("a.o", 1), nullptr);
    EXPECT_EQ(store.FindEdge("c.o", 1), nullptr);
    store.Close();
    HistoryStore reloaded;
    EXPECT_EQ(reloaded.Open(path_), "") << bad;
  }
}

TEST_F(HistoryTest, UnwritableLocationWarnsAndKeepsWorkingInMemory) {
  HistoryStore store;
  std::string warning = store.Open((dir_ / "no_such_dir" / HistoryStore::kFileName).string());
  EXPECT_FALSE(warning.empty());
  std::string error;
  EXPECT_TRUE(store.Record("a.o", 1, "K", Rec(1), &error));
  EXPECT_NE(store.FindEdge("a.o", 1), nullptr);
}

TEST_F(HistoryTest, Loads50kEntriesQuickly) {
  std::string error;
  {
    HistoryStore store;
    ASSERT_EQ(store.Open(path_), "");
    for (int i = 0; i < 50'000; ++i) {
      std::string cls = fmt::format("CXX_COMPILER__target{} /usr/bin/c++ -DFOO -O2 -g -std=c++20 -c .cc", i / 250);
      ASSERT_TRUE(store.Record(fmt::format("src/module{}/CMakeFiles/t.dir/file{}.cc.o", i / 250, i),
                               0x9e3779b97f4a7c15ull * i, cls, Rec(300u * (1024u * 1024u) + i, 1200 + i % 700), &error));
    }
  }
  auto start = std::chrono::steady_clock::now();
  std::clock_t cpu_start = std::clock();
  HistoryStore store;
  ASSERT_EQ(store.Open(path_), "");
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  double cpu_ms = 1000.0 * static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  std::printf("[ info ] loaded %zu history entries (%zu classes) in %.1f ms wall, %.1f ms CPU\n",
              store.edge_count(), store.class_count(), ms, cpu_ms);
  EXPECT_EQ(store.edge_count(), 50'000u);
  EXPECT_LT(ms, 1000.0);  // generous so it cannot flake; docs/scheduling.md has the measured figure.
}

}  // namespace
}  // namespace headroom
