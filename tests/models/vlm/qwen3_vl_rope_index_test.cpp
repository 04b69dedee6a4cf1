// The M-RoPE position ids of a Qwen3-VL prompt with images (transformers' get_rope_index),
// worked by hand: text counts up on all three rows, an image's merged tokens take
// (start, start + row, start + column), the text after it continues from the largest
// position plus one; rope_deltas = max + 1 - tokens. Mismatched prompts are named errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fk/status.h"
#include "models/vlm/qwen3_vl/rope_index.h"

namespace fk::models::vlm {
namespace {

constexpr int64_t kImage = 60, kStart = 58, kEnd = 59;

TEST(Qwen3VLRopeIndex, OneImageBetweenText) {
  // 3 text tokens, vision_start, a 4 x 6 patch grid merged 2 x 2 (2 x 3 tokens), vision_end, 2 text.
  std::vector<int64_t> ids = {1, 2, 3, kStart};
  for (int i = 0; i < 6; ++i) ids.push_back(kImage);
  ids.insert(ids.end(), {kEnd, 4, 5});
  const MropePositions p = qwen3_vl_rope_index(ids, {{1, 4, 6}}, kImage, 2);
  const std::vector<int64_t> t = {0, 1, 2, 3, 4, 4, 4, 4, 4, 4, 7, 8, 9};
  const std::vector<int64_t> h = {0, 1, 2, 3, 4, 4, 4, 5, 5, 5, 7, 8, 9};
  const std::vector<int64_t> w = {0, 1, 2, 3, 4, 5, 6, 4, 5, 6, 7, 8, 9};
  ASSERT_EQ(p.positions.size(), 3 * ids.size());
  EXPECT_EQ(std::vector<int64_t>(p.positions.begin(), p.positions.begin() + 13), t);
  EXPECT_EQ(std::vector<int64_t>(p.positions.begin() + 13, p.positions.begin() + 26), h);
  EXPECT_EQ(std::vector<int64_t>(p.positions.begin() + 26, p.positions.end()), w);
  EXPECT_EQ(p.delta, 10 - 13);
}

TEST(Qwen3VLRopeIndex, TwoImagesAndATallOne) {
  // An 8 x 2 grid (4 x 1 tokens: the rows run further than the columns) then a 2 x 2 (one token).
  std::vector<int64_t> ids = {kStart, kImage, kImage, kImage, kImage, kEnd, kStart, kImage, kEnd};
  const MropePositions p = qwen3_vl_rope_index(ids, {{1, 8, 2}, {1, 2, 2}}, kImage, 2);
  const int64_t T = 9;
  auto at = [&](int row, int tok) { return p.positions[static_cast<size_t>(row * T + tok)]; };
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(at(0, 1 + r), 1);
    EXPECT_EQ(at(1, 1 + r), 1 + r);
    EXPECT_EQ(at(2, 1 + r), 1);
  }
  EXPECT_EQ(at(0, 5), 5);  // after the tall image: 1 + 3 + 1
  EXPECT_EQ(at(0, 6), 6);
  for (int row = 0; row < 3; ++row) EXPECT_EQ(at(row, 7), 7);
  EXPECT_EQ(at(2, 8), 8);
  EXPECT_EQ(p.delta, 9 - 9);
}

TEST(Qwen3VLRopeIndex, TextOnlyIsArange) {
  const MropePositions p = qwen3_vl_rope_index({5, 6, 7, 8}, {}, kImage, 2);
  EXPECT_EQ(p.positions, (std::vector<int64_t>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(p.delta, 0);
}

void expect_refused(const std::vector<int64_t>& ids, const std::vector<PatchGrid>& grids, const std::string& needle) {
  try {
    qwen3_vl_rope_index(ids, grids, kImage, 2);
    ADD_FAILURE() << "accepted; expected " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Qwen3VLRopeIndex, NamedErrors) {
  expect_refused({1, kImage, kImage, kImage, 2}, {{1, 4, 4}}, "has 3 image tokens at token 1, but its grid");
  expect_refused({1, kImage, 2, kImage}, {{1, 2, 2}}, "more image-token runs than the 1 images");
  expect_refused({1, kImage, 2}, {{1, 2, 2}, {1, 2, 2}}, "2 images given but the prompt has 1");
  expect_refused({1, kImage, 2}, {{1, 3, 2}}, "not a multiple of spatial_merge_size 2");
}

}  // namespace
}  // namespace fk::models::vlm
