// The comparison shared by the patterns that time one fixed piece of work: the speedup and
// the sides' reported fields, the bounds in the report, at-most and at-least bounds checked
// in order (the first failure is the reason), a missing or NaN (null) value beyond every
// bound, and nothing compared is INCORRECT.
#include "harness/e2e/e2e_output_compare.h"

#include <gtest/gtest.h>

namespace fk::e2e {
namespace {

using nlohmann::json;

const std::vector<OutputBound> kBounds = {at_most("err", 0.1, "the error is ", " of the range"),
                                          at_least("share", 0.9, "only ", " agree")};

json run(double elapsed_s, json agreement) {
  json r = {{"elapsed_s", elapsed_s}, {"items_per_s", 8 / elapsed_s}, {"steps", 4}};
  if (!agreement.is_null()) r["agreement"] = std::move(agreement);
  return r;
}

TEST(E2eOutputCompare, SpeedupReportedFieldsAndBounds) {
  const json base = run(2.0, nullptr), cand = run(0.5, {{"values", 6}, {"err", 0.05}, {"share", 1.0}});
  const json c = compare_output_runs(base, cand, {"items_per_s", "steps"}, kBounds);
  EXPECT_EQ(c.at("verdict"), "PASSED");
  EXPECT_FALSE(c.contains("reason"));
  for (const char* k : {"throughput", "latency", "elapsed"}) EXPECT_DOUBLE_EQ(c.at("speedup").at(k).get<double>(), 4.0);
  EXPECT_EQ(c.at("baseline"), json({{"elapsed_s", 2.0}, {"items_per_s", 4.0}, {"steps", 4}}));
  EXPECT_EQ(c.at("candidate"), json({{"elapsed_s", 0.5}, {"items_per_s", 16.0}, {"steps", 4}}));
  EXPECT_EQ(c.at("agreement"), cand.at("agreement"));
  EXPECT_EQ(c.at("bounds"), json({{"err", 0.1}, {"share", 0.9}}));
}

TEST(E2eOutputCompare, TheFirstValueBeyondItsBoundIsTheReason) {
  const json base = run(1.0, nullptr);
  auto reason = [&](const json& agreement) {
    const json c = compare_output_runs(base, run(1.0, agreement), {}, kBounds);
    EXPECT_EQ(c.at("verdict"), c.contains("reason") ? "INCORRECT" : "PASSED");
    return c.value("reason", "");
  };
  EXPECT_EQ(reason({{"values", 1}, {"err", 0.1}, {"share", 0.9}}), "");  // bounds are inclusive
  EXPECT_EQ(reason({{"values", 1}, {"err", 0.2}, {"share", 0.5}}), "the error is 0.2 of the range (bound 0.1)");
  EXPECT_EQ(reason({{"values", 1}, {"err", 0.0}, {"share", 0.5}}), "only 0.5 agree (bound 0.9)");
  // A NaN is stored as null; a missing value fails too.
  EXPECT_EQ(reason({{"values", 1}, {"err", nullptr}, {"share", 1.0}}), "the error is null of the range (bound 0.1)");
  EXPECT_EQ(reason({{"values", 1}, {"err", 0.0}}), "only null agree (bound 0.9)");
}

TEST(E2eOutputCompare, NothingComparedIsIncorrect) {
  const json base = run(1.0, nullptr);
  for (const json& cand : {run(1.0, nullptr), run(1.0, json::object()), run(1.0, {{"values", 0}, {"err", 0.0}})}) {
    const json c = compare_output_runs(base, cand, {}, kBounds);
    EXPECT_EQ(c.at("verdict"), "INCORRECT") << cand.dump();
    EXPECT_EQ(c.at("reason"), "no outputs were compared") << cand.dump();
  }
}

}  // namespace
}  // namespace fk::e2e
