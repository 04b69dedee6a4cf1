#include "core/status_line.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace fk {

StatusLine::Mode StatusLine::mode_for_stderr() {
  const bool tty = isatty(STDERR_FILENO) != 0;
  const char* env = std::getenv("FK_PROGRESS");
  if (env != nullptr && std::strcmp(env, "0") == 0) return Mode::off;
  if (env != nullptr && std::strcmp(env, "1") == 0) return tty ? Mode::terminal : Mode::lines;
  return tty ? Mode::terminal : Mode::off;
}

void StatusLine::show(const std::string& text) {
  if (mode_ == Mode::off || text == shown_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!shown_.empty() && now - last_ < kInterval) return;
  last_ = now;
  shown_ = text;
  if (mode_ == Mode::lines) {
    std::fprintf(out_, "%s\n", text.c_str());
  } else {
    const std::string cut = text.size() > kWidth ? text.substr(0, kWidth - 3) + "..." : text;
    std::fprintf(out_, "\r\033[K%s", cut.c_str());
    drawn_ = true;
  }
  std::fflush(out_);
}

void StatusLine::clear() {
  if (mode_ == Mode::terminal && drawn_) {
    std::fputs("\r\033[K", out_);
    std::fflush(out_);
  }
  drawn_ = false;
  shown_.clear();
}

}  // namespace fk
