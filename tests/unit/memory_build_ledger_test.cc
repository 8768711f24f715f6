// Tests for the machine-wide build ledger (memory/build_ledger.h): the record's text, publishing and reading between
// builds, dead builds (exit, SIGKILL, a forked child not yet exec'd), torn reads, hostile files and directories, and
// a second user. Processes are synchronised with pipes and waitpid, never with sleeps.
#include "headroom/memory/build_ledger.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace headroom {
namespace {

namespace fs = std::filesystem;

// A temp directory readable by every user (the second-user test runs as nobody), with the ledger directory inside
// it created by BuildLedger::Open itself.
class LedgerTempDir {
 public:
  LedgerTempDir() {
    std::string pattern = (fs::temp_directory_path() / "headroom-ledger-test-XXXXXX").string();
    base_ = mkdtemp(pattern.data());
    chmod(base_.c_str(), 0755);
  }
  ~LedgerTempDir() { fs::remove_all(base_); }
  const std::string& base() const { return base_; }
  std::string ledger() const { return base_ + "/ledger"; }
  std::string Path(const std::string& name) const { return ledger() + "/" + name; }
  // The names in the ledger directory, sorted.
  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& item : fs::directory_iterator(ledger())) names.push_back(item.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::string base_;
};

LedgerEntry Figures(const std::string& id, uint64_t owed, uint64_t used = 0, uint64_t budget = 0) {
  LedgerEntry entry;
  entry.id = id;
  entry.owed_bytes = owed;
  entry.used_bytes = used;
  entry.budget_bytes = budget;
  return entry;
}

std::unique_ptr<BuildLedger> OpenOrFail(const std::string& dir, const LedgerEntry& self) {
  std::string err;
  std::unique_ptr<BuildLedger> ledger = BuildLedger::Open(dir, self, &err);
  EXPECT_NE(ledger, nullptr) << err;
  return ledger;
}

// A record with a correct checksum around any body, for the parser's tests and hand-made entry files.
std::string Sealed(const std::string& body) {
  return fmt::format("{} sum={:016x}\n", body, LedgerRecordChecksum(body));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
}

// A pipe whose ends close themselves; both close-on-exec.
struct Pipe {
  int read_fd = -1, write_fd = -1;
  Pipe() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) == 0) {
      read_fd = fds[0];
      write_fd = fds[1];
    }
  }
  ~Pipe() {
    CloseRead();
    CloseWrite();
  }
  void CloseRead() {
    if (read_fd >= 0) close(read_fd);
    read_fd = -1;
  }
  void CloseWrite() {
    if (write_fd >= 0) close(write_fd);
    write_fd = -1;
  }
  bool Send(char byte) { return write(write_fd, &byte, 1) == 1; }
  // The next byte, or 0 at EOF.
  char Receive() {
    char byte = 0;
    ssize_t n;
    do {
      n = read(read_fd, &byte, 1);
    } while (n < 0 && errno == EINTR);
    return n == 1 ? byte : 0;
  }
  std::string ReceiveAll() {
    std::string text;
    char buffer[256];
    ssize_t n;
    while ((n = read(read_fd, buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR)) {
      if (n > 0) text.append(buffer, static_cast<size_t>(n));
    }
    return text;
  }
};

// Runs `body` in a forked child, which leaves with _exit(body()) (no destructors: a dead build's entry stays).
template <typename Body>
pid_t ForkChild(Body body) {
  fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  return pid;
}

