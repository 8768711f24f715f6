// Tests for the per-user history store: portable edge keys, round trips, warm estimates in a new build dir,
// concurrent writers, bounds, damage, newer versions, export/import, and the build dir's legacy file migration.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <grp.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "headroom/estimator/command_line.h"
#include "headroom/util/byte_size.h"
#include "headroom/estimator/estimator.h"
#include "headroom/history/history_store.h"
#include "headroom/history/portable_key.h"
#include "headroom/history/store_entries.h"
#include "headroom/history/user_store.h"

namespace headroom {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kNow = 1'800'000'000;

HistoryRecord Rec(uint64_t peak, int64_t ms = 100) { return {peak, ms, PeakMethod::kCgroup, JobOutcome::kCompleted}; }

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteText(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

TEST(PathNormaliserTest, BlanksTheRandomPartOfTempDirsAndTheBuildRoot) {
  PathNormaliser normaliser("/tmp/pip-req-build-k3j4h5/build/temp.linux", {"/tmp", "/var/tmp/"});
  EXPECT_EQ(normaliser.Text("-I/tmp/pip-build-env-abc123/overlay/include /tmp/pip-req-build-k3j4h5/src/a.cc"),
            "-I/tmp/pip-build-env-*/overlay/include /tmp/pip-req-build-*/src/a.cc");
  EXPECT_EQ(normaliser.Text("x=/tmp/tmpq1w2e3/f.o,/var/tmp/job_7/y"), "x=/tmp/*/f.o,/var/tmp/job_*/y");
  EXPECT_EQ(normaliser.Text("/tmpfoo/a /home/tmp/b"), "/tmpfoo/a /home/tmp/b");  // not under a root
  EXPECT_EQ(normaliser.Output("/tmp/pip-req-build-k3j4h5/build/temp.linux/csrc/ops.o"), "csrc/ops.o");
  EXPECT_EQ(normaliser.Text("-L/tmp/pip-req-build-k3j4h5/build/temp.linux/lib"), "-L@BUILD/lib");
  EXPECT_EQ(normaliser.Output("/tmp/pip-req-build-k3j4h5/build/temp.linux2/x.o"), "/tmp/pip-req-build-*/build/temp.linux2/x.o");
}

TEST(PathNormaliserTest, OneKernelBuiltFromTwoPipTempDirsIsOneEdge) {
  PathNormaliser first("/tmp/pip-install-abc/pkg/build", {"/tmp"});
  PathNormaliser second("/tmp/pip-install-xyz/pkg/build", {"/tmp"});
  const std::string klass = "compile nvcc -gencode=arch=compute_90,code=sm_90 -DFOO=1 .cu";
  EXPECT_EQ(first.EdgeKey("/tmp/pip-install-abc/pkg/build/k.o", klass),
            second.EdgeKey("/tmp/pip-install-xyz/pkg/build/k.o", klass));
  EXPECT_EQ(first.EdgeKey("k.o", klass), second.EdgeKey("/tmp/pip-install-xyz/pkg/build/k.o", klass));
  EXPECT_NE(first.EdgeKey("k.o", klass), first.EdgeKey("k2.o", klass));
  EXPECT_NE(first.EdgeKey("k.o", klass), first.EdgeKey("k.o", klass + " -O3"));
}

TEST(UserStoreDirTest, FlagThenEnvironmentThenXdgThenHome) {
  const std::string home = getenv("HOME") ? getenv("HOME") : "";
  setenv("HEADROOM_STORE", "/s/env", 1);
  setenv("XDG_CACHE_HOME", "/s/xdg", 1);
  setenv("HOME", "/s/home", 1);
  EXPECT_EQ(ResolveUserStoreDir("/s/flag", false), "/s/flag");
  EXPECT_EQ(ResolveUserStoreDir("/s/flag", true), "");
  EXPECT_EQ(ResolveUserStoreDir(nullptr, false), "/s/env");
  setenv("HEADROOM_STORE", "off", 1);
  EXPECT_EQ(ResolveUserStoreDir(nullptr, false), "");
  unsetenv("HEADROOM_STORE");
  EXPECT_EQ(ResolveUserStoreDir(nullptr, false), "/s/xdg/headroom");
  unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(ResolveUserStoreDir(nullptr, false), "/s/home/.cache/headroom");
  setenv("HOME", home.c_str(), 1);
}

class UserStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            fmt::format("headroom_user_store_test_{}_{}",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name(), static_cast<long>(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    store_dir_ = (root_ / "store").string();
  }
  void TearDown() override {
    fs::permissions(root_, fs::perms::owner_all, fs::perm_options::add);
    if (fs::exists(store_dir_)) fs::permissions(store_dir_, fs::perms::owner_all, fs::perm_options::add);
    fs::remove_all(root_);
  }

  // A store seen from a build in `build_root` (under a fake temp root, as pip's are).
  UserStore Store(const std::string& build_root, UserStoreLimits limits = {}) const {
    return UserStore(store_dir_, PathNormaliser(build_root, {"/tmp"}), limits);
  }
  fs::path file() const { return fs::path(store_dir_) / UserStore::kFileName; }

  fs::path root_;
  std::string store_dir_;
};

TEST_F(UserStoreTest, RecordsSurviveANewBuildDirectory) {
  {
    UserStore store = Store("/tmp/pip-install-abc/pkg/build");
    EXPECT_EQ(store.Load(), "");
    store.Record("/tmp/pip-install-abc/pkg/build/k.o", "compile nvcc .cu", Rec(3000 * kMiB, 60000), kNow);
    EXPECT_EQ(store.Flush(kNow), "");
  }
  UserStore store = Store("/tmp/pip-install-xyz/pkg/build");
  EXPECT_EQ(store.Load(), "");
  const EdgeHistory* edge = store.FindEdge(store.EdgeKey("k.o", "compile nvcc .cu"));
  ASSERT_NE(edge, nullptr);
  ASSERT_EQ(edge->recent.size(), 1u);
  EXPECT_EQ(edge->recent[0].peak_bytes, 3000 * kMiB);
  EXPECT_EQ(edge->recent[0].duration_ms, 60000);
  EXPECT_EQ(store.FindEdge(store.EdgeKey("other.o", "compile nvcc .cu")), nullptr);
}

TEST_F(UserStoreTest, EstimatorStartsWarmFromTheStoreWhenTheBuildDirHasNoHistory) {
  const std::string command_a = "nvcc -c /tmp/pip-install-abc/src/k.cu -o k.o -DVARIANT=1 -gencode=arch=compute_90,code=sm_90";
  const std::string command_b = "nvcc -c /tmp/pip-install-xyz/src/k.cu -o k.o -DVARIANT=1 -gencode=arch=compute_90,code=sm_90";
  const std::string sibling = "nvcc -c /tmp/pip-install-xyz/src/k2.cu -o k2.o -DVARIANT=2 -gencode=arch=compute_90,code=sm_90";
  {
    HistoryStore history;
    UserStore store = Store("/tmp/pip-install-abc/build");
    store.Load();
    Estimator estimator(&history, {});
    estimator.set_user_store(&store);
    std::string error;
    JobDescription job{"k.o", 111, command_a, "cuda_compile"};
    EXPECT_EQ(estimator.Predict(job).source, EstimateSource::kPrior);
    EXPECT_TRUE(estimator.Learn(job, Rec(5000 * kMiB, 90000), &error));
    EXPECT_EQ(store.Flush(kNow), "");
  }
  HistoryStore history;  // a new build dir: nothing of its own
  UserStore store = Store("/tmp/pip-install-xyz/build");
  ASSERT_EQ(store.Load(), "");
  EXPECT_EQ(store.SeedClasses(&history), 1u);
  Estimator estimator(&history, {});
  estimator.set_user_store(&store);
  // The same edge, with a different command hash (absolute temp paths differ): the store's edge figures.
  Estimate same = estimator.Predict(JobDescription{"k.o", 222, command_b, "cuda_compile"});
  EXPECT_EQ(same.source, EstimateSource::kEdgeHistory);
  EXPECT_EQ(same.peak_bytes, static_cast<uint64_t>(5000 * kMiB * 1.05));  // one exact run's margin
  EXPECT_EQ(same.duration_ms, 90000);
  EXPECT_NE(same.why.find("user store"), std::string::npos) << same.why;
  // A sibling kernel of the same family (another define value): the family figures from the store.
  Estimate other = estimator.Predict(JobDescription{"k2.o", 333, sibling, "cuda_compile"});
  EXPECT_EQ(other.source, EstimateSource::kFamilyHistory);
  EXPECT_GT(other.peak_bytes, 5000 * kMiB);
}

// The reader gives the same entries from memory and from a stream, and each entry's place in the file reads
// back alone; damage ends the entries, keeping what came before it.
TEST(StoreEntryReaderTest, TextAndStreamAgreeAndEachEntryReadsBackAlone) {
  const std::string text =
      "# headroom user store v2\n"
      "C\t100\tcc g++ .cc\nr\t5\t6\tc\tc\t-\nr\t7\t8\tt\to\t-\n"
      "E\t00000000000000ff\t200\tobj/a\\tb.o\nr\t9\t10\tc\tc\t1/2/3/4\n"
      "E\t0000000000000001\t300\tc.o\n"
      "r\t1\t1\tc\tc\t-\nr\t2\t2\tc\tc\t-\nr\t3\t3\tc\tc\t-\n"
      "junk\n"
      "E\t0000000000000002\t300\tnever.o\nr\t1\t1\tc\tc\t-\n";
  StoreEntryReader from_text(text, "t");
  from_text.set_caps(64, 2);
  std::FILE* file = fmemopen(const_cast<char*>(text.data()), text.size(), "r");
  ASSERT_NE(file, nullptr);
  StoreEntryReader from_file(file, "t");
  from_file.set_caps(64, 2);
  int version = 0;
  ASSERT_EQ(from_text.ReadHeader(&version), "");
  EXPECT_EQ(version, 2);
  ASSERT_EQ(from_file.ReadHeader(&version), "");
  std::vector<StoreEntry> entries;
  StoreEntry a, b;
  while (from_text.Next(&a)) {
    ASSERT_TRUE(from_file.Next(&b));
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.offset, b.offset);
    EXPECT_EQ(a.length, b.length);
    EXPECT_EQ(a.records.size(), b.records.size());
    entries.push_back(a);
  }
  EXPECT_FALSE(from_file.Next(&b));
  std::fclose(file);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(from_text.damage(), "t is corrupt at line 11");
  EXPECT_EQ(from_file.damage(), from_text.damage());
  EXPECT_EQ(entries[0].class_key, "cc g++ .cc");
  EXPECT_EQ(entries[0].records[1].outcome, JobOutcome::kOomKilled);
  EXPECT_EQ(entries[1].output, "obj/a\tb.o");
  ASSERT_EQ(entries[2].records.size(), 2u);  // capped: the last two runs
  EXPECT_EQ(entries[2].records[0].peak_bytes, 2u);
  for (const StoreEntry& entry : entries) {
    StoreEntryReader alone(std::string_view(text).substr(entry.offset, entry.length), "t", false);
    alone.set_caps(64, 2);
    StoreEntry again;
    ASSERT_TRUE(alone.Next(&again));
    EXPECT_EQ(again.key, entry.key);
    EXPECT_EQ(again.records.size(), entry.records.size());
    EXPECT_FALSE(alone.Next(&again));
    EXPECT_EQ(alone.damage(), "");
    std::string written;
    AppendStoreEntry(again, &written);
    EXPECT_EQ(written.size(), entry.kind == 'E' && entry.key == 1 ? 51u : entry.length);  // 3 runs read, 2 kept
  }
  EXPECT_EQ(entries[1].records[0].rise.Format(), "1/2/3/4");
  StoreEntryReader cut("# headroom user store v2\nE\t01\t5\to\nr\t1\t1\tc", "t");
  ASSERT_EQ(cut.ReadHeader(&version), "");
  ASSERT_TRUE(cut.Next(&a));
  EXPECT_TRUE(a.records.empty());
  EXPECT_EQ(cut.damage(), "t is truncated at line 3");
}

// A store written before runs had rise curves (v1) is read, lazily too, and written back as v2.
TEST_F(UserStoreTest, AVersion1StoreIsReadAndRewrittenAsVersion2) {
  const UserStore probe = Store("/b");
  const uint64_t key = probe.EdgeKey("a.o", "cc g++ .cc");
  fs::create_directories(store_dir_);
  WriteText(file(), fmt::format("# headroom user store v1\nC\t{0}\tcc g++ .cc\nr\t5\t6\tc\tc\n"
                                "E\t{1:016x}\t{0}\ta.o\nr\t9\t10\tc\tc\n",
                                kNow, key));
  HistoryStore history;
  UserStore lazy = Store("/b");
  lazy.LoadLazily(&history, [](const std::string& warning) { ADD_FAILURE() << warning; });
  lazy.EnsureLoaded();
  const EdgeHistory* found = lazy.FindEdge(key);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->recent[0].peak_bytes, 9u);
  EXPECT_FALSE(found->recent[0].rise.known());
  ASSERT_NE(history.FindClass("cc g++ .cc"), nullptr);
  HistoryRecord ramp = Rec(12, 20);
  ramp.rise.below = {5, 6, 7, 8};
  lazy.Record("a.o", "cc g++ .cc", ramp, kNow + 1);
  ASSERT_EQ(lazy.Flush(kNow + 1), "");
  const std::string text = ReadText(file());
  EXPECT_EQ(text.substr(0, 25), "# headroom user store v2\n") << text;
  EXPECT_NE(text.find("r\t9\t10\tc\tc\t-\n"), std::string::npos) << text;
  EXPECT_NE(text.find("r\t12\t20\tc\tc\t5/6/7/8\n"), std::string::npos) << text;
  UserStore again = Store("/b");
  ASSERT_EQ(again.Load(), "");
  ASSERT_NE(again.FindEdge(key), nullptr);
  EXPECT_EQ(again.FindEdge(key)->recent.back().rise.Format(), "5/6/7/8");
}

