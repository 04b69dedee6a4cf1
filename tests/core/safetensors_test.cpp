#include "core/safetensors/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/safetensors/tensor_listing.h"
#include "support/test_seed.h"

namespace fk::safetensors {
namespace {

namespace fs = std::filesystem;

// A file from header text and data bytes, exactly as given (no padding, no checks).
std::vector<uint8_t> raw_file(const std::string& header, size_t data_bytes = 0, uint8_t fill = 0xab) {
  std::vector<uint8_t> out(8 + header.size() + data_bytes, fill);
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
  std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

std::string error_of(std::vector<uint8_t> bytes) {
  try {
    File::from_bytes(std::move(bytes), "bad.safetensors");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), FK_ERR_INVALID_ARGUMENT) << e.what();
    return e.what();
  }
  return "(no error)";
}

#define EXPECT_FILE_ERROR(bytes, text)                        \
  do {                                                        \
    const std::string msg = error_of(bytes);                  \
    EXPECT_NE(msg.find(text), std::string::npos) << msg;      \
    EXPECT_NE(msg.find("bad.safetensors"), std::string::npos) << msg; \
  } while (0)

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("fk_st_" + std::to_string(test::seed_for("tmpdir", reinterpret_cast<uintptr_t>(this))));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TEST(ContentHash, MatchesXxh64Vectors) {
  EXPECT_EQ(hash_hex(content_hash64("", 0)), "ef46db3751d8e999");
  EXPECT_EQ(hash_hex(content_hash64("abc", 3, 42)), "13c1d910702770e6");
  // Bytes (7 i + 3) mod 251; reference values from the xxHash reference implementation.
  const std::vector<std::pair<size_t, std::string>> vectors = {
      {1, "1f25c8d0bc1f4bb6"},  {3, "31d2363f52e564c9"},  {4, "9bb64b7d66ee9fda"},  {7, "9a7b149959ce60d8"},
      {8, "dab99d95c6f90092"},  {11, "7a52cc9457cf1a1f"}, {31, "a2aa5f33cc4a6119"}, {32, "23c3c17ef790fd97"},
      {33, "50a7cfc7ba588784"}, {63, "f1438f15b9ed16e9"}, {64, "2cd990a1beed6894"}, {100, "778e26df8290f456"},
      {1000, "021f7a7424085ea4"}};
  for (const auto& [n, expected] : vectors) {
    std::vector<uint8_t> b(n);
    for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>((i * 7 + 3) % 251);
    EXPECT_EQ(hash_hex(content_hash64(b.data(), n)), expected) << n << " bytes";
  }
}

TEST(Safetensors, RoundTripEveryDType) {
  const uint64_t seed = test::seed_for("Safetensors.RoundTripEveryDType");
  std::vector<std::vector<uint8_t>> storage;
  NamedViews tensors;
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto t = static_cast<DType>(i);
    const int64_t rows = 3 + i % 3, cols = 5;
    storage.push_back(random_bytes(static_cast<size_t>(rows * cols) * dtype_size(t), seed + i));
    tensors.emplace_back("t." + std::string(dtype_name(t)), make_view(storage.back().data(), {rows, cols}, t, Device::cpu()));
  }
  const Metadata meta = {{"format", "pt"}, {"note", "round trip"}};
  const std::vector<uint8_t> bytes = serialize(tensors, meta);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u) << "header must be padded to 8 bytes";

  const File f = File::from_bytes(bytes, "roundtrip");
  EXPECT_EQ(f.metadata(), meta);
  ASSERT_EQ(f.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, v] = tensors[i];
    const TensorInfo& info = f.info(name);
    EXPECT_EQ(info.dtype, v.dtype) << name;
    EXPECT_EQ(info.dtype_name, dtype_safetensors_name(v.dtype));
    EXPECT_EQ(info.shape, Shape(v.shape, v.shape + v.rank));
    ASSERT_EQ(info.nbytes(), static_cast<uint64_t>(v.nbytes()));
    EXPECT_EQ(std::memcmp(f.bytes(name).data(), storage[i].data(), storage[i].size()), 0) << name;
    const TensorView view = f.view(name);  // aligned by the writer's layout
    EXPECT_EQ(view.dtype, v.dtype);
    EXPECT_EQ(view.numel(), v.numel());
    EXPECT_TRUE(view.is_contiguous());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(view.data) % dtype_size(v.dtype), 0u);
    EXPECT_EQ(std::memcmp(view.data, storage[i].data(), storage[i].size()), 0);
    const Tensor copy = f.load_tensor(name);
    EXPECT_EQ(copy.shape(), info.shape);
    EXPECT_EQ(std::memcmp(copy.data(), storage[i].data(), storage[i].size()), 0);
    EXPECT_EQ(f.checksum(name), content_hash64(storage[i].data(), storage[i].size()));
  }
  // Serialising the same tensors again is byte-identical (deterministic layout).
  EXPECT_EQ(serialize(tensors, meta), bytes);
}

