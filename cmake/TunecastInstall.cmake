# Installs the package find_package(tunecast) reads: runtime headers (with the flatc-generated
# schema header), the runtime static library, the `tunecast` compiler, tunecastConfig.cmake and
# tunecast_add_predictor().
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TUNECAST_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tunecast)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/tunecast DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${TUNECAST_SCHEMA_HEADER} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set(tunecast_install_targets tunecast_runtime)
if(TUNECAST_BUILD_TOOLS)
  list(APPEND tunecast_install_targets tunecast)
endif()
install(TARGETS ${tunecast_install_targets}
  EXPORT tunecastTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT tunecastTargets NAMESPACE tunecast:: DESTINATION ${TUNECAST_INSTALL_CMAKEDIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tunecastConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tunecastConfig.cmake INSTALL_DESTINATION ${TUNECAST_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tunecastConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tunecastConfig.cmake ${PROJECT_BINARY_DIR}/tunecastConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/TunecastPredictor.cmake DESTINATION ${TUNECAST_INSTALL_CMAKEDIR})
