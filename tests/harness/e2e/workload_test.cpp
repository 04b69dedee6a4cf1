// End-to-end workloads (harness/e2e/workload.h): presets draw the same requests for the same seed;
// a workload file may give its requests inline or in a dataset file, which are served as
// given (outputs clipped to the context), and bad files are rejected naming what is wrong.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "harness/e2e/workload.h"
#include "fk/status.h"

namespace fk::e2e {
namespace {

namespace fs = std::filesystem;

class WorkloadFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fk-workload-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  fs::path dir_;
};

TEST(Workload, PresetsDrawTheSameRequestsForTheSameSeed) {
  const WorkloadSpec w = workload_spec("mixed");
  const auto a = make_requests(w, 1000, 4096), b = make_requests(w, 1000, 4096);
  ASSERT_EQ(a.size(), 200u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].prompt, b[i].prompt);
    EXPECT_EQ(a[i].max_tokens, b[i].max_tokens);
  }
}

TEST_F(WorkloadFile, InlineRequestsAreServedAsGiven) {
  const std::string f = write("w.json", R"({"name": "given", "requests": [
      {"prompt": [1, 2, 3], "output_len": 5}, {"prompt": [9], "output_len": 100}]})");
  const WorkloadSpec w = workload_spec(f);
  EXPECT_EQ(w.num_requests, 2);
  const auto r = make_requests(w, 10, 50);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].prompt, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(r[0].max_tokens, 5);
  EXPECT_EQ(r[1].max_tokens, 49);  // clipped to the context
}

TEST_F(WorkloadFile, DatasetPathIsRelativeToTheWorkloadFile) {
  write("data.json", R"([{"prompt": [4, 5], "output_len": 3}])");
  const WorkloadSpec w = workload_spec(write("w.json", R"({"dataset": "data.json", "teacher_forced": 1})"));
  EXPECT_EQ(w.num_requests, 1);
  EXPECT_EQ(w.teacher_forced, 1);
  EXPECT_NE(w.dataset.find("data.json"), std::string::npos);
  EXPECT_EQ(to_json(w)["given_requests"], 1);
  EXPECT_EQ(make_requests(w, 10, 50)[0].prompt, (std::vector<int64_t>{4, 5}));
}

TEST_F(WorkloadFile, BadRequestsAreRejectedNamingTheProblem) {
  auto fails_with = [&](const std::string& text, const std::string& want) {
    try {
      workload_spec(write("bad.json", text));
      ADD_FAILURE() << "accepted " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  fails_with(R"({"requests": []})", "non-empty array");
  fails_with(R"({"requests": [{"prompt": [], "output_len": 2}]})", "request 0 needs a non-empty 'prompt'");
  fails_with(R"({"requests": [{"prompt": [1], "output_len": 0}]})", "positive integer 'output_len'");
  fails_with(R"({"requests": [{"prompt": [1, "a"], "output_len": 1}]})", "something other than a token id");
  fails_with(R"({"dataset": "missing.json"})", "no dataset file");
  fails_with(R"({"dataset": "x.json", "requests": [{"prompt": [1], "output_len": 1}]})", "not both");
}

TEST_F(WorkloadFile, TokensPastTheVocabularyOrPromptsPastTheContextFail) {
  const WorkloadSpec w = workload_spec(write("w.json", R"({"requests": [{"prompt": [3, 12], "output_len": 2}]})"));
  EXPECT_THROW(make_requests(w, 10, 50), Error);  // token 12 with a vocabulary of 10
  EXPECT_THROW(make_requests(w, 20, 2), Error);   // 2 prompt tokens in a context of 2
  EXPECT_NO_THROW(make_requests(w, 20, 50));
}

}  // namespace
}  // namespace fk::e2e
