// Tests for size parsing, command-line reading, priors, job class keys and the estimator's source order.
#include <gtest/gtest.h>

#include <deque>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "headroom/estimator/command_line.h"
#include "headroom/estimator/estimator.h"
#include "headroom/estimator/exec_mode.h"
#include "headroom/estimator/priors.h"
#include "headroom/util/byte_size.h"
#include "headroom/history/history_store.h"

namespace headroom {
namespace {

uint64_t MustParse(std::string_view text) {
  std::string error;
  std::optional<uint64_t> bytes = ParseSize(text, &error);
  EXPECT_TRUE(bytes.has_value()) << error;
  return bytes.value_or(0);
}

TEST(ParseSizeTest, AcceptsPlainBytesAndBinarySuffixes) {
  EXPECT_EQ(MustParse("1048576"), 1048576u);
  EXPECT_EQ(MustParse("4G"), 4 * kGiB);
  EXPECT_EQ(MustParse("4GiB"), 4 * kGiB);
  EXPECT_EQ(MustParse("4gb"), 4 * kGiB);
  EXPECT_EQ(MustParse("512M"), 512 * kMiB);
  EXPECT_EQ(MustParse("512Mi"), 512 * kMiB);
  EXPECT_EQ(MustParse("1.5GiB"), 3 * kGiB / 2);
  EXPECT_EQ(MustParse(" 2 T "), 2 * 1024 * kGiB);
  EXPECT_EQ(MustParse("64k"), 64 * kKiB);
  EXPECT_EQ(MustParse("100B"), 100u);
}

TEST(ParseSizeTest, RejectsGarbageWithAMessageNamingTheInput) {
  for (std::string_view bad : {"", "G", "4X", "-1G", "4GG", "four", "1.2.3G", "nan", "4 G B", "99999999999T"}) {
    std::string error;
    EXPECT_FALSE(ParseSize(bad, &error).has_value()) << bad;
    EXPECT_NE(error.find(std::string(bad)), std::string::npos) << error;
  }
}

TEST(ParseBudgetTest, AcceptsPercentOfTheLimit) {
  std::string error;
  std::optional<BudgetSpec> spec = ParseBudget("75%", &error);
  ASSERT_TRUE(spec) << error;
  EXPECT_TRUE(spec->is_fraction());
  EXPECT_EQ(spec->Resolve(16 * kGiB), 12 * kGiB);
  spec = ParseBudget("6G", &error);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->Resolve(16 * kGiB), 6 * kGiB);
  for (std::string_view bad : {"0%", "150%", "%", "x%", "10%%"}) {
    EXPECT_FALSE(ParseBudget(bad, &error)) << bad;
    EXPECT_NE(error.find(std::string(bad)), std::string::npos) << error;
  }
}

// "12" is 12 bytes, almost surely meant as 12G: a unitless budget below the floor is refused; a unit makes
// any size deliberate.
TEST(ParseBudgetTest, AUnitlessBudgetBelowTheFloorIsRefused) {
  std::string error;
  for (std::string_view bad : {"12", "0", "67108863", "1.5"}) {
    EXPECT_FALSE(ParseBudget(bad, &error)) << bad;
    EXPECT_NE(error.find("without a unit"), std::string::npos) << error;
  }
  EXPECT_EQ(ParseBudget("67108864", &error)->bytes, kMinUnitlessBudgetBytes);
  EXPECT_EQ(ParseBudget("12K", &error)->bytes, 12 * kKiB);
  EXPECT_EQ(ParseBudget("1b", &error)->bytes, 1u);
  EXPECT_EQ(ParseSize("12", &error), 12u);  // sizes elsewhere (headroom_mem, --mem-reserve) keep plain bytes
}

TEST(FormatBytesTest, PrintsOneDecimalInTheLargestUnit) {
  EXPECT_EQ(FormatBytes(900), "900 B");
  EXPECT_EQ(FormatBytes(512 * kMiB), "512 MiB");
  EXPECT_EQ(FormatBytes(4 * kGiB + 200 * kMiB), "4.2 GiB");
}

// The factors come from configuration and history files: the product saturates instead of wrapping or being undefined.
TEST(ScaleBytesTest, SaturatesAtBothEndsAndTruncatesBetween) {
  EXPECT_EQ(ScaleBytes(1000, 1.5), 1500u);
  EXPECT_EQ(ScaleBytes(3, 0.5), 1u);
  EXPECT_EQ(ScaleBytes(UINT64_MAX, 2.0), UINT64_MAX);
  EXPECT_EQ(ScaleBytes(UINT64_MAX, 1.0), UINT64_MAX);  // 2^64 as a double, one past the largest integer
  EXPECT_EQ(ScaleBytes(4 * kGiB, -1.0), 0u);
  EXPECT_EQ(ScaleBytes(4 * kGiB, std::numeric_limits<double>::quiet_NaN()), 0u);
  EXPECT_EQ(ScaleBytes(4 * kGiB, std::numeric_limits<double>::infinity()), UINT64_MAX);
}

// Claims read from other builds' ledger entries are summed and subtracted through these.
TEST(ScaleBytesTest, SumsAndDifferencesSaturate) {
  EXPECT_EQ(SaturatingAdd(2, 3), 5u);
  EXPECT_EQ(SaturatingAdd(UINT64_MAX - 1, 2), UINT64_MAX);
  EXPECT_EQ(SaturatingAdd(UINT64_MAX, UINT64_MAX), UINT64_MAX);
  EXPECT_EQ(SaturatingSub(5, 3), 2u);
  EXPECT_EQ(SaturatingSub(3, 5), 0u);
}

TEST(CommandLineTest, SplitsQuotedWordsAndOperators) {
  EXPECT_EQ(SplitShellWords(R"(cc -DX="a b" 'c d' e\ f&&g 2>&1)"),
            (std::vector<std::string>{"cc", "-DX=a b", "c d", "e f", "&&", "g", "2>&1"}));
}

TEST(CommandLineTest, PeelsCdEnvAndLaunchers) {
  std::vector<CommandStep> steps = ParseCommandSteps(
      "cd /b/x && CCACHE_DIR=/c env -u FOO LANG=C ccache /usr/bin/g++-12 -O2 -c a.cc -o a.o");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].tool, "g++-12");
  EXPECT_EQ(steps[0].family, ToolFamily::kCompiler);
  EXPECT_EQ(steps[0].args.front(), "-O2");
}