int WaitForExit(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// A child the test owns: killed and reaped on every way out of the test, so a failed assertion leaves no process
// behind holding pipes another test waits on.
class ChildProcess {
 public:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  ~ChildProcess() { Kill(); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  pid_t pid() const { return pid_; }
  int Wait() { return pid_ > 0 ? WaitForExit(std::exchange(pid_, -1)) : 0; }
  int Kill() {
    if (pid_ > 0) kill(pid_, SIGKILL);
    return Wait();
  }

 private:
  pid_t pid_;
};

// A ledger in a child: opened with the child's own id, figures published, 'r' sent, then it waits for `go` (a
// byte or EOF) and leaves without its destructor, as a crash would.
int RunChildBuild(const std::string& dir, uint64_t owed, Pipe* ready, Pipe* go) {
  std::string err;
  auto ledger = BuildLedger::Open(dir, Figures("", owed, owed * 2, owed * 4), &err);
  if (!ledger) return 2;
  ready->Send('r');
  go->Receive();
  _exit(0);  // with the ledger still open: its entry stays behind, unlocked
}

// ---- the record's text ----

TEST(LedgerRecordTest, RoundTripsEveryField) {
  LedgerEntry entry;
  entry.id = "1234-5678";
  entry.pid = 1234;
  entry.cgroup = "/box/with space=odd%name\n";
  entry.parent_id = "99-100";
  entry.parent_job = 17;
  entry.owed_bytes = 3ull << 30;
  entry.used_bytes = 5ull << 20;
  entry.budget_bytes = 64ull << 30;
  entry.waiting_bytes = 7ull << 30;
  entry.updated_ms = 123456789;
  const std::string text = FormatLedgerRecord(entry);
  EXPECT_EQ(text.rfind("headroom-ledger 1 ", 0), 0u) << text;
  EXPECT_EQ(text.find('\n'), std::string::npos);
  LedgerEntry parsed;
  parsed.uid = 42;  // the parser leaves the owner alone
  std::string err;
  ASSERT_TRUE(ParseLedgerRecord(text + "      \n", &parsed, &err)) << err;
  EXPECT_EQ(parsed.id, entry.id);
  EXPECT_EQ(parsed.pid, entry.pid);
  EXPECT_EQ(parsed.cgroup, entry.cgroup);
  EXPECT_EQ(parsed.parent_id, entry.parent_id);
  EXPECT_EQ(parsed.parent_job, entry.parent_job);
  EXPECT_EQ(parsed.owed_bytes, entry.owed_bytes);
  EXPECT_EQ(parsed.used_bytes, entry.used_bytes);
  EXPECT_EQ(parsed.budget_bytes, entry.budget_bytes);
  EXPECT_EQ(parsed.updated_ms, entry.updated_ms);
  EXPECT_EQ(parsed.waiting_bytes, entry.waiting_bytes);
  EXPECT_EQ(parsed.uid, 42u);
}

TEST(LedgerRecordTest, ReadsLaterVersionsAndIgnoresUnknownKeys) {
  LedgerEntry parsed;
  std::string err;
  ASSERT_TRUE(ParseLedgerRecord(Sealed("headroom-ledger 7 id=5-6 pid=5 owed=100 colour=blue future=a=b"), &parsed,
                                &err))
      << err;
  EXPECT_EQ(parsed.id, "5-6");
  EXPECT_EQ(parsed.owed_bytes, 100u);
  EXPECT_EQ(parsed.parent_job, -1);
  EXPECT_EQ(parsed.cgroup, "");
  EXPECT_EQ(parsed.waiting_bytes, 0u);  // written before `waiting` existed: waits for nothing
}

TEST(LedgerRecordTest, ClampsHugeFigures) {
  LedgerEntry parsed;
  std::string err;
  ASSERT_TRUE(ParseLedgerRecord(
      Sealed("headroom-ledger 1 id=5-6 pid=5 owed=999999999999999999999999999 used=1152921504606846976 "
             "budget=18446744073709551615 parent_job=-77 updated_ms=99999999999999999999"),
      &parsed, &err))
      << err;
  EXPECT_EQ(parsed.owed_bytes, kMaxLedgerClaimBytes);
  EXPECT_EQ(parsed.used_bytes, kMaxLedgerClaimBytes);
  EXPECT_EQ(parsed.budget_bytes, kMaxLedgerClaimBytes);
  EXPECT_EQ(parsed.parent_job, -1);
  EXPECT_EQ(parsed.updated_ms, INT64_MAX);
}

TEST(LedgerRecordTest, RefusesMalformedRecords) {
  const std::string good = FormatLedgerRecord(Figures("1-2", 10));
  std::string flipped = good;
  flipped[good.find("owed=") + 5] = '9';  // as a torn read would mix two records
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"empty", ""},
      {"garbage", "\x01\x02 hello = world\n"},
      {"no checksum", "headroom-ledger 1 id=1-2 pid=1 owed=5\n"},
      {"truncated", good.substr(0, good.size() / 2)},
      {"checksum cut short", good.substr(0, good.size() - 3)},
      {"bytes changed", flipped},
      {"wrong magic", Sealed("ninja-ledger 1 id=1-2 pid=1 owed=5")},
      {"magic alone", Sealed("headroom-ledger")},
      {"version zero", Sealed("headroom-ledger 0 id=1-2 pid=1 owed=5")},
      {"negative owed", Sealed("headroom-ledger 1 id=1-2 pid=1 owed=-5")},
      {"owed missing", Sealed("headroom-ledger 1 id=1-2 pid=1 used=5")},
      {"id missing", Sealed("headroom-ledger 1 pid=1 owed=5")},
      {"empty id", Sealed("headroom-ledger 1 id= pid=1 owed=5")},
      {"pid zero", Sealed("headroom-ledger 1 id=1-2 pid=0 owed=5")},
      {"pid too large", Sealed("headroom-ledger 1 id=1-2 pid=99999999 owed=5")},
      {"repeated key", Sealed("headroom-ledger 1 id=1-2 pid=1 owed=5 owed=0")},
      {"bad escape", Sealed("headroom-ledger 1 id=1-2 pid=1 owed=5 cgroup=/a%2")},
      {"not key=value", Sealed("headroom-ledger 1 id=1-2 pid=1 owed=5 stray")},
      {"number with a sign", Sealed("headroom-ledger 1 id=1-2 pid=+1 owed=5")},
  };
  for (const auto& [name, text] : cases) {
    LedgerEntry parsed;
    std::string err;
    EXPECT_FALSE(ParseLedgerRecord(text, &parsed, &err)) << name;
    EXPECT_FALSE(err.empty()) << name;
  }
}

