// The step input every vision model of the Batch pattern takes: "images" [N, S, S, 3], a
// contiguous tensor of the model dtype on its device, 1 <= N <= max_seqs. Found and checked
// here once for them all; errors name the model.
#pragma once
#include <cstdint>
#include <string_view>

#include "fk/status.h"
#include "models/model.h"

namespace fk::models::vision {

inline TensorView images_input(const StepInputs& in, int64_t size, const LoadOptions& o, std::string_view model) {
  TensorView images{};
  bool found = false;
  for (const auto& [name, v] : in.tensors)
    if (name == "images") images = v, found = true;
  FK_CHECK(found, model, ": step input 'images' is missing");
  FK_CHECK(images.rank == 4 && images.shape[1] == size && images.shape[2] == size && images.shape[3] == 3 &&
               images.dtype == o.dtype && images.is_contiguous(),
           model, ": 'images' must be a contiguous ", dtype_name(o.dtype), "[N, ", size, ", ", size,
           ", 3] (this model takes ", size, " x ", size, " images), got ", describe(images));
  FK_CHECK(images.shape[0] >= 1 && images.shape[0] <= o.max_seqs, model, ": ", images.shape[0],
           " images; the model was loaded for 1 to ", o.max_seqs, " (max_seqs)");
  FK_CHECK(images.device == o.device, model, ": 'images' must be on the model's device");
  return images;
}

}  // namespace fk::models::vision
