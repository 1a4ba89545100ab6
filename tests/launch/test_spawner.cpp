// The launcher's process handling with /bin/sh workers: exit codes, a failed rank stopping the
// rest, forwarded signals, the deadline once a worker has ended after a signal, and a second
// signal killing at once. Times are kept short through the grace options.
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <catch2/catch.hpp>

#include "launch/spawner.h"

using namespace hftrain;
using Catch::Matchers::Contains;

namespace {

// Workers run `sh -c SCRIPT`; $RANK tells them apart.
launch::SpawnOptions sh_workers(const std::string& script, int n = 2) {
  launch::SpawnOptions o;
  o.program = "/bin/sh";
  o.argv = {"sh", "-c", script};
  o.nproc_per_node = n;
  o.master_port = 1;  // nothing listens; the workers never connect
  o.kill_grace_seconds = 0.5;
  o.stop_grace_seconds = 0.5;
  return o;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Sends `sig` to this process `count` times, `delay_s` apart, from another thread.
std::thread signal_later(int sig, double delay_s, int count = 1) {
  return std::thread([=] {
    for (int i = 0; i < count; ++i) {
      std::this_thread::sleep_for(std::chrono::duration<double>(delay_s));
      kill(getpid(), sig);
    }
  });
}

int open_descriptors() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

// A worker that ignores SIGTERM and runs until killed.
const char* kStubborn = "trap '' TERM; while :; do sleep 0.05; done";

}  // namespace

TEST_CASE("spawner: workers that succeed give exit 0 and no failure", "[launch]") {
  const int fds = open_descriptors();
  const auto r = launch::run_workers(sh_workers("test \"$WORLD_SIZE\" = 3 && test \"$LOCAL_RANK\" = \"$RANK\"", 3));
  CHECK(r.exit_code == 0);
  CHECK(r.failure.empty());
  CHECK(open_descriptors() == fds);  // every pipe closed
}

TEST_CASE("spawner: a failed rank is named and stops the rest, SIGKILL for one that ignores SIGTERM",
          "[launch]") {
  const auto start = std::chrono::steady_clock::now();
  const auto r = launch::run_workers(
      sh_workers("if [ \"$RANK\" = 1 ]; then sleep 0.2; exit 3; fi; " + std::string(kStubborn)));
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.failure, Contains("rank 1 (pid") && Contains("exited with status 3; stopped the other workers"));
  CHECK(seconds_since(start) < 5);
}

TEST_CASE("spawner: after a forwarded SIGTERM, a worker that does not stop once another has is killed",
          "[launch]") {
  // Rank 0 stops on the signal the way a worker does after its checkpoint (exit 143); rank 1
  // ignores it, as one stuck in a collective with a departed peer would.
  std::thread sender = signal_later(SIGTERM, 0.3);
  const auto start = std::chrono::steady_clock::now();
  const auto r = launch::run_workers(
      sh_workers("if [ \"$RANK\" = 0 ]; then trap 'exit 143' TERM; while :; do sleep 0.05; done; fi; " +
                 std::string(kStubborn)));
  sender.join();
  CHECK(r.exit_code == 143);
  CHECK_THAT(r.failure, Contains("rank 1 did not stop within 0.5 s of rank 0 (pid") && Contains("killed"));
  CHECK(seconds_since(start) < 5);
}

TEST_CASE("spawner: a forwarded signal has no deadline while every worker runs", "[launch]") {
  // Both take 1.5 s to stop (a checkpoint save), well past stop_grace_seconds: nothing is killed.
  std::thread sender = signal_later(SIGTERM, 0.2);
  const auto r = launch::run_workers(sh_workers("trap 'sleep 1.5; exit 143' TERM; while :; do sleep 0.05; done"));
  sender.join();
  CHECK(r.exit_code == 143);
  CHECK(r.failure.empty());
}

TEST_CASE("spawner: a second signal kills the workers at once", "[launch]") {
  std::thread sender = signal_later(SIGTERM, 0.3, 2);
  const auto start = std::chrono::steady_clock::now();
  const auto r = launch::run_workers(sh_workers(kStubborn));
  sender.join();
  CHECK(r.exit_code == 128 + SIGKILL);
  CHECK(seconds_since(start) < 5);
}

TEST_CASE("spawner: a process outside a distributed job gets no launcher variables and no prefix", "[launch]") {
  launch::SpawnOptions o =
      sh_workers("test -z \"$RANK$WORLD_SIZE$HFTRAIN_LAUNCHER\" && test \"$EXTRA\" = 7 && exit 5", 1);
  o.distributed = false;
  o.env = {{"EXTRA", "7"}};
  const auto r = launch::run_workers(o);
  CHECK(r.exit_code == 5);  // reached the exit: the variables were as expected
  CHECK(r.failure == "the process (pid " + r.failure.substr(17, r.failure.find(')') - 17) + ") exited with status 5");
  CHECK_FALSE(r.stop_requested);
  o.nproc_per_node = 2;
  CHECK_THROWS_AS(launch::run_workers(o), std::invalid_argument);
}

TEST_CASE("spawner: a forwarded signal is reported as a stop request", "[launch]") {
  std::thread sender = signal_later(SIGINT, 0.2);
  const auto r = launch::run_workers(sh_workers("trap 'exit 130' INT; while :; do sleep 0.05; done"));
  sender.join();
  CHECK(r.exit_code == 130);
  CHECK(r.stop_requested);
}
