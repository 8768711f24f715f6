// Tests for StatusPrinter: NINJA_STATUS placeholders, smart/dumb/verbose/quiet sequences, the console
// lock, FAILED blocks, ANSI stripping, -d explain and the memory field. Expected bytes were observed
// from ninja 1.13.2 driven on a pty (TERM=xterm) and through a pipe with the same edges and timings.
#include "headroom/status/status_printer.h"
#include "headroom/util/byte_size.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "headroom/graph/graph.h"
#include "headroom/scan/explanations.h"

namespace headroom {
namespace {

// A FILE* whose bytes the test can read back exactly.
class CapturedFile {
 public:
  CapturedFile() : file_(open_memstream(&data_, &size_)) {}
  ~CapturedFile() {
    fclose(file_);
    free(data_);
  }
  FILE* file() { return file_; }
  std::string bytes() {
    fflush(file_);
    return std::string(data_, size_);
  }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  FILE* file_;
};

// Thrown by the test's fatal handler; keeps the whole message (it may hold a NUL byte).
struct FatalError {
  std::string message;
};

// What the terminal looked like to ninja in each observed run.
struct Terminal {
  bool smart = false;
  bool color = false;
  int width = 80;
  bool merge_streams = false;  // stderr into the same capture, to check interleaving
};
constexpr Terminal kPipe{};
constexpr Terminal kPty{true, true, 80, false};

class StatusPrinterTest : public ::testing::Test {
 protected:
  Edge* AddEdge(const std::vector<std::string>& outputs, const std::string& command,
                const std::string& description = "", bool console = false) {
    rules_.push_back(std::make_unique<Rule>("rule" + std::to_string(rules_.size())));
    Rule* rule = rules_.back().get();
    EvalString command_value;
    command_value.AddText(command);
    rule->AddBinding("command", command_value);
    if (!description.empty()) {
      EvalString description_value;
      description_value.AddText(description);
      rule->AddBinding("description", description_value);
    }
    Edge* edge = state_.AddEdge(rule);
    std::string err;
    for (const std::string& output : outputs) EXPECT_TRUE(state_.AddOut(edge, output, &err)) << err;
    if (console) edge->pool = &State::kConsolePool;
    return edge;
  }

  StatusPrinter& MakePrinter(Terminal terminal, BuildConfig::Verbosity verbosity = BuildConfig::Verbosity::kNormal,
                             std::string format = "[%f/%t] ", int parallelism = 1) {
    ConsoleSetup setup;
    setup.line.out = out_.file();
    setup.line.smart_terminal = terminal.smart;
    setup.line.supports_color = terminal.color;
    setup.line.terminal_width = [width = terminal.width] { return width; };
    setup.err = terminal.merge_streams ? out_.file() : err_.file();
    setup.status_format = std::move(format);
    setup.fatal = [](const std::string& message) { throw FatalError{message}; };
    config_.verbosity = verbosity;
    config_.parallelism = parallelism;
    printer_ = std::make_unique<StatusPrinter>(config_, std::move(setup), &explanations_);
    return *printer_;
  }

  void Plan(const std::vector<Edge*>& edges, int64_t previous_duration_ms = -1) {
    for (Edge* edge : edges) printer_->EdgeAddedToPlan(edge, previous_duration_ms);
  }
  void Start(Edge* edge, int64_t time_ms) {
    start_times_[edge] = time_ms;
    printer_->BuildEdgeStarted(edge, time_ms);
  }
  void Finish(Edge* edge, int64_t time_ms, const std::string& output = "", int exit_code = 0) {
    printer_->BuildEdgeFinished(edge, start_times_[edge], time_ms, exit_code == 0, exit_code, output);
  }
  // What a console-pool job writes straight to the terminal, bypassing the printer.
  void ConsoleJobWrites(const std::string& text) { fputs(text.c_str(), out_.file()); }

  // The four edges of the reference run: output, no description, unterminated output, failure.
  void RunEchoBuild(StatusPrinter& printer) {
    Edge* a = AddEdge({"a"}, "printf 'hello\\n'; touch a", "ECHO a");
    Edge* b = AddEdge({"b"}, "touch b");
    Edge* c = AddEdge({"c"}, "printf 'abc'; touch c", "NONL c");
    Edge* d = AddEdge({"d"}, kFailCommand, "FAIL d");
    printer.BuildStarted();
    Plan({a, b, c, d});
    Start(a, 0);
    Finish(a, 1, "hello\n");
    Start(b, 1);
    Finish(b, 2);
    Start(c, 2);
    Finish(c, 3, "abc");
    Start(d, 3);
    Finish(d, 4, "bad\x1b[31mred\x1b[0m\n", 3);
    printer.BuildFinished();
    printer.Info("build stopped: subcommand failed.");
  }
  static constexpr const char* kFailCommand = "printf 'bad\\033[31mred\\033[0m\\n'; exit 3";

