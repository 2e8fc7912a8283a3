// Device profiles for the cost model (configs/devices/*.yaml, docs/cost_model.md): a name
// or a path to costmodel::DeviceProfile, in SI units. Keys are required unless
// docs/cost_model.md says optional; every unknown key is an error; errors name the file, the
// line and the key.
#pragma once

#include <string>

#include "depbloom/costmodel/cost_model.h"

namespace depbloom::cli {

// The profile `text` names: a path (it holds a '/' or ends in .yaml), or NAME for
// configs/devices/NAME.yaml beside the working directory or in the source tree.
costmodel::DeviceProfile load_device_profile(const std::string& name_or_path);
// The profile in `yaml` (source: what errors call it).
costmodel::DeviceProfile parse_device_profile(const std::string& yaml, const std::string& source);

}  // namespace depbloom::cli
