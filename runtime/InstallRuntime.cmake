#===- InstallRuntime.cmake - The runtime package ---------------------------===#
#
# `cmake --install` puts the runtime where applications find it:
#   lib/libtessel_runtime.so*, lib/libtessel_runtime.a, include/tessel/,
#   lib/cmake/TesselRuntime/ (find_package(TesselRuntime CONFIG) gives
#   Tessel::Runtime and Tessel::RuntimeStatic) and
#   lib/pkgconfig/tessel-runtime{,-static}.pc (pkg-config).
# Both package files locate the prefix from where they are installed, so an
# installed tree can be moved.
#
#===----------------------------------------------------------------------===#

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS tessel_runtime
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT runtime)
install(FILES "${TESSEL_RUNTIME_ARCHIVE}"
  DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT runtime)
install(DIRECTORY include/tessel
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" COMPONENT runtime)

set(TESSEL_CMAKE_PACKAGE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/TesselRuntime")
configure_package_config_file(package/TesselRuntimeConfig.cmake.in
  "${CMAKE_CURRENT_BINARY_DIR}/TesselRuntimeConfig.cmake"
  INSTALL_DESTINATION "${TESSEL_CMAKE_PACKAGE_DIR}"
  PATH_VARS CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(
  "${CMAKE_CURRENT_BINARY_DIR}/TesselRuntimeConfigVersion.cmake"
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES
  "${CMAKE_CURRENT_BINARY_DIR}/TesselRuntimeConfig.cmake"
  "${CMAKE_CURRENT_BINARY_DIR}/TesselRuntimeConfigVersion.cmake"
  DESTINATION "${TESSEL_CMAKE_PACKAGE_DIR}" COMPONENT runtime)

# The .pc file sits in <libdir>/pkgconfig: its prefix is two levels up.
file(RELATIVE_PATH TESSEL_PC_PREFIX_FROM_PCFILEDIR
  "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
foreach(package tessel-runtime tessel-runtime-static)
  configure_file(package/${package}.pc.in
    "${CMAKE_CURRENT_BINARY_DIR}/${package}.pc" @ONLY)
  install(FILES "${CMAKE_CURRENT_BINARY_DIR}/${package}.pc"
    DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig" COMPONENT runtime)
endforeach()
