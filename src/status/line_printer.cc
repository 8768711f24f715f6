// LinePrinter: the byte sequences ninja 1.13.2 writes for status lines, job output and the console lock.
#include "headroom/status/line_printer.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <utility>

#include "headroom/status/ansi_text.h"

namespace headroom {
namespace {

constexpr std::string_view kClearToEndOfLine = "\x1b[K";
// The memory tail is only worth showing if the status text keeps at least this many columns.
constexpr size_t kMinimumTextColumns = 20;

int StdoutTerminalWidth() {
  winsize size{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0) return size.ws_col;
  return 0;
}

}  // namespace

LinePrinter::LinePrinter(Options options)
    : options_(std::move(options)),
      smart_terminal_(options_.smart_terminal),
      supports_color_(options_.supports_color) {}

LinePrinter::Options LinePrinter::OptionsForStdout() {
  Options options;
  options.out = stdout;
  options.smart_terminal = IsSmartTerminal(isatty(STDOUT_FILENO) == 1, getenv("TERM"));
  options.supports_color = options.smart_terminal || IsColorForced(getenv("CLICOLOR_FORCE"));
  options.terminal_width = StdoutTerminalWidth;
  return options;
}

bool LinePrinter::IsSmartTerminal(bool is_tty, const char* term) {
  return is_tty && term != nullptr && strcmp(term, "dumb") != 0;
}

bool LinePrinter::IsColorForced(const char* clicolor_force) {
  return clicolor_force != nullptr && strcmp(clicolor_force, "0") != 0;
}

void LinePrinter::Print(std::string_view text, LineType type, std::string_view tail) {
  if (console_locked_) {
    // Only the newest status line matters; it is written when output arrives or the lock ends.
    line_buffer_.assign(text);
    line_tail_.assign(tail);
    line_type_ = type;
    return;
  }
  // On a smart terminal every line starts by going back over the previous status line.
  std::string line = smart_terminal_ ? "\r" : "";
  if (smart_terminal_ && type == LineType::kElide) {
    line.append(FitToWidth(text, tail));
    line.append(kClearToEndOfLine);
    Write(line);
    have_blank_line_ = false;
    status_line_showing_ = true;
    return;
  }
  // Plain lines do not touch have_blank_line_: ninja keeps the state of the last job output, so
  // unterminated output is followed by a blank line only when the next job output comes.
  line.append(text);
  line.push_back('\n');
  Write(line);
  status_line_showing_ = false;
}

std::string LinePrinter::FitToWidth(std::string_view text, std::string_view tail) const {
  const int columns = options_.terminal_width ? options_.terminal_width() : 0;
  if (columns <= 0) return std::string(text) + std::string(tail);
  const size_t width = static_cast<size_t>(columns);
  const size_t tail_width = VisibleWidth(tail);
  if (tail.empty() || tail_width + kMinimumTextColumns > width) return ElideMiddle(text, width);
  return ElideMiddle(text, width - tail_width) + std::string(tail);
}

void LinePrinter::PrintOnNewLine(std::string_view text) {
  if (console_locked_ && !line_buffer_.empty()) {
    // Output is arriving after a held status line: keep that line, as a plain one, before it.
    output_buffer_.append(line_buffer_);
    output_buffer_.push_back('\n');
    line_buffer_.clear();
    line_tail_.clear();
  }
  if (!have_blank_line_) PrintOrBuffer("\n");
  if (!text.empty()) PrintOrBuffer(text);
  have_blank_line_ = text.empty() || text.back() == '\n';
}

void LinePrinter::SetConsoleLocked(bool locked) {
  if (locked == console_locked_) return;
  if (locked) PrintOnNewLine("");  // the console job starts on a clean line
  console_locked_ = locked;
  if (locked) return;

  std::string held_output = std::move(output_buffer_);
  std::string held_line = std::move(line_buffer_);
  std::string held_tail = std::move(line_tail_);
  output_buffer_.clear();
  line_buffer_.clear();
  line_tail_.clear();
  PrintOnNewLine(held_output);
  if (!held_line.empty()) Print(held_line, line_type_, held_tail);
}

void LinePrinter::PrintOrBuffer(std::string_view bytes) {
  if (console_locked_) {
    output_buffer_.append(bytes);
    return;
  }
  Write(bytes);
  status_line_showing_ = false;
}

void LinePrinter::Write(std::string_view bytes) {
  fwrite(bytes.data(), 1, bytes.size(), options_.out);
  // Flushed at once so stdout and stderr (explanations, warnings) interleave in the order written.
  fflush(options_.out);
}

}  // namespace headroom
