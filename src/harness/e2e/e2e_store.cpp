#include "harness/e2e/e2e_store.h"

#include <algorithm>

#include "harness/device/device_info.h"
#include "fk/status.h"

namespace fk::e2e {

using nlohmann::json;

namespace {

constexpr const char* kColumns =
    "id, batch, created, model, category, workload, backend, candidates, verdict, reason, throughput_speedup,"
    " latency_speedup, exact_match_rate, first_divergence, max_logit_err, kl, report, variants";

E2eRecord read_row(bench::SqlStatement& s) {
  E2eRecord r;
  r.id = s.integer(0);
  r.batch = s.text(1);
  r.created = s.text(2);
  r.model = s.text(3);
  r.category = s.text(4);
  r.workload = s.text(5);
  r.backend = s.text(6);
  const json cands = json::parse(s.text(7), nullptr, /*allow_exceptions=*/false);
  if (cands.is_array())
    for (const json& c : cands) r.candidates.push_back({c.value("op", ""), c.value("level", "")});
  r.verdict = s.text(8);
  r.reason = s.text(9);
  r.throughput_speedup = s.optional_real(10);
  r.latency_speedup = s.optional_real(11);
  r.exact_match_rate = s.optional_real(12);
  r.first_divergence = s.optional_integer(13);
  r.max_logit_err = s.optional_real(14);
  r.kl = s.optional_real(15);
  r.report = json::parse(s.text(16), nullptr, /*allow_exceptions=*/false);
  r.variants = s.text(17);  // NULL in rows stored before the column existed: ""
  return r;
}

template <typename T>
std::optional<T> optional_at(const json& j, const char* a, const char* b) {
  if (!j.contains(a) || !j[a].contains(b) || j[a][b].is_null()) return std::nullopt;
  return j[a][b].get<T>();
}

template <typename T>
json or_null(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

}  // namespace

std::string E2eRecord::candidate_set() const {
  std::string s;
  for (const auto& c : candidates) s += (s.empty() ? "" : "+") + c.op;
  return s;
}

E2eRecord record_of_report(const json& report) {
  for (const char* field : {"model", "category", "workload", "candidates", "verdict"})
    FK_CHECK(report.contains(field), "e2e report: no '", field, "' field");
  E2eRecord r;
  r.model = report["model"].get<std::string>();
  r.category = report["category"].get<std::string>();
  r.workload = report["workload"].get<std::string>();
  r.backend = report.value("backend", "");
  r.variants = report.value("variants", "");
  for (const json& c : report["candidates"]) r.candidates.push_back({c.at("op").get<std::string>(), c.value("level", "")});
  std::sort(r.candidates.begin(), r.candidates.end(), [](const auto& a, const auto& b) { return a.op < b.op; });
  r.verdict = report["verdict"].get<std::string>();
  r.reason = report.value("reason", "");
  const json cmp = report.value("comparison", json::object());
  r.throughput_speedup = optional_at<double>(cmp, "speedup", "throughput");
  r.latency_speedup = optional_at<double>(cmp, "speedup", "latency");
  r.exact_match_rate = optional_at<double>(cmp, "token_agreement", "exact_match_rate");
  r.first_divergence = optional_at<int64_t>(cmp, "token_agreement", "first_divergence_min");
  r.max_logit_err = optional_at<double>(cmp, "teacher_forced", "max_rel_err");
  r.kl = optional_at<double>(cmp, "teacher_forced", "mean_kl");
  r.report = report;
  return r;
}

json to_json(const E2eRecord& r, bool with_report) {
  json cands = json::array();
  for (const auto& c : r.candidates) cands.push_back({{"op", c.op}, {"level", c.level}});
  json j = {{"id", r.id},
            {"batch", r.batch},
            {"created", r.created},
            {"model", r.model},
            {"category", r.category},
            {"workload", r.workload},
            {"backend", r.backend},
            {"variants", r.variants},
            {"candidates", cands},
            {"candidate_set", r.candidate_set()},
            {"verdict", r.verdict},
            {"reason", r.reason},
            {"throughput_speedup", or_null(r.throughput_speedup)},
            {"latency_speedup", or_null(r.latency_speedup)},
            {"exact_match_rate", or_null(r.exact_match_rate)},
            {"first_divergence", or_null(r.first_divergence)},
            {"max_logit_err", or_null(r.max_logit_err)},
            {"kl", or_null(r.kl)}};
  if (with_report) j["report"] = r.report;
  return j;
}

E2eStore::E2eStore(const std::filesystem::path& path) : db_(path) {
  // A table of its own: the op-level `runs` table (and every database made before this one
  // existed) stays exactly as it was.
  db_.exec(
      "CREATE TABLE IF NOT EXISTS e2e_runs ("
      " id INTEGER PRIMARY KEY AUTOINCREMENT, batch TEXT NOT NULL, created TEXT NOT NULL, model TEXT NOT NULL,"
      " category TEXT NOT NULL, workload TEXT NOT NULL, backend TEXT, candidate_set TEXT NOT NULL,"
      " candidates TEXT NOT NULL, verdict TEXT NOT NULL, reason TEXT, throughput_speedup REAL,"
      " latency_speedup REAL, exact_match_rate REAL, first_divergence INTEGER, max_logit_err REAL, kl REAL,"
      " report TEXT NOT NULL);"
      "CREATE INDEX IF NOT EXISTS e2e_runs_model ON e2e_runs(model);"
      "CREATE INDEX IF NOT EXISTS e2e_runs_batch ON e2e_runs(batch);");
  db_.add_column_if_missing("e2e_runs", "variants", "TEXT");
}

int64_t E2eStore::add(const std::string& batch, const E2eRecord& r) {
  bench::SqlStatement s(db_,
                        "INSERT INTO e2e_runs (batch, created, model, category, workload, backend, candidate_set,"
                        " candidates, verdict, reason, throughput_speedup, latency_speedup, exact_match_rate,"
                        " first_divergence, max_logit_err, kl, report, variants)"
                        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  s.bind(1, batch);
  s.bind(2, bench::utc_timestamp());
  s.bind(3, r.model);
  s.bind(4, r.category);
  s.bind(5, r.workload);
  s.bind(6, r.backend);
  s.bind(7, r.candidate_set());
  s.bind(8, to_json(r)["candidates"].dump());
  s.bind(9, r.verdict);
  s.bind(10, r.reason);
  s.bind(11, r.throughput_speedup);
  s.bind(12, r.latency_speedup);
  s.bind(13, r.exact_match_rate);
  s.bind(14, r.first_divergence);
  s.bind(15, r.max_logit_err);
  s.bind(16, r.kl);
  s.bind(17, r.report.dump());
  s.bind(18, r.variants);
  s.step();
  return db_.last_insert_id();
}

std::vector<E2eRecord> E2eStore::select(const std::string& where, const std::string& value) {
  bench::SqlStatement s(db_, concat("SELECT ", kColumns, " FROM e2e_runs", where, " ORDER BY id"));
  if (!where.empty()) s.bind(1, value);
  std::vector<E2eRecord> out;
  while (s.step()) out.push_back(read_row(s));
  return out;
}

std::vector<E2eRecord> E2eStore::list(const std::string& model) {
  return model.empty() ? select("", "") : select(" WHERE model = ?", model);
}

std::vector<E2eRecord> E2eStore::batch(const std::string& batch_id) { return select(" WHERE batch = ?", batch_id); }

std::vector<std::string> E2eStore::models() {
  bench::SqlStatement s(db_, "SELECT DISTINCT model FROM e2e_runs ORDER BY model");
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0));
  return out;
}

}  // namespace fk::e2e
