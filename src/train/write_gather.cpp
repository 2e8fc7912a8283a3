// The node-state exchange's collectives (write_gather.h).
#include "depbloom/train/write_gather.h"

namespace depbloom::train {

void WriteGather::gather_sizes(dist::Communicator& comm, const double* own, int64_t fields,
                               SizesOf sizes_of) {
  const int ranks = comm.size();
  fields_ = fields;
  mine_.assign(own, own + fields);  // the collective's send buffer; capacity is kept
  headers_.resize(static_cast<size_t>(fields_ * ranks));
  comm.all_gather(Tensor::wrap(mine_.data(), Shape(fields_)),
                  Tensor::wrap(headers_.data(), Shape(fields_ * ranks)));
  mem_counts_.assign(static_cast<size_t>(ranks), 0);
  id_counts_.assign(static_cast<size_t>(ranks), 0);
  mail_counts_.assign(static_cast<size_t>(ranks), 0);
  totals_ = SendSizes{};
  for (int r = 0; r < ranks; ++r) {
    const SendSizes s = sizes_of(header(r));
    const auto i = static_cast<size_t>(r);
    mem_counts_[i] = s.mem_rows, id_counts_[i] = s.mail_ids, mail_counts_[i] = s.mails;
    totals_.mem_rows += s.mem_rows, totals_.mail_ids += s.mail_ids, totals_.mails += s.mails;
  }
}

const std::vector<int64_t>& WriteGather::scaled(const std::vector<int64_t>& counts, int64_t by) {
  scaled_.assign(counts.begin(), counts.end());
  for (auto& x : scaled_) x *= by;
  return scaled_;
}

const ExchangedRows& WriteGather::gather_rows(dist::Communicator& comm, const ExchangedRows& mine,
                                              const StateLayout& layout, Arena& arena) {
  const auto me = static_cast<size_t>(comm.rank());
  const int64_t n_mem = mem_counts_[me], n_ids = id_counts_[me], n_mail = mail_counts_[me];
  const int64_t d_mem = layout.d_mem, d_mail = layout.d_mail;
  const DType dtype = layout.dtype;
  // A rank with nothing to send may hold no tensors at all; the collective still needs one.
  const Tensor none = arena.alloc(dtype, Shape(0));
  auto or_empty = [&](const Tensor& t) { return t.defined() && t.numel() > 0 ? t : none; };
  int32_t no_id = 0;  // a valid pointer for an empty send
  auto ids = [&](const int32_t* p, int64_t n) {
    return Tensor::wrap(n > 0 ? const_cast<int32_t*>(p) : &no_id, Shape(n));
  };
  mem_node_.resize(static_cast<size_t>(totals_.mem_rows));
  mail_id_.resize(static_cast<size_t>(totals_.mail_ids));
  all_.mem_node = mem_node_.data();
  all_.mail_id = mail_id_.data();
  all_.mem_rows = arena.alloc(dtype, Shape(totals_.mem_rows, d_mem));
  all_.mem_time = arena.alloc(dtype, Shape(totals_.mem_rows));
  all_.mail_rows = arena.alloc(dtype, Shape(totals_.mails, d_mail));
  all_.mail_time = arena.alloc(dtype, Shape(totals_.mails));
  comm.all_gather_v(ids(mine.mem_node, n_mem),
                    Tensor::wrap(mem_node_.data(), Shape(totals_.mem_rows)), mem_counts_);
  comm.all_gather_v(or_empty(mine.mem_rows).reshape(Shape(n_mem * d_mem)),
                    all_.mem_rows.reshape(Shape(totals_.mem_rows * d_mem)),
                    scaled(mem_counts_, d_mem));
  comm.all_gather_v(or_empty(mine.mem_time), all_.mem_time, mem_counts_);
  comm.all_gather_v(ids(mine.mail_id, n_ids),
                    Tensor::wrap(mail_id_.data(), Shape(totals_.mail_ids)), id_counts_);
  comm.all_gather_v(or_empty(mine.mail_rows).reshape(Shape(n_mail * d_mail)),
                    all_.mail_rows.reshape(Shape(totals_.mails * d_mail)),
                    scaled(mail_counts_, d_mail));
  comm.all_gather_v(or_empty(mine.mail_time), all_.mail_time, mail_counts_);
  return all_;
}

ExchangedRows WriteGather::placeholder(const SendSizes& sizes, const StateLayout& layout,
                                       Arena& scratch) {
  ExchangedRows p;
  p.mem_node = scratch.alloc(DType::i32, Shape(sizes.mem_rows)).data<int32_t>();
  p.mail_id = scratch.alloc(DType::i32, Shape(sizes.mail_ids)).data<int32_t>();
  p.mem_rows = scratch.alloc(layout.dtype, Shape(sizes.mem_rows, layout.d_mem));
  p.mem_time = scratch.alloc(layout.dtype, Shape(sizes.mem_rows));
  p.mail_rows = scratch.alloc(layout.dtype, Shape(sizes.mails, layout.d_mail));
  p.mail_time = scratch.alloc(layout.dtype, Shape(sizes.mails));
  return p;
}

int64_t WriteGather::bytes(const StateLayout& layout) const {
  const auto width = static_cast<int64_t>(dtype_size(layout.dtype));
  return totals_.mem_rows * (4 + (layout.d_mem + 1) * width) + totals_.mail_ids * 4 +
         totals_.mails * (layout.d_mail + 1) * width;
}

}  // namespace depbloom::train
