# Writes OUTPUT, a C++ file defining `std::string_view SYMBOL` in namespace
# pvk::bench as the text of INPUT (a data file the harness compiles in):
#   cmake -DINPUT=... -DOUTPUT=... -DSYMBOL=... -P embed_text.cmake
file(READ "${INPUT}" text)
get_filename_component(name "${INPUT}" NAME)
set(delimiter "pvk_embedded")  # at most 16 characters
string(FIND "${text}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string's delimiter")
endif()
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${name} by embed_text.cmake: edit ${name}, not this file.\n"
  "#include <string_view>\n"
  "namespace pvk::bench {\n"
  "extern const std::string_view ${SYMBOL};\n"
  "const std::string_view ${SYMBOL} = R\"${delimiter}(${text})${delimiter}\";\n"
  "}  // namespace pvk::bench\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