// Every way a read can meet a rewrite (the new record's first k bytes over the old one's rest) is either refused
// or reads as one of the two records, never as a mix.
TEST(LedgerRecordTest, ASplicedRecordIsRefused) {
  LedgerEntry old_entry = Figures("100-1", 123456789, 987654321, 5);
  old_entry.pid = 100;
  LedgerEntry new_entry = Figures("100-1", 42, 7, 5);
  new_entry.pid = 100;
  for (uint64_t variant = 0; variant < 3; ++variant) {
    new_entry.owed_bytes = 42 + variant * 1000000000000ull;  // shorter, equal-ish and longer records
    const std::string old_text = FormatLedgerRecord(old_entry) + "\n";
    const std::string new_text = FormatLedgerRecord(new_entry) + "\n";
    for (size_t k = 0; k <= new_text.size(); ++k) {
      const std::string spliced = new_text.substr(0, k) + (k < old_text.size() ? old_text.substr(k) : "");
      LedgerEntry parsed;
      std::string err;
      if (!ParseLedgerRecord(spliced, &parsed, &err)) continue;
      EXPECT_TRUE(parsed.owed_bytes == old_entry.owed_bytes || parsed.owed_bytes == new_entry.owed_bytes) << k;
      EXPECT_EQ(parsed.used_bytes, parsed.owed_bytes == old_entry.owed_bytes ? old_entry.used_bytes : 7u) << k;
    }
  }
}

// ---- ids and places ----

TEST(BuildLedgerTest, ThisBuildIdIsPidAndStartTime) {
  const std::string id = ThisBuildId();
  const std::string prefix = fmt::format("{}-", getpid());
  ASSERT_EQ(id.rfind(prefix, 0), 0u) << id;
  const std::string ticks = id.substr(prefix.size());
  EXPECT_FALSE(ticks.empty());
  EXPECT_TRUE(std::all_of(ticks.begin(), ticks.end(), [](char c) { return c >= '0' && c <= '9'; })) << id;
  EXPECT_EQ(ThisBuildId(), id);
  Pipe result;
  const pid_t child = ForkChild([&] {
    const std::string child_id = ThisBuildId();
    return write(result.write_fd, child_id.data(), child_id.size()) > 0 ? 0 : 1;
  });
  result.CloseWrite();
  const std::string child_id = result.ReceiveAll();
  WaitForExit(child);
  EXPECT_EQ(child_id.rfind(fmt::format("{}-", child), 0), 0u) << child_id;
}

TEST(BuildLedgerTest, DefaultDirectoryFollowsTheEnvironment) {
  const char* saved = getenv("HEADROOM_LEDGER_DIR");
  const std::string saved_value = saved ? saved : "";
  setenv("HEADROOM_LEDGER_DIR", "/somewhere/else", 1);
  EXPECT_EQ(DefaultLedgerDir(), "/somewhere/else");
  unsetenv("HEADROOM_LEDGER_DIR");
  EXPECT_EQ(DefaultLedgerDir(), fs::is_directory("/dev/shm") ? "/dev/shm/headroom-ledger" : "/tmp/headroom-ledger");
  if (saved) setenv("HEADROOM_LEDGER_DIR", saved_value.c_str(), 1);
}

// ---- publishing and reading ----

TEST(BuildLedgerTest, TwoBuildsSeeEachOtherButNotThemselves) {
  LedgerTempDir temp;
  auto first = OpenOrFail(temp.ledger(), Figures("100-1", 1000, 2000, 3000));
  ASSERT_NE(first, nullptr);
  EXPECT_TRUE(first->Others().empty());  // its own entry is never among the others
  LedgerEntry second_self = Figures("200-2", 7 << 20, 8 << 20, 9 << 20);
  second_self.cgroup = "/box/sub";
  second_self.parent_id = "100-1";
  second_self.parent_job = 3;
  auto second = OpenOrFail(temp.ledger(), second_self);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(first->id(), "100-1");
  EXPECT_EQ(second->id(), "200-2");
  EXPECT_EQ(second->entry_path(), temp.Path("200-2.ledger"));

  std::vector<LedgerEntry> seen = first->Others();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].id, "200-2");
  EXPECT_EQ(seen[0].pid, getpid());
  EXPECT_EQ(seen[0].uid, geteuid());
  EXPECT_EQ(seen[0].cgroup, "/box/sub");
  EXPECT_EQ(seen[0].parent_id, "100-1");
  EXPECT_EQ(seen[0].parent_job, 3);
  EXPECT_EQ(seen[0].owed_bytes, 7u << 20);
  EXPECT_EQ(seen[0].used_bytes, 8u << 20);
  EXPECT_EQ(seen[0].budget_bytes, 9u << 20);
  EXPECT_GT(seen[0].updated_ms, 0);

  LedgerEntry update = Figures("ignored", 11, 22, 33);
  update.updated_ms = 987654;
  ASSERT_TRUE(second->Publish(update));
  seen = first->Others();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].id, "200-2");  // ids and the rest are fixed at Open
  EXPECT_EQ(seen[0].cgroup, "/box/sub");
  EXPECT_EQ(seen[0].owed_bytes, 11u);
  EXPECT_EQ(seen[0].used_bytes, 22u);
  EXPECT_EQ(seen[0].budget_bytes, 33u);
  EXPECT_EQ(seen[0].updated_ms, 987654);

  seen = second->Others();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].id, "100-1");
  EXPECT_EQ(seen[0].owed_bytes, 1000u);
}

