// A job-array task's view of the whole source (docs/SLURM.md "What a task costs"): a source
// whose tasks may share one listing (an ImageFolder's saved scan) implements this, and
// convert() records both digests in each part for `slip merge` to compare.
#pragma once

#include <string>

namespace slip::detail {

struct ListingCheck {
  // A digest of every input file's name, size and mtime as the source listed them when it
  // opened (a shared scan: as the first task saw them), and the same digest of a fresh stat of
  // every one of them: all of them, not only this task's slice.
  std::string listed, now;
};

class ListingCheckable {
 public:
  virtual ~ListingCheckable() = default;
  virtual ListingCheck recheck_listing() const = 0;
};

}  // namespace slip::detail
