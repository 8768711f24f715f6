// Tests for the terminal layer: ANSI-aware width/elision/stripping and LinePrinter's byte sequences.
// Expected bytes were observed from ninja 1.13.2 on a pty (python pty module, TIOCSWINSZ) and a pipe.
#include "headroom/status/line_printer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "headroom/status/ansi_text.h"

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

LinePrinter::Options SmartOptions(FILE* out, int width) {
  LinePrinter::Options options;
  options.out = out;
  options.smart_terminal = true;
  options.supports_color = true;
  options.terminal_width = [width] { return width; };
  return options;
}

LinePrinter::Options DumbOptions(FILE* out) {
  LinePrinter::Options options;
  options.out = out;
  return options;
}

const std::string kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
// AB<red>CDEFGH<reset>IJKLMNOPQRSTUV<bold>WXYZ<reset>: 26 columns.
const std::string kColoredAlphabet = "AB\x1b[31mCDEFGH\x1b[0mIJKLMNOPQRSTUV\x1b[1mWXYZ\x1b[0m";

TEST(AnsiTextTest, VisibleWidthSkipsCsiSequencesOnly) {
  EXPECT_EQ(VisibleWidth(kAlphabet), 26u);
  EXPECT_EQ(VisibleWidth(kColoredAlphabet), 26u);
  EXPECT_EQ(VisibleWidth("\x1b[12;34m"), 0u);
  EXPECT_EQ(VisibleWidth("a\x1b(B"), 4u);    // a lone ESC and what follows count
  EXPECT_EQ(VisibleWidth("a\x1b[12"), 1u);   // unterminated CSI runs to the end
}

TEST(AnsiTextTest, ElidePlainTextLikeNinja) {
  EXPECT_EQ(ElideMiddle(kAlphabet, 1), ".");
  EXPECT_EQ(ElideMiddle(kAlphabet, 2), "..");
  EXPECT_EQ(ElideMiddle(kAlphabet, 3), "...");
  EXPECT_EQ(ElideMiddle(kAlphabet, 4), "...Z");
  EXPECT_EQ(ElideMiddle(kAlphabet, 5), "A...Z");
  EXPECT_EQ(ElideMiddle(kAlphabet, 6), "A...YZ");
  EXPECT_EQ(ElideMiddle(kAlphabet, 7), "AB...YZ");
  EXPECT_EQ(ElideMiddle(kAlphabet, 8), "AB...XYZ");
  EXPECT_EQ(ElideMiddle(kAlphabet, 9), "ABC...XYZ");
  EXPECT_EQ(ElideMiddle(kAlphabet, 10), "ABC...WXYZ");
  EXPECT_EQ(ElideMiddle(kAlphabet, 25), "ABCDEFGHIJK...PQRSTUVWXYZ");
  EXPECT_EQ(ElideMiddle(kAlphabet, 26), kAlphabet);
  EXPECT_EQ(ElideMiddle(kAlphabet, 27), kAlphabet);
}

TEST(AnsiTextTest, ElideKeepsEveryEscapeInOrder) {
  EXPECT_EQ(ElideMiddle(kColoredAlphabet, 1), ".\x1b[31m\x1b[0m\x1b[1m\x1b[0m");
  EXPECT_EQ(ElideMiddle(kColoredAlphabet, 3), "...\x1b[31m\x1b[0m\x1b[1m\x1b[0m");
  EXPECT_EQ(ElideMiddle(kColoredAlphabet, 4), "...\x1b[31m\x1b[0m\x1b[1mZ\x1b[0m");
  EXPECT_EQ(ElideMiddle(kColoredAlphabet, 5), "A...\x1b[31m\x1b[0m\x1b[1mZ\x1b[0m");
  EXPECT_EQ(ElideMiddle(kColoredAlphabet, 7), "AB...\x1b[31m\x1b[0m\x1b[1mYZ\x1b[0m");
  EXPECT_EQ(ElideMiddle(kColoredAlphabet, 9), "AB\x1b[31mC...\x1b[0m\x1b[1mXYZ\x1b[0m");
  EXPECT_EQ(ElideMiddle(kColoredAlphabet, 10), "AB\x1b[31mC...\x1b[0m\x1b[1mWXYZ\x1b[0m");
  EXPECT_EQ(ElideMiddle(kColoredAlphabet, 25), "AB\x1b[31mCDEFGH\x1b[0mIJK...PQRSTUV\x1b[1mWXYZ\x1b[0m");
  EXPECT_EQ(ElideMiddle(kColoredAlphabet, 26), kColoredAlphabet);
}

