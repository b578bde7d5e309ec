# Build flags as targets, never directory-wide (nothing here reaches an installed target's
# usage requirements):
#   asyncps_build   warnings (and sanitizers when ASYNCPS_SANITIZE is set, libFuzzer's coverage
#                   when ASYNCPS_BUILD_FUZZERS is ON): every target of
#                   this project links it PRIVATE; the installed library through
#                   $<BUILD_INTERFACE:...>, so its exported link interface never names it
# asyncps_apply_build_flags(DIR...) links asyncps_build into every target defined under DIR
# (tests, benchmarks, apps: each target gets the flags, no directory property carries them).
add_library(asyncps_build INTERFACE)
target_compile_options(asyncps_build INTERFACE "$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra>")
if(ASYNCPS_SANITIZE)
  # every report is fatal (UBSan would otherwise print and go on, and the test would pass)
  target_compile_options(asyncps_build INTERFACE -fsanitize=${ASYNCPS_SANITIZE} -fno-sanitize-recover=all
                         -fno-omit-frame-pointer)
  target_link_options(asyncps_build INTERFACE -fsanitize=${ASYNCPS_SANITIZE})
  include(AsyncpsSanitizers)
endif()
# libFuzzer (fuzz/, clang only): the libraries get its coverage instrumentation too, so that the
# fuzzers are guided by the parsers' branches, not only by their own
if(ASYNCPS_BUILD_FUZZERS)
  target_compile_options(asyncps_build INTERFACE -fsanitize=fuzzer-no-link)
endif()

function(asyncps_apply_build_flags)
  foreach(dir IN LISTS ARGN)
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(t IN LISTS targets)
      get_target_property(type ${t} TYPE)
      if(type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$")
        target_link_libraries(${t} PRIVATE asyncps_build)
      endif()
    endforeach()
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    if(subdirs)
      asyncps_apply_build_flags(${subdirs})
    endif()
  endforeach()
endfunction()