TEST(Safetensors, EdgeShapes) {
  float scalar = 3.5f;
  NamedViews tensors = {{"scalar", make_view(&scalar, {}, DType::f32, Device::cpu())},
                        {"empty", make_view(nullptr, {0, 7}, DType::bf16, Device::cpu())},
                        {"empty2", make_view(nullptr, {4, 0}, DType::f32, Device::cpu())}};
  const File f = File::from_bytes(serialize(tensors), "edge");
  EXPECT_TRUE(f.info("scalar").shape.empty());
  EXPECT_EQ(f.view("scalar").rank, 0);
  EXPECT_EQ(*f.view("scalar").ptr<float>(), 3.5f);
  EXPECT_EQ(f.info("empty").nbytes(), 0u);
  EXPECT_EQ(f.load_tensor("empty").numel(), 0);
  EXPECT_EQ(f.names(), (std::vector<std::string>{"empty", "empty2", "scalar"}));
  // A file without tensors is valid too.
  const File none = File::from_bytes(serialize({}), "none");
  EXPECT_EQ(none.size(), 0u);
}

TEST(Safetensors, ReadsReferenceLayout) {
  // As the reference writer lays it out: compact JSON, space padding, tensors sorted.
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"I8","shape":[1,3],"data_offsets":[8,11]}})";
  std::string padded = header + std::string((8 - header.size() % 8) % 8, ' ');
  std::vector<uint8_t> bytes = raw_file(padded, 11);
  const float a[2] = {1.5f, -2.0f};
  std::memcpy(bytes.data() + 8 + padded.size(), a, 8);
  const File f = File::from_bytes(bytes);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.view("a").ptr<float>()[1], -2.0f);
  EXPECT_EQ(f.info("b").shape, (Shape{1, 3}));
  EXPECT_EQ(f.tensors()[0].name, "a");  // data-offset order
}

TEST(Safetensors, FormatDTypesWithoutFkType) {
  const std::string h = R"({"q":{"dtype":"I16","shape":[2],"data_offsets":[0,4]},)"
                        R"("p":{"dtype":"F4","shape":[6],"data_offsets":[4,7]}})";
  const File f = File::from_bytes(raw_file(h, 7));
  EXPECT_FALSE(f.info("q").dtype.has_value());
  EXPECT_EQ(f.bytes("q").size(), 4u);
  EXPECT_EQ(f.bytes("p").size(), 3u);
  try {
    f.view("q");
    ADD_FAILURE() << "view of an I16 tensor must fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), FK_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find("I16"), std::string::npos);
  }
  EXPECT_FILE_ERROR(raw_file(R"({"p":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", 2),
                    "not a whole number of bytes");
}

TEST(Safetensors, MisalignedTensorIsCopiedNotViewed) {
  const std::string h = R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[1,5]},)"
                        R"("y":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})";
  const std::string padded = h + std::string((8 - h.size() % 8) % 8, ' ');
  std::vector<uint8_t> bytes = raw_file(padded, 5);
  const float one = 1.0f;
  std::memcpy(bytes.data() + 8 + padded.size() + 1, &one, 4);
  const File f = File::from_bytes(bytes);
  EXPECT_THROW(f.view("x"), Error);
  EXPECT_EQ(*f.load_tensor("x").data_as<float>(), 1.0f);
}