TEST(AnsiTextTest, ElideCountsNonCsiEscapesAsColumns) {
  // ESC(B and an OSC title sequence are not CSI: ninja counts their bytes as visible.
  const std::string text = "0123\x1b(B456789\x1b[12;34m\x1b]0;x\aABCDEFGHIJ";
  EXPECT_EQ(ElideMiddle(text, 8), "01...\x1b[12;34mHIJ");
  EXPECT_EQ(ElideMiddle(text, 9), "012...\x1b[12;34mHIJ");
  EXPECT_EQ(ElideMiddle(text, 12), "0123...\x1b[12;34mFGHIJ");
  EXPECT_EQ(ElideMiddle(text, 13), "0123\x1b...\x1b[12;34mFGHIJ");
  EXPECT_EQ(ElideMiddle(text, 14), "0123\x1b...\x1b[12;34mEFGHIJ");
}

TEST(AnsiTextTest, StripRemovesCsiAndLoneEscapes) {
  EXPECT_EQ(StripAnsiEscapeCodes("a\x1b" "b\x1b[1;2mc\x1b[?25hd\x1b]0;title\ae\x1b[12"), "abcd]0;title\ae");
  EXPECT_EQ(StripAnsiEscapeCodes("bad\x1b[31mred\x1b[0m\n"), "badred\n");
  EXPECT_EQ(StripAnsiEscapeCodes("plain\n"), "plain\n");
  EXPECT_EQ(StripAnsiEscapeCodes("x\x1b"), "x");
}

TEST(LinePrinterTest, SmartTerminalNeedsTtyAndUsefulTerm) {
  EXPECT_TRUE(LinePrinter::IsSmartTerminal(true, "xterm"));
  EXPECT_FALSE(LinePrinter::IsSmartTerminal(true, "dumb"));
  EXPECT_FALSE(LinePrinter::IsSmartTerminal(true, nullptr));
  EXPECT_FALSE(LinePrinter::IsSmartTerminal(false, "xterm"));
  EXPECT_TRUE(LinePrinter::IsColorForced("1"));
  EXPECT_TRUE(LinePrinter::IsColorForced(""));
  EXPECT_FALSE(LinePrinter::IsColorForced("0"));
  EXPECT_FALSE(LinePrinter::IsColorForced(nullptr));
}

TEST(LinePrinterTest, SmartLinesOverprintAndOutputStartsOnNewLine) {
  CapturedFile out;
  LinePrinter printer(SmartOptions(out.file(), 80));
  printer.Print("[0/1] ECHO a", LinePrinter::LineType::kElide);
  EXPECT_TRUE(printer.status_line_showing());
  printer.Print("[1/1] ECHO a", LinePrinter::LineType::kElide);
  printer.PrintOnNewLine("hello\n");
  EXPECT_FALSE(printer.status_line_showing());
  printer.PrintOnNewLine("");
  EXPECT_EQ(out.bytes(), "\r[0/1] ECHO a\x1b[K\r[1/1] ECHO a\x1b[K\nhello\n");
}

TEST(LinePrinterTest, SmartLinesAreElidedToTheCurrentWidth) {
  CapturedFile out;
  int width = 9;
  LinePrinter::Options options = SmartOptions(out.file(), 0);
  options.terminal_width = [&width] { return width; };
  LinePrinter printer(options);
  printer.Print(kAlphabet, LinePrinter::LineType::kElide);
  width = 0;  // unknown width: no eliding
  printer.Print(kAlphabet, LinePrinter::LineType::kElide);
  EXPECT_EQ(out.bytes(), "\rABC...XYZ\x1b[K\r" + kAlphabet + "\x1b[K");
}