// A build loads the store lazily: classes in memory, edges indexed and read back from the file. Every
// lookup gives what a full load gives, even after another build replaced the file.
TEST_F(UserStoreTest, ALazyLoadFindsWhatAFullLoadFinds) {
  {
    UserStore store = Store("/b");
    for (int run = 0; run < 11; ++run) {
      for (int i = 0; i < 30; ++i) {
        store.Record(fmt::format("e{}.o", i), i % 2 ? "cc g++ .cc" : "cc clang .cc", Rec((i + run + 1) * kMiB, run),
                     kNow + run);
      }
    }
    ASSERT_EQ(store.Flush(kNow + 11), "");
  }
  UserStore full = Store("/b");
  ASSERT_EQ(full.Load(), "");
  HistoryStore history;
  UserStore lazy = Store("/b");
  lazy.LoadLazily(&history, [](const std::string& warning) { ADD_FAILURE() << warning; });
  lazy.EnsureLoaded();
  EXPECT_EQ(lazy.edge_count(), 30u);
  EXPECT_EQ(lazy.class_count(), 0u);  // seeded into the history, not kept twice
  ASSERT_NE(history.FindClass("cc g++ .cc"), nullptr);
  EXPECT_EQ(history.FindClass("cc g++ .cc")->completed(), 64u);  // the store's last 64 samples
  EXPECT_NE(history.FindClass("cc clang .cc"), nullptr);
  {
    UserStore other = Store("/b");  // another build replaces the file meanwhile
    other.Record("e0.o", "cc clang .cc", Rec(999 * kMiB), kNow + 50);
    ASSERT_EQ(other.Flush(kNow + 50), "");
  }
  for (int i = 0; i < 30; ++i) {
    const uint64_t key = full.EdgeKey(fmt::format("e{}.o", i), i % 2 ? "cc g++ .cc" : "cc clang .cc");
    const EdgeHistory* expected = full.FindEdge(key);
    const EdgeHistory* found = lazy.FindEdge(key);
    ASSERT_NE(expected, nullptr);
    ASSERT_NE(found, nullptr) << i;
    ASSERT_EQ(found->recent.size(), UserStore::kRunsPerEdge);
    for (size_t r = 0; r < found->recent.size(); ++r) {
      EXPECT_EQ(found->recent[r].peak_bytes, expected->recent[r].peak_bytes);
      EXPECT_EQ(found->recent[r].duration_ms, expected->recent[r].duration_ms);
    }
  }
  EXPECT_EQ(lazy.FindEdge(full.EdgeKey("e0.o", "cc g++ .cc")), nullptr);
  EXPECT_EQ(lazy.FindEdge(12345), nullptr);
}

