// DropoutDraw: which masks a layer's dropout draws in one forward. Nothing is dropped
// outside training; in training each row's mask comes from Philox keyed by `key` and the
// row's counter (ops::DropoutRows), so it depends on what the row is, never on the batch
// layout, the thread count or the device.
#pragma once

#include "depbloom/backend/ops.h"
#include "depbloom/core/philox.h"

namespace depbloom::model {

struct DropoutDraw {
  bool training = false;
  RngKey key;
  ops::DropoutRows rows;
};

}  // namespace depbloom::model
