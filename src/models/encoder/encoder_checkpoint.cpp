#include "models/encoder/encoder_checkpoint.h"

#include "fk/status.h"
#include "models/encoder/torch_state_dict.h"

namespace fk::models::encoder {

namespace fs = std::filesystem;

namespace {

bool has_safetensors(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 12 && (name.ends_with(".safetensors") || name.ends_with(".safetensors.index.json"))) return true;
  }
  return false;
}

}  // namespace

safetensors::Checkpoint open_encoder_checkpoint(const fs::path& path) {
  if (!fs::is_directory(path) || has_safetensors(path) || !fs::exists(path / "pytorch_model.bin")) {
    FK_CHECK(!fs::is_directory(path) || has_safetensors(path) || !fs::exists(path / "pytorch_model.bin.index.json"),
             path.string(), ": a sharded pytorch_model.bin is not read; convert the checkpoint to safetensors");
    return safetensors::Checkpoint::open(path);
  }
  const TorchStateDict state = TorchStateDict::open(path / "pytorch_model.bin");
  std::vector<Tensor> tensors;
  safetensors::NamedViews views;
  for (const std::string& name : state.names()) tensors.push_back(state.load(name));
  const std::vector<std::string> names = state.names();
  for (size_t i = 0; i < names.size(); ++i) views.push_back({names[i], tensors[i].view()});
  return safetensors::Checkpoint::from_file(
      safetensors::File::from_bytes(safetensors::serialize(views), (path / "pytorch_model.bin").string()));
}

}  // namespace fk::models::encoder