TEST(BuildLedgerTest, PublishSkipsUnchangedFiguresAndClampsClaims) {
  LedgerTempDir temp;
  auto reader = OpenOrFail(temp.ledger(), Figures("1-1", 0));
  auto writer = OpenOrFail(temp.ledger(), Figures("2-2", 5));
  ASSERT_TRUE(reader && writer);
  LedgerEntry update = Figures("2-2", 6);
  update.updated_ms = 1000;
  ASSERT_TRUE(writer->Publish(update));
  update.updated_ms = 2000;  // the time alone is no change: nothing is written
  ASSERT_TRUE(writer->Publish(update));
  ASSERT_EQ(reader->Others().at(0).updated_ms, 1000);
  update.owed_bytes = UINT64_MAX;
  ASSERT_TRUE(writer->Publish(update));
  const LedgerEntry seen = reader->Others().at(0);
  EXPECT_EQ(seen.owed_bytes, kMaxLedgerClaimBytes);
  EXPECT_EQ(seen.updated_ms, 2000);
}

// The ledger's clock, read before a write: a write's own time is at or after it.
int64_t LedgerClockMs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

TEST(BuildLedgerTest, PublishCoalescedHoldsBackOwedChangesButNotTheOnesThatMatter) {
  LedgerTempDir temp;
  auto reader = OpenOrFail(temp.ledger(), Figures("1-1", 0));
  auto writer = OpenOrFail(temp.ledger(), Figures("2-2", 5));
  ASSERT_TRUE(reader && writer);
  auto owed_seen = [&]() { return reader->Others().at(0).owed_bytes; };
  int64_t before = LedgerClockMs();
  ASSERT_TRUE(writer->Publish(Figures("", 6)));
  // Within kLedgerCoalesceMs of that write, a change of owed (or used) alone waits for a later call.
  ASSERT_TRUE(writer->PublishCoalesced(Figures("", 7, 99), before + 1));
  EXPECT_EQ(owed_seen(), 6u);
  // Owed going to zero (the last job ended) and back (the first job started) is written at once.
  ASSERT_TRUE(writer->PublishCoalesced(Figures("", 0), before + 1));
  EXPECT_EQ(owed_seen(), 0u);
  before = LedgerClockMs();
  ASSERT_TRUE(writer->PublishCoalesced(Figures("", 9), before + 1));
  EXPECT_EQ(owed_seen(), 9u);
  // So is a change of what the build waits for, or of its budget.
  LedgerEntry waiting = Figures("", 9);
  waiting.waiting_bytes = 1 << 20;
  ASSERT_TRUE(writer->PublishCoalesced(waiting, before + 1));
  EXPECT_EQ(reader->Others().at(0).waiting_bytes, 1u << 20);
  // A held change goes out with the first call after the interval (a tick of the build, at the latest).
  waiting.owed_bytes = 10;
  ASSERT_TRUE(writer->PublishCoalesced(waiting, before + 1));
  EXPECT_EQ(owed_seen(), 9u);
  ASSERT_TRUE(writer->PublishCoalesced(waiting, before + kLedgerCoalesceMs + 10'000));
  EXPECT_EQ(owed_seen(), 10u);
}

TEST(BuildLedgerTest, AShorterRecordReplacesALongerOneWhole) {
  LedgerTempDir temp;
  auto reader = OpenOrFail(temp.ledger(), Figures("1-1", 0));
  auto writer = OpenOrFail(temp.ledger(), Figures("2-2", kMaxLedgerClaimBytes, kMaxLedgerClaimBytes, 1));
  ASSERT_TRUE(reader && writer);
  ASSERT_TRUE(writer->Publish(Figures("", 1, 2, 3)));
  const LedgerEntry seen = reader->Others().at(0);
  EXPECT_EQ(seen.owed_bytes, 1u);
  EXPECT_EQ(seen.used_bytes, 2u);
  // One line, padded with spaces to the longest record's length: no stale tail, no truncate.
  const std::string contents = ReadFile(writer->entry_path());
  EXPECT_EQ(std::count(contents.begin(), contents.end(), '\n'), 1);
  EXPECT_EQ(contents.back(), '\n');
  EXPECT_NE(contents.find("owed=1 "), std::string::npos) << contents;
}

TEST(BuildLedgerTest, EntriesAreReadableByAllAndTheDirectoryIsSharedWhateverTheUmask) {
  LedgerTempDir temp;
  const mode_t saved_umask = umask(077);
  auto ledger = OpenOrFail(temp.ledger(), Figures("1-1", 0));
  umask(saved_umask);
  ASSERT_NE(ledger, nullptr);
  struct stat st {};
  ASSERT_EQ(stat(temp.ledger().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777u);
  ASSERT_EQ(stat(ledger->entry_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(temp.Names(), std::vector<std::string>{"1-1.ledger"});  // the temporary name is gone
}

TEST(BuildLedgerTest, DestructorRemovesTheEntry) {
  LedgerTempDir temp;
  auto reader = OpenOrFail(temp.ledger(), Figures("1-1", 0));
  auto writer = OpenOrFail(temp.ledger(), Figures("2-2", 5));
  ASSERT_EQ(reader->Others().size(), 1u);
  writer.reset();
  EXPECT_TRUE(reader->Others().empty());
  EXPECT_EQ(temp.Names(), std::vector<std::string>{"1-1.ledger"});
}

TEST(BuildLedgerTest, ANameAlreadyTakenGetsASuffix) {
  LedgerTempDir temp;
  auto reader = OpenOrFail(temp.ledger(), Figures("1-1", 0));
  WriteFile(temp.Path("2-2.ledger"), "left by a crash before a reboot\n");
  auto writer = OpenOrFail(temp.ledger(), Figures("2-2", 5));
  ASSERT_NE(writer, nullptr);
  EXPECT_EQ(writer->entry_path(), temp.Path("2-2-1.ledger"));
  const std::vector<LedgerEntry> seen = reader->Others();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].owed_bytes, 5u);
  EXPECT_EQ(temp.Names(), (std::vector<std::string>{"1-1.ledger", "2-2-1.ledger"}));  // the dead one removed
}

TEST(BuildLedgerTest, ALongCgroupIsPublishedAsUnknownAndABadIdIsRefused) {
  LedgerTempDir temp;
  auto reader = OpenOrFail(temp.ledger(), Figures("1-1", 0));
  LedgerEntry self = Figures("2-2", 5);
  self.cgroup = "/" + std::string(kMaxLedgerRecordBytes, 'c');
  auto writer = OpenOrFail(temp.ledger(), self);
  ASSERT_NE(writer, nullptr);
  EXPECT_EQ(reader->Others().at(0).cgroup, "");
  for (const std::string& id : std::vector<std::string>{"../escape", ".hidden", "a/b", std::string(200, 'x')}) {
    std::string err;
    EXPECT_EQ(BuildLedger::Open(temp.ledger(), Figures(id, 0), &err), nullptr) << id;
    EXPECT_NE(err.find("cannot name a ledger entry"), std::string::npos) << err;
  }
}

// ---- dead builds ----

class DeadBuildTest : public ::testing::TestWithParam<bool> {};  // true: SIGKILL, false: _exit

TEST_P(DeadBuildTest, DisappearsAtOnceAndItsFileIsRemoved) {
  LedgerTempDir temp;
  auto reader = OpenOrFail(temp.ledger(), Figures("1-1", 0));
  ASSERT_NE(reader, nullptr);
  Pipe ready, go;
  ChildProcess child(ForkChild([&] { return RunChildBuild(temp.ledger(), 4096, &ready, &go); }));
  ready.CloseWrite();  // EOF, not a hang, if the child fails
  ASSERT_EQ(ready.Receive(), 'r');
  std::vector<LedgerEntry> seen = reader->Others();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].pid, child.pid());
  EXPECT_EQ(seen[0].id.rfind(fmt::format("{}-", child.pid()), 0), 0u) << seen[0].id;
  EXPECT_EQ(seen[0].owed_bytes, 4096u);
  if (GetParam()) {
    EXPECT_TRUE(WIFSIGNALED(child.Kill()));
  } else {
    go.Send('x');
    const int status = child.Wait();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_TRUE(reader->Others().empty());
  EXPECT_EQ(temp.Names(), std::vector<std::string>{"1-1.ledger"});
}

INSTANTIATE_TEST_SUITE_P(ExitOrKill, DeadBuildTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Sigkill" : "Exit"; });

// The caveat docs/build-ledger.md states: a child forked from a build shares its lock until it execs (the entry
// is close-on-exec) or exits. headroom's forked helpers close their descriptors or exec at once.
TEST(BuildLedgerTest, AForkedChildKeepsTheEntryLiveUntilItExecs) {
  LedgerTempDir temp;
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);  // so the orphaned grandchild can be reaped here
  struct SubreaperOff {
    ~SubreaperOff() { prctl(PR_SET_CHILD_SUBREAPER, 0); }
  } subreaper_off;
  Pipe ready, go;
  pid_t grandchild_id = -1;
  {
    Pipe grandchild_pid;
    ChildProcess build(ForkChild([&] {
      std::string err;
      auto ledger = BuildLedger::Open(temp.ledger(), Figures("", 77), &err);
      if (!ledger) return 2;
      const pid_t helper = ForkChild([&] {
        ready.Send('g');
        go.Receive();
        execl("/bin/sleep", "sleep", "1000", static_cast<char*>(nullptr));
        return 3;
      });
      if (write(grandchild_pid.write_fd, &helper, sizeof helper) != sizeof helper) return 4;
      ready.Send('r');
      for (;;) pause();  // until SIGKILLed
    }));
    ready.CloseWrite();
    grandchild_pid.CloseWrite();
    ASSERT_EQ(read(grandchild_pid.read_fd, &grandchild_id, sizeof grandchild_id),
              static_cast<ssize_t>(sizeof grandchild_id));
    std::set<char> received = {ready.Receive(), ready.Receive()};
    ASSERT_EQ(received, (std::set<char>{'g', 'r'}));
    EXPECT_TRUE(WIFSIGNALED(build.Kill()));
  }
  ChildProcess grandchild(grandchild_id);
  auto reader = OpenOrFail(temp.ledger(), Figures("1-1", 0));
  std::vector<LedgerEntry> seen = reader->Others();
  ASSERT_EQ(seen.size(), 1u) << "the forked, not yet exec'd child still holds the dead build's lock";
  EXPECT_EQ(seen[0].owed_bytes, 77u);

  go.Send('x');
  // The grandchild holds the last copy of `ready`'s write end, close-on-exec: EOF once it has exec'd.
  EXPECT_EQ(ready.Receive(), 0);
  EXPECT_TRUE(reader->Others().empty());
  EXPECT_EQ(temp.Names(), std::vector<std::string>{"1-1.ledger"});
  grandchild.Kill();
}

// ---- torn reads ----

// A child publishes as fast as it can, figures tied by a rule and of varying length; the parent reads thousands
// of times and must never see a mix of two records.
TEST(BuildLedgerTest, ReadersNeverSeeATornRecord) {
  LedgerTempDir temp;
  auto reader = OpenOrFail(temp.ledger(), Figures("1-1", 0));
  ASSERT_NE(reader, nullptr);
  Pipe ready;
  ChildProcess child(ForkChild([&] {
    std::string err;
    auto ledger = BuildLedger::Open(temp.ledger(), Figures("", 1, 4, 1 + 12345), &err);
    if (!ledger) return 2;
    ready.Send('r');
    for (uint64_t k = 1;; ++k) {
      uint64_t modulus = 10;
      for (uint64_t digits = k % 13; digits > 0; --digits) modulus *= 10;  // 3 x owed stays below the clamp
      const uint64_t owed = (k * 2654435761ull) % modulus + 1;
      ledger->Publish(Figures("", owed, owed * 3 + 1, owed + 12345));
    }
  }));
  ready.CloseWrite();
  ASSERT_EQ(ready.Receive(), 'r');
  constexpr int kReads = 20000;
  int readings = 0, broken = 0;
  std::set<uint64_t> distinct;
  for (int i = 0; i < kReads; ++i) {
    for (const LedgerEntry& entry : reader->Others()) {
      ++readings;
      if (entry.used_bytes != entry.owed_bytes * 3 + 1 || entry.budget_bytes != entry.owed_bytes + 12345) ++broken;
      if (distinct.size() < 1000) distinct.insert(entry.owed_bytes);
    }
  }
  child.Kill();
  EXPECT_EQ(broken, 0);
  EXPECT_EQ(readings, kReads) << "a live build went missing from some readings";
  EXPECT_GT(distinct.size(), 10u) << "the writer hardly ran";
}

// ---- hostile and broken files ----

// A file that looks live: the test holds its lock as a running build would.
int LockedFile(const std::string& path, const std::string& contents) {
  WriteFile(path, contents);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0) << path;
  return fd;
}

TEST(BuildLedgerTest, MalformedAndHostileEntriesAreSkippedWithoutHanging) {
  LedgerTempDir temp;
  auto reader = OpenOrFail(temp.ledger(), Figures("1-1", 0));
  ASSERT_NE(reader, nullptr);
  std::vector<int> locks;
  const std::string valid = Sealed("headroom-ledger 1 id=9-9 pid=9 owed=5");
  locks.push_back(LockedFile(temp.Path("garbage.ledger"), "\x7f" "ELF\x02\x01 not a record at all"));
  locks.push_back(LockedFile(temp.Path("negative.ledger"), Sealed("headroom-ledger 1 id=3-3 pid=3 owed=-4096")));
  locks.push_back(LockedFile(temp.Path("truncated.ledger"), valid.substr(0, valid.size() / 2)));
  locks.push_back(LockedFile(temp.Path("empty.ledger"), ""));
  locks.push_back(LockedFile(temp.Path("huge.ledger"),
                             Sealed("headroom-ledger 1 id=4-4 pid=4 owed=99999999999999999999999999 used=1")));
  locks.push_back(LockedFile(temp.Path("big.ledger"), std::string(1 << 20, 'x')));
  // Outside the directory, live and valid: a symlink to it must not be followed.
  locks.push_back(LockedFile(temp.base() + "/outside", valid));
  fs::create_symlink(temp.base() + "/outside", temp.Path("link.ledger"));
  ASSERT_EQ(mkfifo(temp.Path("fifo.ledger").c_str(), 0644), 0);  // an open without O_NONBLOCK would hang
  fs::create_directory(temp.Path("dir.ledger"));
  WriteFile(temp.Path("dead.ledger"), valid);  // valid but unlocked: its build is gone
  WriteFile(temp.Path("not-an-entry.txt"), valid);
  WriteFile(temp.Path(".9-9-0.tmp"), valid);  // a temporary name, never read

  const std::vector<LedgerEntry> seen = reader->Others();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].id, "4-4");
  EXPECT_EQ(seen[0].owed_bytes, kMaxLedgerClaimBytes);
  EXPECT_EQ(seen[0].used_bytes, 1u);
  const std::vector<std::string> names = temp.Names();
  EXPECT_EQ(std::count(names.begin(), names.end(), "dead.ledger"), 0);
  EXPECT_EQ(std::count(names.begin(), names.end(), "garbage.ledger"), 1);  // live (locked), only unreadable
  EXPECT_EQ(std::count(names.begin(), names.end(), "fifo.ledger"), 1);
  for (int fd : locks) close(fd);
}

