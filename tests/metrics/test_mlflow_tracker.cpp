// The MLflow tracker against a scripted stand-in server (a socket on 127.0.0.1 that answers each
// REST call as the test says): batching, a server that fails and comes back, refusals that drop
// one part only, the run remembered across processes, and what is kept when no server answers.
// The real server is tests/e2e/mlflow_test.sh's.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <limits>
#include <tuple>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "helpers.h"
#include "metrics/mlflow_tracker.h"
#include "metrics/recorder.h"

using namespace hftrain;
using namespace hftrain::metrics;
using nlohmann::json;

namespace {

struct Request {
  std::string method;  // "GET" or "POST"
  std::string path;    // "/api/2.0/mlflow/runs/log-batch", query included
  json body;
};

// (status, body) for a request.
using Handler = std::function<std::pair<int, std::string>(const Request&)>;

// One connection at a time, "Connection: close" on every answer.
class FakeServer {
 public:
  explicit FakeServer(Handler handler) : handler_(std::move(handler)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    listen(fd_, 8);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeServer() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  std::string uri() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Request> requests() {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }

 private:
  void serve() {
    while (!stop_) {
      const int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::string in;
      char buf[4096];
      size_t header_end = std::string::npos, need = 0;
      for (;;) {
        const ssize_t n = read(c, buf, sizeof buf);
        if (n <= 0) break;
        in.append(buf, static_cast<size_t>(n));
        if (header_end == std::string::npos && (header_end = in.find("\r\n\r\n")) != std::string::npos) {
          const size_t cl = in.find("Content-Length: ");
          need = cl != std::string::npos && cl < header_end ? std::stoul(in.substr(cl + 16)) : 0;
        }
        if (header_end != std::string::npos && in.size() >= header_end + 4 + need) break;
      }
      Request r;
      r.method = in.substr(0, in.find(' '));
      r.path = in.substr(in.find(' ') + 1, in.find(' ', in.find(' ') + 1) - in.find(' ') - 1);
      const std::string body = header_end == std::string::npos ? "" : in.substr(header_end + 4);
      r.body = body.empty() ? json::object() : json::parse(body, nullptr, false);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        requests_.push_back(r);
      }
      const auto [status, reply] = handler_(r);
      const std::string out =
          "HTTP/1.1 " + std::to_string(status) +
          " X\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(reply.size()) +
          "\r\nConnection: close\r\n\r\n" + reply;
      [[maybe_unused]] ssize_t w = write(c, out.data(), out.size());
      close(c);
    }
  }

  Handler handler_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<Request> requests_;
  std::thread thread_;
};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// A well-behaved MLflow: no experiment until created; runs exist once created.
Handler mlflow_like(std::atomic<int>* fail_log_batches = nullptr, bool refuse_params = false) {
  return [=](const Request& r) -> std::pair<int, std::string> {
    const std::string& p = r.path;
    if (p.find("experiments/get-by-name") != std::string::npos) {
      return {404, R"({"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "no"})"};
    }
    if (ends_with(p, "experiments/create")) return {200, R"({"experiment_id": "7"})"};
    if (ends_with(p, "runs/create")) return {200, R"({"run": {"info": {"run_id": "run-1"}}})"};
    if (p.find("runs/get") != std::string::npos) {
      if (p.find("run-1") != std::string::npos)
        return {200, R"({"run": {"info": {"run_id": "run-1", "lifecycle_stage": "active"}}})"};
      return {404, R"({"error_code": "RESOURCE_DOES_NOT_EXIST"})"};
    }
    if (ends_with(p, "runs/log-batch")) {
      if (fail_log_batches && fail_log_batches->load() > 0) {
        fail_log_batches->fetch_sub(1);
        return {503, R"({"error_code": "TEMPORARILY_UNAVAILABLE"})"};
      }
      if (refuse_params && !r.body["params"].empty()) return {400, R"({"error_code": "INVALID_PARAMETER_VALUE"})"};
      return {200, "{}"};
    }
    if (ends_with(p, "runs/update")) return {200, "{}"};
    return {404, "{}"};
  };
}

MlflowTrackerOptions options_for(const std::string& uri, const std::filesystem::path& dir) {
  MlflowTrackerOptions o;
  o.tracking_uri = uri;
  o.experiment = "exp";
  o.run_name = "name";
  o.flush_every = 0.05;
  o.timeout = 2;
  o.first_backoff = 0.05;
  o.max_backoff = 0.2;
  o.run_dir = dir;
  o.params = {{"optimizer.lr", "0.001"}, {"trainer.max_steps", "10"}};
  o.tags = {{"team", "x"}};
  return o;
}

