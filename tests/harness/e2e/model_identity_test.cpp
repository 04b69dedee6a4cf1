// A model's category comes from its config (routed experts or not), and its id is the
// same however the model was named.
#include "harness/e2e/model_identity.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "fk/status.h"

namespace fk::e2e {
namespace {

TEST(ModelIdentity, CategoryFromTheConfig) {
  EXPECT_EQ(model_category("tiny-llama"), "dense-llm");
  EXPECT_EQ(model_category("tiny-qwen3-moe"), "moe-llm");
  EXPECT_EQ(model_category("mixtral-8x7b"), "moe-llm");
  EXPECT_EQ(model_category(std::string(FK_SOURCE_DIR) + "/tests/data/models/olmoe"), "moe-llm");
  EXPECT_EQ(model_category(std::string(FK_SOURCE_DIR) + "/tests/data/models/llama"), "dense-llm");
}

TEST(ModelIdentity, UnknownModelIsNamed) {
  try {
    model_category("no-such-model");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-model"), std::string::npos) << e.what();
  }
}

TEST(ModelIdentity, OneIdPerModel) {
  EXPECT_EQ(model_id("Tiny-Llama"), "tiny-llama");
  const std::string dir = std::string(FK_SOURCE_DIR) + "/tests/data/models/llama";
  EXPECT_EQ(model_id(dir + "/"), model_id(std::string(FK_SOURCE_DIR) + "/tests/data/models/../models/llama"));
  EXPECT_TRUE(std::filesystem::path(model_id(dir)).is_absolute());
}

}  // namespace
}  // namespace fk::e2e
