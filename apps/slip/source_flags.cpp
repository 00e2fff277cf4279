#include "source_flags.hpp"

#include "output.hpp"

namespace slip::cli {

namespace {
// How often a setting may be given: `many` settings (read with get_all) keep every value in flag
// order and show "..." in --help; `once` settings take one value (a repeat: the last wins) and
// show none, so --help does not suggest they can be repeated.
enum class Given { once, many };

// A KEY=VALUE style flag stored as ("key", value) settings in flag order.
// `type` is the placeholder --help shows (N, SECONDS, DIR, ...; "" for a choice).
CLI::Option* add_setting(CLI::App& sub, SourceOptions& options, const std::string& flag, const std::string& key, const std::string& type,
                         const std::string& help, Given given = Given::once) {
  CLI::Option* opt = sub.add_option_function<std::vector<std::string>>(
                            flag,
                            [&options, key](const std::vector<std::string>& values) {
                              for (const auto& v : values) options.set(key, v);
                            },
                            help)
                         ->type_name(type)
                         ->allow_extra_args(false)
                         ->group("Source options");
  if (given == Given::many) return opt->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  return opt->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}
}  // namespace

void add_source_flags(CLI::App& sub, SourceOptions& options) {
  // Every source: how the content id's fingerprint is taken.
  add_setting(sub, options, "--fingerprint", "fingerprint", "",
              "Source fingerprint for the content id: 'stat' (sizes + mtimes, default) or 'content' (SHA-256 of the data)")
      ->check(CLI::IsMember({"stat", "content"}));
  // Reading: requests in flight (network file systems pay 0.2-2 ms per request).
  add_setting(sub, options, "--io-depth", "io-depth", "N",
              "ImageFolder: files read at once while reads wait on the storage, 1-1024 (default 32): hides the latency "
              "of network file systems (from the page cache, files are read one after another)");
  // WebDataset tar shards.
  sub.add_option_function<std::string>(
         "--max-sample-bytes", [&options](const std::string& text) { options.set("max-sample-bytes", std::to_string(parse_count(text))); },
         "Tar, ImageFolder, LitData, FFCV: largest member, image file, item or payload read into memory (default 256MiB; "
         "K/M/G/KiB/MiB/GiB), "
         "checked before reading; a larger (or sparse tar) one makes its sample bad (--on-error; LitData: a chunk that would hold "
         "one is refused, exit 3)")
      ->type_name("SIZE")
      ->group("Source options");
  sub.add_flag_callback(
         "--allow-truncated", [&options] { options.set("allow-truncated", "1"); },
         "Tar: convert a shard that ends without tar's end-of-archive blocks (cut short) instead of failing (exit 3)")
      ->group("Source options");
  add_setting(sub, options, "--field", "field", "EXT=TYPE", "Tar: type of a member extension, EXT=image|int|float|str|bytes (repeatable)",
              Given::many);
  add_setting(sub, options, "--image-field", "image-field", "EXT",
              "Tar: member extension that feeds the image field (default: the first image member)");
  add_setting(sub, options, "--label-field", "label-field", "EXT",
              "Tar: member extension that feeds the label field (default: cls, label, cls2, index, id)");
  add_setting(sub, options, "--missing", "missing", "", "Tar: a sample missing a field: error, skip (ledger) or empty")
      ->check(CLI::IsMember({"error", "skip", "empty"}));
  // LitData.
  add_setting(sub, options, "--fields", "fields", "NAMES",
              "LitData: names for the leaves of tuple/list samples, in order: a,b,... (repeatable: the lists are joined)", Given::many);
  add_setting(sub, options, "--layout", "layout", "", "Tar: webdataset (key.ext members, default) or imagefolder (class/file members)")
      ->check(CLI::IsMember({"webdataset", "imagefolder"}));
  // FFCV (and other sources with named fields).
  add_setting(sub, options, "--rename", "rename", "OLD=NEW", "Rename a source field: OLD=NEW (repeatable)", Given::many);
  add_setting(
      sub, options, "--raw-field", "raw-field", "FIELD",
      "FFCV custom field classes / LitData unknown serializers: keep the raw bytes as a bytes field instead of failing (repeatable)",
      Given::many);
  // Remote sources (http://, https://, s3://).
  add_setting(sub, options, "--download-dir", "download-dir", "DIR",
              "Remote: where downloads go and resume from (default: $SLIPSTREAM_CACHE_DIR/downloads or ~/.slipstream/downloads)")
      ->group("Remote sources");
  add_setting(sub, options, "--jobs", "jobs", "N", "Remote: transfers in parallel (default 4)")->group("Remote sources");
  add_setting(
      sub, options, "--endpoint-url", "endpoint-url", "URL",
      "S3: endpoint of an S3-compatible store, path-style (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, S3_ENDPOINT_URL, else AWS)")
      ->group("Remote sources");
  sub.add_flag_callback(
         "--no-sign-request", [&options] { options.set("no-sign-request", "1"); }, "S3: send anonymous requests (public buckets)")
      ->group("Remote sources");
  add_setting(sub, options, "--retries", "retries", "N", "Remote: retries of a failed request (default 5; backoff doubles with jitter)")
      ->group("Remote sources");
  add_setting(sub, options, "--retry-delay", "retry-delay", "SECONDS", "Remote: seconds before the first retry (default 0.5)")
      ->group("Remote sources");
  add_setting(sub, options, "--connect-timeout", "connect-timeout", "SECONDS", "Remote: seconds to wait for a connection (default 20)")
      ->group("Remote sources");
  add_setting(sub, options, "--stall-timeout", "stall-timeout", "SECONDS",
              "Remote: seconds without progress before a transfer is retried (default 60)")
      ->group("Remote sources");
  add_setting(sub, options, "--min-speed", "min-speed", "BYTES/S",
              "Remote: a transfer averaging fewer bytes/s than this over --min-speed-time is retried (default 1024; 0: off)")
      ->group("Remote sources");
  add_setting(sub, options, "--min-speed-time", "min-speed-time", "SECONDS", "Remote: seconds of the --min-speed window (default 30)")
      ->group("Remote sources");
  add_setting(sub, options, "--timeout", "timeout", "SECONDS", "Remote: seconds a single transfer may take in all (default: no limit)")
      ->group("Remote sources");
  add_setting(sub, options, "--max-list-keys", "max-list-keys", "N",
              "S3: refuse a listing of more keys than this (default 10000000); a listing whose tokens repeat is refused")
      ->group("Remote sources");
  sub.add_option_function<std::string>(
         "--max-download-bytes",
         [&options](const std::string& text) { options.set("max-download-bytes", std::to_string(parse_count(text))); },
         "Remote: largest file downloaded (default 64GiB; K/M/G/KiB/MiB/GiB): a larger announced length is refused before "
         "writing, a body without one is cut off there (exit 3)")
      ->type_name("SIZE")
      ->group("Remote sources");
}

}  // namespace slip::cli
