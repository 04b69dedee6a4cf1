// apply_bad_words: definition (workloads, inputs, cost) and CPU reference.
#include "fk/element.h"
#include "fk/philox.h"
#include "ops/common/case_builder.h"
#include "ops/sampling/logits_processors_case.h"
#include "ops/sampling/logits_processors_reference.h"
#include "ops/sampling/logits_processors_validate.h"

namespace fk::ops {
namespace {

constexpr const char* kOp = ApplyBadWordsArgs::kName;

fk_status apply_bad_words_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const ApplyBadWordsArgs*>(args);
    validate_apply_bad_words(a, DeviceType::cpu);
    const int64_t B = a.logits.shape[0], V = a.logits.shape[1];
    const auto rows = read_row_tokens(kOp, a.tokens, a.token_indptr, a.prompt_len, B, V);
    const int64_t NW = a.word_indptr.numel() - 1;
    const auto words = read_packed_rows(kOp, "word_tokens", a.word_tokens, "word_indptr", a.word_indptr, NW, V);
    for (int64_t j = 0; j < NW; ++j)
      FK_CHECK(!words[static_cast<size_t>(j)].empty(), kOp, ": bad word ", j, " is empty (word_indptr[", j,
               "] == word_indptr[", j + 1, "])");
    // row_words is a packed list of word indices 0, 1, ...: read it as one.
    Tensor index = Tensor::empty({NW}, DType::i64);
    for (int64_t j = 0; j < NW; ++j) index.data_as<int64_t>()[j] = j;
    const auto row_words = read_packed_rows(kOp, "word indices", index, "row_words", a.row_words, B, 0);
    for (int64_t b = 0; b < B; ++b) {
      std::vector<std::vector<int64_t>> mine;
      for (int64_t j : row_words[static_cast<size_t>(b)]) mine.push_back(words[static_cast<size_t>(j)]);
      std::vector<double> x = read_row(a.logits, b);
      ban_bad_words_row(x, rows[static_cast<size_t>(b)].output, mine);
      write_row(a.logits, b, x);
    }
  });
}

// Workload fields: batch, vocab, max_prompt, max_output (token lists), words (per row,
// default 4), max_word_len (default 3). Half the words end with the row's output tail (so
// they match), the others are random (they rarely do).
OpCase make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const int64_t B = wl_int(w, "batch"), V = wl_int(w, "vocab");
  const int64_t words = wl_int(w, "words", 4), max_len = wl_int(w, "max_word_len", 3);
  FK_CHECK(B >= 0 && V > 0 && words >= 0 && max_len >= 1, kOp,
           " workload needs batch >= 0, vocab > 0, words >= 0, max_word_len >= 1, got ", w.dump());
  OpCase c = begin_case<ApplyBadWordsArgs>(w, 7);
  c.tensors[0] = processor_logits(B, V, DType::f32, static_cast<float>(wl_float(w, "logit_range", 8.0)), seed);
  TokenLists l = make_token_lists(B, V, wl_int(w, "max_prompt", 8), wl_int(w, "max_output", 8), seed);
  c.tensors[1] = l.tokens;
  c.tensors[2] = l.token_indptr;
  c.tensors[3] = l.prompt_len;
  std::vector<int32_t> word_tokens, word_indptr{0}, row_words{0};
  uint64_t i = 0;
  for (int64_t b = 0; b < B; ++b) {
    const auto& out = l.outputs[static_cast<size_t>(b)];
    for (int64_t k = 0; k < words; ++k, ++i) {
      const auto len = static_cast<size_t>(philox_int(kShapeSeed, 40, i, 1, max_len + 1));  // shape: workload only
      const bool matching = k % 2 == 0 && len - 1 <= out.size();
      for (size_t t = 0; t + 1 < len; ++t)
        word_tokens.push_back(matching ? out[out.size() - (len - 1) + t]
                                       : static_cast<int32_t>(philox_int(seed, 41, i * 64 + t, 0, V)));
      word_tokens.push_back(static_cast<int32_t>(philox_int(seed, 42, i, 0, V)));
      word_indptr.push_back(static_cast<int32_t>(word_tokens.size()));
    }
    row_words.push_back(static_cast<int32_t>(word_indptr.size() - 1));
  }
  c.tensors[4] = i32_tensor(word_tokens);
  c.tensors[5] = i32_tensor(word_indptr);
  c.tensors[6] = i32_tensor(row_words);
  c.bind(layout);
  return c;
}


OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "sampling";
  d.level = "L1";
  d.summary = "vLLM's bad words: -inf for a word's last token when the row's output ends with the rest of it";
  d.args_size = sizeof(ApplyBadWordsArgs);
  d.tensor_args = {{"logits", ArgRole::inout, offsetof(ApplyBadWordsArgs, logits), RowStride::any},
                   {"tokens", ArgRole::in, offsetof(ApplyBadWordsArgs, tokens)},
                   {"token_indptr", ArgRole::in, offsetof(ApplyBadWordsArgs, token_indptr)},
                   {"prompt_len", ArgRole::in, offsetof(ApplyBadWordsArgs, prompt_len)},
                   {"word_tokens", ArgRole::in, offsetof(ApplyBadWordsArgs, word_tokens)},
                   {"word_indptr", ArgRole::in, offsetof(ApplyBadWordsArgs, word_indptr)},
                   {"row_words", ArgRole::in, offsetof(ApplyBadWordsArgs, row_words)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_case(layout, w, seed); };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<ApplyBadWordsArgs>();
    const double words = static_cast<double>(a.word_indptr.numel() - 1);
    return OpCost{4.0 * static_cast<double>(a.word_tokens.numel() + a.tokens.numel()) + 8.0 * words, 0.0,
                  DType::f32};
  };
  using J = Json;
  d.test_workloads = {
      J{{"batch", 9}, {"vocab", 1000}},
      J{{"batch", 3}, {"vocab", 1}},
      J{{"batch", 0}, {"vocab", 100}},
      J{{"batch", 8}, {"vocab", 7}, {"words", 6}, {"max_word_len", 5}},
      J{{"batch", 4}, {"vocab", 32000}, {"words", 20}, {"max_output", 40}},
      J{{"batch", 5}, {"vocab", 300}, {"words", 0}},
      J{{"batch", 5}, {"vocab", 300}, {"max_output", 0}, {"max_word_len", 1}},
  };
  for (int64_t vocab : {128256, 151936})
    for (int64_t batch : {1, 64, 256})
      d.bench_workloads.push_back(J{{"batch", batch}, {"vocab", vocab}, {"words", 8}, {"max_output", 256}});
  // Not capturable: a call's token lists are not a function of a workload's sizes.
  d.architectures = {"llama",  "mistral", "qwen2",     "qwen3",     "gemma", "gemma2",
                     "gemma3", "mixtral", "qwen3_moe", "qwen2_moe", "olmoe"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("apply_bad_words", cpu, apply_bad_words_cpu);

}  // namespace
}  // namespace fk::ops
