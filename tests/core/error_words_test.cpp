#include "core/error_words.h"

#include <gtest/gtest.h>

#include <string>

#include "fk/status.h"

namespace fk {
namespace {

// The words of the error FK_CHECK / FK_FAIL actually raise.
template <class F>
std::string words_of(F&& raise) {
  try {
    raise();
  } catch (const Error& e) {
    return error_words(e.what());
  }
  return "(nothing raised)";
}

TEST(ErrorWords, AFailedCheckIsItsMessage) {
  const int rows = 3;
  EXPECT_EQ(words_of([&] { FK_CHECK(rows == 4, "rms_norm: input has ", rows, " rows, weight 4"); }),
            "rms_norm: input has 3 rows, weight 4");
}

TEST(ErrorWords, AFailureIsItsMessageWithoutThePlace) {
  EXPECT_EQ(words_of([] { FK_FAIL(FK_ERR_UNSUPPORTED, "model 'x' [dense]: no CUDA device"); }),
            "model 'x' [dense]: no CUDA device");
}

TEST(ErrorWords, ACheckWithoutAMessageKeepsItsCondition) {
  const bool ok = false;
  EXPECT_EQ(words_of([&] { FK_CHECK(ok); }), "check failed: ok");
}

TEST(ErrorWords, ConditionsWithColonsStringsAndTernaries) {
  EXPECT_EQ(error_words("check failed: d == fk::Device::cpu(): on the host [src/a.cpp:1]"), "on the host");
  EXPECT_EQ(error_words("check failed: s != std::string(\"a: b\"): named [src/a.cpp:2]"), "named");
  EXPECT_EQ(error_words("check failed: (x ? 1 : 2) > 0: positive [src/a.cpp:3]"), "positive");
  EXPECT_EQ(error_words("check failed: m[k]: present [include/fk/b.h:40]"), "present");
}

TEST(ErrorWords, OtherTextIsUnchanged) {
  EXPECT_EQ(error_words("out of host memory"), "out of host memory");
  EXPECT_EQ(error_words("shape [2, 3]"), "shape [2, 3]");
  EXPECT_EQ(error_words("see [notes: here]"), "see [notes: here]");
  EXPECT_EQ(error_words(""), "");
}

}  // namespace
}  // namespace fk
