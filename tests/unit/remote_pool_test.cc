// The remote pool: the farm's depth from distcc's host list, the slot ledger, and the local job cap.
#include <gtest/gtest.h>

#include <map>

#include "headroom/admission/remote_pool.h"

namespace headroom {
namespace {

TEST(RemotePoolTest, DistccHostLimitsAddUp) {
  DistccHosts hosts = ParseDistccHosts("127.0.0.1:3632/4 10.0.0.2/8,lzo farm3");
  EXPECT_EQ(std::optional<size_t>(16), hosts.remote_slots);  // farm3 has distcc's default of 4
  EXPECT_EQ(3u, hosts.remote_hosts);
  EXPECT_EQ(0u, hosts.local_slots);
}

TEST(RemotePoolTest, LocalhostCountsAsLocalSlots) {
  DistccHosts hosts = ParseDistccHosts("localhost/12 127.0.0.1:4000/4,cpp,lzo --randomize --localslots=3");
  EXPECT_EQ(std::optional<size_t>(4), hosts.remote_slots);
  EXPECT_EQ(15u, hosts.local_slots);
  EXPECT_EQ(std::optional<size_t>(), ParseDistccHosts("localhost/4").remote_slots);  // nothing remote
  EXPECT_EQ(2u, ParseDistccHosts("localhost").local_slots);
}

TEST(RemotePoolTest, HostsFileCommentsAndSshHosts) {
  DistccHosts hosts = ParseDistccHosts("# the farm\nbuild1/6  # fast\n\n@build2/2\nuser@build3\n");
  EXPECT_EQ(std::optional<size_t>(12), hosts.remote_slots);
  EXPECT_EQ(3u, hosts.remote_hosts);
}

TEST(RemotePoolTest, ZeroconfLeavesTheDepthUnknown) {
  EXPECT_EQ(std::optional<size_t>(), ParseDistccHosts("+zeroconf").remote_slots);
  EXPECT_EQ(std::optional<size_t>(), ParseDistccHosts("h1/4 +zeroconf").remote_slots);
}

TEST(RemotePoolTest, HostListIsFoundWhereDistccLooks) {
  std::map<std::string, std::string> env, files;
  auto getenv = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  auto read = [&](const std::string& path) -> std::optional<std::string> {
    auto it = files.find(path);
    return it == files.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  EXPECT_EQ(std::nullopt, DistccHostsText(getenv, read));
  files["/etc/distcc/hosts"] = "sys/2";
  EXPECT_EQ("sys/2", DistccHostsText(getenv, read).value_or(""));
  env["HOME"] = "/home/u";
  files["/home/u/.distcc/hosts"] = "home/3";
  EXPECT_EQ("home/3", DistccHostsText(getenv, read).value_or(""));
  env["DISTCC_DIR"] = "/d";
  EXPECT_EQ("sys/2", DistccHostsText(getenv, read).value_or(""));  // DISTCC_DIR replaces ~/.distcc
  env["DISTCC_HOSTS"] = "127.0.0.1:5000/4";
  EXPECT_EQ("127.0.0.1:5000/4", DistccHostsText(getenv, read).value_or(""));
}

TEST(RemotePoolTest, SlotsAreTakenAndGivenBack) {
  RemotePool pool(2);
  EXPECT_TRUE(pool.Take(10));
  EXPECT_FALSE(pool.Take(10));  // one slot per job
  EXPECT_TRUE(pool.Take(11));
  EXPECT_FALSE(pool.HasRoom());
  EXPECT_FALSE(pool.Take(12));
  EXPECT_TRUE(pool.Release(10));  // e.g. job 10 fell back to a local compile
  EXPECT_FALSE(pool.Release(10));
  EXPECT_TRUE(pool.Holds(11));
  EXPECT_TRUE(pool.Take(12));
  EXPECT_EQ(2u, pool.in_use());
  EXPECT_EQ(2u, pool.high_water());
}

TEST(RemotePoolTest, LocalJobCap) {
  EXPECT_EQ(200u, LocalJobCap(200, 0, 16));  // no farm: -j is the local bound, as in ninja
  EXPECT_EQ(18u, LocalJobCap(200, 64, 16));  // a farm: local jobs held to cores + 2
  EXPECT_EQ(8u, LocalJobCap(8, 64, 16));     // never above -j
}

TEST(RemotePoolTest, SccacheDistStatusGivesTheFarmsCpus) {
  // What `sccache --dist-status` (0.16) prints with a scheduler and one build server, and without them.
  EXPECT_EQ(std::optional<size_t>(2), ParseSccacheDistStatus(
      R"({"SchedulerStatus":["http://127.0.0.1:10600/",{"num_servers":1,"num_cpus":2,"in_progress":0}]})"
      "\n"));
  EXPECT_EQ(std::optional<size_t>(96), ParseSccacheDistStatus(
      R"({"SchedulerStatus": ["http://s:10600/", {"num_servers": 3, "num_cpus": 96, "in_progress": 5}]})"));
  EXPECT_EQ(std::nullopt, ParseSccacheDistStatus(
      R"({"NotConnected":["http://127.0.0.1:10600/","could not communicate with scheduler"]})"));
  EXPECT_EQ(std::nullopt, ParseSccacheDistStatus(R"("Disabled")"));
  EXPECT_EQ(std::nullopt, ParseSccacheDistStatus(""));
  // A scheduler with no server yet says nothing about the farm's size.
  EXPECT_EQ(std::nullopt, ParseSccacheDistStatus(
      R"({"SchedulerStatus":["http://s/",{"num_servers":0,"num_cpus":0,"in_progress":0}]})"));
}

}  // namespace
}  // namespace headroom