// A long build writes its runs as they pile up (kEarlyFlushRuns of them, the oldest kEarlyFlushAgeS old), so it holds
// few in memory and a build killed mid-way keeps what it measured; what it loaded still answers its estimates. A write
// that would wait for another build's lock is put off, and the runs stay for the next try or the end.
TEST_F(UserStoreTest, ALongBuildWritesItsRunsAsItGoes) {
  {
    UserStore first = Store("/b");
    first.Record("known.o", "cc g++ .cc", Rec(7 * kMiB), kNow);
    ASSERT_EQ(first.Flush(kNow), "");
  }
  HistoryStore history;
  UserStore store = Store("/b");
  store.LoadLazily(&history, [](const std::string& warning) { ADD_FAILURE() << warning; });
  store.EnsureLoaded();
  const size_t runs = UserStore::kEarlyFlushRuns;
  const int64_t later = kNow + UserStore::kEarlyFlushAgeS;
  for (size_t i = 0; i < runs; ++i) store.Record(fmt::format("e{}.o", i), "cc g++ .cc", Rec(kMiB), kNow);
  EXPECT_EQ(store.pending_count(), runs);  // enough runs, but none old enough yet
  store.Record("last.o", "cc g++ .cc", Rec(kMiB), later);
  EXPECT_EQ(store.pending_count(), 0u);
  {
    UserStore reader = Store("/x");
    ASSERT_EQ(reader.Load(), "");
    EXPECT_EQ(reader.edge_count(), runs + 2);  // e*, last.o and known.o
  }
  const EdgeHistory* known = store.FindEdge(store.EdgeKey("known.o", "cc g++ .cc"));
  ASSERT_NE(known, nullptr);
  EXPECT_EQ(known->recent.back().peak_bytes, 7 * kMiB);

  // Another build holds the lock: the runs wait, and the next try comes kEarlyFlushRuns runs later.
  const int lock_fd = open((fs::path(store_dir_) / UserStore::kLockName).c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(lock_fd, 0);
  ASSERT_EQ(flock(lock_fd, LOCK_EX), 0);
  for (size_t i = 0; i < runs + 1; ++i) store.Record(fmt::format("f{}.o", i), "cc g++ .cc", Rec(kMiB), later);
  store.Record("g.o", "cc g++ .cc", Rec(kMiB), later + UserStore::kEarlyFlushAgeS);
  EXPECT_EQ(store.pending_count(), runs + 2);
  close(lock_fd);
  EXPECT_EQ(store.Flush(later), "");
  UserStore reader = Store("/x");
  ASSERT_EQ(reader.Load(), "");
  EXPECT_EQ(reader.edge_count(), 2 * runs + 4);
}

// The merge streams the file: an edge the file already names keeps its name without this build keeping a
// copy, a new one is named, entries of other builds pass through, and the bound still holds.
TEST_F(UserStoreTest, TheStreamingMergeKeepsNamesRunsAndOtherBuildsEntries) {
  {
    UserStore store = Store("/tmp/pip-install-a/build");
    store.Record("/tmp/pip-install-a/build/known.o", "cc g++ .cc", Rec(kMiB), kNow);
    store.Record("/elsewhere/other.o", "cc g++ .cc", Rec(3 * kMiB), kNow);
    ASSERT_EQ(store.Flush(kNow), "");
  }
  HistoryStore history;
  UserStore build = Store("/tmp/pip-install-b/build");
  build.LoadLazily(&history, nullptr);
  build.EnsureLoaded();
  build.Record("/tmp/pip-install-b/build/known.o", "cc g++ .cc", Rec(2 * kMiB), kNow + 1);
  build.Record("/tmp/pip-install-b/build/new.o", "cc g++ .cc", Rec(4 * kMiB), kNow + 1);
  ASSERT_EQ(build.Flush(kNow + 1), "");
  const std::string text = ReadText(file());
  EXPECT_NE(text.find("\tknown.o\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\tnew.o\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\t/elsewhere/other.o\n"), std::string::npos) << text;
  UserStore reader = Store("/x");
  ASSERT_EQ(reader.Load(), "");
  const EdgeHistory* known = reader.FindEdge(reader.EdgeKey("known.o", "cc g++ .cc"));
  ASSERT_NE(known, nullptr);
  ASSERT_EQ(known->recent.size(), 2u);
  EXPECT_EQ(known->recent[1].peak_bytes, 2 * kMiB);
  EXPECT_EQ(reader.contents().edges.at(reader.EdgeKey("known.o", "cc g++ .cc")).last_used_s, kNow + 1);
  EXPECT_EQ(reader.contents().classes.at("cc g++ .cc").samples.size(), 4u);
  EXPECT_EQ(reader.edge_count(), 3u);
}

TEST_F(UserStoreTest, LazyLoadingWaitsForTheFirstEstimate) {
  const std::string command = "g++ -O2 -c a.cc -o o";
  const std::string klass = JobClassKey("cc", command);
  {
    UserStore store = Store("/b");
    store.Record("o", klass, Rec(900 * kMiB), kNow);
    store.Flush(kNow);
  }
  WriteText(file(), ReadText(file()) + "junk\n");  // damaged: the warning must come once, at the first use
  HistoryStore history;
  UserStore store = Store("/b");
  std::vector<std::string> warnings;
  store.LoadLazily(&history, [&](const std::string& warning) { warnings.push_back(warning); });
  Estimator estimator(&history, {});
  estimator.set_user_store(&store);
  EXPECT_EQ(store.edge_count(), 0u);  // a no-op build never reads it
  EXPECT_TRUE(estimator.HasHistory());  // the plan's first question loads it and seeds the class
  EXPECT_EQ(store.edge_count(), 1u);
  EXPECT_NE(history.FindClass(klass), nullptr);
  EXPECT_EQ(estimator.Predict(JobDescription{"o", 7, command, "cc"}).source, EstimateSource::kEdgeHistory);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("corrupt"), std::string::npos);
}