TEST(CommandLineTest, SeesThroughCMakeCoCompileAndShellC) {
  auto steps = ParseCommandSteps(
      "/usr/bin/cmake -E __run_co_compile --launcher=sccache --tidy=x --source=a.cc -- /usr/bin/clang++ -c a.cc");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].tool, "clang++");
  steps = ParseCommandSteps("/bin/sh -c \"cd out && distcc nvcc -c k.cu -o k.o\"");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].family, ToolFamily::kNvcc);
}

TEST(CommandLineTest, ClassifiesToolFamilies) {
  EXPECT_EQ(ClassifyToolName("x86_64-linux-gnu-g++-12"), ToolFamily::kCompiler);
  EXPECT_EQ(ClassifyToolName("clang++-17"), ToolFamily::kCompiler);
  EXPECT_EQ(ClassifyToolName("ld.lld"), ToolFamily::kLinker);
  EXPECT_EQ(ClassifyToolName("mold"), ToolFamily::kLinker);
  EXPECT_EQ(ClassifyToolName("x86_64-linux-gnu-gcc-ar-12"), ToolFamily::kArchiver);
  EXPECT_EQ(ClassifyToolName("python3"), ToolFamily::kUnknown);
  // A compiler driver without -c links; nvcc -dlink links.
  EXPECT_EQ(ParseCommandSteps("g++ a.o b.o -o app")[0].family, ToolFamily::kLinker);
  EXPECT_EQ(ParseCommandSteps("nvcc -dlink a.o -o d.o")[0].family, ToolFamily::kLinker);
  EXPECT_EQ(ParseCommandSteps(": && /usr/bin/c++ -O2 a.o -o app && :")[0].family, ToolFamily::kLinker);
}

TEST(JobClassKeyTest, KernelsWithTheSameGencodeSetShareAClass) {
  auto cmd = [](std::string_view file) {
    return fmt::format("cd /b && /usr/local/cuda/bin/nvcc -DNDEBUG -I/src/csrc -isystem /usr/include/torch "
                       "-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 --threads 4 -O3 "
                       "-MD -MT {0}.o -MF {0}.o.d -x cu -c /src/{0}.cu -o {0}.o",
                       file);
  };
  std::string a = JobClassKey("CUDA_COMPILER__flash", cmd("flash_fwd_hdim64"));
  std::string b = JobClassKey("CUDA_COMPILER__flash", cmd("flash_bwd_hdim128"));
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.find("/src"), std::string::npos) << a;
  EXPECT_NE(a.find("-gencode arch=compute_90,code=sm_90"), std::string::npos) << a;
  EXPECT_NE(a.find(".cu"), std::string::npos) << a;
  // A different target set is a different class; so is a different rule.
  std::string c = JobClassKey("CUDA_COMPILER__flash", "nvcc -gencode arch=compute_80,code=sm_80 -c x.cu -o x.o");
  EXPECT_NE(a, c);
  EXPECT_NE(JobClassKey("R1", "g++ -O2 -c a.cc -o a.o"), JobClassKey("R2", "g++ -O2 -c a.cc -o a.o"));
  EXPECT_EQ(JobClassKey("R", "g++ -O2 -Ifoo -c a.cc -o a.o"), JobClassKey("R", "g++ -O2 -Ibar -c b.cc -ob.o"));
}