TEST(Safetensors, MalformedFiles) {
  const std::string ok_entry = R"("a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]})";
  EXPECT_FILE_ERROR(std::vector<uint8_t>(5, 0), "file is truncated");
  EXPECT_FILE_ERROR(std::vector<uint8_t>{}, "file is truncated");
  {
    auto b = raw_file("{}");
    b[0] = 200;  // claims 200 bytes of header, has 2
    EXPECT_FILE_ERROR(b, "runs past the end of the file");
  }
  {
    auto b = raw_file("{}");
    const uint64_t huge = 200'000'000;
    std::memcpy(b.data(), &huge, 8);
    EXPECT_FILE_ERROR(b, "exceeds the limit");
    const uint64_t wrap = ~0ull - 3;  // 8 + N overflows
    std::memcpy(b.data(), &wrap, 8);
    EXPECT_FILE_ERROR(b, "exceeds the limit");
  }
  EXPECT_FILE_ERROR(raw_file("{\"a\": "), "not valid JSON");
  EXPECT_FILE_ERROR(raw_file("{\"a\":{}} xyz"), "not valid JSON");
  EXPECT_FILE_ERROR(raw_file("[1, 2]"), "start with '{'");
  EXPECT_FILE_ERROR(raw_file(" {}"), "start with '{'");
  EXPECT_FILE_ERROR(raw_file("{\"a\": \"\xff\"}"), "not valid JSON");
  EXPECT_FILE_ERROR(raw_file(R"({"a": 5})"), "tensor 'a': entry must be an object");
  EXPECT_FILE_ERROR(raw_file(R"({"a":{"shape":[4],"data_offsets":[0,4]}})", 4), "tensor 'a': missing 'dtype'");
  EXPECT_FILE_ERROR(raw_file(R"({"a":{"dtype":"U8","data_offsets":[0,4]}})", 4), "tensor 'a': missing 'shape'");
  EXPECT_FILE_ERROR(raw_file(R"({"a":{"dtype":"U8","shape":[4]}})", 4), "tensor 'a': missing 'data_offsets'");
  EXPECT_FILE_ERROR(raw_file(R"({"a":{"dtype":"Q4_K","shape":[4],"data_offsets":[0,4]}})", 4), "unknown dtype 'Q4_K'");
  EXPECT_FILE_ERROR(raw_file(R"({"a":{"dtype":7,"shape":[4],"data_offsets":[0,4]}})", 4), "'dtype' must be a string");
  EXPECT_FILE_ERROR(raw_file(R"({"a":{"dtype":"U8","shape":[-4],"data_offsets":[0,4]}})", 4), "shape[0] is negative");
  EXPECT_FILE_ERROR(raw_file(R"({"a":{"dtype":"U8","shape":[4.0],"data_offsets":[0,4]}})", 4),
                    "shape[0] must be a non-negative integer");
  EXPECT_FILE_ERROR(raw_file(R"({"a":{"dtype":"U8","shape":"4","data_offsets":[0,4]}})", 4), "'shape' must be an array");
  EXPECT_FILE_ERROR(raw_file(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,4]}})", 4),
                    "is 16 bytes but data_offsets [0, 4] span 4");
  EXPECT_FILE_ERROR(raw_file(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,8]}})", 4), "out of range");
  EXPECT_FILE_ERROR(raw_file(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[4,0]}})", 4), "end before they begin");
  EXPECT_FILE_ERROR(raw_file(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0]}})", 4), "must be an array [begin, end]");
  EXPECT_FILE_ERROR(raw_file(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,18446744073709551616]}})", 4),
                    "non-negative integer");
  EXPECT_FILE_ERROR(raw_file(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                             R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})", 6),
                    "overlaps tensor 'a'");
  EXPECT_FILE_ERROR(raw_file(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                             R"("b":{"dtype":"U8","shape":[4],"data_offsets":[6,10]}})", 10),
                    "hole of 2 unreferenced bytes at data offset 4");
  EXPECT_FILE_ERROR(raw_file("{" + ok_entry + "}", 9), "hole of 5 unreferenced bytes at the end");
  EXPECT_FILE_ERROR(raw_file("{" + ok_entry + "," + ok_entry + "}", 4), "key 'a' more than once");
  EXPECT_FILE_ERROR(raw_file(R"({"a":{"dtype":"U8","dtype":"I8","shape":[4],"data_offsets":[0,4]}})", 4),
                    "key 'dtype' more than once");
  EXPECT_FILE_ERROR(raw_file(R"({"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})"),
                    "overflows");
  EXPECT_FILE_ERROR(raw_file(R"({"a":{"dtype":"F64","shape":[1152921504606846976,2],"data_offsets":[0,0]}})"),
                    "overflows");
  EXPECT_FILE_ERROR(raw_file(R"({"a":{"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,0]}})"),
                    "larger than");
  EXPECT_FILE_ERROR(raw_file(R"({"__metadata__":{"k":1}})"), "'__metadata__' entry 'k' must be a string");
  EXPECT_FILE_ERROR(raw_file(R"({"__metadata__":[1]})"), "'__metadata__' must be an object");
  EXPECT_FILE_ERROR(raw_file("{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}"), "nests deeper");
}