// A live entry that cannot be read whole (here: damaged for good; in life, a writer preempted mid-write) counts at
// its last whole reading rather than as nothing.
TEST(BuildLedgerTest, ALiveEntryReadBadlyCountsAtItsLastGoodReading) {
  LedgerTempDir temp;
  auto reader = OpenOrFail(temp.ledger(), Figures("1-1", 0));
  ASSERT_NE(reader, nullptr);
  const std::string path = temp.Path("5-5.ledger");
  const int lock = LockedFile(path, Sealed("headroom-ledger 1 id=5-5 pid=5 owed=300"));
  ASSERT_EQ(reader->Others().at(0).owed_bytes, 300u);
  const int writer = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_EQ(pwrite(writer, "XX", 2, 20), 2);  // in place: the same, still locked, file
  close(writer);
  const std::vector<LedgerEntry> seen = reader->Others();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].owed_bytes, 300u);
  close(lock);
  EXPECT_TRUE(reader->Others().empty());
}

// Looks up nobody, or skips: the tests below need root (as CI has) to act as a second user.
bool NobodyIds(uid_t* uid, gid_t* gid) {
  const passwd* nobody = getpwnam("nobody");
  if (nobody == nullptr || geteuid() != 0) return false;
  *uid = nobody->pw_uid;
  *gid = nobody->pw_gid;
  return true;
}

