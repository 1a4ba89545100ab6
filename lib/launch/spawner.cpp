#include "launch/spawner.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "launch/launch_env.h"
#include "util/error.h"

extern char** environ;

namespace hftrain::launch {
namespace {

std::atomic<int> g_signal_count{0};
std::atomic<int> g_last_signal{0};

extern "C" void on_launcher_signal(int sig) {
  g_last_signal.store(sig);
  g_signal_count.fetch_add(1);
}

// Installs the launcher's handlers for the duration of run_workers().
class SignalScope {
 public:
  SignalScope() {
    g_signal_count = 0, g_last_signal = 0;
    struct sigaction sa{};
    sa.sa_handler = on_launcher_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~SignalScope() {
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &old_[i], nullptr);
  }

 private:
  static constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> old_{};
};

// One worker's output stream: bytes come in, whole lines go out with the rank prefix.
struct Stream {
  int fd = -1;
  FILE* out = nullptr;
  std::string pending;
  bool prefix = true;  // "[rank R] " before each line
};

struct Worker {
  int rank = 0;
  pid_t pid = -1;
  bool running = true;
  int status = 0;
  Stream streams[2];
};

void emit_line(const Stream& s, int rank, std::string_view line) {
  if (s.prefix) {
    std::fprintf(s.out, "[rank %d] %.*s\n", rank, static_cast<int>(line.size()), line.data());
  } else {
    std::fprintf(s.out, "%.*s\n", static_cast<int>(line.size()), line.data());
  }
  std::fflush(s.out);
}

// Reads what is there; returns false once the stream is closed.
bool pump(Stream& s, int rank) {
  char buffer[65536];
  for (;;) {
    const ssize_t n = read(s.fd, buffer, sizeof buffer);
    if (n > 0) {
      s.pending.append(buffer, static_cast<size_t>(n));
      size_t start = 0, nl;
      while ((nl = s.pending.find('\n', start)) != std::string::npos) {
        emit_line(s, rank, std::string_view(s.pending).substr(start, nl - start));
        start = nl + 1;
      }
      s.pending.erase(0, start);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (!s.pending.empty()) emit_line(s, rank, s.pending);  // a last line without newline
    s.pending.clear();
    close(s.fd);
    s.fd = -1;
    return false;
  }
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = strsignal(sig);
    return "was killed by signal " + std::to_string(sig) + (name ? " (" + std::string(name) + ")" : "");
  }
  return "ended with status " + std::to_string(status);
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// The environment block of one worker: this process's variables, minus those the launcher
// sets, plus the launcher's. Built before fork(): after it only async-signal-safe calls happen.
std::vector<std::string> worker_environment(const SpawnOptions& o, int local_rank) {
  const int world = o.nproc_per_node * o.num_nodes;
  const int rank = o.node_rank * o.nproc_per_node + local_rank;
  std::vector<std::pair<std::string, std::string>> set;
  if (o.distributed) set = {
      {"RANK", std::to_string(rank)},
      {"LOCAL_RANK", std::to_string(local_rank)},
      {"WORLD_SIZE", std::to_string(world)},
      {"LOCAL_WORLD_SIZE", std::to_string(o.nproc_per_node)},
      {"GROUP_RANK", std::to_string(o.node_rank)},
      {"HFTRAIN_NNODES", std::to_string(o.num_nodes)},
      {"MASTER_ADDR", o.master_addr},
      {"MASTER_PORT", std::to_string(o.master_port)},
      {kLauncherVar, "1"},
  };
  set.insert(set.end(), o.env.begin(), o.env.end());
  std::vector<std::string> block;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [k, v] : set) replaced = replaced || name == k;
    if (!replaced) block.emplace_back(entry);
  }
  for (const auto& [k, v] : set) block.push_back(k + "=" + v);
  return block;
}

void signal_all(std::vector<Worker>& workers, int sig) {
  for (auto& w : workers) {
    if (w.running) kill(-w.pid, sig);  // the worker's process group: it and anything it started
  }
}

Worker start_worker(const SpawnOptions& o, int local_rank) {
  Worker w;
  w.rank = o.node_rank * o.nproc_per_node + local_rank;
  const std::vector<std::string> env = worker_environment(o, local_rank);
  std::vector<char*> envp, argv;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  for (const auto& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  auto close_pipes = [&] {
    for (int fd : {out[0], out[1], err[0], err[1]}) {
      if (fd >= 0) close(fd);
    }
  };
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    const int e = errno;
    close_pipes();
    throw util::ConfigError(std::string("cannot start the workers: pipe: ") + std::strerror(e),
                            "raise the open-file limit (ulimit -n)");
  }
  const pid_t launcher = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    close_pipes();
    throw util::ConfigError(std::string("cannot start worker rank ") + std::to_string(w.rank) + ": fork: " +
                                std::strerror(e),
                            "check the process limit (ulimit -u) and free memory");
  }
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher) _exit(127);  // the launcher died before prctl
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    // Handlers are reset by exec; a SIG_IGN inherited from the launcher's parent must not be.
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    execve(o.program.c_str(), argv.data(), envp.data());
    const char msg[] = "hftrain launcher: exec failed\n";
    [[maybe_unused]] ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(127);
  }
  setpgid(pid, pid);  // also here: no race with the first kill(-pid)
  close(out[1]);
  close(err[1]);
  w.pid = pid;
  w.streams[0] = {out[0], stdout, {}, o.distributed};
  w.streams[1] = {err[0], stderr, {}, o.distributed};
  for (auto& s : w.streams) fcntl(s.fd, F_SETFL, fcntl(s.fd, F_GETFL) | O_NONBLOCK);
  return w;
}

}  // namespace

