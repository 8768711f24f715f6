// ClassifyExecMode: which jobs a distributing launcher can run remotely, and the headroom_exec override.
#include <gtest/gtest.h>

#include "headroom/estimator/exec_mode.h"

namespace headroom {
namespace {

ExecClass Classify(std::string_view command, const LauncherSettings& settings = {}, std::string_view exec = "") {
  ExecClass result;
  std::string err;
  EXPECT_TRUE(ClassifyExecMode(command, exec, settings, &result, &err)) << err;
  return result;
}

TEST(ExecModeTest, DistccAndIceccCompilesAreRemote) {
  ExecClass distcc = Classify("distcc g++ -O2 -c a.cc -o a.o");
  EXPECT_EQ(ExecMode::kRemote, distcc.mode);
  EXPECT_EQ("distcc", distcc.engine);
  EXPECT_EQ("distcc launcher", distcc.why);
  EXPECT_EQ("icecc", Classify("/usr/lib/icecc/bin/icecc clang++ -c b.cpp -o b.o").engine);
  EXPECT_EQ("distcc", Classify("pump distcc g++ -c a.cc").engine);
}

TEST(ExecModeTest, LinksArchivesAndPlainCompilesStayLocal) {
  ExecClass link = Classify("distcc g++ a.o b.o -o app");
  EXPECT_EQ(ExecMode::kLocal, link.mode);
  EXPECT_EQ("", link.engine);
  EXPECT_EQ("not a compile (linker)", link.why);
  EXPECT_EQ(ExecMode::kLocal, Classify("ar rcs libx.a a.o b.o").mode);
  EXPECT_EQ(ExecMode::kLocal, Classify("distcc g++ -E a.cc -o a.ii").mode);  // preprocessing only
  ExecClass plain = Classify("g++ -c a.cc -o a.o");
  EXPECT_EQ(ExecMode::kLocal, plain.mode);
  EXPECT_EQ("no distributing launcher", plain.why);
  EXPECT_EQ(ExecMode::kLocal, Classify("ccache g++ -c a.cc -o a.o").mode);  // a cache alone runs here
}

TEST(ExecModeTest, CcacheWithADistributingPrefixIsRemote) {
  EXPECT_EQ("distcc", Classify("CCACHE_PREFIX=distcc ccache g++ -c a.cc -o a.o").engine);
  EXPECT_EQ("icecc", Classify("env CCACHE_PREFIX=/usr/bin/icecc ccache g++ -c a.cc -o a.o").engine);
  LauncherSettings settings;
  settings.ccache_prefix = "distcc";
  EXPECT_EQ(ExecMode::kRemote, Classify("ccache g++ -c a.cc -o a.o", settings).mode);
  // The command's own assignment wins over the environment's prefix.
  EXPECT_EQ(ExecMode::kLocal, Classify("CCACHE_PREFIX=nice ccache g++ -c a.cc -o a.o", settings).mode);
}

TEST(ExecModeTest, SccacheIsRemoteOnlyWithADistScheduler) {
  EXPECT_EQ(ExecMode::kLocal, Classify("sccache nvcc -c k.cu -o k.o").mode);
  LauncherSettings dist;
  dist.sccache_dist = true;
  ExecClass nvcc = Classify("sccache /usr/local/cuda/bin/nvcc -gencode arch=compute_90,code=sm_90 -c k.cu -o k.o", dist);
  EXPECT_EQ(ExecMode::kRemote, nvcc.mode);
  EXPECT_EQ("sccache-dist", nvcc.engine);
  EXPECT_EQ(ExecMode::kLocal, Classify("sccache nvcc -dlink a.o b.o -o d.o", dist).mode);
  // distcc does not ship nvcc.
  EXPECT_EQ(ExecMode::kLocal, Classify("distcc nvcc -c k.cu -o k.o").mode);
}

TEST(ExecModeTest, ChainsAndCMakeLaunchersAreRead) {
  EXPECT_EQ("distcc", Classify("ccache distcc g++ -c a.cc -o a.o").engine);
  EXPECT_EQ("distcc", Classify("cd /b && nice -n 5 distcc g++ -c a.cc -o a.o").engine);
  EXPECT_EQ("distcc",
            Classify("/usr/bin/cmake -E __run_co_compile --launcher=distcc --tidy=x -- /usr/bin/c++ -c a.cc -o a.o")
                .engine);
  EXPECT_EQ("distcc",
            Classify("cmake -E __run_co_compile \"--launcher=ccache;/usr/bin/distcc\" -- c++ -c a.cc -o a.o").engine);
}

TEST(ExecModeTest, HeadroomExecOverridesTheCommand) {
  ExecClass forced_local = Classify("distcc g++ -c a.cc -o a.o", {}, "local");
  EXPECT_EQ(ExecMode::kLocal, forced_local.mode);
  EXPECT_EQ("headroom_exec = local", forced_local.why);
  ExecClass forced_remote = Classify("./my-farm-wrapper build.sh", {}, "remote");
  EXPECT_EQ(ExecMode::kRemote, forced_remote.mode);
  EXPECT_EQ("headroom_exec = remote", forced_remote.why);
  EXPECT_EQ("", forced_remote.engine);  // no engine known, still remote
}

TEST(ExecModeTest, UnknownHeadroomExecIsAnError) {
  ExecClass result;
  std::string err;
  EXPECT_FALSE(ClassifyExecMode("g++ -c a.cc", "farm", {}, &result, &err));
  EXPECT_EQ("unknown headroom_exec value 'farm' (expected 'remote' or 'local')", err);
}

TEST(ExecModeTest, SccacheConfigWithASchedulerUrl) {
  EXPECT_TRUE(SccacheConfigHasScheduler("[dist]\nscheduler_url = \"http://127.0.0.1:10600\"\n"));
  EXPECT_TRUE(SccacheConfigHasScheduler("# client\n[cache.disk]\ndir='x'\n\n[dist]\n  scheduler_url=\"http://h:1\"\r\n"));
  EXPECT_FALSE(SccacheConfigHasScheduler("[cache.disk]\nscheduler_url = \"http://h:1\"\n"));  // not in [dist]
  EXPECT_FALSE(SccacheConfigHasScheduler("[dist]\n# scheduler_url = \"http://h:1\"\n"));
  EXPECT_FALSE(SccacheConfigHasScheduler("[dist]\nscheduler_url = \"\"\n"));
  EXPECT_FALSE(SccacheConfigHasScheduler(""));
}

TEST(ExecModeTest, ParsedStepsKeepTheirLaunchersAndAssignments) {
  std::vector<CommandStep> steps = ParseCommandSteps("CCACHE_PREFIX=distcc ccache distcc g++ -c a.cc && ar rcs l.a a.o");
  ASSERT_EQ(2u, steps.size());
  EXPECT_EQ((std::vector<std::string>{"ccache", "distcc"}), steps[0].launchers);
  EXPECT_EQ((std::vector<std::string>{"CCACHE_PREFIX=distcc"}), steps[0].assignments);
  EXPECT_TRUE(steps[1].launchers.empty());
}

TEST(ExecModeTest, HistoryKeysKeepModesApart) {
  EXPECT_EQ("cxx g++ -O2 -c .cc", ExecModeKey("cxx g++ -O2 -c .cc", ExecMode::kLocal));
  EXPECT_EQ("cxx g++ -O2 -c .cc @remote", ExecModeKey("cxx g++ -O2 -c .cc", ExecMode::kRemote));
  EXPECT_NE(ExecModeKey("k", ExecMode::kLocal), ExecModeKey("k", ExecMode::kRemote));
}

}  // namespace
}  // namespace headroom
