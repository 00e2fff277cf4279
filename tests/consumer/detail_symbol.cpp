// Must NOT link against the installed library: slip::detail is internal and not exported.
#include <string_view>

namespace slip::detail {
void check_field_name(std::string_view name, std::string_view what);
}

int main() { slip::detail::check_field_name("image", "field"); }