TEST(LinePrinterTest, FullLinesOnSmartTerminalAreWholeAndEnded) {
  CapturedFile out;
  LinePrinter printer(SmartOptions(out.file(), 5));
  printer.Print(kAlphabet, LinePrinter::LineType::kFull);
  EXPECT_EQ(out.bytes(), "\r" + kAlphabet + "\n");
}

TEST(LinePrinterTest, DumbLinesAreNeverElided) {
  CapturedFile out;
  LinePrinter printer(DumbOptions(out.file()));
  printer.Print(kAlphabet, LinePrinter::LineType::kElide);
  printer.PrintOnNewLine("hello\n");
  EXPECT_EQ(out.bytes(), kAlphabet + "\nhello\n");
}

TEST(LinePrinterTest, UnterminatedOutputGetsItsNewlineOnlyBeforeTheNextOutput) {
  // ninja 1.13.2 piped: "[3/4] NONL c\nabc[4/4] FAIL d\n\nFAILED: ...".
  CapturedFile out;
  LinePrinter printer(DumbOptions(out.file()));
  printer.Print("[3/4] NONL c", LinePrinter::LineType::kElide);
  printer.PrintOnNewLine("abc");
  printer.Print("[4/4] FAIL d", LinePrinter::LineType::kElide);
  printer.PrintOnNewLine("FAILED\n");
  EXPECT_EQ(out.bytes(), "[3/4] NONL c\nabc[4/4] FAIL d\n\nFAILED\n");
}

TEST(LinePrinterTest, TailStaysVisibleWhenTextIsElided) {
  CapturedFile out;
  LinePrinter printer(SmartOptions(out.file(), 35));
  printer.Print(kAlphabet, LinePrinter::LineType::kElide, " [mem 1.0G]");
  EXPECT_EQ(out.bytes(), "\rABCDEFGHIJ...PQRSTUVWXYZ [mem 1.0G]\x1b[K");
}

TEST(LinePrinterTest, TailIsDroppedWhenTooNarrow) {
  CapturedFile out;
  LinePrinter printer(SmartOptions(out.file(), 25));  // 11 + 20 columns would be needed
  printer.Print(kAlphabet, LinePrinter::LineType::kElide, " [mem 1.0G]");
  EXPECT_EQ(out.bytes(), "\rABCDEFGHIJK...PQRSTUVWXYZ\x1b[K");
}

TEST(LinePrinterTest, ConsoleLockKeepsOnlyTheNewestStatusLine) {
  CapturedFile out;
  LinePrinter printer(SmartOptions(out.file(), 80));
  printer.Print("[0/3] CON c", LinePrinter::LineType::kElide);
  printer.SetConsoleLocked(true);
  printer.Print("[0/3] PAR p1", LinePrinter::LineType::kElide);
  printer.Print("[1/3] PAR p1", LinePrinter::LineType::kElide);
  EXPECT_EQ(out.bytes(), "\r[0/3] CON c\x1b[K\n");
  printer.SetConsoleLocked(false);
  EXPECT_EQ(out.bytes(), "\r[0/3] CON c\x1b[K\n\r[1/3] PAR p1\x1b[K");
}

TEST(LinePrinterTest, ConsoleLockWritesHeldLinesBeforeHeldOutput) {
  CapturedFile out;
  LinePrinter printer(DumbOptions(out.file()));
  printer.Print("[0/4] CON c", LinePrinter::LineType::kElide);
  printer.SetConsoleLocked(true);
  printer.Print("[1/4] PAR p1", LinePrinter::LineType::kElide);
  printer.PrintOnNewLine("par-p1");
  printer.Print("[2/4] PAR p2", LinePrinter::LineType::kElide);
  printer.PrintOnNewLine("par-p2");
  EXPECT_EQ(out.bytes(), "[0/4] CON c\n");
  printer.SetConsoleLocked(false);
  EXPECT_EQ(out.bytes(), "[0/4] CON c\n\n[1/4] PAR p1\npar-p1[2/4] PAR p2\n\npar-p2");
}

}  // namespace
}  // namespace headroom
