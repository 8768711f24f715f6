// Tests for .headroom_hashes (HashLog): round trip, and that a damaged, cut-short or other-version file is
// never trusted: it reads as empty, with a reason.
#include "headroom/logs/hash_log.h"
#include "temp_dir.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace headroom {
namespace {

namespace fs = std::filesystem;

HashRecord MakeRecord(HashLog* log, std::vector<std::pair<std::string, uint64_t>> outputs,
                      std::vector<std::pair<std::string, uint64_t>> inputs) {
  HashRecord record;
  for (auto& [path, hash] : outputs) record.outputs.push_back({log->InternPath(path), hash});
  for (auto& [path, hash] : inputs) record.inputs.push_back({log->InternPath(path), hash});
  return record;
}

// Edges sharing a header (one pair written once), one with two outputs, a path with a space.
HashLog SampleLog() {
  HashLog log;
  log.Set("a.o", MakeRecord(&log, {{"a.o", 1}}, {{"a.c", 0xffffffffffffffffull}, {"h.h", 42}}));
  log.Set("b.o", MakeRecord(&log, {{"b.o", 2}, {"b.dwo", 3}}, {{"dir/b c.c", 7}, {"h.h", 42}}));
  log.Set("app", MakeRecord(&log, {{"app", 9}}, {}));
  log.Set("z", MakeRecord(&log, {{"z", 5}}, {{"y", 6}}));  // one-letter paths: the shortest pair lines
  return log;
}

// The records of `log` by output path, as (path, hash) lists, so two logs' path tables need not agree.
std::map<std::string, std::vector<std::pair<std::string, uint64_t>>> Contents(const HashLog& log,
                                                                              std::vector<std::string> keys) {
  std::map<std::string, std::vector<std::pair<std::string, uint64_t>>> out;
  for (const std::string& key : keys) {
    const HashRecord* record = log.Find(key);
    if (!record) continue;
    auto& files = out[key];
    for (const HashedFile& f : record->outputs) files.emplace_back("out:" + log.path(f.path_id), f.hash);
    for (const HashedFile& f : record->inputs) files.emplace_back("in:" + log.path(f.path_id), f.hash);
  }
  return out;
}

const std::vector<std::string> kKeys = {"a.o", "b.o", "app", "z", "h.h"};

TEST(HashLog, RoundTripKeepsEveryRecord) {
  HashLog log = SampleLog();
  const std::string text = log.Serialize();
  HashLog read;
  std::string err;
  ASSERT_TRUE(read.Parse(text, &err)) << err;
  EXPECT_EQ(read.size(), 4u);
  EXPECT_EQ(Contents(read, kKeys), Contents(log, kKeys));
  EXPECT_FALSE(read.changed());
  // The shared (h.h, 42) pair is written once.
  EXPECT_EQ(text.find("h.h"), text.rfind("h.h"));
}

TEST(HashLog, SaveAndLoadThroughAFile) {
  TempDir dir{"hash_log"};
  HashLog log = SampleLog();
  std::string err;
  ASSERT_TRUE(log.Save(dir.File(".headroom_hashes"), &err)) << err;
  HashLog read;
  std::string warning;
  read.Load(dir.File(".headroom_hashes"), &warning);
  EXPECT_EQ(warning, "");
  EXPECT_EQ(Contents(read, kKeys), Contents(log, kKeys));
}

TEST(HashLog, MissingFileIsEmptyWithoutWarning) {
  TempDir dir{"hash_log"};
  HashLog read;
  std::string warning;
  read.Load(dir.File("nothing"), &warning);
  EXPECT_EQ(warning, "");
  EXPECT_EQ(read.size(), 0u);
}

TEST(HashLog, EveryTruncationIsRefused) {
  const std::string text = SampleLog().Serialize();
  for (size_t length = 0; length < text.size(); ++length) {
    HashLog read;
    std::string err;
    EXPECT_FALSE(read.Parse(text.substr(0, length), &err)) << "length " << length;
    EXPECT_FALSE(err.empty());
    EXPECT_EQ(read.size(), 0u);
  }
}

TEST(HashLog, EveryFlippedByteIsRefused) {
  const std::string text = SampleLog().Serialize();
  for (size_t i = 0; i < text.size(); ++i) {
    std::string damaged = text;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x01);
    HashLog read;
    std::string err;
    EXPECT_FALSE(read.Parse(damaged, &err)) << "byte " << i;
    EXPECT_EQ(read.size(), 0u);
  }
}

