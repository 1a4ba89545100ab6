#include "metrics/http_client.h"

#include <curl/curl.h>

#include <cmath>
#include <mutex>
#include <stdexcept>
#include <utility>

namespace hftrain::metrics {
namespace {

// curl_global_init is not thread-safe before libcurl 7.84: once, before the first handle.
void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t append_body(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

}  // namespace

std::string HttpResponse::describe() const {
  if (!error.empty()) return error;
  constexpr size_t kMax = 300;
  return "HTTP " + std::to_string(status) + (body.empty() ? "" : ": " + body.substr(0, kMax));
}

HttpClient::HttpClient(double timeout_seconds, HttpAuth auth) : timeout_(timeout_seconds), auth_(std::move(auth)) {
  global_init();
  curl_ = curl_easy_init();
  if (!curl_) throw std::runtime_error("libcurl could not start a handle");
}

HttpClient::~HttpClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

std::string HttpClient::escape(const std::string& text) {
  char* e = curl_easy_escape(static_cast<CURL*>(curl_), text.c_str(), static_cast<int>(text.size()));
  std::string out = e ? e : "";
  curl_free(e);
  return out;
}

HttpResponse HttpClient::get(const std::string& url) { return perform(url, nullptr); }

HttpResponse HttpClient::post_json(const std::string& url, const std::string& body) { return perform(url, &body); }

HttpResponse HttpClient::perform(const std::string& url, const std::string* post_body) {
  CURL* c = static_cast<CURL*>(curl_);
  curl_easy_reset(c);
  HttpResponse r;
  char error[CURL_ERROR_SIZE] = {};
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  headers = curl_slist_append(headers, "Accept: application/json");
  if (!auth_.bearer_token.empty()) {
    headers = curl_slist_append(headers, ("Authorization: Bearer " + auth_.bearer_token).c_str());
  } else if (!auth_.user.empty()) {
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(c, CURLOPT_USERNAME, auth_.user.c_str());
    curl_easy_setopt(c, CURLOPT_PASSWORD, auth_.password.c_str());
  }
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(std::lround(timeout_ * 1000)));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::lround(std::min(timeout_, 5.0) * 1000)));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // from a worker thread: no SIGALRM for timeouts
  curl_easy_setopt(c, CURLOPT_USERAGENT, "hftrain");
  if (post_body) {
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, post_body->c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(post_body->size()));
  }
  const CURLcode code = curl_easy_perform(c);
  // Nothing on the handle may point at this frame's buffers once it returns.
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, nullptr);
  curl_slist_free_all(headers);
  if (code != CURLE_OK) {
    r.error = error[0] ? error : curl_easy_strerror(code);
    return r;
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  return r;
}

}  // namespace hftrain::metrics
