// The trajectory log: appended records come back on reload (last one of a key wins), a
// partial last line from a killed run is skipped and cut off, malformed lines are skipped.
#include "agent/trajectory.h"

#include <gtest/gtest.h>

#include "fk/status.h"
#include <unistd.h>

#include <fstream>

#include "agent/budget.h"

namespace fk::agent {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A scratch file, removed with its folder when the test ends.
class TempFile {
 public:
  explicit TempFile(const std::string& name)
      : dir_(fs::temp_directory_path() / ("fk-trajectory-test-" + std::to_string(getpid()) + "-" + name)) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~TempFile() { fs::remove_all(dir_); }
  fs::path path() const { return dir_ / "trajectory.jsonl"; }

 private:
  fs::path dir_;
};

std::string read(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

json rec(const std::string& type, const std::string& step, int value) {
  return {{"type", type}, {"task", "rms_norm"}, {"strategy", "refine"}, {"step", step}, {"value", value}};
}

TEST(AgentTrajectory, RecordsComeBackAfterReloadAndTheLastOfAKeyWins) {
  const TempFile tmp("a");
  const fs::path p = tmp.path();
  {
    Trajectory t(p);
    t.append(rec("model_call", "t0", 1));
    t.append(rec("evaluation", "t0", 2));
    t.append(rec("model_call", "t0", 3));
    EXPECT_EQ(t.find("model_call", "rms_norm", "refine", "t0")->at("value"), 3);
  }
  Trajectory t(p);
  EXPECT_EQ(t.loaded_records(), 3);
  EXPECT_EQ(t.skipped_lines(), 0);
  EXPECT_EQ(t.find("model_call", "rms_norm", "refine", "t0")->at("value"), 3);
  EXPECT_EQ(t.find("evaluation", "rms_norm", "refine", "t0")->at("value"), 2);
  EXPECT_FALSE(t.find("evaluation", "rms_norm", "refine", "t1"));
  EXPECT_FALSE(t.find("evaluation", "rms_norm", "evolve", "t0"));
  EXPECT_THROW(t.append(json{{"task", "x"}}), fk::Error);
}

TEST(AgentTrajectory, APartialLastLineIsSkippedAndCutOff) {
  const TempFile tmp("b");
  const fs::path p = tmp.path();
  {
    Trajectory t(p);
    t.append(rec("model_call", "t0", 1));
  }
  std::ofstream(p, std::ios::app) << "not json at all\n" << R"({"type": "evaluation", "task": "rms_no)";
  {
    Trajectory t(p);
    EXPECT_EQ(t.loaded_records(), 1);
    EXPECT_EQ(t.skipped_lines(), 2);
    t.append(rec("evaluation", "t0", 5));
  }
  const std::string text = read(p);
  EXPECT_EQ(text.find("rms_no\""), std::string::npos);
  Trajectory t(p);
  EXPECT_EQ(t.loaded_records(), 2);
  EXPECT_EQ(t.skipped_lines(), 1);  // the malformed middle line stays, and is skipped again
  EXPECT_EQ(t.find("evaluation", "rms_norm", "refine", "t0")->at("value"), 5);
}

TEST(AgentTrajectory, InvalidUtf8FromAModelIsStoredReadably) {
  const TempFile tmp("c");
  const fs::path p = tmp.path();
  {
    Trajectory t(p);
    json r = rec("model_call", "s0", 1);
    r["response"] = std::string("bad \xff\xfe bytes");
    t.append(r);
  }
  Trajectory t(p);
  EXPECT_EQ(t.loaded_records(), 1);
  EXPECT_NE(t.find("model_call", "rms_norm", "refine", "s0")->value("response", "").find("bytes"), std::string::npos);
}

TEST(AgentBudgetUnit, StopsOnTokensWallTimeOrRequest) {
  Budget none(0, 0);
  none.add_tokens(1 << 30);
  EXPECT_EQ(none.exhausted(), "");
  Budget tokens(100, 0);
  tokens.add_tokens(99);
  EXPECT_EQ(tokens.exhausted(), "");
  tokens.add_tokens(1);
  EXPECT_EQ(tokens.exhausted().rfind("max_tokens", 0), 0u);
  Budget wall(0, 1e-9);
  EXPECT_EQ(wall.exhausted().rfind("max_wall_time", 0), 0u);
  Budget::request_stop();
  EXPECT_EQ(none.exhausted(), "interrupted");
  Budget::clear_stop();
  EXPECT_EQ(none.exhausted(), "");
}

}  // namespace
}  // namespace fk::agent
