// `fk bench embed`: the Batch pattern's text encoders timed on batches of random sequences
// (cmd_bench_embed.cpp); added under `fk bench` by cmd_bench.cpp.
#pragma once
#include <CLI/CLI.hpp>

namespace fk::cli {

void add_bench_embed(CLI::App* bench);

}  // namespace fk::cli
