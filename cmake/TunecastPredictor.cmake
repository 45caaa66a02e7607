# tunecast_add_predictor(TARGET MODEL [EMIT cpp|blob] [NAMESPACE ns] [NAME name] [RULES file.tcr]
#                        [ENCODING file.tce] [MAX_BEAM k] [DIRECTION fwd|bwd|wrw]
#                        [WEIGHTS fp32|fp16] [THREAD_LOCAL_SCRATCH])
#
# Compiles MODEL at build time and adds the result to TARGET:
#   EMIT cpp  (default) a generated predictor, struct ns::name (tunecast emit-cpp)
#   EMIT blob the verified blob as an alignas(32) byte array, ns::name_data() / ns::name_size()
#             (tunecast embed), for tunecast::Model::load
# MODEL is a compiled blob (*.tcm), a trainer export (*.tcir.json), a kernel definition (*.tcr, EMIT
# blob only: a model without a predictor for tunecast::search; docs/kernels.md) or a MIOpen Keras model (a KTN
# prefix such as .../gfx908_ConvAsm1x1U, or *.tn.model); RULES and ENCODING are compiled into the
# blob on the way, WEIGHTS picks the storage of its product weights (compile --weights, checked
# against fp32 on the Keras test vectors or synthetic inputs). NAME defaults to the model file's stem, NAMESPACE to tunecast_generated.
# THREAD_LOCAL_SCRATCH (EMIT cpp) adds a predict() overload over a thread_local Scratch (emit-cpp
# --thread-local-scratch): convenient, but every thread of the process then holds kScratchBytes.
# TARGET gets the generated folder on its include path (#include "name.h") and links tunecast::runtime
# (PUBLIC), whichever form of target_link_libraries (plain or keyword) TARGET uses.
# Works in tunecast's own build (add_subdirectory) and against an installed package.

function(tunecast_add_predictor TARGET MODEL)
  cmake_parse_arguments(PARSE_ARGV 2 ARG "THREAD_LOCAL_SCRATCH" "EMIT;NAMESPACE;NAME;RULES;ENCODING;MAX_BEAM;DIRECTION;WEIGHTS" "")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "tunecast_add_predictor: unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET tunecast::tunecast)
    message(FATAL_ERROR "tunecast_add_predictor: the tunecast compiler (target tunecast::tunecast) is "
                        "not available; find_package(tunecast) or add tunecast's source directory first")
  endif()
  if(NOT ARG_EMIT)
    set(ARG_EMIT cpp)
  endif()
  if(NOT ARG_EMIT MATCHES "^(cpp|blob)$")
    message(FATAL_ERROR "tunecast_add_predictor: EMIT must be cpp or blob, not '${ARG_EMIT}'")
  endif()
  if(NOT ARG_NAMESPACE)
    set(ARG_NAMESPACE tunecast_generated)
  endif()
  get_filename_component(model "${MODEL}" ABSOLUTE)
  if(NOT ARG_NAME)
    get_filename_component(ARG_NAME "${model}" NAME)
    string(REGEX REPLACE "\\.(tcm|tcr|tcir\\.json|tn\\.model)$" "" ARG_NAME "${ARG_NAME}")
    string(MAKE_C_IDENTIFIER "${ARG_NAME}" ARG_NAME)
  endif()
  if(NOT ARG_MAX_BEAM)
    set(ARG_MAX_BEAM 16)
  endif()

  set(dir "${CMAKE_CURRENT_BINARY_DIR}/tunecast_predictors/${ARG_NAME}")
  file(MAKE_DIRECTORY "${dir}")

  # The blob: used as is, or compiled from the source model with its rules.
  set(rules_args)
  set(rules_deps)
  foreach(kind RULES ENCODING)
    if(ARG_${kind})
      get_filename_component(file "${ARG_${kind}}" ABSOLUTE)
      string(TOLOWER "${kind}" option)
      list(APPEND rules_args "--${option}" "${file}")
      list(APPEND rules_deps "${file}")
    endif()
  endforeach()
  if(ARG_WEIGHTS)
    list(APPEND rules_args --weights ${ARG_WEIGHTS})
  endif()
  if(model MATCHES "\\.tcr$")  # a kernel definition alone: no predictor, for the model-free search
    if(rules_args OR ARG_EMIT STREQUAL "cpp")
      message(FATAL_ERROR "tunecast_add_predictor: ${MODEL} is a kernel definition: it compiles alone with EMIT blob "
                          "(no RULES, ENCODING, WEIGHTS)")
    endif()
    set(blob "${dir}/${ARG_NAME}.tcm")
    add_custom_command(
      OUTPUT "${blob}"
      COMMAND tunecast::tunecast compile "${model}" -o "${blob}"
      DEPENDS "${model}" tunecast::tunecast
      COMMENT "tunecast: compiling the definition ${ARG_NAME}.tcm"
      VERBATIM)
  elseif(model MATCHES "\\.tcm$" AND NOT rules_args)
    set(blob "${model}")
  else()
    set(blob "${dir}/${ARG_NAME}.tcm")
    if(model MATCHES "\\.tcm$")
      message(FATAL_ERROR "tunecast_add_predictor: ${MODEL} is already compiled; RULES, ENCODING and "
                          "WEIGHTS apply to source models (*.tcir.json, Keras)")
    elseif(model MATCHES "\\.tcir\\.json$")
      set(command compile "${model}")
      set(model_deps "${model}")
    else()
      set(command import-keras "${model}")
      if(model MATCHES "\\.tn\\.model$")
        set(model_deps "${model}")
      else()
        set(model_deps "${model}_encoder.ktn.model" "${model}_decoder.ktn.model" "${model}_metadata.ktn.model")
      endif()
      if(ARG_DIRECTION)
        list(APPEND command --direction ${ARG_DIRECTION})
      endif()
    endif()
    add_custom_command(
      OUTPUT "${blob}"
      COMMAND tunecast::tunecast ${command} -o "${blob}" ${rules_args}
      DEPENDS ${model_deps} ${rules_deps} tunecast::tunecast
      COMMENT "tunecast: compiling ${ARG_NAME}.tcm"
      VERBATIM)
  endif()

  set(outputs "${dir}/${ARG_NAME}.h" "${dir}/${ARG_NAME}.cpp")
  if(ARG_EMIT STREQUAL "cpp")
    set(command emit-cpp "${blob}" -o "${dir}" --namespace ${ARG_NAMESPACE} --name ${ARG_NAME}
                --max-beam ${ARG_MAX_BEAM})
    if(ARG_THREAD_LOCAL_SCRATCH)
      list(APPEND command --thread-local-scratch)
    endif()
  else()
    set(command embed "${blob}" -o "${dir}" --namespace ${ARG_NAMESPACE} --name ${ARG_NAME})
  endif()
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND tunecast::tunecast ${command}
    DEPENDS "${blob}" tunecast::tunecast
    COMMENT "tunecast: generating ${ARG_NAME} (${ARG_EMIT})"
    VERBATIM)
  target_sources(${TARGET} PRIVATE ${outputs})
  target_include_directories(${TARGET} PUBLIC "$<BUILD_INTERFACE:${dir}>")
  # Linked through the target's properties, not target_link_libraries(): CMake refuses to mix that
  # command's plain signature (no PUBLIC/PRIVATE/INTERFACE) with its keyword one on a target, and
  # the caller may have used either. Appending to LINK_LIBRARIES and INTERFACE_LINK_LIBRARIES is
  # what target_link_libraries(TARGET PUBLIC tunecast::runtime) does, and works after both forms.
  get_target_property(type ${TARGET} TYPE)
  if(NOT type STREQUAL "INTERFACE_LIBRARY")
    set_property(TARGET ${TARGET} APPEND PROPERTY LINK_LIBRARIES tunecast::runtime)
  endif()
  set_property(TARGET ${TARGET} APPEND PROPERTY INTERFACE_LINK_LIBRARIES tunecast::runtime)