TEST(Safetensors, UnknownTensorNamesTheFile) {
  const File f = File::from_bytes(serialize({}), "x.safetensors");
  try {
    f.info("missing.weight");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x.safetensors: no tensor 'missing.weight'"), std::string::npos) << e.what();
  }
}

TEST(Safetensors, SaveAndMapFromDisk) {
  TempDir dir;
  std::vector<int32_t> data(100);
  for (int i = 0; i < 100; ++i) data[static_cast<size_t>(i)] = i * i;
  const fs::path p = dir.path / "model.safetensors";
  save(p, {{"w", make_view(data.data(), {10, 10}, DType::i32, Device::cpu())}}, {{"format", "pt"}});
  EXPECT_FALSE(fs::exists(dir.path / "model.safetensors.tmp"));
  TensorView view;
  std::shared_ptr<const void> keep;
  {
    const File f = File::open(p);
    view = f.view("w");
    keep = f.keep_alive();
  }
  // The File is gone; the mapping lives on through keep_alive().
  EXPECT_EQ(view.ptr<int32_t>()[99], 99 * 99);
  EXPECT_THROW(File::open(dir.path / "missing.safetensors"), Error);
  EXPECT_THROW(File::open(dir.path), Error);  // a directory
}

TEST(Safetensors, WriterRejectsBadInput) {
  float x[4] = {};
  TensorView v = make_view(x, {2, 2}, DType::f32, Device::cpu());
  EXPECT_THROW(serialize({{"a", v}, {"a", v}}), Error);
  EXPECT_THROW(serialize({{"__metadata__", v}}), Error);
  TensorView strided = v;
  strided.strides[0] = 1;
  strided.strides[1] = 2;
  EXPECT_THROW(serialize({{"t", strided}}), Error);
}

// A sharded checkpoint in a temporary directory: 2 shards and an index.
struct ShardedFixture {
  TempDir dir;
  std::vector<float> a = std::vector<float>(6, 1.0f), b = std::vector<float>(4, 2.0f), c = std::vector<float>(2, 3.0f);
  void write(const std::string& index_text) {
    save(dir.path / "model-00001-of-00002.safetensors",
         {{"a", make_view(a.data(), {2, 3}, DType::f32, Device::cpu())},
          {"b", make_view(b.data(), {4}, DType::f32, Device::cpu())}});
    save(dir.path / "model-00002-of-00002.safetensors", {{"c", make_view(c.data(), {2}, DType::f32, Device::cpu())}});
    std::ofstream(dir.path / "model.safetensors.index.json") << index_text;
  }
  static std::string index(const std::string& extra = "") {
    return R"({"metadata": {"total_size": 48}, "weight_map": {"a": "model-00001-of-00002.safetensors",)"
           R"( "b": "model-00001-of-00002.safetensors", "c": "model-00002-of-00002.safetensors")" +
           extra + "}}";
  }
};

