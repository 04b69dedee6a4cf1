#include "harness/judge/task.h"

#include "harness/check/op_check.h"

#include <gtest/gtest.h>

namespace fk::bench {
namespace {

Json valid() {
  return Json::parse(R"({"id": "t", "op": "rms_norm", "level": "L1", "category": "dense-llm",
    "workloads": [{"shape": {"tokens": 2, "hidden": 8}, "calls": 3}]})");
}

std::string error_of(const Json& j) {
  try {
    parse_task(j, "x.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Task, ParsesAValidTask) {
  const Task t = parse_task(valid(), "x.json");
  EXPECT_EQ(t.id, "t");
  EXPECT_EQ(t.workloads.size(), 1u);
  EXPECT_EQ(t.workloads[0].calls, 3);
}

TEST(Task, ErrorsNameTheFileAndField) {
  Json j = valid();
  j.erase("op");
  EXPECT_NE(error_of(j).find("x.json: missing field 'op'"), std::string::npos) << error_of(j);
  j = valid();
  j["op"] = "no_such_op";
  EXPECT_NE(error_of(j).find("op 'no_such_op' is not in the registry"), std::string::npos);
  j = valid();
  j["level"] = "L9";
  EXPECT_NE(error_of(j).find("level must be L1..L4"), std::string::npos);
  j = valid();
  j["workloads"][0]["calls"] = -1;
  EXPECT_NE(error_of(j).find("workloads[0].calls must be a positive number"), std::string::npos);
  j = valid();
  j["typo"] = 1;
  EXPECT_NE(error_of(j).find("unknown field 'typo'"), std::string::npos);
  j = valid();
  j["forbid"] = {"magic"};
  EXPECT_NE(error_of(j).find("forbid: unknown library 'magic'"), std::string::npos);
}

TEST(Task, ShippedTasksLoad) {
  const auto tasks = load_tasks(std::filesystem::path(FK_SOURCE_DIR) / "tasks");
  EXPECT_FALSE(tasks.empty());
  for (const auto& t : tasks) EXPECT_TRUE(OpRegistry::global().has(t.op)) << t.id;
}

}  // namespace
}  // namespace fk::bench

namespace fk::bench {
namespace {

// Every shipped task's check-only shapes are valid workloads of its op, and the op's CPU
// implementation passes the oracle on them (they are small by design).
TEST(Task, ShippedCheckWorkloadsRunOnTheCpu) {
  for (const auto& t : load_tasks(std::filesystem::path(FK_SOURCE_DIR) / "tasks")) {
    for (const auto& shape : t.check_workloads) {
      const auto r = check_op(t.op_def(), shape, 7, DeviceType::cpu);
      EXPECT_TRUE(r.passed) << t.id << " " << shape.dump() << ": " << r.message;
    }
  }
}

}  // namespace
}  // namespace fk::bench