endfunction()

# tunecast_add_table(TARGET MODEL PROBLEMS file [NAMESPACE ns] [NAME name] [BEAM k])
#
# Predicts default parameters for every problem of PROBLEMS (one per line, any form `tunecast
# predict` reads) at build time with `tunecast table` and adds the header name.h to TARGET's include
# path: ns::kDefaultParameters[], and the table keyed by the kernel's fields, ns::Key, ns::kEntries[],
# ns::find(key) (exact) and ns::nearest(key) (docs/kernels.md, "Tables"). MODEL is a compiled blob
# (*.tcm) with a predictor. NAME defaults to the problem list's stem + "_table", NAMESPACE to
# tunecast_table, BEAM to the model's search width. Regenerated when the model or the list changes.
function(tunecast_add_table TARGET MODEL)
  cmake_parse_arguments(PARSE_ARGV 2 ARG "" "PROBLEMS;NAMESPACE;NAME;BEAM" "")
  if(ARG_UNPARSED_ARGUMENTS OR NOT ARG_PROBLEMS)
    message(FATAL_ERROR "tunecast_add_table: usage: tunecast_add_table(TARGET MODEL PROBLEMS file [NAMESPACE ns] "
                        "[NAME name] [BEAM k]) (unknown: ${ARG_UNPARSED_ARGUMENTS})")
  endif()
  if(NOT TARGET tunecast::tunecast)
    message(FATAL_ERROR "tunecast_add_table: the tunecast CLI (target tunecast::tunecast) is not available; "
                        "find_package(tunecast) or add tunecast's source directory first")
  endif()
  get_filename_component(model "${MODEL}" ABSOLUTE)
  get_filename_component(problems "${ARG_PROBLEMS}" ABSOLUTE)
  if(NOT ARG_NAME)
    get_filename_component(ARG_NAME "${problems}" NAME_WE)
    string(MAKE_C_IDENTIFIER "${ARG_NAME}_table" ARG_NAME)
  endif()
  if(NOT ARG_NAMESPACE)
    set(ARG_NAMESPACE tunecast_table)
  endif()
  set(beam)
  if(ARG_BEAM)
    set(beam --beam ${ARG_BEAM})
  endif()
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/tunecast_tables")
  file(MAKE_DIRECTORY "${dir}")
  add_custom_command(
    OUTPUT "${dir}/${ARG_NAME}.h"
    COMMAND tunecast::tunecast table "${model}" --problems "${problems}" -o "${dir}/${ARG_NAME}.h"
            --namespace ${ARG_NAMESPACE} --format cpp ${beam}
    DEPENDS "${model}" "${problems}" tunecast::tunecast
    COMMENT "tunecast: predicting the table ${ARG_NAME}.h"
    VERBATIM)
  target_sources(${TARGET} PRIVATE "${dir}/${ARG_NAME}.h")
  # BEFORE: a same-named header elsewhere on the target's include path must not shadow the table.
  target_include_directories(${TARGET} BEFORE PUBLIC "$<BUILD_INTERFACE:${dir}>")
endfunction()
