// The rendezvous store as the dist stage uses it: string keys and values, a blocking get. World
// setup implements it over c10d's TCPStore (hosted by the launcher, or by rank 0).
#pragma once

#include <cstdint>
#include <string>

namespace hftrain::parallel {

class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;
  virtual void set(const std::string& key, const std::string& value) = 0;
  // Waits until the key exists (up to the store's timeout, then throws util::DistributedError).
  virtual std::string get(const std::string& key) = 0;
  // Returns immediately; empty when the key does not exist.
  virtual std::string try_get(const std::string& key) = 0;
  // Atomically adds `delta` and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
};

}  // namespace hftrain::parallel