TEST_F(UserStoreTest, TheBuildDirsOwnFiguresWin) {
  {
    UserStore store = Store("/b");
    store.Record("o", "cc g++ -O2 .cc", Rec(900 * kMiB), kNow);
    store.Flush(kNow);
  }
  HistoryStore history;
  std::string error;
  history.Record("o", 7, "cc g++ -O2 .cc", Rec(100 * kMiB), &error);
  UserStore store = Store("/b");
  store.Load();
  EXPECT_EQ(store.SeedClasses(&history), 0u);
  EXPECT_EQ(history.FindClass("cc g++ -O2 .cc")->max_peak(), 100 * kMiB);
  Estimator estimator(&history, {});
  estimator.set_user_store(&store);
  EXPECT_EQ(estimator.Predict(JobDescription{"o", 7, "g++ -O2 -c a.cc -o o", "cc"}).peak_bytes,
            static_cast<uint64_t>(100 * kMiB * 1.05));  // one exact run's margin
}

TEST_F(UserStoreTest, ConcurrentBuildsLoseNoRecord) {
  // Every writer loaded the store before any flushed: each must merge with what the others wrote.
  constexpr int kWriters = 8;
  constexpr int kRecordsEach = 50;
  std::vector<UserStore> stores;
  for (int w = 0; w < kWriters; ++w) {
    stores.push_back(Store(fmt::format("/tmp/pip-install-w{}/build", w)));
    ASSERT_EQ(stores.back().Load(), "");
    for (int i = 0; i < kRecordsEach; ++i) {
      stores.back().Record(fmt::format("w{}_{}.o", w, i), "cc g++ .cc", Rec((w * 100 + i + 1) * kMiB), kNow);
    }
  }
  std::vector<std::thread> threads;
  std::vector<std::string> warnings(kWriters);
  for (int w = 0; w < kWriters; ++w) threads.emplace_back([&, w] { warnings[w] = stores[w].Flush(kNow); });
  for (std::thread& thread : threads) thread.join();
  for (const std::string& warning : warnings) EXPECT_EQ(warning, "");
  UserStore reader = Store("/x");
  ASSERT_EQ(reader.Load(), "");
  EXPECT_EQ(reader.edge_count(), static_cast<size_t>(kWriters * kRecordsEach));
  for (int w = 0; w < kWriters; ++w) {
    for (int i = 0; i < kRecordsEach; ++i) {
      const EdgeHistory* edge = reader.FindEdge(reader.EdgeKey(fmt::format("w{}_{}.o", w, i), "cc g++ .cc"));
      ASSERT_NE(edge, nullptr) << w << " " << i;
      EXPECT_EQ(edge->recent.back().peak_bytes, static_cast<uint64_t>((w * 100 + i + 1) * kMiB));
    }
  }
  EXPECT_FALSE(fs::exists(file().string() + fmt::format(".tmp.{}", getpid())));
}