TEST(Checkpoint, ShardedIndexOpensLazily) {
  ShardedFixture fx;
  fx.write(ShardedFixture::index());
  const Checkpoint ck = Checkpoint::open(fx.dir.path);
  EXPECT_TRUE(ck.sharded());
  EXPECT_EQ(ck.names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(ck.shard_names(), (std::vector<std::string>{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}));
  EXPECT_EQ(ck.shard_name("c"), "model-00002-of-00002.safetensors");
  // Removing shard 2 before its first use shows that it was not opened yet.
  fs::remove(fx.dir.path / "model-00002-of-00002.safetensors");
  EXPECT_EQ(ck.view("a").ptr<float>()[5], 1.0f);
  EXPECT_EQ(ck.upload("b").data_as<float>()[3], 2.0f);
  EXPECT_THROW(ck.view("c"), Error);
  EXPECT_THROW(ck.info("zzz"), Error);
  EXPECT_NE(ck.index_metadata_json().find("total_size"), std::string::npos);
}

TEST(Checkpoint, ValidateAllCrossChecksTheIndex) {
  {
    ShardedFixture fx;
    fx.write(ShardedFixture::index());
    EXPECT_NO_THROW(Checkpoint::open(fx.dir.path / "model.safetensors.index.json").validate_all());
  }
  {
    ShardedFixture fx;  // the index lists a tensor its shard lacks
    fx.write(ShardedFixture::index(R"(, "d": "model-00002-of-00002.safetensors")"));
    try {
      Checkpoint::open(fx.dir.path).validate_all();
      ADD_FAILURE();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("tensor 'd' in shard 'model-00002-of-00002.safetensors'"), std::string::npos)
          << e.what();
    }
  }
  {
    ShardedFixture fx;  // shard 2 holds a tensor the index does not list
    fx.write(R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",)"
             R"( "x": "model-00002-of-00002.safetensors"}})");
    EXPECT_THROW(Checkpoint::open(fx.dir.path).validate_all(), Error);
  }
  for (const std::string bad : {R"({"weight_map": {"a": "../escape.safetensors"}})", R"({"weight_map": {"a": "/abs"}})",
                                R"({"weight_map": {"a": 3}})", R"({"weight_map": []})", R"({"metadata": {}})",
                                R"({"weight_map": {"a": "x", "a": "y"}})", "not json"}) {
    ShardedFixture fx;
    fx.write(bad);
    EXPECT_THROW(Checkpoint::open(fx.dir.path), Error) << bad;
  }
}

TEST(Checkpoint, DirectoryResolution) {
  TempDir dir;
  EXPECT_THROW(Checkpoint::open(dir.path), Error);  // empty directory
  EXPECT_THROW(Checkpoint::open(dir.path / "nope"), Error);
  float x = 1;
  save(dir.path / "diffusion_pytorch_model.safetensors", {{"x", make_view(&x, {1}, DType::f32, Device::cpu())}});
  EXPECT_FALSE(Checkpoint::open(dir.path).sharded());  // the only .safetensors file
  save(dir.path / "model.safetensors", {{"y", make_view(&x, {1}, DType::f32, Device::cpu())}});
  EXPECT_EQ(Checkpoint::open(dir.path).names(), std::vector<std::string>{"y"});  // model.safetensors wins
  EXPECT_EQ(Checkpoint::open(dir.path / "model.safetensors").names(), std::vector<std::string>{"y"});
}

TEST(TensorListing, ListsTensorsWithChecksums) {
  ShardedFixture fx;
  fx.write(ShardedFixture::index());
  const TensorListing l = list_tensors(fx.dir.path);
  EXPECT_TRUE(l.sharded);
  ASSERT_EQ(l.tensors.size(), 3u);
  EXPECT_EQ(l.total_bytes, 48u);
  EXPECT_EQ(l.total_elements, 12u);
  EXPECT_EQ(l.tensors[0].name, "a");
  EXPECT_EQ(l.tensors[0].dtype, "F32");
  EXPECT_EQ(l.tensors[0].shape, (Shape{2, 3}));
  EXPECT_EQ(*l.tensors[0].checksum, content_hash64(fx.a.data(), 24));
  EXPECT_EQ(l.shards[0].tensors, 2u);
  EXPECT_EQ(l.shards[1].bytes, 8u);

  const std::string text = format_listing_text(l);
  EXPECT_NE(text.find("sharded checkpoint, 2 shards"), std::string::npos) << text;
  EXPECT_NE(text.find(hash_hex(content_hash64(fx.c.data(), 8))), std::string::npos) << text;
  EXPECT_NE(text.find("3 tensors, 12 elements, 48 bytes"), std::string::npos) << text;

  const auto j = listing_to_json(l);
  EXPECT_EQ(j["num_tensors"], 3);
  EXPECT_EQ(j["tensors"][2]["name"], "c");
  EXPECT_EQ(j["tensors"][2]["xxh64"], hash_hex(content_hash64(fx.c.data(), 8)));
  EXPECT_EQ(j["index_metadata"]["total_size"], 48);

  const TensorListing quick = list_tensors(fx.dir.path, /*with_checksums=*/false);
  EXPECT_FALSE(quick.tensors[0].checksum.has_value());
}

}  // namespace
}  // namespace fk::safetensors
