#include "data/source.h"

#include <fnmatch.h>
#include <glob.h>

#include <algorithm>
#include <set>

#include "data/jsonl_reader.h"
#include "data/text_checks.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/strings.h"

namespace hftrain::data {
namespace fs = std::filesystem;

namespace {

bool has_wildcard(const std::string& path) {
  return path.find_first_of("*?[") != std::string::npos;
}

bool excluded(const SourceSpec& spec, const fs::path& file) {
  const std::string name = file.filename().string();
  const std::string full = file.string();
  for (const auto& pattern : spec.exclude) {
    if (::fnmatch(pattern.c_str(), name.c_str(), 0) == 0) return true;
    if (::fnmatch(pattern.c_str(), full.c_str(), 0) == 0) return true;
  }
  return false;
}

std::vector<fs::path> glob_files(const std::string& pattern) {
  glob_t g{};
  int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
  std::vector<fs::path> out;
  if (rc == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  if (rc != 0 && rc != GLOB_NOMATCH) {
    throw util::DataError("cannot expand the data source glob " + pattern, "check the folder's permissions");
  }
  return out;
}

std::string rtrim(std::string_view line) {
  size_t end = line.size();
  while (end > 0 && (line[end - 1] == ' ' || line[end - 1] == '\t' || line[end - 1] == '\r')) --end;
  return std::string(line.substr(0, end));
}

void read_text(const SourceSpec& spec, const fs::path& file, const std::string& bytes,
               const std::function<void(Document&&)>& sink) {
  const std::string name = file.string();
  if (spec.separator.empty()) {
    if (util::trim(bytes).empty()) {
      throw util::DataError("data file " + name + ":1: holds only whitespace", "remove it or exclude it");
    }
    sink(Document{{Segment{bytes, true}}, name + ":1"});
    return;
  }
  size_t count = 0;
  size_t line_no = 1;
  size_t doc_start_line = 1;
  std::string current;
  auto flush = [&]() {
    if (!util::trim(current).empty()) {
      sink(Document{{Segment{std::move(current), true}}, name + ":" + std::to_string(doc_start_line)});
      ++count;
    }
    current.clear();
  };
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t nl = bytes.find('\n', pos);
    size_t end = nl == std::string::npos ? bytes.size() : nl + 1;
    std::string_view line(bytes.data() + pos, end - pos);
    std::string_view body = line.substr(0, line.size() - (nl == std::string::npos ? 0 : 1));
    if (rtrim(body) == spec.separator) {
      flush();
      doc_start_line = line_no + 1;
    } else {
      current.append(line);
    }
    pos = end;
    ++line_no;
  }
  flush();
  if (count == 0) {
    throw util::DataError("data file " + name + " holds no document between its '" + spec.separator + "' lines",
                          "check the separator (data source option `separator`)");
  }
}

}  // namespace

SourceFormat resolve_format(const SourceSpec& spec, const fs::path& file) {
  if (spec.format != SourceFormat::kAuto) return spec.format;
  const std::string ext = file.extension().string();
  if (ext == ".jsonl" || ext == ".json") return SourceFormat::kJsonl;
  if (ext == ".bin") return SourceFormat::kTokens;
  return SourceFormat::kText;
}

std::vector<fs::path> expand_source(const SourceSpec& spec) {
  if (spec.path.empty()) throw util::DataError("a data source has an empty path", "name a file, folder or glob");
  std::vector<fs::path> candidates;
  if (has_wildcard(spec.path)) {
    candidates = glob_files(spec.path);
    if (candidates.empty()) {
      throw util::DataError("data source " + spec.path + " matches no file", "check the pattern and the folder");
    }
  } else {
    std::error_code ec;
    auto status = fs::status(spec.path, ec);
    if (ec || !fs::exists(status)) {
      throw util::DataError("data file " + spec.path + " does not exist", "check the path");
    }
    if (fs::is_directory(status)) {
      // Walked with error codes: an unreadable folder inside is named, not a filesystem_error.
      fs::recursive_directory_iterator it(spec.path, ec), end;
      for (; !ec && it != end; it.increment(ec)) candidates.push_back(it->path());
      if (ec) {
        // The folder it could not enter: the last one it listed (entered right after), or the top.
        const fs::path where = candidates.empty() ? fs::path(spec.path) : candidates.back();
        throw util::DataError("cannot read the data folder " + where.string() + " (under " + spec.path +
                                  "): " + ec.message(),
                              "make it readable for this user, or leave it out of data.train");
      }
    } else {
      candidates.emplace_back(spec.path);
    }
  }
  // A symlink to a file already listed (fortune's *.u8) would count its documents twice; the
  // first name in sorted order is kept.
  std::sort(candidates.begin(), candidates.end());
  std::set<fs::path> seen;
  std::vector<fs::path> files;
  for (const auto& path : candidates) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec) || excluded(spec, path)) continue;
    fs::path canonical = fs::weakly_canonical(path, ec);
    if (!seen.insert(ec ? path : canonical).second) continue;
    files.push_back(path);
  }
  if (files.empty()) {
    std::string ex = spec.exclude.empty() ? "" : " after excluding " + util::join(spec.exclude, ", ");
    throw util::DataError("data source " + spec.path + " names no regular file" + ex,
                          "check the path and the exclude patterns");
  }
  return files;
}

std::string source_name(const SourceSpec& spec) {
  if (!spec.name.empty()) return spec.name;
  fs::path p = fs::path(spec.path).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "shards/"
  while (!p.empty() && has_wildcard(p.filename().string())) p = p.parent_path();
  const std::string stem = p.stem().string();
  return stem.empty() || stem == "." ? spec.path : stem;
}

bool records_only(const std::vector<SourceSpec>& sources) {
  for (const auto& spec : sources) {
    for (const auto& file : expand_source(spec)) {
      const SourceFormat format = resolve_format(spec, file);
      if (format != SourceFormat::kJsonl && format != SourceFormat::kChat) return false;
    }
  }
  return !sources.empty();
}

void read_documents(const SourceSpec& spec, const fs::path& file, const ChatTemplate& chat,
                    const std::function<void(Document&&)>& sink) {
  const SourceFormat format = resolve_format(spec, file);
  if (format == SourceFormat::kTokens) {
    throw util::DataError("data file " + file.string() + " is a token shard, not text",
                          "token shards are read by the token-shard reader");
  }
  const std::string bytes = util::read_file<util::DataError>(file, "data file", size_t{1} << 34);
  check_text_file(file, bytes);
  if (format == SourceFormat::kText) {
    read_text(spec, file, bytes, sink);
  } else {
    read_jsonl(spec, file, bytes, format == SourceFormat::kChat, chat, sink);
  }
}

}  // namespace hftrain::data