SpawnResult run_workers(const SpawnOptions& o) {
  using Clock = std::chrono::steady_clock;
  if (!o.distributed && o.nproc_per_node != 1) {
    throw std::invalid_argument("run_workers: a process outside a distributed job is started alone, not " +
                                std::to_string(o.nproc_per_node) + " times");
  }
  SignalScope signals;
  std::vector<Worker> workers;
  try {
    for (int i = 0; i < o.nproc_per_node; ++i) workers.push_back(start_worker(o, i));
  } catch (...) {
    signal_all(workers, SIGKILL);
    for (auto& w : workers) {
      waitpid(w.pid, nullptr, 0);
      for (auto& s : w.streams) close(s.fd);
    }
    throw;
  }

  SpawnResult result;
  int forwarded = 0;
  bool killed = false;
  std::optional<Clock::time_point> kill_at;
  std::string first_exit;  // after a forwarded signal: "rank R (pid P)", the first worker that ended
  auto after = [](double seconds) {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  };
  auto running = [&] {
    for (const auto& w : workers) if (w.running) return true;
    return false;
  };
  while (running()) {
    std::vector<pollfd> fds;
    std::vector<std::pair<Worker*, Stream*>> owners;
    for (auto& w : workers) {
      for (auto& s : w.streams) {
        if (s.fd >= 0) fds.push_back({s.fd, POLLIN, 0}), owners.emplace_back(&w, &s);
      }
    }
    const int ready = poll(fds.data(), fds.size(), 100);
    if (ready > 0) {
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents != 0) pump(*owners[i].second, owners[i].first->rank);
      }
    }
    // Signals to the launcher go to every worker; a second one stops them at once.
    const int count = g_signal_count.load();
    if (count > forwarded) {
      forwarded = count;
      if (count >= 2) {
        signal_all(workers, SIGKILL);
        killed = true;
      } else {
        // No deadline yet: the workers may be saving a checkpoint. A second signal ends them.
        signal_all(workers, g_last_signal.load());
      }
    }
    for (auto& w : workers) {
      if (!w.running) continue;
      int status = 0;
      const pid_t r = waitpid(w.pid, &status, WNOHANG);
      if (r != w.pid) continue;
      w.running = false;
      w.status = status;
      const std::string who = (o.distributed ? "rank " + std::to_string(w.rank) : std::string("the process")) +
                              " (pid " + std::to_string(w.pid) + ")";
      const int code = exit_code_of(status);
      if (code != 0 && result.exit_code == 0) {
        result.exit_code = code;
        if (forwarded == 0) {
          result.failure = who + " " + describe_status(status) + (o.distributed ? "; stopped the other workers" : "");
          signal_all(workers, SIGTERM);
          kill_at = after(o.kill_grace_seconds);
        }
      }
      if (forwarded > 0 && first_exit.empty()) {
        first_exit = who;
        if (!kill_at) kill_at = after(o.stop_grace_seconds);
      }
    }
    if (kill_at && !killed && Clock::now() >= *kill_at && running()) {
      if (result.failure.empty()) {
        std::string stuck;
        for (const auto& w : workers) {
          if (w.running) stuck += (stuck.empty() ? "rank " : ", rank ") + std::to_string(w.rank);
        }
        char grace[32];
        std::snprintf(grace, sizeof grace, "%g", o.stop_grace_seconds);
        result.failure = stuck + " did not stop within " + grace + " s of " + first_exit +
                         " ending after the signal; killed";
        if (result.exit_code == 0) result.exit_code = 128 + SIGKILL;
      }
      signal_all(workers, SIGKILL);
      killed = true;
    }
  }
  result.stop_requested = forwarded > 0;
  // Output still buffered in the pipes (a grandchild holding one open is not waited for).
  for (auto& w : workers) {
    for (auto& s : w.streams) {
      if (s.fd < 0) continue;
      pollfd p{s.fd, POLLIN, 0};
      while (s.fd >= 0 && poll(&p, 1, 50) > 0 && pump(s, w.rank)) {}
      if (s.fd >= 0) close(s.fd), s.fd = -1;
    }
  }
  return result;
}

}  // namespace hftrain::launch