TEST_F(UserStoreTest, OldEntriesExpireAndTheSizeBoundEvictsTheLeastRecentlyUsed) {
  UserStoreLimits limits;
  limits.max_age_s = 1000;
  {
    UserStore store = Store("/b", limits);
    store.Record("ancient.o", "cc g++ .cc", Rec(kMiB), kNow - 5000);
    store.Record("recent.o", "cc g++ .cc", Rec(kMiB), kNow - 10);
    store.Flush(kNow);
  }
  UserStore aged = Store("/b", limits);
  aged.Load();
  EXPECT_EQ(aged.FindEdge(aged.EdgeKey("ancient.o", "cc g++ .cc")), nullptr);
  EXPECT_NE(aged.FindEdge(aged.EdgeKey("recent.o", "cc g++ .cc")), nullptr);

  limits.max_age_s = 1'000'000;
  limits.max_bytes = 2000;
  {
    UserStore store = Store("/b", limits);
    store.Load();
    for (int i = 0; i < 100; ++i) store.Record(fmt::format("edge{:03}.o", i), "cc g++ .cc", Rec(kMiB), kNow + i);
    store.Flush(kNow + 100);
  }
  EXPECT_LE(fs::file_size(file()), 2000u);
  UserStore bounded = Store("/b", limits);
  EXPECT_EQ(bounded.Load(), "");
  EXPECT_NE(bounded.FindEdge(bounded.EdgeKey("edge099.o", "cc g++ .cc")), nullptr);  // newest kept
  EXPECT_EQ(bounded.FindEdge(bounded.EdgeKey("edge000.o", "cc g++ .cc")), nullptr);  // oldest evicted
  EXPECT_LT(bounded.edge_count(), 100u);
}

