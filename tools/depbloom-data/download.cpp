// libcurl's easy interface, one transfer at a time, written into a FILE we own.
#include "download.h"

#include <curl/curl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "depbloom/core/error.h"

namespace depbloom::tools {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

// What the progress callback needs: where the transfer started and when it last printed.
struct Progress {
  curl_off_t offset = 0;  // bytes already in the .part before this transfer
  Clock::time_point start = Clock::now();
  Clock::time_point last{};
  bool printed = false;
};

double mib(double bytes) {
  return bytes / (1024.0 * 1024.0);
}

// The progress line: size, rate and ETA, redrawn at most twice a second (stderr, a terminal).
int show_progress(void* data, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
  auto* p = static_cast<Progress*>(data);
  const Clock::time_point t = Clock::now();
  if (t - p->last < std::chrono::milliseconds(500) || now <= 0) return 0;
  p->last = t;
  p->printed = true;
  const double secs = std::chrono::duration<double>(t - p->start).count();
  const double rate = secs > 0 ? static_cast<double>(now) / secs : 0.0;
  const double done = static_cast<double>(p->offset + now);
  if (total <= 0) {
    std::fprintf(stderr, "\r  %.1f MiB, %.1f MiB/s    ", mib(done), mib(rate));
  } else {
    const double all = static_cast<double>(p->offset + total);
    const double eta = rate > 0 ? static_cast<double>(total - now) / rate : 0.0;
    std::fprintf(stderr, "\r  %.1f of %.1f MiB (%.0f%%), %.1f MiB/s, ETA %.0f s    ", mib(done),
                 mib(all), 100.0 * done / all, mib(rate), eta);
  }
  return 0;
}

size_t write_to(char* data, size_t size, size_t count, void* file) {
  return std::fwrite(data, size, count, static_cast<FILE*>(file)) * size;
}

// One transfer from `offset`; returns curl's code and sets `http` to the status.
CURLcode transfer(const std::string& url, FILE* out, curl_off_t offset, long& http,
                  std::string& detail) {
  static const CURLcode init = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (init != CURLE_OK) DB_THROW(runtime, "libcurl: {}", curl_easy_strerror(init));
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) DB_THROW(runtime, "libcurl: curl_easy_init failed");
  char error[CURL_ERROR_SIZE] = "";
  Progress progress;
  progress.offset = offset;
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "depbloom-data");
  // Fail at once without network; give up on a stalled transfer after a minute.
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_to);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
  if (offset > 0) curl_easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, offset);
  if (isatty(STDERR_FILENO) != 0) {
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, show_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &progress);
  }
  const CURLcode rc = curl_easy_perform(c);
  if (progress.printed) std::fprintf(stderr, "\n");
  http = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &http);
  detail = error[0] != '\0' ? error : curl_easy_strerror(rc);
  return rc;
}

FILE* open_part(const fs::path& part, bool append) {
  FILE* f = std::fopen(part.c_str(), append ? "ab" : "wb");
  if (f == nullptr) DB_THROW(runtime, "{}: cannot write ({})", part.string(), std::strerror(errno));
  return f;
}

}  // namespace

void download(const std::string& url, const fs::path& part, const std::string& hint) {
  std::error_code ec;
  const auto have = fs::exists(part, ec) ? static_cast<curl_off_t>(fs::file_size(part, ec)) : 0;
  std::unique_ptr<FILE, FileCloser> out(open_part(part, have > 0));
  long http = 0;
  std::string detail;
  CURLcode rc = transfer(url, out.get(), have, http, detail);
  if (rc == CURLE_RANGE_ERROR) {
    // The server sends the whole file instead of the rest: start again from zero.
    out.reset(open_part(part, false));
    rc = transfer(url, out.get(), 0, http, detail);
  }
  // 416: the .part already holds every byte; the checks after the download decide.
  if (rc == CURLE_HTTP_RETURNED_ERROR && http == 416 && have > 0) return;
  if (std::fflush(out.get()) != 0 && rc == CURLE_OK) rc = CURLE_WRITE_ERROR;
  if (rc == CURLE_OK) return;
  out.reset();
  if (fs::file_size(part, ec) == 0) fs::remove(part, ec);  // nothing arrived: leave nothing
  if (rc == CURLE_HTTP_RETURNED_ERROR) DB_THROW(runtime, "{}: HTTP {}; {}", url, http, hint);
  DB_THROW(runtime, "{}: {}; {}", url, detail, hint);
}

}  // namespace depbloom::tools
