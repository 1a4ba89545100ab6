#include "data/tokenize_documents.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "data/segment_encoding.h"

namespace hftrain::data {
namespace {

// Documents travel to the workers in batches of about this much text: small enough that the
// reader (JSON parsing, UTF-8 checks) and the encoders overlap and the last batch adds little
// tail, large enough that the hand-over costs nothing next to encoding it.
constexpr uint64_t kBatchBytes = uint64_t{1} << 20;
constexpr size_t kBatchDocuments = 512;
// Batches read ahead per worker: bounds the text and ids held at once.
constexpr size_t kAheadPerWorker = 4;

struct Batch {
  std::vector<Document> docs;
  std::vector<EncodedSegments> encoded;
  std::exception_ptr error;
  bool taken = false;
  bool done = false;
};

// Reads on the calling thread, encodes on `threads` workers, appends in reading order.
class CorpusBuilder {
 public:
  CorpusBuilder(const tokenizer::Tokenizer& tokenizer, int threads)
      : tokenizer_(tokenizer), threads_(std::max(1, threads)), eot_(static_cast<uint32_t>(tokenizer.eot_id())) {
    current_ = std::make_unique<Batch>();
    if (threads_ > 1) {
      for (int w = 0; w < threads_; ++w) workers_.emplace_back([this] { work(); });
    }
  }

  ~CorpusBuilder() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_workers_.notify_all();
    for (auto& t : workers_) t.join();
  }

  CorpusBuilder(const CorpusBuilder&) = delete;
  CorpusBuilder& operator=(const CorpusBuilder&) = delete;

  void add(Document&& doc) {
    for (const auto& segment : doc.segments) current_bytes_ += segment.text.size();
    current_->docs.push_back(std::move(doc));
    if (current_bytes_ >= kBatchBytes || current_->docs.size() >= kBatchDocuments) submit();
  }

  std::shared_ptr<TokenCorpus> finish(std::string name) {
    submit();
    {
      std::unique_lock<std::mutex> lock(mutex_);
      batch_done_.wait(lock,
                       [&] { return std::all_of(queue_.begin(), queue_.end(), [](auto& b) { return b->done; }); });
    }
    drain();
    if (!any_masked_) mask_.clear();
    return std::make_shared<TokenCorpus>(std::move(tokens_), std::move(mask_), std::move(starts_), std::move(name));
  }

  uint64_t text_bytes() const { return text_bytes_; }
  int threads() const { return threads_; }

 private:
  void encode(Batch& batch) const {
    batch.encoded.resize(batch.docs.size());
    for (size_t d = 0; d < batch.docs.size(); ++d) batch.encoded[d] = encode_segments(tokenizer_, batch.docs[d]);
  }

  void submit() {
    if (current_->docs.empty()) return;
    text_bytes_ += current_bytes_;
    current_bytes_ = 0;
    auto batch = std::move(current_);
    current_ = std::make_unique<Batch>();
    if (workers_.empty()) {
      encode(*batch);
      append(*batch);
      return;
    }
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // Read ahead no further than the bound: wait for the oldest batch, then append it.
      batch_done_.wait(lock, [&] {
        return queue_.size() < kAheadPerWorker * workers_.size() || queue_.front()->done;
      });
      queue_.push_back(std::move(batch));
    }
    wake_workers_.notify_one();
    drain();
  }

  // Appends the finished batches at the front of the queue, in reading order. The first error of
  // a file reaches the caller, the same one as on one thread.
  void drain() {
    for (;;) {
      std::unique_ptr<Batch> front;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (queue_.empty() || !queue_.front()->done) return;
        front = std::move(queue_.front());
        queue_.pop_front();
      }
      if (front->error) std::rethrow_exception(front->error);
      append(*front);
    }
  }

  void work() {
    for (;;) {
      Batch* batch = nullptr;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_workers_.wait(lock, [&] { return stopping_ || next_untaken() != nullptr; });
        if (stopping_) return;
        batch = next_untaken();
        batch->taken = true;
      }
      try {
        encode(*batch);
      } catch (...) {
        batch->error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        batch->done = true;
      }
      batch_done_.notify_all();
    }
  }

  Batch* next_untaken() {
    for (auto& b : queue_) {
      if (!b->taken) return b.get();
    }
    return nullptr;
  }

  void append(const Batch& batch) {
    for (size_t d = 0; d < batch.docs.size(); ++d) {
      const EncodedSegments& e = batch.encoded[d];
      tokens_.insert(tokens_.end(), e.ids.begin(), e.ids.end());
      uint32_t begin = 0;
      for (size_t s = 0; s < e.segment_ends.size(); ++s) {
        const bool train = batch.docs[d].segments[s].train;
        const uint32_t end = e.segment_ends[s];
        mask_.insert(mask_.end(), end - begin, train ? 1 : 0);
        any_masked_ = any_masked_ || (!train && end > begin);
        begin = end;
      }
      // The end-of-text token is a target: the model learns where a document ends.
      tokens_.push_back(eot_);
      mask_.push_back(1);
      starts_.push_back(tokens_.size());
    }
  }

  const tokenizer::Tokenizer& tokenizer_;
  const int threads_;
  const uint32_t eot_;

  std::unique_ptr<Batch> current_;  // being read
  uint64_t current_bytes_ = 0;

  std::mutex mutex_;
  std::condition_variable wake_workers_;
  std::condition_variable batch_done_;
  std::deque<std::unique_ptr<Batch>> queue_;  // submitted, in reading order
  bool stopping_ = false;
  std::vector<std::thread> workers_;

  std::vector<uint32_t> tokens_;
  std::vector<uint8_t> mask_;
  std::vector<uint64_t> starts_{0};
  bool any_masked_ = false;
  uint64_t text_bytes_ = 0;
};

}  // namespace

std::shared_ptr<TokenCorpus> tokenize_files(const std::vector<std::pair<SourceSpec, std::filesystem::path>>& files,
                                            const ChatTemplate& chat, const tokenizer::Tokenizer& tokenizer,
                                            int threads, TokenizeStats* stats) {
  const auto start = std::chrono::steady_clock::now();
  CorpusBuilder builder(tokenizer, threads);
  for (const auto& [spec, file] : files) {
    read_documents(spec, file, chat, [&](Document&& doc) { builder.add(std::move(doc)); });
  }
  auto corpus = builder.finish(files.empty() ? "" : files.front().second.string());
  if (stats != nullptr) {
    stats->text_bytes = builder.text_bytes();
    stats->threads = builder.threads();
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return corpus;
}

}  // namespace hftrain::data