TEST_F(UserStoreTest, CorruptOrTruncatedStoreWarnsOnceKeepsWhatPrecedesAndIsRewritten) {
  {
    UserStore store = Store("/b");
    store.Record("good.o", "cc g++ .cc", Rec(kMiB), kNow);
    store.Flush(kNow);
  }
  const std::string good = ReadText(file());
  for (const std::string& damage : {good + "E\tnot-hex\t1\tx\n", good + "r\t12\t3"}) {
    WriteText(file(), damage);
    UserStore store = Store("/b");
    std::string warning = store.Load();
    EXPECT_NE(warning.find(file().string()), std::string::npos) << warning;
    EXPECT_NE(store.FindEdge(store.EdgeKey("good.o", "cc g++ .cc")), nullptr);
    store.Record("new.o", "cc g++ .cc", Rec(kMiB), kNow);
    EXPECT_EQ(store.Flush(kNow), "");  // one warning: the rewrite itself says nothing more
    UserStore reread = Store("/b");
    EXPECT_EQ(reread.Load(), "");
    EXPECT_EQ(reread.edge_count(), 2u);
  }
  WriteText(file(), "garbage\n");
  UserStore store = Store("/b");
  EXPECT_NE(store.Load().find("not a headroom user store"), std::string::npos);
}

TEST_F(UserStoreTest, ANewerFormatIsLeftUntouched) {
  fs::create_directories(store_dir_);
  const std::string future = "# headroom user store v9\nZ\tsomething new\n";
  WriteText(file(), future);
  UserStore store = Store("/b");
  std::string warning = store.Load();
  EXPECT_NE(warning.find("newer headroom"), std::string::npos) << warning;
  EXPECT_EQ(store.edge_count(), 0u);
  store.Record("o", "cc g++ .cc", Rec(kMiB), kNow);
  EXPECT_EQ(store.Flush(kNow), "");
  EXPECT_EQ(ReadText(file()), future);
}

TEST_F(UserStoreTest, AStoreThatCannotBeWrittenWarnsOnceAndTheRecordsAreDropped) {
  {
    UserStore store = Store("/b");
    store.Record("o", "cc g++ .cc", Rec(kMiB), kNow);
    store.Flush(kNow);
  }
  // The lock file is a directory: writing fails even for root, for whom permission bits do not.
  fs::remove(fs::path(store_dir_) / UserStore::kLockName);
  fs::create_directories(fs::path(store_dir_) / UserStore::kLockName);
  UserStore store = Store("/b");
  EXPECT_EQ(store.Load(), "");
  EXPECT_NE(store.FindEdge(store.EdgeKey("o", "cc g++ .cc")), nullptr);  // still read
  store.Record("p", "cc g++ .cc", Rec(kMiB), kNow);
  std::string warning = store.Flush(kNow);
  EXPECT_NE(warning.find("not kept"), std::string::npos) << warning;
  store.Record("q", "cc g++ .cc", Rec(kMiB), kNow);
  EXPECT_EQ(store.Flush(kNow), "");  // once
}

