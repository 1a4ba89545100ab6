// A small HTTP client for the experiment trackers (MLflow's REST API), over libcurl: JSON in and
// out, a time limit per request, HTTPS with the system's certificates. A transport failure (no
// server, a timeout, TLS) comes back as `error`, never as an exception, so a tracker can retry.
#pragma once

#include <string>

namespace hftrain::metrics {

struct HttpResponse {
  long status = 0;     // the HTTP status; 0 when no response came
  std::string body;
  std::string error;   // libcurl's words when no response came ("Couldn't connect to server")

  bool ok() const { return error.empty() && status >= 200 && status < 300; }
  // Worth trying again later: no response, a server error, or "slow down" (429).
  bool retryable() const { return !error.empty() || status >= 500 || status == 429; }
  // One line for a log: "HTTP 400: {...}" or the transport error.
  std::string describe() const;
};

// Credentials sent with every request: a bearer token, or a user and password (basic auth).
struct HttpAuth {
  std::string bearer_token;
  std::string user;
  std::string password;
};

class HttpClient {
 public:
  explicit HttpClient(double timeout_seconds, HttpAuth auth = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  HttpResponse get(const std::string& url);
  HttpResponse post_json(const std::string& url, const std::string& body);

  // Percent-encodes `text` for a query string.
  std::string escape(const std::string& text);

 private:
  HttpResponse perform(const std::string& url, const std::string* post_body);
  void* curl_ = nullptr;  // CURL*, kept between requests to reuse the connection
  double timeout_;
  HttpAuth auth_;
};

}  // namespace hftrain::metrics