// The metrics every log-batch call carried, in order, as (key, step, value).
std::vector<std::tuple<std::string, int64_t, double>> sent_metrics(const std::vector<Request>& requests) {
  std::vector<std::tuple<std::string, int64_t, double>> out;
  for (const auto& r : requests) {
    if (!ends_with(r.path, "runs/log-batch")) continue;
    for (const auto& m : r.body["metrics"]) {
      out.emplace_back(m["key"].get<std::string>(), m["step"].get<int64_t>(),
                       m["value"].is_number() ? m["value"].get<double>() : -1.0);
    }
  }
  return out;
}

std::vector<Request> calls_to(const std::vector<Request>& requests, const std::string& method) {
  std::vector<Request> out;
  for (const auto& r : requests) {
    if (r.path.find(method) != std::string::npos) out.push_back(r);
  }
  return out;
}

}  // namespace

TEST_CASE("mlflow tracker: creates the experiment and run, sends params, tags, metrics in order, then the status",
          "[metrics][mlflow]") {
  test::MetricsTempDir dir;
  FakeServer server(mlflow_like());
  {
    MlflowTracker tracker(options_for(server.uri(), dir.path()));
    for (int64_t step = 1; step <= 5; ++step)
      tracker.log(step, {{"train/loss", 3.0 - 0.1 * step}, {"train/lr", 0.001}});
    tracker.on_values(6, 1.5, {{"eval/loss", 2.0}});
    CHECK(tracker.finish("FINISHED", 5));
    CHECK(tracker.run_id() == "run-1");
  }
  const auto requests = server.requests();
  const auto creates = calls_to(requests, "runs/create");
  REQUIRE(creates.size() == 1);
  CHECK(creates[0].body["experiment_id"] == "7");
  CHECK(creates[0].body["run_name"] == "name");
  CHECK(calls_to(requests, "experiments/create")[0].body["name"] == "exp");
  const auto metrics = sent_metrics(requests);
  REQUIRE(metrics.size() == 11);
  CHECK(metrics[0] == std::make_tuple(std::string("train/loss"), int64_t{1}, 3.0 - 0.1 * 1));
  CHECK(metrics[10] == std::make_tuple(std::string("eval/loss"), int64_t{6}, 2.0));
  bool params = false, tags = false;
  for (const auto& r : calls_to(requests, "runs/log-batch")) {
    for (const auto& p : r.body["params"]) params = params || (p["key"] == "optimizer.lr" && p["value"] == "0.001");
    for (const auto& t : r.body["tags"]) tags = tags || (t["key"] == "team" && t["value"] == "x");
    for (const auto& m : r.body["metrics"]) {
      if (m["key"] == "eval/loss") CHECK(m["timestamp"] == 1500);  // the Recorder's wall time, in ms
    }
  }
  CHECK(params);
  CHECK(tags);
  const auto updates = calls_to(requests, "runs/update");
  REQUIRE(updates.size() == 1);
  CHECK(updates.back().body["status"] == "FINISHED");
  CHECK(updates.back().body["end_time"].get<int64_t>() > 0);
  CHECK(std::filesystem::exists(dir.path() / kMlflowRunFile));
  CHECK_FALSE(std::filesystem::exists(dir.path() / kMlflowPendingFile));
}