TEST_F(UserStoreTest, TheDefaultLocationStaysQuietWhereItCannotBeCreated) {
  // HOME=/nonexistent, as package builders set it: ninja prints nothing there, nor does headroom.
  const std::string home = getenv("HOME") ? getenv("HOME") : "";
  const char* xdg = getenv("XDG_CACHE_HOME");
  const std::string saved_xdg = xdg ? xdg : "";
  unsetenv("XDG_CACHE_HOME");
  WriteText(root_ / "file", "");
  setenv("HOME", (root_ / "file").c_str(), 1);  // a file: nothing can be created under it, even by root
  UserStore quiet(DefaultUserStoreDir(), PathNormaliser("/b", {}));
  EXPECT_EQ(quiet.Load(), "");
  quiet.Record("o", "cc g++ .cc", Rec(kMiB), kNow);
  EXPECT_EQ(quiet.Flush(kNow), "");
  // The same place named by the user warns.
  UserStore named((root_ / "file" / "store").string(), PathNormaliser("/b", {}));
  EXPECT_EQ(named.Load(), "");
  named.Record("o", "cc g++ .cc", Rec(kMiB), kNow);
  EXPECT_NE(named.Flush(kNow).find("cannot create"), std::string::npos);
  setenv("HOME", home.c_str(), 1);
  if (xdg) setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
}

// Permission bits do not bind root, so as root (CI) the part that must see a read-only store runs in a child that
// has become nobody (setuid); the store and its directory stay root's, readable by all, writable by none.
TEST_F(UserStoreTest, AReadOnlyStoreIsUsedButNotWritten) {
  {
    UserStore store = Store("/b");
    store.Record("o", "cc g++ .cc", Rec(kMiB), kNow);
    store.Flush(kNow);
  }
  const std::string before = ReadText(file());
  // A store is private (0600) as written; one shared read-only on purpose is opened up by its owner.
  fs::permissions(file(), static_cast<fs::perms>(0644));
  fs::permissions(store_dir_, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                  fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  // 0 when the store was read and left alone, else which check failed.
  auto use_read_only_store = [this]() -> int {
    UserStore store = Store("/b");
    if (store.Load().find("read-only") == std::string::npos) return 1;
    if (store.FindEdge(store.EdgeKey("o", "cc g++ .cc")) == nullptr) return 2;
    store.Record("p", "cc g++ .cc", Rec(kMiB), kNow);
    if (!store.Flush(kNow).empty()) return 3;
    return 0;
  };
  if (geteuid() != 0) {
    EXPECT_EQ(use_read_only_store(), 0);
  } else {
    fflush(nullptr);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(10);
      _exit(use_read_only_store());
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "1: no read-only warning, 2: its figures unused, 3: a warning at flush, "
                                         "10: could not become nobody";
  }
  EXPECT_EQ(ReadText(file()), before);
}

TEST_F(UserStoreTest, ExportThenImportIntoAnotherStore) {
  HistoryStore history;
  std::string error;
  history.Record("/tmp/pip-install-a/build/k.o", 5, "cc g++ .cc", Rec(700 * kMiB), &error);
  UserStore store = Store("/tmp/pip-install-a/build");
  store.Load();
  store.AddBuildHistory(history, kNow);
  const std::string exported = (root_ / "export.txt").string();
  ASSERT_TRUE(store.ExportTo(exported, &error)) << error;

  store_dir_ = (root_ / "other-store").string();
  UserStore fresh = Store("/tmp/pip-install-b/build");
  fresh.Load();
  ASSERT_TRUE(fresh.ImportFrom(exported, kNow, &error)) << error;
  ASSERT_TRUE(fresh.ImportFrom(exported, kNow, &error)) << error;  // twice adds nothing
  UserStore reader = Store("/tmp/pip-install-c/build");
  reader.Load();
  const EdgeHistory* edge = reader.FindEdge(reader.EdgeKey("k.o", "cc g++ .cc"));
  ASSERT_NE(edge, nullptr);
  EXPECT_EQ(edge->recent.size(), 1u);
  EXPECT_EQ(edge->recent[0].peak_bytes, 700 * kMiB);

  WriteText(root_ / "bad.txt", "# headroom user store v2\nQ\n");
  EXPECT_FALSE(fresh.ImportFrom((root_ / "bad.txt").string(), kNow, &error));
  EXPECT_NE(error.find("corrupt"), std::string::npos);
}

mode_t ModeOf(const fs::path& path) {
  struct stat st {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// The store holds command classes with their -D values: only its owner may read it.
TEST_F(UserStoreTest, TheStoreIsPrivateToItsOwner) {
  const mode_t old_umask = umask(022);
  UserStore store = Store("/tmp/pip-install-a/build");
  store.Load();
  store.Record("/tmp/pip-install-a/build/k.o", "cc g++ -DSECRET=1 .cc", Rec(7 * kMiB), kNow);
  EXPECT_EQ(store.Flush(kNow), "");
  umask(old_umask);
  EXPECT_EQ(ModeOf(store_dir_), 0700u);
  EXPECT_EQ(ModeOf(file()), 0600u);
  EXPECT_EQ(ModeOf(fs::path(store_dir_) / UserStore::kLockName), 0600u);
}

TEST_F(UserStoreTest, AnExistingStoreOfThisUserIsMadePrivate) {
  fs::create_directories(store_dir_);
  fs::permissions(store_dir_, static_cast<fs::perms>(0755));
  WriteText(fs::path(store_dir_) / UserStore::kLockName, "");
  fs::permissions(fs::path(store_dir_) / UserStore::kLockName, static_cast<fs::perms>(0644));
  UserStore store = Store("/tmp/pip-install-a/build");
  store.Load();
  store.Record("/tmp/pip-install-a/build/k.o", "cc g++ .cc", Rec(7 * kMiB), kNow);
  EXPECT_EQ(store.Flush(kNow), "");
  EXPECT_EQ(ModeOf(store_dir_), 0700u);
  EXPECT_EQ(ModeOf(fs::path(store_dir_) / UserStore::kLockName), 0600u);
  EXPECT_EQ(ModeOf(file()), 0600u);
}

// A symlink planted under the temp name an older headroom used (history.tmp.<pid>) is never written through,
// and temp files a crashed writer left are cleaned once the lock is held.
TEST_F(UserStoreTest, TempFilesAreExclusiveAndACrashsLeftoversAreCleaned) {
  fs::create_directories(store_dir_);
  const fs::path victim = root_ / "victim";
  WriteText(victim, "untouched\n");
  fs::create_symlink(victim, fs::path(store_dir_) / fmt::format("history.tmp.{}", getpid()));
  WriteText(fs::path(store_dir_) / "history.tmp.999999999", "left by a crash\n");
  WriteText(fs::path(store_dir_) / "history.tmp.1.00ab", "left by a crash\n");
  WriteText(fs::path(store_dir_) / "history.tmpfoo", "not a temp file\n");
  UserStore store = Store("/tmp/pip-install-a/build");
  store.Load();
  store.Record("/tmp/pip-install-a/build/k.o", "cc g++ .cc", Rec(7 * kMiB), kNow);
  EXPECT_EQ(store.Flush(kNow), "");
  EXPECT_EQ(ReadText(victim), "untouched\n");
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(store_dir_)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"history", "history.lock", "history.tmpfoo"}));

  std::string error;
  const fs::path exported = root_ / "export.txt";
  fs::create_symlink(victim, fmt::format("{}.tmp.{}", exported.string(), getpid()));
  ASSERT_TRUE(store.ExportTo(exported.string(), &error)) << error;
  EXPECT_EQ(ReadText(victim), "untouched\n");
  EXPECT_NE(ReadText(exported).find("# headroom user store"), std::string::npos);
}

