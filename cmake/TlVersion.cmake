# Writes tl_version_config.h: the release (TL_VERSION, passed in) and the git commit of the
# source tree, or "unknown" when it is not a git checkout (a source tarball, an unpacked .deb
# source). Run as `cmake -P` on every build so a new commit is picked up without reconfiguring;
# configure_file leaves the header untouched (nothing recompiles) while the commit is the same.
# In: TL_VERSION, TL_SOURCE_DIR, TL_TEMPLATE, TL_OUTPUT.
set(TL_GIT_COMMIT unknown)
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${TL_SOURCE_DIR} describe --always --dirty --abbrev=7
                  OUTPUT_VARIABLE _tl_commit OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE _tl_git_rc ERROR_QUIET)
  if(_tl_git_rc EQUAL 0 AND _tl_commit)
    set(TL_GIT_COMMIT ${_tl_commit})
  endif()
endif()
configure_file(${TL_TEMPLATE} ${TL_OUTPUT} @ONLY)