Prior PriorOf(std::string_view command, const FileSizeFn& sizes = {}) { return PriorFromCommand(command, "", sizes); }

TEST(PriorsTest, NvccScalesWithParallelPipelines) {
  EXPECT_EQ(PriorOf("nvcc -c k.cu -o k.o").peak_bytes, 1 * kGiB);
  // --threads 4 but two targets: two pipelines at once.
  EXPECT_EQ(PriorOf("nvcc --threads 4 -gencode arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=sm_90 "
                    "-c k.cu")
                .peak_bytes,
            2 * kGiB);
  // Three targets but no --threads: one at a time.
  EXPECT_EQ(PriorOf("nvcc -arch=sm_80,sm_86,sm_90 -c k.cu").peak_bytes, 1 * kGiB);
  EXPECT_EQ(PriorOf("nvcc -t 8 -arch=sm_80,sm_86,sm_90 -c k.cu").peak_bytes, 3 * kGiB);
  EXPECT_EQ(PriorOf("nvcc --threads=0 -gencode a -gencode b -c k.cu").peak_bytes, 2 * kGiB);
  EXPECT_EQ(PriorOf("nvcc -G -c k.cu").peak_bytes, 3 * kGiB / 2);
}

TEST(PriorsTest, NvccOnCutlassIsTheHeavyKindAndTheFrontEndIsAFloor) {
  const PriorConstants c;
  Prior cutlass = PriorOf("nvcc -I/tmp/pip-install-x/flash-attn/csrc/cutlass/include --threads 4 "
                          "-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -c k.cu");
  EXPECT_EQ(cutlass.peak_bytes, 2 * c.nvcc_cutlass_per_pipeline);
  EXPECT_NE(cutlass.why.find("CUTLASS"), std::string::npos) << cutlass.why;
  EXPECT_EQ(PriorOf("nvcc -isystem /opt/CUTLASS/include -c k.cu").peak_bytes, c.nvcc_cutlass_per_pipeline);
  PriorConstants light;
  light.nvcc_per_pipeline = 256 * kMiB;
  Prior floored = PriorFromCommand("nvcc -c k.cu", "", {}, light);
  EXPECT_EQ(floored.peak_bytes, light.nvcc_front_end);
  EXPECT_NE(floored.why.find("front end"), std::string::npos) << floored.why;
}

TEST(PriorsTest, CompilersByOptimisationLevel) {
  EXPECT_EQ(PriorOf("gcc -c a.c").peak_bytes, 512 * kMiB);
  EXPECT_EQ(PriorOf("g++ -O2 -c a.cc").peak_bytes, 768 * kMiB);
  EXPECT_EQ(PriorOf("clang++ -O0 -O3 -c a.cc").peak_bytes, 1 * kGiB);  // the last -O wins.
  EXPECT_EQ(PriorOf("clang++ -O3 -g -c a.cc").peak_bytes, 1280 * kMiB);
}

TEST(PriorsTest, LinkersFromInputSizesWithAFloor) {
  std::map<std::string, uint64_t> files = {{"a.o", 3 * kGiB}, {"libb.a", 2 * kGiB}, {"tiny.o", 1 * kMiB}};
  FileSizeFn sizes = [&](const std::string& path) -> std::optional<uint64_t> {
    auto it = files.find(path);
    return it == files.end() ? std::nullopt : std::optional(it->second);
  };
  EXPECT_EQ(PriorOf("ld.lld a.o libb.a -o app -L/x -lm", sizes).peak_bytes, 10 * kGiB);
  EXPECT_EQ(PriorOf("g++ -O2 tiny.o -o app", sizes).peak_bytes, 256 * kMiB);
  EXPECT_EQ(PriorOf("g++ -flto a.o -o app", sizes).peak_bytes, 12 * kGiB);
  // Inputs only in the response file.
  EXPECT_EQ(PriorFromCommand("mold @app.rsp -o app", "a.o libb.a", sizes).peak_bytes, 10 * kGiB);
  EXPECT_EQ(PriorOf("mold missing.o -o app", sizes).peak_bytes, 1 * kGiB);
}

TEST(PriorsTest, UnknownToolsAndChainsTakeTheHeaviestStep) {
  EXPECT_EQ(PriorOf("python3 gen.py in.txt out.h").peak_bytes, 256 * kMiB);
  EXPECT_EQ(PriorOf("python3 gen.py && nvcc -c k.cu -o k.o").family, ToolFamily::kNvcc);
}

JobDescription Job(std::string_view output, std::string_view command, uint64_t hash = 1) {
  JobDescription job;
  job.output = output;
  job.command = command;
  job.command_hash = hash;
  job.rule = "CXX";
  return job;
}

HistoryRecord Completed(uint64_t peak, int64_t ms = 1000, PeakMethod method = PeakMethod::kCgroup) {
  return {peak, ms, method, JobOutcome::kCompleted};
}

