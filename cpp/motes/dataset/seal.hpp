// The manifest's own checksum and the dataset's identity (manifest 1.6; docs/format.md
// §3.3.9-3.3.10): a sealed manifest begins with a line holding the XXH3-64 of every byte
// after it, checked before anything is parsed; a dataset's id tells its runs apart, and a
// handle reading a manifest again checks that it continues the run it read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace motes {

struct Manifest;

namespace seal {

// Whether `text` begins with a checksum line (its form, not its value).
bool sealed(std::string_view text);
// The checksum a sealed text's line holds, and the checksum of the bytes after it.
uint64_t stated(std::string_view text);
uint64_t computed(std::string_view text);
// The text of a sealed manifest's checksum member (16 lowercase hex digits).
std::string stated_text(std::string_view text);
// `body`, the text of a JSON object beginning "{\n" (nlohmann's dump(1)), sealed.
std::string sealed_text(const std::string& body);
// Whether `s` is lowercase hex digits only.
bool lower_hex(std::string_view s);

}  // namespace seal

// A new dataset identity: 32 lowercase hex digits from the system's random source.
std::string new_dataset_id();

// Why `now` is not a later state of the run `was` describes (another identity, a step `was`
// knew gone or changed), or nothing when it is.
std::optional<std::string> other_run(const Manifest& was, const Manifest& now);

}  // namespace motes