// One user's flood of live entries is read only up to that user's share, and hides no other user's build.
TEST(BuildLedgerTest, AFloodOfOneUsersEntriesIsReadOnlyUpToTheirShare) {
  uid_t uid;
  gid_t gid;
  if (!NobodyIds(&uid, &gid)) GTEST_SKIP() << "needs root and a 'nobody' user";
  LedgerTempDir temp;
  auto reader = OpenOrFail(temp.ledger(), Figures("1-1", 0));
  ASSERT_NE(reader, nullptr);
  std::vector<int> locks;
  for (size_t i = 0; i < kMaxLedgerEntriesPerUser + 20; ++i) {
    locks.push_back(LockedFile(temp.Path(fmt::format("{}-1.ledger", i + 10)),
                               Sealed(fmt::format("headroom-ledger 1 id={}-1 pid=5 owed=1", i + 10))));
  }
  const std::string theirs = temp.Path("7-7.ledger");
  locks.push_back(LockedFile(theirs, Sealed("headroom-ledger 1 id=7-7 pid=7 owed=700")));
  ASSERT_EQ(chown(theirs.c_str(), uid, gid), 0);
  const std::vector<LedgerEntry> seen = reader->Others();
  EXPECT_EQ(seen.size(), kMaxLedgerEntriesPerUser + 1);
  EXPECT_EQ(std::count_if(seen.begin(), seen.end(), [&](const LedgerEntry& e) { return e.uid == uid; }), 1);
  for (int fd : locks) close(fd);
}

