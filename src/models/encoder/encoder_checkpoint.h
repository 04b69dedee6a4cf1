// The checkpoint of a BERT-family encoder: its safetensors (a file, an index or a folder
// holding them, safetensors::Checkpoint::open), or, for a folder with none, the
// pytorch_model.bin older BERT checkpoints ship (ColBERTv2's among them: torch.save's zip
// format, read without executing anything by TorchStateDict), converted in memory.
// A sharded pytorch_model-*.bin is a named error.
#pragma once
#include <filesystem>

#include "core/safetensors/safetensors.h"

namespace fk::models::encoder {

safetensors::Checkpoint open_encoder_checkpoint(const std::filesystem::path& path);

}  // namespace fk::models::encoder
