// The terminal writer under the status printer: overprinting status lines on a smart terminal, plain
// lines otherwise, and holding back output while a console-pool job owns the terminal.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

namespace headroom {

class LinePrinter {
 public:
  // kElide: on a smart terminal, fit the line to the width and keep the cursor on it.
  // kFull: always print the whole line and end it (verbose commands).
  enum class LineType { kElide, kFull };

  struct Options {
    FILE* out = stdout;
    bool smart_terminal = false;
    // Job output keeps its colour codes: a smart terminal, or CLICOLOR_FORCE set and not "0".
    bool supports_color = false;
    // Current terminal width in columns, asked before every elided line; 0 or unset = don't elide.
    std::function<int()> terminal_width;
  };

  explicit LinePrinter(Options options);

  // Options for the process's real stdout: isatty + TERM decide smartness, ioctl gives the width.
  static Options OptionsForStdout();
  // Smart = a terminal whose TERM is set and is not "dumb".
  static bool IsSmartTerminal(bool is_tty, const char* term);
  // CLICOLOR_FORCE set to anything but "0" forces colour through pipes.
  static bool IsColorForced(const char* clicolor_force);

  bool is_smart_terminal() const { return smart_terminal_; }
  // Turned off for -v and --quiet; colour support is decided once and does not follow.
  void set_smart_terminal(bool smart) { smart_terminal_ = smart; }
  bool supports_color() const { return supports_color_; }

  // Prints a status line. `tail` (smart kElide only) is appended after eliding `text` so it always
  // stays visible; it is dropped when the terminal is too narrow to leave room for the text.
  void Print(std::string_view text, LineType type, std::string_view tail = {});
  // Prints `text` starting on a fresh line (a newline first if a status line or unterminated output
  // is showing). An empty `text` just makes sure the cursor is at the start of a line.
  void PrintOnNewLine(std::string_view text);
  // While locked (a console-pool job runs), output is kept in memory and written on unlock.
  void SetConsoleLocked(bool locked);

  // True while the cursor sits at the end of an overprintable status line (smart terminal only).
  bool status_line_showing() const { return status_line_showing_; }

 private:
  void PrintOrBuffer(std::string_view bytes);
  void Write(std::string_view bytes);
  std::string FitToWidth(std::string_view text, std::string_view tail) const;

  Options options_;
  bool smart_terminal_;
  bool supports_color_;
  bool have_blank_line_ = true;  // nothing unterminated is on the current line
  bool status_line_showing_ = false;
  bool console_locked_ = false;
  // Held while locked: the latest status line (later lines replace it) and all other output.
  std::string line_buffer_;
  std::string line_tail_;
  LineType line_type_ = LineType::kElide;
  std::string output_buffer_;
};

}  // namespace headroom