TEST_F(UserStoreTest, SeededClassesKeepTheBuildDirFileValid) {
  // Seeded classes live in memory only; a class recorded after them must still get a dense id in the file.
  const std::string path = (root_ / HistoryStore::kFileName).string();
  {
    HistoryStore history;
    ASSERT_EQ(history.Open(path), "");
    history.AddClassSample("seeded g++ .cc", Rec(kMiB));
    std::string error;
    ASSERT_TRUE(history.Record("a.o", 1, "own clang++ .cc", Rec(2 * kMiB), &error)) << error;
  }
  HistoryStore reloaded;
  EXPECT_EQ(reloaded.Open(path), "");
  ASSERT_NE(reloaded.FindEdge("a.o", 1), nullptr);
  EXPECT_EQ(reloaded.FindClass("own clang++ .cc")->completed(), 1u);
}

TEST_F(UserStoreTest, LegacyBuildDirHistoryIsMigratedOnce) {
  const fs::path legacy = root_ / HistoryStore::kLegacyFileName;
  const std::string path = (root_ / HistoryStore::kFileName).string();
  {
    HistoryStore old;
    ASSERT_EQ(old.Open(legacy.string()), "");
    std::string error;
    old.Record("a.o", 1, "cc g++ .cc", Rec(kMiB), &error);
  }
  HistoryStore store;
  EXPECT_EQ(store.Open(path), "");
  EXPECT_NE(store.FindEdge("a.o", 1), nullptr);
  EXPECT_FALSE(fs::exists(legacy));
  EXPECT_TRUE(fs::exists(path));
  store.Close();
  HistoryStore again;
  EXPECT_EQ(again.Open(path), "");
  EXPECT_NE(again.FindEdge("a.o", 1), nullptr);
}

}  // namespace
}  // namespace headroom
