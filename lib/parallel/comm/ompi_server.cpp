#include "parallel/comm/ompi_server.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "util/error.h"

namespace hftrain::parallel {

namespace {

// The ompi-server this process started (rank 0 of an mpi_join), ended by stop_ompi_server. One per
// process, like the MPI library state it serves.
pid_t g_ompi_server = -1;

}  // namespace

std::string start_ompi_server(double budget_s) {
  namespace fs = std::filesystem;
  const fs::path uri_file = fs::temp_directory_path() / ("hftrain-ompi-server-" + std::to_string(getpid()) + ".uri");
  fs::remove(uri_file);
  const std::string uri_arg = uri_file.string();
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw util::DistributedError("cannot start ompi-server: fork failed", "check the process limit");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    const int devnull = ::open("/dev/null", O_RDWR);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO), dup2(devnull, STDOUT_FILENO);
    execlp("ompi-server", "ompi-server", "--no-daemonize", "-r", uri_arg.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  g_ompi_server = pid;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(budget_s);
  for (;;) {
    std::error_code ec;
    if (fs::exists(uri_file, ec) && fs::file_size(uri_file, ec) > 0) {
      std::ifstream in(uri_file);
      std::string uri;
      std::getline(in, uri);
      if (!uri.empty()) {
        fs::remove(uri_file, ec);
        return uri;
      }
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      g_ompi_server = -1;
      throw util::DistributedError("ompi-server (Open MPI) ended at once, with status " + std::to_string(status),
                                   "CPU training under hftrain's launcher needs Open MPI's ompi-server on PATH "
                                   "(Debian: openmpi-bin); or start the job with mpirun");
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw util::DistributedError("ompi-server did not report its address",
                                   "check that Open MPI works: ompi-server --help");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void allow_mpi_as_root() {
  if (geteuid() == 0) {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  }
}

void stop_ompi_server() {
  if (g_ompi_server <= 0) return;
  kill(g_ompi_server, SIGTERM);
  waitpid(g_ompi_server, nullptr, 0);
  g_ompi_server = -1;
}

}  // namespace hftrain::parallel
