# Installs the package find_package(tunecast) reads: runtime headers under include/tunecast/ (the
# flatc-generated schema header too), the runtime static library, the `tunecast` compiler,
# tunecastConfig.cmake and tunecast_add_predictor(), and the shipped models under share/tunecast/:
#   share/tunecast/models/<kernel>.tcm          compiled blobs (tunecast_MODELS_DIR)
#   share/tunecast/rules/<kernel>.tcr           validity and applicability rules (tunecast_RULES_DIR)
#   share/tunecast/encodings/<kernel>.tce       each shipped model's encoding, and the KTN encodings
#                                               of weights/encodings/ (tunecast_ENCODINGS_DIR)
#   share/tunecast/tools/                       the plot scripts the installed `tunecast` runs
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TUNECAST_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tunecast)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/tunecast DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${TUNECAST_SCHEMA_HEADER} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tunecast)
set(TUNECAST_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR}/tunecast)
if(TUNECAST_BUILD_TOOLS)
  install(FILES ${TUNECAST_SHIPPED_BLOBS} DESTINATION ${TUNECAST_INSTALL_DATADIR}/models)
  foreach(blob ${TUNECAST_SHIPPED_BLOBS})
    get_filename_component(kernel ${blob} NAME_WE)
    install(FILES ${PROJECT_SOURCE_DIR}/weights/${kernel}/model.tce DESTINATION ${TUNECAST_INSTALL_DATADIR}/encodings
      RENAME ${kernel}.tce)
  endforeach()
  # What `tunecast eval --plot` and `eval-search --plot` run (matplotlib), so that the installed
  # binary needs no source tree: share/tunecast/tools/ (codegen/CMakeLists.txt, TUNECAST_INSTALLED_TOOLS_REL).
  install(FILES ${PROJECT_SOURCE_DIR}/tools/plot_eval.py ${PROJECT_SOURCE_DIR}/tools/plot_eval_search.py
    DESTINATION ${TUNECAST_INSTALL_DATADIR}/tools)
  # The trainer package (what the plot scripts import from it too): tools/CMakeLists.txt.
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/weights/rules/ DESTINATION ${TUNECAST_INSTALL_DATADIR}/rules
  FILES_MATCHING PATTERN "*.tcr")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/weights/encodings/ DESTINATION ${TUNECAST_INSTALL_DATADIR}/encodings
  FILES_MATCHING PATTERN "*.tce")
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
  ${PROJECT_BINARY_DIR}/tunecastConfig.cmake INSTALL_DESTINATION ${TUNECAST_INSTALL_CMAKEDIR}
  PATH_VARS TUNECAST_INSTALL_DATADIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tunecastConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tunecastConfig.cmake ${PROJECT_BINARY_DIR}/tunecastConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/TunecastPredictor.cmake DESTINATION ${TUNECAST_INSTALL_CMAKEDIR})
