// StepWriter: urgent writes on the calling thread, deferred ones on one side thread with a
// single pending job (a step's deferred writes), handed over under a mutex.
#include "depbloom/train/pipeline.h"

#include <omp.h>

#include <algorithm>

#include "depbloom/backend/op_counts.h"
#include "depbloom/core/timer.h"

namespace depbloom::train {

StepWriter::StepWriter(int64_t num_nodes, bool side_thread) : side_(side_thread) {
  if (!side_) return;
  mark_.assign(static_cast<size_t>(num_nodes), 0);
  marked_.reserve(static_cast<size_t>(num_nodes));
  thread_ = std::thread([this] { side_loop(); });
}

StepWriter::~StepWriter() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void StepWriter::mark(const int32_t* nodes, int64_t n) {
  if (!side_) return;
  for (int64_t i = 0; i < n; ++i) {
    uint8_t& m = mark_[static_cast<size_t>(nodes[i])];
    if (m == 0) m = 1, marked_.push_back(nodes[i]);
  }
}

void StepWriter::clear_marks() {
  flush();  // the side thread reads the marks of the apply it runs
  for (const int32_t v : marked_) mark_[static_cast<size_t>(v)] = 0;
  marked_.clear();
}

void StepWriter::apply(const model::WriteSet& writes, model::NodeState& state, Arena& arena) {
  flush();
  std::function<void()> after = std::move(after_);
  after_ = nullptr;  // for this apply only
  if (mode_ != Mode::split) {
    const int64_t rows = state.apply(writes, model::WriteFilter{}, arena);
    (mode_ == Mode::sync ? counts_.sync_rows : counts_.urgent_rows) += rows;
    return;
  }
  counts_.urgent_rows += state.apply(writes, model::WriteFilter{mark_.data(), 1}, arena);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = writes;
    job_state_ = &state;
    job_after_ = std::move(after);
    pending_ = true;
  }
  wake_.notify_one();
}

void StepWriter::flush() {
  if (!side_) return;
  Stopwatch watch;
  std::unique_lock<std::mutex> lock(mutex_);
  if (!pending_ && job_state_ == nullptr) return;
  done_.wait(lock, [this] { return !pending_; });
  const double wait = watch.seconds();
  counts_.side_wait += wait;
  job_state_ = nullptr;
  counts_.deferred_rows += job_rows_;
  counts_.deferred_applies += 1;
  counts_.prefetched_plans += job_after_ != nullptr ? 1 : 0;
  counts_.side_busy += job_apply_s_ + job_after_s_;
  const double on_plan = std::min(wait, job_after_s_);
  counts_.apply_busy += job_apply_s_;
  counts_.apply_hidden += job_apply_s_ - std::min(wait - on_plan, job_apply_s_);
  counts_.prefetch_busy += job_after_s_;
  counts_.prefetch_hidden += job_after_s_ - on_plan;
  if (job_error_) {
    std::exception_ptr error = job_error_;
    job_error_ = nullptr;
    std::rethrow_exception(error);
  }
}

// One OpenMP thread here: the main thread's team keeps the cores (run.threads counts it only).
// Its ops count as side work (backend::OpLane): a serial or GPU step does them inline.
void StepWriter::side_loop() {
  omp_set_num_threads(1);
  backend::set_thread_op_lane(backend::OpLane::side);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return pending_ || stop_; });
    if (stop_) return;
    lock.unlock();
    Stopwatch watch;
    int64_t rows = 0;
    double apply_s = 0;
    std::exception_ptr error;
    try {
      side_arena_.reset();
      rows = job_state_->apply(job_, model::WriteFilter{mark_.data(), 0}, side_arena_);
      apply_s = watch.seconds();
      if (job_after_) job_after_();
    } catch (...) {
      error = std::current_exception();
    }
    const double after_s = watch.seconds() - apply_s;
    lock.lock();
    job_rows_ = rows, job_apply_s_ = apply_s, job_after_s_ = after_s, job_error_ = error;
    pending_ = false;
    done_.notify_one();
  }
}

}  // namespace depbloom::train