// ---- the directory ----

void ExpectRefused(const std::string& dir, const std::string& reason) {
  std::string err;
  EXPECT_EQ(BuildLedger::Open(dir, Figures("1-1", 0), &err), nullptr) << dir;
  EXPECT_NE(err.find(reason), std::string::npos) << "error: " << err;
  EXPECT_NE(err.find(dir), std::string::npos) << "error: " << err;
}

TEST(BuildLedgerTest, UnsafeDirectoriesAreRefusedWithAReason) {
  LedgerTempDir temp;
  const std::string real = temp.base() + "/real";
  fs::create_directory(real);
  chmod(real.c_str(), 01777);
  const std::string link = temp.base() + "/link";
  fs::create_symlink(real, link);
  ExpectRefused(link, "is a symlink");

  const std::string file = temp.base() + "/file";
  WriteFile(file, "");
  ExpectRefused(file, "is not a directory");

  const std::string open_to_all = temp.base() + "/open";
  fs::create_directory(open_to_all);
  chmod(open_to_all.c_str(), 0777);
  ExpectRefused(open_to_all, "world-writable without the sticky bit");

  const std::string group = temp.base() + "/group";
  fs::create_directory(group);
  chmod(group.c_str(), 0775);
  ExpectRefused(group, "group-writable without the sticky bit");

  std::string err;
  EXPECT_EQ(BuildLedger::Open(temp.base() + "/missing/parent", Figures("1-1", 0), &err), nullptr);
  EXPECT_NE(err.find("cannot create"), std::string::npos) << err;

  // Private (0700, ours) and shared (1777) directories are both fine.
  const std::string private_dir = temp.base() + "/private";
  fs::create_directory(private_dir);
  chmod(private_dir.c_str(), 0700);
  EXPECT_NE(OpenOrFail(private_dir, Figures("1-1", 0)), nullptr);
  EXPECT_NE(OpenOrFail(real, Figures("1-1", 0)), nullptr);
}

