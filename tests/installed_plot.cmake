# The installed `tunecast` runs the plot script installed beside the package's data
# (share/tunecast/tools/), not the source tree's: a copy of the staged install whose plot_eval.py is
# a stub must run the stub. cmake -DSTAGE=... -DWORK=... -DPERFDB=... -P installed_plot.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
file(COPY "${STAGE}/" DESTINATION "${WORK}/prefix")
set(script "${WORK}/prefix/share/tunecast/tools/plot_eval.py")
if(NOT EXISTS "${script}")
  message(FATAL_ERROR "the install has no share/tunecast/tools/plot_eval.py")
endif()
file(WRITE "${script}" "import sys\nopen(sys.argv[2], 'w').write('installed plot script')\n")
execute_process(COMMAND "${WORK}/prefix/bin/tunecast" eval "${WORK}/prefix/share/tunecast/models/ConvAsm1x1U.tcm"
  --perfdb "${PERFDB}" --precision FP32 --limit 2 --plot "${WORK}/plots/p.png"
  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tunecast eval --plot from the install exited ${rc}: ${err}")
endif()
file(READ "${WORK}/plots/p.png" written)
if(NOT written STREQUAL "installed plot script")
  message(FATAL_ERROR "the installed tunecast did not run the installed plot script (p.png: '${written}')")
endif()
