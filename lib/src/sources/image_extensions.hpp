// Internal: which file names an ImageFolder (a directory, or one inside a tar) takes as images.
#pragma once

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <string_view>

namespace slip::detail {

// torchvision.datasets.folder.IMG_EXTENSIONS, compared case-insensitively as torchvision does:
// the same files land in the cache as in torchvision's ImageFolder. (WebDataset tar members
// follow another rule, their exact key extension: sources/tar.cpp.)
inline constexpr std::array<std::string_view, 9> kImageFolderExtensions = {".jpg", ".jpeg", ".png",  ".ppm", ".bmp",
                                                                           ".pgm", ".tif",  ".tiff", ".webp"};

inline bool has_image_folder_extension(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::any_of(kImageFolderExtensions.begin(), kImageFolderExtensions.end(),
                     [&](std::string_view ext) { return lower.ends_with(ext); });
}

}  // namespace slip::detail
