// headroom's jobserver server: the slot ledger with fake channels (offers, consumption, give-back,
// clamping, rotation), MAKEFLAGS for jobs, the private fifo directory, and the Builder offering
// spare -j capacity to running jobs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>

#include "fakes.h"
#include "headroom/build/builder.h"
#include "headroom/exec/jobserver_server.h"
#include "headroom/exec/jobserver_slots.h"
#include "headroom/logs/build_log.h"
#include "headroom/logs/deps_log.h"
#include "headroom/manifest/manifest_parser.h"
#include "headroom/status/status.h"

namespace headroom {
namespace {

// A channel whose contents the test controls: `in_channel` tokens sit in it; the "job" takes or writes back.
struct FakeChannelState {
  size_t in_channel = 0;
  size_t offers = 0;
  bool refuse_offers = false;
  // The job side.
  bool Take() {
    if (in_channel == 0) return false;
    --in_channel;
    return true;
  }
  void GiveBack(size_t n = 1) { in_channel += n; }
};

class FakeChannel : public TokenChannel {
 public:
  explicit FakeChannel(FakeChannelState* state) : state_(state) {}
  bool Offer() override {
    if (state_->refuse_offers) return false;
    ++state_->in_channel;
    ++state_->offers;
    return true;
  }
  size_t Drain() override {
    size_t n = state_->in_channel;
    state_->in_channel = 0;
    return n;
  }

 private:
  FakeChannelState* state_;
};

auto Always = [](JobId) { return true; };

TEST(SlotLedgerTest, TakenOfferBecomesHeldAndGivenBackFreesIt) {
  SlotLedger ledger;
  FakeChannelState job;
  ledger.AddJob(1, std::make_unique<FakeChannel>(&job));
  EXPECT_EQ(1u, ledger.Offer(5, Always));  // at most one offer per job at a time
  EXPECT_EQ(1u, ledger.offered(1));
  EXPECT_EQ(1u, ledger.extra_slots());  // an offer counts against -j while it sits there
  EXPECT_EQ(0u, ledger.Offer(5, Always));

  ASSERT_TRUE(job.Take());
  std::vector<std::pair<JobId, size_t>> changes;
  ledger.Reconcile([&](JobId id, size_t held) { changes.emplace_back(id, held); });
  EXPECT_EQ(1u, ledger.held(1));
  EXPECT_EQ(0u, ledger.offered(1));
  EXPECT_TRUE(changes.empty());  // held + offered was 1 before and is 1 now

  EXPECT_EQ(1u, ledger.Offer(5, Always));
  ledger.Reconcile(nullptr);  // not taken: withdrawn
  EXPECT_EQ(1u, ledger.held(1));
  EXPECT_EQ(1u, ledger.extra_slots());

  job.GiveBack();
  ledger.Reconcile([&](JobId id, size_t held) { changes.emplace_back(id, held); });
  EXPECT_EQ(0u, ledger.held(1));
  EXPECT_EQ((std::vector<std::pair<JobId, size_t>>{{1, 0}}), changes);
}

TEST(SlotLedgerTest, WritingBackMoreThanTakenCannotInflateAnything) {
  SlotLedger ledger;
  FakeChannelState greedy, other;
  ledger.AddJob(1, std::make_unique<FakeChannel>(&greedy));
  ledger.AddJob(2, std::make_unique<FakeChannel>(&other));
  ledger.Offer(1, Always);
  ASSERT_TRUE(greedy.Take());
  ledger.Reconcile(nullptr);
  EXPECT_EQ(1u, ledger.held(1));
  greedy.GiveBack(10);  // returns 10 tokens for the 1 it took
  ledger.Reconcile(nullptr);
  EXPECT_EQ(0u, ledger.held(1));
  EXPECT_EQ(0u, ledger.extra_slots());
  // The extra bytes were read back and dropped: the channel is empty and capacity is what the caller says.
  EXPECT_EQ(0u, greedy.in_channel);
  EXPECT_EQ(2u, ledger.Offer(2, Always));
  EXPECT_EQ(2u, ledger.extra_slots());
}

TEST(SlotLedgerTest, RemovedJobsSlotsAreNoLongerCounted) {
  SlotLedger ledger;
  FakeChannelState job;
  ledger.AddJob(7, std::make_unique<FakeChannel>(&job));
  for (int i = 0; i < 3; ++i) {
    ledger.Offer(1, Always);
    ASSERT_TRUE(job.Take());
    ledger.Reconcile(nullptr);
  }
  EXPECT_EQ(3u, ledger.held(7));
  job.GiveBack();
  ledger.Reconcile(nullptr);
  EXPECT_EQ(3u, ledger.RemoveJob(7));  // the most it held at once, for learning
  EXPECT_EQ(0u, ledger.extra_slots());
  EXPECT_TRUE(ledger.empty());
}

TEST(SlotLedgerTest, OffersRotateAndJobsThatAskedComeFirst) {
  SlotLedger ledger;
  FakeChannelState a, b, c;
  ledger.AddJob(1, std::make_unique<FakeChannel>(&a));
  ledger.AddJob(2, std::make_unique<FakeChannel>(&b));
  ledger.AddJob(3, std::make_unique<FakeChannel>(&c));
  EXPECT_EQ(1u, ledger.Offer(1, Always));
  EXPECT_EQ(1u, a.offers);
  ledger.Reconcile(nullptr);  // job 1 did not want it
  EXPECT_EQ(1u, ledger.Offer(1, Always));
  EXPECT_EQ(1u, b.offers);  // the next round starts after job 1
  ASSERT_TRUE(b.Take());
  ledger.Reconcile(nullptr);
  EXPECT_EQ(1u, ledger.Offer(1, Always));
  EXPECT_EQ(2u, b.offers);  // job 2 asked before: it is first in line
  ledger.Reconcile(nullptr);
  // Refused by the caller (memory, -j) or by the channel: skipped, the next one is tried.
  b.refuse_offers = true;
  EXPECT_EQ(1u, ledger.Offer(1, [](JobId id) { return id != 1; }));
  EXPECT_EQ(1u, c.offers);
}

TEST(JobMakeflagsTest, InheritedPoolWordsAreReplaced) {
  EXPECT_EQ("", StripJobserverWords(""));
  EXPECT_EQ("", StripJobserverWords(" -j8 --jobserver-auth=3,4"));
  EXPECT_EQ("ks", StripJobserverWords("ks -j8 --jobserver-fds=3,4 --jobserver-auth=fifo:/x"));
  EXPECT_EQ(" --no-print-directory", StripJobserverWords(" --no-print-directory -j"));
  EXPECT_EQ("s -- CC=gcc X=-j9", StripJobserverWords("s -j2 -- CC=gcc X=-j9"));
  EXPECT_EQ(" -j3 --jobserver-auth=fifo:/d/job-0", JobMakeflags("", 3, "fifo:/d/job-0"));
  EXPECT_EQ("ks -j3 --jobserver-auth=9,9", JobMakeflags("ks", 3, "9,9"));
  EXPECT_EQ("s -j3 --jobserver-auth=9,9 -- CC=gcc", JobMakeflags("s -- CC=gcc", 3, "9,9"));
}

class TempDir {
 public:
  TempDir() {
    char dir[] = "/tmp/headroom_jobserver_server_XXXXXX";
    EXPECT_NE(nullptr, mkdtemp(dir));
    path_ = dir;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  size_t Entries() const {
    size_t n = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(path_)) ++n;
    return n;
  }

