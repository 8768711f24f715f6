// The GNU make jobserver client: MAKEFLAGS parsing, the ninja 1.13 start-up messages, and token
// accounting against a real FIFO, alone and driven by the Builder (fake runner).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "fakes.h"
#include "headroom/build/builder.h"
#include "headroom/exec/jobserver.h"
#include "headroom/logs/build_log.h"
#include "headroom/logs/deps_log.h"
#include "headroom/manifest/manifest_parser.h"
#include "headroom/status/status.h"

namespace headroom {
namespace {

using fakes::FakeProcessRunner;
using fakes::ManualClock;
using fakes::VirtualFileSystem;

JobserverConfig Parse(const std::string& makeflags, bool expect_ok = true, std::string* error = nullptr) {
  JobserverConfig config;
  std::string err;
  EXPECT_EQ(expect_ok, ParseMakeFlags(makeflags, &config, &err)) << makeflags << ": " << err;
  if (error) *error = err;
  return config;
}

TEST(JobserverTest, MakeflagsWordsSplitAtSpacesAndTabs) {
  EXPECT_EQ(MakeflagsWords(" -j3\t--jobserver-auth=3,4  k "),
            (std::vector<std::string_view>{"-j3", "--jobserver-auth=3,4", "k"}));
  EXPECT_TRUE(MakeflagsWords(" \t ").empty());
}

TEST(JobserverParseTest, FifoAuth) {
  JobserverConfig config = Parse(" -j3 --jobserver-auth=fifo:/tmp/GMfifo42");
  EXPECT_EQ(JobserverConfig::Mode::kFifo, config.mode);
  EXPECT_EQ("/tmp/GMfifo42", config.fifo_path);
}

TEST(JobserverParseTest, PipeAuthAndOldFdsSpelling) {
  JobserverConfig config = Parse(" -j3 --jobserver-auth=3,4");
  EXPECT_EQ(JobserverConfig::Mode::kPipe, config.mode);
  EXPECT_EQ(3, config.read_fd);
  EXPECT_EQ(4, config.write_fd);
  config = Parse("--jobserver-fds=5,6 -j");
  EXPECT_EQ(JobserverConfig::Mode::kPipe, config.mode);
  EXPECT_EQ(5, config.read_fd);
  // Negative descriptors: make did not treat us as a sub-make; no pool.
  EXPECT_EQ(JobserverConfig::Mode::kNone, Parse(" -j3 --jobserver-auth=-2,-2").mode);
}

TEST(JobserverParseTest, AbsentOrEmpty) {
  EXPECT_EQ(JobserverConfig::Mode::kNone, Parse("").mode);
  EXPECT_EQ(JobserverConfig::Mode::kNone, Parse(" -k -j4").mode);
  EXPECT_EQ(JobserverConfig::Mode::kNone, Parse("k").mode);
}

TEST(JobserverParseTest, DryRunFlagInFirstWordDisables) {
  EXPECT_EQ(JobserverConfig::Mode::kNone, Parse("n -j3 --jobserver-auth=fifo:/tmp/f").mode);
  EXPECT_EQ(JobserverConfig::Mode::kNone, Parse("kn -j3 --jobserver-auth=fifo:/tmp/f").mode);
  // An `n` anywhere but in the dash-less first word is not make -n.
  EXPECT_EQ(JobserverConfig::Mode::kFifo, Parse(" -j3 --jobserver-auth=fifo:/tmp/n").mode);
  EXPECT_EQ(JobserverConfig::Mode::kFifo, Parse("k -j3 --jobserver-auth=fifo:/tmp/n").mode);
}

TEST(JobserverParseTest, LastAuthWins) {
  JobserverConfig config = Parse(" -j3 --jobserver-auth=3,4 --jobserver-auth=fifo:/tmp/second");
  EXPECT_EQ(JobserverConfig::Mode::kFifo, config.mode);
  EXPECT_EQ("/tmp/second", config.fifo_path);
  config = Parse("\t--jobserver-auth=fifo:/tmp/first\t--jobserver-auth=7,8");
  EXPECT_EQ(JobserverConfig::Mode::kPipe, config.mode);
  EXPECT_EQ(7, config.read_fd);
  // Variable assignments after `--` are not flags, whatever they look like.
  config = Parse(" -j3 --jobserver-auth=fifo:/tmp/real -- X=--jobserver-auth=fifo:/tmp/fake");
  EXPECT_EQ("/tmp/real", config.fifo_path);
}

TEST(JobserverParseTest, MalformedAuth) {
  std::string error;
  // Not two leading integers: the Windows semaphore form, as PyPI ninja 1.13.2 words it.
  for (const char* auth : {"10,", "a,b", "3", "", "semaphore_name", ",4"}) {
    Parse(std::string(" --jobserver-auth=") + auth, false, &error);
    EXPECT_EQ("Semaphore mode is not supported on Posix!", error) << auth;
  }
}

TEST(JobserverParseTest, PairIsReadAsScanfReadsIt) {
  JobserverConfig config = Parse(" -j3 --jobserver-auth=3,4,5");  // what follows the pair is ignored
  EXPECT_EQ(JobserverConfig::Mode::kPipe, config.mode);
  EXPECT_EQ(3, config.read_fd);
  EXPECT_EQ(4, config.write_fd);
  config = Parse(" -j3 --jobserver-auth=+7,8x");
  EXPECT_EQ(7, config.read_fd);
  EXPECT_EQ(8, config.write_fd);
  EXPECT_EQ(JobserverConfig::Mode::kNone, Parse(" -j3 --jobserver-auth=3,-1").mode);
}

// A FIFO in a fresh directory, kept open read-write by the test (a FIFO's bytes live only while
// someone holds it open) and preloaded with `tokens`.
class FifoPool {
 public:
  explicit FifoPool(const std::string& tokens) {
    char dir[] = "/tmp/headroom_jobserver_XXXXXX";
    EXPECT_NE(nullptr, mkdtemp(dir));
    dir_ = dir;
    path_ = dir_ + "/fifo";
    EXPECT_EQ(0, mkfifo(path_.c_str(), 0600));
    fd_ = open(path_.c_str(), O_RDWR | O_NONBLOCK);
    EXPECT_GE(fd_, 0);
    EXPECT_EQ(static_cast<ssize_t>(tokens.size()), write(fd_, tokens.data(), tokens.size()));
  }
  ~FifoPool() {
    close(fd_);
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }
  // Takes everything now in the pool (what is back), sorted so order does not matter.
  std::string Drain() {
    std::string out;
    char buf[256];
    ssize_t n;
    while ((n = read(fd_, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    std::sort(out.begin(), out.end());
    return out;
  }
  void Put(const std::string& tokens) { ASSERT_EQ(static_cast<ssize_t>(tokens.size()), write(fd_, tokens.data(), tokens.size())); }

 private:
  std::string dir_, path_;
  int fd_ = -1;
};

TEST(JobserverClientTest, AcquiresWithoutBlockingAndGivesTheSameBytesBack) {
  FifoPool pool("xyz");
  std::string err;
  auto client = JobserverClient::OpenFifo(pool.path(), &err);
  ASSERT_TRUE(client) << err;
  EXPECT_EQ(1u, client->slots());  // the implicit slot needs no token
  EXPECT_TRUE(client->TryAcquire());
  EXPECT_TRUE(client->TryAcquire());
  EXPECT_TRUE(client->TryAcquire());
  EXPECT_FALSE(client->TryAcquire());  // empty pool: answers at once
  EXPECT_EQ(4u, client->slots());
  EXPECT_EQ("", pool.Drain());

  client->ReleaseTo(3);  // three jobs still running: one token back
  EXPECT_EQ(3u, client->slots());
  EXPECT_EQ(1u, pool.Drain().size());
  client->ReleaseTo(0);  // the implicit slot is never written to the pool
  EXPECT_EQ(1u, client->slots());
  EXPECT_EQ(2u, pool.Drain().size());
}

TEST(JobserverClientTest, DestructorReturnsEveryToken) {
  FifoPool pool("ab");
  {
    std::string err;
    auto client = JobserverClient::OpenFifo(pool.path(), &err);
    ASSERT_TRUE(client) << err;
    ASSERT_TRUE(client->TryAcquire());
    ASSERT_TRUE(client->TryAcquire());
  }
  EXPECT_EQ("ab", pool.Drain());
}

TEST(JobserverClientTest, DescriptorIsCloseOnExec) {
  FifoPool pool("");
  std::string err;
  // The client's descriptor is the lowest free one once we know which that is.
  int probe = dup(0);
  ASSERT_GE(probe, 0);
  close(probe);
  auto client = JobserverClient::OpenFifo(pool.path(), &err);
  ASSERT_TRUE(client) << err;
  int flags = fcntl(probe, F_GETFD);
  ASSERT_NE(-1, flags);
  EXPECT_TRUE(flags & FD_CLOEXEC);
}

TEST(JobserverClientTest, OpenErrors) {
  std::string err;
  EXPECT_FALSE(JobserverClient::OpenFifo("", &err));
  EXPECT_EQ("Empty fifo path", err);
  EXPECT_FALSE(JobserverClient::OpenFifo("/nonexistent/headroom/fifo", &err));
  EXPECT_EQ("Error opening fifo for reading: No such file or directory", err);
}

class MessageStatus : public fakes::NullStatus {
 public:
  void Info(const std::string& message) override { lines.push_back("info:" + message); }
  void Warning(const std::string& message) override { lines.push_back("warning:" + message); }
  void Error(const std::string& message) override { lines.push_back("error:" + message); }
  std::vector<std::string> lines;
};

TEST(JobserverSetUpTest, FifoModeIsAnnounced) {
  FifoPool pool("");
  BuildConfig config;
  MessageStatus status;
  std::string flags = " -j3 --jobserver-auth=fifo:" + pool.path();
  EXPECT_TRUE(SetUpJobserver(config, flags.c_str(), &status));
  EXPECT_EQ(std::vector<std::string>{"info:Jobserver mode detected: " + flags}, status.lines);

  status.lines.clear();
  config.verbosity = BuildConfig::Verbosity::kNoStatusUpdate;  // --quiet: used, not announced
  EXPECT_TRUE(SetUpJobserver(config, flags.c_str(), &status));
  EXPECT_TRUE(status.lines.empty());
}

TEST(JobserverSetUpTest, ExplicitJobsDryRunOrNoMakeflagsMeanNoJobserver) {
  FifoPool pool("");
  std::string flags = " -j3 --jobserver-auth=fifo:" + pool.path();
  MessageStatus status;
  BuildConfig config;
  config.parallelism_from_cli = true;
  EXPECT_FALSE(SetUpJobserver(config, flags.c_str(), &status));
  config = BuildConfig();
  config.dry_run = true;
  EXPECT_FALSE(SetUpJobserver(config, flags.c_str(), &status));
  config = BuildConfig();
  EXPECT_FALSE(SetUpJobserver(config, nullptr, &status));
  EXPECT_FALSE(SetUpJobserver(config, " -k", &status));
  EXPECT_TRUE(status.lines.empty());
}

// make's pipe, as the inheriting recipe sees it: two descriptors of one pipe, with `tokens` in it.
class PipePool {
 public:
  explicit PipePool(const std::string& tokens) {
    EXPECT_EQ(0, pipe(fds_));
    EXPECT_EQ(static_cast<ssize_t>(tokens.size()), write(fds_[1], tokens.data(), tokens.size()));
  }
  ~PipePool() {
    close(fds_[0]);
    close(fds_[1]);
  }
  std::string Flags() const { return " -j3 --jobserver-auth=" + std::to_string(fds_[0]) + "," + std::to_string(fds_[1]); }
  int read_fd() const { return fds_[0]; }
  int write_fd() const { return fds_[1]; }
  std::string Drain() {
    int flags = fcntl(fds_[0], F_GETFL);
    fcntl(fds_[0], F_SETFL, flags | O_NONBLOCK);
    std::string out;
    char buf[256];
    ssize_t n;
    while ((n = read(fds_[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    fcntl(fds_[0], F_SETFL, flags);
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  int fds_[2] = {-1, -1};
};

TEST(JobserverSetUpTest, PipeModeIsAnnouncedWithAdviceAndUsed) {
  PipePool pool("ab");
  BuildConfig config;
  MessageStatus status;
  std::string flags = pool.Flags();
  auto client = SetUpJobserver(config, flags.c_str(), &status);
  ASSERT_TRUE(client);
  EXPECT_EQ((std::vector<std::string>{"info:Jobserver mode detected: " + flags,
                                      "warning:Jobserver 'pipe' mode detected, a pool that implements 'fifo' mode "
                                      "would be more reliable!"}),
            status.lines);
  EXPECT_TRUE(client->TryAcquire());
  EXPECT_TRUE(client->TryAcquire());
  EXPECT_FALSE(client->TryAcquire());  // empty: answers at once, the shared description stays blocking
  EXPECT_EQ(0, fcntl(pool.read_fd(), F_GETFL) & O_NONBLOCK);
  client.reset();
  EXPECT_EQ("ab", pool.Drain());
}

TEST(JobserverSetUpTest, ClosedOrNonPipeDescriptorsAreAnErrorAndTheBuildGoesOn) {
  BuildConfig config;
  MessageStatus status;
  // make withholds the pair from recipes without `+`: nothing is open there.
  EXPECT_FALSE(SetUpJobserver(config, " -j3 --jobserver-auth=998,999", &status));
  EXPECT_EQ((std::vector<std::string>{
                "info:Jobserver mode detected:  -j3 --jobserver-auth=998,999",
                "warning:Jobserver 'pipe' mode detected, a pool that implements 'fifo' mode would be more reliable!",
                "error:Could not initialize jobserver: Invalid file descriptors"}),
            status.lines);
  int null_fd = open("/dev/null", O_RDWR);
  ASSERT_GE(null_fd, 0);
  std::string err;
  EXPECT_FALSE(JobserverClient::OpenPipe(null_fd, null_fd, &err));
  EXPECT_EQ("Invalid file descriptors", err);
  close(null_fd);
}

TEST(JobserverSetUpTest, MissingFifoIsAnErrorAndTheBuildGoesOn) {
  BuildConfig config;
  MessageStatus status;
  EXPECT_FALSE(SetUpJobserver(config, " -j3 --jobserver-auth=fifo:/nonexistent/f", &status));
  EXPECT_EQ((std::vector<std::string>{
                "info:Jobserver mode detected:  -j3 --jobserver-auth=fifo:/nonexistent/f",
                "error:Could not initialize jobserver: Error opening fifo for reading: No such file or directory"}),
            status.lines);
}

// The Builder with a jobserver: the pool, not -j, bounds the jobs in flight, and every token is
// back in the pool however the build ends.
class JobserverBuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ManifestParser parser(&state_, &fs_);
    std::string err;
    std::string manifest = "rule touch\n  command = touch $out\nrule fail\n  command = fail\n";
    std::string all;
    for (int i = 0; i < 12; ++i) {
      manifest += "build o" + std::to_string(i) + ": touch\n";
      all += " o" + std::to_string(i);
    }
    manifest += "build bad: fail\nbuild all: phony" + all + "\nbuild mixed: phony" + all + " bad\n";
    ASSERT_TRUE(parser.ParseTest(manifest, &err)) << err;
  }

  BuildResult Build(const std::string& target, JobserverClient* client, std::string* err) {
    Builder builder(&state_, config_, &log_, &deps_log_, &fs_, &status_, &clock_);
    builder.set_runner(&runner_);
    builder.set_jobserver(client);
    if (!builder.AddTarget(target, err)) return BuildResult::kFailed;
    return builder.Build(err);
  }

  State state_;
  VirtualFileSystem fs_;
  FakeProcessRunner runner_{&fs_};
  ManualClock clock_;
  BuildConfig config_;  // parallelism 1: the default would allow one job
  BuildLog log_;
  DepsLog deps_log_;
  MessageStatus status_;
};

TEST_F(JobserverBuildTest, PoolBoundsParallelismAndGetsEveryTokenBack) {
  FifoPool pool("+++");
  std::string err;
  auto client = JobserverClient::OpenFifo(pool.path(), &err);
  ASSERT_TRUE(client) << err;
  EXPECT_EQ(BuildResult::kSucceeded, Build("all", client.get(), &err)) << err;
  EXPECT_EQ(12u, runner_.commands_run.size());
  EXPECT_EQ(4u, runner_.max_running);  // implicit slot + 3 tokens, though -j is 1
  EXPECT_EQ(0u, client->tokens_held());
  EXPECT_EQ("+++", pool.Drain());
}

TEST_F(JobserverBuildTest, EmptyPoolStillRunsOneJobAtATime) {
  FifoPool pool("");
  std::string err;
  config_.parallelism = 8;  // the local default no longer applies
  auto client = JobserverClient::OpenFifo(pool.path(), &err);
  ASSERT_TRUE(client) << err;
  EXPECT_EQ(BuildResult::kSucceeded, Build("all", client.get(), &err)) << err;
  EXPECT_EQ(12u, runner_.commands_run.size());
  EXPECT_EQ(1u, runner_.max_running);
}

TEST_F(JobserverBuildTest, TokensComeBackOnFailure) {
  FifoPool pool("abc");
  std::string err;
  auto client = JobserverClient::OpenFifo(pool.path(), &err);
  ASSERT_TRUE(client) << err;
  EXPECT_EQ(BuildResult::kFailed, Build("mixed", client.get(), &err));  // fails with others in flight
  EXPECT_EQ(0u, client->tokens_held());
  EXPECT_EQ("abc", pool.Drain());
}

TEST_F(JobserverBuildTest, TokensComeBackOnInterrupt) {
  FifoPool pool("abc");
  std::string err;
  auto client = JobserverClient::OpenFifo(pool.path(), &err);
  ASSERT_TRUE(client) << err;
  runner_.interrupt_after_starts = 3;  // interrupted with jobs (and tokens) in flight
  EXPECT_EQ(BuildResult::kInterrupted, Build("all", client.get(), &err));
  EXPECT_NE(0, runner_.aborted_with);
  EXPECT_EQ(0u, client->tokens_held());
  EXPECT_EQ("abc", pool.Drain());
}

}  // namespace
}  // namespace headroom
