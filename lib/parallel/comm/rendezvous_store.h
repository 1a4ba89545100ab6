// The rendezvous store behind a World (internal to parallel/comm): c10d's TCPStore, connected or
// hosted, seen as hftrain's KeyValueStore and as the monitor's StatusBoard. Every failure of the
// store is a DistributedError that says what to check.
#pragma once

#include <memory>
#include <string>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "parallel/comm/kv_store.h"
#include "parallel/comm/monitor.h"

namespace hftrain::parallel {

// One c10d store, shared by the World's key-value view and its NCCL communicators.
struct StoreHandle {
  c10::intrusive_ptr<c10d::Store> store;
};

// A TCPStore at host:port, hosted (`server`, port 0: a free one) or reached as a client within
// timeout_s; DistributedError naming the address when neither works.
c10::intrusive_ptr<c10d::Store> connect_store(const std::string& host, int port, bool server, double timeout_s);
// The port a TCPStore listens on (the one picked for port 0).
int store_port(const c10d::Store& store);
// The store as hftrain's key-value interface; each failing call a DistributedError naming the key.
std::unique_ptr<KeyValueStore> store_key_values(c10::intrusive_ptr<c10d::Store> store);
// The monitor's status board over a key-value store ("status/<rank>").
std::shared_ptr<StatusBoard> store_board(KeyValueStore* store);
// This machine's host name (the address rank 0 announces under mpirun without MASTER_ADDR).
std::string host_name();

}  // namespace hftrain::parallel
