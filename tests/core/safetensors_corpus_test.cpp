// Regression test over tests/data/safetensors_corpus/ (seed files from
// fuzz/make_seed_corpus.py plus inputs the fuzzer found interesting): every file either
// opens or fails with a clean fk::Error, and each hand-made malformed file fails with the
// error of its class.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>

#include "core/safetensors/safetensors.h"

namespace fk::safetensors {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(FK_SOURCE_DIR) / "tests" / "data" / "safetensors_corpus";

// What each hand-made malformed file must report.
const std::map<std::string, std::string> kExpectedErrors = {
    {"bad_truncated.safetensors", "file is truncated: 5 bytes"},
    {"bad_header_past_eof.safetensors", "header length 4096 runs past the end of the file"},
    {"bad_header_too_large.safetensors", "header length 200000000 exceeds the limit of 100000000 bytes"},
    {"bad_not_json.safetensors", "header is not valid JSON"},
    {"bad_not_object.safetensors", "header must be a JSON object"},
    {"bad_entry_not_object.safetensors", "tensor 'x': entry must be an object"},
    {"bad_missing_dtype.safetensors", "tensor 'x': missing 'dtype'"},
    {"bad_missing_shape.safetensors", "tensor 'x': missing 'shape'"},
    {"bad_missing_offsets.safetensors", "tensor 'x': missing 'data_offsets'"},
    {"bad_unknown_dtype.safetensors", "tensor 'x': unknown dtype 'Q4_K'"},
    {"bad_negative_shape.safetensors", "tensor 'x': shape[0] is negative (-4)"},
    {"bad_float_shape.safetensors", "tensor 'x': shape[0] must be a non-negative integer"},
    {"bad_size_mismatch.safetensors", "tensor 'x': shape [4] x F32 is 16 bytes but data_offsets [0, 4] span 4"},
    {"bad_offsets_out_of_range.safetensors", "tensor 'x': data_offsets [0, 4] out of range"},
    {"bad_offsets_reversed.safetensors", "tensor 'x': data_offsets [4, 0] end before they begin"},
    {"bad_overlap.safetensors", "tensor 'y' (bytes [2, 6)) overlaps tensor 'x'"},
    {"bad_hole.safetensors", "hole of 2 unreferenced bytes at data offset 4, before tensor 'y'"},
    {"bad_trailing_bytes.safetensors", "hole of 4 unreferenced bytes at the end of the data buffer"},
    {"bad_duplicate_name.safetensors", "has the key 'x' more than once"},
    {"bad_shape_overflow.safetensors", "tensor 'x': shape [4294967296,4294967296] overflows"},
    {"bad_metadata_not_string.safetensors", "'__metadata__' entry 'step' must be a string"},
    {"bad_invalid_utf8.safetensors", "header is not valid JSON"},
    {"bad_too_deep.safetensors", "header nests deeper than 64 levels"},
};

// Everything a caller may do with an opened file.
void exercise(const File& f) {
  for (const TensorInfo& t : f.tensors()) {
    ASSERT_EQ(f.bytes(t.name).size(), t.nbytes());
    (void)f.checksum(t.name);
    if (t.dtype && t.shape.size() <= static_cast<size_t>(kMaxRank)) {
      try {
        const Tensor copy = f.upload(t.name);
        ASSERT_EQ(copy.nbytes(), t.nbytes());
      } catch (const Error& e) {
        // Refused only for empty tensors whose strides would overflow.
        EXPECT_EQ(e.code(), FK_ERR_UNSUPPORTED) << e.what();
        EXPECT_EQ(t.numel(), 0) << e.what();
      }
    }
  }
}

TEST(SafetensorsCorpus, EveryFileOpensOrFailsCleanly) {
  ASSERT_TRUE(fs::is_directory(kCorpus)) << kCorpus;
  size_t files = 0, bytes = 0, opened = 0;
  for (const auto& entry : fs::directory_iterator(kCorpus)) {
    const std::string name = entry.path().filename().string();
    ++files;
    bytes += static_cast<size_t>(entry.file_size());
    try {
      exercise(File::open(entry.path()));
      ++opened;
      EXPECT_EQ(kExpectedErrors.count(name), 0u) << name << " opened but should fail";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(entry.path().string()), std::string::npos) << "error must name the file: " << e.what();
      EXPECT_TRUE(name.rfind("good_", 0) != 0) << name << ": " << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << ": not an fk::Error: " << e.what();
    }
  }
  EXPECT_GT(opened, 4u);
  // Keep the corpus small: it is checked in and run by CI.
  EXPECT_LT(files, 200u);
  EXPECT_LT(bytes, 1u << 20);
}

TEST(SafetensorsCorpus, MalformedFilesReportTheirErrorClass) {
  for (const auto& [name, expected] : kExpectedErrors) {
    const fs::path p = kCorpus / name;
    ASSERT_TRUE(fs::exists(p)) << p;
    try {
      File::open(p);
      ADD_FAILURE() << name << " opened";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), FK_ERR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << name << ": " << e.what();
    }
  }
  // Every hand-made malformed file has an expectation here.
  for (const auto& entry : fs::directory_iterator(kCorpus)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("bad_", 0) == 0) EXPECT_EQ(kExpectedErrors.count(name), 1u) << name << " has no expected error";
  }
}

TEST(SafetensorsCorpus, ReadsTheReferenceWriterOutput) {
  // Written by the reference implementation (see fuzz/make_seed_corpus.py).
  const File f = File::open(kCorpus / "good_hf_reference.safetensors");
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.info("embed.weight").shape, (Shape{4, 6}));
  const TensorView embed = f.view("embed.weight");
  for (int i = 0; i < 24; ++i) EXPECT_EQ(embed.ptr<float>()[i], static_cast<float>(i));
  EXPECT_EQ(f.view("ids").ptr<int64_t>()[2], 2);
  EXPECT_EQ(f.info("norm.weight").dtype, DType::f16);
}

TEST(SafetensorsCorpus, EmptyTensorWithOverflowingStrides) {
  // Valid for the format (zero elements), but no TensorView can index it.
  const File f = File::open(kCorpus / "good_zero_size_huge_strides.safetensors");
  EXPECT_EQ(f.info("x").numel(), 0);
  try {
    f.upload("x");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("strides do not fit 64 bits"), std::string::npos) << e.what();
  }
}

TEST(SafetensorsCorpus, FormatDTypesWithoutFastkernelsType) {
  const File f = File::open(kCorpus / "good_every_dtype.safetensors");
  EXPECT_EQ(f.size(), 20u);
  EXPECT_EQ(f.info("t_U16").bits, 16u);
  EXPECT_EQ(f.info("t_F6_E3M2").nbytes(), 3u);
  EXPECT_EQ(f.info("t_BF16").dtype, DType::bf16);
  EXPECT_THROW(f.view("t_U32"), Error);
}

}  // namespace
}  // namespace fk::safetensors
