// Recurrent memory updaters: the node memory is the hidden state of a GRU cell (TGN) or a
// tanh RNN cell (JODIE) whose input is the mail concatenated with the time encoding of the
// mail's age: in = [mail || cos((t - mail_ts) w + b)]. Parameter gradients accumulate;
// the gradients of the mail and of the previous memory overwrite (and are optional).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "depbloom/core/arena.h"
#include "depbloom/model/copy_messages.h"
#include "depbloom/model/parameters.h"
#include "depbloom/model/time_encoder.h"

namespace depbloom::model {

enum class RecurrentCell { gru, rnn };

struct MemoryUpdaterContext {
  TimeEncoderContext time;
  Tensor input;   // [B, d_mail + d_time] = [mail || time encoding] (forward only)
  Tensor memory;  // [B, H], the previous memory (caller keeps it alive)
  Tensor gates;   // [B, 4H] GRU gates (r, z, n, gh_n); unused for the RNN
  Tensor h_new;   // [B, H], the output (RNN backward reads it)
  // [B, G*H] the cell's inputs, dead after it: the backward writes d_gx and d_gh over them.
  Tensor gx, gh;
  // forward_copies only: the copies' messages, time encodings and base rows, W_ih's (mail,
  // time) blocks.
  CopyMessages msgs, times, bases;
  std::array<Tensor, 2> w_ih;
};

class RecurrentMemoryUpdater {
 public:
  // Declares "<name>.weight_ih" [G*H, d_mail + d_time], "<name>.bias_ih" [G*H],
  // "<name>.weight_hh" [G*H, H], "<name>.bias_hh" [G*H] (G = 3 for the GRU, 1 for the
  // RNN; U(+-1/sqrt(H)) as in torch) and the time encoder "<name>.time.{w,b}".
  RecurrentMemoryUpdater(ParameterStore& store, const std::string& name, RecurrentCell cell,
                         int64_t mail_dim, int64_t time_dim, int64_t memory_dim);

  // h_new [B, H]: the updated memory of B nodes from mail [B, d_mail], the mail's age
  // mail_dt [B] (t - mail_ts) and the previous memory [B, H]. Scratch from `arena`.
  void forward(const Tensor& h_new, MemoryUpdaterContext& ctx, const Tensor& mail,
               const Tensor& mail_dt, const Tensor& memory, Arena& arena) const;
  // d_mail [B, d_mail], d_memory [B, H]: optional (Tensor{} to skip), overwrite; d_memory
  // is the full gradient (direct path plus through W_hh). dh_new [B, H].
  void backward(const Tensor& d_mail, const Tensor& d_memory, const Tensor& dh_new,
                const MemoryUpdaterContext& ctx, Arena& arena) const;
  // The same for B refined copies whose mails are CopyMessages (msgs.copies == B): the mail
  // reaches the cell through W_ih's mail columns once per distinct message, and the memory
  // through W_hh once per distinct base row (bases: one term per copy over [B', H], the
  // distinct rows of memory [B, H]), and the mails' ages, each distinct age encoded and
  // read through W_ih's time columns once. Equal to forward on the spread mails and ages, up
  // to rounding.
  void forward_copies(const Tensor& h_new, MemoryUpdaterContext& ctx, const CopyMessages& msgs,
                      const CopyTimes& mail_dt, const Tensor& memory, const CopyMessages& bases,
                      Arena& arena) const;
  // d_distinct [D, d_mail] and d_bases [B', H] (the W_hh path) accumulate; d_memory [B, H]
  // (the direct path, GRU; zero for the RNN) overwrites; d_distinct and d_memory optional.
  void backward_copies(const Tensor& d_distinct, const Tensor& d_memory, const Tensor& d_bases,
                       const Tensor& dh_new, const MemoryUpdaterContext& ctx, Arena& arena) const;

  RecurrentCell cell() const { return cell_; }
  int64_t memory_dim() const { return hidden_; }
  int64_t mail_dim() const { return mail_dim_; }

 private:
  int64_t gate_rows() const { return (cell_ == RecurrentCell::gru ? 3 : 1) * hidden_; }
  // h_new from gx and gh [B, G*H] (biases included) and memory: the cell.
  void cell_forward(const Tensor& h_new, MemoryUpdaterContext& ctx, const Tensor& gx,
                    const Tensor& gh, const Tensor& memory, Arena& arena) const;
  // Returns (d_gx, d_gh) [B, G*H] (one tensor for the RNN); the GRU's direct path of the
  // memory goes into dh_direct (overwrite; Tensor{}: scratch). The biases' gradients and the
  // W_hh and W_ih GEMMs are the caller's (the copies sum the biases' over distinct rows).
  std::array<Tensor, 2> cell_backward(const Tensor& dh_direct, const Tensor& dh_new,
                                      const MemoryUpdaterContext& ctx, Arena& arena) const;

  const ParameterStore* store_;
  RecurrentCell cell_;
  int64_t mail_dim_, hidden_;
  TimeEncoder time_;
  ParamId weight_ih_, bias_ih_, weight_hh_, bias_hh_;
};

}  // namespace depbloom::model