TEST(BuildLedgerTest, ADirectoryOwnedByAnotherUserIsRefused) {
  uid_t uid;
  gid_t gid;
  if (!NobodyIds(&uid, &gid)) GTEST_SKIP() << "needs root and a 'nobody' user";
  LedgerTempDir temp;
  const std::string theirs = temp.base() + "/theirs";
  fs::create_directory(theirs);
  chmod(theirs.c_str(), 01777);
  ASSERT_EQ(chown(theirs.c_str(), uid, gid), 0);
  ExpectRefused(theirs, fmt::format("is owned by uid {}", uid));
}

// A second user (nobody, via fork + setuid) reads root's live entry, cannot write it, and cannot remove root's
// dead one; root then removes nobody's dead entry and its own.
TEST(BuildLedgerTest, ASecondUserReadsEntriesButCannotRemoveOrChangeThem) {
  uid_t uid;
  gid_t gid;
  if (!NobodyIds(&uid, &gid)) GTEST_SKIP() << "needs root and a 'nobody' user";
  LedgerTempDir temp;
  auto root_build = OpenOrFail(temp.ledger(), Figures("100-1", 5000));
  ASSERT_NE(root_build, nullptr);
  {  // a root build that died: its entry stays, unlocked
    Pipe ready, go;
    ChildProcess dead(ForkChild([&] { return RunChildBuild(temp.ledger(), 1, &ready, &go); }));
    ready.CloseWrite();
    ASSERT_EQ(ready.Receive(), 'r');
    dead.Kill();
  }
  const std::vector<std::string> before = temp.Names();
  ASSERT_EQ(before.size(), 2u);
  const std::string dead_name = before[0] == "100-1.ledger" ? before[1] : before[0];

  Pipe report;
  ChildProcess nobody(ForkChild([&] {
    // Leaves at once, with any ledger still open: nobody's entry stays behind, unlocked, as after a crash.
    auto say = [&](const std::string& text) {
      ssize_t ignored = write(report.write_fd, text.data(), text.size());
      (void)ignored;
      _exit(0);
      return 0;
    };
    if (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0) return say("cannot become nobody");
    std::string err;
    auto ledger = BuildLedger::Open(temp.ledger(), Figures("200-2", 1), &err);
    if (!ledger) return say("open: " + err);
    const std::vector<LedgerEntry> seen = ledger->Others();
    if (seen.size() != 1 || seen[0].id != "100-1" || seen[0].uid != 0 || seen[0].owed_bytes != 5000) {
      return say(fmt::format("saw {} entries", seen.size()));
    }
    if (access((temp.ledger() + "/" + dead_name).c_str(), F_OK) != 0) return say("root's dead entry was removed");
    if (open(root_build->entry_path().c_str(), O_WRONLY | O_CLOEXEC) >= 0) return say("root's entry is writable");
    if (unlink(root_build->entry_path().c_str()) == 0) return say("root's entry was removable");
    return say("ok");
  }));
  report.CloseWrite();
  EXPECT_EQ(report.ReceiveAll(), "ok");
  nobody.Wait();

  // nobody left without its destructor: root, which may remove anything, clears both dead entries.
  ASSERT_EQ(temp.Names().size(), 3u);
  EXPECT_TRUE(root_build->Others().empty());
  EXPECT_EQ(temp.Names(), std::vector<std::string>{"100-1.ledger"});
}

}  // namespace
}  // namespace headroom