TEST(EstimatorTest, PriorFirstThenClassThenEdgeHistory) {
  HistoryStore history;
  Estimator estimator(&history, {});
  std::string error;
  // CUTLASS kernels: the heavy prior (a pipeline's worth: docs/priors.md).
  JobDescription a = Job("a.o", "nvcc -I/src/cutlass/include -c a.cu -o a.o");
  JobDescription b = Job("b.o", "nvcc -I/src/cutlass/include -c b.cu -o b.o");
  Estimate first = estimator.Predict(a);
  EXPECT_EQ(first.source, EstimateSource::kPrior);
  EXPECT_TRUE(first.unknown_heavy);
  EXPECT_EQ(first.peak_bytes, PriorConstants{}.nvcc_cutlass_per_pipeline);

  ASSERT_TRUE(estimator.Learn(b, Completed(2 * kGiB, 60'000), &error));
  Estimate by_class = estimator.Predict(a);
  EXPECT_EQ(by_class.source, EstimateSource::kClassHistory);
  EXPECT_FALSE(by_class.unknown_heavy);
  EXPECT_EQ(by_class.peak_bytes, static_cast<uint64_t>(2 * kGiB * 1.15));
  EXPECT_EQ(by_class.duration_ms, 60'000);

  ASSERT_TRUE(estimator.Learn(a, Completed(1 * kGiB, 30'000), &error));
  Estimate by_edge = estimator.Predict(a);
  EXPECT_EQ(by_edge.source, EstimateSource::kEdgeHistory);
  EXPECT_EQ(by_edge.peak_bytes, static_cast<uint64_t>(1 * kGiB * 1.05));  // one exact (cgroup) run
  EXPECT_EQ(by_edge.duration_ms, 30'000);
  // A different command hash means the edge's history no longer applies.
  a.command_hash = 2;
  EXPECT_EQ(estimator.Predict(a).source, EstimateSource::kClassHistory);
}

TEST(KeyPoolTest, EqualKeysShareOneCopyThatOutlivesTheCallersString) {
  KeyPool pool;
  std::string text = "cxx g++ -O2 -DA -DB -Iinclude -c .cc";
  const std::string_view first = pool.Intern(text);
  text.assign("something else entirely, long enough to need the heap");
  EXPECT_EQ(first, "cxx g++ -O2 -DA -DB -Iinclude -c .cc");
  const std::string_view again = pool.Intern("cxx g++ -O2 -DA -DB -Iinclude -c .cc");
  EXPECT_EQ(again.data(), first.data());
  for (int i = 0; i < 1000; ++i) pool.Intern(fmt::format("key {}", i));  // rehashes never move a key
  EXPECT_EQ(pool.Intern(first).data(), first.data());
  EXPECT_EQ(pool.size(), 1001u);
}

// Profiles of jobs of one class share their keys, and asking for figures only gives the same figures
// without formatting why.
TEST(EstimatorTest, ProfilesShareInternedKeysAndFiguresOnlySkipsTheWhy) {
  HistoryStore history;
  Estimator estimator(&history, {});
  std::string error;
  JobDescription a = Job("a.o", "g++ -O2 -c a.cc -o a.o");
  JobDescription b = Job("b.o", "g++ -O2 -c b.cc -o b.o");
  const JobProfile pa = estimator.Profile(a), pb = estimator.Profile(b);
  EXPECT_EQ(pa.class_key.data(), pb.class_key.data());
  EXPECT_EQ(pa.family_key.data(), pb.family_key.data());
  for (int learned = 0; learned < 2; ++learned) {
    const Estimate with_why = estimator.Predict(a, pa);
    const Estimate figures = estimator.Predict(a, pa, EstimateDetail::kFiguresOnly);
    EXPECT_FALSE(with_why.why.empty());
    EXPECT_TRUE(figures.why.empty());
    EXPECT_EQ(figures.peak_bytes, with_why.peak_bytes);
    EXPECT_EQ(figures.duration_ms, with_why.duration_ms);
    EXPECT_EQ(figures.source, with_why.source);
    EXPECT_EQ(figures.confident, with_why.confident);
    EXPECT_EQ(figures.class_key.data(), pa.class_key.data());
    ASSERT_TRUE(estimator.Learn(b, Completed(300 * kMiB), &error, &pb));
  }
  EXPECT_EQ(estimator.Predict(a, pa, EstimateDetail::kFiguresOnly).source, EstimateSource::kClassHistory);
}

TEST(EstimatorTest, AKeptProfileGivesTheSameEstimateAndLearningMovesTheGeneration) {
  HistoryStore history;
  Estimator estimator(&history, {});
  std::string error;
  JobDescription a = Job("a.o", "nvcc -I/src/cutlass/include --threads 2 -gencode arch=compute_80,code=sm_80 "
                                "-gencode arch=compute_90,code=sm_90 -c a.cu -o a.o");
  JobProfile profile = estimator.Profile(a);
  EXPECT_EQ(profile.prior.peak_bytes, 2 * PriorConstants{}.nvcc_cutlass_per_pipeline);
  EXPECT_EQ(estimator.Predict(a, profile).peak_bytes, estimator.Predict(a).peak_bytes);
  const uint64_t before = estimator.generation();
  JobDescription b = Job("b.o", "nvcc -I/src/cutlass/include --threads 2 -gencode arch=compute_80,code=sm_80 "
                                "-gencode arch=compute_90,code=sm_90 -c b.cu -o b.o");
  ASSERT_TRUE(estimator.Learn(b, Completed(6 * kGiB), &error));
  EXPECT_GT(estimator.generation(), before);  // what `a` was predicted with is stale now.
  Estimate learned = estimator.Predict(a, profile);
  EXPECT_EQ(learned.source, EstimateSource::kClassHistory);
  EXPECT_EQ(learned.peak_bytes, static_cast<uint64_t>(6 * kGiB * 1.15));
  EXPECT_FALSE(learned.confident);
}

TEST(EstimatorTest, AWellSampledClassGetsASmallerMarginAndIsConfident) {
  HistoryStore history;
  Estimator estimator(&history, {});
  std::string error;
  const EstimatorConfig& config = estimator.config();
  JobDescription a = Job("a.o", "nvcc -c a.cu -o a.o");
  for (uint64_t i = 0; i + 1 < config.class_confident_samples; ++i) {
    ASSERT_TRUE(estimator.Learn(Job(fmt::format("k{}.o", i), fmt::format("nvcc -c k{0}.cu -o k{0}.o", i)),
                                Completed((6 + i % 5) * kGiB), &error));
  }
  Estimate few = estimator.Predict(a);
  EXPECT_EQ(few.peak_bytes, static_cast<uint64_t>(10 * kGiB * config.class_margin));
  EXPECT_FALSE(few.confident);
  ASSERT_TRUE(estimator.Learn(Job("last.o", "nvcc -c last.cu -o last.o"), Completed(7 * kGiB), &error));
  Estimate many = estimator.Predict(a);  // p90 of 6,6,7,7,7,8,8,9,9,10 is 9.
  EXPECT_EQ(many.peak_bytes, static_cast<uint64_t>(9 * kGiB * config.class_confident_margin));
  EXPECT_TRUE(many.confident);
  // This edge's own completed run is the best knowledge there is; a killed one only bounds it from below.
  ASSERT_TRUE(estimator.Learn(a, {5 * kGiB, 1000, PeakMethod::kCgroup, JobOutcome::kOomKilled}, &error));
  EXPECT_FALSE(estimator.Predict(a).confident);
  ASSERT_TRUE(estimator.Learn(a, Completed(9 * kGiB), &error));
  EXPECT_TRUE(estimator.Predict(a).confident);
}

TEST(EstimatorTest, HintBeatsClassAndPriorButNotEdgeHistory) {
  HistoryStore history;
  Estimator estimator(&history, {});
  std::string error;
  JobDescription a = Job("a.o", "g++ -O2 -c a.cc -o a.o");
  a.mem_hint = "3G";
  ASSERT_TRUE(estimator.Learn(Job("b.o", "g++ -O2 -c b.cc -o b.o"), Completed(100 * kMiB), &error));
  Estimate hinted = estimator.Predict(a);
  EXPECT_EQ(hinted.source, EstimateSource::kUserHint);
  EXPECT_EQ(hinted.peak_bytes, 3 * kGiB);
  ASSERT_TRUE(estimator.Learn(a, Completed(5 * kGiB), &error));
  EXPECT_EQ(estimator.Predict(a).source, EstimateSource::kEdgeHistory);
  // A malformed hint is ignored rather than trusted.
  JobDescription c = Job("c.o", "g++ -O2 -c c.cc -o c.o");
  c.mem_hint = "lots";
  EXPECT_EQ(estimator.Predict(c).source, EstimateSource::kClassHistory);
}

TEST(EstimatorTest, KilledRunsRaiseTheEstimateUntilACompletionSupersedesThem) {
  HistoryStore history;
  Estimator estimator(&history, {});
  std::string error;
  JobDescription a = Job("a.o", "g++ -O2 -c a.cc -o a.o");
  ASSERT_TRUE(estimator.Learn(a, Completed(1 * kGiB), &error));
  ASSERT_TRUE(estimator.Learn(a, {4 * kGiB, 500, PeakMethod::kCgroup, JobOutcome::kOomKilled}, &error));
  EXPECT_EQ(estimator.Predict(a).peak_bytes, 6 * kGiB);
  ASSERT_TRUE(estimator.Learn(a, Completed(5 * kGiB), &error));
  EXPECT_EQ(estimator.Predict(a).peak_bytes, static_cast<uint64_t>(5 * kGiB * 1.1));
}

// A peak near 2^64 (from a damaged or imported history) times a margin is beyond 64 bits: the estimate
// saturates at the largest figure history keeps instead of converting an out-of-range double (UB).
TEST(EstimatorTest, APeakNearTheTopOfItsTypeGivesALargeEstimateNotAWrappedOne) {
  HistoryStore history;
  Estimator estimator(&history, {});
  std::string error;
  const uint64_t huge = std::numeric_limits<uint64_t>::max() - 1;
  JobDescription a = Job("a.o", "g++ -O2 -c a.cc -o a.o", 1);
  ASSERT_TRUE(estimator.Learn(a, Completed(huge), &error));
  EXPECT_GE(estimator.Predict(a).peak_bytes, kMaxRecordedPeakBytes);
  JobDescription b = Job("b.o", "g++ -O2 -c b.cc -o b.o", 2);  // same class, no edge history: the quantile
  EXPECT_GE(estimator.Predict(b).peak_bytes, kMaxRecordedPeakBytes);
  JobDescription c = Job("c.o", "g++ -O3 -c c.cc -o c.o", 3);  // a kill scaled by killed_factor
  ASSERT_TRUE(estimator.Learn(c, {huge, 500, PeakMethod::kCgroup, JobOutcome::kOomKilled}, &error));
  EXPECT_GE(estimator.Predict(c).peak_bytes, kMaxRecordedPeakBytes);
}

TEST(EstimatorTest, EdgeHistoryUsesTheMaxOfARecentWindow) {
  HistoryStore history;
  Estimator estimator(&history, {});
  std::string error;
  JobDescription a = Job("a.o", "g++ -O2 -c a.cc -o a.o");
  ASSERT_TRUE(estimator.Learn(a, Completed(8 * kGiB), &error));  // an old outlier, outside the window of 4.
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(estimator.Learn(a, Completed((1 + i % 2) * kGiB), &error));
  EXPECT_EQ(estimator.Predict(a).peak_bytes, static_cast<uint64_t>(2 * kGiB * 1.1));
}

TEST(EstimatorTest, RusageOnlyMeasurementsNeverLowerThePrior) {
  HistoryStore history;
  Estimator estimator(&history, {});
  std::string error;
  JobDescription a = Job("a.o", "nvcc -I/src/cutlass/include --threads 2 -arch=sm_80,sm_90 -c a.cu -o a.o");
  ASSERT_TRUE(estimator.Learn(a, Completed(2 * kGiB, 1000, PeakMethod::kRusage), &error));
  EXPECT_EQ(estimator.Predict(a).peak_bytes, 2 * PriorConstants{}.nvcc_cutlass_per_pipeline);
  ASSERT_TRUE(estimator.Learn(a, Completed(3 * kGiB, 1000, PeakMethod::kProcessTree), &error));
  EXPECT_EQ(estimator.Predict(a).peak_bytes, static_cast<uint64_t>(3 * kGiB * 1.1));
}

// sccache compiles in its server, a daemon outside the job: the job's processes are its client, a few MiB.
TEST(EstimatorTest, JobsThatCompileInSccachesServerAreSizedByTheirCommandNotByTheClient) {
  HistoryStore history;
  Estimator estimator(&history, {});
  std::string error;
  JobDescription served = Job("a.o", "sccache g++ -O2 -c a.cc -o a.o");
  const JobProfile profile = estimator.Profile(served);
  EXPECT_TRUE(profile.prior.runs_in_compile_server);
  EXPECT_EQ(profile.class_key, "CXX g++ -O2 -c .cc @sccache-server");
  EXPECT_EQ(profile.family_key, "CXX g++ -O2 -c .cc @sccache-server");
  const uint64_t prior = PriorConstants{}.cxx_O2;
  EXPECT_EQ(estimator.Predict(served).peak_bytes, prior);

  // Its runs (through the profile, as a build learns, and without one) teach durations, never its memory.
  ASSERT_TRUE(estimator.Learn(served, Completed(3 * kMiB, 50'000), &error, &profile));
  ASSERT_TRUE(estimator.Learn(served, Completed(3 * kMiB, 50'000), &error));
  Estimate again = estimator.Predict(served, estimator.Profile(served), EstimateDetail::kWithWhy);
  EXPECT_EQ(again.source, EstimateSource::kPrior);
  EXPECT_EQ(again.peak_bytes, prior);
  EXPECT_EQ(again.duration_ms, 50'000);
  EXPECT_FALSE(again.confident);
  EXPECT_FALSE(again.unknown_heavy);
  EXPECT_NE(again.why.find("sccache's server"), std::string::npos) << again.why;
  EXPECT_NE(again.why.find("3 MiB"), std::string::npos) << again.why;

  // The same command without sccache compiles in its own processes: the clients' figures are not its class's.
  JobDescription own = Job("b.o", "g++ -O2 -c b.cc -o b.o");
  EXPECT_FALSE(estimator.Profile(own).prior.runs_in_compile_server);
  EXPECT_EQ(estimator.Predict(own).source, EstimateSource::kPrior);
  ASSERT_TRUE(estimator.Learn(own, Completed(900 * kMiB, 40'000), &error));
  EXPECT_EQ(estimator.Predict(Job("c.o", "g++ -O2 -c c.cc -o c.o")).source, EstimateSource::kClassHistory);
  EXPECT_EQ(estimator.Predict(served).peak_bytes, prior) << "nor theirs the served jobs'";

  // A hint is the user's word and stays so.
  JobDescription hinted = Job("d.o", "sccache g++ -O2 -c d.cc -o d.o");
  const std::string_view hint = "2G";
  hinted.mem_hint = hint;
  EXPECT_EQ(estimator.Predict(hinted).peak_bytes, 2 * kGiB);
}

TEST(EstimatorTest, OnlyCompilesRunInSccachesServer) {
  HistoryStore history;
  Estimator estimator(&history, {});
  auto served = [&](std::string_view command) {
    return estimator.Profile(Job("x", command)).prior.runs_in_compile_server;
  };
  EXPECT_TRUE(served("sccache nvcc -gencode arch=compute_80,code=sm_80 -c k.cu -o k.o"));
  EXPECT_TRUE(served("/usr/bin/sccache /usr/bin/c++ -c a.cc -o a.o"));
  EXPECT_TRUE(served("cmake -E __run_co_compile --launcher=sccache -- c++ -c a.cc -o a.o"));
  EXPECT_FALSE(served("sccache c++ a.o b.o -o app")) << "sccache runs what it does not cache in its client";
  EXPECT_FALSE(served("ccache c++ -c a.cc -o a.o")) << "ccache runs the compiler as its own child";
  EXPECT_FALSE(served("c++ -c a.cc -o a.o"));
  EXPECT_EQ(WithoutCompileServerKey(CompileServerKey("CXX c++ -c .cc")), "CXX c++ -c .cc");
  EXPECT_EQ(WithoutCompileServerKey("CXX c++ -c .cc"), "CXX c++ -c .cc");
}

}  // namespace
}  // namespace headroom

// ---------------------------------------------------------------------------------------------------------------------
// Families and padding that shrinks with evidence (issue #12 items 3 and 4)

namespace headroom {
namespace {

TEST(JobFamilyTest, ClassesThatDifferOnlyInDefineValuesShareAFamily) {
  auto key = [](std::string_view defines) {
    return FamilyKeyOfClassKey(JobClassKey(
        "CUDA", fmt::format("nvcc {} -gencode arch=compute_80,code=sm_80 --threads 2 -O3 -c k.cu -o k.o", defines)));
  };
  EXPECT_EQ(key("-DVARIANT=1"), key("-DVARIANT=7"));
  EXPECT_EQ(key("-D VARIANT=1"), key("-D VARIANT=2"));
  EXPECT_EQ(key("--define-macro=VARIANT=1"), key("--define-macro=VARIANT=2"));
  EXPECT_NE(key("-DVARIANT=1"), key("")) << "a define that is present or not may switch whole kernels on";
  EXPECT_NE(key("-DMOE_FULL"), key(""));
  EXPECT_NE(key("-DA=1"), key("-DB=1"));
  // Everything else that decides memory still splits families; the rule and the tool are never read as flags.
  EXPECT_NE(FamilyKeyOfClassKey(JobClassKey("CUDA", "nvcc --threads 4 -c k.cu -o k.o")),
            FamilyKeyOfClassKey(JobClassKey("CUDA", "nvcc --threads 2 -c k.cu -o k.o")));
  EXPECT_EQ(FamilyKeyOfClassKey("-DRULE -Dtool -DX=1"), "-DRULE -Dtool -DX");
  EXPECT_EQ(FamilyKeyOfClassKey(""), "");
}

JobDescription Variant(int variant, int file) {
  JobDescription job;
  static std::deque<std::string> storage;  // JobDescription holds views; a deque never moves its strings
  storage.push_back(fmt::format("k{}.o", file));
  job.output = storage.back();
  storage.push_back(fmt::format("nvcc -DVARIANT={} --threads 2 -gencode arch=compute_80,code=sm_80 "
                                "-gencode arch=compute_90,code=sm_90 -c k{}.cu -o k{}.o",
                                variant, file, file));
  job.command = storage.back();
  job.command_hash = 100 + static_cast<uint64_t>(file);
  job.rule = "CUDA";
  return job;
}

TEST(EstimatorTest, AFamilyStandsInForAClassWithNoDataWithAMarginThatShrinks) {
  HistoryStore history;
  Estimator estimator(&history, {});
  const EstimatorConfig& config = estimator.config();
  std::string error;
  EXPECT_EQ(estimator.Predict(Variant(0, 0)).source, EstimateSource::kPrior);
  ASSERT_TRUE(estimator.Learn(Variant(1, 1), Completed(3 * kGiB, 40'000), &error));
  // Another define value: no class data, but its family knows one job.
  Estimate one = estimator.Predict(Variant(2, 2));
  EXPECT_EQ(one.source, EstimateSource::kFamilyHistory) << one.why;
  EXPECT_FALSE(one.unknown_heavy);
  EXPECT_EQ(one.duration_ms, 40'000);
  EXPECT_EQ(one.peak_bytes,
            static_cast<uint64_t>(3 * kGiB * (config.family_margin_base + config.family_margin_spread)));
  EXPECT_EQ(one.family_key, estimator.Profile(Variant(1, 1)).family_key);
  // Three more members, peaks 2..4 GiB: the family's high quantile (its largest class's p90) and a smaller margin.
  for (int i = 3; i < 6; ++i) {
    ASSERT_TRUE(estimator.Learn(Variant(i, i), Completed((i - 1) * kGiB), &error));
  }
  Estimate four = estimator.Predict(Variant(9, 9));
  EXPECT_EQ(four.source, EstimateSource::kFamilyHistory);
  EXPECT_EQ(four.peak_bytes,
            static_cast<uint64_t>(4 * kGiB * (config.family_margin_base + config.family_margin_spread / 2)));
  // The narrower class wins wherever it has data.
  Estimate by_class = estimator.Predict(Variant(3, 10));
  EXPECT_EQ(by_class.source, EstimateSource::kClassHistory);
  EXPECT_EQ(by_class.peak_bytes, static_cast<uint64_t>(2 * kGiB * config.class_margin));
  // -t memstats lists the family with its members.
  std::vector<FamilyStats> families = estimator.Families();
  ASSERT_EQ(families.size(), 1u);
  EXPECT_EQ(families[0].completed, 4u);
  EXPECT_EQ(families[0].classes, 4u);
  EXPECT_EQ(families[0].max_peak, 4 * kGiB);
}

TEST(EstimatorTest, FamiliesAreFoundInAHistoryFromEarlierBuilds) {
  HistoryStore history;
  std::string error;
  {
    Estimator earlier(&history, {});
    ASSERT_TRUE(earlier.Learn(Variant(1, 1), Completed(2 * kGiB), &error));
  }
  Estimator estimator(&history, {});
  EXPECT_EQ(estimator.Predict(Variant(5, 5)).source, EstimateSource::kFamilyHistory);
}

TEST(EstimatorTest, StableExactPeaksNeedLittleMarginAndPolledOrVaryingOnesKeepIt) {
  HistoryStore history;
  Estimator estimator(&history, {});
  const EstimatorConfig& config = estimator.config();
  std::string error;
  JobDescription a = Job("a.o", "g++ -O2 -c a.cc -o a.o", 1);
  ASSERT_TRUE(estimator.Learn(a, Completed(1000 * kMiB), &error));  // one exact run: its peak is not in doubt
  EXPECT_EQ(estimator.Predict(a).peak_bytes, static_cast<uint64_t>(1000 * kMiB * config.edge_exact_single_margin));
  EXPECT_LT(config.edge_exact_single_margin, config.edge_margin);
  ASSERT_TRUE(estimator.Learn(a, Completed(1005 * kMiB), &error));  // 0.5% apart: the floor
  EXPECT_EQ(estimator.Predict(a).peak_bytes, static_cast<uint64_t>(1005 * kMiB * config.edge_margin_floor));
  ASSERT_TRUE(estimator.Learn(a, Completed(1030 * kMiB), &error));  // 3% apart: twice the spread
  Estimate spread = estimator.Predict(a);
  EXPECT_NEAR(static_cast<double>(spread.peak_bytes), 1030.0 * kMiB * 1.06, 1.0 * kMiB) << spread.why;
  JobDescription b = Job("b.o", "g++ -O2 -c b.cc -o b.o", 2);
  ASSERT_TRUE(estimator.Learn(b, Completed(1000 * kMiB, 1000, PeakMethod::kProcessTree), &error));
  EXPECT_EQ(estimator.Predict(b).peak_bytes, static_cast<uint64_t>(1000 * kMiB * config.edge_margin))
      << "one polled peak keeps the full margin";
  ASSERT_TRUE(estimator.Learn(b, Completed(1000 * kMiB, 1000, PeakMethod::kProcessTree), &error));
  EXPECT_EQ(estimator.Predict(b).peak_bytes, static_cast<uint64_t>(1000 * kMiB * config.edge_margin))
      << "polling may miss a spike: equal polled peaks prove less";
}

}  // namespace
}  // namespace headroom
