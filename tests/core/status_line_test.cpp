// The progress line: redrawn in place on a terminal, one line per change when asked for in a
// log, nothing otherwise; FK_PROGRESS decides for stderr.
#include "core/status_line.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace fk {
namespace {

// What a StatusLine of `mode` wrote to a file while `use` ran.
template <class F>
std::string written(StatusLine::Mode mode, F use) {
  std::FILE* f = std::tmpfile();
  {
    StatusLine s(f, mode);
    use(s);
  }
  std::rewind(f);
  std::string out;
  for (int c; (c = std::fgetc(f)) != EOF;) out.push_back(static_cast<char>(c));
  std::fclose(f);
  return out;
}

void pause() { std::this_thread::sleep_for(StatusLine::kInterval + std::chrono::milliseconds(20)); }

TEST(StatusLine, TerminalRedrawsOneLineAndErasesItAtTheEnd) {
  const std::string out = written(StatusLine::Mode::terminal, [](StatusLine& s) {
    s.show("workload 1/2: checking");
    pause();
    s.show("workload 1/2: timing");
  });
  EXPECT_EQ(out, "\r\033[Kworkload 1/2: checking\r\033[Kworkload 1/2: timing\r\033[K");
}

TEST(StatusLine, LinesModeWritesEachChangeOnce) {
  const std::string out = written(StatusLine::Mode::lines, [](StatusLine& s) {
    s.show("a");
    pause();
    s.show("a");
    pause();
    s.show("b");
  });
  EXPECT_EQ(out, "a\nb\n");
}

TEST(StatusLine, UpdatesWithinTheIntervalAreDropped) {
  const std::string out = written(StatusLine::Mode::lines, [](StatusLine& s) {
    for (int i = 0; i < 100; ++i) s.show("step " + std::to_string(i));
  });
  EXPECT_EQ(out, "step 0\n");
}

TEST(StatusLine, LongTextIsCutOnATerminal) {
  const std::string out = written(StatusLine::Mode::terminal, [](StatusLine& s) { s.show(std::string(400, 'x')); });
  EXPECT_EQ(out, "\r\033[K" + std::string(StatusLine::kWidth - 3, 'x') + "...\r\033[K");
}

TEST(StatusLine, OffWritesNothing) {
  EXPECT_EQ(written(StatusLine::Mode::off, [](StatusLine& s) { s.show("x"); }), "");
}

// Under ctest stderr is a pipe: quiet unless FK_PROGRESS=1 (on a terminal: the terminal mode).
TEST(StatusLine, StderrModeFollowsFkProgress) {
  const bool tty = isatty(STDERR_FILENO) != 0;
  const char* before = std::getenv("FK_PROGRESS");
  const std::string saved = before ? before : "";
  unsetenv("FK_PROGRESS");
  EXPECT_EQ(StatusLine::mode_for_stderr(), tty ? StatusLine::Mode::terminal : StatusLine::Mode::off);
  setenv("FK_PROGRESS", "1", 1);
  EXPECT_EQ(StatusLine::mode_for_stderr(), tty ? StatusLine::Mode::terminal : StatusLine::Mode::lines);
  setenv("FK_PROGRESS", "0", 1);
  EXPECT_EQ(StatusLine::mode_for_stderr(), StatusLine::Mode::off);
  if (before) setenv("FK_PROGRESS", saved.c_str(), 1);
  else unsetenv("FK_PROGRESS");
}

}  // namespace
}  // namespace fk
