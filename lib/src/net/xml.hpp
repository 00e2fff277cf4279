// Internal: the XML that servers send (S3 listings, error bodies), read with expat.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace slip::net {

// An element: its (unprefixed as written) name, its character data (entities and character
// references decoded, concatenated across child elements) and its child elements.
struct XmlElement {
  std::string name;
  std::string text;
  std::vector<XmlElement> children;

  // The first child of that name, or nullptr.
  const XmlElement* child(std::string_view child_name) const noexcept;
};

// Nesting deeper than this is refused (S3 documents are 3 levels deep).
inline constexpr size_t kMaxXmlDepth = 32;

// Parses a whole document. Untrusted input: a document type declaration (and with it every
// entity definition, internal or external) is refused, so nothing is expanded but the five
// predefined entities and character references; nesting is bounded by kMaxXmlDepth.
// Throws Error(bad_input) whose message starts with `what` ("S3 listing").
XmlElement parse_xml(std::string_view xml, std::string_view what);

}  // namespace slip::net
