// Helpers of the refinement tests: parameters copied between stores by name, and the
// recurrent updater written out (a GRU with a trainer's own parameters in a store of its
// own, applied one row at a time to mails built from a step's updated rows as the write-back
// builds them). Test code only.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "depbloom/core/arena.h"
#include "depbloom/model/memory_updater.h"
#include "depbloom/train/trainer.h"

namespace dbtraintest {

// Each f64 parameter of `to` whose name does not start with `skip_prefix` gets the value of
// `from`'s parameter of that name; false (with a failure per name) when `from` lacks one.
inline bool copy_by_name(const depbloom::model::ParameterStore& from,
                         depbloom::model::ParameterStore& to, const std::string& skip_prefix = "") {
  bool all = true;
  for (const auto& e : to.entries()) {
    if (!skip_prefix.empty() && e.name.rfind(skip_prefix, 0) == 0) continue;
    const depbloom::model::ParamId id = from.find(e.name);
    EXPECT_TRUE(id.valid()) << e.name << " is not in the source store";
    if (!id.valid()) {
      all = false;
      continue;
    }
    std::copy_n(from.value(id).data<double>(), e.shape.numel(),
                to.values().data<double>() + e.offset);
  }
  return all;
}

class GruReference {
 public:
  // The trainer's "memory_updater.*" parameters copied into this store (trainer in f64).
  GruReference(depbloom::train::Trainer& trainer, int64_t edge_dim)
      : store_(depbloom::DType::f64, depbloom::Device::cpu()),
        d_(trainer.config().model.d_mem),
        gru_(store_, "memory_updater", depbloom::model::RecurrentCell::gru, 2 * d_ + edge_dim,
             trainer.config().model.d_mem_time, d_),
        arena_(depbloom::Device::cpu()) {
    store_.finalize();
    copy_by_name(trainer.parameters(), store_);
  }

  // The last step's updated row of plan memory row `row` (a pointer to d values).
  const double* row(const depbloom::train::Trainer& t, int32_t plan_row) const {
    return t.last_step().updated.data<double>() +
           static_cast<int64_t>(t.last_step().staged.input_row(plan_row)) * d_;
  }

  // Mail `mail` of the last step (2 p + role): [s_self || s_other || edge features].
  std::vector<double> mail(const depbloom::train::Trainer& t,
                           const depbloom::data::EventStream& stream, size_t mail) const {
    const auto& w = t.last_plan().writes;
    std::vector<double> m(row(t, w.mail_row[mail]), row(t, w.mail_row[mail]) + d_);
    m.insert(m.end(), row(t, w.mail_other[mail]), row(t, w.mail_other[mail]) + d_);
    const auto eid = static_cast<size_t>(w.mail_event[mail]);
    for (int64_t f = 0; f < stream.edge_dim; ++f)
      m.push_back(stream.edge_feat[eid * static_cast<size_t>(stream.edge_dim) + f]);
    return m;
  }

  // h = GRU(h, mail read at dt), in place.
  void apply(std::vector<double>& h, std::vector<double>& mail, double dt) {
    using depbloom::Shape;
    using depbloom::Tensor;
    arena_.reset();
    depbloom::model::MemoryUpdaterContext ctx;
    Tensor out = arena_.alloc(depbloom::DType::f64, Shape(1, d_));
    gru_.forward(out, ctx, Tensor::wrap(mail.data(), Shape(1, static_cast<int64_t>(mail.size()))),
                 Tensor::wrap(&dt, Shape(1)), Tensor::wrap(h.data(), Shape(1, d_)), arena_);
    std::copy_n(out.data<double>(), d_, h.data());
  }

 private:
  depbloom::model::ParameterStore store_;
  int64_t d_;
  depbloom::model::RecurrentMemoryUpdater gru_;
  depbloom::Arena arena_;
};

}  // namespace dbtraintest
