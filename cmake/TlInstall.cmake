# `cmake --install build --prefix P`: the tools into P/bin, the docs into P/share/doc/tl; and
# `cpack -G DEB` (from the build folder): the same as a Debian package "tl".
# The installed tools find each other next to themselves (/proc/self/exe), so P can be any
# shared folder; nothing installed names the source or the build tree.
include(GNUInstallDirs)

# The build tree's RPATH (if any) is dropped on install; what stays are the folders of libraries
# linked from outside the system's own (a libtorch under -DCMAKE_PREFIX_PATH). Debian's
# libraries are in the default search path and need none.
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)

set(TL_INSTALLED_TOOLS tl-launch tl-ctl tl-data tl-coordinator tl-submit tl-run tl-predict)
if(TL_HAVE_CAIRO)  # TL_WITH_CAIRO=OFF: no cairo tools to install
  list(APPEND TL_INSTALLED_TOOLS tl-profile tl-sim tl-sched)
endif()
foreach(tool IN LISTS TL_INSTALLED_TOOLS)
  set_target_properties(${tool} PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
endforeach()
install(TARGETS ${TL_INSTALLED_TOOLS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
# docs/ keeps its layout under share/doc/tl/docs, so that the README's links work there too. Not
# guide/debian13.md: it names the tree's path inside the Debian 13 root (/srv/tl-checkout), and
# test_install checks that no installed file names the source tree.
install(FILES docs/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
install(DIRECTORY docs/guide docs/design DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
        FILES_MATCHING PATTERN "*.md" PATTERN "debian13.md" EXCLUDE)
install(FILES tools/submit/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME tl-submit.md)
if(TL_HAVE_CAIRO)
  install(FILES tools/profile/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME tl-profile.md)
endif()

set(CPACK_PACKAGE_NAME tl)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "tl developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "tl: elastic data-parallel training runtime (tl-launch, tl-submit, ...)")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "tl developers")
set(CPACK_DEBIAN_PACKAGE_SECTION science)
# The shared libraries' packages (libtorch1.13, libopenmpi3, libspdlog, libboost-fiber, ...)
# come from dpkg-shlibdeps (dpkg-dev, part of build-essential); mpirun is not linked, so it is
# named. A libtorch from outside Debian has no package: configure with
# -DCPACK_DEBIAN_PACKAGE_SHLIBDEPS=OFF and install that libtorch on the cluster yourself.
if(NOT DEFINED CPACK_DEBIAN_PACKAGE_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
endif()
set(CPACK_DEBIAN_PACKAGE_DEPENDS "openmpi-bin")
set(CPACK_GENERATOR DEB)
include(CPack)
