// Background workers that compute items 0, 1, 2, ... ahead of the consumer and hand them out in
// order. The loader produces batches with it so that the training loop never waits on data while
// the workers keep up. Item k is a pure function of k, so the result is identical to computing
// the items one by one on the caller's thread, whatever the number of workers.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace hftrain::data {

template <class T>
class Prefetcher {
 public:
  // Starts `workers` threads that keep up to `depth` items ready beyond the one being taken.
  Prefetcher(std::function<T(uint64_t)> produce, size_t depth, size_t workers)
      : produce_(std::move(produce)), depth_(depth < 1 ? 1 : depth) {
    for (size_t i = 0; i < (workers < 1 ? 1 : workers); ++i) threads_.emplace_back([this] { work(); });
  }

  ~Prefetcher() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // The next item in order; rethrows the exception its production threw.
  T take() {
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t k = next_take_;
    cv_.wait(lock, [&] { return ready_.count(k) != 0 || failed_.count(k) != 0; });
    ++next_take_;
    cv_.notify_all();
    if (auto f = failed_.find(k); f != failed_.end()) {
      std::exception_ptr error = f->second;
      failed_.erase(f);
      std::rethrow_exception(error);
    }
    auto it = ready_.find(k);
    T item = std::move(it->second);
    ready_.erase(it);
    return item;
  }

 private:
  void work() {
    while (true) {
      uint64_t k = 0;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || next_claim_ < next_take_ + depth_; });
        if (stop_) return;
        k = next_claim_++;
      }
      try {
        T item = produce_(k);
        std::lock_guard<std::mutex> lock(mutex_);
        ready_.emplace(k, std::move(item));
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        failed_.emplace(k, std::current_exception());
      }
      cv_.notify_all();
    }
  }

  std::function<T(uint64_t)> produce_;
  const uint64_t depth_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<uint64_t, T> ready_;
  std::map<uint64_t, std::exception_ptr> failed_;
  uint64_t next_claim_ = 0;
  uint64_t next_take_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;  // last: started after every other member exists
};

}  // namespace hftrain::data
