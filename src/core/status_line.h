// A progress line for long work (evaluations, captures, benchmarks): redrawn in place on a
// terminal, silent in logs. FK_PROGRESS=1 asks for it where stderr is not a terminal (one
// line per change), FK_PROGRESS=0 silences it on a terminal too.
#pragma once
#include <chrono>
#include <cstdio>
#include <string>

namespace fk {

class StatusLine {
 public:
  enum class Mode {
    off,       // nothing
    terminal,  // one line, rewritten in place (carriage return, erase to the end of the line)
    lines,     // each new text on a line of its own
  };
  // The mode for stderr: terminal when it is one, else off; FK_PROGRESS overrides.
  static Mode mode_for_stderr();

  explicit StatusLine(std::FILE* out = stderr, Mode mode = mode_for_stderr()) : out_(out), mode_(mode) {}
  StatusLine(const StatusLine&) = delete;
  StatusLine& operator=(const StatusLine&) = delete;
  ~StatusLine() { clear(); }

  // Shows `text` (cut to kWidth characters on a terminal). A repeat of the text shown is not
  // written again, nor is anything within kInterval of the last write: a benchmark's loop
  // may call this every step.
  void show(const std::string& text);
  // Erases the line on a terminal, so that other output starts at its beginning.
  void clear();
  Mode mode() const { return mode_; }

  static constexpr size_t kWidth = 150;
  static constexpr std::chrono::milliseconds kInterval{200};

 private:
  std::FILE* out_;
  Mode mode_;
  std::string shown_;
  bool drawn_ = false;  // a terminal line is on screen
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace fk
