// The candidate compile cache: a rebuilt library whenever a file the build reads changes,
// including headers a single-file candidate includes with quotes (and theirs), and a cache
// hit otherwise (an unrelated file beside the candidate does not count).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fk/status.h"
#include "harness/sandbox/compile.h"

namespace fk::bench {
namespace {

namespace fs = std::filesystem;

struct Scratch {
  fs::path dir = fs::temp_directory_path() / concat("fk-compile-test-", getpid());
  Scratch() { fs::create_directories(dir / "inc"); }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  void write(const std::string& name, const std::string& text) const { std::ofstream(dir / name) << text; }
};

TEST(CompileCandidate, AHeaderEditedBesideTheCandidateRebuildsIt) {
  Scratch s;
  s.write("candidate.cpp", "#include \"helper.h\"\nint candidate_value() { return helper_value(); }\n");
  s.write("helper.h", "#pragma once\n#include \"inc/deeper.h\"\ninline int helper_value() { return deeper_value() + 1; }\n");
  s.write("inc/deeper.h", "#pragma once\ninline int deeper_value() { return 1; }\n");
  CompileOptions o;
  o.cache_dir = s.dir / "cache";
  const CompileResult first = compile_candidate(s.dir / "candidate.cpp", o);
  ASSERT_TRUE(first.ok) << first.log;
  EXPECT_FALSE(first.cached);

  const CompileResult again = compile_candidate(s.dir / "candidate.cpp", o);
  EXPECT_TRUE(again.cached);
  EXPECT_EQ(again.source_hash, first.source_hash);

  s.write("unrelated.txt", "not part of the build");
  EXPECT_EQ(compile_candidate(s.dir / "candidate.cpp", o).source_hash, first.source_hash);

  s.write("helper.h", "#pragma once\n#include \"inc/deeper.h\"\ninline int helper_value() { return deeper_value() + 2; }\n");
  const CompileResult edited = compile_candidate(s.dir / "candidate.cpp", o);
  ASSERT_TRUE(edited.ok) << edited.log;
  EXPECT_FALSE(edited.cached);
  EXPECT_NE(edited.source_hash, first.source_hash);

  s.write("inc/deeper.h", "#pragma once\ninline int deeper_value() { return 5; }\n");
  const CompileResult nested = compile_candidate(s.dir / "candidate.cpp", o);
  ASSERT_TRUE(nested.ok) << nested.log;
  EXPECT_FALSE(nested.cached);
  EXPECT_NE(nested.source_hash, edited.source_hash);
}

TEST(CompileCandidate, AnIncludeCycleIsFollowedOnce) {
  Scratch s;
  s.write("candidate.cpp", "#include \"a.h\"\nint f() { return 0; }\n");
  s.write("a.h", "#pragma once\n#include \"b.h\"\n");
  s.write("b.h", "#pragma once\n#include \"a.h\"\n");
  CompileOptions o;
  o.cache_dir = s.dir / "cache";
  const CompileResult r = compile_candidate(s.dir / "candidate.cpp", o);
  EXPECT_TRUE(r.ok) << r.log;
}

}  // namespace
}  // namespace fk::bench
