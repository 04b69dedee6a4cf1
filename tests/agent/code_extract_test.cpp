// Code extraction from model answers: which block wins, and why none does.
#include "agent/code_extract.h"

#include <gtest/gtest.h>

namespace fk::agent {
namespace {

TEST(AgentCodeExtract, TakesTheLastBlockThatExportsTheOp) {
  const std::string answer =
      "First a helper:\n```cpp\nint helper();\n```\nThe draft:\n```cuda\n// v1\nFK_EXPORT_CANDIDATE(rms_norm, run)\n```\n"
      "Better:\n```cuda\n// v2\nFK_EXPORT_CANDIDATE(rms_norm, run)\n```\nDone.";
  const ExtractedCode x = extract_code(answer);
  ASSERT_TRUE(x.found);
  EXPECT_EQ(x.code, "// v2\nFK_EXPORT_CANDIDATE(rms_norm, run)\n");
  EXPECT_EQ(x.language, "cuda");
  EXPECT_EQ(x.blocks, 3);
}

TEST(AgentCodeExtract, WithoutAnExportTakesTheLargestBlock) {
  const ExtractedCode x = extract_code("```c++\nshort\n```\n```cpp\na much longer block\nof code\n```\n```cu\nmid size\n```");
  ASSERT_TRUE(x.found);
  EXPECT_EQ(x.code, "a much longer block\nof code\n");
}

TEST(AgentCodeExtract, AcceptsUntaggedAndIndentedFencesAndInfoStrings) {
  EXPECT_EQ(extract_code("```\nplain\n```").code, "plain\n");
  EXPECT_EQ(extract_code("  ```cpp title=\"k.cpp\"\nx\n  ```").code, "x\n");
  EXPECT_EQ(extract_code("````cuda\nhas ``` inside\n````").code, "has ``` inside\n");
}

TEST(AgentCodeExtract, IgnoresThinkingAndOtherLanguages) {
  const ExtractedCode x =
      extract_code("<think>```cpp\ndraft FK_EXPORT_CANDIDATE\n```</think>\n```bash\nmake\n```\n```cuda\nfinal\n```");
  ASSERT_TRUE(x.found);
  EXPECT_EQ(x.code, "final\n");
}

TEST(AgentCodeExtract, SaysWhyThereIsNoCode) {
  EXPECT_FALSE(extract_code("I cannot help with that.").found);
  EXPECT_NE(extract_code("I cannot help with that.").problem.find("no fenced code block"), std::string::npos);
  EXPECT_NE(extract_code("").problem.find("empty"), std::string::npos);
  const ExtractedCode cut = extract_code("```cuda\n__global__ void k() {\n");
  EXPECT_FALSE(cut.found);
  EXPECT_NE(cut.problem.find("never closed"), std::string::npos);
  const ExtractedCode py = extract_code("```python\nprint(1)\n```");
  EXPECT_FALSE(py.found);
  EXPECT_NE(py.problem.find("none in CUDA/C++"), std::string::npos);
  EXPECT_FALSE(extract_code("```cpp\n\n```").found);  // an empty block is no code
}

}  // namespace
}  // namespace fk::agent
