# -DTL_SANITIZE=address,undefined: build every target with those sanitizers (-fsanitize=...,
# frame pointers kept for readable stacks). Empty (default): none. An unknown name stops the
# configure step rather than failing later inside the compiler.
set(TL_SANITIZE "" CACHE STRING
    "Comma-separated sanitizers for -fsanitize= (address, undefined, leak, thread); empty: none")

if(TL_SANITIZE)
  set(_tl_known_sanitizers address undefined leak thread)
  string(REPLACE "," ";" _tl_sanitizers "${TL_SANITIZE}")
  foreach(s IN LISTS _tl_sanitizers)
    if(NOT s IN_LIST _tl_known_sanitizers)
      message(FATAL_ERROR "TL_SANITIZE: unknown sanitizer '${s}' in '${TL_SANITIZE}' "
                          "(known: address, undefined, leak, thread; separate them with commas)")
    endif()
  endforeach()
  if("thread" IN_LIST _tl_sanitizers AND ("address" IN_LIST _tl_sanitizers OR "leak" IN_LIST _tl_sanitizers))
    message(FATAL_ERROR "TL_SANITIZE: thread cannot be combined with address or leak")
  endif()
  list(JOIN _tl_sanitizers "," _tl_sanitize_flag)
  add_compile_options(-fsanitize=${_tl_sanitize_flag} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${_tl_sanitize_flag})
  message(STATUS "tl: sanitizers ${_tl_sanitize_flag}")
endif()
