// A fresh refiner is the identity (refine.fc2 starts at zero, model/memory_refiner.h), so
// its gradients and its effect are zero. Tests that check either give fc2 non-zero weights:
// amplitude * sin(frequency * i + phase) over each fc2 tensor, computed in the store's type.
#pragma once

#include <cmath>
#include <cstdint>

#include "depbloom/model/parameters.h"

namespace dbtraintest {

template <typename T>
void fill_refiner_fc2(depbloom::model::ParameterStore& store, T amplitude, T frequency, T phase) {
  T* x = store.values().data<T>();
  for (const auto& e : store.entries()) {
    if (e.name.rfind("refine.fc2.", 0) != 0) continue;
    for (int64_t i = 0; i < e.shape.numel(); ++i)
      x[e.offset + i] = amplitude * std::sin(frequency * static_cast<T>(i) + phase);
  }
}

inline void make_refiner_active(depbloom::model::ParameterStore& store, double amplitude = 0.4,
                                double frequency = 1.7, double phase = 0.3) {
  if (store.dtype() == depbloom::DType::f64)
    fill_refiner_fc2<double>(store, amplitude, frequency, phase);
  else
    fill_refiner_fc2<float>(store, static_cast<float>(amplitude), static_cast<float>(frequency),
                            static_cast<float>(phase));
}

}  // namespace dbtraintest