 private:
  std::string path_;
};

std::string FifoPathOf(const std::string& makeflags) {
  const std::string marker = "--jobserver-auth=fifo:";
  size_t at = makeflags.find(marker);
  return at == std::string::npos ? "" : makeflags.substr(at + marker.size());
}

TEST(JobserverServerTest, PrivateFifoPerJobRemovedWithItsChannelAndDirectoryWithTheServer) {
  TempDir temp;
  std::string err;
  auto server = JobserverServer::Create(JobserverStyle::kFifo, 4, temp.path(), " -j9 --jobserver-auth=3,4", &err);
  ASSERT_TRUE(server) << err;
  struct stat info;
  ASSERT_EQ(0, stat(server->directory().c_str(), &info));
  EXPECT_EQ(0700u, info.st_mode & 0777);

  JobStartOptions options;
  auto channel = server->OpenChannel(&options, &err);
  ASSERT_TRUE(channel) << err;
  ASSERT_EQ(1u, options.environment.size());
  const std::string makeflags = options.environment[0];
  EXPECT_EQ(0u, makeflags.rfind("MAKEFLAGS= -j4 --jobserver-auth=fifo:" + server->directory() + "/job-", 0));
  EXPECT_EQ(-1, options.inherit_fd);
  const std::string fifo = FifoPathOf(makeflags);
  ASSERT_EQ(0, stat(fifo.c_str(), &info));
  EXPECT_TRUE(S_ISFIFO(info.st_mode));
  EXPECT_EQ(0600u, info.st_mode & 0777);

  // The job's side: an offer is readable, a token written back is drained.
  int job_fd = open(fifo.c_str(), O_RDWR | O_NONBLOCK);
  ASSERT_GE(job_fd, 0);
  EXPECT_TRUE(channel->Offer());
  char token = 0;
  EXPECT_EQ(1, read(job_fd, &token, 1));
  EXPECT_EQ(0u, channel->Drain());
  EXPECT_EQ(1, write(job_fd, &token, 1));
  EXPECT_EQ(1u, channel->Drain());
  close(job_fd);

  channel.reset();
  EXPECT_NE(0, stat(fifo.c_str(), &info));  // gone with its channel
  const std::string directory = server->directory();
  server.reset();
  EXPECT_NE(0, stat(directory.c_str(), &info));
  EXPECT_EQ(0u, temp.Entries());
}

TEST(JobserverServerTest, PipeStyleGivesTheJobABlockingDescriptorOfItsOwn) {
  TempDir temp;
  std::string err;
  auto server = JobserverServer::Create(JobserverStyle::kPipe, 2, temp.path(), "", &err);
  ASSERT_TRUE(server) << err;
  JobStartOptions options;
  auto channel = server->OpenChannel(&options, &err);
  ASSERT_TRUE(channel) << err;
  ASSERT_GE(options.inherit_fd, 0);
  const std::string fd = std::to_string(options.inherit_fd);
  EXPECT_EQ("MAKEFLAGS= -j2 --jobserver-auth=" + fd + "," + fd, options.environment[0]);
  EXPECT_TRUE(fcntl(options.inherit_fd, F_GETFD) & FD_CLOEXEC);  // no other job inherits it
  EXPECT_FALSE(fcntl(options.inherit_fd, F_GETFL) & O_NONBLOCK);  // the job's reads wait, as make expects
  EXPECT_TRUE(channel->Offer());
  char token = 0;
  EXPECT_EQ(1, read(options.inherit_fd, &token, 1));
  EXPECT_EQ('+', token);
}

TEST(JobserverServerTest, InheritedCargoMakeflagsIsRewrittenToTheJobsChannelAndAbsentOnesStayAbsent) {
  // cargo's jobserver crate reads CARGO_MAKEFLAGS before MAKEFLAGS: left as inherited, a job's cargo would take
  // its slots from the outer pool.
  TempDir temp;
  std::string err;
  auto server = JobserverServer::Create(JobserverStyle::kPipe, 3, temp.path(), "", &err);
  ASSERT_TRUE(server) << err;
  server->AlsoRewrite("CARGO_MAKEFLAGS", "-j --jobserver-fds=7,8 --jobserver-auth=7,8");
  server->AlsoRewrite("MFLAGS", nullptr);  // not inherited: not set for the job either
  JobStartOptions options;
  auto channel = server->OpenChannel(&options, &err);
  ASSERT_TRUE(channel) << err;
  const std::string fd = std::to_string(options.inherit_fd);
  ASSERT_EQ(2u, options.environment.size());
  EXPECT_EQ("MAKEFLAGS= -j3 --jobserver-auth=" + fd + "," + fd, options.environment[0]);
  EXPECT_EQ("CARGO_MAKEFLAGS= -j3 --jobserver-auth=" + fd + "," + fd, options.environment[1]);
}

pid_t DeadPid() {
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  EXPECT_GT(dead, 0);
  EXPECT_EQ(dead, waitpid(dead, nullptr, 0));
  return dead;
}

// Sets a directory's times back past kStaleJobserverDirAgeS, as a build killed long ago leaves it.
void MakeOld(const std::string& path) {
  struct timespec old[2];
  old[0].tv_sec = old[1].tv_sec = time(nullptr) - kStaleJobserverDirAgeS - 60;
  old[0].tv_nsec = old[1].tv_nsec = 0;
  ASSERT_EQ(0, utimensat(AT_FDCWD, path.c_str(), old, 0));
}

TEST(JobserverServerTest, StaleDirectoryOfADeadBuildIsRemovedAndALiveOneKept) {
  TempDir temp;
  const pid_t dead = DeadPid();
  const std::string stale = temp.path() + "/headroom-jobserver-" + std::to_string(dead) + "-abcdef";
  const std::string live = temp.path() + "/headroom-jobserver-" + std::to_string(getpid()) + "-ghijkl";
  ASSERT_EQ(0, mkdir(stale.c_str(), 0700));
  ASSERT_EQ(0, mkfifo((stale + "/job-3").c_str(), 0600));
  MakeOld(stale);
  ASSERT_EQ(0, mkdir(live.c_str(), 0700));
  std::string err;
  auto server = JobserverServer::Create(JobserverStyle::kFifo, 2, temp.path(), "", &err);
  ASSERT_TRUE(server) << err;
  struct stat info;
  EXPECT_NE(0, stat(stale.c_str(), &info));
  EXPECT_EQ(0, stat(live.c_str(), &info));
  EXPECT_EQ(2u, temp.Entries());  // the live one and the new server's
}

// Two containers sharing /tmp as one user: each sees the other's pids as dead. A directory is swept only when
// no server holds its lock and it has been left alone for a while, whatever its pid says.
TEST(JobserverServerTest, ADirectoryWhosePidLooksDeadIsKeptWhileLockedOrRecent) {
  TempDir temp;
  const pid_t dead = DeadPid();
  std::string err;
  // A live server of "another namespace": its directory renamed to carry a pid that is dead here, and aged.
  auto other = JobserverServer::Create(JobserverStyle::kFifo, 2, temp.path(), "", &err);
  ASSERT_TRUE(other) << err;
  const std::string locked = temp.path() + "/headroom-jobserver-" + std::to_string(dead) + "-locked";
  ASSERT_EQ(0, rename(other->directory().c_str(), locked.c_str()));
  MakeOld(locked);
  // A directory just made (its server has not locked it yet, or it is an older headroom's that takes no lock).
  const std::string recent = temp.path() + "/headroom-jobserver-" + std::to_string(dead) + "-recent";
  ASSERT_EQ(0, mkdir(recent.c_str(), 0700));
  const std::string stale = temp.path() + "/headroom-jobserver-" + std::to_string(dead) + "-stale";
  ASSERT_EQ(0, mkdir(stale.c_str(), 0700));
  MakeOld(stale);

  EXPECT_EQ(1, RemoveStaleJobserverDirs(temp.path()));
  struct stat info;
  EXPECT_EQ(0, stat(locked.c_str(), &info));
  EXPECT_EQ(0, stat(recent.c_str(), &info));
  EXPECT_NE(0, stat(stale.c_str(), &info));
  other.reset();  // its lock goes with it: the renamed directory is now a crash's leftover
  MakeOld(locked);
  EXPECT_EQ(1, RemoveStaleJobserverDirs(temp.path()));
  EXPECT_NE(0, stat(locked.c_str(), &info));
}

// The Builder with a server: spare -j capacity goes to running jobs as offers, never past -j, and new
// jobs come first.
class SlotStatus : public fakes::NullStatus {
 public:

};

class RecordingController : public JobController {
 public:
  bool MayGrantSlot(Edge*, JobId) override { return grant; }
  void SlotsChanged(Edge*, JobId id, size_t slots) override { last_slots[id] = slots; }
  bool grant = true;
  std::map<JobId, size_t> last_slots;
};

TEST(JobserverServerBuildTest, SpareCapacityIsOfferedToRunningJobsWithinTheCap) {
  State state;
  fakes::VirtualFileSystem fs;
  ManifestParser parser(&state, &fs);
  std::string err;
  ASSERT_TRUE(parser.ParseTest("rule touch\n  command = touch $out\nbuild a: touch\nbuild b: touch\n"
                               "build all: phony a b\n",
                               &err))
      << err;
  fakes::FakeProcessRunner runner(&fs);
  fakes::ManualClock clock;
  BuildConfig config;
  config.parallelism = 5;
  BuildLog log;
  DepsLog deps_log;
  SlotStatus status;
  TempDir temp;
  auto server = JobserverServer::Create(JobserverStyle::kFifo, 5, temp.path(), "", &err);
  ASSERT_TRUE(server) << err;
  RecordingController controller;
  {
    Builder builder(&state, config, &log, &deps_log, &fs, &status, &clock);
    builder.set_runner(&runner);
    builder.set_jobserver_server(server.get());
    builder.set_job_controller(&controller);
    ASSERT_TRUE(builder.AddTarget("all", &err)) << err;
    EXPECT_EQ(BuildResult::kSucceeded, builder.Build(&err)) << err;
  }
  // Both jobs got a channel and MAKEFLAGS naming it, and were offered one slot each (2 running + 2 offers <= 5).
  ASSERT_EQ(2u, runner.commands_run.size());
  EXPECT_EQ(2u, controller.last_slots.size());
  for (const auto& [id, slots] : controller.last_slots) EXPECT_EQ(1u, slots);
  EXPECT_TRUE(server->ledger().empty());
  server.reset();
  EXPECT_EQ(0u, temp.Entries());
}

}  // namespace
}  // namespace headroom
