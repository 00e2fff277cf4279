#include "net/xml.hpp"

#include <expat.h>

#include <algorithm>
#include <memory>

#include "slip/error.hpp"

namespace slip::net {

const XmlElement* XmlElement::child(std::string_view child_name) const noexcept {
  for (const XmlElement& c : children)
    if (c.name == child_name) return &c;
  return nullptr;
}

namespace {

struct ParserFree {
  void operator()(XML_Parser p) const noexcept { XML_ParserFree(p); }
};

struct State {
  XML_Parser parser = nullptr;
  XmlElement root;
  std::vector<XmlElement*> open;  // the path from the root to the current element
  bool have_root = false;
  std::string refused;  // why parsing was stopped by us
};

void stop(State& s, std::string why) {
  if (s.refused.empty()) s.refused = std::move(why);
  XML_StopParser(s.parser, XML_FALSE);
}

void XMLCALL on_start(void* data, const XML_Char* name, const XML_Char**) {
  auto& s = *static_cast<State*>(data);
  if (s.open.size() >= kMaxXmlDepth) return stop(s, "nested deeper than " + std::to_string(kMaxXmlDepth) + " elements");
  XmlElement* e = nullptr;
  if (s.open.empty()) {
    s.have_root = true;
    e = &s.root;
  } else {
    e = &s.open.back()->children.emplace_back();
  }
  e->name = name;
  s.open.push_back(e);
}

void XMLCALL on_end(void* data, const XML_Char*) {
  auto& s = *static_cast<State*>(data);
  if (!s.open.empty()) s.open.pop_back();
}

void XMLCALL on_text(void* data, const XML_Char* text, int len) {
  auto& s = *static_cast<State*>(data);
  if (!s.open.empty()) s.open.back()->text.append(text, static_cast<size_t>(len));
}

void XMLCALL on_doctype(void* data, const XML_Char*, const XML_Char*, const XML_Char*, int) {
  stop(*static_cast<State*>(data), "a document type declaration (DTD) is refused");
}

void XMLCALL on_entity_decl(void* data, const XML_Char*, int, const XML_Char*, int, const XML_Char*, const XML_Char*, const XML_Char*,
                            const XML_Char*) {
  stop(*static_cast<State*>(data), "entity declarations are refused");
}

}  // namespace

XmlElement parse_xml(std::string_view xml, std::string_view what) {
  // UTF-8 output whatever the document declares; no namespace processing (names as written).
  const std::unique_ptr<XML_ParserStruct, ParserFree> parser(XML_ParserCreate("UTF-8"));
  if (!parser) throw Error(Errc::io, std::string(what) + ": out of memory for the XML parser");
  State s;
  s.parser = parser.get();
  XML_SetUserData(s.parser, &s);
  XML_SetElementHandler(s.parser, on_start, on_end);
  XML_SetCharacterDataHandler(s.parser, on_text);
  XML_SetStartDoctypeDeclHandler(s.parser, on_doctype);
  XML_SetEntityDeclHandler(s.parser, on_entity_decl);
  XML_SetParamEntityParsing(s.parser, XML_PARAM_ENTITY_PARSING_NEVER);  // never read an external DTD
  // Fed in pieces: XML_Parse takes an int length.
  constexpr size_t kPiece = size_t{1} << 20;
  size_t at = 0;
  do {
    const size_t n = std::min(kPiece, xml.size() - at);
    const bool last = at + n == xml.size();
    if (XML_Parse(s.parser, xml.data() + at, static_cast<int>(n), last ? XML_TRUE : XML_FALSE) != XML_STATUS_OK) {
      const std::string why = !s.refused.empty() ? s.refused : XML_ErrorString(XML_GetErrorCode(s.parser));
      throw Error(Errc::bad_input, std::string(what) + ": not well-formed XML (" + why + ", line " +
                                       std::to_string(XML_GetCurrentLineNumber(s.parser)) + ")")
          .with_offset(static_cast<uint64_t>(std::max<XML_Index>(0, XML_GetCurrentByteIndex(s.parser))));
    }
    at += n;
  } while (at < xml.size());
  if (!s.have_root) throw Error(Errc::bad_input, std::string(what) + ": no XML document");
  return std::move(s.root);
}

}  // namespace slip::net
