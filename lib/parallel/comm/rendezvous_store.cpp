#include "parallel/comm/rendezvous_store.h"

#include <unistd.h>

#include <chrono>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "parallel/comm/world.h"
#include "util/error.h"

namespace hftrain::parallel {
namespace {

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

class C10dKeyValue final : public KeyValueStore {
 public:
  explicit C10dKeyValue(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}
  void set(const std::string& key, const std::string& value) override {
    guard("set " + key, [&] { store_->set(key, std::vector<uint8_t>(value.begin(), value.end())); });
  }
  std::string get(const std::string& key) override {
    std::vector<uint8_t> v;
    guard("waiting for " + key, [&] { v = store_->get(key); });
    return std::string(v.begin(), v.end());
  }
  std::string try_get(const std::string& key) override {
    std::string out;
    guard("reading " + key, [&] {
      if (store_->check({key})) {
        auto v = store_->get(key);
        out.assign(v.begin(), v.end());
      }
    });
    return out;
  }
  int64_t add(const std::string& key, int64_t delta) override {
    int64_t out = 0;
    guard("adding to " + key, [&] { out = store_->add(key, delta); });
    return out;
  }

 private:
  template <class F>
  void guard(const std::string& what, F&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      throw util::DistributedError("rendezvous store: " + what + " failed: " + std::string(e.what()).substr(0, 300),
                                   "check that every rank was started and that rank 0 (or the launcher) is "
                                   "reachable at MASTER_ADDR:MASTER_PORT; distributed.startup_timeout bounds the wait");
    }
  }
  c10::intrusive_ptr<c10d::Store> store_;
};

class StoreBoard final : public StatusBoard {
 public:
  explicit StoreBoard(KeyValueStore* store) : store_(store) {}
  void publish(int rank, const std::string& status) override { store_->set("status/" + std::to_string(rank), status); }
  std::optional<std::string> read(int rank) override {
    std::string v = store_->try_get("status/" + std::to_string(rank));
    if (v.empty()) return std::nullopt;
    return v;
  }

 private:
  KeyValueStore* store_;
};

}  // namespace

c10::intrusive_ptr<c10d::Store> connect_store(const std::string& host, int port, bool server, double timeout_s) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(port);
  o.isServer = server;
  o.waitWorkers = false;
  o.timeout = to_ms(timeout_s);
  try {
    return c10::make_intrusive<c10d::TCPStore>(host, o);
  } catch (const std::exception& e) {
    throw util::DistributedError(std::string(server ? "cannot host" : "cannot reach") + " the rendezvous store at " +
                                     host + ":" + std::to_string(port) + ": " + std::string(e.what()).substr(0, 300),
                                 server ? "pick a free MASTER_PORT (or --master-port)"
                                        : "check MASTER_ADDR/MASTER_PORT and that rank 0 (or the launcher) runs");
  }
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

int store_port(const c10d::Store& store) {
  return static_cast<const c10d::TCPStore&>(store).getPort();
}

std::unique_ptr<KeyValueStore> store_key_values(c10::intrusive_ptr<c10d::Store> store) {
  return std::make_unique<C10dKeyValue>(std::move(store));
}

std::shared_ptr<StatusBoard> store_board(KeyValueStore* store) {
  return std::make_shared<StoreBoard>(store);
}

StoreHost::~StoreHost() = default;

std::unique_ptr<StoreHost> StoreHost::start(int port, double timeout_s) {
  std::unique_ptr<StoreHost> h(new StoreHost());
  h->impl_ = std::make_unique<StoreHandle>();
  h->impl_->store = connect_store("127.0.0.1", port, true, timeout_s);
  h->port_ = store_port(*h->impl_->store);
  return h;
}

}  // namespace hftrain::parallel
