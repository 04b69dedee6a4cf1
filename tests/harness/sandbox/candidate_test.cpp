// What the harness reads from a candidate's library before loading it: the symbols it
// imports (a task's forbid list) and the functions and kernels it defines (its own kernels,
// told apart from a library's in the kernel trace).
#include "harness/sandbox/candidate.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "fk/status.h"

namespace fk::bench {
namespace {

namespace fs = std::filesystem;

TEST(CandidateSymbols, KernelOfALaunchStubIsTheNameInItsLength) {
  // nvcc's stubs for the adversarial rms_norm kernel (one per dtype) and a plain kernel.
  EXPECT_EQ(kernel_of_launch_stub("_ZL59__device_stub__ZN3adv13rms_norm_rowsIfEEvPT_lPKS1_lS4_ifibjPflPKflS1_ifibj"),
            "_ZN3adv13rms_norm_rowsIfEEvPT_lPKS1_lS4_ifibj");
  EXPECT_EQ(kernel_of_launch_stub(
                "_ZL73__device_stub__ZN3adv13rms_norm_rowsI13__nv_bfloat16EEvPT_lPKS2_lS5_ifibjP13__nv_bfloat16lPKS_lS2_"
                "ifibj"),
            "_ZN3adv13rms_norm_rowsI13__nv_bfloat16EEvPT_lPKS2_lS5_ifibj");
  EXPECT_EQ(kernel_of_launch_stub("_Z21__device_stub__Z3fooii"), "_Z3fooi");
}

TEST(CandidateSymbols, OtherSymbolsAreNoLaunchStubs) {
  for (const char* s : {"_Z3fooi", "fk_op_rms_norm", "_ZL99__device_stub__Z3fooi", "_ZL14__device_stub_",
                        "_ZL__device_stub__Z3fooi", "_ZN3advL38__wrapper__device_stub_naive_gemm_bf16IfEEvRP", ""})
    EXPECT_EQ(kernel_of_launch_stub(s), "") << s;
}

// A library built here: what it imports, and what it defines (local functions and the
// kernel a stub-named function stands for included).
TEST(CandidateSymbols, ImportedAndDefinedSymbolsOfABuiltLibrary) {
  const fs::path dir = fs::temp_directory_path() / concat("fk-candidate-symbols-", getpid());
  fs::create_directories(dir);
  std::ofstream(dir / "lib.cpp") << "#include <cstdio>\n"
                                    "static void stub() __asm__(\"_ZL21__device_stub__Z3fooii\");\n"
                                    "static void stub() { std::puts(\"stub\"); }\n"
                                    "static int local_helper(int x) { return x * 3; }\n"
                                    "extern \"C\" int fk_visible(int x) { stub(); return local_helper(x); }\n";
  const std::string so = (dir / "lib.so").string();
  ASSERT_EQ(std::system(concat("c++ -O0 -shared -fPIC -o ", so, " ", (dir / "lib.cpp").string()).c_str()), 0);
  const std::vector<std::string> imports = imported_symbols(so);
  EXPECT_NE(std::find(imports.begin(), imports.end(), "puts"), imports.end());
  const std::vector<std::string> defined = defined_functions(so);
  EXPECT_TRUE(std::is_sorted(defined.begin(), defined.end()));
  for (const char* name : {"fk_visible", "_ZL21__device_stub__Z3fooii", "_Z3fooi"})
    EXPECT_TRUE(std::binary_search(defined.begin(), defined.end(), std::string(name))) << name;
  EXPECT_FALSE(std::binary_search(defined.begin(), defined.end(), std::string("puts")));
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST(CandidateSymbols, ANonElfFileIsANamedError) {
  const fs::path f = fs::temp_directory_path() / concat("fk-not-elf-", getpid(), ".so");
  std::ofstream(f) << "not a library";
  try {
    defined_functions(f);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a valid ELF file"), std::string::npos) << e.what();
  }
  fs::remove(f);
}

}  // namespace
}  // namespace fk::bench
