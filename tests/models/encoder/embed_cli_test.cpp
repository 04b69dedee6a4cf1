// `fk embed` end to end on the CPU: the golden checkpoint folder over golden.json's
// sequences gives transformers' dense and ColBERT vectors and lexical weights in its JSON;
// bad inputs are named errors with a failing exit status. Runs the `fk` binary built beside
// this test (<build>/bin/fk); skips where it was not built.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <unistd.h>

#include "models/encoder/golden_check.h"

namespace fk {
namespace {

namespace fs = std::filesystem;

fs::path fk_binary() { return fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "bin" / "fk"; }

struct FkRun {
  int status = -1;
  std::string output;  // stdout and stderr
};

FkRun run_fk(const std::string& args) {
  FkRun r;
  const std::string cmd = fk_binary().string() + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  r.status = pclose(p);
  return r;
}

class EmbedCli : public testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(fk_binary())) GTEST_SKIP() << "no fk binary at " << fk_binary();
    dir_ = fs::temp_directory_path() / ("fk_embed_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(EmbedCli, GoldenCheckpointGivesTransformersEmbeddings) {
  const std::string golden_dir = test::encoder_golden_dir("xlm_roberta");
  nlohmann::json golden;
  std::ifstream(golden_dir + "/golden.json") >> golden;
  const fs::path input = dir_ / "in.json", out = dir_ / "out.json";
  std::ofstream(input) << nlohmann::json{{"input_ids", golden["sequences"]}}.dump();
  const FkRun r = run_fk("embed --model " + golden_dir + " --device cpu --dtype bf16 --input " + input.string() +
                       " --json-out " + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  nlohmann::json j;
  std::ifstream(out) >> j;
  EXPECT_EQ(j["architecture"], "xlm_roberta");
  EXPECT_EQ(j["weights"], "checkpoint");
  const auto want = safetensors::File::open(golden_dir + "/golden.safetensors");
  const TensorView dense = want.view("dense"), colbert = want.view("colbert");
  ASSERT_EQ(j["data"].size(), golden["sequences"].size());
  int64_t colbert_row = 0;
  for (size_t s = 0; s < j["data"].size(); ++s) {
    const auto& d = j["data"][s];
    const auto v = d["dense_vecs"].get<std::vector<float>>();
    EXPECT_GE(test::agreement(v.data(), dense, static_cast<int64_t>(s), 128).cosine, 0.999) << s;
    const auto vecs = d["colbert_vecs"].get<std::vector<std::vector<float>>>();
    ASSERT_EQ(vecs.size(), golden["sequences"][s].size() - 1) << s;
    for (const auto& c : vecs) EXPECT_GE(test::agreement(c.data(), colbert, colbert_row++, 128).cosine, 0.999) << s;
    for (const auto& [id, w] : golden["lexical_weights"][s].items())
      if (w.get<double>() > 0.05) {
        EXPECT_TRUE(d["lexical_weights"].contains(id)) << s << " token " << id;
      }
  }
}

TEST_F(EmbedCli, ColbertCheckpointScoresAsTransformers) {
  // Queries and documents of the ColBERT golden folder: the formatted ids, the vector counts
  // and the MaxSim scores of transformers' reference.
  const std::string golden_dir = test::encoder_golden_dir("colbert");
  nlohmann::json golden;
  std::ifstream(golden_dir + "/golden.json") >> golden;
  const fs::path input = dir_ / "in.json", out = dir_ / "out.json";
  std::ofstream(input) << nlohmann::json{{"queries", golden["queries"]}, {"documents", golden["documents"]}}.dump();
  const FkRun r = run_fk("embed --model " + golden_dir + " --device cpu --dtype bf16 --input " + input.string() +
                         " --json-out " + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  nlohmann::json j;
  std::ifstream(out) >> j;
  EXPECT_EQ(j["architecture"], "bert");
  EXPECT_EQ(j["dim"], 32);
  const auto want = safetensors::File::open(golden_dir + "/golden.safetensors");
  const TensorView scores = want.view("scores");
  ASSERT_EQ(j["scores"].size(), golden["queries"].size());
  for (size_t a = 0; a < j["scores"].size(); ++a) {
    EXPECT_EQ(j["queries"][a]["ids"], golden["query_ids"][a]) << a;
    for (size_t b = 0; b < j["scores"][a].size(); ++b)
      EXPECT_NEAR(j["scores"][a][b].get<double>(), get(scores, static_cast<int64_t>(a), static_cast<int64_t>(b)), 0.08)
          << a << ", " << b;
  }
  for (size_t b = 0; b < j["documents"].size(); ++b)
    EXPECT_EQ(j["documents"][b]["colbert_vecs"].size(), golden["doc_vector_counts"][b].get<size_t>()) << b;
}

TEST_F(EmbedCli, ColbertBadInputsAreNamedErrors) {
  const fs::path input = dir_ / "bad.json";
  std::ofstream(input) << R"({"queries": ["what is it"], "documents": [[20]]})";
  FkRun r = run_fk("embed --model tiny-colbertv2 --device cpu --input " + input.string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("queries[0] is a string; pass --tokenizer"), std::string::npos) << r.output;
  std::ofstream(input) << R"([[4, 5]])";
  r = run_fk("embed --model tiny-colbertv2 --device cpu --input " + input.string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("a ColBERT model takes --input {\"queries\""), std::string::npos) << r.output;
  r = run_fk("embed --model tiny-bge-m3 --device cpu --tokenizer x.json");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("--tokenizer is for a ColBERT model"), std::string::npos) << r.output;
}

TEST_F(EmbedCli, BadInputsAreNamedErrors) {
  const fs::path input = dir_ / "bad.json";
  std::ofstream(input) << "[[0, 9999]]";
  FkRun r = run_fk("embed --model tiny-bge-m3 --device cpu --input " + input.string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("sequence 0 token 1 has id 9999, outside the vocabulary of 256"), std::string::npos) << r.output;
  r = run_fk("embed --model tiny-bge-m3 --device cpu --outputs dense,maxsim");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("unknown --outputs item 'maxsim'"), std::string::npos) << r.output;
  r = run_fk("embed --model tiny-llama --device cpu");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("runs by the generate pattern"), std::string::npos) << r.output;
  r = run_fk("embed --model tiny-bge-m3 --device cpu --length 39");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("exceeds the 38 tokens"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace fk