  State state_;
  std::vector<std::unique_ptr<Rule>> rules_;
  Explanations explanations_;
  BuildConfig config_;
  CapturedFile out_, err_;
  std::unique_ptr<StatusPrinter> printer_;
  std::map<Edge*, int64_t> start_times_;
};

// ---- Whole-build byte sequences --------------------------------------------------------------

TEST_F(StatusPrinterTest, SmartTerminalBuildWithOutputAndFailure) {
  RunEchoBuild(MakePrinter(kPty));
  EXPECT_EQ(out_.bytes(),
            "\r[0/4] ECHO a\x1b[K\r[1/4] ECHO a\x1b[K\nhello\n"
            "\r[1/4] touch b\x1b[K\r[2/4] touch b\x1b[K"
            "\r[2/4] NONL c\x1b[K\r[3/4] NONL c\x1b[K\nabc"
            "\r[3/4] FAIL d\x1b[K\r[4/4] FAIL d\x1b[K\n"
            "\x1b[31mFAILED: [code=3] \x1b[0md \n"
            "printf 'bad\\033[31mred\\033[0m\\n'; exit 3\n"
            "bad\x1b[31mred\x1b[0m\n"
            "ninja: build stopped: subcommand failed.\n");
  EXPECT_EQ(err_.bytes(), "");
}

TEST_F(StatusPrinterTest, PipedBuildPrintsFinishedEdgesAndStripsColor) {
  RunEchoBuild(MakePrinter(kPipe));
  EXPECT_EQ(out_.bytes(),
            "[1/4] ECHO a\nhello\n[2/4] touch b\n[3/4] NONL c\nabc[4/4] FAIL d\n\n"
            "FAILED: [code=3] d \n"
            "printf 'bad\\033[31mred\\033[0m\\n'; exit 3\n"
            "badred\n"
            "ninja: build stopped: subcommand failed.\n");
}

TEST_F(StatusPrinterTest, ForcedColorThroughPipeKeepsEscapesAndRedFailed) {
  // CLICOLOR_FORCE=1, piped.
  RunEchoBuild(MakePrinter({false, true}));
  EXPECT_EQ(out_.bytes(),
            "[1/4] ECHO a\nhello\n[2/4] touch b\n[3/4] NONL c\nabc[4/4] FAIL d\n\n"
            "\x1b[31mFAILED: [code=3] \x1b[0md \n"
            "printf 'bad\\033[31mred\\033[0m\\n'; exit 3\n"
            "bad\x1b[31mred\x1b[0m\n"
            "ninja: build stopped: subcommand failed.\n");
}

TEST_F(StatusPrinterTest, VerboseOnTerminalPrintsWholeCommandsButKeepsColor) {
  RunEchoBuild(MakePrinter(kPty, BuildConfig::Verbosity::kVerbose));
  EXPECT_EQ(out_.bytes(),
            "[1/4] printf 'hello\\n'; touch a\nhello\n[2/4] touch b\n"
            "[3/4] printf 'abc'; touch c\nabc[4/4] printf 'bad\\033[31mred\\033[0m\\n'; exit 3\n\n"
            "\x1b[31mFAILED: [code=3] \x1b[0md \n"
            "printf 'bad\\033[31mred\\033[0m\\n'; exit 3\n"
            "bad\x1b[31mred\x1b[0m\n"
            "ninja: build stopped: subcommand failed.\n");
}

TEST_F(StatusPrinterTest, VerboseCommandsAreNeverElided) {
  StatusPrinter& printer = MakePrinter({true, true, 10}, BuildConfig::Verbosity::kVerbose);
  Edge* edge = AddEdge({"out"}, "a-very-long-command-line --with many --arguments", "SHORT");
  Plan({edge});
  Start(edge, 0);
  Finish(edge, 5);
  printer.BuildFinished();
  EXPECT_EQ(out_.bytes(), "[1/1] a-very-long-command-line --with many --arguments\n");
}

TEST_F(StatusPrinterTest, QuietPrintsOnlyJobOutputAndFailures) {
  RunEchoBuild(MakePrinter(kPty, BuildConfig::Verbosity::kQuiet));
  EXPECT_EQ(out_.bytes(),
            "hello\nabc\n"
            "\x1b[31mFAILED: [code=3] \x1b[0md \n"
            "printf 'bad\\033[31mred\\033[0m\\n'; exit 3\n"
            "bad\x1b[31mred\x1b[0m\n"
            "ninja: build stopped: subcommand failed.\n");
}

TEST_F(StatusPrinterTest, FailureWithoutOutputShowsCodeAndAllOutputs) {
  StatusPrinter& printer = MakePrinter(kPipe);
  Edge* segv = AddEdge({"o2"}, "kill -SEGV $$", "S o2");
  Edge* multi = AddEdge({"y", "z"}, "false");
  Plan({segv, multi});
  Start(segv, 0);
  Finish(segv, 1, "", 139);
  Start(multi, 1);
  Finish(multi, 2, "", 1);
  printer.BuildFinished();
  EXPECT_EQ(out_.bytes(),
            "[1/2] S o2\nFAILED: [code=139] o2 \nkill -SEGV $$\n"
            "[2/2] false\nFAILED: [code=1] y z \nfalse\n");
}

TEST_F(StatusPrinterTest, LongLinesAreElidedOnlyOnSmartTerminal) {
  StatusPrinter& printer = MakePrinter({true, true, 20});
  Edge* edge = AddEdge({"p3"}, "touch p3", "PAR a very long description for p3");
  Plan({edge});
  Start(edge, 0);
  Finish(edge, 1);
  printer.BuildFinished();
  EXPECT_EQ(out_.bytes(), "\r[0/1] PA...on for p3\x1b[K\r[1/1] PA...on for p3\x1b[K\n");
}

// ---- Console pool --------------------------------------------------------------------------

class ConsolePoolTest : public StatusPrinterTest {
 protected:
  // console edge c and two parallel edges that both finish while c owns the terminal.
  void RunConsoleBuild(StatusPrinter& printer, const std::string& p1_output, const std::string& p2_output) {
    Edge* c = AddEdge({"c"}, "sleep 0.5; echo console-says; touch c", "CON c", /*console=*/true);
    Edge* p1 = AddEdge({"p1"}, "sleep 0.1; echo par-p1; touch p1", "PAR p1");
    Edge* p2 = AddEdge({"p2"}, "sleep 0.2; echo par-p2; touch p2", "PAR p2");
    Plan({c, p1, p2});
    Start(c, 0);
    Start(p1, 1);
    Start(p2, 2);
    Finish(p1, 105, p1_output);
    Finish(p2, 205, p2_output);
    ConsoleJobWrites("console-says\n");
    Finish(c, 505);
    printer.BuildFinished();
  }
};

TEST_F(ConsolePoolTest, PipedConsoleEdgeAnnouncesItselfAndHoldsOthers) {
  RunConsoleBuild(MakePrinter(kPipe, BuildConfig::Verbosity::kNormal, "[%f/%t] ", 3), "par-p1\n", "par-p2\n");
  EXPECT_EQ(out_.bytes(), "[0/3] CON c\nconsole-says\n[1/3] PAR p1\npar-p1\n[2/3] PAR p2\npar-p2\n");
}

TEST_F(ConsolePoolTest, SmartConsoleEdgeFlushesHeldLinesAsPlainLines) {
  RunConsoleBuild(MakePrinter(kPty, BuildConfig::Verbosity::kNormal, "[%f/%t] ", 3), "par-p1\n", "par-p2\n");
  EXPECT_EQ(out_.bytes(), "\r[0/3] CON c\x1b[K\nconsole-says\n[1/3] PAR p1\npar-p1\n[2/3] PAR p2\npar-p2\n");
}

TEST_F(ConsolePoolTest, HeldStatusLineWithoutOutputIsReplacedByTheNext) {
  RunConsoleBuild(MakePrinter(kPty, BuildConfig::Verbosity::kNormal, "[%f/%t] ", 3), "", "x");
  EXPECT_EQ(out_.bytes(), "\r[0/3] CON c\x1b[K\nconsole-says\n\n[2/3] PAR p2\nx\n");
}

TEST_F(ConsolePoolTest, ExplanationsGoStraightToStderrWhileLinesAreHeld) {
  StatusPrinter& printer = MakePrinter({true, true, 80, true}, BuildConfig::Verbosity::kNormal, "[%f/%t] ", 3);
  Edge* c = AddEdge({"c"}, "true", "CON c", true);
  Edge* p1 = AddEdge({"p1"}, "true", "PAR p1");
  Edge* p2 = AddEdge({"p2"}, "true", "PAR p2");
  for (const char* name : {"c", "p1", "p2"}) {
    explanations_.Record(state_.LookupNode(name), "output {} doesn't exist", name);
  }
  Plan({c, p1, p2});
  Start(c, 0);
  Start(p1, 1);
  Start(p2, 2);
  Finish(p1, 105, "par-p1\n");
  Finish(p2, 205, "par-p2\n");
  ConsoleJobWrites("console-says\n");
  Finish(c, 505);
  printer.BuildFinished();
  EXPECT_EQ(out_.bytes(),
            "ninja explain: output c doesn't exist\n\r[0/3] CON c\x1b[K\n"
            "ninja explain: output p1 doesn't exist\nninja explain: output p2 doesn't exist\n"
            "ninja explain: output p1 doesn't exist\nninja explain: output p2 doesn't exist\n"
            "console-says\n[0/3] PAR p1\n[0/3] PAR p2\n[1/3] PAR p1\npar-p1\n[2/3] PAR p2\npar-p2\n");
}

class UnterminatedConsoleTest : public StatusPrinterTest {
 protected:
  void Run(StatusPrinter& printer) {
    Edge* c = AddEdge({"c"}, "sleep 0.5; echo console-says; touch c", "CON c", true);
    Edge* p1 = AddEdge({"p1"}, "true", "PAR a very long description for p1");
    Edge* p2 = AddEdge({"p2"}, "true", "PAR a very long description for p2");
    Edge* p3 = AddEdge({"p3"}, "true", "PAR a very long description for p3");
    Plan({c, p1, p2, p3});
    Start(c, 0);
    Start(p1, 1);
    Start(p2, 2);
    Finish(p1, 105, "par-p1");
    Finish(p2, 205, "par-p2");
    ConsoleJobWrites("console-says\n");
    Finish(c, 505);
    Start(p3, 506);
    Finish(p3, 510, "par-p3");
    printer.BuildFinished();
  }
};

TEST_F(UnterminatedConsoleTest, SmartNarrowTerminal) {
  Run(MakePrinter({true, true, 20}, BuildConfig::Verbosity::kNormal, "[%f/%t] ", 3));
  EXPECT_EQ(out_.bytes(),
            "\r[0/4] CON c\x1b[K\nconsole-says\n"
            "\n[1/4] PAR a very long description for p1\npar-p1[2/4] PAR a very long description for p2\n\npar-p2"
            "\r[3/4] PA...on for p3\x1b[K\r[4/4] PA...on for p3\x1b[K\npar-p3\n");
}

TEST_F(UnterminatedConsoleTest, Piped) {
  Run(MakePrinter(kPipe, BuildConfig::Verbosity::kNormal, "[%f/%t] ", 3));
  EXPECT_EQ(out_.bytes(),
            "[0/4] CON c\nconsole-says\n"
            "\n[1/4] PAR a very long description for p1\npar-p1[2/4] PAR a very long description for p2\n\npar-p2"
            "[4/4] PAR a very long description for p3\n\npar-p3\n");
}

// ---- -d explain -----------------------------------------------------------------------------

class ExplainTest : public StatusPrinterTest {
 protected:
  void RunChain(StatusPrinter& printer) {
    Edge* x = AddEdge({"x"}, "cat src > x", "CP x");
    Edge* yz = AddEdge({"y", "z"}, "touch y z");
    Edge* w = AddEdge({"w"}, "cat y > w", "CP w");
    explanations_.Record(state_.LookupNode("x"), "output x doesn't exist");
    explanations_.Record(state_.LookupNode("y"), "x is dirty");
    explanations_.Record(state_.LookupNode("w"), "y is dirty");
    Plan({x, yz, w});
    int64_t now = 0;
    for (Edge* edge : {x, yz, w}) {
      Start(edge, now);
      Finish(edge, now += 3);
    }
    printer.BuildFinished();
  }
};

TEST_F(ExplainTest, SmartTerminalRepeatsExplanationsAtStartAndFinish) {
  RunChain(MakePrinter(kPty));
  EXPECT_EQ(out_.bytes(),
            "\r[0/3] CP x\x1b[K\n\r[1/3] CP x\x1b[K\n\r[1/3] touch y z\x1b[K\n"
            "\r[2/3] touch y z\x1b[K\n\r[2/3] CP w\x1b[K\n\r[3/3] CP w\x1b[K\n");
  EXPECT_EQ(err_.bytes(),
            "ninja explain: output x doesn't exist\nninja explain: output x doesn't exist\n"
            "ninja explain: x is dirty\nninja explain: x is dirty\n"
            "ninja explain: y is dirty\nninja explain: y is dirty\n");
}

TEST_F(ExplainTest, PipedExplanationsPrecedeTheFinishedLine) {
  RunChain(MakePrinter({false, false, 80, true}));
  EXPECT_EQ(out_.bytes(),
            "ninja explain: output x doesn't exist\n[1/3] CP x\n"
            "ninja explain: x is dirty\n[2/3] touch y z\n"
            "ninja explain: y is dirty\n[3/3] CP w\n");
}

TEST_F(ExplainTest, QuietStillExplains) {
  RunChain(MakePrinter({false, false, 80, true}, BuildConfig::Verbosity::kQuiet));
  EXPECT_EQ(out_.bytes(),
            "ninja explain: output x doesn't exist\nninja explain: x is dirty\nninja explain: y is dirty\n");
}

TEST_F(ExplainTest, ParallelSmartBuildInterleavesExplanationsWithLines) {
  StatusPrinter& printer = MakePrinter({true, true, 80, true}, BuildConfig::Verbosity::kNormal, "[%f/%t] ", 2);
  Edge* a = AddEdge({"a"}, "sleep 0.3; touch a", "SLOW a");
  Edge* b = AddEdge({"b"}, "sleep 0.6; touch b", "SLOW b");
  explanations_.Record(state_.LookupNode("a"), "output a doesn't exist");
  explanations_.Record(state_.LookupNode("b"), "output b doesn't exist");
  Plan({a, b});
  Start(a, 0);
  Start(b, 4);
  Finish(a, 315);
  Finish(b, 615);
  printer.BuildFinished();
  EXPECT_EQ(out_.bytes(),
            "ninja explain: output a doesn't exist\n\r[0/2] SLOW a\x1b[K\n"
            "ninja explain: output b doesn't exist\n\r[0/2] SLOW b\x1b[K\n"
            "ninja explain: output a doesn't exist\n\r[1/2] SLOW a\x1b[K\n"
            "ninja explain: output b doesn't exist\n\r[2/2] SLOW b\x1b[K\n");
}

TEST_F(ExplainTest, EdgeKeyedExplanationsComeBeforeOutputKeyedOnes) {
  StatusPrinter& printer = MakePrinter({false, false, 80, true});
  Edge* edge = AddEdge({"o"}, "touch o", "T o");
  explanations_.Record(state_.LookupNode("o"), "output o doesn't exist");
  explanations_.Record(edge, "dyndep said so");
  Plan({edge});
  Start(edge, 0);
  Finish(edge, 1);
  printer.BuildFinished();
  EXPECT_EQ(out_.bytes(), "ninja explain: dyndep said so\nninja explain: output o doesn't exist\n[1/1] T o\n");
}

// ---- NINJA_STATUS placeholders -----------------------------------------------------------------

constexpr const char* kAllPlaceholders = "s%s t%t r%r u%u f%f o%o c%c p%p e%e w%w E%E W%W P%P %% |";

std::string NinjaNan() {
  // ninja prints finished/(0 ms) with %.1f; 0/0.0 is a NaN whose sign depends on the CPU.
  volatile double zero = 0;
  char buffer[16];
  snprintf(buffer, sizeof(buffer), "%.1f", 0 / (zero / 1e3));
  return buffer;
}

TEST_F(StatusPrinterTest, EveryPlaceholderPiped) {
  StatusPrinter& printer = MakePrinter(kPipe, BuildConfig::Verbosity::kNormal, kAllPlaceholders, 2);
  Edge* a = AddEdge({"a"}, "sleep 0.3; touch a", "SLOW a");
  Edge* b = AddEdge({"b"}, "sleep 0.6; touch b", "SLOW b");
  Plan({a, b});
  Start(a, 0);
  Start(b, 4);
  Finish(a, 315);
  Finish(b, 615);
  printer.BuildFinished();
  EXPECT_EQ(out_.bytes(),
            "s2 t2 r2 u0 f1 o3.2 c? p 50% e0.315 w00:00 E0.315 W00:00 P 50% % |SLOW a\n"
            "s2 t2 r1 u0 f2 o3.3 c6.7 p100% e0.615 w00:00 E0.000 W00:00 P100% % |SLOW b\n");
}

TEST_F(StatusPrinterTest, EveryPlaceholderSmart) {
  StatusPrinter& printer = MakePrinter({true, true, 200}, BuildConfig::Verbosity::kNormal, kAllPlaceholders, 2);
  Edge* a = AddEdge({"a"}, "sleep 0.3; touch a", "SLOW a");
  Edge* b = AddEdge({"b"}, "sleep 0.6; touch b", "SLOW b");
  Plan({a, b});
  Start(a, 0);
  Start(b, 7);
  Finish(a, 315);
  Finish(b, 616);
  printer.BuildFinished();
  EXPECT_EQ(out_.bytes(),
            "\rs1 t2 r1 u1 f0 o" + NinjaNan() + " c? p  0% e0.000 w00:00 E? W? P  0% % |SLOW a\x1b[K"
            "\rs2 t2 r2 u0 f0 o0.0 c? p  0% e0.007 w00:00 E? W? P  0% % |SLOW b\x1b[K"
            "\rs2 t2 r2 u0 f1 o3.2 c6.3 p 50% e0.315 w00:00 E0.315 W00:00 P 50% % |SLOW a\x1b[K"
            "\rs2 t2 r1 u0 f2 o3.2 c6.6 p100% e0.616 w00:00 E0.000 W00:00 P100% % |SLOW b\x1b[K\n");
}

TEST_F(StatusPrinterTest, EmptyFormatMeansNoPrefix) {
  StatusPrinter& printer = MakePrinter(kPipe, BuildConfig::Verbosity::kNormal, "");
  Edge* edge = AddEdge({"o"}, "touch o", "T o");
  Plan({edge});
  Start(edge, 0);
  Finish(edge, 1);
  printer.BuildFinished();
  EXPECT_EQ(out_.bytes(), "T o\n");
}

TEST_F(StatusPrinterTest, CurrentRateWindowIsTheParallelism) {
  StatusPrinter& printer = MakePrinter(kPipe, BuildConfig::Verbosity::kNormal, "%c ", 2);
  std::vector<Edge*> edges;
  for (int i = 0; i < 4; ++i) edges.push_back(AddEdge({"o" + std::to_string(i)}, "true", "T"));
  Plan(edges);
  const int64_t end_times[] = {100, 200, 400, 1200};
  for (int i = 0; i < 4; ++i) {
    Start(edges[i], end_times[i] - 1);
    Finish(edges[i], end_times[i]);
  }
  // Two samples at a time: ?, 2/0.1 s, 2/0.2 s, 2/0.8 s.
  EXPECT_EQ(out_.bytes(), "? T\n20.0 T\n10.0 T\n2.5 T\n");
}

TEST_F(StatusPrinterTest, ElapsedSwitchesToHoursAfterAnHour) {
  StatusPrinter& printer = MakePrinter(kPipe, BuildConfig::Verbosity::kNormal, "%e %w ");
  Edge* a = AddEdge({"a"}, "true", "A");
  Edge* b = AddEdge({"b"}, "true", "B");
  Plan({a, b});
  Start(a, 0);
  Finish(a, 61500);
  Start(b, 61500);
  Finish(b, 3723000);
  EXPECT_EQ(out_.bytes(), "61.500 01:01 A\n3723.000 1:02:03 B\n");
}

TEST_F(StatusPrinterTest, UnknownPlaceholderIsFatal) {
  StatusPrinter& printer = MakePrinter(kPipe, BuildConfig::Verbosity::kNormal, "x%y");
  try {
    printer.FormatProgressStatus("x%y");
    FAIL() << "no fatal error";
  } catch (const FatalError& error) {
    EXPECT_EQ(error.message, "unknown placeholder '%y' in $NINJA_STATUS");
  }
}

TEST_F(StatusPrinterTest, TrailingPercentReportsANulPlaceholder) {
  StatusPrinter& printer = MakePrinter(kPipe, BuildConfig::Verbosity::kNormal, "x%");
  Edge* edge = AddEdge({"o"}, "touch o", "T o");
  Plan({edge});
  Start(edge, 0);
  try {
    Finish(edge, 1);
    FAIL() << "no fatal error";
  } catch (const FatalError& error) {
    EXPECT_EQ(error.message, std::string("unknown placeholder '%\0' in $NINJA_STATUS", 41));
  }
}

TEST_F(StatusPrinterTest, QuietNeverFormatsSoBadFormatsPass) {
  StatusPrinter& printer = MakePrinter(kPipe, BuildConfig::Verbosity::kQuiet, "x%y");
  Edge* edge = AddEdge({"o"}, "touch o", "T o");
  Plan({edge});
  Start(edge, 0);
  Finish(edge, 1);
  printer.BuildFinished();
  EXPECT_EQ(out_.bytes(), "");
}

TEST_F(StatusPrinterTest, ManifestRebuildStaysCountedInTotal) {
  // ninja restarts the counters for the main build but keeps the regeneration edge in %t.
  StatusPrinter& printer = MakePrinter(kPipe, BuildConfig::Verbosity::kNormal, "[%s/%t r%r u%u f%f] ");
  Edge* regen = AddEdge({"build.ninja"}, "cp tmpl build.ninja", "REGEN");
  Edge* o1 = AddEdge({"o1"}, "touch o1");
  Edge* o2 = AddEdge({"o2"}, "touch o2");
  printer.BuildStarted();
  Plan({regen});
  Start(regen, 0);
  Finish(regen, 2);
  printer.BuildFinished();
  printer.BuildStarted();
  Plan({o1, o2});
  Start(o1, 0);
  Finish(o1, 2);
  Start(o2, 2);
  Finish(o2, 4);
  printer.BuildFinished();
  EXPECT_EQ(out_.bytes(), "[1/1 r1 u0 f1] REGEN\n[1/3 r1 u2 f1] touch o1\n[2/3 r1 u1 f2] touch o2\n");
}

TEST_F(StatusPrinterTest, PlanHasTotalEdgesSetsTheTotalAndRemovalShrinksIt) {
  StatusPrinter& printer = MakePrinter(kPipe, BuildConfig::Verbosity::kNormal, "[%f/%t] ");
  Edge* a = AddEdge({"a"}, "true", "A");
  Edge* b = AddEdge({"b"}, "true", "B");
  printer.PlanHasTotalEdges(3);
  Start(a, 0);
  Finish(a, 1);
  printer.EdgeRemovedFromPlan(nullptr);  // restat cleaned an edge
  Start(b, 1);
  Finish(b, 2);
  EXPECT_EQ(out_.bytes(), "[1/3] A\n[2/2] B\n");
}

// ---- ETA from previous durations (%E %W %P) ----------------------------------------------------

class EtaTest : public StatusPrinterTest {
 protected:
  // Two edges run one after the other; a's previous run took 300 ms, b's `b_previous_ms`.
  void Run(StatusPrinter& printer, int64_t b_previous_ms) {
    Edge* a = AddEdge({"a"}, "sleep 0.3; touch a", "SLOW a");
    Edge* b = AddEdge({"b"}, "sleep 0.6; touch b", "SLOW b");
    printer.EdgeAddedToPlan(a, 300);
    printer.EdgeAddedToPlan(b, b_previous_ms);
    Start(a, 0);
    Finish(a, 300);
    Start(b, 300);
    Finish(b, 600);
    printer.BuildFinished();
  }
  static constexpr const char* kFormat = "f%f w%w E%E W%W P%P |";
};

TEST_F(EtaTest, LongPreviousRunSwitchesBothClocksToHours) {
  Run(MakePrinter(kPipe, BuildConfig::Verbosity::kNormal, kFormat), 36000000);
  EXPECT_EQ(out_.bytes(),
            "f1 w0:00:00 E36000.000 W10:00:00 P  0% |SLOW a\n"
            "f2 w00:00 E0.000 W00:00 P100% |SLOW b\n");
}

TEST_F(EtaTest, MinutesAreTruncated) {
  Run(MakePrinter(kPipe, BuildConfig::Verbosity::kNormal, kFormat), 59700);
  EXPECT_EQ(out_.bytes(),
            "f1 w00:00 E59.700 W00:59 P  0% |SLOW a\n"
            "f2 w00:00 E0.000 W00:00 P100% |SLOW b\n");
}

TEST_F(EtaTest, SmartTerminalShowsUnknownEtaUntilSomethingFinished) {
  Run(MakePrinter({true, true, 200}, BuildConfig::Verbosity::kNormal, kFormat), 3000);
  EXPECT_EQ(out_.bytes(),
            "\rf0 w00:00 E? W? P  0% |SLOW a\x1b[K\rf1 w00:00 E3.000 W00:03 P  9% |SLOW a\x1b[K"
            "\rf1 w00:00 E3.000 W00:03 P  9% |SLOW b\x1b[K\rf2 w00:00 E0.000 W00:00 P100% |SLOW b\x1b[K\n");
}

TEST_F(EtaTest, PreviousTimesAreIgnoredWhenThisRunIsTenTimesFaster) {
  // 20 edges that took 10 s each last time now take 100 ms: after 15 s and 5% done the previous
  // durations are distrusted and the ETA follows the current average instead.
  StatusPrinter& printer = MakePrinter(kPipe, BuildConfig::Verbosity::kNormal, "%P %E|");
  std::vector<Edge*> edges;
  for (int i = 0; i < 20; ++i) {
    edges.push_back(AddEdge({"o" + std::to_string(i)}, "true", "T"));
    printer.EdgeAddedToPlan(edges.back(), 10000);
  }
  Start(edges[0], 15000);
  Finish(edges[0], 15100);
  // Current average 100 ms for 19 remaining edges: 1900 ms to go after 100 ms of work.
  // fraction = 100 / 2000 = 5%; ETA = 15.1 s / 0.05 - 15.1 s = 286.9 s.
  EXPECT_EQ(out_.bytes(), "  5% 286.900|T\n");
}

TEST_F(EtaTest, PreviousTimesAreTrustedEarlyInTheBuild) {
  StatusPrinter& printer = MakePrinter(kPipe, BuildConfig::Verbosity::kNormal, "%P %E|");
  std::vector<Edge*> edges;
  for (int i = 0; i < 20; ++i) {
    edges.push_back(AddEdge({"o" + std::to_string(i)}, "true", "T"));
    printer.EdgeAddedToPlan(edges.back(), 10000);
  }
  Start(edges[0], 0);
  Finish(edges[0], 100);
  // 100 ms done, 19 x 10 s predicted: fraction 100/190100, ETA = 0.1 s * 1901 - 0.1 s.
  EXPECT_EQ(out_.bytes(), "  0% 190.000|T\n");
}

// ---- Messages ------------------------------------------------------------------------------

TEST_F(StatusPrinterTest, MessagesUseNinjaPrefixesAndStreams) {
  StatusPrinter& printer = MakePrinter(kPipe);
  printer.Info("no work to do.");
  printer.Warning("something odd");
  printer.Error("loading 'build.ninja': No such file or directory");
  EXPECT_EQ(out_.bytes(), "ninja: no work to do.\n");
  EXPECT_EQ(err_.bytes(),
            "ninja: warning: something odd\nninja: error: loading 'build.ninja': No such file or directory\n");
}

TEST_F(StatusPrinterTest, MessagesKeepOrderWhenStreamsShareATerminal) {
  StatusPrinter& printer = MakePrinter({false, false, 80, true});
  printer.Info("Entering directory `out'");
  printer.Warning("w");
  printer.Info("no work to do.");
  EXPECT_EQ(out_.bytes(), "ninja: Entering directory `out'\nninja: warning: w\nninja: no work to do.\n");
}

// ---- Memory field ------------------------------------------------------------------------------

TEST_F(StatusPrinterTest, MemoryFieldAppearsOnSmartTerminalOnly) {
  StatusPrinter& printer = MakePrinter(kPty);
  Edge* edge = AddEdge({"o"}, "touch o", "T o");
  Plan({edge});
  printer.UpdateMemory({static_cast<uint64_t>(5.1 * kGiB), 12 * kGiB, 3});
  Start(edge, 0);
  Finish(edge, 1);
  printer.BuildFinished();
  EXPECT_EQ(out_.bytes(),
            "\r[0/1] T o [mem 5.1G/12.0G, 3 waiting]\x1b[K\r[1/1] T o [mem 5.1G/12.0G, 3 waiting]\x1b[K\n");
}

TEST_F(StatusPrinterTest, MemoryFieldNeverInPipedOutput) {
  StatusPrinter& printer = MakePrinter(kPipe);
  Edge* edge = AddEdge({"o"}, "touch o", "T o");
  Plan({edge});
  printer.UpdateMemory({5 * kGiB, 12 * kGiB, 3});
  Start(edge, 0);
  Finish(edge, 1);
  EXPECT_EQ(out_.bytes(), "[1/1] T o\n");
}

TEST_F(StatusPrinterTest, MemoryFieldNeedsAwarenessAndData) {
  config_.memory.enabled = false;
  StatusPrinter& disabled = MakePrinter(kPty);
  disabled.UpdateMemory({5 * kGiB, 12 * kGiB, 0});
  EXPECT_EQ(disabled.MemoryTail(), "");

  config_.memory.enabled = true;
  StatusPrinter& enabled = MakePrinter(kPty);
  EXPECT_EQ(enabled.MemoryTail(), "");
  enabled.UpdateMemory({0, 0, 2});
  EXPECT_EQ(enabled.MemoryTail(), "");
  enabled.UpdateMemory({512ull * 1024 * 1024, 0, 0});
  EXPECT_EQ(enabled.MemoryTail(), " [mem 512M]");
  enabled.UpdateMemory({0, 2 * kGiB, 0});
  EXPECT_EQ(enabled.MemoryTail(), " [mem ?/2.0G]");
}

// With a compile farm in use, the field says how many of its slots are taken (docs/scale-out.md).
TEST_F(StatusPrinterTest, MemoryFieldShowsTheFarmsSlotsInUse) {
  config_.memory.enabled = true;
  StatusPrinter& printer = MakePrinter(kPty);
  printer.UpdateMemory({1 * kGiB, 4 * kGiB, 2, 3, 4});
  EXPECT_EQ(printer.MemoryTail(), " [mem 1.0G/4.0G, 2 waiting, remote 3/4]");
  printer.UpdateMemory({1 * kGiB, 4 * kGiB, 0, 0, 0});  // no farm in use: nothing about it
  EXPECT_EQ(printer.MemoryTail(), " [mem 1.0G/4.0G]");
}

TEST_F(StatusPrinterTest, MemoryUpdateRefreshesTheShowingLineOnly) {
  StatusPrinter& printer = MakePrinter(kPty);
  Edge* a = AddEdge({"a"}, "touch a", "T a");
  Edge* b = AddEdge({"b"}, "touch b", "T b");
  Plan({a, b});
  Start(a, 0);
  printer.UpdateMemory({1 * kGiB, 4 * kGiB, 0});
  printer.UpdateMemory({1 * kGiB, 4 * kGiB, 0});  // unchanged: nothing written
  Finish(a, 1, "out\n");
  printer.UpdateMemory({2 * kGiB, 4 * kGiB, 0});  // output is the last thing shown: leave it
  Start(b, 2);
  printer.BuildFinished();
  EXPECT_EQ(out_.bytes(),
            "\r[0/2] T a\x1b[K\r[0/2] T a [mem 1.0G/4.0G]\x1b[K"
            "\r[1/2] T a [mem 1.0G/4.0G]\x1b[K\nout\n"
            "\r[1/2] T b [mem 2.0G/4.0G]\x1b[K\n");
}

TEST_F(StatusPrinterTest, MemoryPlaceholdersWorkEverywhereAndReplaceTheField) {
  StatusPrinter& printer = MakePrinter(kPty, BuildConfig::Verbosity::kNormal, "[%f/%t %m/%M q%q] ");
  Edge* edge = AddEdge({"o"}, "touch o", "T o");
  Plan({edge});
  Start(edge, 0);
  printer.UpdateMemory({3 * kGiB, 8 * kGiB, 1});
  Finish(edge, 1);
  printer.BuildFinished();
  EXPECT_EQ(out_.bytes(), "\r[0/1 ?/? q0] T o\x1b[K\r[1/1 3.0G/8.0G q1] T o\x1b[K\n");
}

TEST_F(StatusPrinterTest, MemoryFieldSurvivesElision) {
  StatusPrinter& printer = MakePrinter({true, true, 40});
  Edge* edge = AddEdge({"o"}, "touch o", "CXX a/very/long/path/to/some/source/file.cc");
  Plan({edge});
  printer.UpdateMemory({5 * kGiB, 12 * kGiB, 0});
  Start(edge, 0);
  EXPECT_EQ(out_.bytes(), "\r[0/1] CXX ...ce/file.cc [mem 5.0G/12.0G]\x1b[K");
}

}  // namespace
}  // namespace headroom