TEST_CASE("mlflow tracker: a server that fails for a while gets everything, in order, once it answers",
          "[metrics][mlflow]") {
  test::MetricsTempDir dir;
  std::atomic<int> failures{4};
  FakeServer server(mlflow_like(&failures));
  MlflowTracker tracker(options_for(server.uri(), dir.path()));
  for (int64_t step = 1; step <= 20; ++step) {
    tracker.log(step, {{"train/loss", static_cast<double>(step)}});
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(tracker.finish("FINISHED", 10));
  CHECK(failures.load() == 0);
  // Refused batches were sent again: every step, each once among the accepted ones, in order.
  std::vector<int64_t> accepted;
  int skip = 0;
  for (const auto& r : calls_to(server.requests(), "runs/log-batch")) {
    if (skip++ < 4) continue;  // the four that got 503
    for (const auto& m : r.body["metrics"]) accepted.push_back(m["step"].get<int64_t>());
  }
  std::vector<int64_t> want;
  for (int64_t s = 1; s <= 20; ++s) want.push_back(s);
  CHECK(accepted == want);
}

TEST_CASE("mlflow tracker: params the server refuses are dropped, the metrics still go", "[metrics][mlflow]") {
  test::MetricsTempDir dir;
  FakeServer server(mlflow_like(nullptr, /*refuse_params=*/true));
  MlflowTracker tracker(options_for(server.uri(), dir.path()));
  tracker.log(1, {{"train/loss", 1.0}});
  CHECK(tracker.finish("FINISHED", 5));
  CHECK(sent_metrics(server.requests()).size() == 1);
  CHECK(calls_to(server.requests(), "runs/update").size() == 1);
}

TEST_CASE("mlflow tracker: a later process goes on with the same run, without params", "[metrics][mlflow]") {
  test::MetricsTempDir dir;
  FakeServer server(mlflow_like());
  {
    MlflowTracker first(options_for(server.uri(), dir.path()));
    first.log(1, {{"train/loss", 1.0}});
    CHECK(first.finish("KILLED", 5));
  }
  const size_t before = server.requests().size();
  MlflowTracker second(options_for(server.uri(), dir.path()));
  second.log(2, {{"train/loss", 0.5}});
  CHECK(second.finish("FINISHED", 5));
  const std::vector<Request> all = server.requests();
  const std::vector<Request> later(all.begin() + static_cast<std::ptrdiff_t>(before), all.end());
  CHECK(calls_to(later, "runs/create").empty());
  CHECK(calls_to(later, "runs/get").size() == 1);
  const auto updates = calls_to(later, "runs/update");
  REQUIRE(updates.size() == 2);
  CHECK(updates[0].body["status"] == "RUNNING");
  CHECK(updates[1].body["status"] == "FINISHED");
  for (const auto& r : calls_to(later, "runs/log-batch")) CHECK(r.body["params"].empty());
}

TEST_CASE("mlflow tracker: with no server, what was logged is kept and sent first by the next tracker",
          "[metrics][mlflow]") {
  test::MetricsTempDir dir;
  {
    // Nothing listens on port 1.
    MlflowTracker tracker(options_for("http://127.0.0.1:1", dir.path()));
    tracker.log(1, {{"train/loss", 2.0}, {"train/grad_norm", std::numeric_limits<double>::quiet_NaN()}});
    tracker.log(2, {{"train/loss", 1.5}});
    CHECK_FALSE(tracker.finish("FINISHED", 0.3));
  }
  const json pending = json::parse(test::slurp(dir.path() / kMlflowPendingFile));
  CHECK(pending["metrics"].size() == 3);
  CHECK(pending["metrics"][1][1] == "NaN");
  CHECK(pending["params"].size() == 2);
  FakeServer server(mlflow_like());
  MlflowTracker later(options_for(server.uri(), dir.path()));
  later.log(3, {{"train/loss", 1.0}});
  CHECK(later.finish("FINISHED", 5));
  const auto metrics = sent_metrics(server.requests());
  REQUIRE(metrics.size() == 4);
  CHECK(std::get<1>(metrics[0]) == 1);
  CHECK(std::get<2>(metrics[1]) == -1.0);  // NaN went as the string "NaN"
  CHECK(std::get<1>(metrics[3]) == 3);
  CHECK_FALSE(std::filesystem::exists(dir.path() / kMlflowPendingFile));
}

TEST_CASE("recorder: sinks get each step's and evaluation's figures by name", "[metrics]") {
  struct Collect : MetricsSink {
    std::vector<std::pair<int64_t, std::vector<NamedValue>>> got;
    void on_values(int64_t step, double, const std::vector<NamedValue>& v) override { got.emplace_back(step, v); }
  };
  test::MetricsTempDir dir;
  auto sink = std::make_shared<Collect>();
  RecorderOptions o;
  o.run_dir = dir.path();
  o.console = false;
  o.tensorboard = false;
  o.sinks = {sink};
  Recorder recorder(o);
  StepMetrics m;
  m.step = 3;
  m.loss = 2.5;
  m.grad_norm = 0.5;
  recorder.log_step(m);
  recorder.log_eval({3, 0.1, 2.0, {{"eval_accuracy", 0.75}}});
  REQUIRE(sink->got.size() == 2);
  CHECK(sink->got[0].first == 3);
  CHECK(sink->got[0].second[0].name == "train/loss");
  CHECK(sink->got[0].second[0].value == 2.5);
  bool norm = false;
  for (const auto& v : sink->got[0].second) norm = norm || (v.name == "train/grad_norm" && v.value == 0.5);
  CHECK(norm);
  CHECK(sink->got[1].second[0].name == "eval/loss");
  CHECK(sink->got[1].second[2].name == "eval/accuracy");
}