TEST(HashLog, OtherVersionIsRefusedAsSuch) {
  std::string text = SampleLog().Serialize();
  text.replace(text.find("v1\n"), 3, "v2\n");
  HashLog read;
  std::string err;
  EXPECT_FALSE(read.Parse(text, &err));
  EXPECT_EQ(err, "unsupported version");
}

TEST(HashLog, CorruptFileWarnsAndIsRewrittenWhenSaved) {
  TempDir dir{"hash_log"};
  const std::string path = dir.File(".headroom_hashes");
  std::string text = SampleLog().Serialize();
  std::ofstream(path) << text.substr(0, text.size() / 2);
  HashLog read;
  std::string warning;
  read.Load(path, &warning);
  EXPECT_NE(warning.find("start over"), std::string::npos) << warning;
  EXPECT_EQ(read.size(), 0u);
  EXPECT_TRUE(read.changed());
  std::string err;
  ASSERT_TRUE(read.Save(path, &err)) << err;
  HashLog again;
  warning.clear();
  again.Load(path, &warning);
  EXPECT_EQ(warning, "");
}

TEST(HashLog, ValidChecksumDoesNotExcuseABadRecord) {
  // A record naming a pair that does not exist, sealed with a correct checksum, is still refused.
  HashLog log;
  log.Set("x", MakeRecord(&log, {{"x", 1}}, {}));
  std::string text = log.Serialize();
  std::string body = text.substr(0, text.rfind("end "));
  ASSERT_NE(body.find("r 1 0\n"), std::string::npos) << body;
  body.replace(body.find("r 1 0\n"), 6, "r 1 9\n");
  char checksum[17];
  snprintf(checksum, sizeof checksum, "%016llx", static_cast<unsigned long long>(HashLog::Checksum(body)));
  HashLog read;
  std::string err;
  EXPECT_FALSE(read.Parse(body + "end 1 1 " + checksum + "\n", &err));
  EXPECT_EQ(err, "corrupt record line");
  EXPECT_EQ(read.size(), 0u);
  // The same text with the right pair id reads.
  body.replace(body.find("r 1 9\n"), 6, "r 1 0\n");
  snprintf(checksum, sizeof checksum, "%016llx", static_cast<unsigned long long>(HashLog::Checksum(body)));
  EXPECT_TRUE(read.Parse(body + "end 1 1 " + checksum + "\n", &err)) << err;
}

TEST(HashLog, ContentHashDependsOnEveryByte) {
  EXPECT_NE(HashLog::HashContents("abc"), HashLog::HashContents("abd"));
  EXPECT_NE(HashLog::HashContents(""), HashLog::HashContents(std::string(1, '\0')));
  EXPECT_EQ(HashLog::HashContents("same"), HashLog::HashContents("same"));
}

TEST(HashLog, EraseUnlessDropsRecordsAndMarksChanged) {
  HashLog log = SampleLog();
  std::string err;
  ASSERT_TRUE(log.Parse(log.Serialize(), &err));
  log.EraseUnless([](const std::string& key) { return key != "b.o"; });
  EXPECT_TRUE(log.changed());
  EXPECT_EQ(log.Find("b.o"), nullptr);
  EXPECT_NE(log.Find("a.o"), nullptr);
}

}  // namespace
}  // namespace headroom
